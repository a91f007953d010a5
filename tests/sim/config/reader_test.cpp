#include <doctest/doctest.h>

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"
#include "sim/core/errors.hpp"

using namespace cs;

namespace {
std::vector<InputProblem> problems_of(const std::string& text, auto&& body) {
  const auto doc = config::parse_text(text, "f.json");
  config::Problems problems;
  auto r = config::Reader::root(doc, problems);
  body(r);
  r.finish();
  try {
    problems.throw_if_any();
  } catch (const InputError& e) {
    return e.problems();
  }
  return {};
}
}  // namespace

TEST_CASE("malformed JSON is reported as file:line:col") {
  try {
    (void)config::parse_text("{\n  \"a\": 1,\n  \"b\": }\n", "x.json");
    FAIL("no error");
  } catch (const InputError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].file == "x.json:3:8");
    CHECK(e.problems()[0].message.find("malformed JSON") == 0);
  }
}

TEST_CASE("a missing file names the file") {
  try {
    (void)config::load("/no/such/file.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.what() == std::string("/no/such/file.json: cannot open file (does it exist and is it readable?)"));
  }
}

TEST_CASE("unknown keys are rejected with a did-you-mean suggestion") {
  auto p = problems_of(R"({"bandwith": "1 GB/s"})", [](config::Reader& r) { (void)r.opt_string("bandwidth", ""); });
  REQUIRE(p.size() == 1);
  CHECK(p[0].to_string() == "f.json: /bandwith: unknown key 'bandwith'; did you mean 'bandwidth'?");
}

TEST_CASE("every problem in a file is collected before throwing, each with its JSON pointer") {
  auto p = problems_of(R"({"tp": "eight", "seq": -5, "bw": 450, "nested": {"x": true}})", [](config::Reader& r) {
    (void)r.req_int("tp", 1, 64);
    (void)r.req_int("seq", 1, 100);
    (void)r.req_quantity("bw", Dimension::kBandwidth, 1.0);
    auto n = r.child("nested");
    (void)n.req_string("x");
    n.finish();
    (void)r.req_string("missing");
  });
  REQUIRE(p.size() == 5);
  CHECK(p[0].to_string() == "f.json: /tp: expected an integer from 1 to 64; got a string \"eight\"");
  CHECK(p[1].to_string() == "f.json: /seq: expected an integer from 1 to 100; got -5");
  CHECK(p[2].to_string() ==
        "f.json: /bw: expected a bandwidth such as \"450 GB/s\" or \"400 Gb/s\" (a string with a unit); got the number "
        "450");
  CHECK(p[3].to_string() == "f.json: /nested/x: expected a string; got the boolean true");
  CHECK(p[4].to_string() == "f.json: /missing: missing required field; expected a string");
}

TEST_CASE("enums list their choices and suggest the closest") {
  auto p = problems_of(R"({"op": "allreduse"})", [](config::Reader& r) {
    (void)r.req_enum("op", {"allreduce", "allgather"});
  });
  REQUIRE(p.size() == 1);
  CHECK(p[0].message ==
        "expected one of 'allreduce' or 'allgather'; got a string \"allreduse\" (did you mean 'allreduce'?)");
}
