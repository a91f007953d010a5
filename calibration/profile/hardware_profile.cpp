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

namespace {

/// E[ceil(X / tile)] for a group's routed rows X ~ Poisson(mean), by the normal approximation with
/// continuity correction: the sum over j >= 0 of P(X > j tile) = P(X >= j tile + 1).
double expected_row_tiles(double mean, double tile) {
  if (mean <= 0) return 0.0;
  const double sd = std::sqrt(mean);
  const auto above = [&](double j) { return 0.5 * std::erfc((j * tile + 0.5 - mean) / (sd * std::sqrt(2.0))); };
  // Terms far below the mean are 1 and far above it 0: sum only the band in between.
  const double lo = std::max(0.0, std::floor((mean - 6 * sd) / tile));
  const double hi = std::ceil((mean + 6 * sd) / tile);
  double sum = lo;  // j = 0 .. lo - 1: P = 1
  for (double j = lo; j <= hi; ++j) sum += above(j);
  return sum;
}

}  // namespace

GemmMapping GemmShapeModel::map(double ceiling_fraction, double m, double n, double k, double groups,
                                double flops_per_byte, bool routed) const {
  GemmMapping best;
  const double flops = 2.0 * groups * m * n * k;
  // Routed row tiles per tile height, computed once per height (tiles share heights).
  std::pair<double, double> row_memo[8];
  std::size_t memo_used = 0;
  const auto row_tiles = [&](double tm) {
    const double even = std::ceil(m / tm);
    if (!routed) return even;
    for (std::size_t i = 0; i < memo_used; ++i) {
      if (row_memo[i].first == tm) return row_memo[i].second;
    }
    // Never fewer tiles than an even split (a group the router hit has a tile).
    const double r = std::max(even, expected_row_tiles(m, tm));
    if (memo_used < 8) row_memo[memo_used++] = {tm, r};
    return r;
  };
  const auto consider = [&](const GemmTile& t, double tm, double tn, double rows, double cols, double splits) {
    GemmMapping g;
    g.tile = {tm, tn, t.efficiency};
    g.tiles = groups * rows * cols * splits;
    g.splits = splits;
    g.waves = std::ceil(g.tiles / sms);
    g.pad_util = (m * n) / (rows * tm * cols * tn);
    g.wave_util = g.tiles / (g.waves * sms);
    g.k_util = (k / splits) / (k / splits + k_fill);
    g.fraction = ceiling_fraction * t.efficiency * g.pad_util * g.wave_util * g.k_util;
    if (splits > 1) {
      // Time in units of FLOPs at peak: the split GEMM, then its fp32 partials written and read.
      const double partial_bytes = 8.0 * splits * groups * m * n;
      g.fraction = flops / (flops / g.fraction + partial_bytes * flops_per_byte);
    }
    if (g.fraction > best.fraction) best = g;
  };
  for (const auto& t : tiles) {
    // Libraries carry both orientations of a tile (128x256 and 256x128).
    for (const auto& [tm, tn] : {std::pair{t.m, t.n}, std::pair{t.n, t.m}}) {
      const double rows = row_tiles(tm), cols = std::ceil(n / tn);
      const double grid = groups * rows * cols;
      if (grid <= 0) continue;
      consider(t, tm, tn, rows, cols, 1);
      // Split-K (as cuBLAS heuristics and CUTLASS's split-K/stream-K schedulers pick it) pays only
      // when the grid leaves SMs idle: every split count until the split grid fills two waves, at
      // most 16 (every count, so that more SMs only ever add choices).
      if (flops_per_byte <= 0) continue;
      const double max_splits = std::min(16.0, std::floor(2.0 * sms / grid));
      for (double splits = 2; splits <= max_splits; ++splits) consider(t, tm, tn, rows, cols, splits);
    }
  }
  return best;
}

GemmMapping HardwareProfile::gemm_mapping(Dtype d, double m, double n, double k, double groups, bool routed) const {
  const double peak_rate = matrix_peak.count(d) ? matrix_peak.at(d).value : 0.0;
  const double hbm = hbm_bandwidth.value * hbm_fraction.value;
  return gemm_shape.map(gemm_ceiling(d), m, n, k, groups, hbm > 0 ? peak_rate / hbm : 0.0, routed);
}

double HardwareProfile::gemm_ceiling(Dtype d) const {
  if (!gemm_shape.enabled()) return gemm.max_fraction;
  const auto it = gemm_shape.ceiling.find(d);
  return it != gemm_shape.ceiling.end() ? it->second : gemm.max_fraction;
}

double HardwareProfile::gemm_fraction(Dtype d, double m, double n, double k, double groups, bool routed) const {
  // Inverse-distance weighting in log2(m, n, k) over the four nearest measured shapes.
  std::vector<std::pair<double, double>> near;  // (squared distance, fraction)
  const double peak_rate = matrix_peak.count(d) ? matrix_peak.at(d).value : 0.0;
  for (const auto& p : gemm_table) {
    if (p.dtype != d || peak_rate <= 0) continue;
    const double dm = std::log2(m / p.m), dn = std::log2(n / p.n), dk = std::log2(k / p.k);
    near.emplace_back(dm * dm + dn * dn + dk * dk, p.flops_per_s / peak_rate);
  }
  if (near.empty()) {
    return gemm_shape.enabled() ? gemm_mapping(d, m, n, k, groups, routed).fraction : gemm.at(m, n, k);
  }
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
  return gemm_shape.enabled() ? gemm_shape.provenance : gemm.provenance;
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
