// "Compute by kernel": each op's time counted under what it does (dense GEMM, routed experts'
// GEMMs, attention, elementwise, the host's launch wait, DeepEP's floor), summed as the step or
// the serving run sums it, shares in the results' `compute_by_kernel`.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "models/ops/layer_ops.hpp"
#include "sim/report/train_results.hpp"
#include "sim/report/writers.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/training_step.hpp"
#include "tests/support/builders.hpp"

using namespace cs;
using models::KernelClass;

namespace {

std::string training_json(const std::string& model, int gpus, const std::string& parallel, int seq,
                          const std::string& extra = "") {
  return R"({"model": ")" + model + R"(", "cluster": "hgx-h100", "gpus": )" + std::to_string(gpus) +
         R"(, "parallel": )" + parallel + R"(, "training": {"seq": )" + std::to_string(seq) +
         R"(, "global_batch": 8, "micro_batch": 1})" + extra + "}";
}

double sum(const workload::ClassSeconds& x) { return std::accumulate(x.begin(), x.end(), 0.0); }
double sum(const workload::SourceSeconds& x) { return std::accumulate(x.begin(), x.end(), 0.0); }

double share(const workload::ClassSeconds& x, KernelClass c) { return x[static_cast<std::size_t>(c)] / sum(x); }

}  // namespace

TEST_CASE("kernel classes: each layer op is counted as what it does") {
  const auto dense = test::shipped_model("llama3.1-8b");
  const auto moe = test::shipped_model("mixtral-8x7b");
  models::StepShape s;
  s.seq = 4096;
  int gemms = 0, attention = 0, elementwise = 0;
  for (const auto& it : models::layer_forward(dense, s)) {
    if (it.comm) continue;
    const auto c = models::kernel_class(it.op);
    CHECK(c != KernelClass::kExpertGemm);  // a dense model has no experts
    gemms += c == KernelClass::kGemm ? 1 : 0;
    attention += c == KernelClass::kAttention ? 1 : 0;
    elementwise += c == KernelClass::kElementwise ? 1 : 0;
    if (it.op.kind == models::OpKind::kGemm) CHECK(c == KernelClass::kGemm);
  }
  CHECK(gemms == 4);  // QKV, output projection, MLP up (gate and up fused), MLP down
  CHECK(attention == 1);
  CHECK(elementwise > 0);
  // The MoE layer's routed experts, forward and backward (dgrad and wgrad), are experts' GEMMs; its
  // router and attention projections are dense GEMMs.
  const models::LayerKind moe_kind{.ffn = models::FeedForwardKind::kMoe};
  int experts_fwd = 0, experts_bwd = 0, router = 0;
  for (const auto& it : models::layer_forward(moe, s, moe_kind)) {
    if (it.comm) continue;
    if (models::kernel_class(it.op) == KernelClass::kExpertGemm) ++experts_fwd;
    if (it.op.name == "router") {
      ++router;
      CHECK(models::kernel_class(it.op) == KernelClass::kGemm);
    }
  }
  for (const auto& it : models::layer_backward(moe, s, moe_kind)) {
    if (!it.comm && models::kernel_class(it.op) == KernelClass::kExpertGemm) ++experts_bwd;
  }
  CHECK(experts_fwd == 2);  // up (gate and up) and down
  CHECK(experts_bwd == 4);  // dgrad and wgrad of each
  CHECK(router == 1);
  // Unfused attention (SC'21 Megatron-LM): its score and context GEMMs and the softmax and dropout
  // passes over the scores are attention, not dense GEMMs or elementwise kernels.
  models::StepShape unfused = s;
  unfused.flash_attention = false;
  const auto gpt = test::shipped_model("megatron-gpt-1.7b");
  double core = 0;
  for (const bool backward : {false, true}) {
    for (const auto& it : backward ? models::layer_backward(gpt, unfused) : models::layer_forward(gpt, unfused)) {
      if (it.comm || !it.op.core_attention) continue;
      ++core;
      CHECK(models::kernel_class(it.op) == KernelClass::kAttention);
    }
  }
  CHECK(core >= 6);  // forward: two batched GEMMs, softmax, dropout; backward: more
  models::Op floor;
  floor.fixed_s = 1e-5;
  CHECK(models::kernel_class(floor) == KernelClass::kExchangeFloor);
  CHECK(std::string(models::kernel_class_name(KernelClass::kHostBound)) == "host_bound");
}

