#include "sim/report/serving_report.hpp"

#include <algorithm>
#include <array>
#include <iomanip>
#include <sstream>

#include "sim/core/peak_memory.hpp"
#include "sim/core/quantity.hpp"
#include "sim/report/writers.hpp"

namespace cs::report {

using serving::Percentiles;
using serving::ServingResults;

namespace {

const char* kv_rule_name(serving::KvMemoryRule rule) {
  using serving::KvMemoryRule;
  switch (rule) {
    case KvMemoryRule::kOfTotal: return "of_total";
    case KvMemoryRule::kOfFreeBeforeWeights: return "of_free_before_weights";
    case KvMemoryRule::kOfFree: break;
  }
  return "of_free";
}

/// How the KV cache was sized, as the limits row says it.
std::string kv_rule_text(const ServingResults::Limits& l) {
  using serving::KvMemoryRule;
  const std::string pct = fixed(100 * l.kv_fraction, 1) + "%";
  switch (l.kv_rule) {
    case KvMemoryRule::kOfTotal: return pct + " of the GPU less weights, activations and runtime";
    case KvMemoryRule::kOfFreeBeforeWeights: return pct + " of the memory free before weights, less the weights";
    case KvMemoryRule::kOfFree: break;
  }
  return fixed(100 * l.kv_fraction, 0) + "% of the memory left after weights";
}

nlohmann::ordered_json pct(const Percentiles& p) {
  if (p.count == 0) return nullptr;
  return {{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}};
}
/// A latency for a table cell of at most 10 characters (columns are 11 and 12 wide): milliseconds
/// below 100 s, seconds above, whole seconds past 10^6 s (the clock ends at 9 x 10^6 s).
std::string ms(double s) {
  if (s < 100.0) return fixed(s * 1e3, 1) + " ms";
  return fixed(s, s < 1e6 ? 1 : 0) + " s";
}
std::string gib(double b) { return fixed(b / 1073741824.0, 1) + " GiB"; }

}  // namespace

nlohmann::ordered_json serving_json(const ServingResults& r) {
  nlohmann::ordered_json j;
  j["name"] = r.name;
  j["model"] = r.model;
  j["cluster"] = r.cluster;
  j["profile"] = r.profile;
  j["profile_origin"] = r.profile_origin;
  j["gpus"] = r.gpus;
  j["nodes"] = r.nodes;
  j["fabric"] = r.fabric.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.fabric);
  j["tp"] = r.tp;
  j["dp_attention"] = r.dp_attention;
  j["mtp_acceptance"] = r.mtp_acceptance;
  j["replicas"] = r.replicas;
  if (r.mix) {
    j["mix"] = {{"cluster", r.mix->cluster},
                {"profile", r.mix->profile},
                {"replicas", r.mix->replicas},
                {"tp", r.mix->tp},
                {"boxes", r.mix->boxes},
                {"requests", r.mix->requests},
                {"own_kind_requests", r.own_kind_requests}};
    if (!r.mix->link.empty()) j["mix"]["link"] = r.mix->link;
  }
  if (r.pools) {
    const auto pool = [](const ServingResults::Pool& p) {
      return nlohmann::ordered_json{{"replicas", p.replicas}, {"tp", p.tp}, {"pp", p.pp}, {"ep", p.ep}};
    };
    j["disaggregate"] = {{"prefill", pool(r.pools->prefill)}, {"decode", pool(r.pools->decode)}};
  } else {
    j["disaggregate"] = nullptr;
  }
  j["weights"] = r.weights;
  j["activation_scales"] =
      r.activation_scales.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.activation_scales);
  j["kv_dtype"] = r.kv_dtype;
  j["scheduler"] = r.scheduler;
  j["requests"] = r.requests;
  j["input_tokens"] = r.input_tokens;
  j["output_tokens"] = r.output_tokens;
  j["makespan_s"] = r.makespan_s;
  j["ttft_s"] = pct(r.ttft);
  j["tpot_s"] = pct(r.tpot);
  j["e2e_s"] = pct(r.e2e);
  j["output_tokens_per_s"] = r.output_tokens_per_s;
  j["output_tokens_per_s_per_gpu"] = r.output_tokens_per_s_per_gpu;
  j["input_tokens_per_s"] = r.input_tokens_per_s;
  j["requests_per_s"] = r.requests_per_s;
  j["goodput_requests_per_s"] =
      r.goodput_requests_per_s ? nlohmann::ordered_json(*r.goodput_requests_per_s) : nlohmann::ordered_json(nullptr);
  if (r.steady) {
    j["steady_state"] = {{"from_s", r.steady->from_s},
                         {"to_s", r.steady->to_s},
                         {"output_tokens_per_s", r.steady->output_tokens_per_s},
                         {"output_tokens_per_s_per_gpu", r.steady->output_tokens_per_s_per_gpu},
                         {"requests_per_s", r.steady->requests_per_s}};
    if (r.steady->goodput_requests_per_s)
      j["steady_state"]["goodput_requests_per_s"] = *r.steady->goodput_requests_per_s;
  } else {
    j["steady_state"] = nullptr;
  }
  j["warnings"] = r.warnings;
  j["max_concurrency"] = r.max_concurrency;
  j["kv_concurrency"] = r.kv_concurrency;
  j["engine"] = {{"preset", r.engine.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.engine)},
                 {"kv_rule", kv_rule_name(r.limits.kv_rule)},
                 {"max_batch", r.limits.max_batch},
                 {"max_tokens", r.limits.max_tokens},
                 {"chunked_prefill", r.limits.chunked_prefill},
                 {"kv_fraction", r.limits.kv_fraction},
                 {"block_size", r.limits.block_size},
                 {"custom_allreduce", r.limits.custom_allreduce}};
  if (!r.engine.empty()) {
    j["engine"]["cuda_graph_steps"] = {{"graphed", r.graphed_steps}, {"eager", r.eager_steps}};
    j["engine"]["cuda_graph_max_batch"] = r.graph_largest;
    j["engine"]["cuda_graph_padding"] = r.graph_padding;
  }
  j["fits"] = r.fits;
  j["memory_per_gpu"] = {{"weights", r.memory.weights}, {"activations", r.memory.activations},
                         {"other", r.memory.other},     {"kv_cache", r.memory.kv_cache},
                         {"total", r.memory.total},     {"capacity", r.memory.capacity}};
  j["kv_blocks"] = r.kv_blocks;
  j["kv_utilisation"] = {{"mean", r.kv_utilisation_mean}, {"max", r.kv_utilisation_max}};
  if (r.moe) {
    j["moe"] = {{"routing", r.moe->routing},
                {"ep", r.moe->ep},
                {"load_imbalance_mean", r.moe->load_imbalance_mean},
                {"load_imbalance_max", r.moe->load_imbalance_max}};
  } else {
    j["moe"] = nullptr;
  }
  if (const auto& pc = r.prefix_cache) {
    j["prefix_cache"] = {{"enabled", pc->enabled},
                         {"granularity", pc->per_token ? "token" : "block"},
                         {"reused_tokens", pc->reused_tokens},
                         {"computed_tokens", pc->computed_tokens},
                         {"hit_rate", pc->hit_rate()},
                         {"evictions", pc->evictions}};
  } else {
    j["prefix_cache"] = nullptr;  // no request shares a prefix
  }
  j["collectives_s"] = nlohmann::ordered_json::object();
  for (const auto& [label, seconds] : r.collectives_s) j["collectives_s"][label] = seconds;
  j["compute_sources"] = compute_sources_json(r.compute_sources);
  j["compute_by_kernel"] = compute_classes_json(r.compute_classes);
  j["steps"] = r.steps;
  j["preemptions"] = r.preemptions;
  if (r.cost) {
    j["cost"] = {{"offer", r.cost->offer},
                 {"currency", r.cost->currency},
                 {"price_per_hour", r.cost->price_per_hour},
                 {"per_million_output_tokens", r.cost->per_million_output_tokens},
                 {"per_million_tokens", r.cost->per_million_tokens}};
    if (r.cost->price_per_hour_max > 0) {
      j["cost"]["price_per_hour_max"] = r.cost->price_per_hour_max;
      j["cost"]["per_million_output_tokens_max"] = r.cost->per_million_output_tokens_max;
    }
  } else {
    j["cost"] = nullptr;
  }
  j["events"] = r.events;
  j["run_info"] = {{"version", "0.1.0"}, {"wall_s", r.wall_s}, {"peak_rss_bytes", peak_rss_bytes()}};
  return j;
}

