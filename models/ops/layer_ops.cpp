#include "models/ops/layer_ops.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/check.hpp"

namespace cs::models {

std::int64_t q_heads_per_rank(const ModelArch& m, int tp) { return m.heads / tp; }

Item tp_comm(CollectiveOp op, double bytes) {
  const char* label = "tp.allreduce";
  switch (op) {
    case CollectiveOp::kAllReduce: label = "tp.allreduce"; break;
    case CollectiveOp::kAllGather: label = "tp.allgather"; break;
    case CollectiveOp::kReduceScatter: label = "tp.reducescatter"; break;
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kSendRecv:
    case CollectiveOp::kShift: CS_ASSERT(false, "tensor parallelism all-reduces, all-gathers or reduce-scatters");
  }
  return {Op{}, Comm{op, GroupKind::kTp, label, bytes}};
}

double lora_params_per_layer(const ModelArch& m, int tp, int rank) {
  const double r = rank, h = static_cast<double>(m.hidden), hd = static_cast<double>(m.head_dim);
  const double q = static_cast<double>(m.heads / tp) * hd;
  const double kv = static_cast<double>(std::max<std::int64_t>(1, m.kv_heads / tp)) * hd;
  const double f = static_cast<double>(m.ffn) / tp;
  // One adapter per projection, as PEFT attaches them: q, k, v, o, (gate,) up, down.
  const double gated = m.activation == Activation::kSwiGlu ? 2.0 : 1.0;
  return r * ((3 * h + q + 2 * kv) + (q + h) + gated * (h + f) + (f + h));
}
std::int64_t kv_heads_per_rank(const ModelArch& m, int tp) { return std::max<std::int64_t>(1, m.kv_heads / tp); }

namespace {

Item gemm(std::string_view name, double m, double n, double k, const StepShape& s) {
  // Reads A (m x k activations) and B (k x n weights), writes C (m x n).
  const double bytes = (m * k + m * n) * s.act_bytes + k * n * (s.base_4bit ? 0.5 : s.weight_bytes);
  return {Op{name, OpKind::kGemm, m, n, k, 2.0 * m * n * k, bytes}};
}

/// A base-weight GEMM with, under LoRA, its adapter (x A then (x A) B, rank r) and, under QLoRA,
/// the dequantisation of the 4-bit weight (4 operations per element per 128-row tile).
void base_gemm(std::vector<Item>& out, std::string_view name, double m, double n, double k, const StepShape& s) {
  out.push_back(gemm(name, m, n, k, s));
  if (s.base_4bit)
    out.push_back({Op{"dequantize", OpKind::kVectorFlops, 0, 0, 0, 4.0 * k * n * std::ceil(m / 128.0), 0}});
  if (s.lora_rank > 0) {
    const double r = s.lora_rank;
    out.push_back(gemm("lora_a", m, r, k, s));
    out.push_back(gemm("lora_b", m, n, r, s));
  }
}

/// Backward of y = x W (x: m x k, W: k x n): dgrad dx = dy W^T (m x k from n), wgrad dW = x^T dy.
/// Under LoRA the base weight is frozen (dgrad only, plus QLoRA's dequantisation) and the
/// adapter's two small GEMMs get their dgrad and wgrad.
void gemm_backward(std::vector<Item>& out, std::string_view dgrad, std::string_view wgrad, double m, double n, double k,
                   const StepShape& s) {
  out.push_back(gemm(dgrad, m, k, n, s));
  if (s.base_4bit)
    out.push_back({Op{"dequantize", OpKind::kVectorFlops, 0, 0, 0, 4.0 * k * n * std::ceil(m / 128.0), 0}});
  if (s.lora_rank > 0) {
    const double r = s.lora_rank;
    for (auto [a, b] : {std::pair{n, r}, std::pair{r, k}}) {  // B (r -> n), then A (k -> r)
      out.push_back(gemm("lora.dgrad", m, b, a, s));
      out.push_back(gemm("lora.wgrad", b, a, m, s));
    }
    return;
  }
  Item w = gemm(wgrad, k, n, m, s);
  w.op.bytes = (m * k + m * n) * s.act_bytes + k * n * 4.0;  // accumulates into fp32 main grads
  out.push_back(w);
}

Item memory_op(std::string_view name, double bytes) { return {Op{name, OpKind::kMemoryBound, 0, 0, 0, 0, bytes}}; }

/// Context-parallel collectives (ring attention's shift, the all-gather flavour's K/V exchange).
Item cp_comm(CollectiveOp op, const char* label, double bytes) {
  return {Op{}, Comm{op, GroupKind::kCp, label, bytes}};
}

/// Ring attention over CP ranks (Liu et al. 2023; causal, load-balanced so every step is alike):
/// CP steps, each the attention of the local queries with one K/V block; before step j < CP - 1
/// ends, the block in hand goes to the next rank (overlapped), and step j + 1 waits for it. The
/// backward passes the K/V block and its gradient accumulator together (twice the bytes), and a
/// last shift returns the finished dK/dV to their owner.
void ring_attention(std::vector<Item>& out, const Op& whole, int cp, double block_bytes, bool backward) {
  Op step = whole;
  step.flops /= cp;
  step.bytes /= cp;
  const double shift_bytes = backward ? 2 * block_bytes : block_bytes;
  for (int j = 0; j < cp; ++j) {
    if (j + 1 < cp) {
      Item x = cp_comm(CollectiveOp::kShift, "cp.kv_shift", shift_bytes);
      x.async = true;
      x.tag = j + 1;
      out.push_back(x);
    }
    Item a{step};
    a.wait = j;  // the block received by the previous shift (none for the first step)
    out.push_back(a);
  }
  if (backward) out.push_back(cp_comm(CollectiveOp::kShift, "cp.kv_shift", block_bytes));  // dK, dV home
}

double sp_tokens(const StepShape& s) {
  CS_ASSERT(!s.sp || s.tp > 1, "sequence parallelism needs TP > 1 (the scenario resolver turns it off otherwise)");
  return s.sp ? s.tokens() / s.tp : s.tokens();
}

/// Causal attention FLOPs of one micro-batch on one rank: QK^T and PV, 2 s^2 d each per head, half
/// of the square computed (flash-attention skips masked blocks).
double attention_flops(const ModelArch& m, const StepShape& s) {
  const double hq = static_cast<double>(q_heads_per_rank(m, s.tp));
  const double seq = static_cast<double>(s.seq);
  // With CP each rank holds seq/CP queries against the whole sequence's keys (load-balanced causal).
  return static_cast<double>(s.micro_batch) * hq * 4.0 * seq * seq * static_cast<double>(m.head_dim) * 0.5 / s.cp;
}

/// A batched GEMM of core attention: `batches` products of (m x k) by (k x n).
Item attention_gemm(std::string_view name, double batches, double m, double n, double k, double bytes) {
  return {Op{name, OpKind::kGemm, m, n, k, batches * 2.0 * m * n * k, bytes, true}};
}

Item attention_memory_op(std::string_view name, double bytes) {
  return {Op{name, OpKind::kMemoryBound, 0, 0, 0, 0, bytes, true}};
}

/// Unfused core attention (Megatron-LM 2021: baddbmm, FusedScaleMaskSoftmax with the causal mask
/// generated in the kernel, dropout, bmm). N = score elements; the full square is computed.
void unfused_attention_forward(std::vector<Item>& out, const ModelArch& m, const StepShape& s) {
  const double a = s.act_bytes, N = score_elements(m, s), dh = static_cast<double>(m.head_dim);
  const double batches = static_cast<double>(s.micro_batch * q_heads_per_rank(m, s.tp));
  const double queries = static_cast<double>(s.seq) / s.cp, keys = static_cast<double>(s.seq);
  const double qkv = batches * (queries + 2 * keys) * dh * a;  // Q, and K, V over the whole sequence
  out.push_back(attention_gemm("attention.scores", batches, queries, keys, dh, qkv * 2 / 3 + N * a));
  out.push_back(attention_memory_op("attention.softmax", 2 * N * a));
  if (m.attention_dropout) out.push_back(attention_memory_op("attention.dropout", N * (2 * a + 1)));  // + a 1-byte mask
  out.push_back(
      attention_gemm("attention.context", batches, queries, dh, keys, N * a + qkv / 3 + batches * queries * dh * a));
}

/// Its backward: dP = dO V^T, dV = P^T dO, dropout and softmax backward, dQ = dS K, dK = dS^T Q.
void unfused_attention_backward(std::vector<Item>& out, const ModelArch& m, const StepShape& s) {
  const double a = s.act_bytes, N = score_elements(m, s), dh = static_cast<double>(m.head_dim);
  const double batches = static_cast<double>(s.micro_batch * q_heads_per_rank(m, s.tp));
  const double queries = static_cast<double>(s.seq) / s.cp, keys = static_cast<double>(s.seq);
  const double vec = batches * queries * dh * a, kvec = batches * keys * dh * a;
  out.push_back(attention_gemm("attention.dprobs", batches, queries, keys, dh, vec + kvec + N * a));
  out.push_back(attention_gemm("attention.dv", batches, keys, dh, queries, N * a + vec + kvec));
  if (m.attention_dropout) out.push_back(attention_memory_op("attention.dropout.bwd", N * (2 * a + 1)));
  out.push_back(attention_memory_op("attention.softmax.bwd", 3 * N * a));
  out.push_back(attention_gemm("attention.dq", batches, queries, dh, keys, N * a + kvec + vec));
  out.push_back(attention_gemm("attention.dk", batches, keys, dh, queries, N * a + vec + kvec));
}

/// Context parallelism by ring attention (unfused attention has no ring form: with CP it gathers K and V).
bool ring_attention_used(const StepShape& s) { return s.cp > 1 && s.cp_ring && s.flash_attention; }

/// A layer's core attention, forward or backward: one flash-attention kernel, its ring form over
/// the CP ranks, or the unfused kernels.
void core_attention(std::vector<Item>& out, const ModelArch& m, const StepShape& s, bool backward) {
  if (!s.flash_attention) {
    if (backward) {
      unfused_attention_backward(out, m, s);
    } else {
      unfused_attention_forward(out, m, s);
    }
    return;
  }
  const auto d = layer_dims(m, s);
  const double T = d.tokens, a = d.act_bytes;
  const Op attn = backward ? Op{"attention.bwd",
                                OpKind::kAttentionBackward,
                                0,
                                0,
                                0,
                                2.5 * attention_flops(m, s),
                                T * (4 * d.q + 4 * d.kv) * a,
                                true}
                           : Op{"attention",           OpKind::kAttentionForward,    0,   0, 0,
                                attention_flops(m, s), T * (2 * d.q + 2 * d.kv) * a, true};
  if (ring_attention_used(s)) {
    ring_attention(out, attn, s.cp, T * 2 * d.kv * a, backward);
  } else {
    out.push_back({attn});
  }
}

}  // namespace

double score_elements(const ModelArch& m, const StepShape& s) {
  return static_cast<double>(s.micro_batch * q_heads_per_rank(m, s.tp)) * (static_cast<double>(s.seq) / s.cp) *
         static_cast<double>(s.seq);
}

LayerDims layer_dims(const ModelArch& m, const StepShape& s) {
  LayerDims d;
  d.tokens = s.tokens();
  d.norm_tokens = sp_tokens(s);
  d.hidden = static_cast<double>(m.hidden);
  d.q = static_cast<double>(q_heads_per_rank(m, s.tp) * m.head_dim);
  d.kv = static_cast<double>(kv_heads_per_rank(m, s.tp) * m.head_dim);
  d.ffn = static_cast<double>(m.ffn) / s.tp;
  d.up = (m.activation == Activation::kSwiGlu ? 2.0 : 1.0) * d.ffn;
  d.act_bytes = s.act_bytes;
  return d;
}

std::vector<Item> layer_forward(const ModelArch& m, const StepShape& s, LayerKind kind) {
  switch (kind.ffn) {
    case FeedForwardKind::kDense: break;  // the program below; each new kind states its own here
  }
  const auto d = layer_dims(m, s);
  const double T = d.tokens, Tn = d.norm_tokens, h = d.hidden, q = d.q, kv = d.kv, f = d.ffn, up_n = d.up,
               a = d.act_bytes;
  std::vector<Item> out;
  out.push_back(memory_op("attn_norm", 2 * Tn * h * a));
  if (s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
  base_gemm(out, "qkv_proj", T, q + 2 * kv, h, s);
  if (!m.learned_positions) out.push_back(memory_op("rope", 2 * T * (q + kv) * a));  // rotary on Q and K
  if (s.cp > 1 && !ring_attention_used(s))
    out.push_back(cp_comm(CollectiveOp::kAllGather, "cp.kv_allgather", T * s.cp * 2 * kv * a));  // every rank's K and V
  core_attention(out, m, s, false);
  base_gemm(out, "out_proj", T, h, q, s);
  if (s.tp > 1) out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * a));
  out.push_back(memory_op("attn_residual", (m.hidden_dropout ? 4.5 : 3.0) * Tn * h * a));
  out.push_back(memory_op("mlp_norm", 2 * Tn * h * a));
  if (s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
  base_gemm(out, "mlp_up", T, up_n, h, s);
  out.push_back(memory_op("mlp_act", (up_n + f) * T * a));
  base_gemm(out, "mlp_down", T, h, f, s);
  if (s.tp > 1) out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * a));
  out.push_back(memory_op("mlp_residual", (m.hidden_dropout ? 4.5 : 3.0) * Tn * h * a));
  return out;
}

