#pragma once
#include <cstdint>

#include "sim/serving/request.hpp"

namespace cs::serving {

/// A pool of paged KV blocks (one replica's, or one GPU's under attention-DP): how many blocks a
/// sequence of a given length holds, which requests hold how many, and what is free. It decides
/// nothing: admission and preemption are the batch scheduler's.
class KvCache {
 public:
  KvCache() = default;
  /// `blocks` of `block_size` tokens; `sliding_share` of each token's bytes sits in sliding-window
  /// layers of `window` tokens, which keep only their window (models::kv_held_tokens).
  KvCache(std::int64_t blocks, std::int64_t block_size, double sliding_share, std::int64_t window);
  /// Blocks a sequence of `tokens` holds.
  [[nodiscard]] std::int64_t blocks_for(std::int64_t tokens) const;
  [[nodiscard]] std::int64_t total() const { return total_; }
  [[nodiscard]] std::int64_t free() const { return free_; }
  /// The share of the blocks in use.
  [[nodiscard]] double used() const;
  /// Whether `blocks` more can be taken now.
  [[nodiscard]] bool has(std::int64_t blocks) const { return blocks <= free_; }
  /// Blocks `r` needs beyond what it holds to cache `tokens` (0 or more).
  [[nodiscard]] std::int64_t more_for(const Request& r, std::int64_t tokens) const;
  /// Gives `r` the blocks of a fresh sequence of `blocks` (it holds none).
  void admit(Request& r, std::int64_t blocks);
  /// Grows `r` to hold `tokens` (the caller checked there is room).
  void grow(Request& r, std::int64_t tokens);
  /// Frees every block `r` holds.
  void release(Request& r);

 private:
  std::int64_t total_ = 0, free_ = 0, block_size_ = 16, window_ = 0;
  double sliding_share_ = 0;
};

}  // namespace cs::serving
