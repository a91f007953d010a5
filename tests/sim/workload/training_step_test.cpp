#include <doctest/doctest.h>

#include "calibration/profile/kernel_tables.hpp"
#include "sim/core/errors.hpp"
#include "sim/report/train_results.hpp"
#include "sim/report/writers.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/training_step.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

namespace {

std::string scenario_json(const std::string& model, const std::string& cluster, int tp, int gpus, int seq, int gb,
                          const std::string& extra = "") {
  return R"({"model": ")" + model + R"(", "cluster": ")" + cluster + R"(", "gpus": )" + std::to_string(gpus) +
         R"(, "parallel": {"tp": )" + std::to_string(tp) + R"(}, "training": {"seq": )" + std::to_string(seq) +
         R"(, "global_batch": )" + std::to_string(gb) + R"(, "micro_batch": 1})" + extra + "}";
}

report::TrainResults eval(const scenario::Scenario& s) {
  return report::train_results(s, study::run_training(s, study::RunOptions{}));
}

}  // namespace

TEST_CASE("on one GPU a step is exactly the sum of its kernels: no communication, no idle time") {
  const auto s = test::scenario_from_json(scenario_json("llama3.1-8b", "hgx-h100", 1, 1, 2048, 4));
  const workload::ComputeModel compute(s.profile, s.dtype);
  const auto step = workload::build_training_step(s, compute);
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < step.graph.task_count(); ++i) {
    const auto t = step.graph.task(static_cast<workload::TaskId>(i));
    CHECK_FALSE(t.collective);
    sum += t.duration.ps;
  }
  const auto r = eval(s);
  CHECK(r.step_time_s == doctest::Approx(static_cast<double>(sum) * 1e-12).epsilon(1e-12));
  CHECK(r.breakdown.exposed_comm == 0.0);
  CHECK(r.breakdown.idle == doctest::Approx(0.0).epsilon(1e-9));
  CHECK(r.speedup == doctest::Approx(1.0));
}

TEST_CASE("the time breakdown adds up to the step time, and MFU is model TFLOP/s over the dtype's peak") {
  for (const char* cluster : {"hgx-h100", "pcie-h100x8"}) {
    const auto s = test::scenario_from_json(scenario_json("llama3.1-8b", cluster, 4, 8, 4096, 8));
    const auto r = eval(s);
    CHECK(r.breakdown.compute + r.breakdown.exposed_comm + r.breakdown.idle ==
          doctest::Approx(r.step_time_s).epsilon(1e-9));
    CHECK(r.mfu == doctest::Approx(r.tflops_per_gpu * 1e12 / s.profile.peak(s.dtype).value).epsilon(1e-12));
    CHECK(r.tokens_per_s == doctest::Approx(8.0 * 4096 / r.step_time_s));
  }
}

TEST_CASE("Llama-3.1-8B TP8 is much faster on NVSwitch than on a PCIe server, and communication is why") {
  const auto nv = eval(test::scenario_from_json(scenario_json("llama3.1-8b", "hgx-h100", 8, 8, 8192, 8)));
  const auto pcie = eval(test::scenario_from_json(scenario_json("llama3.1-8b", "pcie-h100x8", 8, 8, 8192, 8)));
  CHECK(pcie.step_time_s > 2.0 * nv.step_time_s);
  CHECK(pcie.breakdown.exposed_comm / pcie.step_time_s > 0.5);
  CHECK(nv.breakdown.exposed_comm / nv.step_time_s < 0.35);
  CHECK(nv.scaling_efficiency > pcie.scaling_efficiency);
}

TEST_CASE("flow and analytical network models give the same step when no link is shared (TP8 on NVSwitch)") {
  const auto flow = eval(test::scenario_from_json(scenario_json("llama3.1-8b", "hgx-h100", 8, 8, 2048, 4)));
  const auto ana = eval(test::scenario_from_json(
      scenario_json("llama3.1-8b", "hgx-h100", 8, 8, 2048, 4, R"(, "network_model": "analytical")")));
  CHECK(flow.step_time_s == doctest::Approx(ana.step_time_s).epsilon(1e-12));
}

