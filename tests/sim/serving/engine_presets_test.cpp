// Engine presets (issue 28, item 3): the three engines' data files as their sources give them (tier
// lookups, CUDA-graph sizes, SGLang's memory fraction checked against the worked examples of
// shared/reference/engines-2026.md), the KV memory rules, the two engine schedulers fed queues by
// hand, the graph choice of a step, and whole runs under each preset.
#include <doctest/doctest.h>

#include <deque>
#include <utility>
#include <vector>

#include "calibration/profile/kernel_tables.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/engine_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/serving/batch_scheduler.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/serving/step_program.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"
#include "tests/support/serving_queues.hpp"

using namespace cs;
using test::batch;
using test::queue;
using test::requests;
using Plan = std::vector<std::pair<int, std::int64_t>>;

namespace {

serving::EnginePreset preset(const std::string& id) {
  const auto cat = test::catalog();
  return config::parse_engine(config::load(cat.locate(config::CatalogKind::kEngine, id, "test", "/engine/preset")), id);
}

serving::ServingScenario served(
    const std::string& engine, const std::string& extra = "",
    const std::string& workload = R"({"input_len": 2000, "output_len": 2000, "rate": "inf", "requests": 600})") {
  const std::string text = R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1},
      "engine": {)" + (engine.empty() ? std::string() : "\"preset\": \"" + engine + "\"") +
                           extra + R"(}, "workload": )" + workload + "}";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

constexpr double kMiB = 1048576.0;

}  // namespace

TEST_CASE("engine presets: each engine's tier for an H100, an A100 and an H200, as the sources give them") {
  const auto vllm = preset("vllm"), sglang = preset("sglang"), trt = preset("trtllm");
  // vLLM serve: >= 70 GiB and not an A100: 8192 tokens and 1024 sequences; else 2048 and 256.
  CHECK(config::engine_tier(vllm, 79.6, "h100-sxm", 1).max_tokens == 8192);
  CHECK(config::engine_tier(vllm, 79.6, "h100-sxm", 1).max_batch == 1024);
  CHECK(config::engine_tier(vllm, 79.2, "a100-sxm-80", 1).max_tokens == 2048);
  CHECK(config::engine_tier(vllm, 44.4, "l40s", 1).max_batch == 256);
  // SGLang: chunk and largest graph batch by memory and TP.
  CHECK(config::engine_tier(sglang, 79.6, "h100-sxm", 1).chunked_prefill == 8192);
  CHECK(config::engine_tier(sglang, 79.6, "h100-sxm", 1).graph_largest == 256);
  CHECK(config::engine_tier(sglang, 79.6, "h100-sxm", 8).graph_largest == 512);
  CHECK(config::engine_tier(sglang, 178.0, "b200", 1).chunked_prefill == 16384);
  CHECK(config::engine_tier(sglang, 44.4, "l40s", 4).graph_largest == 160);
  CHECK(config::engine_tier(sglang, 10.0, "x", 1).graph_largest == 8);
  CHECK(sglang.max_batch_from_kv_pool);
  // TensorRT-LLM: one tier, chunking off.
  CHECK(config::engine_tier(trt, 79.6, "h100-sxm", 2).max_batch == 2048);
  CHECK(config::engine_tier(trt, 79.6, "h100-sxm", 2).chunked_prefill == 0);
  CHECK(trt.policy == serving::Scheduler::kNoEvict);
  CHECK(sglang.policy == serving::Scheduler::kPrefillFirst);
  CHECK_FALSE(vllm.admit_after_preempt);
  CHECK(vllm.block_size == 16);
  CHECK(sglang.block_size == 1);
  CHECK(trt.block_size == 32);
}

