#pragma once
#include <cstdint>

namespace cs {

/// The most resident memory this process has held so far, in bytes (the kernel's high-water
/// mark; 0 where it cannot be read). Reported in `run_info`, never in compared results.
[[nodiscard]] std::uint64_t peak_rss_bytes();

}  // namespace cs
