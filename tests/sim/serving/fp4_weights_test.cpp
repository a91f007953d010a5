#include <doctest/doctest.h>

#include <string>

#include "models/ops/serving_ops.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/serving/serving_sim.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"

using namespace cs;

namespace {

serving::ServingScenario make(const std::string& model, const std::string& cluster, int tp, int ep,
                              const std::string& weights, const std::string& workload) {
  const std::string text = R"({"kind": "infer", "model": ")" + model + R"(", "cluster": ")" + cluster +
                           R"(", "parallel": {"tp": )" + std::to_string(tp) + R"(, "ep": )" + std::to_string(ep) +
                           R"(}, "quantization": {"weights": ")" + weights + R"("}, "workload": )" + workload + "}";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

int count(const std::vector<models::Item>& items, const std::string& name) {
  int n = 0;
  for (const auto& it : items) n += !it.comm && it.op.name == name ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("fp4 and mxfp4 weights: bytes per parameter from the formats' block scales") {
  CHECK(models::weight_format_bytes(models::WeightFormat::kFp4) == 0.5625);     // 4 + 8/16 bits
  CHECK(models::weight_format_bytes(models::WeightFormat::kMxfp4) == 0.53125);  // 4 + 8/32 bits
  CHECK(std::string(models::weight_format_name(models::WeightFormat::kFp4)) == "fp4");
  CHECK(std::string(models::weight_format_name(models::WeightFormat::kMxfp4)) == "mxfp4");

  // DeepSeek-R1 at TP 8 EP 8: every non-embedding parameter per GPU costs 1/16 byte more in fp4
  // than in int4 (1/32 in mxfp4); the embedding and LM head stay bf16 in all of them.
  const auto m = test::shipped_model("deepseek-r1");
  models::ServingShape s{.tp = 8, .ep = 8};
  const auto bytes = [&](models::WeightFormat w) {
    s.weights = w;
    return models::serving_weight_bytes(m, s);
  };
  const double bf16 = bytes(models::WeightFormat::kBf16), int4 = bytes(models::WeightFormat::kInt4);
  const double non_embedding = (bf16 - int4) / 1.5;  // bf16 2 bytes, int4 0.5
  CHECK(non_embedding > 80e9);                       // 671B / 8 less the vocabulary tables
  CHECK(bytes(models::WeightFormat::kFp4) - int4 == doctest::Approx(0.0625 * non_embedding));
  CHECK(bytes(models::WeightFormat::kMxfp4) - int4 == doctest::Approx(0.03125 * non_embedding));
  CHECK(bytes(models::WeightFormat::kMxfp4) < bytes(models::WeightFormat::kFp4));
}

TEST_CASE("fp4 GEMMs: quantised activations on FP4 tensor cores, else dequantised weights as int4") {
  const auto m = test::shipped_model("llama3.1-8b");
  models::StepMix mix;
  mix.tokens = 512;
  mix.sampled = 1;
  mix.add_prefill_context(0, 512);
  models::ServingShape native{.tp = 1, .weights = models::WeightFormat::kFp4, .fp4_tensor_cores = true};
  models::ServingShape weight_only = native;
  weight_only.fp4_tensor_cores = false;
  models::ServingShape int4 = weight_only;
  int4.weights = models::WeightFormat::kInt4;
  const auto a = models::serving_layer(m, mix, native), b = models::serving_layer(m, mix, weight_only),
             c = models::serving_layer(m, mix, int4);
  CHECK(count(a, "fp4_quantize") == 4);  // before qkv_proj, out_proj, mlp_up and mlp_down
  CHECK(count(a, "dequantize") == 0);
  CHECK(count(b, "fp4_quantize") == 0);
  CHECK(count(b, "dequantize") == count(c, "dequantize"));
  REQUIRE(b.size() == c.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b[i].comm || b[i].op.kind != models::OpKind::kGemm) continue;
    CHECK(b[i].op.flops == c[i].op.flops);
    // Weight-only fp4 reads its k x n weight at 0.5625 bytes instead of int4's 0.5.
    CHECK(b[i].op.bytes - c[i].op.bytes == doctest::Approx(0.0625 * b[i].op.n * b[i].op.k));
  }
}

TEST_CASE("fp4 weights run at the FP4 rate on B200 and weight-only on H100") {
  const std::string prefill = R"({"input_len": 8192, "output_len": 1, "rate": "inf", "requests": 4})";
  const std::string decode = R"({"input_len": 128, "output_len": 256, "rate": "inf", "requests": 64})";
  const auto run = [](const std::string& cluster, const std::string& w, const std::string& load) {
    return test::serve(make("llama3.1-70b", cluster, 4, 1, w, load));
  };
  // B200 has FP4 tensor cores (9,000 TFLOP/s dense against FP8's 4,500; its measured GEMMs,
  // b200_sxm gemm_perf at 8192^3: nvfp4 3,864 against fp8 2,335 TFLOP/s): a prefill-bound run is
  // faster in fp4 than in fp8 (attention and the rest do not speed up), and decode reads fewer
  // weight bytes.
  CHECK(run("hgx-b200", "fp4", prefill).ttft.mean < 0.9 * run("hgx-b200", "fp8", prefill).ttft.mean);
  CHECK(run("hgx-b200", "fp4", decode).tpot.mean < run("hgx-b200", "fp8", decode).tpot.mean);
  // H100 has none: fp4 is int4 with 1/16 byte more per weight, so never faster than int4, and its
  // bf16 prefill is slower than fp8's W8A8.
  const auto h_fp4 = run("hgx-h100", "fp4", prefill), h_int4 = run("hgx-h100", "int4", prefill);
  CHECK(h_fp4.ttft.mean >= h_int4.ttft.mean);
  CHECK(h_fp4.ttft.mean == doctest::Approx(h_int4.ttft.mean).epsilon(0.02));
  CHECK(h_fp4.ttft.mean > run("hgx-h100", "fp8", prefill).ttft.mean);
  const auto d_fp4 = run("hgx-h100", "fp4", decode), d_int4 = run("hgx-h100", "int4", decode),
             d_mx = run("hgx-h100", "mxfp4", decode);
  CHECK(d_fp4.tpot.mean >= d_int4.tpot.mean);
  CHECK(d_mx.tpot.mean <= d_fp4.tpot.mean);
  CHECK(d_mx.memory.weights < d_fp4.memory.weights);
}

TEST_CASE("gpt-oss-120b in mxfp4 fits one H100 80GB") {
  const auto s = make("gpt-oss-120b", "hgx-h100", 1, 1, "mxfp4",
                      R"({"input_len": 1024, "output_len": 256, "rate": "inf", "requests": 16})");
  std::int64_t blocks = 0;
  const auto mem = serving::serving_memory(s, &blocks);
  // ~116.8B parameters, all but the bf16 vocabulary tables at 0.53125 bytes: about 64 GB.
  CHECK(mem.weights < 70e9);
  CHECK(mem.weights > 60e9);
  CHECK(blocks > 0);
  const auto r = test::serve(s);
  CHECK(r.output_tokens == 16 * 256);
}
