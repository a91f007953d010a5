#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/support/builders.hpp"

using cs::test::run_cli;

namespace {
nlohmann::json without_run_info(nlohmann::json j) {
  j.erase("run_info");
  if (j.contains("variants")) {
    for (auto& v : j["variants"]) v.erase("run_info");
  }
  return j;
}
}  // namespace

TEST_CASE("the default scenario runs and prints the NVSwitch and PCIe columns side by side") {
  const auto r = run_cli("run scenarios/default.json");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("8x H100 SXM (NVSwitch)") != std::string::npos);
  CHECK(r.out.find("8x H100 PCIe") != std::string::npos);
  CHECK(r.out.find("exposed communication") != std::string::npos);
  CHECK(r.out.find("cost per million tokens") != std::string::npos);
}

TEST_CASE("run --json prints one document per variant with the contract's fields, byte-identical across runs") {
  const auto a = run_cli("run scenarios/default.json --json");
  const auto b = run_cli("run scenarios/default.json --json");
  REQUIRE(a.exit_code == 0);
  const auto ja = nlohmann::json::parse(a.out);
  REQUIRE(ja["variants"].size() == 2);
  for (const auto& v : ja["variants"]) {
    for (const char* key : {"name", "step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "breakdown_s",
                            "memory_per_gpu", "fits", "speedup", "scaling_efficiency", "run_info"}) {
      CHECK_MESSAGE(v.contains(key), key);
    }
    for (const char* key : {"compute", "exposed_comm", "idle"}) CHECK(v["breakdown_s"].contains(key));
    for (const char* key : {"weights", "gradients", "optimizer", "activations", "other", "total", "capacity"}) {
      CHECK(v["memory_per_gpu"].contains(key));
    }
  }
  CHECK(ja["variants"][0].contains("cost"));
  CHECK(without_run_info(ja).dump() == without_run_info(nlohmann::json::parse(b.out)).dump());
}

TEST_CASE("train from flags equals the same scenario from a file") {
  const auto flags = run_cli("train --model llama3.1-8b --cluster hgx-h100 --tp 8 --seq 4096 --global-batch 8 --json");
  REQUIRE(flags.exit_code == 0);
  const auto file = run_cli(
      "run scenarios/default.json --set training.seq=4096 "
      "--set training.global_batch=8 --json");
  REQUIRE(file.exit_code == 0);
  const auto jf = nlohmann::json::parse(flags.out);
  const auto jv = nlohmann::json::parse(file.out)["variants"][0];
  CHECK(jf["step_time_s"] == jv["step_time_s"]);
  CHECK(jf["memory_per_gpu"] == jv["memory_per_gpu"]);
}

TEST_CASE("--set overrides a field before parsing, --dump-resolved shows every default") {
  const auto r = run_cli(
      "train --model qwen2.5-7b --cluster pcie-h100x8 --gpus 4 --tp 2 --seq 2048 --global-batch 8 --dump-resolved");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["parallel"]["dp"] == 2);
  CHECK(j["profile"] == "h100-pcie");
  CHECK(j["training"]["micro_batch"] == 1);
  CHECK(j["network_model"] == "flow");
}

TEST_CASE("collective prints an nccl-tests-style table, --json has rows with bytes, time, algbw and busbw") {
  const auto r = run_cli("collective --cluster hgx-h100 --op allreduce --min 1M --max 1G --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 11);
  for (const auto& row : j["rows"]) {
    CHECK(row["busbw_GBps"].get<double>() == doctest::Approx(row["algbw_GBps"].get<double>() * 1.75));
    CHECK(row["time_s"].get<double>() > 0);
  }
  CHECK(j["rows"].back()["bytes"] == 1073741824.0);
  const auto t = run_cli("collective --cluster pcie-h100x8 --op allgather --max 64M");
  CHECK(t.exit_code == 0);
  CHECK(t.out.find("busbw(GB/s)") != std::string::npos);
}

TEST_CASE("list prints the catalogs, --json has id, params_total, layers and hidden for models") {
  const auto r = run_cli("list models --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& m : j) {
    if (m["id"] == "llama3.1-70b") {
      found = true;
      CHECK(m["layers"] == 80);
      CHECK(m["hidden"] == 8192);
      CHECK(m["params_total"].get<double>() == doctest::Approx(70.55e9).epsilon(0.005));
    }
  }
  CHECK(found);
  for (const char* what : {"clusters", "profiles", "offers"})
    CHECK(run_cli(std::string("list ") + what).exit_code == 0);
}

TEST_CASE("validate checks a scenario without simulating") {
  const auto r = run_cli("validate scenarios/default.json");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("ok: 8x H100 PCIe: llama3.1-8b on 8x NVIDIA H100 PCIe") != std::string::npos);
  CHECK(run_cli("validate scenarios/claim4-70b-full-finetune.json").exit_code == 4);
}

