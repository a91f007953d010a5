#include "sim/workload/training_step.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "models/memory/training_memory.hpp"
#include "sim/core/check.hpp"

namespace cs::workload {

namespace {

/// One item of a stage's program, identical on every GPU of a TP group.
struct ProgramItem {
  bool comm = false;
  bool cp = false;  ///< a collective over the CP group rather than the TP group
  const char* label = "";
  Category category = Category::kForward;
  int layer = -1;
  double seconds = 0;  ///< compute
  coll::CollectiveOp op = coll::CollectiveOp::kAllReduce;
  double bytes = 0;        ///< comm
  double grad_params = 0;  ///< parameters whose gradients are final after this item (last micro-batch)
  Stream stream = Stream::kCompute;
  std::vector<int> after;  ///< items of the same block program this one also waits for
};

coll::CollectiveOp to_op(models::TpComm c) {
  switch (c) {
    case models::TpComm::kAllGather:
    case models::TpComm::kCpAllGather: return coll::CollectiveOp::kAllGather;
    case models::TpComm::kReduceScatter:
    case models::TpComm::kCpReduceScatter: return coll::CollectiveOp::kReduceScatter;
    case models::TpComm::kCpShift: return coll::CollectiveOp::kShift;
    default: return coll::CollectiveOp::kAllReduce;
  }
}

const char* tp_label(models::TpComm c) {
  switch (c) {
    case models::TpComm::kAllGather: return "tp.allgather";
    case models::TpComm::kReduceScatter: return "tp.reducescatter";
    case models::TpComm::kCpAllGather: return "cp.kv_allgather";
    case models::TpComm::kCpReduceScatter: return "cp.kv_grad_reducescatter";
    case models::TpComm::kCpShift: return "cp.kv_shift";
    default: return "tp.allreduce";
  }
}

/// Appends ops: consecutive kernels merge into one compute item, each TP collective is its own.
/// An async collective (ring attention's K/V passing) goes on the CP stream after the compute item
/// before it; an op that waits for one starts a new compute item with that edge.
void append(std::vector<ProgramItem>& prog, const std::vector<models::Item>& items, const ComputeModel& compute,
            const char* label, Category cat, int layer) {
  bool open = false;
  std::map<int, int> tagged;  // async tag -> item index, within this call
  for (const auto& it : items) {
    if (it.comm != models::TpComm::kNone) {
      const bool cp = it.comm == models::TpComm::kCpAllGather || it.comm == models::TpComm::kCpReduceScatter ||
                      it.comm == models::TpComm::kCpShift;
      ProgramItem p{
          true, cp, tp_label(it.comm), Category::kTpComm, layer, 0, to_op(it.comm), it.comm_bytes, 0, Stream::kCompute,
          {}};
      if (it.async) {
        p.stream = Stream::kCp;
        for (auto k = static_cast<int>(prog.size()) - 1; k >= 0; --k) {
          if (!prog[static_cast<std::size_t>(k)].comm) {
            p.after.push_back(k);
            break;
          }
        }
        tagged[it.tag] = static_cast<int>(prog.size());
      }
      prog.push_back(std::move(p));
      open = false;
      continue;
    }
    if (!open || it.wait > 0) {
      prog.push_back({false, false, label, cat, layer, 0, coll::CollectiveOp::kAllReduce, 0, 0, Stream::kCompute, {}});
      open = true;
    }
    if (auto w = tagged.find(it.wait); it.wait > 0 && w != tagged.end()) prog.back().after.push_back(w->second);
    prog.back().seconds += compute.seconds(it.op);
  }
}

void mark_last_compute(std::vector<ProgramItem>& prog, double params) {
  for (auto it = prog.rbegin(); it != prog.rend(); ++it) {
    if (!it->comm) {
      it->grad_params += params;
      return;
    }
  }
  CS_ASSERT(false, "a backward block has a compute item");
}

struct BlockRef {
  bool forward = true;
  int micro = 0;
  int chunk = 0;  ///< model chunk of this stage (interleaved schedule), else 0
};

/// The order of F and B blocks on one stage.
std::vector<BlockRef> schedule(plan::PipelineSchedule kind, int stage, int stages, int micro, int chunks = 1) {
  std::vector<BlockRef> out;
  if (chunks > 1) {
    // Interleaved 1F1B (Narayanan et al. SC'21, Sec. 2.2; Megatron-LM's schedule): the k-th
    // forward runs chunk (k / P) % V of micro-batch (k / (P V)) P + k % P; backwards visit the
    // chunks in reverse; (P - s - 1) * 2 + (V - 1) * P warm-up forwards.
    const int total = micro * chunks;
    const int warmup = std::min(total, (stages - stage - 1) * 2 + (chunks - 1) * stages);
    auto mb = [&](int k) { return k / (stages * chunks) * stages + k % stages; };
    auto fwd = [&](int k) { return BlockRef{true, mb(k), (k / stages) % chunks}; };
    auto bwd = [&](int k) { return BlockRef{false, mb(k), chunks - 1 - (k / stages) % chunks}; };
    int f = 0, b = 0;
    for (; f < warmup; ++f) out.push_back(fwd(f));
    while (f < total) {
      out.push_back(fwd(f++));
      out.push_back(bwd(b++));
    }
    while (b < total) out.push_back(bwd(b++));
    return out;
  }
  if (kind == plan::PipelineSchedule::kGpipe) {
    for (int m = 0; m < micro; ++m) out.push_back({true, m});
    for (int m = micro - 1; m >= 0; --m) out.push_back({false, m});
    return out;
  }
  // 1F1B (PipeDream-Flush, as Megatron-LM runs it).
  const int warmup = std::min(stages - stage - 1, micro);
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back({true, f});
  while (f < micro) {
    out.push_back({true, f++});
    out.push_back({false, b++});
  }
  while (b < micro) out.push_back({false, b++});
  return out;
}

}  // namespace

std::vector<int> split_layers(int layers, int stages) {
  std::vector<int> out(static_cast<std::size_t>(stages), layers / stages);
  for (int i = 0; i < layers % stages; ++i) ++out[static_cast<std::size_t>(i)];
  return out;
}

TrainingStep build_training_step(const scenario::Scenario& s, const ComputeModel& compute) {
  const auto& m = s.model;
  const auto& plan = s.plan;
  models::StepShape shape;
  shape.micro_batch = s.micro_batch;
  shape.seq = s.seq;
  shape.tp = plan.tp;
  shape.sp = plan.sp;
  // FP8 training keeps bf16 activations and reads FP8 copies of the weights in its GEMMs.
  shape.act_bytes = s.dtype == calib::Dtype::kFp8 ? 2.0 : static_cast<double>(calib::dtype_bytes(s.dtype));
  shape.weight_bytes = static_cast<double>(calib::dtype_bytes(s.dtype));
  shape.lora_rank = s.lora_rank;
  shape.base_4bit = s.qlora;
  shape.cp = plan.cp;
  shape.flash_attention = s.flash_attention;
  shape.cp_ring = s.cp_ring;

  const auto emb_f = models::embedding_forward(m, shape);
  const auto emb_b = models::embedding_backward(m, shape);
  const auto lay_f = models::layer_forward(m, shape);
  const auto lay_b = models::layer_backward(m, shape);
  const auto head_f = models::head_forward(m, shape);
  const auto head_b = models::head_backward(m, shape);
  // Selective recompute re-runs the core attention forward (Korthikanti et al. 2022, Sec. 5).
  // Under ring attention only its compute steps re-run: the K/V blocks are not passed again.
  std::vector<models::Item> attn_f;
  for (const auto& it : lay_f) {
    if (it.comm == models::TpComm::kNone && it.op.core_attention) attn_f.push_back(it);
  }
  const double layers = static_cast<double>(m.layers);
  const double flops_per_micro = models::model_flops(emb_f) + models::model_flops(emb_b) +
                                 layers * (models::model_flops(lay_f) + models::model_flops(lay_b)) +
                                 models::model_flops(head_f) + models::model_flops(head_b);
  const double recompute_per_micro = plan.recompute == plan::Recompute::kFull ? layers * models::model_flops(lay_f)
                                     : plan.recompute == plan::Recompute::kSelective
                                         ? layers * models::model_flops(attn_f)
                                         : 0.0;
  const auto micro = s.micro_batches();
  const double replicas_x_tp = static_cast<double>(plan.tp * plan.dpcp()) * static_cast<double>(micro);

  TrainingStep step{WorkloadGraph(s.gpus),
                    flops_per_micro * replicas_x_tp,
                    (flops_per_micro + recompute_per_micro) * replicas_x_tp,
                    static_cast<double>(s.global_batch * s.seq),
                    micro,
                    split_layers(static_cast<int>(m.layers), plan.pp)};
  auto& g = step.graph;

  // Parameters per GPU, for DP buckets and the optimizer.
  auto no_layers = m;
  no_layers.layers = 0;
  const double outer_params = models::params_per_gpu(no_layers, plan.tp);
  const bool lora = s.lora_rank > 0;
  // Trainable parameters per GPU (LoRA: the adapters only; the frozen base has no gradients).
  const double per_layer_params = lora ? models::lora_params_per_layer(m, plan.tp, s.lora_rank)
                                       : (models::params_per_gpu(m, plan.tp) - outer_params) / layers;
  const double vocab_params = lora ? 0.0 : static_cast<double>((m.vocab + plan.tp - 1) / plan.tp * m.hidden);
  const int P = plan.pp;
  const int V = plan.vpp;
  const auto chunk_layers = split_layers(static_cast<int>(m.layers), P * V);  // by virtual stage v * P + s
  auto vstage = [&](int stage, int chunk) { return chunk * P + stage; };
  for (int st = 0; st < P; ++st) {
    int n = 0;
    for (int c = 0; c < V; ++c) n += chunk_layers[static_cast<std::size_t>(vstage(st, c))];
    step.stage_layers[static_cast<std::size_t>(st)] = n;
  }

  // Each virtual stage's F and B programs (the same for every micro-batch; only the last B marks
  // gradients). Without interleaving a stage is one virtual stage.
  struct StagePrograms {
    std::vector<ProgramItem> f, b, b_last;
    double params = 0;
  };
  std::vector<StagePrograms> programs(static_cast<std::size_t>(P * V));
  for (int st = 0; st < P * V; ++st) {
    auto& sp = programs[static_cast<std::size_t>(st)];
    const int n = chunk_layers[static_cast<std::size_t>(st)];
    const bool first = st == 0, last = st == P * V - 1;
    if (first) append(sp.f, emb_f, compute, "embedding.fwd", Category::kForward, -1);
    for (int l = 0; l < n; ++l) append(sp.f, lay_f, compute, "layer.fwd", Category::kForward, l);
    if (last) append(sp.f, head_f, compute, "head.fwd", Category::kForward, -1);
    for (int pass = 0; pass < 2; ++pass) {
      auto& b = pass == 0 ? sp.b : sp.b_last;
      // First stage: embedding (and positions); last stage: final norm and LM head (a copy of the
      // embedding when tied, as Megatron keeps it); one stage holds all of them.
      const double pos = m.learned_positions ? static_cast<double>(m.max_positions * m.hidden) : 0.0;
      const double norm = static_cast<double>((m.norm == models::NormKind::kLayer ? 2 : 1) * m.hidden);
      const double outer_here = lora ? 0.0
                                : first && last
                                    ? outer_params
                                    : (first ? vocab_params + pos : 0.0) + (last ? vocab_params + norm : 0.0);
      if (last) append(b, head_b, compute, "head.bwd", Category::kBackward, -1);
      for (int l = n - 1; l >= 0; --l) {
        if (plan.recompute == plan::Recompute::kFull)
          append(b, lay_f, compute, "layer.recompute", Category::kRecompute, l);
        if (plan.recompute == plan::Recompute::kSelective)
          append(b, attn_f, compute, "attention.recompute", Category::kRecompute, l);
        append(b, lay_b, compute, "layer.bwd", Category::kBackward, l);
        if (pass == 1) mark_last_compute(b, per_layer_params);
      }
      if (first) append(b, emb_b, compute, "embedding.bwd", Category::kBackward, -1);
      if (pass == 1 && outer_here > 0) mark_last_compute(b, outer_here);
      sp.params = static_cast<double>(n) * per_layer_params + outer_here;
    }
  }

  std::vector<std::vector<TaskId>> zero3_rs_(static_cast<std::size_t>(plan.tp));
  // Instantiate every stage's schedule on its TP groups, remembering each block's first and last
  // task per GPU (for pipeline transfers) and the last backward's tasks (for DP buckets).
  const std::size_t Mu = static_cast<std::size_t>(micro), Vu = static_cast<std::size_t>(V);
  auto key = [&](int rank, bool fwd, int mb, int chunk) {
    return ((static_cast<std::size_t>(rank) * 2 + (fwd ? 0 : 1)) * Mu + static_cast<std::size_t>(mb)) * Vu +
           static_cast<std::size_t>(chunk);
  };
  std::vector<TaskId> first_task(static_cast<std::size_t>(s.gpus) * 2 * Mu * Vu), last_task(first_task.size());
  std::vector<std::vector<ProgramItem>> dp_items(static_cast<std::size_t>(P));  // each stage's last backwards, in order
  std::vector<std::vector<TaskId>> last_b_tasks(static_cast<std::size_t>(s.gpus));
  // ZeRO-3: the first and last task of each layer's forward and backward, per GPU, per micro-batch.
  const bool zero3 = plan.zero >= 3 && plan.dpcp() > 1;
  // DP symmetry: only replica 0 (its CP ranks, d < CP) is instantiated; d = dp_index * CP + cp_index.
  const int sim_groups = s.dp_symmetry ? plan.cp : plan.dpcp();
  const int sim_dp = s.dp_symmetry ? 1 : plan.dp;
  // A data-parallel group (all replicas, flows) and the part of it that is simulated (streams).
  auto dp_groups = [&](int st, int t) {
    std::vector<int> all;
    for (int d = 0; d < plan.dpcp(); ++d) all.push_back(plan.rank(st, d, t));
    const std::vector<int> sim(all.begin(), all.begin() + sim_groups);
    return std::tuple{sim, g.add_group(sim), g.add_group(all)};
  };
  struct LayerSpan {
    TaskId first{}, last{};
    bool seen = false;
  };
  std::map<std::tuple<int, bool, int, int>, LayerSpan> layer_span;  // (rank, forward, micro, layer)
  {
    // The stages' programs are most of the graph: reserve for them (one copy of tens of millions
    // of tasks saved at 16K GPUs) plus the transfers and buckets around them.
    std::size_t tasks = 0;
    for (int st = 0; st < P; ++st) {
      for (const auto& blk : schedule(plan.schedule, st, P, static_cast<int>(micro), V)) {
        const auto& sp = programs[static_cast<std::size_t>(vstage(st, blk.chunk))];
        for (const auto& item : blk.forward ? sp.f : sp.b) tasks += item.comm ? 1 : static_cast<std::size_t>(plan.tp);
      }
    }
    tasks *= static_cast<std::size_t>(sim_groups);
    g.reserve(tasks + tasks / 8);
  }
  for (int st = 0; st < P; ++st) {
    for (const auto& blk : schedule(plan.schedule, st, P, static_cast<int>(micro), V)) {
      if (blk.forward || blk.micro + 1 != micro) continue;
      const auto& b = programs[static_cast<std::size_t>(vstage(st, blk.chunk))].b_last;
      dp_items[static_cast<std::size_t>(st)].insert(dp_items[static_cast<std::size_t>(st)].end(), b.begin(), b.end());
    }
    // All of this stage's TP groups advance item by item together, so that a CP collective (over
    // TP groups) takes the same place in every member's stream.
    const int groups = sim_groups;
    std::vector<std::vector<int>> group_ranks(static_cast<std::size_t>(groups));
    std::vector<std::uint32_t> gids(static_cast<std::size_t>(groups));
    for (int d = 0; d < groups; ++d) {
      for (int t = 0; t < plan.tp; ++t) group_ranks[static_cast<std::size_t>(d)].push_back(plan.rank(st, d, t));
      gids[static_cast<std::size_t>(d)] = g.add_group(group_ranks[static_cast<std::size_t>(d)]);
    }
    for (const auto& blk : schedule(plan.schedule, st, P, static_cast<int>(micro), V)) {
      const auto& sp = programs[static_cast<std::size_t>(vstage(st, blk.chunk))];
      const auto& prog = blk.forward ? sp.f : (blk.micro + 1 == micro ? sp.b_last : sp.b);
      // Edges inside the block (ring attention): every item's tasks by (group, TP rank).
      const bool edges = std::any_of(prog.begin(), prog.end(), [](const ProgramItem& p) { return !p.after.empty(); });
      const std::size_t per_item = static_cast<std::size_t>(groups) * static_cast<std::size_t>(plan.tp);
      std::vector<TaskId> item_ids(edges ? prog.size() * per_item : 0);
      for (std::size_t i = 0; i < prog.size(); ++i) {
        const auto& item = prog[i];
        std::vector<TaskId> cp_ids;  // by (dp, tp) when the item is a CP collective
        if (item.comm && item.cp) {
          for (int dpi = 0; dpi < sim_dp; ++dpi) {
            for (int t = 0; t < plan.tp; ++t) {
              std::vector<int> members;
              for (int c = 0; c < plan.cp; ++c) members.push_back(plan.rank(st, dpi * plan.cp + c, t));
              cp_ids.push_back(g.add_collective(g.add_group(members), item.stream, item.category, item.label,
                                                item.layer, blk.micro, item.op, item.bytes));
            }
          }
        }
        for (int d = 0; d < groups; ++d) {
          const auto& ranks = group_ranks[static_cast<std::size_t>(d)];
          std::vector<TaskId> ids;
          if (item.comm && item.cp) {
            for (int t = 0; t < plan.tp; ++t)
              ids.push_back(cp_ids[static_cast<std::size_t>((d / plan.cp) * plan.tp + t)]);
          } else if (item.comm) {
            const auto id = g.add_collective(gids[static_cast<std::size_t>(d)], item.stream, item.category, item.label,
                                             item.layer, blk.micro, item.op, item.bytes);
            ids.assign(ranks.size(), id);
          } else {
            for (int r : ranks) {
              ids.push_back(g.add_compute(r, Stream::kCompute, item.category, item.label, item.layer, blk.micro,
                                          SimTime::from_seconds(item.seconds)));
            }
          }
          if (zero3 && item.layer >= 0) {
            for (std::size_t k = 0; k < ranks.size(); ++k) {
              auto& span = layer_span[{ranks[k], blk.forward, blk.micro, item.layer}];
              if (!span.seen) span.first = ids[k];
              span.last = ids[k];
              span.seen = true;
            }
          }
          for (std::size_t k = 0; k < ranks.size(); ++k) {
            const auto kk = key(ranks[k], blk.forward, blk.micro, blk.chunk);
            if (i == 0) first_task[kk] = ids[k];
            last_task[kk] = ids[k];
            if (!blk.forward && blk.micro + 1 == micro)
              last_b_tasks[static_cast<std::size_t>(ranks[k])].push_back(ids[k]);
            if (!edges) continue;
            const std::size_t slot = static_cast<std::size_t>(d) * static_cast<std::size_t>(plan.tp) + k;
            item_ids[i * per_item + slot] = ids[k];
            // A CP collective is one task shared by its members: it gets one edge per member (each
            // member's op must be done), counted and released per edge.
            for (int a : item.after) g.depend(item_ids[static_cast<std::size_t>(a) * per_item + slot], ids[k]);
          }
        }
      }
    }
  }

  // Pipeline transfers: activations forward, gradients backward, each TP rank its 1/TP slice
  // (Megatron's scatter/gather optimisation), posted as soon as the producing block ends.
  if (P > 1) {
    const double bytes = static_cast<double>(s.micro_batch * s.seq * m.hidden) * shape.act_bytes / plan.tp;
    for (int vs = 0; vs + 1 < P * V; ++vs) {
      const int st = vs % P, next = (vs + 1) % P, ca = vs / P, cb = (vs + 1) / P;
      for (int d = 0; d < sim_groups; ++d) {
        for (int t = 0; t < plan.tp; ++t) {
          const int a = plan.rank(st, d, t), b = plan.rank(next, d, t);
          const auto fwd_group = g.add_group({a, b});
          const auto bwd_group = g.add_group({b, a});
          for (int mb = 0; mb < static_cast<int>(micro); ++mb) {
            const auto xf = g.add_collective(fwd_group, Stream::kNone, Category::kPpComm, "pp.send_activation", -1, mb,
                                             coll::CollectiveOp::kSendRecv, bytes);
            g.depend(last_task[key(a, true, mb, ca)], xf);
            g.depend(xf, first_task[key(b, true, mb, cb)]);
            const auto xb = g.add_collective(bwd_group, Stream::kNone, Category::kPpComm, "pp.send_gradient", -1, mb,
                                             coll::CollectiveOp::kSendRecv, bytes);
            g.depend(last_task[key(b, false, mb, cb)], xb);
            g.depend(xb, first_task[key(a, false, mb, ca)]);
          }
        }
      }
    }
  }

  // ZeRO-3 (FSDP): every layer's weights are all-gathered over DP before its forward and its
  // backward (on the communication stream, in schedule order, so the next layer's gather overlaps
  // this layer's compute), and its gradients reduce-scattered after each backward.
  if (zero3) {
    const double layer_bytes = per_layer_params * shape.weight_bytes;  // the whole layer, gathered
    const double grad_bytes = per_layer_params * 4.0;                  // fp32 gradients of the whole layer, scattered
    for (int t = 0; t < plan.tp; ++t) {
      const auto [group, gid, flow_gid] = dp_groups(0, t);
      const int n = step.stage_layers[0];
      for (const auto& blk : schedule(plan.schedule, 0, 1, static_cast<int>(micro))) {
        for (int i = 0; i < n; ++i) {
          const int l = blk.forward ? i : n - 1 - i;
          const auto ag = g.add_collective_on(gid, flow_gid, Stream::kComm, Category::kDpComm, "dp.param_allgather", l,
                                              blk.micro, coll::CollectiveOp::kAllGather, layer_bytes);
          for (int r : group) g.depend(ag, layer_span.at({r, blk.forward, blk.micro, l}).first);
          if (blk.forward) continue;
          const auto rs = g.add_collective_on(gid, flow_gid, Stream::kNone, Category::kDpComm, "dp.grad_reducescatter",
                                              l, blk.micro, coll::CollectiveOp::kReduceScatter, grad_bytes);
          for (int r : group) g.depend(layer_span.at({r, false, blk.micro, l}).last, rs);
          zero3_rs_[static_cast<std::size_t>(t)].push_back(rs);
        }
      }
    }
  }

  // Data parallelism: gradient buckets of each stage, reduced on the communication stream.
  const bool zero1 = plan.zero >= 1 && plan.zero <= 2 && plan.dpcp() > 1;
  for (int st = 0; st < P; ++st) {
    const auto& prog = dp_items[static_cast<std::size_t>(st)];
    double stage_params = 0;
    for (int c = 0; c < V; ++c) stage_params += programs[static_cast<std::size_t>(vstage(st, c))].params;
    for (int t = 0; t < plan.tp; ++t) {
      const auto [group, gid, flow_gid] = dp_groups(st, t);
      std::vector<TaskId> dp_tasks;
      if (zero3) {
        dp_tasks = zero3_rs_[static_cast<std::size_t>(t)];
      } else if (plan.dpcp() > 1) {
        double bucket = 0;
        for (std::size_t i = 0; i < prog.size(); ++i) {
          bucket += prog[i].grad_params;
          const bool flush = bucket >= s.grad_bucket_params || (i + 1 == prog.size() && bucket > 0);
          if (!flush) continue;
          const auto id = g.add_collective_on(
              gid, flow_gid, Stream::kComm, Category::kDpComm, zero1 ? "dp.grad_reducescatter" : "dp.grad_allreduce",
              -1, -1, zero1 ? coll::CollectiveOp::kReduceScatter : coll::CollectiveOp::kAllReduce,
              bucket * 4.0);  // fp32 main gradients
          for (int r : group) g.depend(last_b_tasks[static_cast<std::size_t>(r)][i], id);
          dp_tasks.push_back(id);
          bucket = 0;
        }
      }
      // Optimizer: mixed-precision Adam streams 30 bytes per parameter (docs/metrics.md).
      const double opt_params = stage_params / (zero1 || zero3 ? plan.dpcp() : 1);
      const double opt_seconds = compute.memory_seconds(30.0 * opt_params);
      for (int r : group) {
        const auto id = g.add_compute(r, Stream::kCompute, Category::kOptimizer, "optimizer", -1, -1,
                                      SimTime::from_seconds(opt_seconds));
        for (auto dt : dp_tasks) g.depend(dt, id);
      }
      if (zero1) {
        g.add_collective_on(gid, flow_gid, Stream::kCompute, Category::kDpComm, "dp.param_allgather", -1, -1,
                            coll::CollectiveOp::kAllGather, stage_params * shape.act_bytes);
      }
    }
  }
  return step;
}

}  // namespace cs::workload
