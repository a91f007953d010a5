// `infer` and `infer-sweep`: serving runs from flags (or `run FILE` with "kind": "infer").
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/parallel.hpp"
#include "sim/core/quantity.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serving/serving_sim.hpp"
#include "tools/cli/commands.hpp"

namespace cs::cli {

using report::serving_json;
using report::serving_table;
using report::serving_trace;
using report::sweep_csv;
using report::sweep_svg;
using report::sweep_table;

namespace {

struct InferOpts {
  std::string model, cluster, profile, offer, weights = "bf16", kv_dtype = "bf16", scheduler = "continuous",
                                              router = "round_robin";
  std::string input_len, output_len, rate, trace_file, disaggregate, slo_ttft, slo_tpot;
  int gpus = 0, tp = 1, pp = 1, replicas = 1;
  long long concurrency = 0, requests = 0, max_batch = 256, max_tokens = 8192, chunked = 0, seed = 1;
  double kv_fraction = 0.9;
  bool json = false, allow_oom = false;
  std::string trace_out;
};

const std::map<std::string, std::string>& infer_flags() {
  static const std::map<std::string, std::string> m{{"/model", "--model"},
                                                    {"/cluster", "--cluster"},
                                                    {"/gpus", "--gpus"},
                                                    {"/profile", "--profile"},
                                                    {"/offer", "--offer"},
                                                    {"/parallel/tp", "--tp"},
                                                    {"/parallel/pp", "--pp"},
                                                    {"/parallel/replicas", "--replicas"},
                                                    {"/quantization/weights", "--weights"},
                                                    {"/quantization/kv_dtype", "--kv-dtype"},
                                                    {"/engine/scheduler", "--scheduler"},
                                                    {"/engine/max_batch", "--max-batch"},
                                                    {"/engine/max_tokens", "--max-tokens"},
                                                    {"/engine/chunked_prefill", "--chunked-prefill"},
                                                    {"/engine/kv_fraction", "--kv-fraction"},
                                                    {"/engine/router", "--router"},
                                                    {"/workload/input_len", "--input-len"},
                                                    {"/workload/output_len", "--output-len"},
                                                    {"/workload/rate", "--rate"},
                                                    {"/workload/requests", "--requests"},
                                                    {"/workload/concurrency", "--concurrency"},
                                                    {"/workload/trace_file", "--trace-file"},
                                                    {"/workload/seed", "--seed"},
                                                    {"/workload", "--rate/--concurrency/--trace-file"},
                                                    {"/slo/ttft", "--slo-ttft"},
                                                    {"/slo/tpot", "--slo-tpot"},
                                                    {"/disaggregate/prefill", "--disaggregate"},
                                                    {"/disaggregate/decode", "--disaggregate"}};
  return m;
}

InputError name_infer_flags(const InputError& e) {
  std::vector<InputProblem> out;
  for (auto p : e.problems()) {
    if (p.file == "command line") {
      auto it = infer_flags().find(p.pointer);
      if (it != infer_flags().end()) p.pointer = it->second;
    }
    out.push_back(p);
  }
  return InputError(out);
}

nlohmann::json length_value(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) return std::stoll(s);
  return s;
}

void add_options(CLI::App* cmd, InferOpts& o) {
  cmd->add_option("--model", o.model, "model id or HF config.json path")->required();
  cmd->add_option("--cluster", o.cluster, "cluster id or path")->required();
  cmd->add_option("--gpus", o.gpus, "GPUs to use (default: replicas x TP)");
  cmd->add_option("--profile", o.profile, "hardware profile id or path (default: the cluster's)");
  cmd->add_option("--offer", o.offer, "rental offer, for cost per million tokens");
  cmd->add_option("--tp", o.tp, "tensor-parallel degree per replica")->required();
  cmd->add_option("--pp", o.pp, "pipeline stages per replica (only 1 is modelled)");
  cmd->add_option("--replicas", o.replicas, "data-parallel replicas behind a router");
  cmd->add_option("--weights", o.weights, "bf16, fp8, int8 or int4 (weight-only)");
  cmd->add_option("--kv-dtype", o.kv_dtype, "bf16 or fp8");
  cmd->add_option("--input-len", o.input_len, "prompt tokens: N or LO-HI (uniform)");
  cmd->add_option("--output-len", o.output_len, "output tokens: N or LO-HI (uniform)");
  cmd->add_option("--concurrency", o.concurrency, "closed loop: N requests in flight");
  cmd->add_option("--rate", o.rate, "requests/s (Poisson) or inf (all queued at once)");
  cmd->add_option("--requests", o.requests, "number of requests");
  cmd->add_option("--trace-file", o.trace_file, "CSV or JSONL: arrival_s, input_tokens, output_tokens");
  cmd->add_option("--seed", o.seed, "seed for Poisson arrivals and length draws");
  cmd->add_option("--max-batch", o.max_batch, "max sequences per step (max_num_seqs)");
  cmd->add_option("--max-tokens", o.max_tokens, "max tokens per step (max_num_batched_tokens)");
  cmd->add_option("--chunked-prefill", o.chunked, "chunk prompts: at most C tokens of one prompt per step (0 = off)");
  cmd->add_option("--kv-fraction", o.kv_fraction, "fraction of free memory for the KV cache");
  cmd->add_option("--scheduler", o.scheduler, "continuous or static");
  cmd->add_option("--router", o.router, "round_robin or least_loaded");
  cmd->add_option(
      "--disaggregate", o.disaggregate,
      "prefill/decode disaggregation: PREFILL:DECODE replicas (e.g. 1:1), or with each pool's TP (e.g. 2x1:1x4)");
  cmd->add_option("--slo-ttft", o.slo_ttft, "TTFT objective, e.g. \"500 ms\"");
  cmd->add_option("--slo-tpot", o.slo_tpot, "TPOT objective, e.g. \"50 ms\"");
  cmd->add_flag("--allow-oom", o.allow_oom, "simulate even when a request cannot fit");
}

nlohmann::json to_doc(const InferOpts& o, CLI::App* cmd, const std::string& rate_override) {
  nlohmann::json j;
  j["kind"] = "infer";
  j["name"] = o.model + " on " + o.cluster;
  j["model"] = o.model;
  j["cluster"] = o.cluster;
  if (cmd->count("--gpus")) j["gpus"] = o.gpus;
  if (!o.profile.empty()) j["profile"] = o.profile;
  if (!o.offer.empty()) j["offer"] = o.offer;
  j["parallel"] = {{"tp", o.tp}, {"pp", o.pp}, {"replicas", o.replicas}};
  j["quantization"] = {{"weights", o.weights}, {"kv_dtype", o.kv_dtype}};
  j["engine"] = {{"scheduler", o.scheduler},     {"max_batch", o.max_batch},     {"max_tokens", o.max_tokens},
                 {"chunked_prefill", o.chunked}, {"kv_fraction", o.kv_fraction}, {"router", o.router}};
  nlohmann::json w = nlohmann::json::object();
  if (!o.trace_file.empty()) w["trace_file"] = o.trace_file;
  if (cmd->count("--input-len")) w["input_len"] = length_value(o.input_len);
  if (cmd->count("--output-len")) w["output_len"] = length_value(o.output_len);
  if (cmd->count("--requests")) w["requests"] = o.requests;
  if (cmd->count("--concurrency")) w["concurrency"] = o.concurrency;
  const std::string rate = rate_override.empty() ? o.rate : rate_override;
  if (!rate.empty()) {
    char* end = nullptr;
    const double v = std::strtod(rate.c_str(), &end);
    const bool numeric = end && *end == '\0' && !rate.empty() && std::isfinite(v);
    w["rate"] = numeric ? nlohmann::json(v) : nlohmann::json(rate);
  }
  w["seed"] = o.seed;
  j["workload"] = w;
  if (!o.slo_ttft.empty() || !o.slo_tpot.empty()) {
    j["slo"] = nlohmann::json::object();
    if (!o.slo_ttft.empty()) j["slo"]["ttft"] = o.slo_ttft;
    if (!o.slo_tpot.empty()) j["slo"]["tpot"] = o.slo_tpot;
  }
  if (!o.disaggregate.empty()) {
    // PREFILL:DECODE replica counts, each optionally with its pool's TP: 1:1 or 2x1:1x4.
    int p = 0, d = 0, ptp = 0, dtp = 0;
    char tail = 0;
    const bool plain = std::sscanf(o.disaggregate.c_str(), "%d:%d%c", &p, &d, &tail) == 2;
    const bool with_tp = std::sscanf(o.disaggregate.c_str(), "%dx%d:%dx%d%c", &p, &ptp, &d, &dtp, &tail) == 4;
    if (!plain && !with_tp) {
      throw InputError(
          "command line", "--disaggregate",
          "expected PREFILL:DECODE replica counts such as 1:1, or with each pool's TP such as 2x1:1x4; got '" +
              o.disaggregate + "'");
    }
    j["disaggregate"] = {{"prefill", p}, {"decode", d}};
    if (with_tp) {
      j["disaggregate"]["prefill_tp"] = ptp;
      j["disaggregate"]["decode_tp"] = dtp;
    }
  }
  j["allow_oom"] = o.allow_oom;
  return j;
}

}  // namespace

