#include "models/ops/recompute.hpp"

#include <algorithm>
#include <array>
#include <sstream>
#include <string_view>

namespace cs::models {

namespace {

constexpr std::array<const char*, kRecomputeModules> kNames = {"core_attn", "mlp",         "moe",           "moe_act",
                                                               "layernorm", "mla_up_proj", "shared_experts"};

bool named(const Item& it, std::initializer_list<std::string_view> names) {
  if (it.comm) return false;
  return std::find(names.begin(), names.end(), it.op.name) != names.end();
}

bool is_cast(const Item& it) {
  return !it.comm && (it.op.name == "fp8_amax" || it.op.name == "fp8_cast_transpose" || it.op.name == "fp8_transpose");
}

/// The items of one module in a layer's forward program (indices, in order).
std::vector<std::size_t> module_items(const std::vector<Item>& f, RecomputeModule m) {
  std::vector<std::size_t> out;
  // Span modules re-run everything between their first and last op (their collectives too).
  const auto span = [&](std::initializer_list<std::string_view> names) {
    std::size_t first = f.size(), last = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
      if (named(f[i], names)) {
        first = std::min(first, i);
        last = i;
      }
    }
    for (std::size_t i = first; i < f.size() && i <= last; ++i) out.push_back(i);
  };
  switch (m) {
    case RecomputeModule::kCoreAttn:
      for (std::size_t i = 0; i < f.size(); ++i) {
        const bool ring = f[i].comm && std::string_view(f[i].comm->label).rfind("cp.", 0) == 0;
        if ((!f[i].comm && f[i].op.core_attention) || ring) out.push_back(i);
      }
      break;
    case RecomputeModule::kMlp: span({"mlp_up", "mlp_act", "mlp_down"}); break;
    case RecomputeModule::kMoe:
      span({"router", "router.topk", "permute", "experts_up", "experts_act", "experts_down", "unpermute", "shared_up",
            "shared_act", "shared_down"});
      break;
    case RecomputeModule::kMoeAct: span({"experts_act"}); break;
    case RecomputeModule::kLayernorm:
      for (std::size_t i = 0; i < f.size(); ++i) {
        if (!named(f[i], {"attn_norm", "mlp_norm"})) continue;
        out.push_back(i);
        // Under FP8 the FP8 copy of its output is made again with it: the transpose the weight
        // gradient needs (delayed scaling, where the norm writes the copy), or the amax pass and the
        // whole cast (current scaling).
        for (std::size_t j = i + 1; j < f.size() && is_cast(f[j]); ++j) out.push_back(j);
      }
      break;
    case RecomputeModule::kMlaUpProj: span({"q_up", "kv_up"}); break;
    case RecomputeModule::kSharedExperts: span({"shared_up", "shared_act", "shared_down"}); break;
  }
  return out;
}

}  // namespace

const char* recompute_module_name(RecomputeModule m) { return kNames[static_cast<std::size_t>(m)]; }

const std::vector<RecomputeModule>& all_recompute_modules() {
  static const std::vector<RecomputeModule> all = [] {
    std::vector<RecomputeModule> v;
    for (int i = 0; i < kRecomputeModules; ++i) v.push_back(static_cast<RecomputeModule>(i));
    return v;
  }();
  return all;
}

std::string RecomputeModules::text() const {
  std::string out;
  for (auto m : all_recompute_modules()) {
    if (has(m)) out += std::string(out.empty() ? "" : ",") + recompute_module_name(m);
  }
  return out;
}

std::optional<std::string> parse_recompute_modules(const std::string& text, RecomputeModules& out) {
  std::stringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (name.empty()) continue;
    const auto it = std::find(kNames.begin(), kNames.end(), name);
    if (it == kNames.end()) return name;
    out.add(static_cast<RecomputeModule>(it - kNames.begin()));
  }
  return std::nullopt;
}

double LayerActivations::total() const {
  return norm_inputs + norm_outputs + qkv + mla_up + core_attn + attn_out_cast + mlp + router + expert_in + expert_fc1 +
         expert_act + shared + masks;
}

double LayerActivations::kept(const RecomputeModules& mods) const {
  using M = RecomputeModule;
  double t = total();
  if (mods.has(M::kLayernorm)) t -= norm_outputs;
  if (mods.has(M::kMlaUpProj)) t -= mla_up;
  if (mods.has(M::kCoreAttn)) t -= core_attn;
  if (mods.has(M::kMlp)) t -= mlp;
  if (mods.has(M::kMoe)) {
    t -= router + expert_in + expert_fc1 + expert_act + shared;
  } else {
    if (mods.has(M::kMoeAct)) t -= expert_act;
    if (mods.has(M::kSharedExperts)) t -= shared;
  }
  return t;
}

