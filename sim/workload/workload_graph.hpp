#pragma once
#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/core/sim_time.hpp"

namespace cs::workload {

enum class TaskId : std::uint32_t {};
[[nodiscard]] constexpr std::uint32_t index(TaskId t) { return static_cast<std::uint32_t>(t); }

/// CUDA-stream semantics: each GPU has a compute stream, a communication stream (data-parallel
/// collectives, ZeRO gathers) and a context-parallel stream (ring attention's K/V passing, which
/// must not queue behind gradient buckets); a stream runs its tasks in the order they were added.
/// kNone: a transfer that waits only for its dependencies (pipeline send/recv posted as soon as
/// the activation exists).
enum class Stream : std::uint8_t { kCompute = 0, kComm = 1, kCp = 2, kNone = 3 };
inline constexpr int kStreamsPerGpu = 3;

/// What a task is for: the breakdown and the trace group tasks by it.
enum class Category : std::uint8_t { kForward, kBackward, kOptimizer, kTpComm, kDpComm, kPpComm, kRecompute, kEpComm };
[[nodiscard]] const char* category_name(Category c);

/// What a collective moves (WorkloadGraph::collective): kept apart from its task, since nine
/// tasks in ten are kernels.
struct CollectiveArgs {
  double bytes = 0;         ///< collective size (nccl-tests convention)
  std::uint32_t group = 0;  ///< the ranks that run it (index into groups())
  std::uint32_t gpu = 0;    ///< its group's first rank
  /// The ranks its flows join (index into groups()); differs from `group` only when data-parallel
  /// symmetry simulates one replica whose collectives still span every replica.
  std::uint32_t flow_group = 0;
  std::uint32_t traffic = 0;  ///< its traffic matrix (index into traffic(); 0: uniform)
  coll::CollectiveOp op = coll::CollectiveOp::kAllReduce;
  coll::Algorithm algorithm = coll::Algorithm::kAuto;
};

/// What a task does, kept once for all the tasks that do the same (WorkloadGraph::add_proto): the
/// TP ranks of a pipeline stage run the same kernels, and so do the data-parallel replicas, so a
/// 16,384-GPU step's ~35M tasks share ~40k prototypes.
struct TaskProto {
  const char* label = "";   ///< static text ("layer.fwd", "tp.allreduce", "dp.grad_allreduce"...)
  SimTime duration{};       ///< compute: kernel time
  std::int32_t layer = -1;  ///< decoder layer, or -1
  std::int32_t micro = -1;  ///< micro-batch, or -1
  Category category = Category::kForward;
  Stream stream = Stream::kCompute;
  bool collective = false;
  bool shared = false;  ///< made by add_proto (several tasks); otherwise one task's own
};

/// A vertex of the workload graph as read back (WorkloadGraph::task): a kernel on one GPU, or a
/// collective over a group of GPUs. The graph stores 8 bytes a task (its prototype and its GPU or
/// collective arguments) and assembles this on demand.
struct Task {
  const char* label = "";   ///< static text ("layer.fwd", "tp.allreduce", "dp.grad_allreduce"...)
  SimTime duration{};       ///< compute: kernel time
  std::int32_t layer = -1;  ///< decoder layer, or -1
  std::int32_t micro = -1;  ///< micro-batch, or -1
  std::uint32_t gpu = 0;    ///< compute: the GPU; collective: its group's first rank
  std::uint32_t group = 0;  ///< collective: the ranks that run it (index into groups())
  std::uint32_t args = 0;   ///< collective: what it moves (WorkloadGraph::collective)
  Category category = Category::kForward;
  Stream stream = Stream::kCompute;
  bool collective = false;
};

/// An explicit dependency: `after` waits for `before`.
struct Edge {
  TaskId before{};
  TaskId after{};
};

/// One training step (or, later, one serving run) as tasks and dependencies. Program order on each
/// (GPU, stream) is implicit; `depend` adds cross-stream and cross-GPU edges.
class WorkloadGraph {
 public:
  explicit WorkloadGraph(int gpus);
  /// A process group (GPU ranks in ring order); identical groups share an index.
  std::uint32_t add_group(const std::vector<int>& ranks);
  /// `label` must be static text (a literal): tasks keep the pointer.
  TaskId add_compute(int gpu, Stream stream, Category category, const char* label, int layer, int micro,
                     SimTime duration);
  /// A prototype for many tasks (the same kernel on every TP rank and replica of a stage, or the
  /// same collective over each of their groups): the tasks made from it below store 8 bytes each.
  /// `label` must be static text. Not for open runs (their tasks' slots are reused).
  std::uint32_t add_proto(Stream stream, Category category, const char* label, int layer, int micro,
                          SimTime duration = {}, bool collective = false);
  /// A kernel of prototype `proto` (made with collective = false) on `gpu`.
  TaskId add_compute(int gpu, std::uint32_t proto);
  /// A collective of prototype `proto` (made with collective = true), as add_collective_on.
  TaskId add_collective_on(std::uint32_t proto, std::uint32_t group, std::uint32_t flow_group, coll::CollectiveOp op,
                           double bytes);
  TaskId add_collective(std::uint32_t group, Stream stream, Category category, const char* label, int layer, int micro,
                        coll::CollectiveOp op, double bytes, coll::Algorithm algorithm = coll::Algorithm::kAuto);
  /// A collective run by `group` whose traffic is that of `flow_group` (a superset): the other
  /// members are identical replicas that are not simulated (data-parallel symmetry).
  TaskId add_collective_on(std::uint32_t group, std::uint32_t flow_group, Stream stream, Category category,
                           const char* label, int layer, int micro, coll::CollectiveOp op, double bytes);
  /// A non-uniform all-to-all: rank i of `flow_group` (n ranks) sends pair_bytes[i n + j] to rank j
  /// (expert dispatch and combine under routing imbalance). Its nominal size (`bytes`, what the
  /// breakdown shows) is the mean send buffer, nccl-tests' all-to-all convention.
  TaskId add_alltoall(std::uint32_t group, std::uint32_t flow_group, Stream stream, Category category,
                      const char* label, int layer, int micro, std::vector<double> pair_bytes);
  /// A traffic matrix kept once for many all-to-alls (every MoE layer and micro-batch of a step
  /// shares a handful), and an all-to-all that uses it.
  /// `node_copies`: the fraction of the pair bytes that crosses between nodes under the
  /// hierarchical (rail-forwarded) algorithm (coll::CollectiveRequest::node_copies).
  std::uint32_t add_traffic(std::vector<double> pair_bytes, double node_copies = 1.0);
  TaskId add_alltoall(std::uint32_t group, std::uint32_t flow_group, Stream stream, Category category,
                      const char* label, int layer, int micro, std::uint32_t traffic,
                      coll::Algorithm algorithm = coll::Algorithm::kAuto);
  void depend(TaskId before, TaskId after);

