#pragma once
#include <memory>
#include <string>

#include "calibration/profile/hardware_profile.hpp"
#include "sim/config/catalog.hpp"

namespace cs::config {

/// Reads one measured kernel table (CSV, or CSV compressed with gzip) into a LatencyTable by its
/// schema (calib::kernel_table_schema): a header row naming the columns (any order; extra ones
/// ignored), then one row per measurement. Every key, axis and latency column must be present;
/// axes and latencies must be positive finite numbers. A problem is an InputError naming
/// `path:line` and the column.
[[nodiscard]] calib::LatencyTable read_kernel_table(const std::string& path, calib::KernelTable table);
/// The same on a table file's bytes already read (gzip or plain); `path` names it in messages.
/// `text_size`, when given, receives the size of the CSV text (after gunzip: what the input size
/// limit holds it to).
[[nodiscard]] calib::LatencyTable parse_kernel_table(std::string bytes, const std::string& path,
                                                     calib::KernelTable table, std::uint64_t* text_size = nullptr);

/// The table file of `table` in `dir` (`<stem>.csv.gz` first, then `<stem>.csv`), or "" if absent.
[[nodiscard]] std::string kernel_table_path(const std::string& dir, calib::KernelTable table);

/// A folder of tables, each read on its first use and kept (thread-safe).
[[nodiscard]] std::shared_ptr<const calib::KernelTableSource> open_kernel_folder(const std::string& dir);

/// Connects a profile's `kernel_tables` to their folder: an id names calibration/kernels/<id>/ in
/// the catalog, a path (with a '/') is taken relative to the profile file's folder. The catalog
/// keeps each folder once, so every scenario of a run shares its loaded tables. A missing folder
/// is an InputError naming the profile file and `/kernel_tables/id`. A profile without tables is
/// left as it is.
void attach_kernel_tables(const Catalog& catalog, const std::string& profile_path, calib::HardwareProfile& profile);

}  // namespace cs::config
