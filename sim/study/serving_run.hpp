#pragma once
#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/serving_log.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/study/training_run.hpp"

namespace cs::study {

/// One serving scenario simulated, as run_training runs a training one: its machine from the
/// batch's topology cache (when given: one topology per cluster shape for a whole search or sweep),
/// then sim/serving's run; its log goes to report::serving_results for the figures (as a training
/// run's to report::train_results). Every command's serving run goes through it.
[[nodiscard]] serving::ServingLog run_serving(const serving::ServingScenario& s,
                                              const serving::ServingRunOptions& options = {},
                                              TopologyCache* topologies = nullptr);

}  // namespace cs::study