  /// Filling side by side (the step builder's pipeline stages): first indices, or counts, of tasks,
  /// prototypes, collective argument slots and edges.
  struct Range {
    std::size_t task = 0, proto = 0, args = 0, edge = 0;
  };
  /// Room for `n` more of each at the end; returns the first index of each. Every new element
  /// must then be set exactly once by the fill_* calls below, which any thread may make for
  /// disjoint elements, as long as each stream is appended to by one thread, in id order: the
  /// graph then equals the one the add_* calls would have built in id order.
  Range extend(const Range& n);
  void fill_proto(std::uint32_t k, const TaskProto& p) { protos_[k] = p; }
  /// Task `id` runs kernel prototype `proto` on `gpu`; it joins the GPU's stream.
  TaskId fill_compute(TaskId id, int gpu, std::uint32_t proto);
  /// Task `id` is collective prototype `proto` moving `a` (in argument slot `slot`); it joins its
  /// members' streams.
  TaskId fill_collective(TaskId id, std::uint32_t proto, std::uint32_t slot, const CollectiveArgs& a);
  void fill_edge(std::size_t e, TaskId before, TaskId after) { edges_[e] = {before, after}; }

  [[nodiscard]] int gpus() const { return gpus_; }
  [[nodiscard]] std::size_t task_count() const { return tasks_.size(); }
  /// Task `id` assembled from its prototype (and, for a collective, its arguments).
  [[nodiscard]] Task task(TaskId id) const {
    const Slot& slot = tasks_[index(id)];
    const TaskProto& p = protos_[slot.proto];
    Task t{.label = p.label,
           .duration = p.duration,
           .layer = p.layer,
           .micro = p.micro,
           .category = p.category,
           .stream = p.stream,
           .collective = p.collective};
    if (p.collective) {
      const CollectiveArgs& a = collectives_[slot.where];
      t.gpu = a.gpu;
      t.group = a.group;
      t.args = slot.where;
    } else {
      t.gpu = slot.where;
    }
    return t;
  }
  /// The prototypes' table (shared ones and tasks' own), by index.
  [[nodiscard]] std::size_t proto_count() const { return protos_.size(); }
  /// What collective task `t` moves.
  [[nodiscard]] const CollectiveArgs& collective(const Task& t) const { return collectives_[t.args]; }
  /// Slots of the collectives' table (a collective's `args` is below this).
  [[nodiscard]] std::size_t collective_slots() const { return collectives_.size(); }
  [[nodiscard]] const std::vector<std::vector<int>>& groups() const { return groups_; }
  /// A task's traffic matrix (empty for index 0: uniform).
  [[nodiscard]] const std::vector<double>& traffic(std::uint32_t index) const { return traffic_[index]; }
  [[nodiscard]] double traffic_node_copies(std::uint32_t index) const { return node_copies_[index]; }
  /// Explicit dependencies in the order they were added.
  [[nodiscard]] const std::vector<Edge>& edges() const { return edges_; }
  /// Room for `tasks` tasks, `collectives` of them collectives (building a large step without
  /// reallocating), in huge pages.
  void reserve(std::size_t tasks, std::size_t collectives);
  /// Room for `n` tasks in stream `stream_index`'s order.
  void reserve_stream(std::size_t stream_index, std::size_t n) { streams_[stream_index].reserve(n); }
  /// Tasks of one stream in program order; streams are indexed gpu * kStreamsPerGpu + stream.
  [[nodiscard]] const std::vector<TaskId>& stream_order(std::size_t stream_index) const {
    return streams_[stream_index];
  }
  [[nodiscard]] std::size_t stream_count() const { return streams_.size(); }

