#include "sim/serving/batch_tracker.hpp"

namespace cs::serving {

std::uint64_t BatchTracker::acquire() {
  if (free_.empty()) {
    batches_.emplace_back();
    return batches_.size() - 1;
  }
  const auto b = free_.back();
  free_.pop_back();
  return b;
}

void BatchTracker::tag(workload::TaskId id, Purpose::Kind kind, std::uint64_t what) {
  const auto t = workload::index(id);
  if (t >= purpose_.size()) purpose_.resize(t + 1);
  purpose_[t] = {kind, what};
}

Purpose BatchTracker::take(workload::TaskId id) {
  const auto t = workload::index(id);
  if (t >= purpose_.size()) return {};
  const Purpose p = purpose_[t];
  purpose_[t] = Purpose{};
  return p;
}

}  // namespace cs::serving