TEST_CASE("data-parallel gradient buckets overlap backward: exposed communication is less than all communication") {
  const auto r = eval(test::scenario_from_json(scenario_json("qwen2.5-7b", "hgx-h100", 1, 8, 4096, 16)));
  REQUIRE(r.breakdown.comm_total > 0);
  CHECK(r.breakdown.exposed_comm < 0.5 * r.breakdown.comm_total);
  CHECK(r.scaling_efficiency > 0.8);
  CHECK(r.scaling_efficiency <= 1.0 + 1e-9);
}

TEST_CASE("more link bandwidth never makes a training step slower") {
  double prev = 1e30;
  for (const char* bw : {"20 GB/s", "60 GB/s", "200 GB/s", "450 GB/s"}) {
    auto s = test::scenario_from_json(scenario_json("llama3.1-8b", "hgx-h100", 8, 8, 2048, 4));
    s.cluster = test::make_star(8, bw, 0.5e-6);
    const auto r = eval(s);
    CHECK(r.step_time_s < prev);
    prev = r.step_time_s;
  }
}

TEST_CASE("the same input gives byte-identical JSON apart from run_info") {
  const auto s =
      test::scenario_from_json(scenario_json("qwen2.5-14b", "pcie-h100x8", 4, 8, 4096, 8, R"(, "allow_oom": true)"));
  const auto a = report::to_json(eval(s), false).dump();
  const auto b = report::to_json(eval(s), false).dump();
  CHECK(a == b);
}

TEST_CASE("pipeline parallelism: the bubble emerges from the schedule and shrinks with more micro-batches") {
  auto run = [](int gb, const char* sched) {
    return eval(test::scenario_from_json(
        std::string(R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 2, "pp": 4, "schedule": ")") +
        sched + R"("}, "training": {"seq": 2048, "global_batch": )" + std::to_string(gb) + R"(}, "allow_oom": true})"));
  };
  const auto few = run(4, "1f1b");
  const auto many = run(32, "1f1b");
  CHECK(few.breakdown.pipeline_bubble / few.step_time_s > many.breakdown.pipeline_bubble / many.step_time_s);
  // GPipe and 1F1B have the same bubble; 1F1B holds fewer micro-batches' activations.
  const auto gpipe = run(32, "gpipe");
  CHECK(gpipe.step_time_s == doctest::Approx(many.step_time_s).epsilon(0.02));
  CHECK(gpipe.memory.activations > 4 * many.memory.activations);
  CHECK(many.stage_layers == std::vector<int>{8, 8, 8, 8});
  // The bubble is at least the textbook (P-1)/(M+P-1) share of an ideal, balanced pipeline... or more
  // (the embedding and LM head unbalance the first and last stages).
  CHECK(many.breakdown.pipeline_bubble / many.step_time_s >= 3.0 / 35.0 * 0.9);
}

TEST_CASE("full recompute costs a forward pass of time, counts in HFU but not MFU, and saves activation memory") {
  const std::string base =
      R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 8}, "training": {"seq": 4096, "global_batch": 8)";
  const auto none = eval(test::scenario_from_json(base + "}}"));
  const auto full = eval(test::scenario_from_json(base + R"(, "recompute": "full"}})"));
  const auto sel = eval(test::scenario_from_json(base + R"(, "recompute": "selective"}})"));
  CHECK(full.step_time_s > 1.2 * none.step_time_s);
  // Without recompute the hardware still runs flash attention's backward re-computing its scores:
  // half an attention forward a layer, a few percent at 4K tokens.
  CHECK(none.hfu > none.mfu);
  CHECK(none.hfu < 1.05 * none.mfu);
  CHECK(full.hfu > 1.25 * full.mfu);
  CHECK(full.memory.activations < 0.5 * none.memory.activations);
  CHECK(sel.memory.activations < none.memory.activations);
  CHECK(sel.step_time_s > none.step_time_s);
  CHECK(sel.step_time_s < full.step_time_s);
}

