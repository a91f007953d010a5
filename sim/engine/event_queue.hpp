#pragma once
#include <cstdint>
#include <vector>

#include "sim/core/sim_time.hpp"

namespace cs::engine {

/// Fixed order of event classes that share a tick (SST's priority order): finished network
/// transfers are seen before tasks end, and tasks end before new ones start, so a start at time t
/// sees every completion at t.
enum class Phase : std::uint8_t { kNetwork = 0, kTaskEnd = 1, kTaskStart = 2 };

/// An event: ordered by (time, phase, lp, seq). `lp` is the owning logical process (a GPU, a
/// collective, the network); `seq` a per-lp counter. No pointers, no global counters.
struct Event {
  SimTime time{};
  Phase phase = Phase::kTaskStart;
  std::uint32_t lp = 0;
  std::uint64_t seq = 0;
  std::uint32_t kind = 0;     ///< handler-defined
  std::uint64_t payload = 0;  ///< handler-defined (an id)
  [[nodiscard]] bool before(const Event& o) const {
    if (time != o.time) return time < o.time;
    if (phase != o.phase) return phase < o.phase;
    if (lp != o.lp) return lp < o.lp;
    return seq < o.seq;
  }
};

/// A binary min-heap of events in key order.
class EventQueue {
 public:
  void push(const Event& e);
  [[nodiscard]] Event pop();
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  /// The first event in key order (the queue must not be empty).
  [[nodiscard]] const Event& top() const { return heap_.front(); }
  [[nodiscard]] std::size_t size() const { return heap_.size(); }

 private:
  std::vector<Event> heap_;
};

}  // namespace cs::engine