int run_serving_document(const config::JsonDoc& doc, const Globals& g, bool json, const std::string& trace_out) {
  const config::Catalog catalog(g.data_dir);
  const auto docs = config::expand_variants(doc);
  std::vector<std::pair<std::string, serving::ServingScenario>> scenarios;
  for (const auto& [name, d] : docs) scenarios.emplace_back(name, config::parse_serving(d, catalog));
  nlohmann::ordered_json all;
  all["variants"] = nlohmann::ordered_json::array();
  // Variants are independent: simulated in parallel, reported in file order.
  std::vector<serving::ServingResults> results(scenarios.size());
  parallel_for_each(scenarios.size(), [&](std::size_t i) {
    results[i] = serving::simulate_serving(scenarios[i].second, !trace_out.empty());
  });
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const auto& name = scenarios[i].first;
    const auto& r = results[i];
    if (!trace_out.empty()) {
      std::string path = trace_out;
      if (!name.empty()) path += "." + std::to_string(i) + ".json";
      std::ofstream f(path);
      if (!f) throw InputError(path, "", "cannot write this file");
      f << serving_trace(r).dump();
      std::cerr << "trace written to " << path << "\n";
    }
    if (json) {
      auto j = serving_json(r);
      if (name.empty()) {
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      nlohmann::ordered_json v;
      v["name"] = name;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() != "name") v[it.key()] = it.value();
      }
      all["variants"].push_back(v);
    } else {
      if (!name.empty()) std::cout << (i ? "\n" : "") << "== " << name << "\n";
      std::cout << serving_table(r);
    }
  }
  if (json) std::cout << all.dump(2) << "\n";
  return 0;
}

