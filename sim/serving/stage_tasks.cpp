#include "sim/serving/stage_tasks.hpp"

#include <bit>
#include <cstdint>
#include <limits>

#include "sim/core/check.hpp"

namespace cs::serving {

using workload::Category;
using workload::Stream;
using workload::TaskId;

std::size_t StageTasks::MemoKeyHash::operator()(const MemoKey& k) const {
  const auto& [group, op, bytes, copies, shares, returning] = k;
  std::uint64_t h = (static_cast<std::uint64_t>(group) << 9) ^ (static_cast<std::uint64_t>(op) << 1) ^
                    static_cast<std::uint64_t>(returning);
  for (const std::uint64_t v : {std::bit_cast<std::uint64_t>(bytes), std::bit_cast<std::uint64_t>(copies),
                                static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(shares))})
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return static_cast<std::size_t>(h);
}

StageTasks::MemoKey StageTasks::key_of(const Stage& st, const Segment& seg) {
  return MemoKey{st.group, static_cast<int>(seg.op), seg.bytes, seg.node_copies, seg.dest_share, seg.returning};
}

void StageTasks::ended(TaskId id, SimTime duration) {
  const auto t = workload::index(id);
  if (t >= tags_.size()) return;
  const Tag tag = tags_[t];
  tags_[t] = Tag{};
  if (tag.memo && (!tag.watched || watch_.started == tag.started)) memo_.emplace(tag.key, duration);
  if (tag.comm > 0) comm_time_[tag.comm - 1u] += duration;
}

std::optional<SimTime> StageTasks::memo(const Stage& st, const Segment& seg) const {
  auto it = memo_.find(key_of(st, seg));
  if (it == memo_.end()) return std::nullopt;
  return it->second;
}

void StageTasks::count_known(const CommTimes& comm, std::int64_t times) {
  for (std::size_t k = 0; k < comm.size(); ++k) comm_time_[k] += SimTime{comm[k].ps * times};
}

std::optional<SimTime> StageTasks::known_time(const Stage& st, const std::vector<Segment>& segs,
                                              CommTimes& comm) const {
  comm = CommTimes{};
  SimTime t{};
  for (const auto& seg : segs) {
    if (!seg.collective) {
      t += seg.compute;
    } else if (auto m = memo(st, seg)) {
      t += *m;
      comm[seg.kind] += *m;
    } else {
      return std::nullopt;
    }
  }
  return t;
}

SimTime compute_from(const StageProgram& prog, std::size_t next) {
  const auto sum = [](const std::vector<Segment>& segs, std::size_t from) {
    SimTime t{};
    for (std::size_t i = from; i < segs.size(); ++i) t += segs[i].collective ? SimTime{} : segs[i].compute;
    return t;
  };
  const std::size_t per_layer = prog.layer.size();
  const std::size_t body_end = 1 + per_layer * static_cast<std::size_t>(prog.layers);
  SimTime t{};
  if (next == 0) {
    t += prog.overhead;
    next = 1;
  }
  if (per_layer > 0 && next < body_end) {
    const std::size_t in_layer = (next - 1) % per_layer;
    const auto whole = static_cast<std::int64_t>((body_end - next - (per_layer - in_layer) % per_layer) / per_layer);
    if (in_layer > 0) t += sum(prog.layer, in_layer);
    t += SimTime{sum(prog.layer, 0).ps * whole};
    next = body_end;
  }
  return t + sum(prog.head, next - body_end);
}

TaskId StageTasks::add_collective(workload::OpenGraph& g, const Stage& st, const Segment& seg, bool alone) {
  const char* label = kCollectiveLabels[seg.kind];
  // An all-to-all rail-forwarded across nodes or with uneven shares moves its traffic matrix; an
  // even one inside a node is the plain collective (balanced routing: as before shares existed).
  const bool matrix = seg.op == CollectiveOp::kAllToAll && (seg.node_copies != 1.0 || seg.dest_share);
  TaskId id{};
  if (matrix) {
    workload::EpAllToAll a{.bytes = seg.bytes, .node_copies = seg.node_copies, .returning = seg.returning};
    if (seg.dest_share) a.dest_share = *seg.dest_share;
    id = g.add_ep_alltoall(st.group, Stream::kCompute, Category::kTpComm, label, a);
  } else {
    id = g.add_collective(st.group, Stream::kCompute, Category::kTpComm, label, seg.op, seg.bytes);
  }
  const auto t = workload::index(id);
  if (t >= tags_.size()) tags_.resize(t + 1);
  // A guarded stage's collective starting while no transfer runs is remembered unless one starts
  // before it ends.
  const bool watched = !st.isolated && st.guarded && alone;
  tags_[t] =
      Tag{st.isolated || watched, watched, watch_.started, key_of(st, seg), static_cast<std::uint8_t>(seg.kind + 1)};
  return id;
}

