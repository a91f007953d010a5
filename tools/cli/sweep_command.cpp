// `sweep`: a base scenario over a grid (or list) of overrides, each point a row (docs/sweep.md).
#include <signal.h>

#include <atomic>
#include <charconv>
#include <fstream>
#include <iostream>
#include <optional>

#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/core/errors.hpp"
#include "sim/report/html_page.hpp"
#include "sim/report/html_report.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "sim/study/batch.hpp"
#include "sim/sweep/sweep_file.hpp"
#include "sim/sweep/sweep_output.hpp"
#include "sim/sweep/sweep_run.hpp"
#include "sim/workload/work_estimate.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/field_flags.hpp"
#include "tools/cli/mpi_session.hpp"
#include "tools/cli/work_bounds.hpp"

namespace cs::cli {

namespace {

/// Set by the first SIGINT: no further point starts. The handler is reset by that delivery
/// (SA_RESETHAND), so a second Ctrl-C ends the process at once.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

extern "C" void on_sigint(int) { g_interrupted.store(true); }

/// Catches SIGINT while alive; puts back the previous handler after.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, &previous_);
  }
  ~InterruptGuard() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction previous_ {};
};

/// "I/N" with 0 <= I < N.
sweep::Results::Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  std::size_t i = 0, n = 0;
  const auto whole = [](std::string_view t, std::size_t& out) {
    const auto r = std::from_chars(t.data(), t.data() + t.size(), out);
    return !t.empty() && r.ec == std::errc{} && r.ptr == t.data() + t.size();
  };
  if (slash == std::string::npos || !whole(std::string_view(text).substr(0, slash), i) ||
      !whole(std::string_view(text).substr(slash + 1), n) || n < 1 || i >= n) {
    throw InputError(kCommandLine, "--shard", "expected I/N with 0 <= I < N (e.g. 0/4); got '" + text + "'");
  }
  return {i, n};
}

std::ofstream open_out(const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw InputError(path, "", "cannot write this file");
  return f;
}

struct Opts {
  std::string file, csv, shard, svg, x, y, report;
  std::vector<std::string> merge;
  bool json = false;
};

/// The output files, opened before any point runs (an unwritable path is exit 2 at once).
struct Outputs {
  std::ofstream csv, svg;
  void open(const Opts& o) {
    if (!o.csv.empty()) csv = open_out(o.csv);
    if (!o.svg.empty()) svg = open_out(o.svg);
    if (!o.report.empty()) report::check_writable(o.report, "--report");
  }
};

/// The ranks' JSON documents joined into the whole sweep's results.
sweep::Results merge_texts(const std::vector<std::string>& texts, const std::vector<std::string>& names) {
  std::vector<sweep::Results> parts;
  for (std::size_t i = 0; i < texts.size(); ++i)
    parts.push_back(sweep::from_json(config::parse_text(texts[i], names[i])));
  return sweep::merge(parts, names);
}

/// Writes what every run ends with (the CSV when not streamed, the SVG, stdout); the exit code.
int finish(const Opts& o, Outputs& out, const sweep::Results& res, bool csv_streamed) {
  if (out.csv.is_open()) {
    if (!csv_streamed) {
      out.csv << sweep::csv_header(res);
      for (const auto& row : res.rows) out.csv << sweep::csv_row(res, row);
    }
    out.csv.flush();
    if (!out.csv) throw InputError(o.csv, "", "writing this file failed");
  }
  if (out.svg.is_open()) {
    out.svg << sweep::svg(res, o.x, o.y);
    out.svg.flush();
    if (!out.svg) throw InputError(o.svg, "", "writing this file failed");
  }
  if (!o.report.empty()) {
    std::size_t ok = 0;
    for (const auto& row : res.rows) ok += row.status == sweep::Status::kOk ? 1 : 0;
    report::html::Page page("sweep: " + res.sweep, std::to_string(res.rows.size()) + " of " +
                                                       std::to_string(res.points_total) + " points, " +
                                                       std::to_string(ok) + " ok");
    if (!o.x.empty()) {
      page.heading("Chart");
      page.figure(sweep::svg(res, o.x, o.y),
                  "Each line is one value of the other fields the sweep sets; each point "
                  "a point of the sweep that ran (infeasible and invalid points are in "
                  "the table, not on the chart).");
    }
    page.heading("Points");
    page.preformatted(sweep::table(res));
    report::write_report(o.report, "--report", page.str());
    std::cerr << "report written to " << o.report << "\n";
  }
  if (o.json) {
    std::cout << sweep::to_json(res).dump(2) << "\n";
  } else {
    std::cout << sweep::table(res);
  }
  if (res.interrupted) {
    std::cerr << "interrupted: " << res.rows.size() << " points finished" << (o.csv.empty() ? "" : ", all in " + o.csv)
              << "\n";
    return 130;
  }
  return 0;
}

