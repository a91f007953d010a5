#include "sim/config/serving_file.hpp"

#include "sim/config/routing_file.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "sim/config/catalog.hpp"
#include "sim/config/engine_file.hpp"
#include "sim/config/fabric_file.hpp"
#include "sim/config/fields.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"
#include "sim/config/routing_file.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/core/sim_time.hpp"

namespace cs::config {

using serving::Arrivals;
using serving::LengthDist;
using serving::RequestSpec;
using serving::Router;
using serving::Scheduler;
using serving::ServingScenario;

namespace {

/// An integer length, or a "lo-hi" range as a string.
LengthDist read_length(config::Reader& r, const std::string& key) {
  const auto* v = r.raw(key);
  const std::string expected = "expected a positive integer or a range \"lo-hi\" of positive integers, at most " +
                               std::to_string(kMaxRequestTokens);
  if (!v) {
    r.fail_at(key, "missing required field; " + expected);
    return {1, 1};
  }
  const auto in_range = [](std::int64_t n) { return n >= 1 && n <= kMaxRequestTokens; };
  if (v->is_number_integer() && in_range(v->get<std::int64_t>()))
    return {v->get<std::int64_t>(), v->get<std::int64_t>()};
  if (v->is_string()) {
    const std::string s = v->get<std::string>();
    const auto dash = s.find('-');
    std::int64_t lo = 0, hi = 0;
    if (dash == std::string::npos) {
      // A fixed length given as digits (the command line passes lengths too long for an integer so).
      auto a = std::from_chars(s.data(), s.data() + s.size(), lo);
      if (a.ec == std::errc{} && a.ptr == s.data() + s.size() && in_range(lo)) return {lo, lo};
    } else {
      auto a = std::from_chars(s.data(), s.data() + dash, lo);
      auto b = std::from_chars(s.data() + dash + 1, s.data() + s.size(), hi);
      if (a.ec == std::errc{} && b.ec == std::errc{} && a.ptr == s.data() + dash && b.ptr == s.data() + s.size() &&
          in_range(lo) && in_range(hi) && hi >= lo) {
        return {lo, hi};
      }
    }
  }
  r.fail_at(key, expected + "; got " + config::json_type_name(*v));
  return {1, 1};
}

/// The serving field at `path` (its limits, default and key come from the table).
const Field& F(const std::string& path) { return field(ScenarioKind::kInfer, path); }

[[noreturn]] void infeasible(const std::string& file, const std::string& msg) {
  throw InfeasibleError(file + ": infeasible plan: " + msg);
}

/// Sets the engine fields the scenario leaves out as `preset` ships them for its GPU and TP.
void apply_engine(const serving::EnginePreset& preset, const ServingSpec::Engine& given, ServingScenario& s) {
  const double gib = 1073741824.0;
  const auto& tier = engine_tier(preset, s.profile.hbm_capacity.value / gib, s.profile.id, s.tp);
  s.engine = preset.id;
  if (!given.has("scheduler")) s.scheduler = preset.policy;
  if (!given.has("max_tokens")) s.max_tokens = tier.max_tokens;
  if (!given.has("max_batch")) {
    s.max_batch = tier.max_batch;
    s.max_batch_from_kv_pool = preset.max_batch_from_kv_pool;
  }
  if (!given.has("chunked_prefill")) s.chunked_prefill = tier.chunked_prefill;
  if (!given.has("block_size")) s.block_size = preset.block_size;
  s.kv_rule = preset.kv_rule;
  const std::int64_t graph_largest = given.has("cuda_graph_max_batch") ? s.graphs.largest : tier.graph_largest;
  if (!given.has("kv_fraction")) {
    s.kv_fraction = preset.kv_rule == serving::KvMemoryRule::kOfFreeBeforeWeights
                        ? static_memory_fraction(preset.reserved, s.profile.hbm_capacity.value,
                                                 s.chunked_prefill > 0 ? s.chunked_prefill : s.max_tokens,
                                                 graph_largest, s.tp * s.pp)
                        : preset.kv_fraction;
  }
  s.admit_after_preempt = preset.admit_after_preempt;
  s.max_prefill_tokens = preset.max_prefill_tokens;
  s.new_token_ratio = preset.new_token_ratio;
  if (!given.has("cuda_graph_padding")) s.graphs.padding = preset.graph_padding;
  s.graphs.largest = graph_largest;
  s.graphs.sizes = graph_sizes(preset, graph_largest, s.graphs.padding);
  s.graphs.decode_only = preset.graph_decode_only;
  if (!given.has("custom_allreduce")) s.custom_allreduce = preset.custom_allreduce;
  if (!given.has("prefix_caching")) s.prefix_reuse.enabled = preset.prefix_reuse.enabled;
  s.prefix_reuse.per_token = preset.prefix_reuse.per_token;
}

}  // namespace

std::vector<RequestSpec> read_trace(const std::string& path, std::int64_t context) {
  std::istringstream in(config::read_file(path));
  return read_trace(in, path, path.ends_with(".jsonl") || path.ends_with(".json"), context);
}

std::vector<RequestSpec> read_trace(std::istream& f, const std::string& path, bool jsonl, std::int64_t context) {
  std::vector<RequestSpec> out;
  std::string line;
  int lineno = 0;
  std::vector<std::string> header;
  std::vector<InputProblem> problems;
  const std::string max_tokens = std::to_string(kMaxRequestTokens);
  // A row's shared prefix (both cells or neither): its group and its tokens, fewer than the input.
  using PrefixCells = std::optional<std::pair<double, double>>;
  auto check = [&](double arrival, double in, double outn, const PrefixCells& prefix, const std::string& where) {
    const std::size_t before = problems.size();
    if (!(arrival >= 0 && arrival < kMaxSimSeconds)) {
      problems.push_back({where, "/arrival_s",
                          "expected a time from 0 to " + fixed(kMaxSimSeconds, 0) +
                              " seconds (the end of the simulator's clock); got " + shortest(arrival)});
    }
    for (const auto& [key, v] : {std::pair{"/input_tokens", in}, std::pair{"/output_tokens", outn}}) {
      if (!(v >= 1 && v <= static_cast<double>(kMaxRequestTokens)) || v != std::floor(v))
        problems.push_back(
            {where, key, "expected a positive integer of at most " + max_tokens + "; got " + shortest(v)});
    }
    if (problems.size() != before) return;
    const auto input = static_cast<std::int64_t>(in), output = static_cast<std::int64_t>(outn);
    if (context > 0 && input + output > context) {
      problems.push_back({where, "/input_tokens",
                          std::to_string(input) + " input + " + std::to_string(output) +
                              " output tokens exceed the model's context of " + std::to_string(context) + " tokens"});
      return;
    }
    RequestSpec spec{arrival, input, output};
    if (prefix) {
      const auto [group, tokens] = *prefix;
      if (!(group >= 0 && group <= 2147483647.0) || group != std::floor(group)) {
        problems.push_back(
            {where, "/prefix_group", "expected an integer from 0 to 2147483647; got " + shortest(group)});
        return;
      }
      if (!(tokens >= 1 && tokens < static_cast<double>(input)) || tokens != std::floor(tokens)) {
        problems.push_back({where, "/prefix_tokens",
                            "expected a positive integer below the row's " + std::to_string(input) +
                                " input tokens (the prompt's last token is its own); got " + shortest(tokens)});
        return;
      }
      spec.prefix_group = static_cast<int>(group);
      spec.prefix_tokens = static_cast<std::int64_t>(tokens);
    }
    out.push_back(spec);
  };
  while (std::getline(f, line) && problems.size() < 20) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(lineno);
    if (jsonl) {
      nlohmann::json j;
      try {
        j = config::parse_text(line, where).json;
      } catch (const InputError& e) {
        for (const auto& p : e.problems()) problems.push_back(p);
        continue;
      }
      if (!j.is_object()) {
        problems.push_back({where, "", "expected one JSON object per line"});
        continue;
      }
      bool ok = true;
      for (const char* k : {"arrival_s", "input_tokens", "output_tokens"}) {
        if (!j.contains(k) || !j[k].is_number()) {
          problems.push_back({where, std::string("/") + k, "missing or not a number"});
          ok = false;
        }
      }
      PrefixCells prefix;
      if (j.contains("prefix_group") || j.contains("prefix_tokens")) {
        for (const char* k : {"prefix_group", "prefix_tokens"}) {
          if (!j.contains(k) || !j[k].is_number()) {
            problems.push_back({where, std::string("/") + k,
                                "missing or not a number (a shared prefix gives both its group and tokens)"});
            ok = false;
          }
        }
        if (ok) prefix = std::pair{j["prefix_group"].get<double>(), j["prefix_tokens"].get<double>()};
      }
      if (ok)
        check(j["arrival_s"].get<double>(), j["input_tokens"].get<double>(), j["output_tokens"].get<double>(), prefix,
              where);
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) {
      while (!c.empty() && c.front() == ' ') c.erase(c.begin());
      while (!c.empty() && c.back() == ' ') c.pop_back();
      cells.push_back(c);
    }
    if (header.empty()) {
      header = cells;
      for (const char* k : {"arrival_s", "input_tokens", "output_tokens"}) {
        if (std::find(header.begin(), header.end(), k) == header.end()) {
          problems.push_back(
              {where, std::string("/") + k, "the CSV header must name arrival_s, input_tokens and output_tokens"});
        }
      }
      if (!problems.empty()) break;
      continue;
    }
    double vals[5] = {0, 0, 0, 0, 0};
    bool ok = true;
    const char* keys[5] = {"arrival_s", "input_tokens", "output_tokens", "prefix_group", "prefix_tokens"};
    const auto column = [&](int k) {
      return static_cast<std::size_t>(std::find(header.begin(), header.end(), keys[k]) - header.begin());
    };
    // The prefix columns are optional, and so are their cells (a request without a shared prefix).
    const bool has_prefix = [&] {
      for (int k : {3, 4})
        if (column(k) < cells.size() && !cells[column(k)].empty()) return true;
      return false;
    }();
    for (int k = 0; k < (has_prefix ? 5 : 3); ++k) {
      const auto col = column(k);
      double v = 0;
      const auto parsed = col < cells.size()
                              ? std::from_chars(cells[col].data(), cells[col].data() + cells[col].size(), v)
                              : std::from_chars_result{nullptr, std::errc::invalid_argument};
      if (col >= cells.size() || cells[col].empty() || parsed.ec != std::errc{} ||
          parsed.ptr != cells[col].data() + cells[col].size()) {
        problems.push_back({where, std::string("/") + keys[k], "missing or not a number"});
        ok = false;
      }
      vals[k] = v;
    }
    if (ok) check(vals[0], vals[1], vals[2], has_prefix ? PrefixCells{{vals[3], vals[4]}} : std::nullopt, where);
  }
  if (!problems.empty()) throw InputError(problems);
  if (out.empty()) throw InputError(path, "", "no requests in this trace");
  std::stable_sort(out.begin(), out.end(),
                   [](const RequestSpec& a, const RequestSpec& b) { return a.arrival_s < b.arrival_s; });
  return out;
}

