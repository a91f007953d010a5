#include "sim/workload/step_memory.hpp"

#include <algorithm>

#include "models/ops/tp_overlap.hpp"
#include "sim/workload/stage_programs.hpp"

namespace cs::workload {

models::MemoryBreakdown training_memory_of(const scenario::Scenario& s) {
  // The most loaded pipeline stage (1F1B keeps P - stage micro-batches in flight; GPipe all).
  const auto layers = split_layers(static_cast<int>(s.model.layers), s.plan.pp);
  const auto micro = static_cast<double>(s.micro_batches());
  models::MemoryBreakdown worst;
  const auto shape = step_shape(s);  // one routing sample for every stage
  int first_layer = 0;
  for (int st = 0; st < s.plan.pp; ++st) {
    models::TrainingMemoryInputs in;
    in.shape = shape;
    in.dp = s.plan.dpcp();  // Megatron's distributed optimizer shards over DP x CP
    in.grad_bytes = s.grad_bytes;
    in.zero = s.plan.zero;
    // In flight on stage s: GPipe all micro-batches; 1F1B P - s; interleaved its warm-up chunks
    // plus one, each 1/V of a micro-batch's layers.
    const double P = s.plan.pp, V = s.plan.vpp;
    in.micro_batches_in_flight = s.plan.schedule == plan::PipelineSchedule::kGpipe ? micro
                                 : V > 1 ? std::min(micro * V, (P - st - 1) * 2 + (V - 1) * P + 1) / V
                                         : std::min(micro, P - st);
    in.runtime_reserved = s.profile.runtime_reserved.value;
    if (tp_overlap_of(s, s.plan.tp, s.plan.sp)) in.comm_buffers = models::tp_overlap_buffer_bytes(s.model, shape);
    in.capacity = s.profile.hbm_capacity.value;
    in.stage_layers = layers[static_cast<std::size_t>(st)];
    in.first_layer = first_layer;
    first_layer += in.stage_layers;
    in.experts = expert_split(s);
    in.edp = s.plan.edp();
    in.first_stage = st == 0;
    in.last_stage = st == s.plan.pp - 1;
    in.recompute = s.plan.recompute == plan::Recompute::kFull        ? 2
                   : s.plan.recompute == plan::Recompute::kSelective ? 1
                                                                     : 0;
    const auto m = models::training_memory(s.model, in);
    if (st == 0 || m.total > worst.total) worst = m;
  }
  return worst;
}

}  // namespace cs::workload
