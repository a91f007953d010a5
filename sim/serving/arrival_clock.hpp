#pragma once
// When requests join the run: the known arrivals in arrival order, a closed loop's later ones as
// they come, and the one timer that wakes the run for the next. Apart from the run so that the
// order and the timer's rule are tested without a simulation.
#include <cstddef>
#include <optional>
#include <vector>

#include "sim/core/sim_time.hpp"
#include "sim/serving/request.hpp"

namespace cs::serving {

class ArrivalClock {
 public:
  /// The requests known up front, as ids in arrival order (arrival_order).
  void start(std::vector<int> order);
  /// A closed loop's next request: it arrives when it is added, after every one known.
  void add(int id) { order_.push_back(id); }
  /// The next request due by `now`, each once and in order; none when the next arrives later.
  [[nodiscard]] std::optional<int> pop_due(SimTime now, const std::vector<Request>& reqs);
  /// When the next request not yet admitted arrives; none when every one is.
  [[nodiscard]] std::optional<SimTime> next_at(const std::vector<Request>& reqs) const;
  /// Whether the run must set a timer for `at`: not when one already fires by then. Records it.
  [[nodiscard]] bool arm(SimTime at);
  /// A timer fired at `now`: the pending one, if due by then, is spent.
  void fired(SimTime now);

 private:
  std::vector<int> order_;
  std::size_t next_ = 0;
  std::optional<SimTime> timer_;  ///< the earliest pending timer
};

}  // namespace cs::serving
