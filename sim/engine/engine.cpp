#include "sim/engine/engine.hpp"

#include "sim/core/check.hpp"

namespace cs::engine {

void Engine::schedule(SimTime time, Phase phase, std::uint32_t lp, std::uint32_t kind, std::uint64_t payload) {
  CS_ASSERT(time >= now_, "events are never scheduled in the past");
  if (lp >= next_seq_.size()) next_seq_.resize(lp + 1, 0);
  queue_.push(Event{time, phase, lp, next_seq_[lp]++, kind, payload});
}

std::uint64_t Engine::run(EventHandler& handler) {
  std::uint64_t handled = 0;
  while (!queue_.empty()) {
    const Event e = queue_.pop();
    now_ = e.time;
    handler.handle(e, *this);
    ++handled;
  }
  return handled;
}

std::uint64_t Engine::run_until(EventHandler& handler, SimTime limit) {
  std::uint64_t handled = 0;
  while (!queue_.empty() && queue_.top().time < limit) {
    const Event e = queue_.pop();
    now_ = e.time;
    handler.handle(e, *this);
    ++handled;
  }
  return handled;
}

}  // namespace cs::engine
