#include "sim/report/training_trace.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>

#include "sim/collectives/collective.hpp"
#include "sim/core/check.hpp"
#include "sim/core/quantity.hpp"
#include "sim/report/trace_writer.hpp"

namespace cs::report {

namespace {

/// Bucket b covers [edges[b], edges[b + 1]).
std::vector<std::int64_t> bucket_edges(SimTime from, SimTime to, int buckets) {
  std::vector<std::int64_t> edges(static_cast<std::size_t>(buckets) + 1);
  const double len = static_cast<double>(to.ps - from.ps);
  for (int b = 0; b <= buckets; ++b) {
    edges[static_cast<std::size_t>(b)] = from.ps + std::llround(len * b / buckets);
  }
  edges.back() = to.ps;
  return edges;
}

const char* const kStreamNames[] = {"compute stream", "comm stream", "context-parallel stream", "pipeline transfers"};

/// One layer's micro-batch on one stream, being folded into a slice: the spans it ran back to back.
struct LayerSlice {
  const workload::Task* first_compute = nullptr;  ///< names the slice (layer.fwd, layer.bwd, ...)
  const workload::Task* first = nullptr;
  SimTime start{}, end{};
  int count = 0;
  SimTime comm{};  ///< time of the collectives folded in
};

}  // namespace

std::vector<double> bucket_averages(const std::vector<std::pair<SimTime, double>>& samples, SimTime from, SimTime to,
                                    int buckets) {
  CS_ASSERT(buckets > 0 && to > from, "a non-empty window and at least one bucket");
  const auto edges = bucket_edges(from, to, buckets);
  std::vector<double> integral(static_cast<std::size_t>(buckets), 0.0);
  // Adds `value` over [a, b) clipped to the window, bucket by bucket.
  const auto add = [&](std::int64_t a, std::int64_t b, double value) {
    a = std::max(a, from.ps);
    b = std::min(b, to.ps);
    if (a >= b || value == 0) return;
    auto k = static_cast<std::size_t>(std::upper_bound(edges.begin(), edges.end(), a) - edges.begin() - 1);
    while (a < b) {
      const std::int64_t end = std::min(b, edges[k + 1]);
      integral[k] += value * static_cast<double>(end - a);
      a = end;
      ++k;
    }
  };
  std::int64_t cur = std::numeric_limits<std::int64_t>::min();
  double value = 0;
  for (const auto& [t, v] : samples) {
    add(cur, t.ps, value);
    cur = t.ps;
    value = v;
  }
  add(cur, to.ps, value);
  for (std::size_t b = 0; b < integral.size(); ++b) {
    const auto width = static_cast<double>(edges[b + 1] - edges[b]);
    integral[b] = width > 0 ? integral[b] / width : 0.0;
  }
  return integral;
}

TraceStats write_training_trace(std::ostream& out, const std::string& path_for_errors, const workload::WorkloadGraph& g,
                                const workload::RunLog& log, const net::Topology& topo, const TraceSelection& sel) {
  const int gpus = g.gpus();
  std::vector<char> shown(static_cast<std::size_t>(gpus), sel.gpus.empty() ? 1 : 0);
  for (int r : sel.gpus) {
    CS_ASSERT(r >= 0 && r < gpus, "the caller checked the traced GPUs against the run");
    shown[static_cast<std::size_t>(r)] = 1;
  }
  const bool by_micro = sel.first_micro >= 0;
  TraceWriter w(out);
  TraceStats stats;
  for (int r = 0; r < gpus; ++r) {
    if (!shown[static_cast<std::size_t>(r)]) continue;
    w.process_name(r, "GPU " + std::to_string(r));
    w.process_sort_index(r, r);
    for (int tid = 0; tid < 4; ++tid) w.thread_name(r, tid, kStreamNames[tid]);
  }
  SimTime first_start{std::numeric_limits<std::int64_t>::max()};
  SimTime last_end{};
  // The tasks, copied once so that an open slice can point at its first ones.
  std::vector<workload::Task> tasks(g.task_count());
  for (std::size_t i = 0; i < tasks.size(); ++i) tasks[i] = g.task(static_cast<workload::TaskId>(i));
  std::vector<LayerSlice> slices(static_cast<std::size_t>(gpus) * 4);
  // Writes the open slice of (GPU, stream) `key`: as the span itself when it holds one.
  const auto flush = [&](std::size_t key) {
    auto& open = slices[key];
    if (open.count == 0) return;
    const auto& f = open.first_compute ? *open.first_compute : *open.first;
    std::array<TraceArg, 4> args{TraceArg::of("layer", std::int64_t{f.layer}),
                                 TraceArg::of("micro_batch", std::int64_t{f.micro}), TraceArg{}, TraceArg{}};
    std::size_t n = 2;
    if (open.count > 1) {
      args[n++] = TraceArg::of("spans", std::int64_t{open.count});
      args[n++] = TraceArg::of("comm_us", open.comm.seconds() * 1e6);
    } else if (f.collective) {
      args[n++] = TraceArg::of("bytes", static_cast<std::int64_t>(std::llround(g.collective(f).bytes)));
      args[n++] = TraceArg::of("algorithm", std::string_view(coll::algorithm_name(log.algorithm(f))));
    }
    w.span(f.label, workload::category_name(f.category), open.start, open.end, static_cast<int>(key / 4),
           static_cast<int>(key % 4), std::span<const TraceArg>(args.data(), n));
    ++stats.spans;
    open.count = 0;
  };
  for (std::size_t i = 0; i < g.task_count(); ++i) {
    const auto& t = tasks[i];
    const auto s = log.span(static_cast<workload::TaskId>(i), t);
    if (by_micro && (t.micro < sel.first_micro || t.micro > sel.last_micro)) continue;
    if (s.end < sel.from || s.start > sel.to) continue;
    // Only the arguments that apply: a step-level task has no layer or micro-batch.
    std::array<TraceArg, 4> args{};
    std::size_t n = 0;
    if (t.layer >= 0) args[n++] = TraceArg::of("layer", std::int64_t{t.layer});
    if (t.micro >= 0) args[n++] = TraceArg::of("micro_batch", std::int64_t{t.micro});
    if (t.collective) {
      args[n++] = TraceArg::of("bytes", static_cast<std::int64_t>(std::llround(g.collective(t).bytes)));
      args[n++] = TraceArg::of("algorithm", std::string_view(coll::algorithm_name(log.algorithm(t))));
    }
    const auto emit = [&](int pid) {
      const auto key = static_cast<std::size_t>(pid) * 4 + static_cast<std::size_t>(t.stream);
      auto& open = slices[key];
      const bool foldable = sel.merge_layers && t.layer >= 0 && t.micro > 0;
      if (open.count > 0 && foldable && open.first->layer == t.layer && open.first->micro == t.micro &&
          s.start >= open.end && (t.collective || !open.first_compute || open.first_compute->category == t.category)) {
        open.end = s.end;
        ++open.count;
        if (t.collective) open.comm = open.comm + (s.end - s.start);
        if (!t.collective && !open.first_compute) open.first_compute = &tasks[i];
        ++stats.merged;
        return;
      }
      flush(key);
      if (foldable) {
        open = LayerSlice{t.collective ? nullptr : &tasks[i],        &tasks[i], s.start, s.end, 1,
                          t.collective ? s.end - s.start : SimTime{}};
        return;
      }
      w.span(t.label, workload::category_name(t.category), s.start, s.end, pid, static_cast<int>(t.stream),
             std::span<const TraceArg>(args.data(), n));
      ++stats.spans;
    };
    bool any = false;
    if (t.collective) {
      for (int r : g.groups()[t.group]) {
        if (!shown[static_cast<std::size_t>(r)]) continue;
        emit(r);
        any = true;
      }
    } else if (shown[t.gpu]) {
      emit(static_cast<int>(t.gpu));
      any = true;
    }
    if (any) {
      first_start = std::min(first_start, s.start);
      last_end = std::max(last_end, s.end);
    }
  }
  for (std::size_t key = 0; key < slices.size(); ++key) flush(key);
  // The counters' window: the one asked for, narrowed to the run (and, by micro-batch, to the
  // tasks shown).
  stats.from = by_micro ? std::max(sel.from, first_start) : sel.from;
  stats.to = std::min(sel.to, by_micro ? last_end : log.makespan);
  if (!log.link_samples.empty() && stats.to > stats.from && sel.link_points > 0) {
    // A GPU's own links are shown with that GPU; switch, host and fabric links always.
    std::vector<int> rank_of_vertex(topo.vertex_count(), -1);
    for (int r = 0; r < topo.gpu_count(); ++r) rank_of_vertex[net::index(topo.gpu(r))] = r;
    const auto link_shown = [&](const net::Link& l) {
      for (const auto v : {l.from, l.to}) {
        const int r = rank_of_vertex[net::index(v)];
        if (r >= 0 && (r >= gpus || !shown[static_cast<std::size_t>(r)])) return false;
      }
      return true;
    };
    // Samples grouped by link, each group in time order (counting sort keeps the log's order).
    const std::size_t links = topo.link_count();
    std::vector<std::size_t> first(links + 1, 0);
    for (const auto& s : log.link_samples) ++first[s.link + 1];
    for (std::size_t l = 0; l < links; ++l) first[l + 1] += first[l];
    std::vector<std::pair<SimTime, double>> by_link(log.link_samples.size());
    {
      auto next = first;
      for (const auto& s : log.link_samples) by_link[next[s.link]++] = {s.time, s.bytes_per_s};
    }
    const int pid = gpus;
    const SimTime width{(stats.to - stats.from).ps / sel.link_points};
    const auto edges = bucket_edges(stats.from, stats.to, sel.link_points);  // the same for every link
    bool named = false;
    for (std::size_t l = 0; l < links; ++l) {
      if (first[l] == first[l + 1]) continue;
      const auto& link = topo.link(static_cast<net::LinkId>(l));
      if (!link_shown(link)) continue;
      std::vector<std::pair<SimTime, double>> samples(by_link.begin() + static_cast<std::ptrdiff_t>(first[l]),
                                                      by_link.begin() + static_cast<std::ptrdiff_t>(first[l + 1]));
      std::stable_sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      const auto avg = bucket_averages(samples, stats.from, stats.to, sel.link_points);
      if (std::all_of(avg.begin(), avg.end(), [](double v) { return v == 0; })) continue;
      if (!named) {
        w.process_name(pid, "links (GB/s, mean per " + shortest(width.seconds() * 1e6) + " us)");
        w.process_sort_index(pid, pid);
        named = true;
      }
      const std::string name = topo.vertex(link.from).name + "->" + topo.vertex(link.to).name;
      double last = -1;
      for (std::size_t b = 0; b < avg.size(); ++b) {
        const double gbs = avg[b] / 1e9;
        if (gbs == last) continue;
        w.counter(name, pid, SimTime{edges[b]}, "GB/s", gbs);
        ++stats.counter_samples;
        last = gbs;
      }
      if (last != 0) {
        w.counter(name, pid, stats.to, "GB/s", 0.0);
        ++stats.counter_samples;
      }
    }
  }
  w.finish(path_for_errors);
  stats.events = w.events();
  return stats;
}

}  // namespace cs::report