std::vector<Item> layer_backward(const ModelArch& m, const StepShape& s, LayerKind kind) {
  switch (kind.ffn) {
    case FeedForwardKind::kDense: break;  // the program below; each new kind states its own here
  }
  const auto d = layer_dims(m, s);
  const double T = d.tokens, Tn = d.norm_tokens, h = d.hidden, q = d.q, kv = d.kv, f = d.ffn, up_n = d.up,
               a = d.act_bytes;
  // The conjugates of the forward collectives: an all-reduce's backward is an all-reduce of the
  // input gradient; SP's all-gather becomes a reduce-scatter and vice versa.
  std::vector<Item> out;
  out.push_back(memory_op("mlp_residual.bwd", (m.hidden_dropout ? 4.0 : 2.0) * Tn * h * a));
  if (s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
  gemm_backward(out, "mlp_down.dgrad", "mlp_down.wgrad", T, h, f, s);
  out.push_back(memory_op("mlp_act.bwd", (2 * up_n + f) * T * a));
  gemm_backward(out, "mlp_up.dgrad", "mlp_up.wgrad", T, up_n, h, s);
  if (s.tp > 1) out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * a));
  out.push_back(memory_op("mlp_norm.bwd", 4 * Tn * h * a));
  out.push_back(memory_op("attn_residual.bwd", (m.hidden_dropout ? 4.0 : 2.0) * Tn * h * a));
  if (s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
  gemm_backward(out, "out_proj.dgrad", "out_proj.wgrad", T, h, q, s);
  core_attention(out, m, s, true);
  if (s.cp > 1 && !ring_attention_used(s))
    out.push_back(cp_comm(CollectiveOp::kReduceScatter, "cp.kv_grad_reducescatter",
                          T * s.cp * 2 * kv * a));  // dK, dV to their owners
  if (!m.learned_positions) out.push_back(memory_op("rope.bwd", 2 * T * (q + kv) * a));
  gemm_backward(out, "qkv_proj.dgrad", "qkv_proj.wgrad", T, q + 2 * kv, h, s);
  if (s.tp > 1) out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * a));
  out.push_back(memory_op("attn_norm.bwd", 4 * Tn * h * a));
  return out;
}

