#pragma once
#include "sim/scenario/scenario.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/workload_graph.hpp"

namespace cs::workload {

/// One training step as a graph, and the totals the report needs.
struct TrainingStep {
  WorkloadGraph graph;
  double model_flops = 0;   ///< all GPUs, forward + backward, no recompute (MFU numerator)
  double tokens = 0;        ///< tokens per step (global batch x sequence)
  std::int64_t micro_batches = 0;
};

/// Builds one step (stage 4): for each micro-batch, forward then backward through embedding,
/// decoder layers and LM head, with TP collectives on the compute stream (they block it, as
/// Megatron's do); in the last micro-batch's backward, gradients are reduced over DP in buckets
/// of `grad_bucket_params` on the communication stream, overlapping the rest of backward; then the
/// optimizer (and, with ZeRO-1, the parameter all-gather).
[[nodiscard]] TrainingStep build_training_step(const scenario::Scenario& s, const ComputeModel& compute);

}  // namespace cs::workload
