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

/// The latency-throughput curve of a rate sweep.
[[nodiscard]] std::string sweep_table(const std::vector<std::pair<double, ServingResults>>& points);
[[nodiscard]] std::string sweep_csv(const std::vector<std::pair<double, ServingResults>>& points);
/// The service-level objectives drawn on a sweep's chart (seconds; absent: no line).
struct SweepSlo {
  std::optional<double> ttft_s{}, tpot_s{};
};
/// The curve as a chart: TTFT and TPOT at p50 (solid) and p99 (dashed), in ms on a log axis,
/// against output tokens/s; the SLOs as horizontal lines.
[[nodiscard]] svg::LineChart sweep_chart(const std::vector<std::pair<double, ServingResults>>& points,
                                         const std::string& title, const SweepSlo& slo);
[[nodiscard]] std::string sweep_svg(const std::vector<std::pair<double, ServingResults>>& points,
                                    const std::string& title, const SweepSlo& slo = {});

}  // namespace cs::report
