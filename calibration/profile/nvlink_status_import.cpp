#include "calibration/profile/nvlink_status_import.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "calibration/profile/text_tokens.hpp"
#include "sim/core/errors.hpp"

namespace cs::calib {

int NvlinkStatus::Gpu::active_links() const {
  return static_cast<int>(
      std::count_if(link_bytes_per_s.begin(), link_bytes_per_s.end(), [](double b) { return b > 0; }));
}

double NvlinkStatus::Gpu::total_bytes_per_s() const {
  double sum = 0;
  for (double b : link_bytes_per_s) sum += b;
  return sum;
}

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

NvlinkStatus parse_nvlink_status(const std::string& text, const std::string& file) {
  NvlinkStatus out;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  auto fail = [&](const std::string& msg) { throw InputError(file + ":" + std::to_string(lineno), "", msg); };
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const auto colon = t.find(':');
    if (colon == std::string::npos) fail("expected 'GPU <n>: <name>' or 'Link <k>: <rate> GB/s'; got '" + t + "'");
    const auto head = split_words(t.substr(0, colon));
    const std::string rest = trim(t.substr(colon + 1));
    // Drivers print "NVML: Unable to retrieve NVLink information as all links are inActive" for a
    // GPU without NVLink: no links, which the GPU's empty list already says.
    if (head.size() == 1 && head[0] == "NVML") continue;
    std::int64_t idx = 0;
    if (head.size() != 2 || !parse_whole_int(head[1], idx) || idx < 0 || idx > 4096)
      fail("expected 'GPU <n>: <name>' or 'Link <k>: <rate> GB/s'; got '" + t + "'");
    if (head[0] == "GPU") {
      NvlinkStatus::Gpu g;
      g.index = static_cast<int>(idx);
      g.name = trim(rest.substr(0, rest.find(" (UUID")));
      out.gpus.push_back(g);
      continue;
    }
    if (head[0] != "Link") fail("expected 'GPU <n>: <name>' or 'Link <k>: <rate> GB/s'; got '" + t + "'");
    if (out.gpus.empty()) fail("a Link line before any 'GPU <n>:' line");
    auto& links = out.gpus.back().link_bytes_per_s;
    if (idx != static_cast<std::int64_t>(links.size()))
      fail("link " + std::to_string(idx) + " out of order (expected link " + std::to_string(links.size()) + ")");
    const std::string r = lower(rest);
    if (r.find("inactive") != std::string::npos || r.find("not active") != std::string::npos ||
        r.find("down") != std::string::npos) {
      links.push_back(0);
      continue;
    }
    const auto words = split_words(rest);
    double gbps = 0;
    if (words.size() != 2 || words[1] != "GB/s" || !parse_whole_double(words[0], gbps) || gbps < 0 || gbps > 1e4)
      fail("expected a link rate such as '26.562 GB/s' or '<inactive>'; got '" + rest + "'");
    links.push_back(gbps * 1e9);
  }
  if (out.gpus.empty()) throw InputError(file, "", "no 'GPU <n>:' line: is this the output of `nvidia-smi nvlink -s`?");
  return out;
}

}  // namespace cs::calib
