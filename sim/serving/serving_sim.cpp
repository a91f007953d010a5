#include "sim/serving/serving_sim.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <tuple>
#include <unordered_map>

#include "sim/core/check.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/topology.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/executor.hpp"
#include "sim/workload/expert_placement.hpp"

namespace cs::serving {

namespace {

using workload::Category;
using workload::Stream;
using workload::TaskId;

inline constexpr SimTime kNever{-1};

struct Request {
  int id = 0;
  SimTime arrival{};
  std::int64_t input = 0, output = 0;
  std::int64_t prompt = 0;     ///< tokens to prefill (the input; more after a recompute preemption)
  std::int64_t prefilled = 0;  ///< prompt tokens whose KV is cached
  std::int64_t generated = 0;  ///< output tokens sampled so far
  std::int64_t blocks = 0;
  SimTime first_token = kNever, finish = kNever;
  int replica = -1;
  int kv_parts_left = 0;   ///< disaggregated: KV transfers (one per GPU pair) still moving
  bool in_flight = false;  ///< part of a batch still in the pipeline
};

/// A pipeline stage of a replica: its TP group runs `layers` layers of every batch.
struct Stage {
  std::vector<int> ranks;
  std::uint32_t group = 0;    ///< the TP group (the executor's process group)
  std::uint32_t to_next = 0;  ///< the send/recv pair to the next stage's first GPU
  int layers = 0;
  int first_layer = 0;    ///< the model's index of the stage's first layer
  bool isolated = false;  ///< no other traffic can share its collectives' links (fast path)
};

struct Replica {
  int index = 0;
  models::ServingShape shape;
  ServingMemory memory;
  std::int64_t blocks = 0;
  std::vector<Stage> stages;
  int inflight = 0;  ///< batches in the pipeline (at most PP)
  bool prefill_only = false, decode_only = false;
  std::deque<int> waiting;
  std::vector<int> running;  ///< in admission order
  int incoming = 0;          ///< disaggregated: requests whose KV is moving here
  std::int64_t free_blocks = 0;
  [[nodiscard]] int pp() const { return static_cast<int>(stages.size()); }
};

struct Planned {
  int req = 0;
  std::int64_t chunk = 0;  ///< prefill tokens, or 0 for a decode token
};

/// The kinds of collective a stage's program holds, by label (the breakdown's keys, in its order):
/// TP all-reduce, all-gather and reduce-scatter, and DeepEP's dispatch and combine all-to-alls.
constexpr std::array<const char*, 5> kCollectiveLabels = {"tp.allreduce", "tp.allgather", "tp.reducescatter",
                                                          "ep.dispatch", "ep.combine"};

/// A piece of a stage's program: kernels back to back (one compute task), or a TP collective.
struct Segment {
  SimTime compute{};
  bool collective = false;
  coll::CollectiveOp op = coll::CollectiveOp::kAllReduce;
  double bytes = 0;
  double node_copies = 1;  ///< DeepEP's normal kernels across nodes (models::Comm::node_copies)
  /// An all-to-all under uneven routing: each EP GPU's share of the step's routed pairs (the
  /// step's placement, kept by routing_for for the run; null: even), and whether it is a combine
  /// (models::Comm::returning; workload::ep_alltoall_pairs). Set only with shares: an even
  /// exchange moves the same flows either way, so a dispatch and a combine of equal bytes share
  /// their remembered time.
  const std::vector<double>* dest_share = nullptr;
  bool returning = false;
  std::uint8_t kind = 0;  ///< index into kCollectiveLabels
};

/// A stage's program for one batch without repeating its layers: the step overhead (zero after
/// the first stage), `layers` copies of one layer's segments, the LM head's (last stage only).
struct StageProgram {
  SimTime overhead{};
  std::vector<Segment> layer;
  int layers = 0;
  std::vector<Segment> head;
  [[nodiscard]] std::size_t size() const { return 1 + layer.size() * static_cast<std::size_t>(layers) + head.size(); }
  /// The i-th segment in program order.
  [[nodiscard]] Segment at(std::size_t i) const {
    if (i == 0) return Segment{overhead};
    const std::size_t body = layer.size() * static_cast<std::size_t>(layers);
    return i - 1 < body ? layer[(i - 1) % layer.size()] : head[i - 1 - body];
  }
};

/// A batch in a replica's pipeline.
struct Batch {
  int replica = 0;
  std::vector<Planned> plan;
  SimTime start{};
  double kv_used = 0;    ///< the replica's KV-block fraction in use when it was planned
  std::size_t span = 0;  ///< its StepSpan (when tracing)
  StageProgram program;  ///< one isolated stage: what is left to add, from `next`
  std::size_t next = 0;
};

/// Why the scheduler follows a task of the executor (indexed by the task's id, which is reused).
struct Purpose {
  enum Kind : std::uint8_t { kNone, kArrivals, kStepEnd, kResume, kKvPart } kind = kNone;
  std::uint64_t id = 0;  ///< batch (step end), request (KV part)
  bool memo = false;     ///< an isolated stage's collective: its time is remembered
  std::uint32_t group = 0;
  coll::CollectiveOp op = coll::CollectiveOp::kAllReduce;
  double bytes = 0;
  double node_copies = 1;
  const std::vector<double>* dest_share = nullptr;
  bool returning = false;
  std::uint8_t comm = 0;  ///< a stage's collective: 1 + its kind (the breakdown), else 0
};

/// Expert copies per GPU under EP with redundant experts (0: experts / EP, no copies).
int expert_slots(const ServingScenario& s) {
  if (!s.model.is_moe() || s.routing.redundant_experts == 0) return 0;
  return static_cast<int>((s.model.moe.experts + s.routing.redundant_experts) / std::max(1, s.ep));
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

Percentiles summarise(const std::vector<double>& v) {
  Percentiles p;
  if (v.empty()) return p;
  p.count = v.size();
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

/// Every link a collective of `op` over `ranks` can load, whichever algorithm runs it.
void collective_links(const net::Topology& topo, coll::CollectiveOp op, const std::vector<int>& ranks,
                      std::vector<std::uint32_t>& out) {
  for (auto a : coll::available_algorithms(topo, op, ranks)) {
    coll::CollectiveRequest req;
    req.op = op;
    req.algorithm = a;
    req.ranks = ranks;
    req.bytes = 1.0;
    for (const auto& f : coll::plan_collective(topo, req).flows) {
      for (auto l : topo.route(f.src, f.dst).links) out.push_back(net::index(l));
    }
  }
}

/// One serving run as an open workload on the executor: the scheduler plans each batch when the
/// previous one leaves the pipeline and adds its tasks (kernels, TP collectives, pipeline sends)
/// to the running simulation; disaggregated KV caches move as send/recv tasks on the same links.
class ServingRun final : public workload::TaskSource {
 public:
  ServingRun(const ServingScenario& s, const ServingRunOptions& opt)
      : s_(s),
        opt_(opt),
        topo_(s.nodes > 1 ? net::Topology::build(s.cluster, s.cluster.gpus, s.nodes, *s.fabric)
                          : net::Topology::build(s.cluster, s.gpus)),
        gemm_(s.profile,
              s.weights == models::WeightFormat::kFp8                                        ? calib::Dtype::kFp8
              : models::is_fp4(s.weights) && s.profile.matrix_peak.count(calib::Dtype::kFp4) ? calib::Dtype::kFp4
                                                                                             : calib::Dtype::kBf16,
              s.cuda_graphs),
        other_(s.profile, calib::Dtype::kBf16, s.cuda_graphs),
        rng_(s.seed),
        mtp_rng_(s.seed ^ 0x6d7470u),  // "mtp": a stream apart from the workload's draws
        step_overhead_(SimTime::from_seconds(s.profile.serving_step_overhead.value)) {
    const bool disagg = s.prefill_replicas > 0;
    const int n = disagg ? s.prefill_replicas + s.decode_replicas : s.replicas;
    int next_rank = 0;
    for (int i = 0; i < n; ++i) {
      Replica r;
      r.index = i;
      // Each replica's own TP, PP and EP (disaggregated pools may differ): op shapes, memory, blocks.
      const ServingScenario mine = s.replica(i);
      r.shape.tp = mine.tp;
      r.shape.ep = mine.ep;
      r.shape.dp_attention = s.dp_attention;
      r.shape.deepep = s.deepep;
      if (s.deepep) {
        // serving_file checks that the profile has them.
        r.shape.ll_dispatch_floor_s = s.profile.deepep_ll_dispatch_floor->value;
        r.shape.ll_combine_floor_s = s.profile.deepep_ll_combine_floor->value;
      }
      r.shape.expert_slots = expert_slots(mine);
      r.shape.weights = s.weights;
      r.shape.fp4_tensor_cores = s.profile.matrix_peak.count(calib::Dtype::kFp4) > 0;
      r.shape.kv_bytes = s.kv_bytes;
      r.memory = serving_memory(mine, &r.blocks);
      if (i == n - 1) {
        memory_ = r.memory;  // the report shows the (decode) pool that holds the KV cache longest
        blocks_ = r.blocks;  // its own count, also under --allow-oom
      }
      // --allow-oom: a pool that cannot hold the longest request is given max batch of them, as if
      // the GPU had the memory; pools with room keep their own.
      const std::int64_t pools = s.dp_attention ? mine.tp : 1;
      if (opt.oom_longest_blocks > 0 && r.blocks / pools < opt.oom_longest_blocks) {
        r.blocks = opt.oom_longest_blocks * s.max_batch * pools;
        oom_ = true;
      }
      int first_layer = 0;
      for (int k = 0; k < mine.pp; ++k) {
        Stage st;
        st.layers = static_cast<int>(s.model.layers / mine.pp + (k < s.model.layers % mine.pp ? 1 : 0));
        st.first_layer = first_layer;
        first_layer += st.layers;
        for (int t = 0; t < mine.tp; ++t) st.ranks.push_back(next_rank++);
        r.stages.push_back(st);
      }
      // The nodes the replica's first stage (its EP group) spans.
      r.shape.nodes =
          (r.stages.front().ranks.back() / s.cluster.gpus) - (r.stages.front().ranks.front() / s.cluster.gpus) + 1;
      r.prefill_only = disagg && i < s.prefill_replicas;
      r.decode_only = disagg && i >= s.prefill_replicas;
      r.free_blocks = r.blocks;
      replicas_.push_back(std::move(r));
    }
    kv_area_.assign(replicas_.size(), 0.0);
    peak_running_.assign(replicas_.size(), 0);
    sliding_share_ = models::kv_sliding_share(s.model, replicas_.back().shape);
    if (disagg) kv_pairs_ = std::min(replicas_.front().shape.tp, replicas_.back().shape.tp);
  }

  ServingResults run() {
    const auto wall0 = std::chrono::steady_clock::now();
    // Requests known up front (all but the closed loop's later ones), in arrival order.
    if (s_.arrivals == Arrivals::kTrace) {
      for (const auto& t : s_.trace) add_request(SimTime::from_seconds(t.arrival_s), t.input, t.output);
    } else if (s_.arrivals == Arrivals::kQueued) {
      for (std::int64_t i = 0; i < s_.requests; ++i)
        add_request(SimTime{}, draw(s_.input, rng_), draw(s_.output, rng_));
    } else if (s_.arrivals == Arrivals::kPoisson) {
      double t = 0;
      for (std::int64_t i = 0; i < s_.requests; ++i) {
        t += -std::log(1.0 - unit(rng_)) / s_.rate;
        add_request(SimTime::from_seconds(t), draw(s_.input, rng_), draw(s_.output, rng_));
      }
    } else {
      for (std::int64_t i = 0; i < std::min(s_.concurrency, s_.requests); ++i)
        add_request(SimTime{}, draw(s_.input, rng_), draw(s_.output, rng_));
    }
    std::stable_sort(arrivals_.begin(), arrivals_.end(), [&](int a, int b) {
      return reqs_[static_cast<std::size_t>(a)].arrival < reqs_[static_cast<std::size_t>(b)].arrival;
    });
    workload::ExecutorOptions eo;
    eo.network = net::NetworkModelKind::kFlow;
    eo.collective_latency_s = s_.profile.collective_latency.value;
    eo.curves = &s_.profile.collectives;
    eo.kernel_tables = &s_.profile.kernel_tables;
    const auto log = workload::simulate_open(s_.gpus, topo_, eo, *this);
    events_ = log.events;
    for (const auto& r : reqs_)
      CS_ASSERT(r.finish >= SimTime{}, "every request finishes (the KV pool admits at least one request)");
    auto res = results();
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
    find_isolated();
    arrive_due();
  }

  void ended(TaskId id, const workload::TaskSpan& span, workload::OpenGraph& g) override {
    g_ = &g;
    const auto t = workload::index(id);
    if (t >= purpose_.size()) return;
    const Purpose p = purpose_[t];
    purpose_[t] = Purpose{};
    if (p.memo)
      memo_.emplace(MemoKey{p.group, static_cast<int>(p.op), p.bytes, p.node_copies, p.dest_share, p.returning},
                    span.end - span.start);
    if (p.comm > 0) comm_time_[p.comm - 1u] += span.end - span.start;
    switch (p.kind) {
      case Purpose::kNone: break;
      case Purpose::kArrivals:
        if (timer_at_ && *timer_at_ <= g.now()) timer_at_.reset();
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
        if (--r.kv_parts_left == 0) kv_arrived(r);
        break;
      }
    }
  }

 private:
  Purpose& purpose(TaskId id) {
    const auto t = workload::index(id);
    if (t >= purpose_.size()) purpose_.resize(t + 1);
    return purpose_[t];
  }
  void tag(TaskId id, Purpose::Kind kind, std::uint64_t what = 0) {
    auto& p = purpose(id);
    p.kind = kind;
    p.id = what;
  }

  /// A stage's TP collectives may skip the flow model when no other traffic of the run can ever
  /// load their links: no other stage's or replica's collectives, no pipeline send, no KV transfer.
  /// Alone on its links a collective takes the same time whenever it runs (the flow model's
  /// arithmetic depends on time differences only), so its first run through the flow model gives
  /// every later one of the same size: identical results, one task per stage and step.
  void find_isolated() {
    std::vector<std::vector<std::uint32_t>> classes;
    std::vector<Stage*> owner;  ///< the stage whose TP collectives a class is (null: a transfer)
    const auto add_route = [&](std::vector<std::uint32_t>& c, int a, int b) {
      for (auto l : topo_.route(topo_.gpu(a), topo_.gpu(b)).links) c.push_back(net::index(l));
    };
    for (auto& rep : replicas_) {
      for (std::size_t k = 0; k < rep.stages.size(); ++k) {
        auto& st = rep.stages[k];
        std::vector<std::uint32_t> c;
        if (st.ranks.size() > 1) {
          collective_links(topo_, coll::CollectiveOp::kAllReduce, st.ranks, c);
          collective_links(topo_, coll::CollectiveOp::kAllGather, st.ranks, c);
        }
        classes.push_back(std::move(c));
        owner.push_back(&st);
        if (k + 1 < rep.stages.size()) {
          std::vector<std::uint32_t> send;
          add_route(send, st.ranks.front(), rep.stages[k + 1].ranks.front());
          classes.push_back(std::move(send));
          owner.push_back(nullptr);
        }
      }
    }
    if (kv_pairs_ > 0) {
      for (const auto& p : replicas_) {
        if (!p.prefill_only) continue;
        for (const auto& d : replicas_) {
          if (!d.decode_only) continue;
          std::vector<std::uint32_t> c;
          for (int t = 0; t < kv_pairs_; ++t)
            add_route(c, p.stages.front().ranks[static_cast<std::size_t>(t)],
                      d.stages.front().ranks[static_cast<std::size_t>(t)]);
          classes.push_back(std::move(c));
          owner.push_back(nullptr);
        }
      }
    }
    std::vector<int> users(topo_.link_count(), 0);
    for (auto& c : classes) {
      std::sort(c.begin(), c.end());
      c.erase(std::unique(c.begin(), c.end()), c.end());
      for (auto l : c) ++users[l];
    }
    for (std::size_t i = 0; i < classes.size(); ++i) {
      if (!owner[i]) continue;
      bool alone = opt_.fast_path;
      for (auto l : classes[i]) alone = alone && users[l] == 1;
      owner[i]->isolated = alone;
    }
  }

  void add_request(SimTime arrival, std::int64_t input, std::int64_t output) {
    Request r;
    r.id = static_cast<int>(reqs_.size());
    r.arrival = arrival;
    r.input = input;
    r.output = output;
    r.prompt = input;
    reqs_.push_back(r);
    arrivals_.push_back(r.id);
  }

  /// Every request due now joins a replica, one at a time (each may start a batch); then a timer
  /// for the next arrival.
  void arrive_due() {
    const SimTime now = g_->now();
    while (next_arrival_ < arrivals_.size()) {
      auto& r = reqs_[static_cast<std::size_t>(arrivals_[next_arrival_])];
      if (r.arrival > now) break;
      ++next_arrival_;
      auto& rep = replicas_[static_cast<std::size_t>(route(false))];
      r.replica = rep.index;
      rep.waiting.push_back(r.id);
      start_step(rep);
    }
    if (next_arrival_ < arrivals_.size()) {
      const SimTime at = reqs_[static_cast<std::size_t>(arrivals_[next_arrival_])].arrival;
      wake_at(at);
    }
  }

  /// A timer: a task of no stream that ends at `at`. On the last GPU's clock, so that at equal
  /// times every step that ends then is seen first (a closed loop's new request joins the batch
  /// after the one planned when its predecessor finished, as a real server's queue does).
  void wake_at(SimTime at) {
    if (timer_at_ && *timer_at_ <= at) return;  // a timer fires by then
    timer_at_ = at;
    const auto id = g_->add_compute(s_.gpus - 1, Stream::kNone, Category::kForward, "serving.arrivals", at - g_->now());
    tag(id, Purpose::kArrivals);
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
    const auto load = [&](int k) {
      const auto& r = replicas_[static_cast<std::size_t>(k)];
      return r.waiting.size() + r.running.size() + static_cast<std::size_t>(r.incoming);
    };
    for (int i : pool) {
      if (load(i) < load(best)) best = i;
    }
    return best;
  }

  /// Blocks a sequence of `tokens` holds (sliding-window layers keep only their window).
  std::int64_t blocks_for(std::int64_t tokens) const {
    return (models::kv_held_tokens(tokens, sliding_share_, s_.model.sliding_window) + s_.block_size - 1) /
           s_.block_size;
  }

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
      add_decode(static_cast<double>(kv_tokens), mix);
      budget -= decode_tokens();
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
        add_decode(static_cast<double>(r.input + r.generated), mix);
        budget -= decode_tokens();
        continue;
      }
      const std::int64_t chunk = std::min({r.prompt - r.prefilled, budget, chunk_cap});
      add_prefill(r, chunk, plan, mix);
      budget -= chunk;
    }
  }

