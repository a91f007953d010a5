#include "sim/serving/serving_sim.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <tuple>

#include "sim/core/check.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/topology.hpp"
#include "sim/serving/arrival_clock.hpp"
#include "sim/serving/batch_scheduler.hpp"
#include "sim/serving/batch_tracker.hpp"
#include "sim/serving/isolated_stages.hpp"
#include "sim/serving/kv_transfer.hpp"
#include "sim/serving/replicas.hpp"
#include "sim/serving/request_source.hpp"
#include "sim/serving/router.hpp"
#include "sim/serving/run_record.hpp"
#include "sim/serving/serving_metrics.hpp"
#include "sim/serving/stage_tasks.hpp"
#include "sim/serving/step_builder.hpp"
#include "sim/serving/step_program.hpp"
#include "sim/serving/step_settle.hpp"
#include "sim/workload/executor.hpp"

namespace cs::serving {

namespace {

using workload::Category;
using workload::Stream;
using workload::TaskId;

/// One serving run as an open workload on the executor: the adapter between the seams (request
/// source, routers, batch schedulers with their KV caches, step programs) and the executor. When a
/// batch leaves a replica's pipeline its scheduler plans the next, whose tasks (kernels, TP
/// collectives, pipeline sends) join the running simulation; disaggregated KV caches move as
/// send/recv tasks on the same links.
class ServingRun final : public workload::TaskSource {
 public:
  ServingRun(const ServingScenario& s, const ServingRunOptions& opt)
      : s_(s),
        opt_(opt),
        machine_(opt.topology ? opt.topology : std::make_shared<const net::Topology>(serving_topology(s))),
        topo_(*machine_),
        programs_(s),
        mixed_s_(s.mix ? std::optional<ServingScenario>(s.replica(s.first_mixed())) : std::nullopt),
        mixed_programs_(mixed_s_ ? std::optional<StepProgramBuilder>(std::in_place, *mixed_s_) : std::nullopt),
        source_(s),
        router_(make_router(s.router)),
        decode_router_(make_router(s.router)),
        step_(static_cast<double>(s.model.sliding_window), s.mtp_acceptance > 0),
        mtp_rng_(s.seed ^ 0x6d7470u) {  // "mtp": a stream apart from the workload's draws
    auto built = make_replicas(s, opt.oom_longest_blocks);
    replicas_ = std::move(built.replicas);
    memory_ = built.memory;
    blocks_ = built.blocks;
    oom_ = built.oom;
    const bool disagg = s.prefill_replicas > 0;
    record_.emplace(replicas_.size(), opt.record_trace);
    if (disagg) kv_pairs_ = std::min(replicas_.front().shape.tp, replicas_.back().shape.tp);
  }

  ServingResults run() {
    const auto wall0 = std::chrono::steady_clock::now();
    // Requests known up front (all but the closed loop's later ones), in arrival order.
    reqs_ = source_.initial();
    clock_.start(arrival_order(reqs_));
    workload::ExecutorOptions eo;
    eo.network = net::NetworkModelKind::kFlow;
    eo.collective_latency_s = s_.profile.collective_latency.value;
    if (s_.mix) {
      // Each box kind's collectives from its own profile's measurements.
      eo.clusters = {{s_.cluster.id, &s_.profile.collectives, &s_.profile.kernel_tables, eo.collective_latency_s},
                     {s_.mix->cluster.id, &s_.mix->profile.collectives, &s_.mix->profile.kernel_tables,
                      s_.mix->profile.collective_latency.value}};
    } else {
      eo.curves = &s_.profile.collectives;
      eo.kernel_tables = &s_.profile.kernel_tables;
    }
    const auto log = workload::simulate_open(s_.all_gpus(), topo_, eo, *this);
    events_ = log.events;
    for (const auto& r : reqs_)
      CS_ASSERT(r.finished(), "every request finishes (the KV pool admits at least one request)");
    auto res = serving_results(s_, run_log(), opt_.record_trace);
    res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return res;
  }