namespace {

/// The second box kind of a mixed fleet, resolved and checked against the scenario's own.
serving::MixedKind resolve_mix(const config::Catalog& catalog, const std::string& file, const std::string& model,
                               const ServingSpec::Mix& given, ServingScenario& s) {
  if (s.deepep) {
    throw InputError(file, "/mix", "a mixed fleet with DeepEP's exchange (moe_a2a deepep) is not modelled");
  }
  // The machine as the scenario's own is resolved, its problems pointed at the mix's fields.
  const auto machine = [&] {
    try {
      return resolve_machine(catalog, file, model, given.cluster, given.profile, given.offer);
    } catch (const InputError& e) {
      std::vector<InputProblem> out;
      for (auto p : e.problems()) {
        for (const char* f : {"/cluster", "/profile", "/offer"}) {
          if (p.file == file && p.pointer.rfind(f, 0) == 0) {
            p.pointer = "/mix" + p.pointer;
            break;
          }
        }
        out.push_back(p);
      }
      throw InputError(out);
    }
  };
  auto m = machine();
  serving::MixedKind k;
  k.cluster = std::move(m.cluster);
  k.profile = std::move(m.profile);
  k.offer = std::move(m.offer);
  k.replicas = given.replicas;
  k.tp = given.tp > 0 ? given.tp : s.tp;
  if (s.prefill_replicas > 0) {
    // Disaggregated: the decode pool runs on the second kind, its KV caches crossing `link`.
    if (given.replicas != s.decode_replicas) {
      throw InputError(file, "/mix/replicas",
                       "with disaggregation the second kind is the decode pool's hardware: expected its " +
                           std::to_string(s.decode_replicas) + " decode replicas; got " +
                           std::to_string(given.replicas));
    }
    if (s.decode_tp > 0 && given.tp > 0 && s.decode_tp != given.tp) {
      throw InputError(file, "/mix/tp",
                       "the decode pool's TP is " + std::to_string(s.decode_tp) + " (disaggregate/decode_tp); got " +
                           std::to_string(given.tp));
    }
    if (s.decode_tp > 0) k.tp = s.decode_tp;
    s.decode_tp = k.tp;  // every pool-shape question of the scenario answers with the second kind's
    if (s.decode_pp > 1)
      throw InputError(file, "/disaggregate/decode_pp",
                       "a decode pool of a second box kind runs without PP; expected 1");
    if (s.nodes > 1) {
      throw InputError(file, "/nodes",
                       "with the decode pool on a second box kind, the prefill pool's boxes stand alone "
                       "(one box each); expected 1");
    }
    if (given.link.empty()) {
      throw InputError(file, "/mix/link",
                       "the fabric joining the prefill pool's box and the decode pool's is required with "
                       "disaggregation (e.g. eth-100g: two rentals over their Ethernet)");
    }
    k.link = parse_fabric(config::load(catalog.locate(config::CatalogKind::kFabric, given.link, file, "/mix/link")),
                          given.link);
  } else if (!given.link.empty()) {
    s.warnings.push_back("mix link '" + given.link +
                         "' not used: colocated replicas of the two kinds never talk to each other");
  }
  if (k.tp > k.cluster.gpus) {
    throw InputError(file, given.tp > 0 ? "/mix/tp" : "/parallel/tp",
                     "a second-kind replica of TP " + std::to_string(k.tp) + " does not fit a box of " + k.cluster.id +
                         " (" + std::to_string(k.cluster.gpus) + " GPUs); its replicas never span boxes");
  }
  if (s.weights == models::WeightFormat::kFp8) (void)k.profile.peak(calib::Dtype::kFp8);
  if (s.offer.has_value() != k.offer.has_value()) {
    throw InputError(file, k.offer ? "/offer" : "/mix/offer",
                     "a mixed fleet is priced when both box kinds have an offer; give both or neither");
  }
  if (s.offer && k.offer && s.offer->currency != k.offer->currency) {
    throw InputError(file, "/mix/offer",
                     "the two offers are priced in " + s.offer->currency + " and " + k.offer->currency +
                         "; a fleet's cost needs one currency");
  }
  return k;
}

}  // namespace

