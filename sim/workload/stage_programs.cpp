#include "sim/workload/stage_programs.hpp"

#include <array>
#include <map>
#include <optional>

#include "models/memory/training_memory.hpp"
#include "models/ops/recompute.hpp"
#include "models/ops/tp_overlap.hpp"
#include "sim/core/check.hpp"

namespace cs::workload {

namespace {

/// Appends ops: consecutive kernels merge into one compute item, each collective is its own. An
/// async collective (ring attention's K/V passing) goes on the CP stream after the compute item
/// before it; an op that waits for one starts a new compute item with that edge.
/// How a stage's EP all-to-alls move: destination shares, and the rail-forwarded form across nodes.
struct EpTraffic {
  std::shared_ptr<const std::vector<double>> dest_share;
  bool rail_forwarded = false;
  double node_copies = 1.0;
};

void append(std::vector<ProgramItem>& prog, const std::vector<models::Item>& items, const ComputeModel& compute,
            const char* label, Category cat, int layer, const EpTraffic& ep = {}, double compute_scale = 1.0) {
  bool open = false;
  std::map<int, int> tagged;  // async tag -> item index, within this call
  for (const auto& it : items) {
    if (it.comm) {
      ProgramItem p;
      p.comm = true;
      p.group = it.comm->group;
      p.label = it.comm->label;
      const bool expert = p.group == GroupKind::kEp || p.group == GroupKind::kExpertTp;
      p.category = expert ? Category::kEpComm : Category::kTpComm;
      if (p.group == GroupKind::kEp && it.comm->op == CollectiveOp::kAllToAll) {
        p.dest_share = ep.dest_share;
        p.rail_forwarded = ep.rail_forwarded;
        p.node_copies = ep.node_copies;
      }
      p.layer = layer;
      p.op = it.comm->op;
      p.bytes = it.comm->bytes;
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
      ProgramItem p;
      p.label = label;
      p.category = cat;
      p.layer = layer;
      prog.push_back(std::move(p));
      open = true;
    }
    if (auto w = tagged.find(it.wait); it.wait > 0 && w != tagged.end()) prog.back().after.push_back(w->second);
    const auto t = compute.timed(it.op);
    prog.back().seconds += t.seconds * compute_scale;
    prog.back().sources[static_cast<std::size_t>(t.source)] += t.seconds * compute_scale;
    prog.back().classes[static_cast<std::size_t>(models::kernel_class(it.op))] += t.seconds * compute_scale;
    // A wait marker (no FLOPs, no bytes) launches nothing.
    if (it.op.flops > 0 || it.op.bytes > 0) prog.back().kernels += 1;
  }
}

/// A training framework launches each kernel from the host (Python, dispatcher, autograd, the
/// launch: `host_s` each, the profile's host_kernel_issue): a run of kernels between collectives
/// cannot finish before the host has issued them, however fast the GPU runs them. The wait beyond
/// the kernels' own time is the host's, an analytic figure.
void bound_by_host(std::vector<ProgramItem>& prog, double host_s) {
  if (host_s <= 0) return;
  for (auto& p : prog) {
    if (p.comm) continue;
    const double host = p.kernels * host_s;
    if (host <= p.seconds) continue;
    p.sources[static_cast<std::size_t>(calib::KernelSource::kAnalytic)] += host - p.seconds;
    p.classes[static_cast<std::size_t>(models::KernelClass::kHostBound)] += host - p.seconds;
    p.seconds = host;
  }
}

void mark_last_compute(std::vector<ProgramItem>& prog, double params, double expert_params = 0) {
  for (auto it = prog.rbegin(); it != prog.rend(); ++it) {
    if (!it->comm) {
      it->grad_params += params;
      it->expert_grad_params += expert_params;
      return;
    }
  }
  CS_ASSERT(false, "a backward block has a compute item");
}

/// The op lists of one layer kind: forward, backward, and what selective recompute re-runs (its
/// modules' forward ops: core attention, Korthikanti et al. 2022, Sec. 5, and Megatron-core's others).
struct KindOps {
  std::vector<models::Item> forward, backward, selective;
};

/// The program transforms a run asks for: two-batch overlap of MoE layers, then TP overlap.
struct Overlaps {
  bool tbo = false;
  std::optional<models::TpOverlap> tp;
};

Overlaps overlaps_of(const scenario::Scenario& s) {
  Overlaps o;
  o.tbo = s.two_batch_overlap && s.plan.ep > 1;
  o.tp = tp_overlap_of(s, s.plan.tp, s.plan.sp);
  return o;
}

KindOps kind_ops(const models::ModelArch& m, const models::StepShape& shape, models::LayerKind kind, const Overlaps& o,
                 const models::RecomputeModules& modules) {
  KindOps k{models::layer_forward(m, shape, kind), models::layer_backward(m, shape, kind), {}};
  // Selective recompute's modules, taken from the plain forward (before the overlaps reorder it).
  k.selective = models::recompute_items(k.forward, modules);
  if (o.tbo && kind.ffn == models::FeedForwardKind::kMoe) {
    k.forward = models::two_batch_overlap(k.forward);
    k.backward = models::two_batch_overlap(k.backward);
  }
  if (o.tp) {
    k.forward = models::tp_comm_overlap(k.forward, *o.tp);
    k.backward = models::tp_comm_overlap(k.backward, *o.tp);
  }
  return k;
}

/// A backward's weight-gradient GEMMs (the W of zero-bubble schedules), or everything else.
std::vector<models::Item> weight_part(const std::vector<models::Item>& items, bool weight) {
  std::vector<models::Item> out;
  for (const auto& it : items) {
    const bool w = !it.comm && it.op.name.ends_with(".wgrad");
    if (w == weight) out.push_back(it);
  }
  return out;
}

/// DualPipe's overlapped form of a block: each EP all-to-all runs on its own stream once the op
/// before it is done, and the next op waits for it, so the paired block's compute fills the gap.
/// An all-to-all followed directly by another collective stays in line (that collective needs it).
std::vector<models::Item> async_all_to_alls(std::vector<models::Item> items, int first_tag) {
  int tag = first_tag;
  for (std::size_t i = 0; i + 1 < items.size(); ++i) {
    auto& it = items[i];
    const bool a2a = it.comm && it.comm->group == GroupKind::kEp && it.comm->op == CollectiveOp::kAllToAll;
    if (!a2a || it.async || items[i + 1].comm || items[i + 1].wait > 0) continue;
    it.async = true;
    it.tag = tag;
    items[i + 1].wait = tag++;
  }
  return items;
}

/// The ops of every layer kind the model has, built once per kind.
std::map<models::LayerKind, KindOps> ops_by_kind(const models::ModelArch& m, const models::StepShape& shape,
                                                 const models::RecomputeModules& modules, const Overlaps& o = {}) {
  std::map<models::LayerKind, KindOps> out;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const auto kind = m.layer_kind(l);
    if (!out.contains(kind)) out.emplace(kind, kind_ops(m, shape, kind, o, modules));
  }
  return out;
}

/// Whether layer `l` of a virtual stage of `n` layers re-runs its whole forward before its backward.
bool fully_recomputed(const scenario::Scenario& s, int l) {
  if (s.plan.recompute != plan::Recompute::kFull) return false;
  return s.plan.recompute_method != plan::RecomputeMethod::kBlock || l < s.plan.recompute_layers;
}

}  // namespace

