// sim/sweep: parsing and expanding sweep files (docs/sweep.md).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/config/json_doc.hpp"
#include "sim/core/errors.hpp"
#include "sim/sweep/sweep_file.hpp"
#include "tests/support/builders.hpp"

namespace {

cs::sweep::SweepSpec parse(const std::string& text) {
  return cs::sweep::parse_sweep(cs::config::parse_text(text, "sweep.json"), cs::test::catalog());
}

const std::string kBase =
    R"("base": {"model": "megatron-gpt-1.7b", "cluster": "hgx-h100", "parallel": {"tp": 1},
                "training": {"seq": 2048, "global_batch": 8}})";

/// The one problem an InputError carries (the test fails if there is not exactly one).
cs::InputProblem only_problem(const std::string& text) {
  try {
    (void)parse(text);
  } catch (const cs::InputError& e) {
    REQUIRE(e.problems().size() == 1);
    return e.problems().front();
  }
  FAIL("no InputError");
  return {};
}

}  // namespace

TEST_CASE("sweep axes expand in pointer order, the first varying slowest") {
  // Written micro_batch first and tp dotted: the order is the pointers' byte order all the same.
  const auto s = parse("{" + kBase + R"(, "axes": {"/training/micro_batch": [1, 2], "parallel.tp": [1, 2, 4]}})");
  REQUIRE(s.columns == std::vector<std::string>{"/parallel/tp", "/training/micro_batch"});
  REQUIRE(s.points.size() == 6);
  const int want[6][2] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 1}, {4, 2}};
  for (std::size_t i = 0; i < 6; ++i) {
    const auto& p = s.points[i];
    CHECK(p.index == i);
    REQUIRE(p.overrides.size() == 2);
    CHECK(p.overrides[0].pointer == "/parallel/tp");
    CHECK(p.overrides[0].value == want[i][0]);
    CHECK(p.overrides[1].pointer == "/training/micro_batch");
    CHECK(p.overrides[1].value == want[i][1]);
  }
  // A point's document is the base with its overrides set; its path names the point.
  const auto doc = cs::sweep::point_doc(s, s.points[3]);
  CHECK(doc.path == "point 3");
  CHECK(doc.json["parallel"]["tp"] == 2);
  CHECK(doc.json["training"]["micro_batch"] == 2);
  CHECK(doc.json["training"]["seq"] == 2048);
}

TEST_CASE("sweep points lists keep their order, and columns are the fields in order of first use") {
  const auto s = parse("{" + kBase + R"(, "points": [{"parallel.tp": 2}, {"/training/micro_batch": "4"}, {}]})");
  CHECK(s.columns == std::vector<std::string>{"/parallel/tp", "/training/micro_batch"});
  REQUIRE(s.points.size() == 3);
  CHECK(s.points[0].overrides == std::vector<cs::sweep::Override>{{"/parallel/tp", 2}});
  // Text is read as --set reads it: "4" for an integer field is the integer 4.
  CHECK(s.points[1].overrides == std::vector<cs::sweep::Override>{{"/training/micro_batch", 4}});
  CHECK(s.points[2].overrides.empty());
}

TEST_CASE("a bad sweep field or value names the sweep file and the pointer of the value") {
  auto p = only_problem("{" + kBase + R"(, "axes": {"/parallel/tp": [1, 2, -4]}})");
  CHECK(p.file == "sweep.json");
  CHECK(p.pointer == "/axes/~1parallel~1tp/2");
  CHECK(p.message.find("parallel.tp") != std::string::npos);
  p = only_problem("{" + kBase + R"(, "axes": {"/parallel/tpp": [1]}})");
  CHECK(p.pointer == "/axes/~1parallel~1tpp");
  CHECK(p.message.find("did you mean 'parallel.tp'") != std::string::npos);
  p = only_problem("{" + kBase + R"(, "points": [{"parallel.tp": 1}, {"training.recompute": "sometimes"}]})");
  CHECK(p.pointer == "/points/1/training.recompute");
  p = only_problem("{" + kBase + R"(, "axes": {"/parallel/tp": []}})");
  CHECK(p.pointer == "/axes/~1parallel~1tp");
  p = only_problem("{" + kBase + R"(, "axes": {"/parallel/tp": [1]}, "points": []})");
  CHECK(p.pointer == "/");
  p = only_problem(R"({"axes": {"/parallel/tp": [1]}})");
  CHECK(p.pointer == "/base");
  // Serving lengths and rates are checked by the serving parser, at the same pointer.
  p = only_problem(R"({"base": {"kind": "infer", "model": "qwen2.5-7b", "cluster": "hgx-h100", "gpus": 1,
      "workload": {"input_len": 128, "output_len": 16, "rate": 1, "requests": 4}},
      "axes": {"/workload/rate": [1, -2]}})");
  CHECK(p.pointer == "/axes/~1workload~1rate/1");
}

TEST_CASE("a sweep refuses a base with variants and a product of axes beyond the limit") {
  auto p = only_problem(
      R"({"base": {"model": "megatron-gpt-1.7b", "cluster": "hgx-h100", "training": {"seq": 2048, "global_batch": 8},
          "variants": [{"name": "a"}]}, "axes": {"/parallel/tp": [1]}})");
  CHECK(p.pointer == "/variants");
  std::string many = "[";
  for (int i = 1; i <= 1001; ++i) many += (i > 1 ? "," : "") + std::to_string(i);
  many += "]";
  p = only_problem("{" + kBase + R"(, "axes": {"/training/micro_batch": )" + many + R"(, "/training/seq": )" + many +
                   "}}");
  CHECK(p.pointer == "/axes");
}

TEST_CASE("every key the reference lists for sweep files is one the parser reads") {
  // Each listed key in a document that is otherwise valid: no "unknown key" problem for it.
  for (const auto& k : cs::sweep::sweep_file_keys()) {
    if (k.key == "base" || k.key == "axes" || k.key == "points") continue;  // in the base document already
    const std::string text = "{" + kBase + R"(, "axes": {"/parallel/tp": [1]}, ")" + k.key + R"(": "text"})";
    CHECK_NOTHROW((void)parse(text));
  }
  CHECK_NOTHROW((void)parse("{" + kBase + R"(, "points": [{}]})"));
  // And a key it does not list is refused, naming it.
  const auto p = only_problem("{" + kBase + R"(, "axes": {"/parallel/tp": [1]}, "nmae": "x"})");
  CHECK(p.pointer == "/nmae");
  CHECK(cs::sweep::sweep_reference_markdown().find("| `axes` |") != std::string::npos);
}
