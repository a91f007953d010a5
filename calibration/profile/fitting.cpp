#include "calibration/profile/fitting.hpp"

#include <cmath>
#include <limits>

namespace cs::calib {

AlphaBeta fit_alpha_beta(const std::vector<std::pair<double, double>>& points) {
  // Weighted linear regression of t = a + c x with weights w = 1 / t^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, t] : points) {
    if (t <= 0) continue;
    const double w = 1.0 / (t * t);
    sw += w;
    sx += w * x;
    sy += w * t;
    sxx += w * x * x;
    sxy += w * x * t;
  }
  AlphaBeta ab;
  const double det = sw * sxx - sx * sx;
  double a = 0, c = 0;
  if (det > 0) {
    c = (sw * sxy - sx * sy) / det;
    a = (sy - c * sx) / sw;
  }
  if (c <= 0 || a < 0) {
    // Degenerate (too few sizes): no latency term, bandwidth from the largest message.
    double best_x = 0, best_t = 0;
    for (const auto& [x, t] : points) {
      if (x > best_x) {
        best_x = x;
        best_t = t;
      }
    }
    a = std::max(0.0, a);
    c = best_t > 0 ? (best_t - a) / best_x : 0;
    if (c <= 0) {
      a = 0;
      c = best_t / best_x;
    }
  }
  ab.alpha_s = a;
  ab.bytes_per_s = c > 0 ? 1.0 / c : 0;
  for (const auto& [x, t] : points) {
    if (t > 0) ab.max_relative_error = std::max(ab.max_relative_error, std::fabs((a + c * x) / t - 1.0));
  }
  return ab;
}

GemmEfficiency fit_gemm_efficiency(const std::vector<GemmPoint>& points, Dtype dtype, double peak_flops) {
  GemmEfficiency best;
  best.provenance = Provenance::kFitted;
  double best_err = std::numeric_limits<double>::infinity();
  for (int hi = 0; hi <= 512; ++hi) {
    const double half = 4.0 * hi;
    // For a fixed half_rate_dim the best log-space max_fraction is closed form: the geometric mean
    // of measured / shape factor.
    double sum_log = 0;
    int count = 0;
    for (const auto& p : points) {
      if (p.dtype != dtype || p.flops_per_s <= 0) continue;
      sum_log += std::log(p.flops_per_s / peak_flops / GemmEfficiency::shape_factor(half, p.m, p.n, p.k));
      ++count;
    }
    if (count == 0) return best;
    double maxf = std::exp(sum_log / count);
    maxf = std::min(1.0, std::max(0.05, std::round(maxf / 0.0025) * 0.0025));
    double err = 0;
    for (const auto& p : points) {
      if (p.dtype != dtype || p.flops_per_s <= 0) continue;
      const double e = std::log(maxf * GemmEfficiency::shape_factor(half, p.m, p.n, p.k) * peak_flops / p.flops_per_s);
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best.max_fraction = maxf;
      best.half_rate_dim = half;
    }
  }
  return best;
}

}  // namespace cs::calib