TEST_CASE("engine presets: captured CUDA-graph sizes count as the engines' generators do") {
  // vLLM: 1, 2, 4, 8-248 step 8, 256-512 step 16: 51 sizes up to 512 (the reference's count).
  const auto v = config::graph_sizes(preset("vllm"), 512, true);
  CHECK(v.size() == 51);
  CHECK(v.front() == 1);
  CHECK(v[2] == 4);
  CHECK(v.back() == 512);
  // SGLang: 36 sizes at 256, 52 at 512.
  CHECK(config::graph_sizes(preset("sglang"), 256, true).size() == 36);
  CHECK(config::graph_sizes(preset("sglang"), 512, true).size() == 52);
  // TensorRT-LLM (no padding): 1-31, 32, 64, 128.
  const auto t = config::graph_sizes(preset("trtllm"), 128, false);
  CHECK(t.size() == 34);
  CHECK(t.back() == 128);
  // Larger maxima (cuda_graph_max_batch): TensorRT-LLM adds powers of two from 256 below the max,
  // then the max itself (8192: 256-4096 and 8192; 1000: 256, 512 and 1000); with padding its list is
  // 1, 2, 4, 8-128 step 8 before them. vLLM and SGLang go on in their last steps.
  const auto t8k = config::graph_sizes(preset("trtllm"), 8192, false);
  CHECK(t8k.size() == 34 + 6);
  CHECK(std::vector<std::int64_t>(t8k.end() - 6, t8k.end()) ==
        std::vector<std::int64_t>{256, 512, 1024, 2048, 4096, 8192});
  CHECK(config::graph_sizes(preset("trtllm"), 1000, false).back() == 1000);
  CHECK(config::graph_sizes(preset("trtllm"), 1000, false).size() == 34 + 3);
  const auto padded = config::graph_sizes(preset("trtllm"), 128, true);
  CHECK(padded ==
        std::vector<std::int64_t>{1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128});
  CHECK(config::graph_sizes(preset("vllm"), 1024, true).back() == 1024);
  CHECK(config::graph_sizes(preset("vllm"), 1024, true).size() == 51 + 32);
  CHECK(config::graph_sizes(preset("sglang"), 1024, true).back() == 1024);
}

TEST_CASE("engine presets: cuda_graph_max_batch and cuda_graph_padding override the preset's graphs") {
  const auto dflt = served("trtllm");
  CHECK(dflt.graphs.largest == 128);
  CHECK_FALSE(dflt.graphs.padding);
  const auto big = served("trtllm", R"(, "cuda_graph_max_batch": 8192, "cuda_graph_padding": true)");
  CHECK(big.graphs.largest == 8192);
  CHECK(big.graphs.padding);
  CHECK(big.graphs.sizes == config::graph_sizes(preset("trtllm"), 8192, true));
  // SGLang's memory reserve counts the largest graph batch (2 MiB each): a larger one leaves less KV.
  const auto g = served("sglang"), g1k = served("sglang", R"(, "cuda_graph_max_batch": 1024)");
  CHECK(g1k.kv_fraction < g.kv_fraction);
  // The sizes come from an engine's generator: without a preset the fields are refused.
  CHECK_THROWS_WITH_AS(served("", R"("cuda_graph_max_batch": 512)"), doctest::Contains("/engine/cuda_graph_max_batch"),
                       InputError);
  CHECK_THROWS_WITH_AS(served("", R"("cuda_graph_padding": true)"), doctest::Contains("needs engine.preset"),
                       InputError);
  // A run with every decode batch under a captured size runs its decode steps as graphs.
  const auto eager = test::serve(served("trtllm"));
  const auto graphed = test::serve(served("trtllm", R"(, "cuda_graph_max_batch": 4096, "cuda_graph_padding": true)"));
  CHECK(graphed.graphed_steps > eager.graphed_steps);
}

TEST_CASE("engine presets: SGLang's static memory fraction matches the reference's worked examples") {
  // shared/reference/engines-2026.md: capacities of 81,559 MiB (H100) and 143,771 MiB (H200):
  // H100 TP1 0.835, TP8 0.818; H200 TP1 0.907, TP8 0.897 (chunk 8192, graph batch 256 or 512).
  const auto rule = preset("sglang").reserved;
  CHECK(config::static_memory_fraction(rule, 81559 * kMiB, 8192, 256, 1) == doctest::Approx(0.835));
  CHECK(config::static_memory_fraction(rule, 81559 * kMiB, 8192, 512, 8) == doctest::Approx(0.818));
  CHECK(config::static_memory_fraction(rule, 143771 * kMiB, 8192, 256, 1) == doctest::Approx(0.907));
  CHECK(config::static_memory_fraction(rule, 143771 * kMiB, 8192, 512, 8) == doctest::Approx(0.897));
}

