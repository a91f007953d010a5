#include "sim/workload/workload_graph.hpp"

#include "sim/core/check.hpp"
#include "sim/core/huge_pages.hpp"

namespace cs::workload {

const char* category_name(Category c) {
  switch (c) {
    case Category::kForward: return "forward";
    case Category::kBackward: return "backward";
    case Category::kOptimizer: return "optimizer";
    case Category::kTpComm: return "tp_comm";
    case Category::kDpComm: return "dp_comm";
    case Category::kPpComm: return "pp_comm";
    case Category::kRecompute: return "recompute";
    case Category::kEpComm: return "ep_comm";
  }
  return "?";
}

WorkloadGraph::WorkloadGraph(int gpus) : gpus_(gpus), streams_(static_cast<std::size_t>(gpus) * kStreamsPerGpu) {}

std::uint32_t WorkloadGraph::add_group(const std::vector<int>& ranks) {
  auto it = group_index_.find(ranks);
  if (it != group_index_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(groups_.size());
  groups_.push_back(ranks);
  group_index_.emplace(ranks, id);
  return id;
}

TaskId WorkloadGraph::add_compute(int gpu, Stream stream, Category category, const char* label, int layer, int micro,
                                  SimTime duration) {
  return add_compute(gpu, place_proto({.label = label,
                                       .duration = duration,
                                       .layer = layer,
                                       .micro = micro,
                                       .category = category,
                                       .stream = stream}));
}

std::uint32_t WorkloadGraph::add_proto(Stream stream, Category category, const char* label, int layer, int micro,
                                       SimTime duration, bool collective) {
  protos_.push_back({.label = label,
                     .duration = duration,
                     .layer = layer,
                     .micro = micro,
                     .category = category,
                     .stream = stream,
                     .collective = collective,
                     .shared = true});
  return static_cast<std::uint32_t>(protos_.size() - 1);
}

TaskId WorkloadGraph::add_compute(int gpu, std::uint32_t proto) {
  CS_ASSERT(gpu >= 0 && gpu < gpus_, "compute task on an existing GPU");
  CS_ASSERT(proto < protos_.size() && !protos_[proto].collective, "a kernel's prototype");
  const auto id = place({proto, static_cast<std::uint32_t>(gpu)});
  if (const auto stream = protos_[proto].stream; stream != Stream::kNone)
    streams_[static_cast<std::size_t>(gpu) * kStreamsPerGpu + static_cast<std::size_t>(stream)].push_back(id);
  return id;
}

TaskId WorkloadGraph::add_collective(std::uint32_t group, Stream stream, Category category, const char* label,
                                     int layer, int micro, coll::CollectiveOp op, double bytes,
                                     coll::Algorithm algorithm) {
  CS_ASSERT(group < groups_.size(), "collective over a known group");
  const auto proto = place_proto(
      {.label = label, .layer = layer, .micro = micro, .category = category, .stream = stream, .collective = true});
  return place_collective(proto,
                          {.bytes = bytes, .group = group, .flow_group = group, .op = op, .algorithm = algorithm});
}

TaskId WorkloadGraph::add_collective_on(std::uint32_t group, std::uint32_t flow_group, Stream stream, Category category,
                                        const char* label, int layer, int micro, coll::CollectiveOp op, double bytes) {
  CS_ASSERT(flow_group < groups_.size(), "collective flows over a known group");
  const auto id = add_collective(group, stream, category, label, layer, micro, op, bytes);
  collectives_[tasks_[index(id)].where].flow_group = flow_group;
  return id;
}

TaskId WorkloadGraph::add_collective_on(std::uint32_t proto, std::uint32_t group, std::uint32_t flow_group,
                                        coll::CollectiveOp op, double bytes) {
  CS_ASSERT(group < groups_.size() && flow_group < groups_.size(), "collective over known groups");
  CS_ASSERT(proto < protos_.size() && protos_[proto].collective, "a collective's prototype");
  return place_collective(proto, {.bytes = bytes, .group = group, .flow_group = flow_group, .op = op});
}

TaskId WorkloadGraph::place_collective(std::uint32_t proto, const CollectiveArgs& a) {
  CollectiveArgs args = a;
  args.gpu = static_cast<std::uint32_t>(groups_[a.group].front());
  const auto id = place({proto, place_args(args)});
  if (const auto stream = protos_[proto].stream; stream != Stream::kNone) {
    for (int r : groups_[a.group])
      streams_[static_cast<std::size_t>(r) * kStreamsPerGpu + static_cast<std::size_t>(stream)].push_back(id);
  }
  return id;
}

WorkloadGraph::Range WorkloadGraph::extend(const Range& n) {
  CS_ASSERT(free_.empty() && free_args_.empty() && free_protos_.empty(), "no recycled slots while filling");
  const Range first{tasks_.size(), protos_.size(), collectives_.size(), edges_.size()};
  // Usually within what `reserve` made (an estimate); when not, still in huge pages.
  reserve_huge(tasks_, first.task + n.task);
  reserve_huge(collectives_, first.args + n.args);
  tasks_.resize(first.task + n.task);
  protos_.resize(first.proto + n.proto);
  collectives_.resize(first.args + n.args);
  edges_.resize(first.edge + n.edge);
  return first;
}

TaskId WorkloadGraph::fill_compute(TaskId id, int gpu, std::uint32_t proto) {
  tasks_[index(id)] = {proto, static_cast<std::uint32_t>(gpu)};
  if (const auto stream = protos_[proto].stream; stream != Stream::kNone)
    streams_[static_cast<std::size_t>(gpu) * kStreamsPerGpu + static_cast<std::size_t>(stream)].push_back(id);
  return id;
}

TaskId WorkloadGraph::fill_collective(TaskId id, std::uint32_t proto, std::uint32_t slot, const CollectiveArgs& a) {
  CollectiveArgs& args = collectives_[slot];
  args = a;
  args.gpu = static_cast<std::uint32_t>(groups_[a.group].front());
  tasks_[index(id)] = {proto, slot};
  if (const auto stream = protos_[proto].stream; stream != Stream::kNone) {
    for (int r : groups_[a.group])
      streams_[static_cast<std::size_t>(r) * kStreamsPerGpu + static_cast<std::size_t>(stream)].push_back(id);
  }
  return id;
}

void WorkloadGraph::reserve(std::size_t tasks, std::size_t collectives) {
  reserve_huge(tasks_, tasks);
  reserve_huge(collectives_, collectives);
}

TaskId WorkloadGraph::place(Slot t) {
  if (!free_.empty()) {
    const auto id = free_.back();
    free_.pop_back();
    auto& slot = tasks_[index(id)];
    // The recycled task's own prototype, and its arguments' slot if a collective, are free too.
    const auto& old = protos_[slot.proto];
    CS_ASSERT(!old.shared, "a recycled task had a prototype of its own");
    if (old.collective) free_args_.push_back(slot.where);
    free_protos_.push_back(slot.proto);
    slot = t;
    return id;
  }
  tasks_.push_back(t);
  return static_cast<TaskId>(tasks_.size() - 1);
}

std::uint32_t WorkloadGraph::place_proto(const TaskProto& p) {
  if (!free_protos_.empty()) {
    const auto k = free_protos_.back();
    free_protos_.pop_back();
    protos_[k] = p;
    return k;
  }
  protos_.push_back(p);
  return static_cast<std::uint32_t>(protos_.size() - 1);
}

std::uint32_t WorkloadGraph::place_args(const CollectiveArgs& a) {
  if (!free_args_.empty()) {
    const auto k = free_args_.back();
    free_args_.pop_back();
    collectives_[k] = a;
    return k;
  }
  collectives_.push_back(a);
  return static_cast<std::uint32_t>(collectives_.size() - 1);
}

void WorkloadGraph::drop_stream_front(std::size_t stream_index, std::size_t n) {
  auto& order = streams_[stream_index];
  CS_ASSERT(n <= order.size(), "drop only tasks the stream holds");
  order.erase(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n));
}

TaskId WorkloadGraph::add_alltoall(std::uint32_t group, std::uint32_t flow_group, Stream stream, Category category,
                                   const char* label, int layer, int micro, std::vector<double> pair_bytes) {
  return add_alltoall(group, flow_group, stream, category, label, layer, micro, add_traffic(std::move(pair_bytes)));
}

std::uint32_t WorkloadGraph::add_traffic(std::vector<double> pair_bytes, double node_copies) {
  traffic_.push_back(std::move(pair_bytes));
  node_copies_.push_back(node_copies);
  return static_cast<std::uint32_t>(traffic_.size() - 1);
}

TaskId WorkloadGraph::add_alltoall(std::uint32_t group, std::uint32_t flow_group, Stream stream, Category category,
                                   const char* label, int layer, int micro, std::uint32_t traffic,
                                   coll::Algorithm algorithm) {
  CS_ASSERT(flow_group < groups_.size() && traffic > 0 && traffic < traffic_.size(),
            "all-to-all flows over a known group with a known traffic matrix");
  const auto n = groups_[flow_group].size();
  const auto& pair_bytes = traffic_[traffic];
  CS_ASSERT(pair_bytes.size() == n * n, "a traffic matrix has n x n entries");
  double total = 0;
  for (double b : pair_bytes) total += b;
  const auto id = add_collective_on(group, flow_group, stream, category, label, layer, micro,
                                    coll::CollectiveOp::kAllToAll, total / static_cast<double>(n));
  auto& args = collectives_[tasks_[index(id)].where];
  args.traffic = traffic;
  args.algorithm = algorithm;
  return id;
}

void WorkloadGraph::depend(TaskId before, TaskId after) {
  CS_ASSERT(before != after, "a task does not wait for itself");
  edges_.push_back({before, after});
}

}  // namespace cs::workload
