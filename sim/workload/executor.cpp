#include "sim/workload/executor.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <queue>
#include <span>
#include <tuple>
#include <unordered_map>

#include "sim/core/check.hpp"
#include "sim/core/huge_pages.hpp"
#include "sim/core/parallel.hpp"
#include "sim/engine/engine.hpp"
#include "sim/workload/expert_placement.hpp"

namespace cs::workload {

namespace {

// The parallel engine (DESIGN.md): one logical partition per node (its GPUs' streams, its kernels,
// the collectives that stay inside it and their flows on its links) and one for the fabric (the
// collectives and transfers that cross nodes, and their flows on NIC and fabric links). Link sets
// are disjoint, so each partition has its own network model over shared per-link state.
//
// Partitions meet only through fabric tasks: a node tells the fabric when a stream reaches one of
// them (arrive) or when a kernel it waits for is done (release); the fabric tells the nodes when
// one ends. A fabric task's end is known when its flows finish, at least its latency ahead, and
// every fabric task's latency is at least L (the lookahead): so in a window [t0, t0 + L) the nodes
// run independently (in parallel), then the fabric runs the window with their messages, and its
// messages to the nodes all fall in later windows. One thread or many, the same code runs in the
// same order: results are identical, bit for bit. A graph this cannot partition (one node, zero
// lookahead, a dependency between two nodes that bypasses the fabric, link counters for a trace)
// runs as one partition: the serial engine.

enum EventKind : std::uint32_t { kTaskEnd = 0, kNetworkWake = 1, kArrive = 2, kRelease = 3, kRemoteEnd = 4 };

/// A message between partitions: it becomes an event of the receiving partition at `time`.
struct Message {
  SimTime time{};
  std::uint32_t partition = 0;  ///< the receiver
  EventKind kind = kTaskEnd;
  std::uint32_t task = 0;
};

inline constexpr std::uint32_t kSerial = 0;
/// Open runs drop a stream's run tasks from its order once this many have accumulated.
inline constexpr std::size_t kOpenStreamTrim = 64;

/// What every partition shares: the graph, the per-task and per-stream state (each element is
/// written by one partition only), and the ownership map.
/// A table's one-node scope (`op` on `gpus` GPUs) as a curve: its smallest size's time as the
/// floor, each call the table's time at its size. A step repeats a handful of sizes millions of
/// times: each size is looked up once (the partitions ask from their own threads).
coll::MeasuredCurve table_curve(coll::CollectiveOp op, int gpus, double floor_s,
                                std::function<std::optional<calib::KernelTime>(double)> lookup) {
  struct Seen {
    std::mutex mutex;
    std::map<double, double> by_bytes;
  };
  auto seen = std::make_shared<Seen>();
  coll::MeasuredCurve m{op, gpus, 1, "", floor_s, 0, {}, {}};
  m.time_s = [lookup = std::move(lookup), floor_s, seen](double bytes) {
    {
      const std::lock_guard lock(seen->mutex);
      if (auto it = seen->by_bytes.find(bytes); it != seen->by_bytes.end()) return it->second;
    }
    const auto t = lookup(bytes);
    const double s = t ? t->seconds : floor_s;
    const std::lock_guard lock(seen->mutex);
    seen->by_bytes.emplace(bytes, s);
    return s;
  };
  return m;
}

/// A profile's collective costs in the collectives' terms, in the order they are chosen: with
/// `custom_allreduce`, the kernel tables' custom all-reduce (TensorRT-LLM's own, by GPU count; an
/// engine that runs it does not call NCCL for these); then the curves a calibrated box measured
/// (the op parsed once); then the NCCL table's one-node scopes (all-reduce, all-gather and
/// reduce-scatter, with `all_to_all` all-to-all too, x GPU count), each timed by the table at the
/// call's size.
std::vector<coll::MeasuredCurve> measured_curves(const std::vector<calib::CollectiveCurve>* curves,
                                                 const calib::KernelTables* tables, bool custom_allreduce,
                                                 bool all_to_all) {
  std::vector<coll::MeasuredCurve> out;
  if (custom_allreduce && tables && tables->table(calib::KernelTable::kCustomAllReduce)) {
    for (int gpus : {2, 4, 8}) {
      const auto floor = calib::table_custom_allreduce(*tables, gpus, 1.0);
      if (!floor) continue;
      out.push_back(table_curve(coll::CollectiveOp::kAllReduce, gpus, floor->seconds, [tables, gpus](double bytes) {
        return calib::table_custom_allreduce(*tables, gpus, bytes);
      }));
    }
  }
  if (curves) {
    for (const auto& c : *curves) {
      coll::MeasuredCurve m{
          coll::CollectiveOp::kAllReduce, c.gpus, c.nodes, c.fabric, c.alpha_s, c.busbw_bytes_per_s, {}, {}};
      if (coll::parse_op(c.op, m.op)) out.push_back(std::move(m));
    }
  }
  if (!tables || !tables->table(calib::KernelTable::kNccl)) return out;
  // All-to-all only where the caller says its exchanges are NCCL's (ExecutorOptions::nccl_all_to_all):
  // DeepEP's kernels are not, and an uneven or rail-forwarded exchange never matches a curve (it
  // carries a traffic matrix; coll::curve_for).
  const std::pair<coll::CollectiveOp, const char*> ops[] = {{coll::CollectiveOp::kAllReduce, "all_reduce"},
                                                            {coll::CollectiveOp::kAllGather, "all_gather"},
                                                            {coll::CollectiveOp::kReduceScatter, "reduce_scatter"},
                                                            {coll::CollectiveOp::kAllToAll, "alltoall"}};
  for (const auto& [op, name] : ops) {
    if (op == coll::CollectiveOp::kAllToAll && !all_to_all) continue;
    for (int gpus : {2, 4, 8}) {
      // The table's floor: its smallest measured size (a few hundred bytes).
      const auto floor = calib::table_nccl(*tables, name, gpus, 1.0);
      if (!floor) continue;
      const std::string table_op = name;
      out.push_back(table_curve(op, gpus, floor->seconds, [tables, table_op, gpus](double bytes) {
        return calib::table_nccl(*tables, table_op, gpus, bytes);
      }));
    }
  }
  return out;
}

/// The tasks that have explicit edges (a few in a hundred of a step's: transfers, gradient
/// buckets and the kernels they wait for), numbered densely in id order: their dependency counts
/// and successor rows take 2 bits a task (a bit and a share of a count per 64 tasks) rather than 8
/// bytes for every task. An open run numbers every task as itself.
class LinkedTasks {
 public:
  /// `n` tasks, none linked yet.
  void assign(std::size_t n) {
    bits_.assign((n + 63) / 64, 0);
    below_.clear();
  }
  void insert(std::uint32_t t) { bits_[t / 64] |= std::uint64_t{1} << (t % 64); }
  /// After the last insert: the counts behind rank().
  void finish() {
    below_.resize(bits_.size() + 1);
    below_[0] = 0;
    for (std::size_t w = 0; w < bits_.size(); ++w)
      below_[w + 1] = below_[w] + static_cast<std::uint32_t>(std::popcount(bits_[w]));
  }
  /// Every task is linked, as itself (open runs, whose tasks come and go).
  void all() { all_ = true; }
  [[nodiscard]] bool contains(std::uint32_t t) const { return all_ || ((bits_[t / 64] >> (t % 64)) & 1) != 0; }
  /// A linked task's number.
  [[nodiscard]] std::uint32_t rank(std::uint32_t t) const {
    if (all_) return t;
    const std::uint64_t below = bits_[t / 64] & ((std::uint64_t{1} << (t % 64)) - 1);
    return below_[t / 64] + static_cast<std::uint32_t>(std::popcount(below));
  }
  [[nodiscard]] std::uint32_t size() const { return below_.empty() ? 0 : below_.back(); }

