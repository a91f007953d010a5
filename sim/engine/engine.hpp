#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/engine/event_queue.hpp"

namespace cs::engine {

class Engine;

/// The seam between the engine and a model: it receives each event in key order.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void handle(const Event& e, Engine& engine) = 0;
};

/// The discrete-event core: a clock and an event queue. Events scheduled in the past are bugs.
class Engine {
 public:
  /// Schedules an event owned by `lp`; its sequence number is that lp's next.
  void schedule(SimTime time, Phase phase, std::uint32_t lp, std::uint32_t kind, std::uint64_t payload);
  /// Runs until no event is left; returns the number of events handled.
  std::uint64_t run(EventHandler& handler);
  /// Runs the events earlier than `limit` (a conservative window); returns how many.
  std::uint64_t run_until(EventHandler& handler, SimTime limit);
  /// The time of the next event, if any.
  [[nodiscard]] std::optional<SimTime> next_time() const {
    return queue_.empty() ? std::nullopt : std::optional<SimTime>(queue_.top().time);
  }
  [[nodiscard]] SimTime now() const { return now_; }

 private:
  EventQueue queue_;
  std::vector<std::uint64_t> next_seq_;
  SimTime now_{};
};

}  // namespace cs::engine
