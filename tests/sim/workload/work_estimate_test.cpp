// The work estimate that guards memory (issue 16) must track the graph it stands for.
#include <doctest/doctest.h>

#include "sim/workload/compute_model.hpp"
#include "sim/workload/training_step.hpp"
#include "sim/workload/work_estimate.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

TEST_CASE("the training work estimate is within 10% of the tasks the builder makes, over many plans") {
  const std::vector<std::string> plans{
      R"("gpus": 8, "parallel": {"tp": 8}, "training": {"seq": 2048, "global_batch": 8})",
      R"("gpus": 8, "parallel": {"tp": 2, "pp": 4}, "training": {"seq": 2048, "global_batch": 16})",
      R"("gpus": 8, "parallel": {"tp": 2, "pp": 2, "vpp": 2, "sp": true}, "training": {"seq": 2048, "global_batch": 16, "recompute": "full"})",
      R"("gpus": 8, "parallel": {"tp": 1, "zero": 3}, "training": {"seq": 1024, "global_batch": 16})",
      R"("gpus": 8, "parallel": {"tp": 4, "zero": 1}, "training": {"seq": 2048, "global_batch": 8, "recompute": "selective"})",
      R"("gpus": 8, "nodes": 4, "fabric": "ib-ndr-rail", "symmetry": "dp", "parallel": {"tp": 8}, "training": {"seq": 2048, "global_batch": 32})",
      R"("gpus": 8, "parallel": {"tp": 4, "pp": 2, "sp": true, "tp_comm_overlap": true}, "training": {"seq": 2048, "global_batch": 8, "recompute": "full"})",
  };
  for (const auto& plan : plans) {
    CAPTURE(plan);
    const auto s = test::scenario_from_json(R"({"model": "llama3.1-8b", "cluster": "hgx-h100", )" + plan + "}");
    const workload::ComputeModel compute(s.profile, s.dtype);
    const double built = static_cast<double>(workload::build_training_step(s, compute).graph.task_count());
    const auto w = workload::estimate_training_work(s, false);
    CHECK(w.step_tasks == doctest::Approx(built).epsilon(0.10));
    CHECK(w.baseline_tasks == 0);
  }
}

TEST_CASE("the one-GPU baseline's tasks are counted when it runs, from the whole global batch") {
  const auto s = test::scenario_from_json(
      R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 8}, "training": {"seq": 2048, "global_batch": 8}})");
  scenario::Scenario one = s;
  one.gpus = 1;
  one.gpus_per_node = 1;
  one.plan = plan::ParallelPlan{};
  const workload::ComputeModel compute(s.profile, s.dtype);
  const double built = static_cast<double>(workload::build_training_step(one, compute).graph.task_count());
  const auto w = workload::estimate_training_work(s, true);
  CHECK(w.baseline_tasks == doctest::Approx(built).epsilon(0.10));
  CHECK(w.total() > w.step_tasks + w.baseline_tasks);
}

TEST_CASE("the work estimate grows with micro-batches and layers, and does not overflow for absurd sizes") {
  auto s = test::scenario_from_json(
      R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 8}, "training": {"seq": 2048, "global_batch": 10000000}})");
  const auto w = workload::estimate_training_work(s, true);
  CHECK(w.total() > 1e10);
  s.model.layers = 100000;
  CHECK(workload::estimate_training_work(s, true).total() > 3000 * w.total());
}