std::vector<Item> embedding_forward(const ModelArch& m, const StepShape& s) {
  const double T = s.tokens();
  const double h = static_cast<double>(m.hidden);
  std::vector<Item> out;
  // Vocab-parallel lookup: each rank gathers the rows it owns, then the TP group all-reduces.
  out.push_back(memory_op("embedding", (m.learned_positions ? 3.0 : 2.0) * T * h * s.act_bytes));
  if (s.tp > 1)
    out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * s.act_bytes));
  return out;
}

std::vector<Item> embedding_backward(const ModelArch& m, const StepShape& s) {
  const double T = s.tokens();
  const double h = static_cast<double>(m.hidden);
  std::vector<Item> out;
  if (s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * s.act_bytes));
  if (s.lora_rank == 0)
    out.push_back(memory_op("embedding.bwd", T * h * (s.act_bytes + 2 * 4.0)));  // scatter-add into fp32 grads
  return out;
}

std::vector<Item> head_forward(const ModelArch& m, const StepShape& s) {
  const double T = s.tokens();
  const double h = static_cast<double>(m.hidden);
  const double v = static_cast<double>((m.vocab + s.tp - 1) / s.tp);
  std::vector<Item> out;
  out.push_back(memory_op("final_norm", 2 * sp_tokens(s) * h * s.act_bytes));
  if (s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * s.act_bytes));
  out.push_back(gemm("lm_head", T, v, h, s));
  // Vocab-parallel cross-entropy: fp32 softmax over the local shard; the max, sum and target
  // logit are all-reduced across TP (three fp32 values per token).
  out.push_back(memory_op("cross_entropy", T * v * (s.act_bytes + 4.0 + 4.0)));
  if (s.tp > 1) out.push_back(tp_comm(CollectiveOp::kAllReduce, 3 * T * 4.0));
  return out;
}

