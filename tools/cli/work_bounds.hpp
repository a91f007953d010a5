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
/// Refuses a serving run whose requests x output tokens (each token is a step's worth of work)
/// exceed the limit.
void check_serving_work(const serving::ServingScenario& s, const std::string& who, const Globals& g);
/// Refuses a collective table whose flow updates (flows x max-min rounds) over all sizes, plus the
/// topology's GPUs, exceed it.
void check_collective_work(double gpus, double flows_per_size, double sizes, const Globals& g);
/// Refuses an import of more result rows than the limit.
void check_import_work(double rows, const std::string& file, const Globals& g);

}  // namespace cs::cli
