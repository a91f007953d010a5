#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "models/llm/model_arch.hpp"
#include "sim/core/comm_kinds.hpp"

namespace cs::models {

/// kVectorFlops: work on CUDA cores (not tensor cores), at the profile's fp32 rate.
enum class OpKind { kGemm, kAttentionForward, kAttentionBackward, kMemoryBound, kVectorFlops };

/// What a stretch of compute time was spent on, for the results' "compute by kernel" shares: dense
/// GEMMs (linear layers, LM head, router, shared experts), routed experts' grouped GEMMs, core
/// attention (forward and backward, fused or not), elementwise and reduction kernels (norms, activations, casts,
/// RoPE, loss, optimizer), the wait for the host to issue kernels beyond their own time (eager
/// training), and DeepEP's low-latency fixed work (serving's decode exchange).
enum class KernelClass { kGemm, kExpertGemm, kAttention, kElementwise, kHostBound, kExchangeFloor };
inline constexpr int kKernelClasses = 6;
/// "gemm", "expert_gemm", "attention", "elementwise", "host_bound", "deepep_floor".
[[nodiscard]] const char* kernel_class_name(KernelClass c);

/// Core attention's shape, so a measured attention table can time it: whole sequences of `seq`
/// tokens, causal (queries = keys), on one GPU's heads (or, serving, decode steps). `share` is the part of that whole
/// attention this op computes (context parallelism: 1/CP per rank, a ring step 1/CP of that).
/// batch 0: not described (the op stays analytic).
struct AttentionKey {
  double batch = 0, seq = 0;
  double heads = 0, kv_heads = 0;
  double qk_dim = 0, v_dim = 0;
  double window = 0;  ///< sliding window (0: full)
  bool mla = false;   ///< DeepSeek MLA in its multi-head (training and prefill) form
  double share = 1;
  /// Serving: decode attention (one new token per sequence over `context` cached tokens; `seq`
  /// unused; MLA in its absorbed form), and an FP8 KV cache (attention in FP8, as TensorRT-LLM runs
  /// it with an FP8 cache).
  bool decode = false;
  double context = 0;
  bool fp8 = false;
  /// Training's attention (its kernels, cuDNN's through Transformer Engine, are timed from a training
  /// table first when the profile has one).
  bool train = false;
  bool operator==(const AttentionKey&) const = default;
};

/// One kernel: its FLOPs and the HBM bytes it moves, on one GPU, for one micro-batch.
struct Op {
  std::string_view name;  ///< static label ("qkv_proj", "attention", "mlp_down.dgrad"...)
  OpKind kind = OpKind::kMemoryBound;
  double m = 0, n = 0, k = 0;  ///< GEMM shape (kind == kGemm); of each group for a grouped GEMM
  double flops = 0;
  double bytes = 0;
  /// Part of core attention (scores, softmax, dropout, probabilities x V): what selective
  /// recompute re-runs, and kept in 16-bit even under FP8 training.
  bool core_attention = false;
  /// A GEMM that stays 16-bit under FP8 training: Transformer Engine runs only the decoder's
  /// linear layers in FP8; the LM head and the MoE router keep bf16.
  bool keep_16bit = false;
  /// A grouped GEMM (MoE experts): `groups` problems of m x n x k run as one kernel, their tiles
  /// sharing the SMs' waves. 1: a plain GEMM.
  double groups = 1;
  /// The groups are experts fed by the router: each one's rows (m) vary around their mean.
  bool routed = false;
  /// A routed experts' GEMM (forward, dgrad or wgrad): counted apart in "compute by kernel".
  bool expert = false;
  /// A weight-gradient GEMM (x^T dy): nothing after it in the layer needs its output.
  bool weight_gradient = false;
  /// The share of the SMs the kernel runs on: below 1 when an overlapped collective's kernels hold
  /// the rest (TP communication overlap). Scales its matrix rate, not its FLOPs.
  double sm_share = 1;
  /// A fixed time (seconds) on top of the op's FLOPs and bytes: DeepEP's low-latency floor, which
  /// is no kernel of its own but the kernel's fixed work (serving's step programs add it as is).
  double fixed_s = 0;
  /// A low-precision GEMM (FP8 training under Transformer Engine, FP4 serving) whose input
  /// activation is quantised by a kernel of its own in this op list: a measured table's latency,
  /// which includes quantising the input inside the timed call, is charged without that part.
  bool input_cast_separately = false;
  /// An FP8 GEMM whose input is quantised with a static (calibrated) per-tensor scale, as FP8
  /// checkpoints serve (TensorRT Model Optimizer's, with an input_scale per linear layer): the
  /// dynamic scale's amax pass that a measured table's latency includes does not run.
  bool input_static_scale = false;
  AttentionKey attention = {};  ///< kAttentionForward/kAttentionBackward: the shape a table is keyed by
  bool operator==(const Op&) const = default;
};

/// The class an op's time counts under (a fixed-time op is DeepEP's floor).
[[nodiscard]] KernelClass kernel_class(const Op& op);

/// A collective between blocks of ops: what it does, over which process group (the plan resolves
/// the kind to the ranks), its size in the nccl-tests convention (all-reduce = the buffer,
/// all-gather = the output, reduce-scatter = the input, all-to-all = each rank's send buffer) and
/// its label in the breakdown and trace (static text: "tp.allreduce", "cp.kv_shift"...).
struct Comm {
  CollectiveOp op = CollectiveOp::kAllReduce;
  GroupKind group = GroupKind::kTp;
  const char* label = "";
  double bytes = 0;
  /// An all-to-all across nodes as DeepEP's normal kernels run it (rail-forwarded, the
  /// hierarchical algorithm): the fraction of the pair bytes that crosses between nodes (a token
  /// once per node, then NVLink to each GPU). 1: a plain all-to-all.
  double node_copies = 1;
  /// An expert all-to-all that brings results back to their tokens' GPUs (a combine): under uneven
  /// routing the loaded GPUs send its bytes rather than receive them. Serving reads it (training's
  /// step builder loads the destinations of every EP all-to-all alike).
  bool returning = false;
};

/// An item of a layer's program: an op, or (when `comm` is set) a collective.
struct Item {
  Op op;
  std::optional<Comm> comm = std::nullopt;
  /// A collective on its own stream that overlaps the ops after it: it starts once the op before
  /// it (in this list) is done. `tag` (> 0) names it for `wait`.
  bool async = false;
  int tag = 0;
  /// An op that also waits for the async collective with this tag (0: none).
  int wait = 0;
};

/// Tensor-parallel collectives (labels "tp.allreduce", "tp.allgather", "tp.reducescatter").
[[nodiscard]] Item tp_comm(CollectiveOp op, double bytes);

/// The shape of one micro-batch on one GPU.
struct StepShape {
  std::int64_t micro_batch = 1;
  std::int64_t seq = 0;
  int tp = 1;
  bool sp = false;          ///< sequence parallelism: norms/dropout on seq/tp tokens; AG + RS instead of AR
  double act_bytes = 2;     ///< bytes per activation element (bf16)
  double weight_bytes = 2;  ///< bytes per weight element used by the matmuls
  /// LoRA fine-tuning: rank of the adapters on every decoder linear layer (0: full training).
  /// The base weights are frozen: no weight gradients for them, only the adapters'.
  int lora_rank = 0;
  int cp = 1;  ///< context parallelism: this GPU holds seq / cp tokens of each sequence
  /// CP communication: ring attention (K/V blocks passed to the next CP rank, overlapped with the
  /// attention of the block in hand), or one all-gather of K/V before attention (Megatron-core).
  bool cp_ring = true;
  bool base_4bit = false;  ///< QLoRA: base weights stored in 4 bits, dequantised per use
  /// Attention as one fused flash-attention kernel (true), or unfused as Megatron-LM ran it before
  /// FlashAttention (2022): batched QK^T, a fused scale-mask-softmax, dropout and probabilities x V,
  /// with the b a s^2 score matrix written to and read from HBM.
  bool flash_attention = true;
  /// FP8 training as Transformer Engine runs it: the decoder's linear layers run FP8 GEMMs (inputs
  /// cast to FP8 with their amax, the casts' transposes kept for the weight gradient) and keep
  /// their inputs for backward in FP8; attention, norms, the LM head and everything else in bf16.
  bool fp8 = false;
  /// ... with current scaling (`tensorwise`): an amax pass (read 2 bytes per element) before every
  /// cast, and no FP8 output from the norms.
  bool fp8_current_scaling = false;
  /// DeepSeek-V3's FP8 activation caching: the activation functions' inputs kept for backward in
  /// FP8 (a cast after the GEMM that makes them, read back in backward).
  bool fp8_act_cache = false;
  /// Expert parallelism (MoE layers): experts split over EP ranks, each expert over ETP ranks.
  int ep = 1;
  int etp = 1;
  /// Routed token-expert pairs of the most loaded GPU of the EP group over the mean (1: balanced).
  /// It sets the pace of each MoE layer: every GPU waits for the slowest at the combine.
  double expert_load = 1;
  /// Distinct EP ranks a token's top-k experts live on (0: the expectation under uniform routing,
  /// `expected_dispatch_ranks`). A token is sent once per destination GPU, not once per expert.
  double dispatch_ranks = 0;
  double dispatch_bytes = 2;  ///< bytes per dispatched element (1: FP8 dispatch); combine is in act_bytes
  int expert_slots = 0;       ///< expert copies per GPU, redundant ones included (0: experts / EP)
  [[nodiscard]] double tokens() const { return static_cast<double>(micro_batch * seq) / cp; }
};

/// Expected distinct GPUs among `ep` (each holding experts / ep experts) that a token's `top_k`
/// distinct experts, drawn uniformly, live on: ep (1 - C(E - E/ep, k) / C(E, k)); E/ep may be
/// fractional (redundant copies filling the slots when ep does not divide E).
[[nodiscard]] double expected_dispatch_ranks(std::int64_t experts, std::int64_t top_k, int ep);

/// Where a token's top-k experts are, for a dispatch over `ep` GPUs split evenly over `nodes`
/// nodes: the expected distinct GPUs and distinct nodes. With group-limited routing whose groups
/// fall on nodes (DeepSeek-V3: 8 groups, top-4 groups, on EP spanning 8 nodes) a token's experts
/// come from its best `topk_groups` groups, so they sit on at most that many nodes
/// ("node-limited routing") and on fewer GPUs.
struct DispatchSpread {
  double gpus = 0;
  double nodes = 0;
};
[[nodiscard]] DispatchSpread dispatch_spread(const ModelArch& m, int ep, int nodes);

/// Bytes of one token in a DeepEP message: FP8 carries 1 byte per element and one fp32 scale per
/// 128 (DeepSeek-V3's fine-grained quantisation, as DeepEP's FP8 dispatch sends it); bf16 2 bytes.
[[nodiscard]] double deepep_token_bytes(const ModelArch& m, bool fp8);

/// Bytes one GPU sends in one MoE dispatch (its all-to-all send buffer, nccl-tests convention):
/// its tokens (b s / (CP TP)) x the distinct destination GPUs per token x hidden x dispatch bytes.
[[nodiscard]] double dispatch_send_bytes(const ModelArch& m, const StepShape& s);

/// LoRA adapter parameters of one decoder layer on one TP rank: A (in x r) and B (r x out) for
/// each of the q, k, v, o, gate, up and down projections, as PEFT attaches them.
[[nodiscard]] double lora_params_per_layer(const ModelArch& m, int tp, int rank);

/// Heads of each kind held by one TP rank (KV heads are replicated when fewer than TP ranks).
[[nodiscard]] std::int64_t q_heads_per_rank(const ModelArch& m, int tp);
[[nodiscard]] std::int64_t kv_heads_per_rank(const ModelArch& m, int tp);

/// The widths one TP rank works with, in elements (doubles for the cost arithmetic).
struct LayerDims {
  double tokens = 0;       ///< b * s
  double norm_tokens = 0;  ///< tokens the norms and residuals see (s/TP of them under SP)
  double hidden = 0;
  double q = 0;    ///< query width on this rank (heads x head dim)
  double kv = 0;   ///< K (or V) width on this rank
  double ffn = 0;  ///< MLP width on this rank
  double up = 0;   ///< MLP-up output width: 2 ffn for SwiGLU (gate and up), ffn for GELU
  double act_bytes = 2;
};
[[nodiscard]] LayerDims layer_dims(const ModelArch& m, const StepShape& s);

/// Elements of the attention score matrix one rank materialises per micro-batch without flash
/// attention: micro-batch x heads on this rank x queries (seq / CP) x keys (seq).
[[nodiscard]] double score_elements(const ModelArch& m, const StepShape& s);

/// Forward program of one decoder layer of `kind` (each kind has its own program). Attention: norm, QKV (GQA; MLA:
/// low-rank Q and KV projections and their up-projections), causal flash attention (in a sliding window for that
/// kind), output projection, TP all-reduce (or SP reduce-scatter/all-gather), residual. Dense feed-forward: norm, MLP
/// (SwiGLU or GELU), TP all-reduce, residual. MoE feed-forward: norm, router, permute, dispatch all-to-all over EP,
/// (ETP all-gather), the local experts as one grouped GEMM at the most loaded GPU's token count, (ETP
/// reduce-scatter), combine all-to-all, unpermute and weighted sum, shared experts, residual.
[[nodiscard]] std::vector<Item> layer_forward(const ModelArch& m, const StepShape& s, LayerKind kind = {});
/// Backward program of one decoder layer (reverse order; GEMMs as dgrad + wgrad; flash-attention
/// backward at 2.5x forward FLOPs: five matmuls against two).
[[nodiscard]] std::vector<Item> layer_backward(const ModelArch& m, const StepShape& s, LayerKind kind = {});
/// Two-batch overlap (DeepSeek's and SGLang's TBO): the layer's tokens as two halves whose programs
/// interleave, each EP all-to-all of one half running on its own stream under the other half's
/// compute. Every op and collective is halved (FLOPs, bytes); the EP all-to-alls become async
/// (tags from `first_tag` up) and the half's next op waits for its own.
[[nodiscard]] std::vector<Item> two_batch_overlap(const std::vector<Item>& items, int first_tag = 100);

/// Embedding lookup (forward) and its gradient scatter (backward).
[[nodiscard]] std::vector<Item> embedding_forward(const ModelArch& m, const StepShape& s);
[[nodiscard]] std::vector<Item> embedding_backward(const ModelArch& m, const StepShape& s);
/// Final norm, vocab-parallel LM head and cross-entropy loss (forward), and their backward.
[[nodiscard]] std::vector<Item> head_forward(const ModelArch& m, const StepShape& s);
[[nodiscard]] std::vector<Item> head_backward(const ModelArch& m, const StepShape& s);

/// Decoder linear-layer weight elements of one layer on one TP rank (what FP8 casts once per step).
[[nodiscard]] double linear_weight_elements(const ModelArch& m, const StepShape& s);

/// Flash attention's backward runs 2.5x its forward's FLOPs: the gradients of QK^T and PV (4
/// products, 2x the forward) and the scores re-computed from Q and K (1 more product: five matrix
/// products against the forward's two, FlashAttention-2, Dao 2023). Only the gradients' 2x are
/// model FLOPs.
inline constexpr double kFlashAttentionBackwardFlops = 2.5;
inline constexpr double kAttentionBackwardGradientFlops = 2.0;

/// Model FLOPs of one micro-batch on one GPU for forward + backward (GEMMs and attention;
/// element-wise work excluded), the numerator of MFU: no recomputation, so flash attention's
/// backward counts 2x its forward, not the 2.5x it runs.
[[nodiscard]] double model_flops(const std::vector<Item>& items);

/// The same ops' FLOPs as their kernels execute them (flash attention's backward at 2.5x): with
/// the recompute forward, the numerator of HFU.
[[nodiscard]] double executed_flops(const std::vector<Item>& items);

}  // namespace cs::models
