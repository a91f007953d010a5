#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// SVG charts written by the project: line/scatter charts and horizontal stacked bars, with axes,
// "nice" ticks and tick labels, units in the axis titles, a legend, and reference lines. The output
// is one <svg> element (with its xmlns, so it is both a standalone .svg file and inline SVG in an
// HTML page), no scripts, no external fonts. Deterministic: the same chart gives the same bytes
// (coordinates in fixed notation with one decimal, tick labels from the tick step). Every text
// given (titles, series names, labels) is XML-escaped here; callers pass plain text.
//
// Usage:
//   svg::LineChart c;
//   c.title = "Llama-3-8B on dgx-h100";
//   c.x = {.title = "output tokens/s"};
//   c.y = {.title = "latency (ms)", .log = true};
//   c.series.push_back({.name = "TTFT p50", .points = {{100, 35}, {200, 41}}});
//   c.series.push_back({.name = "TTFT p99", .points = {{100, 60}, {200, 90}}, .dashed = true});
//   c.refs.push_back({.horizontal = true, .value = 500, .label = "SLO TTFT 500 ms"});
//   std::string text = svg::line_chart(c);
namespace cs::report::svg {

/// Text escaped for XML character data and attribute values (& < > " '); control characters
/// other than tab and newline, which XML 1.0 does not allow, are dropped.
[[nodiscard]] std::string escape(std::string_view text);

/// "Nice" tick positions covering [lo, hi]: steps of 1, 2 or 5 x 10^k, about `target` of them; the
/// first tick is <= lo and the last >= hi (the axis runs from the first to the last). lo == hi
/// gives a unit-wide range around it; non-finite input gives {0, 1}.
[[nodiscard]] std::vector<double> nice_ticks(double lo, double hi, int target = 5);
/// Log-axis ticks: the powers of ten around [lo, hi] (both > 0), with 2 and 5 between them when the
/// range spans at most three decades (and only every n-th decade past eight).
[[nodiscard]] std::vector<double> log_ticks(double lo, double hi);
/// A tick label: just enough decimals for `step` (the distance between ticks); in thousands ("20k")
/// when the step is 1000 or more and in millions ("3M") from 10^6, so one axis has one form.
[[nodiscard]] std::string tick_label(double v, double step);

struct Axis {
  std::string title{};  ///< with the unit, e.g. "TTFT (ms)"
  bool log = false;     ///< log10 scale; points <= 0 are not drawn on it
  /// Linear axes start at zero unless the data is negative or this is false.
  bool from_zero = true;
  std::optional<double> min{}, max{};  ///< fixed range (else from the data and reference lines)
};

struct Point {
  double x = 0, y = 0;
};

struct Series {
  std::string name{};           ///< in the legend
  std::vector<Point> points{};  ///< drawn in this order; non-finite points are skipped
  std::string colour{};         ///< empty: the palette's colour for the series' index
  bool dashed = false;
  bool line = true;     ///< false: markers only (a scatter)
  bool markers = true;  ///< a dot at each point, with a <title> tooltip "name: x, y"
  /// Optional text per point (e.g. a rank, "#1"), drawn beside its marker and put in its tooltip.
  std::vector<std::string> labels{};
};

/// A straight line across the plot at y = value (horizontal) or x = value, e.g. an SLO.
struct RefLine {
  bool horizontal = true;
  double value = 0;
  std::string label{};
  std::string colour = "#c0392b";
};

struct LineChart {
  std::string title{};
  Axis x{}, y{};
  std::vector<Series> series{};
  std::vector<RefLine> refs{};  ///< the axes extend to include them
  int width = 720, height = 420;
};

/// The chart as one <svg> element. Elements carry classes a test (or a stylesheet) can find:
/// "plot", "axis", "tick x", "tick y", "grid", "series", "marker", "ref", "legend", "no-data".
/// No series with a drawable point: the axes are drawn over a unit range with a "no data" note.
[[nodiscard]] std::string line_chart(const LineChart& chart);

/// Horizontal stacked bars: one bar per row (e.g. a variant), one segment per category (e.g.
/// compute, exposed communication, idle), sharing a linear axis from zero.
struct StackedBars {
  std::string title{};
  std::string unit{};                         ///< the axis title, e.g. "time per step (ms)"
  std::vector<std::string> rows{};            ///< one bar each, top to bottom
  std::vector<std::string> categories{};      ///< segment names, in the legend
  std::vector<std::string> colours{};         ///< per category; empty entries use the palette
  std::vector<std::vector<double>> values{};  ///< values[row][category] >= 0 (others drawn as 0)
  std::optional<double> max{};                ///< the axis' end (e.g. 100 for percentages); else from the longest bar
  int width = 720;
  int label_width = 180;  ///< room for the row labels on the left
};

/// The bars as one <svg> element: classes "bar" (a row), "segment", "tick x", "legend". Each
/// segment has a <title> tooltip "row: category value". Rows with no values make an empty chart
/// with a "no data" note.
[[nodiscard]] std::string stacked_bars(const StackedBars& bars);

/// The points of `points` on their Pareto front, in x order: those no other point beats on both
/// axes. `minimize_x`/`minimize_y` say which way is better on each (cost: lower; throughput: higher).
[[nodiscard]] std::vector<Point> pareto_front(const std::vector<Point>& points, bool minimize_x, bool minimize_y);

/// The palette's i-th colour (cycles): distinguishable, and readable on white.
[[nodiscard]] std::string palette(std::size_t i);

}  // namespace cs::report::svg
