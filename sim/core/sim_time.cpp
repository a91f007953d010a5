#include "sim/core/sim_time.hpp"

#include <cmath>

#include "sim/core/check.hpp"

namespace cs {

SimTime SimTime::from_seconds(double seconds) {
  CS_ASSERT(std::isfinite(seconds) && seconds >= 0.0, "durations are finite and non-negative");
  CS_ASSERT(seconds < 9.0e6, "duration beyond 104 days of simulated time");
  return SimTime{static_cast<std::int64_t>(std::llround(seconds * 1e12))};
}

}  // namespace cs
