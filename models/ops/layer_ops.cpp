#include "models/ops/layer_ops.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/check.hpp"

namespace cs::models {

const char* kernel_class_name(KernelClass c) {
  switch (c) {
    case KernelClass::kGemm: return "gemm";
    case KernelClass::kExpertGemm: return "expert_gemm";
    case KernelClass::kAttention: return "attention";
    case KernelClass::kElementwise: return "elementwise";
    case KernelClass::kHostBound: return "host_bound";
    case KernelClass::kExchangeFloor: return "deepep_floor";
  }
  return "?";
}

KernelClass kernel_class(const Op& op) {
  if (op.fixed_s > 0) return KernelClass::kExchangeFloor;
  // Unfused core attention is batched GEMMs and softmax/dropout passes: attention all the same.
  if (op.core_attention) return KernelClass::kAttention;
  switch (op.kind) {
    case OpKind::kGemm: return op.expert ? KernelClass::kExpertGemm : KernelClass::kGemm;
    case OpKind::kAttentionForward:
    case OpKind::kAttentionBackward: return KernelClass::kAttention;
    case OpKind::kMemoryBound:
    case OpKind::kVectorFlops: return KernelClass::kElementwise;
  }
  return KernelClass::kElementwise;
}

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
  Op op{name, OpKind::kGemm, m, n, k, 2.0 * m * n * k, bytes};
  // Under FP8 training Transformer Engine casts every FP8 GEMM's inputs in kernels of their own
  // (fp8_input_cast, fp8_grad_cast); a 16-bit GEMM (keep_16bit) ignores the flag.
  op.input_cast_separately = s.fp8 && s.lora_rank == 0;
  return {op};
}

/// FP8 training (Transformer Engine): before an FP8 linear layer's GEMM its bf16 input is cast to
/// FP8 together with the transpose the weight gradient needs (one fused cast-transpose kernel: read
/// 2 bytes, write 1 + 1 per element); after a norm (TE's LayerNormLinear) the norm itself writes
/// the FP8 copy, and only the transpose remains (read 1, write 1). Nothing under LoRA (its adapters
/// run in bf16 and the frozen base is cast once) or outside FP8 training.
/// Under current scaling the cast's scale comes from the tensor's own amax, known only after a
/// pass over the whole bf16 tensor (read 2 bytes per element); the norm before it cannot write the
/// FP8 copy either (the scale is not known while it writes), so every cast is a full one.
void fp8_input_cast(std::vector<Item>& out, double elements, bool after_norm, const StepShape& s) {
  if (!s.fp8 || s.lora_rank > 0) return;
  if (s.fp8_current_scaling) {
    out.push_back({Op{"fp8_amax", OpKind::kMemoryBound, 0, 0, 0, 0, 2.0 * elements}});
    after_norm = false;
  }
  out.push_back(after_norm ? Item{Op{"fp8_transpose", OpKind::kMemoryBound, 0, 0, 0, 0, 2.0 * elements}}
                           : Item{Op{"fp8_cast_transpose", OpKind::kMemoryBound, 0, 0, 0, 0, 4.0 * elements}});
}

/// ... and in backward, the output gradient dY (bf16) is cast with its transpose for the FP8
/// data-gradient and weight-gradient GEMMs.
void fp8_grad_cast(std::vector<Item>& out, double elements, const StepShape& s) {
  if (!s.fp8 || s.lora_rank > 0) return;
  if (s.fp8_current_scaling) out.push_back({Op{"fp8_amax.bwd", OpKind::kMemoryBound, 0, 0, 0, 0, 2.0 * elements}});
  out.push_back({Op{"fp8_cast_transpose.bwd", OpKind::kMemoryBound, 0, 0, 0, 0, 4.0 * elements}});
}