  void begin(workload::OpenGraph& g) override {
    g_ = &g;
    for (auto& rep : replicas_) {
      for (std::size_t k = 0; k < rep.stages.size(); ++k) {
        auto& st = rep.stages[k];
        st.group = g.add_group(st.ranks);
        if (k + 1 < rep.stages.size()) st.to_next = g.add_group({st.ranks.front(), rep.stages[k + 1].ranks.front()});
      }
    }
    mark_isolated(topo_, replicas_, kv_pairs_, opt_.fast_path);
    arrive_due();
  }

  void ended(TaskId id, const workload::TaskSpan& span, workload::OpenGraph& g) override {
    g_ = &g;
    tasks_.ended(id, span.end - span.start);
    const Purpose p = batches_.take(id);
    switch (p.kind) {
      case Purpose::kNone: break;
      case Purpose::kArrivals:
        clock_.fired(g.now());
        arrive_due();
        break;
      case Purpose::kStepEnd: step_ended(p.id); break;
      case Purpose::kResume: {
        const Batch& batch = batches_.at(p.id);
        if (batch.next == batch.program.size()) {
          step_ended(p.id);
        } else {
          resume(p.id);
        }
        break;
      }
      case Purpose::kKvPart: {
        auto& r = reqs_[p.id];
        --tasks_.transfers().in_flight;
        if (--r.kv_parts_left == 0) kv_arrived(r);
        break;
      }
    }
  }

 private:
  /// A replica's weight behind the router: its box kind's (ServingRunOptions::kind_weights).
  double speed_of(const Replica& rep) const {
    if (opt_.kind_weights.size() < 2) return 1.0;
    return opt_.kind_weights[s_.mixed_replica(rep.index) ? 1 : 0];
  }

  /// The step programs of a replica's box kind (a mixed fleet's second kind has its own profile).
  StepProgramBuilder& programs_for(const Replica& rep) {
    return s_.mixed_replica(rep.index) ? *mixed_programs_ : programs_;
  }

  /// Every request due now joins a replica, one at a time (each may start a batch); then a timer
  /// for the next arrival.
  void arrive_due() {
    const SimTime now = g_->now();
    while (const auto id = clock_.pop_due(now, reqs_)) {
      auto& r = reqs_[static_cast<std::size_t>(*id)];
      auto& rep = replicas_[static_cast<std::size_t>(route(false))];
      r.replica = rep.index;
      rep.queue.waiting.push_back(r.id);
      start_step(rep);
    }
    if (const auto at = clock_.next_at(reqs_)) wake_at(*at);
  }

  /// A timer: a task of no stream that ends at `at`. On the last GPU's clock, so that at equal
  /// times every step that ends then is seen first (a closed loop's new request joins the batch
  /// after the one planned when its predecessor finished, as a real server's queue does).
  void wake_at(SimTime at) {
    if (!clock_.arm(at)) return;  // a timer fires by then
    const auto id =
        g_->add_compute(s_.all_gpus() - 1, Stream::kNone, Category::kForward, "serving.arrivals", at - g_->now());
    batches_.tag(id, Purpose::kArrivals);
  }

  /// The replica of the colocated (or prefill) pool, or of the decode pool, that takes a request.
  int route(bool decode_pool) {
    pool_.clear();
    for (const auto& r : replicas_) {
      if (r.prefill_only && decode_pool) continue;
      if (r.decode_only && !decode_pool) continue;
      pool_.push_back({r.index, r.queue.waiting.size() + r.queue.running.size() + static_cast<std::size_t>(r.incoming),
                       speed_of(r)});
    }
    return (decode_pool ? *decode_router_ : *router_).pick(pool_);
  }

  void step_ended(std::uint64_t b) {
    auto& rep = replicas_[static_cast<std::size_t>(batches_.at(b).replica)];
    finish_step(rep, b);
    start_step(rep);
  }

