#pragma once
#include <array>
#include <string>
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
  /// Placement order, innermost first (a permutation of tp, cp, dp, pp); the default puts TP
  /// innermost inside a node, then CP, DP and PP.
  std::array<char, 4> order{'t', 'c', 'd', 'p'};
  /// The rank of (pipeline stage, d = dp * CP + cp, tensor rank t) under `order` (mixed radix).
  [[nodiscard]] int rank(int stage, int d, int t) const;
  /// Every TP group (ranks in ring order), and every DP group.
  [[nodiscard]] std::vector<std::vector<int>> tp_groups() const;
  [[nodiscard]] std::vector<std::vector<int>> dp_groups() const;
  bool operator==(const ParallelPlan&) const = default;
  /// Parses "tp-cp-dp-pp" style orders; false if it is not a permutation of the four.
  [[nodiscard]] static bool parse_order(const std::string& text, std::array<char, 4>& out);
};

}  // namespace cs::plan
