#include "sim/config/kernel_table_cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "sim/config/json_doc.hpp"
#include "sim/config/kernel_table_file.hpp"

namespace cs::config {

namespace fs = std::filesystem;

namespace {

/// Bump when the reader's meaning of a file changes without the schema changing (how cells are
/// trimmed, how duplicates merge): old entries then miss instead of answering the old way.
constexpr std::uint64_t kReaderVersion = 1;
constexpr char kEntryMagic[4] = {'C', 'S', 'K', 'C'};
constexpr std::uint32_t kEntryVersion = 3;
/// An entry's fixed header: magic, version, key, the table file's size, its CSV text's size (after
/// gunzip), the payload's hash and size.
constexpr std::size_t kHeaderBytes = sizeof kEntryMagic + sizeof(std::uint32_t) + 5 * sizeof(std::uint64_t);

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

/// The entry's key: the file's bytes, under the table's schema, the reader's version and the
/// entry's and packed table's layouts (two builds that differ in any of them keep entries apart
/// instead of overwriting each other's on every run).
std::uint64_t entry_key(std::string_view file_bytes, calib::KernelTable table) {
  const auto& s = calib::kernel_table_schema(table);
  std::string schema = std::to_string(kReaderVersion) + '.' + std::to_string(kEntryVersion) + '.' +
                       std::to_string(calib::LatencyTable::kPackVersion) + '\n' + s.file + '\n' + s.value + '\n';
  for (const char* k : s.keys) schema += std::string(k) + ',';
  schema += '\n';
  for (const char* a : s.axes) schema += std::string(a) + ',';
  schema.append(reinterpret_cast<const char*>(&s.to_seconds), sizeof s.to_seconds);
  return hash_bytes(file_bytes, hash_bytes(schema));
}

std::string hex(std::uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = digits[v & 15];
  return out;
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
T get(std::string_view& in) {
  T v{};
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return v;
}

struct Entry {
  calib::LatencyTable table;
  std::uint64_t text_size = 0;  ///< the CSV text's size, after gunzip
};

/// The entry's table, or nullopt when it is absent or does not check out.
std::optional<Entry> read_entry(const std::string& file, std::uint64_t key, std::uint64_t source_size) {
  // Mapped, not read: the table reads its rows where they lie (no copy, no fresh pages to clear;
  // the cache's files are only ever replaced by rename, never rewritten in place).
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const auto size = regular ? static_cast<std::size_t>(st.st_size) : 0;
  // An entry is a few times its table file's size; anything far larger is not one of ours.
  if (size < kHeaderBytes || size > 64 * source_size + (std::uint64_t{1} << 20)) {
    ::close(fd);
    return std::nullopt;
  }
  void* at = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (at == MAP_FAILED) return std::nullopt;
  const std::shared_ptr<const char> buffer(static_cast<const char*>(at),
                                           [size](const char* p) { ::munmap(const_cast<char*>(p), size); });
  std::string_view v(buffer.get(), size);
  if (std::memcmp(v.data(), kEntryMagic, sizeof kEntryMagic) != 0) return std::nullopt;
  v.remove_prefix(sizeof kEntryMagic);
  if (get<std::uint32_t>(v) != kEntryVersion || get<std::uint64_t>(v) != key || get<std::uint64_t>(v) != source_size) {
    return std::nullopt;
  }
  const auto text_size = get<std::uint64_t>(v);
  const auto payload_hash = get<std::uint64_t>(v);
  if (get<std::uint64_t>(v) != v.size() || hash_bytes(v) != payload_hash) return std::nullopt;
  auto table = calib::LatencyTable::unpack(v, buffer);
  if (!table) return std::nullopt;
  return Entry{std::move(*table), text_size};
}

void write_entry(const std::string& file, std::uint64_t key, std::uint64_t source_size, std::uint64_t text_size,
                 const calib::LatencyTable& table) {
  const std::string payload = table.pack();
  std::string bytes(kEntryMagic, sizeof kEntryMagic);
  put(bytes, kEntryVersion);
  put(bytes, key);
  put(bytes, source_size);
  put(bytes, text_size);
  put(bytes, hash_bytes(payload));
  put(bytes, static_cast<std::uint64_t>(payload.size()));
  bytes += payload;
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  if (ec) return;
  // A name no other writer can hold (mkstemp opens it exclusively: processes on other hosts sharing
  // the folder, or in other containers, cannot collide on it), readable by all like any cache file.
  // mkstemp's template: it replaces the trailing six 'X' with a unique suffix.
  std::string tmp = file + ".tmp." + std::string(6, 'X');
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return;
  bool ok = ::fchmod(fd, 0644) == 0;
  for (std::size_t done = 0; ok && done < bytes.size();) {
    const auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    done += ok ? static_cast<std::size_t>(n) : 0;
  }
  ok = ::close(fd) == 0 && ok;
  if (ok) fs::rename(tmp, file, ec);
  if (!ok || ec) fs::remove(tmp, ec);
}

}  // namespace

std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed) {
  // Four independent lanes over 32-byte strides (a single chain of multiplies would wait on
  // itself: hashing a 3 MB entry was a third of loading it), joined at the end.
  constexpr std::uint64_t k = 0x9e3779b97f4a7c15ULL;
  std::uint64_t lane[4] = {mix(seed ^ (bytes.size() * k)), mix(seed + 1), mix(seed + 2), mix(seed + 3)};
  std::size_t i = 0;
  for (; i + 32 <= bytes.size(); i += 32) {
    std::uint64_t w[4];
    std::memcpy(w, bytes.data() + i, sizeof w);
    for (int l = 0; l < 4; ++l) lane[l] = std::rotl(lane[l] + w[l] * 0xc2b2ae3d27d4eb4fULL, 31) * k;
  }
  std::uint64_t h = lane[0];
  for (int l = 1; l < 4; ++l) h = mix(h ^ lane[l]) * k;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ mix(w)) * k;
  }
  std::uint64_t tail = 0;
  if (i < bytes.size()) std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  return mix(h ^ mix(tail ^ (bytes.size() - i)));
}

