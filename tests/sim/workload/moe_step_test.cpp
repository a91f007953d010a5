#include <doctest/doctest.h>

#include <cmath>

#include "models/ops/layer_ops.hpp"
#include "sim/core/errors.hpp"
#include "sim/report/train_results.hpp"
#include "sim/workload/expert_placement.hpp"
#include "sim/workload/stage_programs.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

namespace {

std::string moe_json(const std::string& model, int gpus, int ep, const std::string& extra = "",
                     const std::string& moe = "") {
  return R"({"model": ")" + model + R"(", "cluster": "hgx-h100", "gpus": )" + std::to_string(gpus) +
         R"(, "parallel": {"tp": 1, "ep": )" + std::to_string(ep) + R"(, "zero": 1}, "training": {"seq": 4096, )" +
         R"("global_batch": )" + std::to_string(gpus) + R"(, "micro_batch": 1}, "allow_oom": true)" +
         (moe.empty() ? std::string() : R"(, "moe": )" + moe) + extra + "}";
}

report::TrainResults eval(const scenario::Scenario& s) {
  return report::train_results(s, study::run_training(s, study::RunOptions{}));
}

/// Seconds of the first MoE layer's items of one label in a stage's forward program.
double compute_seconds(const std::vector<workload::ProgramItem>& prog) {
  double sum = 0;
  for (const auto& it : prog)
    if (!it.comm) sum += it.seconds;
  return sum;
}

}  // namespace

TEST_CASE("dispatch volume per token by hand: Mixtral top-2 over EP 8 sends to 2 GPUs on average, 4096 x 2 B each") {
  const auto m = test::shipped_model("mixtral-8x7b");
  // 8 experts, one per GPU: P(a GPU is missed by both picks) = C(7,2)/C(8,2) = 21/28.
  CHECK(models::expected_dispatch_ranks(8, 2, 8) == doctest::Approx(8 * (1 - 21.0 / 28)));
  models::StepShape one;
  one.seq = 1;
  one.ep = 8;
  CHECK(models::dispatch_send_bytes(m, one) == doctest::Approx(2.0 * 4096 * 2));
  // DeepSeek-V3: 256 experts over 64 GPUs (4 each), top-8: C(252,8)/C(256,8) by its product.
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (252.0 - i) / (256.0 - i);
  CHECK(models::expected_dispatch_ranks(256, 8, 64) == doctest::Approx(64 * (1 - miss)));
  CHECK(models::expected_dispatch_ranks(256, 8, 64) < 8.0);  // dedup: fewer sends than picks
  one.dispatch_bytes = 1;                                    // FP8 dispatch halves it
  CHECK(models::dispatch_send_bytes(m, one) == doctest::Approx(2.0 * 4096));
}

TEST_CASE(
    "EP 1 is a dense computation of the same experts: a MoE layer's expert FLOPs equal a dense MLP of k experts' "
    "width") {
  auto m = test::shipped_model("mixtral-8x7b");
  models::StepShape s;
  s.seq = 4096;
  const auto moe = models::layer_forward(m, s, {models::AttentionKind::kFull, models::FeedForwardKind::kMoe});
  auto dense_model = m;
  dense_model.ffn = m.moe.top_k * m.moe.expert_ffn;
  const auto dense = models::layer_forward(dense_model, s, {});
  // The MoE layer adds only its router GEMM (T x E x h) to the dense one's matrix FLOPs.
  const double router = 2.0 * 4096 * 8 * 4096;
  CHECK(models::model_flops(moe) == doctest::Approx(models::model_flops(dense) + router).epsilon(1e-12));
  for (const auto& it : moe) CHECK_FALSE(it.comm.has_value());  // EP 1, TP 1: nothing to send
}

