#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/json_doc.hpp"
#include "sim/sweep/sweep_run.hpp"

namespace cs::sweep {

/// A sweep's results, or one shard's: what every writer (table, CSV, JSON, SVG) reads, and what
/// `--merge` rebuilds from the shards' JSON documents.
struct Results {
  std::string sweep;  ///< the sweep file, as given
  config::ScenarioKind kind = config::ScenarioKind::kTrain;
  std::size_t points_total = 0;      ///< points in the whole sweep
  std::vector<std::string> columns;  ///< the fields the points set (SweepSpec::columns)
  struct Shard {
    std::size_t index = 0, count = 1;
  };
  std::optional<Shard> shard;  ///< only a shard's points (`--shard I/N`)
  bool interrupted = false;    ///< stopped by SIGINT: some points never ran
  std::vector<Row> rows;       ///< in point order
};

/// The CSV header: index, one column per field (its pointer), status, the metrics, reason.
[[nodiscard]] std::string csv_header(const Results& r);
/// One CSV line (numbers in the shortest text that reads back the same double; metrics empty
/// unless the row is ok; text quoted when it holds a comma, quote or line break).
[[nodiscard]] std::string csv_row(const Results& r, const Row& row);

/// The text table: one line per point, metrics in display units, the reason last.
[[nodiscard]] std::string table(const Results& r);

/// `--svg`: metric `y` (a name of metric_names) against the field `x` (a column whose values are
/// numbers) over the ok rows, one series per combination of the other columns' values (one series
/// per value of the other axis in a two-axis sweep). InputError naming `--x`/`--y` when they name
/// no column or metric, or `x`'s values are not all numbers. The same bytes for the same rows.
[[nodiscard]] std::string svg(const Results& r, const std::string& x, const std::string& y);
/// The checks of `svg` alone, before anything runs.
void check_svg_args(const Results& r, const std::vector<Point>& points, const std::string& x, const std::string& y);

/// The JSON document (`--json`, and what `--merge` reads): sweep, kind, points_total, columns,
/// metrics, shard and interrupted when they apply, and points (index, overrides, status, reason,
/// metrics, null unless ok).
[[nodiscard]] nlohmann::ordered_json to_json(const Results& r);
/// A JSON document read back; InputError naming the file and pointer when it is not one.
[[nodiscard]] Results from_json(const config::JsonDoc& doc);
/// Shards of one sweep joined into the whole sweep's results: the same sweep, kind, point count
/// and columns in every part, and every point exactly once. InputError otherwise, naming the file.
[[nodiscard]] Results merge(const std::vector<Results>& parts, const std::vector<std::string>& files);

}  // namespace cs::sweep
