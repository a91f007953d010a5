#pragma once
#include "sim/scenario/scenario.hpp"

namespace cs::workload {

/// What a training run will build, estimated from the scenario alone (nothing allocated), so that
/// an oversized run is refused before it takes the machine's memory (issue 16).
struct TrainingWork {
  double step_tasks = 0;      ///< tasks of the step's graph (every simulated GPU's kernels and collectives)
  double baseline_tasks = 0;  ///< tasks of the one-GPU baseline's graph (0 when it is not run)
  double index_slots = 0;     ///< the builder's per-(GPU, block) index, as many slots
  double gpus = 0;            ///< GPUs of the topology
  /// The whole, in work items: each task, slot and GPU counts one.
  [[nodiscard]] double total() const { return step_tasks + baseline_tasks + index_slots + gpus; }
};

/// Counts the tasks build_training_step makes, per micro-batch from the same per-layer op lists
/// (kernels merged as it merges them, one task per GPU; one per collective), times the
/// micro-batches and simulated groups; pipeline transfers, ZeRO-3 gathers and DP buckets added.
/// Within a few percent of the built graph (a test checks it).
[[nodiscard]] TrainingWork estimate_training_work(const scenario::Scenario& s, bool single_gpu_baseline);

}  // namespace cs::workload
