// `validate-published`: runs published cases (scenarios/validation/*.json) and prints predicted
// against published with the relative error, then the median and max over scored cases.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>

#include "calibration/profile/hardware_profile.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/cluster_file.hpp"
#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/machine_file.hpp"
#include "sim/config/model_file.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/config/reader.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/parallel.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/cluster_spec.hpp"
#include "sim/network/fabric_spec.hpp"
#include "sim/report/serving_results.hpp"
#include "sim/report/train_results.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/study/batch.hpp"
#include "sim/study/machine_topology.hpp"
#include "sim/study/serving_run.hpp"
#include "sim/study/training_run.hpp"
#include "sim/workload/collective_timing.hpp"
#include "sim/workload/deepep_exchange.hpp"
#include "sim/workload/work_estimate.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/work_bounds.hpp"

namespace cs::cli {

namespace {

struct Case {
  std::string kind, id, source, metric_text, cluster, op, algo, metric, role, note, unit, fabric;
  int nodes = 1;
  // kind "deepep": one DeepEP dispatch or combine (model, tokens per GPU, kernel, phase).
  std::string model, kernel, phase, dispatch;
  int ep = 0;
  double tokens = 0;
  nlohmann::json serving;  ///< kind "serving": an infer scenario document
  int gpus = 0;
  double bytes = 0, published = 0, predicted = 0;
  std::optional<double> tolerance;
  std::string algorithm_used;
};

bool glob_match(const std::string& pattern, const std::string& s) {
  // '*' matches any run of characters; everything else literally.
  std::size_t p = 0, i = 0, star = std::string::npos, mark = 0;
  while (i < s.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = i;
    } else if (p < pattern.size() && pattern[p] == s[i]) {
      ++p;
      ++i;
    } else if (star != std::string::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<Case> parse_cases(const config::JsonDoc& doc) {
  config::Problems problems;
  auto r = config::Reader::root(doc, problems);
  problems.throw_if_any();
  (void)r.opt_string("description", "");
  std::vector<Case> out;
  for (auto& c : r.each("cases")) {
    Case k;
    k.id = c.req_string("id");
    k.source = c.req_string("source");
    k.metric_text = c.opt_string("metric_text", "");
    k.kind = c.req_enum("kind", {"collective", "serving", "training", "deepep"});
    if (k.kind == "deepep") {
      // DeepEP's all-to-all kernels, as workload::time_deepep runs them: the metric is DeepEP's
      // bandwidth by its own byte count (rdma_bw across nodes, nvl_bw inside one) or the latency.
      k.cluster = c.req_string("cluster");
      k.fabric = c.opt_string("fabric", "");
      k.model = c.req_string("model");
      k.ep = static_cast<int>(c.req_int("ep", 2, 4096));
      k.tokens = c.req_number("tokens", 1, 1e9);
      k.kernel = c.req_enum("kernel", {"normal", "low_latency"});
      k.phase = c.req_enum("phase", {"dispatch", "combine"});
      k.dispatch = c.req_enum("dispatch", {"fp8", "bf16"});
      k.metric = c.req_enum("metric", {"rdma_bw", "nvl_bw", "latency"});
      k.unit = c.req_enum("unit", {"GB/s", "us"});
      if ((k.metric == "latency") != (k.unit == "us"))
        c.fail_at("unit", "expected us for metric latency and GB/s for the bandwidths");
    } else if (k.kind == "training") {
      const auto* sc = c.raw("scenario");
      if (!sc || !sc->is_object())
        c.fail_at("scenario", "expected a training scenario object");
      else
        k.serving = *sc;
      k.metric = c.req_enum("metric", {"megatron_tflops_per_gpu", "tflops_per_gpu", "hw_tflops_per_gpu", "mfu",
                                       "tokens_per_s_per_gpu", "step_time_s", "allocated_gib"});
      k.unit = c.req_enum("unit", {"TFLOP/s", "%", "tokens/s/GPU", "s", "GiB"});
    } else if (k.kind == "serving") {
      // An infer scenario (the schema of `run FILE` with "kind": "infer") and the metric to read.
      const auto* sc = c.raw("scenario");
      if (!sc || !sc->is_object())
        c.fail_at("scenario", "expected an infer scenario object");
      else
        k.serving = *sc;
      k.metric = c.req_enum("metric", {"output_tokens_per_s", "output_tokens_per_s_per_gpu"});
      k.unit = c.req_enum("unit", {"tokens/s", "tokens/s/GPU"});
    } else {
      k.cluster = c.req_string("cluster");
      k.gpus = static_cast<int>(c.req_int("gpus", 2, 64));
      k.nodes = static_cast<int>(c.opt_int("nodes", 1, 100000, 1));
      k.fabric = c.opt_string("fabric", "");
      if (k.nodes > 1 && k.fabric.empty()) c.fail_at("fabric", "a fabric is required when nodes > 1");
      k.op = c.req_enum("op", {"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"});
      k.algo = c.req_enum("algo", {"auto", "ring", "tree", "nvls", "direct"});
      k.bytes = c.req_quantity("bytes", Dimension::kBytes, 1.0);
      k.metric = c.req_enum("metric", {"busbw", "algbw"});
      k.unit = c.req_enum("unit", {"GB/s"});
    }
    k.published = c.req_number("published", 1e-9, 1e15);
    if (const auto* t = c.raw("tolerance"); t && !t->is_null()) {
      if (!t->is_number() || t->get<double>() <= 0) {
        c.fail_at("tolerance", "expected a positive fraction (0.15 = 15%) or null");
      } else {
        k.tolerance = t->get<double>();
      }
    }
    k.role = c.req_enum("role", {"validation", "calibration", "context"});
    k.note = c.opt_string("note", "");
    c.finish();
    out.push_back(k);
  }
  r.finish();
  problems.throw_if_any();
  return out;
}

/// One DeepEP case: EP GPUs over ep / (GPUs per box) boxes of the cluster joined by the fabric.
void run_deepep(const config::Catalog& catalog, const std::string& path, const std::string& where, Case& c) {
  const auto box = config::resolve_box(
      catalog, path, config::BoxRefs{c.cluster, "", c.fabric, where + "/cluster", "", where + "/fabric"});
  const int per_node = std::min(c.ep, box.cluster.gpus);
  if (c.ep % per_node != 0)
    throw InputError(path, where + "/ep", "expected a multiple of the cluster's " + std::to_string(per_node) + " GPUs");
  c.nodes = c.ep / per_node;
  if (c.nodes > 1 && !box.fabric)
    throw InputError(path, where + "/fabric", "a fabric is required when EP spans several boxes");
  const auto model = config::parse_model(
      config::load(catalog.locate(config::CatalogKind::kModel, c.model, path, where + "/model")), c.model);
  if (!model.is_moe() || model.moe.experts % c.ep != 0)
    throw InputError(path, where + "/ep", "expected a MoE model whose experts EP divides");
  const auto topo = study::machine_topology({box.cluster, per_node, c.nodes, box.fabric});
  workload::DeepepRequest r;
  r.kernel = c.kernel == "normal" ? workload::DeepepKernel::kNormal : workload::DeepepKernel::kLowLatency;
  r.combine = c.phase == "combine";
  r.fp8 = c.dispatch == "fp8";
  r.tokens = c.tokens;
  r.ep = c.ep;
  r.nodes = c.nodes;
  const auto x = workload::time_deepep(topo, model, r, box.profile);
  c.predicted = c.metric == "latency"   ? x.seconds * 1e6
                : c.metric == "rdma_bw" ? x.logical_rdma_bytes / x.seconds / 1e9
                                        : x.logical_nvl_bytes / x.seconds / 1e9;
  c.algorithm_used = std::string(c.kernel == "normal" ? "normal " : "low-latency ") + c.phase + ", " + c.model +
                     ", EP" + std::to_string(c.ep) + ", " + fixed(c.tokens, 0) + " tokens/GPU";
  c.gpus = c.ep;
}

std::string pct(double f) { return (f >= 0 ? "+" : "") + fixed(f * 100.0, 1) + "%"; }

}  // namespace

Action add_validate_published(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("validate-published", "compare predictions with published measurements");
  struct Opts {
    std::string file, ids = "*";
    bool json = false, markdown = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("file", o->file, "case file (e.g. scenarios/validation/f-collectives.json)")->required();
  cmd->add_option("--ids", o->ids, "only cases whose id matches this pattern ('*' wildcards)");
  cmd->add_flag("--json", o->json, "print {\"cases\": [...], \"median_abs_error\", \"max_abs_error\"}");
  cmd->add_flag("--markdown", o->markdown, "print a Markdown table (docs/accuracy.md)");
  return [o, &g] {
    const config::Catalog catalog(g.data_dir);
    const auto doc = config::load(o->file);
    auto cases = parse_cases(doc);
    std::erase_if(cases, [&](const Case& c) { return !glob_match(o->ids, c.id); });
    if (cases.empty()) throw InputError("command line", "--ids", "no case id matches '" + o->ids + "' in " + o->file);
    // Each training and serving case resolved first (serially: cheap, and its errors come in file
    // order), and the file's work bounded as a whole before anything runs: each case under the limit
    // as a single run would be, and their sum, as a sweep's points are.
    std::vector<std::optional<scenario::Scenario>> trainings(cases.size());
    std::vector<std::optional<serving::ServingScenario>> servings(cases.size());
    double work = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      auto& c = cases[i];
      const std::string where = "/cases/" + std::to_string(i);
      const std::string who = doc.path + " " + where + " (" + c.id + ")";
      if (c.kind == "training") {
        const auto file = config::parse_scenario(config::JsonDoc{doc.path + " " + where + "/scenario", c.serving});
        trainings[i] = config::resolve(file.specs.at(0), catalog, doc.path + " " + where + "/scenario");
        check_training_work(*trainings[i], false, who, g);
        work += workload::estimate_training_work(*trainings[i], false).total();
      } else if (c.kind == "serving") {
        servings[i] = config::parse_serving(config::JsonDoc{doc.path + " " + where + "/scenario", c.serving}, catalog);
        check_serving_work(*servings[i], who, g);
        work += serving_work(*servings[i]).total();
      } else {
        // A collective or a DeepEP exchange: its GPUs and one size's flows (all-to-all n(n-1)).
        const double gpus = c.kind == "deepep" ? c.ep : static_cast<double>(c.gpus) * c.nodes;
        const bool all_to_all = c.kind == "deepep" || c.op == "alltoall";
        const double flows = all_to_all ? gpus * (gpus - 1) : 2 * gpus;
        check_collective_work(gpus, flows, 1, true, g);
        work += collective_work(gpus, flows, 1, true);
      }
    }
    check_batch_work(work, cases.size(), "cases of " + o->file, "--ids PATTERN narrows them", g);
    // Cases are independent: simulated in parallel; scored in file order afterwards.
    auto progress = batch_progress("validation cases", cases.size());
    study::TopologyCache topologies;
    study::run_batch(
        cases.size(),
        [&](std::size_t i) {
          auto& c = cases[i];
          const std::string where = "/cases/" + std::to_string(i);
          if (c.kind == "training") {
            const auto& sc = *trainings[i];
            const auto r = report::train_results(sc, study::run_training(sc, study::RunOptions{false, false}));
            // allocated_gib: what torch.cuda.max_memory_allocated counts, the memory per GPU without
            // the CUDA/NCCL runtime reserve (`other`), which the allocator never sees.
            c.predicted = c.metric == "megatron_tflops_per_gpu" ? r.megatron_tflops_per_gpu
                          : c.metric == "hw_tflops_per_gpu"     ? r.hw_tflops_per_gpu
                          : c.metric == "mfu"                   ? r.mfu * 100
                          : c.metric == "tokens_per_s_per_gpu"  ? r.tokens_per_s / sc.gpus
                          : c.metric == "step_time_s"           ? r.step_time_s
                          : c.metric == "allocated_gib"         ? (r.memory.total - r.memory.other) / 1073741824.0
                                                                : r.tflops_per_gpu;
            c.algorithm_used = sc.model.id + " TP" + std::to_string(sc.plan.tp) + " PP" + std::to_string(sc.plan.pp) +
                               (sc.plan.cp > 1 ? " CP" + std::to_string(sc.plan.cp) : std::string()) + " DP" +
                               std::to_string(sc.plan.dp);
            c.cluster = sc.cluster.id;
            c.gpus = sc.gpus;
            return;
          }
          if (c.kind == "deepep") {
            run_deepep(catalog, doc.path, where, c);
            return;
          }
          if (c.kind == "serving") {
            const auto& sc = *servings[i];
            const auto r = report::serving_results(sc, study::run_serving(sc, {}, &topologies));
            c.predicted = c.metric == "output_tokens_per_s" ? r.output_tokens_per_s : r.output_tokens_per_s_per_gpu;
            c.algorithm_used = sc.model.id + " TP" + std::to_string(sc.tp);
            c.cluster = sc.cluster.id;
            c.gpus = sc.gpus;
            return;
          }
          const auto box = config::resolve_box(
              catalog, doc.path,
              config::BoxRefs{c.cluster, "", c.nodes > 1 ? c.fabric : "", where + "/cluster", "", where + "/fabric"});
          const auto& cluster = box.cluster;
          const auto& profile = box.profile;
          if (c.gpus > cluster.gpus)
            throw InputError(doc.path, where + "/gpus", "cluster '" + c.cluster + "' has fewer GPUs");
          const auto topo = study::machine_topology({cluster, c.gpus, c.nodes, box.fabric});
          coll::CollectiveOp op{};
          coll::Algorithm algo{};
          (void)coll::parse_op(c.op, op);
          (void)coll::parse_algorithm(c.algo, algo);
          std::vector<int> ranks;
          if (op == coll::CollectiveOp::kSendRecv) {
            ranks = {0, 1};
          } else {
            for (int r = 0; r < c.gpus * c.nodes; ++r) ranks.push_back(r);
          }
          const auto t = workload::time_collective(topo, op, algo, ranks, c.bytes, profile.collective_latency.value,
                                                   net::NetworkModelKind::kFlow, &profile.collectives);
          c.predicted = (c.metric == "busbw" ? t.busbw_bytes_per_s : t.algbw_bytes_per_s) / 1e9;
          c.algorithm_used = coll::algorithm_name(t.algorithm);
        },
        progress.get());
    std::vector<double> scored;
    for (const auto& c : cases) {
      if (c.role == "validation") scored.push_back(std::fabs(c.predicted / c.published - 1.0));
    }
    std::sort(scored.begin(), scored.end());
    double median = 0, max = 0;
    if (!scored.empty()) {
      const std::size_t n = scored.size();
      median = n % 2 ? scored[n / 2] : 0.5 * (scored[n / 2 - 1] + scored[n / 2]);
      max = scored.back();
    }
    if (o->json) {
      nlohmann::ordered_json j;
      j["cases"] = nlohmann::ordered_json::array();
      for (const auto& c : cases) {
        const double err = c.predicted / c.published - 1.0;
        nlohmann::ordered_json k{{"id", c.id},   {"published", c.published}, {"predicted", c.predicted},
                                 {"error", err}, {"role", c.role},           {"algorithm", c.algorithm_used}};
        k["tolerance"] = c.tolerance ? nlohmann::ordered_json(*c.tolerance) : nlohmann::ordered_json(nullptr);
        k["within_tolerance"] = c.tolerance ? std::fabs(err) <= *c.tolerance : true;
        j["cases"].push_back(k);
      }
      j["scored_cases"] = scored.size();
      j["median_abs_error"] = median;
      j["max_abs_error"] = max;
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    if (o->markdown) {
      std::cout << "| case | what | published | predicted | error | role |\n|---|---|---:|---:|---:|---|\n";
      for (const auto& c : cases) {
        std::cout << "| `" << c.id << "` | ";
        if (c.kind == "deepep") {
          std::cout << c.algorithm_used << ", " << c.metric << ", " << c.gpus << " GPUs of `" << c.cluster << "`";
        } else if (c.kind == "serving" || c.kind == "training") {
          std::cout << c.metric << ", " << c.algorithm_used << ", " << c.gpus << " GPUs of `" << c.cluster << "`";
        } else {
          std::cout << c.op << " " << c.metric << ", " << c.gpus << " GPUs of `" << c.cluster << "`, "
                    << human_bytes(c.bytes) << ", algo " << c.algorithm_used;
        }
        const int digits = c.unit == "s" ? 3 : (c.unit == "GiB" ? 2 : 1);
        std::cout << " | " << fixed(c.published, digits) << " " << c.unit << " | " << fixed(c.predicted, digits) << " "
                  << c.unit << " | " << pct(c.predicted / c.published - 1.0) << " | " << c.role << " |\n";
      }
      std::cout << "\nScored (validation) cases: " << scored.size() << "; median |error| " << fixed(median * 100, 1)
                << "%, max |error| " << fixed(max * 100, 1) << "%.\n";
      return 0;
    }
    std::cout << std::left << std::setw(40) << "case" << std::right << std::setw(12) << "published" << std::setw(12)
              << "predicted" << std::setw(9) << "error"
              << "  role\n";
    for (const auto& c : cases) {
      const int digits = c.unit == "s" ? 3 : (c.unit == "GiB" ? 2 : 1);
      std::cout << std::left << std::setw(40) << c.id << std::right << std::setw(12) << fixed(c.published, digits)
                << std::setw(12) << fixed(c.predicted, digits) << std::setw(9) << pct(c.predicted / c.published - 1.0)
                << "  " << c.role << "\n";
    }
    std::cout << "scored cases " << scored.size() << ": median |error| " << fixed(median * 100, 1) << "%, max |error| "
              << fixed(max * 100, 1) << "%\n";
    return 0;
  };
}

}  // namespace cs::cli
