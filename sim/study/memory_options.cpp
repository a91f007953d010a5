#include "sim/study/memory_options.hpp"

#include <algorithm>
#include <optional>

#include "models/ops/recompute.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/stage_programs.hpp"
#include "sim/workload/step_memory.hpp"

namespace cs::study {

namespace {

/// Compute seconds of one micro-batch's forward and backward on the first pipeline stage: every
/// model chunk it holds (recomputed forwards and casts included).
double stage0_compute_s(const scenario::Scenario& s) {
  const workload::ComputeModel compute(s.profile, s.dtype);
  const auto programs = workload::build_stage_programs(s, compute);
  double t = 0;
  for (int c = 0; c < s.plan.vpp; ++c) {
    const auto& sp = programs[static_cast<std::size_t>(c * s.plan.pp)];
    for (const auto* prog : {&sp.f, &sp.b})
      for (const auto& it : *prog) t += it.comm ? 0.0 : it.seconds;
  }
  return t;
}

bool has_dense_ffn(const models::ModelArch& m) {
  for (std::int64_t l = 0; l < m.layers; ++l) {
    if (m.layer_kind(l).ffn == models::FeedForwardKind::kDense) return true;
  }
  return false;
}

bool has_mla(const models::ModelArch& m) {
  for (std::int64_t l = 0; l < m.layers; ++l) {
    if (m.layer_kind(l).attention == models::AttentionKind::kMla) return true;
  }
  return false;
}

}  // namespace

std::vector<MemoryOption> memory_options(const scenario::Scenario& s, WhichOptions which) {
  using M = models::RecomputeModule;
  std::vector<std::pair<std::string, scenario::Scenario>> candidates;
  if (s.plan.recompute != plan::Recompute::kFull) {
    const models::RecomputeModules have{s.plan.recompute_modules};
    for (auto m : models::all_recompute_modules()) {
      if (have.has(m)) continue;
      const bool moe_only = m == M::kMoe || m == M::kMoeAct || m == M::kSharedExperts;
      if (moe_only && !s.model.is_moe()) continue;
      if (m == M::kSharedExperts && s.model.moe.shared_ffn == 0) continue;
      if (m == M::kMlaUpProj && !has_mla(s.model)) continue;
      if (m == M::kMlp && !has_dense_ffn(s.model)) continue;
      auto x = s;
      auto mods = have;
      mods.add(m);
      x.plan.recompute = plan::Recompute::kSelective;
      x.plan.recompute_modules = mods.bits;
      candidates.emplace_back("--recompute-modules " + mods.text(), x);
    }
  }
  if (s.plan.recompute != plan::Recompute::kFull && !which.modules_only) {
    auto full = s;
    full.plan.recompute = plan::Recompute::kFull;
    full.plan.recompute_modules = 0;
    full.plan.recompute_method = plan::RecomputeMethod::kUniform;
    full.plan.recompute_layers = 1;
    candidates.emplace_back("--recompute full", full);
  }
  if (!s.fp8_activation_cache && !which.modules_only) {
    auto x = s;
    x.fp8_activation_cache = true;
    candidates.emplace_back("--activation-cache fp8", x);
  }
  if (s.optimizer_moment_bytes > 2 && !which.modules_only) {
    auto x = s;
    x.optimizer_moment_bytes = 2;
    candidates.emplace_back("--optimizer-dtype bf16", x);
  }
  std::optional<double> base;  // timed only when an option is
  const double micro = static_cast<double>(s.micro_batches());
  std::vector<MemoryOption> out;
  for (auto& [flags, x] : candidates) {
    MemoryOption o;
    o.flags = flags;
    o.memory = workload::training_memory_of(x);
    if (which.fitting_only && !o.memory.fits()) continue;
    if (!base) base = stage0_compute_s(s);
    o.extra_compute_s = (stage0_compute_s(x) - *base) * micro;
    o.applied = std::move(x);
    out.push_back(std::move(o));
  }
  std::stable_sort(out.begin(), out.end(), [](const MemoryOption& a, const MemoryOption& b) {
    const double ca = std::max(0.0, a.extra_compute_s), cb = std::max(0.0, b.extra_compute_s);
    if (ca != cb) return ca < cb;
    return a.memory.total < b.memory.total;
  });
  return out;
}

const MemoryOption* cheapest_fitting(const std::vector<MemoryOption>& options) {
  for (const auto& o : options) {
    if (o.memory.fits()) return &o;
  }
  return nullptr;
}

}  // namespace cs::study
