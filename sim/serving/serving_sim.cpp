#include "sim/serving/serving_sim.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>

#include "sim/core/check.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/topology.hpp"
#include "sim/serving/arrival_clock.hpp"
#include "sim/serving/kv_transfer.hpp"
#include "sim/serving/pool_router.hpp"
#include "sim/serving/replicas.hpp"
#include "sim/serving/request_source.hpp"
#include "sim/serving/serving_log.hpp"
#include "sim/serving/step_runner.hpp"
#include "sim/workload/executor.hpp"

namespace cs::serving {

namespace {

using workload::Category;
using workload::Stream;
using workload::TaskId;

/// The executor's options for a run: the flow model, each box kind's measured collectives and
/// kernel tables (a mixed fleet's second kind from its own profile).
workload::ExecutorOptions executor_options(const ServingScenario& s) {
  workload::ExecutorOptions eo;
  eo.network = net::NetworkModelKind::kFlow;
  eo.collective_latency_s = s.profile.collective_latency.value;
  eo.custom_allreduce = s.custom_allreduce;
  if (s.mix) {
    eo.clusters = {{s.cluster.id, &s.profile.collectives, &s.profile.kernel_tables, eo.collective_latency_s},
                   {s.mix->cluster.id, &s.mix->profile.collectives, &s.mix->profile.kernel_tables,
                    s.mix->profile.collective_latency.value}};
  } else {
    eo.curves = &s.profile.collectives;
    eo.kernel_tables = &s.profile.kernel_tables;
  }
  return eo;
}

/// One serving run as an open workload on the executor: the adapter between the seams and the
/// executor. Requests arrive (request source, arrival clock), the routers send each to a replica,
/// the step runner plans, times, adds and settles its batches, and what a settled step's requests
/// do next happens here: a finished prompt's KV cache moves to a decode replica as send/recv tasks
/// on the same links, a finished answer completes (a closed loop's next request then arrives).
class ServingRun final : public workload::TaskSource {
 public:
  /// `topo`: the machine, serving_topology's (it outlives the run).
  ServingRun(const ServingScenario& s, const ServingRunOptions& opt, const net::Topology& topo)
      : s_(s),
        opt_(opt),
        topo_(topo),
        source_(s),
        router_(s, opt.kind_weights),
        fleet_(make_replicas(s, opt.oom_longest_blocks)),
        steps_(s, fleet_.replicas.size(), opt.record_trace, [this](const Replica& self) {
          return kv_transfer_bound(g_->now(), self, fleet_.replicas, steps_.batches(), clock_.next_at(reqs_),
                                   source_.closed_loop());
        }) {
    if (s.prefill_replicas > 0) kv_pairs_ = std::min(fleet_.replicas.front().shape.tp, fleet_.replicas.back().shape.tp);
  }

  ServingLog run() {
    // Requests known up front (all but the closed loop's later ones), in arrival order.
    reqs_ = source_.initial();
    clock_.start(arrival_order(reqs_));
    const auto events = workload::simulate_open(s_.all_gpus(), topo_, executor_options(s_), *this).events;
    for (const auto& r : reqs_)
      CS_ASSERT(r.finished(), "every request finishes (the KV pool admits at least one request)");
    // The run's log (requests, token times and counters); serving_results makes the figures.
    ServingLog log;
    fleet_into(s_, fleet_, log);
    steps_.into(log);
    log.requests = std::move(reqs_);
    log.gpus = s_.all_gpus();
    log.events = events;
    log.spans = opt_.record_trace;
    log.max_batch = s_.max_batch;
    return log;
  }

  void begin(workload::OpenGraph& g) override {
    g_ = &g;
    add_groups(g, fleet_.replicas);
    mark_isolated(topo_, fleet_.replicas, kv_pairs_, opt_.fast_path);
    arrive_due();
  }

  void ended(TaskId id, const workload::TaskSpan& span, workload::OpenGraph& g) override {
    g_ = &g;
    steps_.tasks().ended(id, span.end - span.start);
    const Purpose p = steps_.batches().take(id);
    switch (p.kind) {
      case Purpose::kNone: break;
      case Purpose::kArrivals:
        clock_.fired(g.now());
        arrive_due();
        break;
      case Purpose::kStepEnd:
      case Purpose::kResume:
        if (const auto rep = steps_.advance(g, p, fleet_.replicas, reqs_)) step_settled(replica(*rep));
        break;
      case Purpose::kKvPart: kv_part_arrived(reqs_[p.id]); break;
    }
  }

