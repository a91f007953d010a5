#pragma once
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

/// The nearest-rank percentile `p` (0-100) of `v` (0 when empty).
[[nodiscard]] double percentile(std::vector<double> v, double p);
/// Mean, p50, p90 and p99 of `v`, and how many samples.
[[nodiscard]] Percentiles summarise(const std::vector<double>& v);

/// What a finished run leaves for its metrics: every request's times, when output tokens came, and
/// the run's counters. serving_results turns it into ServingResults without simulating.
struct ServingLog {
  std::vector<Request> requests;
  std::vector<std::pair<SimTime, std::int64_t>> tokens_out;  ///< (step end, output tokens it produced)
  std::int64_t peak_in_service = 0;  ///< the most requests in batches at once, summed over replicas
  int gpus = 1;
  int replicas = 1;
  std::optional<ServingResults::Pools> pools;  ///< disaggregated: each pool's replicas and shape
  std::int64_t steps = 0, preemptions = 0, graphed_steps = 0, eager_steps = 0;
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
  std::vector<std::pair<std::string, double>> collectives_s;  ///< seconds per stage-collective label
  std::uint64_t events = 0;
  std::vector<StepSpan> step_spans;
};

/// Every figure of a run from its log: requests, percentiles, throughput, steady window, limits,
/// KV use, MoE balance, compute sources, collectives, cost (the offer's), warnings. `spans`: keep
/// request spans for the trace.
[[nodiscard]] ServingResults serving_results(const ServingScenario& s, ServingLog&& log, bool spans);

/// Throughput between the instants 10% and 90% of the requests had finished (times from `first`,
/// the first arrival), when that window holds at least twice as many completions as requests
/// were ever in service (ServingResults::steady). With `met` (per request of the log: whether it
/// met the objectives), the window's goodput too.
[[nodiscard]] std::optional<ServingResults::SteadyState> steady_state(const ServingLog& log, SimTime first,
                                                                      const std::vector<char>* met = nullptr);

/// Fills the request-level figures of `r` from the log: token counts, makespan, TTFT, TPOT and
/// end-to-end percentiles, throughput over the run and its steady window, goodput under the
/// objectives, and (when `spans`) up to 5,000 request spans for the trace.
void request_metrics(const ServingLog& log, const std::optional<double>& slo_ttft_s,
                     const std::optional<double>& slo_tpot_s, bool spans, ServingResults& r);

}  // namespace cs::serving
