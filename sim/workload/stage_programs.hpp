#pragma once
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "models/memory/training_memory.hpp"
#include "models/ops/layer_ops.hpp"
#include "models/ops/tp_overlap.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/expert_placement.hpp"
#include "sim/workload/workload_graph.hpp"

namespace cs::workload {

/// One item of a virtual stage's forward or backward program, identical on every GPU of the
/// stage: a compute item (consecutive kernels merged) or a collective over a named process group.
struct ProgramItem {
  bool comm = false;
  GroupKind group = GroupKind::kTp;  ///< comm: the process group it runs over
  const char* label = "";
  Category category = Category::kForward;
  int layer = -1;
  double seconds = 0;       ///< compute
  SourceSeconds sources{};  ///< compute: `seconds` by where each kernel's time came from
  ClassSeconds classes{};   ///< compute: `seconds` by what each kernel does
  int kernels = 0;          ///< compute: the kernels merged into it (what the host launches)
  coll::CollectiveOp op = coll::CollectiveOp::kAllReduce;
  double bytes = 0;  ///< comm
  /// Parameters whose gradients are final after this item (in the last micro-batch's backward),
  /// reduced over the dense weights' replicas (DP x CP), and routed-expert parameters, reduced over
  /// expert-DP.
  double grad_params = 0;
  double expert_grad_params = 0;
  /// An all-to-all over EP whose destinations are not equally loaded: each EP rank's share of the
  /// bytes every rank sends (null: uniform).
  std::shared_ptr<const std::vector<double>> dest_share;
  /// An EP all-to-all across nodes runs rail-forwarded (DeepEP's normal kernels: a token crosses
  /// between nodes once per node, `node_copies` of its per-GPU bytes, then NVLink forwards it).
  bool rail_forwarded = false;
  double node_copies = 1.0;
  Stream stream = Stream::kCompute;
  std::vector<int> after;  ///< items of the same program this one also waits for
};

/// The programs of one virtual stage (a pipeline stage's model chunk): forward, backward, and the
/// last micro-batch's backward (the same items, marking when gradients are final).
struct StagePrograms {
  std::vector<ProgramItem> f, b, b_last;
  /// DualPipe only. A backward split in two (zero bubble): `bi` its input gradients and everything
  /// but the weight-gradient GEMMs, `w` and `w_last` those GEMMs. The forms run in an overlapped
  /// forward-backward pair: each EP all-to-all on its own stream under the other block's compute,
  /// and MoE-layer compute slowed by the SMs the all-to-all kernels take.
  std::vector<ProgramItem> bi, w, w_last, f_pair, b_pair, b_last_pair;
  double params = 0;         ///< trainable dense parameters of this virtual stage on one GPU
  double expert_params = 0;  ///< and routed-expert parameters
};

/// The decoder layers of each virtual stage: an even split of the model's layers over P x V
/// virtual stages (virtual stage v P + s is chunk v of stage s), the first taking one more when
/// the layers do not divide.
[[nodiscard]] std::vector<int> split_layers(int layers, int stages);

/// The trainable parameters of one GPU, split as the step needs them.
struct StageParams {
  double per_layer = 0;                                      ///< one dense decoder layer (LoRA: its adapters only)
  std::map<models::LayerKind, models::LayerParams> by_kind;  ///< one decoder layer of each kind the model has
  double outer = 0;      ///< embeddings, final norm and LM head when one stage holds them all
  double vocab = 0;      ///< one vocab-parallel embedding (or LM head) shard
  double positions = 0;  ///< learned position embeddings
  double final_norm = 0;
};
[[nodiscard]] StageParams stage_params(const scenario::Scenario& s);

/// The micro-batch shape every program of this step is built for (MoE: the routing's most loaded
/// GPU sets expert_load; `balanced` forces 1, what MFU counts).
[[nodiscard]] models::StepShape step_shape(const scenario::Scenario& s, bool balanced = false);

/// TP communication overlap as a run of `tp` ranks (with sequence parallelism `sp` or not) applies
/// it: only with TP > 1 and SP, so a derived run (the one-GPU baseline) has none.
[[nodiscard]] std::optional<models::TpOverlap> tp_overlap_of(const scenario::Scenario& s, int tp, bool sp);

/// Where the step's MoE layers send their tokens (a MoE model only).
[[nodiscard]] ExpertPlacement expert_placement(const scenario::Scenario& s);

/// The nodes an EP group spans when its GPUs split evenly over several nodes (what DeepEP's
/// forwarding needs); 1 otherwise.
[[nodiscard]] int ep_nodes(const scenario::Scenario& s);

/// How the scenario splits experts over GPUs.
[[nodiscard]] models::ExpertSplit expert_split(const scenario::Scenario& s);

/// Builds every virtual stage's programs. Each decoder layer contributes the program of its kind
/// (models::layer_forward/backward for that kind), so a model whose layers differ gets different
/// programs per stage; full recompute re-runs a layer's forward before its backward, selective
/// recompute its core attention (under ring attention only the compute steps: K/V blocks are not
/// passed again).
[[nodiscard]] std::vector<StagePrograms> build_stage_programs(const scenario::Scenario& s, const ComputeModel& compute);

/// Model FLOPs of one micro-batch over the whole model (forward + backward, no recomputation), and
/// what recomputation adds on the hardware: the forward that activation recompute re-runs and the
/// scores flash attention's backward re-computes.
struct MicroBatchFlops {
  double model = 0;
  double recompute = 0;
};
[[nodiscard]] MicroBatchFlops micro_batch_flops(const scenario::Scenario& s);

}  // namespace cs::workload
