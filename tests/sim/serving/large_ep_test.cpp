// Large expert parallelism in disaggregated serving (issue 12): each pool spreads its experts over
// its own TP GPUs, so prefill and decode can run at different EP (SGLang's 96-H100 deployment:
// prefill EP 32 on 4 nodes, decode EP 72 on 9).
#include <doctest/doctest.h>

#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/serving/serving_sim.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"

using namespace cs;

namespace {

/// DeepSeek-R1 in FP8 on 13 HGX H100 nodes: one prefill replica of `ptp` GPUs and one decode
/// replica of `dtp`, attention-DP, DeepEP's exchange, `extra` JSON members in "disaggregate".
std::string large_ep(int ptp, int dtp, const std::string& extra = "", int redundant = 32, bool dp = true,
                     const std::string& model = "deepseek-r1") {
  return R"({"kind": "infer", "model": ")" + model + R"(", "cluster": "hgx-h100", "nodes": )" +
         std::to_string((ptp + dtp) / 8) + R"(, "fabric": "ib-ndr-rail",
      "parallel": {"tp": )" +
         std::to_string(ptp) + R"(, "ep": )" + std::to_string(ptp) + R"(, "dp_attention": )" + (dp ? "true" : "false") +
         (dp ? R"(, "moe_a2a": "deepep")" : "") + R"(},
      "moe": {"redundant_experts": )" +
         std::to_string(redundant) + R"(}, "quantization": {"weights": "fp8"},
      "engine": {"max_batch": 1024, "max_tokens": 16384},
      "disaggregate": {"prefill": 1, "decode": 1, "prefill_tp": )" +
         std::to_string(ptp) + R"(, "decode_tp": )" + std::to_string(dtp) + extra + R"(},
      "workload": {"input_len": 2000, "output_len": 100, "concurrency": 256, "requests": 512}})";
}

serving::ServingScenario parse(const std::string& text) {
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

}  // namespace

TEST_CASE("disaggregated pools at different EP: prefill EP 32 on 4 nodes, decode EP 72 on 9, each its own experts") {
  const auto s = parse(large_ep(32, 72));
  CHECK(s.gpus == 104);
  CHECK(s.replica(0).tp == 32);
  CHECK(s.replica(0).ep == 32);
  CHECK(s.replica(1).tp == 72);
  CHECK(s.replica(1).ep == 72);

  // (256 routed + 32 redundant) experts: 9 copies per prefill GPU, 4 per decode GPU. Each expert is
  // 3 x 7168 x 2048 parameters, one byte each in FP8, in each of DeepSeek-R1's 58 MoE layers; the
  // rest of a GPU's weights (attention whole under attention-DP, dense layers, shared experts, the
  // vocabulary split TP ways) differs only in the first three (dense) layers' feed-forward, split
  // TP ways (3 x 7168 x 18432 each, FP8), and the vocabulary's share (two bf16 tables).
  std::int64_t blocks = 0;
  const auto prefill = serving::serving_memory(s.replica(0), &blocks);
  const auto decode = serving::serving_memory(s.replica(1), &blocks);
  const double expert = 3.0 * 7168 * 2048;
  const double vocab_tables = 2.0 * 7168 * 2.0 * (std::ceil(129280.0 / 32) - std::ceil(129280.0 / 72));
  const double dense_ffn = 3 * 3.0 * 7168 * 18432 * (1.0 / 32 - 1.0 / 72);
  CHECK(prefill.weights - decode.weights ==
        doctest::Approx(58 * (9 - 4) * expert + dense_ffn + vocab_tables).epsilon(1e-6));

  // Simulated end to end: every request served, the pools reported with their own EP.
  const auto r = test::serve(s, false);
  CHECK(r.requests == 512);
  CHECK(r.output_tokens == 512 * 100);
  REQUIRE(r.pools.has_value());
  CHECK(r.pools->prefill.replicas == 1);
  CHECK(r.pools->prefill.tp == 32);
  CHECK(r.pools->prefill.ep == 32);
  CHECK(r.pools->decode.tp == 72);
  CHECK(r.pools->decode.ep == 72);
  REQUIRE(r.moe.has_value());
  CHECK(r.moe->ep == 72);  // the decode pool's, as the memory shown
  const auto j = report::serving_json(r);
  CHECK(j["disaggregate"]["decode"]["ep"] == 72);
  CHECK(j["disaggregate"]["prefill"]["tp"] == 32);
  CHECK(report::serving_table(r).find("prefill 1 x TP 32 EP 32, decode 1 x TP 72 EP 72") != std::string::npos);

  // A pool's EP given apart: the prefill pool splits each expert TP ways (EP 1), decode spreads.
  const auto split = parse(large_ep(64, 64, R"(, "prefill_ep": 1)", 0, false, "qwen3-235b-a22b"));
  CHECK(split.replica(0).ep == 1);
  CHECK(split.replica(1).ep == 64);
}

