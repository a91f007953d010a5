#include "sim/serving/serving_sim.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <random>

#include "sim/core/check.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/engine/engine.hpp"
#include "sim/network/topology.hpp"
#include "sim/workload/collective_timing.hpp"
#include "sim/workload/compute_model.hpp"

namespace cs::serving {

namespace {

struct Request {
  int id = 0;
  double arrival = 0;
  std::int64_t input = 0, output = 0;
  std::int64_t prompt = 0;     ///< tokens to prefill (the input; more after a recompute preemption)
  std::int64_t prefilled = 0;  ///< prompt tokens whose KV is cached
  std::int64_t generated = 0;  ///< output tokens sampled so far
  std::int64_t blocks = 0;
  double first_token = -1, finish = -1;
  int replica = -1;
  bool transferred = false;  ///< disaggregated: the KV came from a prefill replica
  bool in_flight = false;    ///< part of a batch still in the pipeline
};

struct Replica {
  int index = 0;
  std::vector<int> ranks;  ///< stage 0's TP group
  models::ServingShape shape;
  ServingMemory memory;
  std::int64_t blocks = 0;
  int pp = 1;
  std::vector<int> stage_layers;
  std::vector<std::vector<int>> stage_ranks;
  std::vector<double> stage_free;  ///< when each pipeline stage finishes its last batch
  int inflight = 0;                ///< batches in the pipeline (at most PP)
  bool prefill_only = false, decode_only = false;
  std::deque<int> waiting;
  std::vector<int> running;  ///< in admission order
  std::int64_t free_blocks = 0;
  std::map<double, double> allreduce_s, allgather_s;       ///< collective time by size
  std::vector<std::map<double, double>> stage_transfer_s;  ///< per stage boundary, activation transfer time by size
};

struct Planned {
  int req = 0;
  std::int64_t chunk = 0;  ///< prefill tokens, or 0 for a decode token
};

enum Kind : std::uint32_t { kArrival = 0, kStepDone = 1, kKvArrived = 2 };

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

Percentiles summarise(const std::vector<double>& v) {
  Percentiles p;
  if (v.empty()) return p;
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  p.p50 = percentile(v, 50);
  p.p90 = percentile(v, 90);
  p.p99 = percentile(v, 99);
  return p;
}

/// Uniform double in [0, 1) from 53 random bits (our own, so results match across libraries).
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::int64_t draw(const LengthDist& d, std::mt19937_64& rng) {
  if (d.lo == d.hi) return d.lo;
  return d.lo + static_cast<std::int64_t>(unit(rng) * static_cast<double>(d.hi - d.lo + 1));
}

class Simulation final : public engine::EventHandler {
 public:
  explicit Simulation(const ServingScenario& s, bool trace)
      : s_(s),
        trace_(trace),
        topo_(net::Topology::build(s.cluster, s.gpus)),
        gemm_(s.profile, s.weights == models::WeightFormat::kFp8 ? calib::Dtype::kFp8 : calib::Dtype::kBf16,
              s.cuda_graphs),
        other_(s.profile, calib::Dtype::kBf16, s.cuda_graphs),
        rng_(s.seed) {
    shape_.tp = s.tp;
    shape_.weights = s.weights;
    shape_.kv_bytes = s.kv_bytes;
    const bool disagg = s.prefill_replicas > 0;
    const int n = disagg ? s.prefill_replicas + s.decode_replicas : s.replicas;
    int next_rank = 0;
    for (int i = 0; i < n; ++i) {
      Replica r;
      r.index = i;
      // Each replica's own TP (disaggregated pools may differ): its op shapes, memory and blocks.
      ServingScenario mine = s;
      mine.tp = s.replica_tp(i);
      mine.pp = s.replica_pp(i);
      r.pp = mine.pp;
      for (int k = 0; k < mine.pp; ++k) {
        r.stage_layers.push_back(static_cast<int>(s.model.layers / mine.pp + (k < s.model.layers % mine.pp ? 1 : 0)));
      }
      r.shape = shape_;
      r.shape.tp = mine.tp;
      r.memory = serving_memory(mine, &r.blocks);
      if (i == n - 1) {
        memory_ = r.memory;  // the report shows the (decode) pool that holds the KV cache longest
        blocks_ = r.blocks;
      }
      for (int k = 0; k < mine.pp; ++k) {
        std::vector<int> stage;
        for (int t = 0; t < mine.tp; ++t) stage.push_back(next_rank++);
        r.stage_ranks.push_back(stage);
      }
      r.ranks = r.stage_ranks.front();
      r.stage_free.assign(static_cast<std::size_t>(mine.pp), 0.0);
      r.stage_transfer_s.resize(static_cast<std::size_t>(mine.pp));
      r.prefill_only = disagg && i < s.prefill_replicas;
      r.decode_only = disagg && i >= s.prefill_replicas;
      r.free_blocks = r.blocks;
      replicas_.push_back(std::move(r));
    }
    kv_area_.assign(replicas_.size(), 0.0);
  }

