#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "models/memory/training_memory.hpp"
#include "sim/network/topology.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "sim/workload/executor.hpp"
#include "sim/workload/training_step.hpp"

namespace cs::study {

/// Why a plan cannot run as asked, as data a search can count, group and rank (the CLI turns the
/// first one into an exit-4 message).
enum class ReasonKind { kMemory };
struct Reason {
  ReasonKind kind = ReasonKind::kMemory;
  std::string message;   ///< one line with the numbers, naming scenario fields (not CLI flags)
  double needed = 0;     ///< kMemory: bytes per GPU needed
  double available = 0;  ///< kMemory: bytes per GPU the GPU has
};
struct Feasibility {
  std::vector<Reason> reasons;
  models::MemoryBreakdown memory;
  [[nodiscard]] bool ok() const { return reasons.empty(); }
};

/// Whether a training scenario can run as planned: today, whether its most loaded GPU's memory fits
/// (a scenario with `allow_oom` is feasible regardless, and says so nowhere else).
[[nodiscard]] Feasibility training_feasibility(const scenario::Scenario& s);

/// The exit-4 text for a plan that does not fit, with the breakdown in GiB (the CLI adds what to
/// try, in flags).
[[nodiscard]] std::string does_not_fit_message(const scenario::Scenario& s, const models::MemoryBreakdown& m);

/// The scenario's machine: one node, or nodes joined by its fabric.
[[nodiscard]] net::Topology training_topology(const scenario::Scenario& s);

/// Topologies shared by the runs of a batch: built once per cluster shape (cluster, GPUs per node,
/// nodes, fabric), whoever asks first; thread-safe.
class TopologyCache {
 public:
  [[nodiscard]] std::shared_ptr<const net::Topology> get(const scenario::Scenario& s);
  /// A serving scenario's machine (the same shape as a training scenario's shares its topology).
  [[nodiscard]] std::shared_ptr<const net::Topology> get(const serving::ServingScenario& s);

 private:
  using Key = std::tuple<std::string, int, int, std::string>;
  template <class Build>
  std::shared_ptr<const net::Topology> get(const Key& key, const Build& build);
  std::mutex mu_;
  std::map<Key, std::shared_ptr<const net::Topology>> built_;
};

struct RunOptions {
  bool record_links = false;
  bool single_gpu_baseline = true;
  bool partition = true;                ///< the parallel engine's node/fabric partitions (false: one, serial)
  TopologyCache* topologies = nullptr;  ///< shared across a batch; null: build this run's own
};

/// Wall time of each phase of a run (seconds).
struct Phases {
  double topology = 0, graph = 0, simulate = 0, baseline = 0;
};

/// One training scenario simulated (stages 4-5): the step graph and its log, the one-GPU baseline,
/// and where the wall time went. report::train_results turns it into metrics.
struct TrainingRun {
  workload::TrainingStep step;
  workload::RunLog log;
  std::shared_ptr<const net::Topology> topology;
  models::MemoryBreakdown memory;
  bool baseline = false;  ///< the one-GPU baseline ran (or the run is one GPU)
  double single_gpu_step_time_s = 0;
  bool single_gpu_fits = false;
  double peak_flops = 0;  ///< the dtype's peak matrix rate per GPU (MFU's denominator)
  Phases phase_s;
  double wall_s = 0;  ///< the whole run, baseline included
};

/// Builds and simulates a training scenario (the step and, when asked, the one-GPU baseline, side
/// by side on the workers).
[[nodiscard]] TrainingRun run_training(const scenario::Scenario& s, const RunOptions& options);

}  // namespace cs::study