TEST_CASE("forcing balance never makes the slowest GPU's compute slower, and the imbalance ratio is reported") {
  for (const char* routing : {"\"uniform\"", "\"zipf:0.5\"", "\"zipf:1.2\""}) {
    CAPTURE(routing);
    const auto balanced = test::scenario_from_json(moe_json("mixtral-8x7b", 8, 8));
    const auto skewed =
        test::scenario_from_json(moe_json("mixtral-8x7b", 8, 8, "", std::string(R"({"routing": )") + routing + "}"));
    const workload::ComputeModel cb(balanced.profile, balanced.dtype), cs_(skewed.profile, skewed.dtype);
    const auto pb = workload::build_stage_programs(balanced, cb), ps = workload::build_stage_programs(skewed, cs_);
    CHECK(compute_seconds(pb[0].f) <= compute_seconds(ps[0].f));
    CHECK(compute_seconds(pb[0].b) <= compute_seconds(ps[0].b));
    const auto r = eval(skewed);
    REQUIRE(r.moe.has_value());
    CHECK(r.moe->imbalance >= 1.0);
    CHECK(r.moe->imbalance == doctest::Approx(workload::expert_placement(skewed).imbalance()));
    CHECK(eval(balanced).step_time_s <= r.step_time_s);
  }
}

TEST_CASE("more expert imbalance never speeds up the most loaded GPU's dispatch and combine") {
  double last_comm = 0, last_ratio = 0;
  for (double s : {0.2, 0.6, 1.0, 1.5}) {
    CAPTURE(s);
    const auto sc = test::scenario_from_json(
        moe_json("mixtral-8x7b", 8, 8, "", R"({"routing": "zipf:)" + std::to_string(s).substr(0, 3) + R"("})"));
    const auto r = eval(sc);
    double ep = 0;
    for (const auto& c : r.collectives)
      if (c.label.rfind("ep.", 0) == 0) ep += c.seconds_per_gpu;
    CHECK(r.moe->imbalance >= last_ratio);
    CHECK(ep >= last_comm * (1 - 1e-9));
    last_comm = ep;
    last_ratio = r.moe->imbalance;
  }
}

TEST_CASE("redundant experts (EPLB) never raise the imbalance, and cost memory for the copies") {
  const auto plain = test::scenario_from_json(moe_json("mixtral-8x7b", 8, 8, "", R"({"routing": "zipf:1.0"})"));
  const auto eplb = test::scenario_from_json(
      moe_json("mixtral-8x7b", 8, 8, "", R"({"routing": "zipf:1.0", "redundant_experts": 8})"));
  CHECK(workload::expert_placement(eplb).imbalance() < workload::expert_placement(plain).imbalance());
  CHECK(workload::expert_placement(eplb).slots_per_gpu == 2);
  CHECK(eval(eplb).memory.weights > eval(plain).memory.weights);
}

TEST_CASE("uniform routing is a seeded sample: the same seed gives the same loads, every share adds to 1") {
  const auto m = test::shipped_model("deepseek-v3");
  scenario::MoeRouting r;
  r.kind = scenario::MoeRouting::Kind::kUniform;
  const auto a = workload::place_experts(m, r, 64, 4096.0 * 64), b = workload::place_experts(m, r, 64, 4096.0 * 64);
  CHECK(a.gpu_share == b.gpu_share);
  double sum = 0;
  for (double x : a.gpu_share) sum += x;
  CHECK(sum == doctest::Approx(1.0));
  // 262,144 tokens x 8 picks over 64 GPUs: the finite-batch spread is small but not zero.
  CHECK(a.imbalance() > 1.0);
  CHECK(a.imbalance() < 1.05);
}

TEST_CASE("expert parameters are sharded over EP, and ZeRO shards their optimizer state over expert-DP") {
  const auto ep8 = eval(test::scenario_from_json(moe_json("mixtral-8x7b", 8, 8)));
  const auto ep4 = eval(test::scenario_from_json(moe_json("mixtral-8x7b", 8, 4)));
  // EP 4 holds two experts per GPU (twice the expert weights), but expert-DP 2 halves their optimizer state.
  CHECK(ep4.memory.weights > ep8.memory.weights);
  CHECK(ep4.moe->edp == 2);
  CHECK(ep8.moe->edp == 1);
  bool edp_reduce = false;
  for (const auto& c : ep4.collectives) edp_reduce = edp_reduce || c.label.rfind("edp.", 0) == 0;
  CHECK(edp_reduce);
}

