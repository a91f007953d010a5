// The input layer's own limits (issue 16): nesting depth, duplicate keys, number range, and which
// files are read at all.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "sim/config/json_doc.hpp"
#include "sim/core/errors.hpp"

using namespace cs;
namespace fs = std::filesystem;

namespace {

InputProblem only_problem(const std::string& text) {
  try {
    (void)config::parse_text(text, "f.json");
  } catch (const InputError& e) {
    REQUIRE(e.problems().size() == 1);
    return e.problems()[0];
  }
  FAIL("no error");
  return {};
}

/// A file in a fresh temporary folder, removed with it.
struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("cs_json_doc_test_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }
};

}  // namespace

TEST_CASE("nesting up to 64 levels parses, and one more is refused at the bracket that goes too deep") {
  const std::string ok = std::string(config::kMaxJsonDepth, '[') + std::string(config::kMaxJsonDepth, ']');
  CHECK(config::parse_text(ok, "f.json").json.is_array());
  const std::string deep =
      "{\"a\":\n" + std::string(config::kMaxJsonDepth, '[') + std::string(config::kMaxJsonDepth, ']') + "}";
  const auto p = only_problem(deep);
  CHECK(p.file == "f.json:2:64");
  CHECK(p.message == "malformed JSON: nested deeper than 64 levels");
  // 20,000 levels: refused the same way, without walking them recursively.
  CHECK(only_problem(std::string(20000, '[') + std::string(20000, ']')).file == "f.json:1:65");
}

TEST_CASE("brackets inside strings do not count as nesting") {
  const std::string text = "{\"a\": \"" + std::string(100, '[') + "\\\"" + std::string(100, '{') + "\"}";
  CHECK(config::parse_text(text, "f.json").json["a"].get<std::string>().size() == 201);
}

TEST_CASE("a duplicate key is refused with its JSON pointer, at any depth") {
  auto p = only_problem(R"({"a": 1, "a": 2})");
  CHECK(p.pointer == "/a");
  CHECK(p.message == "duplicate key 'a' (JSON keeps only the last one; remove the other)");
  p = only_problem(R"({"x": [{"y": 1}, {"b~/c": {"k": 1, "k": 1}}]})");
  CHECK(p.pointer == "/x/1/b~0~1c/k");
  // The same key in sibling objects is fine.
  CHECK(config::parse_text(R"([{"a": 1}, {"a": 2}])", "f.json").json.size() == 2);
}

TEST_CASE("a number beyond a double's range is bad input with its position, not an internal error") {
  const auto p = only_problem("{\n  \"tp\": 1e309\n}");
  CHECK(p.file == "f.json:2:13");
  CHECK(p.message == "malformed JSON: number overflow parsing '1e309' (beyond the range of a double)");
  // Large integers that a double holds approximately are still numbers.
  CHECK(config::parse_text("[1e308, 99999999999999999999999]", "f.json").json.size() == 2);
}

TEST_CASE("parsed documents keep values, order of arrays and every type") {
  const auto j = config::parse_text(R"({"s": "x", "i": -3, "u": 18446744073709551615, "d": 2.5, "b": true,
                                        "n": null, "a": [1, [2, {"k": "v"}]], "o": {}})",
                                    "f.json")
                     .json;
  CHECK(j["s"] == "x");
  CHECK(j["i"] == -3);
  CHECK(j["u"].is_number_unsigned());
  CHECK(j["d"] == 2.5);
  CHECK(j["b"] == true);
  CHECK(j["n"].is_null());
  CHECK(j["a"][1][1]["k"] == "v");
  CHECK(j["o"].is_object());
}

TEST_CASE("only regular files within the size limit are read") {
  TempDir t;
  const auto small = t.write("small.json", "{\"a\": 1}");
  CHECK(config::load(small).json["a"] == 1);
  try {
    (void)config::read_file(t.dir.string());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.problems()[0].message == "not a regular file (a directory); expected a file");
  }
  try {
    (void)config::read_file("/dev/zero");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.problems()[0].message == "not a regular file (a device or pipe); expected a file");
  }
  {
    const config::FileSizeLimit limit(4);
    CHECK(config::FileSizeLimit::current() == 4);
    try {
      (void)config::read_file(small);
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(e.problems()[0].message == "file is 8 bytes; the limit is 4 (clustersim --max-file-size BYTES raises it)");
    }
  }
  CHECK(config::FileSizeLimit::current() == config::kDefaultMaxFileBytes);
}

TEST_CASE("a symlink loop or an over-long name is a missing file, not an exception") {
  TempDir t;
  fs::create_symlink(t.dir / "b", t.dir / "a");
  fs::create_symlink(t.dir / "a", t.dir / "b");
  for (const std::string& path : {(t.dir / "a").string(), t.dir.string() + "/" + std::string(300, 'x') + ".json"}) {
    try {
      (void)config::load(path);
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(e.problems()[0].message == "cannot open file (does it exist and is it readable?)");
    }
  }
}