  /// Tokens a decoding sequence puts through the model per step: its last token, and under MTP
  /// speculative decoding the draft token verified beside it.
  [[nodiscard]] std::int64_t decode_tokens() const { return s_.mtp_acceptance > 0 ? 2 : 1; }

  /// A decoding sequence whose cache holds `kv_tokens` tokens with this step's. Under MTP the draft
  /// token is verified too (one more query, one more position), and the MTP module drafts the
  /// next token from this step's last position (its own mix, run after the LM head).
  void add_decode(double kv_tokens, models::StepMix& mix) {
    mix.tokens += 1;
    mix.sampled += 1;
    mix.add_decode_context(kv_tokens);
    if (s_.mtp_acceptance <= 0) return;
    mix.tokens += 1;
    mix.sampled += 1;
    mix.add_decode_context(kv_tokens + 1);
    mtp_mix_.tokens += 1;
    mtp_mix_.sampled += 1;
    mtp_mix_.add_decode_context(kv_tokens + 1);
  }

  void add_prefill(const Request& r, std::int64_t chunk, std::vector<Planned>& plan, models::StepMix& mix) {
    plan.push_back({r.id, chunk});
    const double c = static_cast<double>(chunk);
    mix.tokens += c;
    mix.add_prefill_context(static_cast<double>(r.prefilled), c);
    if (r.prefilled + chunk == r.prompt) mix.sampled += 1;
  }

