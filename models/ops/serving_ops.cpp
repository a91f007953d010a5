#include "models/ops/serving_ops.hpp"

#include <algorithm>
#include <cmath>

#include "models/memory/training_memory.hpp"

namespace cs::models {

const char* weight_format_name(WeightFormat w) {
  switch (w) {
    case WeightFormat::kBf16: return "bf16";
    case WeightFormat::kFp8: return "fp8";
    case WeightFormat::kInt8: return "int8";
    case WeightFormat::kInt4: return "int4";
    case WeightFormat::kFp4: return "fp4";
    case WeightFormat::kMxfp4: return "mxfp4";
  }
  return "?";
}

double weight_format_bytes(WeightFormat w) {
  switch (w) {
    case WeightFormat::kBf16: return 2.0;
    case WeightFormat::kFp8:
    case WeightFormat::kInt8: return 1.0;
    case WeightFormat::kInt4: return 0.5;
    // Format definitions, not measurements. NVFP4 (NVIDIA's Blackwell format; Transformer Engine
    // and the Blackwell docs): 4-bit E2M1 values, one FP8 E4M3 scale per 16 values (and one fp32
    // scale per tensor, negligible): 4 + 8/16 = 4.5 bits.
    case WeightFormat::kFp4: return 4.5 / 8;
    // MXFP4 (OCP Microscaling Formats (MX) Specification v1.0, 2023): 4-bit E2M1 values, one E8M0
    // scale per block of 32: 4 + 8/32 = 4.25 bits.
    case WeightFormat::kMxfp4: return 4.25 / 8;
  }
  return 2.0;
}

bool is_fp4(WeightFormat w) { return w == WeightFormat::kFp4 || w == WeightFormat::kMxfp4; }

bool ServingShape::fp4_gemms() const { return fp4_tensor_cores && is_fp4(weights); }

bool ServingShape::weight_only() const {
  return weights == WeightFormat::kInt8 || weights == WeightFormat::kInt4 || (is_fp4(weights) && !fp4_tensor_cores);
}

namespace {

/// FP4 GEMMs (W4A4) take their m x k input in the weights' FP4 format: a memory-bound kernel reads
/// it in bf16 and writes the values with their block scales (the weights' bytes per element). The
/// bytes of the GEMM's input read follow: bf16, or FP4 after that kernel.
double quantised_input(std::vector<Item>& out, double m, double k, const ServingShape& s) {
  if (!s.fp4_gemms()) return 2.0;
  const double wb = weight_format_bytes(s.weights);
  out.push_back({Op{"fp4_quantize", OpKind::kMemoryBound, 0, 0, 0, 0, m * k * (2.0 + wb)}});
  return wb;
}

/// A GEMM of m rows against a k x n weight in the serving format. FP8 runs on the FP8 tensor
/// cores (W8A8, activations quantised on the fly), fp4/mxfp4 on the FP4 tensor cores where the GPU
/// has them (W4A4, quantised_input); weight-only formats (ServingShape::weight_only) run on the bf16
/// tensor cores plus dequantising every weight once per 128-row tile on CUDA cores (about 4
/// operations per element: unpack, scale, offset, convert).
void gemm(std::vector<Item>& out, std::string_view name, double m, double n, double k, const ServingShape& s) {
  if (m <= 0) return;
  const double wb = weight_format_bytes(s.weights);
  const double ab = quantised_input(out, m, k, s);
  Item it{Op{name, OpKind::kGemm, m, n, k, 2.0 * m * n * k, m * k * ab + m * n * 2.0 + k * n * wb}};
  it.op.input_cast_separately = s.fp4_gemms();  // fp4_quantize above
  it.op.input_static_scale = s.weights == WeightFormat::kFp8 && s.static_fp8_scales;
  out.push_back(it);
  if (s.weight_only()) {
    const double tiles = std::ceil(m / 128.0);
    out.push_back({Op{"dequantize", OpKind::kVectorFlops, 0, 0, 0, 4.0 * k * n * tiles, 0}});
  }
}

Item memory_op(std::string_view name, double bytes) { return {Op{name, OpKind::kMemoryBound, 0, 0, 0, 0, bytes}}; }

/// The MoE router's GEMM over `tokens` tokens and E experts, in bf16 whatever the weights' format
/// (engines keep the gate unquantised). Under FP4 GEMMs it is marked to run at the bf16 rate; under
/// FP8 weights it still runs at the FP8 rate, as before FP4 came (so does the LM head): marking it
/// there too moves the TensorRT-LLM FP8 validation figures (docs/accuracy.md) by up to 2%.
Item router(double tokens, double E, double h, const ServingShape& s) {
  Op op{"router", OpKind::kGemm, tokens, E, h, 2.0 * tokens * E * h, (tokens * h + tokens * E) * 2.0 + E * h * 2.0};
  op.keep_16bit = s.fp4_gemms();
  return {op};
}

}  // namespace

void StepMix::add_decode_context(double context) {
  decode_context += context;
  kv_read_tokens += context - 1;
  decode_seqs += 1;
  decode_kv_read += context - 1;
  if (window > 0) {
    window_pairs += std::min(context, window);
    window_kv_read += std::min(context - 1, window);
  }
}

void StepMix::add_prefill_context(double before, double chunk) {
  prefill_pairs += chunk * (before + (chunk + 1) / 2);
  kv_read_tokens += before;
  prefill_seqs += 1;
  if (window > 0) {
    // Query i (1..chunk) sees min(before + i, window) keys.
    const double uncapped = std::clamp(window - before, 0.0, chunk);
    window_pairs += uncapped * (before + (uncapped + 1) / 2) + (chunk - uncapped) * window;
    window_kv_read += std::min(before, window);
  }
}

StepMix StepMix::scaled(double f) const {
  StepMix x = *this;
  for (double* v : {&x.tokens, &x.sampled, &x.prefill_pairs, &x.decode_context, &x.kv_read_tokens, &x.window_pairs,
                    &x.window_kv_read, &x.decode_seqs, &x.prefill_seqs, &x.decode_kv_read, &x.padding})
    *v *= f;
  return x;
}

double experts_hit(const ModelArch& m, double tokens) {
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.top_k);
  if (tokens <= 0) return 0;
  return E * (1 - std::pow(1 - k / E, tokens));
}

