#include "sim/workload/training_step.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "sim/core/check.hpp"
#include "sim/core/parallel.hpp"
#include "sim/workload/pipeline_schedule.hpp"
#include "sim/workload/stage_programs.hpp"

namespace cs::workload {

namespace {

/// What every part of the step builder reads: the scenario and the shape of the simulation.
struct StepLayout {
  const scenario::Scenario& s;
  const plan::ParallelPlan& plan;
  int P = 1, V = 1;
  std::int64_t micro = 0;
  /// DP symmetry: only replica 0 (its CP ranks, d < CP) is instantiated; d = dp index x CP + cp.
  int sim_groups = 1;
  bool zero1 = false, zero3 = false;
  /// DualPipe: each rank holds two model stages (its chunks: stage r for the micro-batches running
  /// down, stage P - 1 - r for those running up); `chunks` is 2 there and V otherwise.
  bool dual = false;
  int chunks = 1;

  StepLayout(const scenario::Scenario& sc)
      : s(sc),
        plan(sc.plan),
        P(sc.plan.pp),
        V(sc.plan.vpp),
        micro(sc.micro_batches()),
        sim_groups(sc.dp_symmetry ? sc.plan.cp : sc.plan.dpcp()),
        zero1(sc.plan.zero >= 1 && sc.plan.zero <= 2 && sc.plan.dpcp() > 1),
        zero3(sc.plan.zero >= 3 && sc.plan.dpcp() > 1),
        dual(sc.plan.schedule == plan::PipelineSchedule::kDualPipe),
        chunks(dual ? 2 : V) {}
  /// The model stage (index into the programs) that chunk `chunk` of pipeline stage `stage` runs.
  [[nodiscard]] int vstage(int stage, int chunk) const {
    if (dual) return chunk == 0 ? stage : P - 1 - stage;
    return chunk * P + stage;
  }
  [[nodiscard]] std::vector<BlockRef> blocks(int stage) const {
    return schedule(plan.schedule, stage, P, static_cast<int>(micro), V);
  }
  /// Whether block `b` is the one after which its chunk's weight gradients are final: the last
  /// micro-batch's backward (DualPipe: the chunk's last micro-batch, whose W when split).
  [[nodiscard]] bool final_gradients(const BlockRef& b) const {
    if (b.forward || b.split) return false;
    const auto last = dual ? (b.chunk + 1) * micro / 2 - 1 : micro - 1;
    return b.micro == last;
  }
  /// The program block `b` runs (`paired`: a backward overlapped with the forward before it).
  [[nodiscard]] const std::vector<ProgramItem>& program(const StagePrograms& sp, const BlockRef& b,
                                                        bool paired = false) const {
    const bool fin = final_gradients(b);
    if (b.forward) return b.paired ? sp.f_pair : sp.f;
    if (b.weight) return fin ? sp.w_last : sp.w;
    if (b.split) return sp.bi;
    if (paired) return fin ? sp.b_last_pair : sp.b_pair;
    return fin ? sp.b_last : sp.b;
  }
  /// The simulated ranks of a stage, in (d, t) order.
  [[nodiscard]] std::vector<int> stage_ranks(int stage) const {
    std::vector<int> out;
    for (int d = 0; d < sim_groups; ++d)
      for (int t = 0; t < plan.tp; ++t) out.push_back(plan.rank(stage, d, t));
    return out;
  }
  [[nodiscard]] bool simulated(int rank) const { return plan.coords(rank).d < sim_groups; }
  /// DualPipe: the rank holding the other copy of `rank`'s chunk (same place, mirrored stage).
  [[nodiscard]] int mirror(int rank) const {
    const auto c = plan.coords(rank);
    return plan.rank(P - 1 - c.stage, c.d, c.t);
  }
};

/// The tasks the later parts connect to: each block's first and last task per GPU, the last
/// backward's tasks per GPU (gradient buckets), and each layer's span (ZeRO-3 gathers).
struct BlockTasks {
  std::size_t micro = 0, chunks = 0;
  std::vector<TaskId> first, last;
  /// Per GPU (DualPipe: per GPU and chunk, `slot`), the final-gradient blocks' tasks in program order.
  std::vector<std::vector<TaskId>> last_backward;
  bool per_chunk = false;
  struct LayerSpan {
    TaskId first{}, last{};
    bool seen = false;
  };
  std::map<std::tuple<int, bool, int, int>, LayerSpan> layer_span;  ///< (rank, forward, micro, layer)

