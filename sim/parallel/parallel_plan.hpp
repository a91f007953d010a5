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
  bool sp = false;  ///< sequence parallelism inside each TP group
  int zero = 0;     ///< 0 or 1 (ZeRO-1: optimizer state sharded over DP)
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  Recompute recompute = Recompute::kNone;

  [[nodiscard]] int gpus() const { return tp * dp * pp; }
  /// Placement: TP innermost, then DP, then PP: rank = (pp_stage * DP + dp) * TP + tp.
  [[nodiscard]] int rank(int stage, int d, int t) const { return (stage * dp + d) * tp + t; }
  [[nodiscard]] int tp_rank(int rank) const { return rank % tp; }
  [[nodiscard]] int dp_rank(int rank) const { return rank / tp % dp; }
  [[nodiscard]] int pp_stage(int rank) const { return rank / (tp * dp); }
  /// Every TP group (ranks in ring order), and every DP group.
  [[nodiscard]] std::vector<std::vector<int>> tp_groups() const;
  [[nodiscard]] std::vector<std::vector<int>> dp_groups() const;
  bool operator==(const ParallelPlan&) const = default;
};

}  // namespace cs::plan
