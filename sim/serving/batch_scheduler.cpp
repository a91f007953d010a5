#include "sim/serving/batch_scheduler.hpp"

#include <iterator>

namespace cs::serving {

bool BatchScheduler::preempt_newest(ReplicaQueue& q, std::vector<Request>& reqs, int keep) {
  for (auto it = q.running.rbegin(); it != q.running.rend(); ++it) {
    auto& v = reqs[static_cast<std::size_t>(*it)];
    if (*it == keep || v.in_flight) continue;
    q.kv.release(v);
    v.prompt = v.input + v.generated;
    v.prefilled = 0;
    q.waiting.push_front(v.id);
    q.running.erase(std::next(it).base());
    ++preemptions_;
    return true;
  }
  return false;
}

std::unique_ptr<BatchScheduler> make_scheduler(const ServingScenario& s) {
  const StepLimits limits{s.max_batch, s.max_tokens, s.chunked_prefill};
  if (s.scheduler == Scheduler::kStatic) return std::make_unique<StaticScheduler>(limits);
  return std::make_unique<ContinuousScheduler>(limits, true);
}

}  // namespace cs::serving