  ServingResults run() {
    const auto wall0 = std::chrono::steady_clock::now();
    // Requests known up front (all but the closed loop's later ones).
    if (s_.arrivals == Arrivals::kTrace) {
      for (const auto& t : s_.trace) add_request(t.arrival_s, t.input, t.output);
    } else if (s_.arrivals == Arrivals::kQueued) {
      for (std::int64_t i = 0; i < s_.requests; ++i) add_request(0.0, draw(s_.input, rng_), draw(s_.output, rng_));
    } else if (s_.arrivals == Arrivals::kPoisson) {
      double t = 0;
      for (std::int64_t i = 0; i < s_.requests; ++i) {
        t += -std::log(1.0 - unit(rng_)) / s_.rate;
        add_request(t, draw(s_.input, rng_), draw(s_.output, rng_));
      }
    } else {
      for (std::int64_t i = 0; i < std::min(s_.concurrency, s_.requests); ++i)
        add_request(0.0, draw(s_.input, rng_), draw(s_.output, rng_));
    }
    events_ = engine_.run(*this);
    for (const auto& r : reqs_)
      CS_ASSERT(r.finish >= 0, "every request finishes (the KV pool admits at least one request)");
    auto res = results();
    res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return res;
  }

  void handle(const engine::Event& e, engine::Engine& /*engine*/) override {
    const double now = engine_.now().seconds();
    if (e.kind == kArrival) {
      auto& r = reqs_[e.payload];
      auto& rep = replicas_[static_cast<std::size_t>(route(false))];
      r.replica = rep.index;
      rep.waiting.push_back(r.id);
      start_step(rep, now);
    } else if (e.kind == kKvArrived) {
      auto& r = reqs_[e.payload];
      r.prefilled = r.prompt;  // the prompt's KV arrived with the request
      auto& rep = replicas_[static_cast<std::size_t>(route(true))];
      r.replica = rep.index;
      rep.waiting.push_back(r.id);
      start_step(rep, now);
    } else {
      const auto batch = e.payload;
      auto& rep = replicas_[static_cast<std::size_t>(batch_replica_.at(batch))];
      finish_step(rep, batch, now);
      start_step(rep, now);
    }
  }

 private:
  void add_request(double arrival, std::int64_t input, std::int64_t output) {
    Request r;
    r.id = static_cast<int>(reqs_.size());
    r.arrival = arrival;
    r.input = input;
    r.output = output;
    r.prompt = input;
    reqs_.push_back(r);
    engine_.schedule(SimTime::from_seconds(arrival), engine::Phase::kTaskStart,
                     static_cast<std::uint32_t>(replicas_.size()), kArrival, static_cast<std::uint64_t>(r.id));
  }

