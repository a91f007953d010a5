#pragma once
#include <utility>
#include <vector>

#include "calibration/profile/hardware_profile.hpp"

namespace cs::calib {

/// time = alpha + bytes / bandwidth, fitted by least squares on relative error (weights 1/t^2), so
/// that small messages (latency) and large ones (bandwidth) both count. Points are (bytes, s).
struct AlphaBeta {
  double alpha_s = 0;
  double bytes_per_s = 0;
  double max_relative_error = 0;  ///< worst |fit/measured - 1| over the points
};
[[nodiscard]] AlphaBeta fit_alpha_beta(const std::vector<std::pair<double, double>>& points);

/// The GEMM-efficiency model (max_fraction, half_rate_dim) that best fits measured points of one
/// dtype (least squares in log space, over a fixed grid: max_fraction 0.05..1 by 0.0025,
/// half_rate_dim 0..2048 by 4), so the fit is deterministic.
[[nodiscard]] GemmEfficiency fit_gemm_efficiency(const std::vector<GemmPoint>& points, Dtype dtype, double peak_flops);

}  // namespace cs::calib