 private:
  std::vector<std::uint64_t> bits_;
  std::vector<std::uint32_t> below_;  ///< per 64-task word: linked tasks before it
  bool all_ = false;
};

struct Shared {
  const WorkloadGraph& g;
  const net::Topology& topo;
  const ExecutorOptions& opt;
  LinkedTasks linked;
  /// Linked task r's successors: succ[succ_begin[r] .. succ_begin[r + 1]) (a built graph's).
  std::vector<std::uint32_t> succ_begin;
  std::vector<TaskId> succ;
  /// A built graph's stream orders in one array (stream s: order[order_begin[s] .. order_begin[s + 1])),
  /// in huge pages: each stream's next task is read at random, tens of millions of times. Open
  /// runs, whose streams change while they run, read the graph's.
  std::vector<std::size_t> order_begin;
  std::vector<TaskId> order;
  std::vector<std::uint32_t> preds_left;  ///< by linked rank: dependencies not yet done
  std::vector<std::uint32_t> arrived;     ///< per collective (by its `args` slot): ranks that reached it
  std::vector<std::size_t> head;
  std::vector<std::uint8_t> busy;           ///< bytes, not bits: streams of different nodes change concurrently
  std::vector<SimTime> starts;              ///< per task
  std::vector<SimTime> collective_ends;     ///< per collective (by its `args` slot)
  std::vector<coll::Algorithm> algorithms;  ///< per collective (by its `args` slot)
  std::vector<std::uint32_t> group_owner;   ///< per group: its node's partition, or the fabric's
  std::uint32_t fabric = 0;                 ///< the fabric partition's index (== nodes)
  std::uint32_t gpus_per_partition = 0;     ///< node partitions hold consecutive GPU ranks
  bool partitioned = false;
  net::LinkState links;
  // Open runs (simulate_open): the graph grows while it runs; the successors of tasks added then,
  // and the hook that tells the source a task ended.
  WorkloadGraph* open = nullptr;
  std::vector<std::vector<TaskId>> late_succ;
  std::function<void(TaskId)> on_end;
  std::vector<coll::MeasuredCurve> curves;  ///< the profile's curves, for plan_collective

