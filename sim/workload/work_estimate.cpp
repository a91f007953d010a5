#include "sim/workload/work_estimate.hpp"

#include "models/ops/recompute.hpp"

#include <cmath>

#include "models/memory/training_memory.hpp"
#include "models/ops/layer_ops.hpp"
#include "models/ops/tp_overlap.hpp"
#include "sim/workload/stage_programs.hpp"

namespace cs::workload {

namespace {

/// Tasks one TP group adds for an op list: a run of kernels is one task per TP rank (a new run
/// starts after each collective and at each op that waits for an async one); a collective is one.
double list_tasks(const std::vector<models::Item>& items, int tp) {
  double tasks = 0;
  bool open = false;
  for (const auto& it : items) {
    if (it.comm) {
      tasks += 1;
      open = false;
      continue;
    }
    if (!open || it.wait > 0) {
      tasks += tp;
      open = true;
    }
  }
  return tasks;
}

/// Tasks of one micro-batch's forward and backward over every layer, on one TP group.
double micro_batch_tasks(const scenario::Scenario& s, int tp, bool sp, int cp) {
  const auto& m = s.model;
  models::StepShape shape;
  shape.micro_batch = s.micro_batch;
  shape.seq = s.seq;
  shape.tp = tp;
  shape.sp = sp;
  shape.lora_rank = s.lora_rank;
  shape.base_4bit = s.qlora;
  shape.cp = cp;
  shape.flash_attention = s.flash_attention;
  shape.cp_ring = s.cp_ring;
  auto layer_f = models::layer_forward(m, shape);
  auto layer_b = models::layer_backward(m, shape);
  if (const auto o = tp_overlap_of(s, tp, sp)) {  // its chunks and pieces are tasks too
    layer_f = models::tp_comm_overlap(layer_f, *o);
    layer_b = models::tp_comm_overlap(layer_b, *o);
  }
  double per_layer = list_tasks(layer_f, tp) + list_tasks(layer_b, tp);
  if (s.plan.recompute == plan::Recompute::kFull) per_layer += list_tasks(layer_f, tp);
  if (s.plan.recompute == plan::Recompute::kSelective)  // the modules' kernels and collectives
    per_layer += list_tasks(
        models::recompute_items(models::layer_forward(m, shape), models::RecomputeModules{s.plan.recompute_modules}),
        tp);
  return static_cast<double>(m.layers) * per_layer + list_tasks(models::embedding_forward(m, shape), tp) +
         list_tasks(models::embedding_backward(m, shape), tp) + list_tasks(models::head_forward(m, shape), tp) +
         list_tasks(models::head_backward(m, shape), tp);
}

}  // namespace

TrainingWork estimate_training_work(const scenario::Scenario& s, bool single_gpu_baseline) {
  const auto& p = s.plan;
  TrainingWork w;
  w.gpus = static_cast<double>(s.gpus);
  const double micro = static_cast<double>(s.micro_batches());
  const double groups = s.dp_symmetry ? p.cp : static_cast<double>(p.dpcp());
  w.step_tasks = micro * groups * micro_batch_tasks(s, p.tp, p.sp, p.cp);
  // Pipeline transfers: two per micro-batch, virtual-stage boundary and GPU of a group.
  w.step_tasks += 2.0 * micro * (p.pp * p.vpp - 1) * groups * p.tp;
  // ZeRO-3: a gather per layer per forward and backward, and a scatter per backward, per TP rank.
  if (p.zero >= 3) w.step_tasks += 3.0 * micro * static_cast<double>(s.model.layers) * p.tp;
  // MoE: the routed experts' gathers and scatters too, per expert-DP group of the stage.
  if (p.zero >= 3 && s.model.is_moe() && p.edp() > 1)
    w.step_tasks += 3.0 * micro * static_cast<double>(s.model.layers) * groups * p.tp / p.edp();
  // The optimizer on every simulated GPU; DP gradient buckets (and ZeRO-1's gather) per stage and
  // TP rank, as many as the stage's parameters fill (ZeRO-3 reduces per layer instead, above).
  w.step_tasks += groups * p.tp * p.pp;
  if (p.dpcp() > 1 && p.zero < 3) {
    const double per_stage = models::params_per_gpu(s.model, p.tp) / p.pp;
    w.step_tasks +=
        static_cast<double>(p.pp) * p.tp * (std::ceil(per_stage / s.grad_bucket_params) + 1 + (p.zero >= 1 ? 1 : 0));
  }
  w.index_slots = 2.0 * static_cast<double>(s.gpus) * micro * p.vpp;
  if (single_gpu_baseline && s.gpus > 1) {
    const double one_micro = static_cast<double>(s.global_batch / s.micro_batch);
    w.baseline_tasks = one_micro * micro_batch_tasks(s, 1, false, 1);
    w.index_slots += 2.0 * one_micro;
  }
  return w;
}

}  // namespace cs::workload
