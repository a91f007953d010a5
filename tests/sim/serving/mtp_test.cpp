// MTP speculative decoding in serving (issue 12): DeepSeek's multi-token-prediction module drafts
// one token per decoding sequence; the next step verifies it beside the sequence's last token.
#include <doctest/doctest.h>

#include <string>

#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/serving/serving_sim.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"

using namespace cs;

namespace {

serving::ServingScenario deepseek(double acceptance, std::int64_t output, int concurrency, int requests) {
  const std::string text = R"({"kind": "infer", "model": "deepseek-r1", "cluster": "hgx-h200",
      "parallel": {"tp": 8, "ep": 8}, "quantization": {"weights": "fp8"},
      "engine": {"mtp_acceptance": )" +
                           std::to_string(acceptance) + R"(}, "workload": {"input_len": 100, "output_len": )" +
                           std::to_string(output) + R"(, "concurrency": )" + std::to_string(concurrency) +
                           R"(, "requests": )" + std::to_string(requests) + "}}";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

}  // namespace

TEST_CASE(
    "MTP by hand: every draft accepted, one sequence of 101 output tokens takes 1 prefill step and 50 decode "
    "steps of two tokens") {
  const auto r = test::serve(deepseek(1.0, 101, 1, 1));
  CHECK(r.steps == 1 + 50);
  CHECK(r.output_tokens == 101);
  const auto off = test::serve(deepseek(0.0, 101, 1, 1));
  CHECK(off.steps == 1 + 100);
}

TEST_CASE("MTP: accepted drafts at the given rate (2,000 decoded tokens at 50% take about 2,000 / 1.5 steps)") {
  const auto r = test::serve(deepseek(0.5, 2001, 1, 1));
  CHECK(r.output_tokens == 2001);
  CHECK(static_cast<double>(r.steps - 1) == doctest::Approx(2000.0 / 1.5).epsilon(0.05));
}

TEST_CASE(
    "MTP: the same tokens in fewer, costlier steps, the module's weights in memory, and more acceptance is "
    "never slower") {
  const auto off = test::serve(deepseek(0.0, 500, 16, 64));
  const auto half = test::serve(deepseek(0.5, 500, 16, 64));
  const auto most = test::serve(deepseek(0.9, 500, 16, 64));
  CHECK(half.output_tokens == off.output_tokens);
  CHECK(most.steps < half.steps);
  CHECK(half.steps < off.steps);
  CHECK(most.tpot.p50 <= half.tpot.p50);
  CHECK(most.tpot.p50 < off.tpot.p50);
  // A step verifies two tokens per sequence and runs the module: each costs more than without.
  CHECK(half.makespan_s / static_cast<double>(half.steps) > off.makespan_s / static_cast<double>(off.steps));
  // Weights: the MTP module's parameters over the 8 GPUs, in FP8.
  const auto m = test::shipped_model("deepseek-r1");
  CHECK(half.memory.weights - off.memory.weights == doctest::Approx(static_cast<double>(m.params_mtp()) / 8 * 1.0));
}

TEST_CASE("MTP needs a model with a multi-token-prediction module, and continuous batching") {
  const std::string dense = R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1},
      "engine": {"mtp_acceptance": 0.8}, "workload": {"input_len": 100, "output_len": 100, "rate": 1, "requests": 4}})";
  CHECK_THROWS_WITH_AS(config::parse_serving(config::parse_text(dense, "test.json"), test::catalog()),
                       doctest::Contains("/engine/mtp_acceptance: llama3.1-8b has no multi-token-prediction module"),
                       InputError);
}