TEST_CASE("engine presets: the KV memory rules size the cache as each engine does") {
  const auto none = served(""), vllm = served("vllm"), sglang = served("sglang"), trt = served("trtllm");
  std::int64_t blocks = 0;
  // TensorRT-LLM (and clustersim's default): the fraction of what weights, activations and runtime leave.
  const auto t = serving::serving_memory(trt, &blocks);
  CHECK(t.kv_cache == doctest::Approx(0.9 * (t.capacity - t.weights - t.activations - t.other)));
  // vLLM: the fraction of the whole GPU less those.
  const auto v = serving::serving_memory(vllm, &blocks);
  CHECK(v.kv_cache == doctest::Approx(0.9 * v.capacity - v.weights - v.activations - v.other));
  CHECK(v.kv_cache < t.kv_cache);
  // SGLang: the fraction of the memory free before weights, less the weights.
  const auto s = serving::serving_memory(sglang, &blocks);
  CHECK(s.kv_cache == doctest::Approx(sglang.kv_fraction * (s.capacity - s.other) - s.weights));
  CHECK(blocks == static_cast<std::int64_t>(s.kv_cache / 131072.0));  // 1-token pages of 128 KiB (bf16 8B)
  // Without a preset nothing changes: the default rule and limits.
  CHECK(none.engine.empty());
  CHECK(none.kv_rule == serving::KvMemoryRule::kOfFree);
  CHECK(none.max_batch == 256);
  CHECK(none.graphs.sizes.empty());
}

TEST_CASE("engine presets: a field the scenario gives overrides the preset's") {
  const auto s = served("trtllm", R"(, "max_batch": 64, "chunked_prefill": 512, "scheduler": "continuous")");
  CHECK(s.engine == "trtllm");
  CHECK(s.max_batch == 64);
  CHECK(s.chunked_prefill == 512);
  CHECK(s.scheduler == serving::Scheduler::kContinuous);
  CHECK(s.max_tokens == 8192);  // the preset's
  CHECK(s.block_size == 32);
  CHECK_THROWS_WITH_AS(served("tgi"), doctest::Contains("/engine/preset"), InputError);
}

TEST_CASE("engine presets: TensorRT-LLM's TP all-reduces take its own all-reduce's measured times") {
  CHECK(preset("trtllm").custom_allreduce);
  CHECK_FALSE(preset("vllm").custom_allreduce);  // their own kernels are not in the tables: NCCL's
  CHECK_FALSE(preset("sglang").custom_allreduce);
  CHECK(served("trtllm").custom_allreduce);
  CHECK_FALSE(served("trtllm", R"(, "custom_allreduce": false)").custom_allreduce);
  CHECK(served("vllm", R"(, "custom_allreduce": true)").custom_allreduce);
  CHECK_FALSE(served("").custom_allreduce);

  // One request of 16 + 64 tokens at TP 2: one prefill step (16 tokens) and 63 decode steps (one
  // token), each with two all-reduces of tokens x hidden x 2 bytes per layer. Under TensorRT-LLM
  // each takes the custom all-reduce table's time at its size (calibration/kernels/h100_sxm), and
  // the same run timed by NCCL's table is slower at these sizes.
  const auto run = [](const std::string& custom) {
    const std::string text = R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 2},
        "engine": {"preset": "trtllm", "custom_allreduce": )" +
                             custom +
                             R"(}, "workload": {"input_len": 16, "output_len": 64, "rate": "inf", "requests": 1}})";
    const auto s = config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
    const auto r = test::serve(s, false);
    double ar = 0;
    for (const auto& [label, seconds] : r.collectives_s) ar += label == "tp.allreduce" ? seconds : 0;
    return std::pair{s, ar};
  };
  const auto [s, custom] = run("true");
  const auto nccl = run("false").second;
  const auto& tables = s.profile.kernel_tables;
  const double hidden_bytes = static_cast<double>(s.model.hidden) * 2;
  const auto at = [&](double bytes) { return calib::table_custom_allreduce(tables, 2, bytes)->seconds; };
  const double per_step = 2.0 * static_cast<double>(s.model.layers);
  // A measured time is the whole call (the table's floor is its fixed cost: no call latency on top).
  const double expected = per_step * (at(16 * hidden_bytes) + 63 * at(hidden_bytes));
  CHECK(custom == doctest::Approx(expected).epsilon(1e-6));
  CHECK(nccl > 1.5 * custom);
}

