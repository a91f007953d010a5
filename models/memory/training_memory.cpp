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

double layer_activation_bytes(const ModelArch& m, const StepShape& s) {
  const auto d = layer_dims(m, s);
  const double T = d.tokens;
  const double r = d.norm_tokens / d.tokens;  // 1/TP under sequence parallelism
  const double a = d.act_bytes;
  const double heads = static_cast<double>(q_heads_per_rank(m, s.tp));
  double bytes = 0;
  bytes += 2 * a * T * d.hidden * r;  // attention-norm input, QKV input
  bytes += a * T * (d.q + 2 * d.kv);  // Q, K, V
  bytes += a * T * d.q;               // attention output (out_proj input)
  bytes += 4.0 * T * heads;           // softmax log-sum-exp (fp32), flash attention
  bytes += 2 * a * T * d.hidden * r;  // MLP-norm input, MLP-up input
  bytes += a * T * d.up;              // activation-function inputs
  bytes += a * T * d.ffn;             // MLP-down input
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
  const double p = params_per_gpu(m, in.shape.tp);
  b.weights = p * in.shape.weight_bytes;
  b.gradients = p * 4.0;
  b.optimizer = p * 12.0 / (in.zero >= 1 ? in.dp : 1);
  b.activations = in.micro_batches_in_flight *
                  (static_cast<double>(m.layers) * layer_activation_bytes(m, in.shape) + head_activation_bytes(m, in.shape));
  b.other = in.runtime_reserved;
  b.total = b.weights + b.gradients + b.optimizer + b.activations + b.other;
  b.capacity = in.capacity;
  return b;
}

}  // namespace cs::models
