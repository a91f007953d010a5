#pragma once
#include "models/llm/model_arch.hpp"
#include "models/ops/layer_ops.hpp"

namespace cs::models {

/// How weights are stored and multiplied in serving. kFp4 is NVFP4 and kMxfp4 OCP MXFP4: E2M1
/// values in blocks of 16 and 32 with a shared scale (weight_format_bytes says the bytes).
enum class WeightFormat { kBf16, kFp8, kInt8, kInt4, kFp4, kMxfp4 };
[[nodiscard]] const char* weight_format_name(WeightFormat w);
/// Bytes per parameter, block scales included.
[[nodiscard]] double weight_format_bytes(WeightFormat w);
/// fp4 or mxfp4.
[[nodiscard]] bool is_fp4(WeightFormat w);

/// What one serving engine step (one forward pass over a mixed batch) contains, as the sums its
/// cost depends on. All counts are per replica (the TP group shares them).
struct StepMix {
  double tokens = 0;          ///< tokens through the layers: prefill chunk tokens + one per decoding sequence
  double sampled = 0;         ///< sequences that emit a token (LM head rows)
  double prefill_pairs = 0;   ///< sum over prefill chunks of new * (context before + (new + 1) / 2): causal QK pairs
  double decode_context = 0;  ///< sum over decoding sequences of their context length (QK pairs)
  double kv_read_tokens = 0;  ///< tokens of cached K/V read by attention (prefill context before + decode context)
  /// Sequences decoding and prefill chunks in the step, and the decode part of kv_read_tokens: how
  /// a measured attention table (keyed by batch and length) times each part.
  double decode_seqs = 0, prefill_seqs = 0, decode_kv_read = 0;
  /// The model's sliding window (0: none), and the pair and cache-read sums with each query's keys
  /// capped at the window (what sliding-window layers compute and read).
  double window = 0;
  double window_pairs = 0;
  double window_kv_read = 0;
  /// Rows the step's dense GEMMs and elementwise kernels run beyond its tokens: a CUDA graph
  /// captured for a larger batch runs at that size (the engine pads the batch up to it).
  double padding = 0;
  /// A decoding sequence whose cache (with this token) holds `context` tokens.
  void add_decode_context(double context);
  /// A prefill chunk of `chunk` tokens after `before` tokens already cached.
  void add_prefill_context(double before, double chunk);
  /// The same mix with every sum times `f` (one attention-DP rank's share of a balanced batch).
  [[nodiscard]] StepMix scaled(double f) const;
};

/// Where one step's routed token-expert pairs fall (set per step by the serving simulation from
/// the run's routing; the defaults are the balanced expectation).
struct StepRouting {
  /// The most loaded GPU's pairs over the mean (EP > 1; 1: balanced). It sets the MoE layer's pace.
  double load = 1;
  /// Distinct experts the step hits: under EP > 1 on the most loaded GPU, whole experts; under EP 1
  /// over the whole model (each GPU holds 1/TP of each). Below 0: uniform top-k's expectation
  /// (experts_hit) spread evenly.
  double hit = -1;
};

struct ServingShape {
  int tp = 1;
  /// MoE: routed experts spread whole over EP of the replica's TP GPUs (EP = TP), or split inside
  /// each expert TP ways (EP 1). Either way every GPU holds all tokens after attention's
  /// all-reduce, computes its share of the routed pairs, and the MLP's all-reduce combines them.
  int ep = 1;
  WeightFormat weights = WeightFormat::kBf16;
  /// The GPU has FP4 tensor cores (its profile has an fp4 matrix peak): fp4/mxfp4 weights run there
  /// (W4A4, activations quantised on the fly); without them they are weight-only, as int4.
  bool fp4_tensor_cores = false;
  /// FP8 weights served with static per-tensor activation scales, calibrated into the checkpoint
  /// (else computed per step: the measured tables' FP8 GEMMs as they were timed).
  bool static_fp8_scales = false;
  double kv_bytes = 2;  ///< bytes per cached K or V element (bf16 2, fp8 1)
  /// Attention data parallelism (SGLang's DP attention): each of the TP GPUs runs attention with
  /// every head over its own sequences (1/TP of the batch) and holds their KV cache alone; before
  /// the feed-forward the group all-gathers the tokens, after it reduce-scatters them back. The
  /// attention weights are whole on every GPU; the feed-forward stays split (TP, or EP = TP).
  bool dp_attention = false;
  /// Under attention-DP with EP = TP, the MoE layers' exchange as DeepEP's dispatch and combine
  /// (all-to-alls sending each token only to the GPUs holding its experts; shared experts whole on
  /// every GPU over its own tokens) instead of an all-gather and a reduce-scatter of every token.
  bool deepep = false;
  /// Under DeepEP, this step runs its low-latency kernels (a decode step: no prompt tokens), as
  /// DeepEP's docs recommend: every top-k copy straight to its expert's GPU, no deduplication, and
  /// each kernel's fixed floor (the profile's); prefill steps run the normal kernels.
  bool low_latency = false;
  double ll_dispatch_floor_s = 0;
  double ll_combine_floor_s = 0;
  /// Nodes the replica's GPUs span (the dispatch's node-limited routing; 1 inside a box).
  int nodes = 1;
  /// Expert copies per GPU under EP, redundant ones (EPLB) included (0: experts / EP).
  int expert_slots = 0;
  StepRouting routing = {};
  /// The TP degree attention runs at: 1 under attention-DP.
  [[nodiscard]] int attention_tp() const { return dp_attention ? 1 : tp; }
  /// The GEMMs run on the FP4 tensor cores (fp4/mxfp4 weights on a GPU that has them).
  [[nodiscard]] bool fp4_gemms() const;
  /// Weight-only: weights dequantised to bf16 on CUDA cores, multiplied on the bf16 tensor cores
  /// (int8, int4; fp4/mxfp4 without FP4 tensor cores, as vLLM's Marlin kernels run MXFP4 on Hopper).
  [[nodiscard]] bool weight_only() const;
};

/// One decoder layer of `kind` in a serving step, per GPU: GEMMs over the step's tokens with the
/// weights streamed once (weight-only formats add their dequantisation on CUDA cores; FP4 GEMMs
/// quantise their input activations first), KV-cache
/// append, attention over each sequence's context (prefill compute-bound, decode reading the
/// cache; sliding-window layers capped at the window; MLA prefill in its multi-head form and
/// decode in its absorbed form over the latent cache), and the two TP all-reduces. A MoE layer
/// reads only the experts the step's tokens hit (expected distinct experts of T tokens' top-k).
[[nodiscard]] std::vector<Item> serving_layer(const ModelArch& m, const StepMix& mix, const ServingShape& s,
                                              LayerKind kind = {});
/// The routed experts of a MoE layer in a serving step on one GPU (part of serving_layer): the
/// grouped up and down GEMMs over its pairs (the step's routing, `s.routing`), reading each expert
/// it hits once, and the activation between them.
[[nodiscard]] std::vector<Item> serving_routed_experts(const ModelArch& m, const StepMix& mix, const ServingShape& s);
/// Expected distinct experts `tokens` tokens hit with uniform top-k routing: E (1 - (1 - k/E)^T).
[[nodiscard]] double experts_hit(const ModelArch& m, double tokens);
/// Final norm, LM head over the sampled rows, and sampling.
[[nodiscard]] std::vector<Item> serving_head(const ModelArch& m, const StepMix& mix, const ServingShape& s);
/// DeepSeek's multi-token-prediction module drafting one token per decoding sequence (`mix`: its
/// positions): the next token's embedding and the last hidden state, each normed, concatenated and
/// projected (2h -> h), one decoder layer of the model's last kind, and the shared LM head.
[[nodiscard]] std::vector<Item> serving_mtp_module(const ModelArch& m, const StepMix& mix, const ServingShape& s);
/// Bytes of KV cache per token on one GPU of a TP group (all layers, K and V; MLA layers their
/// latent and rotary key, kv_lora_rank + qk_rope_head_dim values, replicated on every TP rank).
/// Under attention-DP: per token of the GPU's own sequences, every head.
/// Sliding-window layers are counted per token too; `kv_held_tokens` says how many tokens of a long
/// sequence those layers keep (the KV blocks a sequence holds are counted with it).
[[nodiscard]] double kv_bytes_per_token(const ModelArch& m, const ServingShape& s);
/// The share of those bytes in sliding-window layers (0 when the model has none).
[[nodiscard]] double kv_sliding_share(const ModelArch& m, const ServingShape& s);
/// The KV cache a sequence of `tokens` holds, in tokens of every layer: a sliding-window layer keeps
/// only the last `window` tokens (vLLM frees the blocks that fall out of the window), so a long
/// sequence of gpt-oss (half its layers on a 128-token window) holds about half the KV of a model
/// without windows. Rounded up to whole tokens.
[[nodiscard]] std::int64_t kv_held_tokens(std::int64_t tokens, double sliding_share, std::int64_t window);
/// Weight bytes on one GPU (embedding and LM head kept in bf16, as serving engines do).
[[nodiscard]] double serving_weight_bytes(const ModelArch& m, const ServingShape& s);

}  // namespace cs::models
