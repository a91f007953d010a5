#pragma once
#include <array>
#include <memory>

#include "calibration/profile/hardware_profile.hpp"
#include "models/ops/layer_ops.hpp"

namespace cs::workload {

/// Compute time by where it came from (calib::KernelSource order), in seconds.
using SourceSeconds = std::array<double, calib::kKernelSources>;
/// Compute time by what it was spent on (models::KernelClass order), in seconds.
using ClassSeconds = std::array<double, models::kKernelClasses>;

/// Each entry's share of their sum (all 0 when the sum is 0).
template <std::size_t N>
[[nodiscard]] std::array<double, N> shares_of(const std::array<double, N>& seconds) {
  double sum = 0;
  for (double x : seconds) sum += x;
  std::array<double, N> out{};
  for (std::size_t k = 0; k < N; ++k) out[k] = sum > 0 ? seconds[k] / sum : 0.0;
  return out;
}

/// The attention tables' query for an op's attention shape (a window as long as the sequence is
/// no window), as ComputeModel asks them.
[[nodiscard]] calib::AttentionQuery attention_query(const models::AttentionKey& a);

/// Time of one kernel. With measured kernel tables attached to the profile (calibration/kernels/):
/// a GEMM is its shape's latency in the table of its dtype (interpolated between measured shapes,
/// scaled by the roofline beyond them), and flash attention its forward latency in the attention
/// table (the backward: the measured backward table, else the forward times the profile's
/// attention_backward_ratio). Otherwise, and for every other kernel, the analytic model: a
/// roofline, max(FLOPs / achieved matrix rate, bytes / achieved HBM bandwidth), plus the
/// per-kernel overhead, the achieved matrix rate being the dtype's peak times the shape-dependent
/// GEMM efficiency (or the fused-attention fraction). Lookups are remembered per shape.
class ComputeModel {
 public:
  /// `cuda_graphs`: kernels pay the profile's in-graph overhead instead of the eager one.
  /// With fp8 (fp4), GEMMs run at the FP8 (FP4) peak (Transformer Engine style) and fused attention,
  /// and GEMMs marked 16-bit, in bf16.
  ComputeModel(const calib::HardwareProfile& profile, calib::Dtype dtype, bool cuda_graphs = false);
  /// The kernel's time and where it came from.
  [[nodiscard]] calib::KernelTime timed(const models::Op& op) const;
  [[nodiscard]] double seconds(const models::Op& op) const { return timed(op).seconds; }
  /// The analytic model's time alone (what the tables replace; `clustersim kernels` shows both).
  [[nodiscard]] double analytic_seconds(const models::Op& op) const;
  /// The measured tables' time for a GEMM or attention op (interpolated, or scaled beyond the
  /// tables by the roofline), before the eager launch gap; nullopt when no table holds it.
  [[nodiscard]] std::optional<calib::KernelTime> table_time(const models::Op& op) const;
  /// The table and key an attention op's time is read from (what `clustersim kernels` shows the
  /// coverage of): the decode, training (forward or measured backward) or prefill table; for a
  /// backward without a measured one, its forward's (scaled by the profile's ratio); nullopt when
  /// the time is analytic.
  [[nodiscard]] std::optional<calib::TableKey> attention_table(const models::Op& op) const;
  /// A streaming kernel over `bytes` of HBM traffic (optimizer, copies).
  [[nodiscard]] double memory_seconds(double bytes) const;
  [[nodiscard]] double peak_flops() const { return peak_; }
  /// Host seconds per kernel launched (the profile's host_kernel_issue; 0 under CUDA graphs, whose
  /// launches the host does not make one by one).
  [[nodiscard]] double host_issue_s() const { return host_issue_; }
  [[nodiscard]] const calib::HardwareProfile& profile() const { return profile_; }

 private:
  struct Memo;
  [[nodiscard]] std::optional<calib::KernelTime> table_gemm(const models::Op& op) const;
  [[nodiscard]] std::optional<calib::KernelTime> table_attention(const models::Op& op) const;

  const calib::HardwareProfile& profile_;
  calib::Dtype dtype_;
  double peak_;
  double attention_peak_;
  double hbm_;
  double overhead_;
  double host_issue_;
  std::shared_ptr<Memo> memo_;  ///< table lookups by shape (shared by copies; thread-safe)
};

}  // namespace cs::workload
