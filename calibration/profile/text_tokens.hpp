#pragma once
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

}  // namespace cs::calib
