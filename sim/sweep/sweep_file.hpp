#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/config/catalog.hpp"
#include "sim/config/fields.hpp"
#include "sim/config/json_doc.hpp"

namespace cs::sweep {

/// One field set at one point: the field's JSON pointer in the scenario and its value.
struct Override {
  std::string pointer;  ///< "/parallel/tp" (always the pointer form, whatever the sweep file wrote)
  nlohmann::json value;
  bool operator==(const Override&) const = default;
};

/// One point of a sweep: its index in the sweep's order and the fields it sets on the base.
struct Point {
  std::size_t index = 0;
  std::vector<Override> overrides;
};

/// The most points one sweep file may expand to; a larger product is refused before anything runs
/// (docs/sweep.md). A million single-node steps is already hours of work on a workstation.
inline constexpr std::size_t kMaxPoints = 1000000;

/// A sweep file (docs/sweep.md) parsed and expanded: the base scenario document and every point.
struct SweepSpec {
  std::string path;  ///< the sweep file, as given
  config::JsonDoc base;
  config::ScenarioKind kind = config::ScenarioKind::kTrain;
  /// The fields the points set, in column order: for `axes`, the axes sorted by pointer (JSON
  /// objects have no order, so the byte order of the pointers is the one order every reader
  /// agrees on), the first varying slowest; for a `points` list, each field where it first appears.
  std::vector<std::string> columns;
  bool cartesian = false;  ///< from `axes` (else an explicit `points` list)
  std::vector<Point> points;
};

/// One top-level key of a sweep file, as docs/config-reference.md lists it (`clustersim describe
/// --markdown`); parse_sweep reads exactly these keys (a test checks each is accepted).
struct SweepKey {
  std::string key, type, meaning;
  bool required = false;
};
[[nodiscard]] const std::vector<SweepKey>& sweep_file_keys();
/// The sweep file's section of docs/config-reference.md.
[[nodiscard]] std::string sweep_reference_markdown();

/// Parses a sweep document. Every override is checked as `--set` checks it (the field table's
/// type and range); a bad field or value is an InputError naming the sweep file and the pointer of
/// the value in it (e.g. /axes/~1parallel~1tp/2). A base given as a path is read relative to the
/// sweep file's folder. Lengths and rates (read by the serving parser itself) are checked by parsing
/// the base with the value set, which is why the catalog is needed. Nothing else is resolved or
/// simulated here: a point whose combination does not
/// resolve becomes an "invalid" row when it runs.
[[nodiscard]] SweepSpec parse_sweep(const config::JsonDoc& doc, const config::Catalog& catalog);

/// The scenario document of one point: the base with the point's overrides set. Its path is
/// "point N", so messages about it name the point.
[[nodiscard]] config::JsonDoc point_doc(const SweepSpec& spec, const Point& point);

}  // namespace cs::sweep
