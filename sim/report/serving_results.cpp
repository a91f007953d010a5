#include <algorithm>
#include <cmath>

#include "sim/report/serving_results.hpp"
#include "sim/workload/compute_model.hpp"

namespace cs::report {

using serving::Arrivals;
using serving::ServingScenario;

namespace {

/// A closed loop whose requests all have the same lengths runs in waves: the clients start,
/// prefill and finish together, so every wave looks alike and the percentiles show one wave.
std::vector<std::string> workload_warnings(const ServingScenario& s) {
  std::vector<std::string> w;
  if (s.arrivals == Arrivals::kClosedLoop && s.concurrency > 1 && s.input.lo == s.input.hi &&
      s.output.lo == s.output.hi) {
    w.push_back("closed loop with fixed lengths: the " + std::to_string(s.concurrency) +
                " clients stay in lockstep (they start and finish together, wave after wave), so the latency "
                "percentiles describe those waves, not independent users; give lengths as ranges (--input-len " +
                std::to_string(std::max<std::int64_t>(1, s.input.lo * 3 / 4)) + "-" +
                std::to_string(std::max<std::int64_t>(2, s.input.lo * 5 / 4)) +
                ") or an arrival rate (--rate) for a realistic mix");
  }
  return w;
}

/// What the scenario says of itself: names, formats, shape, limits.
void describe(const ServingScenario& s, const ServingLog& log, ServingResults& r) {
  r.name = s.name;
  r.model = s.model.id;
  r.cluster = s.cluster.id;
  r.nodes = s.nodes;
  r.fabric = s.fabric ? s.fabric->id : std::string();
  r.profile = s.profile.id;
  r.profile_origin = calib::provenance_name(s.profile.origin);
  r.weights = models::weight_format_name(s.weights);
  r.activation_scales = s.weights == models::WeightFormat::kFp8 ? (s.static_fp8_scales ? "static" : "dynamic") : "";
  r.kv_dtype = s.kv_bytes == 1.0 ? "fp8" : "bf16";
  r.scheduler = serving::scheduler_name(s.scheduler);
  r.engine = s.engine;
  r.gpus = s.all_gpus();
  r.tp = s.tp;
  r.dp_attention = s.dp_attention;
  r.mtp_acceptance = s.mtp_acceptance;
  r.replicas = log.replicas;
  r.pools = log.pools;
  r.limits = {log.max_batch,
              s.max_tokens,
              s.chunked_prefill,
              s.block_size,
              s.kv_fraction,
              s.kv_rule,
              s.custom_allreduce,
              s.custom_allreduce && s.profile.kernel_tables.table(calib::KernelTable::kCustomAllReduce) != nullptr};
}

}  // namespace

ServingResults serving_results(const ServingScenario& s, ServingLog&& log) {
  ServingResults r;
  describe(s, log, r);
  r.steps = log.steps;
  r.preemptions = log.preemptions;
  r.graphed_steps = log.graphed_steps;
  r.graph_largest = s.graphs.sizes.empty() ? 0 : s.graphs.sizes.back();
  r.graph_padding = s.graphs.padding;
  r.eager_steps = log.eager_steps;
  r.memory = log.memory;
  r.kv_blocks = log.kv_blocks;
  r.fits = log.kv_blocks > 0 && !log.oom;
  if (std::any_of(log.requests.begin(), log.requests.end(), [](const auto& q) { return q.prefix_tokens > 0; })) {
    ServingResults::PrefixCache pc;
    pc.enabled = s.reuses_prefixes().enabled;
    pc.per_token = s.prefix_reuse.per_token;
    for (const auto& q : log.requests) pc.reused_tokens += q.reused;
    pc.computed_tokens = log.prefill_tokens;
    pc.evictions = log.prefix_evictions;
    r.prefix_cache = pc;
  }
  request_metrics(log, s.slo_ttft_s, s.slo_tpot_s, log.spans, r);
  r.wall_s = log.wall_s;
  const double span = std::max(r.makespan_s, 1e-12);
  r.warnings = s.warnings;
  for (auto& w : workload_warnings(s)) r.warnings.push_back(std::move(w));
  if (log.oom) {
    r.warnings.insert(r.warnings.begin(),
                      "does not fit (--allow-oom): the KV cache left after the weights cannot hold the longest "
                      "request, so it was taken to hold max batch of them, as if the GPU had the memory; the "
                      "figures are not those of this GPU");
  }
  const double mean_len = s.trace.empty() ? s.input.mean() + s.output.mean() : [&] {
    double sum = 0;
    for (const auto& t : s.trace) sum += static_cast<double>(t.input + t.output);
    return sum / static_cast<double>(s.trace.size());
  }();
  r.kv_concurrency = log.kv_blocks / std::max<std::int64_t>(
                                         1, log.decode_pool.blocks_for(static_cast<std::int64_t>(std::ceil(mean_len))));
  r.max_concurrency = std::min<std::int64_t>(log.max_batch, r.kv_concurrency);
  if (s.prefill_replicas == 0) {
    r.max_concurrency *= log.replicas;
    r.kv_concurrency *= log.replicas;
  }
  r.kv_utilisation_mean = log.kv_area / std::max(1e-12, span * static_cast<double>(log.replicas));
  r.kv_utilisation_max = log.kv_max;
  if (s.model.is_moe()) {
    ServingResults::Moe moe;
    moe.routing = s.routing.text;
    moe.ep = log.moe_ep;
    moe.load_imbalance_mean = log.load_steps > 0 ? log.load_sum / static_cast<double>(log.load_steps) : 1.0;
    moe.load_imbalance_max = log.load_steps > 0 ? log.load_max : 1.0;
    r.moe = moe;
  }
  r.compute_sources = workload::shares_of(log.sources);
  r.compute_classes = workload::shares_of(log.classes);
  r.collectives_s = std::move(log.collectives_s);
  if (s.offer) {
    const auto out = static_cast<double>(r.output_tokens);
    const double tokens = out + static_cast<double>(r.input_tokens);
    r.cost = scenario::run_cost(*s.offer, s.nodes, span, tokens, out);
    if (s.mix && s.mix->offer)
      r.cost = scenario::fleet_cost(*r.cost, scenario::run_cost(*s.mix->offer, s.mix->boxes(), span, tokens, out));
  }
  if (s.mix) {
    r.mix = ServingResults::Mix{s.mix->cluster.id,
                                s.mix->profile.id,
                                s.mix->link ? s.mix->link->id : "",
                                s.mix->replicas,
                                s.mix->tp,
                                s.mix->boxes(),
                                0};
    for (const auto& q : log.requests) {
      if (s.prefill_replicas > 0) break;  // every request is served by both pools
      if (s.mixed_replica(q.replica)) {
        ++r.mix->requests;
      } else {
        ++r.own_kind_requests;
      }
    }
  }
  r.events = log.events;
  r.step_spans = std::move(log.step_spans);
  return r;
}

}  // namespace cs::report
