#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sim/scenario/serving_scenario.hpp"

namespace cs::serving {

/// A replica a router may send a request to, with its load: requests waiting, running and (in a
/// decode pool) whose KV cache is on its way.
struct ReplicaLoad {
  int replica = 0;
  std::size_t load = 0;
  /// Its speed relative to the pool's others (a mixed fleet's box kinds differ; 1 when alike).
  double weight = 1;
};

/// Picks the replica of a pool that takes the next request. One router per pool (a disaggregated
/// run has a prefill pool and a decode pool, each with its own turn).
class RequestRouter {
 public:
  virtual ~RequestRouter() = default;
  /// The chosen replica of `pool` (not empty; in replica order).
  [[nodiscard]] virtual int pick(std::span<const ReplicaLoad> pool) = 0;
};

/// Each replica in turn; replicas of unequal weights in proportion to them, interleaved (smooth
/// weighted round robin: each pick adds every weight to its replica's credit and takes the
/// largest credit, ties to the first, which then pays the total back).
class RoundRobinRouter final : public RequestRouter {
 public:
  [[nodiscard]] int pick(std::span<const ReplicaLoad> pool) override;

 private:
  std::uint64_t next_ = 0;
  std::vector<double> credit_;  ///< by position in the pool (weighted turns)
};

/// The replica with the fewest requests per unit of weight (requests + 1, so an idle fast
/// replica goes first); ties to the first.
class LeastLoadedRouter final : public RequestRouter {
 public:
  [[nodiscard]] int pick(std::span<const ReplicaLoad> pool) override;
};

[[nodiscard]] std::unique_ptr<RequestRouter> make_router(Router kind);

}  // namespace cs::serving
