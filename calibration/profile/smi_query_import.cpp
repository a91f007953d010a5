#include "calibration/profile/smi_query_import.hpp"

#include <sstream>
#include <utility>

#include "calibration/profile/text_tokens.hpp"
#include "sim/core/errors.hpp"

namespace cs::calib {

namespace {

struct Field {
  std::string value;
  int line = 0;
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

/// One GPU block: fields by path ("Clocks/SM", "FB Memory Usage/Total").
using Block = std::map<std::string, Field>;

const Field* find(const Block& b, std::initializer_list<const char*> paths) {
  for (const char* p : paths) {
    auto it = b.find(p);
    if (it != b.end() && it->second.value != "N/A" && it->second.value != "[N/A]") return &it->second;
  }
  return nullptr;
}

/// "<number> <unit>" (or "<number>x" for link widths) -> number x scale; -1 when absent.
double number(const Block& b, std::initializer_list<const char*> paths, const std::string& unit, double scale,
              const std::string& file) {
  const Field* f = find(b, paths);
  if (!f) return -1;
  std::string v = f->value;
  if (!unit.empty()) {
    const auto words = split_words(v);
    if (words.size() != 2 || words[1] != unit) {
      throw InputError(file + ":" + std::to_string(f->line), "",
                       "expected a number in " + unit + "; got '" + f->value + "'");
    }
    v = words[0];
  } else if (!v.empty() && v.back() == 'x') {
    v.pop_back();  // link width "16x"
  }
  double x = 0;
  if (!parse_whole_double(v, x) || x < 0 || x > 1e12) {
    throw InputError(file + ":" + std::to_string(f->line), "",
                     "expected a number" + (unit.empty() ? std::string() : " in " + unit) + "; got '" + f->value + "'");
  }
  return x * scale;
}

int integer(const Block& b, std::initializer_list<const char*> paths, const std::string& file) {
  const Field* f = find(b, paths);
  if (!f) return -1;
  std::string v = f->value;
  if (!v.empty() && v.back() == 'x') v.pop_back();
  std::int64_t x = 0;
  if (!parse_whole_int(v, x) || x < 0 || x > 1024) {
    throw InputError(file + ":" + std::to_string(f->line), "", "expected a small whole number; got '" + f->value + "'");
  }
  return static_cast<int>(x);
}

}  // namespace

SmiQuery parse_smi_query(const std::string& text, const std::string& file) {
  SmiQuery out;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  std::vector<std::pair<std::size_t, std::string>> sections;  // (indent, name) above the current line
  std::vector<Block> blocks;
  std::vector<std::string> bus_ids;
  std::int64_t attached = -1;
  int attached_line = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#' || t[0] == '=') continue;
    const std::size_t indent = line.find_first_not_of(" \t");
    while (!sections.empty() && sections.back().first >= indent) sections.pop_back();
    const auto colon = t.find(" : ");
    const bool is_gpu_header = indent == 0 && t.rfind("GPU ", 0) == 0 && colon == std::string::npos;
    if (is_gpu_header) {
      blocks.emplace_back();
      bus_ids.push_back(trim(t.substr(4)));
      sections.clear();
      continue;
    }
    if (colon == std::string::npos) {
      // A section header ("Clocks", "FB Memory Usage"); may end in ':' on some drivers.
      std::string name = t;
      if (!name.empty() && name.back() == ':') name.pop_back();
      sections.emplace_back(indent, trim(name));
      continue;
    }
    const std::string key = trim(t.substr(0, colon)), value = trim(t.substr(colon + 3));
    if (blocks.empty()) {
      if (key == "Driver Version") out.driver_version = value;
      if (key == "Attached GPUs") {
        attached_line = lineno;
        if (!parse_whole_int(value, attached) || attached < 0 || attached > 4096) {
          throw InputError(file + ":" + std::to_string(lineno), "",
                           "expected the number of attached GPUs; got '" + value + "'");
        }
      }
      continue;
    }
    std::string path;
    for (const auto& [ind, name] : sections) path += name + "/";
    blocks.back()[path + key] = Field{value, lineno};
    // Some drivers print a value on a section's own line ("Clocks Event Reasons : 0x1"): deeper
    // lines that follow belong to it.
    sections.emplace_back(indent, key);
  }
  if (blocks.empty()) throw InputError(file, "", "no 'GPU <bus id>' block: is this the output of `nvidia-smi -q`?");
  if (attached >= 0 && static_cast<std::size_t>(attached) != blocks.size()) {
    throw InputError(file + ":" + std::to_string(attached_line), "",
                     "'Attached GPUs' says " + std::to_string(attached) + " but " + std::to_string(blocks.size()) +
                         " GPU blocks follow (truncated?)");
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto& b = blocks[i];
    SmiQuery::Gpu g;
    g.bus_id = bus_ids[i];
    if (const Field* f = find(b, {"Product Name"})) g.name = f->value;
    g.memory_bytes = number(b, {"FB Memory Usage/Total"}, "MiB", 1048576.0, file);
    g.power_limit_w = number(b,
                             {"GPU Power Readings/Current Power Limit", "Power Readings/Current Power Limit",
                              "GPU Power Readings/Power Limit", "Power Readings/Power Limit"},
                             "W", 1.0, file);
    g.default_power_limit_w =
        number(b, {"GPU Power Readings/Default Power Limit", "Power Readings/Default Power Limit"}, "W", 1.0, file);
    g.max_power_limit_w =
        number(b, {"GPU Power Readings/Max Power Limit", "Power Readings/Max Power Limit"}, "W", 1.0, file);
    g.sm_clock_hz = number(b, {"Clocks/SM"}, "MHz", 1e6, file);
    g.max_sm_clock_hz = number(b, {"Max Clocks/SM"}, "MHz", 1e6, file);
    g.pcie_gen = integer(b, {"PCI/GPU Link Info/PCIe Generation/Current"}, file);
    g.pcie_gen_max =
        integer(b, {"PCI/GPU Link Info/PCIe Generation/Device Max", "PCI/GPU Link Info/PCIe Generation/Max"}, file);
    g.pcie_width = integer(b, {"PCI/GPU Link Info/Link Width/Current"}, file);
    g.pcie_width_max = integer(b, {"PCI/GPU Link Info/Link Width/Max"}, file);
    for (const char* section : {"Clocks Event Reasons/", "Clocks Throttle Reasons/"}) {
      for (const auto& [path, f] : b) {
        if (path.rfind(section, 0) != 0 || f.value != "Active") continue;
        const std::string reason = path.substr(std::string(section).size());
        if (reason == "Idle" || reason == "Applications Clocks Setting" || reason.find('/') != std::string::npos)
          continue;
        g.clock_limits.push_back(reason);
      }
    }
    out.gpus.push_back(g);
  }
  return out;
}

}  // namespace cs::calib