TEST_CASE("bad MoE input is refused with the field named") {
  CHECK_THROWS_WITH_AS((void)test::scenario_from_json(moe_json("llama3.1-8b", 8, 8)),
                       doctest::Contains("/parallel/ep: llama3.1-8b is a dense model"), InputError);
  CHECK_THROWS_WITH_AS((void)test::scenario_from_json(moe_json("mixtral-8x7b", 8, 3)),
                       doctest::Contains("EP 3 does not divide the 8 routed experts"), InfeasibleError);
  CHECK_THROWS_WITH_AS((void)test::scenario_from_json(moe_json("mixtral-8x7b", 8, 8, "", R"({"routing": "zipf:-1"})")),
                       doctest::Contains("/moe/routing: expected zipf:S"), InputError);
  CHECK_THROWS_WITH_AS((void)test::scenario_from_json(moe_json("mixtral-8x7b", 8, 8, "", R"({"routing": "powerlaw"})")),
                       doctest::Contains("/moe/routing: expected balanced, uniform, zipf:S"), InputError);
}

TEST_CASE("node-limited routing: DeepSeek-V3 on EP 64 over 8 nodes sends each token to at most 4 nodes") {
  const auto m = test::shipped_model("deepseek-v3");
  const auto free = models::dispatch_spread(m, 64, 1);
  const auto limited = models::dispatch_spread(m, 64, 8);
  // 8 groups of 32 experts, one per node; the best 4 groups: exactly 4 nodes, and fewer GPUs.
  CHECK(limited.nodes == doctest::Approx(4.0));
  CHECK(limited.gpus < free.gpus);
  CHECK(limited.gpus <= 8.0);
  // Without group-limited routing (Mixtral), the nodes hit follow from the experts alone.
  const auto mixtral = models::dispatch_spread(test::shipped_model("mixtral-8x7b"), 8, 2);
  CHECK(mixtral.nodes == doctest::Approx(models::expected_dispatch_ranks(8, 2, 2)));
}

TEST_CASE(
    "EP across nodes runs the rail-forwarded all-to-all, EP inside a node NCCL's all-to-all as the H100 table measured "
    "it") {
  auto json = [](int ep) {
    return R"({"model": "qwen3-30b-a3b", "cluster": "hgx-h100", "nodes": 2, "fabric": "ib-ndr-rail",
               "parallel": {"tp": 1, "ep": )" +
           std::to_string(ep) + R"(, "zero": 1}, "training": {"seq": 4096, "global_batch": 16}, "allow_oom": true})";
  };
  const auto across = test::scenario_from_json(json(16));
  CHECK(workload::ep_nodes(across) == 2);
  auto algorithm_of = [](const report::TrainResults& r) {
    for (const auto& c : r.collectives)
      if (c.label == "ep.dispatch") return c.algorithm;
    return std::string("none");
  };
  CHECK(algorithm_of(eval(across)) == "hierarchical");
  const auto inside = test::scenario_from_json(json(8));
  CHECK(workload::ep_nodes(inside) == 1);
  // An even exchange inside one node is nccl-tests' all-to-all: the table's time (the direct
  // algorithm's flows, capped to it).
  CHECK(algorithm_of(eval(inside)) == "measured");
}

TEST_CASE(
    "two-batch overlap: the same FLOPs and bytes in two halves, each all-to-all async under the other half's compute") {
  const auto m = test::shipped_model("deepseek-v3");
  models::StepShape s;
  s.seq = 4096;
  s.ep = 64;
  const models::LayerKind moe{models::AttentionKind::kMla, models::FeedForwardKind::kMoe};
  const auto plain = models::layer_forward(m, s, moe);
  const auto tbo = models::two_batch_overlap(plain);
  CHECK(models::model_flops(tbo) == doctest::Approx(models::model_flops(plain)));
  double bytes_plain = 0, bytes_tbo = 0;
  int a2a_plain = 0, async = 0, waits = 0;
  for (const auto& it : plain)
    if (it.comm) {
      bytes_plain += it.comm->bytes;
      a2a_plain += it.comm->op == CollectiveOp::kAllToAll ? 1 : 0;
    }
  for (const auto& it : tbo) {
    if (it.comm) bytes_tbo += it.comm->bytes;
    async += it.async ? 1 : 0;
    waits += it.wait > 0 ? 1 : 0;
  }
  CHECK(bytes_tbo == doctest::Approx(bytes_plain));
  CHECK(a2a_plain == 2);          // dispatch and combine
  CHECK(async == 2 * a2a_plain);  // each half's, on their own stream
  CHECK(waits == 2 * a2a_plain);  // each half's next op waits for its own
}