double kv_bytes_per_token(const ModelArch& m, const ServingShape& s) {
  double per_token = 0;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    if (m.layer_kind(l).attention == AttentionKind::kMla) {
      per_token += static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_dim);
    } else {
      per_token += 2.0 * static_cast<double>(kv_heads_per_rank(m, s.attention_tp()) * m.head_dim);
    }
  }
  return per_token * s.kv_bytes;
}

double kv_sliding_share(const ModelArch& m, const ServingShape& s) {
  if (m.sliding_window <= 0) return 0.0;
  double sliding = 0, all = 0;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const auto kind = m.layer_kind(l).attention;
    const double b = kind == AttentionKind::kMla
                         ? static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_dim)
                         : 2.0 * static_cast<double>(kv_heads_per_rank(m, s.attention_tp()) * m.head_dim);
    all += b;
    if (kind == AttentionKind::kSlidingWindow) sliding += b;
  }
  return all > 0 ? sliding / all : 0.0;
}

std::int64_t kv_held_tokens(std::int64_t tokens, double sliding_share, std::int64_t window) {
  if (sliding_share <= 0 || window <= 0 || tokens <= window) return tokens;
  const double held = static_cast<double>(tokens) * (1.0 - sliding_share) + static_cast<double>(window) * sliding_share;
  return static_cast<std::int64_t>(std::ceil(held - 1e-9));
}

double serving_weight_bytes(const ModelArch& m, const ServingShape& s) {
  auto no_layers = m;
  no_layers.layers = 0;
  no_layers.kinds.clear();
  double all = params_per_gpu(no_layers, s.tp);
  const ExpertSplit split{s.ep, s.tp / s.ep, s.expert_slots};
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const auto kind = m.layer_kind(l);
    const auto p = layer_params_per_gpu(m, kind, s.tp, split);
    all += p.dense + p.expert;
    // Attention-DP: every GPU holds the whole attention.
    if (s.dp_attention)
      all += attention_params_per_gpu(m, kind.attention, 1) - attention_params_per_gpu(m, kind.attention, s.tp);
    // layer_params_per_gpu splits the shared experts TP ways, as serving runs them (a
    // tensor-parallel MLP, serving_ffn), except under DeepEP's exchange, where each GPU runs them
    // whole over its own tokens.
    if (s.deepep && kind.ffn == FeedForwardKind::kMoe && m.moe.shared_ffn > 0) {
      const double shared = (m.activation == Activation::kSwiGlu ? 3.0 : 2.0) * static_cast<double>(m.hidden) *
                            static_cast<double>(m.moe.shared_ffn);
      all += shared - shared / s.tp;
    }
  }
  const double vocab_shard = static_cast<double>((m.vocab + s.tp - 1) / s.tp) * static_cast<double>(m.hidden);
  const double embed = vocab_shard * (m.tied_embeddings ? 1.0 : 2.0);
  return (all - embed) * weight_format_bytes(s.weights) + embed * 2.0;
}

