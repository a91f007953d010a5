// Fine-grained recompute, FP8 activation caching and low-precision optimizer state (issue 27):
// what each saves, what it costs, and that the configurations that really ran fit.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "models/ops/recompute.hpp"
#include "sim/report/train_results.hpp"
#include "sim/study/memory_options.hpp"
#include "sim/study/training_run.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/stage_programs.hpp"
#include "sim/workload/step_memory.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

report::TrainResults eval(const scenario::Scenario& s) {
  return report::train_results(s, study::run_training(s, study::RunOptions{}));
}

models::RecomputeModules modules(const std::string& text) {
  models::RecomputeModules m;
  REQUIRE_FALSE(models::parse_recompute_modules(text, m).has_value());
  return m;
}

}  // namespace

TEST_CASE("a Qwen3-30B-A3B MoE layer's stored activations by hand, with and without moe_act recompute") {
  // Qwen3-30B-A3B: hidden 2048, 32 query heads and 4 KV heads of 128, 128 experts of 768, top-8,
  // SwiGLU, no shared expert, no dropout. One 4096-token sequence, no TP, bf16 (2 bytes).
  const auto m = test::shipped_model("qwen3-30b-a3b");
  models::StepShape s;
  s.seq = 4096;
  s.ep = 8;
  const double h = 2048, q = 32 * 128, kv = 4 * 128, f = 768, k = 8, E = 128;
  const double per_token = 2 * 2 * h           // the two norms' inputs (the residual stream)
                           + 2 * 2 * h         // the two norms' outputs (QKV and router/expert inputs)
                           + 2 * (q + 2 * kv)  // Q, K, V for attention's backward
                           + 2 * q + 4 * 32    // attention output and the fp32 log-sum-exp per head
                           + 4 * E             // fp32 router scores
                           + k * 2 * h         // each routed pair's expert input
                           + k * 2 * 2 * f     // its gate and up outputs (SwiGLU's input)
                           + k * 2 * f;        // SwiGLU's output, the down projection's input
  const models::LayerKind moe{models::AttentionKind::kFull, models::FeedForwardKind::kMoe};
  const auto a = models::layer_activations(m, s, moe);
  CHECK(a.total() == doctest::Approx(4096 * per_token).epsilon(1e-12));
  CHECK(a.kept({}) == doctest::Approx(a.total()));
  // moe_act drops the activation's output: 8 pairs x 768 x 2 bytes a token.
  CHECK(a.kept(modules("moe_act")) == doctest::Approx(4096 * (per_token - k * 2 * f)).epsilon(1e-12));
  // layernorm drops the two norms' outputs; together they add up.
  CHECK(a.kept(modules("layernorm,moe_act")) ==
        doctest::Approx(4096 * (per_token - k * 2 * f - 2 * 2 * h)).epsilon(1e-12));
  // moe drops the whole MoE block (router, expert inputs and everything after).
  CHECK(a.kept(modules("moe")) ==
        doctest::Approx(4096 * (per_token - 4 * E - k * 2 * h - k * 2 * 2 * f - k * 2 * f)).epsilon(1e-12));
  // DeepSeek's FP8 cache keeps SwiGLU's input and the attention output in one byte.
  const auto c = models::layer_activations(m, s, moe, true);
  CHECK(a.total() - c.total() == doctest::Approx(4096 * (k * 2 * f + q)).epsilon(1e-12));
}

TEST_CASE("recompute modules parse with Megatron-core names, and an unknown one is returned") {
  models::RecomputeModules m;
  CHECK_FALSE(models::parse_recompute_modules(" moe_act, layernorm ", m).has_value());
  CHECK(m.text() == "moe_act,layernorm");
  models::RecomputeModules bad;
  CHECK(models::parse_recompute_modules("layernorm,moe_actt", bad) == std::optional<std::string>("moe_actt"));
}