  BlockTasks(int gpus, std::int64_t micro_batches, int v, bool by_chunk)
      : micro(static_cast<std::size_t>(micro_batches)),
        chunks(static_cast<std::size_t>(v)),
        first(static_cast<std::size_t>(gpus) * 2 * micro * chunks),
        last(first.size()),
        last_backward(static_cast<std::size_t>(gpus) * (by_chunk ? chunks : 1)),
        per_chunk(by_chunk) {}
  [[nodiscard]] std::size_t slot(int rank, int chunk) const {
    return per_chunk ? static_cast<std::size_t>(rank) * chunks + static_cast<std::size_t>(chunk)
                     : static_cast<std::size_t>(rank);
  }
  [[nodiscard]] std::size_t key(int rank, bool fwd, int mb, int chunk) const {
    return ((static_cast<std::size_t>(rank) * 2 + (fwd ? 0 : 1)) * micro + static_cast<std::size_t>(mb)) * chunks +
           static_cast<std::size_t>(chunk);
  }
};

/// The process groups of one kind among a stage's simulated ranks: for each rank (by position in
/// `stage_ranks`) its group's slot; for each slot the graph's group (the simulated members) and
/// the group whose flows its collectives move (every member: they differ under DP symmetry).
struct StageGroups {
  std::vector<std::uint32_t> slot_of;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> gids;  ///< (simulated, flows) per slot
};

StageGroups resolve_groups(const StepLayout& L, GroupKind kind, const std::vector<int>& ranks, WorkloadGraph& g) {
  StageGroups out;
  std::map<std::vector<int>, std::uint32_t> slot;
  for (int r : ranks) {
    auto all = L.plan.group(kind, r);
    auto [it, fresh] = slot.emplace(all, static_cast<std::uint32_t>(out.gids.size()));
    if (fresh) {
      std::vector<int> sim;
      for (int x : all)
        if (L.simulated(x)) sim.push_back(x);
      const auto sim_gid = g.add_group(sim);
      out.gids.emplace_back(sim_gid, sim.size() == all.size() ? sim_gid : g.add_group(all));
    }
    out.slot_of.push_back(it->second);
  }
  return out;
}

/// Traffic matrices of the step's uneven all-to-alls, one per (destination shares, bytes, ranks).
using TrafficCache = std::map<std::tuple<const void*, double, std::size_t, double>, std::uint32_t>;

/// The traffic matrix of an all-to-all whose every rank sends `bytes`, split by `share`.
std::uint32_t traffic_of(const ProgramItem& item, std::size_t n, TrafficCache& cache, WorkloadGraph& g) {
  const auto key =
      std::tuple<const void*, double, std::size_t, double>{item.dest_share.get(), item.bytes, n, item.node_copies};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const auto& share = *item.dest_share;
  CS_ASSERT(share.size() == n, "one destination share per EP rank");
  const auto id = g.add_traffic(ep_alltoall_pairs(item.bytes, share), item.node_copies);
  cache.emplace(key, id);
  return id;
}

/// What one pipeline stage adds to the graph, worked out before it is built: its process groups
/// (made, with the all-to-alls' traffic matrices, in the order a stage-by-stage build makes them,
/// so their ids do not change), how many tasks, prototypes, argument slots and edges it makes, and
/// the first of each (stages in order, as one after the other would number them).
struct StagePlan {
  std::vector<int> ranks;
  std::map<GroupKind, StageGroups> groups;
  WorkloadGraph::Range count, first;
  bool own_streams = true;  ///< its collectives join only its own ranks' streams
};

/// The program block `b` of a stage's `blocks` runs (a backward after a paired forward: its
/// overlapped form).
const std::vector<ProgramItem>& block_program(const StepLayout& L, const std::vector<StagePrograms>& programs, int st,
                                              const std::vector<BlockRef>& blocks, std::size_t b) {
  const auto& blk = blocks[b];
  return L.program(programs[static_cast<std::size_t>(L.vstage(st, blk.chunk))], blk, b > 0 && blocks[b - 1].paired);
}

bool has_edges(const std::vector<ProgramItem>& prog) {
  return std::any_of(prog.begin(), prog.end(), [](const ProgramItem& p) { return !p.after.empty(); });
}

StagePlan plan_stage(const StepLayout& L, const std::vector<StagePrograms>& programs, int st, TrafficCache& traffic,
                     WorkloadGraph& g) {
  StagePlan sp;
  sp.ranks = L.stage_ranks(st);
  const auto rank_count = sp.ranks.size();
  auto resolve = [&](GroupKind kind) -> const StageGroups& {
    auto found = sp.groups.find(kind);
    if (found != sp.groups.end()) return found->second;
    const auto& sg = sp.groups.emplace(kind, resolve_groups(L, kind, sp.ranks, g)).first->second;
    for (const auto& [gid, flow_gid] : sg.gids) {
      for (int r : g.groups()[gid]) sp.own_streams = sp.own_streams && L.plan.coords(r).stage == st;
    }
    return sg;
  };
  resolve(GroupKind::kTp);
  const auto blocks = L.blocks(st);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const auto& prog = block_program(L, programs, st, blocks, b);
    const bool edges = has_edges(prog);
    for (const auto& item : prog) {
      if (edges) sp.count.edge += rank_count * item.after.size();
      if (!item.comm) {
        sp.count.proto += 1;
        sp.count.task += rank_count;
        continue;
      }
      const auto& sg = resolve(item.group);
      const auto slots = sg.gids.size();
      sp.count.task += slots;
      sp.count.args += slots;
      sp.count.proto += item.dest_share ? slots : 1;
      if (item.dest_share) {
        for (const auto& [gid, flow_gid] : sg.gids) traffic_of(item, g.groups()[flow_gid].size(), traffic, g);
      }
    }
  }
  return sp;
}

/// Where a stage's next task, prototype, argument slot and edge go.
struct Cursor {
  WorkloadGraph::Range next;
  TaskId task() { return static_cast<TaskId>(next.task++); }
  std::uint32_t proto() { return static_cast<std::uint32_t>(next.proto++); }
  std::uint32_t args() { return static_cast<std::uint32_t>(next.args++); }
};

/// The tasks of one program item on every simulated rank of a stage (by position): a compute task
/// per rank, or one collective per group of the item's kind.
std::vector<TaskId> instantiate_item(const ProgramItem& item, int micro, const StagePlan& sp,
                                     const TrafficCache& traffic, Cursor& at, WorkloadGraph& g) {
  const auto& ranks = sp.ranks;
  std::vector<TaskId> ids(ranks.size());
  // One prototype for the item's tasks on every rank (8 bytes a task rather than 40).
  if (!item.comm) {
    const auto proto = at.proto();
    g.fill_proto(proto, {.label = item.label,
                         .duration = SimTime::from_seconds(item.seconds),
                         .layer = item.layer,
                         .micro = micro,
                         .category = item.category,
                         .stream = Stream::kCompute,
                         .shared = true});
    for (std::size_t k = 0; k < ranks.size(); ++k) ids[k] = g.fill_compute(at.task(), ranks[k], proto);
    return ids;
  }
  const auto& sg = sp.groups.at(item.group);
  std::vector<TaskId> slot_task(sg.gids.size());
  std::vector<bool> made(sg.gids.size(), false);
  // The item's collective prototype: one shared by every group's task, or (an uneven all-to-all)
  // one of its own per group.
  const auto collective_proto = [&](bool shared) {
    const auto id = at.proto();
    g.fill_proto(id, {.label = item.label,
                      .layer = item.layer,
                      .micro = micro,
                      .category = item.category,
                      .stream = item.stream,
                      .collective = true,
                      .shared = shared});
    return id;
  };
  std::uint32_t proto = item.dest_share ? 0 : collective_proto(true);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const auto slot = sg.slot_of[k];
    if (!made[slot]) {
      const auto gid = sg.gids[slot].first, flow_gid = sg.gids[slot].second;
      if (item.dest_share) {
        // An uneven all-to-all: a prototype of its own, its traffic matrix, each rank's mean bytes.
        const auto n = g.groups()[flow_gid].size();
        const auto key = std::tuple<const void*, double, std::size_t, double>{item.dest_share.get(), item.bytes, n,
                                                                              item.node_copies};
        const auto tid = traffic.at(key);
        double total = 0;
        for (double b : g.traffic(tid)) total += b;
        proto = collective_proto(false);
        slot_task[slot] = g.fill_collective(
            at.task(), proto, at.args(),
            {.bytes = total / static_cast<double>(n),
             .group = gid,
             .flow_group = flow_gid,
             .traffic = tid,
             .op = coll::CollectiveOp::kAllToAll,
             .algorithm = item.rail_forwarded ? coll::Algorithm::kHierarchical : coll::Algorithm::kAuto});
      } else {
        slot_task[slot] = g.fill_collective(at.task(), proto, at.args(),
                                            {.bytes = item.bytes, .group = gid, .flow_group = flow_gid, .op = item.op});
      }
      made[slot] = true;
    }
    ids[k] = slot_task[slot];
  }
  return ids;
}

