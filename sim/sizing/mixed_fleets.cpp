#include "sim/sizing/mixed_fleets.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/study/batch.hpp"

namespace cs::sizing::detail {

namespace {

/// An offer's best colocated plan of two boxes or more, and the rate one of its boxes sustains.
struct Seed {
  std::size_t offer = 0;
  ServingCandidate best;
  double capacity = 0;  ///< requests/s one box meets the objectives at (the highest rate met)
};

/// The plans a mixed fleet can be made of: replicas inside one box, colocated, the exchange the
/// mixed run models (docs/serving.md: a mixed fleet's second kind has no DeepEP, no PP).
bool mixable(const ServingCandidate& c) {
  const auto& x = c.choice;
  return !x.second && x.span == 1 && x.pp == 1 && x.prefill_replicas == 0 && !x.deepep && x.nodes >= 2;
}

/// What the objective minimises, then the tie-break: cost per hour, or GPUs then cost.
bool better(const ServingCandidate& a, const ServingCandidate& b, Objective objective) {
  if (objective == Objective::kGpus && a.gpus != b.gpus) return a.gpus < b.gpus;
  if (a.cost_per_hour != b.cost_per_hour) return a.cost_per_hour < b.cost_per_hour;
  return a.ttft_slo_s < b.ttft_slo_s;
}

/// Each offer's best plan of any shape (what a mixed fleet must beat), and its best plan `usable` keeps.
template <class Usable>
std::pair<std::vector<const ServingCandidate*>, std::vector<const ServingCandidate*>> best_per_offer(
    std::size_t offers, const std::vector<ServingCandidate>& singles, Objective objective, const Usable& usable) {
  std::vector<const ServingCandidate*> best(offers, nullptr), seed(offers, nullptr);
  for (const auto& c : singles) {
    auto& b = best[c.offer_index];
    if (!b || better(c, *b, objective)) b = &c;
    auto& s = seed[c.offer_index];
    if (usable(c) && (!s || better(c, *s, objective))) s = &c;
  }
  return {best, seed};
}

/// What one job of a phase found: a candidate that met the objectives, and the simulations it ran
/// (`runs` asked of the runner, `sims` not remembered).
struct Outcome {
  std::optional<ServingCandidate> found;
  std::size_t sims = 0, runs = 0;
};
nlohmann::json outcome_json(const Outcome& o) {
  return {o.found ? candidate_json(*o.found) : nlohmann::json(nullptr), o.sims, o.runs};
}
Outcome outcome_from(const nlohmann::json& j) {
  Outcome o;
  if (!j.at(0).is_null()) o.found = candidate_from_json(j.at(0));
  o.sims = j.at(1).get<std::size_t>();
  o.runs = j.at(2).get<std::size_t>();
  return o;
}

struct Fleet {
  std::size_t a = 0, b = 0;  ///< seed indices
  int boxes_a = 0, boxes_b = 0;
  double cost = 0;
  int gpus = 0;
};

}  // namespace

MixedSearch search_mixed_fleets(const std::vector<OfferSpace>& offers, const ServingJob& job,
                                const ServingOptions& options, const std::vector<ServingCandidate>& singles,
                                TrialRunner& runner) {
  MixedSearch out;
  if (!options.mixed || options.objective == Objective::kLatency) return out;
  // Each offer's best plan of any shape (what a mixed fleet must beat), and its best mixable one.
  const auto chosen = best_per_offer(offers.size(), singles, options.objective, mixable);
  const auto& best = chosen.first;
  const auto& seed_of = chosen.second;
  std::vector<Seed> seeds;
  for (std::size_t oi = 0; oi < offers.size(); ++oi) {
    // An offer whose best plan is one box is never beaten by a fleet holding one of its boxes.
    if (seed_of[oi] && best[oi]->choice.nodes >= 2) seeds.push_back({oi, *seed_of[oi]});
  }
  // The fleets of a pair whose boxes' capacities add up to the rate and that beat both kinds alone,
  // best first. Before the capacities are measured, each box's upper bound (RATE / (n - 1), missed)
  // prunes the pairs no fleet of which could work: only the rest are measured.
  const auto fleets_of = [&](std::size_t i, std::size_t j, bool upper_bound) {
    const auto &x = seeds[i], &y = seeds[j];
    const double cx = upper_bound ? job.rate / (x.best.choice.nodes - 1) : x.capacity;
    const double cy = upper_bound ? job.rate / (y.best.choice.nodes - 1) : y.capacity;
    const double px = x.best.cost_per_hour / x.best.choice.nodes, py = y.best.cost_per_hour / y.best.choice.nodes;
    const int gx = offers[x.offer].gpus_per_node, gy = offers[y.offer].gpus_per_node;
    const auto beats = [&](const Fleet& f, const ServingCandidate& alone) {
      return options.objective == Objective::kGpus
                 ? f.gpus < alone.gpus || (f.gpus == alone.gpus && f.cost < alone.cost_per_hour)
                 : f.cost < alone.cost_per_hour;
    };
    std::vector<Fleet> fleets;
    for (int a = 1; a < x.best.choice.nodes; ++a) {
      const double left = job.rate - a * cx;
      const int b = std::max(1, static_cast<int>(std::ceil(left / cy - 1e-9)));
      if (b >= y.best.choice.nodes) continue;
      const Fleet f{i, j, a, b, a * px + b * py, a * gx + b * gy};
      if (beats(f, *best[x.offer]) && beats(f, *best[y.offer])) fleets.push_back(f);
    }
    std::stable_sort(fleets.begin(), fleets.end(), [&](const Fleet& p, const Fleet& q) {
      if (options.objective == Objective::kGpus && p.gpus != q.gpus) return p.gpus < q.gpus;
      return p.cost < q.cost;
    });
    return fleets;
  };
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  std::vector<char> measured(seeds.size(), 0);
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    for (std::size_t j = i + 1; j < seeds.size(); ++j) {
      if (offers[seeds[i].offer].offer.currency != offers[seeds[j].offer].offer.currency) continue;
      ++out.pairs;
      if (fleets_of(i, j, true).empty()) continue;
      pairs.emplace_back(i, j);
      measured[i] = measured[j] = 1;
    }
  }
  if (pairs.empty()) return out;
  // One box's capacity: n boxes met the objectives at RATE / n each, n - 1 missed at RATE / (n - 1).
  struct Measured {
    double capacity = 0;
    std::size_t sims = 0;
  };
  std::vector<Measured> measures;
  run_each(
      seeds.size(),
      [&](std::size_t k) {
        Measured m;
        if (!measured[k]) return m;
        const auto& s = seeds[k];
        const int n = s.best.choice.nodes;
        double lo = job.rate / n, hi = job.rate / (n - 1);
        ServingChoice one = s.best.choice;
        one.nodes = 1;
        for (int step = 0; step < options.capacity_steps; ++step) {
          const double mid = 0.5 * (lo + hi);
          (runner.run(s.offer, one, mid, m.sims).meets ? lo : hi) = mid;
        }
        m.capacity = lo;
        return m;
      },
      measures, options,
      [](const Measured& m) {
        return nlohmann::json{m.capacity, m.sims};
      },
      [](const nlohmann::json& j) {
        return Measured{j.at(0).get<double>(), j.at(1).get<std::size_t>()};
      },
      nullptr);
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    seeds[k].capacity = measures[k].capacity;
    out.simulated += measures[k].sims;
  }
  std::vector<std::vector<Fleet>> per_pair;
  for (const auto& [i, j] : pairs) {
    auto fleets = fleets_of(i, j, false);
    if (!fleets.empty()) per_pair.push_back(std::move(fleets));
  }
  // Each pair's fleets simulated whole, best first, until one meets the objectives: the router's
  // split (by each kind's throughput alone) is not the capacities' ratio, so the sum is a guide only.
  constexpr std::size_t kTries = 3;
  std::vector<Outcome> outcomes;
  run_each(
      per_pair.size(),
      [&](std::size_t p) {
        Outcome o;
        for (std::size_t t = 0; t < std::min(kTries, per_pair[p].size()); ++t) {
          const auto& f = per_pair[p][t];
          // The first kind holds the boxes joined by its fabric; one box needs none.
          const bool a_first = f.boxes_a == 1 || !offers[seeds[f.a].offer].fabric.empty();
          const bool b_first = f.boxes_b == 1 || !offers[seeds[f.b].offer].fabric.empty();
          if (!a_first && !b_first) continue;
          const auto& own = a_first ? seeds[f.a] : seeds[f.b];
          const auto& other = a_first ? seeds[f.b] : seeds[f.a];
          const int own_boxes = a_first ? f.boxes_a : f.boxes_b, other_boxes = a_first ? f.boxes_b : f.boxes_a;
          ServingChoice c = own.best.choice;
          c.nodes = c.span = own_boxes;
          c.replicas = own.best.choice.replicas * own_boxes;
          c.second =
              SecondKind{other.offer, other_boxes, other.best.choice.tp, other.best.choice.replicas * other_boxes};
          ++o.runs;
          const auto trial = runner.run(own.offer, c, job.rate, o.sims);
          if (trial.meets) {
            o.found = candidate_of(offers, own.offer, c, trial, job);
            break;
          }
        }
        return o;
      },
      outcomes, options, outcome_json, outcome_from, nullptr);
  for (const auto& o : outcomes) {
    out.simulated += o.sims;
    out.fleets += o.runs;
    if (o.found) out.candidates.push_back(*o.found);
  }
  return out;
}

