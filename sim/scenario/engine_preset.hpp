#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario/serving_scenario.hpp"

namespace cs::serving {

/// The limits an engine ships with for one kind of GPU (the first tier a GPU matches applies).
struct EngineTier {
  double min_memory_gib = 0;
  int min_tp = 1;
  std::string exclude_gpu_name;  ///< a tier not for GPUs whose profile id contains this ("" none)
  std::int64_t max_tokens = 8192, max_batch = 256, chunked_prefill = 0, graph_largest = 0;
};

/// A range of captured CUDA-graph batch sizes: from, from + step, ... up to `to`; or with `times`
/// > 1, from, from x times, ... (TensorRT-LLM's powers of two).
struct GraphRange {
  std::int64_t from = 1, to = 1, step = 1, times = 1;
};

/// SGLang's reserved memory (MiB), from which mem_fraction_static follows.
struct ReservedMemoryRule {
  double base = 0, per_chunk_token = 0, min_chunk = 0, per_graph_batch = 0, per_gpu_over_8 = 0, floor_above_60gib = 0;
};

/// An engine's defaults as one data file gives them (scenarios/engines/<id>.json), each with its
/// source in the file: scheduler policy, limits per GPU tier, KV memory rule, block size, graphs.
struct EnginePreset {
  std::string id, engine, version;
  Scheduler policy = Scheduler::kContinuous;
  bool admit_after_preempt = true;
  std::int64_t max_prefill_tokens = 16384;
  NewTokenRatio new_token_ratio;
  bool max_batch_from_kv_pool = false;  ///< SGLang: max running requests from the KV pool's size
  std::vector<EngineTier> tiers;
  KvMemoryRule kv_rule = KvMemoryRule::kOfFree;
  double kv_fraction = 0.9;
  ReservedMemoryRule reserved;  ///< kv_rule kOfFreeBeforeWeights: how the fraction is computed
  std::int64_t block_size = 16;
  std::vector<GraphRange> graph_ranges;
  /// The sizes when padding is on, where the engine's generator makes another list (TensorRT-LLM);
  /// empty: `graph_ranges` either way.
  std::vector<GraphRange> graph_padded_ranges;
  /// The largest size is captured too when the ranges miss it (TensorRT-LLM appends its max).
  bool graph_with_largest = false;
  bool graph_padding = true, graph_decode_only = true;
  /// TP all-reduces within a node as the tables' custom all-reduce (TensorRT-LLM's own kernels).
  bool custom_allreduce = false;
  /// Prefix caching as the engine ships it (off for a preset that does not say).
  PrefixReuse prefix_reuse{false, false};
};

}  // namespace cs::serving
