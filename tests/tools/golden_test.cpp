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
}  // namespace

TEST_CASE("golden scenarios reproduce their reviewed JSON exactly") {
  const fs::path dir = cs::test::data_path("tests/golden");
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".args") cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  REQUIRE(cases.size() >= 3);
  for (const auto& c : cases) {
    CAPTURE(c.filename().string());
    std::string args = slurp(c);
    while (!args.empty() && args.back() == '\n') args.pop_back();
    const auto r = cs::test::run_cli(args);
    REQUIRE(r.exit_code == 0);
    const auto expected = nlohmann::json::parse(slurp(fs::path(c).replace_extension(".json")));
    CHECK(strip(nlohmann::json::parse(r.out)).dump(2) == expected.dump(2));
  }
}