TEST_CASE("each module re-runs its own forward ops before the layer's backward, as events in the trace") {
  const auto base = std::string(R"({"model": "qwen3-30b-a3b", "cluster": "hgx-h100", "gpus": 8,
      "parallel": {"tp": 1, "ep": 8}, "training": {"seq": 4096, "global_batch": 8, "micro_batch": 1)");
  auto recomputed = [&](const std::string& mods) {
    const auto s = test::scenario_from_json(base + R"(, "recompute_modules": ")" + mods + R"("}, "allow_oom": true})");
    const workload::ComputeModel compute(s.profile, s.dtype);
    const auto programs = workload::build_stage_programs(s, compute);
    double seconds = 0;
    int items = 0;
    for (const auto& it : programs[0].b) {
      if (std::string(it.label) != "modules.recompute") continue;
      CHECK(it.category == workload::Category::kRecompute);
      seconds += it.comm ? 0.0 : it.seconds;
      items += it.comm ? 1 : it.kernels;  // consecutive kernels merge into one item
    }
    return std::pair{items, seconds};
  };
  const auto [act_items, act_s] = recomputed("moe_act");
  const auto [norm_items, norm_s] = recomputed("layernorm");
  const auto [moe_items, moe_s] = recomputed("moe");
  const int layers = 48;
  CHECK(act_items == layers);       // SwiGLU once a layer
  CHECK(norm_items == 2 * layers);  // the two norms
  CHECK(moe_items > 5 * layers);    // router, permute, experts, their all-to-alls, ...
  CHECK(act_s > 0);
  CHECK(moe_s > act_s + norm_s);  // the whole MoE block costs more than its activation
  // The steps pay for it: more recompute, longer step, less memory.
  auto run = [&](const std::string& mods) {
    return eval(test::scenario_from_json(base + (mods.empty() ? "" : R"(, "recompute_modules": ")" + mods + "\"") +
                                         R"(}, "allow_oom": true})"));
  };
  const auto none = run(""), act = run("moe_act"), moe = run("moe");
  CHECK(act.step_time_s > none.step_time_s);
  CHECK(moe.step_time_s > act.step_time_s);
  CHECK(act.memory.activations < none.memory.activations);
  CHECK(moe.memory.activations < act.memory.activations);
}

TEST_CASE(
    "layernorm recompute re-makes the norm's FP8 copy: the transpose under delayed scaling, amax and cast under "
    "current") {
  const auto m = test::shipped_model("llama3.1-8b");
  models::StepShape s;
  s.seq = 4096;
  s.fp8 = true;
  const auto names = [](const std::vector<models::Item>& items) {
    std::vector<std::string> out;
    for (const auto& it : items) out.emplace_back(it.comm ? std::string(it.comm->label) : std::string(it.op.name));
    return out;
  };
  const auto delayed = names(models::recompute_items(models::layer_forward(m, s), modules("layernorm")));
  CHECK(delayed == std::vector<std::string>{"attn_norm", "fp8_transpose", "mlp_norm", "fp8_transpose"});
  s.fp8_current_scaling = true;
  const auto current = names(models::recompute_items(models::layer_forward(m, s), modules("layernorm")));
  CHECK(current == std::vector<std::string>{"attn_norm", "fp8_amax", "fp8_cast_transpose", "mlp_norm", "fp8_amax",
                                            "fp8_cast_transpose"});
  // A re-run GEMM takes its input's amax pass and cast with it.
  const auto mlp = names(models::recompute_items(models::layer_forward(m, s), modules("mlp")));
  REQUIRE(mlp.size() >= 3);
  CHECK(mlp[0] == "fp8_amax");
  CHECK(mlp[1] == "fp8_cast_transpose");
  CHECK(mlp[2] == "mlp_up");
}

