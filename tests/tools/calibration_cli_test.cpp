#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
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
