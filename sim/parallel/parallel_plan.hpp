#pragma once
#include <vector>

namespace cs::plan {

/// How a training step is split over GPUs. Rank r sits on GPU r; TP is innermost (consecutive
/// ranks, so a TP group shares the fastest links), then DP.
enum class PipelineSchedule { kOneFOneB, kGpipe };
enum class Recompute { kNone, kSelective, kFull };

struct ParallelPlan {
  int tp = 1;
  int dp = 1;
  int pp = 1;
  int vpp = 1;      ///< model chunks per pipeline stage (interleaved 1F1B when > 1)
  int cp = 1;       ///< context parallelism: the sequence split over CP ranks
  bool sp = false;  ///< sequence parallelism inside each TP group
  int zero = 0;     ///< 0 or 1 (ZeRO-1: optimizer state sharded over DP)
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  Recompute recompute = Recompute::kNone;

  [[nodiscard]] int gpus() const { return tp * cp * dp * pp; }
  /// Replicas of the model's weights within a stage: DP x CP (gradients are reduced over both).
  [[nodiscard]] int dpcp() const { return dp * cp; }
  /// Placement: TP innermost, then CP, then DP, then PP: rank = (stage * DP*CP + d) * TP + tp, with
  /// d = dp * CP + cp.
  [[nodiscard]] int rank(int stage, int d, int t) const { return (stage * dpcp() + d) * tp + t; }
  [[nodiscard]] int tp_rank(int rank) const { return rank % tp; }
  [[nodiscard]] int dp_rank(int rank) const { return rank / tp % dpcp() / cp; }
  [[nodiscard]] int pp_stage(int rank) const { return rank / (tp * dpcp()); }
  /// Every TP group (ranks in ring order), and every DP group.
  [[nodiscard]] std::vector<std::vector<int>> tp_groups() const;
  [[nodiscard]] std::vector<std::vector<int>> dp_groups() const;
  bool operator==(const ParallelPlan&) const = default;
};

}  // namespace cs::plan