std::vector<int> split_layers(int layers, int stages) {
  std::vector<int> out(static_cast<std::size_t>(stages), layers / stages);
  for (int i = 0; i < layers % stages; ++i) ++out[static_cast<std::size_t>(i)];
  return out;
}

ExpertPlacement expert_placement(const scenario::Scenario& s) {
  // One EP group's routed tokens per micro-batch: each rank routes b s / (CP TP) of them.
  const double tokens = static_cast<double>(s.micro_batch * s.seq) / (s.plan.cp * s.plan.tp) * s.plan.ep;
  return place_experts(s.model, s.routing, s.plan.ep, tokens);
}

int ep_nodes(const scenario::Scenario& s) {
  if (!s.model.is_moe() || s.plan.ep == 1 || s.gpus_per_node <= 0) return 1;
  std::map<int, int> per_node;
  for (int r : s.plan.group(GroupKind::kEp, 0)) ++per_node[r / s.gpus_per_node];
  if (per_node.size() < 2) return 1;
  for (const auto& [node, count] : per_node)
    if (count != per_node.begin()->second || count < 2) return 1;
  return static_cast<int>(per_node.size());
}

models::ExpertSplit expert_split(const scenario::Scenario& s) {
  models::ExpertSplit x;
  x.ep = s.plan.ep;
  x.etp = s.plan.etp;
  if (s.model.is_moe()) x.slots = static_cast<int>((s.model.moe.experts + s.routing.redundant_experts) / s.plan.ep);
  return x;
}