std::string serving_table(const ServingResults& r) {
  std::ostringstream o;
  const int second = r.mix ? r.mix->replicas * r.mix->tp : 0;
  o << r.model << " on " << r.gpus - second << " GPUs of "
    << (r.nodes > 1 ? std::to_string(r.nodes) + " x " + r.cluster + " over " + r.fabric : r.cluster)
    << (r.mix ? " and " + std::to_string(second) + " of " + std::to_string(r.mix->boxes) + " x " + r.mix->cluster : "")
    << " (";
  const auto pool = [](std::string_view what, const ServingResults::Pool& p) {
    return std::string(what) + " " + std::to_string(p.replicas) + " x TP " + std::to_string(p.tp) +
           (p.pp > 1 ? " PP " + std::to_string(p.pp) : "") + (p.ep > 1 ? " EP " + std::to_string(p.ep) : "");
  };
  if (r.pools) {
    o << pool("prefill", r.pools->prefill) << ", " << pool("decode", r.pools->decode)
      << (r.dp_attention ? ", attention-DP" : "");
  } else {
    o << "TP " << r.tp << (r.dp_attention ? " with attention-DP" : "");
  }
  o << ", " << (r.mtp_acceptance > 0 ? "MTP drafts accepted at " + fixed(r.mtp_acceptance * 100, 0) + "%, " : "")
    << r.replicas << " replica" << (r.replicas > 1 ? "s" : "") << ", " << r.weights
    << (r.activation_scales == "static" ? " weights (static activation scales), " : " weights, ") << r.kv_dtype
    << " KV, " << (r.engine.empty() ? "" : r.engine + " engine, ") << r.scheduler << " batching)\n\n";
  auto row = [&](const std::string& k, const std::string& v) { o << std::left << std::setw(30) << k << v << "\n"; };
  if (r.mix && r.pools) {
    row("pools on two box kinds", "prefill on " + r.cluster + " (" + r.profile + "), decode on " +
                                      std::to_string(r.mix->boxes) + " x " + r.mix->cluster + " (" + r.mix->profile +
                                      "), KV caches over " + r.mix->link);
  } else if (r.mix) {
    const int own = r.replicas - r.mix->replicas;
    row("mixed fleet", std::to_string(own) + " x TP " + std::to_string(r.tp) + " on " + r.cluster + " (" + r.profile +
                           ") served " + std::to_string(r.own_kind_requests) + " requests; " +
                           std::to_string(r.mix->replicas) + " x TP " + std::to_string(r.mix->tp) + " on " +
                           std::to_string(r.mix->boxes) + " x " + r.mix->cluster + " (" + r.mix->profile + ") served " +
                           std::to_string(r.mix->requests));
  }
  row("requests", std::to_string(r.requests) + " (" + std::to_string(r.input_tokens) + " input, " +
                      std::to_string(r.output_tokens) + " output tokens)");
  row("makespan", fixed(r.makespan_s, 3) + " s, " + std::to_string(r.steps) + " engine steps, " +
                      std::to_string(r.preemptions) + " preemptions");
  o << std::left << std::setw(30) << "" << std::right << std::setw(11) << "mean" << std::setw(11) << "p50"
    << std::setw(11) << "p90" << std::setw(11) << "p99"
    << "\n";
  for (const auto& [k, p] :
       {std::pair{"TTFT", r.ttft}, std::pair{"TPOT (inter-token)", r.tpot}, std::pair{"end-to-end", r.e2e}}) {
    const Percentiles& q = p;  // a lambda cannot capture a structured binding before C++20's fix (clang 14)
    const auto cell = [&q](double v) { return q.count == 0 ? std::string("-") : ms(v); };
    o << std::left << std::setw(30) << k << std::right << std::setw(11) << cell(p.mean) << std::setw(11) << cell(p.p50)
      << std::setw(11) << cell(p.p90) << std::setw(11) << cell(p.p99)
      << (p.count == 0 ? "  (no request generated two tokens)" : "") << "\n";
  }
  row("output tokens/s",
      fixed(r.output_tokens_per_s, 0) + " (" + fixed(r.output_tokens_per_s_per_gpu, 0) + " per GPU)");
  row("input tokens/s", fixed(r.input_tokens_per_s, 0));
  row("requests/s", fixed(r.requests_per_s, 2) + " (over the whole run)");
  if (r.steady) {
    row("steady state", fixed(r.steady->output_tokens_per_s, 0) + " output tokens/s (" +
                            fixed(r.steady->output_tokens_per_s_per_gpu, 0) + " per GPU), " +
                            fixed(r.steady->requests_per_s, 2) + " requests/s, from " + fixed(r.steady->from_s, 2) +
                            " to " + fixed(r.steady->to_s, 2) + " s (10% to 90% of requests done)");
  }
  if (r.goodput_requests_per_s) {
    std::string good = fixed(*r.goodput_requests_per_s, 2) + " requests/s over the whole run";
    if (r.steady && r.steady->goodput_requests_per_s)
      good += ", " + fixed(*r.steady->goodput_requests_per_s, 2) + " in the steady window";
    row("goodput (within SLOs)", good);
  }
  // Which limit binds: the engine's max batch, or the KV cache at the mean sequence length.
  row("max concurrency that fits",
      std::to_string(r.max_concurrency) + " sequences (" + std::to_string(r.kv_blocks) + " KV blocks per replica; " +
          (r.kv_concurrency > r.max_concurrency
               ? "bound by max batch, the KV cache would hold " + std::to_string(r.kv_concurrency) + ")"
               : "bound by the KV cache)") +
          (r.prefix_cache && r.prefix_cache->enabled
               ? ", each sequence holding its whole length (a cached prefix shared "
                 "by several is held once, so more run)"
               : ""));
  const bool ran_tp_allreduce = std::any_of(r.collectives_s.begin(), r.collectives_s.end(),
                                            [](const auto& c) { return c.first == "tp.allreduce" && c.second > 0; });
  row("engine limits",
      "max batch " + std::to_string(r.limits.max_batch) + " sequences, " + std::to_string(r.limits.max_tokens) +
          " tokens per step, chunked prefill " +
          (r.limits.chunked_prefill > 0 ? std::to_string(r.limits.chunked_prefill) + " tokens" : std::string("off")) +
          ", KV cache " + kv_rule_text(r.limits) + ", " + std::to_string(r.limits.block_size) + "-token blocks" +
          (!r.limits.custom_allreduce || !ran_tp_allreduce ? std::string()
           : r.limits.custom_allreduce_tabled ? ", TP all-reduce as TensorRT-LLM's own (custom_allreduce table)"
                                              : ", TP all-reduce as TensorRT-LLM's own (no custom_allreduce table in "
                                                "the profile: NCCL's times)"));
  if (!r.engine.empty()) {
    row("CUDA graphs", std::to_string(r.graphed_steps) + " of " + std::to_string(r.graphed_steps + r.eager_steps) +
                           " steps as graphs (the engine's captured sizes up to " + std::to_string(r.graph_largest) +
                           (r.graph_padding ? ", batches padded up" : ", exact sizes only") + "), the rest eager");
  }
  row("KV cache utilisation",
      fixed(100 * r.kv_utilisation_mean, 1) + "% mean, " + fixed(100 * r.kv_utilisation_max, 1) + "% max");
  if (const auto& pc = r.prefix_cache) {
    row("prefix cache",
        !pc->enabled ? "off: every prompt computed whole (" +
                           std::string(r.scheduler == "static" ? "static batches reuse no prefix"
                                                               : "engine.prefix_caching false") +
                           ")"
                     : fixed(100 * pc->hit_rate(), 1) + "% of prompt tokens served from cached prefixes (" +
                           std::to_string(pc->reused_tokens) + " reused, " + std::to_string(pc->computed_tokens) +
                           " computed; " + (pc->per_token ? "to the last token" : "whole blocks") + ", " +
                           std::to_string(pc->evictions) + " prefixes evicted)");
  }
  if (r.moe && (r.moe->routing != "balanced" || r.moe->ep > 1)) {  // the default says nothing new
    row("MoE routing",
        r.moe->routing + (r.moe->ep > 1
                              ? "; the most loaded of EP " + std::to_string(r.moe->ep) + " GPUs" +
                                    (r.pools ? " (decode pool)" : "") + " has " + fixed(r.moe->load_imbalance_mean, 3) +
                                    "x the mean GPU's routed tokens (mean over steps; worst step " +
                                    fixed(r.moe->load_imbalance_max, 3) +
                                    "x); the GPU whose routed experts take longest sets the pace"
                              : "; experts split TP ways, so every GPU has the same share"));
  }
  row("memory per GPU", "weights " + gib(r.memory.weights) + ", activations " + gib(r.memory.activations) +
                            ", runtime " + gib(r.memory.other) + ", KV cache " + gib(r.memory.kv_cache) + " of " +
                            gib(r.memory.capacity));
  if (r.cost) {
    row("cost",
        fixed(r.cost->per_million_output_tokens, 2) +
            (r.cost->per_million_output_tokens_max > 0 ? " to " + fixed(r.cost->per_million_output_tokens_max, 2)
                                                       : std::string()) +
            " " + r.cost->currency + " per million output tokens (" + fixed(r.cost->per_million_tokens, 2) +
            " per million tokens in+out; " + r.cost->offer + ", " + fixed(r.cost->price_per_hour, 0) + " " +
            r.cost->currency + "/h)");
  }
  row("profile", r.profile + " (" + r.profile_origin + ")");
  row("kernel times from", compute_sources_text(r.compute_sources));
  row("compute spent on", compute_classes_text(r.compute_classes));
  for (const auto& w : r.warnings) o << "warning: " << w << "\n";
  return o.str();
}

