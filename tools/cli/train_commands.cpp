// `run`, `train` and `validate`: scenario in, training results out.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/parallel.hpp"
#include "sim/core/quantity.hpp"
#include "sim/report/html_report.hpp"
#include "sim/report/run_summary.hpp"
#include "sim/report/training_trace.hpp"
#include "sim/report/writers.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/study/batch.hpp"
#include "sim/study/memory_options.hpp"
#include "sim/study/training_run.hpp"
#include "sim/workload/step_memory.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/field_flags.hpp"
#include "tools/cli/trace_flags.hpp"
#include "tools/cli/work_bounds.hpp"

namespace cs::cli {

namespace {

struct OutputOptions {
  bool json = false;
  TraceFlags trace;
  std::string report;  ///< --report FILE.html
  bool dump_resolved = false;
  bool validate_only = false;
};

/// `--set path=value`: the value typed by the field at path (the field table).
void apply_set(nlohmann::json& doc, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError(kCommandLine, "--set", "expected path=value (e.g. parallel.tp=4); got '" + assignment + "'");
  }
  config::set_field_text(doc, assignment.substr(0, eq), assignment.substr(eq + 1), "command line: --set");
}

/// A scenario document's kind, "train" (the default), "infer" or "collective", read like any other field.
std::string document_kind(const config::JsonDoc& doc) {
  config::Problems problems;
  config::Reader r(doc.json, doc.path, "", problems);
  problems.throw_if_any();  // not an object: the parser of either kind says so the same way
  const std::string kind = r.opt_enum("kind", {"train", "infer", "collective"}, "train");
  problems.throw_if_any();
  return kind;
}

/// What could make a plan that does not fit fit, from its own plan: only fixes that act on it
/// (ZeRO needs DP x CP > 1; SP needs TP > 1), in the flags that set them.
std::string oom_hint(const scenario::Scenario& s) {
  const auto flag = [](const char* path) { return config::flag_of(config::ScenarioKind::kTrain, path); };
  std::vector<std::string> fixes;
  const auto& p = s.plan;
  if (p.dpcp() > 1 && p.zero < 3) {
    const int most = p.pp > 1 ? 2 : 3;  // ZeRO-3 does not run with PP
    if (p.zero < most)
      fixes.push_back(flag("/parallel/zero") + " " + std::to_string(p.zero + 1) +
                      (p.zero + 1 < most ? "-" + std::to_string(most) : "") + " (shards over DP)");
  }
  if (p.tp > 1 && !p.sp) fixes.push_back(flag("/parallel/sp") + " (splits activations over TP)");
  // What the frameworks do to fit (recompute modules, full recompute, FP8 activations, bf16 Adam
  // moments), each measured on this plan: the cheapest in compute that fits first.
  std::string options;
  int listed = 0;
  for (const auto& o : study::memory_options(s)) {
    if (!o.memory.fits() || listed == 3) continue;
    options +=
        std::string(listed++ ? " or " : "") + o.flags + " (" + fixed(o.memory.total / 1073741824.0, 1) + " GiB, " +
        (o.extra_compute_s > 0.0005 ? "+" + fixed(o.extra_compute_s, 3) + " s of compute a step" : "no extra compute") +
        ")";
  }
  if (!options.empty()) fixes.insert(fixes.begin(), options + ", the cheapest that fit");
  if (options.empty() && p.recompute != plan::Recompute::kFull)
    fixes.push_back(flag("/training/recompute") +
                    (p.recompute == plan::Recompute::kNone ? " selective or full" : " full"));
  if (s.micro_batch > 1) fixes.push_back("a smaller " + flag("/training/micro_batch"));
  fixes.push_back("more GPUs (a larger " + flag("/parallel/tp") + ", " + flag("/parallel/pp") + ", or DP with " +
                  flag("/parallel/zero") + ")");
  std::string text = "try ";
  for (std::size_t i = 0; i < fixes.size(); ++i) text += (i ? ", " : "") + fixes[i];
  return text + "; or " + flag("/allow_oom") + " to simulate anyway (clustersim plan searches the plans that fit)";
}

/// Stages 2-6 for a scenario document (a file, or JSON built from flags).
int run_document(const config::JsonDoc& doc, const Globals& g, const OutputOptions& out) {
  const config::Catalog catalog(g.data_dir);
  const auto file = config::parse_scenario(doc);
  std::vector<scenario::Scenario> scenarios;
  for (std::size_t i = 0; i < file.specs.size(); ++i) {
    const std::string where =
        file.variant_names.empty() ? doc.path : doc.path + " (variant '" + file.variant_names[i] + "')";
    scenarios.push_back(config::resolve(file.specs[i], catalog, where));
  }
  if (out.dump_resolved) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& s : scenarios) j.push_back(config::dump_resolved(s));
    std::cout << (scenarios.size() == 1 ? j[0] : j).dump(2) << "\n";
    return 0;
  }
  // Feasibility first: a plan that does not fit stops here (exit 4) unless --allow-oom.
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const auto& s = scenarios[i];
    const std::string who =
        file.variant_names.empty() ? doc.path : doc.path + " (variant '" + file.variant_names[i] + "')";
    const auto f = study::training_feasibility(s);
    if (!f.ok()) throw InfeasibleError(who + ": " + f.reasons.front().message + "; " + oom_hint(s));
    // Work next: a plan that fits the GPUs may still not fit this machine's simulation.
    check_training_work(s, study::RunOptions{}.single_gpu_baseline, who, g);
    (void)trace_selection(out.trace, s.gpus, s.micro_batches());  // bad trace flags: before simulating
  }
  if (out.validate_only) {
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
      const auto& s = scenarios[i];
      const auto mem = workload::training_memory_of(s);
      std::cout << "ok: " << (file.variant_names.empty() ? doc.path : file.variant_names[i]) << ": " << s.model.id
                << " on " << s.gpus << "x " << s.profile.gpu_name << " (" << s.cluster.id << "), TP " << s.plan.tp
                << " x DP " << s.plan.dp << ", " << s.micro_batches() << " micro-batches, "
                << fixed(mem.total / 1073741824.0, 1) << " of " << fixed(mem.capacity / 1073741824.0, 1)
                << " GiB per GPU" << (mem.fits() ? "" : " (DOES NOT FIT)") << "\n";
    }
    return 0;
  }
  if (!out.report.empty()) report::check_writable(out.report, "--report");  // before the work, not after
  // Variants are independent: simulated in parallel, reported in file order.
  std::vector<report::TrainResults> results(scenarios.size());
  const bool keep_runs = out.trace.wanted() || !out.report.empty();
  std::vector<std::optional<study::TrainingRun>> runs(keep_runs ? scenarios.size() : 0);
  study::TopologyCache topologies;
  auto progress = batch_progress("simulating", scenarios.size());
  study::run_batch(
      scenarios.size(),
      [&](std::size_t i) {
        study::RunOptions ro;
        // Link samples: the trace's counters, the report's utilisation.
        ro.record_links = (out.trace.wanted() && out.trace.link_points > 0) || !out.report.empty();
        ro.topologies = &topologies;
        auto run = study::run_training(scenarios[i], ro);
        results[i] = report::train_results(scenarios[i], run);
        if (!runs.empty()) runs[i].emplace(std::move(run));
      },
      progress.get());
  for (std::size_t i = 0; out.trace.wanted() && i < runs.size(); ++i) {
    const auto& run = *runs[i];
    const auto sel = trace_selection(out.trace, run.step.graph.gpus(), scenarios[i].micro_batches());
    const std::string path =
        variant_trace_path(out.trace.path, file.variant_names.empty() ? "" : file.variant_names[i]);
    TraceFile f(path);
    const auto stats = report::write_training_trace(f.stream(), path, run.step.graph, run.log, *run.topology, sel);
    f.close();
    std::cerr << "trace written to " << path << " (" << stats.spans << " spans, " << stats.counter_samples
              << " link samples"
              << (stats.merged > 0 ? "; " + std::to_string(stats.merged) +
                                         " more folded into per-layer slices, --trace-detail full keeps them"
                                   : std::string())
              << ")\n";
  }
  const auto& first = scenarios.front();
  const std::string heading = std::string(first.name.empty() ? doc.path : first.name) + ": " + first.model.id +
                              ", sequence " + std::to_string(first.seq) + ", global batch " +
                              std::to_string(first.global_batch) + " (micro-batch " +
                              std::to_string(first.micro_batch) + "), " + calib::dtype_name(first.dtype);
  if (!out.report.empty()) {
    std::vector<report::TrainReportItem> items;
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
      report::TrainReportItem it;
      it.name = file.variant_names.empty() ? (first.name.empty() ? doc.path : first.name) : file.variant_names[i];
      it.results = results[i];
      it.gpus = report::gpu_times(runs[i]->step.graph, runs[i]->log);
      it.makespan_s = runs[i]->log.makespan.seconds();
      it.links = report::link_use(runs[i]->log, *runs[i]->topology);
      items.push_back(std::move(it));
    }
    report::write_report(out.report, "--report",
                         report::train_report_html(first.name.empty() ? doc.path : first.name, heading, items,
                                                   report::format_table(results, file.variant_names)));
    std::cerr << "report written to " << out.report << "\n";
  }
  if (out.json) {
    if (file.variant_names.empty()) {
      std::cout << report::to_json(results[0]).dump(2) << "\n";
    } else {
      nlohmann::ordered_json j;
      j["variants"] = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < results.size(); ++i) {
        nlohmann::ordered_json v;
        v["name"] = file.variant_names[i];
        const auto one = report::to_json(results[i]);
        for (auto it = one.begin(); it != one.end(); ++it) {
          if (it.key() != "name") v[it.key()] = it.value();  // the variant's name replaces the scenario's
        }
        j["variants"].push_back(v);
      }
      std::cout << j.dump(2) << "\n";
    }
    return 0;
  }
  std::cout << heading << "\n";
  if (!first.description.empty()) std::cout << first.description << "\n";
  std::cout << "\n" << report::format_table(results, file.variant_names);
  return 0;
}

}  // namespace

