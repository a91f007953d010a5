#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "calibration/profile/hardware_profile.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/core/sim_time.hpp"
#include "sim/network/network_model.hpp"
#include "sim/network/topology.hpp"
#include "sim/workload/workload_graph.hpp"

namespace cs::workload {

/// When each task ran. Collectives record the time all ranks had arrived (start) to the end.
struct TaskSpan {
  SimTime start{};
  SimTime end{};
};

/// A change of one link's load (bytes/s), recorded only when asked (for trace counters).
struct LinkSample {
  SimTime time{};
  std::uint32_t link = 0;
  double bytes_per_s = 0;
};

/// Everything a simulation produced (stage 5 output).
struct RunLog {
  /// When each task started, by TaskId. A kernel ends its duration later; a collective's end and
  /// the algorithm it ran are kept by its arguments' slot (Task::args), nine tasks in ten being
  /// kernels: 8 bytes a task rather than 17, for tens of millions of tasks. `span` puts them together.
  std::vector<SimTime> starts;
  std::vector<SimTime> collective_ends;     ///< by collective slot
  std::vector<coll::Algorithm> algorithms;  ///< by collective slot
  SimTime makespan{};
  std::uint64_t events = 0;
  std::uint64_t flows = 0;
  std::vector<LinkSample> link_samples;
  std::uint32_t partitions = 1;  ///< parallel engine: logical partitions (nodes + fabric), 1 = serial
  std::uint64_t windows = 0;     ///< conservative time windows run
  double lookahead_s = 0;        ///< their width: the smallest fabric-task latency

