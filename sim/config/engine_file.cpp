#include "sim/config/engine_file.hpp"

#include <algorithm>
#include <cmath>

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"
#include "sim/core/check.hpp"

namespace cs::config {

using serving::EnginePreset;
using serving::EngineTier;
using serving::KvMemoryRule;
using serving::Scheduler;

namespace {

constexpr std::int64_t kMaxTokens = 1 << 24;

void read_scheduler(Reader& r, EnginePreset& e) {
  auto s = r.child("scheduler");
  const auto policy = s.req_enum("policy", {"continuous", "prefill_first", "no_evict"});
  e.policy = policy == "prefill_first" ? Scheduler::kPrefillFirst
             : policy == "no_evict"    ? Scheduler::kNoEvict
                                       : Scheduler::kContinuous;
  e.admit_after_preempt = s.opt_bool("admit_after_preempt", true);
  e.max_prefill_tokens = s.opt_int("max_prefill_tokens", 1, kMaxTokens, 16384);
  if (auto n = s.opt_child("new_token_ratio")) {
    e.new_token_ratio.initial = n->req_number("initial", 0.0, 1.0);
    e.new_token_ratio.floor = e.new_token_ratio.initial * n->req_number("floor_factor", 0.0, 1.0);
    e.new_token_ratio.decay_steps = n->req_int("decay_steps", 1, 1 << 30);
    e.new_token_ratio.clip = n->req_int("clip_max_new_tokens", 1, kMaxTokens);
    (void)n->req_string("source");
    n->finish();
  }
  (void)s.req_string("source");
  s.finish();
}

void read_limits(Reader& r, EnginePreset& e) {
  auto l = r.child("limits");
  (void)l.req_string("source");
  e.max_batch_from_kv_pool = l.opt_bool("max_batch_from_kv_pool", false);
  for (auto& t : l.each("tiers")) {
    EngineTier tier;
    tier.min_memory_gib = t.req_number("min_memory_gib", 0.0, 1e6);
    tier.min_tp = static_cast<int>(t.opt_int("min_tp", 1, 1 << 16, 1));
    tier.exclude_gpu_name = t.opt_string("exclude_gpu_name", "");
    tier.max_tokens = t.req_int("max_tokens", 1, kMaxTokens);
    tier.max_batch = e.max_batch_from_kv_pool ? 0 : t.req_int("max_batch", 1, 1 << 20);
    tier.chunked_prefill = t.req_int("chunked_prefill", 0, kMaxTokens);
    tier.graph_largest = t.req_int("graph_largest", 0, 1 << 20);
    t.finish();
    e.tiers.push_back(tier);
  }
  if (!e.tiers.empty() &&
      (e.tiers.back().min_memory_gib != 0 || e.tiers.back().min_tp != 1 || !e.tiers.back().exclude_gpu_name.empty())) {
    l.fail_at("tiers", "expected the last tier to match every GPU (min_memory_gib 0, no min_tp, no exclude_gpu_name)");
  }
  l.finish();
}

void read_kv_memory(Reader& r, EnginePreset& e) {
  auto k = r.child("kv_memory");
  const auto rule = k.req_enum("rule", {"of_free", "of_total", "sglang_static"});
  e.kv_rule = rule == "of_total"        ? KvMemoryRule::kOfTotal
              : rule == "sglang_static" ? KvMemoryRule::kOfFreeBeforeWeights
                                        : KvMemoryRule::kOfFree;
  if (e.kv_rule == KvMemoryRule::kOfFreeBeforeWeights) {
    auto m = k.child("reserve_mib");
    e.reserved.base = m.req_number("base", 0.0, 1e6);
    e.reserved.per_chunk_token = m.req_number("per_chunk_token", 0.0, 1e3);
    e.reserved.min_chunk = m.req_number("min_chunk", 0.0, 1e7);
    e.reserved.per_graph_batch = m.req_number("per_graph_batch", 0.0, 1e3);
    e.reserved.per_gpu_over_8 = m.req_number("per_gpu_over_8", 0.0, 1e6);
    e.reserved.floor_above_60gib = m.req_number("floor_above_60gib", 0.0, 1e6);
    m.finish();
  } else {
    e.kv_fraction = k.req_number("fraction", 0.05, 1.0);
  }
  (void)k.req_string("source");
  k.finish();
}

std::vector<serving::GraphRange> read_ranges(Reader& g, const char* key) {
  std::vector<serving::GraphRange> out;
  for (auto& x : g.each(key)) {
    serving::GraphRange range;
    range.from = x.req_int("from", 1, 1 << 20);
    range.to = x.req_int("to", range.from, 1 << 20);
    range.step = x.opt_int("step", 1, 1 << 20, 1);
    range.times = x.opt_int("times", 1, 1 << 20, 1);
    x.finish();
    out.push_back(range);
  }
  return out;
}

void read_graphs(Reader& r, EnginePreset& e) {
  auto g = r.child("cuda_graphs");
  e.graph_ranges = read_ranges(g, "ranges");
  if (g.has("padded_ranges")) e.graph_padded_ranges = read_ranges(g, "padded_ranges");
  e.graph_with_largest = g.opt_bool("with_largest", false);
  e.graph_padding = g.req_bool("padding");
  e.graph_decode_only = g.req_bool("decode_only");
  (void)g.req_string("source");
  g.finish();
}

}  // namespace

EnginePreset parse_engine(const JsonDoc& doc, const std::string& id) {
  Problems problems;
  auto r = Reader::root(doc, problems);
  problems.throw_if_any();
  EnginePreset e;
  e.id = id;
  e.engine = r.req_string("engine");
  e.version = r.req_string("version");
  (void)r.req_string("source");
  read_scheduler(r, e);
  read_limits(r, e);
  read_kv_memory(r, e);
  {
    auto b = r.child("block_size");
    e.block_size = b.req_int("value", 1, 4096);
    (void)b.req_string("source");
    b.finish();
  }
  read_graphs(r, e);
  // Optional (a preset written before it times its all-reduces by NCCL): with it, its source.
  if (auto a = r.opt_child("allreduce")) {
    e.custom_allreduce = a->req_bool("custom");
    (void)a->req_string("source");
    a->finish();
  }
  // Optional too (a preset written before prefix caching): whether it is on, and its granularity.
  if (auto p = r.opt_child("prefix_caching")) {
    e.prefix_reuse.enabled = p->req_bool("enabled");
    const auto g = p->req_string("granularity");
    if (g != "block" && g != "token") {
      p->fail_at("granularity",
                 "expected \"block\" (whole blocks only, as vLLM hashes them) or \"token\" (to the prefix's last "
                 "token: SGLang's radix cache, TensorRT-LLM's partial block reuse); got \"" +
                     g + "\"");
    }
    e.prefix_reuse.per_token = g == "token";
    (void)p->req_string("source");
    p->finish();
  }
  r.finish();
  problems.throw_if_any();
  return e;
}

const EngineTier& engine_tier(const EnginePreset& preset, double memory_gib, const std::string& profile_id, int tp) {
  CS_ASSERT(!preset.tiers.empty(), "a parsed engine preset has tiers");
  for (const auto& t : preset.tiers) {
    if (memory_gib < t.min_memory_gib || tp < t.min_tp) continue;
    if (!t.exclude_gpu_name.empty() && profile_id.find(t.exclude_gpu_name) != std::string::npos) continue;
    return t;
  }
  return preset.tiers.back();
}

std::vector<std::int64_t> graph_sizes(const EnginePreset& preset, std::int64_t largest, bool padding) {
  const auto& ranges =
      padding && !preset.graph_padded_ranges.empty() ? preset.graph_padded_ranges : preset.graph_ranges;
  std::vector<std::int64_t> out;
  for (const auto& r : ranges) {
    for (std::int64_t b = r.from; b <= std::min(r.to, largest); b = r.times > 1 ? b * r.times : b + r.step)
      out.push_back(b);
  }
  if (preset.graph_with_largest && largest > 0) out.push_back(largest);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double static_memory_fraction(const serving::ReservedMemoryRule& rule, double capacity_bytes, std::int64_t chunk,
                              std::int64_t graph_largest, int gpus) {
  const double mib = 1048576.0;
  const double capacity = capacity_bytes / mib;
  double reserved = rule.base + rule.per_chunk_token * std::max(static_cast<double>(chunk), rule.min_chunk) +
                    rule.per_graph_batch * static_cast<double>(graph_largest) + rule.per_gpu_over_8 * gpus / 8.0;
  if (capacity > 60.0 * 1024.0) reserved = std::max(reserved, rule.floor_above_60gib);
  return std::round((capacity - reserved) / capacity * 1000.0) / 1000.0;
}

}  // namespace cs::config