/// A base-weight GEMM with, under LoRA, its adapter (x A then (x A) B, rank r) and, under QLoRA,
/// the dequantisation of the 4-bit weight (4 operations per element per 128-row tile); under FP8
/// training, the cast of its input (`after_norm`: the norm before it wrote the FP8 copy).
void base_gemm(std::vector<Item>& out, std::string_view name, double m, double n, double k, const StepShape& s,
               bool after_norm = false) {
  fp8_input_cast(out, m * k, after_norm, s);
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
                   const StepShape& s, bool fp8_linear = true) {
  if (!fp8_linear) {  // the LM head and the router: bf16 GEMMs whatever the training dtype
    Item dg = gemm(dgrad, m, k, n, s);
    Item wg = gemm(wgrad, k, n, m, s);
    wg.op.bytes = (m * k + m * n) * s.act_bytes + k * n * 4.0;
    dg.op.keep_16bit = wg.op.keep_16bit = true;
    wg.op.weight_gradient = true;
    out.push_back(dg);
    out.push_back(wg);
    return;
  }
  fp8_grad_cast(out, m * n, s);
  out.push_back(gemm(dgrad, m, k, n, s));
  if (s.base_4bit)
    out.push_back({Op{"dequantize", OpKind::kVectorFlops, 0, 0, 0, 4.0 * k * n * std::ceil(m / 128.0), 0}});
  if (s.lora_rank > 0) {
    const double r = s.lora_rank;
    for (auto [a, b] : {std::pair{n, r}, std::pair{r, k}}) {  // B (r -> n), then A (k -> r)
      out.push_back(gemm("lora.dgrad", m, b, a, s));
      Item w = gemm("lora.wgrad", b, a, m, s);
      w.op.weight_gradient = true;
      out.push_back(w);
    }
    return;
  }
  Item w = gemm(wgrad, k, n, m, s);
  w.op.bytes = (m * k + m * n) * s.act_bytes + k * n * 4.0;  // accumulates into fp32 main grads
  w.op.weight_gradient = true;
  out.push_back(w);
}

Item memory_op(std::string_view name, double bytes) { return {Op{name, OpKind::kMemoryBound, 0, 0, 0, 0, bytes}}; }

/// DeepSeek-V3's FP8 activation cache (arXiv:2412.19437, Sec. 3.3.2): an activation function's
/// input, kept for backward, is cast to FP8 as it is made (read 2 bytes, write 1 per element) and
/// read back to bf16 in backward (read 1, write 2).
void act_cache_cast(std::vector<Item>& out, double elements, const StepShape& s) {
  if (s.fp8_act_cache) out.push_back(memory_op("act_cache.cast", 3.0 * elements));
}
void act_cache_read(std::vector<Item>& out, double elements, const StepShape& s) {
  if (s.fp8_act_cache) out.push_back(memory_op("act_cache.read", 3.0 * elements));
}

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
  step.attention.share /= cp;
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

/// The core attention one rank runs for a layer kind: heads of Q and of K/V, their widths, and the
/// query-key pairs per sequence a causal mask (and a sliding window) leaves.
struct AttentionShape {
  double q_heads = 0, kv_heads = 0, qk_dim = 0, v_dim = 0;
  double pairs = 0;  ///< per sequence: s^2 / 2 causal; in a window w < s, w^2 / 2 + (s - w) w
};

AttentionShape attention_shape(const ModelArch& m, const StepShape& s, AttentionKind kind) {
  AttentionShape a;
  a.q_heads = static_cast<double>(q_heads_per_rank(m, s.tp));
  const double seq = static_cast<double>(s.seq);
  a.pairs = seq * seq / 2;
  if (kind == AttentionKind::kMla) {
    // Training form: K and V are up-projected per head from the latent, as in multi-head attention.
    a.kv_heads = a.q_heads;
    a.qk_dim = static_cast<double>(m.mla.qk_nope_dim + m.mla.qk_rope_dim);
    a.v_dim = static_cast<double>(m.mla.v_dim);
    return a;
  }
  a.kv_heads = static_cast<double>(kv_heads_per_rank(m, s.tp));
  a.qk_dim = a.v_dim = static_cast<double>(m.head_dim);
  const double w = static_cast<double>(m.sliding_window);
  if (kind == AttentionKind::kSlidingWindow && w < seq) a.pairs = w * w / 2 + (seq - w) * w;
  return a;
}

/// Causal attention FLOPs of one micro-batch on one rank: QK^T and PV, 2 d per query-key pair and
/// head each, over the pairs the mask leaves (flash-attention skips masked blocks).
double attention_flops(const ModelArch& m, const StepShape& s, AttentionKind kind) {
  const auto a = attention_shape(m, s, kind);
  // With CP each rank holds seq/CP queries against the whole sequence's keys (load-balanced causal).
  return static_cast<double>(s.micro_batch) * a.q_heads * 2.0 * a.pairs * (a.qk_dim + a.v_dim) / s.cp;
}