  /// When task `id` (`t`, as the graph gives it) ran.
  [[nodiscard]] TaskSpan span(TaskId id, const Task& t) const {
    const SimTime start = starts[index(id)];
    return {start, t.collective ? collective_ends[t.args] : start + t.duration};
  }
  /// The algorithm collective `t` ran.
  [[nodiscard]] coll::Algorithm algorithm(const Task& t) const { return algorithms[t.args]; }
};

struct ExecutorOptions {
  net::NetworkModelKind network = net::NetworkModelKind::kFlow;
  double collective_latency_s = 0;  ///< fixed cost per collective call (profile)
  bool record_links = false;
  /// Measured or imported collective costs (the profile's); a collective with no explicit algorithm
  /// whose group has a curve of its own scope (op, GPUs, nodes, fabric) takes the curve's time and
  /// still loads the links with its flows (coll::plan_collective).
  const std::vector<calib::CollectiveCurve>* curves = nullptr;
  /// Measured NCCL tables (the profile's kernel tables): a one-node all-reduce, all-gather or
  /// reduce-scatter (and all-to-all, `nccl_all_to_all`) of a GPU count the table holds takes the
  /// table's time at its size, and still loads the links. After `curves`, which a calibrated box
  /// measured itself.
  const calib::KernelTables* kernel_tables = nullptr;
  /// A one-node all-reduce takes the kernel tables' custom all-reduce time (TensorRT-LLM's
  /// AllReduce, strategy AUTO: its one-shot and two-shot kernels for small messages, NCCL above)
  /// where the tables hold its GPU count, ahead of `curves` and the NCCL table: serving under an
  /// engine that runs it (ServingScenario::custom_allreduce).
  bool custom_allreduce = false;
  /// A uniform one-node all-to-all (no traffic matrix, no rail forwarding) is NCCL's, so it takes
  /// the NCCL table's all-to-all time as the collectives above take theirs: training, whose EP
  /// exchange is Megatron's all-to-all token dispatcher (torch.distributed's all_to_all_single on
  /// NCCL, as nccl-tests' alltoall_perf times it). Off for serving, whose all-to-alls are DeepEP's
  /// or an engine's own kernels.
  bool nccl_all_to_all = false;
  /// A fleet of several box kinds (a joined topology): each cluster's own curves, tables and call
  /// latency, a collective taking its group's cluster's (net::Topology::cluster_of_rank). Empty:
  /// the three fields above for every group.
  struct ClusterCollectives {
    std::string cluster;
    const std::vector<calib::CollectiveCurve>* curves = nullptr;
    const calib::KernelTables* kernel_tables = nullptr;
    double latency_s = 0;
  };
  std::vector<ClusterCollectives> clusters;
  /// Let the parallel engine split a multi-node run into node and fabric partitions (false: one
  /// partition, the plain serial engine; for comparison in tests and benchmarks).
  bool partition = true;
};

/// Runs a workload graph on a topology with the discrete-event engine (stage 5): streams execute
/// their tasks in order; a task starts when it heads its stream(s) and its predecessors are done;
/// a collective starts when every rank's stream has reached it, then moves its flows through the
/// network model and ends after its latency. A multi-node run is split into one partition per node
/// and one for the fabric, run in conservative time windows on the oneTBB workers (executor.cpp
/// says when and why); the result is the same for any thread count.
[[nodiscard]] RunLog simulate(const WorkloadGraph& graph, const net::Topology& topo, const ExecutorOptions& options);

/// An EP all-to-all (MoE dispatch or combine) as an open run adds it: each rank sends `bytes`,
/// split over the ranks by `dest_share` (per rank of the group, summing to 1; empty: evenly), a
/// combine (`returning`) the transpose (ep_alltoall_pairs); `node_copies` as
/// coll::CollectiveRequest's (1: a plain all-to-all).
struct EpAllToAll {
  double bytes = 0;
  double node_copies = 1;
  std::span<const double> dest_share{};
  bool returning = false;
};

/// An open run's graph as its source sees it while the simulation runs: tasks added here join the
/// running simulation on the same clock, streams and network model as a built graph's. Edges may
/// only come from tasks that have not ended, into tasks added in the same call of the source.
class OpenGraph {
 public:
  virtual ~OpenGraph() = default;
  [[nodiscard]] virtual SimTime now() const = 0;
  virtual std::uint32_t add_group(const std::vector<int>& ranks) = 0;
  /// A kernel (or, on Stream::kNone with no dependencies, a timer that ends `duration` from now).
  virtual TaskId add_compute(int gpu, Stream stream, Category category, const char* label, SimTime duration) = 0;
  virtual TaskId add_collective(std::uint32_t group, Stream stream, Category category, const char* label,
                                coll::CollectiveOp op, double bytes) = 0;
  /// An EP all-to-all over `group` with a traffic matrix (ep_alltoall_pairs of `a`): with the
  /// rail-forwarded (hierarchical) algorithm when `a.node_copies` != 1 (DeepEP's normal kernels
  /// across nodes), else the one the planner picks. Its matrix is kept for the run: callers reuse
  /// the task's time for repeats.
  virtual TaskId add_ep_alltoall(std::uint32_t group, Stream stream, Category category, const char* label,
                                 const EpAllToAll& a) = 0;
  virtual void depend(TaskId before, TaskId after) = 0;
};

/// The seam for a workload decided while it runs (serving's continuous-batching scheduler plans
/// each iteration when the previous one ends): the executor tells the source when a task ends,
/// and the source adds what follows. No nested simulation, one clock.
class TaskSource {
 public:
  virtual ~TaskSource() = default;
  /// Before the first event: the tasks known at time zero.
  virtual void begin(OpenGraph& graph) = 0;
  /// Task `id` ended (it ran over `span`). Its id is reused once this returns.
  virtual void ended(TaskId id, const TaskSpan& span, OpenGraph& graph) = 0;
};

/// Runs an open workload on `gpus` GPUs of a topology: the serial engine (one partition), the
/// graph growing as `source` adds tasks and keeping only those in flight (ids are reused). The
/// log has no per-task spans (the source saw each one); makespan, events and flows as `simulate`.
[[nodiscard]] RunLog simulate_open(int gpus, const net::Topology& topo, const ExecutorOptions& options,
                                   TaskSource& source);

}  // namespace cs::workload
