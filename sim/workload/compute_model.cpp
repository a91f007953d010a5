#include "sim/workload/compute_model.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace cs::workload {

namespace {

/// What a table lookup depends on: the op's kind and shape (not its name or bytes).
struct LookupKey {
  std::array<double, 15> v{};
  bool operator==(const LookupKey&) const = default;
};
struct LookupHash {
  std::size_t operator()(const LookupKey& k) const {
    std::size_t h = 1469598103934665603ull;
    for (double x : k.v) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &x, sizeof bits);
      h = (h ^ bits) * 1099511628211ull;
    }
    return h;
  }
};

LookupKey key_of(const models::Op& op) {
  const auto& a = op.attention;
  return {{static_cast<double>(op.kind), op.m, op.n, op.k, op.groups,
           (op.core_attention ? 1.0 : 0.0) + (op.keep_16bit ? 2.0 : 0.0) + (op.input_cast_separately ? 4.0 : 0.0) +
               (a.mla ? 8.0 : 0.0) + (op.input_static_scale ? 16.0 : 0.0),
           a.batch, a.seq, a.heads, a.kv_heads, a.qk_dim + 1e4 * a.v_dim, a.window, a.share, a.context,
           (a.decode ? 1.0 : 0.0) + (a.fp8 ? 2.0 : 0.0) + (a.train ? 4.0 : 0.0)}};
}

/// Bytes per element a table's GEMM dtype streams (NVFP4: 4 bits and an 8-bit scale per 16).
double element_bytes(calib::Dtype d) {
  switch (d) {
    case calib::Dtype::kFp8: return 1.0;
    case calib::Dtype::kFp4: return 4.5 / 8;
    case calib::Dtype::kFp32:
    case calib::Dtype::kTf32: return 4.0;
    case calib::Dtype::kBf16:
    case calib::Dtype::kFp16: return 2.0;
  }
  return 2.0;
}

calib::KernelSource worse(calib::KernelSource a, calib::KernelSource b) { return std::max(a, b); }

}  // namespace

struct ComputeModel::Memo {
  std::mutex mutex;
  std::unordered_map<LookupKey, std::optional<calib::KernelTime>, LookupHash> seen;
};

ComputeModel::ComputeModel(const calib::HardwareProfile& profile, calib::Dtype dtype, bool cuda_graphs)
    : profile_(profile),
      dtype_(dtype),
      peak_(profile.peak(dtype).value),
      attention_peak_(
          profile.peak(dtype == calib::Dtype::kFp8 || dtype == calib::Dtype::kFp4 ? calib::Dtype::kBf16 : dtype).value),
      hbm_(profile.hbm_bandwidth.value * profile.hbm_fraction.value),
      overhead_(cuda_graphs ? profile.graph_kernel_overhead.value : profile.kernel_overhead.value),
      host_issue_(cuda_graphs || !profile.host_kernel_issue ? 0.0 : profile.host_kernel_issue->value),
      memo_(std::make_shared<Memo>()) {}

double ComputeModel::memory_seconds(double bytes) const { return bytes / hbm_ + overhead_; }

