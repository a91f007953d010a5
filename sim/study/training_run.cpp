#include "sim/study/training_run.hpp"

#include "sim/serving/serving_sim.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include "sim/core/parallel.hpp"
#include "sim/core/quantity.hpp"
#include "sim/study/machine_topology.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/step_memory.hpp"

namespace cs::study {

Feasibility training_feasibility(const scenario::Scenario& s) {
  Feasibility f;
  f.memory = workload::training_memory_of(s);
  if (!f.memory.fits() && !s.allow_oom)
    f.reasons.push_back({ReasonKind::kMemory, does_not_fit_message(s, f.memory), f.memory.total, f.memory.capacity});
  return f;
}

std::string does_not_fit_message(const scenario::Scenario& s, const models::MemoryBreakdown& m) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  auto g = [&](double b) { return fixed(b / gib, 1); };
  // The parts largest first: where memory would have to come from.
  std::vector<std::pair<double, const char*>> parts{{m.activations, "activations"},
                                                    {m.optimizer, "optimizer"},
                                                    {m.weights, "weights"},
                                                    {m.gradients, "gradients"},
                                                    {m.other, "other"}};
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string list;
  for (const auto& [bytes, name] : parts) list += std::string(list.empty() ? "" : ", ") + name + " " + g(bytes);
  return "does not fit: needs " + g(m.total) + " GiB per GPU, " + s.profile.gpu_name + " has " + g(m.capacity) +
         " GiB (" + list + ")";
}

net::Topology training_topology(const scenario::Scenario& s) {
  return machine_topology({s.cluster, s.nodes > 1 ? s.gpus_per_node : s.gpus, s.nodes, s.fabric});
}

template <class Build>
std::shared_ptr<const net::Topology> TopologyCache::get(const Key& key, const Build& build) {
  {
    std::lock_guard lock(mu_);
    if (auto it = built_.find(key); it != built_.end()) return it->second;
  }
  // Built outside the lock (large fabrics take a while); the first one stored wins, so every run
  // of a shape sees one topology.
  auto topo = std::make_shared<const net::Topology>(build());
  std::lock_guard lock(mu_);
  return built_.emplace(key, std::move(topo)).first->second;
}

std::shared_ptr<const net::Topology> TopologyCache::get(const scenario::Scenario& s) {
  return get(Key{s.cluster.id, s.gpus_per_node, s.nodes, s.fabric ? s.fabric->id : std::string()},
             [&] { return training_topology(s); });
}

std::shared_ptr<const net::Topology> TopologyCache::get(const serving::ServingScenario& s) {
  // Several nodes: every GPU of each (as training's gpus_per_node); one node: the GPUs used.
  const int per_node = s.nodes > 1 ? s.cluster.gpus : s.gpus;
  // A mixed fleet's second kind's boxes are part of its machine.
  const std::string id = s.mix ? s.cluster.id + "+" + s.mix->cluster.id + ":" + std::to_string(s.mix->replicas) + "x" +
                                     std::to_string(s.mix->tp) + (s.mix->link ? " over " + s.mix->link->id : "")
                               : s.cluster.id;
  return get(Key{id, per_node, s.nodes, s.fabric ? s.fabric->id : std::string()},
             [&] { return serving::serving_topology(s); });
}

namespace {

/// The one-GPU run of the same model and recompute policy: the baseline of speedup and scaling.
double single_gpu_step_s(const scenario::Scenario& s, const workload::ComputeModel& compute,
                         const workload::ExecutorOptions& eo, bool& fits) {
  scenario::Scenario one = s;
  one.gpus = 1;
  one.gpus_per_node = 1;
  one.nodes = 1;
  one.plan = plan::ParallelPlan{};
  one.plan.recompute = s.plan.recompute;
  fits = workload::training_memory_of(one).fits();
  const auto topo1 = net::Topology::build(s.cluster, 1);
  const auto step1 = workload::build_training_step(one, compute);
  return workload::simulate(step1.graph, topo1, eo).makespan.seconds();
}

double seconds_since(std::chrono::steady_clock::time_point& last) {
  const auto now = std::chrono::steady_clock::now();
  const double d = std::chrono::duration<double>(now - last).count();
  last = now;
  return d;
}

}  // namespace

TrainingRun run_training(const scenario::Scenario& s, const RunOptions& options) {
  auto wall0 = std::chrono::steady_clock::now();
  const workload::ComputeModel compute(s.profile, s.dtype);
  workload::ExecutorOptions eo;
  eo.network = s.network_model;
  eo.collective_latency_s = s.profile.collective_latency.value;
  eo.record_links = options.record_links;
  eo.curves = &s.profile.collectives;
  eo.kernel_tables = &s.profile.kernel_tables;
  // Training's EP exchange is Megatron's all-to-all dispatcher, on NCCL; under two-batch overlap
  // and DualPipe it is DeepEP's kernels (DeepSeek-V3's design, whose SMs the overlap counts).
  eo.nccl_all_to_all = !s.two_batch_overlap && s.plan.schedule != plan::PipelineSchedule::kDualPipe;
  eo.partition = options.partition;
  // The step and the one-GPU baseline are independent simulations: run side by side.
  const bool baseline = options.single_gpu_baseline && s.gpus > 1;
  std::shared_ptr<const net::Topology> topo;
  std::optional<workload::TrainingStep> step;
  workload::RunLog log;
  Phases phases;
  double single_s = 0;
  bool single_fits = false;
  parallel_for_each(baseline ? 2 : 1, [&](std::size_t job) {
    auto t0 = std::chrono::steady_clock::now();
    if (job == 1) {
      single_s = single_gpu_step_s(s, compute, eo, single_fits);
      phases.baseline = seconds_since(t0);
      return;
    }
    topo =
        options.topologies ? options.topologies->get(s) : std::make_shared<const net::Topology>(training_topology(s));
    phases.topology = seconds_since(t0);
    step.emplace(workload::build_training_step(s, compute));
    phases.graph = seconds_since(t0);
    log = workload::simulate(step->graph, *topo, eo);
    phases.simulate = seconds_since(t0);
  });
  const auto memory = workload::training_memory_of(s);
  if (options.single_gpu_baseline && s.gpus == 1) {
    single_s = log.makespan.seconds();
    single_fits = memory.fits();
  }
  return TrainingRun{.step = std::move(*step),
                     .log = std::move(log),
                     .topology = std::move(topo),
                     .memory = memory,
                     .baseline = options.single_gpu_baseline,
                     .single_gpu_step_time_s = single_s,
                     .single_gpu_fits = single_fits,
                     .peak_flops = compute.peak_flops(),
                     .phase_s = phases,
                     .wall_s = seconds_since(wall0)};
}

}  // namespace cs::study
