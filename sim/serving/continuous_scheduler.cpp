#include <algorithm>
#include <limits>

#include "sim/serving/batch_scheduler.hpp"

namespace cs::serving {

ContinuousScheduler::ContinuousScheduler(const StepLimits& limits, bool admit_after_preempt)
    : BatchScheduler(limits), admit_after_preempt_(admit_after_preempt) {}

void ContinuousScheduler::plan(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) {
  std::int64_t budget = limits_.max_tokens;
  const std::int64_t chunk_cap =
      limits_.chunked_prefill > 0 ? limits_.chunked_prefill : std::numeric_limits<std::int64_t>::max();
  const std::int64_t preempted_before = preemptions_;
  for (std::size_t i = 0; i < q.running.size() && budget > 0; ++i) {
    const int id = q.running[i];
    auto& r = reqs[static_cast<std::size_t>(id)];
    if (r.in_flight) continue;  // its previous token is still in the pipeline
    if (!r.prompt_cached()) {
      const std::int64_t chunk = std::min({r.prompt - r.prefilled, budget, chunk_cap});
      step.prefill(r, chunk);
      budget -= chunk;
      continue;
    }
    // Decode: the last sampled token's K/V is appended this step.
    const std::int64_t kv_tokens = r.input + r.generated;
    if (!grow_or_preempt(q, reqs, r, kv_tokens)) {
      --i;  // it left the running list, the next request now in its place (wraps to 0 - 1, then back)
      continue;
    }
    step.decode(id, static_cast<double>(kv_tokens));
    budget -= step.decode_tokens();
  }
  if (!admit_after_preempt_ && preemptions_ > preempted_before) return;
  while (!q.waiting.empty() && static_cast<std::int64_t>(q.running.size()) < limits_.max_batch && budget > 0) {
    auto& r = reqs[static_cast<std::size_t>(q.waiting.front())];
    const bool has_kv = r.prompt_cached();  // arrived from a prefill replica
    const std::int64_t tokens = has_kv ? r.input + r.generated : r.prompt;
    if (!q.kv.has(q.kv.admit_cost(r, tokens))) break;
    if (!has_kv && limits_.chunked_prefill == 0 && r.prompt - r.prefilled - q.kv.reusable(r) > budget) break;
    q.waiting.pop_front();
    q.kv.admit_for(r, tokens);  // a cached prefix counts as prefilled
    q.running.push_back(r.id);
    if (has_kv) {
      // KV arrived from a prefill replica: decode straight away.
      step.decode(r.id, static_cast<double>(r.input + r.generated));
      budget -= step.decode_tokens();
      continue;
    }
    const std::int64_t chunk = std::min({r.prompt - r.prefilled, budget, chunk_cap});
    step.prefill(r, chunk);
    budget -= chunk;
  }
}

}  // namespace cs::serving
