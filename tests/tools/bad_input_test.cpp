// Every kind of bad input has a case in tests/bad_input/: NAME.json (or NAME.args: the arguments
// to clustersim) and NAME.expected: first line "exit N", then the exact standard error.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/builders.hpp"

namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) { return cs::test::slurp(p.string()); }
}  // namespace

TEST_CASE("each bad-input case exits with its code and prints exactly its message") {
  const fs::path dir = cs::test::data_path("tests/bad_input");
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".expected") cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  REQUIRE(cases.size() >= 15);
  for (const auto& expected_path : cases) {
    const std::string name = expected_path.stem().string();
    CAPTURE(name);
    std::string args;
    const fs::path args_path = dir / (name + ".args");
    if (fs::exists(args_path)) {
      args = slurp(args_path);
      while (!args.empty() && (args.back() == '\n' || args.back() == ' ')) args.pop_back();
    } else {
      args = "run tests/bad_input/" + name + ".json";
    }
    const std::string expected = slurp(expected_path);
    const auto nl = expected.find('\n');
    REQUIRE(expected.rfind("exit ", 0) == 0);
    const int code = std::stoi(expected.substr(5, nl - 5));
    const auto r = cs::test::run_cli(args);
    CHECK(r.exit_code == code);
    CHECK(r.err == expected.substr(nl + 1));
  }
}
