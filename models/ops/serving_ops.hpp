#pragma once
#include "models/llm/model_arch.hpp"
#include "models/ops/layer_ops.hpp"

namespace cs::models {

/// How weights are stored and multiplied in serving.
enum class WeightFormat { kBf16, kFp8, kInt8, kInt4 };
[[nodiscard]] const char* weight_format_name(WeightFormat w);
[[nodiscard]] double weight_format_bytes(WeightFormat w);

/// What one serving engine step (one forward pass over a mixed batch) contains, as the sums its
/// cost depends on. All counts are per replica (the TP group shares them).
struct StepMix {
  double tokens = 0;          ///< tokens through the layers: prefill chunk tokens + one per decoding sequence
  double sampled = 0;         ///< sequences that emit a token (LM head rows)
  double prefill_pairs = 0;   ///< sum over prefill chunks of new * (context before + (new + 1) / 2): causal QK pairs
  double decode_context = 0;  ///< sum over decoding sequences of their context length (QK pairs)
  double kv_read_tokens = 0;  ///< tokens of cached K/V read by attention (prefill context before + decode context)
};

struct ServingShape {
  int tp = 1;
  WeightFormat weights = WeightFormat::kBf16;
  double kv_bytes = 2;  ///< bytes per cached K or V element (bf16 2, fp8 1)
};

/// One decoder layer of a serving step, per GPU: GEMMs over the step's tokens with the weights
/// streamed once (weight-only int8/int4 add their dequantisation on CUDA cores), KV-cache append,
/// attention over each sequence's context (prefill compute-bound, decode reading the cache), and
/// the two TP all-reduces.
[[nodiscard]] std::vector<Item> serving_layer(const ModelArch& m, const StepMix& mix, const ServingShape& s);
/// Final norm, LM head over the sampled rows, and sampling.
[[nodiscard]] std::vector<Item> serving_head(const ModelArch& m, const StepMix& mix, const ServingShape& s);
/// Bytes of KV cache per token on one GPU of a TP group (all layers, K and V).
[[nodiscard]] double kv_bytes_per_token(const ModelArch& m, const ServingShape& s);
/// Weight bytes on one GPU (embedding and LM head kept in bf16, as serving engines do).
[[nodiscard]] double serving_weight_bytes(const ModelArch& m, const ServingShape& s);

}  // namespace cs::models
