#pragma once
#include <string>
#include <vector>

namespace cs::calib {

/// `nvidia-smi nvlink -s` (or `--status`), read: per GPU, its name and each NVLink's rate.
struct NvlinkStatus {
  struct Gpu {
    int index = 0;
    std::string name;
    /// Per link, in link order: bytes/s per direction as the driver reports it; 0 = inactive.
    std::vector<double> link_bytes_per_s;
    [[nodiscard]] int active_links() const;
    [[nodiscard]] double total_bytes_per_s() const;  ///< summed over active links
  };
  std::vector<Gpu> gpus;
};

/// Parses the text: "GPU <n>: <name> (UUID: ...)" lines, each followed by "Link <k>: <x> GB/s" or
/// "Link <k>: <inactive>" lines (none for a GPU without NVLink). Lines starting with '#' are
/// comments. Throws InputError naming `file:line` for any other line or a malformed number, and
/// the file when it names no GPU.
[[nodiscard]] NvlinkStatus parse_nvlink_status(const std::string& text, const std::string& file);

}  // namespace cs::calib
