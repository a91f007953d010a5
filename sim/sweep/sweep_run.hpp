#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/catalog.hpp"
#include "sim/sweep/sweep_file.hpp"

namespace cs::scenario {
struct Scenario;
}
namespace cs::serving {
struct ServingScenario;
}
namespace cs::study {
class Progress;
}

namespace cs::sweep {

/// What became of a point: it ran; it is well formed but cannot run (out of memory, a plan that does
/// not divide, too large to simulate); or its scenario is not valid (an unknown id, a combination
/// the parser refuses).
enum class Status { kOk, kInfeasible, kInvalid };
[[nodiscard]] const char* status_name(Status s);

/// One row of a sweep's results. Metrics are in the order of `metric_names(kind)`; empty unless ok.
struct Row {
  std::size_t index = 0;
  std::vector<Override> overrides;
  Status status = Status::kOk;
  std::string reason;  ///< why the point is infeasible or invalid (empty when ok)
  std::vector<double> metrics;
};

/// The metrics of a row, by kind: training step_time_s, mfu, tokens_per_s, memory_per_gpu_gib;
/// serving ttft_p50_s, ttft_p99_s, tpot_p50_s, tpot_p99_s, output_tokens_per_s, requests_per_s.
[[nodiscard]] const std::vector<std::string>& metric_names(config::ScenarioKind kind);

/// Checks a run's size before it allocates (the CLI's `--max-work`); throws InfeasibleError.
struct WorkChecks {
  std::function<void(const scenario::Scenario&, const std::string& who)> training;
  std::function<void(const serving::ServingScenario&, const std::string& who)> serving;
};

/// The work of each point (the CLI's estimates: work_bounds.hpp), for the bound on the sweep as a
/// whole.
struct WorkEstimates {
  std::function<double(const scenario::Scenario&)> training;
  std::function<double(const serving::ServingScenario&)> serving;
};
/// The summed work of the points at `indices` that resolve and fit (the others cost nothing: they
/// become invalid or infeasible rows), and the largest one's index.
struct SweepWork {
  double total = 0;
  double largest = 0;
  std::size_t largest_index = 0;
};
[[nodiscard]] SweepWork sweep_work(const SweepSpec& spec, const std::vector<std::size_t>& indices,
                                   const config::Catalog& catalog, const WorkEstimates& estimates);

/// Runs the points at `indices` (positions in spec.points) on the workers through study::run_batch.
/// Each finished row is handed to `on_row` in the order of `indices`, whatever order they finish in
/// (later rows wait in a buffer), from whichever thread finishes the row that frees them; calls are
/// serialised. Once `stop` is set, no further point starts; points already running finish. Returns
/// the rows handed over, in order; when stopped, rows finished after a gap are handed over too, in
/// order, once the running points are done.
std::vector<Row> run_points(const SweepSpec& spec, const std::vector<std::size_t>& indices,
                            const config::Catalog& catalog, const WorkChecks& checks, const std::atomic<bool>* stop,
                            const std::function<void(const Row&)>& on_row, study::Progress* progress);

/// Which points shard `shard` of `count` runs: index % count == shard (round robin, so neighbouring
/// points, which cost about the same, spread over the shards).
[[nodiscard]] std::vector<std::size_t> shard_indices(std::size_t points, std::size_t shard, std::size_t count);

}  // namespace cs::sweep