namespace {

/// The widths one GPU of a TP group works with in serving (token counts come from the StepMix).
LayerDims serving_dims(const ModelArch& m, const ServingShape& s) {
  StepShape shape;
  shape.tp = s.tp;
  return layer_dims(m, shape);
}

/// The attention of a step's part as a table keys it, on one GPU's heads. Prefill (`decode`
/// false): its chunks, as that many sequences at the causal length holding the same query-key pairs
/// (a chunk after cached context stands for a longer prompt). Decode: its sequences, each over their
/// mean context. Empty (batch 0) when the step has no such part.
AttentionKey part_key(const StepMix& mix, bool decode, double heads, double kv_heads, double qk, double v, bool mla,
                      bool fp8 = false) {
  const double seqs = decode ? mix.decode_seqs : mix.prefill_seqs;
  if (seqs <= 0 || (!decode && mix.prefill_pairs <= 0)) return {};
  AttentionKey k{.batch = seqs,
                 .seq = decode ? 0.0 : std::sqrt(2.0 * mix.prefill_pairs / seqs),
                 .heads = heads,
                 .kv_heads = kv_heads,
                 .qk_dim = qk,
                 .v_dim = v,
                 .window = 0,
                 .mla = mla,
                 .share = 1};
  k.decode = decode;
  k.context = decode ? mix.decode_context / seqs : 0.0;
  k.fp8 = fp8;
  return k;
}

/// One attention kernel of a step (its prefill or its decode part), when it has tokens.
void attention_part(std::vector<Item>& out, double tokens, double flops, double bytes, const AttentionKey& key) {
  if (tokens <= 0 || flops <= 0) return;
  Op op{"attention", OpKind::kAttentionForward, 0, 0, 0, flops, bytes};
  op.attention = key;
  out.push_back({op});
}

/// The attention half of a serving layer, per kind. Under attention-DP, called with one GPU's
/// share of the mix and TP 1 (no all-reduce).
void serving_attention(std::vector<Item>& out, const ModelArch& m, const StepMix& mix, const ServingShape& s,
                       AttentionKind kind) {
  const auto d = serving_dims(m, s);
  const double T = mix.tokens + mix.padding, h = d.hidden, q = d.q, kv = d.kv;
  const double hq = static_cast<double>(q_heads_per_rank(m, s.tp));
  out.push_back(memory_op("attn_norm", 4 * T * h));
  double attn_out = q;
  if (kind == AttentionKind::kMla) {
    const auto& x = m.mla;
    const double ql = static_cast<double>(x.q_lora_rank), kvl = static_cast<double>(x.kv_lora_rank);
    const double nope = static_cast<double>(x.qk_nope_dim), rope = static_cast<double>(x.qk_rope_dim);
    const double v = static_cast<double>(x.v_dim);
    if (x.q_lora_rank > 0) {
      gemm(out, "q_down", T, ql, h, s);
      gemm(out, "q_up", T, hq * (nope + rope), ql, s);
    } else {
      gemm(out, "q_proj", T, hq * (nope + rope), h, s);
    }
    gemm(out, "kv_down", T, kvl + rope, h, s);
    out.push_back(memory_op("kv_append", T * (kvl + rope) * (2 + s.kv_bytes)));
    // Absorbed form (decode): q_nope into the latent space (W_UK), attention over the latent cache
    // (scores over kv_lora + rope values, outputs in the kv_lora space), then W_UV. Prefill pairs
    // run the multi-head form (K/V up-projected, qk 192 and v 128 per head), as serving engines do.
    gemm(out, "q_absorb", T, hq * kvl, nope, s);
    const double decode_pairs = mix.decode_context, prefill_pairs = mix.prefill_pairs;
    const double decode_tokens = mix.decode_seqs, prefill_tokens = mix.tokens - decode_tokens;
    // The prefill pairs and the decode steps as two kernels (as engines run them), each keyed for
    // the MLA tables: prefill by its chunks at the causal length with the same pairs, decode by its
    // sequences at their mean context.
    attention_part(out, prefill_tokens, 2.0 * hq * prefill_pairs * (nope + rope + v),
                   prefill_tokens * hq * (kvl + rope + kvl) * 2 +
                       (mix.kv_read_tokens - mix.decode_kv_read) * (kvl + rope) * s.kv_bytes,
                   part_key(mix, false, hq, hq, nope + rope, v, true));
    attention_part(out, decode_tokens, 2.0 * hq * decode_pairs * (2 * kvl + rope),
                   decode_tokens * hq * (kvl + rope + kvl) * 2 + mix.decode_kv_read * (kvl + rope) * s.kv_bytes,
                   part_key(mix, true, hq, hq, nope + rope, v, true));
    gemm(out, "v_absorb", T, hq * v, kvl, s);
    attn_out = hq * v;
  } else {
    gemm(out, "qkv_proj", T, q + 2 * kv, h, s);
    if (m.qk_norm) out.push_back(memory_op("qk_norm", 4 * T * (q + kv)));
    if (!m.learned_positions) out.push_back(memory_op("rope", 4 * T * (q + kv)));
    out.push_back(memory_op("kv_append", T * 2 * kv * (2 + s.kv_bytes)));
    // QK^T and PV, 2 d FLOPs each per (query, key) pair and head; reads Q and the cached K/V.
    const bool window = kind == AttentionKind::kSlidingWindow && mix.window > 0;
    const double hd = static_cast<double>(m.head_dim);
    if (window) {
      // Sliding-window layers: one kernel over the pairs the window leaves (analytic).
      out.push_back({Op{"attention", OpKind::kAttentionForward, 0, 0, 0, 4.0 * hd * hq * mix.window_pairs,
                        T * 2 * (2 * q) + mix.window_kv_read * 2 * kv * s.kv_bytes}});
    } else {
      const double kvh = kv / hd, decode_tokens = mix.decode_seqs, prefill_tokens = mix.tokens - decode_tokens;
      attention_part(out, prefill_tokens, 4.0 * hd * hq * mix.prefill_pairs,
                     prefill_tokens * 2 * (2 * q) + (mix.kv_read_tokens - mix.decode_kv_read) * 2 * kv * s.kv_bytes,
                     part_key(mix, false, hq, kvh, hd, hd, false, s.kv_bytes < 2));
      attention_part(out, decode_tokens, 4.0 * hd * hq * mix.decode_context,
                     decode_tokens * 2 * (2 * q) + mix.decode_kv_read * 2 * kv * s.kv_bytes,
                     part_key(mix, true, hq, kvh, hd, hd, false, s.kv_bytes < 2));
    }
  }
  gemm(out, "out_proj", T, h, attn_out, s);
  if (s.tp > 1) out.push_back(tp_comm(CollectiveOp::kAllReduce, T * h * 2));
  out.push_back(memory_op("attn_residual", 6 * T * h));
}

/// The routed experts of a serving step on the GPU that sets the pace: each hit expert's weights
/// read once (EP: whole experts on their GPU; EP 1: 1/TP of each). Balanced, the pairs spread
/// evenly over the TP group; under EP the step's routing gives the most loaded GPU's pairs and the
/// experts it hits (StepRouting).
void serving_experts(std::vector<Item>& out, const ModelArch& m, const StepMix& mix, const ServingShape& s) {
  const double T = mix.tokens, h = static_cast<double>(m.hidden);
  const double k = static_cast<double>(m.moe.top_k), f = static_cast<double>(m.moe.expert_ffn);
  const double gated = m.activation == Activation::kSwiGlu ? 2.0 : 1.0;
  const bool routed = s.routing.hit >= 0;
  const bool whole = s.ep > 1;  // whole experts on each GPU: the most loaded one sets the pace
  const double hit = routed ? s.routing.hit : experts_hit(m, T);
  if (hit <= 0) return;
  double pairs = T * k / s.tp;  // per GPU, on average
  if (whole) pairs *= s.routing.load;
  const double wb = weight_format_bytes(s.weights);
  // Hit experts' weight on that GPU, in whole experts, and the rows of each.
  const double local = routed && whole ? hit : hit / s.tp;
  const double rows = routed ? pairs / local : T * k / hit;
  auto grouped = [&](std::string_view name, double n, double kk) {
    const double flops = 2.0 * pairs * n * kk;
    const double ab = quantised_input(out, pairs, kk, s);
    Op op{name, OpKind::kGemm, rows, n, kk, flops, pairs * (kk * ab + n * 2.0) + local * n * kk * wb};
    op.groups = local;  // one grouped kernel over this GPU's share of the hit experts
    op.routed = true;
    op.expert = true;
    out.push_back({op});
    if (s.weight_only()) out.push_back({Op{"dequantize", OpKind::kVectorFlops, 0, 0, 0, 4.0 * local * n * kk, 0}});
  };
  grouped("experts_up", gated * f, h);
  out.push_back(memory_op("experts_act", 2 * pairs * (gated + 1) * f));
  grouped("experts_down", h, f);
}

/// A MoE feed-forward under attention-DP with DeepEP's exchange: each GPU routes its own tokens,
/// dispatches each to the distinct GPUs holding its top-k experts (normal kernels; FP8 with its
/// scales under FP8 weights, else bf16), or in a low-latency step every top-k copy to its expert's
/// GPU after the kernel's floor; the experts run as under EP, and the combine returns one bf16
/// partial sum per token and destination (per copy, low-latency); the shared experts run whole
/// over the GPU's own tokens. The all-to-alls' bytes are each GPU's send buffer; under uneven
/// routing the serving simulation splits them by the step's per-GPU shares of the pairs (the most
/// loaded GPU receives its share of every GPU's dispatch and sends the combine back).
void serving_deepep_moe(std::vector<Item>& out, const ModelArch& m, const StepMix& mix, const ServingShape& s) {
  const double T = mix.tokens, own = T / s.tp, h = static_cast<double>(m.hidden);
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.top_k);
  out.push_back(memory_op("mlp_norm", 4 * own * h));
  out.push_back(router(own, E, h, s));
  out.push_back(memory_op("router.topk", own * E * 8.0));
  const auto spread = dispatch_spread(m, s.ep, s.nodes);
  const double dests = s.low_latency ? k : spread.gpus;
  // Normal kernels across nodes: once per node over the rail, then NVLink (low-latency: direct).
  const double node_copies = !s.low_latency && s.nodes > 1 ? spread.nodes / spread.gpus : 1.0;
  const double token = deepep_token_bytes(m, s.weights == WeightFormat::kFp8);
  const auto floor = [&](std::string_view name, double seconds) {
    if (seconds <= 0) return;  // no fixed work, no item (an empty op would cost a kernel launch)
    Op op{name, OpKind::kMemoryBound};
    op.fixed_s = seconds;
    out.push_back({op});
  };
  if (s.low_latency) floor("deepep.ll_dispatch_floor", s.ll_dispatch_floor_s);
  out.push_back({Op{}, Comm{CollectiveOp::kAllToAll, GroupKind::kTp, "ep.dispatch", own * dests * token, node_copies}});
  serving_experts(out, m, mix, s);
  if (s.low_latency) floor("deepep.ll_combine_floor", s.ll_combine_floor_s);
  out.push_back(
      {Op{}, Comm{CollectiveOp::kAllToAll, GroupKind::kTp, "ep.combine", own * dests * h * 2.0, node_copies, true}});
  if (m.moe.shared_ffn > 0) {
    const double gated = m.activation == Activation::kSwiGlu ? 2.0 : 1.0;
    const double fs = static_cast<double>(m.moe.shared_ffn);
    gemm(out, "shared_up", own, gated * fs, h, s);
    out.push_back(memory_op("shared_act", 2 * own * (gated + 1) * fs));
    gemm(out, "shared_down", own, h, fs, s);
  }
  out.push_back(memory_op("unpermute", 2 * own * h * (k + 1)));
  out.push_back(memory_op("mlp_residual", 6 * own * h));
}