  Shared(const WorkloadGraph& graph, const net::Topology& t, const ExecutorOptions& o)
      : g(graph),
        topo(t),
        opt(o),
        links(t.link_count()),
        curves(measured_curves(o.curves, o.kernel_tables, o.custom_allreduce, o.nccl_all_to_all)) {
    for (const auto& c : o.clusters) {
      auto own = measured_curves(c.curves, c.kernel_tables, o.custom_allreduce, o.nccl_all_to_all);
      for (auto& m : own) m.cluster = c.cluster;
      curves.insert(curves.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
    }
  }
  /// The fixed cost of a collective call on `ranks`: its cluster's under a fleet of box kinds.
  [[nodiscard]] double call_latency(const std::vector<int>& ranks) const {
    if (!opt.clusters.empty()) {
      const auto& cluster = topo.cluster_of_rank(ranks.front());
      for (const auto& c : opt.clusters) {
        if (c.cluster == cluster) return c.latency_s;
      }
    }
    return opt.collective_latency_s;
  }

  [[nodiscard]] std::uint32_t node_partition(std::uint32_t gpu) const {
    return partitioned ? gpu / gpus_per_partition : kSerial;
  }
  [[nodiscard]] std::uint32_t owner(const Task& t) const {
    if (!partitioned) return kSerial;
    if (!t.collective) return node_partition(t.gpu);
    const auto a = group_owner[t.group], b = group_owner[g.collective(t).flow_group];
    return a == b ? a : fabric;
  }
  /// Task t's dependencies not yet done.
  [[nodiscard]] std::uint32_t pending(std::uint32_t t) const {
    return linked.contains(t) ? preds_left[linked.rank(t)] : 0;
  }
  /// One of linked task t's dependencies is done: how many are left.
  std::uint32_t release(std::uint32_t t) { return --preds_left[linked.rank(t)]; }
  /// A built graph's task t's successors.
  [[nodiscard]] std::span<const TaskId> successors(std::uint32_t t) const {
    if (!linked.contains(t)) return {};
    const auto r = linked.rank(t);
    return {succ.data() + succ_begin[r], succ.data() + succ_begin[r + 1]};
  }
  [[nodiscard]] std::span<const TaskId> stream_order(std::size_t s) const {
    if (open) return g.stream_order(s);
    return {order.data() + order_begin[s], order.data() + order_begin[s + 1]};
  }
  [[nodiscard]] std::size_t stream_index(std::uint32_t gpu, Stream s) const {
    return static_cast<std::size_t>(gpu) * kStreamsPerGpu + static_cast<std::size_t>(s);
  }
};

class Partition final : public engine::EventHandler {
 public:
  Partition(Shared& sh, std::uint32_t self, std::uint32_t first_gpu, std::uint32_t gpu_count)
      : sh_(sh),
        self_(self),
        first_gpu_(first_gpu),
        gpu_count_(gpu_count),
        network_lp_(gpu_count),
        net_(net::make_network_model(sh.opt.network, sh.topo, sh.partitioned ? &sh.links : nullptr)) {}

  [[nodiscard]] bool is_fabric() const { return sh_.partitioned && self_ == sh_.fabric; }
  engine::Engine& engine() { return engine_; }
  std::vector<Message>& outbox() { return outbox_; }
  [[nodiscard]] std::uint64_t flows() const { return flows_; }
  std::vector<LinkSample>& link_samples() { return samples_; }

  /// Puts an incoming message on this partition's clock (in the order given).
  void deliver(const Message& m) {
    const auto phase = m.kind == kArrive ? engine::Phase::kTaskStart : engine::Phase::kTaskEnd;
    // Incoming messages have their own lp (after the GPUs and the network): their order among
    // themselves is the order of delivery, which is deterministic.
    engine_.schedule(m.time, phase, network_lp_ + 1, m.kind, m.task);
  }

  /// Before the first window: an unordered task of this partition without dependencies starts.
  void prime_unordered(TaskId id) { start_unordered(id); }

  /// Open runs: a task just added (with its edges) starts if its stream and dependencies allow.
  void admit(TaskId id) {
    const Task task = sh_.g.task(id);
    if (task.stream == Stream::kNone) {
      if (sh_.pending(index(id)) == 0) start_unordered(id);
    } else if (task.collective) {
      for (int r : sh_.g.groups()[task.group]) try_start(sh_.stream_index(static_cast<std::uint32_t>(r), task.stream));
    } else {
      try_start(sh_.stream_index(task.gpu, task.stream));
    }
  }

  /// Before the first window, after the unordered tasks: every stream's head.
  void prime() {
    if (is_fabric()) return;
    for (std::uint32_t r = first_gpu_; r < first_gpu_ + gpu_count_; ++r) {
      for (int s = 0; s < kStreamsPerGpu; ++s) try_start(sh_.stream_index(r, static_cast<Stream>(s)));
    }
  }

  void handle(const engine::Event& e, engine::Engine& /*engine*/) override {
    const auto task = static_cast<std::uint32_t>(e.payload & 0xffffffffu);
    switch (e.kind) {
      case kTaskEnd: finish(static_cast<TaskId>(task)); break;
      case kNetworkWake: network_wake(e.payload); break;
      case kArrive: arrive(static_cast<TaskId>(task)); break;
      case kRelease: release(static_cast<TaskId>(task)); break;
      case kRemoteEnd: remote_end(static_cast<TaskId>(task)); break;
      default: CS_ASSERT(false, "a known event kind");
    }
  }

 private:
  [[nodiscard]] std::uint32_t local_lp(std::uint32_t gpu) const { return gpu - first_gpu_; }

  void schedule_end(std::uint32_t t, SimTime at) {
    engine_.schedule(at, engine::Phase::kTaskEnd, is_fabric() ? 0 : local_lp(sh_.g.task(static_cast<TaskId>(t)).gpu),
                     kTaskEnd, t);
  }

  void network_wake(std::uint64_t version) {
    if (version != net_version_) return;
    const auto now = engine_.now();
    for (auto f : net_->complete(now)) {
      const auto slot = flow_owner_[net::index(f)];
      free_flows_.push_back(f);  // ids are reused: the model's state stays as small as the active set
      auto& c = running_[slot];
      if (--c.flows_left > 0) continue;
      free_running_.push_back(slot);
      ends_at(c.task, now + SimTime::from_seconds(c.latency_s));
    }
    network_changed();
  }

