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

TEST_CASE("FP8 (Transformer Engine): linear-layer inputs kept in FP8, the attention output kept twice") {
  // Llama-3.1-8B, 4096 tokens, no TP: by hand, per token, bf16 = 2 B and FP8 = 1 B per element.
  const auto m = test::shipped_model("llama3.1-8b");
  StepShape s;
  s.seq = 4096;
  const double T = 4096, h = 4096, q = 4096, kv = 1024, f = 14336, lse = 4.0 * T * 32;
  const double bf16 = T * (2 * 2 * h + 2 * (q + 2 * kv) + 2 * q + 2 * 2 * h + 2 * 2 * f + 2 * f) + lse;
  CHECK(layer_activation_bytes(m, s) == doctest::Approx(bf16));
  s.fp8 = true;
  const double fp8 = T * ((2 + 1) * h + 2 * (q + 2 * kv) + (2 + 1) * q + (2 + 1) * h + 2 * 2 * f + 1 * f) + lse;
  CHECK(layer_activation_bytes(m, s) == doctest::Approx(fp8));
}

TEST_CASE("the distributed optimizer shards over DP x CP: the NeMo Llama-3 8B CP2 FP8 run fits 8x H100") {
  // NeMo's Llama-3 8B recipe: TP1 CP2 (DP4), distributed optimizer, FP8, sequence 8192, gradients
  // reduced in bf16 (as in scenarios/validation/n-nemo.json). Sharding the optimizer state over DP
  // only (4 GPUs) would leave it 12 B x 8.03B / 4 = 24 GB instead of 12 GB.
  const auto s = test::scenario_from_json(
      R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1, "cp": 2, "zero": 1},
          "training": {"seq": 8192, "global_batch": 128, "dtype": "fp8", "grad_dtype": "bf16"}})");
  const auto mem = workload::training_memory_of(s);
  CHECK(mem.optimizer == doctest::Approx(12.0 * static_cast<double>(s.model.params_total()) / 8).epsilon(1e-9));
  CHECK(mem.fits());
}

TEST_CASE("the published NeMo configurations fit 80 GB H100s, the 70B one at micro-batch 2 does not") {
  // N- cases (scenarios/validation/n-nemo.json): they ran. Activations on the first stage of the
  // interleaved schedule: (P - 1) 2 + (V - 1) P + 1 = 47 chunks of 2 layers in flight for 70B.
  const std::string l70 =
      R"("model": "llama3.1-70b", "cluster": "hgx-h100", "nodes": 8, "fabric": "ib-ndr-rail",
         "parallel": {"tp": 4, "pp": 8, "vpp": 5, "sp": true, "zero": 1})";
  const auto s70 = test::scenario_from_json(
      "{" + l70 + R"(, "training": {"seq": 8192, "global_batch": 128, "dtype": "fp8", "grad_dtype": "bf16"}})");
  CHECK(workload::training_memory_of(s70).fits());
  const auto s405 = test::scenario_from_json(
      R"({"model": "llama3.1-405b", "cluster": "hgx-h100", "nodes": 128, "fabric": "ib-ndr-rail",
          "parallel": {"tp": 8, "pp": 8, "vpp": 8, "cp": 2, "sp": true, "zero": 1},
          "training": {"seq": 8192, "global_batch": 512, "dtype": "fp8", "grad_dtype": "bf16"}})");
  CHECK(workload::training_memory_of(s405).fits());
  // Twice the tokens per micro-batch doubles the activations in flight: over the edge.
  const auto big = test::scenario_from_json(
      "{" + l70 +
      R"(, "training": {"seq": 8192, "global_batch": 128, "micro_batch": 2, "dtype": "fp8", "grad_dtype": "bf16"},
          "allow_oom": true})");
  const auto mb = workload::training_memory_of(big);
  CHECK_FALSE(mb.fits());
  CHECK(mb.activations == doctest::Approx(2 * workload::training_memory_of(s70).activations).epsilon(1e-9));
}

TEST_CASE(
    "a MoE layer's shared experts split TP ways in training, with their own SP all-gather and "
    "reduce-scatter, and the same FLOPs") {
  const auto m = test::shipped_model("deepseek-v3");
  const models::LayerKind moe{models::AttentionKind::kMla, models::FeedForwardKind::kMoe};
  const double h = 7168, shared = 3 * h * 2048;  // one shared expert of 2,048
  const auto p1 = models::layer_params_per_gpu(m, moe, 1, {.ep = 8});
  const auto p2 = models::layer_params_per_gpu(m, moe, 2, {.ep = 8});
  // Router (256 x h + 256 biases) and the two norms replicated, attention as TP splits it, and the
  // shared expert halved.
  const double replicated = 256 * h + 256 + 2 * h;
  const auto attention = [&](int tp) { return models::attention_params_per_gpu(m, models::AttentionKind::kMla, tp); };
  CHECK(p1.dense == doctest::Approx(replicated + attention(1) + shared).epsilon(1e-12));
  CHECK(p2.dense == doctest::Approx(replicated + attention(2) + shared / 2).epsilon(1e-12));
  CHECK(p2.expert == p1.expert);
  // The shared expert's FLOPs per GPU halve at TP 2, and with SP it has an all-gather and a
  // reduce-scatter of the TP group's tokens of its own.
  models::StepShape s;
  s.seq = 4096;
  s.ep = 8;
  s.expert_slots = 32;
  auto count = [](const std::vector<models::Item>& items, CollectiveOp op) {
    int n = 0;
    for (const auto& it : items) n += it.comm && it.comm->group == GroupKind::kTp && it.comm->op == op ? 1 : 0;
    return n;
  };
  const auto f1 = models::layer_forward(m, s, moe);
  s.tp = 2;
  s.sp = true;
  const auto f2 = models::layer_forward(m, s, moe);
  auto shared_flops = [](const std::vector<models::Item>& items) {
    double f = 0;
    for (const auto& it : items)
      if (!it.comm && it.op.name.starts_with("shared_")) f += it.op.flops;
    return f;
  };
  CHECK(shared_flops(f1) > 0);
  CHECK(shared_flops(f2) == doctest::Approx(shared_flops(f1) / 2).epsilon(1e-12));
  // Attention's SP pair, the shared expert's pair (the routed path keeps its tokens split).
  CHECK(count(f2, CollectiveOp::kAllGather) == 2);
  CHECK(count(f2, CollectiveOp::kReduceScatter) == 2);
  const auto b2 = models::layer_backward(m, s, moe);
  CHECK(count(b2, CollectiveOp::kAllGather) == 2);
  CHECK(count(b2, CollectiveOp::kReduceScatter) == 2);
}