  /// One isolated stage (no PP): what is known as one task, a collective of a size not seen yet
  /// through the flow model, and the batch resumes when it ends (StageTasks::resume).
  void resume(std::uint64_t b) {
    Batch& batch = batches_.at(b);
    const auto& rep = replicas_[static_cast<std::size_t>(batch.replica)];
    const auto added = tasks_.resume(*g_, rep.stages.front(), batch.program, batch.next, transfers_wait(rep));
    batch.busy_until = added.end;
    batches_.tag(added.id, added.last ? Purpose::kStepEnd : Purpose::kResume, b);
  }

  /// The earliest time a KV transfer not yet started could start, `self` aside.
  SimTime transfers_wait(const Replica& self) const {
    return kv_transfer_bound(g_->now(), self, replicas_, batches_, clock_.next_at(reqs_), source_.closed_loop());
  }

  /// Starts batches while the pipeline has room (one batch without PP, up to PP with it).
  void start_step(Replica& rep) {
    while (rep.inflight < rep.pp()) {
      step_.clear();
      rep.scheduler->plan(rep.queue, reqs_, step_);
      if (step_.empty()) return;  // idle until an arrival or a batch leaves the pipeline
      ++rep.inflight;
      for (const auto& p : step_.plan) reqs_[static_cast<std::size_t>(p.req)].in_flight = true;
      const std::uint64_t b = batches_.acquire();
      Batch& batch = batches_.at(b);
      batch.replica = rep.index;
      std::swap(batch.plan, step_.plan);  // both keep their capacity (batches are reused)
      batch.next = 0;
      rep.batch = b;
      batch.start = g_->now();
      batch.kv_used = rep.queue.kv.used();
      record_->started(batch, step_.mix.tokens);
      add_batch(rep, b);
    }
  }

  /// The batch's tasks: each stage's layers (the first with the step overhead, the last with the
  /// LM head), stages joined by send/recv of the activations; its end is the last stage's end.
  void add_batch(const Replica& rep, std::uint64_t b) {
    // The report's imbalance is the (decode) pool's whose EP it names: the last replica's.
    const bool counts = s_.model.is_moe() && rep.shape.ep > 1 && (s_.prefill_replicas == 0 || rep.decode_only);
    programs_for(rep).build(rep.shape, step_.mix, step_.mtp_mix, static_cast<std::int64_t>(batches_.at(b).plan.size()),
                            counts);
    if (resumes(rep)) {
      programs_for(rep).stage_program(rep.place(0), batches_.at(b).program);
      resume(b);
      return;
    }
    std::optional<TaskId> send;
    TaskId last{};
    for (int k = 0; k < rep.pp(); ++k) {
      const auto& st = rep.stages[static_cast<std::size_t>(k)];
      programs_for(rep).stage_program(rep.place(k), program_);
      const auto [first, end] = tasks_.add_stage(*g_, st, program_);
      if (send) g_->depend(*send, first);
      last = end;
      if (k + 1 < rep.pp()) {
        const double bytes = step_.mix.tokens * static_cast<double>(s_.model.hidden) * 2.0 / rep.shape.tp;
        send = g_->add_collective(st.to_next, Stream::kNone, Category::kPpComm, "pp.send",
                                  coll::CollectiveOp::kSendRecv, bytes);
        g_->depend(end, *send);
      }
    }
    batches_.tag(last, Purpose::kStepEnd, b);
  }

  void finish_step(Replica& rep, std::uint64_t b) {
    const SimTime now = g_->now();
    --rep.inflight;
    batches_.release(b);  // reused by the next batch planned, after this function
    const Batch& batch = batches_.at(b);
    for (const auto& p : batch.plan) reqs_[static_cast<std::size_t>(p.req)].in_flight = false;
    record_->finished(batch, now, rep.pp(), rep.queue.running.size());
    settle_step(batch.plan, reqs_, now, rep.prefill_only, s_.mtp_acceptance, mtp_rng_, settled_);
    for (const auto& a : settled_.actions) {
      auto& r = reqs_[static_cast<std::size_t>(a.req)];
      if (a.kind == StepSettled::Action::Kind::kSendKv) {
        rep.queue.kv.release(r);
        std::erase(rep.queue.running, r.id);
        send_kv(rep, r);
      } else {
        complete(rep, r);
      }
    }
    record_->produced(now, settled_.produced);
  }

