#include "sim/report/run_summary.hpp"

#include <algorithm>
#include <numeric>

#include "sim/core/parallel.hpp"

namespace cs::report {

namespace {

struct Interval {
  std::int64_t a, b;
};

bool earlier(const Interval& x, const Interval& y) { return x.a < y.a || (x.a == y.a && x.b < y.b); }

/// Sorts v[from..] and merges it into v[..from], which is sorted. A stream runs its tasks in order,
/// so a stream's intervals come sorted and this is a merge, not a sort of thousands of intervals.
void merge_run(std::vector<Interval>& v, std::size_t from) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(from);
  if (!std::is_sorted(mid, v.end(), earlier)) std::sort(mid, v.end(), earlier);
  std::inplace_merge(v.begin(), mid, v.end(), earlier);
}

/// Total length of a union of intervals sorted by `earlier`.
std::int64_t union_length(const std::vector<Interval>& v) {
  std::int64_t total = 0, cur_a = 0, cur_b = -1;
  bool open = false;
  for (const auto& i : v) {
    if (!open || i.a > cur_b) {
      if (open) total += cur_b - cur_a;
      cur_a = i.a;
      cur_b = i.b;
      open = true;
    } else {
      cur_b = std::max(cur_b, i.b);
    }
  }
  if (open) total += cur_b - cur_a;
  return total;
}

}  // namespace

std::vector<GpuTimePs> gpu_times(const workload::WorkloadGraph& g, const workload::RunLog& log) {
  // GPU by GPU (its streams, plus the transfers outside every stream), so that memory stays at a
  // block of GPUs' intervals however large the run.
  const auto n = static_cast<std::size_t>(g.gpus());
  std::vector<std::vector<std::uint32_t>> unordered(n);
  for (std::size_t i = 0; i < g.task_count(); ++i) {
    const auto t = g.task(static_cast<workload::TaskId>(i));
    if (t.stream != workload::Stream::kNone) continue;
    if (t.collective) {
      for (int r : g.groups()[t.group]) unordered[static_cast<std::size_t>(r)].push_back(static_cast<std::uint32_t>(i));
    } else {
      unordered[t.gpu].push_back(static_cast<std::uint32_t>(i));
    }
  }
  std::vector<GpuTimePs> out(n);
  // A block of consecutive GPUs walks its streams in lockstep (every GPU's k-th task, then the
  // k+1-th): a stage's program item is consecutive tasks on its ranks (or one task shared by a
  // group), so the block's reads of tasks and starts share cache lines instead of each missing.
  // Each GPU's intervals come in the same order as GPU by GPU: the same sums.
  constexpr std::size_t kBlock = 64;
  parallel_for_each((n + kBlock - 1) / kBlock, [&](std::size_t blk) {
    const std::size_t lo = blk * kBlock, hi = std::min(n, (blk + 1) * kBlock);
    std::vector<std::vector<Interval>> compute(hi - lo), comm(hi - lo);
    std::vector<Interval> both;
    std::vector<std::size_t> c0(hi - lo), m0(hi - lo);
    auto add = [&](std::size_t j, std::uint32_t i) {
      const auto id = static_cast<workload::TaskId>(i);
      const auto t = g.task(id);
      const auto span = log.span(id, t);
      (t.collective ? comm[j] : compute[j]).push_back({span.start.ps, span.end.ps});
    };
    auto begin_run = [&] {
      for (std::size_t j = 0; j < hi - lo; ++j) {
        c0[j] = compute[j].size();
        m0[j] = comm[j].size();
      }
    };
    auto end_run = [&] {
      for (std::size_t j = 0; j < hi - lo; ++j) {
        merge_run(compute[j], c0[j]);
        merge_run(comm[j], m0[j]);
      }
    };
    for (std::size_t k = 0; k < workload::kStreamsPerGpu; ++k) {
      begin_run();
      std::size_t longest = 0;
      for (std::size_t ru = lo; ru < hi; ++ru)
        longest = std::max(longest, g.stream_order(ru * workload::kStreamsPerGpu + k).size());
      for (std::size_t pos = 0; pos < longest; ++pos) {
        for (std::size_t ru = lo; ru < hi; ++ru) {
          const auto& order = g.stream_order(ru * workload::kStreamsPerGpu + k);
          if (pos < order.size()) add(ru - lo, static_cast<std::uint32_t>(order[pos]));
        }
      }
      end_run();
    }
    begin_run();
    for (std::size_t ru = lo; ru < hi; ++ru)
      for (auto id : unordered[ru]) add(ru - lo, id);
    end_run();
    for (std::size_t ru = lo; ru < hi; ++ru) {
      if (g.stream_order(ru * workload::kStreamsPerGpu).empty()) continue;  // not simulated (symmetry)
      const auto& cp = compute[ru - lo];
      const auto& cm = comm[ru - lo];
      both.resize(cp.size() + cm.size());
      std::merge(cp.begin(), cp.end(), cm.begin(), cm.end(), both.begin(), earlier);
      auto& t = out[ru];
      t.simulated = true;
      t.compute = union_length(cp);
      t.comm = union_length(cm);
      t.exposed_comm = union_length(both) - t.compute;
    }
  });
  return out;
}

std::vector<LinkUse> link_use(const workload::RunLog& log, const net::Topology& topo) {
  // Each sample sets its link's load from its time on; samples of one link in time order (equal
  // times keep the log's order, the last one holding).
  std::vector<std::size_t> order(log.link_samples.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = log.link_samples[a];
    const auto& y = log.link_samples[b];
    return x.link < y.link || (x.link == y.link && x.time.ps < y.time.ps);
  });
  const double makespan = log.makespan.seconds();
  std::vector<LinkUse> out;
  for (std::size_t k = 0; k < order.size();) {
    const std::uint32_t link = log.link_samples[order[k]].link;
    LinkUse u;
    u.link = link;
    for (; k < order.size() && log.link_samples[order[k]].link == link; ++k) {
      const auto& s = log.link_samples[order[k]];
      const bool last = k + 1 == order.size() || log.link_samples[order[k + 1]].link != link;
      const std::int64_t until = last ? log.makespan.ps : log.link_samples[order[k + 1]].time.ps;
      const double dt = static_cast<double>(std::max<std::int64_t>(until - s.time.ps, 0)) * 1e-12;
      u.bytes += s.bytes_per_s * dt;
      if (s.bytes_per_s > 0) u.busy_s += dt;
    }
    if (u.bytes <= 0) continue;
    const auto& l = topo.link(static_cast<net::LinkId>(link));
    u.name = topo.vertex(l.from).name + "->" + topo.vertex(l.to).name;
    u.type = l.type;
    u.bandwidth_bytes_per_s = l.bandwidth_bytes_per_s;
    u.utilisation = makespan > 0 && l.bandwidth_bytes_per_s > 0 ? u.bytes / (l.bandwidth_bytes_per_s * makespan) : 0;
    out.push_back(std::move(u));
  }
  std::stable_sort(out.begin(), out.end(), [](const LinkUse& a, const LinkUse& b) { return a.bytes > b.bytes; });
  return out;
}

}  // namespace cs::report
