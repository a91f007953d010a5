#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/parallel/parallel_plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace cs::study {
class Progress;
}

namespace cs::sizing {

/// A training job: tokens to train on, and an optional deadline.
struct TrainingJob {
  double tokens = 0;
  double deadline_s = 0;  ///< 0: none
};

/// One training plan on one offer's boxes (`nodes` whole boxes).
struct Choice {
  int nodes = 1;
  int tp = 1, pp = 1, dp = 1, ep = 1, zero = 0;
  int vpp = 1;  ///< model chunks per pipeline stage (interleaved 1F1B when > 1)
  bool sp = false;
  plan::Recompute recompute = plan::Recompute::kNone;
  /// Selective recompute's modules (models::RecomputeModules bits): the cheapest in compute that
  /// makes the plan fit (study::memory_options).
  std::uint8_t recompute_modules = 0;
  std::int64_t micro_batch = 1;
  int cp = 1;  ///< context parallelism: the sequence split over CP GPUs (ring attention)
  bool operator==(const Choice&) const = default;
};
/// "TP2 PP1 DP4 ZeRO-1 SP mb1" (+ " VPP2" after PP when interleaved, " CP2" before DP, " EP4" for MoE,
/// " recompute full" or " recompute layernorm,moe_act").
[[nodiscard]] std::string plan_text(const Choice& c);

/// An offer as the search sees it: its boxes, the node counts to try, the fabric that joins them.
struct OfferSpace {
  scenario::Offer offer;
  int gpus_per_node = 0;
  std::vector<int> node_counts;  ///< ascending
  std::string fabric;            ///< the fabric of multi-node candidates ("" when only one box is searched)
  std::string unusable;          ///< non-empty: the offer cannot be searched, and this says why
};

/// Builds the scenario of a choice on an offer (the CLI resolves through sim/config, with every
/// check `train` makes). Throws InfeasibleError or InputError for a plan the model or the machine
/// rejects (sizes that do not divide, too large to simulate); the search counts those as invalid.
using MakeScenario = std::function<scenario::Scenario(std::size_t offer, const Choice&)>;

/// What the search keeps of one simulated plan.
struct Simulated {
  double step_time_s = 0, mfu = 0;
  std::string bottleneck;
  double bottleneck_share = 0;
};
/// Runs sim(i) for every i in [0, n) into out[i] (n slots), counting them on `progress` (may be
/// null). The default runs them on this process's workers (study::run_batch); `clustersim plan`
/// under mpirun splits them among the ranks and gives every rank every result, so each rank goes on
/// with the same search and rank 0's output is a one-process run's.
using RunSimulations = std::function<void(std::size_t n, const std::function<Simulated(std::size_t)>& sim,
                                          std::vector<Simulated>& out, study::Progress* progress)>;

struct Options {
  double budget = 0;       ///< 0: none; in each offer's own currency
  int top = 10;            ///< candidates reported; the flow model re-simulates each of them
  bool per_offer = false;  ///< report the best candidate of each offer instead of the `top` overall
  std::vector<std::int64_t> micro_batches{1, 2, 4};
  /// Model chunks per stage tried when PP > 1 (the interleaved schedule shrinks the bubble by VPP,
  /// at the cost of VPP x the pipeline sends and more activations in flight on the first stage).
  std::vector<int> vpps{1, 2, 4};
  /// Context parallelism tried (1, 2, 4 ... up to max_cp) when the sequence is at least
  /// cp_min_seq tokens: below that Megatron's recipes do not use it (attention is a small share).
  int max_cp = 4;
  std::int64_t cp_min_seq = 8192;
  int max_pp = 8;  ///< pipeline stages tried: 1, 2, 4, ... up to this
  int experts =
      0;  ///< the model's routed experts (0: dense, EP stays 1); EP tries the divisors of TP x DP that divide them
  std::int64_t global_batch = 0;  ///< sequences per step (the candidates' micro-batches must divide it per replica)
  std::int64_t seq = 0;
  /// A plan fits when its modelled memory per GPU times (1 + this) is within the GPU's memory: the
  /// caching allocator reserves more than the peak it hands out. Default: the largest excess of
  /// reserved over allocated peak in the measured Megatron-LM runs on 8x B200 (validation S- cases,
  /// shared/validation/published.json: 2.8% to 6.9%, six distinct runs), rounded up to 7%.
  double memory_headroom = 0.07;
  study::Progress* progress = nullptr;  ///< the analytical scoring batch
  study::Progress* verify_progress = nullptr;
  RunSimulations run_simulations;  ///< null: on this process's workers
  /// Called once the survivors are known, before any is simulated, with the work of the whole
  /// search (workload::estimate_training_work: each survivor's analytical score at a tenth, two
  /// short runs where the step is extrapolated, plus the flow re-simulation of 2 x top of the
  /// largest) and the runs it counts; may throw to refuse the search (the CLI's --max-work).
  std::function<void(double work, std::size_t runs)> check_work;
};

/// The cost of a job on one offer's price terms: whole periods of the term (hours or 30-day months),
/// or, with both terms and a job of a month or more, whole months and then whole hours.
struct TermCost {
  std::string term;  ///< "hourly", "monthly" or "monthly+hourly"
  double price_per_node = 0;
  double periods = 0;  ///< periods paid (months for the mixed term, the hours as a fraction of a month)
  double cost = 0;
};

struct Candidate {
  std::size_t offer_index = 0;
  std::string offer;
  std::string fabric;  ///< multi-node: the fabric assumed
  Choice choice;
  int gpus = 0;
  double memory_per_gpu_gib = 0;
  double capacity_gib = 0;
  double step_time_s_analytical = 0;
  double step_time_s_flow = 0;  ///< 0 unless verified
  bool verified_with_flow_model = false;
  double tokens_per_step = 0;
  double steps = 0;
  double job_time_s = 0;  ///< steps x the flow step time when verified, else the analytical one
  std::vector<TermCost> terms;
  double job_cost = 0;      ///< the cheapest term's cost
  std::string cost_terms;   ///< which term that is
  double job_cost_max = 0;  ///< the same term at the top of the offer's quoted range (0: a single price)
  double cost_per_mtok = 0;
  std::string currency;
  double mfu = 0;
  std::string bottleneck;
  double bottleneck_share = 0;  ///< of the step time
};

struct Rejection {
  std::string offer;
  std::string reason;
};

/// The plan that came closest to fitting when one did not.
struct Shortfall {
  std::string offer;
  Choice choice;
  double needed_gib = 0, available_gib = 0;  ///< modelled per GPU, and the GPU's memory
  double headroom = 0;        ///< Options::memory_headroom: it fits when needed x (1 + this) <= available
  bool at_max_nodes = false;  ///< it already used the most nodes searched
  [[nodiscard]] double short_by_gib() const { return needed_gib * (1 + headroom) - available_gib; }
};

struct Counts {
  std::size_t enumerated = 0;  ///< (offer, nodes, plan) combinations tried
  std::size_t invalid = 0;     ///< rejected by the model's or the machine's rules (sizes, heads, layers)
  std::size_t too_big = 0;     ///< do not fit in GPU memory
  std::size_t dominated = 0;   ///< fit, but a plan with less sharding or recompute fits too (never faster)
  std::size_t scored = 0;      ///< scored with the analytical network model
  std::size_t distinct = 0;    ///< of those, distinct simulations (offers of one box share theirs)
  std::size_t verified = 0;    ///< re-simulated with the flow model
};
/// Wall seconds of each phase (stderr only: never in results, which stay the same bytes).
struct PhaseTimes {
  double enumerate = 0, score = 0, verify = 0;
};

struct Result {
  std::vector<Candidate> candidates;  ///< ranked by job cost, then job time; at most `top`
  std::vector<Rejection> rejected;    ///< every searched offer with no candidate, with why
  std::optional<Shortfall> closest;   ///< when nothing fits anywhere
  std::size_t feasible = 0;           ///< scored candidates within budget and deadline
  /// The cheapest plan the flow model re-simulated that then fell outside the budget or deadline
  /// (its analytical, optimistic figure was within): what a refusal names, with its verified cost.
  std::optional<Candidate> cheapest_rejected_verified;
  Counts counts;
  PhaseTimes wall_s;
};

/// Offers x node counts x training plans: prunes by memory, scores every survivor with the
/// analytical network model, re-simulates the best `top` with the flow model (docs/plan.md).
[[nodiscard]] Result search_training(const std::vector<OfferSpace>& offers, const TrainingJob& job,
                                     const MakeScenario& make, const Options& options);

/// Whole periods of each of the offer's terms for a job of `hours` on `nodes` boxes.
[[nodiscard]] std::vector<TermCost> term_costs(const scenario::Offer& offer, int nodes, double hours);

}  // namespace cs::sizing
