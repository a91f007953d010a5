#pragma once
// A serving scenario run and its figures in one call, for tests: sim/serving's run
// (serving::simulate_serving, the log) then report::serving_results, as every command does
// through study::run_serving.
#include "sim/report/serving_results.hpp"
#include "sim/serving/serving_sim.hpp"

namespace cs::test {

[[nodiscard]] serving::ServingResults serve(const serving::ServingScenario& s,
                                            const serving::ServingRunOptions& options);
[[nodiscard]] serving::ServingResults serve(const serving::ServingScenario& s, bool record_trace = false);

}  // namespace cs::test
