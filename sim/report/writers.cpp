#include "sim/report/writers.hpp"

#include <iomanip>
#include <sstream>

#include "sim/core/peak_memory.hpp"
#include "sim/core/quantity.hpp"

namespace cs::report {

nlohmann::ordered_json to_json(const TrainResults& r, bool with_run_info) {
  nlohmann::ordered_json j;
  j["name"] = r.name;
  j["model"] = r.model;
  j["cluster"] = r.cluster;
  j["profile"] = r.profile;
  j["profile_origin"] = r.profile_origin;
  j["gpus"] = r.gpus;
  j["parallel"] = {{"tp", r.plan.tp},   {"dp", r.plan.dp},    {"pp", r.plan.pp},
                   {"vpp", r.plan.vpp}, {"cp", r.plan.cp},    {"cp_comm", r.cp_ring ? "ring" : "allgather"},
                   {"sp", r.plan.sp},   {"zero", r.plan.zero}};
  if (r.plan.pp > 1) {  // the pipeline schedule, where there is a pipeline
    j["parallel"]["schedule"] = plan::schedule_name(r.plan.schedule);
  }
  if (r.moe) {
    j["parallel"]["ep"] = r.moe->ep;
    j["parallel"]["etp"] = r.moe->etp;
    j["parallel"]["edp"] = r.moe->edp;
    j["moe"] = {{"routing", r.moe->routing},
                {"redundant_experts", r.moe->redundant_experts},
                {"dispatch_dtype", r.moe->dispatch_dtype},
                {"imbalance", r.moe->imbalance},
                {"dispatch_bytes_per_token", r.moe->dispatch_bytes_per_token}};
  }
  j["attention"] = r.flash_attention ? "flash" : "unfused";
  j["symmetry"] = r.dp_symmetry ? "dp" : "none";
  j["stage_layers"] = r.stage_layers;
  j["micro_batches"] = r.micro_batches;
  j["step_time_s"] = r.step_time_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["hw_tflops_per_gpu"] = r.hw_tflops_per_gpu;
  j["hfu"] = r.hfu;
  j["megatron_tflops_per_gpu"] = r.megatron_tflops_per_gpu > 0 ? nlohmann::ordered_json(r.megatron_tflops_per_gpu)
                                                               : nlohmann::ordered_json(nullptr);
  j["breakdown_s"] = {{"compute", r.breakdown.compute},
                      {"exposed_comm", r.breakdown.exposed_comm},
                      {"idle", r.breakdown.idle},
                      {"pipeline_bubble", r.breakdown.pipeline_bubble},
                      {"comm_total", r.breakdown.comm_total}};
  j["compute_sources"] = compute_sources_json(r.compute_sources);
  j["compute_by_kernel"] = compute_classes_json(r.compute_classes);
  j["memory_per_gpu"] = {{"weights", r.memory.weights},     {"gradients", r.memory.gradients},
                         {"optimizer", r.memory.optimizer}, {"activations", r.memory.activations},
                         {"other", r.memory.other},         {"total", r.memory.total},
                         {"capacity", r.memory.capacity}};
  j["fits"] = r.fits;
  j["single_gpu_step_time_s"] = r.single_gpu_step_time_s;
  j["single_gpu_fits"] = r.single_gpu_fits;
  j["speedup"] = r.speedup;
  j["scaling_efficiency"] = r.scaling_efficiency;
  if (r.cost) {
    j["cost"] = {{"offer", r.cost->offer},
                 {"currency", r.cost->currency},
                 {"price_per_hour", r.cost->price_per_hour},
                 {"per_step", r.cost->per_run},
                 {"per_million_tokens", r.cost->per_million_tokens}};
    if (r.cost->boxes > 1) j["cost"]["boxes"] = r.cost->boxes;
    if (r.cost->price_per_hour_max > 0) {  // the offer quotes a range: its top too
      j["cost"]["price_per_hour_max"] = r.cost->price_per_hour_max;
      j["cost"]["per_step_max"] = r.cost->per_run_max;
      j["cost"]["per_million_tokens_max"] = r.cost->per_million_tokens_max;
    }
  }
  auto colls = nlohmann::ordered_json::array();
  for (const auto& c : r.collectives) {
    colls.push_back({{"label", c.label},
                     {"algorithm", c.algorithm},
                     {"calls_per_gpu", c.calls_per_gpu},
                     {"bytes_per_call", c.bytes_per_call},
                     {"seconds_per_gpu", c.seconds_per_gpu}});
  }
  j["collectives"] = colls;
  j["warnings"] = r.warnings;
  auto rates = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.rates) rates[k] = v;
  j["rates"] = rates;
  j["events"] = r.events;
  j["flows"] = r.flows;
  if (with_run_info) {
    j["run_info"] = {{"version", "0.1.0"},
                     {"wall_s", r.wall_s},
                     {"engine_partitions", r.partitions},
                     {"engine_windows", r.windows},
                     {"peak_rss_bytes", peak_rss_bytes()}};
  }
  return j;
}

