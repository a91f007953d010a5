#include "calibration/profile/hardware_profile.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/check.hpp"
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
    case Dtype::kFp4: return "fp4";
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
    case Dtype::kFp4: CS_ASSERT(false, "fp4 is a profile dtype, not a training dtype (the scenario parser refuses it)");
  }
  return 2;
}

bool parse_dtype(const std::string& name, Dtype& out) {
  for (Dtype d : {Dtype::kFp32, Dtype::kTf32, Dtype::kBf16, Dtype::kFp16, Dtype::kFp8, Dtype::kFp4}) {
    if (name == dtype_name(d)) {
      out = d;
      return true;
    }
  }
  return false;
}

double GemmEfficiency::shape_factor(double half_rate_dim, double m, double n, double k) {
  const auto f = [half_rate_dim](double d) { return d / (d + half_rate_dim); };
  return f(m) * f(n) * f(k);
}

double GemmEfficiency::at(double m, double n, double k) const {
  return max_fraction * shape_factor(half_rate_dim, m, n, k);
}

double HardwareProfile::gemm_fraction(Dtype d, double m, double n, double k) const {
  // Inverse-distance weighting in log2(m, n, k) over the four nearest measured shapes.
  std::vector<std::pair<double, double>> near;  // (squared distance, fraction)
  const double peak_rate = matrix_peak.count(d) ? matrix_peak.at(d).value : 0.0;
  for (const auto& p : gemm_table) {
    if (p.dtype != d || peak_rate <= 0) continue;
    const double dm = std::log2(m / p.m), dn = std::log2(n / p.n), dk = std::log2(k / p.k);
    near.emplace_back(dm * dm + dn * dn + dk * dk, p.flops_per_s / peak_rate);
  }
  if (near.empty()) return gemm.at(m, n, k);
  std::sort(near.begin(), near.end());
  if (near.front().first < 1e-12) return near.front().second;
  double wsum = 0, fsum = 0;
  for (std::size_t i = 0; i < near.size() && i < 4; ++i) {
    const double w = 1.0 / near[i].first;
    wsum += w;
    fsum += w * near[i].second;
  }
  return fsum / wsum;
}

Provenance HardwareProfile::gemm_provenance(Dtype d) const {
  for (const auto& p : gemm_table) {
    if (p.dtype == d) return Provenance::kMeasured;
  }
  return gemm.provenance;
}

const CollectiveCurve* HardwareProfile::collective_curve(const std::string& op, int gpus) const {
  for (const auto& c : collectives) {
    if (c.op == op && c.gpus == gpus) return &c;
  }
  return nullptr;
}

const Rate& HardwareProfile::peak(Dtype d) const {
  auto it = matrix_peak.find(d);
  if (it == matrix_peak.end()) {
    throw InputError(
        id, "/matrix_peak",
        std::string("this GPU (") + gpu_name + ") has no " + dtype_name(d) + " matrix rate; choose another dtype");
  }
  return it->second;
}

}  // namespace cs::calib
