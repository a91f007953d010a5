#include "models/memory/training_memory.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace cs::models {

double attention_params_per_gpu(const ModelArch& m, AttentionKind kind, int tp) {
  const double h = static_cast<double>(m.hidden);
  double p = 0;
  if (kind == AttentionKind::kMla) {
    const auto& x = m.mla;
    const double hq = static_cast<double>(q_heads_per_rank(m, tp));
    const double ql = static_cast<double>(x.q_lora_rank), kvl = static_cast<double>(x.kv_lora_rank);
    const double qk = static_cast<double>(x.qk_nope_dim + x.qk_rope_dim), rope = static_cast<double>(x.qk_rope_dim);
    // Down-projections and their norms replicated; up-projections and the output split by heads.
    p += x.q_lora_rank > 0 ? h * ql + ql + ql * hq * qk : h * hq * qk;
    p += h * (kvl + rope) + kvl + kvl * hq * static_cast<double>(x.qk_nope_dim + x.v_dim);
    p += hq * static_cast<double>(x.v_dim) * h;
  } else {
    const double q = static_cast<double>(q_heads_per_rank(m, tp) * m.head_dim);
    const double kv = static_cast<double>(kv_heads_per_rank(m, tp) * m.head_dim);
    p += h * (q + 2 * kv) + q * h;
    if (m.qkv_bias || m.linear_bias) p += q + 2 * kv;
    if (m.o_bias || m.linear_bias) p += h;  // out_proj bias (replicated)
    if (m.qk_norm) p += 2.0 * static_cast<double>(m.head_dim);
  }
  if (m.attention_sinks) p += static_cast<double>(q_heads_per_rank(m, tp));
  return p;
}

LayerParams layer_params_per_gpu(const ModelArch& m, LayerKind kind, int tp, const ExpertSplit& experts) {
  const double h = static_cast<double>(m.hidden);
  const double t = tp;
  const double gated = m.activation == Activation::kSwiGlu ? 3.0 : 2.0;
  LayerParams p;
  p.dense = attention_params_per_gpu(m, kind.attention, tp);
  if (kind.ffn == FeedForwardKind::kDense) {
    const double f = static_cast<double>(m.ffn) / t;
    p.dense += gated * h * f;
    if (m.linear_bias) p.dense += f + h;  // up bias (split), down bias (replicated)
  } else {
    const double E = static_cast<double>(m.moe.experts);
    p.dense += E * h + (m.moe.router_bias ? E : 0.0);
    // Shared experts split TP ways, as Megatron-core's shared-expert MLP (their gate replicated).
    p.dense += gated * h * static_cast<double>(m.moe.shared_ffn) / t + (m.moe.shared_gate ? h : 0.0);
    const int slots = experts.slots > 0 ? experts.slots : static_cast<int>(m.moe.experts / experts.ep);
    p.expert = slots * static_cast<double>(m.expert_params()) / experts.etp;
  }
  p.dense += (m.norm == NormKind::kLayer ? 4.0 : 2.0) * h;
  return p;
}

double params_per_gpu(const ModelArch& m, int tp) {
  const double h = static_cast<double>(m.hidden);
  double layers = 0;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const auto p = layer_params_per_gpu(m, m.layer_kind(l), tp);
    layers += p.dense + p.expert;
  }
  const double vocab_shard = static_cast<double>((m.vocab + tp - 1) / tp);
  double rest = vocab_shard * h + (m.learned_positions ? static_cast<double>(m.max_positions) * h : 0.0);
  if (!m.tied_embeddings) rest += vocab_shard * h;
  rest += (m.norm == NormKind::kLayer ? 2.0 : 1.0) * h;
  return layers + rest;
}

double layer_activation_bytes(const ModelArch& m, const StepShape& s, LayerKind kind) {
  return layer_activations(m, s, kind).total();
}

double head_activation_bytes(const ModelArch& m, const StepShape& s) {
  const double T = s.tokens();
  const double r = s.sp ? 1.0 / s.tp : 1.0;
  const double h = static_cast<double>(m.hidden);
  const double v = static_cast<double>((m.vocab + s.tp - 1) / s.tp);
  double bytes = 2 * s.act_bytes * T * h * r;  // final-norm input, LM-head input
  bytes += T * v * (s.act_bytes + 4.0);        // logits (bf16) and fp32 softmax for the loss
  if (m.hidden_dropout) bytes += T * h * r;    // embedding dropout mask
  return bytes;
}

