#pragma once
#include <optional>
#include <string>
#include <vector>

#include "models/memory/training_memory.hpp"
#include "sim/scenario/run_cost.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/study/training_run.hpp"
#include "sim/workload/executor.hpp"
#include "sim/workload/training_step.hpp"

namespace cs::report {

/// Mean over GPUs of where a step's time went (seconds). compute + exposed_comm + idle = step.
struct Breakdown {
  double compute = 0;          ///< kernels running on the compute stream
  double exposed_comm = 0;     ///< communication not hidden behind compute
  double idle = 0;             ///< neither (waiting for peers or dependencies)
  double pipeline_bubble = 0;  ///< with PP > 1: the idle time (the schedule's bubble, as simulated)
  double comm_total = 0;       ///< all communication, hidden or not
  bool operator==(const Breakdown&) const = default;
};

/// A training step's price on the scenario's offer (per_run: one step); the one cost type of runs.
using Cost = scenario::RunCost;

/// Time spent in one kind of collective on one GPU (mean over GPUs), with the algorithm used.
struct CollectiveSummary {
  std::string label;
  std::string algorithm;
  std::int64_t calls_per_gpu = 0;
  double bytes_per_call = 0;
  double seconds_per_gpu = 0;
};

/// Everything reported for one training scenario (stage 6).
/// A MoE run's expert parallelism and routing, as the step used them.
struct MoeSummary {
  int ep = 1, etp = 1, edp = 1;
  std::string routing;
  int redundant_experts = 0;
  std::string dispatch_dtype;
  /// The most loaded GPU's token-expert pairs over the mean: every MoE layer runs at its pace.
  double imbalance = 1;
  /// Bytes one token sends in a dispatch: hidden x bytes x the distinct GPUs its top-k experts are on.
  double dispatch_bytes_per_token = 0;
};

struct TrainResults {
  std::string name;
  std::string model;
  std::string cluster;
  std::string cluster_name;
  std::string profile;
  std::string profile_origin;
  int gpus = 0;
  plan::ParallelPlan plan;
  std::int64_t micro_batches = 0;
  std::vector<int> stage_layers;
  bool dp_symmetry = false;  ///< one data-parallel replica was simulated (an explicit approximation)
  bool flash_attention = true;
  bool cp_ring = true;  ///< context parallelism by ring attention (else one K/V all-gather)
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  double hw_tflops_per_gpu = 0;  ///< counting recomputed forward FLOPs too (Megatron-LM's convention)
  double hfu = 0;
  /// Megatron-LM SC'21 Eq. 3 FLOPs (96 B s l h^2 (1 + s/6h + V/16lh): GEMMs and non-causal
  /// attention, with the recompute forward) per step, per GPU, per second: their papers' metric.
  double megatron_tflops_per_gpu = 0;
  Breakdown breakdown;
  /// Shares of the step's compute time by where each kernel's time came from (calib::KernelSource
  /// order: measured table hit, interpolated, extrapolated, analytic); they sum to 1.
  std::array<double, calib::kKernelSources> compute_sources{};
  /// Shares of the step's compute time by what each kernel does (models::KernelClass order: dense
  /// GEMMs, routed experts' GEMMs, attention, elementwise, waits on the host's launches, DeepEP's
  /// floor); they sum to 1.
  std::array<double, models::kKernelClasses> compute_classes{};
  models::MemoryBreakdown memory;
  bool fits = false;
  double single_gpu_step_time_s = 0;
  bool single_gpu_fits = false;
  double speedup = 0;
  double scaling_efficiency = 0;
  std::optional<Cost> cost;
  std::optional<MoeSummary> moe;
  std::vector<CollectiveSummary> collectives;
  std::vector<std::string> warnings;                       ///< the scenario's (Scenario::warnings)
  std::vector<std::pair<std::string, std::string>> rates;  ///< what -> "value (provenance)"
  std::uint64_t events = 0;
  std::uint64_t flows = 0;
  std::uint32_t partitions = 1;  ///< the parallel engine's partitions (1: the graph ran serially)
  std::uint64_t windows = 0;
  double wall_s = 0;
  /// Where the wall time went (seconds): topology, task graph, simulation, one-GPU baseline, and
  /// the metrics (breakdown and collective summaries).
  struct Phases {
    double topology = 0, graph = 0, simulate = 0, baseline = 0, metrics = 0;
  } phase_s;
};

/// The metrics of a simulated training scenario (stage 6): step time, throughput, MFU, the time
/// breakdown, collectives, memory, speedup against one GPU, cost and the rates used. Runs nothing.
[[nodiscard]] TrainResults train_results(const scenario::Scenario& s, const study::TrainingRun& run);

}  // namespace cs::report
