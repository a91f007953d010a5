#include "sim/workload/compute_model.hpp"

#include <algorithm>

namespace cs::workload {

ComputeModel::ComputeModel(const calib::HardwareProfile& profile, calib::Dtype dtype, bool cuda_graphs)
    : profile_(profile),
      dtype_(dtype),
      peak_(profile.peak(dtype).value),
      attention_peak_(
          profile.peak(dtype == calib::Dtype::kFp8 || dtype == calib::Dtype::kFp4 ? calib::Dtype::kBf16 : dtype).value),
      hbm_(profile.hbm_bandwidth.value * profile.hbm_fraction.value),
      overhead_(cuda_graphs ? profile.graph_kernel_overhead.value : profile.kernel_overhead.value) {}

double ComputeModel::memory_seconds(double bytes) const { return bytes / hbm_ + overhead_; }

double ComputeModel::seconds(const models::Op& op) const {
  double matrix_rate = peak_;
  switch (op.kind) {
    case models::OpKind::kGemm:
      // Under FP8 training only the decoder's linear layers run FP8 GEMMs (Transformer Engine):
      // core attention's batched GEMMs, the LM head and the router stay 16-bit; so under FP4
      // serving weights.
      if ((op.core_attention || op.keep_16bit) && (dtype_ == calib::Dtype::kFp8 || dtype_ == calib::Dtype::kFp4)) {
        matrix_rate =
            attention_peak_ * profile_.gemm_fraction(calib::Dtype::kBf16, op.m, op.n, op.k, op.groups, op.routed);
      } else {
        matrix_rate *= profile_.gemm_fraction(dtype_, op.m, op.n, op.k, op.groups, op.routed);
      }
      break;
    case models::OpKind::kAttentionForward:
      matrix_rate = attention_peak_ * profile_.attention_forward_fraction.value;
      break;
    case models::OpKind::kAttentionBackward:
      matrix_rate = attention_peak_ * profile_.attention_backward_fraction.value;
      break;
    case models::OpKind::kMemoryBound: return memory_seconds(op.bytes);
    case models::OpKind::kVectorFlops: {
      const auto& fp32 = profile_.peak(calib::Dtype::kFp32);
      return op.flops / fp32.value + overhead_;
    }
  }
  matrix_rate *= op.sm_share;
  return std::max(op.flops / matrix_rate, op.bytes / hbm_) + overhead_;
}

}  // namespace cs::workload
