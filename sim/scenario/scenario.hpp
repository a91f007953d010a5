#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibration/profile/hardware_profile.hpp"
#include "models/llm/model_arch.hpp"
#include "sim/network/cluster_spec.hpp"
#include "sim/network/fabric_spec.hpp"
#include "sim/network/network_model.hpp"
#include "sim/parallel/parallel_plan.hpp"

namespace cs::scenario {

/// A rental offer (scenarios/offers/*.json): what is claimed and what it costs.
struct Offer {
  std::string id;
  std::string name;
  int gpus = 0;
  std::string gpu;
  std::string interconnect;
  std::string cluster;  ///< the cluster id that matches the claim
  double price = 0;
  std::string currency;
  double hours_per_period = 1;  ///< 1 for hourly prices, 720 (30 days) for monthly
  /// A second, hourly term beside a monthly price (`hourly_price`, same currency; 0: none): the
  /// break-even job length between the two is monthly price / hourly price hours.
  double hourly_price = 0;
  /// A multi-node offer: the fabric joining its boxes (a fabric id; "" when the offer names none)
  /// and the most boxes it rents (0: not stated).
  std::string fabric;
  int max_nodes = 0;
  /// A quoted range (the seed's enterprise cluster: "20-40% above" the 8x offers): `price` and
  /// `hourly_price` are its low end, these its top (0: a single price). Costs are reported at both.
  double price_max = 0;
  double hourly_price_max = 0;
  std::string source;
  [[nodiscard]] double price_per_hour() const { return price / hours_per_period; }
  [[nodiscard]] bool has_range() const { return price_max > 0; }
  /// The offer at the top of its range (itself when it quotes a single price).
  [[nodiscard]] Offer high() const {
    Offer o = *this;
    if (has_range()) {
      o.price = price_max;
      if (hourly_price_max > 0) o.hourly_price = hourly_price_max;
    }
    return o;
  }
  bool operator==(const Offer&) const = default;
};

/// How a MoE layer's tokens pick their experts, and how experts are placed (`moe` fields).
struct MoeRouting {
  /// balanced: every expert gets the same share (the forced-balance runs publish); uniform: each
  /// token draws top-k distinct experts uniformly at random, a finite batch's spread sampled with
  /// `seed`; zipf: expert popularity falls as rank^-S (experts shuffled over the GPUs with
  /// `seed`); file: a measured per-expert load histogram.
  enum class Kind : std::uint8_t { kBalanced, kUniform, kZipf, kFile };
  Kind kind = Kind::kBalanced;
  std::string text = "balanced";  ///< as written (reports)
  double zipf_exponent = 0;
  std::vector<double> loads;  ///< kFile: per expert, in the checkpoint's expert order
  std::uint64_t seed = 1;
  /// EPLB-style redundant experts: this many extra expert slots (over all EP ranks) hold copies
  /// of the most loaded experts, each copy taking an equal share of its expert's tokens.
  int redundant_experts = 0;
  bool fp8_dispatch = false;  ///< dispatch in FP8 (DeepSeek-V3); combine stays in bf16
  bool operator==(const MoeRouting&) const = default;
};

/// A scenario with every id resolved and every default filled (stage 3). Immutable once made.
struct Scenario {
  std::string name;
  std::string description;
  /// What the input asked that the run does not do as written, or does beyond its data (a fabric
  /// for one node; a sequence past the model's context): printed as warnings with the results.
  std::vector<std::string> warnings;
  models::ModelArch model;
  calib::HardwareProfile profile;
  net::ClusterSpec cluster;
  int gpus = 0;  ///< all GPUs: gpus_per_node x nodes
  int gpus_per_node = 0;
  int nodes = 1;
  std::optional<net::FabricSpec> fabric;
  plan::ParallelPlan plan;
  std::int64_t seq = 0;
  std::int64_t global_batch = 0;
  std::int64_t micro_batch = 1;
  calib::Dtype dtype = calib::Dtype::kBf16;
  /// Bytes per main-gradient element, held and reduced over DP: 4 (fp32, Megatron-LM's default
  /// under bf16) or 2 (`training.grad_dtype: "bf16"`, Megatron-core's grad_reduce_in_fp32 off).
  double grad_bytes = 4;
  /// FP8 current scaling (`training.fp8_recipe: "tensorwise"`, NeMo's FP8-CS): every tensor cast to
  /// FP8 is first read whole for its amax (the scale must be known before the cast writes), so a
  /// norm cannot write the FP8 copy itself either. Delayed scaling (false) takes the amax inside
  /// the cast, for the next step.
  bool fp8_current_scaling = false;
  double grad_bucket_params = 40e6;
  /// Data-parallel gradient buckets reduced under the last backward as each fills (Megatron
  /// --overlap-grad-reduce), or all after the whole backward (false).
  bool overlap_grad_reduce = true;
  /// DeepSeek-V3's FP8 activation caching (`training.activation_cache: "fp8"`): the attention
  /// output and the activation functions' inputs kept in FP8 for backward, with their casts.
  bool fp8_activation_cache = false;
  /// Bytes of each Adam moment (4: fp32; 2: bf16, `training.optimizer_dtype`); master weights fp32.
  double optimizer_moment_bytes = 4;
  /// An exponential moving average of the weights (fp32): none, on the GPU (sharded as the
  /// optimizer state, updated in its step) or in CPU memory (DeepSeek-V3: out of the GPU's memory
  /// and, updated asynchronously, out of its time).
  enum class Ema : std::uint8_t { kNone, kGpu, kCpu };
  Ema ema = Ema::kNone;
  net::NetworkModelKind network_model = net::NetworkModelKind::kFlow;
  /// `symmetry: "dp"`: simulate one data-parallel replica (all of its CP ranks); its data-parallel
  /// collectives still move every replica's flows. Exact when replicas never contend with each
  /// other outside those collectives; docs/performance.md measures the difference.
  bool dp_symmetry = false;
  std::optional<Offer> offer;
  bool allow_oom = false;
  int lora_rank = 0;   ///< LoRA adapters of this rank on a frozen base (0: full training)
  bool qlora = false;  ///< the frozen base in 4 bits
  /// Fused flash attention (default), or unfused attention that materialises the score matrix
  /// (Megatron-LM before 2022; `training.attention: "unfused"`).
  bool flash_attention = true;
  /// Context parallelism's K/V exchange: ring attention (default) or one all-gather.
  bool cp_ring = true;
  MoeRouting routing;
  /// MoE layers as two half-batches whose EP all-to-alls run under each other's compute.
  bool two_batch_overlap = false;
  /// Under two-batch overlap, the share of the GPU's SMs the communication kernels hold while
  /// compute runs beside them: MoE layers' compute runs at 1 - this of its rate.
  double overlap_comm_sm_fraction = 0;
  /// Tensor-parallel communication overlap (Megatron `--tp-comm-overlap`, Transformer Engine's
  /// userbuffers): SP's all-gathers and reduce-scatters run in chunks under the GEMMs they feed or
  /// drain. Needs TP > 1 and sequence parallelism.
  bool tp_comm_overlap = false;
  /// The share of the SMs its pipelined and bulk overlap kernels hold while GEMMs run beside them.
  double tp_overlap_comm_sm_fraction = 0;
  /// Micro-batches each DP replica runs per step (gradient accumulation).
  [[nodiscard]] std::int64_t micro_batches() const { return global_batch / (plan.dp * micro_batch); }
};

}  // namespace cs::scenario
