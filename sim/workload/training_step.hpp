#pragma once
#include "sim/scenario/scenario.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/stage_programs.hpp"
#include "sim/workload/workload_graph.hpp"

namespace cs::workload {

/// One training step as a graph, and the totals the report needs.
struct TrainingStep {
  WorkloadGraph graph;
  double model_flops = 0;     ///< all GPUs, forward + backward, no recompute (MFU numerator)
  double hardware_flops = 0;  ///< model FLOPs plus recomputed forward FLOPs (HFU numerator)
  double tokens = 0;          ///< tokens per step (global batch x sequence)
  std::int64_t micro_batches = 0;
  std::vector<int> stage_layers;  ///< decoder layers of each pipeline stage
  /// Compute time of the step's kernels by where each one's time came from (measured table,
  /// interpolated, extrapolated, analytic), summed over one GPU of each pipeline stage.
  SourceSeconds compute_sources{};
  /// The same time by what each kernel does (GEMM, experts, attention, elementwise, host-bound).
  ClassSeconds compute_classes{};
};

/// Builds one step (stage 4). Each pipeline stage runs its micro-batches' forward (F) and backward
/// (B) blocks in the schedule's order (pipeline_schedule.hpp), each block its layers' programs
/// (stage_programs.hpp: each layer kind's kernels, and collectives over the process group each
/// names, resolved by the ParallelPlan; TP collectives block the compute stream as Megatron's do),
/// full recompute re-running a layer's forward before its backward. Activations and their gradients move between stages
/// as send/recv flows posted when they exist. In each stage's last backward, gradients are reduced over DP in buckets
/// on the communication stream; then the optimizer (and ZeRO-1's all-gather). The pipeline bubble is not a formula: it
/// is the idle time this schedule leaves.
[[nodiscard]] TrainingStep build_training_step(const scenario::Scenario& s, const ComputeModel& compute);

}  // namespace cs::workload