Action add_run(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("run", "run a scenario file (with its variants side by side)");
  struct Opts {
    std::string file;
    std::vector<std::string> sets;
    OutputOptions out;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("file", o->file, "scenario JSON file")->required();
  cmd->add_option("--set", o->sets, "override a field: path=value (e.g. parallel.tp=4), repeatable");
  cmd->add_flag("--json", o->out.json, "print one JSON document instead of the table");
  add_trace_flags(cmd, o->out.trace, true);
  cmd->add_option("--report", o->out.report, "write a self-contained HTML report with charts to this file");
  cmd->add_flag("--dump-resolved", o->out.dump_resolved, "print the scenario with every default filled, and stop");
  return [o, &g] {
    auto doc = config::load(o->file);
    for (const auto& s : o->sets) apply_set(doc.json, s);
    const auto kind = document_kind(doc);
    if (kind == "infer") return run_serving_document(doc, g, o->out.json, o->out.trace, o->out.report);
    if (kind == "collective") {
      if (o->out.trace.wanted() || !o->out.report.empty() || o->out.dump_resolved)
        throw InputError(kCommandLine, "run", "a collective document has no trace, report or resolved form");
      return run_collective_document(doc, g, o->out.json, false);
    }
    return run_document(doc, g, o->out);
  };
}

Action add_validate(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("validate", "check a scenario file (parse, resolve, plan, memory) without simulating");
  auto file = std::make_shared<std::string>();
  cmd->add_option("file", *file, "scenario JSON file")->required();
  return [file, &g] {
    OutputOptions out;
    out.validate_only = true;
    const auto doc = config::load(*file);
    const auto kind = document_kind(doc);
    if (kind == "infer") return validate_serving_document(doc, g);
    if (kind == "collective") return run_collective_document(doc, g, false, true);
    return run_document(doc, g, out);
  };
}

Action add_train(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("train", "simulate one training step from flags");
  auto flags = std::make_shared<FieldFlags>(cmd, config::ScenarioKind::kTrain);
  auto out = std::make_shared<OutputOptions>();
  cmd->add_flag("--json", out->json, "print one JSON document instead of the table");
  add_trace_flags(cmd, out->trace, true);
  cmd->add_option("--report", out->report, "write a self-contained HTML report with charts to this file");
  cmd->add_flag("--dump-resolved", out->dump_resolved, "print the scenario with every default filled, and stop");
  return [flags, out, &g] {
    nlohmann::json j = nlohmann::json::object();
    flags->put(j);
    j["name"] = flags->text("--model") + " on " + flags->text("--cluster");
    try {
      return run_document(config::JsonDoc{kCommandLine, j}, g, *out);
    } catch (const InputError& e) {
      throw name_flags(e, config::ScenarioKind::kTrain);
    }
  };
}

}  // namespace cs::cli
