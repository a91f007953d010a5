// Reviewed golden outputs: tests/golden/NAME.args (clustersim arguments) and NAME.json (the
// expected --json output without run_info). tools/scripts/update-goldens rewrites them and
// prints the diff; it never runs in CI.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/builders.hpp"

namespace fs = std::filesystem;

namespace {
nlohmann::json strip(nlohmann::json j) {
  j.erase("run_info");
  if (j.contains("variants")) {
    for (auto& v : j["variants"]) v.erase("run_info");
  }
  return j;
}
std::string slurp(const fs::path& p) { return cs::test::slurp(p.string()); }

std::vector<fs::path> golden_cases() {
  const fs::path dir = cs::test::data_path("tests/golden");
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".args") cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::string args_of(const fs::path& c) {
  std::string args = slurp(c);
  while (!args.empty() && args.back() == '\n') args.pop_back();
  return args;
}
}  // namespace

TEST_CASE("golden scenarios reproduce their reviewed JSON exactly") {
  const auto cases = golden_cases();
  REQUIRE(cases.size() >= 3);
  for (const auto& c : cases) {
    CAPTURE(c.filename().string());
    const auto r = cs::test::run_cli(args_of(c));
    REQUIRE(r.exit_code == 0);
    const auto expected = nlohmann::json::parse(slurp(fs::path(c).replace_extension(".json")));
    CHECK(strip(nlohmann::json::parse(r.out)).dump(2) == expected.dump(2));
  }
}

TEST_CASE("the same bytes with 1, 2 and 4 worker threads: golden scenarios and a validation set") {
  std::vector<std::string> runs;
  for (const auto& c : golden_cases()) runs.push_back(args_of(c));
  runs.push_back("validate-published scenarios/validation/g-trtllm.json --json");
  // Sweep points on the workers (a table, compared as text).
  runs.push_back(
      "infer-sweep --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 512 --output-len 128 --requests 100 "
      "--rates 2,8,32");
  // A multi-node step that the parallel engine splits (eight nodes and the fabric).
  runs.push_back(
      "train --model llama3.1-8b --cluster hgx-h100 --nodes 8 --fabric ib-ndr-rail --tp 8 --pp 2 --zero 1 --seq 4096 "
      "--global-batch 32 --json");
  runs.push_back("validate-published scenarios/validation/a-megatron.json --ids '*t1-3*' --json");
  for (const auto& args : runs) {
    CAPTURE(args);
    std::string first;
    for (int threads : {1, 2, 4}) {
      const auto r = cs::test::run_cli("--threads " + std::to_string(threads) + " " + args);
      REQUIRE(r.exit_code == 0);
      std::string out = r.out;
      if (args.find("--json") != std::string::npos) {
        const auto j = nlohmann::json::parse(r.out);
        if (args.find("--nodes 8") != std::string::npos) CHECK(j["run_info"]["engine_partitions"] == 9);
        out = strip(j).dump(2);
      }
      if (threads == 1) first = out;
      CHECK(out == first);
    }
  }
}