  /// A collective's end is now known: schedule it here, and tell the nodes it concerns.
  void ends_at(std::uint32_t t, SimTime at) {
    schedule_end(t, at);
    if (!is_fabric()) return;
    const Task task = sh_.g.task(static_cast<TaskId>(t));
    auto& nodes = nodes_;
    nodes.clear();
    if (task.stream != Stream::kNone) {
      for (int r : sh_.g.groups()[task.group]) nodes.push_back(sh_.node_partition(static_cast<std::uint32_t>(r)));
    }
    for (auto succ : sh_.successors(t)) {
      const auto o = sh_.owner(sh_.g.task(succ));
      if (o != self_) nodes.push_back(o);
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (auto n : nodes) outbox_.push_back({at, n, kRemoteEnd, t});
  }

  void try_start(std::size_t s) {
    if (sh_.busy[s]) return;
    const auto order = sh_.stream_order(s);
    if (sh_.head[s] == order.size()) return;
    const TaskId id = order[sh_.head[s]];
    const auto t = index(id);
    const Task task = sh_.g.task(id);
    if (sh_.owner(task) != self_) {
      // A fabric collective: this stream waits in it; the fabric counts arrivals and dependencies.
      sh_.busy[s] = true;
      outbox_.push_back({engine_.now(), sh_.fabric, kArrive, t});
      return;
    }
    if (sh_.pending(t) > 0) return;
    sh_.busy[s] = true;  // a collective's kernel occupies the stream while it waits for its peers
    if (!task.collective) {
      sh_.starts[t] = engine_.now();
      schedule_end(t, engine_.now() + task.duration);
      return;
    }
    if (++sh_.arrived[task.args] < sh_.g.groups()[task.group].size()) return;
    start_collective(id, task);
  }

  /// Fabric: a rank's stream reached collective `id`.
  void arrive(TaskId id) {
    const auto t = index(id);
    const Task task = sh_.g.task(id);
    if (++sh_.arrived[task.args] == sh_.g.groups()[task.group].size() && sh_.pending(t) == 0)
      start_collective(id, task);
  }

  /// Fabric: one of task `id`'s dependencies (a kernel on a node) is done.
  void release(TaskId id) {
    const auto t = index(id);
    const Task task = sh_.g.task(id);
    if (sh_.release(t) > 0) return;
    if (task.stream == Stream::kNone) {
      start_unordered(id);
    } else if (sh_.arrived[task.args] == sh_.g.groups()[task.group].size()) {
      start_collective(id, task);
    }
  }

  /// A task outside every stream starts as soon as its dependencies are done.
  void start_unordered(TaskId id) {
    const Task task = sh_.g.task(id);
    if (task.collective) {
      start_collective(id, task);
    } else {
      sh_.starts[index(id)] = engine_.now();
      schedule_end(index(id), engine_.now() + task.duration);
    }
  }

  void start_collective(TaskId id, const Task& task) {
    const auto t = index(id);
    sh_.starts[t] = engine_.now();
    const auto& cached = plan_for(task);
    const auto& plan = cached.plan;
    sh_.algorithms[task.args] = plan.algorithm;
    if (plan.flows.empty()) {
      ends_at(t, engine_.now() + SimTime::from_seconds(plan.latency_s));
      return;
    }
    std::uint32_t slot = 0;
    if (free_running_.empty()) {
      slot = static_cast<std::uint32_t>(running_.size());
      running_.emplace_back();
    } else {
      slot = free_running_.back();
      free_running_.pop_back();
    }
    running_[slot] = {t, static_cast<std::uint32_t>(plan.flows.size()), plan.latency_s};
    for (std::size_t k = 0; k < plan.flows.size(); ++k) {
      net::FlowId fid{};
      if (free_flows_.empty()) {
        fid = static_cast<net::FlowId>(flow_owner_.size());
        flow_owner_.push_back(slot);
      } else {
        fid = free_flows_.back();
        free_flows_.pop_back();
        flow_owner_[net::index(fid)] = slot;
      }
      net_->start(fid, *cached.routes[k], plan.flows[k].bytes, plan.flows[k].rate_cap, engine_.now());
    }
    flows_ += plan.flows.size();
    network_changed();
  }

 public:
  /// A collective's plan with its flows' routes resolved (cached: the same group, op and size
  /// recur every micro-batch).
  struct CachedPlan {
    coll::CollectivePlan plan;
    std::vector<const net::Route*> routes;
  };

  const CachedPlan& plan_for(const Task& task) {
    const auto& args = sh_.g.collective(task);
    const PlanKey key{args.flow_group, static_cast<int>(args.op) * 8 + static_cast<int>(args.algorithm), args.bytes,
                      args.traffic};
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    const auto cache = [&](coll::CollectivePlan plan) -> const CachedPlan& {
      CachedPlan c{std::move(plan), {}};
      for (const auto& f : c.plan.flows) c.routes.push_back(&sh_.topo.route(f.src, f.dst));
      return plans_.emplace(key, std::move(c)).first->second;
    };
    const auto& ranks = sh_.g.groups()[args.flow_group];
    coll::CollectiveRequest req;
    req.op = args.op;
    req.algorithm = args.algorithm;
    req.ranks = ranks;
    req.bytes = args.bytes;
    req.call_latency_s = sh_.call_latency(ranks);
    req.pair_bytes = sh_.g.traffic(args.traffic);
    req.node_copies = sh_.g.traffic_node_copies(args.traffic);
    req.curves = sh_.curves;
    return cache(coll::plan_collective(sh_.topo, req));
  }

 private:
  void network_changed() {
    ++net_version_;
    if (sh_.opt.record_links) {
      const auto& loads = net_->link_loads();
      if (last_loads_.size() != loads.size()) last_loads_.assign(loads.size(), 0.0);
      for (std::size_t l = 0; l < loads.size(); ++l) {
        if (loads[l] != last_loads_[l]) {
          samples_.push_back({engine_.now(), static_cast<std::uint32_t>(l), loads[l]});
          last_loads_[l] = loads[l];
        }
      }
    }
    if (auto next = net_->next_completion()) {
      engine_.schedule(*next, engine::Phase::kNetwork, network_lp_, kNetworkWake, net_version_);
    }
  }

  /// Frees the streams of `task`'s ranks held here and releases the successors this partition
  /// owns (telling the fabric of the others); starts whatever is now ready.
  void complete(TaskId id, bool here) {
    const auto t = index(id);
    const Task task = sh_.g.task(id);
    auto& touched = touched_;
    touched.clear();
    if (task.stream != Stream::kNone) {
      if (task.collective) {
        for (int r : sh_.g.groups()[task.group]) {
          if (sh_.node_partition(static_cast<std::uint32_t>(r)) == self_ && !is_fabric()) {
            touched.push_back(sh_.stream_index(static_cast<std::uint32_t>(r), task.stream));
          }
        }
      } else {
        touched.push_back(sh_.stream_index(task.gpu, task.stream));
      }
    }
    for (auto s : touched) {
      sh_.busy[s] = 0;
      if (++sh_.head[s] >= kOpenStreamTrim && sh_.open) {
        // An open run forgets what its streams have run (their tasks' ids are being reused).
        sh_.open->drop_stream_front(s, sh_.head[s]);
        sh_.head[s] = 0;
      }
    }
    const auto release_successor = [&](TaskId succ) {
      const Task st = sh_.g.task(succ);
      const auto o = sh_.owner(st);
      if (o != self_) {
        // Only a node's own task reaches here with a successor elsewhere: the fabric's (checked
        // when partitioning); the fabric tells nodes of its tasks' ends itself.
        if (here && !is_fabric()) outbox_.push_back({engine_.now(), o, kRelease, index(succ)});
        return;
      }
      if (sh_.release(index(succ)) > 0) return;
      if (st.stream == Stream::kNone) {
        start_unordered(succ);
      } else if (st.collective) {
        for (int r : sh_.g.groups()[st.group]) {
          if (sh_.node_partition(static_cast<std::uint32_t>(r)) == self_) {
            touched.push_back(sh_.stream_index(static_cast<std::uint32_t>(r), st.stream));
          }
        }
      } else {
        touched.push_back(sh_.stream_index(st.gpu, st.stream));
      }
    };
    if (sh_.open) {
      for (auto succ : sh_.late_succ[t]) release_successor(succ);
    } else {
      for (auto succ : sh_.successors(t)) release_successor(succ);
    }
    if (is_fabric()) return;  // the fabric holds no streams
    // try_start never re-enters complete (ends are events), so the scratch list is stable here.
    for (auto s : touched) try_start(s);
  }

  void finish(TaskId id) {
    // A kernel's end is its start plus its duration: only a collective's is kept.
    if (const Task task = sh_.g.task(id); task.collective) sh_.collective_ends[task.args] = engine_.now();
    complete(id, true);
    if (sh_.on_end) sh_.on_end(id);
  }

  /// A node learns that a fabric collective ended.
  void remote_end(TaskId id) { complete(id, false); }

  Shared& sh_;
  std::uint32_t self_;
  std::uint32_t first_gpu_;  ///< this partition's GPUs: [first, first + count); event lp = GPU - first
  std::uint32_t gpu_count_;
  std::uint32_t network_lp_;  ///< after the GPUs; incoming messages use the next lp
  engine::Engine engine_;
  std::unique_ptr<net::NetworkModel> net_;
  /// A collective whose flows are moving: what its end needs. Kept per running collective (slots
  /// reused), not per task: a step has tens of millions of tasks and a few thousand in flight.
  struct Running {
    std::uint32_t task = 0;
    std::uint32_t flows_left = 0;
    double latency_s = 0;
  };
  std::vector<Running> running_;
  std::vector<std::uint32_t> free_running_;  ///< ended collectives' slots, reused last-in first-out
  std::vector<std::uint32_t> flow_owner_;    ///< by flow id: its collective's slot in running_
  std::vector<net::FlowId> free_flows_;      ///< finished flows' ids, reused last-in first-out
  std::vector<std::size_t> touched_;         ///< scratch of complete(): streams to try
  std::vector<std::uint32_t> nodes_;         ///< scratch of ends_at(): the partitions to tell
  std::vector<double> last_loads_;
  std::vector<LinkSample> samples_;
  std::vector<Message> outbox_;
  /// What a collective's plan depends on: flow group, op and algorithm, bytes, traffic matrix.
  struct PlanKey {
    std::uint32_t flow_group = 0;
    int op_algorithm = 0;
    double bytes = 0;
    std::uint32_t traffic = 0;
    bool operator==(const PlanKey&) const = default;
  };
  struct PlanKeyHash {
    std::size_t operator()(const PlanKey& k) const {
      std::size_t h = std::hash<double>{}(k.bytes);
      for (std::size_t x :
           {std::size_t{k.flow_group}, static_cast<std::size_t>(k.op_algorithm), std::size_t{k.traffic}})
        h = (h ^ x) * 0x100000001b3ULL;
      return h;
    }
  };
  /// Looked up at every collective start (millions); never iterated, and its elements stay put.
  std::unordered_map<PlanKey, CachedPlan, PlanKeyHash> plans_;
  std::uint64_t net_version_ = 0;
  std::uint64_t flows_ = 0;
};

/// Decides whether to partition: one partition per NVLink domain (a node, or a rack of nodes sharing
/// NVLink switches) plus one for the fabric, when the options allow it, links are not recorded, the
/// topology has several domains filled by rank in order, and every dependency between two domain
/// partitions goes through a fabric task. Returns 0 (one partition), or infinity: the caller then
/// narrows it to the lookahead, the smallest fabric-task latency, and still falls back to one
/// partition when that is not positive or a fabric task's flows touch a domain's links.
double partition(Shared& sh) {
  const auto& g = sh.g;
  const int gpus = g.gpus();
  int nodes = 0;
  for (int r = 0; r < gpus; ++r) nodes = std::max(nodes, sh.topo.domain_of_rank(r) + 1);
  if (!sh.opt.partition || nodes < 2 || sh.opt.record_links || gpus % nodes != 0) return 0.0;
  sh.gpus_per_partition = static_cast<std::uint32_t>(gpus / nodes);
  for (int r = 0; r < gpus; ++r) {
    if (static_cast<std::uint32_t>(sh.topo.domain_of_rank(r)) != static_cast<std::uint32_t>(r) / sh.gpus_per_partition)
      return 0.0;
  }
  sh.partitioned = true;
  sh.fabric = static_cast<std::uint32_t>(nodes);
  sh.group_owner.resize(g.groups().size());
  for (std::size_t k = 0; k < g.groups().size(); ++k) {
    const auto& ranks = g.groups()[k];
    const auto first = sh.node_partition(static_cast<std::uint32_t>(ranks.front()));
    bool one = true;
    for (int r : ranks) one = one && sh.node_partition(static_cast<std::uint32_t>(r)) == first;
    sh.group_owner[k] = one ? first : sh.fabric;
  }
  // Every dependency between two partitions must touch the fabric.
  for (const auto& e : g.edges()) {
    const auto a = sh.owner(g.task(e.before)), b = sh.owner(g.task(e.after));
    if (a != b && a != sh.fabric && b != sh.fabric) {
      sh.partitioned = false;
      return 0.0;
    }
  }
  return std::numeric_limits<double>::infinity();  // narrowed by the fabric tasks' plans
}

}  // namespace

RunLog simulate(const WorkloadGraph& graph, const net::Topology& topo, const ExecutorOptions& options) {
  Shared sh(graph, topo, options);
  const auto n = graph.task_count();
  // Three independent arrays of the run's state, filled side by side (first touches of fresh
  // memory, hundreds of MB at 16K GPUs, cost more than the copying itself).
  parallel_for_each(3, [&](std::size_t job) {
    if (job == 0) {
      // Per-task state, indexed in no local order: huge pages spare a TLB miss per access.
      assign_huge(sh.arrived, graph.collective_slots(), std::uint32_t{0});
      assign_huge(sh.starts, n, SimTime{});
      assign_huge(sh.collective_ends, graph.collective_slots(), SimTime{});
      assign_huge(sh.algorithms, graph.collective_slots(), coll::Algorithm::kDirect);
      sh.head.assign(graph.stream_count(), 0);
      sh.busy.assign(graph.stream_count(), 0);
    } else if (job == 1) {
      // Successors in compressed rows over the linked tasks (a stable counting sort keeps each
      // task's edges in the order they were added, so the run does not depend on how edges are stored).
      sh.linked.assign(n);
      for (const auto& e : graph.edges()) {
        sh.linked.insert(index(e.before));
        sh.linked.insert(index(e.after));
      }
      sh.linked.finish();
      const auto linked = sh.linked.size();
      assign_huge(sh.preds_left, linked, std::uint32_t{0});
      assign_huge(sh.succ_begin, std::size_t{linked} + 1, std::uint32_t{0});
      for (const auto& e : graph.edges()) {
        ++sh.succ_begin[sh.linked.rank(index(e.before)) + 1];
        ++sh.preds_left[sh.linked.rank(index(e.after))];
      }
      for (std::size_t i = 0; i < linked; ++i) sh.succ_begin[i + 1] += sh.succ_begin[i];
      sh.succ.resize(graph.edges().size());
      std::vector<std::uint32_t> fill(sh.succ_begin.begin(), sh.succ_begin.end() - 1);
      for (const auto& e : graph.edges()) sh.succ[fill[sh.linked.rank(index(e.before))]++] = e.after;
    } else {
      sh.order_begin.assign(graph.stream_count() + 1, 0);
      for (std::size_t s = 0; s < graph.stream_count(); ++s)
        sh.order_begin[s + 1] = sh.order_begin[s] + graph.stream_order(s).size();
      reserve_huge(sh.order, sh.order_begin.back());
      for (std::size_t s = 0; s < graph.stream_count(); ++s)
        sh.order.insert(sh.order.end(), graph.stream_order(s).begin(), graph.stream_order(s).end());
    }
  });

  double lookahead = partition(sh);
  std::vector<std::unique_ptr<Partition>> parts;
  if (sh.partitioned) {
    for (std::uint32_t p = 0; p < sh.fabric; ++p)
      parts.push_back(std::make_unique<Partition>(sh, p, p * sh.gpus_per_partition, sh.gpus_per_partition));
    parts.push_back(std::make_unique<Partition>(sh, sh.fabric, 0, 0));
    // The lookahead: the smallest latency of a fabric task (its plan is cached for the run). Its
    // flows must stay off the nodes' own links (a hierarchical all-reduce's rings inside each node,
    // a GPU reaching its NIC through a PCIe switch): those belong to a node's partition.
    auto& fabric = *parts.back();
    bool disjoint = true;
    for (std::size_t k = 0; k < n; ++k) {
      const Task t = graph.task(static_cast<TaskId>(k));
      if (!t.collective || sh.owner(t) != sh.fabric) continue;
      const auto& cached = fabric.plan_for(t);
      lookahead = std::min(lookahead, cached.plan.latency_s);
      for (const auto* r : cached.routes) {
        for (auto l : r->links) disjoint = disjoint && net::index(l) >= topo.domain_link_end();
      }
      if (!disjoint) break;
    }
    if (!(lookahead > 0.0) || !disjoint) {
      // No lookahead, or links shared with a node: run as one partition.
      sh.partitioned = false;
      parts.clear();
    }
  }
  if (!sh.partitioned)
    parts.push_back(std::make_unique<Partition>(sh, kSerial, 0, static_cast<std::uint32_t>(graph.gpus())));

  RunLog log;
  for (std::size_t t = 0; t < n; ++t) {
    const Task task = graph.task(static_cast<TaskId>(t));
    if (task.stream == Stream::kNone && sh.pending(static_cast<std::uint32_t>(t)) == 0)
      parts[sh.owner(task)]->prime_unordered(static_cast<TaskId>(t));
  }
  for (auto& p : parts) p->prime();
  std::vector<std::uint64_t> events(parts.size(), 0);
  std::uint64_t windows = 0;
  if (!sh.partitioned) {
    events[0] = parts[0]->engine().run(*parts[0]);
  } else {
    const SimTime L = SimTime::from_seconds(lookahead);
    auto& fabric = *parts[sh.fabric];
    // Node partitions by their next event time: a min-heap whose entry for a partition goes stale
    // when its next time changes (`queued` holds the live time; stale entries are dropped when they
    // surface). A heap of pairs, not a tree: a window re-queues hundreds of partitions.
    using Entry = std::pair<SimTime, std::uint32_t>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
    std::vector<std::optional<SimTime>> queued(sh.fabric);
    auto requeue = [&](std::uint32_t p) {
      const auto next = parts[p]->engine().next_time();
      if (next == queued[p]) return;  // its live entry is in the heap
      queued[p] = next;
      if (next) ready.push({*next, p});
    };
    auto drop_stale = [&] {
      while (!ready.empty() && queued[ready.top().second] != ready.top().first) ready.pop();
    };
    // Messages from priming: nodes' arrivals go to the fabric.
    for (std::uint32_t p = 0; p < sh.fabric; ++p) {
      for (const auto& m : parts[p]->outbox()) fabric.deliver(m);
      parts[p]->outbox().clear();
      requeue(p);
    }
    std::vector<std::uint32_t> active;
    for (;;) {
      std::optional<SimTime> t0 = fabric.engine().next_time();
      drop_stale();
      if (!ready.empty() && (!t0 || ready.top().first < *t0)) t0 = ready.top().first;
      if (!t0) break;
      const SimTime limit = *t0 + L;
      ++windows;
      // The partitions with events in the window leave the heap; they re-enter after running.
      active.clear();
      for (drop_stale(); !ready.empty() && ready.top().first < limit; drop_stale()) {
        active.push_back(ready.top().second);
        queued[ready.top().second].reset();
        ready.pop();
      }
      std::sort(active.begin(), active.end());
      // Small windows run inline: a task per partition costs more than a few events.
      auto run_node = [&](std::size_t i) {
        auto& p = *parts[active[i]];
        events[active[i]] += p.engine().run_until(p, limit);
      };
      if (active.size() >= 8) {
        parallel_for_each(active.size(), run_node);
      } else {
        for (std::size_t i = 0; i < active.size(); ++i) run_node(i);
      }
      // The nodes' messages to the fabric, in partition order, join its window.
      for (auto p : active) {
        for (const auto& m : parts[p]->outbox()) {
          CS_ASSERT(m.partition == sh.fabric, "nodes only talk to the fabric");
          fabric.deliver(m);
        }
        parts[p]->outbox().clear();
        requeue(p);
      }
      events[sh.fabric] += fabric.engine().run_until(fabric, limit);
      // The fabric's messages (task ends) fall beyond the window, in the nodes concerned.
      for (const auto& m : fabric.outbox()) {
        CS_ASSERT(m.time >= limit, "the fabric's messages fall beyond the window");
        parts[m.partition]->deliver(m);
        requeue(m.partition);
      }
      fabric.outbox().clear();
    }
  }
  for (std::size_t p = 0; p < parts.size(); ++p) {
    log.events += events[p];
    log.flows += parts[p]->flows();
    log.makespan = std::max(log.makespan, parts[p]->engine().now());
    auto& samples = parts[p]->link_samples();
    log.link_samples.insert(log.link_samples.end(), samples.begin(), samples.end());
  }
  for (std::size_t s = 0; s < graph.stream_count(); ++s) {
    CS_ASSERT(sh.head[s] == graph.stream_order(s).size(), "every task ran (no deadlock in the workload graph)");
  }
  log.starts = std::move(sh.starts);
  log.collective_ends = std::move(sh.collective_ends);
  log.algorithms = std::move(sh.algorithms);
  log.partitions = static_cast<std::uint32_t>(parts.size());
  log.windows = windows;
  log.lookahead_s = sh.partitioned ? lookahead : 0.0;
  return log;
}

}  // namespace cs::workload

namespace cs::workload {

namespace {

/// An open run: the graph as the source grows it, on one partition. Each task's slot is reused
/// once the source has been told it ended, so memory follows the tasks in flight, not the run.
class OpenRun final : public OpenGraph {
 public:
  OpenRun(WorkloadGraph& graph, Shared& sh, Partition& part, TaskSource& source)
      : g_(graph), sh_(sh), part_(part), source_(source) {}

