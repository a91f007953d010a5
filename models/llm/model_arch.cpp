#include "models/llm/model_arch.hpp"

#include "sim/core/check.hpp"

namespace cs::models {

LayerKind ModelArch::layer_kind(std::int64_t layer) const {
  CS_ASSERT(layer >= 0 && layer < layers, "a decoder layer of the model");
  if (kinds.empty()) return LayerKind{};
  CS_ASSERT(static_cast<std::int64_t>(kinds.size()) == layers, "one kind per decoder layer");
  return kinds[static_cast<std::size_t>(layer)];
}

std::int64_t ModelArch::attention_params(AttentionKind kind) const {
  const std::int64_t h = hidden;
  std::int64_t p = 0;
  if (kind == AttentionKind::kMla) {
    const std::int64_t qk = mla.qk_nope_dim + mla.qk_rope_dim;
    // Q: down-projection to q_lora_rank, its norm, up-projection to every head's Q (or direct).
    p += mla.q_lora_rank > 0 ? h * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * heads * qk : h * heads * qk;
    // KV: down-projection to the latent plus the shared rotary key, its norm, up-projection to K_nope and V.
    p += h * (mla.kv_lora_rank + mla.qk_rope_dim) + mla.kv_lora_rank +
         mla.kv_lora_rank * heads * (mla.qk_nope_dim + mla.v_dim);
    p += heads * mla.v_dim * h;  // output projection
  } else {
    p += h * q_width() + 2 * h * kv_width() + q_width() * h;
    if (qkv_bias || linear_bias) p += q_width() + 2 * kv_width();
    if (o_bias || linear_bias) p += h;
    if (qk_norm) p += 2 * head_dim;
  }
  if (attention_sinks) p += heads;
  return p;
}

std::int64_t ModelArch::expert_params() const {
  const std::int64_t f = moe.expert_ffn, h = hidden;
  std::int64_t p = (activation == Activation::kSwiGlu ? 3 : 2) * h * f;
  if (moe.expert_bias) p += (activation == Activation::kSwiGlu ? 2 : 1) * f + h;
  return p;
}

std::int64_t ModelArch::params_of_kind(LayerKind kind, bool active) const {
  const std::int64_t h = hidden;
  const std::int64_t gated = activation == Activation::kSwiGlu ? 3 : 2;
  std::int64_t ffn_params = 0;
  if (kind.ffn == FeedForwardKind::kDense) {
    ffn_params = gated * h * ffn;
    if (linear_bias) ffn_params += ffn + h;
  } else {
    const std::int64_t routed = active ? moe.top_k : moe.experts;
    ffn_params = moe.experts * h + (moe.router_bias ? moe.experts : 0);  // router
    ffn_params += routed * expert_params();
    ffn_params += gated * h * moe.shared_ffn + (moe.shared_gate ? h : 0);
  }
  const std::int64_t norms = (norm == NormKind::kLayer ? 4 : 2) * h;
  return attention_params(kind.attention) + ffn_params + norms;
}

std::int64_t ModelArch::params_embedding() const {
  return vocab * hidden + (learned_positions ? max_positions * hidden : 0);
}

std::int64_t ModelArch::params_lm_head() const { return tied_embeddings ? 0 : vocab * hidden; }

namespace {
std::int64_t layers_sum(const ModelArch& m, bool active) {
  std::int64_t sum = 0;
  for (std::int64_t l = 0; l < m.layers; ++l) sum += m.params_of_kind(m.layer_kind(l), active);
  return sum;
}
}  // namespace

std::int64_t ModelArch::params_total() const {
  const std::int64_t final_norm = (norm == NormKind::kLayer ? 2 : 1) * hidden;
  return params_embedding() + layers_sum(*this, false) + final_norm + params_lm_head();
}

std::int64_t ModelArch::params_active() const {
  const std::int64_t final_norm = (norm == NormKind::kLayer ? 2 : 1) * hidden;
  return params_embedding() + layers_sum(*this, true) + final_norm + params_lm_head();
}

std::int64_t ModelArch::params_mtp() const {
  if (mtp_layers == 0) return 0;
  const std::int64_t h = hidden;
  return mtp_layers * (2 * h + 2 * h * h + params_of_kind(layer_kind(layers - 1)) + h);
}

}  // namespace cs::models
