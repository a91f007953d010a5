#pragma once
#include <cstdint>

namespace cs {

/// What a collective does (the vocabulary shared by the operator lists in models/, the process
/// groups in sim/parallel and the flow expansion in sim/collectives).
/// kShift: every rank sends `bytes` to the next rank of the group (a ring step, as ring attention
/// passes K/V blocks between context-parallel ranks). kAllToAll: every rank sends a block to every
/// other (expert dispatch and combine); its per-pair bytes may differ (a traffic matrix).
enum class CollectiveOp : std::uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv, kShift };

/// The process group a collective runs over, named by what it parallelises. Every kind is a
/// partition of the ranks of one pipeline stage (kPp: of one (TP, CP, DP) coordinate across stages).
/// - kTp: tensor parallel (attention and dense MLP); kCp: context parallel (the sequence split);
/// - kDp: pure data parallel (replicas of the same TP and CP rank);
/// - kDpCp: DP x CP, the ranks that hold the same dense weights: gradients are reduced and the
///   distributed optimizer shards over it (Megatron-core's "data parallel group with CP");
/// - kPp: the pipeline stages of one model replica;
/// - kEp: expert parallel (the ranks that split a MoE layer's experts between them);
/// - kExpertTp: tensor parallel inside each expert; kExpertDp: the ranks that hold the same experts
///   (expert gradients are reduced and expert optimizer state sharded over it).
/// The expert kinds re-partition the TP x CP x DP ranks of a stage as ETP x EP x EDP (Megatron-core's
/// expert rank layout), so attention and experts can be split differently on the same GPUs.
enum class GroupKind : std::uint8_t { kTp, kCp, kDp, kDpCp, kPp, kEp, kExpertTp, kExpertDp };

/// "tp", "cp", "dp", "dpcp", "pp", "ep", "etp", "edp".
[[nodiscard]] const char* group_kind_name(GroupKind k);

}  // namespace cs
