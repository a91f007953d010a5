#include "sim/serving/run_record.hpp"

#include <algorithm>

namespace cs::serving {

void RunRecord::started(Batch& batch, double tokens) {
  kv_max_ = std::max(kv_max_, batch.kv_used);
  ++steps_;
  if (!trace_) return;
  batch.span = step_spans_.size();
  step_spans_.push_back({batch.replica, batch.start.seconds(), 0.0, tokens, static_cast<double>(batch.plan.size())});
}

void RunRecord::finished(const Batch& batch, SimTime now, int pp, std::size_t running) {
  const auto r = static_cast<std::size_t>(batch.replica);
  kv_area_[r] += batch.kv_used * (now - batch.start).seconds() / pp;
  if (trace_) step_spans_[batch.span].end = now.seconds();
  peak_running_[r] = std::max(peak_running_[r], static_cast<std::int64_t>(running));
}

void RunRecord::into(ServingLog& log) {
  log.steps = steps_;
  log.tokens_out = std::move(tokens_out_);
  for (auto p : peak_running_) log.peak_in_service += p;
  for (double a : kv_area_) log.kv_area += a;
  log.kv_max = kv_max_;
  log.step_spans = std::move(step_spans_);
}

}  // namespace cs::serving