void serving_ffn(std::vector<Item>& out, const ModelArch& m, const StepMix& mix, const ServingShape& s,
                 FeedForwardKind kind) {
  if (s.deepep && kind == FeedForwardKind::kMoe) return serving_deepep_moe(out, m, mix, s);
  const auto d = serving_dims(m, s);
  const double T = mix.tokens + mix.padding, h = d.hidden;
  // Under attention-DP each GPU norms its own tokens, then the group gathers all of them. Every GPU
  // receives every token whatever the routing (the MoE layer's experts then pick their pairs), so
  // routing imbalance changes the experts' pace but not these bytes.
  const double own = s.dp_attention ? T / s.tp : T;
  out.push_back(memory_op("mlp_norm", 4 * own * h));
  if (s.dp_attention && s.tp > 1) out.push_back(tp_comm(CollectiveOp::kAllGather, T * h * 2));
  if (kind == FeedForwardKind::kDense) {
    gemm(out, "mlp_up", T, d.up, h, s);
    out.push_back(memory_op("mlp_act", 2 * T * (d.up + d.ffn)));
    gemm(out, "mlp_down", T, h, d.ffn, s);
  } else {
    const double E = static_cast<double>(m.moe.experts);
    out.push_back(router(T, E, h, s));
    out.push_back(memory_op("router.topk", T * E * 8.0));
    serving_experts(out, m, mix, s);
    if (m.moe.shared_ffn > 0) {
      const double gated = m.activation == Activation::kSwiGlu ? 2.0 : 1.0;
      const double fs = static_cast<double>(m.moe.shared_ffn) / s.tp;
      gemm(out, "shared_up", T, gated * fs, h, s);
      out.push_back(memory_op("shared_act", 2 * T * (gated + 1) * fs));
      gemm(out, "shared_down", T, h, fs, s);
    }
    out.push_back(memory_op("unpermute", 2 * T * h * (static_cast<double>(m.moe.top_k) + 1)));
  }
  if (s.tp > 1)
    out.push_back(tp_comm(s.dp_attention ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, T * h * 2));
  out.push_back(memory_op("mlp_residual", 6 * own * h));
}

}  // namespace