TEST_CASE("every shipped scenario either runs or explains why not (exit 4 for plans that do not fit)") {
  for (const char* s : {"scenarios/default.json", "scenarios/claim6-scaling-8b-dp8.json",
                        "scenarios/claim3-gpt3-175b-tp8.json", "scenarios/claim5-qwen72b-tp2-nvlink-vs-pcie.json"}) {
    CAPTURE(s);
    CHECK(run_cli(std::string("validate ") + s).exit_code == 0);
  }
  const auto r = run_cli("run scenarios/claim4-70b-full-finetune.json");
  CHECK(r.exit_code == 4);
  CHECK(r.err.find("does not fit: needs ") != std::string::npos);
  CHECK(r.err.find("weights ") != std::string::npos);
}

TEST_CASE("--trace writes a Chrome trace with both streams of every GPU and link counters") {
  const std::string path = "/tmp/cs_trace_test.json";
  const auto r = run_cli(
      "train --model llama3.1-8b --cluster pcie-h100x8 --gpus 4 --tp 4 --seq 1024 --global-batch 2 --trace " + path);
  REQUIRE(r.exit_code == 0);
  std::ifstream f(path);
  const auto j = nlohmann::json::parse(f);
  std::size_t spans = 0, counters = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") ++spans;
    if (e["ph"] == "C") ++counters;
  }
  CHECK(spans > 100);
  CHECK(counters > 10);
  std::remove(path.c_str());
}

TEST_CASE("help exits 0 and a missing subcommand is bad input") {
  CHECK(run_cli("--help").exit_code == 0);
  CHECK(run_cli("train --help").exit_code == 0);
  CHECK(run_cli("").exit_code == 2);
}

TEST_CASE("infer --json has the contract's fields, run handles infer scenarios with variants") {
  const auto r = run_cli(
      "infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 256 --output-len 64 --rate inf "
      "--requests 50 --offer cn-8x-h100-sxm --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"ttft_s", "tpot_s", "e2e_s"}) {
    for (const char* p : {"mean", "p50", "p90", "p99"}) CHECK(j[k].contains(p));
  }
  for (const char* k : {"output_tokens_per_s", "output_tokens_per_s_per_gpu", "input_tokens_per_s", "requests_per_s",
                        "max_concurrency", "fits", "cost"}) {
    CHECK_MESSAGE(j.contains(k), k);
  }
  const auto v = run_cli("run scenarios/claim5-qwen72b-tp2-nvlink-vs-pcie.json --json");
  REQUIRE(v.exit_code == 0);
  const auto jv = nlohmann::json::parse(v.out);
  REQUIRE(jv["variants"].size() == 3);
  // NVLink (bridge) against PCIe on the same H100 PCIe cards: TP all-reduces are faster.
  CHECK(jv["variants"][1]["output_tokens_per_s"].get<double>() >
        jv["variants"][2]["output_tokens_per_s"].get<double>());
}

TEST_CASE("infer-sweep prints the latency-throughput curve and writes CSV and SVG") {
  const auto r = run_cli(
      "infer-sweep --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 512 --output-len 128 --requests 200 "
      "--rates 1,4,16 --csv /tmp/cs-sweep.csv --svg /tmp/cs-sweep.svg");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("TTFT p99") != std::string::npos);
  const auto csv = cs::test::slurp("/tmp/cs-sweep.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
  CHECK(cs::test::slurp("/tmp/cs-sweep.svg").find("<polyline") != std::string::npos);
}