  /// Disaggregated: the prompt's KV cache moves to a decode replica (add_kv_transfer).
  void send_kv(const Replica& from, Request& r) {
    auto& to = replicas_[static_cast<std::size_t>(route(true))];
    r.replica = to.index;
    ++to.incoming;
    r.kv_parts_left = from.shape.dp_attention ? 1 : kv_pairs_;
    auto& watch = tasks_.transfers();
    watch.in_flight += r.kv_parts_left;
    ++watch.started;
    for (const auto id : add_kv_transfer(*g_, s_, from, to, r, kv_pairs_))
      batches_.tag(id, Purpose::kKvPart, static_cast<std::uint64_t>(r.id));
  }

  void kv_arrived(Request& r) {
    r.prefilled = r.prompt;  // the prompt's KV arrived with the request
    auto& rep = replicas_[static_cast<std::size_t>(r.replica)];
    --rep.incoming;
    rep.queue.waiting.push_back(r.id);
    start_step(rep);
  }

  void complete(Replica& rep, Request& r) {
    const SimTime now = g_->now();
    r.finish = now;
    if (opt_.on_request_done) opt_.on_request_done();
    if (!rep.scheduler->keeps_finished()) {
      rep.queue.kv.release(r);
      std::erase(rep.queue.running, r.id);
    }
    if (auto next = source_.on_finish(now, reqs_.size())) {
      reqs_.push_back(*next);
      clock_.add(next->id);
      wake_at(now);
    }
  }

  /// The run's log (requests, token times and counters; serving_results makes the figures).
  ServingLog run_log() {
    ServingLog log;
    log.replicas = static_cast<int>(replicas_.size());
    if (s_.prefill_replicas > 0) {
      const auto pool = [&](int replicas, int first) {
        const Replica& rep = replicas_[static_cast<std::size_t>(first)];
        return ServingResults::Pool{replicas, rep.shape.tp, rep.pp(), std::max(1, rep.shape.ep)};
      };
      log.pools = ServingResults::Pools{pool(s_.prefill_replicas, 0), pool(s_.decode_replicas, s_.prefill_replicas)};
    }
    record_->into(log);
    for (const auto& rep : replicas_) log.preemptions += rep.scheduler->preemptions();
    programs_.count_into(log);
    if (mixed_programs_) mixed_programs_->count_into(log);
    log.memory = memory_;
    log.kv_blocks = blocks_;
    log.oom = oom_;
    log.decode_pool = replicas_.back().queue.kv;
    log.requests = std::move(reqs_);
    log.gpus = s_.all_gpus();
    log.moe_ep = std::max(1, replicas_.back().shape.ep);  // the (decode) pool the report's memory is of
    log.collectives_s = tasks_.collectives_s();
    log.events = events_;
    return log;
  }