TEST_CASE("large-EP pools are refused with the numbers when a pool's EP cannot hold its experts") {
  const auto refused = [](const std::string& text, const std::string& what) {
    CHECK_THROWS_WITH_AS((void)parse(text), doctest::Contains(what.c_str()), InfeasibleError);
  };
  // A pool's EP is 1 or its TP.
  refused(large_ep(32, 72, R"(, "decode_ep": 8)"), "/disaggregate/decode_ep: EP 8");
  // 72 GPUs do not divide 256 experts: redundant ones make up the difference (SGLang uses 32).
  refused(large_ep(32, 72, "", 0), "EP 72 does not divide the 256 experts");
  refused(large_ep(32, 72, "", 64), "EP 72 does not divide the 256 routed experts + 64 redundant");
  // Without attention-DP, TP splits the 128 heads: 72 does not divide them.
  refused(large_ep(32, 72, "", 32, false), "TP 72 does not divide the 128 attention heads");
  // A pool's EP on a dense model is bad input, the field named.
  CHECK_THROWS_WITH_AS((void)parse(R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100",
      "parallel": {"tp": 4}, "disaggregate": {"prefill": 1, "decode": 1, "decode_ep": 4},
      "workload": {"input_len": 10, "output_len": 10, "rate": 1, "requests": 2}})"),
                       doctest::Contains("/disaggregate/decode_ep"), InputError);
}

TEST_CASE("pools at different EP keep their own routing for steps of the same token count") {
  // The prefill pool (EP 2) and the decode pool (EP 4) both run 8-token steps; the routing of a
  // step was cached by token count alone, so the decode pool took EP 2's two shares and the run
  // stopped on an internal error (review of 4 December).
  const auto s = parse(R"({"kind": "infer", "model": "qwen3-30b-a3b", "cluster": "hgx-h100",
      "parallel": {"tp": 2, "ep": 2, "dp_attention": true, "moe_a2a": "deepep"}, "moe": {"routing": "uniform"},
      "disaggregate": {"prefill": 1, "decode": 1, "prefill_tp": 2, "decode_tp": 4},
      "workload": {"input_len": 1, "output_len": 4, "rate": "inf", "requests": 8}})");
  const auto r = test::serve(s, false);
  CHECK(r.requests == 8);
  CHECK(r.output_tokens == 32);
  REQUIRE(r.moe.has_value());
  CHECK(r.moe->ep == 4);
  // One decode step's 8 tokens x top-8 = 64 pairs over 4 GPUs: the most loaded holds a whole
  // number of pairs, so its load over the mean (16) is a multiple of 1/16.
  CHECK(r.moe->load_imbalance_max * 16 == doctest::Approx(std::round(r.moe->load_imbalance_max * 16)));
  CHECK(report::serving_table(r).find("of EP 4 GPUs (decode pool) has") != std::string::npos);
}
