#pragma once
// Stage 6 for serving: every figure of a serving run from its log (sim/serving's ServingLog), as
// train_results does for training.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/serving/serving_log.hpp"
#include "sim/serving/serving_sim.hpp"

namespace cs::report {

using serving::Percentiles;
using serving::ServingLog;
using serving::ServingResults;

/// The nearest-rank percentile `p` (0-100) of `v` (0 when empty).
[[nodiscard]] double percentile(std::vector<double> v, double p);
/// Mean, p50, p90 and p99 of `v`, and how many samples.
[[nodiscard]] Percentiles summarise(const std::vector<double>& v);

/// Every figure of a run from its log: requests, percentiles, throughput, steady window, limits,
/// KV use, MoE balance, compute sources, collectives, cost (the offer's), warnings; request spans
/// for the trace when the run kept them (ServingLog::spans). Runs nothing.
[[nodiscard]] ServingResults serving_results(const serving::ServingScenario& s, ServingLog&& log);

/// Throughput between the instants 10% and 90% of the requests had finished (times from `first`,
/// the first arrival), when that window holds at least twice as many completions as requests
/// were ever in service (ServingResults::steady). With `met` (per request of the log: whether it
/// met the objectives), the window's goodput too.
[[nodiscard]] std::optional<ServingResults::SteadyState> steady_state(const ServingLog& log, SimTime first,
                                                                      const std::vector<char>* met = nullptr);

/// Fills the request-level figures of `r` from the log: token counts, makespan, TTFT, TPOT and
/// end-to-end percentiles, throughput over the run and its steady window, goodput under the
/// objectives, and (when `spans`) up to 5,000 request spans for the trace.
void request_metrics(const ServingLog& log, const std::optional<double>& slo_ttft_s,
                     const std::optional<double>& slo_tpot_s, bool spans, ServingResults& r);

}  // namespace cs::report