std::vector<Item> recompute_items(const std::vector<Item>& forward, const RecomputeModules& modules) {
  std::vector<char> take(forward.size(), 0);
  for (auto m : all_recompute_modules()) {
    if (!modules.has(m)) continue;
    for (auto i : module_items(forward, m)) take[i] = 1;
  }
  // A re-run GEMM's input cast (with its amax pass, under current scaling) runs again with it.
  for (std::size_t i = 1; i < forward.size(); ++i) {
    if (!take[i] || forward[i].comm || forward[i].op.kind != OpKind::kGemm) continue;
    for (std::size_t j = i; j > 0 && is_cast(forward[j - 1]); --j) take[j - 1] = 1;
  }
  std::vector<Item> out;
  for (std::size_t i = 0; i < forward.size(); ++i) {
    if (take[i]) out.push_back(forward[i]);
  }
  return out;
}

}  // namespace cs::models

namespace cs::models {

LayerActivations layer_activations(const ModelArch& m, const StepShape& s, LayerKind kind, bool fp8_cache) {
  const auto d = layer_dims(m, s);
  const double T = d.tokens;
  const double r = d.norm_tokens / d.tokens;  // 1/TP under sequence parallelism
  const double a = d.act_bytes;
  // A linear layer keeps its input for the weight gradient: bf16, or under FP8 the FP8 cast
  // (Transformer Engine saves the quantised input; under SP the local shard, gathered again).
  const double lin = s.fp8 ? 1.0 : a;
  // DeepSeek's FP8 cache keeps the attention output and the activation functions' inputs in FP8
  // as well (its custom formats are 1 byte, or near it).
  const double cached = fp8_cache ? 1.0 : a;
  LayerActivations x;
  x.norm_inputs = 2 * a * T * d.hidden * r;  // attention-norm and MLP-norm inputs
  x.norm_outputs = lin * T * d.hidden * r;   // the QKV (or MLA down-projections') input
  x.norm_outputs += lin * T * d.hidden * r;  // the MLP (or router and experts') input
  if (kind.attention == AttentionKind::kMla) {
    const auto& ml = m.mla;
    const double hq = static_cast<double>(q_heads_per_rank(m, s.tp));
    const double qk = static_cast<double>(ml.qk_nope_dim + ml.qk_rope_dim), v = static_cast<double>(ml.v_dim);
    x.qkv = lin * T * static_cast<double>(ml.q_lora_rank + ml.kv_lora_rank);  // the up-projections' inputs
    x.mla_up = a * T * hq * (2 * qk + v);                                     // Q, K, V per head
    x.core_attn = cached * T * hq * v;                                        // attention output
    if (s.fp8 && !fp8_cache) x.attn_out_cast = T * hq * v;                    // its FP8 cast (out_proj input)
  } else {
    x.qkv = a * T * (d.q + 2 * d.kv);                    // Q, K, V
    x.core_attn = cached * T * d.q;                      // attention output (flash backward; out_proj input)
    if (s.fp8 && !fp8_cache) x.attn_out_cast = T * d.q;  // its FP8 cast, the out_proj input
  }
  // Flash attention: the fp32 log-sum-exp per query and head; unfused: the softmax output, and
  // with dropout its 1-byte mask and output (Korthikanti et al. 2022, Eq. 1: 5 a s^2 b).
  x.core_attn += s.flash_attention
                     ? 4.0 * s.tokens() * static_cast<double>(q_heads_per_rank(m, s.tp))
                     : score_elements(m, s) * (s.act_bytes + (m.attention_dropout ? 1.0 + s.act_bytes : 0.0));
  if (kind.ffn == FeedForwardKind::kDense) {
    x.mlp = cached * T * d.up + lin * T * d.ffn;  // activation-function input, down-projection input
  } else {
    const double Tm = T / s.tp, E = static_cast<double>(m.moe.experts);
    const double pairs = Tm * static_cast<double>(m.moe.top_k) * s.expert_load * s.etp;
    const double gated = m.activation == Activation::kSwiGlu ? 2.0 : 1.0;
    const double f = static_cast<double>(m.moe.expert_ffn) / s.etp, fs = static_cast<double>(m.moe.shared_ffn);
    x.router = 4 * Tm * E;                      // fp32 router scores
    x.expert_in = pairs * lin * d.hidden;       // per pair: the expert's input
    x.expert_fc1 = pairs * cached * gated * f;  // its up-projection output (the activation's input)
    x.expert_act = pairs * lin * f;             // its activation output, the down-projection's input
    if (fs > 0) x.shared = Tm * (lin * d.hidden + cached * gated * fs + lin * fs);
  }
  if (m.hidden_dropout) x.masks = 2 * T * d.hidden * r;  // two dropout masks, one byte per element
  return x;
}

}  // namespace cs::models
