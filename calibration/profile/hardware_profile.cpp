#include "calibration/profile/hardware_profile.hpp"

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"
#include "sim/core/errors.hpp"

namespace cs::calib {

const char* provenance_name(Provenance p) {
  switch (p) {
    case Provenance::kDatasheet: return "datasheet";
    case Provenance::kAssumed: return "assumed";
    case Provenance::kMeasured: return "measured";
    case Provenance::kImported: return "imported";
    case Provenance::kFitted: return "fitted";
  }
  return "unknown";
}

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::kFp32: return "fp32";
    case Dtype::kTf32: return "tf32";
    case Dtype::kBf16: return "bf16";
    case Dtype::kFp16: return "fp16";
    case Dtype::kFp8: return "fp8";
  }
  return "?";
}

std::size_t dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::kFp32:
    case Dtype::kTf32: return 4;
    case Dtype::kBf16:
    case Dtype::kFp16: return 2;
    case Dtype::kFp8: return 1;
  }
  return 2;
}

bool parse_dtype(const std::string& name, Dtype& out) {
  for (Dtype d : {Dtype::kFp32, Dtype::kTf32, Dtype::kBf16, Dtype::kFp16, Dtype::kFp8}) {
    if (name == dtype_name(d)) {
      out = d;
      return true;
    }
  }
  return false;
}

double GemmEfficiency::at(double m, double n, double k) const {
  const auto f = [this](double d) { return d / (d + half_rate_dim); };
  return max_fraction * f(m) * f(n) * f(k);
}

const Rate& HardwareProfile::peak(Dtype d) const {
  auto it = matrix_peak.find(d);
  if (it == matrix_peak.end()) {
    throw InputError(id, "/matrix_peak", std::string("this GPU (") + gpu_name + ") has no " + dtype_name(d) +
                                             " matrix rate; choose another dtype");
  }
  return it->second;
}

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
  if (version != kProfileSchemaVersion) {
    throw InputError(doc.path, "/schema_version",
                     "expected schema version " + std::to_string(kProfileSchemaVersion) + "; got " +
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
        peaks.fail_at(key, "unknown dtype; expected fp32, tf32, bf16, fp16 or fp8");
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
    p.attention_forward_fraction = read_rate(a, "attention_forward_fraction", Dimension::kCount, 0.01, 1.0);
    p.attention_backward_fraction = read_rate(a, "attention_backward_fraction", Dimension::kCount, 0.01, 1.0);
    p.hbm_fraction = read_rate(a, "hbm_fraction", Dimension::kCount, 0.01, 1.0);
    p.kernel_overhead = read_rate(a, "kernel_overhead", Dimension::kTime, 0.0, 1.0);
    p.collective_latency = read_rate(a, "collective_latency", Dimension::kTime, 0.0, 1.0);
    a.finish();
  }
  p.runtime_reserved = read_rate(r, "runtime_reserved", Dimension::kBytes, 0.0, 1e15);
  r.finish();
  problems.throw_if_any();
  return p;
}

}  // namespace cs::calib
