#include "calibration/profile/kernel_tables.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>

#include "calibration/profile/hardware_profile.hpp"

namespace cs::calib {

namespace {

const std::array<KernelTableSchema, kKernelTables>& schemas() {
  static const std::array<KernelTableSchema, kKernelTables> s{{
      {KernelTable::kGemm, "gemm_perf", "gemm", {"gemm_dtype"}, {"m", "n", "k"}},
      {KernelTable::kContextAttention,
       "context_attention_perf",
       "attention",
       {"kernel_source", "head_dim", "window_size", "attn_dtype", "kv_cache_dtype"},
       {"num_heads", "num_key_value_heads", "isl", "batch_size"}},
      {KernelTable::kTrainAttention,
       "train_attention_perf",
       "attention",
       {"head_dim", "window_size", "attn_dtype", "kv_cache_dtype"},
       {"num_heads", "num_key_value_heads", "isl", "batch_size"}},
      {KernelTable::kTrainAttentionBwd,
       "train_attention_bwd_perf",
       "attention",
       {"head_dim", "window_size", "attn_dtype", "kv_cache_dtype"},
       {"num_heads", "num_key_value_heads", "isl", "batch_size"}},
      {KernelTable::kGenerationAttention,
       "generation_attention_perf",
       "attention",
       {"kernel_source", "head_dim", "window_size", "kv_cache_dtype"},
       {"num_heads", "num_key_value_heads", "step", "batch_size"}},
      {KernelTable::kContextMla, "context_mla_perf", "mla", {"kv_cache_dtype"}, {"num_heads", "isl", "batch_size"}},
      {KernelTable::kGenerationMla,
       "generation_mla_perf",
       "mla",
       {"kv_cache_dtype"},
       {"num_heads", "step", "batch_size"}},
      {KernelTable::kMoe,
       "moe_perf",
       "moe",
       {"kernel_source", "moe_dtype", "distribution", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
        "moe_ep_size"},
       {"num_tokens"}},
      {KernelTable::kNccl, "nccl_perf", "nccl", {"op_name", "nccl_dtype", "num_gpus"}, {"message_size"}},
      {KernelTable::kCustomAllReduce, "custom_allreduce_perf", "nccl", {"num_gpus"}, {"message_size"}},
      {KernelTable::kDeepepLlDispatch,
       "wideep_deepep_ll_perf",
       "deepep",
       {"hidden_size", "num_topk", "num_experts"},
       {"num_token"},
       "dispatch_avg_t_us",
       1e-6},
      {KernelTable::kDeepepLlCombine,
       "wideep_deepep_ll_perf",
       "deepep",
       {"hidden_size", "num_topk", "num_experts"},
       {"num_token"},
       "combine_avg_t_us",
       1e-6},
  }};
  return s;
}

std::string num(double v) {
  const auto i = static_cast<long long>(std::llround(v));
  return std::to_string(i);
}

std::string join(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += '|';
    out += p;
  }
  return out;
}

/// The table and the first kernel source (in order of preference) under which it has the key.
std::optional<TableKey> first_source(const KernelTables& ts, KernelTable kind,
                                     std::initializer_list<const char*> sources, const std::string& rest) {
  const LatencyTable* t = ts.table(kind);
  if (!t) return std::nullopt;
  for (const char* s : sources) {
    std::string key = std::string(s) + "|" + rest;
    if (t->has(key)) return TableKey{t, std::move(key), kind, ts.source_of(kind)->id};
  }
  return std::nullopt;
}

/// The table and `key` when the table has rows under it.
std::optional<TableKey> keyed(const KernelTables& ts, KernelTable kind, std::string key) {
  const LatencyTable* t = ts.table(kind);
  if (!t || !t->has(key)) return std::nullopt;
  return TableKey{t, std::move(key), kind, ts.source_of(kind)->id};
}

/// The lookup at `key`, when there is one.
template <class Axes>
std::optional<KernelTime> look(const std::optional<TableKey>& k, const Axes& axes, const LatencyTable::Model& model) {
  if (!k) return std::nullopt;
  return k->table->lookup(k->key, std::span<const double>(axes), model);
}

/// The attention tables' axes in lookup order: heads and K/V heads, then sequence, then batch.
/// The measured grids are not products (aiconfigurator measures batch x sequence up to a token
/// budget that depends on the heads), so the head configuration is narrowed first and a lookup
/// stays among its own rows (bracketing batch or sequence first would borrow the range of other
/// head configurations, then clamp and rescale across heads). Batch comes last because it is the
/// axis to scale along beyond the budget: sequences are independent work, so time grows in
/// proportion to the batch (on the H100 table, decode at 127 cached tokens costs 0.90-1.12 ns per
/// cached token from batch 128 to 2,048), while along the sequence a per-sequence floor makes
/// proportional scaling wrong (the same table: 1.4 ns at 63 tokens, 0.75 at 255, batch 1,024).
std::array<double, 4> attention_axes(double heads, double kv_heads, double batch, double seq) {
  return {heads, kv_heads, seq, batch};
}
std::array<double, 3> mla_axes(double heads, double batch, double seq) { return {heads, seq, batch}; }

/// The caller's analytic model takes (batch, sequence, heads[, K/V heads]); the tables' axes are
/// in the order above.
LatencyTable::Model attention_model(const LatencyTable::Model& model) {
  if (!model) return {};
  return [model](std::span<const double> x) {
    const double caller[] = {x[3], x[2], x[0], x[1]};
    return model(caller);
  };
}
LatencyTable::Model mla_model(const LatencyTable::Model& model) {
  if (!model) return {};
  return [model](std::span<const double> x) {
    const double caller[] = {x[2], x[1], x[0]};
    return model(caller);
  };
}

}  // namespace

