#include "sim/study/serving_run.hpp"

namespace cs::study {

serving::ServingLog run_serving(const serving::ServingScenario& s, const serving::ServingRunOptions& options,
                                TopologyCache* topologies) {
  if (!topologies || options.topology) return serving::simulate_serving(s, options);
  serving::ServingRunOptions shared = options;
  shared.topology = topologies->get(s);
  return serving::simulate_serving(s, shared);
}

}  // namespace cs::study
