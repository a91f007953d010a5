#include "sim/serving/pool_router.hpp"

#include <utility>

namespace cs::serving {

PoolRouter::PoolRouter(const ServingScenario& s, std::vector<double> kind_weights)
    : s_(s),
      kind_weights_(std::move(kind_weights)),
      colocated_(make_router(s.router)),
      decode_(make_router(s.router)) {}

double PoolRouter::weight_of(const Replica& rep) const {
  if (kind_weights_.size() < 2) return 1.0;
  return kind_weights_[s_.mixed_replica(rep.index) ? 1 : 0];
}

int PoolRouter::pick(const std::vector<Replica>& replicas, bool decode_pool) {
  pool_.clear();
  for (const auto& r : replicas) {
    if (r.prefill_only && decode_pool) continue;
    if (r.decode_only && !decode_pool) continue;
    pool_.push_back({r.index, r.queue.waiting.size() + r.queue.running.size() + static_cast<std::size_t>(r.incoming),
                     weight_of(r)});
  }
  return (decode_pool ? *decode_ : *colocated_).pick(pool_);
}

}  // namespace cs::serving