  /// Open runs (a workload decided while it runs, `simulate_open`): the next task added takes
  /// `id`'s slot, so the graph stays as large as the tasks in flight. `id` must have ended and
  /// nothing may refer to it any more (no edge, no later use of the id).
  void recycle(TaskId id) { free_.push_back(id); }
  /// Open runs: drops the first `n` tasks of a stream's order (tasks it has already run).
  void drop_stream_front(std::size_t stream_index, std::size_t n);

 private:
  /// A task as stored: its prototype, and its GPU (a kernel) or its arguments' slot (a collective).
  struct Slot {
    // Not zeroed when made by `extend`: tens of millions of slots, each filled once, side by side
    // (the threads' first touches of the pages, rather than one thread's zeroing).
    Slot() {}  // NOLINT(modernize-use-equals-default): = default would zero them
    Slot(std::uint32_t p, std::uint32_t w) : proto(p), where(w) {}
    std::uint32_t proto;
    std::uint32_t where;
  };
  TaskId place(Slot s);
  /// A prototype of one task's own (a recycled one first).
  std::uint32_t place_proto(const TaskProto& p);
  /// Adds a collective task of prototype `proto` to the graph and its ranks' streams.
  TaskId place_collective(std::uint32_t proto, const CollectiveArgs& a);
  /// A slot in collectives_ for a new collective task (a recycled one first).
  std::uint32_t place_args(const CollectiveArgs& a);

  int gpus_;
  std::vector<Slot> tasks_;
  std::vector<TaskProto> protos_;
  std::vector<CollectiveArgs> collectives_;
  std::vector<Edge> edges_;
  std::vector<std::vector<int>> groups_;
  std::vector<std::vector<double>> traffic_{1};  ///< [0]: uniform (empty)
  std::vector<double> node_copies_{1.0};         ///< per traffic matrix
  std::map<std::vector<int>, std::uint32_t> group_index_;
  std::vector<std::vector<TaskId>> streams_;
  std::vector<TaskId> free_;                ///< recycled slots (open runs), reused last-in first-out
  std::vector<std::uint32_t> free_args_;    ///< collectives_ slots of recycled collectives
  std::vector<std::uint32_t> free_protos_;  ///< protos_ slots of recycled tasks' own prototypes
};

}  // namespace cs::workload
