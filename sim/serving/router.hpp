#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/request.hpp"

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
  /// The chosen replica of `pool` (not empty; in replica order) for request `r`.
  [[nodiscard]] virtual int pick(std::span<const ReplicaLoad> pool, const Request& r) = 0;
};

/// Each replica in turn; replicas of unequal weights in proportion to them, interleaved (smooth
/// weighted round robin: each pick adds every weight to its replica's credit and takes the
/// largest credit, ties to the first, which then pays the total back).
class RoundRobinRouter final : public RequestRouter {
 public:
  [[nodiscard]] int pick(std::span<const ReplicaLoad> pool, const Request& r) override;

 private:
  std::uint64_t next_ = 0;
  std::vector<double> credit_;  ///< by position in the pool (weighted turns)
};

/// The replica with the fewest requests per unit of weight (requests + 1, so an idle fast
/// replica goes first); ties to the first.
class LeastLoadedRouter final : public RequestRouter {
 public:
  [[nodiscard]] int pick(std::span<const ReplicaLoad> pool, const Request& r) override;
  /// The least loaded of `pool` (what pick does, for the routers built on it).
  [[nodiscard]] static int least_loaded(std::span<const ReplicaLoad> pool);
};

/// Cache-aware routing as SGLang's router does it: a request whose prompt starts with a shared
/// prefix goes to the least loaded replica this router has sent that prefix to before (whose
/// cache likely holds it), a new prefix to the least loaded replica; when the pool is out of
/// balance (the most loaded replica has more than `kBalanceAbs` requests more than the least and
/// more than `kBalanceRel` times as many) every request goes to the least loaded. Requests
/// without a prefix go to the least loaded. The router keeps its own record of where each prefix
/// went, not the replicas' caches (SGLang's router keeps an approximate tree the same way).
class PrefixAwareRouter final : public RequestRouter {
 public:
  /// SGLang router's balance thresholds (sgl-router `--balance-abs-threshold` 64,
  /// `--balance-rel-threshold` 1.5): its defaults as recalled, unconfirmed (not in
  /// shared/reference/engines-2026.md, and not read from its source at a commit).
  static constexpr double kBalanceAbs = 64, kBalanceRel = 1.5;
  [[nodiscard]] int pick(std::span<const ReplicaLoad> pool, const Request& r) override;

 private:
  std::map<int, std::set<int>> holders_;  ///< prefix group -> replicas it was sent to
  std::vector<ReplicaLoad> held_;         ///< pick's scratch: the pool's replicas holding the prefix
};

[[nodiscard]] std::unique_ptr<RequestRouter> make_router(Router kind);

}  // namespace cs::serving
