#include <algorithm>
#include <cmath>

#include "sim/serving/serving_sim.hpp"

namespace cs::serving {

int expert_slots(const ServingScenario& s) {
  if (!s.model.is_moe() || s.routing.redundant_experts == 0) return 0;
  return static_cast<int>((s.model.moe.experts + s.routing.redundant_experts) / std::max(1, s.ep));
}

ServingMemory serving_memory(const ServingScenario& s, std::int64_t* kv_blocks) {
  models::ServingShape shape;
  shape.tp = s.tp;
  shape.ep = s.ep;
  shape.dp_attention = s.dp_attention;
  shape.deepep = s.deepep;
  shape.expert_slots = expert_slots(s);
  shape.weights = s.weights;
  shape.kv_bytes = s.kv_bytes;
  ServingMemory m;
  m.capacity = s.profile.hbm_capacity.value;
  // With PP each GPU holds its stage's layers (the largest stage) and one vocabulary table (the
  // embedding on the first stage, the LM head on the last).
  const double layers = static_cast<double>(s.model.layers);
  const double share = std::ceil(layers / s.pp) / layers;
  const double vocab =
      static_cast<double>((s.model.vocab + s.tp - 1) / s.tp) * static_cast<double>(s.model.hidden) * 2.0;
  const double tables = vocab * (s.model.tied_embeddings ? 1.0 : 2.0);
  const double whole = models::serving_weight_bytes(s.model, shape);
  m.weights = s.pp > 1 ? (whole - tables) * share + vocab : whole;
  // MTP speculative decoding loads the multi-token-prediction module (DeepSeek-V3: 14B parameters,
  // its layer split as the model's are); counted on every GPU (it sits on the last stage).
  if (s.mtp_acceptance > 0)
    m.weights += static_cast<double>(s.model.params_mtp()) / s.tp * models::weight_format_bytes(s.weights);
  // Activation workspace at the largest step: hidden, QKV, MLP tensors of max_tokens tokens in
  // bf16, and fp32 logits for max_batch sequences.
  models::StepShape one;
  one.tp = s.tp;
  const auto d = models::layer_dims(s.model, one);
  // Under attention-DP a GPU runs every head over a TP-th of the tokens (TP need not divide the
  // heads there, so the widths at TP 1 over TP, not a rounded-down share of the heads).
  models::StepShape all_heads;
  const auto d1 = models::layer_dims(s.model, all_heads);
  const double q_width = s.dp_attention ? d1.q / s.tp : d.q, kv_width = s.dp_attention ? d1.kv / s.tp : d.kv;
  const double v = static_cast<double>((s.model.vocab + s.tp - 1) / s.tp);
  m.activations = static_cast<double>(s.max_tokens) * 2.0 * (3 * d.hidden + q_width + 2 * kv_width + d.up + d.ffn) +
                  static_cast<double>(s.max_batch) * v * 4.0;
  if (s.model.is_moe()) {  // routed pairs' expert tensors and the fp32 router scores
    const double gated = s.model.activation == models::Activation::kSwiGlu ? 2.0 : 1.0;
    m.activations += static_cast<double>(s.max_tokens) * (2.0 * static_cast<double>(s.model.moe.top_k) * (gated + 1) *
                                                              static_cast<double>(s.model.moe.expert_ffn) / s.tp +
                                                          4.0 * static_cast<double>(s.model.moe.experts));
  }
  m.other = s.profile.runtime_reserved.value;
  const double free = m.capacity - m.weights - m.activations - m.other;
  switch (s.kv_rule) {
    case KvMemoryRule::kOfFree: m.kv_cache = s.kv_fraction * free; break;
    // vLLM: the fraction of the whole GPU, less what the profile run found in use.
    case KvMemoryRule::kOfTotal: m.kv_cache = s.kv_fraction * m.capacity - m.weights - m.activations - m.other; break;
    // SGLang: the fraction of the memory free before the weights load covers weights and KV; the
    // rest is its reserve for activations and graphs (the activations must fit in it).
    case KvMemoryRule::kOfFreeBeforeWeights: {
      const double before = m.capacity - m.other;
      m.kv_cache = m.activations <= (1 - s.kv_fraction) * before ? s.kv_fraction * before - m.weights : 0.0;
      break;
    }
  }
  m.kv_cache = std::max(0.0, m.kv_cache);
  m.total = m.weights + m.activations + m.other + m.kv_cache;
  const double per_block = static_cast<double>(s.block_size) * models::kv_bytes_per_token(s.model, shape) * share;
  // Under attention-DP each GPU's pool holds its own sequences: the replica has TP pools.
  const std::int64_t pools = s.dp_attention ? s.tp : 1;
  if (kv_blocks) *kv_blocks = static_cast<std::int64_t>(std::floor(m.kv_cache / per_block)) * pools;
  return m;
}

}  // namespace cs::serving
