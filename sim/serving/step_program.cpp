#include "sim/serving/step_program.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "sim/core/check.hpp"
#include "sim/serving/serving_log.hpp"
#include "sim/workload/expert_placement.hpp"

namespace cs::serving {

namespace {

calib::Dtype gemm_dtype(const ServingScenario& s) {
  if (s.weights == models::WeightFormat::kFp8) return calib::Dtype::kFp8;
  if (models::is_fp4(s.weights) && s.profile.matrix_peak.count(calib::Dtype::kFp4)) return calib::Dtype::kFp4;
  return calib::Dtype::kBf16;
}

}  // namespace

std::uint8_t collective_kind(CollectiveOp op, bool returning) {
  switch (op) {
    case CollectiveOp::kAllReduce: return 0;
    case CollectiveOp::kAllGather: return 1;
    case CollectiveOp::kReduceScatter: return 2;
    case CollectiveOp::kAllToAll: return returning ? 4 : 3;
    case CollectiveOp::kSendRecv:
    case CollectiveOp::kShift: break;
  }
  CS_ASSERT(false, "a stage's program holds no send/recv or shift");
  return 0;
}

std::size_t StepProgramBuilder::GemmKeyHash::operator()(const GemmKey& g) const {
  // The doubles' bits, mixed (std::hash<double> hashes bytes, slower than the lookup it saves).
  std::uint64_t h = static_cast<std::uint64_t>(g.flags);
  for (double v : {g.m, g.n, g.k, g.groups, g.bytes}) {
    h ^= std::bit_cast<std::uint64_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  }
  return static_cast<std::size_t>(h);
}

StepProgramBuilder::StepProgramBuilder(const ServingScenario& s)
    : s_(s),
      gemm_(s.profile, gemm_dtype(s), s.cuda_graphs),
      other_(s.profile, calib::Dtype::kBf16, s.cuda_graphs),
      gemm_eager_(s.profile, gemm_dtype(s), false),
      other_eager_(s.profile, calib::Dtype::kBf16, false),
      step_overhead_(SimTime::from_seconds(s.profile.serving_step_overhead.value)) {}

/// A GEMM's time, remembered by shape: engine steps repeat their token counts, and the shape
/// model's tile search costs more than the rest of a step's arithmetic.
calib::KernelTime StepProgramBuilder::gemm_time(const models::Op& op) const {
  const GemmKey key{
      op.m,     op.n,
      op.k,     op.groups,
      op.bytes, (op.routed ? 1 : 0) + (op.keep_16bit ? 2 : 0) + (op.core_attention ? 4 : 0) + (graphed_ ? 0 : 8)};
  auto it = gemm_memo_.find(key);
  if (it != gemm_memo_.end()) return it->second;
  const auto t = (graphed_ ? gemm_ : gemm_eager_).timed(op);
  gemm_memo_.emplace(key, t);
  return t;
}

/// Ops to segments: consecutive kernels become one compute segment (its time rounded once). The
/// all-to-alls take the step's per-GPU shares of the routed pairs (`dest_share`, null: even).
void StepProgramBuilder::to_segments(const std::vector<models::Item>& items, std::vector<Segment>& out,
                                     const std::vector<double>* dest_share, double runs) {
  double compute = 0;
  bool pending = false;
  const auto flush = [&] {
    if (pending) out.push_back({SimTime::from_seconds(compute)});
    compute = 0;
    pending = false;
  };
  for (const auto& it : items) {
    if (it.comm) {
      CS_ASSERT(it.comm->group == GroupKind::kTp &&
                    (it.comm->op == CollectiveOp::kAllReduce || it.comm->op == CollectiveOp::kAllGather ||
                     it.comm->op == CollectiveOp::kReduceScatter || it.comm->op == CollectiveOp::kAllToAll),
                "serving layers hold only TP all-reduces, all-gathers, reduce-scatters and (DeepEP) all-to-alls");
      flush();
      Segment seg;
      seg.collective = true;
      seg.op = it.comm->op;
      seg.bytes = it.comm->bytes;
      seg.node_copies = it.comm->node_copies;
      if (seg.op == CollectiveOp::kAllToAll && dest_share) {
        seg.dest_share = dest_share;
        seg.returning = it.comm->returning;
      }
      seg.kind = collective_kind(seg.op, it.comm->returning);
      out.push_back(seg);
    } else if (it.op.fixed_s > 0) {
      // DeepEP's low-latency floor: fixed work, no kernel of its own; a profile figure (analytic).
      compute += it.op.fixed_s;
      sources_[static_cast<std::size_t>(calib::KernelSource::kAnalytic)] += it.op.fixed_s * runs;
      classes_[static_cast<std::size_t>(models::KernelClass::kExchangeFloor)] += it.op.fixed_s * runs;
      pending = true;
    } else {
      const auto t =
          it.op.kind == models::OpKind::kGemm ? gemm_time(it.op) : (graphed_ ? other_ : other_eager_).timed(it.op);
      compute += t.seconds;
      // Each layer built here runs `runs` times in the step (its kind's layers).
      sources_[static_cast<std::size_t>(t.source)] += t.seconds * runs;
      classes_[static_cast<std::size_t>(models::kernel_class(it.op))] += t.seconds * runs;
      pending = true;
    }
  }
  flush();
}

void StepProgramBuilder::stage_program(const StagePlace& place, StageProgram& out) const {
  out.overhead = place.first ? step_overhead_ : SimTime{};
  if (s_.model.kinds.empty()) {  // one kind: `layers` copies of its segments
    out.layer = layer_;
    out.layers = place.layers;
  } else {  // layers of several kinds: the stage's layers in order, once
    out.layer.clear();
    for (int l = place.first_layer; l < place.first_layer + place.layers; ++l) {
      const auto& seg = kind_layer_.at(s_.model.layer_kind(l));
      out.layer.insert(out.layer.end(), seg.begin(), seg.end());
    }
    out.layers = 1;
  }
  out.head.clear();
  if (place.last) out.head = head_;
}

/// Where a step of `tokens` routed tokens puts its pairs (cached per token count): balanced, the
/// expectation (defaults); otherwise the routing's per-expert shares (uniform: a seeded sample of
/// the step's tokens' top-k), over the EP GPUs' expert copies as place_experts lays them out
/// (E / EP consecutive experts each, or EPLB's placement with redundant experts). Under EP 1 the
/// experts the step hits; under EP each GPU's pairs and hit experts, and the GPU whose routed
/// experts take longest sets the pace (in decode it can be one with few pairs over many experts,
/// whose weights it reads). `imbalance`: the most loaded GPU's pairs over the mean.
/// `gpu_share`: under EP with uneven GPUs, each GPU's share of the pairs (the dispatch and
/// combine all-to-alls' destination shares); empty when even (those all-to-alls stay uniform).
/// Kept for the run: the all-to-alls point at its shares.
const StepProgramBuilder::RoutedStep& StepProgramBuilder::routing_for(const models::ServingShape& shape,
                                                                      double tokens) {
  using Kind = scenario::MoeRouting::Kind;
  if (!s_.model.is_moe() || tokens <= 0) return even_;
  if (s_.routing.kind == Kind::kBalanced && s_.routing.redundant_experts == 0) return even_;
  const auto t = static_cast<std::int64_t>(std::llround(tokens));
  // Keyed by the replica's EP and TP too: disaggregated pools run different EP (and so a
  // different placement) for steps of the same token count.
  const auto key = std::tuple{shape.ep, shape.tp, t};
  if (auto it = routing_memo_.find(key); it != routing_memo_.end()) return it->second;
  const int ep = std::max(1, shape.ep);
  const auto placement = workload::place_experts(s_.model, s_.routing, ep, static_cast<double>(t));
  const auto& share = placement.expert_share;
  const double k = static_cast<double>(s_.model.moe.top_k);
  // The chance the step hits a copy of expert e taking share q of the pairs: sampled (uniform:
  // a copy of an expert the sample hit), else each token picks it with chance k x q.
  const auto p_hit = [&](std::size_t e, double q) {
    if (s_.routing.kind == Kind::kUniform) return share[e] > 0 ? 1.0 : 0.0;
    return 1.0 - std::pow(1.0 - std::min(1.0, k * q), static_cast<double>(t));
  };
  RoutedStep out;
  if (ep == 1) {
    out.pace.hit = 0;
    for (std::size_t e = 0; e < share.size(); ++e) out.pace.hit += p_hit(e, share[e]);
  } else {
    models::StepMix mix;
    mix.tokens = static_cast<double>(t);
    double slowest = -1;
    for (std::size_t g = 0; g < static_cast<std::size_t>(ep); ++g) {
      models::StepRouting r;
      double pairs = 0;
      r.hit = 0;
      for (const auto& [e, q] : placement.gpu_copies[g]) {
        pairs += q;
        r.hit += p_hit(e, q);
      }
      r.load = pairs * ep;
      out.imbalance = std::max(out.imbalance, r.load);
      models::ServingShape one = shape;
      one.routing = r;
      double seconds = 0;
      for (const auto& it : models::serving_routed_experts(s_.model, mix, one))
        seconds += it.op.kind == models::OpKind::kGemm ? gemm_time(it.op).seconds
                                                       : (graphed_ ? other_ : other_eager_).seconds(it.op);
      if (seconds > slowest) {
        slowest = seconds;
        out.pace = r;
      }
    }
    // The all-to-alls follow the pairs: the same threshold as training's (build_stage_programs).
    if (out.imbalance > 1 + 1e-12) out.gpu_share = placement.gpu_share;
  }
  return routing_memo_.emplace(key, std::move(out)).first->second;
}

StepProgramBuilder::GraphChoice StepProgramBuilder::graph_for(const models::StepMix& mix,
                                                              std::int64_t sequences) const {
  const auto& g = s_.graphs;
  if (g.sizes.empty()) return {s_.cuda_graphs, 0.0};
  if (!s_.cuda_graphs || sequences <= 0 || (g.decode_only && mix.prefill_seqs > 0)) return {false, 0.0};
  // Decode-only graphs are captured per batch of sequences; vLLM's per step of tokens.
  const double unit = g.decode_only ? static_cast<double>(sequences) : mix.tokens;
  const auto it = std::lower_bound(g.sizes.begin(), g.sizes.end(), static_cast<std::int64_t>(std::ceil(unit)));
  if (it == g.sizes.end()) return {false, 0.0};  // larger than the largest graph: eager
  const auto size = static_cast<double>(*it);
  if (size != unit && !g.padding) return {false, 0.0};  // no graph of this exact size
  const double rows_per_unit = g.decode_only ? mix.tokens / static_cast<double>(sequences) : 1.0;
  return {true, (size - unit) * rows_per_unit};
}

void StepProgramBuilder::build(const models::ServingShape& base, const models::StepMix& step_mix,
                               const models::StepMix& mtp_mix, std::int64_t sequences, bool counts_imbalance) {
  layer_.clear();
  head_.clear();
  const auto graph = graph_for(step_mix, sequences);
  graphed_ = graph.graphed;
  ++(graphed_ ? graphed_steps_ : eager_steps_);
  models::StepMix mix = step_mix;
  mix.padding = graph.padding;
  models::ServingShape shape = base;
  const auto& routed = routing_for(base, mix.tokens);
  const auto* share = routed.gpu_share.empty() ? nullptr : &routed.gpu_share;
  shape.routing = routed.pace;
  // DeepEP: decode steps (no prompt tokens) run the low-latency kernels, prefill the normal ones.
  shape.low_latency = shape.deepep && mix.prefill_pairs <= 0;
  if (counts_imbalance) {
    load_sum_ += routed.imbalance;
    load_max_ = std::max(load_max_, routed.imbalance);
    ++load_steps_;
  }
  if (s_.model.kinds.empty()) {
    to_segments(models::serving_layer(s_.model, mix, shape), layer_, share, static_cast<double>(s_.model.layers));
  } else {
    kind_layer_.clear();
    std::map<models::LayerKind, double> count;
    for (std::int64_t l = 0; l < s_.model.layers; ++l) count[s_.model.layer_kind(l)] += 1;
    for (std::int64_t l = 0; l < s_.model.layers; ++l) {
      const auto kind = s_.model.layer_kind(l);
      if (!kind_layer_.contains(kind))
        to_segments(models::serving_layer(s_.model, mix, shape, kind), kind_layer_[kind], share, count[kind]);
    }
  }
  to_segments(models::serving_head(s_.model, mix, shape), head_);
  if (mtp_mix.tokens > 0) {
    models::ServingShape mtp = base;
    const auto& drafted = routing_for(base, mtp_mix.tokens);
    mtp.routing = drafted.pace;
    mtp.low_latency = mtp.deepep;  // the draft's own pass is a decode step
    to_segments(models::serving_mtp_module(s_.model, mtp_mix, mtp), head_,
                drafted.gpu_share.empty() ? nullptr : &drafted.gpu_share);
  }
}

void StepProgramBuilder::count_into(ServingLog& log) const {
  log.graphed_steps += graphed_steps_;
  log.eager_steps += eager_steps_;
  log.load_sum += load_sum_;
  log.load_max = std::max(log.load_max, load_max_);
  log.load_steps += load_steps_;
  for (std::size_t k = 0; k < log.sources.size(); ++k) log.sources[k] += sources_[k];
  for (std::size_t k = 0; k < log.classes.size(); ++k) log.classes[k] += classes_[k];
}

}  // namespace cs::serving
