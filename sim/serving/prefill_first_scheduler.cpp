#include <algorithm>
#include <cmath>

#include "sim/serving/batch_scheduler.hpp"

namespace cs::serving {

PrefillFirstScheduler::PrefillFirstScheduler(const StepLimits& limits, std::int64_t max_prefill_tokens,
                                             const NewTokenRatio& ratio)
    : BatchScheduler(limits), max_prefill_tokens_(max_prefill_tokens), params_(ratio), ratio_(ratio.initial) {}

std::int64_t PrefillFirstScheduler::reserved_blocks(const ReplicaQueue& q, const Request& r) const {
  const auto left = std::min(std::max<std::int64_t>(0, r.output - r.generated), params_.clip);
  const auto tokens = static_cast<std::int64_t>(std::ceil(static_cast<double>(left) * ratio_));
  return q.kv.blocks_for(r.input + r.generated + tokens) - q.kv.blocks_for(r.input + r.generated);
}

void PrefillFirstScheduler::plan(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) {
  plan_prefill(q, reqs, step);
  if (step.empty()) plan_decode(q, reqs, step);
}

void PrefillFirstScheduler::plan_prefill(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) {
  const std::int64_t chunk = limits_.chunked_prefill > 0 ? limits_.chunked_prefill : max_prefill_tokens_;
  std::int64_t budget = std::min(chunk, max_prefill_tokens_);
  // The request being chunked goes on first (one at a time); a step that chunks one ends there.
  for (int id : q.running) {
    auto& r = reqs[static_cast<std::size_t>(id)];
    if (r.prompt_cached()) continue;
    if (r.in_flight) return;  // its last chunk is still in the pipeline
    const std::int64_t part = std::min(r.prompt - r.prefilled, budget);
    step.prefill(r, part);
    budget -= part;
    if (r.prefilled + part < r.prompt) return;
    break;
  }
  std::int64_t reserved = 0;
  for (int id : q.running) reserved += reserved_blocks(q, reqs[static_cast<std::size_t>(id)]);
  while (!q.waiting.empty() && static_cast<std::int64_t>(q.running.size()) < limits_.max_batch && budget > 0) {
    auto& r = reqs[static_cast<std::size_t>(q.waiting.front())];
    const bool has_kv = r.prompt_cached();  // arrived from a prefill replica: joins the decodes
    const std::int64_t tokens = has_kv ? r.input + r.generated : r.prompt;
    const std::int64_t need = q.kv.admit_cost(r, tokens);  // less a prefix the radix cache holds
    const std::int64_t own = reserved_blocks(q, r);
    // Alone, a request needs only its prompt's blocks (it fits whole: simulate_serving checked).
    if (!q.kv.has(need) || (!q.running.empty() && !q.kv.has(need + reserved + own))) break;
    q.waiting.pop_front();
    q.kv.admit_for(r, tokens);
    q.running.push_back(r.id);
    reserved += own;
    if (has_kv) continue;
    const std::int64_t part = std::min(r.prompt - r.prefilled, budget);
    step.prefill(r, part);
    budget -= part;
    if (part < r.prompt - r.prefilled) break;  // this one is chunked now: the step ends with it
  }
}

void PrefillFirstScheduler::plan_decode(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) {
  for (std::size_t i = 0; i < q.running.size(); ++i) {
    const int id = q.running[i];
    auto& r = reqs[static_cast<std::size_t>(id)];
    if (r.in_flight || !r.prompt_cached()) continue;
    const std::int64_t kv_tokens = r.input + r.generated;
    const std::int64_t before = preemptions_;
    const bool grown = grow_or_preempt(q, reqs, r, kv_tokens);
    if (preemptions_ > before) ratio_ = params_.initial;  // a retraction: the estimate starts again
    if (!grown) {
      --i;  // it left the running list, the next request now in its place (wraps to 0 - 1, then back)
      continue;
    }
    step.decode(id, static_cast<double>(kv_tokens));
  }
  if (!step.empty()) {
    const double fall = (params_.initial - params_.floor) / static_cast<double>(params_.decay_steps);
    ratio_ = std::max(params_.floor, ratio_ - fall);
  }
}

}  // namespace cs::serving
