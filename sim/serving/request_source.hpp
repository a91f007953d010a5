#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/request.hpp"

namespace cs::serving {

/// Uniform double in [0, 1) from 53 random bits (our own, so results match across libraries).
[[nodiscard]] double unit_draw(std::mt19937_64& rng);

/// The workload's requests: a trace, a queue all there at once, Poisson arrivals or a closed loop,
/// with lengths (and shared prefixes) drawn from the scenario's seeded streams. It knows nothing of
/// replicas.
class RequestSource {
 public:
  explicit RequestSource(const ServingScenario& s);
  /// The requests known before the run starts (every one but a closed loop's later ones), ids
  /// 0, 1, ... in the order drawn.
  [[nodiscard]] std::vector<Request> initial();
  /// A closed loop's next request when one of its clients finishes at `now` (ids go on from
  /// `issued`); none when the run has all its requests or arrivals are open.
  [[nodiscard]] std::optional<Request> on_finish(SimTime now, std::size_t issued);
  /// Whether requests arrive as earlier ones finish (not all known up front).
  [[nodiscard]] bool closed_loop() const { return s_.arrivals == Arrivals::kClosedLoop; }

 private:
  [[nodiscard]] Request drawn(int id, SimTime arrival);
  const ServingScenario& s_;
  std::mt19937_64 rng_;
  std::mt19937_64 prefix_rng_;  ///< each request's shared prefix group
};

/// Request ids sorted by arrival, ties in id order.
[[nodiscard]] std::vector<int> arrival_order(const std::vector<Request>& reqs);

}  // namespace cs::serving
