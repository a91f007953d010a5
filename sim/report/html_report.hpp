#pragma once
#include <string>
#include <utility>
#include <vector>

#include "sim/report/run_summary.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/report/train_results.hpp"

// The `--report FILE.html` pages: one self-contained HTML file per command (html_page.hpp), with
// the results table and SVG charts (svg_chart.hpp). docs/report.md says what each chart shows.
namespace cs::report {

/// One training variant: its results and what its run log says per GPU and per link.
struct TrainReportItem {
  std::string name;  ///< the variant's (or scenario's) name
  TrainResults results;
  std::vector<GpuTimePs> gpus;  ///< gpu_times() of its run
  double makespan_s = 0;
  std::vector<LinkUse> links;  ///< link_use() of its run (empty: not recorded)
};

/// `run`/`train --report`: results table, step-time breakdown per variant, communication by kind,
/// per-GPU time, link utilisation, and the terminal table.
[[nodiscard]] std::string train_report_html(const std::string& title, const std::string& subtitle,
                                            const std::vector<TrainReportItem>& items, const std::string& table_text);

/// `infer --report` (and `run` of an inference scenario): results table, where a request's time
/// goes, per-replica busy time, and each variant's terminal table. `names` may be empty (one run).
[[nodiscard]] std::string serving_report_html(const std::string& title, const std::vector<std::string>& names,
                                              const std::vector<ServingResults>& results);

/// `infer-sweep --report`: the latency-throughput chart (p50, p99, SLO lines), throughput against
/// offered rate, and the table of points.
[[nodiscard]] std::string sweep_report_html(const std::string& title,
                                            const std::vector<std::pair<double, ServingResults>>& points,
                                            const SweepSlo& slo);

/// `plan --report`: the Pareto front of the ranked candidates, the ranked table, the rejections.
struct PlanReport {
  std::string title, subtitle;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  ///< ranked, as the terminal prints them
  /// One point per ranked row (same order): x, y of the front's axes.
  std::vector<svg::Point> points;
  std::string x_title, y_title;
  bool minimize_x = true, minimize_y = true;
  std::string front_caption;
  std::vector<std::pair<std::string, std::string>> rejected;  ///< offer, reason
  std::vector<std::string> notes;                             ///< the search's counts, how costs are computed
};
[[nodiscard]] std::string plan_report_html(const PlanReport& plan);
/// `plan --svg`: the same Pareto chart alone, titled with the plan's title.
[[nodiscard]] std::string plan_front_svg(const PlanReport& plan, bool titled = true);

/// Checks that `path` can be written (creating it), before the work that fills it; InputError
/// naming `flag` (exit 2) when it cannot.
void check_writable(const std::string& path, const std::string& flag);
/// Writes `text` to `path`; InputError naming `flag` when it cannot.
void write_report(const std::string& path, const std::string& flag, const std::string& text);

}  // namespace cs::report
