#include "sim/serving/pool_router.hpp"

#include <utility>

namespace cs::serving {

PoolRouter::PoolRouter(const ServingScenario& s, std::vector<double> kind_weights)
    : s_(s),
      kind_weights_(std::move(kind_weights)),
      colocated_(make_router(s.router)),
      // A decode pool reuses no prefix (the KV cache arrives whole): prefix-aware routing there is
      // least-loaded.
      decode_(make_router(s.router == Router::kPrefixAware ? Router::kLeastLoaded : s.router)) {}

double PoolRouter::weight_of(const Replica& rep) const {
  if (kind_weights_.size() < 2) return 1.0;
  return kind_weights_[s_.mixed_replica(rep.index) ? 1 : 0];
}

int PoolRouter::pick(const std::vector<Replica>& replicas, bool decode_pool, const Request& r) {
  pool_.clear();
  for (const auto& rep : replicas) {
    if (rep.prefill_only && decode_pool) continue;
    if (rep.decode_only && !decode_pool) continue;
    pool_.push_back({rep.index,
                     rep.queue.waiting.size() + rep.queue.running.size() + static_cast<std::size_t>(rep.incoming),
                     weight_of(rep)});
  }
  return (decode_pool ? *decode_ : *colocated_).pick(pool_, r);
}

}  // namespace cs::serving
