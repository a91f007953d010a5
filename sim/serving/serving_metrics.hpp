#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "sim/serving/request.hpp"
#include "sim/serving/serving_sim.hpp"

namespace cs::serving {

/// The nearest-rank percentile `p` (0-100) of `v` (0 when empty).
[[nodiscard]] double percentile(std::vector<double> v, double p);
/// Mean, p50, p90 and p99 of `v`, and how many samples.
[[nodiscard]] Percentiles summarise(const std::vector<double>& v);

/// What a finished run leaves for its metrics: every request's times, and when output tokens came.
struct ServingLog {
  std::vector<Request> requests;
  std::vector<std::pair<SimTime, std::int64_t>> tokens_out;  ///< (step end, output tokens it produced)
  std::int64_t peak_in_service = 0;  ///< the most requests in batches at once, summed over replicas
  int gpus = 1;
};

/// Throughput between the instants 10% and 90% of the requests had finished (times from `first`,
/// the first arrival), when that window holds at least twice as many completions as requests
/// were ever in service (ServingResults::steady).
[[nodiscard]] std::optional<ServingResults::SteadyState> steady_state(const ServingLog& log, SimTime first);

/// Fills the request-level figures of `r` from the log: token counts, makespan, TTFT, TPOT and
/// end-to-end percentiles, throughput over the run and its steady window, goodput under the
/// objectives, and (when `spans`) up to 5,000 request spans for the trace.
void request_metrics(const ServingLog& log, const std::optional<double>& slo_ttft_s,
                     const std::optional<double>& slo_tpot_s, bool spans, ServingResults& r);

}  // namespace cs::serving