namespace {
/// Whether a run's p90s meet a sweep's objectives (plan's rule; none given: met).
bool meets_p90(const ServingResults& r, const SweepSlo& slo) {
  return (!slo.ttft_s || r.ttft.p90 <= *slo.ttft_s) && (!slo.tpot_s || r.tpot.p90 <= *slo.tpot_s);
}
}  // namespace

std::string sweep_table(const std::vector<std::pair<double, ServingResults>>& points, const SweepSlo& slo) {
  const bool objectives = slo.ttft_s || slo.tpot_s;
  std::ostringstream o;
  o << std::right << std::setw(10) << "rate(r/s)" << std::setw(12) << "out tok/s";
  for (const char* m : {"TTFT", "TPOT", "e2e"})
    for (const char* p : {"p50", "p90", "p99"}) o << std::setw(12) << (std::string(m) + " " + p);
  // With objectives: the requests/s served within them, and whether p90 meets them (plan's rule).
  if (objectives) o << std::setw(13) << "goodput r/s" << std::setw(10) << "p90 SLO";
  o << "\n";
  for (const auto& [rate, r] : points) {
    o << std::setw(10) << fixed(rate, 2) << std::setw(12) << fixed(r.output_tokens_per_s, 0);
    for (const auto* q : {&r.ttft, &r.tpot, &r.e2e})
      o << std::setw(12) << ms(q->p50) << std::setw(12) << ms(q->p90) << std::setw(12) << ms(q->p99);
    if (objectives) {
      o << std::setw(13) << (r.goodput_requests_per_s ? fixed(*r.goodput_requests_per_s, 2) : std::string("-"))
        << std::setw(10) << (meets_p90(r, slo) ? "met" : "missed");
    }
    o << "\n";
  }
  return o.str();
}

