// The 2026 rental parts in the catalog: listed, and runnable (collective, training step).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "tests/support/builders.hpp"

using cs::test::run_cli;

TEST_CASE("list shows the 2026 profiles and clusters") {
  const auto p = run_cli("list profiles");
  REQUIRE(p.exit_code == 0);
  for (const char* id : {"b200", "gb200", "h20", "a800-sxm-80", "l40s", "l20", "rtx4090"}) {
    CAPTURE(id);
    CHECK(p.out.find(id) != std::string::npos);
  }
  const auto c = run_cli("list clusters");
  REQUIRE(c.exit_code == 0);
  for (const char* id :
       {"hgx-b200", "gb200-nvl72", "hgx-h20", "hgx-a800", "pcie-l40sx8", "pcie-l20x8", "pcie-rtx4090x8"}) {
    CAPTURE(id);
    CHECK(c.out.find(id) != std::string::npos);
  }
}

namespace {
double peak_busbw(const std::string& args) {
  const auto r = run_cli("collective " + args + " --min 1G --max 1G --json");
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out)["rows"][0]["busbw_GBps"].get<double>();
}
}  // namespace

TEST_CASE("collective on gb200-nvl72: in the NVLink domain at NVLink rate, across racks at the NICs' rate") {
  const double in_domain = peak_busbw("--cluster gb200-nvl72 --gpus 8");  // two trays of one rack
  // One tray in each of two racks: the hierarchical algorithm reduces inside each rack over NVLink
  // and crosses on four NICs at once; a ring crosses with one channel per rail, each tray's four
  // 400 Gb/s NICs (0.94 efficiency) carrying a quarter of the data.
  const double across = peak_busbw("--cluster gb200-nvl72 --gpus 4 --nodes 2 --fabric ib-ndr-nvl72-rail");
  const double ring_across =
      peak_busbw("--cluster gb200-nvl72 --gpus 4 --nodes 2 --fabric ib-ndr-nvl72-rail --algo ring");
  CHECK(in_domain == doctest::Approx(900 * 0.83).epsilon(0.03));
  CHECK(across < in_domain);
  CHECK(ring_across == doctest::Approx(4 * 50 * 0.94).epsilon(0.02));
  CHECK(ring_across < across);
  CHECK(peak_busbw("--cluster hgx-b200") == doctest::Approx(900 * 0.83).epsilon(0.03));
}

TEST_CASE("a training step runs on every 2026 cluster") {
  for (const char* c : {"hgx-b200", "hgx-h20", "hgx-a800", "pcie-l40sx8", "pcie-l20x8", "pcie-rtx4090x8"}) {
    CAPTURE(c);
    const auto r = run_cli(std::string("train --model llama3.1-8b --cluster ") + c +
                           " --tp 8 --seq 2048 --global-batch 8 --recompute full --json");
    REQUIRE(r.exit_code == 0);
    CHECK(nlohmann::json::parse(r.out).dump().find("step_time") != std::string::npos);
  }
  // 16 GPUs: TP8 inside one rack (two trays over NVLink), DP2 across two racks over the fabric.
  const auto r = run_cli(
      "train --model llama3.1-8b --cluster gb200-nvl72 --gpus 8 --nodes 2 --fabric ib-ndr-nvl72-rail --tp 8 --seq 2048 "
      "--global-batch 8 --json");
  REQUIRE(r.exit_code == 0);
}

TEST_CASE("the 2026 USD offers: every file parses, prices its own box in USD and cites a dated source") {
  namespace fs = std::filesystem;
  const fs::path dir = cs::test::data_path("scenarios/offers/usd-2026");
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    ++n;
    CAPTURE(e.path().string());
    const auto j = nlohmann::json::parse(cs::test::slurp(e.path().string()));
    CHECK(j["price"]["currency"] == "USD");
    CHECK(j["price"]["per"] == "hour");
    CHECK(fs::exists(cs::test::data_path("scenarios/clusters/" + j["cluster"].get<std::string>() + ".json")));
    const std::string src = j["source"];
    CHECK(src.find("2026") != std::string::npos);
    // An offer is priced for its box: train on it with --offer runs and reports the cost in USD.
    const auto r = run_cli("train --model llama3.1-8b --cluster " + j["cluster"].get<std::string>() +
                           " --gpus 8 --tp 8 --seq 2048 --global-batch 8 --recompute full --offer " +
                           e.path().string() + " --json");
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("\"USD\"") != std::string::npos);
  }
  CHECK(n == 13);
}
