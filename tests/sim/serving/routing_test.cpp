// MoE routing in serving (issue 12): under EP the GPU whose routed experts take longest sets the
// pace of each MoE layer; the most loaded GPU's share of the pairs is reported.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "models/ops/serving_ops.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/serving/serving_sim.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"

using namespace cs;

namespace {

/// Mixtral 8x7B on 2 H100 (TP2), its experts whole on the two GPUs (EP 2) or split (EP 1).
serving::ServingScenario mixtral(int ep, const std::string& routing, const std::string& workload) {
  const std::string text = R"({"kind": "infer", "model": "mixtral-8x7b", "cluster": "hgx-h100",
      "parallel": {"tp": 2, "ep": )" +
                           std::to_string(ep) + R"(}, "moe": {"routing": ")" + routing + R"("}, "workload": )" +
                           workload + "}";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

/// A per-expert load file: the first expert `hot` times as popular as each other one.
std::string loads_file(double hot) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("clustersim_routing_test_" + std::to_string(static_cast<int>(hot * 100)) + ".json");
  std::ofstream f(path);
  f << R"({"source": "a test histogram", "loads": [)" << hot << ", 1, 1, 1, 1, 1, 1, 1]}";
  return path.string();
}

const std::string kPrefill = R"({"input_len": 2048, "output_len": 1, "rate": "inf", "requests": 64})";
const std::string kDecode = R"({"input_len": 128, "output_len": 512, "concurrency": 16, "requests": 32})";

double weight_bytes(const std::vector<models::Item>& items) {
  double b = 0;
  for (const auto& it : items) b += it.op.bytes;
  return b;
}

}  // namespace

TEST_CASE("serving routing: balanced is the default and reports no imbalance") {
  const auto a = test::serve(mixtral(2, "balanced", kPrefill), false);
  REQUIRE(a.moe);
  CHECK(a.moe->routing == "balanced");
  CHECK(a.moe->ep == 2);
  CHECK(a.moe->load_imbalance_mean == 1.0);
  CHECK(a.moe->load_imbalance_max == 1.0);
}

TEST_CASE("serving routing: a load file's GPU shares by hand, and the busier GPU sets the prefill's pace") {
  // Loads 3,1,1,1 | 1,1,1,1 over the two GPUs (4 experts each): 6/10 and 4/10 of the pairs, so the
  // most loaded GPU has 0.6 / 0.5 = 1.2x the mean.
  const auto skewed = test::serve(mixtral(2, loads_file(3), kPrefill), false);
  REQUIRE(skewed.moe);
  CHECK(skewed.moe->load_imbalance_mean == doctest::Approx(1.2));
  CHECK(skewed.moe->load_imbalance_max == doctest::Approx(1.2));
  const auto balanced = test::serve(mixtral(2, "balanced", kPrefill), false);
  CHECK(skewed.ttft.p90 > balanced.ttft.p90);
  // More skew never speeds up the most loaded GPU: prompt-only steps (compute-bound expert GEMMs).
  double previous = balanced.makespan_s;
  for (double hot : {1.5, 3.0, 6.0, 12.0}) {
    const auto r = test::serve(mixtral(2, loads_file(hot), kPrefill), false);
    CHECK(r.makespan_s >= previous);
    previous = r.makespan_s;
  }
  // Experts split TP ways (EP 1): every GPU computes its slice of every expert, so skew moves no
  // pairs between GPUs (imbalance 1); the prompts hit every expert either way.
  const auto split = test::serve(mixtral(1, loads_file(3), kPrefill), false);
  REQUIRE(split.moe);
  CHECK(split.moe->load_imbalance_mean == 1.0);
  CHECK(split.makespan_s ==
        doctest::Approx(test::serve(mixtral(1, "balanced", kPrefill), false).makespan_s).epsilon(1e-6));
}

TEST_CASE("serving routing: uniform top-k's finite-batch spread, seeded, never below balanced in decode") {
  const auto u1 = test::serve(mixtral(2, "uniform", kDecode), false);
  const auto u2 = test::serve(mixtral(2, "uniform", kDecode), false);
  CHECK(u1.tpot.p90 == u2.tpot.p90);  // the same seed, the same samples
  REQUIRE(u1.moe);
  CHECK(u1.moe->load_imbalance_mean > 1.0);
  CHECK(u1.moe->load_imbalance_max <= 2.0);  // two GPUs: at most all pairs on one
  const auto b = test::serve(mixtral(2, "balanced", kDecode), false);
  CHECK(u1.tpot.p90 >= b.tpot.p90);
}