TEST_CASE("model FLOPs by hand: Llama 3 8B at 8,192 tokens counts NeMo's 51.47 GFLOP a token, attention backward 2x") {
  // 6 x (decoder linear weights + LM head) a token, plus causal attention 6 x layers x hidden x seq
  // (forward QK^T and PV at 2 x hidden x seq, backward 2x that; flash attention's re-computed scores
  // are hardware FLOPs, not model FLOPs). Per layer: QKV 4096 x (4096 + 2 x 1024), output 4096^2,
  // gate and up 4096 x 2 x 14336, down 14336 x 4096; 32 layers; LM head 4096 x 128256.
  const double layer = 4096.0 * 6144 + 4096.0 * 4096 + 4096.0 * 28672 + 14336.0 * 4096;
  const double per_token = 6 * (32 * layer + 4096.0 * 128256) + 6 * 32 * 4096.0 * 8192;
  CHECK(per_token == doctest::Approx(51.4704e9).epsilon(1e-5));
  const auto r = eval(test::scenario_from_json(
      R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 8}, "training": {"seq": 8192, "global_batch": 2}})"));
  const double tokens = 2.0 * 8192;
  CHECK(r.tflops_per_gpu * 1e12 * r.step_time_s * 8 / tokens == doctest::Approx(per_token).epsilon(1e-9));
  // The hardware runs half an attention forward more in each layer's backward.
  const double hardware = per_token + 32 * 2 * 4096.0 * 8192 / 2;
  CHECK(r.hw_tflops_per_gpu * 1e12 * r.step_time_s * 8 / tokens == doctest::Approx(hardware).epsilon(1e-9));
}

TEST_CASE(
    "unfused attention (pre-FlashAttention Megatron) is slower, holds the score matrices, and selective recompute "
    "re-runs it") {
  const std::string base =
      R"({"model": "megatron-gpt-1.7b", "cluster": "dgx-a100", "gpus": 1, "parallel": {"tp": 1}, "training": {"seq": 2048, "global_batch": 4)";
  const auto flash = eval(test::scenario_from_json(base + "}, \"allow_oom\": true}"));
  const auto unfused = eval(test::scenario_from_json(base + R"(, "attention": "unfused"}, "allow_oom": true})"));
  const auto sel = eval(
      test::scenario_from_json(base + R"(, "attention": "unfused", "recompute": "selective"}, "allow_oom": true})"));
  CHECK(unfused.step_time_s > 1.15 * flash.step_time_s);
  CHECK(unfused.hfu == doctest::Approx(unfused.mfu));  // the unfused backward re-computes nothing
  CHECK(unfused.memory.activations > 1.5 * flash.memory.activations);
  // Selective recompute drops exactly the score matrices and pays their forward again.
  CHECK(sel.memory.activations < 0.6 * unfused.memory.activations);
  CHECK(sel.step_time_s > unfused.step_time_s);
}

TEST_CASE(
    "DP symmetry: one simulated replica gives the full run's step where replicas share no links, and is reported") {
  auto run = [](const std::string& fabric, const std::string& symmetry) {
    return eval(test::scenario_from_json(
        R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "nodes": 8, "fabric": ")" + fabric + R"(", "symmetry": ")" +
        symmetry +
        R"(", "parallel": {"tp": 4, "pp": 2}, "training": {"seq": 4096, "global_batch": 64}, "allow_oom": true})"));
  };
  // One NIC per GPU (rail): replicas meet only inside their DP collectives, which keep every flow.
  const auto full = run("ib-ndr-rail", "none");
  const auto sym = run("ib-ndr-rail", "dp");
  CHECK(sym.dp_symmetry);
  CHECK_FALSE(full.dp_symmetry);
  CHECK(sym.step_time_s == full.step_time_s);
  CHECK(sym.breakdown.compute == doctest::Approx(full.breakdown.compute));
  CHECK(sym.events * 5 < full.events);
  // Shared 100 GbE NICs: other replicas' pipeline transfers contend with this one's, which the
  // symmetric run leaves out: close, not equal.
  const auto eth_full = run("eth-100g", "none");
  const auto eth_sym = run("eth-100g", "dp");
  CHECK(eth_sym.step_time_s != eth_full.step_time_s);
  CHECK(eth_sym.step_time_s == doctest::Approx(eth_full.step_time_s).epsilon(0.02));
}

