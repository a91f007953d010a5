// `clustersim claims`: the seed article's claims judged by explicit rules; docs/seed-claims.md is the
// command's current output; a rule's verdict follows the data it is given.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/support/builders.hpp"

namespace fs = std::filesystem;

namespace {

bool allowed_verdict(const std::string& v) {
  return v == "supported" || v == "contradicted" || (v.rfind("depends on ", 0) == 0 && v.size() > 11);
}

const nlohmann::json& claim(const nlohmann::json& j, int id) {
  for (const auto& c : j["claims"])
    if (c["id"] == id) return c;
  FAIL("no claim " << id);
  return j;
}

double figure(const nlohmann::json& c, const std::string& name) {
  for (const auto& f : c["figures"])
    if (f["name"] == name) return f["value"].get<double>();
  FAIL("no figure '" << name << "' in claim " << c["id"]);
  return 0;
}

}  // namespace

TEST_CASE("claims: docs/seed-claims.md is current, the JSON has its fields, every verdict is an allowed string") {
  const std::string out = "/tmp/cs_claims_test.md";
  const auto r = cs::test::run_cli("claims --json --out " + out);
  REQUIRE(r.exit_code == 0);
  CHECK_MESSAGE(cs::test::slurp(out) == cs::test::slurp(cs::test::data_path("docs/seed-claims.md")),
                "docs/seed-claims.md is stale: regenerate it with tools/scripts/update-seed-claims");
  std::remove(out.c_str());
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["claims"].size() == 12);
  std::set<int> ids;
  for (const auto& c : j["claims"]) {
    CAPTURE(c.dump());
    for (const char* k :
         {"id", "claim", "article_figure", "rule", "scenarios", "figures", "parts", "verdict", "reason"})
      CHECK_MESSAGE(c.contains(k), k);
    ids.insert(c["id"].get<int>());
    CHECK(allowed_verdict(c["verdict"].get<std::string>()));
    CHECK(!c["figures"].empty());
    for (const auto& f : c["figures"]) {
      CHECK(f["value"].is_number());
      CHECK(f.contains("unit"));
    }
    for (const auto& p : c["parts"]) CHECK(allowed_verdict(p["verdict"].get<std::string>()));
    for (const auto& s : c["scenarios"]) CHECK(fs::exists(cs::test::data_path(s.get<std::string>())));
  }
  CHECK(ids == std::set<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});

  // Claim 6 says NVSwitch boxes scale 85-95% over 8 GPUs: Llama-3.1-8B DP8 with ZeRO-1 overlaps its
  // reduce-scatter with the backward pass and scales above 95% on NVSwitch, so the claim is contradicted.
  const auto& c6 = claim(j, 6);
  CHECK(c6["verdict"] == "contradicted");
  CHECK(figure(c6, "8x H100 SXM (NVSwitch): scaling efficiency") > 95.0);
  // Claim 7: NCCL all-reduce on HGX H100 reaches ~480 GB/s bus bandwidth (docs/accuracy.md), below 600.
  const auto& c7 = claim(j, 7);
  CHECK(c7["verdict"] == "contradicted");
  CHECK(figure(c7, "8x H100 SXM (NVSwitch): busbw") < 600.0);
  CHECK(figure(c7, "8x H100 SXM (NVSwitch): algbw") < figure(c7, "8x H100 SXM (NVSwitch): busbw"));
  // Claim 9: GPT-3 175B's weights, gradients and Adam state (16 bytes a parameter) cannot fit 8x 80 GB;
  // over eight boxes with PP8 they do. One contradicted part contradicts the claim.
  const auto& c9 = claim(j, 9);
  CHECK(c9["verdict"] == "contradicted");
  for (const auto& p : c9["parts"]) {
    if (p["what"] == "175B training on one 8x H100 NVSwitch box") CHECK(p["verdict"] == "contradicted");
    if (p["what"] == "175B training on multi-node 8x H100 with RDMA") CHECK(p["verdict"] == "supported");
  }
  CHECK(figure(c9, "GPT-3 175B training, one 8x H100 box, TP8") > 175e9 * 16 / 8 / 1073741824.0);
  // Claim 10: full-parameter 70B does not fit 8x 80 GB (weights, gradients and Adam alone are ~150 GiB
  // per GPU), LoRA does: the verdict names the method and the measured memory.
  const auto& c10 = claim(j, 10);
  CHECK(c10["verdict"].get<std::string>().rfind("depends on the fine-tuning method", 0) == 0);
  CHECK(figure(c10, "full-parameter TP8: memory per GPU") > 150.0);
  // Claim 12: the article's own hourly figure for the 8x H100 box (250 CNY/h beside 180,000 CNY a month)
  // breaks even at one month (720 h), not about two.
  const auto& c12 = claim(j, 12);
  CHECK(c12["verdict"] == "contradicted");
  CHECK(figure(c12, "cn-8x-h100-sxm: break-even load against its own hourly price") == doctest::Approx(1.0));
}