  const ServingScenario& s_;
  ServingRunOptions opt_;
  std::shared_ptr<const net::Topology> machine_;  ///< the caller's, or this run's own
  const net::Topology& topo_;
  StepProgramBuilder programs_;
  std::optional<ServingScenario>
      mixed_s_;  ///< a mixed fleet's second kind as its replicas run it (programs_ keep a reference)
  std::optional<StepProgramBuilder> mixed_programs_;  ///< a mixed fleet's second box kind's
  RequestSource source_;
  std::unique_ptr<RequestRouter> router_, decode_router_;  ///< the colocated (or prefill) pool's, the decode pool's
  StepBuilder step_;                                       ///< the batch being planned
  std::mt19937_64 mtp_rng_;
  ServingMemory memory_;
  std::int64_t blocks_ = 0;
  workload::OpenGraph* g_ = nullptr;  ///< the running graph (set by each call of the executor)
  std::vector<Request> reqs_;
  ArrivalClock clock_;  ///< which requests are due, and the arrivals timer
  std::vector<Replica> replicas_;
  std::vector<ReplicaLoad> pool_;  ///< route's scratch
  int kv_pairs_ = 0;
  BatchTracker batches_;  ///< batches in flight, and why each task is followed
  StageTasks tasks_;      ///< stage programs onto the executor, collective times remembered
  StageProgram program_;
  StepSettled settled_;              ///< finish_step's scratch
  std::optional<RunRecord> record_;  ///< steps, KV use, tokens out, spans
  std::uint64_t events_ = 0;
  bool oom_ = false;  ///< a pool was given the KV blocks its memory lacks (allow_oom)
};

}  // namespace

net::Topology serving_topology(const ServingScenario& s) {
  auto own = s.nodes > 1 ? net::Topology::build(s.cluster, s.cluster.gpus, s.nodes, *s.fabric)
                         : net::Topology::build(s.cluster, s.gpus);
  if (!s.mix) return own;
  // A mixed fleet: the second kind's boxes beside, each holding as many of its replicas as fit.
  std::vector<net::Topology> boxes;
  for (int left = s.mix->replicas; left > 0; left -= s.mix->per_box())
    boxes.push_back(net::Topology::build(s.mix->cluster, std::min(left, s.mix->per_box()) * s.mix->tp));
  std::vector<const net::Topology*> parts{&own};
  for (const auto& b : boxes) parts.push_back(&b);
  // Disaggregated: the prompts' KV caches cross the link between the pools' boxes.
  return s.mix->link ? net::Topology::join(parts, *s.mix->link) : net::Topology::join(parts);
}

namespace {

/// SGLang's max_running_requests, per replica: each KV pool (a GPU's under attention-DP) runs
/// min(clamp(C / context x 512, 2048, 4096), C / 2) requests, C its tokens (the tightest
/// replica's), the context the model's (else the longest request's).
std::int64_t running_cap_from_kv_pool(const ServingScenario& s) {
  const int replicas = s.replica_count();
  std::int64_t tokens = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < replicas; ++i) {
    const ServingScenario mine = s.replica(i);
    std::int64_t blocks = 0;
    (void)serving_memory(mine, &blocks);
    tokens = std::min(tokens, blocks / (s.dp_attention ? mine.tp : 1) * s.block_size);
  }
  std::int64_t longest = s.input.hi + s.output.hi;
  for (const auto& t : s.trace) longest = std::max(longest, t.input + t.output);
  const double context = static_cast<double>(s.model.max_positions > 0 ? s.model.max_positions : longest);
  const double by_context = std::clamp(static_cast<double>(tokens) / context * 512.0, 2048.0, 4096.0);
  const auto per_pool = std::max<std::int64_t>(1, std::min(static_cast<std::int64_t>(by_context), tokens / 2));
  return per_pool * (s.dp_attention ? s.tp : 1);
}

}  // namespace

namespace {

/// A mixed fleet's weights behind the router: each box kind's output tokens per second per
/// replica when it serves alone with every request queued (its own steps, collectives and KV
/// limits, as the run will time them), so each kind gets the share of the requests it can carry.
/// The kinds' runs use the scenario's request lengths, 2 x max batch requests a replica.
std::vector<double> kind_weights(const ServingScenario& s, const ServingRunOptions& options) {
  ServingScenario own = s;
  own.mix.reset();
  ServingScenario second = s.replica(s.first_mixed());
  // One replica of each kind (alike kinds then weigh exactly the same), unless the scenario's own
  // spans boxes: a multi-node run uses every GPU of its nodes, so all of its replicas run.
  if (own.nodes == 1) {
    own.replicas = 1;
    own.gpus = own.tp * own.pp;
  }
  second.replicas = 1;
  second.gpus = second.tp;
  std::vector<double> out;
  for (ServingScenario* k : {&own, &second}) {
    k->arrivals = Arrivals::kQueued;
    k->trace.clear();
    k->requests = std::max<std::int64_t>(8, 2 * k->max_batch) * k->replicas;
    k->slo_ttft_s.reset();
    k->slo_tpot_s.reset();
    k->offer.reset();
    ServingRunOptions alone;
    alone.fast_path = options.fast_path;
    const auto r = simulate_serving(*k, alone);
    out.push_back(r.output_tokens_per_s / k->replicas);
  }
  return out;
}

/// The run, after a mixed fleet's kinds are weighed (each alone; once the requests are known to fit).
ServingResults run_fleet(const ServingScenario& s, const ServingRunOptions& options) {
  if (s.mix && s.prefill_replicas == 0 && options.kind_weights.empty()) {
    ServingRunOptions weighted = options;
    weighted.kind_weights = kind_weights(s, options);
    ServingRun run(s, weighted);
    return run.run();
  }
  ServingRun run(s, options);
  return run.run();
}

}  // namespace

