#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/report/svg_chart.hpp"
#include "sim/serving/serving_sim.hpp"

namespace cs::report {

using serving::ServingResults;

/// `infer --json`: ttft_s, tpot_s, e2e_s (mean, p50, p90, p99), throughputs, max_concurrency,
/// fits, cost, memory, KV utilisation, run_info.
[[nodiscard]] nlohmann::ordered_json serving_json(const ServingResults& r);
[[nodiscard]] std::string serving_table(const ServingResults& r);

/// The service-level objectives of a sweep (seconds; absent: none): drawn on its chart, and with
/// either, its table and JSON say at each rate the goodput and whether p90 meets them.
struct SweepSlo {
  std::optional<double> ttft_s{}, tpot_s{};
};
/// The latency-throughput curve of a rate sweep: p50, p90 and p99 of TTFT, TPOT and end-to-end
/// (the percentiles infer prints).
[[nodiscard]] std::string sweep_table(const std::vector<std::pair<double, ServingResults>>& points,
                                      const SweepSlo& slo = {});
[[nodiscard]] std::string sweep_csv(const std::vector<std::pair<double, ServingResults>>& points);
/// `infer-sweep --json`: {"slo": {...}, "points": [{"rate_rps", "meets_slo_p90", "result": infer's JSON}]}.
[[nodiscard]] nlohmann::ordered_json sweep_json(const std::vector<std::pair<double, ServingResults>>& points,
                                                const SweepSlo& slo);
/// The curve as a chart: TTFT and TPOT at p50 (solid) and p99 (dashed), in ms on a log axis,
/// against output tokens/s; the SLOs as horizontal lines.
[[nodiscard]] svg::LineChart sweep_chart(const std::vector<std::pair<double, ServingResults>>& points,
                                         const std::string& title, const SweepSlo& slo);
[[nodiscard]] std::string sweep_svg(const std::vector<std::pair<double, ServingResults>>& points,
                                    const std::string& title, const SweepSlo& slo = {});

}  // namespace cs::report
