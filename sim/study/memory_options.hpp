#pragma once
#include <string>
#include <vector>

#include "models/memory/training_memory.hpp"
#include "sim/scenario/scenario.hpp"

namespace cs::study {

/// A change to a training plan that keeps less in GPU memory, as the frameworks make it: one of
/// Megatron-core's selective-recompute modules (added to those the plan has), full recompute, FP8
/// activation caching or bf16 Adam moments (DeepSeek-V3), with what it costs.
struct MemoryOption {
  std::string flags;           ///< how to ask for it: "--recompute-modules layernorm,moe_act"
  scenario::Scenario applied;  ///< the plan with it
  models::MemoryBreakdown memory;
  /// Compute it adds per step on a GPU of the first pipeline stage (recomputed forwards, casts),
  /// in seconds, from the same kernel times the simulation uses; 0 or less for free ones.
  double extra_compute_s = 0;
};

/// The options that apply to `s` (a module only where the model has its layer: moe, moe_act and
/// shared_experts for MoE models, mla_up_proj for MLA, mlp for dense feed-forwards), each measured
/// on its own on top of the plan, cheapest first (ties: least memory first).
/// `Which` narrows them for a search that needs only some (plan: the recompute modules that fit):
/// the others are not timed, which is most of the cost.
struct WhichOptions {
  bool modules_only = false;  ///< only the selective-recompute module sets
  bool fitting_only = false;  ///< only those that make `s` fit
};
[[nodiscard]] std::vector<MemoryOption> memory_options(const scenario::Scenario& s, WhichOptions which = {});

/// The cheapest of them that makes `s` fit, if any.
[[nodiscard]] const MemoryOption* cheapest_fitting(const std::vector<MemoryOption>& options);

}  // namespace cs::study
