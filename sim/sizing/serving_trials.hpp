#pragma once
// One serving plan simulated at sustained load, the way plan's serving search judges every plan
// (docs/plan.md): shared by the search over single box kinds and by its mixed-fleet phase.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/serving/serving_sim.hpp"
#include "sim/sizing/serving_search.hpp"
#include "sim/study/batch.hpp"
#include "sim/study/training_run.hpp"

namespace cs::sizing::detail {

/// Requests first simulated per unit: at least 200, or 30 s of arrivals, at most 2000 (enough for a
/// stable p90); TrialRunner lengthens the run from there.
[[nodiscard]] std::int64_t requests_for(double rate);

/// A replica fits when its weights, activations and runtime leave room for KV blocks.
[[nodiscard]] bool fits(const serving::ServingMemory& m, std::int64_t blocks);

/// The price per box-hour of continuous serving on one of the offer's terms, and the offer's
/// cheapest term for continuous serving (at the bottom of a quoted range).
[[nodiscard]] double per_box_hour(const scenario::Offer& o, const std::string& term);
[[nodiscard]] std::string cheapest_term(const scenario::Offer& o);

struct Trial {
  bool valid = false, fits = false, meets = false;
  serving::ServingResults r;
  std::int64_t requests = 0;        ///< simulated (the longest run, when it was lengthened)
  std::optional<double> sustained;  ///< set when the unit cannot sustain its rate: what it completes per second
  double need_gib = 0, have_gib = 0;
};

/// Runs plans at sustained load and remembers every simulation by its scenario's identity, so offers
/// of one box at different prices (and the mixed phase's capacity runs) share them. A simulation is
/// a pure function of its scenario (prices are applied to candidates, not runs), so which worker
/// computed an entry does not matter: results are the same for any thread count.
class TrialRunner {
 public:
  TrialRunner(const std::vector<OfferSpace>& offers, const ServingJob& job, const MakeServing& make)
      : offers_(offers), job_(job), make_(make) {}
  /// Choice `c` on offer `offer` (its unit at `rate` requests/s), simulated until its arrivals span
  /// ten request lifetimes (at most 20,000 requests), or until it misses the objectives or cannot
  /// sustain its rate. `sims` counts the simulations this call ran (not those remembered).
  [[nodiscard]] Trial run(std::size_t offer, const ServingChoice& c, double rate, std::size_t& sims);
  /// Whether a run's figures meet the job's objectives at their percentiles.
  [[nodiscard]] bool meets(const serving::ServingResults& r) const;

 private:
  [[nodiscard]] std::string key(std::size_t offer, const ServingChoice& c, double rate, std::int64_t requests) const;
  const std::vector<OfferSpace>& offers_;
  const ServingJob& job_;
  const MakeServing& make_;
  study::TopologyCache topologies_;  // one machine per box shape for the whole search
  std::mutex memo_mutex_;
  std::map<std::string, serving::ServingResults> memo_;
};

/// The candidate a plan that met the objectives makes: its figures from `hit`, its cost from the
/// offers' cheapest terms (both kinds' boxes for a mixed fleet), its bottleneck named.
[[nodiscard]] ServingCandidate candidate_of(const std::vector<OfferSpace>& offers, std::size_t offer,
                                            const ServingChoice& c, const Trial& hit, const ServingJob& job);

/// A candidate as text and back, bit for bit (doubles as JSON's shortest round-trip form): what a
/// rank sends the others under ServingOptions::run_texts.
[[nodiscard]] nlohmann::json candidate_json(const ServingCandidate& c);
[[nodiscard]] ServingCandidate candidate_from_json(const nlohmann::json& j);

/// body(i) for every i in [0, n) into out[i]: on this process's workers, or, with options.run_texts,
/// split among ranks, each result sent as the text `encode` makes and read back by `decode`.
template <class T, class Body, class Encode, class Decode>
void run_each(std::size_t n, const Body& body, std::vector<T>& out, const ServingOptions& options, const Encode& encode,
              const Decode& decode, study::Progress* progress) {
  out.resize(n);
  if (!options.run_texts) {
    study::run_batch(
        n, [&](std::size_t i) { out[i] = body(i); }, progress);
    return;
  }
  const auto texts = options.run_texts(
      n, [&](std::size_t i) { return encode(body(i)).dump(); }, progress);
  for (std::size_t i = 0; i < n; ++i) out[i] = decode(nlohmann::json::parse(texts.at(i)));
}

}  // namespace cs::sizing::detail