TEST_CASE("claims: claim 12's verdict follows the hourly prices in the offers (none, 2 months, 1 month)") {
  // A data folder that shares the repository's models, profiles and scenarios but has its own offers:
  // the shipped ones without their hourly terms, plus at most one hourly offer.
  const fs::path root = fs::temp_directory_path() / "cs_claims_offers";
  fs::remove_all(root);
  fs::create_directories(root / "scenarios" / "offers");
  const fs::path repo = cs::test::data_path("");
  for (const char* d : {"models", "calibration", "docs"}) fs::create_directory_symlink(repo / d, root / d);
  for (const auto& e : fs::directory_iterator(repo / "scenarios")) {
    if (e.path().filename() != "offers") fs::create_symlink(e.path(), root / "scenarios" / e.path().filename());
  }
  for (const auto& e : fs::directory_iterator(repo / "scenarios" / "offers")) {
    if (e.path().extension() != ".json") continue;  // the USD folder: other currencies never pair here
    auto offer = nlohmann::json::parse(cs::test::slurp(e.path().string()));
    offer.erase("hourly_price");
    offer.erase("hourly_price_max");  // a range's hourly top needs its bottom
    std::ofstream(root / "scenarios" / "offers" / e.path().filename()) << offer.dump(2);
  }
  const auto verdict = [&](double cny_per_hour) {
    const auto hourly = root / "scenarios/offers/od-8x-h100.json";
    fs::remove(hourly);
    if (cny_per_hour > 0) {
      std::ofstream(hourly) << R"({"name": "test: on-demand 8x H100", "gpus": 8, "gpu": "H100 80GB SXM",
              "interconnect": "NVSwitch", "price": {"amount": )"
                            << cny_per_hour
                            << R"(, "currency": "CNY", "per": "hour"}, "source": "test fixture, not a real offer"})";
    }
    const auto r = cs::test::run_cli("--data-dir " + root.string() + " claims --json");
    REQUIRE(r.exit_code == 0);
    return claim(nlohmann::json::parse(r.out), 12)["verdict"].get<std::string>();
  };
  CHECK(verdict(0).rfind("depends on the on-demand hourly price", 0) == 0);  // no hourly price at all
  CHECK(verdict(125.0) == "supported");                                      // 180,000 / (125 x 720 h) = 2.0 months
  CHECK(verdict(250.0) == "contradicted");                                   // 1.0 month
  fs::remove_all(root);
}

TEST_CASE("claims: the same bytes with 1 and 4 worker threads, and an unwritable --out is bad input") {
  const auto one = cs::test::run_cli("--threads 1 claims --markdown");
  const auto four = cs::test::run_cli("--threads 4 claims --markdown");
  REQUIRE(one.exit_code == 0);
  REQUIRE(four.exit_code == 0);
  CHECK(one.out == four.out);
  const auto bad = cs::test::run_cli("claims --out /nonexistent-dir/seed-claims.md");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("/nonexistent-dir/seed-claims.md") != std::string::npos);
}

TEST_CASE("claims: a data folder whose claim variant was renamed, or no longer fits, is named in the error") {
  // The repository's data, with claim 1's file replaced by an edited copy.
  const fs::path root = fs::temp_directory_path() / "cs_claims_edited";
  const fs::path repo = cs::test::data_path("");
  const std::string file = "claim1-fabric-10x-32gpu.json";
  const auto with_claim1 = [&](const std::function<void(nlohmann::json&)>& edit) {
    fs::remove_all(root);
    fs::create_directories(root / "scenarios" / "seed-claims");
    for (const char* d : {"models", "calibration", "docs"}) fs::create_directory_symlink(repo / d, root / d);
    for (const auto& e : fs::directory_iterator(repo / "scenarios")) {
      if (e.path().filename() != "seed-claims") fs::create_symlink(e.path(), root / "scenarios" / e.path().filename());
    }
    for (const auto& e : fs::directory_iterator(repo / "scenarios" / "seed-claims")) {
      if (e.path().filename() != file)
        fs::create_symlink(e.path(), root / "scenarios/seed-claims" / e.path().filename());
    }
    auto j = nlohmann::json::parse(cs::test::slurp((repo / "scenarios/seed-claims" / file).string()));
    edit(j);
    std::ofstream(root / "scenarios/seed-claims" / file) << j.dump(2);
    return cs::test::run_cli("--data-dir " + root.string() + " claims --json");
  };
  const auto renamed = with_claim1([](nlohmann::json& j) { j["variants"][0]["name"] = "renamed"; });
  CHECK(renamed.exit_code == 2);
  CHECK(renamed.err.find(file) != std::string::npos);
  CHECK(renamed.err.find("/variants") != std::string::npos);
  CHECK(renamed.err.find("'renamed'") != std::string::npos);  // what it has
  const auto repeated = with_claim1([](nlohmann::json& j) { j["variants"][1]["name"] = j["variants"][0]["name"]; });
  CHECK(repeated.exit_code == 2);
  CHECK(repeated.err.find("repeats") != std::string::npos);
  // The 405B model on the same 32 GPUs at TP 1 does not fit: sized, refused, named with its variant.
  const auto too_big = with_claim1([](nlohmann::json& j) { j["model"] = "llama3.1-405b"; });
  CHECK(too_big.exit_code == 4);
  CHECK(too_big.err.find(file + " (variant '") != std::string::npos);
  CHECK(too_big.err.find("did not run") != std::string::npos);
  fs::remove_all(root);
}
