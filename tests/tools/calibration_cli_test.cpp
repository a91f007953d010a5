#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "tests/support/builders.hpp"

using cs::test::run_cli;

TEST_CASE("calibrate without a GPU exits 3 with one sentence and writes no profile") {
  const std::string out = "/tmp/cs-calibrate-test.json";
  std::filesystem::remove(out);
  const auto r = run_cli("calibrate --quick --out " + out);
  CHECK(r.exit_code == 3);
  const bool said = r.err.find("no CUDA GPU is visible") != std::string::npos ||
                    r.err.find("built without CUDA (nvcc not found at configure time)") != std::string::npos;
  CHECK(said);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("inspect passes a genuine HGX H100 against its offer") {
  const auto r = run_cli("inspect tests/data/box-hgx-h100.measured.json --offer cn-8x-h100-sxm --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["warnings"] == 0);
  CHECK(j["box"]["interconnect"] == "NVSwitch (every pair NV18)");
}

TEST_CASE("inspect flags each of the seed's pitfalls on a fake 8-GPU A100 40G PCIe box sold as 8x A100 80G SXM") {
  const auto r =
      run_cli("inspect tests/data/box-fake8.measured.json --offer cn-8x-a100-80g-sxm --json --svg /tmp/cs-heat.svg");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  std::map<std::string, bool> ok;
  for (const auto& c : j["checks"]) ok[c["id"]] = c["ok"];
  CHECK_FALSE(ok.at("memory"));
  CHECK_FALSE(ok.at("form-factor"));
  CHECK_FALSE(ok.at("interconnect"));
  CHECK_FALSE(ok.at("p2p-balance"));
  CHECK_FALSE(ok.at("pcie-groups"));
  CHECK_FALSE(ok.at("pcie-link"));
  CHECK_FALSE(ok.at("clocks"));
  CHECK(ok.at("gpu-count"));
  const auto svg = cs::test::slurp("/tmp/cs-heat.svg");
  CHECK(svg.find("<svg") == 0);
  CHECK(svg.find(">26<") != std::string::npos);
}

TEST_CASE("a training run on an imported profile says the collective rates were imported") {
  const std::string out = "/tmp/cs-imported-h100.json";
  const auto imp = run_cli(
      "import nccl-tests tests/data/nccl-tests/all_reduce_perf-h100-synthetic.txt --base h100-sxm --out " + out);
  REQUIRE(imp.exit_code == 0);
  const auto r = run_cli("train --model llama3.1-8b --cluster hgx-h100 --profile " + out +
                         " --tp 8 --seq 2048 --global-batch 2 --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["profile_origin"] == "imported");
  CHECK(j["rates"]["collective allreduce x8"].get<std::string>().find("(imported)") != std::string::npos);
  CHECK(j["collectives"][0]["algorithm"] == "measured");
}

TEST_CASE("kernels gemm at a table row reports that row as measured, the simulator's time and the table's coverage") {
  const auto r = run_cli("kernels gemm --gpu h100-sxm --m 4096 --n 8192 --k 8192 --dtype fp8 --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["table"]["source"] == "measured");
  CHECK(j["measured_s"].get<double>() == doctest::Approx(j["table"]["seconds"].get<double>()));
  // calibration/kernels/h100_sxm/gemm_perf: fp8,4096,8192,8192 -> 0.446614 ms.
  CHECK(j["measured_s"].get<double>() == doctest::Approx(0.446614e-3).epsilon(1e-5));
  CHECK(j["coverage"]["m"]["max"] == 32768);
  CHECK(j["used"]["seconds"].get<double>() >= j["table"]["seconds"].get<double>());
  // Between rows: interpolated, and no row to report.
  const auto b = run_cli("kernels gemm --gpu h100-sxm --m 5000 --n 8192 --k 8192 --dtype fp8 --json");
  REQUIRE(b.exit_code == 0);
  const auto bj = nlohmann::json::parse(b.out);
  CHECK(bj["table"]["source"] == "interpolated");
  CHECK(bj["measured_s"].is_null());
}

TEST_CASE("kernels attention, decode, moe and collective report the coverage of the table and key they read") {
  // Training attention forward: the measured training table, under its head_dim/window/dtype key,
  // and the query's sequence inside its measured range (the coverage is the rows the lookup reads).
  const auto f = run_cli("kernels attention --gpu h100-sxm --seq 8192 --heads 32 --kv-heads 8 --json");
  REQUIRE(f.exit_code == 0);
  const auto fj = nlohmann::json::parse(f.out);
  REQUIRE(fj["coverage"].is_object());
  CHECK(fj["coverage"]["table"] == "train_attention_perf");
  CHECK(fj["coverage"]["key"] == "128|0|bfloat16|bfloat16");
  CHECK(fj["coverage"]["isl"]["min"].get<double>() <= 8192);
  CHECK(fj["coverage"]["isl"]["max"].get<double>() >= 8192);
  CHECK(fj["coverage"]["batch_size"]["values"].get<int>() > 0);
  // Its backward reads the measured backward table; serving's prefill reads the engines' table.
  const auto b = run_cli("kernels attention --gpu h100-sxm --seq 8192 --heads 32 --kv-heads 8 --backward --json");
  REQUIRE(b.exit_code == 0);
  CHECK(nlohmann::json::parse(b.out)["coverage"]["table"] == "train_attention_bwd_perf");
  const auto s = run_cli("kernels attention --gpu h100-sxm --seq 8192 --heads 32 --kv-heads 8 --serving --json");
  REQUIRE(s.exit_code == 0);
  const auto sj = nlohmann::json::parse(s.out);
  CHECK(sj["coverage"]["table"] == "context_attention_perf");
  CHECK(sj["coverage"]["folder"] == "h100_sxm");
  // A backward reads the measured backward table whichever forward it pairs with, as the simulator does.
  const auto sb =
      run_cli("kernels attention --gpu h100-sxm --seq 8192 --heads 32 --kv-heads 8 --serving --backward --json");
  REQUIRE(sb.exit_code == 0);
  CHECK(nlohmann::json::parse(sb.out)["coverage"]["table"] == "train_attention_bwd_perf");
  // Decode attention: the generation table, and the text shows the same line.
  const auto d = run_cli("kernels attention --gpu h100-sxm --context 4096 --batch 8 --heads 32 --kv-heads 8 --json");
  REQUIRE(d.exit_code == 0);
  const auto dj = nlohmann::json::parse(d.out);
  CHECK(dj["coverage"]["table"] == "generation_attention_perf");
  CHECK(dj["coverage"]["step"]["max"].get<double>() >= 4095);
  const auto dt = run_cli("kernels attention --gpu h100-sxm --context 4096 --batch 8 --heads 32 --kv-heads 8");
  REQUIRE(dt.exit_code == 0);
  CHECK(dt.out.find("coverage        generation_attention_perf (h100_sxm)") != std::string::npos);
  // Fused MoE at a measured shape: its token range; at an unmeasured one, the shapes it has.
  const auto m = run_cli(
      "kernels moe --gpu h100-sxm --tokens 4096 --hidden 3072 --inter 1024 --topk 8 --experts 256 --tp 16 --ep 16 "
      "--dtype fp8 --json");
  REQUIRE(m.exit_code == 0);
  const auto mj = nlohmann::json::parse(m.out);
  CHECK(mj["coverage"]["table"] == "moe_perf");
  CHECK(mj["coverage"]["num_tokens"]["max"].get<double>() >= 4096);
  const auto miss = run_cli(
      "kernels moe --gpu h100-sxm --tokens 4096 --hidden 7168 --inter 2048 --topk 8 --experts 255 --dtype fp8 --json");
  REQUIRE(miss.exit_code == 0);
  const auto xj = nlohmann::json::parse(miss.out);
  CHECK(xj["coverage"].is_null());
  CHECK(xj["table"].is_null());
  const auto shapes = xj["measured_shapes"].get<std::vector<std::string>>();
  CHECK(std::find(shapes.begin(), shapes.end(), "3072/1024/8/256") != shapes.end());
  // Collectives: NCCL's rows for the op and GPU count, and the custom all-reduce's for all-reduce.
  const auto c = run_cli("kernels collective --gpu h100-sxm --op allreduce --gpus 8 --bytes 16777216 --json");
  REQUIRE(c.exit_code == 0);
  const auto cj = nlohmann::json::parse(c.out);
  CHECK(cj["coverage"]["nccl"]["key"] == "all_reduce|half|8");
  CHECK(cj["coverage"]["custom_allreduce"]["key"] == "8");
  CHECK(cj["coverage"]["element_bytes"] == 2);
}

TEST_CASE("a training result says what share of its compute time came from measured tables, and sums to 1") {
  const auto r = run_cli("train --model llama3.1-8b --cluster hgx-h100 --tp 8 --seq 4096 --global-batch 8 --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& s = j["compute_sources"];
  double sum = 0;
  for (const char* k : {"measured", "interpolated", "extrapolated", "analytic"}) sum += s[k].get<double>();
  CHECK(sum == doctest::Approx(1.0));
  CHECK(s["measured"].get<double>() + s["interpolated"].get<double>() > 0.5);
  // A profile without tables: everything analytic, and the text says so.
  const auto p = run_cli("train --model llama3.1-8b --cluster pcie-h100x8 --tp 8 --seq 4096 --global-batch 8 --json");
  REQUIRE(p.exit_code == 0);
  CHECK(nlohmann::json::parse(p.out)["compute_sources"]["analytic"].get<double>() == doctest::Approx(1.0));
  const auto t = run_cli("train --model llama3.1-8b --cluster pcie-h100x8 --tp 8 --seq 4096 --global-batch 8");
  CHECK(t.out.find("kernel times from") != std::string::npos);
  CHECK(t.out.find("analytic model only") != std::string::npos);
}

TEST_CASE("import kernels makes a profile that takes its folder's tables first, and a run uses them") {
  const std::string dir = "/tmp/cs-import-kernels";
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/gemm_perf.csv");
    // One GEMM shape, 10x slower than the public H100 row, so its use shows in the step time.
    f << "gemm_dtype,m,n,k,latency\nbfloat16,4096,4096,4096,2.0\nbfloat16,8192,4096,4096,4.0\n";
  }
  const std::string out = dir + "/box.json";
  const auto imp = run_cli("import kernels " + dir + " --base h100-sxm --out " + out);
  REQUIRE(imp.exit_code == 0);
  const auto prof = nlohmann::json::parse(cs::test::slurp(out));
  REQUIRE(prof["kernel_tables"].is_array());
  CHECK(prof["kernel_tables"][0]["id"] == "./");
  CHECK(prof["kernel_tables"][0]["status"] == "imported");
  CHECK(prof["kernel_tables"][1]["id"] == "h100_sxm");
  const auto k = run_cli("kernels gemm --gpu " + out + " --m 4096 --n 4096 --k 4096 --json");
  REQUIRE(k.exit_code == 0);
  CHECK(nlohmann::json::parse(k.out)["measured_s"].get<double>() == doctest::Approx(2.0e-3));
}

TEST_CASE("kernels layer: every kernel with its source and class, and each pass's compute by kernel") {
  const auto r = run_cli("kernels layer --gpu h100-sxm --model mixtral-8x7b --seq 4096 --ep 8 --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* pass : {"forward", "backward"}) {
    double classed = 0, expert = 0;
    for (const auto& op : j[pass]["ops"]) {
      if (!op.contains("op")) continue;  // a collective
      CHECK(op.contains("class"));
      if (op["class"] == "expert_gemm") {
        expert += op["seconds"].get<double>();
        CHECK(op["op"].get<std::string>().rfind("experts_", 0) == 0);
      }
      classed += op["seconds"].get<double>();
    }
    CHECK(classed == doctest::Approx(j[pass]["seconds"].get<double>()));
    const auto& k = j[pass]["compute_by_kernel"];
    CHECK(k["expert_gemm"].get<double>() == doctest::Approx(expert / classed));
    double sum = 0;
    for (const auto& [name, share] : k.items()) sum += share.get<double>();
    CHECK(sum == doctest::Approx(1.0));
  }
  const auto t = run_cli("kernels layer --gpu h100-sxm --model llama3.1-8b --seq 4096");
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("spent on") != std::string::npos);
  CHECK(t.out.find("expert GEMMs") == std::string::npos);  // a dense layer has none
}
