#include "sim/config/profile_file.hpp"

#include <algorithm>

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"
#include "sim/core/errors.hpp"

namespace cs::config {

using calib::CollectiveCurve;
using calib::Dtype;
using calib::GemmPoint;
using calib::HardwareProfile;
using calib::kProfileSchemaVersion;
using calib::parse_dtype;
using calib::Provenance;
using calib::Rate;

namespace {

const std::vector<std::string> kStatuses{"datasheet", "assumed", "measured", "imported", "fitted"};

Provenance to_provenance(const std::string& s) {
  if (s == "datasheet") return Provenance::kDatasheet;
  if (s == "measured") return Provenance::kMeasured;
  if (s == "imported") return Provenance::kImported;
  if (s == "fitted") return Provenance::kFitted;
  return Provenance::kAssumed;
}

/// {"value": "<quantity>" or number, "status": ..., "source": "..."}
Rate read_rate(config::Reader& parent, const std::string& key, Dimension dim, double min, double max) {
  auto r = parent.child(key);
  Rate out;
  if (dim == Dimension::kCount) {
    out.value = r.req_number("value", min, max);
  } else {
    out.value = r.req_quantity("value", dim, min);
  }
  out.provenance = to_provenance(r.req_enum("status", kStatuses));
  out.source = r.req_string("source");
  if (out.source.empty()) r.fail_at("source", "expected a citation or the basis of the figure; got an empty string");
  r.finish();
  return out;
}

}  // namespace

HardwareProfile parse_profile(const config::JsonDoc& doc, const std::string& id) {
  config::Problems problems;
  auto r = config::Reader::root(doc, problems);
  problems.throw_if_any();
  const auto version = r.req_int("schema_version", 0, 1000);
  if (version != 1 && version != kProfileSchemaVersion) {
    throw InputError(doc.path, "/schema_version",
                     "expected schema version 1 or " + std::to_string(kProfileSchemaVersion) + "; got " +
                         std::to_string(version) + " (written by a different clustersim; re-run calibration)");
  }
  HardwareProfile p;
  p.id = id;
  (void)r.opt_string("id", id);
  p.gpu_name = r.req_string("gpu");
  {
    auto src = r.child("source");
    p.origin = to_provenance(src.req_enum("kind", {"datasheet", "measured", "imported"}));
    p.source = src.req_string("document");
    (void)src.raw("raw");
    (void)src.raw("machine");
    (void)src.raw("date");
    src.finish();
  }
  {
    auto peaks = r.child("matrix_peak");
    for (const auto& key : peaks.keys()) {
      Dtype d{};
      if (!parse_dtype(key, d)) {
        peaks.fail_at(key, "unknown dtype; expected fp32, tf32, bf16, fp16, fp8 or fp4");
        continue;
      }
      p.matrix_peak[d] = read_rate(peaks, key, Dimension::kFlopRate, 1e9, 1e18);
    }
    peaks.finish();
  }
  {
    auto hbm = r.child("hbm");
    p.hbm_capacity = read_rate(hbm, "capacity", Dimension::kBytes, 1e6, 1e15);
    p.hbm_bandwidth = read_rate(hbm, "bandwidth", Dimension::kBandwidth, 1e6, 1e15);
    hbm.finish();
  }
  {
    auto a = r.child("achieved");
    {
      auto g = a.child("gemm_efficiency");
      p.gemm.max_fraction = g.req_number("max_fraction", 0.01, 1.0);
      p.gemm.half_rate_dim = g.req_number("half_rate_dim", 0.0, 1e6);
      p.gemm.provenance = to_provenance(g.req_enum("status", kStatuses));
      p.gemm.source = g.req_string("source");
      g.finish();
    }
    if (auto g = a.opt_child("gemm_shape")) {
      const auto sms = read_rate(*g, "sms", Dimension::kCount, 1, 1e5);
      p.gemm_shape.sms = sms.value;
      p.gemm_shape.sms_provenance = sms.provenance;
      p.gemm_shape.sms_source = sms.source;
      for (auto& t : g->each("tiles")) {
        calib::GemmTile tile;
        tile.m = t.req_number("m", 1, 4096);
        tile.n = t.req_number("n", 1, 4096);
        tile.efficiency = t.req_number("efficiency", 0.01, 1.0);
        t.finish();
        p.gemm_shape.tiles.push_back(tile);
      }
      p.gemm_shape.k_fill = g->req_number("k_fill", 0.0, 1e5);
      auto ceil = g->child("ceiling");
      for (const auto& key : ceil.keys()) {
        Dtype d{};
        if (!parse_dtype(key, d)) {
          ceil.fail_at(key, "unknown dtype; expected fp32, tf32, bf16, fp16, fp8 or fp4");
          continue;
        }
        p.gemm_shape.ceiling[d] = ceil.req_number(key, 0.01, 1.0);
      }
      ceil.finish();
      p.gemm_shape.provenance = to_provenance(g->req_enum("status", kStatuses));
      p.gemm_shape.source = g->req_string("source");
      if (p.gemm_shape.source.empty())
        g->fail_at("source", "expected the basis of the tiles and ceilings; got an empty string");
      g->finish();
    }
    p.attention_forward_fraction = read_rate(a, "attention_forward_fraction", Dimension::kCount, 0.01, 1.0);
    p.attention_backward_fraction = read_rate(a, "attention_backward_fraction", Dimension::kCount, 0.01, 1.0);
    if (a.raw("attention_backward_ratio"))
      p.attention_backward_ratio = read_rate(a, "attention_backward_ratio", Dimension::kCount, 1.0, 10.0);
    if (a.raw("grouped_gemm_ratio"))
      p.grouped_gemm_ratio = read_rate(a, "grouped_gemm_ratio", Dimension::kCount, 1.0, 10.0);
    if (a.raw("host_kernel_issue"))
      p.host_kernel_issue = read_rate(a, "host_kernel_issue", Dimension::kTime, 0.0, 1e-2);
    p.hbm_fraction = read_rate(a, "hbm_fraction", Dimension::kCount, 0.01, 1.0);
    p.kernel_overhead = read_rate(a, "kernel_overhead", Dimension::kTime, 0.0, 1.0);
    p.collective_latency = read_rate(a, "collective_latency", Dimension::kTime, 0.0, 1.0);
    p.graph_kernel_overhead = read_rate(a, "graph_kernel_overhead", Dimension::kTime, 0.0, 1.0);
    p.serving_step_overhead = read_rate(a, "serving_step_overhead", Dimension::kTime, 0.0, 1.0);
    // Optional: only GPUs with a published (or transferred) DeepEP low-latency figure have them.
    if (a.raw("deepep_ll_dispatch_floor") || a.raw("deepep_ll_combine_floor")) {
      p.deepep_ll_dispatch_floor = read_rate(a, "deepep_ll_dispatch_floor", Dimension::kTime, 0.0, 1.0);
      p.deepep_ll_combine_floor = read_rate(a, "deepep_ll_combine_floor", Dimension::kTime, 0.0, 1.0);
    }
    a.finish();
  }
  p.runtime_reserved = read_rate(r, "runtime_reserved", Dimension::kBytes, 0.0, 1e15);
  // One folder (an object) or several in order of preference (an array of them).
  const auto read_tables = [&](config::Reader& k) {
    calib::KernelTableRef ref;
    ref.id = k.req_string("id");
    if (ref.id.empty()) k.fail_at("id", "expected a folder id under calibration/kernels/ or a path");
    const auto& groups = calib::kernel_table_groups();
    for (const auto& g : k.opt_string_list("use")) {
      if (std::find(groups.begin(), groups.end(), g) == groups.end()) {
        std::string all;
        for (const auto& x : groups) all += (all.empty() ? "" : ", ") + x;
        const auto near = closest_match(g, groups);
        k.fail_at("use", "unknown table group '" + g + "'" + (near ? "; did you mean '" + *near + "'?" : "") +
                             " (expected some of " + all + ")");
      } else if (std::find(ref.use.begin(), ref.use.end(), g) != ref.use.end()) {
        k.fail_at("use", "'" + g + "' is listed twice");
      } else {
        ref.use.push_back(g);
      }
    }
    ref.gemm_quantizes_input = k.opt_bool("gemm_quantizes_input", true);
    ref.provenance = to_provenance(k.req_enum("status", kStatuses));
    ref.source = k.req_string("source");
    if (ref.source.empty())
      k.fail_at("source", "expected where the tables were measured (a citation or the probe run); got an empty string");
    k.finish();
    p.kernel_tables.refs.push_back(ref);
  };
  if (r.has("kernel_tables") && r.raw("kernel_tables")->is_array()) {
    p.kernel_tables.listed = true;
    for (auto& k : r.each("kernel_tables", false)) read_tables(k);
  } else if (auto k = r.opt_child("kernel_tables")) {
    read_tables(*k);
  }
  if (auto dev = r.opt_child("device")) {
    for (const auto& key : dev->keys()) {
      const auto* v = dev->raw(key);
      p.device[key] = v->is_string() ? v->get<std::string>() : v->dump();
    }
    dev->finish();
  }
  for (auto& g : r.each("gemm_table", false)) {
    GemmPoint pt;
    if (!parse_dtype(g.req_string("dtype"), pt.dtype))
      g.fail_at("dtype", "expected fp32, tf32, bf16, fp16, fp8 or fp4");
    pt.m = static_cast<double>(g.req_int("m", 1, std::int64_t{1} << 40));
    pt.n = static_cast<double>(g.req_int("n", 1, std::int64_t{1} << 40));
    pt.k = static_cast<double>(g.req_int("k", 1, std::int64_t{1} << 40));
    pt.flops_per_s = g.req_quantity("rate", Dimension::kFlopRate, 1.0);
    g.finish();
    p.gemm_table.push_back(pt);
  }
  for (auto& c : r.each("collectives", false)) {
    CollectiveCurve cc;
    cc.op = c.req_enum("op", {"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"});
    cc.gpus = static_cast<int>(c.req_int("gpus", 2, 1 << 20));
    // Scope: a curve without "nodes" was measured inside one node (what `calibrate` and an
    // nccl-tests import of one box produce); across nodes it names the fabric it ran on.
    cc.nodes = static_cast<int>(c.opt_int("nodes", 1, 1 << 20, 1));
    if (cc.nodes > 1) {
      cc.fabric = c.req_string("fabric");
    } else {
      (void)c.opt_string("fabric", "");
    }
    cc.alpha_s = c.req_quantity("alpha", Dimension::kTime, 0.0);
    cc.busbw_bytes_per_s = c.req_quantity("busbw", Dimension::kBandwidth, 1.0);
    cc.provenance = to_provenance(c.req_enum("status", kStatuses));
    cc.source = c.req_string("source");
    for (auto& pt : c.each("points", false)) {
      const double bytes = static_cast<double>(pt.req_int("bytes", 1, std::int64_t{1} << 50));
      const double secs = pt.req_quantity("time", Dimension::kTime, 0.0);
      pt.finish();
      cc.points.emplace_back(bytes, secs);
    }
    c.finish();
    p.collectives.push_back(cc);
  }
  (void)r.raw("raw");  // measurements as recorded, for `clustersim inspect`
  r.finish();
  problems.throw_if_any();
  return p;
}

}  // namespace cs::config
