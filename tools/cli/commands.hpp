#pragma once
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

namespace cs::config {
struct JsonDoc;
}
namespace cs::study {
class Progress;
}

namespace cs::cli {

struct TraceFlags;

/// Options every subcommand shares.
struct Globals {
  std::string data_dir;  ///< repository/install folder with models/, calibration/, scenarios/
  /// `--max-work`: the most work items (tasks, flows, request tokens, vertices; see work_bounds.hpp)
  /// one simulation may take before it is refused with exit 4.
  double max_work = 0;
};

/// A finite number above `low` (or at least `low` when `inclusive`): CLI11's PositiveNumber and
/// NonNegativeNumber let "nan" through (every comparison with it is false) and "inf" too, and a run
/// then refuses everything against a limit of nan.
inline CLI::Validator finite_number(double low, bool inclusive) {
  const std::string what = inclusive ? "a finite number >= " + CLI::detail::to_string(low)
                                     : "a finite number > " + CLI::detail::to_string(low);
  return CLI::Validator(
      [low, inclusive, what](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool whole = end != text.c_str() && *end == '\0';
        if (whole && std::isfinite(v) && (inclusive ? v >= low : v > low)) return {};
        return "expected " + what + "; got \"" + text + "\"";
      },
      what);
}
inline CLI::Validator positive_number() { return finite_number(0, false); }
inline CLI::Validator non_negative_number() { return finite_number(0, true); }

/// Each subcommand registers its options and returns the action to run when it was chosen; the
/// action returns the process exit code (errors are thrown and mapped in main.cpp).
using Action = std::function<int()>;
Action add_run(CLI::App& app, const Globals& g);
Action add_train(CLI::App& app, const Globals& g);
Action add_validate(CLI::App& app, const Globals& g);
Action add_collective(CLI::App& app, const Globals& g);
Action add_list(CLI::App& app, const Globals& g);
Action add_validate_published(CLI::App& app, const Globals& g);
Action add_import(CLI::App& app, const Globals& g);
Action add_calibrate(CLI::App& app, const Globals& g);
Action add_inspect(CLI::App& app, const Globals& g);
Action add_infer(CLI::App& app, const Globals& g);
Action add_infer_sweep(CLI::App& app, const Globals& g);
/// Progress for a batch of `n` runs on stderr (n >= 2): a bar on a terminal; plain lines when
/// stderr is not a terminal only under `--progress`; else none.
[[nodiscard]] std::unique_ptr<study::Progress> batch_progress(const std::string& what, std::size_t n);
/// The same for one long run counted in `units` (requests served): the caller starts it.
[[nodiscard]] std::unique_ptr<study::Progress> run_progress(const std::string& what, std::size_t units);
/// `--progress`: plain progress lines on stderr even when it is not a terminal.
void set_progress_lines(bool on);
Action add_describe(CLI::App& app, const Globals& g);
Action add_plan(CLI::App& app, const Globals& g);
Action add_claims(CLI::App& app, const Globals& g);
Action add_sweep(CLI::App& app, const Globals& g);
Action add_kernels(CLI::App& app, const Globals& g);
/// Runs an inference scenario document (kind "infer"); shared by `infer` and `run`.
/// `report`: also write the HTML report there (empty: none).
int run_serving_document(const config::JsonDoc& doc, const Globals& g, bool json, const TraceFlags& trace,
                         const std::string& report = "");
/// Runs (or with `validate_only` checks) a collective document (kind "collective", as the seed
/// claims use): the collective's time on each variant's box, as `clustersim collective` times it.
int run_collective_document(const config::JsonDoc& doc, const Globals& g, bool json, bool validate_only);
/// `validate` for an inference scenario: parse, resolve, size the KV cache; no simulation.
int validate_serving_document(const config::JsonDoc& doc, const Globals& g);

}  // namespace cs::cli