  [[nodiscard]] SimTime now() const override { return part_.engine().now(); }
  std::uint32_t add_group(const std::vector<int>& ranks) override { return g_.add_group(ranks); }
  TaskId add_compute(int gpu, Stream stream, Category category, const char* label, SimTime duration) override {
    return fresh(g_.add_compute(gpu, stream, category, label, -1, -1, duration));
  }
  TaskId add_collective(std::uint32_t group, Stream stream, Category category, const char* label, coll::CollectiveOp op,
                        double bytes) override {
    return fresh(g_.add_collective(group, stream, category, label, -1, -1, op, bytes));
  }
  TaskId add_ep_alltoall(std::uint32_t group, Stream stream, Category category, const char* label,
                         const EpAllToAll& a) override {
    // One matrix per (group, bytes, copies, shares, direction): a serving run repeats its step sizes.
    std::vector<double> share(a.dest_share.begin(), a.dest_share.end());
    const auto n = g_.groups()[group].size();
    CS_ASSERT(share.empty() || share.size() == n, "one destination share per rank of the group");
    auto key = std::make_tuple(group, a.bytes, a.node_copies, a.returning, std::move(share));
    auto it = traffic_.find(key);
    if (it == traffic_.end()) {
      const auto& shares = std::get<4>(key);
      auto pairs = shares.empty() ? std::vector<double>(n * n, a.bytes / static_cast<double>(n))
                                  : ep_alltoall_pairs(a.bytes, shares, a.returning);
      it = traffic_.emplace(std::move(key), g_.add_traffic(std::move(pairs), a.node_copies)).first;
    }
    const auto algorithm = a.node_copies != 1.0 ? coll::Algorithm::kHierarchical : coll::Algorithm::kAuto;
    return fresh(g_.add_alltoall(group, group, stream, category, label, -1, -1, it->second, algorithm));
  }
  void depend(TaskId before, TaskId after) override {
    CS_ASSERT(state_[index(before)] != kGone, "an edge comes from a task that has not ended");
    CS_ASSERT(state_[index(after)] == kNew, "an edge goes into a task added in the same call");
    sh_.late_succ[index(before)].push_back(after);
    ++sh_.preds_left[index(after)];
  }

