#pragma once
#include <string>

#include "tools/cli/commands.hpp"

namespace cs::scenario {
struct Scenario;
}
namespace cs::serving {
struct ServingScenario;
}

namespace cs::cli {

/// The default `--max-work`: work items one simulation may take. Set from measurements so that
/// every shipped scenario, validation case and benchmark (the 16,384-GPU Llama-3.1-405B step
/// estimates 3.2e7) runs untouched, while memory stays under about 8 GB (the 16,384-GPU step
/// takes 3.8 GiB: about 120 bytes per item, docs/testing.md).
inline constexpr double kDefaultMaxWork = 6e7;

/// Refuses a training run whose task graphs (and the one-GPU baseline's) exceed the limit:
/// InfeasibleError (exit 4) naming the estimate, its parts, the limit and the flag.
void check_training_work(const scenario::Scenario& s, bool single_gpu_baseline, const std::string& who,
                         const Globals& g);
/// A serving run's work: each request, each engine step (one per prompt chunk, and one per output
/// token of a full batch), 1/64 of an item per output token, and where a replica spans boxes, its expert
/// all-to-all flows in every step (steps counted at their fewest: one per output token of a full batch, plus one per
/// chunk). An output token is a counter in its batch's step, not a task: measured on 70B at 30,000
/// requests (tools/scripts/bench-work), 28 ns a token and no memory of its own; counting each as an
/// item refused a 1.7 s, 55 MB run (61M tokens). At 1/64 the default limit admits about 4e9 tokens,
/// under two minutes at that rate, while the estimate stays within 4x of the run's memory.
struct ServingWork {
  double requests = 0, output_tokens = 0, prefill_chunks = 0, steps = 0, flows_per_step = 0;
  [[nodiscard]] double total() const { return requests + steps + output_tokens / 64 + steps * flows_per_step; }
};
[[nodiscard]] ServingWork serving_work(const serving::ServingScenario& s);
/// Refuses a serving run whose work (ServingWork) exceeds the limit.
void check_serving_work(const serving::ServingScenario& s, const std::string& who, const Globals& g);
/// Refuses a batch of runs (a sweep's points, a plan's candidates) whose summed work exceeds the
/// limit: the same limit and flag as one run, since the runs share the machine's time.
void check_batch_work(double total, std::size_t runs, const std::string& what, const std::string& detail,
                      const Globals& g);
/// Refuses a collective table whose work exceeds it: 32 items per GPU for the topology (its
/// vertices, links and routes) and, per size, 4 per flow under the flow model (the flow's state
/// and the incremental max-min solver's updates as it starts and ends), 1 analytically. Measured
/// (docs/performance.md, "Work estimates"): all-to-all over 2,048 GPUs 1.7e7 items, 16.6 s,
/// 1.8 GB; all-reduce over 16,384 GPUs 6.6e5 items, 0.5 s, 63 MB.
void check_collective_work(double gpus, double flows_per_size, double sizes, bool flow_model, const Globals& g);
/// That estimate itself (check_collective_work's; validate-published sums it over its cases).
[[nodiscard]] double collective_work(double gpus, double flows_per_size, double sizes, bool flow_model);
/// Refuses an import of more result rows than the limit.
void check_import_work(double rows, const std::string& file, const Globals& g);

}  // namespace cs::cli