TEST_CASE(
    "multi-node: DP across nodes is slower on one 100 GbE NIC than on eight NDR NICs, TP across nodes is slower "
    "still") {
  const std::string base =
      R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "nodes": 2, "training": {"seq": 2048, "global_batch": 16}, )";
  const auto ndr = eval(test::scenario_from_json(base + R"("fabric": "ib-ndr-rail", "parallel": {"tp": 8}})"));
  const auto eth = eval(test::scenario_from_json(base + R"("fabric": "eth-100g", "parallel": {"tp": 8}})"));
  CHECK(eth.step_time_s > ndr.step_time_s);
  CHECK(ndr.gpus == 16);
  CHECK(ndr.plan.dp == 2);
  // TP 16 spans both nodes: every tensor-parallel all-reduce crosses the NICs.
  const auto tp16 = eval(test::scenario_from_json(base + R"("fabric": "ib-ndr-rail", "parallel": {"tp": 16}})"));
  CHECK(tp16.step_time_s > 1.5 * ndr.step_time_s);
}

TEST_CASE("LoRA drops the base weight gradients: fewer FLOPs, DP reduces only the adapters") {
  const std::string base =
      R"({"model": "qwen2.5-7b", "cluster": "hgx-h100", "parallel": {"tp": 1}, "training": {"seq": 2048, "global_batch": 16)";
  const auto full = eval(test::scenario_from_json(base + "}, \"allow_oom\": true}"));
  const auto lora = eval(test::scenario_from_json(base + R"(, "lora_rank": 16}})"));
  CHECK(lora.tflops_per_gpu * lora.step_time_s < 0.8 * full.tflops_per_gpu * full.step_time_s);
  double full_dp = 0, lora_dp = 0;
  for (const auto& c : full.collectives)
    full_dp += c.label.rfind("dp.", 0) == 0 ? c.bytes_per_call * static_cast<double>(c.calls_per_gpu) : 0;
  for (const auto& c : lora.collectives)
    lora_dp += c.label.rfind("dp.", 0) == 0 ? c.bytes_per_call * static_cast<double>(c.calls_per_gpu) : 0;
  CHECK(lora_dp < full_dp / 50);
  CHECK(lora.fits);
}

TEST_CASE(
    "FP8 training: linear GEMMs at the FP8 peak make the step faster, TE's weight cache costs memory, its FP8 "
    "saved inputs save some") {
  const std::string base =
      R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "gpus": 1, "parallel": {"tp": 1}, "allow_oom": true, "training": {"seq": 4096, "global_batch": 2, "dtype": ")";
  const auto bf16 = eval(test::scenario_from_json(base + R"(bf16"}})"));
  const auto fp8 = eval(test::scenario_from_json(base + R"(fp8"}})"));
  // Whole-width GEMMs (TP 1: 4096 rows by 4096-14336): the measured FP8 rows (h100_sxm gemm_perf,
  // quantisation of the input taken out: TE casts it in a kernel of its own) are 1.5-1.7x the bf16
  // ones, less the casts around them.
  CHECK(fp8.step_time_s < 0.9 * bf16.step_time_s);
  // The FP8 cast of every decoder linear weight and its transpose: 2 B per element, 32 layers.
  models::StepShape shape;
  shape.tp = 1;
  const auto m = test::shipped_model("llama3.1-8b");
  CHECK(fp8.memory.weights ==
        doctest::Approx(bf16.memory.weights + 2.0 * 32 * models::linear_weight_elements(m, shape)));
  CHECK(fp8.memory.activations < bf16.memory.activations);
}

TEST_CASE("interleaved 1F1B (VPP) shrinks the pipeline bubble and keeps more activations") {
  auto run = [](int vpp) {
    return eval(test::scenario_from_json(
        R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 2, "pp": 4, "vpp": )" +
        std::to_string(vpp) + R"(}, "training": {"seq": 2048, "global_batch": 16}, "allow_oom": true})"));
  };
  const auto plain = run(1);
  const auto inter = run(2);
  CHECK(inter.breakdown.pipeline_bubble < 0.85 * plain.breakdown.pipeline_bubble);
  CHECK(inter.step_time_s < plain.step_time_s);
  CHECK(inter.memory.activations > plain.memory.activations);
  CHECK(inter.stage_layers == plain.stage_layers);
  CHECK_THROWS_AS((void)test::scenario_from_json(
                      R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 2, "pp": 4, "vpp": 2},
    "training": {"seq": 2048, "global_batch": 6}})"),
                  InfeasibleError);
}

