#pragma once
#include "calibration/profile/hardware_profile.hpp"
#include "models/ops/layer_ops.hpp"

namespace cs::workload {

/// Time of one kernel from the profile: a roofline, max(FLOPs / achieved matrix rate, bytes /
/// achieved HBM bandwidth), plus the per-kernel overhead. The achieved matrix rate is the dtype's
/// peak times the shape-dependent GEMM efficiency (or the fused-attention fraction).
class ComputeModel {
 public:
  /// `cuda_graphs`: kernels pay the profile's in-graph overhead instead of the eager one.
  /// With fp8 (fp4), GEMMs run at the FP8 (FP4) peak (Transformer Engine style) and fused attention,
  /// and GEMMs marked 16-bit, in bf16.
  ComputeModel(const calib::HardwareProfile& profile, calib::Dtype dtype, bool cuda_graphs = false);
  [[nodiscard]] double seconds(const models::Op& op) const;
  /// A streaming kernel over `bytes` of HBM traffic (optimizer, copies).
  [[nodiscard]] double memory_seconds(double bytes) const;
  [[nodiscard]] double peak_flops() const { return peak_; }

 private:
  const calib::HardwareProfile& profile_;
  calib::Dtype dtype_;
  double peak_;
  double attention_peak_;
  double hbm_;
  double overhead_;
};

}  // namespace cs::workload
