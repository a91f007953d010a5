#pragma once
#include <cstdint>
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
  [[nodiscard]] SimTime now() const { return now_; }

 private:
  EventQueue queue_;
  std::vector<std::uint64_t> next_seq_;
  SimTime now_{};
};

}  // namespace cs::engine
