#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include <memory>

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
/// Progress for a batch of `n` runs on stderr: a bar on a terminal (n >= 2); plain lines when
/// stderr is not a terminal and the batch is long enough to be worth it (n >= 4); else none.
[[nodiscard]] std::unique_ptr<study::Progress> batch_progress(const std::string& what, std::size_t n);
Action add_describe(CLI::App& app, const Globals& g);
Action add_plan(CLI::App& app, const Globals& g);
Action add_claims(CLI::App& app, const Globals& g);
Action add_sweep(CLI::App& app, const Globals& g);
Action add_kernels(CLI::App& app, const Globals& g);
/// Runs an inference scenario document (kind "infer"); shared by `infer` and `run`.
/// `report`: also write the HTML report there (empty: none).
int run_serving_document(const config::JsonDoc& doc, const Globals& g, bool json, const TraceFlags& trace,
                         const std::string& report = "");
/// `validate` for an inference scenario: parse, resolve, size the KV cache; no simulation.
int validate_serving_document(const config::JsonDoc& doc, const Globals& g);

}  // namespace cs::cli