std::vector<Item> serving_routed_experts(const ModelArch& m, const StepMix& mix, const ServingShape& s) {
  std::vector<Item> out;
  serving_experts(out, m, mix, s);
  return out;
}

std::vector<Item> serving_layer(const ModelArch& m, const StepMix& mix, const ServingShape& s, LayerKind kind) {
  std::vector<Item> out;
  if (s.dp_attention) {
    ServingShape one = s;  // one GPU's attention: every head, its own sequences
    one.tp = 1;
    one.dp_attention = false;
    serving_attention(out, m, mix.scaled(1.0 / s.tp), one, kind.attention);
  } else {
    serving_attention(out, m, mix, s, kind.attention);
  }
  serving_ffn(out, m, mix, s, kind.ffn);
  return out;
}

std::vector<Item> serving_head(const ModelArch& m, const StepMix& mix, const ServingShape& s) {
  const double h = static_cast<double>(m.hidden);
  const double v = static_cast<double>((m.vocab + s.tp - 1) / s.tp);
  std::vector<Item> out;
  // Under attention-DP each GPU embeds and norms its own sequences' tokens; the vocab-parallel
  // LM head then needs every sampled row (an all-gather of the normed hidden states).
  const double own = s.dp_attention ? 1.0 / s.tp : 1.0;
  out.push_back(memory_op("embedding", 4 * mix.tokens * own * h));
  out.push_back(memory_op("final_norm", 4 * mix.sampled * own * h));
  if (s.dp_attention && s.tp > 1 && mix.sampled > 0)
    out.push_back(tp_comm(CollectiveOp::kAllGather, mix.sampled * h * 2));
  // The LM head stays in bf16 (engines keep it unquantised).
  if (mix.sampled > 0) {
    Op head{"lm_head",
            OpKind::kGemm,
            mix.sampled,
            v,
            h,
            2.0 * mix.sampled * v * h,
            (mix.sampled * h + mix.sampled * v) * 2.0 + h * v * 2.0};
    head.keep_16bit = s.fp4_gemms();  // bf16 rate under FP4 GEMMs (FP8: see router)
    out.push_back({head});
    out.push_back(memory_op("sampling", mix.sampled * v * 4.0 * 2));
    if (s.tp > 1) out.push_back(tp_comm(CollectiveOp::kAllGather, mix.sampled * v * 4.0 * s.tp));
  }
  return out;
}

std::vector<Item> serving_mtp_module(const ModelArch& m, const StepMix& mix, const ServingShape& s) {
  const double T = mix.tokens, h = static_cast<double>(m.hidden);
  std::vector<Item> out;
  if (T <= 0) return out;
  out.push_back(memory_op("mtp.norms", 2 * 4 * T * h));
  gemm(out, "mtp.proj", T, h, 2 * h, s);  // replicated on every TP rank (DeepSeek-V3's eh_proj)
  for (auto& it : serving_layer(m, mix, s, m.layer_kind(m.layers - 1))) out.push_back(it);
  for (auto& it : serving_head(m, mix, s)) out.push_back(it);
  return out;
}

}  // namespace cs::models