double ComputeModel::analytic_seconds(const models::Op& op) const {
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

std::optional<calib::KernelTime> ComputeModel::table_gemm(const models::Op& op) const {
  const bool low = dtype_ == calib::Dtype::kFp8 || dtype_ == calib::Dtype::kFp4;
  const calib::Dtype d = (op.core_attention || op.keep_16bit) && low ? calib::Dtype::kBf16 : dtype_;
  if (calib::gemm_table_dtype(d).empty() || !profile_.matrix_peak.count(d)) return std::nullopt;
  // A grouped GEMM (experts) or batched one (unfused attention) as the table's one GEMM over all
  // groups' rows stacked (the same FLOPs and tiles), each group's own weights streamed as a floor,
  // and a grouped kernel's measured cost over the stacked GEMM (grouped_gemm_ratio).
  const double rows = op.m * op.groups;
  const double peak = profile_.matrix_peak.at(d).value, wb = element_bytes(d);
  const calib::LatencyTable::Model roofline = [&](std::span<const double> x) {
    return std::max(2.0 * x[0] * x[1] * x[2] / peak, (x[0] * x[2] * wb + x[1] * x[2] * wb + x[0] * x[1] * 2.0) / hbm_);
  };
  auto t = calib::table_gemm(profile_.kernel_tables, d, rows, op.n, op.k, roofline);
  if (!t) return std::nullopt;
  if (op.groups > 1) {
    if (!op.core_attention && profile_.grouped_gemm_ratio) t->seconds *= profile_.grouped_gemm_ratio->value;
    t->seconds = std::max(t->seconds, op.groups * op.n * op.k * wb / hbm_);
  }
  // The table's low-precision rows quantise the bf16 input inside the timed call (PROVENANCE.md:
  // FP8 dynamically per tensor, an amax pass and a cast pass: read 2 + 2 bytes, write 1; NVFP4 in
  // one pass: read 2, write 4.5 bits). What this op does not run of that is taken out, estimated at
  // the achieved HBM rate with each pass's in-graph launch, and never more than half of the
  // measured latency: all of it when the input is cast by a kernel of its own; the amax pass (read
  // 2 bytes) when the FP8 scale is static.
  const auto* from = profile_.kernel_tables.source_of(calib::KernelTable::kGemm);
  if (!from || !from->gemm_quantizes_input) return t;
  double bytes = 0, passes = 0;
  if (op.input_cast_separately && (d == calib::Dtype::kFp8 || d == calib::Dtype::kFp4)) {
    bytes = d == calib::Dtype::kFp8 ? 5.0 : 2.0 + 4.5 / 8;
    passes = d == calib::Dtype::kFp8 ? 2.0 : 1.0;
  } else if (op.input_static_scale && d == calib::Dtype::kFp8) {
    bytes = 2.0;
    passes = 1.0;
  }
  if (passes > 0) {
    const double quant = rows * op.k * bytes / hbm_ + passes * profile_.graph_kernel_overhead.value;
    t->seconds = std::max(t->seconds - quant, 0.5 * t->seconds);
  }
  return t;
}

calib::AttentionQuery attention_query(const models::AttentionKey& a) {
  calib::AttentionQuery q;
  q.batch = a.batch;
  q.seq = a.seq;
  q.heads = a.heads;
  q.kv_heads = a.kv_heads;
  q.head_dim = a.qk_dim;
  q.window = a.window >= a.seq ? 0.0 : a.window;
  q.mla = a.mla;
  q.fp8 = a.fp8;
  return q;
}

std::optional<calib::TableKey> ComputeModel::attention_table(const models::Op& op) const {
  const auto& a = op.attention;
  if (a.batch <= 0 || (a.decode ? a.context <= 0 : a.seq <= 0)) return std::nullopt;
  // The tables hold one head size per row for Q, K and V (head_dim), and MLA in DeepSeek's form
  // (qk 128 + 64 rope, v 128: PROVENANCE.md).
  if (a.mla ? (a.qk_dim != 192 || a.v_dim != 128) : a.qk_dim != a.v_dim) return std::nullopt;
  const calib::AttentionQuery q = attention_query(a);
  const auto& tables = profile_.kernel_tables;
  if (a.decode) return calib::generation_attention_key(tables, q);
  // Training asks for its own kernels first (train_attention_perf: cuDNN's fused attention, as
  // Transformer Engine runs it), then the serving engines' prefill kernels.
  const auto forward = [&]() -> std::optional<calib::TableKey> {
    if (a.train) {
      if (auto k = calib::train_attention_key(tables, q, false)) return k;
    }
    return calib::context_attention_key(tables, q);
  };
  if (op.kind != models::OpKind::kAttentionBackward) return forward();
  // A backward: the measured backward; else the forward, scaled by the profile's ratio when it has one.
  if (auto k = calib::train_attention_key(tables, q, true)) return k;
  if (!profile_.attention_backward_ratio) return std::nullopt;
  return forward();
}

std::optional<calib::KernelTime> ComputeModel::table_attention(const models::Op& op) const {
  const auto key = attention_table(op);
  if (!key) return std::nullopt;
  const auto& a = op.attention;
  const calib::AttentionQuery q = attention_query(a);
  const auto& tables = profile_.kernel_tables;
  std::optional<calib::KernelTime> t;
  if (a.decode) {
    // Decode reads every cached K and V once: beyond the measured shapes, time follows those bytes.
    const calib::LatencyTable::Model kv_bytes = [](std::span<const double> x) {
      return x[0] * x[1] * (x.size() > 3 ? x[3] : x[2]);
    };
    t = calib::table_generation_attention(tables, q, a.context, kv_bytes);
  } else {
    // Beyond the measured shapes: causal attention's FLOPs (pairs within the window) or its bytes.
    const double dims = a.qk_dim + a.v_dim;
    const calib::LatencyTable::Model roofline = [&](std::span<const double> x) {
      const double b = x[0], s = x[1], h = x[2], kvh = x.size() > 3 ? x[3] : h;
      const double w = q.window > 0 && q.window < s ? q.window : s;
      const double pairs = w * w / 2 + (s - w) * w;
      return std::max(2.0 * b * h * pairs * dims / attention_peak_, b * s * (h + kvh) * dims * 2.0 / hbm_);
    };
    switch (key->kind) {
      case calib::KernelTable::kTrainAttention: t = calib::table_train_attention(tables, q, false, roofline); break;
      case calib::KernelTable::kTrainAttentionBwd: t = calib::table_train_attention(tables, q, true, roofline); break;
      default: t = calib::table_context_attention(tables, q, roofline); break;
    }
    if (t && op.kind == models::OpKind::kAttentionBackward && key->kind != calib::KernelTable::kTrainAttentionBwd) {
      // No measured backward: the measured forward times the profile's ratio (measured on another
      // shape or GPU), a scaling of a measurement by a model, hence at best "extrapolated".
      t->seconds *= profile_.attention_backward_ratio->value;
      t->source = worse(t->source, calib::KernelSource::kExtrapolated);
    }
  }
  if (t) t->seconds *= a.share;
  return t;
}

std::optional<calib::KernelTime> ComputeModel::table_time(const models::Op& op) const {
  const bool tabled_kind = op.kind == models::OpKind::kGemm || op.kind == models::OpKind::kAttentionForward ||
                           op.kind == models::OpKind::kAttentionBackward;
  if (!tabled_kind || !profile_.kernel_tables.attached()) return std::nullopt;
  const auto key = key_of(op);
  std::optional<calib::KernelTime> hit;
  bool known = false;
  {
    const std::lock_guard lock(memo_->mutex);
    if (auto it = memo_->seen.find(key); it != memo_->seen.end()) {
      hit = it->second;
      known = true;
    }
  }
  if (!known) {
    hit = op.kind == models::OpKind::kGemm ? table_gemm(op) : table_attention(op);
    const std::lock_guard lock(memo_->mutex);
    memo_->seen.emplace(key, hit);
  }
  return hit;
}

calib::KernelTime ComputeModel::timed(const models::Op& op) const {
  const auto hit = table_time(op);
  if (!hit) return {analytic_seconds(op), calib::KernelSource::kAnalytic};
  // The tables were measured inside CUDA graphs: a kernel run eagerly also pays the host launch
  // gap beyond the in-graph one.
  const double launch = std::max(0.0, overhead_ - profile_.graph_kernel_overhead.value);
  return {hit->seconds / op.sm_share + launch, hit->source};
}

}  // namespace cs::workload
