#pragma once
#include <optional>
#include <string>
#include <vector>

#include "calibration/profile/hardware_profile.hpp"
#include "models/llm/model_arch.hpp"
#include "models/ops/serving_ops.hpp"
#include "sim/network/cluster_spec.hpp"
#include "sim/network/fabric_spec.hpp"
#include "sim/scenario/scenario.hpp"

namespace cs::serving {

/// How a replica forms its batches (sim/serving's BatchScheduler implementations): static batches;
/// continuous batching under one token budget, running requests first (vLLM's); prefill steps
/// first, decode steps otherwise (SGLang's); continuous batching that admits a request only when
/// its blocks to completion fit, so nothing is evicted (TensorRT-LLM's GUARANTEED_NO_EVICT).
enum class Scheduler { kStatic, kContinuous, kPrefillFirst, kNoEvict };
/// How the KV cache's bytes follow from the GPU's memory: a fraction of what is left after weights,
/// activations and the runtime (TensorRT-LLM's free_gpu_memory_fraction, and clustersim's default);
/// a fraction of the whole GPU less those (vLLM's gpu_memory_utilization); a fraction of the memory
/// free before the weights load covering weights and KV (SGLang's mem_fraction_static).
enum class KvMemoryRule { kOfFree, kOfTotal, kOfFreeBeforeWeights };

/// The CUDA graphs an engine captures (engines' presets): the batch sizes, whether a smaller batch
/// is padded up to the next size (else only an exact size runs as a graph) and whether only
/// decode-only steps run as graphs. A step no graph takes runs eagerly.
struct CudaGraphPolicy {
  std::vector<std::int64_t> sizes;  ///< ascending; empty: every step as `cuda_graphs` says, unpadded
  std::int64_t largest = 0;         ///< the largest captured batch the sizes were generated up to
  bool padding = true;
  bool decode_only = true;
};

/// How a replica's KV pool reuses the KV of shared prompt prefixes (the engines' prefix caching:
/// vLLM's hashed blocks, SGLang's radix cache, TensorRT-LLM's block reuse; KvCache).
struct PrefixReuse {
  bool enabled = true;
  /// Whether a prefix is reused to its last token (SGLang's one-token pages, TensorRT-LLM's partial
  /// block reuse) or only in whole blocks (vLLM hashes full blocks).
  bool per_token = false;
};

/// Requests whose prompts start with one of `groups` shared prefixes of `tokens` tokens (a system
/// prompt, a few-shot preamble), each request's drawn uniformly with the scenario's seed.
struct SharedPrefix {
  std::int64_t tokens = 0;  ///< 0: no shared prefix
  std::int64_t groups = 1;
};

/// SGLang's admission estimate: a prefill is admitted when the KV pool holds its prompt plus, for
/// every running request and itself, min(tokens still to generate, clip) x ratio; the ratio starts
/// at `initial` and falls linearly to `floor` over `decay_steps` decode steps.
struct NewTokenRatio {
  double initial = 0.7, floor = 0.098;
  std::int64_t decay_steps = 600, clip = 4096;
};
enum class Router { kRoundRobin, kLeastLoaded, kPrefixAware };
enum class Arrivals { kQueued, kClosedLoop, kPoisson, kTrace };

/// A length: fixed, or drawn uniformly from [lo, hi] with the scenario's seed.
struct LengthDist {
  std::int64_t lo = 0, hi = 0;
  [[nodiscard]] double mean() const { return 0.5 * static_cast<double>(lo + hi); }
};

/// One request of a workload (a trace line, or drawn).
struct RequestSpec {
  double arrival_s = 0;
  std::int64_t input = 0;
  std::int64_t output = 0;
  int prefix_group = -1;  ///< the shared prefix its prompt starts with (-1: none)
  std::int64_t prefix_tokens = 0;
};

/// A second box kind beside the scenario's own, for a mixed fleet: colocated, its replicas serve
/// behind the same router, each inside one box of `cluster` (a box holds gpus / TP of them; they
/// never span boxes), timed by `profile`, priced by `offer`.
/// Disaggregated, the second kind is the decode pool's hardware, and `link` the fabric its boxes
/// and the prefill pool's share for the KV transfers (two rentals over Ethernet, or one fabric).
struct MixedKind {
  net::ClusterSpec cluster;
  calib::HardwareProfile profile;
  int replicas = 0;
  int tp = 1;
  std::optional<scenario::Offer> offer;
  std::optional<net::FabricSpec> link;
  [[nodiscard]] int per_box() const { return cluster.gpus / tp; }
  [[nodiscard]] int boxes() const { return (replicas + per_box() - 1) / per_box(); }
  [[nodiscard]] int gpus() const { return replicas * tp; }
};

/// An inference scenario, resolved (stage 3): everything the serving simulation needs.
struct ServingScenario {
  std::string name;
  /// Input the run does not use as written (a fabric for one node): warnings with the results.
  std::vector<std::string> warnings;
  models::ModelArch model;
  calib::HardwareProfile profile;
  net::ClusterSpec cluster;
  int gpus = 0;   ///< GPUs used: replicas x TP (x 2 pools when disaggregated), all nodes together
  int nodes = 1;  ///< copies of the cluster joined by `fabric`; more than one: every GPU of each is used
  std::optional<net::FabricSpec> fabric;
  int tp = 1;
  int pp = 1;  ///< pipeline stages per replica (layers split evenly; P batches in flight)
  int replicas = 1;
  int ep = 1;  ///< MoE: whole experts over the TP GPUs (EP = TP), or each expert split TP ways (1)
  /// Attention data parallelism: attention on each of a replica's TP GPUs over its own sequences
  /// (every head, its own KV cache), the feed-forward split over the TP GPUs (models::ServingShape).
  bool dp_attention = false;
  /// Under attention-DP with EP = TP: the MoE exchange as DeepEP's dispatch and combine
  /// all-to-alls (`parallel.moe_a2a` "deepep"), not an all-gather and a reduce-scatter.
  bool deepep = false;
  /// MoE: how each step's tokens pick their experts (balanced by default; `moe.routing`).
  scenario::MoeRouting routing;
  models::WeightFormat weights = models::WeightFormat::kBf16;
  double kv_bytes = 2;  ///< bf16 2, fp8 1
  /// FP8 weights: activations quantised with the checkpoint's static per-tensor scales
  /// (`quantization.activation_scales` "static"), not dynamic ones.
  bool static_fp8_scales = false;
  Scheduler scheduler = Scheduler::kContinuous;
  Router router = Router::kRoundRobin;
  std::int64_t max_batch = 256;
  /// SGLang: the sequence cap follows from the KV pool's size when the run knows it
  /// (simulate_serving; min(clamp(pool tokens / context x 512, 2048, 4096), pool tokens / 2)).
  bool max_batch_from_kv_pool = false;
  std::int64_t max_tokens = 8192;
  std::int64_t chunked_prefill = 0;  ///< 0: off; else the most prompt tokens of one sequence per step
  double kv_fraction = 0.9;
  KvMemoryRule kv_rule = KvMemoryRule::kOfFree;
  std::int64_t block_size = 16;
  /// Prefix caching (`engine.prefix_caching`, on in all three engines by default).
  PrefixReuse prefix_reuse;
  /// Prefix caching as the replicas' KV pools run it: static batches (TensorRT-LLM 0.9's
  /// gptSession) reuse none.
  [[nodiscard]] PrefixReuse reuses_prefixes() const {
    return {prefix_reuse.enabled && scheduler != Scheduler::kStatic, prefix_reuse.per_token};
  }
  /// The engine preset the limits came from (scenarios/engines/<id>.json; "": clustersim's own).
  std::string engine;
  /// Continuous batching: whether waiting requests are admitted in a step that preempted (vLLM: no).
  bool admit_after_preempt = true;
  /// Prefill-first: the most new prompt tokens of one prefill step (SGLang max_prefill_tokens).
  std::int64_t max_prefill_tokens = 16384;
  NewTokenRatio new_token_ratio;
  CudaGraphPolicy graphs;
  /// MTP speculative decoding (DeepSeek-V3/R1's multi-token-prediction module as a one-token
  /// draft): the chance the draft token is accepted; 0: off.
  double mtp_acceptance = 0;
  bool cuda_graphs = true;
  /// One-node TP all-reduces run as the engine's own all-reduce kernels, timed by the kernel
  /// tables' custom all-reduce rows (TensorRT-LLM's AllReduce; workload::ExecutorOptions).
  bool custom_allreduce = false;
  Arrivals arrivals = Arrivals::kQueued;
  double rate = 0;  ///< requests/s (Poisson)
  std::int64_t concurrency = 0;
  std::int64_t requests = 0;
  LengthDist input, output;
  SharedPrefix shared_prefix;  ///< drawn workloads' shared prompt prefixes (`workload.shared_prefix`)
  std::uint64_t seed = 1;
  std::vector<RequestSpec> trace;
  std::optional<double> slo_ttft_s, slo_tpot_s;
  int prefill_replicas = 0, decode_replicas = 0;  ///< disaggregation (both > 0), else 0
  int prefill_tp = 0, decode_tp = 0;              ///< each pool's TP (0: the scenario's TP)
  int prefill_pp = 0, decode_pp = 0;              ///< each pool's PP (0: the scenario's PP)
  /// Each pool's EP: 1 (each expert split TP ways) or the pool's TP (whole experts over its GPUs);
  /// 0: as the scenario says, i.e. the pool's own TP when the scenario's EP > 1, else 1. Large-EP
  /// deployments size the pools apart (SGLang's prefill EP32 on 4 nodes, decode EP72 on 9).
  int prefill_ep = 0, decode_ep = 0;
  [[nodiscard]] int replica_pp(int i) const {
    if (prefill_replicas == 0) return pp;
    return i < prefill_replicas ? (prefill_pp ? prefill_pp : pp) : (decode_pp ? decode_pp : pp);
  }
  /// TP of replica i (the pools may differ).
  [[nodiscard]] int replica_tp(int i) const {
    if (prefill_replicas == 0) return tp;
    return i < prefill_replicas ? (prefill_tp ? prefill_tp : tp) : (decode_tp ? decode_tp : tp);
  }
  /// EP of replica i: the pool's own, else its TP when the scenario spreads experts (EP > 1).
  [[nodiscard]] int replica_ep(int i) const {
    if (prefill_replicas == 0) return ep;
    const int own = i < prefill_replicas ? prefill_ep : decode_ep;
    if (own > 0) return own;
    return ep > 1 ? replica_tp(i) : 1;
  }
  /// A second box kind's replicas (after the scenario's own), when the fleet is mixed.
  std::optional<MixedKind> mix;
  /// Every replica: both pools when disaggregated, both kinds when mixed.
  [[nodiscard]] int replica_count() const {
    if (prefill_replicas > 0) return prefill_replicas + decode_replicas;
    return replicas + (mix ? mix->replicas : 0);
  }
  /// Every GPU the run uses (the second kind's after the scenario's own).
  [[nodiscard]] int all_gpus() const { return gpus + (mix ? mix->gpus() : 0); }
  /// Whether replica i is of the second box kind.
  [[nodiscard]] bool mixed_replica(int i) const { return mix && i >= first_mixed(); }
  /// The first second-kind replica (disaggregated: the first decode replica).
  [[nodiscard]] int first_mixed() const { return prefill_replicas > 0 ? prefill_replicas : replicas; }
  /// The scenario as replica i runs it: its pool's TP, PP and EP in place of the scenario's; a
  /// second-kind replica on its own box, profile and offer.
  [[nodiscard]] ServingScenario replica(int i) const {
    ServingScenario mine = *this;
    mine.tp = replica_tp(i);
    mine.pp = replica_pp(i);
    mine.ep = replica_ep(i);
    if (mixed_replica(i)) {
      mine.cluster = mix->cluster;
      mine.profile = mix->profile;
      mine.offer = mix->offer;
      mine.tp = mix->tp;
      mine.pp = 1;
      mine.ep = ep > 1 ? mix->tp : 1;
      mine.nodes = 1;
      mine.fabric.reset();
      mine.replicas = mix->replicas;
      mine.gpus = mix->gpus();
      mine.mix.reset();
    }
    return mine;
  }
  std::optional<scenario::Offer> offer;
  bool allow_oom = false;
};

}  // namespace cs::serving
