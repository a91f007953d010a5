#pragma once
#include <compare>
#include <cstdint>
#include <string>

namespace cs::models {

enum class Activation { kSwiGlu, kGelu };

/// The feed-forward block of a decoder layer. Dense models have one kind; the mixture-of-experts
/// families add theirs (issue 12), each with its own program of ops in models/ops.
enum class FeedForwardKind : std::uint8_t { kDense };

/// What one decoder layer is. A model is a sequence of layer kinds (`ModelArch::layer_kind`);
/// layers of one kind share one program of ops, so a step builder builds each kind's program once.
struct LayerKind {
  FeedForwardKind ffn = FeedForwardKind::kDense;
  auto operator<=>(const LayerKind&) const = default;
};
enum class NormKind { kRms, kLayer };

/// A dense decoder-only transformer, read from a Hugging Face `config.json` (Llama/Qwen2 style
/// or GPT-2/3 style). Every field is as the config states it; nothing is guessed.
struct ModelArch {
  std::string id;          ///< catalog id (file stem)
  std::string model_type;  ///< HF `model_type`
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t ffn = 0;  ///< MLP intermediate size
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
  Activation activation = Activation::kSwiGlu;
  NormKind norm = NormKind::kRms;

  bool operator==(const ModelArch&) const = default;

  /// The kind of decoder layer `layer` (0-based).
  [[nodiscard]] LayerKind layer_kind(std::int64_t layer) const;
  /// Parameters of one decoder layer (attention, MLP, norms, biases).
  [[nodiscard]] std::int64_t params_per_layer() const;
  /// Token (and position) embedding parameters.
  [[nodiscard]] std::int64_t params_embedding() const;
  /// LM-head parameters (0 when tied to the embedding).
  [[nodiscard]] std::int64_t params_lm_head() const;
  /// Everything: embeddings + layers + final norm + LM head.
  [[nodiscard]] std::int64_t params_total() const;
  [[nodiscard]] std::int64_t q_width() const { return heads * head_dim; }
  [[nodiscard]] std::int64_t kv_width() const { return kv_heads * head_dim; }
};

}  // namespace cs::models
