#pragma once
// plan's mixed-fleet phase (docs/plan.md, "Mixed fleets"): boxes of two offers behind one router,
// found after the single-kind search from what it measured, then simulated whole.
#include <cstddef>
#include <vector>

#include "sim/sizing/serving_search.hpp"
#include "sim/sizing/serving_trials.hpp"

namespace cs::sizing::detail {

struct MixedSearch {
  std::vector<ServingCandidate> candidates;  ///< fleets that met the objectives, cheaper than either kind alone
  std::size_t pairs = 0;                     ///< offer pairs considered (both kinds need two boxes or more alone)
  std::size_t simulated = 0;                 ///< simulations of the phase: capacity runs and whole fleets
  std::size_t fleets = 0;                    ///< fleets simulated whole
};

/// For each offer whose best colocated shape needs two boxes or more, the rate one box of it sustains
/// within the objectives (bisected between RATE / n, met, and RATE / (n - 1), missed); then for each
/// pair of such offers, the fleets of a + b boxes whose capacities add up to the job's rate and that
/// beat both kinds alone on the objective (cost, or GPUs), cheapest first, each simulated whole
/// (the router weighing the kinds, docs/serving.md) until one meets the objectives. Not searched
/// for a latency objective: splitting the rate over two kinds never lowers the faster kind's TTFT.
[[nodiscard]] MixedSearch search_mixed_fleets(const std::vector<OfferSpace>& offers, const ServingJob& job,
                                              const ServingOptions& options,
                                              const std::vector<ServingCandidate>& singles, TrialRunner& runner);

struct MixedPools {
  std::vector<ServingCandidate> candidates;  ///< per (prefill offer, decode offer), the best that met the objectives
  std::size_t tried = 0;                     ///< (prefill offer, decode offer, decode boxes) bisected
  std::size_t simulated = 0;
};

/// Prefill on one offer's boxes, decode on another's (issue 29): for each ordered pair of offers on
/// different clusters, each unit one box of the first running prefill replicas only (its best
/// shape's TP, filling the box) and `decode_boxes` boxes of the second running decode replicas only
/// (its best shape's TP), the KV caches crossing the caller's link. The fewest units that meet the
/// objectives, bisected over the unit counts that would cost less than both kinds alone (or use
/// fewer GPUs), so a pair no unit count of which could win costs no simulation.
[[nodiscard]] MixedPools search_mixed_pools(const std::vector<OfferSpace>& offers, const ServingJob& job,
                                            const ServingOptions& options, const std::vector<ServingCandidate>& singles,
                                            TrialRunner& runner);

}  // namespace cs::sizing::detail