TEST_CASE("FP8 training casts the routed experts' inputs in kernels of their own, like the dense layers'") {
  const auto m = test::shipped_model("mixtral-8x7b");
  models::StepShape s;
  s.seq = 4096;
  s.fp8 = true;
  s.ep = 8;
  int experts = 0;
  const auto kind = m.layer_kind(0);
  for (const auto& items : {models::layer_forward(m, s, kind), models::layer_backward(m, s, kind)}) {
    for (const auto& it : items) {
      if (it.comm || !it.op.expert) continue;
      ++experts;
      CHECK(it.op.input_cast_separately);  // so the table's own quantisation is taken out once
    }
  }
  CHECK(experts == 6);  // up and down, forward, dgrad and wgrad
  s.fp8 = false;
  for (const auto& it : models::layer_forward(m, s, kind))
    if (!it.comm && it.op.expert) CHECK_FALSE(it.op.input_cast_separately);
}

TEST_CASE("bf16 Adam moments save 4 bytes a parameter, an EMA in CPU memory none, and both are counted") {
  const std::string base = R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 8},
      "training": {"seq": 4096, "global_batch": 8)";
  const auto fp32 = workload::training_memory_of(test::scenario_from_json(base + "}}"));
  const auto bf16 = workload::training_memory_of(test::scenario_from_json(base + R"(, "optimizer_dtype": "bf16"}})"));
  const auto gpu = workload::training_memory_of(test::scenario_from_json(base + R"(, "ema": "gpu"}})"));
  const auto cpu = workload::training_memory_of(test::scenario_from_json(base + R"(, "ema": "cpu"}})"));
  // fp32 master weights (4 B) and two moments (4 + 4 B), against two moments of 2 B: 12 against 8.
  CHECK(bf16.optimizer == doctest::Approx(fp32.optimizer * 8.0 / 12.0).epsilon(1e-12));
  CHECK(gpu.optimizer == doctest::Approx(fp32.optimizer * 16.0 / 12.0).epsilon(1e-12));
  CHECK(cpu.optimizer == doctest::Approx(fp32.optimizer).epsilon(1e-12));
}

TEST_CASE("full recompute by method: block recomputes only some layers of each chunk, uniform groups them") {
  const std::string base = R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 4, "pp": 2},
      "training": {"seq": 4096, "global_batch": 16, "recompute": "full")";
  auto run = [&](const std::string& extra) {
    return eval(test::scenario_from_json(base + extra + R"(}, "allow_oom": true})"));
  };
  const auto all = run("");
  const auto block4 = run(R"(, "recompute_method": "block", "recompute_num_layers": 4)");
  const auto block16 = run(R"(, "recompute_method": "block", "recompute_num_layers": 16)");
  // Recomputing 4 of a stage's 16 layers: less time lost, more memory kept.
  CHECK(block4.step_time_s < all.step_time_s);
  CHECK(block4.memory.activations > all.memory.activations);
  // Every layer of the chunk: the same as recomputing each.
  CHECK(block16.step_time_s == doctest::Approx(all.step_time_s).epsilon(1e-9));
  CHECK(block16.memory.activations == doctest::Approx(all.memory.activations).epsilon(1e-9));
}