ServingSpec read_serving(const config::JsonDoc& doc) {
  config::Problems problems;
  auto r = config::Reader::root(doc, problems);
  problems.throw_if_any();
  ServingSpec spec;
  spec.origin = doc.path;
  ServingScenario& s = spec.values;
  (void)read_string(r, F("/kind"));
  s.name = read_string(r, F("/name"));
  (void)read_string(r, F("/description"));
  spec.model = read_string(r, F("/model"));
  spec.cluster = read_string(r, F("/cluster"));
  spec.gpus = static_cast<int>(read_int(r, F("/gpus")));
  s.nodes = static_cast<int>(read_int(r, F("/nodes")));
  spec.fabric = read_string(r, F("/fabric"));
  spec.profile = read_string(r, F("/profile"));
  spec.offer = read_string(r, F("/offer"));
  {
    auto p = r.child("parallel");
    s.tp = static_cast<int>(read_int(p, F("/parallel/tp")));
    s.pp = static_cast<int>(read_int(p, F("/parallel/pp")));
    s.replicas = static_cast<int>(read_int(p, F("/parallel/replicas")));
    s.ep = static_cast<int>(read_int(p, F("/parallel/ep")));
    s.dp_attention = read_bool(p, F("/parallel/dp_attention"));
    s.deepep = read_string(p, F("/parallel/moe_a2a")) == "deepep";
    p.finish();
  }
  if (auto moe = r.opt_child("moe")) {
    spec.routing = read_string(*moe, F("/moe/routing"));
    spec.redundant_experts = read_int(*moe, F("/moe/redundant_experts"));
    spec.routing_seed = read_int(*moe, F("/moe/seed"));
    moe->finish();
  }
  if (auto q = r.opt_child("quantization")) {
    const auto w = read_string(*q, F("/quantization/weights"));
    s.weights = w == "fp8"     ? models::WeightFormat::kFp8
                : w == "int8"  ? models::WeightFormat::kInt8
                : w == "int4"  ? models::WeightFormat::kInt4
                : w == "fp4"   ? models::WeightFormat::kFp4
                : w == "mxfp4" ? models::WeightFormat::kMxfp4
                               : models::WeightFormat::kBf16;
    s.kv_bytes = read_string(*q, F("/quantization/kv_dtype")) == "fp8" ? 1.0 : 2.0;
    if (q->has("activation_scales") && s.weights != models::WeightFormat::kFp8) {
      q->fail_at("activation_scales",
                 "sets how fp8 weights' GEMMs quantise their input; the weights are " + w + ", not fp8");
    }
    s.static_fp8_scales = read_string(*q, F("/quantization/activation_scales")) == "static";
    q->finish();
  }
  auto& given = spec.engine;
  if (auto e = r.opt_child("engine")) {
    given.preset = read_string(*e, F("/engine/preset"));
    for (const char* key : {"scheduler", "max_batch", "max_tokens", "chunked_prefill", "kv_fraction", "block_size",
                            "custom_allreduce", "cuda_graph_max_batch", "cuda_graph_padding", "prefix_caching"})
      if (e->has(key)) given.keys.emplace_back(key);
    const auto scheduler = read_string(*e, F("/engine/scheduler"));
    s.scheduler = scheduler == "static"          ? Scheduler::kStatic
                  : scheduler == "prefill_first" ? Scheduler::kPrefillFirst
                  : scheduler == "no_evict"      ? Scheduler::kNoEvict
                                                 : Scheduler::kContinuous;
    s.max_batch = read_int(*e, F("/engine/max_batch"));
    s.max_tokens = read_int(*e, F("/engine/max_tokens"));
    s.chunked_prefill = read_int(*e, F("/engine/chunked_prefill"));
    s.mtp_acceptance = read_number(*e, F("/engine/mtp_acceptance"));
    s.kv_fraction = read_number(*e, F("/engine/kv_fraction"));
    s.block_size = read_int(*e, F("/engine/block_size"));
    const auto router = read_string(*e, F("/engine/router"));
    s.router = router == "least_loaded"   ? Router::kLeastLoaded
               : router == "prefix_aware" ? Router::kPrefixAware
                                          : Router::kRoundRobin;
    s.prefix_reuse.enabled = read_bool(*e, F("/engine/prefix_caching"));
    s.cuda_graphs = read_bool(*e, F("/engine/cuda_graphs"));
    s.custom_allreduce = read_bool(*e, F("/engine/custom_allreduce"));
    // The captured sizes come from an engine's generator: without a preset there is none.
    for (const char* key : {"cuda_graph_max_batch", "cuda_graph_padding"}) {
      if (e->has(key) && given.preset.empty())
        throw InputError(doc.path, std::string("/engine/") + key,
                         "needs engine.preset (vllm, sglang or trtllm): the captured CUDA-graph sizes follow that "
                         "engine's own generator");
    }
    if (e->has("cuda_graph_max_batch")) s.graphs.largest = read_int(*e, F("/engine/cuda_graph_max_batch"));
    if (e->has("cuda_graph_padding")) s.graphs.padding = read_bool(*e, F("/engine/cuda_graph_padding"));
    e->finish();
  }
  {
    auto w = r.child("workload");
    const bool has_trace = w.has("trace_file"), has_conc = w.has("concurrency"), has_rate = w.has("rate");
    if (static_cast<int>(has_trace) + static_cast<int>(has_conc) + static_cast<int>(has_rate) != 1) {
      w.fail(
          "expected exactly one of 'rate' (a number of requests/s, or \"inf\" for all queued at once), 'concurrency' "
          "(a closed loop) or 'trace_file'");
    }
    if (has_trace) {
      spec.trace_file = w.req_string(F("/workload/trace_file").key());
      s.arrivals = Arrivals::kTrace;
    } else {
      s.input = read_length(w, F("/workload/input_len").key());
      s.output = read_length(w, F("/workload/output_len").key());
      s.requests = read_int(w, F("/workload/requests"));
      if (has_conc) {
        s.arrivals = Arrivals::kClosedLoop;
        s.concurrency = read_int(w, F("/workload/concurrency"));
      } else if (has_rate) {
        const auto* v = w.raw("rate");
        if (v->is_string() && v->get<std::string>() == "inf") {
          s.arrivals = Arrivals::kQueued;
        } else if (v->is_number() && v->get<double>() > 0 && std::isfinite(v->get<double>())) {
          s.arrivals = Arrivals::kPoisson;
          s.rate = v->get<double>();
        } else {
          w.fail_at("rate",
                    "expected a positive number of requests per second or \"inf\"; got " + config::json_type_name(*v));
        }
      }
    }
    s.seed = static_cast<std::uint64_t>(read_int(w, F("/workload/seed")));
    if (auto p = w.opt_child("shared_prefix")) {
      if (has_trace) p->fail("a trace gives each request's prefix itself (prefix_group, prefix_tokens columns)");
      s.shared_prefix.tokens = read_int(*p, F("/workload/shared_prefix/tokens"));
      s.shared_prefix.groups = read_int(*p, F("/workload/shared_prefix/groups"));
      p->finish();
    }
    w.finish();
  }
  if (auto slo = r.opt_child("slo")) {
    using Slo = std::pair<const char*, std::optional<double>*>;
    for (const auto& [path, out] : {Slo{"/slo/ttft", &s.slo_ttft_s}, Slo{"/slo/tpot", &s.slo_tpot_s}}) {
      const auto v = read_field(*slo, F(path));
      if (v.is_number()) *out = v.get<double>();
    }
    slo->finish();
  }
  if (auto d = r.opt_child("disaggregate")) {
    s.prefill_replicas = static_cast<int>(read_int(*d, F("/disaggregate/prefill")));
    s.decode_replicas = static_cast<int>(read_int(*d, F("/disaggregate/decode")));
    s.prefill_tp = static_cast<int>(read_int(*d, F("/disaggregate/prefill_tp")));
    s.decode_tp = static_cast<int>(read_int(*d, F("/disaggregate/decode_tp")));
    s.prefill_pp = static_cast<int>(read_int(*d, F("/disaggregate/prefill_pp")));
    s.decode_pp = static_cast<int>(read_int(*d, F("/disaggregate/decode_pp")));
    s.prefill_ep = static_cast<int>(read_int(*d, F("/disaggregate/prefill_ep")));
    s.decode_ep = static_cast<int>(read_int(*d, F("/disaggregate/decode_ep")));
    d->finish();
  }
  if (auto m = r.opt_child("mix")) {
    auto& mix = spec.mix.emplace();
    mix.cluster = read_string(*m, F("/mix/cluster"));
    mix.replicas = static_cast<int>(read_int(*m, F("/mix/replicas")));
    mix.tp = static_cast<int>(read_int(*m, F("/mix/tp")));
    mix.profile = read_string(*m, F("/mix/profile"));
    mix.offer = read_string(*m, F("/mix/offer"));
    mix.link = read_string(*m, F("/mix/link"));
    m->finish();
  }
  s.allow_oom = read_bool(r, F("/allow_oom"));
  r.finish();
  problems.throw_if_any();
  return spec;
}