/// Records an item's tasks for the later parts and wires its in-program edges (ring attention).
void record_item(const StepLayout& L, const BlockRef& blk, std::size_t i, const ProgramItem& item,
                 const std::vector<int>& ranks, const std::vector<TaskId>& ids, std::vector<TaskId>& item_ids,
                 BlockTasks& bt, std::map<std::tuple<int, bool, int, int>, BlockTasks::LayerSpan>& layer_span,
                 Cursor& at, WorkloadGraph& g) {
  const bool last_backward = L.final_gradients(blk);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    if (L.zero3 && item.layer >= 0) {
      auto& span = layer_span[{ranks[k], blk.forward, blk.micro, item.layer}];
      if (!span.seen) span.first = ids[k];
      span.last = ids[k];
      span.seen = true;
    }
    // A W block is no pipeline end point: the backward it completes already sent its gradient on.
    if (!blk.weight) {
      const auto kk = bt.key(ranks[k], blk.forward, blk.micro, blk.chunk);
      if (i == 0) bt.first[kk] = ids[k];
      bt.last[kk] = ids[k];
    }
    if (last_backward) bt.last_backward[bt.slot(ranks[k], blk.chunk)].push_back(ids[k]);
    if (item_ids.empty()) continue;
    item_ids[i * ranks.size() + k] = ids[k];
    // A collective is one task shared by its members: it gets one edge per member (each member's
    // op must be done), counted and released per edge.
    for (int a : item.after)
      g.fill_edge(at.next.edge++, item_ids[static_cast<std::size_t>(a) * ranks.size() + k], ids[k]);
  }
}

/// One block's program being instantiated on a stage's ranks, item by item.
struct BlockRun {
  const BlockRef& blk;
  const std::vector<ProgramItem>& prog;
  std::vector<TaskId> item_ids;  ///< for in-program edges, when the program has any
  std::size_t next = 0;

  BlockRun(const BlockRef& b, const std::vector<ProgramItem>& p, std::size_t ranks)
      : blk(b),
        prog(p),
        item_ids(std::any_of(p.begin(), p.end(), [](const ProgramItem& x) { return !x.after.empty(); })
                     ? p.size() * ranks
                     : 0) {}
  /// One past the next async all-to-all (the end of the segment the paired block can run beside).
  [[nodiscard]] std::size_t segment_end() const {
    for (std::size_t i = next; i < prog.size(); ++i)
      if (is_async(prog[i])) return i + 1;
    return prog.size();
  }
  /// Segments in the program (its async all-to-alls + 1), and those instantiated so far.
  [[nodiscard]] double segments() const {
    return 1.0 + static_cast<double>(std::count_if(prog.begin(), prog.end(), is_async));
  }
  double done = 0;

 private:
  static bool is_async(const ProgramItem& p) { return p.comm && p.stream == Stream::kCp; }
};