/// A batched GEMM of core attention: `batches` products of (m x k) by (k x n).
Item attention_gemm(std::string_view name, double batches, double m, double n, double k, double bytes) {
  Op op{name, OpKind::kGemm, m, n, k, batches * 2.0 * m * n * k, bytes, true};
  op.groups = batches;  // one batched GEMM: every batch's tiles share the SMs' waves
  return {op};
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
/// the CP ranks, or (full attention without flash attention) the unfused kernels.
void core_attention(std::vector<Item>& out, const ModelArch& m, const StepShape& s, bool backward, AttentionKind kind) {
  if (!s.flash_attention && kind == AttentionKind::kFull) {
    if (backward) {
      unfused_attention_backward(out, m, s);
    } else {
      unfused_attention_forward(out, m, s);
    }
    return;
  }
  const auto sh = attention_shape(m, s, kind);
  const double T = s.tokens(), a = s.act_bytes;
  // Q and the output, K and V: read once forward; backward reads them and writes their gradients.
  const double qo = sh.q_heads * (sh.qk_dim + sh.v_dim), kv = sh.kv_heads * (sh.qk_dim + sh.v_dim);
  const Op attn =
      backward
          ? Op{"attention.bwd",
               OpKind::kAttentionBackward,
               0,
               0,
               0,
               kFlashAttentionBackwardFlops * attention_flops(m, s, kind),
               T * 2 * (qo + kv) * a,
               true}
          : Op{"attention", OpKind::kAttentionForward, 0, 0, 0, attention_flops(m, s, kind), T * (qo + kv) * a, true};
  Op keyed = attn;
  keyed.attention = {.batch = static_cast<double>(s.micro_batch),
                     .seq = static_cast<double>(s.seq),
                     .heads = sh.q_heads,
                     .kv_heads = sh.kv_heads,
                     .qk_dim = sh.qk_dim,
                     .v_dim = sh.v_dim,
                     .window = kind == AttentionKind::kSlidingWindow ? static_cast<double>(m.sliding_window) : 0.0,
                     .mla = kind == AttentionKind::kMla,
                     .share = 1.0 / s.cp};
  keyed.attention.train = true;
  if (ring_attention_used(s)) {
    ring_attention(out, keyed, s.cp, T * kv * a, backward);
  } else {
    out.push_back({keyed});
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

namespace {

Item ep_comm(CollectiveOp op, const char* label, double bytes) {
  return {Op{}, Comm{op, GroupKind::kEp, label, bytes}};
}
Item etp_comm(CollectiveOp op, const char* label, double bytes) {
  return {Op{}, Comm{op, GroupKind::kExpertTp, label, bytes}};
}

/// Width of one rank's attention output (the output projection's input).
double attention_out_width(const ModelArch& m, const StepShape& s, AttentionKind kind) {
  const auto sh = attention_shape(m, s, kind);
  return sh.q_heads * sh.v_dim;
}

/// The attention half of a layer: norm, projections, core attention, output projection, TP
/// collective, residual.
void attention_forward(std::vector<Item>& out, const ModelArch& m, const StepShape& s, AttentionKind kind) {
  const auto d = layer_dims(m, s);
  const double T = d.tokens, Tn = d.norm_tokens, h = d.hidden, a = d.act_bytes;
  out.push_back(memory_op("attn_norm", 2 * Tn * h * a));
  if (s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
  if (kind == AttentionKind::kMla) {
    // DeepSeek-V2/V3 training form: the down-projections are replicated over TP, the
    // up-projections split by heads (Megatron-core's MLA).
    const auto& x = m.mla;
    const double hq = static_cast<double>(q_heads_per_rank(m, s.tp));
    const double qk = static_cast<double>(x.qk_nope_dim + x.qk_rope_dim), rope = static_cast<double>(x.qk_rope_dim);
    const double ql = static_cast<double>(x.q_lora_rank), kvl = static_cast<double>(x.kv_lora_rank);
    if (x.q_lora_rank > 0) {
      base_gemm(out, "q_down", T, ql, h, s);
      out.push_back(memory_op("q_norm", 2 * T * ql * a));
      base_gemm(out, "q_up", T, hq * qk, ql, s);
    } else {
      base_gemm(out, "q_proj", T, hq * qk, h, s);
    }
    base_gemm(out, "kv_down", T, kvl + rope, h, s);
    out.push_back(memory_op("kv_norm", 2 * T * kvl * a));
    base_gemm(out, "kv_up", T, hq * static_cast<double>(x.qk_nope_dim + x.v_dim), kvl, s);
    out.push_back(memory_op("rope", 2 * T * (hq + 1) * rope * a));  // every head's q_rope and the shared k_rope
  } else {
    base_gemm(out, "qkv_proj", T, d.q + 2 * d.kv, h, s, true);
    if (m.qk_norm) out.push_back(memory_op("qk_norm", 2 * T * (d.q + d.kv) * a));
    if (!m.learned_positions) out.push_back(memory_op("rope", 2 * T * (d.q + d.kv) * a));  // rotary on Q and K
  }
  if (s.cp > 1 && !ring_attention_used(s)) {
    const auto sh = attention_shape(m, s, kind);
    out.push_back(cp_comm(CollectiveOp::kAllGather, "cp.kv_allgather",
                          T * s.cp * sh.kv_heads * (sh.qk_dim + sh.v_dim) * a));  // every rank's K and V
  }
  core_attention(out, m, s, false, kind);
  base_gemm(out, "out_proj", T, h, attention_out_width(m, s, kind), s);
  if (s.tp > 1) out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * a));
  out.push_back(memory_op("attn_residual", (m.hidden_dropout ? 4.5 : 3.0) * Tn * h * a));
}

void attention_backward(std::vector<Item>& out, const ModelArch& m, const StepShape& s, AttentionKind kind) {
  const auto d = layer_dims(m, s);
  const double T = d.tokens, Tn = d.norm_tokens, h = d.hidden, a = d.act_bytes;
  out.push_back(memory_op("attn_residual.bwd", (m.hidden_dropout ? 4.0 : 2.0) * Tn * h * a));
  if (s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
  gemm_backward(out, "out_proj.dgrad", "out_proj.wgrad", T, h, attention_out_width(m, s, kind), s);
  core_attention(out, m, s, true, kind);
  if (s.cp > 1 && !ring_attention_used(s)) {
    const auto sh = attention_shape(m, s, kind);
    out.push_back(cp_comm(CollectiveOp::kReduceScatter, "cp.kv_grad_reducescatter",
                          T * s.cp * sh.kv_heads * (sh.qk_dim + sh.v_dim) * a));  // dK, dV to their owners
  }
  if (kind == AttentionKind::kMla) {
    const auto& x = m.mla;
    const double hq = static_cast<double>(q_heads_per_rank(m, s.tp));
    const double qk = static_cast<double>(x.qk_nope_dim + x.qk_rope_dim), rope = static_cast<double>(x.qk_rope_dim);
    const double ql = static_cast<double>(x.q_lora_rank), kvl = static_cast<double>(x.kv_lora_rank);
    out.push_back(memory_op("rope.bwd", 2 * T * (hq + 1) * rope * a));
    gemm_backward(out, "kv_up.dgrad", "kv_up.wgrad", T, hq * static_cast<double>(x.qk_nope_dim + x.v_dim), kvl, s);
    out.push_back(memory_op("kv_norm.bwd", 4 * T * kvl * a));
    gemm_backward(out, "kv_down.dgrad", "kv_down.wgrad", T, kvl + rope, h, s);
    if (x.q_lora_rank > 0) {
      gemm_backward(out, "q_up.dgrad", "q_up.wgrad", T, hq * qk, ql, s);
      out.push_back(memory_op("q_norm.bwd", 4 * T * ql * a));
      gemm_backward(out, "q_down.dgrad", "q_down.wgrad", T, ql, h, s);
    } else {
      gemm_backward(out, "q_proj.dgrad", "q_proj.wgrad", T, hq * qk, h, s);
    }
  } else {
    if (!m.learned_positions) out.push_back(memory_op("rope.bwd", 2 * T * (d.q + d.kv) * a));
    if (m.qk_norm) out.push_back(memory_op("qk_norm.bwd", 4 * T * (d.q + d.kv) * a));
    gemm_backward(out, "qkv_proj.dgrad", "qkv_proj.wgrad", T, d.q + 2 * d.kv, h, s);
  }
  if (s.tp > 1) out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * a));
  out.push_back(memory_op("attn_norm.bwd", 4 * Tn * h * a));
}

void dense_ffn_forward(std::vector<Item>& out, const ModelArch& m, const StepShape& s) {
  const auto d = layer_dims(m, s);
  const double T = d.tokens, Tn = d.norm_tokens, h = d.hidden, f = d.ffn, up_n = d.up, a = d.act_bytes;
  out.push_back(memory_op("mlp_norm", 2 * Tn * h * a));
  if (s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
  base_gemm(out, "mlp_up", T, up_n, h, s, true);
  out.push_back(memory_op("mlp_act", (up_n + f) * T * a));
  act_cache_cast(out, up_n * T, s);
  base_gemm(out, "mlp_down", T, h, f, s);
  if (s.tp > 1) out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * a));
  out.push_back(memory_op("mlp_residual", (m.hidden_dropout ? 4.5 : 3.0) * Tn * h * a));
}

void dense_ffn_backward(std::vector<Item>& out, const ModelArch& m, const StepShape& s) {
  const auto d = layer_dims(m, s);
  const double T = d.tokens, Tn = d.norm_tokens, h = d.hidden, f = d.ffn, up_n = d.up, a = d.act_bytes;
  out.push_back(memory_op("mlp_residual.bwd", (m.hidden_dropout ? 4.0 : 2.0) * Tn * h * a));
  if (s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
  gemm_backward(out, "mlp_down.dgrad", "mlp_down.wgrad", T, h, f, s);
  act_cache_read(out, up_n * T, s);
  out.push_back(memory_op("mlp_act.bwd", (2 * up_n + f) * T * a));
  gemm_backward(out, "mlp_up.dgrad", "mlp_up.wgrad", T, up_n, h, s);
  if (s.tp > 1) out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * a));
  out.push_back(memory_op("mlp_norm.bwd", 4 * Tn * h * a));
}