models::StepShape step_shape(const scenario::Scenario& s, bool balanced) {
  models::StepShape shape;
  shape.micro_batch = s.micro_batch;
  shape.seq = s.seq;
  shape.tp = s.plan.tp;
  shape.sp = s.plan.sp;
  // FP8 training keeps bf16 activations and reads FP8 copies of the weights in its GEMMs.
  shape.act_bytes = s.dtype == calib::Dtype::kFp8 ? 2.0 : static_cast<double>(calib::dtype_bytes(s.dtype));
  shape.weight_bytes = static_cast<double>(calib::dtype_bytes(s.dtype));
  shape.lora_rank = s.lora_rank;
  shape.base_4bit = s.qlora;
  shape.fp8 = s.dtype == calib::Dtype::kFp8;
  shape.fp8_current_scaling = s.fp8_current_scaling;
  shape.fp8_act_cache = s.fp8_activation_cache;
  shape.cp = s.plan.cp;
  shape.flash_attention = s.flash_attention;
  shape.cp_ring = s.cp_ring;
  shape.ep = s.plan.ep;
  shape.etp = s.plan.etp;
  shape.dispatch_bytes = s.routing.fp8_dispatch ? 1.0 : 2.0;
  if (s.model.is_moe()) {
    shape.expert_slots = expert_split(s).slots;
    if (s.plan.ep > 1) shape.dispatch_ranks = models::dispatch_spread(s.model, s.plan.ep, ep_nodes(s)).gpus;
  }
  if (s.model.is_moe() && !balanced) shape.expert_load = expert_placement(s).imbalance();
  return shape;
}

StageParams stage_params(const scenario::Scenario& s) {
  const auto& m = s.model;
  const int tp = s.plan.tp;
  auto no_layers = m;
  no_layers.layers = 0;
  no_layers.kinds.clear();
  StageParams p;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const auto kind = m.layer_kind(l);
    if (!p.by_kind.contains(kind)) p.by_kind.emplace(kind, models::layer_params_per_gpu(m, kind, tp, expert_split(s)));
  }
  p.outer = models::params_per_gpu(no_layers, tp);
  const bool lora = s.lora_rank > 0;
  // Trainable parameters per GPU (LoRA: the adapters only; the frozen base has no gradients).
  p.per_layer = lora ? models::lora_params_per_layer(m, tp, s.lora_rank)
                     : (models::params_per_gpu(m, tp) - p.outer) / static_cast<double>(m.layers);
  if (lora) p.outer = 0;
  p.vocab = lora ? 0.0 : static_cast<double>((m.vocab + tp - 1) / tp * m.hidden);
  p.positions = lora || !m.learned_positions ? 0.0 : static_cast<double>(m.max_positions * m.hidden);
  p.final_norm = lora ? 0.0 : static_cast<double>((m.norm == models::NormKind::kLayer ? 2 : 1) * m.hidden);
  return p;
}