/// Every stage's schedule instantiated on its simulated ranks, all of them advancing item by item
/// together so that a collective takes the same place in every member's stream. The stages are
/// built side by side on the workers, each into its own ranges of the graph's arrays (stage after
/// stage in id order, counted first), so the graph is the same as built one stage after the other.
/// A DualPipe pair (a forward and the backward after it) alternates segment by segment, each
/// block's all-to-alls on their own stream under the other block's compute.
BlockTasks instantiate_stages(const StepLayout& L, const std::vector<StagePrograms>& programs, WorkloadGraph& g) {
  BlockTasks bt(L.s.gpus, L.micro, L.chunks, L.dual);
  TrafficCache traffic;
  std::vector<StagePlan> plans;
  WorkloadGraph::Range total;
  bool own_streams = true;
  for (int st = 0; st < L.P; ++st) {
    plans.push_back(plan_stage(L, programs, st, traffic, g));
    auto& c = plans.back().count;
    total.task += c.task;
    total.proto += c.proto;
    total.args += c.args;
    total.edge += c.edge;
    own_streams = own_streams && plans.back().own_streams;
  }
  auto next = g.extend(total);
  for (auto& sp : plans) {
    sp.first = next;
    next.task += sp.count.task;
    next.proto += sp.count.proto;
    next.args += sp.count.args;
    next.edge += sp.count.edge;
  }
  std::vector<std::map<std::tuple<int, bool, int, int>, BlockTasks::LayerSpan>> spans(plans.size());
  auto build = [&](std::size_t st) {
    const auto& sp = plans[st];
    Cursor at{sp.first};
    const auto run_to = [&](BlockRun& run, std::size_t end) {
      for (; run.next < end; ++run.next) {
        const auto& item = run.prog[run.next];
        const auto ids = instantiate_item(item, run.blk.micro, sp, traffic, at, g);
        record_item(L, run.blk, run.next, item, sp.ranks, ids, run.item_ids, bt, spans[st], at, g);
      }
    };
    const auto blocks = L.blocks(static_cast<int>(st));
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      BlockRun run(blocks[b], block_program(L, programs, static_cast<int>(st), blocks, b), sp.ranks.size());
      if (!blocks[b].paired) {
        run_to(run, run.prog.size());
        continue;
      }
      ++b;
      BlockRun other(blocks[b], block_program(L, programs, static_cast<int>(st), blocks, b), sp.ranks.size());
      // Segment by segment, the block further behind (as a share of its segments) first: a
      // backward with full recompute has twice a forward's all-to-alls, and each should have
      // compute of the other block beside it.
      const double fs = run.segments(), bs = other.segments();
      while (run.next < run.prog.size() || other.next < other.prog.size()) {
        const bool forward =
            other.next == other.prog.size() || (run.next < run.prog.size() && run.done / fs <= other.done / bs);
        auto& r = forward ? run : other;
        run_to(r, r.segment_end());
        r.done += 1;
      }
    }
    CS_ASSERT(at.next.task == sp.first.task + sp.count.task && at.next.proto == sp.first.proto + sp.count.proto &&
                  at.next.args == sp.first.args + sp.count.args && at.next.edge == sp.first.edge + sp.count.edge,
              "a stage fills exactly the ranges counted for it");
  };
  // A stream takes its tasks from one stage only (in id order); were a group to span stages, the
  // stages are filled one after the other, into the same ranges.
  if (own_streams) {
    parallel_for_each(plans.size(), build);
  } else {
    for (std::size_t st = 0; st < plans.size(); ++st) build(st);
  }
  for (auto& m : spans) bt.layer_span.merge(m);
  return bt;
}

/// Room for the stages' programs, most of the graph (one copy of tens of millions of tasks saved
/// at 16K GPUs), plus the transfers and buckets around them.
void reserve_tasks(const StepLayout& L, const std::vector<StagePrograms>& programs, WorkloadGraph& g) {
  std::size_t tasks = 0, collectives = 0;
  for (int st = 0; st < L.P; ++st) {
    for (const auto& blk : L.blocks(st)) {
      const auto& sp = programs[static_cast<std::size_t>(L.vstage(st, blk.chunk))];
      for (const auto& item : L.program(sp, blk)) {
        tasks += item.comm ? 1 : static_cast<std::size_t>(L.plan.tp);
        collectives += item.comm ? 1 : 0;
      }
    }
  }
  tasks *= static_cast<std::size_t>(L.sim_groups);
  collectives *= static_cast<std::size_t>(L.sim_groups);
  // The pipeline transfers (add_pipeline_transfers): one each way per hop between model stages,
  // micro-batch, TP rank and simulated group; at PP 16 more than the eighth added for the rest
  // (Llama-3.1-405B on 16K GPUs: 491,520 against 388,366), and the collectives' array doubled
  // once, 112 MB more pages zeroed and copied.
  const auto hops = static_cast<std::size_t>(L.P == 1 ? 0 : L.dual ? L.P - 1 : L.P * L.V - 1);
  const auto transfers = 2 * hops * static_cast<std::size_t>(L.micro) * static_cast<std::size_t>(L.plan.tp) *
                         static_cast<std::size_t>(L.sim_groups);
  g.reserve(tasks + tasks / 8 + transfers, collectives + collectives / 8 + transfers);
  // Each simulated rank's compute and CP streams hold its stage's program items (a collective
  // joins each member's stream), plus a few step-level tasks (optimizer, weight gather): room up
  // front rather than growth by doubling over thousands of tasks per stream.
  constexpr std::size_t kStepLevel = 8;
  for (int st = 0; st < L.P; ++st) {
    std::size_t on[kStreamsPerGpu] = {};
    for (const auto& blk : L.blocks(st)) {
      const auto& sp = programs[static_cast<std::size_t>(L.vstage(st, blk.chunk))];
      for (const auto& item : L.program(sp, blk)) {
        if (item.stream != Stream::kNone) ++on[static_cast<std::size_t>(item.stream)];
      }
    }
    for (int r : L.stage_ranks(st)) {
      for (std::size_t k = 0; k < kStreamsPerGpu; ++k) {
        if (on[k] > 0) g.reserve_stream(static_cast<std::size_t>(r) * kStreamsPerGpu + k, on[k] + kStepLevel);
      }
    }
  }
}

