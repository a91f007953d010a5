#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/catalog.hpp"
#include "sim/report/train_results.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/study/batch.hpp"

namespace cs::claims {

/// What a claim needs of a scenario file: its variants simulated, or only sized (memory per GPU:
/// does the plan fit), which costs no simulation.
enum class Mode { kRun, kSize };
struct Input {
  std::string path;  ///< relative to the data folder, as the report shows it
  Mode mode = Mode::kRun;
};

/// One variant of one scenario file (training, serving or collective), sized and, when asked and
/// it fits, simulated.
struct Outcome {
  std::string file, variant, kind;  ///< kind: train, infer or collective
  bool fits = true;                 ///< training: memory per GPU within capacity; serving: room for KV cache
  double memory_gib = 0;            ///< per GPU: training total; serving weights + activations + runtime
  double capacity_gib = 0;
  double kv_cache_gib = 0;  ///< serving: what is left for the KV cache
  double fabric_GBps = 0;   ///< training across nodes: achieved NIC bandwidth per node (GB/s)
  std::string problem;      ///< why it was not simulated (infeasible), empty otherwise
  std::optional<report::TrainResults> train;
  std::optional<serving::ServingResults> serve;
  double busbw_GBps = 0, algbw_GBps = 0;  ///< collective
  std::string algorithm;
};

/// Every variant of the given scenario files, sized and simulated as independent runs of one
/// study::run_batch (the same bytes for any thread count).
class Outcomes {
 public:
  [[nodiscard]] static Outcomes run(const config::Catalog& catalog, const std::vector<Input>& inputs,
                                    study::Progress* progress);
  /// The outcome of `variant` of `file` ("" when the file has no variants); a missing one is our bug.
  [[nodiscard]] const Outcome& at(const std::string& file, const std::string& variant = "") const;
  /// A simulated training or serving variant (our bug if it was not simulated).
  [[nodiscard]] const report::TrainResults& train(const std::string& file, const std::string& variant) const;
  [[nodiscard]] const serving::ServingResults& serve(const std::string& file, const std::string& variant) const;

 private:
  std::map<std::pair<std::string, std::string>, Outcome> by_key_;
};

}  // namespace cs::claims
