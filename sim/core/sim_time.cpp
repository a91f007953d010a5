#include "sim/core/sim_time.hpp"

#include <cmath>

#include "sim/core/check.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"

namespace cs {

SimTime SimTime::from_seconds(double seconds) {
  CS_ASSERT(std::isfinite(seconds) && seconds >= 0.0, "durations are finite and non-negative");
  if (seconds >= kMaxSimSeconds) {
    throw InfeasibleError("simulated time would pass " + fixed(kMaxSimSeconds, 0) +
                          " s (104 days), the end of the simulator's clock: a duration of " + shortest(seconds) +
                          " s; shorten the run (fewer requests or steps, a higher rate)");
  }
  return SimTime{static_cast<std::int64_t>(std::llround(seconds * 1e12))};
}

}  // namespace cs