int validate_serving_document(const config::JsonDoc& doc, const Globals& g) {
  const config::Catalog catalog(g.data_dir);
  for (const auto& [name, d] : config::expand_variants(doc)) {
    const auto s = config::parse_serving(d, catalog);
    std::int64_t blocks = 0;
    const auto m = serving::serving_memory(s, &blocks);
    std::cout << "ok: " << (name.empty() ? doc.path : name) << ": " << s.model.id << " on " << s.gpus << "x "
              << s.profile.gpu_name << " (" << s.cluster.id << "), TP " << s.tp << ", "
              << models::weight_format_name(s.weights) << " weights, " << fixed(m.kv_cache / 1073741824.0, 1)
              << " GiB KV cache per GPU (" << blocks << " blocks)\n";
  }
  return 0;
}

Action add_infer(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("infer", "simulate serving: TTFT, TPOT, throughput, KV cache, cost");
  auto o = std::make_shared<InferOpts>();
  add_options(cmd, *o);
  cmd->add_flag("--json", o->json, "print one JSON document");
  cmd->add_option("--trace", o->trace_out, "write a Chrome/Perfetto trace (per-replica steps, per-request spans)");
  return [o, cmd, &g]() -> int {
    try {
      return run_serving_document(config::JsonDoc{"command line", to_doc(*o, cmd, "")}, g, o->json, o->trace_out);
    } catch (const InputError& e) {
      throw name_infer_flags(e);
    }
  };
}

Action add_infer_sweep(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("infer-sweep", "the latency-throughput curve over arrival rates (table, CSV, SVG)");
  auto o = std::make_shared<InferOpts>();
  auto rates = std::make_shared<std::string>();
  auto csv = std::make_shared<std::string>();
  auto svg = std::make_shared<std::string>();
  add_options(cmd, *o);
  cmd->add_option("--rates", *rates, "comma-separated arrival rates (requests/s)")->required();
  cmd->add_option("--csv", *csv, "write the curve as CSV");
  cmd->add_option("--svg", *svg, "write the curve as an SVG plot");
  return [o, cmd, rates, csv, svg, &g]() -> int {
    const config::Catalog catalog(g.data_dir);
    std::vector<std::pair<double, serving::ServingScenario>> scenarios;
    std::stringstream in(*rates);
    for (std::string tok; std::getline(in, tok, ',');) {
      char* end = nullptr;
      const double v = std::strtod(tok.c_str(), &end);
      if (tok.empty() || *end != '\0' || !(v > 0)) {
        throw InputError("command line", "--rates",
                         "expected positive numbers separated by commas; got '" + *rates + "'");
      }
      try {
        scenarios.emplace_back(v,
                               config::parse_serving(config::JsonDoc{"command line", to_doc(*o, cmd, tok)}, catalog));
      } catch (const InputError& e) {
        throw name_infer_flags(e);
      }
    }
    // Sweep points are independent: simulated in parallel, in rate order in the output.
    std::vector<std::pair<double, serving::ServingResults>> points(scenarios.size());
    parallel_for_each(scenarios.size(), [&](std::size_t i) {
      points[i] = {scenarios[i].first, serving::simulate_serving(scenarios[i].second, false)};
    });
    std::cout << sweep_table(points);
    if (!csv->empty()) {
      std::ofstream f(*csv);
      if (!f) throw InputError(*csv, "", "cannot write this file");
      f << sweep_csv(points);
    }
    if (!svg->empty()) {
      std::ofstream f(*svg);
      if (!f) throw InputError(*svg, "", "cannot write this file");
      f << sweep_svg(points, o->model + " on " + o->cluster);
    }
    return 0;
  };
}

}  // namespace cs::cli
