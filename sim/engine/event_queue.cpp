#include "sim/engine/event_queue.hpp"

#include <algorithm>

#include "sim/core/check.hpp"

namespace cs::engine {

namespace {
struct Later {
  bool operator()(const Event& a, const Event& b) const { return b.before(a); }
};
}  // namespace

void EventQueue::push(const Event& e) {
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

Event EventQueue::pop() {
  CS_ASSERT(!heap_.empty(), "pop from an empty event queue");
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  Event e = heap_.back();
  heap_.pop_back();
  return e;
}

}  // namespace cs::engine