TEST_CASE("engine presets: no-evict admits on blocks to completion, stops at the first that does not fit") {
  serving::NoEvictScheduler sched({2048, 8192, 0});
  serving::StepBuilder step(0, false);
  // 10 blocks of 16 tokens: 0 needs (40 + 40 + 1) -> 6 blocks, 1 needs (20 + 60 + 1) -> 6: stops there,
  // though 2 (8 + 8 + 1: 2 blocks) would fit behind it.
  auto reqs = requests({{40, 40}, {20, 60}, {8, 8}});
  auto q = queue(10, {0, 1, 2});
  sched.plan(q, reqs, step);
  CHECK(q.running == std::vector<int>{0});
  CHECK(q.waiting == std::deque<int>{1, 2});
  CHECK(reqs[0].blocks == 6);
  CHECK(batch(step) == Plan{{0, 40}});
  // Decoding never grows a sequence's blocks nor preempts: they were reserved.
  reqs[0].prefilled = 40;
  reqs[0].generated = 30;
  step.clear();
  sched.plan(q, reqs, step);
  CHECK(batch(step) == Plan{{0, 0}});
  CHECK(reqs[0].blocks == 6);
  CHECK(sched.preemptions() == 0);
}

TEST_CASE("engine presets: without chunking a prompt waits for a step whose budget holds it whole") {
  serving::NoEvictScheduler sched({2048, 100, 0});
  serving::StepBuilder step(0, false);
  auto reqs = requests({{60, 4}, {60, 4}});
  auto q = queue(100, {0, 1});
  sched.plan(q, reqs, step);
  CHECK(q.running == std::vector<int>{0, 1});  // both admitted
  CHECK(batch(step) == Plan{{0, 60}});         // 1 waits: 40 left
}

TEST_CASE("engine presets: prefill first: prompts run alone, then one decode step over every running request") {
  serving::NewTokenRatio ratio;  // 0.7 falling to 0.098 over 600 decode steps
  serving::PrefillFirstScheduler sched({4096, 16384, 64}, 16384, ratio);
  serving::StepBuilder step(0, false);
  auto reqs = requests({{100, 10}, {30, 10}, {20, 10}});
  auto q = queue(1000, {0, 1, 2});
  // A prefill step: 0 takes 64 tokens (the chunk size) and is now chunked: the step ends with it.
  sched.plan(q, reqs, step);
  CHECK(batch(step) == Plan{{0, 64}});
  reqs[0].prefilled = 64;
  // Next: 0's last 36 tokens first, then 1 whole (28 left of the chunk: 1 is chunked at 28).
  step.clear();
  sched.plan(q, reqs, step);
  CHECK(batch(step) == Plan{{0, 36}, {1, 28}});
  reqs[0].prefilled = 100;
  reqs[0].generated = 1;
  reqs[1].prefilled = 28;
  step.clear();
  sched.plan(q, reqs, step);
  // 1's last 2 tokens and 2 whole: still a prefill step, so 0 does not decode.
  CHECK(batch(step) == Plan{{1, 2}, {2, 20}});
  reqs[1].prefilled = 30;
  reqs[1].generated = 1;
  reqs[2].prefilled = 20;
  reqs[2].generated = 1;
  step.clear();
  sched.plan(q, reqs, step);
  CHECK(batch(step) == Plan{{0, 0}, {1, 0}, {2, 0}});
  CHECK(sched.ratio() == doctest::Approx(0.7 - (0.7 - 0.098) / 600));
}