namespace {

std::string gib(double b) { return fixed(b / (1024.0 * 1024.0 * 1024.0), 1) + " GiB"; }
std::string ms(double s) { return fixed(s * 1e3, 1) + " ms"; }
std::string pct(double f) { return fixed(f * 100.0, 1) + "%"; }

std::string secs(double s) { return s >= 1.0 ? fixed(s, 3) + " s" : ms(s); }

}  // namespace

std::string format_table(const std::vector<TrainResults>& results, const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](const std::string& label, auto&& f) {
    std::vector<std::string> cells;
    for (const auto& r : results) cells.push_back(f(r));
    rows.emplace_back(label, cells);
  };
  auto section = [&](const std::string& label) {
    rows.emplace_back(label, std::vector<std::string>(results.size(), ""));
  };
  row("model", [](const TrainResults& r) { return r.model; });
  row("cluster", [](const TrainResults& r) { return r.cluster; });
  row("GPUs (TP x DP x PP)", [](const TrainResults& r) {
    return std::to_string(r.gpus) + " (" + std::to_string(r.plan.tp) + " x " + std::to_string(r.plan.dp) + " x " +
           std::to_string(r.plan.pp) + ")" + (r.plan.cp > 1 ? " CP " + std::to_string(r.plan.cp) : "") +
           (r.plan.vpp > 1 ? " VPP " + std::to_string(r.plan.vpp) : "") +
           (r.plan.schedule == plan::PipelineSchedule::kDualPipe ? " DualPipe" : "") + (r.plan.sp ? " +SP" : "") +
           (r.plan.zero ? " ZeRO-" + std::to_string(r.plan.zero) : "") +
           (r.plan.ep > 1 ? " EP " + std::to_string(r.plan.ep) : "") +
           (r.plan.etp > 1 ? " ETP " + std::to_string(r.plan.etp) : "");
  });
  bool any_moe = false;
  for (const auto& r : results) any_moe = any_moe || r.moe.has_value();
  if (any_moe) {
    row("MoE routing", [](const TrainResults& r) -> std::string {
      if (!r.moe) return "-";
      return r.moe->routing +
             (r.moe->redundant_experts ? " +" + std::to_string(r.moe->redundant_experts) + " redundant"
                                       : std::string()) +
             ", dispatch " + r.moe->dispatch_dtype;
    });
    row("most loaded GPU / mean (per MoE layer)",
        [](const TrainResults& r) { return r.moe ? fixed(r.moe->imbalance, 3) + "x" : std::string("-"); });
    row("dispatch bytes per token",
        [](const TrainResults& r) { return r.moe ? human_bytes(r.moe->dispatch_bytes_per_token) : std::string("-"); });
  }
  row("micro-batches per step", [](const TrainResults& r) { return std::to_string(r.micro_batches); });
  bool any_symmetry = false;
  for (const auto& r : results) any_symmetry = any_symmetry || r.dp_symmetry;
  if (any_symmetry) {
    row("simulated", [](const TrainResults& r) {
      return r.dp_symmetry ? "one DP replica (symmetry dp, approximate)" : "every GPU";
    });
  }
  section("-- speed");
  row("step time", [](const TrainResults& r) { return secs(r.step_time_s); });
  row("tokens/s", [](const TrainResults& r) { return fixed(r.tokens_per_s, 0); });
  row("model TFLOP/s per GPU", [](const TrainResults& r) { return fixed(r.tflops_per_gpu, 1); });
  row("MFU", [](const TrainResults& r) { return pct(r.mfu); });
  row("hardware TFLOP/s per GPU (HFU)",
      [](const TrainResults& r) { return fixed(r.hw_tflops_per_gpu, 1) + " (" + pct(r.hfu) + ")"; });
  section("-- where the time goes (mean per GPU)");
  row("compute", [](const TrainResults& r) {
    return secs(r.breakdown.compute) + " (" + pct(r.breakdown.compute / r.step_time_s) + ")";
  });
  row("  kernel times from", [](const TrainResults& r) { return compute_sources_text(r.compute_sources); });
  row("  spent on", [](const TrainResults& r) { return compute_classes_text(r.compute_classes); });
  row("exposed communication", [](const TrainResults& r) {
    return secs(r.breakdown.exposed_comm) + " (" + pct(r.breakdown.exposed_comm / r.step_time_s) + ")";
  });
  row("idle (pipeline bubble when PP > 1)", [](const TrainResults& r) {
    return secs(r.breakdown.idle) + " (" + pct(r.breakdown.idle / r.step_time_s) + ")";
  });
  row("all communication", [](const TrainResults& r) { return secs(r.breakdown.comm_total); });
  // One row per collective kind seen in any result.
  std::vector<std::string> labels;
  for (const auto& r : results) {
    for (const auto& c : r.collectives) {
      if (std::find(labels.begin(), labels.end(), c.label) == labels.end()) labels.push_back(c.label);
    }
  }
  for (const auto& label : labels) {
    row("  " + label, [&](const TrainResults& r) -> std::string {
      for (const auto& c : r.collectives) {
        if (c.label != label) continue;
        return secs(c.seconds_per_gpu) + ", " + std::to_string(c.calls_per_gpu) + " x " +
               human_bytes(c.bytes_per_call) + " " + c.algorithm;
      }
      return "-";
    });
  }
  section("-- memory per GPU");
  row("weights", [](const TrainResults& r) { return gib(r.memory.weights); });
  row("gradients", [](const TrainResults& r) { return gib(r.memory.gradients); });
  row("optimizer state", [](const TrainResults& r) { return gib(r.memory.optimizer); });
  row("activations", [](const TrainResults& r) { return gib(r.memory.activations); });
  row("other (runtime)", [](const TrainResults& r) { return gib(r.memory.other); });
  row("total / capacity", [](const TrainResults& r) {
    return gib(r.memory.total) + " / " + gib(r.memory.capacity) + (r.fits ? "" : "  DOES NOT FIT");
  });
  section("-- scaling against one GPU");
  row("one-GPU step time",
      [](const TrainResults& r) { return secs(r.single_gpu_step_time_s) + (r.single_gpu_fits ? "" : " (*)"); });
  row("speedup", [](const TrainResults& r) { return fixed(r.speedup, 2) + "x"; });
  row("scaling efficiency", [](const TrainResults& r) { return pct(r.scaling_efficiency); });
  bool any_cost = false;
  for (const auto& r : results) any_cost = any_cost || r.cost.has_value();
  if (any_cost) {
    section("-- cost");
    row("price per hour", [](const TrainResults& r) {
      return r.cost ? fixed(r.cost->price_per_hour, 2) +
                          (r.cost->price_per_hour_max > 0 ? " to " + fixed(r.cost->price_per_hour_max, 2) : "") + " " +
                          r.cost->currency + " (" + r.cost->offer +
                          (r.cost->boxes > 1 ? " x " + std::to_string(r.cost->boxes) + " boxes" : std::string()) + ")"
                    : "-";
    });
    row("cost per step", [](const TrainResults& r) {
      return r.cost
                 ? fixed(r.cost->per_run, 4) + (r.cost->per_run_max > 0 ? " to " + fixed(r.cost->per_run_max, 4) : "") +
                       " " + r.cost->currency
                 : "-";
    });
    row("cost per million tokens", [](const TrainResults& r) {
      return r.cost
                 ? fixed(r.cost->per_million_tokens, 2) +
                       (r.cost->per_million_tokens_max > 0 ? " to " + fixed(r.cost->per_million_tokens_max, 2) : "") +
                       " " + r.cost->currency
                 : "-";
    });
  }
  section("-- rates used (provenance)");
  row("profile", [](const TrainResults& r) { return r.profile + " (" + r.profile_origin + ")"; });
  std::vector<std::string> rate_labels;
  for (const auto& r : results) {
    for (const auto& [k, v] : r.rates) {
      if (std::find(rate_labels.begin(), rate_labels.end(), k) == rate_labels.end()) rate_labels.push_back(k);
    }
  }
  for (const auto& label : rate_labels) {
    row(label, [&](const TrainResults& r) -> std::string {
      for (const auto& [k, v] : r.rates) {
        if (k == label) return v;
      }
      return "-";
    });
  }

  std::size_t w0 = 0;
  for (const auto& [label, cells] : rows) w0 = std::max(w0, label.size());
  std::vector<std::size_t> widths(results.size(), 0);
  for (std::size_t i = 0; i < results.size(); ++i) widths[i] = names.empty() ? 0 : names[i].size();
  for (const auto& [label, cells] : rows) {
    for (std::size_t i = 0; i < cells.size(); ++i) widths[i] = std::max(widths[i], cells[i].size());
  }
  std::ostringstream out;
  out << std::left << std::setw(static_cast<int>(w0)) << "";
  for (std::size_t i = 0; i < results.size(); ++i) {
    out << "  " << std::setw(static_cast<int>(widths[i])) << (names.empty() ? results[i].name : names[i]);
  }
  out << "\n";
  for (const auto& [label, cells] : rows) {
    out << std::left << std::setw(static_cast<int>(w0)) << label;
    for (std::size_t i = 0; i < cells.size(); ++i) out << "  " << std::setw(static_cast<int>(widths[i])) << cells[i];
    out << "\n";
  }
  bool any_unfit_single = false;
  for (const auto& r : results) any_unfit_single = any_unfit_single || !r.single_gpu_fits;
  if (any_unfit_single) {
    out << "(*) the model does not fit one GPU; the one-GPU time ignores capacity, as if it had enough memory.\n";
  }
  out << "Every rate's source is cited in its profile or cluster file; formulas: docs/metrics.md.\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    for (const auto& w : results[i].warnings) {
      out << "warning: " << (results.size() > 1 ? (names.empty() ? results[i].name : names[i]) + ": " : "") << w
          << "\n";
    }
  }
  return out.str();
}

