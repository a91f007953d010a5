#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/sizing/training_search.hpp"

namespace cs::sizing {

/// A serving job: Poisson arrivals at `rate` requests/s of `isl` prompt and `osl` output tokens,
/// with latency objectives on a percentile each (p90 unless the job says p50 or p99).
struct ServingJob {
  double rate = 0;
  std::int64_t isl = 0, osl = 0;
  double slo_ttft_s = 0;  ///< required: a box that cannot keep up shows as a growing TTFT
  double slo_tpot_s = 0;  ///< 0: none
  int slo_ttft_percentile = 90, slo_tpot_percentile = 90;  ///< 50, 90 or 99
};
/// A run's figure at one of the percentiles it reports (50, 90 or 99).
[[nodiscard]] double at_percentile(const serving::Percentiles& p, int percentile);

/// A mixed fleet's second box kind (docs/plan.md, "Mixed fleets"): per unit, `boxes` boxes of another
/// offer whose `replicas` replicas of TP `tp` serve beside the plan's own behind the same router, or,
/// when the plan has prefill replicas, run its decode pool (the KV caches crossing the link the
/// caller's MakeServing names).
struct SecondKind {
  std::size_t offer = 0;
  int boxes = 0;  ///< per unit
  int tp = 1;
  int replicas = 0;  ///< per unit (they fill their boxes)
  bool operator==(const SecondKind&) const = default;
};

/// One serving plan: `nodes` boxes in units of `span` boxes; each unit runs `replicas` replicas of
/// TP `tp` x PP `pp` (EP `ep` for MoE), behind a load balancer that gives each unit RATE / units.
/// A unit is one box unless one box cannot hold a replica: then a replica's pipeline stages span
/// `span` boxes joined by the offer's fabric.
struct ServingChoice {
  int nodes = 1;
  int tp = 1;
  int replicas = 1;  ///< per unit
  int pp = 1;
  int ep = 1;
  int span = 1;                  ///< boxes per unit
  bool dp_attention = false;     ///< attention data-parallel over each replica's TP GPUs (MoE models)
  std::int64_t max_batch = 256;  ///< the engine's most sequences per step (docs/serving.md)
  /// Disaggregation: of a unit's `replicas`, this many run prompts only and the rest decode only
  /// (docs/serving.md); 0: every replica does both.
  int prefill_replicas = 0;
  /// The engine's most tokens per step, with chunked prefill at the same size; 0: the engine's
  /// default (8192, no chunking).
  std::int64_t max_tokens = 0;
  bool deepep = false;  ///< under attention-DP: the MoE exchange as DeepEP's dispatch and combine
  /// A mixed fleet: the second kind's boxes beside these. Colocated, the fleet is one unit (`span` =
  /// `nodes`, `replicas` all of the first kind's), simulated whole at the job's rate; with
  /// `prefill_replicas` (all of a unit's first-kind replicas), each unit is one box of prefill and
  /// the second kind's boxes of decode, and `replicas` counts both pools.
  std::optional<SecondKind> second;
  bool operator==(const ServingChoice&) const = default;
  [[nodiscard]] int units() const { return nodes / span; }
};
[[nodiscard]] std::string serving_plan_text(const ServingChoice& c);

/// One unit's serving scenario for a choice (`span` boxes, over the offer's fabric when more than
/// one), at `rate_per_unit` requests/s with `requests` requests (the CLI resolves it through
/// sim/config). Throws InputError or InfeasibleError for a plan the model rejects (heads that TP
/// does not divide, too large to simulate).
using MakeServing = std::function<serving::ServingScenario(std::size_t offer, const ServingChoice&,
                                                           double rate_per_unit, std::int64_t requests)>;

/// The runner of a batch of jobs whose results travel as text (ServingOptions::run_texts).
using RunTexts = std::function<std::vector<std::string>(
    std::size_t n, const std::function<std::string(std::size_t)>& job, study::Progress* progress)>;

/// What the ranking minimises among the plans that meet the objectives: cost per hour (then TTFT),
/// GPUs (then cost), or latency (TTFT at the objective's percentile, then cost).
enum class Objective { kCost, kGpus, kLatency };

struct ServingOptions {
  double budget = 0;  ///< per hour of serving; 0: none
  Objective objective = Objective::kCost;
  bool per_offer = false;  ///< report the best candidate of each offer instead of the `top` overall
  int top = 5;
  int max_pp = 8;  ///< pipeline stages tried inside a box: 1, 2, 4, ... up to this
  /// EP = TP is tried beside EP 1 (experts whole on each GPU, or split TP ways), each with and
  /// without attention data parallelism.
  bool moe = false;
  int experts = 0;  ///< routed experts (EP must divide them)
  /// The engines' max batch values tried for every shape: the default 256 (vLLM's max_num_seqs),
  /// and a larger one for boxes whose KV cache holds more sequences than that.
  std::vector<std::int64_t> max_batches{256, 1024};
  /// Variants searched after the shapes, of each offer's best `variant_seeds` shapes (those with
  /// the cheapest plans, or, where none met the objectives, the nearest misses), each bounded by
  /// its seed's boxes: disaggregated prefill and decode pools at these shares of the replicas
  /// (the ones that give whole pools), and, with a TPOT objective, a smaller token budget per step
  /// with chunked prefill (`small_max_tokens`), which bounds how much prompt work a decode step carries;
  /// under attention-DP with EP = TP, DeepEP's exchange (`--moe-a2a deepep`).
  int variant_seeds = 2;
  std::vector<double> prefill_shares{0.25, 0.5, 0.75};
  std::int64_t small_max_tokens = 2048;
  /// Runs job(i) for every i in [0, n) and returns each result's text, on every rank. Null: the
  /// search runs its batches on this process's workers, with no text. `clustersim plan` under mpirun
  /// splits them among the ranks (each rank's simulations remembered on that rank only), so every
  /// rank goes on with the same search and rank 0's output is a one-process run's.
  RunTexts run_texts;
  /// Mixed fleets of two offers' boxes (docs/plan.md): searched when the objective is cost or GPUs.
  bool mixed = true;
  /// Per-box capacity bisection steps of the mixed phase: each narrows the rate one box of an offer's
  /// best shape sustains within the objectives to half its bracket (rate / n met, rate / (n - 1) not).
  int capacity_steps = 3;
  /// Prefill pools on one offer's boxes and decode pools on another's, over the link the caller's
  /// MakeServing joins them with (docs/plan.md): searched when the objective is cost or GPUs.
  bool mixed_pools = true;
  /// Decode boxes per unit tried beside each unit's one prefill box.
  std::vector<int> decode_boxes{1, 2};
  study::Progress* progress = nullptr;
};

struct ServingCandidate {
  std::size_t offer_index = 0;
  std::string offer;
  ServingChoice choice;
  int gpus = 0;
  double ttft_slo_s = 0, tpot_slo_s = 0;        ///< at the objectives' percentiles: what the search judges and ranks by
  serving::Percentiles ttft, tpot, e2e;         ///< the run's p50, p90 and p99 (as infer reports them)
  std::int64_t requests_simulated = 0;          ///< per unit, at its rate: long enough for steady state (docs/plan.md)
  std::optional<double> steady_requests_per_s;  ///< per unit, completed over the steady window
  double output_tokens_per_s_per_gpu = 0;
  double memory_per_gpu_gib = 0, capacity_gib = 0;
  std::int64_t max_batch = 0, max_tokens = 0, chunked_prefill = 0;  ///< the engine limits in force
  double kv_utilisation_max = 0;
  double cost_per_hour = 0;  ///< the cheapest term per hour of continuous serving
  std::string cost_terms;
  double cost_per_hour_max = 0;  ///< the same term at the top of the offer's quoted range (0: a single price)
  double cost_per_mtok = 0;      ///< per million output tokens at the job's rate
  std::string currency;
  std::string bottleneck;
  /// A mixed fleet: the second offer, its GPUs (in `gpus` too) and its share of `cost_per_hour`.
  std::string second_offer;
  int second_gpus = 0;
  double second_cost_per_hour = 0;
};

struct ServingResult {
  std::vector<ServingCandidate> candidates;  ///< by cost per hour, then TTFT
  std::vector<Rejection> rejected;
  std::size_t plans = 0, invalid = 0, too_big = 0, simulated = 0;
  std::size_t variants = 0;  ///< of those plans, the variants (disaggregation, max tokens) of the best shapes
  /// The mixed-fleet phase: offer pairs considered, fleets it simulated whole, and those that met
  /// the objectives cheaper than either kind alone (listed beside the single-kind candidates).
  std::size_t mixed_pairs = 0, mixed_simulated = 0, mixed_found = 0;
  /// Pools on two offers: (prefill offer, decode offer, decode boxes) tried, and those that met the
  /// objectives cheaper than either kind alone.
  std::size_t pool_pairs = 0, pools_found = 0;
};

/// Offers x shapes (TP x PP x EP per replica, attention-DP or not for MoE; replicas fill the box) x boxes: for each
/// (offer, shape), the fewest boxes whose p90 TTFT (and TPOT) meet the objectives, found by doubling then bisection
/// (docs/plan.md). When no shape of an offer fits one box, replicas whose stages span 2, 4, ... boxes (one TP-wide
/// stage per box) are tried, over the offer's fabric. Then the variants of each offer's best shapes
/// (ServingOptions::variant_seeds), by bisection up to their seed's boxes.
[[nodiscard]] ServingResult search_serving(const std::vector<OfferSpace>& offers, const ServingJob& job,
                                           const MakeServing& make, const ServingOptions& options);

}  // namespace cs::sizing