  void plan_static(Replica& rep, std::vector<Planned>& plan, models::StepMix& mix) {
    bool any_live = false;
    for (int id : rep.running) any_live = any_live || reqs_[static_cast<std::size_t>(id)].finish < SimTime{};
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
      mix.add_decode_context(kv_tokens);
    }
  }

  /// A GEMM's time, remembered by shape: engine steps repeat their token counts, and the shape
  /// model's tile search costs more than the rest of a step's arithmetic.
  [[nodiscard]] calib::KernelTime gemm_time(const models::Op& op) const {
    const GemmKey key{op.m,      op.n,     op.k,
                      op.groups, op.bytes, (op.routed ? 1 : 0) + (op.keep_16bit ? 2 : 0) + (op.core_attention ? 4 : 0)};
    auto it = gemm_memo_.find(key);
    if (it != gemm_memo_.end()) return it->second;
    const auto t = gemm_.timed(op);
    gemm_memo_.emplace(key, t);
    return t;
  }
  [[nodiscard]] double gemm_seconds(const models::Op& op) const { return gemm_time(op).seconds; }

  /// Ops to segments: consecutive kernels become one compute segment (its time rounded once). The
  /// all-to-alls take the step's per-GPU shares of the routed pairs (`dest_share`, null: even).
  void to_segments(const std::vector<models::Item>& items, std::vector<Segment>& out,
                   const std::vector<double>* dest_share = nullptr, double runs = 1) {
    double compute = 0;
    bool pending = false;
    const auto flush = [&] {
      if (pending) out.push_back({SimTime::from_seconds(compute)});
      compute = 0;
      pending = false;
    };
    for (const auto& it : items) {
      if (it.comm) {
        CS_ASSERT(
            it.comm->group == GroupKind::kTp &&
                (it.comm->op == coll::CollectiveOp::kAllReduce || it.comm->op == coll::CollectiveOp::kAllGather ||
                 it.comm->op == coll::CollectiveOp::kReduceScatter || it.comm->op == coll::CollectiveOp::kAllToAll),
            "serving layers hold only TP all-reduces, all-gathers, reduce-scatters and (DeepEP) all-to-alls");
        flush();
        Segment seg;
        seg.collective = true;
        seg.op = it.comm->op;
        seg.bytes = it.comm->bytes;
        seg.node_copies = it.comm->node_copies;
        if (seg.op == coll::CollectiveOp::kAllToAll && dest_share) {
          seg.dest_share = dest_share;
          seg.returning = it.comm->returning;
        }
        seg.kind = collective_kind(seg.op, it.comm->returning);
        out.push_back(seg);
      } else if (it.op.fixed_s > 0) {
        compute += it.op.fixed_s;  // DeepEP's low-latency floor: fixed work, no kernel of its own
        pending = true;
      } else {
        const auto t = it.op.kind == models::OpKind::kGemm ? gemm_time(it.op) : other_.timed(it.op);
        compute += t.seconds;
        // Each layer built here runs `runs` times in the step (its kind's layers).
        sources_[static_cast<std::size_t>(t.source)] += t.seconds * runs;
        pending = true;
      }
    }
    flush();
  }

  /// The breakdown index (kCollectiveLabels) of a stage collective: a combine is a returning all-to-all.
  static std::uint8_t collective_kind(coll::CollectiveOp op, bool returning) {
    switch (op) {
      case coll::CollectiveOp::kAllReduce: return 0;
      case coll::CollectiveOp::kAllGather: return 1;
      case coll::CollectiveOp::kReduceScatter: return 2;
      case coll::CollectiveOp::kAllToAll: return returning ? 4 : 3;
      case coll::CollectiveOp::kSendRecv:
      case coll::CollectiveOp::kShift: break;
    }
    CS_ASSERT(false, "a stage's program holds no send/recv or shift");
    return 0;
  }

  [[nodiscard]] std::optional<SimTime> memo(const Stage& st, const Segment& seg) const {
    auto it = memo_.find(
        MemoKey{st.group, static_cast<int>(seg.op), seg.bytes, seg.node_copies, seg.dest_share, seg.returning});
    if (it == memo_.end()) return std::nullopt;
    return it->second;
  }

  /// Adds `times` runs of the collectives in `segs` (their times known) to the breakdown.
  void count_known(const Stage& st, const std::vector<Segment>& segs, std::int64_t times) {
    for (const auto& seg : segs) {
      if (!seg.collective) continue;
      const auto m = memo(st, seg);
      CS_ASSERT(m.has_value(), "a known program's collectives have known times");
      comm_time_[seg.kind] += SimTime{m->ps * times};
    }
  }

  /// The time of `segs` run back to back when every collective's time is known, else nothing.
  [[nodiscard]] std::optional<SimTime> known_time(const Stage& st, const std::vector<Segment>& segs) const {
    SimTime t{};
    for (const auto& seg : segs) {
      if (!seg.collective) {
        t += seg.compute;
      } else if (auto m = memo(st, seg)) {
        t += *m;
      } else {
        return std::nullopt;
      }
    }
    return t;
  }

  /// The stage's time when every collective's time is known (fast path), else nothing. Integer
  /// sums: the same as the tasks' chain.
  [[nodiscard]] std::optional<SimTime> known_time(const Stage& st, const StageProgram& prog) const {
    const auto layer = known_time(st, prog.layer);
    const auto head = known_time(st, prog.head);
    if (!layer || !head) return std::nullopt;
    return prog.overhead + SimTime{layer->ps * prog.layers} + *head;
  }

  TaskId add_tp_collective(const Stage& st, const Segment& seg) {
    const char* label = kCollectiveLabels[seg.kind];
    // An all-to-all rail-forwarded across nodes or with uneven shares moves its traffic matrix; an
    // even one inside a node is the plain collective (balanced routing: as before shares existed).
    const bool matrix = seg.op == coll::CollectiveOp::kAllToAll && (seg.node_copies != 1.0 || seg.dest_share);
    TaskId id{};
    if (matrix) {
      workload::EpAllToAll a{.bytes = seg.bytes, .node_copies = seg.node_copies, .returning = seg.returning};
      if (seg.dest_share) a.dest_share = *seg.dest_share;
      id = g_->add_ep_alltoall(st.group, Stream::kCompute, Category::kTpComm, label, a);
    } else {
      id = g_->add_collective(st.group, Stream::kCompute, Category::kTpComm, label, seg.op, seg.bytes);
    }
    auto& p = purpose(id);
    p.comm = static_cast<std::uint8_t>(seg.kind + 1);
    if (st.isolated) {
      p.memo = true;
      p.group = st.group;
      p.op = seg.op;
      p.bytes = seg.bytes;
      p.node_copies = seg.node_copies;
      p.dest_share = seg.dest_share;
      p.returning = seg.returning;
    }
    return id;
  }

  /// Adds one stage of a batch: its program on the stage's streams, one compute task when the
  /// collectives' times are known (fast path), else kernels and collectives through the flow
  /// model. Returns the first and last task.
  std::pair<TaskId, TaskId> add_stage(const Stage& st, const StageProgram& prog) {
    const int gpu = st.ranks.front();
    if (st.isolated || st.ranks.size() == 1) {
      if (auto t = known_time(st, prog)) {
        count_known(st, prog.layer, prog.layers);
        count_known(st, prog.head, 1);
        const auto id = g_->add_compute(gpu, Stream::kCompute, Category::kForward, "serving.stage", *t);
        return {id, id};
      }
    }
    std::optional<TaskId> first, last;
    SimTime compute{};
    bool pending = false;
    const auto flush = [&] {
      if (!pending) return;
      const auto id = g_->add_compute(gpu, Stream::kCompute, Category::kForward, "serving.kernels", compute);
      if (!first) first = id;
      last = id;
      compute = SimTime{};
      pending = false;
    };
    for (std::size_t i = 0; i < prog.size(); ++i) {
      const Segment& seg = prog.at(i);
      if (!seg.collective) {
        compute += seg.compute;  // kernels back to back: one task, the same end
        pending = true;
        continue;
      }
      flush();
      const auto id = add_tp_collective(st, seg);
      if (!first) first = id;
      last = id;
    }
    flush();
    return {*first, *last};
  }

  void step_ended(std::uint64_t b) {
    auto& rep = replicas_[static_cast<std::size_t>(batches_.at(b).replica)];
    finish_step(rep, b);
    start_step(rep);
  }

  /// One isolated stage (no PP): everything whose time is known becomes one compute task; a
  /// collective of a size not seen yet runs through the flow model, and the batch resumes when it
  /// ends (its time then known for the rest of the run). The same end as every task separately:
  /// nothing else can reach these links, and the replica's streams hold only this batch.
  void resume(std::uint64_t b) {
    Batch& batch = batches_.at(b);
    const auto& st = replicas_[static_cast<std::size_t>(batch.replica)].stages.front();
    const StageProgram& prog = batch.program;
    const std::size_t per_layer = prog.layer.size();
    const std::size_t body_end = 1 + per_layer * static_cast<std::size_t>(prog.layers);
    SimTime known{};
    bool any = false;
    while (batch.next < prog.size()) {
      if (batch.next >= 1 && batch.next < body_end && (batch.next - 1) % per_layer == 0) {
        // At a layer's start: the remaining layers at once when the layer's time is known.
        if (auto layer = known_time(st, prog.layer)) {
          const auto left = static_cast<std::int64_t>((body_end - batch.next) / per_layer);
          known += SimTime{layer->ps * left};
          count_known(st, prog.layer, left);
          batch.next = body_end;
          any = true;
          continue;
        }
      }
      const Segment& seg = prog.at(batch.next);
      if (!seg.collective) {
        known += seg.compute;
      } else if (auto m = memo(st, seg)) {
        known += *m;
        comm_time_[seg.kind] += *m;
      } else {
        break;
      }
      any = true;
      ++batch.next;
    }
    if (any) {
      const auto id = g_->add_compute(st.ranks.front(), Stream::kCompute, Category::kForward, "serving.kernels", known);
      if (batch.next == prog.size()) {
        tag(id, Purpose::kStepEnd, b);
        return;
      }
    }
    tag(add_tp_collective(st, prog.at(batch.next++)), Purpose::kResume, b);
  }

  /// Starts batches while the pipeline has room (one batch without PP, up to PP with it).
  void start_step(Replica& rep) {
    while (rep.inflight < rep.pp()) {
      plan_.clear();
      models::StepMix mix;
      mix.window = static_cast<double>(s_.model.sliding_window);
      mtp_mix_ = models::StepMix{};
      mtp_mix_.window = mix.window;
      if (s_.scheduler == Scheduler::kStatic)
        plan_static(rep, plan_, mix);
      else
        plan_continuous(rep, plan_, mix);
      if (plan_.empty()) return;  // idle until an arrival or a batch leaves the pipeline
      CS_ASSERT(rep.free_blocks >= 0, "every admitted token's KV fits in the replica's blocks");
      ++rep.inflight;
      for (const auto& p : plan_) reqs_[static_cast<std::size_t>(p.req)].in_flight = true;
      std::uint64_t b = batches_.size();
      if (free_batches_.empty()) {
        batches_.emplace_back();
      } else {
        b = free_batches_.back();
        free_batches_.pop_back();
      }
      Batch& batch = batches_[b];
      batch.replica = rep.index;
      std::swap(batch.plan, plan_);  // both keep their capacity (batches are reused)
      batch.next = 0;
      batch.start = g_->now();
      batch.kv_used =
          1.0 - static_cast<double>(rep.free_blocks) / static_cast<double>(std::max<std::int64_t>(1, rep.blocks));
      kv_max_ = std::max(kv_max_, batch.kv_used);
      ++steps_;
      if (opt_.record_trace) {
        batch.span = step_spans_.size();
        step_spans_.push_back(
            {rep.index, batch.start.seconds(), 0.0, mix.tokens, static_cast<double>(batch.plan.size())});
      }
      add_batch(rep, mix, b);
    }
  }

  /// Stage k's program: the step overhead on the first, its layers, the LM head on the last.
  void stage_program(const Replica& rep, int k, StageProgram& out) const {
    out.overhead = k == 0 ? step_overhead_ : SimTime{};
    const auto& st = rep.stages[static_cast<std::size_t>(k)];
    if (s_.model.kinds.empty()) {  // one kind: `layers` copies of its segments
      out.layer = layer_;
      out.layers = st.layers;
    } else {  // layers of several kinds: the stage's layers in order, once
      out.layer.clear();
      for (int l = st.first_layer; l < st.first_layer + st.layers; ++l) {
        const auto& seg = kind_layer_.at(s_.model.layer_kind(l));
        out.layer.insert(out.layer.end(), seg.begin(), seg.end());
      }
      out.layers = 1;
    }
    out.head.clear();
    if (k + 1 == rep.pp()) out.head = head_;
  }

  /// Where a step of `tokens` routed tokens puts its pairs (cached per token count): balanced, the
  /// expectation (defaults); otherwise the routing's per-expert shares (uniform: a seeded sample of
  /// the step's tokens' top-k), over the EP GPUs' expert copies as place_experts lays them out
  /// (E / EP consecutive experts each, or EPLB's placement with redundant experts). Under EP 1 the
  /// experts the step hits; under EP each GPU's pairs and hit experts, and the GPU whose routed
  /// experts take longest sets the pace (in decode it can be one with few pairs over many experts,
  /// whose weights it reads). `imbalance`: the most loaded GPU's pairs over the mean.
  /// `gpu_share`: under EP with uneven GPUs, each GPU's share of the pairs (the dispatch and
  /// combine all-to-alls' destination shares); empty when even (those all-to-alls stay uniform).
  struct RoutedStep {
    models::StepRouting pace;
    double imbalance = 1;
    std::vector<double> gpu_share;
  };
  /// The step's routing, kept for the run (the all-to-alls point at its shares).
  const RoutedStep& routing_for(const models::ServingShape& shape, double tokens) {
    using Kind = scenario::MoeRouting::Kind;
    if (!s_.model.is_moe() || tokens <= 0) return even_;
    if (s_.routing.kind == Kind::kBalanced && s_.routing.redundant_experts == 0) return even_;
    const auto t = static_cast<std::int64_t>(std::llround(tokens));
    // Keyed by the replica's EP and TP too: disaggregated pools run different EP (and so a
    // different placement) for steps of the same token count.
    const auto key = std::tuple{shape.ep, shape.tp, t};
    if (auto it = routing_memo_.find(key); it != routing_memo_.end()) return it->second;
    const int ep = std::max(1, shape.ep);
    const auto placement = workload::place_experts(s_.model, s_.routing, ep, static_cast<double>(t));
    const auto& share = placement.expert_share;
    const double k = static_cast<double>(s_.model.moe.top_k);
    // The chance the step hits a copy of expert e taking share q of the pairs: sampled (uniform:
    // a copy of an expert the sample hit), else each token picks it with chance k x q.
    const auto p_hit = [&](std::size_t e, double q) {
      if (s_.routing.kind == Kind::kUniform) return share[e] > 0 ? 1.0 : 0.0;
      return 1.0 - std::pow(1.0 - std::min(1.0, k * q), static_cast<double>(t));
    };
    RoutedStep out;
    if (ep == 1) {
      out.pace.hit = 0;
      for (std::size_t e = 0; e < share.size(); ++e) out.pace.hit += p_hit(e, share[e]);
    } else {
      models::StepMix mix;
      mix.tokens = static_cast<double>(t);
      double slowest = -1;
      for (std::size_t g = 0; g < static_cast<std::size_t>(ep); ++g) {
        models::StepRouting r;
        double pairs = 0;
        r.hit = 0;
        for (const auto& [e, q] : placement.gpu_copies[g]) {
          pairs += q;
          r.hit += p_hit(e, q);
        }
        r.load = pairs * ep;
        out.imbalance = std::max(out.imbalance, r.load);
        models::ServingShape one = shape;
        one.routing = r;
        double seconds = 0;
        for (const auto& it : models::serving_routed_experts(s_.model, mix, one))
          seconds += it.op.kind == models::OpKind::kGemm ? gemm_seconds(it.op) : other_.seconds(it.op);
        if (seconds > slowest) {
          slowest = seconds;
          out.pace = r;
        }
      }
      // The all-to-alls follow the pairs: the same threshold as training's (build_stage_programs).
      if (out.imbalance > 1 + 1e-12) out.gpu_share = placement.gpu_share;
    }
    return routing_memo_.emplace(key, std::move(out)).first->second;
  }

  /// The batch's tasks: each stage's layers (the first with the step overhead, the last with the
  /// LM head), stages joined by send/recv of the activations; its end is the last stage's end.
  void add_batch(const Replica& rep, const models::StepMix& mix, std::uint64_t b) {
    layer_.clear();
    head_.clear();
    models::ServingShape shape = rep.shape;
    const auto& routed = routing_for(rep.shape, mix.tokens);
    const auto* share = routed.gpu_share.empty() ? nullptr : &routed.gpu_share;
    shape.routing = routed.pace;
    // DeepEP: decode steps (no prompt tokens) run the low-latency kernels, prefill the normal ones.
    shape.low_latency = shape.deepep && mix.prefill_pairs <= 0;
    // The report's imbalance is the (decode) pool's whose EP it names: the last replica's.
    if (s_.model.is_moe() && rep.shape.ep > 1 && (s_.prefill_replicas == 0 || rep.decode_only)) {
      load_sum_ += routed.imbalance;
      load_max_ = std::max(load_max_, routed.imbalance);
      ++load_steps_;
    }
    if (s_.model.kinds.empty()) {
      to_segments(models::serving_layer(s_.model, mix, shape), layer_, share, static_cast<double>(s_.model.layers));
    } else {
      kind_layer_.clear();
      std::map<models::LayerKind, double> count;
      for (std::int64_t l = 0; l < s_.model.layers; ++l) count[s_.model.layer_kind(l)] += 1;
      for (std::int64_t l = 0; l < s_.model.layers; ++l) {
        const auto kind = s_.model.layer_kind(l);
        if (!kind_layer_.contains(kind))
          to_segments(models::serving_layer(s_.model, mix, shape, kind), kind_layer_[kind], share, count[kind]);
      }
    }
    to_segments(models::serving_head(s_.model, mix, shape), head_);
    if (mtp_mix_.tokens > 0) {
      models::ServingShape mtp = rep.shape;
      const auto& drafted = routing_for(rep.shape, mtp_mix_.tokens);
      mtp.routing = drafted.pace;
      mtp.low_latency = mtp.deepep;  // the draft's own pass is a decode step
      to_segments(models::serving_mtp_module(s_.model, mtp_mix_, mtp), head_,
                  drafted.gpu_share.empty() ? nullptr : &drafted.gpu_share);
    }
    const auto& only = rep.stages.front();
    if (rep.pp() == 1 && (only.isolated || only.ranks.size() == 1)) {
      Batch& batch = batches_.at(b);
      stage_program(rep, 0, batch.program);
      resume(b);
      return;
    }
    std::optional<TaskId> send;
    TaskId last{};
    for (int k = 0; k < rep.pp(); ++k) {
      const auto& st = rep.stages[static_cast<std::size_t>(k)];
      stage_program(rep, k, program_);
      const auto [first, end] = add_stage(st, program_);
      if (send) g_->depend(*send, first);
      last = end;
      if (k + 1 < rep.pp()) {
        const double bytes = mix.tokens * static_cast<double>(s_.model.hidden) * 2.0 / rep.shape.tp;
        send = g_->add_collective(st.to_next, Stream::kNone, Category::kPpComm, "pp.send",
                                  coll::CollectiveOp::kSendRecv, bytes);
        g_->depend(end, *send);
      }
    }
    tag(last, Purpose::kStepEnd, b);
  }

  void finish_step(Replica& rep, std::uint64_t b) {
    const SimTime now = g_->now();
    --rep.inflight;
    free_batches_.push_back(b);  // reused by the next batch planned, after this function
    const Batch& batch = batches_[b];
    kv_area_[static_cast<std::size_t>(rep.index)] += batch.kv_used * (now - batch.start).seconds() / rep.pp();
    if (opt_.record_trace) step_spans_[batch.span].end = now.seconds();
    for (const auto& p : batch.plan) reqs_[static_cast<std::size_t>(p.req)].in_flight = false;
    auto& peak = peak_running_[static_cast<std::size_t>(rep.index)];
    peak = std::max(peak, static_cast<std::int64_t>(rep.running.size()));
    std::int64_t produced = 0;
    for (const auto& p : batch.plan) {
      auto& r = reqs_[static_cast<std::size_t>(p.req)];
      if (r.finish >= SimTime{}) continue;  // static batching padding
      if (p.chunk > 0) {
        r.prefilled += p.chunk;
        if (r.prefilled < r.prompt) continue;
        ++r.generated;
        ++produced;
        if (r.first_token < SimTime{}) r.first_token = now;
        if (rep.prefill_only && r.generated < r.output) {
          free_request(rep, r);
          std::erase(rep.running, r.id);
          send_kv(rep, r);
          continue;
        }
      } else {
        // Under MTP the draft token is kept with the acceptance probability (its own stream of
        // draws, so arrivals and lengths are those of the run without MTP).
        const std::int64_t accepted = s_.mtp_acceptance > 0 && unit(mtp_rng_) < s_.mtp_acceptance ? 1 : 0;
        const std::int64_t n = std::min<std::int64_t>(1 + accepted, r.output - r.generated);
        r.generated += n;
        produced += n;
      }
      if (r.generated >= r.output) complete(rep, r);
    }
    if (produced > 0) tokens_out_.emplace_back(now, produced);
  }

  /// Disaggregated: the prompt's KV cache (every TP rank's shard) moves to a decode replica over
  /// as many GPU pairs as the smaller pool's TP, each pair a send/recv on the topology's links,
  /// sharing them with whatever else runs there.
  void send_kv(const Replica& from, Request& r) {
    auto& to = replicas_[static_cast<std::size_t>(route(true))];
    r.replica = to.index;
    ++to.incoming;
    // Every TP rank holds a shard of the sequence's cache and sends it to its peer; under
    // attention-DP one GPU holds it all and sends it whole (the sequences' GPUs taken in turn).
    const bool whole = from.shape.dp_attention;
    const int parts = whole ? 1 : kv_pairs_;
    const double holders = whole ? 1.0 : from.shape.tp;
    const double bytes =
        static_cast<double>(r.input) * models::kv_bytes_per_token(s_.model, from.shape) * holders / parts;
    r.kv_parts_left = parts;
    for (int t = 0; t < parts; ++t) {
      const auto k = static_cast<std::size_t>(whole ? r.id % kv_pairs_ : t);
      const auto group = g_->add_group({from.stages.front().ranks[k], to.stages.front().ranks[k]});
      const auto id = g_->add_collective(group, Stream::kNone, Category::kPpComm, "kv.transfer",
                                         coll::CollectiveOp::kSendRecv, bytes);
      tag(id, Purpose::kKvPart, static_cast<std::uint64_t>(r.id));
    }
  }

  void kv_arrived(Request& r) {
    r.prefilled = r.prompt;  // the prompt's KV arrived with the request
    auto& rep = replicas_[static_cast<std::size_t>(r.replica)];
    --rep.incoming;
    rep.waiting.push_back(r.id);
    start_step(rep);
  }

  void complete(Replica& rep, Request& r) {
    const SimTime now = g_->now();
    r.finish = now;
    if (opt_.on_request_done) opt_.on_request_done();
    if (s_.scheduler == Scheduler::kContinuous) {
      free_request(rep, r);
      std::erase(rep.running, r.id);
    }
    if (s_.arrivals == Arrivals::kClosedLoop && static_cast<std::int64_t>(reqs_.size()) < s_.requests) {
      add_request(now, draw(s_.input, rng_), draw(s_.output, rng_));
      wake_at(now);
    }
  }

  /// Throughput between the instants 10% and 90% of the requests had finished (ServingResults::steady),
  /// when that window holds at least twice as many completions as requests were ever in service.
  std::optional<ServingResults::SteadyState> steady_state(SimTime first) const {
    constexpr std::size_t kMinRequests = 20;  // fewer: the "middle" is a handful of completions
    if (reqs_.size() < kMinRequests) return std::nullopt;
    std::vector<SimTime> done;
    done.reserve(reqs_.size());
    for (const auto& q : reqs_) done.push_back(q.finish);
    std::sort(done.begin(), done.end());
    const std::size_t n = done.size();
    const SimTime from = done[n / 10], to = done[(9 * n + 9) / 10 - 1];  // the 10% and 90% completions
    if (to <= from) return std::nullopt;
    const double window = (to - from).seconds();
    std::int64_t tokens = 0;
    for (const auto& [at, count] : tokens_out_) tokens += at > from && at <= to ? count : 0;
    const auto finished = std::count_if(done.begin(), done.end(), [&](SimTime t) { return t > from && t <= to; });
    // A steady state turns its batch over: a run of a wave or two (a closed loop whose requests
    // are few times its clients) has none, and its middle would mix waves' completions.
    std::int64_t in_service = 0;
    for (auto p : peak_running_) in_service += p;
    if (finished < 2 * in_service) return std::nullopt;
    ServingResults::SteadyState st;
    st.from_s = (from - first).seconds();
    st.to_s = (to - first).seconds();
    st.output_tokens_per_s = static_cast<double>(tokens) / window;
    st.output_tokens_per_s_per_gpu = st.output_tokens_per_s / s_.gpus;
    st.requests_per_s = static_cast<double>(finished) / window;
    return st;
  }

  /// A closed loop whose requests all have the same lengths runs in waves: the clients start,
  /// prefill and finish together, so every wave looks alike and the percentiles show one wave.
  std::vector<std::string> workload_warnings() const {
    std::vector<std::string> w;
    if (s_.arrivals == Arrivals::kClosedLoop && s_.concurrency > 1 && s_.input.lo == s_.input.hi &&
        s_.output.lo == s_.output.hi) {
      w.push_back("closed loop with fixed lengths: the " + std::to_string(s_.concurrency) +
                  " clients stay in lockstep (they start and finish together, wave after wave), so the latency "
                  "percentiles describe those waves, not independent users; give lengths as ranges (--input-len " +
                  std::to_string(std::max<std::int64_t>(1, s_.input.lo * 3 / 4)) + "-" +
                  std::to_string(std::max<std::int64_t>(2, s_.input.lo * 5 / 4)) +
                  ") or an arrival rate (--rate) for a realistic mix");
    }
    return w;
  }

  ServingResults results() {
    ServingResults r;
    r.name = s_.name;
    r.model = s_.model.id;
    r.cluster = s_.cluster.id;
    r.nodes = s_.nodes;
    r.fabric = s_.fabric ? s_.fabric->id : std::string();
    r.profile = s_.profile.id;
    r.profile_origin = calib::provenance_name(s_.profile.origin);
    r.weights = models::weight_format_name(s_.weights);
    r.kv_dtype = s_.kv_bytes == 1.0 ? "fp8" : "bf16";
    r.scheduler = s_.scheduler == Scheduler::kStatic ? "static" : "continuous";
    r.gpus = s_.gpus;
    r.tp = s_.tp;
    r.dp_attention = s_.dp_attention;
    r.mtp_acceptance = s_.mtp_acceptance;
    r.replicas = static_cast<int>(replicas_.size());
    if (s_.prefill_replicas > 0) {
      const auto pool = [&](int replicas, int first) {
        const Replica& rep = replicas_[static_cast<std::size_t>(first)];
        return ServingResults::Pool{replicas, rep.shape.tp, rep.pp(), std::max(1, rep.shape.ep)};
      };
      r.pools = ServingResults::Pools{pool(s_.prefill_replicas, 0), pool(s_.decode_replicas, s_.prefill_replicas)};
    }
    r.requests = static_cast<std::int64_t>(reqs_.size());
    r.steps = steps_;
    r.preemptions = preemptions_;
    r.memory = memory_;
    r.kv_blocks = blocks_;
    r.fits = blocks_ > 0 && !oom_;
    std::vector<double> ttft, tpot, e2e;
    SimTime first = reqs_.empty() ? SimTime{} : reqs_.front().arrival, last{};
    std::int64_t goodput = 0;
    for (const auto& q : reqs_) {
      first = std::min(first, q.arrival);
      last = std::max(last, q.finish);
      r.input_tokens += q.input;
      r.output_tokens += q.output;
      const double to_first = (q.first_token - q.arrival).seconds();
      ttft.push_back(to_first);
      e2e.push_back((q.finish - q.arrival).seconds());
      const double per_token =
          q.output > 1 ? (q.finish - q.first_token).seconds() / static_cast<double>(q.output - 1) : 0.0;
      if (q.output > 1) tpot.push_back(per_token);
      const bool ok = (!s_.slo_ttft_s || to_first <= *s_.slo_ttft_s) && (!s_.slo_tpot_s || per_token <= *s_.slo_tpot_s);
      goodput += ok ? 1 : 0;
      if (opt_.record_trace && r.request_spans.size() < 5000)
        r.request_spans.push_back({q.id, q.arrival.seconds(), q.first_token.seconds(), q.finish.seconds(), q.replica});
    }
    r.makespan_s = (last - first).seconds();
    r.ttft = summarise(ttft);
    r.tpot = summarise(tpot);
    r.e2e = summarise(e2e);
    const double span = std::max(r.makespan_s, 1e-12);
    r.output_tokens_per_s = static_cast<double>(r.output_tokens) / span;
    r.output_tokens_per_s_per_gpu = r.output_tokens_per_s / r.gpus;
    r.input_tokens_per_s = static_cast<double>(r.input_tokens) / span;
    r.requests_per_s = static_cast<double>(r.requests) / span;
    if (s_.slo_ttft_s || s_.slo_tpot_s) r.goodput_requests_per_s = static_cast<double>(goodput) / span;
    r.steady = steady_state(first);
    r.warnings = s_.warnings;
    for (auto& w : workload_warnings()) r.warnings.push_back(std::move(w));
    if (oom_) {
      r.warnings.insert(r.warnings.begin(),
                        "does not fit (--allow-oom): the KV cache left after the weights cannot hold the longest "
                        "request, so it was taken to hold max batch of them, as if the GPU had the memory; the "
                        "figures are not those of this GPU");
    }
    const double mean_len = s_.trace.empty() ? s_.input.mean() + s_.output.mean() : [&] {
      double sum = 0;
      for (const auto& t : s_.trace) sum += static_cast<double>(t.input + t.output);
      return sum / static_cast<double>(s_.trace.size());
    }();
    r.kv_concurrency = blocks_ / std::max<std::int64_t>(1, blocks_for(static_cast<std::int64_t>(std::ceil(mean_len))));
    r.max_concurrency = std::min<std::int64_t>(s_.max_batch, r.kv_concurrency);
    if (s_.prefill_replicas == 0) {
      r.max_concurrency *= static_cast<std::int64_t>(replicas_.size());
      r.kv_concurrency *= static_cast<std::int64_t>(replicas_.size());
    }
    r.limits = {s_.max_batch, s_.max_tokens, s_.chunked_prefill, s_.block_size, s_.kv_fraction};
    double area = 0;
    for (double a : kv_area_) area += a;
    r.kv_utilisation_mean = area / std::max(1e-12, span * static_cast<double>(replicas_.size()));
    r.kv_utilisation_max = kv_max_;
    if (s_.model.is_moe()) {
      ServingResults::Moe moe;
      moe.routing = s_.routing.text;
      moe.ep = std::max(1, replicas_.back().shape.ep);  // the (decode) pool the report's memory is of
      moe.load_imbalance_mean = load_steps_ > 0 ? load_sum_ / static_cast<double>(load_steps_) : 1.0;
      moe.load_imbalance_max = load_steps_ > 0 ? load_max_ : 1.0;
      r.moe = moe;
    }
    double sourced = 0;
    for (double x : sources_) sourced += x;
    for (std::size_t k = 0; k < sources_.size(); ++k) r.compute_sources[k] = sourced > 0 ? sources_[k] / sourced : 0.0;
    for (std::size_t k = 0; k < comm_time_.size(); ++k) {
      if (comm_time_[k] > SimTime{}) r.collectives_s.emplace_back(kCollectiveLabels[k], comm_time_[k].seconds());
    }
    if (s_.offer) {
      ServingResults::Cost c;
      c.offer = s_.offer->id;
      c.currency = s_.offer->currency;
      // One box rented per node; a quoted range is costed at its top as well.
      const auto per_mtok = [&](double price_per_hour, double tokens) {
        return price_per_hour * span / 3600.0 / tokens * 1e6;
      };
      const auto out_tokens = static_cast<double>(r.output_tokens);
      c.price_per_hour = s_.offer->price_per_hour() * s_.nodes;
      c.per_million_output_tokens = per_mtok(c.price_per_hour, out_tokens);
      c.per_million_tokens = per_mtok(c.price_per_hour, out_tokens + static_cast<double>(r.input_tokens));
      if (s_.offer->has_range()) {
        c.price_per_hour_max = s_.offer->high().price_per_hour() * s_.nodes;
        c.per_million_output_tokens_max = per_mtok(c.price_per_hour_max, out_tokens);
      }
      r.cost = c;
    }
    r.events = events_;
    r.step_spans = std::move(step_spans_);
    return r;
  }

  const ServingScenario& s_;
  ServingRunOptions opt_;
  net::Topology topo_;
  workload::ComputeModel gemm_, other_;
  workload::SourceSeconds sources_{};  ///< compute time by source, over every layer run
  ServingMemory memory_;
  std::int64_t blocks_ = 0;
  std::mt19937_64 rng_;
  std::mt19937_64 mtp_rng_;
  models::StepMix mtp_mix_;           ///< the MTP module's work in the batch being planned (its drafting positions)
  SimTime step_overhead_;             ///< the profile's per-step host overhead, on the first stage
  workload::OpenGraph* g_ = nullptr;  ///< the running graph (set by each call of the executor)
  std::vector<Request> reqs_;
  std::vector<int> arrivals_;  ///< request ids in arrival order
  std::size_t next_arrival_ = 0;
  std::optional<SimTime> timer_at_;  ///< the earliest pending arrival timer
  std::vector<Replica> replicas_;
  int kv_pairs_ = 0;
  std::vector<Batch> batches_;  ///< batches in flight, and finished ones to reuse
  std::vector<std::uint64_t> free_batches_;
  std::vector<Purpose> purpose_;  ///< by task id
  /// An isolated collective: group, op, bytes, node copies, shares (routing_memo_'s, so the same
  /// shares are the same pointer) and direction.
  using MemoKey = std::tuple<std::uint32_t, int, double, double, const std::vector<double>*, bool>;
  std::map<MemoKey, SimTime> memo_;                            ///< isolated collectives' times
  std::array<SimTime, kCollectiveLabels.size()> comm_time_{};  ///< per kind, summed over the run
  /// A GEMM op's shape, bytes and dtype flags (its FLOPs follow from the shape).
  struct GemmKey {
    double m, n, k, groups, bytes;
    int flags;
    bool operator==(const GemmKey&) const = default;
  };
  struct GemmKeyHash {
    std::size_t operator()(const GemmKey& g) const {
      // The doubles' bits, mixed (std::hash<double> hashes bytes, slower than the lookup it saves).
      std::uint64_t h = static_cast<std::uint64_t>(g.flags);
      for (double v : {g.m, g.n, g.k, g.groups, g.bytes}) {
        h ^= std::bit_cast<std::uint64_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      }
      return static_cast<std::size_t>(h);
    }
  };
  mutable std::unordered_map<GemmKey, calib::KernelTime, GemmKeyHash> gemm_memo_;
  std::vector<Planned> plan_;
  std::vector<Segment> layer_, head_;
  std::map<models::LayerKind, std::vector<Segment>> kind_layer_;  ///< per layer kind (models with several)
  StageProgram program_;
  std::vector<double> kv_area_;
  double kv_max_ = 0;
  /// Per (EP, TP, routed token count); a std::map, so the shares the all-to-alls point at stay put.
  std::map<std::tuple<int, int, std::int64_t>, RoutedStep> routing_memo_;
  RoutedStep even_;                     ///< balanced routing, and steps with no tokens
  double load_sum_ = 0, load_max_ = 0;  ///< EP: the most loaded GPU over the mean, per step
  std::int64_t load_steps_ = 0;
  std::int64_t steps_ = 0, preemptions_ = 0;
  std::vector<std::pair<SimTime, std::int64_t>> tokens_out_;  ///< (step end, output tokens it produced)
  std::vector<std::int64_t> peak_running_;                    ///< per replica: the most requests in its batch at once
  double sliding_share_ = 0;                                  ///< of a token's KV bytes, in sliding-window layers
  std::uint64_t next_ = 0, next_decode_ = 0, events_ = 0;
  std::vector<StepSpan> step_spans_;
  bool oom_ = false;  ///< a pool was given the KV blocks its memory lacks (allow_oom)
};

}  // namespace