  void begin() {
    source_.begin(*this);
    admit_new();
  }

  /// The executor's hook: tell the source, start what it added, reuse the ended task's slot.
  void ended(TaskId id) {
    const auto t = index(id);
    state_[t] = kGone;
    sh_.late_succ[t].clear();
    const Task task = g_.task(id);
    source_.ended(id, {sh_.starts[t], task.collective ? sh_.collective_ends[task.args] : sh_.starts[t] + task.duration},
                  *this);
    g_.recycle(id);
    admit_new();
  }

 private:
  enum State : std::uint8_t { kGone = 0, kNew = 1, kAdmitted = 2 };
  std::map<std::tuple<std::uint32_t, double, double, bool, std::vector<double>>, std::uint32_t> traffic_;

  TaskId fresh(TaskId id) {
    const auto t = index(id);
    if (t >= state_.size()) {
      const std::size_t n = t + 1;
      state_.resize(n, kGone);
      sh_.preds_left.resize(n, 0);
      sh_.starts.resize(n);
      sh_.late_succ.resize(n);
    }
    CS_ASSERT(state_[t] == kGone, "a reused slot held a task that ended");
    state_[t] = kNew;
    sh_.preds_left[t] = 0;
    if (const Task task = g_.task(id); task.collective) {
      if (task.args >= sh_.arrived.size()) {
        sh_.arrived.resize(task.args + 1, 0);
        sh_.collective_ends.resize(task.args + 1);
        sh_.algorithms.resize(task.args + 1, coll::Algorithm::kDirect);
      }
      sh_.arrived[task.args] = 0;
      sh_.collective_ends[task.args] = SimTime{};
      sh_.algorithms[task.args] = coll::Algorithm::kDirect;
    }
    sh_.starts[t] = SimTime{};
    added_.push_back(id);
    return id;
  }

