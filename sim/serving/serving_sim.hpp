#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/network/topology.hpp"
#include "sim/scenario/run_cost.hpp"
#include "sim/scenario/serving_scenario.hpp"

namespace cs::serving {

struct ServingLog;

struct Percentiles {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  /// The samples summarised. 0: undefined (TPOT when no request generated two tokens), printed as
  /// "-" and null, never as 0 ms.
  std::size_t count = 0;
};

/// Per-GPU memory of one serving replica (bytes).
struct ServingMemory {
  double weights = 0, activations = 0, other = 0, kv_cache = 0, total = 0, capacity = 0;
};

/// A step of one replica, for the trace.
struct StepSpan {
  int replica = 0;
  double start = 0, end = 0;
  double tokens = 0, sequences = 0;
};
/// A request's life, for the trace.
struct RequestSpan {
  int id = 0;
  double arrival = 0, first_token = 0, finish = 0;
  int replica = 0;
};

/// Everything `infer` reports.
struct ServingResults {
  std::string name, model, cluster, profile, profile_origin, weights, kv_dtype, scheduler;
  /// fp8 weights: "static" or "dynamic" activation scales ("" for other formats).
  std::string activation_scales;
  int gpus = 0, tp = 1, replicas = 1;
  bool dp_attention = false;  ///< attention data-parallel over each replica's TP GPUs
  double mtp_acceptance = 0;  ///< MTP speculative decoding's draft acceptance (0: off)
  /// Disaggregated serving: each pool's replicas and their TP, PP and EP.
  struct Pool {
    int replicas = 0, tp = 1, pp = 1, ep = 1;
  };
  struct Pools {
    Pool prefill, decode;
  };
  std::optional<Pools> pools;
  /// A mixed fleet's second box kind: its cluster, profile, replicas (each inside one box), TP,
  /// boxes, and the requests its replicas served.
  struct Mix {
    std::string cluster, profile;
    std::string link;  ///< disaggregated: the fabric the KV caches cross to the second kind's boxes
    int replicas = 0, tp = 1, boxes = 0;
    std::int64_t requests = 0;
  };
  std::optional<Mix> mix;
  std::int64_t own_kind_requests = 0;  ///< mixed fleets: requests served by the scenario's own kind
  int nodes = 1;                       ///< copies of the cluster
  std::string fabric;                  ///< joining them ("" on one node)
  std::int64_t requests = 0, input_tokens = 0, output_tokens = 0, steps = 0, preemptions = 0;
  double makespan_s = 0;
  Percentiles ttft, tpot, e2e;
  double output_tokens_per_s = 0, output_tokens_per_s_per_gpu = 0, input_tokens_per_s = 0, requests_per_s = 0;
  std::optional<double> goodput_requests_per_s;
  /// Throughput over the steady state: between the instants the first 10% and 90% of the requests
  /// had finished (times from the first arrival), so the ramp-up and the drain are left out. Absent
  /// under 20 requests, when those instants coincide, or when the window holds fewer than twice as
  /// many completions as requests were in service at the peak (a wave or two has no steady state).
  struct SteadyState {
    double from_s = 0, to_s = 0;
    double output_tokens_per_s = 0, output_tokens_per_s_per_gpu = 0, requests_per_s = 0;
    /// Requests finishing in the window within the objectives, per second (when there are any).
    std::optional<double> goodput_requests_per_s;
  };
  std::optional<SteadyState> steady;
  /// What a reader should know about how the workload shaped the numbers (e.g. lockstep clients).
  std::vector<std::string> warnings;
  std::int64_t kv_blocks = 0;
  std::int64_t max_concurrency = 0;
  std::int64_t kv_concurrency = 0;  ///< sequences of the mean length the KV cache holds (all replicas)
  /// The engine limits in force (defaults included), so a reader sees what bounded the run.
  struct Limits {
    std::int64_t max_batch = 0, max_tokens = 0, chunked_prefill = 0, block_size = 0;
    double kv_fraction = 0;
    KvMemoryRule kv_rule = KvMemoryRule::kOfFree;
    /// TP all-reduces as the engine's own kernels (ServingScenario::custom_allreduce), and whether
    /// the profile's tables time them (else NCCL's times stand).
    bool custom_allreduce = false, custom_allreduce_tabled = false;
  } limits;
  /// The engine preset the limits came from ("": clustersim's own defaults).
  std::string engine;
  /// Steps run as CUDA graphs and eagerly (the graph policy of the engine: ServingScenario::graphs).
  std::int64_t graphed_steps = 0, eager_steps = 0;
  /// The engine's captured graphs: the largest batch and whether batches are padded up to a size.
  std::int64_t graph_largest = 0;
  bool graph_padding = false;
  /// When requests share prompt prefixes: the prompt tokens a cached prefix spared (every
  /// admission, re-admissions after preemption too) and those the steps computed, the cached
  /// prefixes evicted, and how the engine reuses them (ServingScenario::prefix_reuse).
  struct PrefixCache {
    bool enabled = true, per_token = false;
    std::int64_t reused_tokens = 0, computed_tokens = 0, evictions = 0;
    /// The share of the prompt tokens admitted that the cache served.
    [[nodiscard]] double hit_rate() const {
      const auto all = reused_tokens + computed_tokens;
      return all > 0 ? static_cast<double>(reused_tokens) / static_cast<double>(all) : 0.0;
    }
  };
  std::optional<PrefixCache> prefix_cache;
  bool fits = true;
  ServingMemory memory;
  double kv_utilisation_mean = 0, kv_utilisation_max = 0;
  /// MoE models: the routing, and under EP the most loaded GPU's routed pairs over the mean GPU's
  /// (it sets the pace of each MoE layer), averaged over the steps and at its worst.
  struct Moe {
    std::string routing;
    int ep = 1;
    double load_imbalance_mean = 1, load_imbalance_max = 1;
  };
  std::optional<Moe> moe;
  /// Seconds the collectives of the stages' programs took, per label in a fixed order (TP
  /// all-reduce, all-gather, reduce-scatter; DeepEP's dispatch and combine all-to-alls), summed
  /// over every layer, step, stage and replica; labels that never ran are left out.
  std::vector<std::pair<std::string, double>> collectives_s;
  /// Shares of the run's compute time by where each kernel's time came from (calib::KernelSource
  /// order: measured table hit, interpolated, extrapolated, analytic), over every layer each step
  /// ran; they sum to 1.
  std::array<double, 4> compute_sources{};
  /// Shares of the same time by what each kernel does (models::KernelClass order); they sum to 1.
  std::array<double, models::kKernelClasses> compute_classes{};
  /// The run's price on the scenario's offer over its makespan.
  using Cost = scenario::RunCost;
  std::optional<Cost> cost;
  std::uint64_t events = 0;
  double wall_s = 0;
  std::vector<StepSpan> step_spans;
  std::vector<RequestSpan> request_spans;
};

/// The scheduler's name as scenarios and reports spell it (continuous, static, prefill_first, no_evict).
[[nodiscard]] const char* scheduler_name(Scheduler s);

/// The scenario's machine: the GPUs used of one node, or every GPU of its nodes joined by its fabric.
[[nodiscard]] net::Topology serving_topology(const ServingScenario& s);

/// Expert copies per GPU under EP with redundant experts (0: experts / EP, no copies).
[[nodiscard]] int expert_slots(const ServingScenario& s);

/// The memory of one replica's GPU and the KV blocks it leaves; does not simulate.
[[nodiscard]] ServingMemory serving_memory(const ServingScenario& s, std::int64_t* kv_blocks);

struct ServingRunOptions {
  bool record_trace = false;  ///< keep every step's and request's span
  /// The machine, when the caller holds it (study's TopologyCache shares one per cluster shape
  /// across a batch); null: built for this run (serving_topology).
  std::shared_ptr<const net::Topology> topology;
  /// Let a stage whose TP collectives can share no link with other traffic reuse their first
  /// flow-model times (identical results, one task per stage and step); false: every collective
  /// through the flow model (for tests that check the two agree).
  bool fast_path = true;
  /// Under `allow_oom`, when the longest request does not fit: its KV blocks. A pool (a GPU's under
  /// attention-DP) with fewer is given max batch of them, as if the GPU had the memory, so the run
  /// completes and reports `fits` false (0: every pool keeps its memory's count). Set by
  /// simulate_serving.
  std::int64_t oom_longest_blocks = 0;
  /// A mixed fleet: each box kind's weight behind the router, the scenario's own then the second
  /// kind's (its replicas' throughput with every request queued, measured by simulating each kind
  /// alone). Set by simulate_serving; empty: alike replicas.
  std::vector<double> kind_weights;
  /// Called as each request finishes (for the CLI's progress on long runs; from the run's thread).
  std::function<void()> on_request_done;
};

/// Runs the workload through the replicas' schedulers as an open workload on the executor (the
/// same engine, integer clock and flow model as a training step): each batch's kernels, TP
/// collectives and pipeline sends are tasks added when the scheduler plans it, so replicas,
/// pipeline stages and disaggregated KV transfers that share links contend. docs/serving.md.
/// Returns the run's log; report::serving_results makes its figures. Callers go through
/// study::run_serving.
[[nodiscard]] ServingLog simulate_serving(const ServingScenario& s, const ServingRunOptions& options);
[[nodiscard]] ServingLog simulate_serving(const ServingScenario& s, bool record_trace = false);

}  // namespace cs::serving