/// Pipeline transfers: activations forward, gradients backward, each TP rank its 1/TP slice
/// (Megatron's scatter/gather optimisation), posted as soon as the producing block ends.
void add_pipeline_transfers(const StepLayout& L, const BlockTasks& bt, WorkloadGraph& g) {
  if (L.P == 1) return;
  const auto shape = step_shape(L.s, true);
  const double bytes = static_cast<double>(L.s.micro_batch * L.s.seq * L.s.model.hidden) * shape.act_bytes / L.plan.tp;
  std::vector<std::uint32_t> fwd_proto, bwd_proto;  // per micro-batch, shared by every stage and rank
  for (int mb = 0; mb < static_cast<int>(L.micro); ++mb) {
    fwd_proto.push_back(g.add_proto(Stream::kNone, Category::kPpComm, "pp.send_activation", -1, mb, SimTime{}, true));
    bwd_proto.push_back(g.add_proto(Stream::kNone, Category::kPpComm, "pp.send_gradient", -1, mb, SimTime{}, true));
  }
  // Each hop between consecutive model stages: (stage, chunk) to (stage, chunk), and the
  // micro-batches that take it (DualPipe: chunk 0's run down, chunk 1's up).
  struct Hop {
    int st, ca, next, cb, mb_begin, mb_end;
  };
  std::vector<Hop> hops;
  const int all = static_cast<int>(L.micro), half = all / 2;
  for (int vs = 0; vs + 1 < L.P * L.V && !L.dual; ++vs)
    hops.push_back({vs % L.P, vs / L.P, (vs + 1) % L.P, (vs + 1) / L.P, 0, all});
  for (int pos = 0; pos + 1 < L.P && L.dual; ++pos) {
    hops.push_back({pos, 0, pos + 1, 0, 0, half});
    hops.push_back({L.P - 1 - pos, 1, L.P - 2 - pos, 1, half, all});
  }
  for (const auto& [st, ca, next, cb, mb_begin, mb_end] : hops) {
    for (int d = 0; d < L.sim_groups; ++d) {
      for (int t = 0; t < L.plan.tp; ++t) {
        const int a = L.plan.rank(st, d, t), b = L.plan.rank(next, d, t);
        const auto fwd_group = g.add_group({a, b});
        const auto bwd_group = g.add_group({b, a});
        for (int mb = mb_begin; mb < mb_end; ++mb) {
          const auto m = static_cast<std::size_t>(mb);
          const auto xf = g.add_collective_on(fwd_proto[m], fwd_group, fwd_group, coll::CollectiveOp::kSendRecv, bytes);
          g.depend(bt.last[bt.key(a, true, mb, ca)], xf);
          g.depend(xf, bt.first[bt.key(b, true, mb, cb)]);
          const auto xb = g.add_collective_on(bwd_proto[m], bwd_group, bwd_group, coll::CollectiveOp::kSendRecv, bytes);
          g.depend(bt.last[bt.key(b, false, mb, cb)], xb);
          g.depend(xb, bt.first[bt.key(a, false, mb, ca)]);
        }
      }
    }
  }
}

/// A gradient-reduction group (kind `kind` holding `rank`): its simulated members, the graph's
/// group for them, and the group whose flows its collectives move.
struct ReductionGroup {
  std::vector<int> sim;
  std::uint32_t gid = 0, flow_gid = 0;
};

ReductionGroup reduction_group(const StepLayout& L, GroupKind kind, int rank, WorkloadGraph& g) {
  const auto all = L.plan.group(kind, rank);
  ReductionGroup out;
  for (int x : all)
    if (L.simulated(x)) out.sim.push_back(x);
  out.gid = g.add_group(out.sim);
  out.flow_gid = g.add_group(all);
  return out;
}

/// The reduce-scatters of ZeRO-3 that the optimizer waits for.
struct Zero3Tasks {
  std::vector<std::vector<TaskId>> dense;     ///< per tensor rank
  std::map<int, std::vector<TaskId>> expert;  ///< per simulated rank (MoE with expert-DP > 1)
};

/// ZeRO-3 (FSDP): every layer's weights are all-gathered over DP x CP before its forward and its
/// backward (on the communication stream, in schedule order, so the next layer's gather overlaps
/// this layer's compute), and its gradients reduce-scattered after each backward. In a MoE layer
/// the dense part (attention, router, shared experts, norms) goes over DP x CP and the routed
/// experts a GPU holds over expert-DP (the GPUs holding the same experts), as Megatron shards them.
Zero3Tasks add_zero3(const StepLayout& L, const BlockTasks& bt, int layers_on_stage, WorkloadGraph& g) {
  Zero3Tasks out;
  out.dense.resize(static_cast<std::size_t>(L.plan.tp));
  if (!L.zero3) return out;
  const auto params = stage_params(L.s);
  const double act_bytes = step_shape(L.s, true).act_bytes;
  // A layer's parameters on one GPU: dense and routed experts (dense models: the dense layer).
  const bool moe = L.s.model.is_moe();
  const auto layer_params = [&](int l) {
    return moe ? params.by_kind.at(L.s.model.layer_kind(l)) : models::LayerParams{params.per_layer, 0.0};
  };
  const auto blocks = schedule(L.plan.schedule, 0, 1, static_cast<int>(L.micro));
  // One group's gathers and scatters for `part` of each layer (weights in 16 bits gathered, main
  // gradients scattered); `rs` collects the scatters.
  const auto add = [&](const ReductionGroup& grp, bool experts, std::vector<TaskId>& rs_out) {
    for (const auto& blk : blocks) {
      for (int i = 0; i < layers_on_stage; ++i) {
        const int l = blk.forward ? i : layers_on_stage - 1 - i;
        const auto lp = layer_params(l);
        const double part = experts ? lp.expert : lp.dense;
        if (part <= 0) continue;
        const auto ag = g.add_collective_on(grp.gid, grp.flow_gid, Stream::kComm, Category::kDpComm,
                                            experts ? "edp.param_allgather" : "dp.param_allgather", l, blk.micro,
                                            coll::CollectiveOp::kAllGather, part * act_bytes);
        for (int r : grp.sim) g.depend(ag, bt.layer_span.at({r, blk.forward, blk.micro, l}).first);
        if (blk.forward) continue;
        const auto rs = g.add_collective_on(grp.gid, grp.flow_gid, Stream::kNone, Category::kDpComm,
                                            experts ? "edp.grad_reducescatter" : "dp.grad_reducescatter", l, blk.micro,
                                            coll::CollectiveOp::kReduceScatter, part * L.s.grad_bytes);
        for (int r : grp.sim) g.depend(bt.layer_span.at({r, false, blk.micro, l}).last, rs);
        rs_out.push_back(rs);
      }
    }
  };
  for (int t = 0; t < L.plan.tp; ++t)
    add(reduction_group(L, GroupKind::kDpCp, L.plan.rank(0, 0, t), g), false, out.dense[static_cast<std::size_t>(t)]);
  if (moe && L.plan.edp() > 1) {
    for (int r : L.stage_ranks(0)) {
      if (out.expert.contains(r)) continue;
      const auto grp = reduction_group(L, GroupKind::kExpertDp, r, g);
      std::vector<TaskId> rs;
      add(grp, true, rs);
      for (int x : grp.sim) out.expert[x] = rs;
    }
  }
  return out;
}