std::string sweep_csv(const std::vector<std::pair<double, ServingResults>>& points) {
  std::ostringstream o;
  // The first eight columns as before (scripts read them by position); p90 and goodput after them.
  o << "rate_rps,output_tokens_per_s,ttft_p50_s,ttft_p99_s,tpot_p50_s,tpot_p99_s,e2e_p50_s,e2e_p99_s,"
       "ttft_p90_s,tpot_p90_s,e2e_p90_s,goodput_requests_per_s\n";
  for (const auto& [rate, r] : points) {
    o << shortest(rate) << "," << shortest(r.output_tokens_per_s) << "," << shortest(r.ttft.p50) << ","
      << shortest(r.ttft.p99) << "," << shortest(r.tpot.p50) << "," << shortest(r.tpot.p99) << ","
      << shortest(r.e2e.p50) << "," << shortest(r.e2e.p99) << "," << shortest(r.ttft.p90) << "," << shortest(r.tpot.p90)
      << "," << shortest(r.e2e.p90) << ","
      << (r.goodput_requests_per_s ? shortest(*r.goodput_requests_per_s) : std::string()) << "\n";
  }
  return o.str();
}

nlohmann::ordered_json sweep_json(const std::vector<std::pair<double, ServingResults>>& points, const SweepSlo& slo) {
  nlohmann::ordered_json j;
  j["slo"] = {{"ttft_s", slo.ttft_s ? nlohmann::ordered_json(*slo.ttft_s) : nlohmann::ordered_json(nullptr)},
              {"tpot_s", slo.tpot_s ? nlohmann::ordered_json(*slo.tpot_s) : nlohmann::ordered_json(nullptr)},
              {"percentile", "p90"}};
  j["points"] = nlohmann::ordered_json::array();
  for (const auto& [rate, r] : points) {
    nlohmann::ordered_json p;
    p["rate_rps"] = rate;
    if (slo.ttft_s || slo.tpot_s) p["meets_slo_p90"] = meets_p90(r, slo);
    p["result"] = serving_json(r);
    j["points"].push_back(std::move(p));
  }
  return j;
}