TEST_CASE("engine presets: prefill first holds back a prompt whose reserved decode tokens do not fit") {
  serving::NewTokenRatio ratio;
  serving::PrefillFirstScheduler sched({4096, 16384, 0}, 16384, ratio);
  serving::StepBuilder step(0, false);
  // 12 blocks: 0 runs (16 + 1 tokens: 2 blocks, 159 more to generate: 0.7 x 159 = 112 tokens
  // reserved -> 7 blocks); 1 needs 1 block for its prompt and 0.7 x 160 = 112 -> 7 blocks: 2 + 1 + 7 + 7 > 12.
  auto reqs = requests({{16, 160}, {16, 160}});
  auto q = queue(12, {1});
  reqs[0].prefilled = 16;
  reqs[0].generated = 1;
  q.kv.admit(reqs[0], 2);
  q.running.push_back(0);
  sched.plan(q, reqs, step);
  CHECK(q.waiting == std::deque<int>{1});
  CHECK(batch(step) == Plan{{0, 0}});  // a decode step instead
}

TEST_CASE("engine presets: a step runs as a CUDA graph at a captured size, padded where the engine pads") {
  models::StepMix decode;
  for (int i = 0; i < 13; ++i) decode.add_decode_context(1000);
  decode.tokens = 13;
  decode.sampled = 13;
  // SGLang: decode batches padded to the next size (13 -> 16).
  {
    const auto s = served("sglang");
    const serving::StepProgramBuilder b(s);
    const auto g = b.graph_for(decode, 13);
    CHECK(g.graphed);
    CHECK(g.padding == 3);
  }
  // TensorRT-LLM: exact sizes only: 13 is one (1-31), 33 is not.
  {
    const auto s = served("trtllm");
    const serving::StepProgramBuilder b(s);
    CHECK(b.graph_for(decode, 13).graphed);
    CHECK(b.graph_for(decode, 13).padding == 0);
    models::StepMix big = decode;
    big.tokens = 33;
    CHECK_FALSE(b.graph_for(big, 33).graphed);
    // Any prompt in the step: eager.
    models::StepMix mixed = decode;
    mixed.add_prefill_context(0, 100);
    mixed.tokens += 100;
    CHECK_FALSE(b.graph_for(mixed, 14).graphed);
  }
  // vLLM: mixed steps too, by token count (113 -> 120).
  {
    const auto s = served("vllm");
    const serving::StepProgramBuilder b(s);
    models::StepMix mixed = decode;
    mixed.add_prefill_context(0, 100);
    mixed.tokens += 100;
    CHECK(b.graph_for(mixed, 14).graphed);
    CHECK(b.graph_for(mixed, 14).padding == 7);
  }
  // No preset: every step as cuda_graphs says, unpadded.
  {
    const auto s = served("");
    const serving::StepProgramBuilder b(s);
    CHECK(b.graph_for(decode, 13).graphed);
    CHECK(b.graph_for(decode, 13).padding == 0);
  }
}

TEST_CASE("engine presets: whole runs: no-evict never preempts where vLLM's recompute does") {
  // 600 requests of 2,000 + 2,000 tokens on one H100: the KV cache holds far fewer than the batch cap.
  const auto v = test::serve(served("vllm"));
  const auto t = test::serve(served("trtllm"));
  const auto g = test::serve(served("sglang"));
  CHECK(v.engine == "vllm");
  CHECK(v.preemptions > 0);
  CHECK(t.preemptions == 0);
  CHECK(t.scheduler == std::string("no_evict"));
  CHECK(g.scheduler == std::string("prefill_first"));
  for (const auto* r : {&v, &t, &g}) {
    CHECK(r->requests == 600);
    CHECK(r->output_tokens == 600 * 2000);
    CHECK(r->graphed_steps + r->eager_steps == r->steps);
  }
  // SGLang's sequence cap follows from its KV pool: at most half the pool's tokens, 2,048 to 4,096.
  CHECK(g.limits.max_batch >= 2048);
  CHECK(g.limits.max_batch <= 4096);
}

