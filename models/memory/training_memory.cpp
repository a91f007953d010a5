#include "models/memory/training_memory.hpp"

namespace cs::models {

double params_per_gpu(const ModelArch& m, int tp) {
  const double h = static_cast<double>(m.hidden);
  const double t = tp;
  const double q = static_cast<double>(q_heads_per_rank(m, tp) * m.head_dim);
  const double kv = static_cast<double>(kv_heads_per_rank(m, tp) * m.head_dim);
  const double f = static_cast<double>(m.ffn) / t;
  double layer = h * (q + 2 * kv) + q * h + (m.activation == Activation::kSwiGlu ? 3.0 : 2.0) * h * f;
  if (m.qkv_bias || m.linear_bias) layer += q + 2 * kv;
  if (m.linear_bias) layer += h + f + h;  // out_proj bias (replicated), up bias (split), down bias (replicated)
  layer += (m.norm == NormKind::kLayer ? 4.0 : 2.0) * h;
  const double vocab_shard = static_cast<double>((m.vocab + tp - 1) / tp);
  double rest = vocab_shard * h + (m.learned_positions ? static_cast<double>(m.max_positions) * h : 0.0);
  if (!m.tied_embeddings) rest += vocab_shard * h;
  rest += (m.norm == NormKind::kLayer ? 2.0 : 1.0) * h;
  return static_cast<double>(m.layers) * layer + rest;
}

/// What core attention saves for its backward beyond Q, K, V and its output: flash attention the
/// fp32 log-sum-exp per query and head; unfused attention the softmax output, and with dropout its
/// 1-byte mask and output (Korthikanti et al. 2022, Eq. 1: 5 a s^2 b bytes per layer).
double core_attention_bytes(const ModelArch& m, const StepShape& s) {
  if (s.flash_attention) return 4.0 * s.tokens() * static_cast<double>(q_heads_per_rank(m, s.tp));
  return score_elements(m, s) * (s.act_bytes + (m.attention_dropout ? 1.0 + s.act_bytes : 0.0));
}

double layer_activation_bytes(const ModelArch& m, const StepShape& s) {
  const auto d = layer_dims(m, s);
  const double T = d.tokens;
  const double r = d.norm_tokens / d.tokens;  // 1/TP under sequence parallelism
  const double a = d.act_bytes;
  double bytes = 0;
  // A linear layer keeps its input for the weight gradient: bf16, or under FP8 the FP8 cast
  // (Transformer Engine saves the quantised input; under SP the local shard, gathered again).
  const double lin = s.fp8 ? 1.0 : a;
  bytes += (a + lin) * T * d.hidden * r;                // attention-norm input, QKV input
  bytes += a * T * (d.q + 2 * d.kv);                    // Q, K, V
  bytes += a * T * d.q;                                 // attention output (flash backward; bf16 out_proj input)
  if (s.fp8) bytes += T * d.q;                          // its FP8 cast, the out_proj input
  bytes += core_attention_bytes(m, s);                  // flash: the softmax log-sum-exp; unfused: the score matrices
  bytes += (a + lin) * T * d.hidden * r;                // MLP-norm input, MLP-up input
  bytes += a * T * d.up;                                // activation-function inputs
  bytes += lin * T * d.ffn;                             // MLP-down input
  if (m.hidden_dropout) bytes += 2 * T * d.hidden * r;  // two dropout masks, one byte per element
  return bytes;
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
  const double outer = params_per_gpu(no_layers, tp);
  const double per_layer = (params_per_gpu(m, tp) - outer) / static_cast<double>(m.layers);
  const double vocab = static_cast<double>((m.vocab + tp - 1) / tp * m.hidden);
  const double pos = m.learned_positions ? static_cast<double>(m.max_positions * m.hidden) : 0.0;
  const double norm = static_cast<double>((m.norm == NormKind::kLayer ? 2 : 1) * m.hidden);
  const double outer_here = in.first_stage && in.last_stage
                                ? outer
                                : (in.first_stage ? vocab + pos : 0.0) + (in.last_stage ? vocab + norm : 0.0);
  const double p = static_cast<double>(n) * per_layer + outer_here;
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
    b.optimizer = adapters * 12.0 / (in.zero >= 1 ? dp : 1);
  } else {
    // bf16 weights; under FP8 Transformer Engine also caches each decoder linear weight's FP8 cast
    // and its transpose (made on the step's first micro-batch, reused by the others): 2 B/param.
    // Embeddings, norms and the LM head have no FP8 copy.
    const double wb = 2.0;
    const double cache = in.shape.fp8 ? 2.0 : 0.0;
    const double layers_here = static_cast<double>(n) * linear_weight_elements(m, in.shape);
    b.weights = in.zero >= 3 ? p * wb / dp + 2 * (per_layer * wb + linear_weight_elements(m, in.shape) * cache)
                             : p * wb + layers_here * cache;
    b.gradients = in.zero >= 2 ? p * in.grad_bytes / dp : p * in.grad_bytes;
    b.optimizer = p * 12.0 / (in.zero >= 1 ? dp : 1);
  }
  // Per micro-batch in flight: every layer's saved tensors, or with full recompute only each
  // layer's input (plus one layer's full set while it is recomputed); selective recompute drops
  // the attention output and its log-sum-exp (recomputed from Q, K, V).
  const double layer = layer_activation_bytes(m, in.shape);
  const auto d = layer_dims(m, in.shape);
  const double input_only = d.act_bytes * d.norm_tokens * d.hidden;
  double per_layer_kept = layer;
  if (in.recompute == 1) per_layer_kept = layer - d.act_bytes * d.tokens * d.q - core_attention_bytes(m, in.shape);
  if (in.recompute == 2) per_layer_kept = input_only;
  const double head = in.last_stage ? head_activation_bytes(m, in.shape) : 0.0;
  b.activations =
      in.micro_batches_in_flight * (static_cast<double>(n) * per_layer_kept + head) + (in.recompute == 2 ? layer : 0.0);
  b.other = in.runtime_reserved;
  b.total = b.weights + b.gradients + b.optimizer + b.activations + b.other;
  b.capacity = in.capacity;
  return b;
}

}  // namespace cs::models