  /// Tasks added by the last call of the source start now, in the order they were added.
  void admit_new() {
    for (auto id : added_) state_[index(id)] = kAdmitted;
    for (std::size_t k = 0; k < added_.size(); ++k) part_.admit(added_[k]);
    added_.clear();
  }

  WorkloadGraph& g_;
  Shared& sh_;
  Partition& part_;
  TaskSource& source_;
  std::vector<std::uint8_t> state_;  ///< per slot
  std::vector<TaskId> added_;
};

}  // namespace

RunLog simulate_open(int gpus, const net::Topology& topo, const ExecutorOptions& options, TaskSource& source) {
  WorkloadGraph graph(gpus);
  Shared sh(graph, topo, options);
  sh.open = &graph;
  sh.head.assign(graph.stream_count(), 0);
  sh.busy.assign(graph.stream_count(), 0);
  sh.linked.all();  // preds_left by task id, successors in late_succ
  Partition part(sh, kSerial, 0, static_cast<std::uint32_t>(gpus));
  OpenRun run(graph, sh, part, source);
  sh.on_end = [&run](TaskId id) { run.ended(id); };
  run.begin();
  RunLog log;
  log.events = part.engine().run(part);
  log.flows = part.flows();
  log.makespan = part.engine().now();
  log.link_samples = std::move(part.link_samples());
  for (std::size_t s = 0; s < graph.stream_count(); ++s) {
    CS_ASSERT(sh.head[s] == graph.stream_order(s).size(), "every task ran (no deadlock in the open run)");
  }
  return log;
}

}  // namespace cs::workload