ServingMemory serving_memory(const ServingScenario& s, std::int64_t* kv_blocks) {
  models::ServingShape shape;
  shape.tp = s.tp;
  shape.ep = s.ep;
  shape.dp_attention = s.dp_attention;
  shape.deepep = s.deepep;
  shape.expert_slots = expert_slots(s);
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
  // MTP speculative decoding loads the multi-token-prediction module (DeepSeek-V3: 14B parameters,
  // its layer split as the model's are); counted on every GPU (it sits on the last stage).
  if (s.mtp_acceptance > 0)
    m.weights += static_cast<double>(s.model.params_mtp()) / s.tp * models::weight_format_bytes(s.weights);
  // Activation workspace at the largest step: hidden, QKV, MLP tensors of max_tokens tokens in
  // bf16, and fp32 logits for max_batch sequences.
  models::StepShape one;
  one.tp = s.tp;
  const auto d = models::layer_dims(s.model, one);
  // Under attention-DP a GPU runs every head over a TP-th of the tokens (TP need not divide the
  // heads there, so the widths at TP 1 over TP, not a rounded-down share of the heads).
  models::StepShape all_heads;
  const auto d1 = models::layer_dims(s.model, all_heads);
  const double q_width = s.dp_attention ? d1.q / s.tp : d.q, kv_width = s.dp_attention ? d1.kv / s.tp : d.kv;
  const double v = static_cast<double>((s.model.vocab + s.tp - 1) / s.tp);
  m.activations = static_cast<double>(s.max_tokens) * 2.0 * (3 * d.hidden + q_width + 2 * kv_width + d.up + d.ffn) +
                  static_cast<double>(s.max_batch) * v * 4.0;
  if (s.model.is_moe()) {  // routed pairs' expert tensors and the fp32 router scores
    const double gated = s.model.activation == models::Activation::kSwiGlu ? 2.0 : 1.0;
    m.activations += static_cast<double>(s.max_tokens) * (2.0 * static_cast<double>(s.model.moe.top_k) * (gated + 1) *
                                                              static_cast<double>(s.model.moe.expert_ffn) / s.tp +
                                                          4.0 * static_cast<double>(s.model.moe.experts));
  }
  m.other = s.profile.runtime_reserved.value;
  const double free = m.capacity - m.weights - m.activations - m.other;
  m.kv_cache = free > 0 ? s.kv_fraction * free : 0.0;
  m.total = m.weights + m.activations + m.other + m.kv_cache;
  const double per_block = static_cast<double>(s.block_size) * models::kv_bytes_per_token(s.model, shape) * share;
  // Under attention-DP each GPU's pool holds its own sequences: the replica has TP pools.
  const std::int64_t pools = s.dp_attention ? s.tp : 1;
  if (kv_blocks) *kv_blocks = static_cast<std::int64_t>(std::floor(m.kv_cache / per_block)) * pools;
  return m;
}