TEST_CASE("context parallelism splits long sequences: activations shrink by CP, K/V move over the CP group") {
  auto run = [](int cp) {
    return eval(test::scenario_from_json(
        R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 2, "cp": )" + std::to_string(cp) +
        R"(}, "training": {"seq": 32768, "global_batch": 4}, "allow_oom": true})"));
  };
  const auto one = run(1);
  const auto two = run(2);
  CHECK(two.plan.dp * 2 == one.plan.dp);
  CHECK(two.memory.activations == doctest::Approx(one.memory.activations / 2).epsilon(0.01));
  // Ring attention (the default): per layer and micro-batch, CP - 1 K/V shifts forward, CP - 1
  // K/V + dK/dV shifts and one dK/dV return backward.
  const double layers = 32, micro = static_cast<double>(two.micro_batches);
  bool shifts = false;
  for (const auto& c : two.collectives) {
    if (c.label != "cp.kv_shift") continue;
    shifts = true;
    CHECK(static_cast<double>(c.calls_per_gpu) == doctest::Approx(layers * micro * 3));
  }
  CHECK(shifts);
  // The same work per step (model FLOPs) whatever the split.
  CHECK(two.tflops_per_gpu * two.step_time_s == doctest::Approx(one.tflops_per_gpu * one.step_time_s).epsilon(1e-9));
}

TEST_CASE(
    "ring attention overlaps the K/V passing with attention: faster than gathering K/V first, CP across two nodes") {
  auto run = [](const std::string& comm) {
    return eval(
        test::scenario_from_json(R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "nodes": 2, "fabric": "ib-ndr-rail",
      "parallel": {"tp": 8, "cp": 2, "cp_comm": ")" +
                                 comm + R"("}, "training": {"seq": 65536, "global_batch": 2}, "allow_oom": true})"));
  };
  const auto ring = run("ring");
  const auto gather = run("allgather");
  double ring_comm = 0, gather_comm = 0;
  for (const auto& c : ring.collectives) ring_comm += c.label.starts_with("cp.") ? c.seconds_per_gpu : 0.0;
  for (const auto& c : gather.collectives) gather_comm += c.label.starts_with("cp.") ? c.seconds_per_gpu : 0.0;
  CHECK(ring_comm > gather_comm);                // ring moves K/V and dK/dV block by block: more bytes in all...
  CHECK(ring.step_time_s < gather.step_time_s);  // ...but behind the attention of the block in hand
  CHECK(ring.memory.activations == doctest::Approx(gather.memory.activations));
}

TEST_CASE("the rank order places TP groups: TP innermost keeps them inside a node, DP innermost spreads them") {
  const std::string base = R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "nodes": 2, "fabric": "ib-ndr-rail",
    "training": {"seq": 2048, "global_batch": 16}, "parallel": {"tp": 8, "rank_order": ")";
  const auto inner = eval(test::scenario_from_json(base + R"(tp-cp-dp-pp"}})"));
  const auto spread = eval(test::scenario_from_json(base + R"(dp-tp-cp-pp"}})"));
  double tp_inner = 0, tp_spread = 0;
  for (const auto& c : inner.collectives) tp_inner += c.label == "tp.allreduce" ? c.seconds_per_gpu : 0;
  for (const auto& c : spread.collectives) tp_spread += c.label == "tp.allreduce" ? c.seconds_per_gpu : 0;
  // Inside the node the all-reduces take the H100's measured NCCL times (16 MiB: 240 GB/s bus
  // bandwidth, calibration/kernels/h100_sxm/nccl_perf); across nodes the flow model (one node's NCCL
  // table says nothing about two): the spread ring is still the slower one.
  CHECK(tp_spread > 1.1 * tp_inner);
  CHECK(spread.plan.order == std::array<char, 4>{'d', 't', 'c', 'p'});
}

