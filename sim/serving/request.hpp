#pragma once
#include <cstdint>

#include "sim/core/sim_time.hpp"

namespace cs::serving {

/// A time not reached yet (a request's first token or finish before they happen).
inline constexpr SimTime kNever{-1};

/// One request as the seams see it: the source fills its arrival and lengths; the schedulers its
/// progress and KV blocks; the run its times.
struct Request {
  int id = 0;
  SimTime arrival{};
  std::int64_t input = 0, output = 0;
  std::int64_t prompt = 0;     ///< tokens to prefill (the input; more after a recompute preemption)
  std::int64_t prefilled = 0;  ///< prompt tokens whose KV is cached
  std::int64_t generated = 0;  ///< output tokens sampled so far
  std::int64_t blocks = 0;     ///< KV blocks it holds (its own)
  /// A shared prompt prefix (a system prompt, a few-shot preamble): its group (-1: none) and its
  /// tokens, the first of the input. Requests of one group share them (KvCache's prefix reuse).
  int prefix_group = -1;
  std::int64_t prefix_tokens = 0;
  std::int64_t shared_blocks = 0;  ///< blocks of a cached prefix it reads (the pool's, not its own)
  std::int64_t reused = 0;         ///< prompt tokens a cached prefix spared it (every admission)
  SimTime first_token = kNever, finish = kNever;
  int replica = -1;
  int kv_parts_left = 0;   ///< disaggregated: KV transfers (one per GPU pair) still moving
  bool in_flight = false;  ///< part of a batch still in the pipeline
  [[nodiscard]] bool finished() const { return finish >= SimTime{}; }
  [[nodiscard]] bool prompt_cached() const { return prefilled >= prompt; }
};

}  // namespace cs::serving