  int route(bool decode_pool) {
    std::vector<int> pool;
    for (const auto& r : replicas_) {
      if (r.prefill_only && decode_pool) continue;
      if (r.decode_only && !decode_pool) continue;
      pool.push_back(r.index);
    }
    if (s_.router == Router::kRoundRobin) {
      auto& next = decode_pool ? next_decode_ : next_;
      return pool[static_cast<std::size_t>(next++ % static_cast<std::uint64_t>(pool.size()))];
    }
    int best = pool.front();
    for (int i : pool) {
      const auto load = [&](int k) {
        return replicas_[static_cast<std::size_t>(k)].waiting.size() +
               replicas_[static_cast<std::size_t>(k)].running.size();
      };
      if (load(i) < load(best)) best = i;
    }
    return best;
  }

  std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + s_.block_size - 1) / s_.block_size; }

  void free_request(Replica& rep, Request& r) {
    rep.free_blocks += r.blocks;
    r.blocks = 0;
  }

  /// vLLM-style recompute preemption of the newest running request other than `keep`.
  bool preempt_newest(Replica& rep, int keep) {
    for (auto it = rep.running.rbegin(); it != rep.running.rend(); ++it) {
      if (*it == keep || reqs_[static_cast<std::size_t>(*it)].in_flight) continue;
      auto& v = reqs_[static_cast<std::size_t>(*it)];
      free_request(rep, v);
      v.prompt = v.input + v.generated;
      v.prefilled = 0;
      rep.waiting.push_front(v.id);
      rep.running.erase(std::next(it).base());
      ++preemptions_;
      return true;
    }
    return false;
  }