MixedPools search_mixed_pools(const std::vector<OfferSpace>& offers, const ServingJob& job,
                              const ServingOptions& options, const std::vector<ServingCandidate>& singles,
                              TrialRunner& runner) {
  MixedPools out;
  if (!options.mixed_pools || options.objective == Objective::kLatency) return out;
  // A pool's shape: replicas inside one box, no PP, no attention-DP (its exchange and the KV moves
  // are not modelled together), no DeepEP; each pool keeps its kind's TP and EP.
  const auto poolable = [](const ServingCandidate& c) {
    const auto& x = c.choice;
    return !x.second && x.span == 1 && x.pp == 1 && !x.dp_attention && !x.deepep;
  };
  const auto chosen = best_per_offer(offers.size(), singles, options.objective, poolable);
  const auto& best = chosen.first;
  const auto& seed = chosen.second;
  struct Try {
    std::size_t prefill = 0, decode = 0;
    int decode_boxes = 1, most_units = 0;
  };
  std::vector<Try> tries;
  for (std::size_t p = 0; p < offers.size(); ++p) {
    for (std::size_t d = 0; d < offers.size(); ++d) {
      if (!seed[p] || !seed[d] || offers[p].offer.cluster == offers[d].offer.cluster) continue;
      if (offers[p].offer.currency != offers[d].offer.currency) continue;
      const double pp = seed[p]->cost_per_hour / seed[p]->choice.nodes;
      const double pd = seed[d]->cost_per_hour / seed[d]->choice.nodes;
      for (int k : options.decode_boxes) {
        const double unit_cost = pp + k * pd;
        const int unit_gpus = offers[p].gpus_per_node + k * offers[d].gpus_per_node;
        // The most units that still beat both kinds alone on the objective.
        int most = offers[p].node_counts.empty() ? 0 : offers[p].node_counts.back();
        for (const auto* alone : {best[p], best[d]}) {
          for (int u = most; u >= 0; --u) {
            const bool beats = options.objective == Objective::kGpus
                                   ? u * unit_gpus < alone->gpus ||
                                         (u * unit_gpus == alone->gpus && u * unit_cost < alone->cost_per_hour)
                                   : u * unit_cost < alone->cost_per_hour;
            if (beats || u == 0) {
              most = u;
              break;
            }
          }
        }
        if (most >= 1) tries.push_back({p, d, k, most});
      }
    }
  }
  out.tried = tries.size();
  std::vector<Outcome> found;
  run_each(
      tries.size(),
      [&](std::size_t t) {
        Outcome o;
        const auto& tr = tries[t];
        const auto& ps = seed[tr.prefill]->choice;
        const auto& ds = seed[tr.decode]->choice;
        const int prefill = offers[tr.prefill].gpus_per_node / ps.tp;
        const int decode = tr.decode_boxes * (offers[tr.decode].gpus_per_node / ds.tp);
        const auto choice = [&](int units) {
          ServingChoice c = ps;
          c.nodes = units;
          c.span = 1;
          c.replicas = prefill + decode;
          c.prefill_replicas = prefill;
          c.second = SecondKind{tr.decode, tr.decode_boxes, ds.tp, decode};
          return c;
        };
        // The fewest units: bisection over 1 .. the most that would still win (not known to meet).
        int lo = 0, hi = tr.most_units + 1;
        std::optional<Trial> hit;
        while (hi - lo > 1) {
          const int mid = lo + (hi - lo) / 2;
          auto trial = runner.run(tr.prefill, choice(mid), job.rate / mid, o.sims);
          ++o.runs;
          if (!trial.fits) return o;  // memory does not depend on the units
          if (trial.meets) {
            hi = mid;
            hit = std::move(trial);
          } else {
            lo = mid;
          }
        }
        if (hit) o.found = candidate_of(offers, tr.prefill, choice(hi), *hit, job);
        return o;
      },
      found, options, outcome_json, outcome_from, nullptr);
  // The best of each (prefill offer, decode offer): its decode box counts compete.
  std::vector<ServingCandidate> kept;
  for (std::size_t t = 0; t < tries.size(); ++t) {
    out.simulated += found[t].sims;
    if (!found[t].found) continue;
    const auto& c = *found[t].found;
    auto it = std::find_if(kept.begin(), kept.end(), [&](const ServingCandidate& k) {
      return k.offer_index == tries[t].prefill && k.choice.second->offer == tries[t].decode;
    });
    if (it == kept.end())
      kept.push_back(c);
    else if (better(c, *it, options.objective))
      *it = c;
  }
  out.candidates = std::move(kept);
  return out;
}

}  // namespace cs::sizing::detail
