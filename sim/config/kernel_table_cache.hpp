#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "calibration/profile/kernel_tables.hpp"

namespace cs::config {

/// A cache of parsed kernel tables between runs. Parsing the H100's GEMM table (100,000 gzip CSV
/// rows) takes about 50 ms, longer than simulating a one-node training step; its parsed form
/// (LatencyTable::pack) loads in a few. An entry is keyed by the table file's bytes, the table's
/// schema and the packed format, so a changed file, a changed reader or a new build that packs
/// differently simply misses and parses again; an entry that does not check out (truncated, other
/// machine's format, a wrong checksum) is parsed again and rewritten. Entries are written to a
/// temporary name and renamed into place, so concurrent processes never read a half-written one.
/// The cache only saves time: a lookup answers bit for bit the same either way (tests hold this).

/// The cache's folder: $CLUSTERSIM_CACHE_DIR, else $XDG_CACHE_HOME/clustersim, else
/// $HOME/.cache/clustersim; nullopt when CLUSTERSIM_CACHE_DIR is "off" or empty, or no folder can
/// be named. The folder is created on the first write; a folder that cannot be written is skipped.
[[nodiscard]] std::optional<std::string> kernel_cache_dir();

/// read_kernel_table, through the cache in `cache_dir` (none: parse only). Errors in the table
/// file are the reader's InputErrors, named as without the cache.
[[nodiscard]] calib::LatencyTable load_kernel_table(const std::string& path, calib::KernelTable table,
                                                    const std::optional<std::string>& cache_dir);

/// Keeps `parsed` as the entry for a table file of these bytes: written under a name of its own,
/// then renamed into place (atomic on one file system). A failure to write leaves the cache as it
/// was and is not an error: the cache only saves time.
/// `text_size`: the CSV text's size after gunzip (a hit is refused when the input size limit in
/// force is below it, as the parse would refuse the file).
void store_kernel_table(const std::string& cache_dir, std::string_view file_bytes, calib::KernelTable table,
                        const calib::LatencyTable& parsed, std::uint64_t text_size);

/// The cache file an entry for these table-file bytes would take (tests look at it).
[[nodiscard]] std::string kernel_cache_entry(const std::string& cache_dir, std::string_view file_bytes,
                                             calib::KernelTable table);

/// A 64-bit hash of bytes (not cryptographic: it keys and checks cache entries).
[[nodiscard]] std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed = 0);

}  // namespace cs::config