  void plan_continuous(Replica& rep, std::vector<Planned>& plan, models::StepMix& mix) {
    std::int64_t budget = s_.max_tokens;
    const std::int64_t chunk_cap =
        s_.chunked_prefill > 0 ? s_.chunked_prefill : std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < rep.running.size() && budget > 0; ++i) {
      const int id = rep.running[i];
      auto& r = reqs_[static_cast<std::size_t>(id)];
      if (r.in_flight) continue;  // its previous token is still in the pipeline
      if (r.prefilled < r.prompt) {
        const std::int64_t chunk = std::min({r.prompt - r.prefilled, budget, chunk_cap});
        add_prefill(r, chunk, plan, mix);
        budget -= chunk;
        continue;
      }
      // Decode: the last sampled token's K/V is appended this step.
      const std::int64_t kv_tokens = r.input + r.generated;
      bool dropped_self = false;
      while (blocks_for(kv_tokens) - r.blocks > rep.free_blocks) {
        if (!preempt_newest(rep, id)) {
          dropped_self = true;
          break;
        }
      }
      if (dropped_self) continue;
      const auto more = blocks_for(kv_tokens) - r.blocks;
      rep.free_blocks -= std::max<std::int64_t>(0, more);
      r.blocks += std::max<std::int64_t>(0, more);
      plan.push_back({id, 0});
      mix.tokens += 1;
      mix.sampled += 1;
      mix.decode_context += static_cast<double>(kv_tokens);
      mix.kv_read_tokens += static_cast<double>(kv_tokens - 1);
      budget -= 1;
    }
    while (!rep.waiting.empty() && static_cast<std::int64_t>(rep.running.size()) < s_.max_batch && budget > 0) {
      auto& r = reqs_[static_cast<std::size_t>(rep.waiting.front())];
      const bool has_kv = r.prefilled >= r.prompt;  // arrived from a prefill replica
      const std::int64_t need = blocks_for(has_kv ? r.input + r.generated : r.prompt);
      if (need > rep.free_blocks) break;
      if (!has_kv && s_.chunked_prefill == 0 && r.prompt - r.prefilled > budget) break;
      rep.waiting.pop_front();
      rep.free_blocks -= need;
      r.blocks = need;
      rep.running.push_back(r.id);
      if (has_kv) {
        // KV arrived from a prefill replica: decode straight away.
        plan.push_back({r.id, 0});
        mix.tokens += 1;
        mix.sampled += 1;
        mix.decode_context += static_cast<double>(r.input + r.generated);
        mix.kv_read_tokens += static_cast<double>(r.input + r.generated - 1);
        budget -= 1;
        continue;
      }
      const std::int64_t chunk = std::min({r.prompt - r.prefilled, budget, chunk_cap});
      add_prefill(r, chunk, plan, mix);
      budget -= chunk;
    }
  }

  void add_prefill(const Request& r, std::int64_t chunk, std::vector<Planned>& plan, models::StepMix& mix) {
    plan.push_back({r.id, chunk});
    const double c = static_cast<double>(chunk);
    mix.tokens += c;
    mix.prefill_pairs += c * (static_cast<double>(r.prefilled) + (c + 1) / 2);
    mix.kv_read_tokens += static_cast<double>(r.prefilled);
    if (r.prefilled + chunk == r.prompt) mix.sampled += 1;
  }

  void plan_static(Replica& rep, std::vector<Planned>& plan, models::StepMix& mix) {
    bool any_live = false;
    for (int id : rep.running) any_live = any_live || reqs_[static_cast<std::size_t>(id)].finish < 0;
    if (!any_live) {
      for (int id : rep.running) free_request(rep, reqs_[static_cast<std::size_t>(id)]);
      rep.running.clear();
      // A static batch reserves every sequence's full length (prompt + output) up front.
      while (!rep.waiting.empty() && static_cast<std::int64_t>(rep.running.size()) < s_.max_batch) {
        auto& r = reqs_[static_cast<std::size_t>(rep.waiting.front())];
        const auto need = blocks_for(r.input + r.output);
        if (need > rep.free_blocks) break;
        rep.waiting.pop_front();
        rep.free_blocks -= need;
        r.blocks = need;
        rep.running.push_back(r.id);
      }
    }
    bool prefill = false;
    for (int id : rep.running)
      prefill = prefill || reqs_[static_cast<std::size_t>(id)].prefilled < reqs_[static_cast<std::size_t>(id)].prompt;
    for (int id : rep.running) {
      auto& r = reqs_[static_cast<std::size_t>(id)];
      if (prefill) {
        if (r.prefilled < r.prompt) add_prefill(r, r.prompt - r.prefilled, plan, mix);
        continue;
      }
      // Finished sequences keep their slot and their compute until the whole batch is done.
      const double kv_tokens = static_cast<double>(r.input + std::min(r.generated, r.output));
      plan.push_back({id, 0});
      mix.tokens += 1;
      mix.sampled += 1;
      mix.decode_context += kv_tokens;
      mix.kv_read_tokens += kv_tokens - 1;
    }
  }

  double collective_s(Replica& rep, coll::CollectiveOp op, double bytes) {
    auto& cache = op == coll::CollectiveOp::kAllReduce ? rep.allreduce_s : rep.allgather_s;
    auto it = cache.find(bytes);
    if (it != cache.end()) return it->second;
    const double t = workload::time_collective(topo_, op, coll::Algorithm::kAuto, rep.ranks, bytes,
                                               s_.profile.collective_latency.value, net::NetworkModelKind::kFlow,
                                               &s_.profile.collectives)
                         .seconds;
    cache.emplace(bytes, t);
    return t;
  }

  double items_seconds(Replica& rep, const std::vector<models::Item>& items) {
    double t = 0;
    for (const auto& it : items) {
      if (it.comm == models::TpComm::kAllReduce)
        t += collective_s(rep, coll::CollectiveOp::kAllReduce, it.comm_bytes);
      else if (it.comm == models::TpComm::kAllGather)
        t += collective_s(rep, coll::CollectiveOp::kAllGather, it.comm_bytes);
      else if (it.op.kind == models::OpKind::kGemm)
        t += gemm_.seconds(it.op);
      else
        t += other_.seconds(it.op);
    }
    return t;
  }

  /// Runs a batch through the replica's pipeline stages (FIFO per stage, activations sent between
  /// them) starting at `now`; returns how long until it leaves the last stage.
  /// Times are relative to `now`, so that without PP the step lasts exactly its kernels' sum.
  double pipeline_seconds(Replica& rep, const models::StepMix& mix, double now) {
    const double layer = items_seconds(rep, models::serving_layer(s_.model, mix, rep.shape));
    const double head = items_seconds(rep, models::serving_head(s_.model, mix, rep.shape));
    double t = 0;
    for (int k = 0; k < rep.pp; ++k) {
      double stage = static_cast<double>(rep.stage_layers[static_cast<std::size_t>(k)]) * layer;
      if (k == 0) stage += s_.profile.serving_step_overhead.value;
      if (k + 1 == rep.pp) stage += head;
      const double start = std::max(t, rep.stage_free[static_cast<std::size_t>(k)] - now);
      t = start + stage;
      rep.stage_free[static_cast<std::size_t>(k)] = now + t;
      if (k + 1 < rep.pp)
        t += stage_transfer_s(rep, k, mix.tokens * static_cast<double>(s_.model.hidden) * 2.0 / rep.shape.tp);
    }
    return t;
  }

  double stage_transfer_s(Replica& rep, int k, double bytes) {
    auto& cache = rep.stage_transfer_s[static_cast<std::size_t>(k)];
    auto it = cache.find(bytes);
    if (it != cache.end()) return it->second;
    const double t = workload::time_collective(topo_, coll::CollectiveOp::kSendRecv, coll::Algorithm::kAuto,
                                               {rep.stage_ranks[static_cast<std::size_t>(k)].front(),
                                                rep.stage_ranks[static_cast<std::size_t>(k) + 1].front()},
                                               bytes, s_.profile.collective_latency.value)
                         .seconds;
    cache.emplace(bytes, t);
    return t;
  }

  /// Starts batches while the pipeline has room (one batch without PP, up to PP with it).
  void start_step(Replica& rep, double now) {
    while (rep.inflight < rep.pp) {
      plan_.clear();
      models::StepMix mix;
      if (s_.scheduler == Scheduler::kStatic)
        plan_static(rep, plan_, mix);
      else
        plan_continuous(rep, plan_, mix);
      if (plan_.empty()) return;  // idle until an arrival or a batch leaves the pipeline
      CS_ASSERT(rep.free_blocks >= 0, "every admitted token's KV fits in the replica's blocks");
      ++rep.inflight;
      for (const auto& p : plan_) reqs_[static_cast<std::size_t>(p.req)].in_flight = true;
      const double dt = pipeline_seconds(rep, mix, now);
      const double end = now + dt;
      const auto batch = next_batch_++;
      plans_[batch] = plan_;
      batch_replica_[batch] = rep.index;
      const double used =
          1.0 - static_cast<double>(rep.free_blocks) / static_cast<double>(std::max<std::int64_t>(1, rep.blocks));
      kv_area_[static_cast<std::size_t>(rep.index)] += used * dt / rep.pp;
      kv_max_ = std::max(kv_max_, used);
      ++steps_;
      if (trace_) step_spans_.push_back({rep.index, now, end, mix.tokens, static_cast<double>(plan_.size())});
      engine_.schedule(engine_.now() + SimTime::from_seconds(dt), engine::Phase::kTaskEnd,
                       static_cast<std::uint32_t>(rep.index), kStepDone, batch);
    }
  }

  void finish_step(Replica& rep, std::uint64_t batch, double now) {
    --rep.inflight;
    const auto plan = std::move(plans_.at(batch));
    plans_.erase(batch);
    batch_replica_.erase(batch);
    for (const auto& p : plan) reqs_[static_cast<std::size_t>(p.req)].in_flight = false;
    for (const auto& p : plan) {
      auto& r = reqs_[static_cast<std::size_t>(p.req)];
      if (r.finish >= 0) continue;  // static batching padding
      if (p.chunk > 0) {
        r.prefilled += p.chunk;
        if (r.prefilled < r.prompt) continue;
        ++r.generated;
        if (r.first_token < 0) r.first_token = now;
        if (rep.prefill_only && r.generated < r.output) {
          // Disaggregated: hand the KV cache to the decode pool.
          free_request(rep, r);
          std::erase(rep.running, r.id);
          r.transferred = true;
          // The prompt's KV, all TP ranks' shards, moved by as many GPU pairs as the smaller pool has.
          const int pairs = std::min(rep.shape.tp, replicas_.back().shape.tp);
          const double bytes =
              static_cast<double>(r.input) * models::kv_bytes_per_token(s_.model, rep.shape) * rep.shape.tp / pairs;
          engine_.schedule(engine_.now() + SimTime::from_seconds(kv_transfer_s(bytes)), engine::Phase::kTaskStart,
                           static_cast<std::uint32_t>(replicas_.size()), kKvArrived, static_cast<std::uint64_t>(r.id));
          continue;
        }
      } else {
        ++r.generated;
      }
      if (r.generated >= r.output) complete(rep, r, now);
    }
  }

  double kv_transfer_s(double bytes_per_gpu) {
    auto it = kv_transfer_.find(bytes_per_gpu);
    if (it != kv_transfer_.end()) return it->second;
    // Each TP rank of the prefill replica sends its shard to the same rank of a decode replica.
    const int src = replicas_.front().ranks.front();
    const int dst = replicas_.back().ranks.front();
    const double t = workload::time_collective(topo_, coll::CollectiveOp::kSendRecv, coll::Algorithm::kAuto, {src, dst},
                                               bytes_per_gpu, s_.profile.collective_latency.value)
                         .seconds;
    kv_transfer_.emplace(bytes_per_gpu, t);
    return t;
  }

  void complete(Replica& rep, Request& r, double now) {
    r.finish = now;
    if (s_.scheduler == Scheduler::kContinuous) {
      free_request(rep, r);
      std::erase(rep.running, r.id);
    }
    if (s_.arrivals == Arrivals::kClosedLoop && static_cast<std::int64_t>(reqs_.size()) < s_.requests) {
      add_request(now, draw(s_.input, rng_), draw(s_.output, rng_));
    }
  }

  ServingResults results() {
    ServingResults r;
    r.name = s_.name;
    r.model = s_.model.id;
    r.cluster = s_.cluster.id;
    r.profile = s_.profile.id;
    r.profile_origin = calib::provenance_name(s_.profile.origin);
    r.weights = models::weight_format_name(s_.weights);
    r.kv_dtype = s_.kv_bytes == 1.0 ? "fp8" : "bf16";
    r.scheduler = s_.scheduler == Scheduler::kStatic ? "static" : "continuous";
    r.gpus = s_.gpus;
    r.tp = s_.tp;
    r.replicas = static_cast<int>(replicas_.size());
    r.requests = static_cast<std::int64_t>(reqs_.size());
    r.steps = steps_;
    r.preemptions = preemptions_;
    r.memory = memory_;
    r.kv_blocks = blocks_;
    r.fits = blocks_ > 0;
    std::vector<double> ttft, tpot, e2e;
    double first = 1e300, last = 0;
    std::int64_t goodput = 0;
    for (const auto& q : reqs_) {
      first = std::min(first, q.arrival);
      last = std::max(last, q.finish);
      r.input_tokens += q.input;
      r.output_tokens += q.output;
      ttft.push_back(q.first_token - q.arrival);
      e2e.push_back(q.finish - q.arrival);
      const double per_token = q.output > 1 ? (q.finish - q.first_token) / static_cast<double>(q.output - 1) : 0.0;
      if (q.output > 1) tpot.push_back(per_token);
      const bool ok = (!s_.slo_ttft_s || q.first_token - q.arrival <= *s_.slo_ttft_s) &&
                      (!s_.slo_tpot_s || per_token <= *s_.slo_tpot_s);
      goodput += ok ? 1 : 0;
      if (trace_ && r.request_spans.size() < 5000)
        r.request_spans.push_back({q.id, q.arrival, q.first_token, q.finish, q.replica});
    }
    r.makespan_s = last - first;
    r.ttft = summarise(ttft);
    r.tpot = summarise(tpot);
    r.e2e = summarise(e2e);
    const double span = std::max(r.makespan_s, 1e-12);
    r.output_tokens_per_s = static_cast<double>(r.output_tokens) / span;
    r.output_tokens_per_s_per_gpu = r.output_tokens_per_s / r.gpus;
    r.input_tokens_per_s = static_cast<double>(r.input_tokens) / span;
    r.requests_per_s = static_cast<double>(r.requests) / span;
    if (s_.slo_ttft_s || s_.slo_tpot_s) r.goodput_requests_per_s = static_cast<double>(goodput) / span;
    const double mean_len = s_.trace.empty() ? s_.input.mean() + s_.output.mean() : [&] {
      double sum = 0;
      for (const auto& t : s_.trace) sum += static_cast<double>(t.input + t.output);
      return sum / static_cast<double>(s_.trace.size());
    }();
    r.max_concurrency = std::min<std::int64_t>(
        s_.max_batch, blocks_ / std::max<std::int64_t>(1, blocks_for(static_cast<std::int64_t>(std::ceil(mean_len)))));
    if (s_.prefill_replicas == 0) r.max_concurrency *= static_cast<std::int64_t>(replicas_.size());
    double area = 0;
    for (double a : kv_area_) area += a;
    r.kv_utilisation_mean = area / std::max(1e-12, span * static_cast<double>(replicas_.size()));
    r.kv_utilisation_max = kv_max_;
    if (s_.offer) {
      ServingResults::Cost c;
      c.offer = s_.offer->id;
      c.currency = s_.offer->currency;
      c.price_per_hour = s_.offer->price_per_hour();
      const double cost = c.price_per_hour * span / 3600.0;
      c.per_million_output_tokens = cost / static_cast<double>(r.output_tokens) * 1e6;
      c.per_million_tokens = cost / static_cast<double>(r.output_tokens + r.input_tokens) * 1e6;
      r.cost = c;
    }
    r.events = events_;
    r.step_spans = std::move(step_spans_);
    return r;
  }

  const ServingScenario& s_;
  bool trace_;
  net::Topology topo_;
  workload::ComputeModel gemm_, other_;
  models::ServingShape shape_;
  ServingMemory memory_;
  std::int64_t blocks_ = 0;
  std::mt19937_64 rng_;
  engine::Engine engine_;
  std::vector<Request> reqs_;
  std::vector<Replica> replicas_;
  std::map<std::uint64_t, std::vector<Planned>> plans_;  ///< batches in flight
  std::map<std::uint64_t, int> batch_replica_;
  std::uint64_t next_batch_ = 0;

  std::vector<Planned> plan_;
  std::map<double, double> kv_transfer_;
  std::vector<double> kv_area_;
  double kv_max_ = 0;
  std::int64_t steps_ = 0, preemptions_ = 0;
  std::uint64_t next_ = 0, next_decode_ = 0, events_ = 0;
  std::vector<StepSpan> step_spans_;
};

}  // namespace

