#include <doctest/doctest.h>

#include "models/memory/training_memory.hpp"
#include "sim/report/train_results.hpp"
#include "sim/study/training_run.hpp"
#include "sim/workload/step_memory.hpp"
#include "tests/support/builders.hpp"

using namespace cs;
using namespace cs::models;

TEST_CASE(
    "activation memory of a GPT layer is 34 s b h bytes without TP (Korthikanti et al. 2022 Eq. 2, flash attention)") {
  const auto m = test::shipped_model("megatron-gpt-7.5b");
  StepShape s;
  s.micro_batch = 2;
  s.seq = 2048;
  const double sbh = 2.0 * 2048 * 4096;
  const double lse = 4.0 * 2 * 2048 * 32;  // fp32 log-sum-exp per head replaces the 5 a s^2 b score terms
  CHECK(layer_activation_bytes(m, s) == doctest::Approx(34 * sbh + lse));
  // With TP t and SP every term splits t ways (Eq. 6: 34 s b h / t).
  s.tp = 4;
  s.sp = true;
  CHECK(layer_activation_bytes(m, s) == doctest::Approx((34 * sbh + lse) / 4));
}

TEST_CASE("training memory parts add up to the total, ZeRO-1 divides optimizer state by DP, TP divides weights") {
  const auto m = test::shipped_model("llama3.1-8b");
  TrainingMemoryInputs in;
  in.shape.seq = 4096;
  in.dp = 8;
  in.runtime_reserved = 2e9;
  in.capacity = 80e9;
  const auto base = training_memory(m, in);
  CHECK(base.weights + base.gradients + base.optimizer + base.activations + base.other == doctest::Approx(base.total));
  CHECK(base.weights == doctest::Approx(2.0 * static_cast<double>(m.params_total())).epsilon(1e-9));
  in.zero = 1;
  const auto z1 = training_memory(m, in);
  CHECK(z1.optimizer == doctest::Approx(base.optimizer / 8));
  in.zero = 0;
  in.shape.tp = 8;
  const auto tp8 = training_memory(m, in);
  CHECK(tp8.weights < base.weights / 7.5);
  CHECK(tp8.weights > base.weights / 8.0);
}

TEST_CASE("full-parameter Llama-3.1-70B does not fit one 8x H100 box with TP8") {
  const auto s = test::scenario_from_json(R"({"model": "llama3.1-70b", "cluster": "hgx-h100", "parallel": {"tp": 8},
    "training": {"seq": 4096, "global_batch": 16}})");
  const auto mem = workload::training_memory_of(s);
  CHECK_FALSE(mem.fits());
  CHECK(mem.weights + mem.gradients + mem.optimizer > 140.0 * (1 << 30));
  CHECK(study::does_not_fit_message(s, mem).find("does not fit: needs ") == 0);
}

TEST_CASE("ZeRO stages shard optimizer state (1), gradients (2) and weights (3) over DP") {
  const auto m = test::shipped_model("llama3.1-70b");
  TrainingMemoryInputs in;
  in.shape.seq = 4096;
  in.dp = 32;
  in.capacity = 80e9;
  in.zero = 1;
  const auto z1 = training_memory(m, in);
  in.zero = 2;
  const auto z2 = training_memory(m, in);
  in.zero = 3;
  const auto z3 = training_memory(m, in);
  CHECK(z2.gradients == doctest::Approx(z1.gradients / 32));
  CHECK(z2.optimizer == doctest::Approx(z1.optimizer));
  CHECK(z3.weights < z1.weights / 8);
  CHECK(z3.total < z2.total);
  CHECK(z2.total < z1.total);
}

TEST_CASE("LoRA: adapter counts match PEFT's, and a frozen base needs no base gradients or Adam state") {
  const auto m = test::shipped_model("llama3.1-8b");
  // PEFT, r = 16 on q, k, v, o, gate, up, down of Llama-3-8B: 41,943,040 trainable parameters.
  CHECK(lora_params_per_layer(m, 1, 16) * 32 == doctest::Approx(41943040.0));
  const auto big = test::shipped_model("llama3.1-70b");
  TrainingMemoryInputs in;
  in.shape.seq = 4096;
  in.shape.tp = 8;
  in.capacity = 80e9;
  const auto full = training_memory(big, in);
  in.shape.lora_rank = 16;
  const auto lora = training_memory(big, in);
  in.shape.base_4bit = true;
  const auto qlora = training_memory(big, in);
  // A adapters of column-parallel layers are replicated across TP ranks, so about 1% remains.
  CHECK(lora.gradients < full.gradients / 50);
  CHECK(lora.optimizer < full.optimizer / 50);
  CHECK(qlora.weights < 0.3 * lora.weights);
  CHECK(full.total > 80e9 * 1.5);
  CHECK(lora.total < 80e9 * 0.7);
}

TEST_CASE(
    "unfused attention keeps the score matrices: 34 s b h + 5 a s^2 b bytes per layer (Korthikanti et al. 2022, Eq. "
    "1)") {
  const auto m = test::shipped_model("megatron-gpt-7.5b");  // 32 heads, GPT attention dropout
  REQUIRE(m.attention_dropout);
  StepShape s;
  s.micro_batch = 2;
  s.seq = 2048;
  s.flash_attention = false;
  const double sbh = 2.0 * 2048 * 4096, as2b = 32.0 * 2048 * 2048 * 2;
  CHECK(layer_activation_bytes(m, s) == doctest::Approx(34 * sbh + 5 * as2b));
  s.tp = 4;
  s.sp = true;
  CHECK(layer_activation_bytes(m, s) == doctest::Approx((34 * sbh + 5 * as2b) / 4));
}
