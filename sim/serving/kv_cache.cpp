#include "sim/serving/kv_cache.hpp"

#include <algorithm>

#include "models/ops/serving_ops.hpp"
#include "sim/core/check.hpp"

namespace cs::serving {

KvCache::KvCache(std::int64_t blocks, std::int64_t block_size, double sliding_share, std::int64_t window,
                 PrefixReuse reuse)
    : total_(blocks),
      free_(blocks),
      block_size_(block_size),
      window_(window),
      sliding_share_(sliding_share),
      reuse_(reuse) {
  CS_ASSERT(blocks >= 0 && block_size > 0, "a KV pool has blocks of at least one token");
}

std::int64_t KvCache::blocks_for(std::int64_t tokens) const {
  // Asked for every decoding sequence every step: without sliding windows every token is held.
  const std::int64_t held = sliding_share_ > 0 ? models::kv_held_tokens(tokens, sliding_share_, window_) : tokens;
  return (held + block_size_ - 1) / block_size_;
}

double KvCache::used() const {
  return 1.0 - static_cast<double>(free_) / static_cast<double>(std::max<std::int64_t>(1, total_));
}

std::int64_t KvCache::more_for(const Request& r, std::int64_t tokens) const {
  return std::max<std::int64_t>(0, blocks_for(tokens) - r.blocks - r.shared_blocks);
}

std::pair<std::int64_t, std::int64_t> KvCache::prefix_size(const Request& r) const {
  if (!reuse_.enabled || r.prefix_group < 0 || r.prefix_tokens <= 0) return {0, 0};
  const std::int64_t whole = r.prefix_tokens / block_size_ * block_size_;
  // Only whole blocks are shared; per-token reuse copies the last partial block's tokens.
  return {reuse_.per_token ? r.prefix_tokens : whole, whole > 0 ? blocks_for(whole) : 0};
}

KvCache::Hit KvCache::hit(const Request& r) const {
  if (r.prefilled > 0 || r.blocks > 0) return {};  // mid-prompt, or its KV came from a prefill replica
  const auto [tokens, blocks] = prefix_size(r);
  if (blocks == 0) return {};
  const auto it = prefixes_.find(r.prefix_group);
  if (it == prefixes_.end()) return {};
  // The last prompt token is always computed: its logits give the first output token.
  std::int64_t reused = std::min({tokens, it->second.tokens, r.prompt - 1});
  if (!reuse_.per_token) reused = reused / block_size_ * block_size_;
  const std::int64_t whole = reused / block_size_ * block_size_;
  const std::int64_t shared = whole > 0 ? std::min(it->second.blocks, blocks_for(whole)) : 0;
  if (shared == 0) return {};
  return {reused, shared, &it->second};
}

std::int64_t KvCache::reusable(const Request& r) const { return hit(r).tokens; }

std::int64_t KvCache::admit_cost(const Request& r, std::int64_t tokens) const {
  const Hit h = hit(r);
  const std::int64_t own = std::max<std::int64_t>(0, blocks_for(tokens) - h.blocks);
  return own + (h.entry != nullptr && h.entry->pins == 0 ? h.entry->blocks : 0);
}

void KvCache::admit_for(Request& r, std::int64_t tokens, std::int64_t most) {
  CS_ASSERT(r.blocks == 0 && r.shared_blocks == 0, "an admitted sequence holds no blocks yet");
  const Hit h = hit(r);
  if (h.entry != nullptr) {
    auto& e = prefixes_.at(r.prefix_group);
    if (e.pins++ == 0) {
      // Pinned: its blocks stop counting as free (they were never evicted, so no take()).
      idle_.erase({e.last_use, r.prefix_group});
      idle_blocks_ -= e.blocks;
      free_ -= e.blocks;
    }
    e.last_use = ++clock_;
    r.shared_blocks = h.blocks;
    r.prefilled += h.tokens;
    r.reused += h.tokens;
  }
  // At most `most` blocks with the prefix's (a pool-sized cap: the prefix's blocks are in the pool).
  const std::int64_t cap = most - (h.entry != nullptr ? h.entry->blocks : 0);
  const std::int64_t own = std::min(std::max<std::int64_t>(0, blocks_for(tokens) - h.blocks), cap);
  take(own);
  r.blocks = own;
}

void KvCache::admit(Request& r, std::int64_t blocks) {
  CS_ASSERT(r.blocks == 0 && r.shared_blocks == 0, "an admitted sequence holds no blocks yet");
  take(blocks);
  r.blocks = blocks;
}

void KvCache::grow(Request& r, std::int64_t tokens) {
  const std::int64_t more = more_for(r, tokens);
  if (more == 0) return;
  take(more);
  r.blocks += more;
}

void KvCache::take(std::int64_t n) {
  CS_ASSERT(n <= free_, "blocks are taken only when free (the caller checked has())");
  while (free_ - idle_blocks_ < n) {
    // Evict the least recently used unpinned prefix: its blocks are free already, now clean.
    const auto [use, group] = *idle_.begin();
    idle_.erase(idle_.begin());
    idle_blocks_ -= prefixes_.at(group).blocks;
    prefixes_.erase(group);
    ++evictions_;
  }
  free_ -= n;
}

void KvCache::publish(Request& r, std::int64_t computed) {
  const auto [tokens, blocks] = prefix_size(r);
  if (blocks == 0 || computed < tokens) return;
  const auto it = prefixes_.find(r.prefix_group);
  if (it == prefixes_.end()) {
    CS_ASSERT(r.shared_blocks == 0, "a cached prefix a request reads is pinned, never evicted");
    CS_ASSERT(r.blocks >= blocks, "a request holds the blocks of the prompt it has computed");
    r.blocks -= blocks;
    r.shared_blocks = blocks;
    prefixes_[r.prefix_group] = Prefix{tokens, blocks, 1, ++clock_};
    return;
  }
  // A longer prefix of a cached group (a conversation's next turn: its history grew) computed by
  // a request that reads the cached part: the group's prefix grows to it, the new blocks moving
  // from the request to the pool. A request that computed its prefix beside the cache keeps its
  // own blocks (both were scheduled before either was cached).
  Prefix& e = it->second;
  if (r.shared_blocks == 0 || tokens <= e.tokens) return;
  const std::int64_t more = blocks - e.blocks;
  CS_ASSERT(more >= 0 && r.blocks >= more, "a request holds the blocks of the prompt it has computed");
  r.blocks -= more;
  r.shared_blocks += more;
  e.blocks = blocks;
  e.tokens = tokens;
  e.last_use = ++clock_;
}

void KvCache::release(Request& r) {
  free_ += r.blocks;
  r.blocks = 0;
  if (r.shared_blocks == 0) return;
  r.shared_blocks = 0;
  auto& e = prefixes_.at(r.prefix_group);
  CS_ASSERT(e.pins > 0, "a request sharing a cached prefix pins it");
  e.last_use = ++clock_;
  if (--e.pins > 0) return;
  idle_.insert({e.last_use, r.prefix_group});
  idle_blocks_ += e.blocks;
  free_ += e.blocks;
}

}  // namespace cs::serving