namespace {

/// The integer fields a program may set on a read spec (plan's candidate shapes), held to their
/// ranges as the reader holds a file's: a shape outside them is refused here, as it would be there.
void check_shape_ranges(const ServingSpec& spec) {
  const auto& v = spec.values;
  std::vector<std::pair<const char*, std::int64_t>> values = {{"/gpus", spec.gpus},
                                                              {"/nodes", v.nodes},
                                                              {"/parallel/tp", v.tp},
                                                              {"/parallel/pp", v.pp},
                                                              {"/parallel/ep", v.ep},
                                                              {"/parallel/replicas", v.replicas},
                                                              {"/engine/max_batch", v.max_batch},
                                                              {"/engine/max_tokens", v.max_tokens},
                                                              {"/engine/chunked_prefill", v.chunked_prefill}};
  if (v.prefill_replicas > 0) {
    values.emplace_back("/disaggregate/prefill", v.prefill_replicas);
    values.emplace_back("/disaggregate/decode", v.decode_replicas);
  }
  if (v.arrivals != Arrivals::kTrace) values.emplace_back("/workload/requests", v.requests);
  if (spec.mix) {
    values.emplace_back("/mix/replicas", spec.mix->replicas);
    values.emplace_back("/mix/tp", spec.mix->tp);
  }
  for (const auto& [path, value] : values) {
    const auto& f = F(path);
    const auto lo = static_cast<std::int64_t>(f.min), hi = static_cast<std::int64_t>(f.max);
    const bool absent_default =
        !f.required && f.fallback.is_number_integer() && value == f.fallback.get<std::int64_t>();
    if ((value < lo || value > hi) && !absent_default) {
      throw InputError(spec.origin, path,
                       "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + "; got " +
                           std::to_string(value));
    }
  }
}

}  // namespace

