#include "sim/serving/router.hpp"

#include "sim/core/check.hpp"

namespace cs::serving {

int RoundRobinRouter::pick(std::span<const ReplicaLoad> pool) {
  CS_ASSERT(!pool.empty(), "a router picks from a pool of replicas");
  return pool[static_cast<std::size_t>(next_++ % static_cast<std::uint64_t>(pool.size()))].replica;
}

int LeastLoadedRouter::pick(std::span<const ReplicaLoad> pool) {
  CS_ASSERT(!pool.empty(), "a router picks from a pool of replicas");
  const ReplicaLoad* best = &pool.front();
  for (const auto& r : pool) {
    if (r.load < best->load) best = &r;
  }
  return best->replica;
}

std::unique_ptr<RequestRouter> make_router(Router kind) {
  if (kind == Router::kLeastLoaded) return std::make_unique<LeastLoadedRouter>();
  return std::make_unique<RoundRobinRouter>();
}

}  // namespace cs::serving