ServingMemory serving_memory(const ServingScenario& s, std::int64_t* kv_blocks) {
  models::ServingShape shape;
  shape.tp = s.tp;
  shape.weights = s.weights;
  shape.kv_bytes = s.kv_bytes;
  ServingMemory m;
  m.capacity = s.profile.hbm_capacity.value;
  // With PP each GPU holds its stage's layers (the largest stage) and one vocabulary table (the
  // embedding on the first stage, the LM head on the last).
  const double layers = static_cast<double>(s.model.layers);
  const double share = std::ceil(layers / s.pp) / layers;
  const double vocab =
      static_cast<double>((s.model.vocab + s.tp - 1) / s.tp) * static_cast<double>(s.model.hidden) * 2.0;
  const double tables = vocab * (s.model.tied_embeddings ? 1.0 : 2.0);
  const double whole = models::serving_weight_bytes(s.model, shape);
  m.weights = s.pp > 1 ? (whole - tables) * share + vocab : whole;
  // Activation workspace at the largest step: hidden, QKV, MLP tensors of max_tokens tokens in
  // bf16, and fp32 logits for max_batch sequences.
  models::StepShape one;
  one.tp = s.tp;
  const auto d = models::layer_dims(s.model, one);
  const double v = static_cast<double>((s.model.vocab + s.tp - 1) / s.tp);
  m.activations = static_cast<double>(s.max_tokens) * 2.0 * (3 * d.hidden + d.q + 2 * d.kv + d.up + d.ffn) +
                  static_cast<double>(s.max_batch) * v * 4.0;
  m.other = s.profile.runtime_reserved.value;
  const double free = m.capacity - m.weights - m.activations - m.other;
  m.kv_cache = free > 0 ? s.kv_fraction * free : 0.0;
  m.total = m.weights + m.activations + m.other + m.kv_cache;
  const double per_block = static_cast<double>(s.block_size) * models::kv_bytes_per_token(s.model, shape) * share;
  if (kv_blocks) *kv_blocks = static_cast<std::int64_t>(std::floor(m.kv_cache / per_block));
  return m;
}