const KernelTableSchema& kernel_table_schema(KernelTable t) { return schemas()[static_cast<std::size_t>(t)]; }

const std::array<KernelTable, kKernelTables>& all_kernel_tables() {
  static const std::array<KernelTable, kKernelTables> a = [] {
    std::array<KernelTable, kKernelTables> x{};
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<KernelTable>(i);
    return x;
  }();
  return a;
}

const std::vector<std::string>& kernel_table_groups() {
  static const std::vector<std::string> g{"gemm", "attention", "mla", "moe", "nccl", "deepep"};
  return g;
}

bool KernelTableRef::uses(const std::string& group) const {
  return use.empty() || std::find(use.begin(), use.end(), group) != use.end();
}

const LatencyTable* KernelTableRef::table(KernelTable t) const {
  if (!data || !uses(kernel_table_schema(t).group)) return nullptr;
  return data->table(t);
}

const KernelTableRef* KernelTables::source_of(KernelTable t) const {
  for (const auto& r : refs) {
    if (r.data && r.uses(kernel_table_schema(t).group) && r.data->has(t)) return &r;
  }
  return nullptr;
}

const LatencyTable* KernelTables::table(KernelTable t) const {
  const auto* r = source_of(t);
  return r ? r->table(t) : nullptr;
}

bool KernelTables::attached() const {
  return std::any_of(refs.begin(), refs.end(), [](const KernelTableRef& r) { return r.data != nullptr; });
}

std::string gemm_table_dtype(Dtype d) {
  switch (d) {
    case Dtype::kBf16: return "bfloat16";
    case Dtype::kFp8: return "fp8";
    case Dtype::kFp4: return "nvfp4";
    case Dtype::kFp16:
    case Dtype::kTf32:
    case Dtype::kFp32: return "";
  }
  return "";
}

std::optional<TableKey> gemm_key(const KernelTables& t, Dtype d) {
  const std::string key = gemm_table_dtype(d);
  if (key.empty()) return std::nullopt;
  return keyed(t, KernelTable::kGemm, key);
}

std::optional<KernelTime> table_gemm(const KernelTables& t, Dtype d, double m, double n, double k,
                                     const LatencyTable::Model& model) {
  const std::array<double, 3> axes{m, n, k};
  return look(gemm_key(t, d), axes, model);
}

namespace {
std::string attention_dtype(const AttentionQuery& q) { return q.fp8 ? "fp8" : "bfloat16"; }
}  // namespace

std::optional<TableKey> context_attention_key(const KernelTables& t, const AttentionQuery& q) {
  if (q.mla) return q.window > 0 ? std::nullopt : keyed(t, KernelTable::kContextMla, attention_dtype(q));
  const std::string dtype = attention_dtype(q);
  return first_source(t, KernelTable::kContextAttention, {"torch_flow", "torch_flow_flashinfer", "default"},
                      join({num(q.head_dim), num(q.window), dtype, dtype}));
}

std::optional<KernelTime> table_context_attention(const KernelTables& t, const AttentionQuery& q,
                                                  const LatencyTable::Model& model) {
  if (q.mla) return look(context_attention_key(t, q), mla_axes(q.heads, q.batch, q.seq), mla_model(model));
  return look(context_attention_key(t, q), attention_axes(q.heads, q.kv_heads, q.batch, q.seq), attention_model(model));
}

