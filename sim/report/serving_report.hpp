#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/serving/serving_sim.hpp"

namespace cs::report {

using serving::ServingResults;

/// `infer --json`: ttft_s, tpot_s, e2e_s (mean, p50, p90, p99), throughputs, max_concurrency,
/// fits, cost, memory, KV utilisation, run_info.
[[nodiscard]] nlohmann::ordered_json serving_json(const ServingResults& r);
[[nodiscard]] std::string serving_table(const ServingResults& r);
/// Chrome trace: each replica's engine steps, and each request's queue, prefill and decode spans.
[[nodiscard]] nlohmann::ordered_json serving_trace(const ServingResults& r);

/// The latency-throughput curve of a rate sweep.
[[nodiscard]] std::string sweep_table(const std::vector<std::pair<double, ServingResults>>& points);
[[nodiscard]] std::string sweep_csv(const std::vector<std::pair<double, ServingResults>>& points);
[[nodiscard]] std::string sweep_svg(const std::vector<std::pair<double, ServingResults>>& points,
                                    const std::string& title);

}  // namespace cs::report
