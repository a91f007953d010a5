#include "models/llm/model_arch.hpp"

#include "sim/core/check.hpp"

namespace cs::models {

LayerKind ModelArch::layer_kind(std::int64_t layer) const {
  CS_ASSERT(layer >= 0 && layer < layers, "a decoder layer of the model");
  return LayerKind{FeedForwardKind::kDense};
}

std::int64_t ModelArch::params_per_layer() const {
  const std::int64_t h = hidden;
  std::int64_t attn = h * q_width() + 2 * h * kv_width() + q_width() * h;
  if (qkv_bias || linear_bias) attn += q_width() + 2 * kv_width();
  if (linear_bias) attn += h;
  std::int64_t mlp = (activation == Activation::kSwiGlu ? 3 : 2) * h * ffn;
  if (linear_bias) mlp += ffn + h;
  const std::int64_t norms = (norm == NormKind::kLayer ? 4 : 2) * h;
  return attn + mlp + norms;
}

std::int64_t ModelArch::params_embedding() const {
  return vocab * hidden + (learned_positions ? max_positions * hidden : 0);
}

std::int64_t ModelArch::params_lm_head() const { return tied_embeddings ? 0 : vocab * hidden; }

std::int64_t ModelArch::params_total() const {
  const std::int64_t final_norm = (norm == NormKind::kLayer ? 2 : 1) * hidden;
  return params_embedding() + layers * params_per_layer() + final_norm + params_lm_head();
}

}  // namespace cs::models
