// Published measurements (shared/validation, F- cases) through the validation harness, with the
// tolerance each case states; and docs/accuracy.md must be the harness's current output.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "tests/support/builders.hpp"

TEST_CASE("NCCL and P2P bandwidths: every scored F- case within its tolerance except the documented misses") {
  const auto r = cs::test::run_cli("validate-published scenarios/validation/f-collectives.json --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  // Documented in docs/accuracy.md: the H100 PCIe NVLink-bridge pair reads 2x the report (bridge
  // count unknown); copy-engine P2P tests run faster than NCCL's SM-driven transfers we model.
  const std::vector<std::string> known_misses{"F-nccl-h100pcie-2gpu-nvlink-bridge"};
  for (const auto& c : j["cases"]) {
    CAPTURE(c["id"].get<std::string>());
    if (std::find(known_misses.begin(), known_misses.end(), c["id"].get<std::string>()) != known_misses.end()) continue;
    CHECK(c["within_tolerance"].get<bool>());
  }
  // The acceptance figures: hgx-h100 within 15% of ~370 (ring) / ~480 (NVLS); dgx-a100 near 230.
  CHECK(j["median_abs_error"].get<double>() < 0.10);
}

TEST_CASE("pcie-h100x8 all-reduce is bounded by its PCIe links") {
  const auto r = cs::test::run_cli("collective --cluster pcie-h100x8 --op allreduce --max 1G --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& row : j["rows"]) CHECK(row["busbw_GBps"].get<double>() <= 63.0 * 0.83 + 1e-9);
  CHECK(j["rows"].back()["busbw_GBps"].get<double>() > 20.0);
}

TEST_CASE("docs/accuracy.md holds the harness's current tables (regenerate with tools/scripts/update-accuracy)") {
  const std::string doc = cs::test::slurp(cs::test::data_path("docs/accuracy.md"));
  for (const std::string set :
       {"f-collectives", "f-nccl-tables", "g-trtllm", "a-megatron", "n-nemo", "m-moe", "d-deepep", "s-simumax"}) {
    CAPTURE(set);
    const auto r = cs::test::run_cli("validate-published scenarios/validation/" + set + ".json --markdown");
    REQUIRE(r.exit_code == 0);
    const std::string begin = "<!-- BEGIN " + set + " (generated) -->\n";
    const std::string end = "<!-- END " + set + " -->";
    const auto a = doc.find(begin);
    const auto z = doc.find(end);
    REQUIRE(a != std::string::npos);
    REQUIRE(z != std::string::npos);
    CHECK(doc.substr(a + begin.size(), z - a - begin.size()) == r.out);
  }
}

TEST_CASE(
    "accuracy gate: no validation group's median |error| rises by 2 points and 10% relative over the baseline "
    "(scenarios/validation/baseline.json)") {
  // docs/accuracy.md is the harness's current output (the test above): read each group's summary line
  // from it rather than run the harness again.
  const std::string doc = cs::test::slurp(cs::test::data_path("docs/accuracy.md"));
  const auto base = nlohmann::json::parse(cs::test::slurp(cs::test::data_path("scenarios/validation/baseline.json")));
  REQUIRE(base["groups"].size() >= 7);
  for (const auto& [set_name, b] : base["groups"].items()) {
    const std::string set = set_name;  // CAPTURE cannot name a structured binding (clang)
    CAPTURE(set);
    const std::string begin = "<!-- BEGIN " + set + " (generated) -->";
    const auto a = doc.find(begin);
    REQUIRE(a != std::string::npos);
    const std::string key = "median |error| ";
    const auto m = doc.find(key, a);
    REQUIRE(m != std::string::npos);
    const double now = std::stod(doc.substr(m + key.size()));
    const double was = b["median_abs_error_pct"].get<double>();
    CAPTURE(now);
    CAPTURE(was);
    CHECK_FALSE((now >= was + 2.0 && now >= was * 1.10));
  }
}

TEST_CASE("the accuracy gate fires on a group whose median rose by 2 points and 10%, and only then") {
  // The rule itself, on numbers: 10.0 -> 12.0 fires; 10.0 -> 11.9 (under 2 points) and 30 -> 32.9 (under
  // 10%) do not.
  const auto fires = [](double was, double now) { return now >= was + 2.0 && now >= was * 1.10; };
  CHECK(fires(10.0, 12.0));
  CHECK_FALSE(fires(10.0, 11.9));
  CHECK_FALSE(fires(30.0, 32.9));
  CHECK(fires(30.0, 33.0));
}

TEST_CASE("TensorRT-LLM H100 throughput (G- cases): median error at most 12%, every case within 25%") {
  // Published: NVIDIA/TensorRT-LLM perf-overview (shared/validation, G-trtllm-*). GEMMs and attention
  // come from TensorRT-LLM's own measured kernels (calibration/kernels/h100_sxm): the prefill-heavy
  // rows that read +15-21% now read within 10%; the decode-heavy rows read 7-20% low, because the
  // measured FP8 GEMMs at a few hundred rows are slower than the assumed 0.78 ceiling made them, and
  // what TensorRT-LLM gains back (its scheduler, KV budget and CUDA-graph batches) is issue 28's.
  const auto r = cs::test::run_cli("validate-published scenarios/validation/g-trtllm.json --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["scored_cases"] == 20);
  CHECK(j["median_abs_error"].get<double>() <= 0.12);
  CHECK(j["max_abs_error"].get<double>() <= 0.25);
}

TEST_CASE("Megatron-LM SC'21 Table 1 (all 10 rows, 32 to 3,072 GPUs): median within 12%, every case within 20%") {
  // With SC'21's unfused attention; cases above 512 GPUs simulate one data-parallel replica
  // (docs/accuracy.md, docs/performance.md). The GEMMs come from the A100's measured table
  // (TensorRT-LLM 1.0, 2025 kernels at 81-88% of peak at these shapes): eight of the ten 2021 runs
  // read 2-14% optimistic, the time they lost outside the kernels not modelled (docs/accuracy.md).
  const auto r =
      cs::test::run_cli("validate-published scenarios/validation/a-megatron.json --ids 'A-megatron21-t1-*' --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["scored_cases"] == 10);
  CHECK(j["median_abs_error"].get<double>() <= 0.12);
  CHECK(j["max_abs_error"].get<double>() <= 0.20);
}

TEST_CASE("Megatron-LM SC'21 Table 2, PTD-P rows (TP8 x PP12 and PP35, 384 to 2,240 GPUs): every case within 20%") {
  const auto r = cs::test::run_cli(
      "validate-published scenarios/validation/a-megatron.json --ids 'A-megatron21-t2-ptdp-*' --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["scored_cases"] == 6);
  CHECK(j["max_abs_error"].get<double>() <= 0.20);
}

TEST_CASE(
    "Megatron-LM SC'21 Table 2, ZeRO-3 without model parallelism: with rings through every NIC the model stays "
    "compute-bound as DP doubles (the published figures halve: a documented miss)") {
  // Per layer the all-gathers and reduce-scatters run as NCCL rings, one per rail: 8 NICs per node
  // carry them, and each layer's gather takes less than its compute. So TFLOP/s per GPU barely moves
  // from 384 to 1,536 GPUs, where DeepSpeed's 2021 ZeRO-3 measured 144, 88 and 44 (docs/accuracy.md:
  // the earlier agreement came from running these collectives through one NIC per node).
  const auto r = cs::test::run_cli(
      "validate-published scenarios/validation/a-megatron.json --ids 'A-megatron21-t2-zero3-174.6B-*' --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["cases"].size() == 3);
  const double first = j["cases"][0]["predicted"].get<double>();
  for (const auto& c : j["cases"]) {
    CAPTURE(c["id"].get<std::string>());
    CHECK(c["predicted"].get<double>() >= 0.9 * first);
    CHECK(c["predicted"].get<double>() >= c["published"].get<double>());
  }
}

TEST_CASE(
    "MoE cases (M-): Mixtral serving within 25% on A100, L40S and long sequences, the two documented FP8 misses high") {
  // Published: TensorRT-LLM 0.9 Mixtral table and Megatron-core Qwen3-235B (shared/validation,
  // M-*). docs/accuracy.md says why the two short FP8 cases read high and training reads optimistic.
  const auto r = cs::test::run_cli("validate-published scenarios/validation/m-moe.json --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["scored_cases"] == 7);
  for (const auto& c : j["cases"]) {
    const std::string id = c["id"];
    CAPTURE(id);
    const double err = c["error"].get<double>();
    if (id.find("a100") != std::string::npos || id.find("l40s") != std::string::npos ||
        id.find("2048-2048") != std::string::npos) {
      CHECK(std::fabs(err) <= 0.25);
    } else if (id.rfind("M-trtllm", 0) == 0) {
      CHECK(err > 0.5);  // the documented misses: 1.8x and 2.3x high with measured kernels
    } else {
      CHECK(err > 0.0);  // training reads optimistic (router skew, permutation, DeepEP SMs; docs/accuracy.md)
      CHECK(err < 0.60);
    }
  }
}

TEST_CASE(
    "DeepEP (D-): low-latency latencies EP 16-256 within 15% from a floor fitted at EP 8, normal kernels on 4 and 8 "
    "nodes within 10%, the documented misses at EP 8 and EP 16 read high") {
  // Published: deepseek-ai/DeepEP docs/legacy.md (shared/validation, D-deepep-*). docs/accuracy.md
  // says what the count assumes and why EP 16 (NVLink forwarding) and EP 8 read high.
  const auto r = cs::test::run_cli("validate-published scenarios/validation/d-deepep.json --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["scored_cases"] == 18);
  int calibration = 0;
  for (const auto& c : j["cases"]) {
    const std::string id = c["id"], role = c["role"];
    CAPTURE(id);
    const double err = c["error"].get<double>();
    if (role == "calibration") {
      ++calibration;
      CHECK(id == "D-deepep-v1-lowlat-ep8");  // the floors' only source
      CHECK(std::fabs(err) < 0.01);
    } else if (role == "context") {
      CHECK(id.rfind("D-deepep-v2-", 0) == 0);
    } else if (id.rfind("D-deepep-v1-lowlat-", 0) == 0) {
      CHECK(std::fabs(err) <= 0.15);
    } else if (id == "D-deepep-v1-normal-ep32" || id == "D-deepep-v1-normal-ep64") {
      CHECK(std::fabs(err) <= 0.10);
    } else if (id == "D-deepep-v1-normal-ep16") {
      CHECK(err > 0.4);  // NVLink forwarding without the kernel's SM budget
    } else {
      CHECK(id == "D-deepep-v1-normal-ep8");
      CHECK(err > 0.1);
      CHECK(err < 0.25);
    }
  }
  CHECK(calibration == 2);
}

TEST_CASE(
    "Megatron-LM on 8x B200 (S-): peak allocated memory within 5% on every layout, step times read fast by the "
    "documented 23-48%") {
  // Published: MooreThreads SimuMax v1.2's measured B200 table (shared/validation, S-*). Memory is
  // torch's allocated peak, which the runtime reserve is not part of. docs/accuracy.md says what
  // the measured kernel tables and Megatron's settings explain of the step time, and what not.
  const auto r = cs::test::run_cli("validate-published scenarios/validation/s-simumax.json --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["scored_cases"] == 24);
  std::map<std::string, int> seen;
  int memory_rows = 0;
  for (const auto& c : j["cases"]) {
    const std::string id = c["id"];
    CAPTURE(id);
    const double err = c["error"].get<double>();
    if (seen[id]++ == 1) {  // the second row of an id is its memory
      ++memory_rows;
      CHECK(std::fabs(err) <= 0.05);
    } else {
      CHECK(err < -0.15);
      CHECK(err > -0.50);
    }
  }
  CHECK(memory_rows == 6);
}