ServingResults simulate_serving(const ServingScenario& s, const ServingRunOptions& options) {
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
  int tight_tp = first.tp;  // the TP of the replica with the least room, for the message
  const int replicas = s.prefill_replicas > 0 ? s.prefill_replicas + s.decode_replicas : s.replicas;
  for (int i = 1; i < replicas; ++i) {
    const ServingScenario mine = s.replica(i);
    std::int64_t b = 0;
    const auto m = room_of(mine, &b);
    if (b < blocks) {
      blocks = b;
      mem = m;
      tight_tp = mine.tp;
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
    const std::string msg =
        "does not fit: " + s.model.id + " needs " + fixed(mem.weights / gib, 1) + " GiB of weights, " +
        fixed(mem.activations / gib, 1) + " GiB of activations and " + fixed(mem.other / gib, 1) +
        " GiB of runtime per GPU (TP " + std::to_string(tight_tp) + ", " + models::weight_format_name(s.weights) +
        " weights), leaving " + fixed(mem.kv_cache / gib, 2) + " GiB of KV cache (" + std::to_string(blocks) +
        " blocks) on a " + fixed(mem.capacity / gib, 1) + " GiB GPU; the longest request needs " +
        std::to_string(need) + " blocks. Try a larger TP or PP (over more nodes: --nodes N --fabric F), " +
        "quantised weights or shorter requests";
    if (!s.allow_oom) throw InfeasibleError(s.name.empty() ? msg : s.name + ": " + msg);
    // Allowed to run out of memory: every pool holds max_batch of the longest requests, so the KV
    // cache never bounds the batch (a run that cannot admit a request would never end).
    ServingRunOptions oom = options;
    oom.oom_longest_blocks = need;
    ServingRun run(s, oom);
    return run.run();
  }
  ServingRun run(s, options);
  return run.run();
}

ServingResults simulate_serving(const ServingScenario& s, bool record_trace) {
  ServingRunOptions options;
  options.record_trace = record_trace;
  return simulate_serving(s, options);
}

}  // namespace cs::serving