ServingResults simulate_serving(const ServingScenario& s, bool record_trace) {
  // The tightest replica decides whether a request fits (pools may have different TP).
  std::int64_t blocks = 0;
  auto mem = serving_memory(s, &blocks);
  const int replicas = s.prefill_replicas > 0 ? s.prefill_replicas + s.decode_replicas : s.replicas;
  for (int i = 0; i < replicas; ++i) {
    ServingScenario mine = s;
    mine.tp = s.replica_tp(i);
    mine.pp = s.replica_pp(i);
    std::int64_t b = 0;
    const auto m = serving_memory(mine, &b);
    if (b < blocks) {
      blocks = b;
      mem = m;
    }
  }
  models::ServingShape shape;
  shape.tp = s.tp;
  shape.kv_bytes = s.kv_bytes;
  std::int64_t longest = s.input.hi + s.output.hi;
  for (const auto& t : s.trace) longest = std::max(longest, t.input + t.output);
  const std::int64_t need = (longest + s.block_size - 1) / s.block_size;
  if (blocks < need) {
    const double gib = 1073741824.0;
    const std::string msg = "does not fit: " + s.model.id + " needs " + fixed(mem.weights / gib, 1) +
                            " GiB of weights, " + fixed(mem.activations / gib, 1) + " GiB of activations and " +
                            fixed(mem.other / gib, 1) + " GiB of runtime per GPU (TP " + std::to_string(s.tp) + ", " +
                            models::weight_format_name(s.weights) + " weights), leaving " +
                            fixed(mem.kv_cache / gib, 2) + " GiB of KV cache (" + std::to_string(blocks) +
                            " blocks) on a " + fixed(mem.capacity / gib, 1) + " GiB GPU; the longest request needs " +
                            std::to_string(need) + " blocks. Try a larger TP, quantised weights or shorter requests";
    if (!s.allow_oom) throw InfeasibleError(s.name.empty() ? msg : s.name + ": " + msg);
  }
  Simulation sim(s, record_trace);
  return sim.run();
}

}  // namespace cs::serving