TEST_CASE("the published configurations fit 80 GB GPUs as published, and one micro-batch or module short does not") {
  // gpt-oss-120b on 64 H100, bf16, TP1 PP4 EP8, sequence 4096, global batch 512, distributed
  // optimizer: Megatron-Bridge's H100 preset recomputes layernorm and moe_act. At micro-batch 1 it
  // fits even without them; at micro-batch 2 the two modules are what make it fit, and one short is
  // refused.
  const std::string oss = R"({"model": "gpt-oss-120b", "cluster": "hgx-h100", "nodes": 8, "fabric": "ib-ndr-rail",
      "parallel": {"tp": 1, "pp": 4, "ep": 8, "zero": 1}, "training": {"seq": 4096, "global_batch": 512)";
  CHECK(workload::training_memory_of(test::scenario_from_json(oss + R"(, "recompute_modules": "layernorm,moe_act"}})"))
            .fits());
  const auto oss_mb2 = workload::training_memory_of(
      test::scenario_from_json(oss + R"(, "micro_batch": 2, "recompute_modules": "layernorm,moe_act"}})"));
  CHECK(oss_mb2.fits());
  const auto oss_short = workload::training_memory_of(
      test::scenario_from_json(oss + R"(, "micro_batch": 2, "recompute_modules": "layernorm"}, "allow_oom": true})"));
  CHECK_FALSE(oss_short.fits());
  CHECK(oss_short.activations > oss_mb2.activations);
  // Qwen3-30B-A3B on 16 H100, FP8, TP1 PP2 VPP24 EP8, micro-batch 2 (sequence 4096, bf16 gradient
  // reduction as Megatron-Bridge's FP8 recipes run it).
  const std::string qwen = R"({"model": "qwen3-30b-a3b", "cluster": "hgx-h100", "nodes": 2, "fabric": "ib-ndr-rail",
      "parallel": {"tp": 1, "pp": 2, "vpp": 24, "ep": 8, "zero": 1},
      "training": {"seq": 4096, "global_batch": 512, "dtype": "fp8", "grad_dtype": "bf16", "micro_batch": )";
  CHECK(workload::training_memory_of(test::scenario_from_json(qwen + "2}}")).fits());
  const auto qwen4 = workload::training_memory_of(test::scenario_from_json(qwen + R"(4}, "allow_oom": true})"));
  CHECK_FALSE(qwen4.fits());
  // DeepSeek-V3 on 2,048 H800, as the shipped claim-9 scenario has it (no allow_oom), and without
  // the FP8 activation cache it does not fit.
  const auto claim = test::slurp(test::data_path("scenarios/seed-claims/claim9-deepseek-v3-training.json"));
  REQUIRE(claim.find("allow_oom") == std::string::npos);
  const auto ds = test::scenario_from_json(claim);
  const auto ds_mem = workload::training_memory_of(ds);
  CHECK(ds_mem.fits());
  CHECK(ds_mem.total / kGiB < 70.0);
  auto no_cache = ds;
  no_cache.fp8_activation_cache = false;
  no_cache.plan.recompute_modules = modules("layernorm").bits;
  CHECK(workload::training_memory_of(no_cache).total > ds_mem.total);
}

TEST_CASE("an out-of-memory plan is told the cheapest option that makes it fit, and what it costs") {
  const std::string oss = R"({"model": "gpt-oss-120b", "cluster": "hgx-h100", "nodes": 8, "fabric": "ib-ndr-rail",
      "parallel": {"tp": 1, "pp": 4, "ep": 8, "zero": 1},
      "training": {"seq": 4096, "global_batch": 512, "micro_batch": 2}})";
  const auto s = test::scenario_from_json(R"({"allow_oom": true, )" + oss.substr(1));
  const auto options = study::memory_options(s);
  REQUIRE_FALSE(options.empty());
  for (std::size_t i = 1; i < options.size(); ++i)
    CHECK(std::max(0.0, options[i - 1].extra_compute_s) <= std::max(0.0, options[i].extra_compute_s));
  const auto* best = study::cheapest_fitting(options);
  REQUIRE(best != nullptr);
  CHECK(best->memory.fits());
  for (const auto& o : options) {
    if (&o == best) break;
    CHECK_FALSE(o.memory.fits());  // nothing cheaper fits
  }
  // train refuses it (exit 4) and names that option first, the largest parts of memory first.
  const auto r = test::run_cli(
      "train --model gpt-oss-120b --cluster hgx-h100 --nodes 8 --fabric ib-ndr-rail --tp 1 --pp 4 --ep 8 --zero 1 "
      "--seq 4096 --global-batch 512 --micro-batch 2");
  CHECK(r.exit_code == 4);
  CHECK(r.err.find("try " + best->flags) != std::string::npos);
  CHECK(r.err.find("(activations ") != std::string::npos);  // 36.9 GiB, the largest part
  CHECK(r.err.find("(activations ") < r.err.find("optimizer "));
}
