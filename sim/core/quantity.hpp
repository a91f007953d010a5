#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace cs {

/// The physical dimension a quantity string must have. Values are returned in SI base units:
/// bytes, bytes/s, seconds, FLOP/s, FLOP, or a plain number.
enum class Dimension { kBytes, kBandwidth, kTime, kFlopRate, kFlops, kCount };

[[nodiscard]] std::string_view dimension_name(Dimension d);

/// Parses "80 GiB", "450 GB/s", "400 Gb/s", "2.5 us", "989 TFLOP/s", "1G" (bytes, nccl-tests
/// style, powers of two when no unit letter 'B' follows: "1G" = 2^30). Returns the value in SI
/// units, or an error message saying what was expected.
struct QuantityResult {
  double value = 0.0;
  std::string error;  ///< empty on success
};
[[nodiscard]] QuantityResult parse_quantity(std::string_view text, Dimension dim);

/// Shortest text that round-trips a double ("0.1", "1e-06"); the form every writer uses.
[[nodiscard]] std::string shortest(double v);
/// Fixed notation with `decimals` digits after the point.
[[nodiscard]] std::string fixed(double v, int decimals);
/// A CSV cell (RFC 4180): the text itself, or quoted with inner quotes doubled when it holds a
/// comma, a quote or a line break.
[[nodiscard]] std::string csv_cell(const std::string& text);
/// Human bytes: "1.50 GiB", "512 KiB", "8 B" (powers of two, as nccl-tests and nvidia-smi print).
[[nodiscard]] std::string human_bytes(double bytes);

}  // namespace cs
