#include "sim/serving/kv_cache.hpp"

#include <algorithm>

#include "models/ops/serving_ops.hpp"
#include "sim/core/check.hpp"

namespace cs::serving {

KvCache::KvCache(std::int64_t blocks, std::int64_t block_size, double sliding_share, std::int64_t window)
    : total_(blocks), free_(blocks), block_size_(block_size), window_(window), sliding_share_(sliding_share) {
  CS_ASSERT(blocks >= 0 && block_size > 0, "a KV pool has blocks of at least one token");
}

std::int64_t KvCache::blocks_for(std::int64_t tokens) const {
  return (models::kv_held_tokens(tokens, sliding_share_, window_) + block_size_ - 1) / block_size_;
}

double KvCache::used() const {
  return 1.0 - static_cast<double>(free_) / static_cast<double>(std::max<std::int64_t>(1, total_));
}

std::int64_t KvCache::more_for(const Request& r, std::int64_t tokens) const {
  return std::max<std::int64_t>(0, blocks_for(tokens) - r.blocks);
}

void KvCache::admit(Request& r, std::int64_t blocks) {
  CS_ASSERT(r.blocks == 0 && blocks <= free_, "an admitted sequence holds no blocks yet and its blocks are free");
  free_ -= blocks;
  r.blocks = blocks;
}

void KvCache::grow(Request& r, std::int64_t tokens) {
  const std::int64_t more = more_for(r, tokens);
  CS_ASSERT(more <= free_, "a sequence grows only into free blocks");
  free_ -= more;
  r.blocks += more;
}

void KvCache::release(Request& r) {
  free_ += r.blocks;
  r.blocks = 0;
}

}  // namespace cs::serving
