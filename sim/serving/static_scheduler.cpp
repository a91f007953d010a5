#include <algorithm>

#include "sim/serving/batch_scheduler.hpp"

namespace cs::serving {

void StaticScheduler::plan(ReplicaQueue& q, std::vector<Request>& reqs, StepBuilder& step) {
  const auto req = [&](int id) -> Request& { return reqs[static_cast<std::size_t>(id)]; };
  const bool any_live = std::any_of(q.running.begin(), q.running.end(), [&](int id) { return !req(id).finished(); });
  if (!any_live) {
    for (int id : q.running) q.kv.release(req(id));
    q.running.clear();
    // A static batch reserves every sequence's full length (prompt + output) up front.
    while (!q.waiting.empty() && static_cast<std::int64_t>(q.running.size()) < limits_.max_batch) {
      auto& r = req(q.waiting.front());
      const auto need = q.kv.blocks_for(r.input + r.output);
      if (!q.kv.has(need)) break;
      q.waiting.pop_front();
      q.kv.admit(r, need);
      q.running.push_back(r.id);
    }
  }
  const bool prefill =
      std::any_of(q.running.begin(), q.running.end(), [&](int id) { return !req(id).prompt_cached(); });
  for (int id : q.running) {
    auto& r = req(id);
    if (prefill) {
      if (!r.prompt_cached()) step.prefill(r, r.prompt - r.prefilled);
      continue;
    }
    // Finished sequences keep their slot and their compute until the whole batch is done.
    step.decode(id, static_cast<double>(r.input + std::min(r.generated, r.output)));
  }
}

}  // namespace cs::serving
