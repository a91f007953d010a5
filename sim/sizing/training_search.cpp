#include "sim/sizing/training_search.hpp"

#include "models/ops/recompute.hpp"
#include "sim/study/memory_options.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/report/train_results.hpp"
#include "sim/study/batch.hpp"
#include "sim/study/training_run.hpp"
#include "sim/workload/work_estimate.hpp"

namespace cs::sizing {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const char* recompute_name(plan::Recompute r) {
  switch (r) {
    case plan::Recompute::kNone: return "none";
    case plan::Recompute::kSelective: return "selective";
    case plan::Recompute::kFull: return "full";
  }
  return "none";
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

/// A plan enumerated, its scenario built and found to fit.
struct Survivor {
  std::size_t offer = 0;
  Choice choice;
  scenario::Scenario scenario;
  double memory_gib = 0, capacity_gib = 0;
};

/// What one offer's search found, for its rejection line.
struct OfferTally {
  std::size_t fits = 0, valid = 0;
  double best_shortfall_gib = -1;  ///< smallest memory shortfall of a valid plan (GiB)
  double fastest_s = -1, cheapest = -1;
  std::string currency;
};

/// The largest share of a step: compute, the pipeline bubble, or exposed communication (named by
/// the collective with the most time, since exposed time is not split by collective).
std::pair<std::string, double> bottleneck_of(const report::TrainResults& r) {
  const double step = r.step_time_s;
  std::string comm = "exposed communication";
  double most = -1;
  for (const auto& c : r.collectives) {
    if (c.seconds_per_gpu > most) {
      most = c.seconds_per_gpu;
      comm = "exposed communication (mostly " + c.label + ")";
    }
  }
  std::vector<std::pair<std::string, double>> parts{{"compute", r.breakdown.compute},
                                                    {comm, r.breakdown.exposed_comm},
                                                    {"pipeline bubble", r.breakdown.pipeline_bubble}};
  if (r.plan.pp == 1) parts.emplace_back("idle (waiting for peers)", r.breakdown.idle);
  const auto best =
      std::max_element(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return {best->first, step > 0 ? best->second / step : 0.0};
}

/// Fills a candidate's job figures from a step time.
void price(Candidate& c, const scenario::Offer& offer, double step_s) {
  c.job_time_s = c.steps * step_s;
  c.terms = term_costs(offer, c.choice.nodes, c.job_time_s / 3600.0);
  const auto cheapest =
      std::min_element(c.terms.begin(), c.terms.end(), [](const auto& a, const auto& b) { return a.cost < b.cost; });
  c.job_cost = cheapest->cost;
  c.cost_terms = cheapest->term;
  c.job_cost_max = 0;
  if (offer.has_range()) {
    for (const auto& t : term_costs(offer.high(), c.choice.nodes, c.job_time_s / 3600.0))
      if (t.term == c.cost_terms) c.job_cost_max = t.cost;
  }
  c.currency = offer.currency;
  c.cost_per_mtok = c.job_cost / (c.steps * c.tokens_per_step) * 1e6;
}

/// Job cost, then job time; then offer and plan, so that ties keep one order.
bool ranks_before(const Candidate& a, const Candidate& b) {
  if (a.job_cost != b.job_cost) return a.job_cost < b.job_cost;
  if (a.job_time_s != b.job_time_s) return a.job_time_s < b.job_time_s;
  if (a.offer_index != b.offer_index) return a.offer_index < b.offer_index;
  return plan_text(a.choice) + std::to_string(a.choice.nodes) < plan_text(b.choice) + std::to_string(b.choice.nodes);
}

bool within(const Candidate& c, const TrainingJob& job, const Options& o) {
  return (job.deadline_s <= 0 || c.job_time_s <= job.deadline_s) && (o.budget <= 0 || c.job_cost <= o.budget);
}

report::TrainResults simulate(const scenario::Scenario& s, net::NetworkModelKind model, study::TopologyCache& topo) {
  scenario::Scenario t = s;
  t.network_model = model;
  // Under the analytical model each flow runs alone, so data-parallel replicas never contend and
  // simulating one of them (`symmetry: dp`) gives the same step; the flow model simulates them all.
  t.dp_symmetry = model == net::NetworkModelKind::kAnalytical;
  study::RunOptions ro;
  ro.single_gpu_baseline = false;
  ro.partition = false;  // the batch is parallel across candidates already
  ro.topologies = &topo;
  return report::train_results(t, study::run_training(t, ro));
}

/// The analytical score of a step with many micro-batches, from two short runs. Under the
/// analytical network model no flows contend, so the 1F1B (and interleaved) schedule is periodic
/// once the pipeline is full: every further micro-batch adds the same time, and the step time,
/// its compute, exposed communication and bubble are linear in the micro-batch count. Two runs of
/// 2P and 4P micro-batches (P = the stages, so an interleaved schedule's multiple-of-P rule holds)
/// give the line; a step of at least 8P micro-batches is read off it instead of simulated whole
/// (tested against the whole simulation; the flow model's re-simulation of the best is whole).
std::optional<Simulated> extrapolated(const scenario::Scenario& s, study::TopologyCache& topo) {
  const std::int64_t m = s.micro_batches(), p = s.plan.pp;
  const std::int64_t m1 = 2 * p, m2 = 4 * p;
  if (s.global_batch % (s.plan.dp * s.micro_batch) != 0 || m < 2 * m2) return std::nullopt;
  const auto run = [&](std::int64_t micro) {
    scenario::Scenario t = s;
    t.global_batch = micro * s.plan.dp * s.micro_batch;
    return simulate(t, net::NetworkModelKind::kAnalytical, topo);
  };
  const auto r1 = run(m1);
  auto r2 = run(m2);
  const double k = static_cast<double>(m - m2) / static_cast<double>(m2 - m1);
  const auto line = [&](double a, double b) { return b + k * (b - a); };
  const double step = line(r1.step_time_s, r2.step_time_s);
  Simulated out;
  out.step_time_s = step;
  // Model FLOPs grow with the micro-batches; MFU = FLOPs / (time x GPUs x peak).
  out.mfu = r2.mfu * (static_cast<double>(m) / static_cast<double>(m2)) * (r2.step_time_s / step);
  r2.breakdown.compute = line(r1.breakdown.compute, r2.breakdown.compute);
  r2.breakdown.exposed_comm = line(r1.breakdown.exposed_comm, r2.breakdown.exposed_comm);
  r2.breakdown.pipeline_bubble = line(r1.breakdown.pipeline_bubble, r2.breakdown.pipeline_bubble);
  r2.breakdown.idle = line(r1.breakdown.idle, r2.breakdown.idle);
  r2.step_time_s = step;
  std::tie(out.bottleneck, out.bottleneck_share) = bottleneck_of(r2);
  return out;
}

std::string days_text(double s) {
  const double d = s / 86400.0;
  return d >= 1 ? fixed(d, 1) + " days" : fixed(s / 3600.0, 1) + " hours";
}

}  // namespace

std::string plan_text(const Choice& c) {
  std::string t = "TP" + std::to_string(c.tp) + " PP" + std::to_string(c.pp);
  if (c.vpp > 1) t += " VPP" + std::to_string(c.vpp);
  if (c.cp > 1) t += " CP" + std::to_string(c.cp);
  t += " DP" + std::to_string(c.dp);
  if (c.ep > 1) t += " EP" + std::to_string(c.ep);
  if (c.zero > 0) t += " ZeRO-" + std::to_string(c.zero);
  if (c.sp) t += " SP";
  t += " mb" + std::to_string(c.micro_batch);
  if (c.recompute == plan::Recompute::kSelective && c.recompute_modules != 0) {
    t += " recompute " + models::RecomputeModules{c.recompute_modules}.text();
  } else if (c.recompute != plan::Recompute::kNone) {
    t += std::string(" recompute ") + recompute_name(c.recompute);
  }
  return t;
}

std::vector<TermCost> term_costs(const scenario::Offer& offer, int nodes, double hours) {
  std::vector<TermCost> out;
  auto add = [&](const std::string& term, double price, double hours_per_period) {
    TermCost t;
    t.term = term;
    t.price_per_node = price;
    // Rentals bill whole periods; a job of 0.2 periods still pays one.
    t.periods = std::max(1.0, std::ceil(hours / hours_per_period - 1e-9));
    t.cost = t.periods * price * nodes;
    out.push_back(t);
  };
  if (offer.hours_per_period == 1.0) {
    add("hourly", offer.price, 1.0);
  } else {
    add("monthly", offer.price, offer.hours_per_period);
    if (offer.hourly_price > 0) {
      add("hourly", offer.hourly_price, 1.0);
      // Whole months for most of a long job, hours for the rest.
      const double months = std::floor(hours / offer.hours_per_period + 1e-9);
      if (months >= 1) {
        const double rest = std::max(0.0, std::ceil(hours - months * offer.hours_per_period - 1e-9));
        TermCost t;
        t.term = "monthly+hourly";
        t.price_per_node = offer.price;
        t.periods = months + rest / offer.hours_per_period;
        t.cost = (months * offer.price + rest * offer.hourly_price) * nodes;
        out.push_back(t);
      }
    }
  }
  return out;
}

Result search_training(const std::vector<OfferSpace>& offers, const TrainingJob& job, const MakeScenario& make,
                       const Options& options) {
  Result result;
  auto lap = [t = std::chrono::steady_clock::now()]() mutable {
    const auto now = std::chrono::steady_clock::now();
    const double d = std::chrono::duration<double>(now - t).count();
    t = now;
    return d;
  };
  std::vector<OfferTally> tally(offers.size());
  std::vector<Survivor> survivors;
  const plan::Recompute recomputes[] = {plan::Recompute::kNone, plan::Recompute::kSelective, plan::Recompute::kFull};
  // Enumerate and prune by memory (serial: cheap, and its order is the output's).
  for (std::size_t oi = 0; oi < offers.size(); ++oi) {
    const auto& space = offers[oi];
    tally[oi].currency = space.offer.currency;
    if (!space.unusable.empty()) continue;
    for (int nodes : space.node_counts) {
      const int gpus = space.gpus_per_node * nodes;
      for (int tp : divisors(space.gpus_per_node)) {
        // (PP, CP) pairs: CP only for long sequences, where attention's share of the step is large.
        std::vector<std::pair<int, int>> pp_cp;
        for (int pp = 1; tp * pp <= gpus && pp <= options.max_pp; pp *= 2) {
          for (int cp = 1; cp <= options.max_cp && tp * pp * cp <= gpus; cp *= 2) {
            if (cp > 1 && (options.seq < options.cp_min_seq || options.seq % (2 * cp) != 0)) break;
            if (gpus % (tp * pp * cp) == 0) pp_cp.emplace_back(pp, cp);
          }
        }
        for (const auto& [pp, cp] : pp_cp) {
          const int dp = gpus / (tp * pp * cp);
          std::vector<int> eps{1};
          if (options.experts > 0) {
            eps.clear();
            for (int ep : divisors(tp * cp * dp))
              if (options.experts % ep == 0) eps.push_back(ep);
          }
          const std::vector<int> vpps = pp > 1 ? options.vpps : std::vector<int>{1};
          for (int ep : eps) {
            for (int vpp : vpps) {
              for (auto mb : options.micro_batches) {
                // Plans of one shape: each ZeRO stage with the least recompute that fits it. A plan
                // with more sharding *and* more recompute than one that fits is never faster.
                int least_recompute_so_far = 3;
                const int max_zero = dp * cp > 1 ? 3 : 0;  // the optimizer shards over DP x CP
                for (int zero = 0; zero <= max_zero; ++zero) {
                  std::optional<scenario::Scenario> plain;  // the shape without recompute
                  for (int ri = 0; ri < 3; ++ri) {
                    Choice c{nodes, tp, pp, dp, ep, zero, vpp, tp > 1, recomputes[ri], 0, mb, cp};
                    ++result.counts.enumerated;
                    std::optional<scenario::Scenario> s;
                    if (ri == 1 && plain) {
                      // Selective: the cheapest module set that fits, as the frameworks would pick it.
                      for (const auto& o :
                           study::memory_options(*plain, {.modules_only = true, .fitting_only = true})) {
                        if (o.applied.plan.recompute != plan::Recompute::kSelective || !o.memory.fits()) continue;
                        c.recompute_modules = o.applied.plan.recompute_modules;
                        s.emplace(o.applied);
                        break;
                      }
                      if (!s) {
                        ++result.counts.too_big;
                        continue;
                      }
                    } else {
                      try {
                        s.emplace(make(oi, c));
                      } catch (const InfeasibleError&) {
                      } catch (const InputError&) {
                      }
                      if (ri == 0 && s) plain = *s;
                    }
                    if (!s) {
                      ++result.counts.invalid;
                      break;  // the same sizes fail at every recompute policy
                    }
                    ++tally[oi].valid;
                    const auto f = study::training_feasibility(*s);
                    const double need = f.memory.total / kGiB, have = f.memory.capacity / kGiB;
                    if (!f.ok() || need * (1 + options.memory_headroom) > have) {
                      ++result.counts.too_big;
                      const double short_by = need * (1 + options.memory_headroom) - have;
                      if (tally[oi].best_shortfall_gib < 0 || short_by < tally[oi].best_shortfall_gib)
                        tally[oi].best_shortfall_gib = short_by;
                      if (!result.closest || short_by < result.closest->short_by_gib()) {
                        result.closest = Shortfall{
                            space.offer.id, c, need, have, options.memory_headroom, nodes == space.node_counts.back()};
                      }
                      continue;
                    }
                    ++tally[oi].fits;
                    if (ri >= least_recompute_so_far) {
                      ++result.counts.dominated;
                    } else {
                      least_recompute_so_far = ri;
                      survivors.push_back({oi, c, std::move(*s), need, have});
                    }
                    // More recompute only saves memory that this plan already has.
                    result.counts.dominated += static_cast<std::size_t>(2 - ri);
                    result.counts.enumerated += static_cast<std::size_t>(2 - ri);
                    break;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  result.wall_s.enumerate = lap();
  // Offers of one box at different prices (a provider's tiers, one box from two providers) give
  // the same scenarios: each distinct (cluster, box size, fabric, plan) is simulated once and its
  // figures priced for every offer that has it.
  std::vector<std::size_t> rep(survivors.size());  // survivor -> its representative, the first alike
  std::vector<std::size_t> distinct;               // the representatives, in survivor order
  {
    std::map<std::string, std::size_t> seen;
    for (std::size_t i = 0; i < survivors.size(); ++i) {
      const auto& sv = survivors[i];
      const auto& space = offers[sv.offer];
      const std::string key = space.offer.cluster + "|" + std::to_string(space.gpus_per_node) + "|" +
                              (sv.choice.nodes > 1 ? space.fabric : std::string()) + "|" +
                              std::to_string(sv.choice.nodes) + "|" + plan_text(sv.choice);
      const auto [it, fresh] = seen.emplace(key, i);
      rep[i] = it->second;
      if (fresh) distinct.push_back(i);
    }
  }
  result.counts.distinct = distinct.size();
  if (options.check_work) {
    // Analytical runs cost about a tenth of a flow run's time per work item (measured on plan's
    // 70B search: 0.07-0.4 us against 0.4-2.7 us; docs/performance.md), and the flow model
    // re-simulates about two rounds of `top`.
    constexpr double kAnalyticalShare = 0.1;
    double work = 0;
    std::vector<double> whole;
    for (const auto d : distinct) {
      const auto& s = survivors[d].scenario;
      whole.push_back(workload::estimate_training_work(s, false).total());
      const std::int64_t m = s.micro_batches(), p = s.plan.pp;
      if (s.global_batch % (s.plan.dp * s.micro_batch) == 0 && m >= 8 * p) {
        // extrapolated(): two runs of 2P and 4P micro-batches instead of the whole step.
        for (const std::int64_t micro : {2 * p, 4 * p}) {
          scenario::Scenario t = s;
          t.global_batch = micro * s.plan.dp * s.micro_batch;
          work += kAnalyticalShare * workload::estimate_training_work(t, false).total();
        }
      } else {
        work += kAnalyticalShare * whole.back();
      }
    }
    // The flow re-simulation: about two rounds of the candidates reported (of each offer's one).
    const std::size_t reported = options.per_offer ? offers.size() : static_cast<std::size_t>(std::max(options.top, 1));
    const std::size_t verify = std::min(whole.size(), 2 * reported);
    std::partial_sort(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(verify), whole.end(),
                      std::greater<>());
    for (std::size_t i = 0; i < verify; ++i) work += whole[i];
    options.check_work(work, distinct.size() + verify);
  }
  // Score every survivor with the analytical network model.
  study::TopologyCache topologies;
  std::vector<Candidate> scored(survivors.size());
  const RunSimulations run_sims =
      options.run_simulations ? options.run_simulations
                              : RunSimulations([](std::size_t n, const std::function<Simulated(std::size_t)>& sim,
                                                  std::vector<Simulated>& out, study::Progress* progress) {
                                  study::run_batch(
                                      n, [&](std::size_t i) { out[i] = sim(i); }, progress);
                                });
  const auto simulated = [&](const scenario::Scenario& s, net::NetworkModelKind model) {
    if (model == net::NetworkModelKind::kAnalytical) {
      if (auto e = extrapolated(s, topologies)) return *e;
    }
    const auto r = simulate(s, model, topologies);
    Simulated out{r.step_time_s, r.mfu, {}, 0};
    std::tie(out.bottleneck, out.bottleneck_share) = bottleneck_of(r);
    return out;
  };
  std::vector<Simulated> distinct_sims(distinct.size());
  run_sims(
      distinct.size(),
      [&](std::size_t k) { return simulated(survivors[distinct[k]].scenario, net::NetworkModelKind::kAnalytical); },
      distinct_sims, options.progress);
  std::vector<Simulated> sims(survivors.size());
  for (std::size_t k = 0; k < distinct.size(); ++k) sims[distinct[k]] = distinct_sims[k];
  for (std::size_t i = 0; i < survivors.size(); ++i) sims[i] = sims[rep[i]];
  for (std::size_t i = 0; i < survivors.size(); ++i) {
    const auto& sv = survivors[i];
    auto& c = scored[i];
    c.offer_index = sv.offer;
    c.offer = offers[sv.offer].offer.id;
    c.fabric = sv.choice.nodes > 1 ? offers[sv.offer].fabric : std::string();
    c.choice = sv.choice;
    c.gpus = sv.scenario.gpus;
    c.memory_per_gpu_gib = sv.memory_gib;
    c.capacity_gib = sv.capacity_gib;
    c.step_time_s_analytical = sims[i].step_time_s;
    c.tokens_per_step = static_cast<double>(sv.scenario.seq * sv.scenario.global_batch);
    c.steps = std::ceil(job.tokens / c.tokens_per_step);
    c.mfu = sims[i].mfu;
    c.bottleneck = sims[i].bottleneck;
    c.bottleneck_share = sims[i].bottleneck_share;
    price(c, offers[sv.offer].offer, c.step_time_s_analytical);
  }
  result.counts.scored = scored.size();
  result.wall_s.score = lap();
  for (const auto& c : scored) {
    auto& t = tally[c.offer_index];
    if (t.fastest_s < 0 || c.job_time_s < t.fastest_s) t.fastest_s = c.job_time_s;
    if (t.cheapest < 0 || c.job_cost < t.cheapest) t.cheapest = c.job_cost;
  }
  // Rank within budget and deadline; re-simulate the best with the flow model.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < scored.size(); ++i)
    if (within(scored[i], job, options)) order.push_back(i);
  result.feasible = order.size();
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return ranks_before(scored[a], scored[b]); });
  // The flow model re-simulates in rounds, best analytical first, until the `want` best verified
  // candidates all rank before the next unverified one's analytical figure (the analytical model
  // leaves out contention, so it is the optimistic one), or 4 x want have been re-simulated.
  std::map<std::size_t, Simulated> flow_of;  // representative -> its flow-model figures
  std::size_t verified_runs = 0;
  const auto verify_best = [&](const std::vector<std::size_t>& ranked, std::size_t want) {
    const std::size_t cap = std::min(ranked.size(), 4 * want);
    std::vector<Candidate> verified;
    std::size_t next = 0;
    while (next < cap) {
      const std::size_t n = std::min(cap - next, want);
      std::vector<std::size_t> todo;  // representatives this round simulates
      for (std::size_t j = 0; j < n; ++j) {
        const auto r = rep[ranked[next + j]];
        if (!flow_of.count(r) && std::find(todo.begin(), todo.end(), r) == todo.end()) todo.push_back(r);
      }
      std::vector<Simulated> flow(todo.size());
      run_sims(
          todo.size(),
          [&](std::size_t j) { return simulated(survivors[todo[j]].scenario, net::NetworkModelKind::kFlow); }, flow,
          options.verify_progress);
      for (std::size_t j = 0; j < todo.size(); ++j) flow_of.emplace(todo[j], flow[j]);
      std::vector<Candidate> round(n);
      for (std::size_t j = 0; j < n; ++j) {
        const auto i = ranked[next + j];
        const auto& f = flow_of.at(rep[i]);
        round[j] = scored[i];
        round[j].step_time_s_flow = f.step_time_s;
        round[j].verified_with_flow_model = true;
        round[j].mfu = f.mfu;
        round[j].bottleneck = f.bottleneck;
        round[j].bottleneck_share = f.bottleneck_share;
        price(round[j], offers[survivors[i].offer].offer, f.step_time_s);
      }
      next += n;
      for (auto& c : round) {
        if (within(c, job, options)) {
          verified.push_back(std::move(c));
        } else if (!result.cheapest_rejected_verified || ranks_before(c, *result.cheapest_rejected_verified)) {
          result.cheapest_rejected_verified = c;
        }
      }
      std::stable_sort(verified.begin(), verified.end(), ranks_before);
      if (next >= ranked.size()) break;
      if (verified.size() >= want && ranks_before(verified[want - 1], scored[ranked[next]])) break;
    }
    verified_runs += next;
    if (verified.size() > want) verified.resize(want);
    return verified;
  };
  std::vector<Candidate> verified;
  if (options.per_offer) {
    // The best of each offer, each verified as the top one is (an offer's own ranking).
    for (std::size_t oi = 0; oi < offers.size(); ++oi) {
      std::vector<std::size_t> mine;
      for (auto i : order)
        if (scored[i].offer_index == oi) mine.push_back(i);
      for (auto& c : verify_best(mine, 1)) verified.push_back(std::move(c));
    }
    std::stable_sort(verified.begin(), verified.end(), ranks_before);
  } else {
    verified = verify_best(order, static_cast<std::size_t>(std::max(options.top, 1)));
  }
  result.counts.verified = verified_runs;
  result.wall_s.verify = lap();
  result.candidates = std::move(verified);
  // One line per offer with no candidate.
  std::vector<bool> ranked(offers.size(), false);
  for (std::size_t i = 0; i < scored.size(); ++i)
    if (within(scored[i], job, options)) ranked[scored[i].offer_index] = true;
  for (std::size_t oi = 0; oi < offers.size(); ++oi) {
    if (ranked[oi]) continue;
    const auto& t = tally[oi];
    const auto& space = offers[oi];
    std::string why;
    if (!space.unusable.empty()) {
      why = space.unusable;
    } else if (t.valid == 0) {
      why = "no plan divides its GPUs for this model at the node counts searched";
    } else if (t.fits == 0) {
      why = "does not fit at any plan searched: the closest needs " + fixed(t.best_shortfall_gib, 1) +
            " GiB per GPU more than the GPU has" +
            (options.memory_headroom > 0
                 ? " with the allocator's " + fixed(options.memory_headroom * 100, 0) + "% headroom (--memory-headroom)"
                 : std::string());
    } else if (job.deadline_s > 0 && t.fastest_s > job.deadline_s) {
      why = "past the deadline: the fastest plan takes " + days_text(t.fastest_s) + ", the deadline is " +
            days_text(job.deadline_s);
    } else {
      why = "over budget: the cheapest plan costs " + fixed(t.cheapest, 0) + " " + t.currency + ", the budget is " +
            fixed(options.budget, 0);
    }
    result.rejected.push_back({space.offer.id, why});
  }
  if (!result.candidates.empty()) result.closest.reset();
  return result;
}

}  // namespace cs::sizing