std::vector<StagePrograms> build_stage_programs(const scenario::Scenario& s, const ComputeModel& compute) {
  const auto& m = s.model;
  // The routing sample is drawn once here: the shape takes its imbalance, the all-to-alls its shares.
  auto shape = step_shape(s, true);
  EpTraffic ep;
  const auto overlaps = overlaps_of(s);
  const bool tbo = overlaps.tbo;
  if (m.is_moe()) {
    auto placement = expert_placement(s);
    shape.expert_load = placement.imbalance();
    const int nodes = ep_nodes(s);
    ep.rail_forwarded = nodes > 1;
    if (nodes > 1) {
      const auto spread = models::dispatch_spread(m, s.plan.ep, nodes);
      ep.node_copies = spread.nodes / spread.gpus;
    }
    if (s.plan.ep > 1 && (shape.expert_load > 1 + 1e-12 || ep.rail_forwarded))
      ep.dest_share = std::make_shared<const std::vector<double>>(std::move(placement.gpu_share));
  }
  const models::RecomputeModules modules{s.plan.recompute_modules};
  const auto ops = ops_by_kind(m, shape, modules, overlaps);
  const auto params = stage_params(s);
  const auto emb_f = models::embedding_forward(m, shape), emb_b = models::embedding_backward(m, shape);
  const auto head_f = models::head_forward(m, shape), head_b = models::head_backward(m, shape);
  const int vstages = s.plan.pp * s.plan.vpp;
  const auto layers = split_layers(static_cast<int>(m.layers), vstages);
  const bool dual = s.plan.schedule == plan::PipelineSchedule::kDualPipe;
  constexpr int kPairTag = 2000;  // above TP overlap's tags
  std::vector<StagePrograms> programs(static_cast<std::size_t>(vstages));
  int first_layer = 0;  // global index of this virtual stage's first decoder layer
  for (int st = 0; st < vstages; ++st) {
    auto& sp = programs[static_cast<std::size_t>(st)];
    const int n = layers[static_cast<std::size_t>(st)];
    const bool first = st == 0, last = st == vstages - 1;
    auto kind_of = [&](int l) -> const KindOps& { return ops.at(m.layer_kind(first_layer + l)); };
    // Under two-batch overlap a MoE layer's compute shares the SMs with the all-to-all kernels.
    auto scale_of = [&](int l) {
      const bool moe = m.layer_kind(first_layer + l).ffn == models::FeedForwardKind::kMoe;
      return tbo && moe ? 1.0 / (1.0 - s.overlap_comm_sm_fraction) : 1.0;
    };
    // In DualPipe's overlapped pairs likewise: the other block's all-to-all kernels hold SMs.
    auto pair_scale_of = [&](int l) {
      const bool moe = m.layer_kind(first_layer + l).ffn == models::FeedForwardKind::kMoe;
      return moe && s.plan.ep > 1 ? 1.0 / (1.0 - s.overlap_comm_sm_fraction) : 1.0;
    };
    if (first) append(sp.f, emb_f, compute, "embedding.fwd", Category::kForward, -1);
    for (int l = 0; l < n; ++l)
      append(sp.f, kind_of(l).forward, compute, "layer.fwd", Category::kForward, l, ep, scale_of(l));
    if (last) append(sp.f, head_f, compute, "head.fwd", Category::kForward, -1);
    if (dual) {
      if (first) append(sp.f_pair, emb_f, compute, "embedding.fwd", Category::kForward, -1);
      for (int l = 0; l < n; ++l)
        append(sp.f_pair, async_all_to_alls(kind_of(l).forward, kPairTag), compute, "layer.fwd", Category::kForward, l,
               ep, pair_scale_of(l));
      if (last) append(sp.f_pair, head_f, compute, "head.fwd", Category::kForward, -1);
    }
    // First stage: embedding (and positions); last stage: final norm and LM head (a copy of the
    // embedding when tied, as Megatron keeps it); one stage holds all of them.
    const double outer_here = first && last ? params.outer
                                            : (first ? params.vocab + params.positions : 0.0) +
                                                  (last ? params.vocab + params.final_norm : 0.0);
    // The backward's forms: whole, and the last micro-batch's (marking when gradients are final);
    // under DualPipe also their paired forms, the input-gradient half and the weight-gradient
    // halves (W, the last W).
    enum class Part { kWhole, kInput, kWeight };
    struct Form {
      std::vector<ProgramItem>* prog;
      bool marks, paired;
      Part part;
    };
    const std::array<Form, 7> forms{{{&sp.b, false, false, Part::kWhole},
                                     {&sp.b_last, true, false, Part::kWhole},
                                     {&sp.b_pair, false, true, Part::kWhole},
                                     {&sp.b_last_pair, true, true, Part::kWhole},
                                     {&sp.bi, false, false, Part::kInput},
                                     {&sp.w, false, false, Part::kWeight},
                                     {&sp.w_last, true, false, Part::kWeight}}};
    for (std::size_t f = 0; f < (dual ? forms.size() : 2); ++f) {
      auto& b = *forms[f].prog;
      const bool marks = forms[f].marks, paired = forms[f].paired;
      const Part part = forms[f].part;
      // The ops of one backward for this form.
      auto form = [&](const std::vector<models::Item>& items) {
        auto x = part == Part::kWhole ? items : weight_part(items, part == Part::kWeight);
        return paired ? async_all_to_alls(std::move(x), kPairTag) : x;
      };
      auto scale = [&](int l) { return paired ? pair_scale_of(l) : scale_of(l); };
      if (last)
        append(b, form(head_b), compute, part == Part::kWeight ? "head.wgrad" : "head.bwd", Category::kBackward, -1);
      for (int l = n - 1; l >= 0; --l) {
        const auto& k = kind_of(l);
        if (fully_recomputed(s, l) && part != Part::kWeight)
          append(b, form(k.forward), compute, "layer.recompute", Category::kRecompute, l, ep, scale(l));
        if (s.plan.recompute == plan::Recompute::kSelective && part != Part::kWeight && !k.selective.empty())
          append(b, form(k.selective), compute, "modules.recompute", Category::kRecompute, l, ep, scale(l));
        append(b, form(k.backward), compute, part == Part::kWeight ? "layer.wgrad" : "layer.bwd", Category::kBackward,
               l, ep, scale(l));
        if (marks) {
          const auto& lp = params.by_kind.at(m.layer_kind(first_layer + l));
          if (s.lora_rank > 0) {
            mark_last_compute(b, params.per_layer);
          } else {
            mark_last_compute(b, lp.dense, lp.expert);
          }
        }
      }
      if (first && part != Part::kWeight) append(b, emb_b, compute, "embedding.bwd", Category::kBackward, -1);
      if (marks && outer_here > 0) mark_last_compute(b, outer_here);
    }
    sp.params = outer_here;
    for (int l = 0; l < n; ++l) {
      const auto& lp = params.by_kind.at(m.layer_kind(first_layer + l));
      sp.params += s.lora_rank > 0 ? params.per_layer : lp.dense;
      sp.expert_params += s.lora_rank > 0 ? 0.0 : lp.expert;
    }
    first_layer += n;
  }
  for (auto& sp : programs) {
    for (auto* prog : {&sp.f, &sp.b, &sp.b_last, &sp.bi, &sp.w, &sp.w_last, &sp.f_pair, &sp.b_pair, &sp.b_last_pair})
      bound_by_host(*prog, compute.host_issue_s());
  }
  return programs;
}