/// What one GPU does in a MoE layer: its routed tokens (the TP group's tokens split TP ways, as
/// Megatron-core's sequence-parallel MoE does), the token-expert pairs its local experts receive
/// (at the most loaded GPU's count), and the local experts' widths.
struct MoeDims {
  double tokens = 0;  ///< tokens this GPU routes: b s / (CP TP)
  double pairs = 0;   ///< token-expert pairs its experts compute, ETP-gathered: tokens x k x load x ETP
  double local_experts = 0;
  double ffn = 0;  ///< one expert's width on this rank (expert_ffn / ETP)
  double up = 0;   ///< its up-projection output (2 ffn gated)
  double shared_ffn = 0, shared_up = 0;
};

MoeDims moe_dims(const ModelArch& m, const StepShape& s) {
  CS_ASSERT(m.moe.experts % s.ep == 0, "EP divides the routed experts (the scenario resolver checks it)");
  MoeDims d;
  d.tokens = s.tokens() / s.tp;
  d.pairs = d.tokens * static_cast<double>(m.moe.top_k) * s.expert_load * s.etp;
  d.local_experts = s.expert_slots > 0 ? s.expert_slots : static_cast<double>(m.moe.experts / s.ep);
  d.ffn = static_cast<double>(m.moe.expert_ffn) / s.etp;
  const double gated = m.activation == Activation::kSwiGlu ? 2.0 : 1.0;
  d.up = gated * d.ffn;
  d.shared_ffn = static_cast<double>(m.moe.shared_ffn);
  d.shared_up = gated * d.shared_ffn;
  return d;
}

