#include "sim/report/train_results.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>

#include "sim/core/parallel.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/topology.hpp"
#include "sim/report/run_summary.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/stage_programs.hpp"

namespace cs::report {

namespace {

/// GPUs that run anything: all of them, or one data-parallel replica's under DP symmetry (the
/// means below are over these; the others are identical replicas).
int simulated_gpus(const workload::WorkloadGraph& g) {
  int n = 0;
  for (int r = 0; r < g.gpus(); ++r)
    n += g.stream_order(static_cast<std::size_t>(r) * workload::kStreamsPerGpu).empty() ? 0 : 1;
  return std::max(n, 1);
}

Breakdown breakdown_of(const workload::WorkloadGraph& g, const workload::RunLog& log) {
  // Per GPU (run_summary's unions of intervals), summed in GPU order.
  Breakdown b;
  for (const auto& t : gpu_times(g, log)) {
    b.compute += static_cast<double>(t.compute) * 1e-12;
    b.comm_total += static_cast<double>(t.comm) * 1e-12;
    b.exposed_comm += static_cast<double>(t.exposed_comm) * 1e-12;
  }
  const int active = simulated_gpus(g);
  b.compute /= active;
  b.comm_total /= active;
  b.exposed_comm /= active;
  b.idle = std::max(0.0, log.makespan.seconds() - b.compute - b.exposed_comm);
  return b;
}

std::vector<CollectiveSummary> summarize_collectives(const workload::WorkloadGraph& g, const workload::RunLog& log) {
  // Per GPU means: a collective over k of n GPUs adds k/n of a call (and of its time) to the mean.
  struct Sum {
    coll::Algorithm algorithm = coll::Algorithm::kAuto;  ///< the last call's
    double calls = 0, bytes = 0, seconds = 0;
  };
  std::map<std::string, Sum> by_label;
  // Labels are static text: a label's sum found once per pointer, not per call (millions).
  std::unordered_map<const char*, Sum*> by_pointer;
  const int active = simulated_gpus(g);
  for (std::size_t i = 0; i < g.task_count(); ++i) {
    const auto t = g.task(static_cast<workload::TaskId>(i));
    if (!t.collective) continue;
    auto [known, fresh] = by_pointer.try_emplace(t.label, nullptr);
    if (fresh) known->second = &by_label[std::string(t.label)];
    auto& s = *known->second;
    s.algorithm = log.algorithm(t);
    const double share = static_cast<double>(g.groups()[t.group].size()) / active;
    s.calls += share;
    s.bytes += g.collective(t).bytes * share;
    const auto span = log.span(static_cast<workload::TaskId>(i), t);
    s.seconds += (span.end - span.start).seconds() * share;
  }
  std::vector<CollectiveSummary> out;
  for (const auto& [label, s] : by_label) {
    out.push_back({label, coll::algorithm_name(s.algorithm), static_cast<std::int64_t>(s.calls + 0.5),
                   s.calls > 0 ? s.bytes / s.calls : 0.0, s.seconds});
  }
  return out;
}

std::string rate_text(double value, const std::string& unit, calib::Provenance p) {
  return shortest(value) + unit + " (" + calib::provenance_name(p) + ")";
}

}  // namespace

TrainResults train_results(const scenario::Scenario& s, const study::TrainingRun& run) {
  const auto wall0 = std::chrono::steady_clock::now();
  TrainResults r;
  r.name = s.name;
  r.warnings = s.warnings;
  r.model = s.model.id;
  r.cluster = s.cluster.id;
  r.cluster_name = s.cluster.name;
  r.profile = s.profile.id;
  r.profile_origin = calib::provenance_name(s.profile.origin);
  r.gpus = s.gpus;
  r.plan = s.plan;
  r.micro_batches = s.micro_batches();
  r.dp_symmetry = s.dp_symmetry && s.plan.dpcp() > s.plan.cp;
  r.flash_attention = s.flash_attention;
  r.cp_ring = s.cp_ring;
  if (s.model.is_moe()) {
    MoeSummary x;
    x.ep = s.plan.ep;
    x.etp = s.plan.etp;
    x.edp = s.plan.edp();
    x.routing = s.routing.text;
    x.redundant_experts = s.routing.redundant_experts;
    x.dispatch_dtype = s.routing.fp8_dispatch ? "fp8" : "bf16";
    x.imbalance = workload::expert_placement(s).imbalance();
    auto one = workload::step_shape(s, true);
    one.micro_batch = 1;
    one.seq = 1;
    one.cp = 1;
    one.tp = 1;
    x.dispatch_bytes_per_token = models::dispatch_send_bytes(s.model, one);
    r.moe = x;
  }
  r.memory = run.memory;
  r.fits = r.memory.fits();
  r.phase_s.topology = run.phase_s.topology;
  r.phase_s.graph = run.phase_s.graph;
  r.phase_s.simulate = run.phase_s.simulate;
  r.phase_s.baseline = run.phase_s.baseline;
  r.single_gpu_step_time_s = run.single_gpu_step_time_s;
  r.single_gpu_fits = run.single_gpu_fits;
  const auto& step = run.step;
  const auto& log = run.log;

  r.step_time_s = log.makespan.seconds();
  r.tokens_per_s = step.tokens / r.step_time_s;
  r.tflops_per_gpu = step.model_flops / r.step_time_s / s.gpus / 1e12;
  r.mfu = step.model_flops / (r.step_time_s * s.gpus * run.peak_flops);
  r.hw_tflops_per_gpu = step.hardware_flops / r.step_time_s / s.gpus / 1e12;
  r.hfu = step.hardware_flops / (r.step_time_s * s.gpus * run.peak_flops);
  r.stage_layers = step.stage_layers;
  r.compute_sources = workload::shares_of(step.compute_sources);
  r.compute_classes = workload::shares_of(step.compute_classes);
  // Eq. 3 describes GPT layers (4h MLP, GELU, full multi-head attention) only.
  if (s.model.activation == models::Activation::kGelu && s.model.ffn == 4 * s.model.hidden &&
      s.model.kv_heads == s.model.heads) {
    const double B = static_cast<double>(s.global_batch), seq = static_cast<double>(s.seq),
                 l = static_cast<double>(s.model.layers), h = static_cast<double>(s.model.hidden),
                 V = static_cast<double>(s.model.vocab);
    const double eq3 = 96.0 * B * seq * l * h * h * (1 + seq / (6 * h) + V / (16 * l * h));
    r.megatron_tflops_per_gpu = eq3 / r.step_time_s / s.gpus / 1e12;
  }
  // Two passes over every task, independent: side by side.
  parallel_for_each(2, [&](std::size_t job) {
    if (job == 0) r.breakdown = breakdown_of(step.graph, log);
    if (job == 1) r.collectives = summarize_collectives(step.graph, log);
  });
  if (s.plan.pp > 1) r.breakdown.pipeline_bubble = r.breakdown.idle;
  r.events = log.events;
  r.flows = log.flows;
  r.partitions = log.partitions;
  r.windows = log.windows;
  if (run.baseline) {
    r.speedup = r.single_gpu_step_time_s / r.step_time_s;
    r.scaling_efficiency = r.speedup / s.gpus;
  }

  if (s.offer) r.cost = scenario::run_cost(*s.offer, s.nodes, r.step_time_s, step.tokens);

  const auto& p = s.profile;
  const auto& peak = p.peak(s.dtype);
  r.rates.emplace_back(std::string("matrix peak ") + calib::dtype_name(s.dtype),
                       rate_text(peak.value / 1e12, " TFLOP/s", peak.provenance));
  if (s.profile.gemm_provenance(s.dtype) == calib::Provenance::kMeasured) {
    r.rates.emplace_back("GEMM efficiency", "interpolated from the measured table (measured)");
  } else if (p.gemm_shape.enabled()) {
    r.rates.emplace_back(
        std::string("GEMM ceiling ") + calib::dtype_name(s.dtype) + " (by shape)",
        rate_text(p.gemm_ceiling(s.dtype), "", p.gemm_shape.provenance) + ", " + shortest(p.gemm_shape.sms) + " SMs");
  } else {
    r.rates.emplace_back("GEMM efficiency (max)", rate_text(p.gemm.max_fraction, "", p.gemm.provenance));
  }
  for (const auto& k : p.kernel_tables.refs) {
    if (!k.data) continue;
    std::string groups;
    for (const auto& g : calib::kernel_table_groups()) {
      if (k.uses(g)) groups += (groups.empty() ? "" : ", ") + g;
    }
    r.rates.emplace_back("kernel tables " + k.id, groups + " (" + calib::provenance_name(k.provenance) + ")");
  }
  // With attention tables these two are fallbacks (a backward the tables do not hold; an attention
  // shape no table covers): the value says so, lest a reader take the tables' times for assumed
  // ones. (The names stay: they are the JSON's `rates` keys.)
  const auto& kt = p.kernel_tables;
  const bool bwd_table = kt.table(calib::KernelTable::kTrainAttentionBwd) != nullptr;
  const bool fwd_table =
      kt.table(calib::KernelTable::kTrainAttention) || kt.table(calib::KernelTable::kContextAttention);
  if (kt.attached()) {
    if (p.attention_backward_ratio) {
      r.rates.emplace_back("attention bwd / fwd",
                           rate_text(p.attention_backward_ratio->value, "", p.attention_backward_ratio->provenance) +
                               (bwd_table ? ", where no backward table" : ""));
    }
  }
  r.rates.emplace_back("attention fwd/bwd fraction",
                       shortest(p.attention_forward_fraction.value) + " / " +
                           shortest(p.attention_backward_fraction.value) + " (" +
                           calib::provenance_name(p.attention_forward_fraction.provenance) + ")" +
                           (fwd_table ? ", where no table" : ""));
  r.rates.emplace_back("HBM bandwidth", rate_text(p.hbm_bandwidth.value / 1e12, " TB/s", p.hbm_bandwidth.provenance));
  r.rates.emplace_back("HBM efficiency", rate_text(p.hbm_fraction.value, "", p.hbm_fraction.provenance));
  r.rates.emplace_back("kernel overhead",
                       rate_text(p.kernel_overhead.value * 1e6, " us", p.kernel_overhead.provenance));
  r.rates.emplace_back("collective latency",
                       rate_text(p.collective_latency.value * 1e6, " us", p.collective_latency.provenance));
  for (const auto& c : p.collectives) {
    r.rates.emplace_back("collective " + c.op + " x" + std::to_string(c.gpus),
                         "alpha " + shortest(c.alpha_s * 1e6) + " us, busbw " + shortest(c.busbw_bytes_per_s / 1e9) +
                             " GB/s (" + calib::provenance_name(c.provenance) + ")");
  }
  for (const auto& [name, t] : s.cluster.link_types) {
    r.rates.emplace_back("link " + name, shortest(t.bandwidth_bytes_per_s / 1e9) + " GB/s x " + shortest(t.efficiency) +
                                             " (cluster file, cited)");
  }
  r.phase_s.metrics = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  r.wall_s = run.wall_s + r.phase_s.metrics;
  return r;
}

}  // namespace cs::report