std::optional<models::TpOverlap> tp_overlap_of(const scenario::Scenario& s, int tp, bool sp) {
  if (!s.tp_comm_overlap || tp <= 1 || !sp) return std::nullopt;
  return models::TpOverlap{.tp = tp, .comm_sm_fraction = s.tp_overlap_comm_sm_fraction};
}

MicroBatchFlops micro_batch_flops(const scenario::Scenario& s) {
  const auto& m = s.model;
  const auto shape = step_shape(s, true);
  const auto ops = ops_by_kind(m, shape, models::RecomputeModules{s.plan.recompute_modules});
  std::map<models::LayerKind, double> count;  // layers of each kind
  for (std::int64_t l = 0; l < m.layers; ++l) count[m.layer_kind(l)] += 1;
  // Full recompute in blocks re-runs the first layers of each virtual stage only.
  double full_share = 1;
  if (s.plan.recompute == plan::Recompute::kFull && s.plan.recompute_method == plan::RecomputeMethod::kBlock) {
    const auto per_stage = split_layers(static_cast<int>(m.layers), s.plan.pp * s.plan.vpp);
    double recomputed = 0;
    for (int n : per_stage) recomputed += std::min(n, s.plan.recompute_layers);
    full_share = recomputed / static_cast<double>(m.layers);
  }
  MicroBatchFlops f;
  // Model FLOPs of a program, and what its kernels run beyond them (flash attention's backward
  // re-computing its scores).
  auto add = [&f](const std::vector<models::Item>& items, double times) {
    const double model = models::model_flops(items);
    f.model += times * model;
    f.recompute += times * (models::executed_flops(items) - model);
  };
  for (const auto& [kind, n] : count) {
    const auto& k = ops.at(kind);
    add(k.forward, n);
    add(k.backward, n);
    if (s.plan.recompute == plan::Recompute::kFull) f.recompute += full_share * n * models::executed_flops(k.forward);
    if (s.plan.recompute == plan::Recompute::kSelective) f.recompute += n * models::executed_flops(k.selective);
  }
  add(models::embedding_forward(m, shape), 1);
  add(models::embedding_backward(m, shape), 1);
  add(models::head_forward(m, shape), 1);
  add(models::head_backward(m, shape), 1);
  return f;
}

}  // namespace cs::workload
