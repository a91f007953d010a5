// `kernels`: one kernel's time as the simulator sees it: the measured table row (when the shape is
// one), the table's value there (interpolated or scaled beyond its range), the analytic model's, and
// what the table covers. Also a whole decoder layer, op by op (`kernels layer`).
#include <cmath>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "calibration/profile/kernel_tables.hpp"
#include "models/ops/layer_ops.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/machine_file.hpp"
#include "sim/config/model_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/topology.hpp"
#include "sim/report/writers.hpp"
#include "sim/study/machine_topology.hpp"
#include "sim/workload/collective_timing.hpp"
#include "sim/workload/compute_model.hpp"
#include "tools/cli/commands.hpp"

namespace cs::cli {

namespace {

using Json = nlohmann::ordered_json;

std::string ms(double s) { return fixed(s * 1e3, 4) + " ms"; }

calib::Dtype gemm_dtype(const std::string& text) {
  calib::Dtype d{};
  if (text == "bf16" || text == "fp8" || text == "fp4") {
    (void)calib::parse_dtype(text, d);
    return d;
  }
  throw InputError("command line", "--dtype", "expected bf16, fp8 or fp4; got '" + text + "'");
}

Json source_json(const std::optional<calib::KernelTime>& t) {
  if (!t) return nullptr;
  return Json{{"seconds", t->seconds}, {"source", calib::kernel_source_name(t->source)}};
}

/// The measured range of the table a lookup reads, under the key it reads, as text and JSON
/// (`label` pads to the report's column; `unit` follows each value, e.g. NCCL's elements).
std::string coverage(const std::optional<calib::TableKey>& k, Json& j, const std::string& label = "coverage") {
  std::ostringstream out;
  out << "  " << label << std::string(label.size() < 14 ? 14 - label.size() : 1, ' ') << "  ";
  j = nullptr;
  if (!k) {
    out << "no rows for this kernel in this GPU's tables\n";
    return out.str();
  }
  j = Json::object();
  const char* file = calib::kernel_table_schema(k->kind).file;
  j["table"] = file;
  j["folder"] = k->folder;
  j["key"] = k->key;
  out << file << " (" << k->folder << ") " << k->key << ": ";
  const auto* t = k->table;
  for (std::size_t a = 0; a < t->axes(); ++a) {
    const auto c = t->coverage(k->key, a);
    j[t->axis_names()[a]] = {{"min", c.min}, {"max", c.max}, {"values", c.values}};
    out << (a ? ", " : "") << t->axis_names()[a] << " " << shortest(c.min) << ".." << shortest(c.max) << " ("
        << c.values << ")";
  }
  out << "\n";
  return out.str();
}

/// The expert shapes (hidden/inter/top-k/experts) the fused-MoE table measured in `dtype`: the
/// table holds named models' shapes only, so a miss should say which ones it has.
std::vector<std::string> moe_shapes(const calib::LatencyTable* t, const calib::MoeQuery& q) {
  std::set<std::string> shapes;
  if (!t) return {};
  for (const auto& key : t->keys()) {
    // kernel_source|moe_dtype|distribution|hidden|inter|topk|experts|tp|ep; the sources moe_key
    // reads for a gated (or non-gated) MLP, and its one routing distribution.
    std::vector<std::string> f;
    std::istringstream in(key);
    for (std::string part; std::getline(in, part, '|');) f.push_back(part);
    if (f.size() != 9 || f[1] != q.dtype || f[2] != "power_law_1.01") continue;
    const bool gated_source = f[0] == "moe_torch_flow_cutlass" || f[0] == "moe_torch_flow";
    if (q.gated ? gated_source : f[0] == "moe_torch_flow_nongated")
      shapes.insert(f[3] + "/" + f[4] + "/" + f[5] + "/" + f[6]);
  }
  return {shapes.begin(), shapes.end()};
}

/// Prints one kernel's report: exact row, table value, analytic value, what the simulator uses.
int report(bool json, Json j, const std::string& title, const std::optional<calib::KernelTime>& table,
           double analytic_s, const calib::KernelTime& used, double flops, const std::string& coverage_text) {
  const bool exact = table && table->source == calib::KernelSource::kMeasured;
  j["measured_s"] = exact ? Json(table->seconds) : Json(nullptr);
  j["table"] = source_json(table);
  j["analytic_s"] = analytic_s;
  j["used"] = source_json(used);
  if (json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const auto rate = [&](double s) { return flops > 0 ? "  " + fixed(flops / s / 1e12, 1) + " TFLOP/s" : ""; };
  std::cout << title << "\n";
  std::cout << "  measured        " << (exact ? ms(table->seconds) + rate(table->seconds) : "- (not a table row)")
            << "\n";
  std::cout << "  table           "
            << (table ? ms(table->seconds) + rate(table->seconds) + "  " + calib::kernel_source_name(table->source)
                      : "- (no table value)")
            << "\n";
  std::cout << "  analytic        " << ms(analytic_s) << rate(analytic_s) << "\n";
  std::cout << "  simulator uses  " << ms(used.seconds) << "  " << calib::kernel_source_name(used.source) << "\n";
  std::cout << coverage_text;
  return 0;
}

struct Common {
  std::string gpu;
  bool json = false;
};

void add_common(CLI::App* cmd, Common& c) {
  cmd->add_option("--gpu", c.gpu, "hardware profile id or path (e.g. h100-sxm)")->required();
  cmd->add_flag("--json", c.json, "print JSON instead of text");
}

std::string header(const calib::HardwareProfile& p) {
  std::string tables;
  for (const auto& r : p.kernel_tables.refs) {
    tables += (tables.empty() ? "" : ", ") + r.id + " (" + calib::provenance_name(r.provenance) + ")";
  }
  return " on " + p.id + (tables.empty() ? " (no kernel tables)" : ", tables " + tables);
}

}  // namespace

Action add_kernels(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("kernels", "one kernel's time: measured table, interpolated, analytic, coverage");
  cmd->require_subcommand(1);

  struct GemmOpts : Common {
    double m = 0, n = 0, k = 0;
    std::string dtype = "bf16";
  };
  auto go = std::make_shared<GemmOpts>();
  auto* gemm = cmd->add_subcommand("gemm", "a linear layer's GEMM: m x k input, n x k weight");
  add_common(gemm, *go);
  gemm->add_option("--m", go->m, "rows (tokens)")->required()->check(cs::cli::positive_number());
  gemm->add_option("--n", go->n, "output features")->required()->check(cs::cli::positive_number());
  gemm->add_option("--k", go->k, "input features (the reduction)")->required()->check(cs::cli::positive_number());
  gemm->add_option("--dtype", go->dtype, "bf16, fp8 or fp4");

  struct AttnOpts : Common {
    double batch = 1, seq = 0, heads = 0, kv_heads = 0, head_dim = 128, window = 0, context = 0;
    bool mla = false, backward = false, serving = false;
    std::string kv_dtype = "bf16";
  };
  auto ao = std::make_shared<AttnOpts>();
  auto* attn = cmd->add_subcommand("attention", "causal flash attention (prefill, training) or decode attention");
  add_common(attn, *ao);
  attn->add_option("--batch", ao->batch, "sequences")->check(cs::cli::positive_number());
  attn->add_option("--seq", ao->seq, "tokens per sequence (prefill and training)")->check(cs::cli::positive_number());
  attn->add_option("--heads", ao->heads, "query heads on the GPU")->required()->check(cs::cli::positive_number());
  attn->add_option("--kv-heads", ao->kv_heads, "K/V heads on the GPU (default: --heads)")
      ->check(cs::cli::positive_number());
  attn->add_option("--head-dim", ao->head_dim, "head dimension (MLA: 192 for q/k, v 128)")
      ->check(cs::cli::positive_number());
  attn->add_option("--window", ao->window, "sliding window (0: full)")->check(cs::cli::non_negative_number());
  attn->add_flag("--mla", ao->mla, "DeepSeek MLA (qk 192, v 128)");
  attn->add_flag("--backward", ao->backward, "the backward pass (training)");
  attn->add_flag("--serving", ao->serving, "prefill as serving engines run it (else training's kernels, where tabled)");
  attn->add_option("--context", ao->context, "decode: each sequence attends this many cached tokens")
      ->check(cs::cli::positive_number());
  attn->add_option("--kv-dtype", ao->kv_dtype,
                   "decode: the KV cache's format, bf16 or fp8 (attention then runs in FP8)")
      ->check(CLI::IsMember({"bf16", "fp8"}));

  struct MoeOpts : Common {
    double tokens = 0, hidden = 0, inter = 0, topk = 0, experts = 0, tp = 1, ep = 1;
    std::string dtype = "bf16";
    bool nongated = false;
  };
  auto mo = std::make_shared<MoeOpts>();
  auto* moe = cmd->add_subcommand("moe", "a fused MoE layer on one GPU (serving), and as training times it");
  add_common(moe, *mo);
  moe->add_option("--tokens", mo->tokens, "tokens entering the layer on this GPU")
      ->required()
      ->check(cs::cli::positive_number());
  moe->add_option("--hidden", mo->hidden, "hidden size")->required()->check(cs::cli::positive_number());
  moe->add_option("--inter", mo->inter, "one expert's intermediate size (before TP)")
      ->required()
      ->check(cs::cli::positive_number());
  moe->add_option("--topk", mo->topk, "experts per token")->required()->check(cs::cli::positive_number());
  moe->add_option("--experts", mo->experts, "routed experts")->required()->check(cs::cli::positive_number());
  moe->add_option("--tp", mo->tp, "each expert split this many ways")->check(cs::cli::positive_number());
  moe->add_option("--ep", mo->ep, "experts spread over this many GPUs")->check(cs::cli::positive_number());
  moe->add_option("--dtype", mo->dtype, "bf16, fp8 or fp4");
  moe->add_flag("--nongated", mo->nongated, "a non-gated expert MLP (no SwiGLU)");

  struct CollOpts : Common {
    std::string op = "allreduce", bytes, cluster;
    int gpus = 8;
  };
  auto co = std::make_shared<CollOpts>();
  auto* coll = cmd->add_subcommand("collective", "an NCCL collective in one node, from the NCCL table");
  add_common(coll, *co);
  coll->add_option("--op", co->op, "allreduce, allgather, reducescatter or alltoall");
  coll->add_option("--gpus", co->gpus, "GPUs")->check(CLI::Range(2, 1024));
  coll->add_option("--bytes", co->bytes, "size per rank in nccl-tests' convention, e.g. 64M")->required();
  coll->add_option("--cluster", co->cluster, "also run the flow model on this cluster's first --gpus GPUs");

  struct LayerOpts : Common {
    std::string model, dtype = "bf16", fp8_recipe = "delayed";
    std::int64_t seq = 4096, micro_batch = 1, layer = 0;
    int tp = 1, ep = 1;
    bool sp = false;
  };
  auto lo = std::make_shared<LayerOpts>();
  auto* layer = cmd->add_subcommand("layer", "one decoder layer's kernels, forward and backward, each with its source");
  add_common(layer, *lo);
  layer->add_option("--model", lo->model, "model id or path")->required();
  layer->add_option("--seq", lo->seq, "sequence length")->check(cs::cli::positive_number());
  layer->add_option("--micro-batch", lo->micro_batch, "sequences per micro-batch")->check(cs::cli::positive_number());
  layer->add_option("--tp", lo->tp, "tensor-parallel ranks")->check(cs::cli::positive_number());
  layer->add_option("--ep", lo->ep, "expert-parallel ranks (MoE layers)")->check(cs::cli::positive_number());
  layer->add_flag("--sp", lo->sp, "sequence parallelism");
  layer->add_option("--dtype", lo->dtype, "bf16 or fp8");
  layer->add_option("--fp8-recipe", lo->fp8_recipe,
                    "under fp8: delayed, or tensorwise (current scaling: an amax pass before each cast)");
  layer->add_option("--layer", lo->layer, "which decoder layer's kind (0-based; default 0)")
      ->check(cs::cli::non_negative_number());

  return [=, &g]() -> int {
    const config::Catalog catalog(g.data_dir);
    if (layer->parsed()) {
      const auto p = config::resolve_profile(catalog, lo->gpu, "command line", "--gpu");
      const auto m = config::parse_model(
          config::load(catalog.locate(config::CatalogKind::kModel, lo->model, "command line", "--model")), lo->model);
      if (lo->dtype != "bf16" && lo->dtype != "fp8")
        throw InputError("command line", "--dtype", "expected bf16 or fp8; got '" + lo->dtype + "'");
      if (lo->layer >= m.layers)
        throw InputError("command line", "--layer", "the model has " + std::to_string(m.layers) + " layers");
      const auto d = gemm_dtype(lo->dtype);
      models::StepShape shape;
      shape.micro_batch = lo->micro_batch;
      shape.seq = lo->seq;
      shape.tp = lo->tp;
      shape.sp = lo->sp && lo->tp > 1;
      shape.fp8 = d == calib::Dtype::kFp8;
      if (lo->fp8_recipe != "delayed" && lo->fp8_recipe != "tensorwise")
        throw InputError("command line", "--fp8-recipe",
                         "expected delayed or tensorwise; got '" + lo->fp8_recipe + "'");
      if (lo->fp8_recipe == "tensorwise" && !shape.fp8)
        throw InputError("command line", "--fp8-recipe", "a scaling recipe for FP8; expected --dtype fp8 with it");
      shape.fp8_current_scaling = lo->fp8_recipe == "tensorwise";
      shape.ep = lo->ep;
      const auto kind = m.layer_kind(lo->layer);
      const workload::ComputeModel cm(p, d);
      Json j{{"kernel", "layer"}, {"gpu", p.id}, {"model", m.id}, {"seq", lo->seq}, {"tp", lo->tp}};
      if (!lo->json)
        std::cout << m.id << " layer " << lo->layer << ", " << lo->micro_batch << " x " << lo->seq << " tokens, TP"
                  << lo->tp << (shape.sp ? " SP" : "") << " " << lo->dtype << header(p) << "\n";
      for (const bool backward : {false, true}) {
        const auto items = backward ? models::layer_backward(m, shape, kind) : models::layer_forward(m, shape, kind);
        double total = 0;
        workload::SourceSeconds by{};
        workload::ClassSeconds classes{};
        auto rows = Json::array();
        if (!lo->json) std::cout << (backward ? "backward" : "forward") << "\n";
        for (const auto& it : items) {
          if (it.comm) {
            rows.push_back({{"collective", it.comm->label}, {"bytes", it.comm->bytes}});
            if (!lo->json)
              std::cout << "  " << std::left << std::setw(28) << it.comm->label << std::right << "  "
                        << human_bytes(it.comm->bytes) << " (collective: timed by the network model)\n";
            continue;
          }
          const auto t = cm.timed(it.op);
          total += t.seconds;
          by[static_cast<std::size_t>(t.source)] += t.seconds;
          const auto cls = models::kernel_class(it.op);
          classes[static_cast<std::size_t>(cls)] += t.seconds;
          rows.push_back({{"op", std::string(it.op.name)},
                          {"seconds", t.seconds},
                          {"source", calib::kernel_source_name(t.source)},
                          {"class", models::kernel_class_name(cls)}});
          if (!lo->json)
            std::cout << "  " << std::left << std::setw(28) << std::string(it.op.name) << std::right << std::setw(12)
                      << ms(t.seconds) << "  " << std::left << std::setw(13) << calib::kernel_source_name(t.source)
                      << std::right << report::compute_class_labels()[static_cast<std::size_t>(cls)] << "\n";
        }
        if (!lo->json) {
          std::cout << "  " << std::left << std::setw(28) << "total" << std::right << std::setw(12) << ms(total);
          for (std::size_t k = 0; k < by.size(); ++k)
            std::cout << "  " << calib::kernel_source_name(static_cast<calib::KernelSource>(k)) << " "
                      << fixed(total > 0 ? 100 * by[k] / total : 0, 0) << "%";
          std::cout << "\n  " << std::left << std::setw(28) << "spent on" << std::right << std::setw(12) << ""
                    << "  " << report::compute_classes_text(workload::shares_of(classes)) << "\n";
        }
        j[backward ? "backward" : "forward"] = {
            {"ops", rows},
            {"seconds", total},
            {"compute_by_kernel", report::compute_classes_json(workload::shares_of(classes))}};
      }
      if (lo->json) std::cout << j.dump(2) << "\n";
      return 0;
    }
    if (gemm->parsed()) {
      const auto p = config::resolve_profile(catalog, go->gpu, "command line", "--gpu");
      const auto d = gemm_dtype(go->dtype);
      if (!p.matrix_peak.count(d))
        throw InputError("command line", "--dtype", p.id + " has no " + go->dtype + " matrix rate");
      const workload::ComputeModel cm(p, d);
      models::Op op{"gemm",
                    models::OpKind::kGemm,
                    go->m,
                    go->n,
                    go->k,
                    2 * go->m * go->n * go->k,
                    (go->m * go->k + go->k * go->n) *
                            static_cast<double>(calib::dtype_bytes(d == calib::Dtype::kFp4 ? calib::Dtype::kFp8 : d)) +
                        go->m * go->n * 2};
      const auto used = cm.timed(op);
      const auto t = cm.table_time(op);
      Json j{{"kernel", "gemm"}, {"gpu", p.id}, {"m", go->m}, {"n", go->n}, {"k", go->k}, {"dtype", go->dtype}};
      Json cj;
      const std::string cov = coverage(calib::gemm_key(p.kernel_tables, d), cj);
      j["coverage"] = cj;
      return report(
          go->json, j,
          "GEMM " + shortest(go->m) + " x " + shortest(go->n) + " x " + shortest(go->k) + " " + go->dtype + header(p),
          t, cm.analytic_seconds(op), used, op.flops, cov);
    }
    if (attn->parsed()) {
      const auto p = config::resolve_profile(catalog, ao->gpu, "command line", "--gpu");
      const double kvh = ao->kv_heads > 0 ? ao->kv_heads : ao->heads;
      const double qk = ao->mla ? 192 : ao->head_dim, v = ao->mla ? 128 : ao->head_dim;
      Json j{{"kernel", "attention"}, {"gpu", p.id},    {"batch", ao->batch},   {"heads", ao->heads},
             {"kv_heads", kvh},       {"head_dim", qk}, {"window", ao->window}, {"mla", ao->mla}};
      const workload::ComputeModel cm(p, calib::Dtype::kBf16);
      if (ao->context > 0) {
        // Decode: one new token per sequence over `context` cached tokens, as serving's step program
        // describes it, timed by the simulator's own compute model.
        const bool fp8 = ao->kv_dtype == "fp8";
        const double per_token = ao->mla ? 576 : 2 * kvh * qk;  // MLA: the latent cache (512 + 64 rope)
        models::Op op{"attention", models::OpKind::kAttentionForward};
        op.flops = 2.0 * ao->batch * ao->heads * ao->context * (ao->mla ? 512 + 64 + 512 : qk + v);
        op.bytes = ao->batch * ao->context * per_token * (fp8 ? 1.0 : 2.0);
        op.core_attention = true;
        op.attention = {ao->batch, 0, ao->heads, kvh, qk, v, ao->window, ao->mla, 1.0};
        op.attention.decode = true;
        op.attention.context = ao->context;
        op.attention.fp8 = fp8;
        j["context"] = ao->context;
        j["kv_dtype"] = ao->kv_dtype;
        Json cj;
        const std::string cov = coverage(cm.attention_table(op), cj);
        j["coverage"] = cj;
        return report(ao->json, j,
                      "decode attention, " + shortest(ao->batch) + " x " + shortest(ao->context) + " cached tokens (" +
                          ao->kv_dtype + " KV)" + header(p),
                      cm.table_time(op), cm.analytic_seconds(op), cm.timed(op), 0, cov);
      }
      if (ao->seq <= 0) throw InputError("command line", "--seq", "expected the sequence length (or --context)");
      models::Op op{ao->backward ? "attention.bwd" : "attention",
                    ao->backward ? models::OpKind::kAttentionBackward : models::OpKind::kAttentionForward};
      const double w = ao->window > 0 && ao->window < ao->seq ? ao->window : ao->seq;
      const double pairs = w * w / 2 + (ao->seq - w) * w;
      op.flops = ao->batch * ao->heads * 2.0 * pairs * (qk + v) * (ao->backward ? 2.5 : 1.0);
      op.bytes = ao->batch * ao->seq * (ao->heads + kvh) * (qk + v) * 2.0 * (ao->backward ? 2.0 : 1.0);
      op.core_attention = true;
      op.attention = {ao->batch, ao->seq, ao->heads, kvh, qk, v, ao->window, ao->mla, 1.0};
      op.attention.train = !ao->serving;
      j["seq"] = ao->seq;
      j["backward"] = ao->backward;
      const auto used = cm.timed(op);
      const auto t = cm.table_time(op);
      // The table the simulator reads, as it reads it.
      Json cj;
      const std::string cov = coverage(cm.attention_table(op), cj);
      j["coverage"] = cj;
      return report(ao->json, j,
                    std::string(ao->backward ? "attention backward" : "attention forward") + ", " +
                        shortest(ao->batch) + " x " + shortest(ao->seq) + " tokens, " + shortest(ao->heads) + "/" +
                        shortest(kvh) + " heads" + header(p),
                    t, cm.analytic_seconds(op), used, op.flops, cov);
    }
    if (moe->parsed()) {
      const auto p = config::resolve_profile(catalog, mo->gpu, "command line", "--gpu");
      const auto d = gemm_dtype(mo->dtype);
      calib::MoeQuery q{mo->dtype == "bf16" ? "bfloat16" : (mo->dtype == "fp4" ? "nvfp4" : "fp8"),
                        !mo->nongated,
                        mo->tokens,
                        mo->hidden,
                        mo->inter,
                        mo->topk,
                        mo->experts,
                        mo->tp,
                        mo->ep};
      const auto t = calib::table_moe(p.kernel_tables, q);
      // As training times routed experts: two grouped GEMMs over the GPU's share of the pairs.
      const workload::ComputeModel cm(p, d);
      const double local = mo->experts / mo->ep, f = mo->inter / mo->tp, pairs = mo->tokens * mo->topk / mo->ep;
      const double up = mo->nongated ? f : 2 * f;
      double gemms = 0;
      calib::KernelSource src = calib::KernelSource::kMeasured;
      for (auto [n, k] : {std::pair{up, mo->hidden}, std::pair{mo->hidden, f}}) {
        models::Op op{"expert", models::OpKind::kGemm, pairs / local, n, k, 2 * pairs * n * k, 0};
        op.groups = local;
        const auto x = cm.timed(op);
        gemms += x.seconds;
        src = std::max(src, x.source);
      }
      Json j{{"kernel", "moe"},
             {"gpu", p.id},
             {"tokens", mo->tokens},
             {"hidden", mo->hidden},
             {"inter", mo->inter},
             {"topk", mo->topk},
             {"experts", mo->experts},
             {"tp", mo->tp},
             {"ep", mo->ep},
             {"dtype", mo->dtype},
             {"table", source_json(t)},
             {"grouped_gemms", source_json(calib::KernelTime{gemms, src})}};
      Json cj;
      const auto key = calib::moe_key(p.kernel_tables, q);
      std::string cov = coverage(key, cj, "coverage (fused MoE)");
      j["coverage"] = cj;
      if (!key) {
        const auto shapes = moe_shapes(p.kernel_tables.table(calib::KernelTable::kMoe), q);
        j["measured_shapes"] = shapes;
        std::string list;
        for (const auto& sh : shapes) list += (list.empty() ? "" : ", ") + sh;
        cov += "  measured shapes (" + q.dtype +
               ", hidden/inter/top-k/experts; each at some tp x ep): " + (list.empty() ? "none" : list) + "\n";
      }
      if (mo->json) {
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::cout << "fused MoE, " << shortest(mo->tokens) << " tokens, " << shortest(mo->experts) << " experts top-"
                << shortest(mo->topk) << ", TP" << shortest(mo->tp) << " EP" << shortest(mo->ep) << header(p) << "\n"
                << "  table (fused MoE)          "
                << (t ? ms(t->seconds) + "  " + calib::kernel_source_name(t->source) : "- (shape not in the table)")
                << "\n"
                << "  grouped GEMMs (training)   " << ms(gemms) << "  " << calib::kernel_source_name(src)
                << "  (the expert GEMMs alone: no routing, permutation or activation)\n"
                << cov;
      return 0;
    }
    // collective
    const auto p = config::resolve_profile(catalog, co->gpu, "command line", "--gpu");
    std::string t = co->bytes;
    if (!t.empty() && t.find_first_not_of("0123456789") == std::string::npos) t += " B";
    const auto size = parse_quantity(t, Dimension::kBytes);
    if (!size.error.empty() || size.value < 1)
      throw InputError("command line", "--bytes", "expected a size such as 64K, 128M or 1G; got '" + co->bytes + "'");
    const std::map<std::string, std::string> names{{"allreduce", "all_reduce"},
                                                   {"allgather", "all_gather"},
                                                   {"reducescatter", "reduce_scatter"},
                                                   {"alltoall", "alltoall"}};
    const auto name = names.find(co->op);
    if (name == names.end())
      throw InputError("command line", "--op",
                       "expected allreduce, allgather, reducescatter or alltoall; got '" + co->op + "'");
    const auto nccl = calib::table_nccl(p.kernel_tables, name->second, co->gpus, size.value);
    const auto custom =
        co->op == "allreduce" ? calib::table_custom_allreduce(p.kernel_tables, co->gpus, size.value) : std::nullopt;
    Json j{{"kernel", "collective"},
           {"gpu", p.id},
           {"op", co->op},
           {"gpus", co->gpus},
           {"bytes", size.value},
           {"nccl_table", source_json(nccl)},
           {"custom_allreduce_table", source_json(custom)},
           {"flow_model_s", nullptr}};
    // message_size counts elements (PROVENANCE.md): 2 bytes each in the public tables, 4 in the probe's.
    double element_bytes = 2;
    Json nccl_cov, custom_cov;
    const std::string cov =
        coverage(calib::nccl_key(p.kernel_tables, name->second, co->gpus, &element_bytes), nccl_cov, "NCCL rows") +
        (co->op == "allreduce"
             ? coverage(calib::custom_allreduce_key(p.kernel_tables, co->gpus), custom_cov, "custom rows")
             : "");
    j["coverage"] = {{"nccl", nccl_cov}, {"custom_allreduce", custom_cov}, {"element_bytes", element_bytes}};
    std::optional<double> flow;
    if (!co->cluster.empty()) {
      const auto box =
          config::resolve_box(catalog, "command line", {co->cluster, co->gpu, "", "--cluster", "--gpu", ""});
      if (co->gpus > box.cluster.gpus)
        throw InputError("command line", "--gpus",
                         box.cluster.id + " has " + std::to_string(box.cluster.gpus) + " GPUs");
      coll::CollectiveOp op{};
      (void)coll::parse_op(co->op, op);
      std::vector<int> ranks;
      for (int r = 0; r < co->gpus; ++r) ranks.push_back(r);
      const auto topo = study::machine_topology({box.cluster, co->gpus, 1, std::nullopt});
      flow = workload::time_collective(topo, op, coll::Algorithm::kAuto, ranks, size.value,
                                       box.profile.collective_latency.value, net::NetworkModelKind::kFlow,
                                       &box.profile.collectives)
                 .seconds;
      j["flow_model_s"] = *flow;
    }
    if (co->json) {
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    const double factor = co->op == "allreduce" ? 2.0 * (co->gpus - 1) / co->gpus : (co->gpus - 1.0) / co->gpus;
    const auto line = [&](const std::optional<calib::KernelTime>& x) {
      return x ? ms(x->seconds) + "  busbw " + fixed(size.value / x->seconds * factor / 1e9, 1) + " GB/s  " +
                     calib::kernel_source_name(x->source)
               : std::string("- (no table value)");
    };
    std::cout << co->op << " of " << human_bytes(size.value) << " over " << co->gpus << " GPUs" << header(p) << "\n"
              << "  NCCL table         " << line(nccl) << "\n";
    if (co->op == "allreduce") std::cout << "  custom all-reduce  " << line(custom) << "\n";
    if (flow)
      std::cout << "  flow model         " << line(calib::KernelTime{*flow, calib::KernelSource::kAnalytic}) << " ("
                << co->cluster << ")\n";
    std::cout << cov << "  (message_size counts elements of " << shortest(element_bytes) << " bytes)\n";
    return 0;
  };
}

}  // namespace cs::cli