/// Data parallelism: the gradients of a stage's last backward items, reduced over DP x CP in
/// buckets on the communication stream as each bucket fills (main gradients, fp32 unless
/// grad_dtype bf16; a reduce-scatter under ZeRO-1/2, an all-reduce otherwise).
std::vector<TaskId> add_gradient_buckets(const StepLayout& L, const std::vector<ProgramItem>& items,
                                         const ReductionGroup& grp, const BlockTasks& bt, WorkloadGraph& g,
                                         bool experts = false) {
  std::vector<TaskId> out;
  double bucket = 0;
  const bool shard = experts ? L.zero1 && L.plan.edp() > 1 : L.zero1;
  for (std::size_t i = 0; i < items.size(); ++i) {
    bucket += experts ? items[i].expert_grad_params : items[i].grad_params;
    const bool flush = bucket >= L.s.grad_bucket_params || (i + 1 == items.size() && bucket > 0);
    if (!flush) continue;
    const char* label = experts ? (shard ? "edp.grad_reducescatter" : "edp.grad_allreduce")
                                : (shard ? "dp.grad_reducescatter" : "dp.grad_allreduce");
    const auto id = g.add_collective_on(grp.gid, grp.flow_gid, Stream::kComm, Category::kDpComm, label, -1, -1,
                                        shard ? coll::CollectiveOp::kReduceScatter : coll::CollectiveOp::kAllReduce,
                                        bucket * L.s.grad_bytes);
    // Without overlap (Megatron's default) every bucket waits for the whole backward.
    const std::size_t after = L.s.overlap_grad_reduce ? i : items.size() - 1;
    for (int r : grp.sim) g.depend(bt.last_backward[static_cast<std::size_t>(r)][after], id);
    out.push_back(id);
    bucket = 0;
  }
  return out;
}

/// The routed experts' gradients of a stage, reduced over expert-DP (the GPUs holding the same
/// experts) in buckets as they become final; under ZeRO-1 a reduce-scatter, and the updated expert
/// weights all-gathered after the optimizer (`groups`, for the caller to add once the optimizer is in).
struct ExpertReductions {
  std::map<int, std::vector<TaskId>> tasks;  ///< per simulated rank, the reductions its optimizer waits for
  std::vector<ReductionGroup> groups;
};

ExpertReductions add_expert_reductions(const StepLayout& L, int stage, const std::vector<ProgramItem>& last_items,
                                       double expert_params, const BlockTasks& bt, WorkloadGraph& g) {
  ExpertReductions out;
  if (expert_params <= 0 || L.plan.edp() == 1) return out;
  for (int r : L.stage_ranks(stage)) {
    if (out.tasks.contains(r)) continue;
    auto grp = reduction_group(L, GroupKind::kExpertDp, r, g);
    const auto tasks = add_gradient_buckets(L, last_items, grp, bt, g, true);
    for (int x : grp.sim) out.tasks[x] = tasks;
    out.groups.push_back(std::move(grp));
  }
  return out;
}

/// Bytes mixed-precision Adam streams per parameter it updates (docs/metrics.md, "Optimizer"):
/// the fp32 master weight and gradient read, the master written (12), the two moments read and
/// written (4 x their bytes), the bf16 copy written (2); a GPU-held fp32 weight average read and
/// written (8).
double optimizer_bytes_per_param(const scenario::Scenario& s) {
  return 14.0 + 4.0 * s.optimizer_moment_bytes + (s.ema == scenario::Scenario::Ema::kGpu ? 8.0 : 0.0);
}

