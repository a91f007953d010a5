// `run`, `train` and `validate`: scenario in, training results out.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/parallel.hpp"
#include "sim/core/quantity.hpp"
#include "sim/report/writers.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/study/batch.hpp"
#include "sim/study/training_run.hpp"
#include "sim/workload/step_memory.hpp"
#include "tools/cli/commands.hpp"

namespace cs::cli {

namespace {

constexpr const char* kCommandLine = "command line";

/// Scenario JSON paths and the `train` flags that set them (for messages about flags).
const std::map<std::string, std::string>& flag_of_pointer() {
  static const std::map<std::string, std::string> m{
      {"/model", "--model"},
      {"/cluster", "--cluster"},
      {"/gpus", "--gpus"},
      {"/profile", "--profile"},
      {"/offer", "--offer"},
      {"/nodes", "--nodes"},
      {"/fabric", "--fabric"},
      {"/parallel/tp", "--tp"},
      {"/parallel/dp", "--dp"},
      {"/parallel/pp", "--pp"},
      {"/parallel/vpp", "--vpp"},
      {"/parallel/cp", "--cp"},
      {"/parallel/cp_comm", "--cp-comm"},
      {"/parallel/rank_order", "--rank-order"},
      {"/parallel/schedule", "--schedule"},
      {"/training/recompute", "--recompute"},
      {"/training/attention", "--attention"},
      {"/training/lora_rank", "--lora-rank"},
      {"/training/qlora", "--qlora"},
      {"/parallel/sp", "--sp"},
      {"/parallel/zero", "--zero"},
      {"/training/seq", "--seq"},
      {"/training/global_batch", "--global-batch"},
      {"/training/micro_batch", "--micro-batch"},
      {"/training/dtype", "--dtype"},
      {"/training/grad_bucket_params", "--grad-bucket-params"},
      {"/network_model", "--network-model"},
      {"/symmetry", "--symmetry"},
      {"/allow_oom", "--allow-oom"},
  };
  return m;
}

/// Rewrites problems found in flag-built JSON so that they name the flag.
InputError name_flags(const InputError& e) {
  std::vector<InputProblem> out;
  for (auto p : e.problems()) {
    if (p.file == kCommandLine) {
      auto it = flag_of_pointer().find(p.pointer);
      if (it != flag_of_pointer().end()) p.pointer = it->second;
    }
    out.push_back(p);
  }
  return InputError(out);
}

struct OutputOptions {
  bool json = false;
  std::string trace;
  bool dump_resolved = false;
  bool validate_only = false;
};

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw InputError(path, "", "cannot write this file");
  f << text;
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
    const auto f = study::training_feasibility(scenarios[i]);
    if (!f.ok()) {
      const std::string who =
          file.variant_names.empty() ? doc.path : doc.path + " (variant '" + file.variant_names[i] + "')";
      throw InfeasibleError(who + ": " + f.reasons.front().message);
    }
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
  // Variants are independent: simulated in parallel, reported in file order.
  std::vector<report::TrainResults> results(scenarios.size());
  std::vector<std::optional<study::TrainingRun>> runs(out.trace.empty() ? 0 : scenarios.size());
  study::TopologyCache topologies;
  auto progress = batch_progress("simulating", scenarios.size());
  study::run_batch(
      scenarios.size(),
      [&](std::size_t i) {
        study::RunOptions ro;
        ro.record_links = !out.trace.empty();
        ro.topologies = &topologies;
        auto run = study::run_training(scenarios[i], ro);
        results[i] = report::train_results(scenarios[i], run);
        if (!runs.empty()) runs[i].emplace(std::move(run));
      },
      progress.get());
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    if (!out.trace.empty()) {
      const auto& log = runs[i]->log;
      const auto& step = runs[i]->step;
      std::string path = out.trace;
      if (!file.variant_names.empty()) {
        const auto p = std::filesystem::path(out.trace);
        path = (p.parent_path() / (p.stem().string() + "." + slug(file.variant_names[i]) + p.extension().string()))
                   .string();
      }
      write_file(path, report::chrome_trace(step.graph, log, *runs[i]->topology).dump());
      std::cerr << "trace written to " << path << "\n";
    }
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
  const auto& first = scenarios.front();
  std::cout << (first.name.empty() ? doc.path : first.name) << ": " << first.model.id << ", sequence " << first.seq
            << ", global batch " << first.global_batch << " (micro-batch " << first.micro_batch << "), "
            << calib::dtype_name(first.dtype) << "\n";
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
  cmd->add_option("--trace", o->out.trace, "write a Chrome/Perfetto trace to this file");
  cmd->add_flag("--dump-resolved", o->out.dump_resolved, "print the scenario with every default filled, and stop");
  return [o, &g] {
    auto doc = config::load(o->file);
    for (const auto& s : o->sets) config::apply_override(doc.json, s);
    if (doc.json.is_object() && doc.json.value("kind", "train") == "infer") {
      return run_serving_document(doc, g, o->out.json, o->out.trace);
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
    if (doc.json.is_object() && doc.json.value("kind", "train") == "infer") return validate_serving_document(doc, g);
    return run_document(doc, g, out);
  };
}

Action add_train(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("train", "simulate one training step from flags");
  struct Opts {
    std::string model, cluster, profile, offer, fabric,
        dtype = "bf16", network_model = "flow", symmetry = "none", schedule = "1f1b", recompute = "none",
        rank_order = "tp-cp-dp-pp", attention = "flash", cp_comm = "ring";
    int gpus = 0, tp = 1, dp = 0, zero = 0, pp = 1, vpp = 1, cp = 1, nodes = 1, lora_rank = 0;
    bool qlora = false;
    long long seq = 0, global_batch = 0, micro_batch = 1, bucket = 40000000;
    bool sp = false, allow_oom = false;
    OutputOptions out;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->model, "model id (clustersim list models) or path to a HF config.json")->required();
  cmd->add_option("--cluster", o->cluster, "cluster id (clustersim list clusters) or path")->required();
  cmd->add_option("--gpus", o->gpus, "use the first N GPUs of the cluster (default: all)");
  cmd->add_option("--profile", o->profile, "hardware profile id or path (default: the cluster's)");
  cmd->add_option("--offer", o->offer, "rental offer id or path, for cost figures");
  cmd->add_option("--nodes", o->nodes,
                  "copies of the cluster joined by --fabric: nodes, or racks for a rack-scale NVLink domain such as "
                  "gb200-nvl72");
  cmd->add_option("--fabric", o->fabric, "fabric id or path (clustersim list fabrics)");
  cmd->add_option("--tp", o->tp, "tensor-parallel degree")->required();
  cmd->add_option("--dp", o->dp, "data-parallel degree (default: GPUs / TP)");
  cmd->add_option("--pp", o->pp, "pipeline-parallel stages");
  cmd->add_option("--vpp", o->vpp, "model chunks per stage: interleaved 1F1B when > 1");
  cmd->add_option("--cp", o->cp, "context parallelism: split each sequence over CP GPUs");
  cmd->add_option(
      "--cp-comm", o->cp_comm,
      "CP's K/V exchange: ring (ring attention, blocks passed to the next rank, overlapped; default) or allgather");
  cmd->add_option("--rank-order", o->rank_order, "placement, innermost first (default tp-cp-dp-pp: TP inside a node)");
  cmd->add_option("--schedule", o->schedule, "pipeline schedule: 1f1b or gpipe");
  cmd->add_option("--recompute", o->recompute, "activation recompute: none, selective or full");
  cmd->add_option("--attention", o->attention,
                  "flash (fused, default) or unfused (score matrix in HBM, as Megatron-LM before FlashAttention)");
  cmd->add_flag("--sp", o->sp, "sequence parallelism with TP");
  cmd->add_option("--lora-rank", o->lora_rank, "LoRA fine-tuning: adapter rank on a frozen base (0 = full training)");
  cmd->add_flag("--qlora", o->qlora, "QLoRA: the frozen base in 4 bits");
  cmd->add_option("--zero", o->zero, "ZeRO stage: 0, 1, 2 or 3 (3 = fully sharded, FSDP)");
  cmd->add_option("--seq", o->seq, "sequence length in tokens")->required();
  cmd->add_option("--global-batch", o->global_batch, "sequences per step")->required();
  cmd->add_option("--micro-batch", o->micro_batch, "sequences per micro-batch");
  cmd->add_option("--dtype", o->dtype, "bf16, fp16 or fp8 (FP8 GEMMs, bf16 activations and master state)");
  cmd->add_option("--grad-bucket-params", o->bucket, "parameters per DP gradient bucket");
  cmd->add_option("--network-model", o->network_model, "flow (max-min sharing) or analytical");
  cmd->add_option("--symmetry", o->symmetry,
                  "none (default) or dp: simulate one data-parallel replica (its DP collectives still carry every "
                  "replica's traffic); faster, approximate, reported");
  cmd->add_flag("--allow-oom", o->allow_oom, "simulate even when the plan does not fit in memory");
  cmd->add_flag("--json", o->out.json, "print one JSON document instead of the table");
  cmd->add_option("--trace", o->out.trace, "write a Chrome/Perfetto trace to this file");
  cmd->add_flag("--dump-resolved", o->out.dump_resolved, "print the scenario with every default filled, and stop");
  return [o, cmd, &g] {
    nlohmann::json j;
    j["name"] = o->model + " on " + o->cluster;
    j["model"] = o->model;
    j["cluster"] = o->cluster;
    if (cmd->count("--gpus")) j["gpus"] = o->gpus;
    if (!o->profile.empty()) j["profile"] = o->profile;
    if (!o->offer.empty()) j["offer"] = o->offer;
    j["nodes"] = o->nodes;
    if (!o->fabric.empty()) j["fabric"] = o->fabric;
    j["parallel"] = {{"tp", o->tp},
                     {"pp", o->pp},
                     {"vpp", o->vpp},
                     {"cp", o->cp},
                     {"rank_order", o->rank_order},
                     {"cp_comm", o->cp_comm},
                     {"schedule", o->schedule},
                     {"sp", o->sp},
                     {"zero", o->zero}};
    if (cmd->count("--dp")) j["parallel"]["dp"] = o->dp;
    j["training"] = {{"seq", o->seq},
                     {"global_batch", o->global_batch},
                     {"micro_batch", o->micro_batch},
                     {"dtype", o->dtype},
                     {"grad_bucket_params", o->bucket},
                     {"recompute", o->recompute},
                     {"attention", o->attention},
                     {"lora_rank", o->lora_rank},
                     {"qlora", o->qlora}};
    j["network_model"] = o->network_model;
    j["symmetry"] = o->symmetry;
    j["allow_oom"] = o->allow_oom;
    try {
      return run_document(config::JsonDoc{kCommandLine, j}, g, o->out);
    } catch (const InputError& e) {
      throw name_flags(e);
    }
  };
}

}  // namespace cs::cli