ServingScenario resolve_serving(ServingSpec spec, const config::Catalog& catalog) {
  check_shape_ranges(spec);
  ServingScenario s = std::move(spec.values);
  const std::string& file = spec.origin;  // where problems point
  const auto& [model, cluster, gpus, fabric, profile, offer] =
      std::tie(spec.model, spec.cluster, spec.gpus, spec.fabric, spec.profile, spec.offer);
  const auto& given = spec.engine;
  const auto& mix = spec.mix;
  const auto& routing = spec.routing;
  const auto redundant = spec.redundant_experts;
  const int pp = s.pp;
  // Resolve ids (stage 3).
  {
    auto m = resolve_machine(catalog, file, model, cluster, profile, offer);
    s.model = std::move(m.model);
    s.cluster = std::move(m.cluster);
    s.profile = std::move(m.profile);
    s.offer = std::move(m.offer);
  }
  s.fabric = resolve_fabric(catalog, file, s.nodes, fabric);
  if (mix) s.mix = resolve_mix(catalog, file, model, *mix, s);
  if (!given.preset.empty()) {
    const auto engine_file = catalog.locate(CatalogKind::kEngine, given.preset, file, "/engine/preset");
    apply_engine(parse_engine(load(engine_file), given.preset), given, s);
  }
  if (s.nodes <= 1 && !fabric.empty())
    s.warnings.push_back("fabric '" + fabric + "' not used: one node has no fabric (set nodes to join several)");
  if (!spec.trace_file.empty()) s.trace = read_trace(spec.trace_file, s.model.max_positions);
  if (s.arrivals != Arrivals::kTrace && s.model.max_positions > 0 && s.input.hi + s.output.hi > s.model.max_positions) {
    throw InputError(file, "/workload/input_len",
                     "requests of up to " + std::to_string(s.input.hi) + " input + " + std::to_string(s.output.hi) +
                         " output tokens exceed the context of " + s.model.id + " (" +
                         std::to_string(s.model.max_positions) + " tokens)");
  }
  if (s.shared_prefix.tokens > 0 && s.shared_prefix.tokens >= s.input.lo) {
    throw InputError(file, "/workload/shared_prefix/tokens",
                     "a shared prefix of " + std::to_string(s.shared_prefix.tokens) +
                         " tokens leaves no token of its own to the shortest prompt (" + std::to_string(s.input.lo) +
                         " input tokens): it must be shorter than /workload/input_len");
  }
  if (s.arrivals == Arrivals::kPoisson && static_cast<double>(s.requests) / s.rate >= 0.5 * kMaxSimSeconds) {
    throw InputError(file, "/workload/rate",
                     std::to_string(s.requests) + " requests at " + shortest(s.rate) +
                         " requests/s arrive over about " + shortest(static_cast<double>(s.requests) / s.rate) +
                         " s; the simulator's clock ends at " + fixed(kMaxSimSeconds, 0) +
                         " s (104 days) and leaves room for half of that: raise the rate or lower the requests");
  }
  if (s.weights == models::WeightFormat::kFp8) (void)s.profile.peak(calib::Dtype::kFp8);
  const int pools = s.prefill_replicas > 0 ? s.prefill_replicas + s.decode_replicas : s.replicas;
  int needed = pools * s.tp * s.pp;
  if (s.prefill_replicas > 0) {
    needed = 0;
    // With the decode pool on a second box kind, this box holds the prefill pool alone.
    for (int i = 0; i < (s.mix ? s.prefill_replicas : pools); ++i) needed += s.replica_tp(i) * s.replica_pp(i);
  }
  s.gpus = gpus == 0 ? needed : gpus;
  const int available = s.cluster.gpus * s.nodes;
  if (s.gpus > available) {
    throw InputError(file, "/gpus",
                     (s.nodes > 1 ? std::to_string(s.nodes) + " nodes of cluster '" + s.cluster.id + "' have "
                                  : "cluster '" + s.cluster.id + "' has ") +
                         std::to_string(available) + " GPUs; this plan needs " + std::to_string(s.gpus) +
                         (s.nodes > 1 ? "" : " (more nodes: --nodes N --fabric F)"));
  }
  if (s.nodes > 1 && s.gpus != available) {
    infeasible(file, "a multi-node run uses every GPU of its nodes: " + std::to_string(s.nodes) + " x " +
                         std::to_string(s.cluster.gpus) + " = " + std::to_string(available) +
                         " GPUs, but the plan uses " + std::to_string(s.gpus) +
                         " (more replicas, or a larger TP or PP)");
  }
  if (s.gpus != needed) {
    infeasible(file, "TP " + std::to_string(s.tp) + " x PP " + std::to_string(s.pp) + " x " + std::to_string(pools) +
                         " replicas = " + std::to_string(needed) + " GPUs, but " + std::to_string(s.gpus) +
                         " are selected");
  }
  if (pp > s.model.layers) {
    infeasible(file, "PP " + std::to_string(pp) + " is larger than the " + std::to_string(s.model.layers) + " layers");
  }
  if (pp > 1 && s.scheduler == Scheduler::kStatic) {
    infeasible(file, "static batching with PP > 1 is not modelled; use continuous batching");
  }
  if (s.mtp_acceptance > 0 && s.model.mtp_layers == 0) {
    throw InputError(file, "/engine/mtp_acceptance",
                     s.model.id + " has no multi-token-prediction module (num_nextn_predict_layers 0); expected 0");
  }
  if (s.mtp_acceptance > 0 && s.scheduler == Scheduler::kStatic)
    infeasible(file, "MTP speculative decoding with static batching is not modelled; use continuous batching");
  if (s.ep > 1 && !s.model.is_moe())
    throw InputError(file, "/parallel/ep", s.model.id + " is a dense model (no experts to spread); expected 1");
  for (const auto& [path, own] :
       {std::pair{"/disaggregate/prefill_ep", s.prefill_ep}, std::pair{"/disaggregate/decode_ep", s.decode_ep}}) {
    if (own > 1 && !s.model.is_moe())
      throw InputError(file, path, s.model.id + " is a dense model (no experts to spread); expected 1");
  }
  if (s.ep > 1 && s.ep != s.tp) {
    infeasible(file, "EP " + std::to_string(s.ep) + " spreads experts over a replica's TP GPUs; it must equal TP " +
                         std::to_string(s.tp) +
                         " (with --dp-attention too; disaggregated pools of another TP spread theirs over their "
                         "own TP GPUs)");
  }
  // Each replica's EP: 1, or whole experts over its own TP GPUs (a pool's EP given apart).
  for (const auto& [path, own, pool_tp] :
       {std::tuple{"/disaggregate/prefill_ep", s.prefill_ep, s.replica_tp(0)},
        std::tuple{"/disaggregate/decode_ep", s.decode_ep, s.replica_tp(pools - 1)}}) {
    if (own > 1 && own != pool_tp) {
      infeasible(file, std::string(path) + ": EP " + std::to_string(own) +
                           " spreads experts over a replica's TP GPUs; it must be 1 or the pool's TP " +
                           std::to_string(pool_tp));
    }
  }
  if (routing != "balanced" && !s.model.is_moe())
    throw InputError(file, "/moe/routing", s.model.id + " is a dense model (no experts to route); expected balanced");
  if (s.model.is_moe()) {
    s.routing = parse_routing(routing, s.model, file, "/moe/routing");
    s.routing.seed = static_cast<std::uint64_t>(spec.routing_seed);
    s.routing.redundant_experts = static_cast<int>(redundant);
  }
  // The EPs the replicas run (one, or the two pools').
  std::vector<int> eps;
  for (int i = 0; i < pools; ++i) {
    if (eps.empty() || eps.back() != s.replica_ep(i)) eps.push_back(s.replica_ep(i));
  }
  const int least_ep = *std::min_element(eps.begin(), eps.end());
  if (redundant > 0 && (!s.model.is_moe() || least_ep < 2)) {
    throw InputError(file, "/moe/redundant_experts",
                     "redundant experts balance the GPUs of expert parallelism; expected 0, or EP > 1 on a MoE model "
                     "(in every pool when disaggregated)");
  }
  for (int ep : eps) {
    if (redundant > 0 && (s.model.moe.experts + redundant) % ep != 0) {
      infeasible(file, "EP " + std::to_string(ep) + " does not divide the " + std::to_string(s.model.moe.experts) +
                           " routed experts + " + std::to_string(redundant) + " redundant");
    }
  }
  if (s.deepep && (!s.dp_attention || least_ep < 2 || !s.model.is_moe())) {
    throw InputError(file, "/parallel/moe_a2a",
                     "deepep is the MoE exchange under attention-DP with whole experts spread over the replica's "
                     "GPUs; expected allgather, or --dp-attention with EP = TP > 1 on a MoE model (in every pool when "
                     "disaggregated)");
  }
  // DeepEP across boxes sends a token once per box and forwards it over NVLink there, which the
  // hierarchical all-to-all models for a group with the same GPUs on each of its boxes.
  if (s.deepep && s.nodes > 1) {
    int first = 0;  // replicas, then their stages, then TP ranks take GPUs in order
    for (int i = 0; i < pools; ++i) {
      const int tp = s.replica_tp(i), per_box = s.cluster.gpus;
      for (int k = 0; k < s.replica_pp(i); ++k, first += tp) {
        const int boxes = (first + tp - 1) / per_box - first / per_box + 1;
        if (boxes > 1 && (first % per_box != 0 || tp % per_box != 0)) {
          infeasible(file, "with --moe-a2a deepep across boxes each stage's GPUs must fill whole boxes of " +
                               std::to_string(per_box) + " (DeepEP forwards a token once per box over NVLink); " +
                               "replica " + std::to_string(i) + " takes GPUs " + std::to_string(first) + "-" +
                               std::to_string(first + tp - 1) + ", split unevenly over " + std::to_string(boxes) +
                               " boxes");
        }
      }
    }
  }
  if (s.deepep && (!s.profile.deepep_ll_dispatch_floor || !s.profile.deepep_ll_combine_floor)) {
    throw InputError(file, "/parallel/moe_a2a",
                     "deepep runs decode steps on DeepEP's low-latency kernels, whose fixed floor the GPU's profile "
                     "gives (achieved.deepep_ll_dispatch_floor and deepep_ll_combine_floor); profile '" +
                         s.profile.id +
                         "' has none (h800-sxm has them fitted, h100-sxm and h200-sxm assumed); "
                         "expected allgather, or a profile with the floors");
  }
  for (int ep : eps) {
    if (s.model.is_moe() && redundant == 0 && s.model.moe.experts % ep != 0) {
      infeasible(file, "EP " + std::to_string(ep) + " does not divide the " + std::to_string(s.model.moe.experts) +
                           " experts (redundant experts, --redundant-experts K, can make up the difference)");
    }
  }
  // Under attention-DP every GPU runs attention with all the heads, so TP need not divide them.
  for (int i = 0; i < pools && !s.dp_attention; ++i) {
    const int t = s.replica_tp(i);
    if (s.model.heads % t != 0) {
      infeasible(file, "TP " + std::to_string(t) + " does not divide the " + std::to_string(s.model.heads) +
                           " attention heads (attention data parallelism, --dp-attention, runs every head on "
                           "each GPU)");
    }
  }
  // An offer rents a box: a multi-node run rents one per node (and pays for each).
  const int per_box = s.nodes > 1 ? s.cluster.gpus : s.gpus;
  if (s.offer && s.offer->gpus < per_box) {
    throw InputError(file, "/offer",
                     "offer '" + s.offer->id + "' rents " + std::to_string(s.offer->gpus) +
                         " GPUs per box; this run uses " + std::to_string(per_box) + (s.nodes > 1 ? " per node" : ""));
  }
  if (s.offer && s.offer->max_nodes > 0 && s.nodes > s.offer->max_nodes) {
    throw InputError(file, "/nodes",
                     "offer '" + s.offer->id + "' rents at most " + std::to_string(s.offer->max_nodes) +
                         " boxes; this run uses " + std::to_string(s.nodes));
  }
  const std::int64_t longest_prompt = s.trace.empty() ? s.input.hi : [&] {
    std::int64_t m = 0;
    for (const auto& t : s.trace) m = std::max(m, t.input);
    return m;
  }();
  if (s.chunked_prefill == 0 && longest_prompt > s.max_tokens) {
    infeasible(file, "a prompt of " + std::to_string(longest_prompt) + " tokens exceeds max_tokens " +
                         std::to_string(s.max_tokens) + " per step; raise max_tokens or enable chunked prefill");
  }
  return s;
}

ServingScenario parse_serving(const config::JsonDoc& doc, const config::Catalog& catalog) {
  return resolve_serving(read_serving(doc), catalog);
}

}  // namespace cs::config