std::optional<std::string> kernel_cache_dir() {
  if (const char* d = std::getenv("CLUSTERSIM_CACHE_DIR")) {
    const std::string dir(d);
    if (dir.empty() || dir == "off") return std::nullopt;
    return dir;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/clustersim";
  if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/clustersim";
  return std::nullopt;
}

std::string kernel_cache_entry(const std::string& cache_dir, std::string_view file_bytes, calib::KernelTable table) {
  return cache_dir + "/kernel-tables/" + hex(entry_key(file_bytes, table)) + ".bin";
}

void store_kernel_table(const std::string& cache_dir, std::string_view file_bytes, calib::KernelTable table,
                        const calib::LatencyTable& parsed, std::uint64_t text_size) {
  write_entry(kernel_cache_entry(cache_dir, file_bytes, table), entry_key(file_bytes, table), file_bytes.size(),
              text_size, parsed);
}

calib::LatencyTable load_kernel_table(const std::string& path, calib::KernelTable table,
                                      const std::optional<std::string>& cache_dir) {
  std::string bytes = read_file(path);
  if (!cache_dir) return parse_kernel_table(std::move(bytes), path, table);
  const std::uint64_t key = entry_key(bytes, table), size = bytes.size();
  const std::string entry = kernel_cache_entry(*cache_dir, bytes, table);
  // A hit answers as the parse would: not for a file the input size limit now refuses (the parse
  // then says so), and only with the axes the schema reads (else it is another build's: a miss).
  if (auto cached = read_entry(entry, key, size)) {
    const auto& axes = calib::kernel_table_schema(table).axes;
    const auto& names = cached->table.axis_names();
    const bool same_axes =
        names.size() == axes.size() && std::equal(names.begin(), names.end(), axes.begin(),
                                                  [](const std::string& a, const char* b) { return a == b; });
    if (same_axes && cached->text_size <= FileSizeLimit::current()) return std::move(cached->table);
  }
  std::uint64_t text_size = 0;
  auto parsed = parse_kernel_table(std::move(bytes), path, table, &text_size);
  write_entry(entry, key, size, text_size, parsed);
  return parsed;
}

}  // namespace cs::config
