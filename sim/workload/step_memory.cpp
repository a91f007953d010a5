#include "sim/workload/step_memory.hpp"

#include <algorithm>

#include "models/ops/tp_overlap.hpp"
#include "sim/workload/pipeline_schedule.hpp"
#include "sim/workload/stage_programs.hpp"

namespace cs::workload {

namespace {

/// What one GPU of model stage `st` (of `stages`) holds, for `in_flight` micro-batches of
/// activations; `copies` of each weight (DualPipe's 2) share the optimizer's sharding.
models::TrainingMemoryInputs stage_inputs(const scenario::Scenario& s, const models::StepShape& shape, int st,
                                          int stages, double in_flight, int copies) {
  const auto layers = split_layers(static_cast<int>(s.model.layers), stages);
  models::TrainingMemoryInputs in;
  in.shape = shape;
  in.dp = s.plan.dpcp() * copies;  // Megatron's distributed optimizer shards over DP x CP
  in.grad_bytes = s.grad_bytes;
  in.zero = s.plan.zero;
  in.micro_batches_in_flight = in_flight;
  in.runtime_reserved = s.profile.runtime_reserved.value;
  if (tp_overlap_of(s, s.plan.tp, s.plan.sp)) in.comm_buffers = models::tp_overlap_buffer_bytes(s.model, shape);
  in.capacity = s.profile.hbm_capacity.value;
  in.stage_layers = layers[static_cast<std::size_t>(st)];
  for (int k = 0; k < st; ++k) in.first_layer += layers[static_cast<std::size_t>(k)];
  in.experts = expert_split(s);
  in.edp = s.plan.edp() * copies;
  in.first_stage = st == 0;
  in.last_stage = st == stages - 1;
  in.recompute = s.plan.recompute == plan::Recompute::kFull        ? 2
                 : s.plan.recompute == plan::Recompute::kSelective ? 1
                                                                   : 0;
  return in;
}

/// DualPipe rank `rank`: model stages rank and P - 1 - rank, each with its weights, gradients and
/// optimizer shard (sharded over both copies' DP x CP ranks), and the activations its schedule
/// holds at its peak (walked block by block: a forward keeps one micro-batch of its chunk, its
/// backward frees it). The runtime reserve and one layer's recompute buffer are counted once.
models::MemoryBreakdown dualpipe_rank(const scenario::Scenario& s, const models::StepShape& shape, int rank) {
  const int P = s.plan.pp;
  const int stage[2] = {rank, P - 1 - rank};
  double per_micro[2] = {0, 0};  // activations one micro-batch keeps on each chunk
  for (int c = 0; c < 2; ++c) {
    per_micro[c] = models::training_memory(s.model, stage_inputs(s, shape, stage[c], P, 1, 2)).activations -
                   models::training_memory(s.model, stage_inputs(s, shape, stage[c], P, 0, 2)).activations;
  }
  double held[2] = {0, 0}, peak[2] = {0, 0}, peak_bytes = -1;
  for (const auto& b : dualpipe(rank, P, static_cast<int>(s.micro_batches()))) {
    if (b.weight) continue;
    held[b.chunk] += b.forward ? 1 : -1;
    const double bytes = held[0] * per_micro[0] + held[1] * per_micro[1];
    if (bytes > peak_bytes) {
      peak_bytes = bytes;
      peak[0] = held[0];
      peak[1] = held[1];
    }
  }
  auto a = models::training_memory(s.model, stage_inputs(s, shape, stage[0], P, peak[0], 2));
  auto b_in = stage_inputs(s, shape, stage[1], P, peak[1], 2);
  b_in.runtime_reserved = 0;
  b_in.comm_buffers = 0;
  const auto b = models::training_memory(s.model, b_in);
  b_in.micro_batches_in_flight = 0;
  const double recompute_buffer = models::training_memory(s.model, b_in).activations;
  a.weights += b.weights;
  a.gradients += b.gradients;
  a.optimizer += b.optimizer;
  a.activations += b.activations - recompute_buffer;
  a.total = a.weights + a.gradients + a.optimizer + a.activations + a.other;
  return a;
}

}  // namespace

models::MemoryBreakdown training_memory_of(const scenario::Scenario& s) {
  const auto shape = step_shape(s);  // one routing sample for every stage
  models::MemoryBreakdown worst;
  const bool dual = s.plan.schedule == plan::PipelineSchedule::kDualPipe;
  // The most loaded pipeline stage (1F1B keeps P - stage micro-batches in flight; GPipe all).
  const auto micro = static_cast<double>(s.micro_batches());
  for (int st = 0; st < s.plan.pp; ++st) {
    // In flight on stage s: GPipe all micro-batches; 1F1B P - s; interleaved its warm-up chunks
    // plus one, each 1/V of a micro-batch's layers.
    const double P = s.plan.pp, V = s.plan.vpp;
    const double in_flight = s.plan.schedule == plan::PipelineSchedule::kGpipe ? micro
                             : V > 1 ? std::min(micro * V, (P - st - 1) * 2 + (V - 1) * P + 1) / V
                                     : std::min(micro, P - st);
    const auto m = dual ? dualpipe_rank(s, shape, st)
                        : models::training_memory(s.model, stage_inputs(s, shape, st, s.plan.pp, in_flight, 1));
    if (st == 0 || m.total > worst.total) worst = m;
  }
  return worst;
}

}  // namespace cs::workload
