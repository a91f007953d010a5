#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/request.hpp"

namespace cs::serving {

/// A pool of paged KV blocks (one replica's, or one GPU's under attention-DP): how many blocks a
/// sequence of a given length holds, which requests hold how many, what is free, and the shared
/// prefixes it keeps cached. It decides nothing: admission and preemption are the batch
/// scheduler's.
///
/// A shared prefix, once a request has computed it, stays cached: its blocks belong to the pool,
/// pinned while a running request uses them. Unpinned, they count as free (vLLM counts its cached
/// free blocks so) and are evicted, least recently used first, only when a sequence needs blocks
/// the clean free ones cannot give.
class KvCache {
 public:
  KvCache() = default;
  /// `blocks` of `block_size` tokens; `sliding_share` of each token's bytes sits in sliding-window
  /// layers of `window` tokens, which keep only their window (models::kv_held_tokens).
  /// `reuse`: prefix caching (off unless given).
  KvCache(std::int64_t blocks, std::int64_t block_size, double sliding_share, std::int64_t window,
          PrefixReuse reuse = {false, false});
  /// Blocks a sequence of `tokens` holds.
  [[nodiscard]] std::int64_t blocks_for(std::int64_t tokens) const;
  [[nodiscard]] std::int64_t total() const { return total_; }
  [[nodiscard]] std::int64_t free() const { return free_; }
  /// The share of the blocks in use (cached prefixes no request holds count as free).
  [[nodiscard]] double used() const;
  /// Whether `blocks` more can be taken now.
  [[nodiscard]] bool has(std::int64_t blocks) const { return blocks <= free_; }
  /// Blocks `r` needs beyond what it holds to cache `tokens` (0 or more).
  [[nodiscard]] std::int64_t more_for(const Request& r, std::int64_t tokens) const;
  /// Prompt tokens of `r` the pool holds cached now (its shared prefix, at most all but the last
  /// prompt token, which must be computed to sample; whole blocks unless reuse is per token).
  [[nodiscard]] std::int64_t reusable(const Request& r) const;
  /// Free blocks admitting `r` to hold `tokens` takes: its own (those its cached prefix does not
  /// cover) and, when no running request holds that prefix now, the prefix's own blocks.
  [[nodiscard]] std::int64_t admit_cost(const Request& r, std::int64_t tokens) const;
  /// Admits `r` (holding no blocks) to hold `tokens`, reusing its cached prefix: `r.prefilled` and
  /// `r.reused` grow by the tokens reused. Its own blocks and its prefix's are at most `most`
  /// together (the caller checked there is room: admit_cost).
  void admit_for(Request& r, std::int64_t tokens, std::int64_t most = INT64_MAX);
  /// Gives `r` the blocks of a fresh sequence of `blocks` (it holds none), without reuse.
  void admit(Request& r, std::int64_t blocks);
  /// Grows `r` to hold `tokens` (the caller checked there is room).
  void grow(Request& r, std::int64_t tokens);
  /// `r` has been scheduled up to `computed` tokens of its prompt: once those cover its shared
  /// prefix and the pool has none of that group cached, the prefix's blocks move from `r` to the
  /// pool's cache (shared by the requests that follow, pinned by `r`); when `r` read a shorter
  /// cached prefix of its group (a conversation's earlier turn), the cached prefix grows to `r`'s.
  void publish(Request& r, std::int64_t computed);
  /// Frees every block `r` holds, and unpins its cached prefix.
  void release(Request& r);
  /// Prefix groups cached now.
  [[nodiscard]] std::size_t cached_prefixes() const { return prefixes_.size(); }
  /// Cached prefixes evicted so far.
  [[nodiscard]] std::int64_t evictions() const { return evictions_; }

 private:
  struct Prefix {
    std::int64_t tokens = 0, blocks = 0;
    int pins = 0;
    std::uint64_t last_use = 0;
  };
  /// The tokens and blocks of `r`'s prefix as the pool caches it (0 blocks: too short to cache).
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> prefix_size(const Request& r) const;
  /// Blocks and pin cost of reusing `r`'s prefix now: {tokens, shared blocks, entry}.
  struct Hit {
    std::int64_t tokens = 0, blocks = 0;
    const Prefix* entry = nullptr;
  };
  [[nodiscard]] Hit hit(const Request& r) const;
  /// Takes `n` free blocks, evicting unpinned prefixes (least recently used first) as needed.
  void take(std::int64_t n);
  std::int64_t total_ = 0, free_ = 0, block_size_ = 16, window_ = 0;
  double sliding_share_ = 0;
  PrefixReuse reuse_;
  std::map<int, Prefix> prefixes_;                ///< by prefix group
  std::set<std::pair<std::uint64_t, int>> idle_;  ///< unpinned prefixes: (last use, group)
  std::int64_t idle_blocks_ = 0;                  ///< their blocks (counted in free_)
  std::uint64_t clock_ = 0;
  std::int64_t evictions_ = 0;
};

}  // namespace cs::serving
