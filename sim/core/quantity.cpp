#include "sim/core/quantity.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace cs {

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::kBytes: return "a size such as \"80 GiB\" or \"512 MB\"";
    case Dimension::kBandwidth: return "a bandwidth such as \"450 GB/s\" or \"400 Gb/s\"";
    case Dimension::kTime: return "a time such as \"2.5 us\" or \"1 ms\"";
    case Dimension::kFlopRate: return "a rate such as \"989 TFLOP/s\"";
    case Dimension::kFlops: return "a FLOP count such as \"3.2 PFLOP\"";
    case Dimension::kCount: return "a number";
  }
  return "a quantity";
}

namespace {

struct Unit {
  std::string_view name;
  Dimension dim;
  double scale;
};

// Decimal prefixes for rates and sizes (GB = 1e9 B, as datasheets and nccl-tests' GB/s use);
// binary ones (GiB) for memory capacities as nvidia-smi prints them.
constexpr std::array<Unit, 41> kUnits{{
    {"B", Dimension::kBytes, 1.0},
    {"kB", Dimension::kBytes, 1e3},
    {"KB", Dimension::kBytes, 1e3},
    {"MB", Dimension::kBytes, 1e6},
    {"GB", Dimension::kBytes, 1e9},
    {"TB", Dimension::kBytes, 1e12},
    {"KiB", Dimension::kBytes, 1024.0},
    {"MiB", Dimension::kBytes, 1048576.0},
    {"GiB", Dimension::kBytes, 1073741824.0},
    {"TiB", Dimension::kBytes, 1099511627776.0},
    {"K", Dimension::kBytes, 1024.0},
    {"M", Dimension::kBytes, 1048576.0},
    {"G", Dimension::kBytes, 1073741824.0},
    {"B/s", Dimension::kBandwidth, 1.0},
    {"MB/s", Dimension::kBandwidth, 1e6},
    {"GB/s", Dimension::kBandwidth, 1e9},
    {"TB/s", Dimension::kBandwidth, 1e12},
    {"Mb/s", Dimension::kBandwidth, 1e6 / 8},
    {"Gb/s", Dimension::kBandwidth, 1e9 / 8},
    {"Tb/s", Dimension::kBandwidth, 1e12 / 8},
    {"GiB/s", Dimension::kBandwidth, 1073741824.0},
    {"s", Dimension::kTime, 1.0},
    {"ms", Dimension::kTime, 1e-3},
    {"us", Dimension::kTime, 1e-6},
    {"ns", Dimension::kTime, 1e-9},
    {"ps", Dimension::kTime, 1e-12},
    {"min", Dimension::kTime, 60.0},
    {"h", Dimension::kTime, 3600.0},
    {"FLOP/s", Dimension::kFlopRate, 1.0},
    {"GFLOP/s", Dimension::kFlopRate, 1e9},
    {"TFLOP/s", Dimension::kFlopRate, 1e12},
    {"PFLOP/s", Dimension::kFlopRate, 1e15},
    {"TOPS", Dimension::kFlopRate, 1e12},
    {"FLOP", Dimension::kFlops, 1.0},
    {"GFLOP", Dimension::kFlops, 1e9},
    {"TFLOP", Dimension::kFlops, 1e12},
    {"PFLOP", Dimension::kFlops, 1e15},
    {"EFLOP", Dimension::kFlops, 1e18},
    {"", Dimension::kCount, 1.0},
    {"k", Dimension::kCount, 1e3},
    {"%", Dimension::kCount, 0.01},
}};

}  // namespace

QuantityResult parse_quantity(std::string_view text, Dimension dim) {
  std::string_view s = text;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  double number = 0.0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  const std::string expected = "expected " + std::string(dimension_name(dim)) + "; got \"" + std::string(text) + "\"";
  if (ec != std::errc{} || !std::isfinite(number)) return {0.0, expected};
  std::string_view unit(ptr, static_cast<std::size_t>(s.data() + s.size() - ptr));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (unit.empty() && dim != Dimension::kCount) return {0.0, expected + " (a bare number needs a unit)"};
  for (const auto& u : kUnits) {
    if (u.name == unit) {
      if (u.dim != dim) return {0.0, expected + " (unit '" + std::string(unit) + "' has the wrong dimension)"};
      return {number * u.scale, ""};
    }
  }
  return {0.0, expected + " (unknown unit '" + std::string(unit) + "')"};
}

std::string shortest(double v) {
  std::array<char, 64> buf{};
  auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return ec == std::errc{} ? std::string(buf.data(), ptr) : std::string("nan");
}

std::string fixed(double v, int decimals) {
  std::array<char, 64> buf{};
  auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed, decimals);
  return ec == std::errc{} ? std::string(buf.data(), ptr) : std::string("nan");
}

std::string human_bytes(double bytes) {
  static constexpr std::array<const char*, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t i = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && i + 1 < kNames.size()) {
    v /= 1024.0;
    ++i;
  }
  if (i == 0) return fixed(v, 0) + " B";
  return fixed(v, v >= 100 ? 0 : (v >= 10 ? 1 : 2)) + " " + kNames[i];
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace cs