 private:
  Replica& replica(int index) { return fleet_.replicas[static_cast<std::size_t>(index)]; }

  /// Every request due now joins a replica, one at a time (each may start a batch); then a timer
  /// for the next arrival.
  void arrive_due() {
    const SimTime now = g_->now();
    while (const auto id = clock_.pop_due(now, reqs_)) {
      auto& r = reqs_[static_cast<std::size_t>(*id)];
      auto& rep = replica(router_.pick(fleet_.replicas, false, r));
      r.replica = rep.index;
      rep.queue.waiting.push_back(r.id);
      steps_.start(*g_, rep, reqs_);
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
    steps_.batches().tag(id, Purpose::kArrivals);
  }

  /// A batch left `rep`'s pipeline: its requests' KV caches move or they complete, in plan order,
  /// then the replica plans its next batch.
  void step_settled(Replica& rep) {
    for (const auto& a : steps_.settled().actions) {
      auto& r = reqs_[static_cast<std::size_t>(a.req)];
      if (a.kind == StepSettled::Action::Kind::kSendKv) {
        rep.queue.leave(r);
        send_kv(rep, r);
      } else {
        complete(rep, r);
      }
    }
    steps_.start(*g_, rep, reqs_);
  }

  /// Disaggregated: the prompt's KV cache moves to a decode replica (add_kv_transfer).
  void send_kv(const Replica& from, Request& r) {
    auto& to = replica(router_.pick(fleet_.replicas, true, r));
    r.replica = to.index;
    ++to.incoming;
    r.kv_parts_left = from.shape.dp_attention ? 1 : kv_pairs_;
    steps_.tasks().transfers().started_one(r.kv_parts_left);
    for (const auto id : add_kv_transfer(*g_, s_, from, to, r, kv_pairs_))
      steps_.batches().tag(id, Purpose::kKvPart, static_cast<std::uint64_t>(r.id));
  }

  /// A part of a request's KV cache arrived; with the last, the request joins its decode replica.
  void kv_part_arrived(Request& r) {
    steps_.tasks().transfers().part_arrived();
    if (--r.kv_parts_left > 0) return;
    r.prefilled = r.prompt;  // the prompt's KV arrived with the request
    auto& rep = replica(r.replica);
    --rep.incoming;
    rep.queue.waiting.push_back(r.id);
    steps_.start(*g_, rep, reqs_);
  }

  void complete(Replica& rep, Request& r) {
    const SimTime now = g_->now();
    r.finish = now;
    if (opt_.on_request_done) opt_.on_request_done();
    if (!rep.scheduler->keeps_finished()) rep.queue.leave(r);
    if (auto next = source_.on_finish(now, reqs_.size())) {
      reqs_.push_back(*next);
      clock_.add(next->id);
      wake_at(now);
    }
  }

  const ServingScenario& s_;
  ServingRunOptions opt_;
  const net::Topology& topo_;
  RequestSource source_;
  PoolRouter router_;
  Replicas fleet_;  ///< the replicas, and the memory the report shows
  StepRunner steps_;
  workload::OpenGraph* g_ = nullptr;  ///< the running graph (set by each call of the executor)
  std::vector<Request> reqs_;
  ArrivalClock clock_;  ///< which requests are due, and the arrivals timer
  int kv_pairs_ = 0;    ///< disaggregated: the GPU pairs a KV cache crosses (the smaller pool's TP)
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
    out.push_back(simulate_serving(*k, alone).output_tokens_per_s() / k->replicas);
  }
  return out;
}

/// The run, after a mixed fleet's kinds are weighed (each alone; once the requests are known to fit).
ServingLog run_fleet(const ServingScenario& s, const ServingRunOptions& options) {
  if (s.mix && s.prefill_replicas == 0 && options.kind_weights.empty()) {
    ServingRunOptions weighted = options;
    weighted.kind_weights = kind_weights(s, options);
    return run_fleet(s, weighted);
  }
  const auto wall0 = std::chrono::steady_clock::now();
  // The caller's machine (a search's shared topology cache), else this run's own.
  const auto machine = options.topology ? options.topology : std::make_shared<const net::Topology>(serving_topology(s));
  ServingRun run(s, options, *machine);
  auto log = run.run();
  log.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return log;
}

}  // namespace

ServingLog simulate_serving(const ServingScenario& given, const ServingRunOptions& options) {
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

ServingLog simulate_serving(const ServingScenario& s, bool record_trace) {
  ServingRunOptions options;
  options.record_trace = record_trace;
  return simulate_serving(s, options);
}

}  // namespace cs::serving