svg::LineChart sweep_chart(const std::vector<std::pair<double, ServingResults>>& points, const std::string& title,
                           const SweepSlo& slo) {
  // x: output tokens/s; y: TTFT and TPOT, p50 solid and p99 dashed, in ms on a log scale (TTFT is
  // often 10-100x TPOT, and a tail of seconds must not flatten the rest).
  svg::LineChart c;
  c.title = title + ": latency against throughput";
  c.x.title = "output tokens/s";
  c.y.title = "latency (ms)";
  c.y.log = true;
  struct Curve {
    const char* name;
    const char* colour;
    bool dashed;
    double (*get)(const ServingResults&);
  };
  static constexpr std::array<Curve, 4> kCurves{
      Curve{"TTFT p50", "#ff7f0e", false, [](const ServingResults& r) { return r.ttft.p50; }},
      Curve{"TTFT p99", "#ff7f0e", true, [](const ServingResults& r) { return r.ttft.p99; }},
      Curve{"TPOT p50", "#1f77b4", false, [](const ServingResults& r) { return r.tpot.p50; }},
      Curve{"TPOT p99", "#1f77b4", true, [](const ServingResults& r) { return r.tpot.p99; }}};
  for (const auto& k : kCurves) {
    svg::Series s{.name = k.name, .colour = k.colour, .dashed = k.dashed};
    for (const auto& pr : points) s.points.push_back({pr.second.output_tokens_per_s, k.get(pr.second) * 1e3});
    c.series.push_back(std::move(s));
  }
  if (slo.ttft_s) c.refs.push_back({.value = *slo.ttft_s * 1e3, .label = "TTFT SLO " + ms(*slo.ttft_s)});
  if (slo.tpot_s) {
    c.refs.push_back({.value = *slo.tpot_s * 1e3, .label = "TPOT SLO " + ms(*slo.tpot_s), .colour = "#8e44ad"});
  }
  return c;
}

std::string sweep_svg(const std::vector<std::pair<double, ServingResults>>& points, const std::string& title,
                      const SweepSlo& slo) {
  return svg::line_chart(sweep_chart(points, title, slo));
}

}  // namespace cs::report
