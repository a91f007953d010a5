#pragma once
// What a serving run returns: every request's times, when output tokens came, and the run's
// counters. The figures (percentiles, throughput, steady window, goodput, cost) are computed from it
// in sim/report (report::serving_results), without simulating.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/serving/kv_cache.hpp"
#include "sim/serving/request.hpp"
#include "sim/serving/serving_sim.hpp"

namespace cs::serving {

/// What a finished run leaves for its metrics: every request's times, when output tokens came, and
/// the run's counters. report::serving_results turns it into ServingResults without simulating.
struct ServingLog {
  std::vector<Request> requests;
  std::vector<std::pair<SimTime, std::int64_t>> tokens_out;  ///< (step end, output tokens it produced)
  std::int64_t peak_in_service = 0;  ///< the most requests in batches at once, summed over replicas
  int gpus = 1;
  int replicas = 1;
  std::optional<ServingResults::Pools> pools;  ///< disaggregated: each pool's replicas and shape
  std::int64_t steps = 0, preemptions = 0, graphed_steps = 0, eager_steps = 0;
  /// Prompt tokens the steps computed (a cached prefix's are not), and cached prefixes evicted.
  std::int64_t prefill_tokens = 0, prefix_evictions = 0;
  ServingMemory memory;        ///< the (decode) pool's GPU
  std::int64_t kv_blocks = 0;  ///< its own count (also under allow_oom)
  bool oom = false;            ///< a pool was given the KV blocks its memory lacks (allow_oom)
  KvCache decode_pool;         ///< the last replica's pool: how many blocks a sequence holds
  double kv_area = 0;          ///< sum over replicas of KV share in use x seconds (per stage)
  double kv_max = 0;
  int moe_ep = 1;  ///< the (decode) pool's EP
  double load_sum = 0, load_max = 0;
  std::int64_t load_steps = 0;
  std::array<double, 4> sources{};                            ///< compute seconds by calib::KernelSource
  std::array<double, models::kKernelClasses> classes{};       ///< and by models::KernelClass
  std::vector<std::pair<std::string, double>> collectives_s;  ///< seconds per stage-collective label
  std::uint64_t events = 0;
  std::vector<StepSpan> step_spans;
  /// The sequence cap the run used: the scenario's, or SGLang's from its KV pool (resolved by
  /// simulate_serving when the scenario says max_batch_from_kv_pool).
  std::int64_t max_batch = 0;
  bool spans = false;  ///< the run kept its spans for the trace (ServingRunOptions::record_trace)
  double wall_s = 0;   ///< the run's wall-clock seconds

  /// From the first arrival to the last finish (0 without requests).
  [[nodiscard]] SimTime makespan() const;
  /// Output tokens over the makespan (the report's figure; a mixed fleet's kinds are weighed by it).
  [[nodiscard]] double output_tokens_per_s() const;
};

}  // namespace cs::serving
