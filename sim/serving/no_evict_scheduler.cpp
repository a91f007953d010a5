#include <algorithm>
#include <limits>

#include "sim/serving/batch_scheduler.hpp"

namespace cs::serving {

void NoEvictScheduler::plan(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) {
  // Capacity: each request reserves its blocks to completion when admitted (the overlap scheduler
  // estimates one token more per sequence).
  while (!q.waiting.empty() && static_cast<std::int64_t>(q.running.size()) < limits_.max_batch) {
    auto& r = reqs[static_cast<std::size_t>(q.waiting.front())];
    // At most the whole pool: the extra token is an estimate, and the longest request fits whole.
    const std::int64_t tokens = r.input + r.output + 1;
    const std::int64_t need = std::min(q.kv.admit_cost(r, tokens), q.kv.total());
    if (!q.kv.has(need)) break;
    q.waiting.pop_front();
    q.kv.admit_for(r, tokens, q.kv.total());  // a cached prefix is reused (block reuse), not reserved again
    q.running.push_back(r.id);
  }
  // The micro-batch: admitted requests in order until the token budget or the batch cap.
  std::int64_t budget = limits_.max_tokens;
  const std::int64_t chunk_cap =
      limits_.chunked_prefill > 0 ? limits_.chunked_prefill : std::numeric_limits<std::int64_t>::max();
  for (int id : q.running) {
    auto& r = reqs[static_cast<std::size_t>(id)];
    if (r.in_flight) continue;
    if (static_cast<std::int64_t>(step.plan.size()) >= limits_.max_batch || budget <= 0) break;
    if (!r.prompt_cached()) {
      const std::int64_t left = r.prompt - r.prefilled;
      if (limits_.chunked_prefill == 0 && left > budget) break;
      const std::int64_t part = std::min({left, budget, chunk_cap});
      step.prefill(r, part);
      budget -= part;
      continue;
    }
    if (budget < step.decode_tokens()) break;
    step.decode(id, static_cast<double>(r.input + r.generated));
    budget -= step.decode_tokens();
  }
}

}  // namespace cs::serving