/// The local experts' GEMM as one grouped GEMM: `pairs` rows spread evenly over the local experts
/// (m is the rows per expert, what the kernel's tiles see; the imbalance between GPUs is already
/// in `pairs`), one group per local expert, each expert's weight read once.
Item grouped_gemm(std::string_view name, const MoeDims& d, double n, double k, const StepShape& s,
                  double weight_bytes) {
  const double rows = d.pairs;
  const double bytes = (rows * k + rows * n) * s.act_bytes + d.local_experts * k * n * weight_bytes;
  Op op{name, OpKind::kGemm, rows / d.local_experts, n, k, 2.0 * rows * n * k, bytes};
  op.groups = d.local_experts;
  op.routed = true;
  op.expert = true;
  // As gemm(): under FP8 training the experts' inputs are cast in kernels of their own.
  op.input_cast_separately = s.fp8 && s.lora_rank == 0;
  return {op};
}

void moe_ffn_forward(std::vector<Item>& out, const ModelArch& m, const StepShape& s) {
  const auto ld = layer_dims(m, s);
  const auto d = moe_dims(m, s);
  const double T = ld.tokens, Tn = ld.norm_tokens, Tm = d.tokens, h = ld.hidden, a = ld.act_bytes;
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.top_k);
  out.push_back(memory_op("mlp_norm", 2 * Tn * h * a));
  Item router = gemm("router", Tm, E, h, s);
  router.op.keep_16bit = true;
  out.push_back(router);
  out.push_back(memory_op("router.topk", Tm * E * 8.0));  // fp32 scores written, read by softmax/sigmoid and top-k
  out.push_back(memory_op("permute", Tm * h * a + Tm * k * h * a));
  const double send = dispatch_send_bytes(m, s);
  if (s.ep > 1) out.push_back(ep_comm(CollectiveOp::kAllToAll, "ep.dispatch", send));
  if (s.etp > 1) out.push_back(etp_comm(CollectiveOp::kAllGather, "etp.allgather", d.pairs * h * a));
  fp8_input_cast(out, d.pairs * h, false, s);
  out.push_back(grouped_gemm("experts_up", d, d.up, h, s, s.weight_bytes));
  out.push_back(memory_op("experts_act", (d.up + d.ffn) * d.pairs * a));
  act_cache_cast(out, d.up * d.pairs, s);
  fp8_input_cast(out, d.pairs * d.ffn, false, s);
  out.push_back(grouped_gemm("experts_down", d, h, d.ffn, s, s.weight_bytes));
  if (s.etp > 1) out.push_back(etp_comm(CollectiveOp::kReduceScatter, "etp.reducescatter", d.pairs * h * a));
  if (s.ep > 1) out.push_back(ep_comm(CollectiveOp::kAllToAll, "ep.combine", send / s.dispatch_bytes * a));
  out.push_back(memory_op("unpermute", Tm * k * h * a + Tm * h * a));  // weighted sum of each token's k outputs
  if (d.shared_ffn > 0) {
    // Megatron-core's shared-expert MLP is tensor parallel: over the TP group's T tokens
    // (gathered under SP), its widths split TP ways, its output reduce-scattered to this rank's
    // slice of the routed output. The same FLOPs as T / TP tokens at full width.
    const double Ts = s.tp > 1 ? T : Tm, t = s.tp;
    if (s.tp > 1 && s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
    base_gemm(out, "shared_up", Ts, d.shared_up / t, h, s);
    out.push_back(memory_op("shared_act", (d.shared_up + d.shared_ffn) / t * Ts * a));
    act_cache_cast(out, d.shared_up / t * Ts, s);
    base_gemm(out, "shared_down", Ts, h, d.shared_ffn / t, s);
    if (s.tp > 1) out.push_back(tp_comm(CollectiveOp::kReduceScatter, T * h * a));
  }
  // Without SP the TP ranks hold the same tokens: each routes its 1/TP slice, then they gather.
  if (s.tp > 1 && !s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
  out.push_back(memory_op("mlp_residual", (m.hidden_dropout ? 4.5 : 3.0) * Tn * h * a));
}

/// Backward of a grouped GEMM (y = x W per expert): dgrad over every pair, wgrad per local expert
/// into fp32 main gradients.
void grouped_backward(std::vector<Item>& out, std::string_view dgrad, std::string_view wgrad, const MoeDims& d,
                      double n, double k, const StepShape& s) {
  fp8_grad_cast(out, d.pairs * n, s);
  out.push_back(grouped_gemm(dgrad, d, k, n, s, s.weight_bytes));
  Item w = grouped_gemm(wgrad, d, n, k, s, 4.0);
  w.op.k = w.op.m;  // per expert: (k x rows) x (rows x n), summed over the expert's rows
  w.op.m = k;
  w.op.routed = false;  // the routed rows are the summed dimension: the output tiles are fixed
  w.op.weight_gradient = true;
  out.push_back(w);
}

void moe_ffn_backward(std::vector<Item>& out, const ModelArch& m, const StepShape& s) {
  const auto ld = layer_dims(m, s);
  const auto d = moe_dims(m, s);
  const double T = ld.tokens, Tn = ld.norm_tokens, Tm = d.tokens, h = ld.hidden, a = ld.act_bytes;
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.top_k);
  out.push_back(memory_op("mlp_residual.bwd", (m.hidden_dropout ? 4.0 : 2.0) * Tn * h * a));
  if (d.shared_ffn > 0) {
    // The forward's conjugates: its reduce-scatter's gradient gathered, the input's gradient
    // reduce-scattered (SP) or all-reduced (each rank held every token).
    const double Ts = s.tp > 1 ? T : Tm, t = s.tp;
    if (s.tp > 1) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
    gemm_backward(out, "shared_down.dgrad", "shared_down.wgrad", Ts, h, d.shared_ffn / t, s);
    act_cache_read(out, d.shared_up / t * Ts, s);
    out.push_back(memory_op("shared_act.bwd", (2 * d.shared_up + d.shared_ffn) / t * Ts * a));
    gemm_backward(out, "shared_up.dgrad", "shared_up.wgrad", Ts, d.shared_up / t, h, s);
    if (s.tp > 1) out.push_back(tp_comm(s.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * a));
  }
  out.push_back(memory_op("unpermute.bwd", Tm * k * h * a + Tm * h * a));
  // Gradients travel back along the combine's routes (bf16), then the dispatch's.
  const double back = dispatch_send_bytes(m, s) / s.dispatch_bytes * a;
  if (s.ep > 1) out.push_back(ep_comm(CollectiveOp::kAllToAll, "ep.combine.bwd", back));
  if (s.etp > 1) out.push_back(etp_comm(CollectiveOp::kAllGather, "etp.allgather", d.pairs * h * a));
  grouped_backward(out, "experts_down.dgrad", "experts_down.wgrad", d, h, d.ffn, s);
  act_cache_read(out, d.up * d.pairs, s);
  out.push_back(memory_op("experts_act.bwd", (2 * d.up + d.ffn) * d.pairs * a));
  grouped_backward(out, "experts_up.dgrad", "experts_up.wgrad", d, d.up, h, s);
  if (s.etp > 1) out.push_back(etp_comm(CollectiveOp::kReduceScatter, "etp.reducescatter", d.pairs * h * a));
  if (s.ep > 1) out.push_back(ep_comm(CollectiveOp::kAllToAll, "ep.dispatch.bwd", back));
  out.push_back(memory_op("permute.bwd", Tm * k * h * a + Tm * h * a));
  gemm_backward(out, "router.dgrad", "router.wgrad", Tm, E, h, s, false);
  if (s.tp > 1 && !s.sp) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * a));
  out.push_back(memory_op("mlp_norm.bwd", 4 * Tn * h * a));
}

}  // namespace