std::string compute_sources_text(const std::array<double, 4>& s) {
  const double table = s[0] + s[1] + s[2];
  if (table <= 0) return "analytic model only";
  return fixed(table * 100, 0) + "% tables (" + fixed(s[0] * 100, 0) + " hit, " + fixed(s[1] * 100, 0) + " interp, " +
         fixed(s[2] * 100, 0) + " extrap), " + fixed(s[3] * 100, 0) + "% analytic";
}

const std::array<const char*, models::kKernelClasses>& compute_class_labels() {
  static constexpr std::array<const char*, models::kKernelClasses> kLabels = {
      "GEMM", "expert GEMMs", "attention", "elementwise", "host-bound", "DeepEP floor"};
  return kLabels;
}

std::string compute_classes_text(const std::array<double, models::kKernelClasses>& shares) {
  const auto& kText = compute_class_labels();
  std::string out;
  for (std::size_t k = 0; k < shares.size(); ++k) {
    if (shares[k] < 0.005) continue;
    out += (out.empty() ? "" : ", ") + std::string(kText[k]) + " " + fixed(shares[k] * 100, 0) + "%";
  }
  return out.empty() ? "no kernels" : out;
}

nlohmann::ordered_json compute_sources_json(const std::array<double, calib::kKernelSources>& shares) {
  auto j = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < shares.size(); ++k)
    j[calib::kernel_source_name(static_cast<calib::KernelSource>(k))] = shares[k];
  return j;
}

nlohmann::ordered_json compute_classes_json(const std::array<double, models::kKernelClasses>& shares) {
  auto j = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < shares.size(); ++k)
    j[models::kernel_class_name(static_cast<models::KernelClass>(k))] = shares[k];
  return j;
}

}  // namespace cs::report
