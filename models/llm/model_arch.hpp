#pragma once
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace cs::models {

enum class Activation { kSwiGlu, kGelu };

/// The feed-forward block of a decoder layer: one dense MLP, or a mixture of experts (a router,
/// routed experts of which each token uses top-k, and optional shared experts every token uses).
enum class FeedForwardKind : std::uint8_t { kDense, kMoe };

/// The attention of a decoder layer: full causal (MHA/GQA), causal inside a sliding window of the
/// last `sliding_window` tokens (Mistral, gpt-oss's alternate layers), or DeepSeek's multi-head
/// latent attention (low-rank Q and KV projections with a decoupled RoPE part).
enum class AttentionKind : std::uint8_t { kFull, kSlidingWindow, kMla };

/// What one decoder layer is. A model is a sequence of layer kinds (`ModelArch::layer_kind`);
/// layers of one kind share one program of ops, so a step builder builds each kind's program once.
struct LayerKind {
  AttentionKind attention = AttentionKind::kFull;
  FeedForwardKind ffn = FeedForwardKind::kDense;
  auto operator<=>(const LayerKind&) const = default;
};
enum class NormKind { kRms, kLayer };

/// The mixture-of-experts part of a model (experts == 0: a dense model).
struct MoeArch {
  std::int64_t experts = 0;         ///< routed experts per MoE layer
  std::int64_t top_k = 0;           ///< routed experts each token uses
  std::int64_t expert_ffn = 0;      ///< intermediate size of one routed expert
  std::int64_t shared_experts = 0;  ///< experts every token uses (DeepSeek: 1)
  std::int64_t shared_ffn = 0;      ///< intermediate size of all shared experts together
  bool shared_gate = false;         ///< Qwen2-MoE: a sigmoid gate (hidden x 1) on the shared expert
  bool router_bias = false;         ///< a bias per expert on the router (gpt-oss; DeepSeek's load-balancing bias)
  bool expert_bias = false;         ///< biases on the experts' linear layers (gpt-oss)
  /// Group-limited routing (DeepSeek-V3): experts in `groups` groups, a token's experts drawn from
  /// its best `topk_groups` groups (1 / 1: unrestricted).
  std::int64_t groups = 1;
  std::int64_t topk_groups = 1;
  bool operator==(const MoeArch&) const = default;
};

/// Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank == 0: not used.
struct MlaArch {
  std::int64_t q_lora_rank = 0;  ///< 0: Q projected directly from the hidden state
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_dim = 0;  ///< per head, the part of Q/K without rotary embedding
  std::int64_t qk_rope_dim = 0;  ///< per head, the decoupled rotary part (K's is shared by all heads)
  std::int64_t v_dim = 0;        ///< per head, V's width
  bool operator==(const MlaArch&) const = default;
};

struct ModelArch {
  std::string id;          ///< catalog id (file stem)
  std::string model_type;  ///< HF `model_type`
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t ffn = 0;  ///< dense MLP intermediate size (MoE models: their dense layers' MLP, or 0)
  std::int64_t vocab = 0;
  std::int64_t max_positions = 0;
  bool tied_embeddings = false;
  bool learned_positions = false;  ///< GPT-2/3: a position-embedding table of max_positions x hidden
  bool qkv_bias = false;           ///< Qwen2: biases on Q, K, V projections
  bool linear_bias = false;        ///< GPT-2/3: biases on every linear layer
  bool hidden_dropout = false;     ///< GPT-2/3 train with dropout masks after attention and MLP
  /// Dropout on the attention probabilities (GPT-2/3's attn_pdrop): costs memory traffic only
  /// when attention is not fused (flash attention applies it in registers).
  bool attention_dropout = false;
  bool o_bias = false;              ///< a bias on the attention output projection (Llama-style attention_bias, gpt-oss)
  bool qk_norm = false;             ///< Qwen3: RMS norm on each head's Q and K (head_dim weights each)
  bool attention_sinks = false;     ///< gpt-oss: one learned sink logit per head in every softmax
  std::int64_t sliding_window = 0;  ///< window of the sliding-window layers (0: none)
  Activation activation = Activation::kSwiGlu;
  NormKind norm = NormKind::kRms;
  MoeArch moe;
  MlaArch mla;
  /// Multi-token prediction modules (DeepSeek-V3: 1), trained beside the model and usable as a
  /// draft in serving; not part of `params_total` (published totals leave them out).
  std::int64_t mtp_layers = 0;
  /// The kind of every decoder layer (empty: every layer is a dense, full-attention layer).
  std::vector<LayerKind> kinds;

  bool operator==(const ModelArch&) const = default;

  /// The kind of decoder layer `layer` (0-based).
  [[nodiscard]] LayerKind layer_kind(std::int64_t layer) const;
  /// Parameters of one decoder layer of `kind` (attention, feed-forward, norms, biases); with
  /// `active`, only what one token uses (its top-k routed experts, not all of them).
  [[nodiscard]] std::int64_t params_of_kind(LayerKind kind, bool active = false) const;
  /// Parameters of one dense full-attention decoder layer (the only kind of a dense model).
  [[nodiscard]] std::int64_t params_per_layer() const { return params_of_kind({}); }
  /// Attention parameters of one layer of `kind` (projections, their biases and norms, sinks).
  [[nodiscard]] std::int64_t attention_params(AttentionKind kind) const;
  /// One routed expert's parameters.
  [[nodiscard]] std::int64_t expert_params() const;
  [[nodiscard]] bool is_moe() const { return moe.experts > 0; }
  /// Token (and position) embedding parameters.
  [[nodiscard]] std::int64_t params_embedding() const;
  /// LM-head parameters (0 when tied to the embedding).
  [[nodiscard]] std::int64_t params_lm_head() const;
  /// Everything: embeddings + layers + final norm + LM head (MTP modules apart, as published).
  [[nodiscard]] std::int64_t params_total() const;
  /// What one token uses: params_total less the routed experts it is not sent to.
  [[nodiscard]] std::int64_t params_active() const;
  /// The MTP modules: per module two norms, the (2 hidden -> hidden) projection, one decoder layer
  /// of the model's last kind and the output norm (embedding and head are shared with the model).
  [[nodiscard]] std::int64_t params_mtp() const;
  [[nodiscard]] std::int64_t q_width() const { return heads * head_dim; }
  [[nodiscard]] std::int64_t kv_width() const { return kv_heads * head_dim; }
};

}  // namespace cs::models