double expected_dispatch_ranks(std::int64_t experts, std::int64_t top_k, int ep) {
  CS_ASSERT(ep >= 1 && top_k <= experts, "EP at least 1; top-k at most all of the experts");
  // P(no expert of a given GPU among the token's k) = C(E - E/ep, k) / C(E, k), a product of k ratios.
  // When EP does not divide the experts (redundant copies make up the slots: 256 + 32 over 72
  // GPUs), each GPU serves E/ep experts' worth of the traffic on average (a copied expert's tokens
  // are split between its copies), and the product runs with that share as a real number.
  const double E = static_cast<double>(experts), local = E / ep;
  double miss = 1;
  for (std::int64_t i = 0; i < top_k; ++i)
    miss *= std::max(0.0, (E - local - static_cast<double>(i)) / (E - static_cast<double>(i)));
  return ep * (1 - miss);
}

DispatchSpread dispatch_spread(const ModelArch& m, int ep, int nodes) {
  const auto E = m.moe.experts, k = m.moe.top_k, G = m.moe.groups, M = m.moe.topk_groups;
  DispatchSpread d{expected_dispatch_ranks(E, k, ep), nodes > 1 ? expected_dispatch_ranks(E, k, nodes) : 1.0};
  const bool limited = nodes > 1 && M < G && G % nodes == 0 && (M * ep) % G == 0 && E % G == 0;
  if (limited) {
    // The M chosen groups (of G, G / nodes per node) hold M E / G experts on M EP / G GPUs.
    d.nodes = std::min(d.nodes, expected_dispatch_ranks(G, M, nodes));
    d.gpus = std::min(d.gpus, expected_dispatch_ranks(M * E / G, k, static_cast<int>(M * ep / G)));
  }
  return d;
}

