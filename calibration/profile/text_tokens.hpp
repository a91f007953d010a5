#pragma once
#include <charconv>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace cs::calib {

/// The whitespace-separated words of a line of tool output (nccl-tests, nvidia-smi).
[[nodiscard]] inline std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

/// A whole string as a decimal integer; false when it is not one or does not fit (no overflow).
[[nodiscard]] inline bool parse_whole_int(const std::string& s, std::int64_t& out) {
  const char* e = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), e, out);
  return ec == std::errc{} && p == e;
}

/// A whole string as a decimal number; false when it is not one or is out of range.
[[nodiscard]] inline bool parse_whole_double(const std::string& s, double& out) {
  const char* e = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), e, out);
  return ec == std::errc{} && p == e;
}

}  // namespace cs::calib
