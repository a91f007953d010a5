#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/ops/layer_ops.hpp"

namespace cs::models {

/// Megatron-core's selective-recompute modules (`--recompute-modules`, names as Megatron takes
/// them): each drops what it saves for backward and runs its forward again before the layer's
/// backward.
enum class RecomputeModule : std::uint8_t {
  kCoreAttn,       ///< core_attn: the attention kernel's output and softmax statistics (from Q, K, V)
  kMlp,            ///< mlp: a dense MLP's inner tensors (from its input)
  kMoe,            ///< moe: a MoE layer's router, dispatch, experts, combine and shared experts
  kMoeAct,         ///< moe_act: the routed experts' activation output (from the up GEMM's output)
  kLayernorm,      ///< layernorm: the two norms' outputs, the attention and MLP inputs (from the norm inputs)
  kMlaUpProj,      ///< mla_up_proj: MLA's per-head Q, K, V (from the low-rank latents)
  kSharedExperts,  ///< shared_experts: the shared experts' inner tensors
};
inline constexpr int kRecomputeModules = 7;
[[nodiscard]] const char* recompute_module_name(RecomputeModule m);
/// Every module, in enum order.
[[nodiscard]] const std::vector<RecomputeModule>& all_recompute_modules();

/// A set of modules (a bit per module).
struct RecomputeModules {
  std::uint8_t bits = 0;
  [[nodiscard]] bool has(RecomputeModule m) const { return (bits >> static_cast<int>(m)) & 1u; }
  void add(RecomputeModule m) { bits = static_cast<std::uint8_t>(bits | (1u << static_cast<int>(m))); }
  [[nodiscard]] bool empty() const { return bits == 0; }
  /// "layernorm,moe_act" in enum order; "" when empty.
  [[nodiscard]] std::string text() const;
  bool operator==(const RecomputeModules&) const = default;
};
/// Parses "core_attn,moe_act" (commas, any order); the unknown name, or nullopt when all are known.
[[nodiscard]] std::optional<std::string> parse_recompute_modules(const std::string& text, RecomputeModules& out);

/// What one decoder layer saves for its backward, per micro-batch on one GPU, by the module that
/// produced it (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
/// Models", Sec. 4, with flash attention; the MoE and MLA tensors from their operators). Bytes.
struct LayerActivations {
  double norm_inputs = 0;    ///< the two norms' inputs (the residual stream): always kept
  double norm_outputs = 0;   ///< the attention and MLP (or router) inputs: dropped by layernorm
  double qkv = 0;            ///< Q, K and V kept for attention's backward (MLA: its latents)
  double mla_up = 0;         ///< MLA's per-head Q, K, V: dropped by mla_up_proj
  double core_attn = 0;      ///< the attention output (bf16) and softmax statistics: dropped by core_attn
  double attn_out_cast = 0;  ///< under FP8 its cast, the output projection's input
  double mlp = 0;            ///< a dense MLP's activation input and down-projection input: dropped by mlp
  double router = 0;         ///< fp32 router scores
  double expert_in = 0;      ///< each routed pair's expert input
  double expert_fc1 = 0;     ///< ... its up-projection output (the activation's input)
  double expert_act = 0;     ///< ... its activation output (the down-projection's input): dropped by moe_act
  double shared = 0;         ///< the shared experts' tensors: dropped by shared_experts
  double masks = 0;          ///< dropout masks
  [[nodiscard]] double total() const;
  /// What is kept with `modules` recomputed.
  [[nodiscard]] double kept(const RecomputeModules& modules) const;
};

/// A layer of `kind`'s saved tensors by module. `fp8_cache`: DeepSeek-V3's FP8 activation caching
/// (arXiv:2412.19437, Sec. 3.3.2): the attention output and the activation functions' inputs (the
/// SwiGLU inputs) kept in FP8 too, beside the linear layers' inputs FP8 training already keeps so.
[[nodiscard]] LayerActivations layer_activations(const ModelArch& m, const StepShape& s, LayerKind kind,
                                                 bool fp8_cache = false);

/// The forward items `modules` re-run before a layer's backward, picked from its forward program
/// (in order; the FP8 casts feeding a re-run GEMM with it; the collectives inside a re-run MoE
/// layer, whose dispatch and combine run again, with it).
[[nodiscard]] std::vector<Item> recompute_items(const std::vector<Item>& forward, const RecomputeModules& modules);

}  // namespace cs::models