double deepep_token_bytes(const ModelArch& m, bool fp8) {
  const double h = static_cast<double>(m.hidden);
  return fp8 ? h + h / 128.0 * 4.0 : 2.0 * h;
}

double dispatch_send_bytes(const ModelArch& m, const StepShape& s) {
  const double ranks =
      s.dispatch_ranks > 0 ? s.dispatch_ranks : expected_dispatch_ranks(m.moe.experts, m.moe.top_k, s.ep);
  return s.tokens() / s.tp * ranks * static_cast<double>(m.hidden) * s.dispatch_bytes;
}

std::vector<Item> two_batch_overlap(const std::vector<Item>& items, int first_tag) {
  // Segments between the EP all-to-alls; the other collectives stay in their segment, halved.
  std::vector<std::vector<Item>> segments(1);
  std::vector<Item> a2a;
  for (const auto& it : items) {
    if (it.comm && it.comm->group == GroupKind::kEp && it.comm->op == CollectiveOp::kAllToAll) {
      a2a.push_back(it);
      segments.emplace_back();
    } else {
      segments.back().push_back(it);
    }
  }
  auto half = [](Item it) {
    it.op.flops /= 2;
    it.op.bytes /= 2;
    it.op.m /= 2;
    if (it.comm) it.comm->bytes /= 2;
    return it;
  };
  std::vector<Item> out;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    for (int h = 0; h < 2; ++h) {
      // The half's first op after an all-to-all waits for that half's all-to-all.
      const int wait = i > 0 ? first_tag + 2 * static_cast<int>(i - 1) + h : 0;
      bool first = true;
      for (const auto& it : segments[i]) {
        Item x = half(it);
        if (first && !x.comm) {
          x.wait = wait;
          first = false;
        }
        out.push_back(x);
      }
      if (first && wait > 0) out.push_back({Op{"tbo.wait", OpKind::kMemoryBound}, std::nullopt, false, 0, wait});
      if (i < a2a.size()) {
        Item x = half(a2a[i]);
        x.async = true;
        x.tag = first_tag + 2 * static_cast<int>(i) + h;
        out.push_back(x);
      }
    }
  }
  return out;
}

