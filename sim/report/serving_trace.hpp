#pragma once
#include <limits>
#include <ostream>
#include <string>

#include "sim/core/sim_time.hpp"
#include "sim/serving/serving_sim.hpp"

namespace cs::report {

/// Streams a serving run's Chrome / Perfetto trace to `out`: each replica's engine steps (tokens and
/// sequences in the step), and each recorded request's wait-plus-prefill and decode spans; only
/// what overlaps [from, to]. Returns the number of events written.
std::uint64_t write_serving_trace(std::ostream& out, const std::string& path_for_errors,
                                  const serving::ServingResults& r, SimTime from = {},
                                  SimTime to = SimTime{std::numeric_limits<std::int64_t>::max()});

}  // namespace cs::report
