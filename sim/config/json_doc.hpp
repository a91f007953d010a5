#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace cs::config {

/// A parsed input file: its path (as the user gave it, for messages) and its JSON value.
struct JsonDoc {
  std::string path;
  nlohmann::json json;
};

/// Reads and parses one JSON file: the only function that opens input files (STYLE.md stage 1).
/// A missing file or a syntax error throws InputError naming `path:line:col`.
[[nodiscard]] JsonDoc load(const std::string& path);

/// Parses JSON text that did not come from a file (tests, the command line).
[[nodiscard]] JsonDoc parse_text(const std::string& text, const std::string& origin);

}  // namespace cs::config