TEST_CASE("compute by kernel: the classes add up to the step's compute, and follow the model") {
  // One GPU: the step is its kernels; the classes hold the same seconds as the sources, and as
  // the tasks' durations.
  const auto s = test::scenario_from_json(training_json("llama3.1-8b", 1, R"({"tp": 1})", 2048));
  const workload::ComputeModel compute(s.profile, s.dtype);
  const auto step = workload::build_training_step(s, compute);
  CHECK(sum(step.compute_classes) == doctest::Approx(sum(step.compute_sources)).epsilon(1e-12));
  double tasks = 0;
  for (std::size_t i = 0; i < step.graph.task_count(); ++i)
    tasks += step.graph.task(static_cast<workload::TaskId>(i)).duration.seconds();
  CHECK(sum(step.compute_classes) == doctest::Approx(tasks).epsilon(1e-9));
  CHECK(share(step.compute_classes, KernelClass::kGemm) > 0.5);
  CHECK(share(step.compute_classes, KernelClass::kExpertGemm) == 0.0);
  // Attention's share grows with the sequence (quadratic work against linear GEMMs).
  const auto longer = test::scenario_from_json(training_json("llama3.1-8b", 1, R"({"tp": 1})", 8192));
  const workload::ComputeModel compute_longer(longer.profile, longer.dtype);
  const auto step_longer = workload::build_training_step(longer, compute_longer);
  CHECK(share(step_longer.compute_classes, KernelClass::kAttention) >
        share(step.compute_classes, KernelClass::kAttention));
  // A MoE model spends part of it in its experts.
  const auto m = test::scenario_from_json(training_json("mixtral-8x7b", 8, R"({"tp": 1, "ep": 8, "zero": 1})", 2048));
  const workload::ComputeModel compute_m(m.profile, m.dtype);
  CHECK(share(workload::build_training_step(m, compute_m).compute_classes, KernelClass::kExpertGemm) > 0.2);
}

TEST_CASE("compute by kernel: a step too small for the host to keep up shows the host-bound wait") {
  // A tiny model in short sequences: each kernel runs for less than the host's cost to issue it.
  const auto small = test::scenario_from_json(training_json("megatron-gpt-1.7b", 1, R"({"tp": 1})", 128));
  const workload::ComputeModel compute(small.profile, small.dtype);
  const auto step = workload::build_training_step(small, compute);
  CHECK(share(step.compute_classes, KernelClass::kHostBound) > 0.05);
  const auto big = test::scenario_from_json(training_json("llama3.1-8b", 1, R"({"tp": 1})", 8192));
  const workload::ComputeModel compute_big(big.profile, big.dtype);
  CHECK(share(workload::build_training_step(big, compute_big).compute_classes, KernelClass::kHostBound) < 0.01);
}

TEST_CASE("compute by kernel: the JSON names every class, the shares sum to 1, the text leaves out empty ones") {
  std::array<double, models::kKernelClasses> shares{0.6, 0.0, 0.3, 0.1, 0.0, 0.0};
  const auto j = report::compute_classes_json(shares);
  CHECK(j.size() == models::kKernelClasses);
  CHECK(j["gemm"] == 0.6);
  CHECK(j["deepep_floor"] == 0.0);
  CHECK(report::compute_classes_text(shares) == "GEMM 60%, attention 30%, elementwise 10%");
  const auto r =
      test::run_cli("train --model llama3.1-8b --cluster hgx-h100 --tp 8 --seq 4096 --global-batch 8 --json");
  REQUIRE(r.exit_code == 0);
  const auto k = nlohmann::json::parse(r.out)["compute_by_kernel"];
  double total = 0;
  for (const char* c : {"gemm", "expert_gemm", "attention", "elementwise", "host_bound", "deepep_floor"})
    total += k.at(c).get<double>();
  CHECK(total == doctest::Approx(1.0));
  const auto serve = test::run_cli(
      "infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 1000 --output-len 100 --rate 5 --requests 40 "
      "--json");
  REQUIRE(serve.exit_code == 0);
  const auto sk = nlohmann::json::parse(serve.out)["compute_by_kernel"];
  CHECK(sk["gemm"].get<double>() > 0.3);
  CHECK(sk["expert_gemm"].get<double>() == 0.0);
}
