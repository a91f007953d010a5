// Attention data parallelism in serving (issue 12): each GPU of a replica runs attention over its
// own sequences with every head; the feed-forward stays split over the replica's GPUs.
#include <doctest/doctest.h>

#include "models/ops/serving_ops.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/serving/serving_sim.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"

using namespace cs;

namespace {

serving::ServingScenario deepseek(bool dp, int concurrency) {
  const std::string text = R"({"kind": "infer", "model": "deepseek-r1", "cluster": "hgx-h200",
      "parallel": {"tp": 8, "ep": 8, "dp_attention": )" +
                           std::string(dp ? "true" : "false") +
                           R"(}, "quantization": {"weights": "fp8"}, "engine": {"max_batch": 1024},
      "workload": {"input_len": 1000, "output_len": 1000, "concurrency": )" +
                           std::to_string(concurrency) + R"(, "requests": )" + std::to_string(4 * concurrency) + "}}";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

struct CommTally {
  double allreduce = 0, allgather = 0, reducescatter = 0;
};

CommTally comms(const std::vector<models::Item>& items) {
  CommTally t;
  for (const auto& it : items) {
    if (!it.comm) continue;
    if (it.comm->op == CollectiveOp::kAllReduce) t.allreduce += it.comm->bytes;
    if (it.comm->op == CollectiveOp::kAllGather) t.allgather += it.comm->bytes;
    if (it.comm->op == CollectiveOp::kReduceScatter) t.reducescatter += it.comm->bytes;
  }
  return t;
}

}  // namespace

TEST_CASE("attention-DP weights by hand: Llama-3.1-8B at TP 8 holds every layer's whole attention on each GPU") {
  const auto m = test::shipped_model("llama3.1-8b");
  models::ServingShape tp{.tp = 8};
  models::ServingShape dp = tp;
  dp.dp_attention = true;
  // Per layer, q/k/v/o: 4096 x (4096 + 2 x 1024) + 4096 x 4096 = 41,943,040 parameters whole,
  // 4096 x (512 + 2 x 128) + 512 x 4096 = 5,242,880 on one of 8 TP ranks; 32 layers, bf16.
  const double extra = 32.0 * (41943040.0 - 5242880.0) * 2.0;
  CHECK(models::serving_weight_bytes(m, dp) - models::serving_weight_bytes(m, tp) == doctest::Approx(extra));
  // KV cache per token of a GPU's own sequences: all 8 KV heads of 128, K and V, 32 layers, bf16.
  CHECK(models::kv_bytes_per_token(m, dp) == doctest::Approx(32.0 * 2 * 8 * 128 * 2));
  CHECK(models::kv_bytes_per_token(m, tp) == doctest::Approx(32.0 * 2 * 1 * 128 * 2));
}

TEST_CASE(
    "attention-DP layer program: the same FLOPs per GPU, the all-reduces become an all-gather and a "
    "reduce-scatter of the same tokens") {
  const auto m = test::shipped_model("deepseek-r1");
  models::StepMix mix;
  for (int i = 0; i < 64; ++i) mix.add_decode_context(1000);
  mix.tokens = mix.sampled = 64;
  models::ServingShape tp{.tp = 8, .ep = 8};
  models::ServingShape dp = tp;
  dp.dp_attention = true;
  const models::LayerKind kind{models::AttentionKind::kMla, models::FeedForwardKind::kMoe};
  const auto plain = models::serving_layer(m, mix, tp, kind);
  const auto over = models::serving_layer(m, mix, dp, kind);
  // MLA's down-projections are replicated over TP ranks without attention-DP: attention-DP does
  // each token's once, so its FLOPs per GPU are at most the TP form's.
  CHECK(models::model_flops(over) <= models::model_flops(plain));
  const double hidden = 7168.0 * 2;
  const auto a = comms(plain), b = comms(over);
  CHECK(a.allreduce == doctest::Approx(2 * 64 * hidden));  // attention's and the MoE's
  CHECK(b.allreduce == 0);
  CHECK(b.allgather == doctest::Approx(64 * hidden));
  CHECK(b.reducescatter == doctest::Approx(64 * hidden));
  // Decode attention reads each GPU's own sequences' latent cache, not every sequence's.
  double read_plain = 0, read_dp = 0;
  for (const auto& it : plain)
    if (it.op.name == "attention") read_plain = it.op.bytes;
  for (const auto& it : over)
    if (it.op.name == "attention") read_dp = it.op.bytes;
  CHECK(read_dp < read_plain / 4);
}

TEST_CASE(
    "attention-DP on DeepSeek-R1 (8x H200, FP8): MLA's cache is no longer replicated, so about TP times the "
    "sequences fit, and a large batch runs faster") {
  std::int64_t blocks_tp = 0, blocks_dp = 0;
  const auto mem_tp = serving::serving_memory(deepseek(false, 64), &blocks_tp);
  const auto mem_dp = serving::serving_memory(deepseek(true, 64), &blocks_dp);
  CHECK(mem_dp.weights > mem_tp.weights);  // the whole attention on every GPU
  CHECK(blocks_dp > 5 * blocks_tp);        // 8 pools of the latent cache, less the weights' room
  CHECK(blocks_dp < 8 * blocks_tp);
  const auto big_tp = test::serve(deepseek(false, 1024));
  const auto big_dp = test::serve(deepseek(true, 1024));
  CHECK(big_dp.output_tokens_per_s > 1.5 * big_tp.output_tokens_per_s);
  CHECK(big_dp.preemptions == 0);
  CHECK(big_tp.preemptions > 0);  // 1,024 sequences of 2,000 tokens do not fit the replicated cache
  // A small batch is bound by weight reads, which attention-DP increases: not faster there.
  const auto small_tp = test::serve(deepseek(false, 8));
  const auto small_dp = test::serve(deepseek(true, 8));
  CHECK(small_dp.output_tokens_per_s <= small_tp.output_tokens_per_s);
}

TEST_CASE(
    "DeepEP's exchange under attention-DP: each token dispatched only to the GPUs holding its experts (volume by "
    "hand), shared experts whole on every GPU, faster across nodes") {
  const auto m = test::shipped_model("deepseek-r1");
  models::StepMix mix;
  for (int i = 0; i < 64; ++i) mix.add_decode_context(1000);
  mix.tokens = mix.sampled = 64;
  models::ServingShape ag{.tp = 8, .ep = 8, .weights = models::WeightFormat::kFp8, .dp_attention = true};
  models::ServingShape dp = ag;
  dp.deepep = true;
  const models::LayerKind moe{models::AttentionKind::kMla, models::FeedForwardKind::kMoe};
  const auto items = models::serving_layer(m, mix, dp, moe);
  double dispatch = 0, combine = 0;
  for (const auto& it : items) {
    if (!it.comm) continue;
    CHECK(it.comm->op == CollectiveOp::kAllToAll);  // no all-gather or reduce-scatter left
    (std::string(it.comm->label) == "ep.dispatch" ? dispatch : combine) += it.comm->bytes;
  }
  // Each GPU's 8 tokens to the distinct GPUs of their top-8 experts (32 experts a GPU): 8 x (1 -
  // C(224, 8) / C(256, 8)) GPUs, 7168 values each, FP8 out (with one fp32 scale per 128), bf16 back.
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (224.0 - i) / (256.0 - i);
  const double dests = 8 * (1 - miss);
  CHECK(dispatch == doctest::Approx(8 * dests * (7168 + 56 * 4.0)));
  CHECK(combine == doctest::Approx(8 * dests * 7168 * 2.0));
  // A dense layer (DeepSeek's first three) keeps the all-gather and reduce-scatter.
  const auto dense_items =
      models::serving_layer(m, mix, dp, {models::AttentionKind::kMla, models::FeedForwardKind::kDense});
  CHECK(comms(dense_items).allgather == doctest::Approx(64 * 7168.0 * 2));
  // Weights: the shared expert (3 x 7168 x 2048, FP8) split 8 ways in each of the 58 MoE layers,
  // as serving runs it (against the same model without one), and whole under DeepEP's exchange.
  auto no_shared = m;
  no_shared.moe.shared_ffn = 0;
  CHECK(models::serving_weight_bytes(m, ag) - models::serving_weight_bytes(no_shared, ag) ==
        doctest::Approx(58 * 3.0 * 7168 * 2048 / 8));
  CHECK(models::serving_weight_bytes(m, dp) - models::serving_weight_bytes(m, ag) ==
        doctest::Approx(58 * 3.0 * 7168 * 2048 * (1 - 1.0 / 8)));

  // Two H200 boxes, one replica of 16 GPUs over the rails: every token crossing to every GPU
  // (all-gather) costs more than sending it only where its experts are.
  const auto run = [](const std::string& a2a) {
    const std::string text = R"({"kind": "infer", "model": "deepseek-r1", "cluster": "hgx-h200", "nodes": 2,
        "fabric": "ib-ndr-rail", "parallel": {"tp": 16, "ep": 16, "dp_attention": true, "moe_a2a": ")" +
                             a2a + R"("}, "quantization": {"weights": "fp8"}, "engine": {"max_batch": 1024},
        "workload": {"input_len": 1000, "output_len": 200, "concurrency": 256, "requests": 256}})";
    return test::serve(config::parse_serving(config::parse_text(text, "test.json"), test::catalog()), false);
  };
  const auto gathered = run("allgather"), deepep = run("deepep");
  CHECK(deepep.tpot.p50 < gathered.tpot.p50);
  // Refused without attention-DP, with the field named.
  const std::string bad = R"({"kind": "infer", "model": "deepseek-r1", "cluster": "hgx-h200",
      "parallel": {"tp": 8, "ep": 8, "moe_a2a": "deepep"}, "quantization": {"weights": "fp8"},
      "workload": {"input_len": 10, "output_len": 10, "rate": 1, "requests": 2}})";
  CHECK_THROWS_WITH_AS((void)config::parse_serving(config::parse_text(bad, "test.json"), test::catalog()),
                       doctest::Contains("/parallel/moe_a2a"), InputError);
}

