#include "sim/serving/arrival_clock.hpp"

#include <utility>

namespace cs::serving {

void ArrivalClock::start(std::vector<int> order) {
  order_ = std::move(order);
  next_ = 0;
  timer_.reset();
}

std::optional<int> ArrivalClock::pop_due(SimTime now, const std::vector<Request>& reqs) {
  if (next_ >= order_.size() || reqs[static_cast<std::size_t>(order_[next_])].arrival > now) return std::nullopt;
  return order_[next_++];
}

std::optional<SimTime> ArrivalClock::next_at(const std::vector<Request>& reqs) const {
  if (next_ >= order_.size()) return std::nullopt;
  return reqs[static_cast<std::size_t>(order_[next_])].arrival;
}

bool ArrivalClock::arm(SimTime at) {
  if (timer_ && *timer_ <= at) return false;
  timer_ = at;
  return true;
}

void ArrivalClock::fired(SimTime now) {
  if (timer_ && *timer_ <= now) timer_.reset();
}

}  // namespace cs::serving
