#pragma once
#include <memory>
#include <vector>

#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/replicas.hpp"
#include "sim/serving/router.hpp"

namespace cs::serving {

/// The run's routers: the colocated (or prefill) pool's and the decode pool's, each with its own
/// turn, picking among its pool's replicas by their load (requests waiting, running and, in a
/// decode pool, whose KV cache is on its way) and their box kind's weight.
class PoolRouter {
 public:
  /// `kind_weights`: a mixed fleet's weight per box kind (ServingRunOptions::kind_weights; fewer
  /// than two: every replica weighs 1).
  PoolRouter(const ServingScenario& s, std::vector<double> kind_weights);
  /// The replica of the colocated (or prefill) pool, or of the decode pool, that takes request `r`.
  [[nodiscard]] int pick(const std::vector<Replica>& replicas, bool decode_pool, const Request& r);

 private:
  [[nodiscard]] double weight_of(const Replica& rep) const;

  const ServingScenario& s_;
  std::vector<double> kind_weights_;
  std::unique_ptr<RequestRouter> colocated_, decode_;
  std::vector<ReplicaLoad> pool_;  ///< pick's scratch
};

}  // namespace cs::serving