std::vector<Item> layer_forward(const ModelArch& m, const StepShape& s, LayerKind kind) {
  std::vector<Item> out;
  attention_forward(out, m, s, kind.attention);
  switch (kind.ffn) {
    case FeedForwardKind::kDense: dense_ffn_forward(out, m, s); break;
    case FeedForwardKind::kMoe: moe_ffn_forward(out, m, s); break;
  }
  return out;
}

std::vector<Item> layer_backward(const ModelArch& m, const StepShape& s, LayerKind kind) {
  // The conjugates of the forward collectives: an all-reduce's backward is an all-reduce of the
  // input gradient; SP's all-gather becomes a reduce-scatter and vice versa.
  std::vector<Item> out;
  switch (kind.ffn) {
    case FeedForwardKind::kDense: dense_ffn_backward(out, m, s); break;
    case FeedForwardKind::kMoe: moe_ffn_backward(out, m, s); break;
  }
  attention_backward(out, m, s, kind.attention);
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
  Item head = gemm("lm_head", T, v, h, s);
  head.op.keep_16bit = true;
  out.push_back(head);
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
    Item dgrad = gemm("lm_head.dgrad", T, h, v, s);  // frozen head: input gradient only
    dgrad.op.keep_16bit = true;
    out.push_back(dgrad);
  } else {
    gemm_backward(out, "lm_head.dgrad", "lm_head.wgrad", T, v, h, s, false);
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

namespace {

bool matrix_op(const Item& it) {
  return !it.comm && (it.op.kind == OpKind::kGemm || it.op.kind == OpKind::kAttentionForward ||
                      it.op.kind == OpKind::kAttentionBackward);
}

}  // namespace

double executed_flops(const std::vector<Item>& items) {
  double total = 0;
  for (const auto& it : items)
    if (matrix_op(it)) total += it.op.flops;
  return total;
}

double model_flops(const std::vector<Item>& items) {
  double total = 0;
  for (const auto& it : items) {
    if (!matrix_op(it)) continue;
    // Flash attention's backward re-computes the scores QK^T before its four gradient products:
    // recomputation, which model FLOPs leave out (PaLM's MFU, Megatron-LM's and NeMo's FLOP counts
    // all take the backward as 2x the forward).
    const bool flash_backward = it.op.kind == OpKind::kAttentionBackward;
    total +=
        flash_backward ? it.op.flops * (kAttentionBackwardGradientFlops / kFlashAttentionBackwardFlops) : it.op.flops;
  }
  return total;
}

}  // namespace cs::models
