#pragma once
#include <array>
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
/// "81% tables (48 hit, 13 interp, 20 extrap), 19% analytic": the one line that says how much of a
/// run's compute time rests on measured kernels (a table hit, between hits, scaled beyond them) and
/// how much on the analytic model's assumptions (shares in calib::KernelSource order).
[[nodiscard]] std::string compute_sources_text(const std::array<double, 4>& shares);
/// "GEMM 61%, attention 24%, elementwise 12%, host-bound 3%": what a run's compute time was spent
/// on (shares in models::KernelClass order; classes under half a percent left out).
[[nodiscard]] std::string compute_classes_text(const std::array<double, models::kKernelClasses>& shares);
/// The classes as the text and the HTML report name them ("GEMM", "expert GEMMs", ...).
[[nodiscard]] const std::array<const char*, models::kKernelClasses>& compute_class_labels();
/// The JSON object of compute-source shares, every source by its name (`compute_sources`).
[[nodiscard]] nlohmann::ordered_json compute_sources_json(const std::array<double, calib::kKernelSources>& shares);
/// The JSON object of those shares, every class by its name (`compute_by_kernel`).
[[nodiscard]] nlohmann::ordered_json compute_classes_json(const std::array<double, models::kKernelClasses>& shares);

}  // namespace cs::report