/// Each stage's gradient reduction and optimizer (optimizer_bytes_per_param over the shard ZeRO
/// leaves it); ZeRO-1/2 then all-gathers the updated weights.
void add_optimizer(const StepLayout& L, const std::vector<StagePrograms>& programs, const BlockTasks& bt,
                   const Zero3Tasks& zero3, const ComputeModel& compute, WorkloadGraph& g, double& optimizer_s) {
  const double act_bytes = step_shape(L.s, true).act_bytes;
  for (int st = 0; st < L.P; ++st) {
    std::vector<ProgramItem> last_items;  // the stage's last backwards, in schedule order
    for (const auto& blk : L.blocks(st)) {
      if (blk.forward || blk.micro + 1 != L.micro) continue;
      const auto& b = programs[static_cast<std::size_t>(L.vstage(st, blk.chunk))].b_last;
      last_items.insert(last_items.end(), b.begin(), b.end());
    }
    double stage_params = 0, expert_params = 0;
    for (int c = 0; c < L.V; ++c) {
      stage_params += programs[static_cast<std::size_t>(L.vstage(st, c))].params;
      expert_params += programs[static_cast<std::size_t>(L.vstage(st, c))].expert_params;
    }
    auto expert_tasks = L.zero3 ? ExpertReductions{} : add_expert_reductions(L, st, last_items, expert_params, bt, g);
    if (L.zero3) expert_tasks.tasks = zero3.expert;
    for (int t = 0; t < L.plan.tp; ++t) {
      const auto grp = reduction_group(L, GroupKind::kDpCp, L.plan.rank(st, 0, t), g);
      const auto dp_tasks = L.zero3             ? zero3.dense[static_cast<std::size_t>(t)]
                            : L.plan.dpcp() > 1 ? add_gradient_buckets(L, last_items, grp, bt, g)
                                                : std::vector<TaskId>{};
      const double opt_params = stage_params / (L.zero1 || L.zero3 ? L.plan.dpcp() : 1) +
                                expert_params / (L.zero1 || L.zero3 ? L.plan.edp() : 1);
      // FP8 training (Transformer Engine with Megatron's first-micro-batch weight caching) casts
      // every local weight to FP8 with its transpose once per step: read 2 bytes, write 1 + 1. All
      // of the stage's parameters are counted (the embedding and a bf16 LM head too: a small
      // over-count); ZeRO does not shard it, every rank casts the weights it computes with. Current
      // scaling reads each weight once more for its amax first.
      const double cast_per_param = L.s.fp8_current_scaling ? 6.0 : 4.0;
      const double cast_bytes =
          L.s.dtype == calib::Dtype::kFp8 && L.s.lora_rank == 0 ? cast_per_param * (stage_params + expert_params) : 0.0;
      const double opt_seconds = compute.memory_seconds(optimizer_bytes_per_param(L.s) * opt_params + cast_bytes);
      if (t == 0) optimizer_s += opt_seconds;
      for (int r : grp.sim) {
        const auto id = g.add_compute(r, Stream::kCompute, Category::kOptimizer, "optimizer", -1, -1,
                                      SimTime::from_seconds(opt_seconds));
        for (auto dt : dp_tasks) g.depend(dt, id);
        if (auto e = expert_tasks.tasks.find(r); e != expert_tasks.tasks.end())
          for (auto et : e->second) g.depend(et, id);
      }
      if (L.zero1) {
        g.add_collective_on(grp.gid, grp.flow_gid, Stream::kCompute, Category::kDpComm, "dp.param_allgather", -1, -1,
                            coll::CollectiveOp::kAllGather, stage_params * act_bytes);
      }
    }
    if (L.zero1) {
      for (const auto& grp : expert_tasks.groups) {
        g.add_collective_on(grp.gid, grp.flow_gid, Stream::kCompute, Category::kDpComm, "edp.param_allgather", -1, -1,
                            coll::CollectiveOp::kAllGather, expert_params * act_bytes);
      }
    }
  }
}

/// The programs of the blocks after which chunk `chunk`'s gradients are final on stage `st`, in
/// schedule order, as they ran (a backward after a paired forward in its overlapped form).
std::vector<ProgramItem> final_items(const StepLayout& L, const std::vector<StagePrograms>& programs, int st,
                                     int chunk) {
  std::vector<ProgramItem> out;
  const auto blocks = L.blocks(st);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].chunk != chunk || !L.final_gradients(blocks[i])) continue;
    const auto& prog = block_program(L, programs, st, blocks, i);
    out.insert(out.end(), prog.begin(), prog.end());
  }
  return out;
}

