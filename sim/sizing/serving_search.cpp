#include "sim/sizing/serving_search.hpp"
#include "sim/sizing/mixed_fleets.hpp"
#include "sim/sizing/serving_trials.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <set>
#include <tuple>

#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/study/batch.hpp"

namespace cs::sizing {

using detail::fits;
using detail::requests_for;
using detail::Trial;

double at_percentile(const serving::Percentiles& p, int percentile) {
  return percentile == 50 ? p.p50 : percentile == 99 ? p.p99 : p.p90;
}

std::string serving_plan_text(const ServingChoice& c) {
  const auto replicas = [](int n) { return std::to_string(n) + (n == 1 ? " replica" : " replicas"); };
  std::string t = "TP" + std::to_string(c.tp);
  if (c.pp > 1) t += " PP" + std::to_string(c.pp);
  if (c.ep > 1) t += " EP" + std::to_string(c.ep);
  if (c.dp_attention) t += c.deepep ? " attn-DP (DeepEP)" : " attn-DP";
  if (c.second && c.prefill_replicas > 0) {
    // Pools on two box kinds: a unit's one box of prefill, then the second kind's decode boxes.
    t += " x " + replicas(c.prefill_replicas) + " per box prefill + TP" + std::to_string(c.second->tp) + " x " +
         replicas(c.second->replicas / c.second->boxes) + " per box decode";
    if (c.second->boxes > 1) t += " (" + std::to_string(c.second->boxes) + " decode boxes per prefill box)";
  } else if (c.second) {
    // A mixed fleet: each kind's replicas per box (the caller names the second kind's offer).
    t += " x " + replicas(c.replicas / c.nodes) + " per box + TP" + std::to_string(c.second->tp) + " x " +
         replicas(c.second->replicas / c.second->boxes) + " per box";
  } else {
    t += " x " + replicas(c.replicas) + (c.span == 1 ? " per box" : " per " + std::to_string(c.span) + " boxes");
    if (c.prefill_replicas > 0)
      t += " (" + std::to_string(c.prefill_replicas) + " prefill + " + std::to_string(c.replicas - c.prefill_replicas) +
           " decode)";
  }
  t += ", batch " + std::to_string(c.max_batch);
  if (c.max_tokens > 0) t += ", max tokens " + std::to_string(c.max_tokens) + " chunked";
  return t;
}

ServingResult search_serving(const std::vector<OfferSpace>& offers, const ServingJob& job, const MakeServing& make,
                             const ServingOptions& options) {
  ServingResult result;
  constexpr std::size_t kNoSeed = static_cast<std::size_t>(-1);
  struct Shape {
    std::size_t offer;
    int tp, pp, ep, span;
    bool dpa = false;
    bool deepep = false;  ///< attention-DP's exchange as DeepEP's all-to-alls
    std::int64_t max_batch = 256;
    int prefill = 0;              ///< disaggregated: prefill replicas per unit
    std::int64_t max_tokens = 0;  ///< 0: the engine's default
    std::size_t seed = kNoSeed;   ///< a variant: the shape it varies (searched up to that shape's units)
    int cap = 0;                  ///< a variant: the most units tried
  };
  std::vector<Shape> shapes;
  std::vector<std::string> invalid_why(offers.size());  ///< the first reason a shape of the offer was refused
  const auto choice_of = [&](const Shape& sh, int units) {
    const int per_unit = offers[sh.offer].gpus_per_node * sh.span / (sh.tp * sh.pp);
    return ServingChoice{units * sh.span, sh.tp,        per_unit,   sh.pp,         sh.ep,     sh.span,
                         sh.dpa,          sh.max_batch, sh.prefill, sh.max_tokens, sh.deepep, std::nullopt};
  };
  // How many of the job's sequences (at full length) a shape's replica holds in its KV cache; 0
  // when it does not fit its GPUs (memory does not depend on the rate or the boxes).
  const auto held_alone = [&](const Shape& sh) -> std::int64_t {
    try {
      const auto sc = make(sh.offer, choice_of(sh, 1), job.rate, 200);
      std::int64_t blocks = 0;
      // Sized first: `fits(serving_memory(sc, &blocks), blocks)` may read `blocks` before the call
      // writes it (argument order is unspecified), which made every shape look too big here.
      const auto memory = serving::serving_memory(sc, &blocks);
      if (!fits(memory, blocks)) return 0;
      const std::int64_t per_sequence = (job.isl + job.osl + sc.block_size - 1) / sc.block_size;
      return std::max<std::int64_t>(1, blocks / std::max<std::int64_t>(1, per_sequence));
    } catch (const InputError& e) {
      if (invalid_why[sh.offer].empty()) invalid_why[sh.offer] = e.what();
    } catch (const InfeasibleError& e) {
      if (invalid_why[sh.offer].empty()) invalid_why[sh.offer] = e.what();
    }
    return 0;
  };
  // A shape at each max batch: a larger one only where the KV cache holds more sequences than the
  // smaller one admits (below that the two runs are the same but for a little activation memory).
  const auto add_shape = [&](Shape sh) {
    std::int64_t previous = 0, held = 0;  // the last cap tried, and what its replica's cache holds
    bool fits_any = false;
    for (auto mb : options.max_batches) {
      if (previous > 0 && held <= previous) break;
      sh.max_batch = mb;
      shapes.push_back(sh);
      held = held_alone(sh);
      fits_any = fits_any || held > 0;
      previous = mb;
    }
    return fits_any;
  };
  const auto eps_of = [&](int tp) {
    std::vector<int> eps{1};
    if (options.moe && tp > 1 && (options.experts <= 0 || options.experts % tp == 0)) eps.push_back(tp);
    return eps;
  };
  // Attention-DP (docs/serving.md) for MoE models: MLA's replicated cache is what it removes.
  const auto dpas_of = [&](int tp) {
    return options.moe && tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false};
  };
  for (std::size_t oi = 0; oi < offers.size(); ++oi) {
    const auto& space = offers[oi];
    if (!space.unusable.empty()) continue;
    const int g = space.gpus_per_node;
    bool any_fits = false;
    for (int tp = 1; tp <= g; ++tp) {
      if (g % tp != 0) continue;
      for (int pp = 1; tp * pp <= g && pp <= options.max_pp; pp *= 2) {
        if (g % (tp * pp) != 0) continue;
        for (int ep : eps_of(tp)) {
          for (bool dpa : dpas_of(tp)) any_fits = add_shape({oi, tp, pp, ep, 1, dpa}) || any_fits;
        }
      }
    }
    // A model one box cannot hold: replicas whose stages (one box-wide TP group each) span boxes.
    const int max_nodes = space.node_counts.empty() ? 1 : space.node_counts.back();
    for (int span = 2; !any_fits && !space.fabric.empty() && span <= max_nodes; span *= 2) {
      for (int ep : eps_of(g)) {
        for (bool dpa : dpas_of(g)) any_fits = add_shape({oi, g, span, ep, span, dpa}) || any_fits;
      }
    }
  }
  // Offers of one box at different prices (a provider's tiers, one box from two providers) run the
  // same scenarios: the runner simulates each distinct one once and shares its results.
  detail::TrialRunner runner(offers, job, make);
  struct Found {
    std::optional<ServingCandidate> best;
    bool valid = false, fits = false;
    std::size_t sims = 0;
    double miss_ttft = -1, miss_tpot = -1;  ///< at the most boxes tried, when none met the objectives
    std::optional<double> miss_sustained;   ///< there, when its units could not sustain their rate: what they did
    double miss_rate = 0;                   ///< there: the rate per unit asked
  };
  // A shape's outcome as text and back, for the ranks of an MPI run (ServingOptions::run_texts).
  const auto found_json = [](const Found& f) {
    return nlohmann::json{
        {"best", f.best ? detail::candidate_json(*f.best) : nlohmann::json(nullptr)},
        {"flags", {f.valid, f.fits}},
        {"sims", f.sims},
        {"miss", {f.miss_ttft, f.miss_tpot, f.miss_rate}},
        {"sustained", f.miss_sustained ? nlohmann::json(*f.miss_sustained) : nlohmann::json(nullptr)}};
  };
  const auto found_from = [](const nlohmann::json& j) {
    Found f;
    if (!j.at("best").is_null()) f.best = detail::candidate_from_json(j.at("best"));
    f.valid = j.at("flags").at(0).get<bool>();
    f.fits = j.at("flags").at(1).get<bool>();
    f.sims = j.at("sims").get<std::size_t>();
    f.miss_ttft = j.at("miss").at(0).get<double>();
    f.miss_tpot = j.at("miss").at(1).get<double>();
    f.miss_rate = j.at("miss").at(2).get<double>();
    if (!j.at("sustained").is_null()) f.miss_sustained = j.at("sustained").get<double>();
    return f;
  };
  // The fewest units of one shape that meet the objectives. A shape doubles its units from one,
  // then bisects between the last miss and the first hit; a variant bisects over 1 to its cap.
  const auto search_shape = [&](const Shape& sh, Found& f) {
    const auto& space = offers[sh.offer];
    auto trial = [&](int units) { return runner.run(sh.offer, choice_of(sh, units), job.rate / units, f.sims); };
    const auto& nodes_list = space.node_counts;
    if (nodes_list.empty()) return;
    const int max_units = nodes_list.back() / sh.span;  // units of `span` boxes
    if (max_units < 1) return;
    int lo = 0, hi = 0;  // lo misses (0 trivially), hi meets once `met`
    bool met = false;
    Trial hit;
    if (sh.seed == kNoSeed) {
      for (int n = 1; n <= max_units; n = n * 2 > max_units && n < max_units ? max_units : n * 2) {
        auto t = trial(n);
        f.valid = f.valid || t.valid;
        f.fits = f.fits || t.fits;
        if (!t.fits) return;  // memory does not depend on the boxes; invalid sizes neither
        if (t.meets) {
          hi = n;
          met = true;
          hit = std::move(t);
          break;
        }
        f.miss_ttft = at_percentile(t.r.ttft, job.slo_ttft_percentile);
        f.miss_tpot = at_percentile(t.r.tpot, job.slo_tpot_percentile);
        f.miss_sustained = t.sustained;
        f.miss_rate = job.rate / n;
        lo = n;
        if (n == max_units) break;
      }
      if (!met) return;
    } else {
      hi = std::min(sh.cap, max_units) + 1;  // not known to meet
    }
    while (hi - lo > 1) {
      const int mid = lo + (hi - lo) / 2;
      auto t = trial(mid);
      f.valid = f.valid || t.valid;
      f.fits = f.fits || t.fits;
      if (!t.fits) return;
      if (t.meets) {
        hi = mid;
        met = true;
        hit = std::move(t);
      } else {
        lo = mid;
      }
    }
    if (!met) return;
    f.best = detail::candidate_of(offers, sh.offer, choice_of(sh, hi), hit, job);
  };
  const auto search = [&](const Shape& sh) {
    Found f;
    search_shape(sh, f);
    return f;
  };
  std::vector<Found> found;
  detail::run_each(
      shapes.size(), [&](std::size_t i) { return search(shapes[i]); }, found, options, found_json, found_from,
      options.progress);
  // Variants of each offer's best shapes: its cheapest plans (cost, then TTFT), or where none met
  // the objectives its nearest misses. A variant can only rank above its seed with fewer units, or
  // tie it, so it is searched up to the seed's units (the offer's most when the seed missed).
  const auto miss_of = [&](const Found& f) {
    return std::max(f.miss_ttft / job.slo_ttft_s, job.slo_tpot_s > 0 ? f.miss_tpot / job.slo_tpot_s : 0.0);
  };
  const std::size_t base_shapes = shapes.size();
  for (std::size_t oi = 0; oi < offers.size(); ++oi) {
    std::vector<std::size_t> met, missed;
    for (std::size_t i = 0; i < base_shapes; ++i) {
      if (shapes[i].offer != oi) continue;
      if (found[i].best)
        met.push_back(i);
      else if (found[i].fits && found[i].miss_ttft >= 0)
        missed.push_back(i);
    }
    std::stable_sort(met.begin(), met.end(), [&](std::size_t a, std::size_t b) {
      const auto &x = *found[a].best, &y = *found[b].best;
      return x.cost_per_hour != y.cost_per_hour ? x.cost_per_hour < y.cost_per_hour : x.ttft_slo_s < y.ttft_slo_s;
    });
    std::stable_sort(missed.begin(), missed.end(),
                     [&](std::size_t a, std::size_t b) { return miss_of(found[a]) < miss_of(found[b]); });
    // Distinct shapes: a shape's two max batches count once (its better one).
    std::vector<std::size_t> seeds;
    for (std::size_t i : met.empty() ? missed : met) {
      if (seeds.size() >= static_cast<std::size_t>(std::max(options.variant_seeds, 0))) break;
      const auto& a = shapes[i];
      const bool twin = std::any_of(seeds.begin(), seeds.end(), [&](std::size_t k) {
        const auto& b = shapes[k];
        return a.tp == b.tp && a.pp == b.pp && a.ep == b.ep && a.dpa == b.dpa;
      });
      if (!twin) seeds.push_back(i);
    }
    for (std::size_t i : seeds) {
      Shape v = shapes[i];
      v.seed = i;
      v.cap = found[i].best ? found[i].best->choice.units() : offers[oi].node_counts.back();
      const int replicas = choice_of(v, 1).replicas;
      // Attention-DP's exchange inside a replica and disaggregation's KV moves are not modelled
      // together; nor are pools whose replicas span boxes.
      if (!v.dpa && replicas >= 2 && v.span == 1) {
        std::vector<int> prefills;
        for (double share : options.prefill_shares) {
          const double p = share * replicas;
          const int whole = static_cast<int>(std::lround(p));
          if (std::abs(p - whole) < 1e-9 && whole >= 1 && whole < replicas &&
              std::find(prefills.begin(), prefills.end(), whole) == prefills.end())
            prefills.push_back(whole);
        }
        for (int p : prefills) {
          Shape d = v;
          d.prefill = p;
          shapes.push_back(d);
        }
      }
      if (job.slo_tpot_s > 0 && options.small_max_tokens > 0) {
        Shape d = v;
        d.max_tokens = options.small_max_tokens;
        shapes.push_back(d);
      }
      // Under attention-DP with whole experts: DeepEP's dispatch and combine for the exchange.
      if (v.dpa && v.ep > 1 && v.ep == v.tp) {
        Shape d = v;
        d.deepep = true;
        shapes.push_back(d);
      }
    }
  }
  result.variants = shapes.size() - base_shapes;
  std::vector<Found> variants;
  detail::run_each(
      result.variants, [&](std::size_t k) { return search(shapes[base_shapes + k]); }, variants, options, found_json,
      found_from, options.progress);
  found.insert(found.end(), std::make_move_iterator(variants.begin()), std::make_move_iterator(variants.end()));
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    result.simulated += found[i].sims;
    ++result.plans;
    if (!found[i].valid)
      ++result.invalid;
    else if (!found[i].fits)
      ++result.too_big;
  }
  // What is listed: every shape's best plan within budget, less
  // - a larger max batch that changed nothing (the same boxes and p90s as a smaller one on the same
  //   shape: the batch never grew past the smaller cap), and
  // - a variant no better than its seed (as many boxes or more, neither p90 lower).
  const auto same_but_batch = [](const ServingCandidate& a, const ServingCandidate& b) {
    auto x = a.choice, y = b.choice;
    x.max_batch = y.max_batch = 0;
    return a.offer_index == b.offer_index && x == y && a.ttft_slo_s == b.ttft_slo_s && a.tpot_slo_s == b.tpot_slo_s;
  };
  // Whole experts spread over the TP GPUs (EP = TP) against experts split TP ways (EP 1): with
  // balanced routing the two do the same work per GPU; a plan that comes out the same as its EP 1
  // twin (boxes, p90s, memory) is listed once, as EP 1.
  const auto same_but_ep = [](const ServingCandidate& a, const ServingCandidate& b) {
    auto x = a.choice, y = b.choice;
    x.ep = y.ep = 1;
    return a.offer_index == b.offer_index && x == y && a.ttft_slo_s == b.ttft_slo_s && a.tpot_slo_s == b.tpot_slo_s &&
           a.memory_per_gpu_gib == b.memory_per_gpu_gib;
  };
  const auto listed = [&](std::size_t i) {
    const auto& c = found[i].best;
    if (!c || (options.budget > 0 && c->cost_per_hour > options.budget)) return false;
    for (const auto& f : found)
      if (f.best && ((f.best->choice.max_batch < c->choice.max_batch && same_but_batch(*c, *f.best)) ||
                     (f.best->choice.ep < c->choice.ep && same_but_ep(*c, *f.best))))
        return false;
    const std::size_t seed = shapes[i].seed;
    if (seed != kNoSeed && found[seed].best) {
      const auto& s0 = *found[seed].best;
      if (s0.cost_per_hour <= c->cost_per_hour && s0.ttft_slo_s <= c->ttft_slo_s && s0.tpot_slo_s <= c->tpot_slo_s)
        return false;
    }
    return true;
  };
  // Mixed fleets of two offers, from what the single-kind search measured (sim/sizing/mixed_fleets).
  std::vector<ServingCandidate> singles;
  for (const auto& f : found)
    if (f.best) singles.push_back(*f.best);
  const auto mixed = detail::search_mixed_fleets(offers, job, options, singles, runner);
  result.mixed_pairs = mixed.pairs;
  result.mixed_simulated = mixed.fleets;
  result.mixed_found = mixed.candidates.size();
  result.simulated += mixed.simulated;
  const auto pools = detail::search_mixed_pools(offers, job, options, singles, runner);
  result.pool_pairs = pools.tried;
  result.pools_found = pools.candidates.size();
  result.simulated += pools.simulated;
  std::vector<ServingCandidate> all;
  for (std::size_t i = 0; i < found.size(); ++i)
    if (listed(i)) all.push_back(*found[i].best);
  for (const auto* list : {&mixed.candidates, &pools.candidates})
    for (const auto& c : *list)
      if (options.budget <= 0 || c.cost_per_hour <= options.budget) all.push_back(c);
  std::stable_sort(all.begin(), all.end(), [&](const ServingCandidate& a, const ServingCandidate& b) {
    if (options.objective == Objective::kGpus && a.gpus != b.gpus) return a.gpus < b.gpus;
    if (options.objective == Objective::kLatency && a.ttft_slo_s != b.ttft_slo_s) return a.ttft_slo_s < b.ttft_slo_s;
    if (a.cost_per_hour != b.cost_per_hour) return a.cost_per_hour < b.cost_per_hour;
    if (a.ttft_slo_s != b.ttft_slo_s) return a.ttft_slo_s < b.ttft_slo_s;
    return a.offer_index < b.offer_index;
  });
  for (std::size_t oi = 0; oi < offers.size(); ++oi) {
    const bool any = std::any_of(all.begin(), all.end(),
                                 [&](const auto& c) { return c.offer_index == oi && c.second_offer.empty(); });
    if (any) continue;
    std::string why = offers[oi].unusable;
    if (why.empty()) {
      bool valid = false, fits = false, met = false;
      const Found* closest = nullptr;  // the shape whose miss came nearest its objectives
      for (std::size_t i = 0; i < shapes.size(); ++i) {
        if (shapes[i].offer != oi) continue;
        valid = valid || found[i].valid;
        fits = fits || found[i].fits;
        met = met || found[i].best.has_value();
        if (found[i].miss_ttft >= 0 && (!closest || miss_of(found[i]) < miss_of(*closest))) closest = &found[i];
      }
      if (!valid)
        why = "no shape is valid on its boxes" + (invalid_why[oi].empty() ? std::string() : ": " + invalid_why[oi]);
      else if (!fits)
        why = offers[oi].fabric.empty() || offers[oi].node_counts.size() < 2
                  ? "does not fit: the weights leave no KV cache at any TP and PP of one box (with a fabric "
                    "(--fabric F), replicas spanning boxes are tried)"
                  : "does not fit: the weights leave no KV cache at any TP and PP of one box, nor with a "
                    "replica's stages over " +
                        std::to_string(offers[oi].node_counts.back()) + " boxes";
      else if (!met && closest && closest->miss_sustained)
        why = "cannot sustain " + fixed(closest->miss_rate, 2) + " requests/s per unit at " +
              std::to_string(offers[oi].node_counts.back()) + " box(es): its best plan completes " +
              fixed(*closest->miss_sustained, 2) + " over the steady window (p" +
              std::to_string(job.slo_ttft_percentile) + " TTFT " + fixed(closest->miss_ttft * 1e3, 0) + " ms)";
      else if (!met && closest)
        why = "misses the SLO: at " + std::to_string(offers[oi].node_counts.back()) + " box(es) its best plan has p" +
              std::to_string(job.slo_ttft_percentile) + " TTFT " + fixed(closest->miss_ttft * 1e3, 0) +
              " ms (objective " + fixed(job.slo_ttft_s * 1e3, 0) + ")" +
              (job.slo_tpot_s > 0
                   ? ", p" + std::to_string(job.slo_tpot_percentile) + " TPOT " + fixed(closest->miss_tpot * 1e3, 1) +
                         " ms (objective " + fixed(job.slo_tpot_s * 1e3, 1) + ")"
                   : std::string());
      else {
        // Met the objectives, every plan above the budget: name the cheapest, as simulated.
        const ServingCandidate* cheapest = nullptr;
        for (std::size_t i = 0; i < shapes.size(); ++i)
          if (shapes[i].offer == oi && found[i].best &&
              (!cheapest || found[i].best->cost_per_hour < cheapest->cost_per_hour))
            cheapest = &*found[i].best;
        why = cheapest ? "over budget: its cheapest plan that meets the objectives, " +
                             serving_plan_text(cheapest->choice) + ", costs " + fixed(cheapest->cost_per_hour, 2) +
                             " " + cheapest->currency + " per hour (budget " + fixed(options.budget, 2) + ")"
                       : "over budget";
      }
    }
    result.rejected.push_back({offers[oi].offer.id, why});
  }
  if (options.per_offer) {
    // The first (best) of each offer, and of each pair of offers mixed, in the ranking's order.
    // One kind; two kinds side by side (either order); prefill on one, decode on the other (ordered).
    std::set<std::tuple<int, std::size_t, std::size_t>> seen;
    std::erase_if(all, [&](const ServingCandidate& c) {
      if (!c.choice.second) return !seen.insert({0, c.offer_index, 0}).second;
      const std::size_t second = c.choice.second->offer;
      if (c.choice.prefill_replicas > 0) return !seen.insert({2, c.offer_index, second}).second;
      return !seen.insert({1, std::min(c.offer_index, second), std::max(c.offer_index, second)}).second;
    });
  } else if (all.size() > static_cast<std::size_t>(std::max(options.top, 1))) {
    all.resize(static_cast<std::size_t>(options.top));
  }
  result.candidates = std::move(all);
  return result;
}

}  // namespace cs::sizing
