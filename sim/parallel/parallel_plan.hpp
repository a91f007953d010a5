#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/comm_kinds.hpp"

namespace cs::plan {

enum class PipelineSchedule { kOneFOneB, kGpipe, kDualPipe };
/// The schedule's name as scenario files and the JSON write it ("1f1b", "gpipe", "dualpipe").
[[nodiscard]] const char* schedule_name(PipelineSchedule schedule);
enum class Recompute { kNone, kSelective, kFull };
/// Full recompute's layers (Megatron --recompute-method): uniform checkpoints every layer in groups
/// of `recompute_layers` (each group's input kept, the group re-run as one); block recomputes only
/// the first `recompute_layers` layers of each pipeline stage's model chunk.
enum class RecomputeMethod { kUniform, kBlock };

/// A rank's coordinates: pipeline stage, d = dp index x CP + cp index, tensor rank t.
struct Coords {
  int stage = 0;
  int d = 0;
  int t = 0;
  bool operator==(const Coords&) const = default;
};

/// How a step is split over GPUs. Rank r sits on GPU r. The dense part of the model is split
/// TP x CP x DP x PP (placed by `order`, TP innermost by default so a TP group shares the fastest
/// links); MoE layers re-split each stage's TP x CP x DP ranks as ETP x EP x EDP (expert tensor
/// parallel innermost, then expert parallel, then expert data parallel, as Megatron-core lays
/// them out), so EP groups take consecutive ranks of the stage's dense layout.
struct ParallelPlan {
  int tp = 1;
  int dp = 1;
  int pp = 1;
  int vpp = 1;      ///< model chunks per pipeline stage (interleaved 1F1B when > 1)
  int cp = 1;       ///< context parallelism: the sequence split over CP ranks
  int ep = 1;       ///< expert parallelism: a MoE layer's experts split over EP ranks
  int etp = 1;      ///< tensor parallelism inside each expert
  bool sp = false;  ///< sequence parallelism inside each TP group
  /// ZeRO stage 0-3: 1 shards the optimizer state over DP x CP (Megatron's distributed optimizer),
  /// 2 also the gradients, 3 also the weights (gathered per layer as FSDP does).
  int zero = 0;
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  Recompute recompute = Recompute::kNone;
  /// Selective recompute's modules (models::RecomputeModules bits; core_attn alone when
  /// `recompute` is selective and none were named).
  std::uint8_t recompute_modules = 0;
  RecomputeMethod recompute_method = RecomputeMethod::kUniform;
  int recompute_layers = 1;

  [[nodiscard]] int gpus() const { return tp * cp * dp * pp; }
  /// Replicas of the dense weights within a stage: DP x CP (gradients are reduced over both).
  [[nodiscard]] int dpcp() const { return dp * cp; }
  /// Ranks of one pipeline stage.
  [[nodiscard]] int stage_ranks() const { return tp * cp * dp; }
  /// Expert data parallelism: the stage's ranks holding the same experts (stage_ranks / (ETP x EP)).
  [[nodiscard]] int edp() const { return stage_ranks() / (etp * ep); }
  /// Placement order, innermost first (a permutation of tp, cp, dp, pp); the default puts TP
  /// innermost inside a node, then CP, DP and PP.
  std::array<char, 4> order{'t', 'c', 'd', 'p'};
  /// The rank of (pipeline stage, d = dp * CP + cp, tensor rank t) under `order` (mixed radix).
  [[nodiscard]] int rank(int stage, int d, int t) const;
  /// The inverse of `rank`.
  [[nodiscard]] Coords coords(int rank) const;
  /// The group of kind `kind` that holds `rank`, in ring order (ascending coordinate along the
  /// group's dimension). Requires ETP x EP to divide the stage's ranks for the expert kinds.
  [[nodiscard]] std::vector<int> group(GroupKind kind, int rank) const;
  /// The group's size for any rank.
  [[nodiscard]] int group_size(GroupKind kind) const;
  bool operator==(const ParallelPlan&) const = default;
  /// Parses "tp-cp-dp-pp" style orders; false if it is not a permutation of the four.
  [[nodiscard]] static bool parse_order(const std::string& text, std::array<char, 4>& out);
};

}  // namespace cs::plan
