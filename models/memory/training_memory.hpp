#pragma once
#include "models/llm/model_arch.hpp"
#include "models/ops/layer_ops.hpp"
#include "models/ops/recompute.hpp"

namespace cs::models {

/// What one GPU holds during a training step, in bytes.
struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double other = 0;
  double total = 0;
  double capacity = 0;
  [[nodiscard]] bool fits() const { return total <= capacity; }
  bool operator==(const MemoryBreakdown&) const = default;
};

/// How a GPU's share of the model is split: expert-parallel groups divide the routed experts.
struct ExpertSplit {
  int ep = 1;
  int etp = 1;
  int slots = 0;  ///< expert copies per GPU (0: experts / EP)
};

/// Parameters of one decoder layer held by one GPU: the dense part (attention split TP ways, norms
/// and row-parallel biases replicated; in a MoE layer the router replicated on every rank and the
/// shared experts split TP ways, as Megatron-core's shared-expert MLP) and the routed experts (the GPU's expert slots,
/// each split ETP ways). Gradients of the dense part are reduced over DP x CP, of the experts over expert-DP.
struct LayerParams {
  double dense = 0;
  double expert = 0;
};
/// Attention parameters of one layer on one TP rank (projections, their biases and norms, sinks).
[[nodiscard]] double attention_params_per_gpu(const ModelArch& m, AttentionKind kind, int tp);
[[nodiscard]] LayerParams layer_params_per_gpu(const ModelArch& m, LayerKind kind, int tp,
                                               const ExpertSplit& experts = {});

/// Parameters held by one TP rank: matrices and vocab-parallel embeddings split TP ways; norms,
/// row-parallel biases and position embeddings replicated (every expert counted: EP 1).
[[nodiscard]] double params_per_gpu(const ModelArch& m, int tp);

/// Bytes of activations one decoder layer saves for backward, per micro-batch, on one GPU
/// (Korthikanti et al. 2022, "Reducing Activation Recomputation", Sec. 4, with flash attention:
/// the s^2 score terms become a per-head log-sum-exp; with SP the hidden-size tensors are split TP
/// ways). For GPT with dropout this is 34 s b h / t (+ masks) as in that paper's Eq. 2 without 5as/h.
/// MoE layers keep the router's input and fp32 scores, each routed pair's expert input, up output
/// and activation output (at the most loaded GPU's pair count) and the shared experts' tensors.
[[nodiscard]] double layer_activation_bytes(const ModelArch& m, const StepShape& s, LayerKind kind = {});
/// Embedding, final norm, LM head and loss tensors kept for backward (logits bf16 + fp32 softmax).
[[nodiscard]] double head_activation_bytes(const ModelArch& m, const StepShape& s);

struct TrainingMemoryInputs {
  StepShape shape;
  /// The ranks ZeRO / Megatron's distributed optimizer shards over: DP x CP (the gradients are
  /// reduced over both, so the optimizer state is split over both).
  int dp = 1;
  /// Bytes per gradient element: 4 for fp32 main gradients (Megatron-LM's default under bf16), 2
  /// when gradients are accumulated and reduced in bf16 (`training.grad_dtype`).
  double grad_bytes = 4;
  int zero = 0;                        ///< ZeRO stage 0-3: 1 shards optimizer state, 2 also gradients, 3 also weights
  double micro_batches_in_flight = 1;  ///< activations alive at the peak (1 without pipelining)
  double runtime_reserved = 0;         ///< bytes (profile)
  double comm_buffers = 0;             ///< bytes of communication buffers the run registers (TP overlap)
  double capacity = 0;                 ///< bytes (profile)
  /// Pipeline stage: its decoder layers and whether it holds the embedding / the LM head.
  /// Defaults describe the whole model on one stage.
  int stage_layers = -1;
  int first_layer = 0;  ///< the stage's first decoder layer (its layers' kinds)
  ExpertSplit experts;
  int edp = 1;  ///< expert-DP: what ZeRO divides the experts' optimizer state (and gradients) by
  bool first_stage = true;
  bool last_stage = true;
  int recompute = 0;         ///< 0 none, 1 selective (`modules`), 2 full (layer inputs only)
  RecomputeModules modules;  ///< selective recompute's modules
  /// Full recompute: block (only the first `recompute_layers` layers of each model chunk), else
  /// uniform in groups of `recompute_layers` (each group's input kept; one group re-run at a time).
  bool recompute_block = false;
  int recompute_layers = 1;
  int chunks = 1;           ///< model chunks of the stage (interleaved schedule)
  bool fp8_cache = false;   ///< DeepSeek's FP8 activation caching
  double moment_bytes = 4;  ///< bytes of each Adam moment (4 fp32, 2 bf16)
  bool ema_on_gpu = false;  ///< an fp32 weight average held with the optimizer state
};

/// Mixed-precision Adam as Megatron-LM runs it: bf16 weights (2 B/param; under FP8 the decoder's
/// linear weights also keep Transformer Engine's cached FP8 copy and its transpose, 2 B/param),
/// main gradients (`grad_bytes` per param), fp32 master weights + Adam m and v (4 + 2 x
/// `moment_bytes` B/param, and 4 more for a GPU-held weight average; divided by DP x CP under
/// ZeRO-1). Activations: each layer's saved tensors less what its recompute drops, times the
/// micro-batches in flight.
[[nodiscard]] MemoryBreakdown training_memory(const ModelArch& m, const TrainingMemoryInputs& in);

}  // namespace cs::models
