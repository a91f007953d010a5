// `infer` and `infer-sweep`: serving runs from flags (or `run FILE` with "kind": "infer").
#include <charconv>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <string_view>

#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/report/html_report.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/report/serving_results.hpp"
#include "sim/report/serving_trace.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/study/batch.hpp"
#include "sim/study/serving_run.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/field_flags.hpp"
#include "tools/cli/trace_flags.hpp"
#include "tools/cli/work_bounds.hpp"

namespace cs::cli {

using report::serving_json;
using report::serving_table;
using report::sweep_csv;
using report::sweep_svg;
using report::sweep_table;

namespace {

/// The `infer` flags: every serving field's flag from the table, plus --disaggregate, which sets
/// several fields at once.
struct InferOpts {
  std::shared_ptr<FieldFlags> fields;
  std::string disaggregate;
  bool json = false;
  TraceFlags trace;
  std::string report;  ///< --report FILE.html
};

/// A problem about the workload as a whole names the three flags that choose the arrivals.
const std::map<std::string, std::string> kInferExtraFlags{{"/workload", "--rate/--concurrency/--trace-file"}};

InputError name_infer_flags(const InputError& e) {
  return name_flags(e, config::ScenarioKind::kInfer, kInferExtraFlags);
}

void add_options(CLI::App* cmd, InferOpts& o) {
  o.fields = std::make_shared<FieldFlags>(cmd, config::ScenarioKind::kInfer, std::set<std::string>{"--disaggregate"});
  const auto& f = config::field(config::ScenarioKind::kInfer, "/disaggregate/prefill");
  cmd->add_option(f.flag, o.disaggregate,
                  "prefill/decode disaggregation: PREFILL:DECODE replicas (e.g. 1:1), or with each pool's TP (e.g. "
                  "2x1:1x4); with --ep > 1 each pool spreads its experts over its own TP GPUs (1x32:1x72: prefill "
                  "EP 32, decode EP 72)");
}

nlohmann::json to_doc(const InferOpts& o, const std::string& rate_override) {
  nlohmann::json j = nlohmann::json::object();
  j["kind"] = "infer";
  o.fields->put(j);
  j["name"] = o.fields->text("--model") + " on " + o.fields->text("--cluster");
  if (!j.contains("workload")) j["workload"] = nlohmann::json::object();
  if (!rate_override.empty()) {
    j["workload"]["rate"] =
        config::value_from_text(config::find_field(config::ScenarioKind::kInfer, "/workload/rate"), rate_override);
  }
  if (!o.disaggregate.empty()) {
    // PREFILL:DECODE replica counts, each optionally with its pool's TP: 1:1 or 2x1:1x4.
    // Integers read with from_chars: a count too large for an int is refused, not wrapped.
    const auto whole_int = [](std::string_view t, int& out) {
      const auto r = std::from_chars(t.data(), t.data() + t.size(), out);
      return !t.empty() && r.ec == std::errc{} && r.ptr == t.data() + t.size();
    };
    // "N" or "NxT": replicas, and the pool's TP when given.
    const auto pool = [&](std::string_view t, int& replicas, int& tp) {
      const auto x = t.find('x');
      if (x == std::string_view::npos) return whole_int(t, replicas) ? 1 : 0;
      return whole_int(t.substr(0, x), replicas) && whole_int(t.substr(x + 1), tp) ? 2 : 0;
    };
    int p = 0, d = 0, ptp = 0, dtp = 0;
    const std::string_view spec = o.disaggregate;
    const auto colon = spec.find(':');
    const int a = colon == std::string_view::npos ? 0 : pool(spec.substr(0, colon), p, ptp);
    const int b = colon == std::string_view::npos ? 0 : pool(spec.substr(colon + 1), d, dtp);
    const bool plain = a == 1 && b == 1;
    const bool with_tp = a == 2 && b == 2;
    if (!plain && !with_tp) {
      throw InputError(
          kCommandLine, "--disaggregate",
          "expected PREFILL:DECODE replica counts such as 1:1, or with each pool's TP such as 2x1:1x4; got '" +
              o.disaggregate + "'");
    }
    j["disaggregate"] = {{"prefill", p}, {"decode", d}};
    if (with_tp) {
      j["disaggregate"]["prefill_tp"] = ptp;
      j["disaggregate"]["decode_tp"] = dtp;
    }
  }
  return j;
}

}  // namespace

int run_serving_document(const config::JsonDoc& doc, const Globals& g, bool json, const TraceFlags& trace,
                         const std::string& report) {
  SimTime trace_from{};
  SimTime trace_to{std::numeric_limits<std::int64_t>::max()};
  trace_window(trace, trace_from, trace_to);
  const config::Catalog catalog(g.data_dir);
  const auto docs = config::expand_variants(doc);
  std::vector<std::pair<std::string, serving::ServingScenario>> scenarios;
  for (const auto& [name, d] : docs) {
    scenarios.emplace_back(name, config::parse_serving(d, catalog));
    check_serving_work(scenarios.back().second, d.path, g);
  }
  if (!report.empty()) report::check_writable(report, "--report");  // before the work, not after
  nlohmann::ordered_json all;
  all["variants"] = nlohmann::ordered_json::array();
  // Variants are independent: simulated in parallel, reported in file order.
  std::vector<serving::ServingResults> results(scenarios.size());
  // Progress by requests served (all variants together), shown only where asked or on a terminal.
  std::size_t requests = 0;
  for (const auto& sc : scenarios) {
    requests += sc.second.arrivals == serving::Arrivals::kTrace ? sc.second.trace.size()
                                                                : static_cast<std::size_t>(sc.second.requests);
  }
  auto progress = run_progress("requests served", requests);
  if (progress) progress->start(requests);
  study::TopologyCache topologies;  // replicas of a comparison share their machines
  study::run_batch(
      scenarios.size(),
      [&](std::size_t i) {
        serving::ServingRunOptions options;
        // The report's per-replica time comes from the step spans the trace also uses.
        options.record_trace = trace.wanted() || !report.empty();
        if (progress) options.on_request_done = [p = progress.get()] { p->done_one(true); };
        results[i] =
            report::serving_results(scenarios[i].second, study::run_serving(scenarios[i].second, options, &topologies));
      },
      nullptr);
  if (progress) progress->finish();
  if (!report.empty()) {
    std::vector<std::string> names;
    for (const auto& sc : scenarios) {
      if (!sc.first.empty()) names.push_back(sc.first);
    }
    const std::string title = results.front().name.empty() ? doc.path : results.front().name;
    report::write_report(report, "--report", report::serving_report_html(title, names, results));
    std::cerr << "report written to " << report << "\n";
  }
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const auto& name = scenarios[i].first;
    const auto& r = results[i];
    if (trace.wanted()) {
      const std::string path = variant_trace_path(trace.path, name);
      TraceFile f(path);
      const auto events = report::write_serving_trace(f.stream(), path, r, trace_from, trace_to);
      f.close();
      std::cerr << "trace written to " << path << " (" << events << " events";
      if (static_cast<std::int64_t>(r.request_spans.size()) < r.requests) {
        std::cerr << "; request spans of the first " << r.request_spans.size() << " of " << r.requests
                  << " requests, engine steps of all";
      }
      std::cerr << ")\n";
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
  add_trace_flags(cmd, o->trace, false);
  cmd->add_option("--report", o->report, "write a self-contained HTML report with charts to this file");
  return [o, &g]() -> int {
    try {
      return run_serving_document(config::JsonDoc{"command line", to_doc(*o, "")}, g, o->json, o->trace, o->report);
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
  cmd->add_option("--report", o->report, "write a self-contained HTML report with the curves to this file");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json,
                "print {\"slo\", \"points\": [{\"rate_rps\", \"meets_slo_p90\", \"result\"}]} (each result as infer "
                "--json prints it) instead of the table");
  return [o, rates, csv, svg, json, &g]() -> int {
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
        scenarios.emplace_back(v, config::parse_serving(config::JsonDoc{"command line", to_doc(*o, tok)}, catalog));
        check_serving_work(scenarios.back().second, "command line", g);
      } catch (const InputError& e) {
        throw name_infer_flags(e);
      }
    }
    if (!o->report.empty()) report::check_writable(o->report, "--report");  // before the work, not after
    // Sweep points are independent: simulated in parallel, in rate order in the output.
    std::vector<std::pair<double, serving::ServingResults>> points(scenarios.size());
    auto progress = batch_progress("sweep points", scenarios.size());
    study::TopologyCache topologies;
    study::run_batch(
        scenarios.size(),
        [&](std::size_t i) {
          points[i] = {
              scenarios[i].first,
              report::serving_results(scenarios[i].second, study::run_serving(scenarios[i].second, {}, &topologies))};
        },
        progress.get());
    // --slo-ttft / --slo-tpot are the same for every rate: the first point's scenario has them.
    const report::SweepSlo slo{scenarios.front().second.slo_ttft_s, scenarios.front().second.slo_tpot_s};
    if (*json) {
      std::cout << report::sweep_json(points, slo).dump(2) << "\n";
    } else {
      std::cout << sweep_table(points, slo);
    }
    if (!csv->empty()) {
      std::ofstream f(*csv);
      if (!f) throw InputError(*csv, "", "cannot write this file");
      f << sweep_csv(points);
    }
    const std::string title = o->fields->text("--model") + " on " + o->fields->text("--cluster");
    if (!svg->empty()) {
      std::ofstream f(*svg);
      if (!f) throw InputError(*svg, "", "cannot write this file");
      f << sweep_svg(points, title, slo);
    }
    if (!o->report.empty()) {
      report::write_report(o->report, "--report", report::sweep_report_html(title, points, slo));
      std::cerr << "report written to " << o->report << "\n";
    }
    return 0;
  };
}

}  // namespace cs::cli