TEST_CASE(
    "an even one-node EP all-to-all takes the NCCL table's all-to-all time (Megatron's dispatcher calls NCCL); a "
    "skewed one, or DeepEP's under two-batch overlap, keeps the flow model") {
  const std::string base =
      R"({"model": "qwen3-30b-a3b", "cluster": "hgx-h100", "parallel": {"tp": 1, "ep": 8, "zero": 1},
    "training": {"seq": 4096, "global_batch": 8}, "allow_oom": true, "moe": {"routing": ")";
  auto dispatch = [](const report::TrainResults& r) {
    for (const auto& c : r.collectives)
      if (c.label == "ep.dispatch") return c;
    FAIL("no ep.dispatch");
    return report::CollectiveSummary{};
  };
  const auto s = test::scenario_from_json(base + R"(balanced"}})");
  const auto even = dispatch(eval(s));
  CHECK(even.algorithm == "measured");
  // Alone on the node each call takes the table's time at its size (calibration/kernels/h100_sxm,
  // nccl-tests' alltoall_perf on 8 GPUs), interpolated between its measured sizes.
  const auto table = calib::table_nccl(s.profile.kernel_tables, "alltoall", 8, even.bytes_per_call);
  REQUIRE(table.has_value());
  CHECK(even.seconds_per_gpu / static_cast<double>(even.calls_per_gpu) ==
        doctest::Approx(table->seconds).epsilon(0.01));
  // A skewed exchange carries a traffic matrix that nccl-tests' uniform all-to-all did not measure.
  const auto skewed = dispatch(eval(test::scenario_from_json(base + R"(zipf:1.0"}})")));
  CHECK(skewed.algorithm == "direct");
  // Under two-batch overlap the exchange is DeepEP's kernels, not NCCL's.
  const auto tbo = dispatch(eval(test::scenario_from_json(base + R"(balanced", "two_batch_overlap": true}})")));
  CHECK(tbo.algorithm == "direct");
}

namespace {

/// One step's graph run by the parallel engine and by one partition (the serial engine).
struct EngineRuns {
  workload::RunLog parallel, serial;
  /// Task starts and collective ends that differ between the two (a kernel ends its duration after
  /// its start).
  [[nodiscard]] std::size_t differing_spans() const {
    std::size_t n = 0;
    for (std::size_t t = 0; t < serial.starts.size(); ++t) n += parallel.starts[t] != serial.starts[t] ? 1 : 0;
    for (std::size_t c = 0; c < serial.collective_ends.size(); ++c)
      n += parallel.collective_ends[c] != serial.collective_ends[c] ? 1 : 0;
    return n;
  }
};

EngineRuns run_engines(const scenario::Scenario& s) {
  const workload::ComputeModel compute(s.profile, s.dtype);
  const auto topo = study::training_topology(s);
  const auto step = workload::build_training_step(s, compute);
  workload::ExecutorOptions o;
  o.collective_latency_s = s.profile.collective_latency.value;
  EngineRuns r;
  r.parallel = workload::simulate(step.graph, topo, o);
  o.partition = false;
  r.serial = workload::simulate(step.graph, topo, o);
  return r;
}

}  // namespace

TEST_CASE(
    "the parallel engine: a multi-node step splits into node and fabric partitions and every task's times equal the "
    "serial engine's") {
  const auto s =
      test::scenario_from_json(R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "nodes": 8, "fabric": "ib-ndr-rail",
    "parallel": {"tp": 8, "pp": 2, "zero": 1}, "training": {"seq": 4096, "global_batch": 32}, "allow_oom": true})");
  const auto r = run_engines(s);
  CHECK(r.parallel.partitions == 9);  // eight nodes and the fabric
  CHECK(r.serial.partitions == 1);
  CHECK(r.parallel.windows > 0);
  // The lookahead is the smallest fabric latency: the call latency plus NIC and switch hops.
  CHECK(r.parallel.lookahead_s > s.profile.collective_latency.value);
  CHECK(r.parallel.makespan == r.serial.makespan);
  CHECK(r.differing_spans() == 0);
  CHECK(r.parallel.flows == r.serial.flows);
}

TEST_CASE("the parallel engine falls back to one partition where a fabric collective would use a node's own links") {
  // TP1 DP16 over two nodes: the data-parallel all-reduce is hierarchical, with rings inside each node.
  const auto s = test::scenario_from_json(
      R"({"model": "megatron-gpt-1.7b", "cluster": "dgx-a100", "nodes": 2, "fabric": "ib-hdr-fattree",
    "parallel": {"tp": 1}, "training": {"seq": 2048, "global_batch": 16}, "allow_oom": true})");
  CHECK(run_engines(s).parallel.partitions == 1);
}

