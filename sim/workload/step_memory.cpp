#include "sim/workload/step_memory.hpp"

#include <algorithm>

#include "sim/workload/stage_programs.hpp"

namespace cs::workload {

models::MemoryBreakdown training_memory_of(const scenario::Scenario& s) {
  // The most loaded pipeline stage (1F1B keeps P - stage micro-batches in flight; GPipe all).
  const auto layers = split_layers(static_cast<int>(s.model.layers), s.plan.pp);
  const auto micro = static_cast<double>(s.micro_batches());
  models::MemoryBreakdown worst;
  for (int st = 0; st < s.plan.pp; ++st) {
    models::TrainingMemoryInputs in;
    in.shape.micro_batch = s.micro_batch;
    in.shape.seq = s.seq;
    in.shape.tp = s.plan.tp;
    in.shape.sp = s.plan.sp;
    in.shape.act_bytes = s.dtype == calib::Dtype::kFp8 ? 2.0 : static_cast<double>(calib::dtype_bytes(s.dtype));
    in.shape.weight_bytes = static_cast<double>(calib::dtype_bytes(s.dtype));
    in.shape.lora_rank = s.lora_rank;
    in.shape.cp = s.plan.cp;
    in.shape.flash_attention = s.flash_attention;
    in.shape.cp_ring = s.cp_ring;
    in.shape.base_4bit = s.qlora;
    in.shape.fp8 = s.dtype == calib::Dtype::kFp8;
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
    in.capacity = s.profile.hbm_capacity.value;
    in.stage_layers = layers[static_cast<std::size_t>(st)];
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
