#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/network/topology.hpp"
#include "sim/report/train_results.hpp"

namespace cs::report {

/// The `--json` document of one training result, fields in a fixed order; `run_info` (version,
/// wall time) is the only part that may differ between two runs of the same input.
[[nodiscard]] nlohmann::ordered_json to_json(const TrainResults& r, bool with_run_info = true);

/// The terminal table: one column per result (variants side by side).
[[nodiscard]] std::string format_table(const std::vector<TrainResults>& results, const std::vector<std::string>& names);

}  // namespace cs::report
