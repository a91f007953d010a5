#include <doctest/doctest.h>

#include "models/llm/model_arch.hpp"
#include "models/ops/layer_ops.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/model_file.hpp"
#include "sim/core/errors.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

TEST_CASE("parameter counts match published totals within 0.5%") {
  // Model cards (Meta, Qwen) and Brown et al. 2020 / Narayanan et al. SC'21 Table 1.
  const std::vector<std::pair<const char*, double>> published{
      {"llama3.1-8b", 8.03e9},
      {"llama3.1-70b", 70.55e9},
      {"llama3.1-405b", 405.9e9},
      {"qwen2.5-7b", 7.61e9},
      {"qwen2.5-14b", 14.7e9},
      {"qwen2.5-72b", 72.7e9},
      {"gpt3-175b", 174.6e9},
      // Llama 2 (Hugging Face model cards): 6,738,415,616 and 13,015,864,320 parameters.
      {"llama2-7b", 6.738e9},
      {"llama2-13b", 13.016e9}};
  for (const auto& [id, params] : published) {
    const auto& model_id = id;  // clang 14 cannot capture a structured binding in CAPTURE's lambda
    CAPTURE(model_id);
    const auto m = test::shipped_model(id);
    CHECK(static_cast<double>(m.params_total()) == doctest::Approx(params).epsilon(0.005));
  }
}

TEST_CASE(
    "Megatron-LM SC'21 Table 1 models: P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)) exactly, and the table's rounded "
    "labels") {
  // Narayanan et al. 2021, Section 5.1 (their Eq. for the parameter count, V = 51200, s = 2048).
  // The table prints two or three significant digits (1.7B is 1.65B by the formula), so labels get 3%.
  const std::vector<std::tuple<const char*, double, double, double>> table{
      {"megatron-gpt-1.7b", 24, 2304, 1.7e9},       {"megatron-gpt-3.6b", 30, 3072, 3.6e9},
      {"megatron-gpt-7.5b", 36, 4096, 7.5e9},       {"megatron-gpt-18.4b", 40, 6144, 18.4e9},
      {"megatron-gpt-39.1b", 48, 8192, 39.1e9},     {"megatron-gpt-76.1b", 60, 10240, 76.1e9},
      {"megatron-gpt-145.6b", 80, 12288, 145.6e9},  {"megatron-gpt-310.1b", 96, 16384, 310.1e9},
      {"megatron-gpt-529.6b", 105, 20480, 529.6e9}, {"megatron-gpt-1008b", 128, 25600, 1008.0e9}};
  for (const auto& [id, l, h, label] : table) {
    const auto& model_id = id;  // clang 14 cannot capture a structured binding in CAPTURE's lambda
    CAPTURE(model_id);
    const double formula = 12 * l * h * h * (1 + 13 / (12 * h) + (51200 + 2048) / (12 * l * h));
    const double ours = static_cast<double>(test::shipped_model(id).params_total());
    CHECK(ours == doctest::Approx(formula).epsilon(0.001));
    CHECK(ours == doctest::Approx(label).epsilon(0.03));
  }
}

TEST_CASE(
    "a GPT-2/3 style config is read with its defaults: n_inner null means 4h, tied embeddings, learned positions") {
  const auto m = config::parse_model(
      config::parse_text(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_inner": null,
                            "vocab_size": 50257, "n_positions": 1024})",
                         "gpt2.json"),
      "gpt2");
  CHECK(m.ffn == 3072);
  CHECK(m.tied_embeddings);
  CHECK(m.learned_positions);
  CHECK(m.head_dim == 64);
  CHECK(m.params_total() == 124439808);  // GPT-2 small as Hugging Face counts it
}

TEST_CASE("KV heads must divide the attention heads") {
  CHECK_THROWS_WITH_AS((void)config::parse_model(
                           config::parse_text(R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2,
        "num_attention_heads": 32, "num_key_value_heads": 5, "intermediate_size": 11008, "vocab_size": 32000, "hidden_act": "silu"})",
                                              "m.json"),
                           "m"),
                       "m.json: /num_key_value_heads: expected a divisor of num_attention_heads (32); got 5",
                       InputError);
}