TEST_CASE("two-batch overlap hides all-to-all time across nodes: less exposed communication, a shorter step") {
  auto json = [](bool tbo, double sms) {
    return R"({"model": "qwen3-30b-a3b", "cluster": "hgx-h100", "nodes": 2, "fabric": "ib-ndr-rail",
               "parallel": {"tp": 1, "ep": 16, "zero": 1}, "training": {"seq": 4096, "global_batch": 16},
               "moe": {"two_batch_overlap": )" +
           std::string(tbo ? "true" : "false") + R"(, "overlap_comm_sms": )" + std::to_string(sms) +
           R"(}, "allow_oom": true})";
  };
  const auto plain = eval(test::scenario_from_json(json(false, 0.0)));
  const auto tbo = eval(test::scenario_from_json(json(true, 0.0)));
  const auto tbo_sms = eval(test::scenario_from_json(json(true, 0.15)));
  CHECK(tbo.breakdown.exposed_comm < plain.breakdown.exposed_comm);
  CHECK(tbo.step_time_s < plain.step_time_s);
  // Giving SMs to the all-to-all kernels slows the overlapped compute: never faster than free overlap.
  CHECK(tbo_sms.step_time_s >= tbo.step_time_s);
  CHECK(tbo.mfu == doctest::Approx(plain.mfu * plain.step_time_s / tbo.step_time_s));
  CHECK_THROWS_WITH_AS((void)test::scenario_from_json(R"({"model": "qwen3-30b-a3b", "cluster": "hgx-h100",
      "parallel": {"tp": 1}, "training": {"seq": 4096, "global_batch": 8}, "moe": {"two_batch_overlap": true}})"),
                       doctest::Contains("/moe/two_batch_overlap: two-batch overlap hides EP all-to-alls"), InputError);
}

TEST_CASE("ZeRO-3 on MoE: dense weights sharded over DP, routed experts over expert-DP, gathered per layer, by hand") {
  // Mixtral 8x7B on 8 GPUs, TP 1, EP 4: two experts per GPU, expert-DP 2.
  const auto s = test::scenario_from_json(
      R"({"model": "mixtral-8x7b", "cluster": "hgx-h100", "gpus": 8, "parallel": {"tp": 1, "ep": 4, "zero": 3},
          "training": {"seq": 4096, "global_batch": 8, "micro_batch": 1}, "allow_oom": true})");
  REQUIRE(s.plan.zero == 3);
  REQUIRE(s.plan.edp() == 2);
  const auto r = eval(s);
  // One layer on one GPU: attention 4096 x (4096 + 2 x 1024 + 4096), two RMSNorms, the router
  // (8 x 4096); its two experts' gated MLPs, 3 x 4096 x 14336 each.
  const double dense = 4096.0 * 10240 + 2 * 4096 + 8 * 4096;
  const double experts = 2 * 3.0 * 4096 * 14336;
  std::map<std::string, report::CollectiveSummary> c;
  for (const auto& x : r.collectives) c[x.label] = x;
  REQUIRE(c.contains("dp.param_allgather"));
  REQUIRE(c.contains("edp.param_allgather"));
  REQUIRE(c.contains("edp.grad_reducescatter"));
  CHECK(c["dp.param_allgather"].bytes_per_call == doctest::Approx(dense * 2));
  CHECK(c["edp.param_allgather"].bytes_per_call == doctest::Approx(experts * 2));
  CHECK(c["edp.grad_reducescatter"].bytes_per_call == doctest::Approx(experts * s.grad_bytes));
  // A gather per layer per forward and backward of the one micro-batch, a scatter per backward;
  // nothing gathered after the optimizer.
  CHECK(c["edp.param_allgather"].calls_per_gpu == 2 * 32);
  CHECK(c["edp.grad_reducescatter"].calls_per_gpu == 32);
  // Weights: dense (and the embedding, LM head and final norm) over DP 8, experts over expert-DP
  // 2, and two layers gathered whole (the running one and the prefetched one).
  const double outer = 2.0 * 32000 * 4096 + 4096;
  const double weights = (32 * dense + outer) * 2 / 8 + 32 * experts * 2 / 2 + 2 * (dense + experts) * 2;
  CHECK(r.memory.weights == doctest::Approx(weights).epsilon(1e-9));
  // Against ZeRO-1 on the same plan: less memory, the same model FLOPs.
  const auto z1 = eval(test::scenario_from_json(moe_json("mixtral-8x7b", 8, 4)));
  CHECK(r.memory.total < z1.memory.total);
}
