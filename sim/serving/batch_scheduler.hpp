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
  /// Recompute preemption (vLLM's, SGLang's retraction) of the newest running request other than
  /// `keep` and those in flight: its blocks freed, its prompt now its input and what it generated,
  /// back at the head of the waiting queue. False: none could be preempted.
  bool preempt_newest(ReplicaQueue& q, std::vector<Request>& reqs, int keep);
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

/// The scheduler the scenario asks for, one per replica.
[[nodiscard]] std::unique_ptr<BatchScheduler> make_scheduler(const ServingScenario& s);

}  // namespace cs::serving