std::vector<Item> head_backward(const ModelArch& m, const StepShape& s) {
  const double T = s.tokens();
  const double h = static_cast<double>(m.hidden);
  const double v = static_cast<double>((m.vocab + s.tp - 1) / s.tp);
  std::vector<Item> out;
  out.push_back(memory_op("cross_entropy.bwd", T * v * (4.0 + s.act_bytes)));
  if (s.lora_rank > 0) {
    out.push_back(gemm("lm_head.dgrad", T, h, v, s));  // frozen head: input gradient only
  } else {
    gemm_backward(out, "lm_head.dgrad", "lm_head.wgrad", T, v, h, s);
  }
  if (s.tp > 1)
    out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * s.act_bytes));
  out.push_back(memory_op("final_norm.bwd", 4 * sp_tokens(s) * h * s.act_bytes));
  return out;
}

double linear_weight_elements(const ModelArch& m, const StepShape& s) {
  const auto d = layer_dims(m, s);
  return d.hidden * (d.q + 2 * d.kv) + d.q * d.hidden + d.hidden * d.up + d.ffn * d.hidden;
}

double model_flops(const std::vector<Item>& items) {
  double total = 0;
  for (const auto& it : items) {
    const bool matrix = it.op.kind == OpKind::kGemm || it.op.kind == OpKind::kAttentionForward ||
                        it.op.kind == OpKind::kAttentionBackward;
    if (!it.comm && matrix) total += it.op.flops;
  }
  return total;
}

}  // namespace cs::models