/// DualPipe's gradient reduction and optimizer. Model stage j's weights are on rank j (chunk 0)
/// and on rank P - 1 - j (chunk 1), each with its DP x CP replicas: one group of 2 DP x CP
/// holds every copy (experts: 2 expert-DP), and its gradients are reduced over it in buckets as
/// each side's gradients become final (the two sides reach a layer's gradients at different
/// times; a bucket waits for both). ZeRO-1/2 shards the optimizer over the whole group. Each rank
/// then steps both of its chunks' shards.
void add_dualpipe_optimizer(const StepLayout& L, const std::vector<StagePrograms>& programs, const BlockTasks& bt,
                            const ComputeModel& compute, WorkloadGraph& g, double& optimizer_s) {
  const double act_bytes = step_shape(L.s, true).act_bytes;
  const bool shard = L.plan.zero >= 1;
  std::map<int, std::vector<TaskId>> waits;  // per simulated rank: the reductions its optimizer waits for
  struct Gather {
    std::uint32_t gid, flow_gid;
    double bytes;
    bool experts;
  };
  std::vector<Gather> gathers;  // ZeRO-1's all-gathers of the updated weights, after the optimizers
  // Each side's final-gradient tasks carrying gradients (dense or expert), in program order.
  const auto marked = [&](int rank, int chunk, const std::vector<ProgramItem>& items, bool experts) {
    std::vector<std::pair<TaskId, double>> out;
    const auto& tasks = bt.last_backward[bt.slot(rank, chunk)];
    CS_ASSERT(tasks.size() == items.size(), "one task per final-gradient item");
    for (std::size_t i = 0; i < items.size(); ++i) {
      const double p = experts ? items[i].expert_grad_params : items[i].grad_params;
      if (p > 0) out.emplace_back(tasks[i], p);
    }
    return out;
  };
  for (int j = 0; j < L.P; ++j) {
    const int mirror_stage = L.P - 1 - j;
    const auto items_a = final_items(L, programs, j, 0), items_b = final_items(L, programs, mirror_stage, 1);
    const auto& sp = programs[static_cast<std::size_t>(j)];
    for (int experts = 0; experts < 2; ++experts) {
      const double params = experts ? sp.expert_params : sp.params;
      if (params <= 0) continue;
      // The groups of copies: per tensor rank (dense) or per expert-DP group (experts).
      std::set<std::vector<int>> seen;
      for (int r : L.stage_ranks(j)) {
        auto all = L.plan.group(experts ? GroupKind::kExpertDp : GroupKind::kDpCp, r);
        if (!seen.insert(all).second) continue;
        const auto own = all;
        for (int x : own) all.push_back(L.mirror(x));
        std::vector<int> sim;
        std::vector<std::vector<std::pair<TaskId, double>>> marks;
        for (std::size_t k = 0; k < all.size(); ++k) {
          if (!L.simulated(all[k])) continue;
          sim.push_back(all[k]);
          const bool down = k < own.size();
          marks.push_back(marked(all[k], down ? 0 : 1, down ? items_a : items_b, experts == 1));
        }
        const auto gid = g.add_group(sim), flow_gid = sim.size() == all.size() ? gid : g.add_group(all);
        const auto& first = marks.front();
        for (const auto& m : marks) CS_ASSERT(m.size() == first.size(), "both copies mark the same gradients");
        std::vector<TaskId> reductions;
        double bucket = 0;
        for (std::size_t i = 0; i < first.size(); ++i) {
          bucket += first[i].second;
          if (bucket < L.s.grad_bucket_params && i + 1 < first.size()) continue;
          const char* label = experts ? (shard ? "edp.grad_reducescatter" : "edp.grad_allreduce")
                                      : (shard ? "dp.grad_reducescatter" : "dp.grad_allreduce");
          const auto id = g.add_collective_on(
              gid, flow_gid, Stream::kComm, Category::kDpComm, label, -1, -1,
              shard ? coll::CollectiveOp::kReduceScatter : coll::CollectiveOp::kAllReduce, bucket * L.s.grad_bytes);
          for (const auto& m : marks) g.depend(m[i].first, id);
          reductions.push_back(id);
          bucket = 0;
        }
        for (int x : sim) waits[x].insert(waits[x].end(), reductions.begin(), reductions.end());
        if (shard) gathers.push_back({gid, flow_gid, params * act_bytes, experts == 1});
      }
    }
  }
  for (int st = 0; st < L.P; ++st) {
    double params = 0, expert_params = 0;
    for (int c = 0; c < 2; ++c) {
      params += programs[static_cast<std::size_t>(L.vstage(st, c))].params;
      expert_params += programs[static_cast<std::size_t>(L.vstage(st, c))].expert_params;
    }
    const double opt_params =
        shard ? params / (2.0 * L.plan.dpcp()) + expert_params / (2.0 * L.plan.edp()) : params + expert_params;
    const double cast_bytes =
        L.s.dtype == calib::Dtype::kFp8 && L.s.lora_rank == 0 ? 4.0 * (params + expert_params) : 0.0;
    const double opt_seconds = compute.memory_seconds(optimizer_bytes_per_param(L.s) * opt_params + cast_bytes);
    optimizer_s += opt_seconds;
    const auto opt = SimTime::from_seconds(opt_seconds);
    for (int r : L.stage_ranks(st)) {
      const auto id = g.add_compute(r, Stream::kCompute, Category::kOptimizer, "optimizer", -1, -1, opt);
      for (auto w : waits[r]) g.depend(w, id);
    }
  }
  for (const auto& x : gathers) {
    g.add_collective_on(x.gid, x.flow_gid, Stream::kCompute, Category::kDpComm,
                        x.experts ? "edp.param_allgather" : "dp.param_allgather", -1, -1,
                        coll::CollectiveOp::kAllGather, x.bytes);
  }
}

}  // namespace

TrainingStep build_training_step(const scenario::Scenario& s, const ComputeModel& compute) {
  const StepLayout L(s);
  const auto flops = micro_batch_flops(s);
  const double replicas_x_tp = static_cast<double>(s.plan.tp * s.plan.dpcp()) * static_cast<double>(L.micro);
  TrainingStep step{WorkloadGraph(s.gpus),
                    flops.model * replicas_x_tp,
                    (flops.model + flops.recompute) * replicas_x_tp,
                    static_cast<double>(s.global_batch * s.seq),
                    L.micro,
                    std::vector<int>(static_cast<std::size_t>(L.P), 0)};
  const auto chunk_layers = split_layers(static_cast<int>(s.model.layers), L.P * L.V);
  for (int st = 0; st < L.P; ++st)
    for (int c = 0; c < L.chunks; ++c)
      step.stage_layers[static_cast<std::size_t>(st)] += chunk_layers[static_cast<std::size_t>(L.vstage(st, c))];

  const auto programs = build_stage_programs(s, compute);
  for (int st = 0; st < L.P; ++st) {
    const auto blocks = L.blocks(st);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      for (const auto& item : block_program(L, programs, st, blocks, b)) {
        for (std::size_t k = 0; k < item.sources.size(); ++k) step.compute_sources[k] += item.sources[k];
        for (std::size_t k = 0; k < item.classes.size(); ++k) step.compute_classes[k] += item.classes[k];
      }
    }
  }
  reserve_tasks(L, programs, step.graph);
  const auto blocks = instantiate_stages(L, programs, step.graph);
  add_pipeline_transfers(L, blocks, step.graph);
  // The optimizer is a memory-bound kernel: analytic, elementwise.
  double optimizer_s = 0;
  if (L.dual) {
    add_dualpipe_optimizer(L, programs, blocks, compute, step.graph, optimizer_s);
  } else {
    const auto zero3 = add_zero3(L, blocks, step.stage_layers[0], step.graph);
    add_optimizer(L, programs, blocks, zero3, compute, step.graph, optimizer_s);
  }
  step.compute_sources[static_cast<std::size_t>(calib::KernelSource::kAnalytic)] += optimizer_s;
  step.compute_classes[static_cast<std::size_t>(models::KernelClass::kElementwise)] += optimizer_s;
  return step;
}

}  // namespace cs::workload
