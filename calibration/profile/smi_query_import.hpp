#pragma once
#include <map>
#include <string>
#include <vector>

namespace cs::calib {

/// `nvidia-smi -q`, read: the facts the rental check needs for each GPU. Numbers are SI (bytes,
/// watts, hertz); -1 where the output does not give them.
struct SmiQuery {
  std::string driver_version;
  struct Gpu {
    std::string bus_id;
    std::string name;          ///< Product Name
    double memory_bytes = -1;  ///< FB Memory Usage / Total
    double power_limit_w = -1, default_power_limit_w = -1, max_power_limit_w = -1;
    double sm_clock_hz = -1, max_sm_clock_hz = -1;
    int pcie_gen = -1, pcie_gen_max = -1, pcie_width = -1, pcie_width_max = -1;
    /// Clock event (throttle) reasons reported "Active", e.g. "SW Power Cap", "HW Slowdown";
    /// "Idle" and "Applications Clocks Setting" are left out (not a limit).
    std::vector<std::string> clock_limits;
  };
  std::vector<Gpu> gpus;
};

/// Parses the text: "key : value" lines nested by indentation under "GPU <bus id>" blocks. Lines
/// starting with '#' before the log are comments. Throws InputError naming `file:line` for a
/// malformed number in a field it reads, and the file when it has no GPU block or fewer blocks than
/// "Attached GPUs" says (truncated).
[[nodiscard]] SmiQuery parse_smi_query(const std::string& text, const std::string& file);

}  // namespace cs::calib