MemoryBreakdown training_memory(const ModelArch& m, const TrainingMemoryInputs& in) {
  MemoryBreakdown b;
  const int tp = in.shape.tp;
  const int n = in.stage_layers < 0 ? static_cast<int>(m.layers) : in.stage_layers;
  auto no_layers = m;
  no_layers.layers = 0;
  no_layers.kinds.clear();
  const double outer = params_per_gpu(no_layers, tp);
  // The stage's layers, by kind: dense parameters and routed experts apart (ZeRO shards them over
  // different groups); per_layer is the stage's largest layer (what ZeRO-3 keeps gathered).
  double dense = 0, expert = 0, per_layer = 0, layer_acts = 0;
  for (int l = in.first_layer; l < in.first_layer + n; ++l) {
    const auto kind = m.layer_kind(l);
    const auto lp = layer_params_per_gpu(m, kind, tp, in.experts);
    dense += lp.dense;
    expert += lp.expert;
    per_layer = std::max(per_layer, lp.dense + lp.expert);
    layer_acts = std::max(layer_acts, layer_activation_bytes(m, in.shape, kind));
  }
  const double vocab = static_cast<double>((m.vocab + tp - 1) / tp * m.hidden);
  const double pos = m.learned_positions ? static_cast<double>(m.max_positions * m.hidden) : 0.0;
  const double norm = static_cast<double>((m.norm == NormKind::kLayer ? 2 : 1) * m.hidden);
  const double outer_here = in.first_stage && in.last_stage
                                ? outer
                                : (in.first_stage ? vocab + pos : 0.0) + (in.last_stage ? vocab + norm : 0.0);
  const double p = dense + expert + outer_here;
  const double edp = in.edp;
  // ZeRO-1 shards the optimizer state over DP, ZeRO-2 the gradients too, ZeRO-3 (FSDP) the
  // weights as well, keeping two layers gathered (the one running and the one prefetched).
  const double dp = in.dp;
  if (in.shape.lora_rank > 0) {
    // LoRA: frozen base weights (bf16, or 4-bit under QLoRA with bf16 embeddings); gradients and
    // Adam state for the adapters only.
    const double adapters = static_cast<double>(n) * lora_params_per_layer(m, tp, in.shape.lora_rank);
    const double base = in.shape.base_4bit ? (p - outer_here) * 0.5 + outer_here * 2.0 : p * 2.0;
    b.weights = base + adapters * 2.0;
    b.gradients = adapters * 4.0;
    b.optimizer = adapters * (4.0 + 2.0 * in.moment_bytes) / (in.zero >= 1 ? dp : 1);
  } else {
    // bf16 weights; under FP8 Transformer Engine also caches each decoder linear weight's FP8 cast
    // and its transpose (made on the step's first micro-batch, reused by the others): 2 B/param.
    // Embeddings, norms and the LM head have no FP8 copy.
    const double wb = 2.0;
    const double cache = in.shape.fp8 ? 2.0 : 0.0;
    double layers_here = static_cast<double>(n) * linear_weight_elements(m, in.shape), layer_linear = 0;
    if (m.kinds.empty()) {
      layer_linear = linear_weight_elements(m, in.shape);
    } else {  // layers of several kinds: their parameters less the norms (biases are a rounding error)
      layers_here = 0;
      const double norms = (m.norm == NormKind::kLayer ? 4.0 : 2.0) * static_cast<double>(m.hidden);
      for (int l = in.first_layer; l < in.first_layer + n; ++l) {
        const auto lp = layer_params_per_gpu(m, m.layer_kind(l), tp, in.experts);
        layers_here += lp.dense + lp.expert - norms;
        layer_linear = std::max(layer_linear, lp.dense + lp.expert - norms);
      }
    }
    // ZeRO-3 shards dense weights over DP x CP and routed experts over expert-DP.
    b.weights = in.zero >= 3 ? (p - expert) * wb / dp + expert * wb / edp + 2 * (per_layer * wb + layer_linear * cache)
                             : p * wb + layers_here * cache;
    // Dense parameters are sharded over DP x CP, routed experts over expert-DP.
    b.gradients = in.zero >= 2 ? (p - expert) * in.grad_bytes / dp + expert * in.grad_bytes / edp : p * in.grad_bytes;
    // fp32 master weights and Adam's two moments (and a GPU-held fp32 weight average).
    const double state = 4.0 + 2.0 * in.moment_bytes + (in.ema_on_gpu ? 4.0 : 0.0);
    b.optimizer = (p - expert) * state / (in.zero >= 1 ? dp : 1) + expert * state / (in.zero >= 1 ? edp : 1);
  }
  // Per micro-batch in flight: every layer's saved tensors less what its selective recompute
  // drops; with full recompute only the checkpointed inputs (uniform: one per group of layers;
  // block: the first layers of each chunk), plus one group's (or layer's) full set while it is
  // re-run.
  const auto d = layer_dims(m, in.shape);
  const double input_only = d.act_bytes * d.norm_tokens * d.hidden;
  std::map<LayerKind, int> count;  // the stage's layers of each kind
  for (int l = in.first_layer; l < in.first_layer + n; ++l) ++count[m.layer_kind(l)];
  double kept = 0, whole = 0;  // the stage's layers, per micro-batch: as kept, and whole
  for (const auto& [kind, k] : count) {
    const auto acts = layer_activations(m, in.shape, kind, in.fp8_cache);
    kept += static_cast<double>(k) * (in.recompute == 1 ? acts.kept(in.modules) : acts.total());
    whole += static_cast<double>(k) * acts.total();
  }
  double buffer = 0;
  if (in.recompute == 2 && n > 0) {
    const double g = std::max(1, in.recompute_layers);
    if (in.recompute_block) {
      // The first layers of each chunk keep their input only; the rest everything.
      const double per_chunk = static_cast<double>(n) / std::max(1, in.chunks);
      const double recomputed = std::min(g, per_chunk) * std::max(1, in.chunks);
      kept = recomputed * input_only + (static_cast<double>(n) - recomputed) / static_cast<double>(n) * whole;
      buffer = layer_acts;
    } else {
      kept = std::ceil(static_cast<double>(n) / g) * input_only;
      buffer = std::min(g, static_cast<double>(n)) * layer_acts;
    }
  }
  const double head = in.last_stage ? head_activation_bytes(m, in.shape) : 0.0;
  b.activations = in.micro_batches_in_flight * (kept + head) + buffer;
  b.other = in.runtime_reserved + in.comm_buffers;
  b.total = b.weights + b.gradients + b.optimizer + b.activations + b.other;
  b.capacity = in.capacity;
  return b;
}

}  // namespace cs::models
