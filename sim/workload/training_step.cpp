#include "sim/workload/training_step.hpp"

#include "models/memory/training_memory.hpp"
#include "sim/core/check.hpp"

namespace cs::workload {

namespace {

/// One step of one GPU's program, identical on every GPU of a TP group.
struct ProgramItem {
  bool comm = false;
  std::string_view label;
  Category category = Category::kForward;
  int layer = -1;
  int micro = -1;
  double seconds = 0;  ///< compute
  coll::CollectiveOp op = coll::CollectiveOp::kAllReduce;
  double bytes = 0;         ///< comm
  double grad_params = 0;   ///< parameters whose gradients are final after this item
};

coll::CollectiveOp to_op(models::TpComm c) {
  switch (c) {
    case models::TpComm::kAllGather: return coll::CollectiveOp::kAllGather;
    case models::TpComm::kReduceScatter: return coll::CollectiveOp::kReduceScatter;
    default: return coll::CollectiveOp::kAllReduce;
  }
}

std::string_view tp_label(models::TpComm c) {
  switch (c) {
    case models::TpComm::kAllGather: return "tp.allgather";
    case models::TpComm::kReduceScatter: return "tp.reducescatter";
    default: return "tp.allreduce";
  }
}

/// Appends a block of ops: consecutive kernels merge into one compute item (their times add),
/// each TP collective becomes its own item.
void append(std::vector<ProgramItem>& prog, const std::vector<models::Item>& items, const ComputeModel& compute,
            std::string_view label, Category cat, int layer, int micro) {
  bool open = false;
  for (const auto& it : items) {
    if (it.comm != models::TpComm::kNone) {
      prog.push_back({true, tp_label(it.comm), Category::kTpComm, layer, micro, 0, to_op(it.comm), it.comm_bytes, 0});
      open = false;
      continue;
    }
    if (!open) {
      prog.push_back({false, label, cat, layer, micro, 0, coll::CollectiveOp::kAllReduce, 0, 0});
      open = true;
    }
    prog.back().seconds += compute.seconds(it.op);
  }
}

}  // namespace

TrainingStep build_training_step(const scenario::Scenario& s, const ComputeModel& compute) {
  const auto& m = s.model;
  const auto& plan = s.plan;
  models::StepShape shape;
  shape.micro_batch = s.micro_batch;
  shape.seq = s.seq;
  shape.tp = plan.tp;
  shape.sp = plan.sp;
  shape.act_bytes = static_cast<double>(calib::dtype_bytes(s.dtype));
  shape.weight_bytes = shape.act_bytes;

  const auto emb_f = models::embedding_forward(m, shape);
  const auto emb_b = models::embedding_backward(m, shape);
  const auto lay_f = models::layer_forward(m, shape);
  const auto lay_b = models::layer_backward(m, shape);
  const auto head_f = models::head_forward(m, shape);
  const auto head_b = models::head_backward(m, shape);
  const double flops_per_micro = models::model_flops(emb_f) + models::model_flops(emb_b) +
                                 static_cast<double>(m.layers) * (models::model_flops(lay_f) + models::model_flops(lay_b)) +
                                 models::model_flops(head_f) + models::model_flops(head_b);

  // Parameters (per GPU) whose gradients each part produces, for DP bucketing.
  const double total_params = models::params_per_gpu(m, plan.tp);
  auto no_layers = m;
  no_layers.layers = 0;
  const double outer_params = models::params_per_gpu(no_layers, plan.tp);
  const double per_layer_params = (total_params - outer_params) / static_cast<double>(m.layers);

  const auto micro = s.micro_batches();
  std::vector<ProgramItem> prog;
  for (std::int64_t mb = 0; mb < micro; ++mb) {
    const int mi = static_cast<int>(mb);
    append(prog, emb_f, compute, "embedding.fwd", Category::kForward, -1, mi);
    for (int l = 0; l < m.layers; ++l) append(prog, lay_f, compute, "layer.fwd", Category::kForward, l, mi);
    append(prog, head_f, compute, "head.fwd", Category::kForward, -1, mi);
    append(prog, head_b, compute, "head.bwd", Category::kBackward, -1, mi);
    const bool last = mb + 1 == micro;
    for (int l = static_cast<int>(m.layers) - 1; l >= 0; --l) {
      append(prog, lay_b, compute, "layer.bwd", Category::kBackward, l, mi);
      if (last) {
        // The layer's weight gradients are complete once its last compute block has run.
        for (auto it = prog.rbegin(); it != prog.rend(); ++it) {
          if (!it->comm) {
            it->grad_params += per_layer_params;
            break;
          }
        }
      }
    }
    append(prog, emb_b, compute, "embedding.bwd", Category::kBackward, -1, mi);
    if (last) {
      for (auto it = prog.rbegin(); it != prog.rend(); ++it) {
        if (!it->comm) {
          it->grad_params += outer_params;
          break;
        }
      }
    }
  }

  TrainingStep step{WorkloadGraph(s.gpus), flops_per_micro * static_cast<double>(micro) * s.gpus,
                    static_cast<double>(s.global_batch * s.seq), micro};
  auto& g = step.graph;
  const auto tp_groups = plan.tp_groups();
  std::vector<std::uint32_t> tp_group_ids;
  for (const auto& grp : tp_groups) tp_group_ids.push_back(g.add_group(grp));

  // Instantiate the program on every GPU; remember the task of each item on each GPU.
  std::vector<std::vector<TaskId>> task_of(static_cast<std::size_t>(s.gpus));
  for (auto& v : task_of) v.reserve(prog.size());
  for (const auto& item : prog) {
    for (std::size_t gi = 0; gi < tp_groups.size(); ++gi) {
      if (item.comm) {
        const auto id = g.add_collective(tp_group_ids[gi], Stream::kCompute, item.category, item.label, item.layer,
                                         item.micro, item.op, item.bytes);
        for (int r : tp_groups[gi]) task_of[static_cast<std::size_t>(r)].push_back(id);
      } else {
        for (int r : tp_groups[gi]) {
          task_of[static_cast<std::size_t>(r)].push_back(g.add_compute(
              r, Stream::kCompute, item.category, item.label, item.layer, item.micro, SimTime::from_seconds(item.seconds)));
        }
      }
    }
  }

  // Data parallelism: gradient buckets reduced on the communication stream.
  const bool zero1 = plan.zero >= 1 && plan.dp > 1;
  const auto dp_groups = plan.dp_groups();
  std::vector<std::vector<TaskId>> dp_tasks(dp_groups.size());
  if (plan.dp > 1) {
    double bucket = 0;
    for (std::size_t i = 0; i < prog.size(); ++i) {
      bucket += prog[i].grad_params;
      const bool flush = bucket >= s.grad_bucket_params || (i + 1 == prog.size() && bucket > 0);
      if (!flush) continue;
      for (std::size_t d = 0; d < dp_groups.size(); ++d) {
        const auto gid = g.add_group(dp_groups[d]);
        const auto id = g.add_collective(gid, Stream::kComm, Category::kDpComm,
                                         zero1 ? "dp.grad_reducescatter" : "dp.grad_allreduce", -1, -1,
                                         zero1 ? coll::CollectiveOp::kReduceScatter : coll::CollectiveOp::kAllReduce,
                                         bucket * 4.0);  // fp32 main gradients
        for (int r : dp_groups[d]) g.depend(task_of[static_cast<std::size_t>(r)][i], id);
        dp_tasks[d].push_back(id);
      }
      bucket = 0;
    }
  }

  // Optimizer: mixed-precision Adam streams master weights, m, v and fp32 grads in and out
  // (4+4+4+4 read, 4+4+4 written) and writes the bf16 weights: 30 bytes per parameter.
  const double opt_params = total_params / (zero1 ? plan.dp : 1);
  const double opt_seconds = compute.memory_seconds(30.0 * opt_params);
  for (int r = 0; r < s.gpus; ++r) {
    const auto id = g.add_compute(r, Stream::kCompute, Category::kOptimizer, "optimizer", -1, -1,
                                  SimTime::from_seconds(opt_seconds));
    if (plan.dp > 1) {
      for (auto t : dp_tasks[static_cast<std::size_t>(plan.tp_rank(r))]) g.depend(t, id);
    }
  }
  if (zero1) {
    for (const auto& grp : dp_groups) {
      g.add_collective(g.add_group(grp), Stream::kCompute, Category::kDpComm, "dp.param_allgather", -1, -1,
                       coll::CollectiveOp::kAllGather, total_params * shape.weight_bytes);
    }
  }
  return step;
}

}  // namespace cs::workload