int run_sweep(const Opts& o, const Globals& g) {
  // Started by mpirun: the ranks split the points and rank 0 writes every output.
  const auto mpi = MpiSession::start_if_launched();
  const bool ranks = mpi && mpi->size() > 1;
  const bool root = !ranks || mpi->rank() == 0;
  const config::Catalog catalog(g.data_dir);
  // --x and --y choose the chart of --svg (needed) and of --report (optional: a chart when given).
  if (o.x.empty() != o.y.empty() || (!o.svg.empty() && o.x.empty()) ||
      (o.svg.empty() && o.report.empty() && !o.x.empty()))
    throw InputError(kCommandLine, "--svg", "--svg FILE, --x FIELD and --y METRIC go together");
  Outputs out;
  if (!o.merge.empty()) {
    if (!o.file.empty() || !o.shard.empty() || ranks)
      throw InputError(kCommandLine, "--merge",
                       "merges results files in one process; give no sweep file, no --shard and no mpirun with it");
    out.open(o);
    std::vector<sweep::Results> parts;
    for (const auto& f : o.merge) parts.push_back(sweep::from_json(config::load(f)));
    return finish(o, out, sweep::merge(parts, o.merge), false);
  }
  if (o.file.empty()) throw InputError(kCommandLine, "file", "expected a sweep file (or --merge FILES)");
  const auto spec = sweep::parse_sweep(config::load(o.file), catalog);
  sweep::Results res;
  res.sweep = spec.path;
  res.kind = spec.kind;
  res.points_total = spec.points.size();
  res.columns = spec.columns;
  if (!o.x.empty()) sweep::check_svg_args(res, spec.points, o.x, o.y);
  if (ranks && !o.shard.empty())
    throw InputError(kCommandLine, "--shard", "mpirun already splits the points among its ranks; give no --shard");
  if (ranks) {
    res.shard = sweep::Results::Shard{static_cast<std::size_t>(mpi->rank()), static_cast<std::size_t>(mpi->size())};
  } else if (!o.shard.empty()) {
    res.shard = parse_shard(o.shard);
  }
  // Rank 0 opens the outputs; the other ranks learn whether it could, so none waits for a gather
  // that will never come.
  std::optional<InputError> cannot;
  if (root) {
    try {
      out.open(o);
    } catch (const InputError& e) {
      cannot = e;
    }
  }
  if (ranks && !mpi->broadcast(!cannot) && !root) return static_cast<int>(ExitCode::kBadInput);
  if (cannot) throw *cannot;
  const auto indices = res.shard ? sweep::shard_indices(spec.points.size(), res.shard->index, res.shard->count)
                                 : sweep::shard_indices(spec.points.size(), 0, 1);
  {
    // The sweep as a whole (its points share this machine's time), before any point runs.
    sweep::WorkEstimates est;
    est.training = [](const scenario::Scenario& s) { return workload::estimate_training_work(s, false).total(); };
    est.serving = [](const serving::ServingScenario& s) { return serving_work(s).total(); };
    const auto w = sweep::sweep_work(spec, indices, catalog, est);
    check_batch_work(w.total, indices.size(), "sweep points",
                     "the largest is point " + std::to_string(w.largest_index) + " (about " +
                         std::to_string(std::llround(w.largest)) + ")",
                     g);
  }
  sweep::WorkChecks checks;
  checks.training = [&g](const scenario::Scenario& s, const std::string& who) {
    check_training_work(s, false, who, g);
  };
  checks.serving = [&g](const serving::ServingScenario& s, const std::string& who) { check_serving_work(s, who, g); };
  // One process streams its CSV and stops on Ctrl-C; under mpirun, mpirun handles the signal.
  const bool stream = !ranks && out.csv.is_open();
  if (stream) out.csv << sweep::csv_header(res) << std::flush;
  auto progress = root ? batch_progress(ranks ? "sweep points (rank 0's)" : "sweep points", indices.size()) : nullptr;
  std::optional<InterruptGuard> guard;
  if (!ranks) guard.emplace();
  res.rows = sweep::run_points(
      spec, indices, catalog, checks, ranks ? nullptr : &g_interrupted,
      [&](const sweep::Row& row) {
        if (stream) out.csv << sweep::csv_row(res, row) << std::flush;
      },
      progress.get());
  guard.reset();
  res.interrupted = !ranks && g_interrupted.load() && res.rows.size() < indices.size();
  if (ranks) {
    const auto texts = mpi->gather(sweep::to_json(res).dump());
    if (!root) return 0;
    std::vector<std::string> names;
    for (std::size_t r = 0; r < texts.size(); ++r) names.push_back("rank " + std::to_string(r));
    return finish(o, out, merge_texts(texts, names), false);
  }
  return finish(o, out, res, stream);
}

}  // namespace

Action add_sweep(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand(
      "sweep", "run a scenario over a grid or list of field overrides; every point a row (docs/sweep.md)");
  auto o = std::make_shared<Opts>();
  cmd->add_option("file", o->file, "sweep JSON file (a base scenario and its axes or points)");
  cmd->add_flag("--json", o->json, "print one JSON document (the points, each with its overrides, status and metrics)");
  cmd->add_option("--csv", o->csv, "also write the rows as CSV to this file, each as it finishes (in point order)");
  cmd->add_option("--svg", o->svg,
                  "write an SVG chart of metric --y against field --x (one series per value of the other fields)");
  cmd->add_option("--x", o->x, "the field on the chart's x axis (a field the sweep sets, with numeric values)");
  cmd->add_option("--y", o->y, "the metric on the chart's y axis (e.g. step_time_s, mfu, ttft_p99_s)");
  cmd->add_option("--report", o->report,
                  "write a self-contained HTML report (the table, and the chart of --x/--y when given) to this file");
  cmd->add_option("--shard", o->shard,
                  "run only shard I of N: the points whose index % N == I (merge the shards' --json with --merge)");
  cmd->add_option("--merge", o->merge,
                  "join the --json outputs of every shard of one sweep into the one-process output (runs nothing)")
      ->expected(1, -1);
  return [o, &g]() -> int { return run_sweep(*o, g); };
}

}  // namespace cs::cli
