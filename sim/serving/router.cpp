#include "sim/serving/router.hpp"

#include <algorithm>

#include "sim/core/check.hpp"

namespace cs::serving {

int RoundRobinRouter::pick(std::span<const ReplicaLoad> pool) {
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

int LeastLoadedRouter::pick(std::span<const ReplicaLoad> pool) {
  CS_ASSERT(!pool.empty(), "a router picks from a pool of replicas");
  const ReplicaLoad* best = &pool.front();
  // (load + 1) / weight compared without division: exact, and the plain fewest-requests order
  // when the weights are equal.
  for (const auto& r : pool) {
    if ((static_cast<double>(r.load) + 1) * best->weight < (static_cast<double>(best->load) + 1) * r.weight) best = &r;
  }
  return best->replica;
}

std::unique_ptr<RequestRouter> make_router(Router kind) {
  if (kind == Router::kLeastLoaded) return std::make_unique<LeastLoadedRouter>();
  return std::make_unique<RoundRobinRouter>();
}

}  // namespace cs::serving