TEST_CASE(
    "the parallel engine equals the serial engine across plans: PP, interleaving, ZeRO-3, CP and TP across nodes, "
    "shared NICs, DP symmetry") {
  const std::string base = R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "nodes": 4, "allow_oom": true, )";
  const std::vector<std::string> plans = {
      R"("fabric": "ib-ndr-rail", "parallel": {"tp": 8, "pp": 2, "vpp": 2}, "training": {"seq": 2048, "global_batch": 16}})",
      R"("fabric": "ib-hdr-fattree", "parallel": {"tp": 8, "zero": 3}, "training": {"seq": 2048, "global_batch": 8}})",
      R"("fabric": "ib-ndr-rail", "parallel": {"tp": 8, "cp": 2}, "training": {"seq": 16384, "global_batch": 4}})",
      R"("fabric": "ib-ndr-rail", "parallel": {"tp": 8, "rank_order": "dp-tp-cp-pp"}, "training": {"seq": 2048, "global_batch": 8}})",
      R"("fabric": "eth-100g", "parallel": {"tp": 8, "pp": 2}, "training": {"seq": 2048, "global_batch": 16}})",
      R"("fabric": "roce-400g-pods", "symmetry": "dp", "parallel": {"tp": 8, "pp": 2}, "training": {"seq": 2048, "global_batch": 16}})",
  };
  int partitioned = 0;
  for (const auto& p : plans) {
    CAPTURE(p);
    const auto r = run_engines(test::scenario_from_json(base + p));
    partitioned += r.parallel.partitions > 1 ? 1 : 0;
    CHECK(r.parallel.makespan == r.serial.makespan);
    CHECK(r.differing_spans() == 0);
  }
  CHECK(partitioned == 5);  // all but TP spread over nodes, whose rings use the nodes' own links
}

TEST_CASE(
    "ZeRO-1 across two nodes: its reduce-scatter and all-gather use every NIC, so DP scales and ZeRO-1 costs "
    "no more than its exposed all-gather") {
  auto run = [](int nodes, int zero) {
    return eval(test::scenario_from_json(
        R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "nodes": )" + std::to_string(nodes) +
        (nodes > 1 ? R"(, "fabric": "ib-ndr-rail")" : "") + R"(, "parallel": {"tp": 1, "zero": )" +
        std::to_string(zero) +
        R"(}, "training": {"seq": 2048, "global_batch": 256, "micro_batch": 2}, "allow_oom": true})"));
  };
  const auto one = run(1, 1);
  const auto z0 = run(2, 0);
  const auto z1 = run(2, 1);
  double gather = 0;
  for (const auto& c : z1.collectives) gather += c.label == "dp.param_allgather" ? c.seconds_per_gpu : 0.0;
  REQUIRE(gather > 0);
  CHECK(z1.step_time_s <= z0.step_time_s + gather);  // the gather runs on the compute stream: all of it exposed
  CHECK(one.step_time_s / z1.step_time_s >= 1.8);    // two-node DP scaling of the 8B case
}

TEST_CASE("under FP8 training a GEMM kept 16-bit (LM head, router) runs at the bf16 peak, a linear layer at FP8's") {
  const auto s = test::scenario_from_json(scenario_json("llama3.1-8b", "hgx-h100", 1, 1, 2048, 4));
  const workload::ComputeModel fp8(s.profile, calib::Dtype::kFp8);
  const workload::ComputeModel bf16(s.profile, calib::Dtype::kBf16);
  models::Op big{"x", models::OpKind::kGemm, 8192, 8192, 8192, 2.0 * 8192 * 8192 * 8192, 0};
  const double linear = fp8.seconds(big);
  big.keep_16bit = true;
  CHECK(fp8.seconds(big) == doctest::Approx(bf16.seconds(big)));
  // FP8's dense peak is twice bf16's on H100 (1979 against 989 TFLOP/s): the linear GEMM takes half.
  CHECK(linear == doctest::Approx(fp8.seconds(big) / 2).epsilon(0.01));
}
