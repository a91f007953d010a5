#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/kv_cache.hpp"
#include "sim/serving/request.hpp"
#include "sim/serving/step_builder.hpp"

namespace cs::serving {

/// A replica's requests as its scheduler sees them: those waiting (arrived, or preempted and back
/// at the head), those admitted (holding KV blocks, in admission order) and the KV pool.
struct ReplicaQueue {
  std::deque<int> waiting;
  std::vector<int> running;
  KvCache kv;
  /// `r` leaves the replica (done, or its KV cache moves to decode): its blocks are freed.
  void leave(Request& r) {
    kv.release(r);
    std::erase(running, r.id);
  }
};

/// The limits one engine step runs under.
struct StepLimits {
  std::int64_t max_batch = 256;      ///< sequences admitted at once
  std::int64_t max_tokens = 8192;    ///< tokens through the model per step
  std::int64_t chunked_prefill = 0;  ///< most prompt tokens of one sequence per step (0: no chunking)
};

/// Forms each batch of a replica, as an engine's scheduler does: which waiting requests are
/// admitted, which running ones step, how prompts are chunked, who is preempted when KV runs out.
/// One per replica (a scheduler may keep state between steps). A seam: the engines' policies are
/// its implementations.
class BatchScheduler {
 public:
  explicit BatchScheduler(const StepLimits& limits) : limits_(limits) {}
  virtual ~BatchScheduler() = default;
  /// Forms the replica's next batch into `step` (left empty: nothing can run now). Requests in
  /// flight (their previous step still in the pipeline) are not stepped again.
  virtual void plan(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) = 0;
  /// Whether a finished request keeps its blocks and its slot until its whole batch is done
  /// (static batching), rather than leaving the running set at once.
  [[nodiscard]] virtual bool keeps_finished() const { return false; }
  /// Requests sent back to the waiting queue so far (their KV dropped, to be recomputed).
  [[nodiscard]] std::int64_t preemptions() const { return preemptions_; }

 protected:
  /// Recompute preemption (vLLM's, SGLang's retraction) of the newest running request not in
  /// flight: its blocks freed, its prompt now its input and what it generated, back at the head of
  /// the waiting queue. Returns its id (-1: none could be preempted). Schedulers step running
  /// requests in admission order, so the newest is one not stepped yet in this batch, or the one
  /// asking for a block (which then preempts itself, as vLLM's does).
  int preempt_newest(ReplicaQueue& q, std::vector<Request>& reqs);
  /// Grows running request `r` to cache `tokens`, preempting the newest running requests until its
  /// blocks fit. False when `r` itself was the one preempted (it left the running list).
  bool grow_or_preempt(ReplicaQueue& q, std::vector<Request>& reqs, Request& r, std::int64_t tokens);
  StepLimits limits_;
  std::int64_t preemptions_ = 0;
};

/// Continuous batching under one token budget per step: running requests first (a decode token,
/// or the next chunk of a prompt), then waiting ones admitted in order while the batch has room,
/// their KV blocks and (without chunking) the budget for the whole prompt. A decode that finds
/// no block preempts the newest running request. `admit_after_preempt` false: no waiting request
/// is admitted in a step that preempted (vLLM's rule).
class ContinuousScheduler final : public BatchScheduler {
 public:
  ContinuousScheduler(const StepLimits& limits, bool admit_after_preempt);
  void plan(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) override;

 private:
  bool admit_after_preempt_ = true;
};

/// Static batches: a batch is formed when the last one is done, each sequence reserving its whole
/// length up front; it prefills together, then decodes until its longest sequence is done (the
/// finished ones keep their slot and their compute).
class StaticScheduler final : public BatchScheduler {
 public:
  using BatchScheduler::BatchScheduler;
  void plan(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) override;
  [[nodiscard]] bool keeps_finished() const override { return true; }
};

/// SGLang's: a prefill step whenever one can be formed (the one request being chunked, then waiting
/// requests in order while the step's prompt tokens stay under the chunk size and max_prefill_tokens
/// and the KV pool holds each prompt plus the decode tokens reserved for every running request),
/// otherwise one decode step over every running request; decodes wait while prefill steps run.
/// The reservation is min(tokens still to generate, clip) x a ratio that starts high and decays
/// with each decode step; out of KV in a decode, the newest request is retracted (recompute) and
/// the ratio starts again.
class PrefillFirstScheduler final : public BatchScheduler {
 public:
  PrefillFirstScheduler(const StepLimits& limits, std::int64_t max_prefill_tokens, const NewTokenRatio& ratio);
  void plan(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) override;
  [[nodiscard]] double ratio() const { return ratio_; }

 private:
  /// Blocks reserved for the decode tokens `r` may still generate.
  [[nodiscard]] std::int64_t reserved_blocks(const ReplicaQueue& q, const Request& r) const;
  void plan_prefill(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step);
  void plan_decode(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step);
  std::int64_t max_prefill_tokens_ = 16384;
  NewTokenRatio params_;
  double ratio_ = 0.7;
};

/// TensorRT-LLM's: the capacity scheduler GUARANTEED_NO_EVICT admits waiting requests in order
/// while the blocks each needs to completion (prompt, every output token and the overlap
/// scheduler's one more) fit, stopping at the first that does not, so nothing is ever evicted; the
/// micro-batch then walks the admitted requests in order, prompts and decodes in one step, until
/// the token budget or the batch cap. Without chunking a prompt must fit whole in what is left of
/// the budget.
class NoEvictScheduler final : public BatchScheduler {
 public:
  using BatchScheduler::BatchScheduler;
  void plan(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) override;
};

/// The scheduler the scenario asks for, one per replica.
[[nodiscard]] std::unique_ptr<BatchScheduler> make_scheduler(const ServingScenario& s);

}  // namespace cs::serving
