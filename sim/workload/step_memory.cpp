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
  in.modules = models::RecomputeModules{s.plan.recompute_modules};
  in.recompute_block = s.plan.recompute_method == plan::RecomputeMethod::kBlock;
  in.recompute_layers = s.plan.recompute_layers;
  in.chunks = s.plan.schedule == plan::PipelineSchedule::kDualPipe ? 1 : s.plan.vpp;
  in.fp8_cache = s.fp8_activation_cache;
  in.moment_bytes = s.optimizer_moment_bytes;
  in.ema_on_gpu = s.ema == scenario::Scenario::Ema::kGpu;
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

/// The peak activations of pipeline stage `st` under the schedule the step runs (GPipe, 1F1B or
/// interleaved), walked block by block: a forward keeps one micro-batch of its model chunk's
/// layers (the last virtual stage also its LM head and loss tensors), its backward frees it. Each
/// chunk's bytes per micro-batch are its own, so the head counts only as often as its chunk is in
/// flight. Also the equivalent micro-batches of the whole stage (for the report).
struct ActivationPeak {
  double bytes = 0;
  double micro_batches = 0;
};

ActivationPeak activation_peak(const scenario::Scenario& s, const models::StepShape& shape, int st) {
  const int P = s.plan.pp, V = s.plan.vpp;
  const auto layers = split_layers(static_cast<int>(s.model.layers), P * V);
  std::vector<double> bytes(static_cast<std::size_t>(V), 0.0), share(static_cast<std::size_t>(V), 0.0);
  double stage_layers = 0;
  for (int c = 0; c < V; ++c) stage_layers += layers[static_cast<std::size_t>(c * P + st)];
  for (int c = 0; c < V; ++c) {
    const int vs = c * P + st;
    auto in = stage_inputs(s, shape, st, P, 1, 1);
    in.stage_layers = layers[static_cast<std::size_t>(vs)];
    in.first_layer = 0;
    for (int k = 0; k < vs; ++k) in.first_layer += layers[static_cast<std::size_t>(k)];
    in.first_stage = vs == 0;
    in.last_stage = vs == P * V - 1;
    in.chunks = 1;
    const double with = models::training_memory(s.model, in).activations;
    in.micro_batches_in_flight = 0;
    bytes[static_cast<std::size_t>(c)] = with - models::training_memory(s.model, in).activations;
    share[static_cast<std::size_t>(c)] = stage_layers > 0 ? in.stage_layers / stage_layers : 1.0 / V;
  }
  std::vector<double> held(static_cast<std::size_t>(V), 0.0);
  ActivationPeak peak;
  double held_layers = 0;
  // 1F1B and interleaved reach their peak in the warm-up and then repeat a period of one forward
  // and one backward, so a walk of 4P micro-batches (a multiple of P, as interleaving needs) holds
  // the same peak as one of thousands (tested); GPipe holds every micro-batch, so it walks all.
  const auto micro = static_cast<int>(s.micro_batches());
  const int walked = s.plan.schedule == plan::PipelineSchedule::kGpipe ? micro : std::min(micro, 4 * P);
  for (const auto& b : schedule(s.plan.schedule, st, P, walked, V)) {
    if (b.weight) continue;
    const auto c = static_cast<std::size_t>(b.chunk);
    held[c] += b.forward ? 1.0 : -1.0;
    held_layers += (b.forward ? 1.0 : -1.0) * share[c];
    double now = 0;
    for (std::size_t k = 0; k < held.size(); ++k) now += held[k] * bytes[k];
    if (now > peak.bytes) peak.bytes = now;
    peak.micro_batches = std::max(peak.micro_batches, held_layers);
  }
  return peak;
}

}  // namespace

double micro_batches_in_flight(const scenario::Scenario& s, int stage) {
  return activation_peak(s, step_shape(s), stage).micro_batches;
}

models::MemoryBreakdown training_memory_of(const scenario::Scenario& s) {
  const auto shape = step_shape(s);  // one routing sample for every stage
  models::MemoryBreakdown worst;
  const bool dual = s.plan.schedule == plan::PipelineSchedule::kDualPipe;
  for (int st = 0; st < s.plan.pp; ++st) {
    auto m = dual ? dualpipe_rank(s, shape, st)
                  : models::training_memory(s.model, stage_inputs(s, shape, st, s.plan.pp, 0, 1));
    if (!dual) {
      // With none in flight the activations are the recompute buffer alone; then the schedule's peak.
      m.activations += activation_peak(s, shape, st).bytes;
      m.total = m.weights + m.gradients + m.optimizer + m.activations + m.other;
    }
    if (st == 0 || m.total > worst.total) worst = m;
  }
  return worst;
}

}  // namespace cs::workload