TEST_CASE("quantization.activation_scales: static FP8 scales speed the FP8 GEMMs only, and need fp8 weights") {
  const auto text = [](const std::string& quant) {
    return R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1},
        "engine": {"preset": "trtllm"}, "quantization": )" +
           quant + R"(, "workload": {"input_len": 128, "output_len": 256, "rate": "inf", "requests": 200}})";
  };
  const auto parse = [](const std::string& t) {
    return config::parse_serving(config::parse_text(t, "test.json"), test::catalog());
  };
  const auto dynamic = test::serve(parse(text(R"({"weights": "fp8"})")));
  const auto fixed = test::serve(parse(text(R"({"weights": "fp8", "activation_scales": "static"})")));
  CHECK(dynamic.activation_scales == "dynamic");
  CHECK(fixed.activation_scales == "static");
  CHECK(fixed.output_tokens_per_s > dynamic.output_tokens_per_s);
  CHECK(fixed.output_tokens_per_s < 1.1 * dynamic.output_tokens_per_s);  // one memory pass of a few per GEMM
  CHECK(test::serve(parse(text(R"({"weights": "bf16"})"))).activation_scales.empty());
  try {
    (void)parse(text(R"({"weights": "int4", "activation_scales": "static"})"));
    FAIL("static scales were accepted for int4 weights");
  } catch (const InputError& e) {
    CHECK(e.problems().front().pointer == "/quantization/activation_scales");
  }
}

TEST_CASE("resolve_serving: a read scenario given another shape resolves as the file with that shape") {
  // plan reads its job once and sets each candidate's shape on the read values: the preset's tiers
  // (SGLang's by TP) and the memory rule must follow the shape set, not the one read.
  const auto text = [](int tp, int max_batch) {
    return R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": )" +
           std::to_string(tp) + R"(}, "engine": {"preset": "sglang", "max_batch": )" + std::to_string(max_batch) +
           R"(}, "workload": {"input_len": 2000, "output_len": 200, "rate": 4, "requests": 50}})";
  };
  auto spec = config::read_serving(config::parse_text(text(1, 64), "test.json"));
  CHECK(spec.model == "llama3.1-8b");
  CHECK(spec.engine.has("max_batch"));
  CHECK_FALSE(spec.engine.has("chunked_prefill"));
  spec.values.tp = 8;
  spec.values.max_batch = 96;
  spec.values.requests = 80;
  const auto from_spec = config::resolve_serving(spec, test::catalog());
  auto file_text = text(8, 96);
  file_text.replace(file_text.find("\"requests\": 50"), 14, "\"requests\": 80");
  const auto from_file = config::parse_serving(config::parse_text(file_text, "test.json"), test::catalog());
  CHECK(from_spec.tp == 8);
  CHECK(from_spec.max_batch == 96);
  CHECK(from_spec.graphs.largest == from_file.graphs.largest);
  CHECK(from_spec.graphs.largest !=
        config::resolve_serving(config::read_serving(config::parse_text(text(1, 64), "t")), test::catalog())
            .graphs.largest);
  CHECK(from_spec.kv_fraction == doctest::Approx(from_file.kv_fraction));
  CHECK(from_spec.chunked_prefill == from_file.chunked_prefill);
  CHECK(test::serve(from_spec).output_tokens_per_s == test::serve(from_file).output_tokens_per_s);
  // Checks of the whole still run on a read scenario given a shape that cannot run, and a field
  // set beyond its range is refused as the file's reader refuses it.
  auto wide = spec;
  wide.values.replicas = 65;
  CHECK_THROWS_WITH_AS((void)config::resolve_serving(wide, test::catalog()),
                       doctest::Contains("/parallel/replicas: expected an integer from 1 to 64; got 65"), InputError);
  spec.values.tp = 3;
  CHECK_THROWS_AS((void)config::resolve_serving(spec, test::catalog()), InfeasibleError);
}