TEST_CASE("serving routed experts: the pace GPU's pairs and hit experts give the FLOPs and weight bytes by hand") {
  const auto s = mixtral(2, "balanced", kDecode);
  models::ServingShape shape;
  shape.tp = 2;
  shape.ep = 2;
  models::StepMix mix;
  mix.tokens = 10;  // 20 pairs over the two GPUs
  const auto& m = s.model;
  const double h = static_cast<double>(m.hidden), f = static_cast<double>(m.moe.expert_ffn);
  const double expert_bytes = 3.0 * h * f * 2.0;  // gated up (2 f x h) and down (h x f), bf16
  shape.routing = {1.5, 3};                       // 1.5 x the mean pairs (15), over 3 whole experts
  const auto items = models::serving_routed_experts(m, mix, shape);
  double flops = 0;
  for (const auto& it : items) flops += it.op.flops;
  CHECK(flops == doctest::Approx(2.0 * 15 * 3.0 * h * f));
  // Weights of 3 experts, plus each GEMM's activations in and out (16-bit) per pair, plus the
  // activation between them.
  const double activations = 15 * (2 * f + h) * 2.0 + 15 * (h + f) * 2.0 + 2 * 15 * 3.0 * f;
  CHECK(weight_bytes(items) == doctest::Approx(3 * expert_bytes + activations));
}

TEST_CASE("serving EPLB: redundant experts even out the GPUs, speed up the skewed prefill and cost their weights") {
  const auto with = [](int redundant) {
    const std::string text = R"({"kind": "infer", "model": "mixtral-8x7b", "cluster": "hgx-h100",
        "parallel": {"tp": 2, "ep": 2}, "moe": {"routing": ")" +
                             loads_file(3) + R"(", "redundant_experts": )" + std::to_string(redundant) +
                             R"(}, "workload": )" + kPrefill + "}";
    return test::serve(config::parse_serving(config::parse_text(text, "test.json"), test::catalog()), false);
  };
  const auto none = with(0), two = with(2);
  // Loads 3,1,...,1: the hot expert gets two more copies (0.3 / 3 = 0.1 of the pairs each), so
  // ten copies of 0.1 fill five slots on each GPU evenly.
  REQUIRE(two.moe);
  CHECK(none.moe->load_imbalance_mean == doctest::Approx(1.2));
  CHECK(two.moe->load_imbalance_mean == doctest::Approx(1.0));
  CHECK(two.makespan_s < none.makespan_s);
  // Each GPU holds one expert more (5 slots, not 4): 3 x 4096 x 14336 bf16 values in each of 32 layers.
  CHECK(two.memory.weights - none.memory.weights == doctest::Approx(32 * 3.0 * 4096 * 14336 * 2));
}

TEST_CASE("serving routing: bad values are refused with the field") {
  const auto bad = [](const std::string& routing, const std::string& model) {
    const std::string text = R"({"kind": "infer", "model": ")" + model +
                             R"(", "cluster": "hgx-h100", "parallel": {"tp": 2}, "moe": {"routing": ")" + routing +
                             R"("}, "workload": {"input_len": 8, "output_len": 8, "rate": 1, "requests": 2}})";
    try {
      (void)config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(bad("zipf:x", "mixtral-8x7b").find("/moe/routing") != std::string::npos);
  CHECK(bad("skewed", "mixtral-8x7b").find("/moe/routing") != std::string::npos);
  CHECK(bad("uniform", "llama3.1-8b").find("dense model") != std::string::npos);
  // Redundant experts need EP > 1 (TP 2 here splits every expert).
  const std::string text = R"({"kind": "infer", "model": "mixtral-8x7b", "cluster": "hgx-h100", "parallel": {"tp": 2},
      "moe": {"redundant_experts": 2}, "workload": {"input_len": 8, "output_len": 8, "rate": 1, "requests": 2}})";
  CHECK_THROWS_WITH_AS((void)config::parse_serving(config::parse_text(text, "test.json"), test::catalog()),
                       doctest::Contains("/moe/redundant_experts"), InputError);
}
