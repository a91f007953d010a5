#include "sim/serving/router.hpp"

#include <algorithm>

#include "sim/core/check.hpp"

namespace cs::serving {

int RoundRobinRouter::pick(std::span<const ReplicaLoad> pool, const Request& /*r*/) {
  CS_ASSERT(!pool.empty(), "a router picks from a pool of replicas");
  const bool alike =
      std::all_of(pool.begin(), pool.end(), [&](const ReplicaLoad& r) { return r.weight == pool.front().weight; });
  if (alike) return pool[static_cast<std::size_t>(next_++ % static_cast<std::uint64_t>(pool.size()))].replica;
  credit_.resize(pool.size(), 0.0);
  double total = 0;
  std::size_t best = 0;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    credit_[i] += pool[i].weight;
    total += pool[i].weight;
    if (credit_[i] > credit_[best]) best = i;
  }
  credit_[best] -= total;
  return pool[best].replica;
}

int LeastLoadedRouter::pick(std::span<const ReplicaLoad> pool, const Request& /*r*/) { return least_loaded(pool); }

int LeastLoadedRouter::least_loaded(std::span<const ReplicaLoad> pool) {
  CS_ASSERT(!pool.empty(), "a router picks from a pool of replicas");
  const ReplicaLoad* best = &pool.front();
  // (load + 1) / weight compared without division: exact, and the plain fewest-requests order
  // when the weights are equal.
  for (const auto& r : pool) {
    if ((static_cast<double>(r.load) + 1) * best->weight < (static_cast<double>(best->load) + 1) * r.weight) best = &r;
  }
  return best->replica;
}

int PrefixAwareRouter::pick(std::span<const ReplicaLoad> pool, const Request& r) {
  const int least = LeastLoadedRouter::least_loaded(pool);
  if (r.prefix_group < 0 || r.prefix_tokens <= 0) return least;
  const auto [lo, hi] = std::minmax_element(pool.begin(), pool.end(),
                                            [](const ReplicaLoad& a, const ReplicaLoad& b) { return a.load < b.load; });
  const auto min_load = static_cast<double>(lo->load), max_load = static_cast<double>(hi->load);
  const bool imbalanced = max_load - min_load > kBalanceAbs && max_load > kBalanceRel * min_load;
  auto& holders = holders_[r.prefix_group];
  int chosen = least;
  if (!imbalanced) {
    // The least loaded of the replicas this prefix was sent to before, if any.
    held_.clear();
    for (const auto& c : pool)
      if (holders.count(c.replica) > 0) held_.push_back(c);
    if (!held_.empty()) chosen = LeastLoadedRouter::least_loaded(held_);
  }
  holders.insert(chosen);
  return chosen;
}

std::unique_ptr<RequestRouter> make_router(Router kind) {
  if (kind == Router::kLeastLoaded) return std::make_unique<LeastLoadedRouter>();
  if (kind == Router::kPrefixAware) return std::make_unique<PrefixAwareRouter>();
  return std::make_unique<RoundRobinRouter>();
}

}  // namespace cs::serving