std::pair<TaskId, TaskId> StageTasks::add_stage(workload::OpenGraph& g, const Stage& st, const StageProgram& prog) {
  const int gpu = st.ranks.front();
  if (st.isolated || st.ranks.size() == 1) {
    CommTimes layer_comm, head_comm;
    const auto layer = known_time(st, prog.layer, layer_comm);
    const auto head = layer ? known_time(st, prog.head, head_comm) : std::nullopt;
    if (layer && head) {
      count_known(layer_comm, prog.layers);
      count_known(head_comm, 1);
      const SimTime t = prog.overhead + SimTime{layer->ps * prog.layers} + *head;
      const auto id = g.add_compute(gpu, Stream::kCompute, Category::kForward, "serving.stage", t);
      return {id, id};
    }
  }
  std::optional<TaskId> first, last;
  SimTime compute{};
  bool pending = false;
  const auto flush = [&] {
    if (!pending) return;
    const auto id = g.add_compute(gpu, Stream::kCompute, Category::kForward, "serving.kernels", compute);
    if (!first) first = id;
    last = id;
    compute = SimTime{};
    pending = false;
  };
  for (std::size_t i = 0; i < prog.size(); ++i) {
    const Segment& seg = prog.at(i);
    if (!seg.collective) {
      compute += seg.compute;  // kernels back to back: one task, the same end
      pending = true;
      continue;
    }
    flush();
    const auto id = add_collective(g, st, seg, false);  // it starts later: the transfers then are unknown
    if (!first) first = id;
    last = id;
  }
  flush();
  return {*first, *last};
}

StageTasks::Added StageTasks::resume(workload::OpenGraph& g, const Stage& st, const StageProgram& prog,
                                     std::size_t& next, SimTime until) {
  const std::size_t per_layer = prog.layer.size();
  const std::size_t body_end = 1 + per_layer * static_cast<std::size_t>(prog.layers);
  // Alone on its links until `until`: an isolated stage always, a guarded one while no transfer runs.
  // (A stage of one GPU has no collectives.)
  const bool solo = st.isolated || st.ranks.size() == 1;
  const bool alone = solo || (st.guarded && watch_.in_flight == 0);
  const SimTime now = g.now();
  const SimTime window = solo ? SimTime{std::numeric_limits<std::int64_t>::max()} : alone ? until - now : SimTime{};
  SimTime known{};
  bool any = false;
  while (next < prog.size()) {
    if (alone && next >= 1 && next < body_end && (next - 1) % per_layer == 0) {
      // At a layer's start: the remaining layers at once when the layer's time is known (as many
      // as end within the window).
      CommTimes comm;
      if (auto layer = known_time(st, prog.layer, comm)) {
        auto fold = static_cast<std::int64_t>((body_end - next) / per_layer);
        if (!solo && layer->ps > 0) fold = std::min(fold, (window - known).ps / layer->ps);
        if (fold > 0) {
          known += SimTime{layer->ps * fold};
          count_known(comm, fold);
          next += static_cast<std::size_t>(fold) * per_layer;
          any = true;
          continue;
        }
      }
    }
    const Segment& seg = prog.at(next);
    if (!seg.collective) {
      known += seg.compute;
    } else if (auto m = alone ? memo(st, seg) : std::nullopt; m && known + *m <= window) {
      known += *m;
      comm_time_[seg.kind] += *m;
    } else {
      break;
    }
    any = true;
    ++next;
  }
  if (any) {
    const auto id = g.add_compute(st.ranks.front(), Stream::kCompute, Category::kForward, "serving.kernels", known);
    return {id, next == prog.size(), now + known};
  }
  return {add_collective(g, st, prog.at(next++), alone), false, now};
}

std::vector<std::pair<std::string, double>> StageTasks::collectives_s() const {
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t k = 0; k < comm_time_.size(); ++k) {
    if (comm_time_[k] > SimTime{}) out.emplace_back(kCollectiveLabels[k], comm_time_[k].seconds());
  }
  return out;
}

}  // namespace cs::serving