std::optional<TableKey> train_attention_key(const KernelTables& t, const AttentionQuery& q, bool backward) {
  // MLA's training form: q/k 192 (128 + 64 rope), v 128, one K/V head per query head.
  const double head_dim = q.mla ? 192 : q.head_dim;
  return keyed(t, backward ? KernelTable::kTrainAttentionBwd : KernelTable::kTrainAttention,
               join({num(head_dim), num(q.window), "bfloat16", "bfloat16"}));
}

std::optional<KernelTime> table_train_attention(const KernelTables& t, const AttentionQuery& q, bool backward,
                                                const LatencyTable::Model& model) {
  const double kv_heads = q.mla ? q.heads : q.kv_heads;
  return look(train_attention_key(t, q, backward), attention_axes(q.heads, kv_heads, q.batch, q.seq),
              attention_model(model));
}

std::optional<TableKey> generation_attention_key(const KernelTables& t, const AttentionQuery& q) {
  if (q.mla) return q.window > 0 ? std::nullopt : keyed(t, KernelTable::kGenerationMla, attention_dtype(q));
  return first_source(t, KernelTable::kGenerationAttention, {"torch_flow", "torch_flow_flashinfer", "default"},
                      join({num(q.head_dim), num(q.window), attention_dtype(q)}));
}

std::optional<KernelTime> table_generation_attention(const KernelTables& t, const AttentionQuery& q, double context,
                                                     const LatencyTable::Model& model) {
  const double step = std::max(1.0, context - 1);
  if (q.mla) return look(generation_attention_key(t, q), mla_axes(q.heads, q.batch, step), mla_model(model));
  return look(generation_attention_key(t, q), attention_axes(q.heads, q.kv_heads, q.batch, step),
              attention_model(model));
}

std::optional<TableKey> moe_key(const KernelTables& t, const MoeQuery& q) {
  const std::string rest =
      join({q.dtype, "power_law_1.01", num(q.hidden), num(q.inter), num(q.topk), num(q.experts), num(q.tp), num(q.ep)});
  if (q.gated) return first_source(t, KernelTable::kMoe, {"moe_torch_flow_cutlass", "moe_torch_flow"}, rest);
  return first_source(t, KernelTable::kMoe, {"moe_torch_flow_nongated"}, rest);
}

std::optional<KernelTime> table_moe(const KernelTables& t, const MoeQuery& q) {
  const std::array<double, 1> axes{q.tokens};
  // Beyond the most tokens measured (16,384 in the shipped tables) the layer's GEMMs are
  // compute-bound: its time grows with the tokens, at the largest row's rate (the roofline's
  // compute side). The tables start at one token, the least a layer takes.
  const LatencyTable::Model per_token = [](std::span<const double> a) { return std::max(a[0], 1.0); };
  return look(moe_key(t, q), axes, per_token);
}

std::optional<TableKey> nccl_key(const KernelTables& t, const std::string& op, int gpus, double* element_bytes) {
  // message_size counts elements (PROVENANCE.md): half 2 bytes each (aiconfigurator's rows),
  // float 4 (the probe's).
  for (const auto& [dtype, size] : {std::pair{"half", 2.0}, std::pair{"float", 4.0}}) {
    if (auto k = keyed(t, KernelTable::kNccl, join({op, dtype, std::to_string(gpus)}))) {
      if (element_bytes) *element_bytes = size;
      return k;
    }
  }
  return std::nullopt;
}

std::optional<KernelTime> table_nccl(const KernelTables& t, const std::string& op, int gpus, double bytes) {
  // Above the measured sizes a collective's time grows with its bytes (bandwidth-bound); below them
  // it stays at the smallest size's (latency-bound).
  const LatencyTable::Model linear = [](std::span<const double> a) { return std::max(a[0], 1e6); };
  double size = 2;
  const auto k = nccl_key(t, op, gpus, &size);
  const std::array<double, 1> axes{bytes / size};
  return look(k, axes, linear);
}

std::optional<TableKey> custom_allreduce_key(const KernelTables& t, int gpus) {
  return keyed(t, KernelTable::kCustomAllReduce, std::to_string(gpus));
}

std::optional<KernelTime> table_custom_allreduce(const KernelTables& t, int gpus, double bytes) {
  const std::array<double, 1> axes{bytes / 2};
  const LatencyTable::Model linear = [](std::span<const double> a) { return std::max(a[0], 1e6); };
  return look(custom_allreduce_key(t, gpus), axes, linear);
}

}  // namespace cs::calib
