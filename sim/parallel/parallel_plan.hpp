#pragma once
#include <vector>

namespace cs::plan {

/// How a training step is split over GPUs. Rank r sits on GPU r; TP is innermost (consecutive
/// ranks, so a TP group shares the fastest links), then DP.
struct ParallelPlan {
  int tp = 1;
  int dp = 1;
  bool sp = false;  ///< sequence parallelism inside each TP group
  int zero = 0;     ///< 0 or 1 (ZeRO-1: optimizer state sharded over DP)

  [[nodiscard]] int gpus() const { return tp * dp; }
  [[nodiscard]] int tp_rank(int rank) const { return rank % tp; }
  [[nodiscard]] int dp_rank(int rank) const { return rank / tp; }
  /// Every TP group (ranks in ring order), and every DP group.
  [[nodiscard]] std::vector<std::vector<int>> tp_groups() const;
  [[nodiscard]] std::vector<std::vector<int>> dp_groups() const;
  bool operator==(const ParallelPlan&) const = default;
};

}  // namespace cs::plan
