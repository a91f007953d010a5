#pragma once
#include <cstdint>
#include <vector>

#include "models/llm/model_arch.hpp"
#include "sim/scenario/scenario.hpp"

namespace cs::workload {

/// Where a MoE layer's token-expert pairs land: each EP rank's share of them and what follows.
/// One placement serves every MoE layer and micro-batch of a step (one routing sample per step).
struct ExpertPlacement {
  std::vector<double> expert_share;  ///< per routed expert: its share of all pairs (sums to 1)
  std::vector<double> gpu_share;     ///< per EP rank (EP-group order): its share of all pairs (sums to 1)
  int slots_per_gpu = 0;             ///< expert copies each GPU holds ((experts + redundant) / EP)
  /// Per EP rank, the expert copies it holds: (expert, the share of all pairs that copy takes).
  std::vector<std::vector<std::pair<std::size_t, double>>> gpu_copies;
  /// The most loaded GPU's pairs over the mean (1: balanced): sets the pace of each MoE layer.
  [[nodiscard]] double imbalance() const;
};

/// The placement for `routing` with EP ranks, a micro-batch of `tokens` routed tokens per EP group
/// (uniform routing samples that many tokens' top-k). Experts are laid out in order, E / EP
/// consecutive experts per GPU; under zipf the popularity ranks are shuffled over experts with the
/// routing's seed; redundant experts (EPLB) copy the experts with the most pairs per copy, one
/// copy at a time, and every copy is placed, heaviest first, on the least loaded GPU with a free
/// slot.
[[nodiscard]] ExpertPlacement place_experts(const models::ModelArch& m, const scenario::MoeRouting& routing, int ep,
                                            double tokens);

/// The traffic matrix of an EP all-to-all whose every rank sends `bytes` (n x n, row-major, entry
/// (i, j) the bytes rank i sends rank j; n = gpu_share.size(), a placement's `gpu_share`). A
/// dispatch (tokens to their experts' GPUs) splits each rank's bytes by the destinations' shares,
/// so rank j receives gpu_share[j] of everyone's: the most loaded GPU `imbalance()` times the mean.
/// A combine (`returning`: the results back to their tokens' GPUs) is its transpose: rank i sends
/// gpu_share[i] x `bytes` to each rank, and every rank receives `bytes` back. Either way the
/// matrix holds n x `bytes` in all; equal shares give every pair bytes / n.
[[nodiscard]] std::vector<double> ep_alltoall_pairs(double bytes, const std::vector<double>& gpu_share,
                                                    bool returning = false);

}  // namespace cs::workload