TEST_CASE(
    "DeepEP in serving: decode steps run the low-latency kernels (every top-k copy, after each kernel's floor), "
    "prefill the normal ones, and a decode step is never faster than its floors") {
  const auto m = test::shipped_model("deepseek-r1");
  models::StepMix decode;
  for (int i = 0; i < 64; ++i) decode.add_decode_context(1000);
  decode.tokens = decode.sampled = 64;
  models::ServingShape s{.tp = 8, .ep = 8, .weights = models::WeightFormat::kFp8, .dp_attention = true};
  s.deepep = true;
  s.low_latency = true;
  s.ll_dispatch_floor_s = 28.6e-6;
  s.ll_combine_floor_s = 26.7e-6;
  const models::LayerKind moe{models::AttentionKind::kMla, models::FeedForwardKind::kMoe};
  const auto items = models::serving_layer(m, decode, s, moe);
  // Each GPU's 8 tokens, all 8 copies of each (no deduplication), FP8 with scales out, bf16 back;
  // each all-to-all right after its floor.
  double dispatch = 0, combine = 0, floors = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].op.fixed_s > 0) floors += items[i].op.fixed_s;
    if (!items[i].comm) continue;
    REQUIRE(i > 0);
    const std::string label = items[i].comm->label;
    CHECK(items[i - 1].op.fixed_s == (label == "ep.dispatch" ? s.ll_dispatch_floor_s : s.ll_combine_floor_s));
    (label == "ep.dispatch" ? dispatch : combine) += items[i].comm->bytes;
  }
  CHECK(dispatch == doctest::Approx(8 * 8 * (7168 + 56 * 4.0)));
  CHECK(combine == doctest::Approx(8 * 8 * 7168 * 2.0));
  CHECK(floors == doctest::Approx(s.ll_dispatch_floor_s + s.ll_combine_floor_s));
  // The normal kernels (prefill) have no floor.
  s.low_latency = false;
  for (const auto& it : models::serving_layer(m, decode, s, moe)) CHECK(it.op.fixed_s == 0);

  // Simulated: 8 requests of 100 prompt tokens prefill in one step, then decode together, so the
  // inter-token time is one decode step. With the floors it is slower than without by at least
  // the floors of every MoE layer (58 in DeepSeek-R1): decode never beats its floor.
  const std::string text = R"({"kind": "infer", "model": "deepseek-r1", "cluster": "hgx-h200",
      "parallel": {"tp": 8, "ep": 8, "dp_attention": true, "moe_a2a": "deepep"},
      "quantization": {"weights": "fp8"}, "workload": {"input_len": 100, "output_len": 50, "rate": "inf",
      "requests": 8}})";
  auto sc = config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
  REQUIRE(sc.profile.deepep_ll_dispatch_floor.has_value());
  const double per_step = 58 * (sc.profile.deepep_ll_dispatch_floor->value + sc.profile.deepep_ll_combine_floor->value);
  const auto with = test::serve(sc, false);
  sc.profile.deepep_ll_dispatch_floor->value = 0;
  sc.profile.deepep_ll_combine_floor->value = 0;
  const auto without = test::serve(sc, false);
  CHECK(with.tpot.p50 - without.tpot.p50 >= per_step * (1 - 1e-9));
  CHECK(with.ttft.p50 == doctest::Approx(without.ttft.p50));  // the prefill step runs the normal kernels

  // A GPU without the floors cannot run DeepEP's decode kernels: refused, the field named.
  const std::string a100 = R"({"kind": "infer", "model": "deepseek-r1", "cluster": "dgx-a100",
      "parallel": {"tp": 8, "ep": 8, "dp_attention": true, "moe_a2a": "deepep"}, "allow_oom": true,
      "workload": {"input_len": 10, "output_len": 10, "rate": 1, "requests": 2}})";
  CHECK_THROWS_WITH_AS((void)config::parse_serving(config::parse_text(a100, "test.json"), test::catalog()),
                       doctest::Contains("deepep_ll_dispatch_floor"), InputError);
}