TEST_CASE(
    "unfused attention: four batched GEMMs of 2 s^2 d per head forward, the softmax and dropout over b a s^2 "
    "elements") {
  const auto m = test::shipped_model("megatron-gpt-1.7b");  // 24 heads of 96
  models::StepShape s;
  s.seq = 2048;
  s.flash_attention = false;
  const double N = 24.0 * 2048 * 2048;
  double gemm_flops = 0, softmax_bytes = 0, dropout_bytes = 0;
  for (const auto& it : models::layer_forward(m, s)) {
    if (!it.op.core_attention) continue;
    if (it.op.kind == models::OpKind::kGemm) gemm_flops += it.op.flops;
    if (it.op.name == "attention.softmax") softmax_bytes = it.op.bytes;
    if (it.op.name == "attention.dropout") dropout_bytes = it.op.bytes;
  }
  CHECK(gemm_flops == doctest::Approx(2 * 2 * N * 96));  // QK^T and PV over the full square
  CHECK(softmax_bytes == doctest::Approx(2 * 2 * N));    // read and write, bf16
  CHECK(dropout_bytes == doctest::Approx(N * 5));        // read, write and a one-byte mask
  // Backward: four GEMMs of the same size.
  double bwd_flops = 0;
  for (const auto& it : models::layer_backward(m, s)) {
    if (it.op.core_attention && it.op.kind == models::OpKind::kGemm) bwd_flops += it.op.flops;
  }
  CHECK(bwd_flops == doctest::Approx(2 * gemm_flops));
  // Flash attention computes half the square (causal) in one kernel.
  s.flash_attention = true;
  double flash = 0;
  for (const auto& it : models::layer_forward(m, s)) {
    if (it.op.core_attention) flash += it.op.flops;
  }
  CHECK(flash == doctest::Approx(gemm_flops / 2));
}

TEST_CASE("FP8 training (Transformer Engine): the cast and transpose bytes of a Llama-3 8B layer equal a hand count") {
  const auto m = test::shipped_model("llama3.1-8b");  // h 4096, q 4096 + k, v 2 x 1024, ffn 14336 (gated)
  models::StepShape s;
  s.seq = 8192;
  s.fp8 = true;
  const double T = 8192, h = 4096, qkv = 6144, f = 14336;
  const auto bytes_of = [](const std::vector<models::Item>& items, std::string_view name) {
    double b = 0;
    for (const auto& it : items) b += it.op.name == name ? it.op.bytes : 0.0;
    return b;
  };
  const auto fwd = models::layer_forward(m, s);
  const auto bwd = models::layer_backward(m, s);
  // Forward: qkv_proj and mlp_up follow a norm that writes the FP8 copy, leaving the transpose
  // (read 1 byte, write 1); out_proj's and mlp_down's bf16 inputs are cast and transposed (read 2,
  // write 1 + 1).
  CHECK(bytes_of(fwd, "fp8_transpose") == doctest::Approx(2 * T * h + 2 * T * h));
  CHECK(bytes_of(fwd, "fp8_cast_transpose") == doctest::Approx(4 * T * h + 4 * T * f));
  // Backward: every linear's output gradient dY is cast and transposed: qkv, out, up (gate and up), down.
  CHECK(bytes_of(bwd, "fp8_cast_transpose.bwd") == doctest::Approx(4 * T * (qkv + h + 2 * f + h)));
  // Current scaling: an amax pass (read 2 bytes) before every cast, and the norms no longer write
  // the FP8 copy, so qkv_proj's and mlp_up's inputs are cast in full too.
  CHECK(bytes_of(fwd, "fp8_amax") == 0);
  s.fp8_current_scaling = true;
  const auto cfwd = models::layer_forward(m, s);
  const auto cbwd = models::layer_backward(m, s);
  CHECK(bytes_of(cfwd, "fp8_transpose") == 0);
  CHECK(bytes_of(cfwd, "fp8_cast_transpose") == doctest::Approx(4 * T * (h + h + h + f)));
  CHECK(bytes_of(cfwd, "fp8_amax") == doctest::Approx(2 * T * (h + h + h + f)));
  CHECK(bytes_of(cbwd, "fp8_amax.bwd") == doctest::Approx(2 * T * (qkv + h + 2 * f + h)));
  CHECK(bytes_of(cbwd, "fp8_cast_transpose.bwd") == bytes_of(bwd, "fp8_cast_transpose.bwd"));
  // Each amax pass comes right before its cast, and the cast right before its GEMM.
  for (std::size_t i = 0; i < cfwd.size(); ++i) {
    if (cfwd[i].op.name != "fp8_amax") continue;
    REQUIRE(i + 2 < cfwd.size());
    CHECK(cfwd[i + 1].op.name == "fp8_cast_transpose");
    CHECK(cfwd[i + 2].op.kind == models::OpKind::kGemm);
  }
  s.fp8_current_scaling = false;
  // Nothing of the kind in bf16 training, and the LM head stays a 16-bit GEMM under FP8.
  s.fp8 = false;
  CHECK(bytes_of(models::layer_forward(m, s), "fp8_cast_transpose") == 0);
  CHECK(bytes_of(models::layer_backward(m, s), "fp8_cast_transpose.bwd") == 0);
  s.fp8 = true;
  for (const auto& it : models::head_forward(m, s)) {
    if (it.op.name == "lm_head") CHECK(it.op.keep_16bit);
  }
  for (const auto& it : models::layer_forward(m, s)) {
    if (it.op.kind == models::OpKind::kGemm && !it.op.core_attention) CHECK_FALSE(it.op.keep_16bit);
  }
}
