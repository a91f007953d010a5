#include "sim/serving/batch_scheduler.hpp"

#include <iterator>

#include "sim/core/check.hpp"

#include "sim/serving/serving_sim.hpp"

namespace cs::serving {

int BatchScheduler::preempt_newest(ReplicaQueue& q, std::vector<Request>& reqs) {
  for (auto it = q.running.rbegin(); it != q.running.rend(); ++it) {
    auto& v = reqs[static_cast<std::size_t>(*it)];
    if (v.in_flight) continue;
    q.kv.release(v);
    v.prompt = v.input + v.generated;
    v.prefilled = 0;
    q.waiting.push_front(v.id);
    q.running.erase(std::next(it).base());
    ++preemptions_;
    return v.id;
  }
  return -1;
}

bool BatchScheduler::grow_or_preempt(ReplicaQueue& q, std::vector<Request>& reqs, Request& r, std::int64_t tokens) {
  while (!q.kv.has(q.kv.more_for(r, tokens))) {
    const int victim = preempt_newest(q, reqs);
    CS_ASSERT(victim >= 0, "a request not in flight can always be preempted");
    if (victim == r.id) return false;
  }
  q.kv.grow(r, tokens);
  return true;
}

const char* scheduler_name(Scheduler s) {
  switch (s) {
    case Scheduler::kStatic: return "static";
    case Scheduler::kPrefillFirst: return "prefill_first";
    case Scheduler::kNoEvict: return "no_evict";
    case Scheduler::kContinuous: break;
  }
  return "continuous";
}

std::unique_ptr<BatchScheduler> make_scheduler(const ServingScenario& s) {
  const StepLimits limits{s.max_batch, s.max_tokens, s.chunked_prefill};
  switch (s.scheduler) {
    case Scheduler::kStatic: return std::make_unique<StaticScheduler>(limits);
    case Scheduler::kPrefillFirst:
      return std::make_unique<PrefillFirstScheduler>(limits, s.max_prefill_tokens, s.new_token_ratio);
    case Scheduler::kNoEvict: return std::make_unique<NoEvictScheduler>(limits);
    case Scheduler::kContinuous: break;
  }
  return std::make_unique<ContinuousScheduler>(limits, s.admit_after_preempt);
}

}  // namespace cs::serving
