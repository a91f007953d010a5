#include "models/ops/serving_ops.hpp"

#include <cmath>

#include "models/memory/training_memory.hpp"

namespace cs::models {

const char* weight_format_name(WeightFormat w) {
  switch (w) {
    case WeightFormat::kBf16: return "bf16";
    case WeightFormat::kFp8: return "fp8";
    case WeightFormat::kInt8: return "int8";
    case WeightFormat::kInt4: return "int4";
  }
  return "?";
}

double weight_format_bytes(WeightFormat w) {
  switch (w) {
    case WeightFormat::kBf16: return 2.0;
    case WeightFormat::kFp8:
    case WeightFormat::kInt8: return 1.0;
    case WeightFormat::kInt4: return 0.5;
  }
  return 2.0;
}

namespace {

/// A GEMM of m rows against a k x n weight in the serving format. FP8 runs on the FP8 tensor
/// cores (W8A8, activations quantised on the fly); int8/int4 are weight-only: bf16 tensor cores
/// plus dequantising every weight once per 128-row tile on CUDA cores (about 4 operations per
/// element: unpack, scale, offset, convert).
void gemm(std::vector<Item>& out, std::string_view name, double m, double n, double k, const ServingShape& s) {
  if (m <= 0) return;
  const double wb = weight_format_bytes(s.weights);
  Item it{Op{name, OpKind::kGemm, m, n, k, 2.0 * m * n * k, (m * k + m * n) * 2.0 + k * n * wb}};
  out.push_back(it);
  if (s.weights == WeightFormat::kInt8 || s.weights == WeightFormat::kInt4) {
    const double tiles = std::ceil(m / 128.0);
    out.push_back({Op{"dequantize", OpKind::kVectorFlops, 0, 0, 0, 4.0 * k * n * tiles, 0}});
  }
}

Item memory_op(std::string_view name, double bytes) { return {Op{name, OpKind::kMemoryBound, 0, 0, 0, 0, bytes}}; }

}  // namespace

double kv_bytes_per_token(const ModelArch& m, const ServingShape& s) {
  return 2.0 * static_cast<double>(m.layers) * static_cast<double>(kv_heads_per_rank(m, s.tp) * m.head_dim) *
         s.kv_bytes;
}

double serving_weight_bytes(const ModelArch& m, const ServingShape& s) {
  const double all = params_per_gpu(m, s.tp);
  const double vocab_shard = static_cast<double>((m.vocab + s.tp - 1) / s.tp) * static_cast<double>(m.hidden);
  const double embed = vocab_shard * (m.tied_embeddings ? 1.0 : 2.0);
  return (all - embed) * weight_format_bytes(s.weights) + embed * 2.0;
}

std::vector<Item> serving_layer(const ModelArch& m, const StepMix& mix, const ServingShape& s) {
  StepShape shape;
  shape.tp = s.tp;
  shape.micro_batch = 1;
  shape.seq = 1;
  const auto d = layer_dims(m, shape);
  const double T = mix.tokens, h = d.hidden, q = d.q, kv = d.kv;
  const double hd = static_cast<double>(m.head_dim);
  const double hq = static_cast<double>(q_heads_per_rank(m, s.tp));
  std::vector<Item> out;
  out.push_back(memory_op("attn_norm", 4 * T * h));
  gemm(out, "qkv_proj", T, q + 2 * kv, h, s);
  if (!m.learned_positions) out.push_back(memory_op("rope", 4 * T * (q + kv)));
  out.push_back(memory_op("kv_append", T * 2 * kv * (2 + s.kv_bytes)));
  // Attention: QK^T and PV, 2 d FLOPs each per (query, key) pair and head; reads Q and the cached K/V.
  const double pairs = mix.prefill_pairs + mix.decode_context;
  out.push_back({Op{"attention", OpKind::kAttentionForward, 0, 0, 0, 4.0 * hd * hq * pairs,
                    T * 2 * (2 * q) + mix.kv_read_tokens * 2 * kv * s.kv_bytes}});
  gemm(out, "out_proj", T, h, q, s);
  if (s.tp > 1) out.push_back(tp_comm(CollectiveOp::kAllReduce, T * h * 2));
  out.push_back(memory_op("attn_residual", 6 * T * h));
  out.push_back(memory_op("mlp_norm", 4 * T * h));
  gemm(out, "mlp_up", T, d.up, h, s);
  out.push_back(memory_op("mlp_act", 2 * T * (d.up + d.ffn)));
  gemm(out, "mlp_down", T, h, d.ffn, s);
  if (s.tp > 1) out.push_back(tp_comm(CollectiveOp::kAllReduce, T * h * 2));
  out.push_back(memory_op("mlp_residual", 6 * T * h));
  return out;
}

std::vector<Item> serving_head(const ModelArch& m, const StepMix& mix, const ServingShape& s) {
  const double h = static_cast<double>(m.hidden);
  const double v = static_cast<double>((m.vocab + s.tp - 1) / s.tp);
  std::vector<Item> out;
  out.push_back(memory_op("embedding", 4 * mix.tokens * h));
  out.push_back(memory_op("final_norm", 4 * mix.sampled * h));
  // The LM head stays in bf16 (engines keep it unquantised).
  if (mix.sampled > 0) {
    out.push_back({Op{"lm_head", OpKind::kGemm, mix.sampled, v, h, 2.0 * mix.sampled * v * h,
                      (mix.sampled * h + mix.sampled * v) * 2.0 + h * v * 2.0}});
    out.push_back(memory_op("sampling", mix.sampled * v * 4.0 * 2));
    if (s.tp > 1) out.push_back(tp_comm(CollectiveOp::kAllGather, mix.sampled * v * 4.0 * s.tp));
  }
  return out;
}

}  // namespace cs::models