ServingResults simulate_serving(const ServingScenario& given, const ServingRunOptions& options) {
  if (given.max_batch_from_kv_pool) {
    ServingScenario resolved = given;
    resolved.max_batch = running_cap_from_kv_pool(given);
    resolved.max_batch_from_kv_pool = false;
    return simulate_serving(resolved, options);
  }
  const ServingScenario& s = given;
  // The tightest replica decides whether a request fits (pools may have different TP). A sequence
  // lives in one pool: the replica's, or under attention-DP one GPU's (a TP-th of the replica's).
  auto room_of = [&](const ServingScenario& x, std::int64_t* blocks) {
    const auto m = serving_memory(x, blocks);
    *blocks /= x.dp_attention ? x.tp : 1;
    return m;
  };
  std::int64_t blocks = 0;
  const ServingScenario first = s.replica(0);
  auto mem = room_of(first, &blocks);
  int tight_tp = first.tp;                   // the TP of the replica with the least room, for the message
  std::string tight_box = first.cluster.id;  // and its box (a mixed fleet's kinds differ)
  const int replicas = s.replica_count();
  for (int i = 1; i < replicas; ++i) {
    const ServingScenario mine = s.replica(i);
    std::int64_t b = 0;
    const auto m = room_of(mine, &b);
    if (b < blocks) {
      blocks = b;
      mem = m;
      tight_tp = mine.tp;
      tight_box = mine.cluster.id;
    }
  }
  models::ServingShape shape;
  shape.tp = s.tp;
  shape.dp_attention = s.dp_attention;
  shape.kv_bytes = s.kv_bytes;
  std::int64_t longest = s.input.hi + s.output.hi;
  for (const auto& t : s.trace) longest = std::max(longest, t.input + t.output);
  const std::int64_t need =
      (models::kv_held_tokens(longest, models::kv_sliding_share(s.model, shape), s.model.sliding_window) +
       s.block_size - 1) /
      s.block_size;
  if (blocks < need) {
    const double gib = 1073741824.0;
    const std::string msg = "does not fit: " + s.model.id + " needs " + fixed(mem.weights / gib, 1) +
                            " GiB of weights, " + fixed(mem.activations / gib, 1) + " GiB of activations and " +
                            fixed(mem.other / gib, 1) + " GiB of runtime per GPU (TP " + std::to_string(tight_tp) +
                            (s.mix ? " on " + tight_box : "") + ", " + models::weight_format_name(s.weights) +
                            " weights), leaving " + fixed(mem.kv_cache / gib, 2) + " GiB of KV cache (" +
                            std::to_string(blocks) + " blocks) on a " + fixed(mem.capacity / gib, 1) +
                            " GiB GPU; the longest request needs " + std::to_string(need) +
                            " blocks. Try a larger TP or PP (over more nodes: --nodes N --fabric F), " +
                            "quantised weights or shorter requests";
    if (!s.allow_oom) throw InfeasibleError(s.name.empty() ? msg : s.name + ": " + msg);
    // Allowed to run out of memory: every pool holds max_batch of the longest requests, so the KV
    // cache never bounds the batch (a run that cannot admit a request would never end).
    ServingRunOptions oom = options;
    oom.oom_longest_blocks = need;
    return run_fleet(s, oom);
  }
  return run_fleet(s, options);
}

ServingResults simulate_serving(const ServingScenario& s, bool record_trace) {
  ServingRunOptions options;
  options.record_trace = record_trace;
  return simulate_serving(s, options);
}

}  // namespace cs::serving
