#include "sim/config/kernel_table_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "sim/config/json_doc.hpp"
#include "sim/config/kernel_table_file.hpp"

namespace cs::config {

namespace fs = std::filesystem;

namespace {

/// Bump when the reader's meaning of a file changes without the schema changing (how cells are
/// trimmed, how duplicates merge): old entries then miss instead of answering the old way.
constexpr std::uint64_t kReaderVersion = 1;
constexpr char kEntryMagic[4] = {'C', 'S', 'K', 'C'};
constexpr std::uint32_t kEntryVersion = 1;
/// An entry's fixed header: magic, version, key, the table file's size, the payload's hash and size.
constexpr std::size_t kHeaderBytes = sizeof kEntryMagic + sizeof(std::uint32_t) + 4 * sizeof(std::uint64_t);

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

/// The entry's key: the file's bytes, under the table's schema and the reader's version.
std::uint64_t entry_key(std::string_view file_bytes, calib::KernelTable table) {
  const auto& s = calib::kernel_table_schema(table);
  std::string schema = std::to_string(kReaderVersion) + '\n' + s.file + '\n' + s.value + '\n';
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

/// The entry's table, or nullopt when it is absent or does not check out.
std::optional<calib::LatencyTable> read_entry(const std::string& file, std::uint64_t key, std::uint64_t source_size) {
  std::error_code ec;
  // An entry is a few times its table file's size; anything far larger is not one of ours.
  const auto on_disk = fs::file_size(file, ec);
  if (ec || on_disk > 64 * source_size + (std::uint64_t{1} << 20)) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes(static_cast<std::size_t>(on_disk), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())) || in.peek() != EOF) return std::nullopt;
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kEntryMagic, sizeof kEntryMagic) != 0) {
    return std::nullopt;
  }
  std::string_view v(bytes);
  v.remove_prefix(sizeof kEntryMagic);
  if (get<std::uint32_t>(v) != kEntryVersion || get<std::uint64_t>(v) != key ||
      get<std::uint64_t>(v) != source_size) {
    return std::nullopt;
  }
  const auto payload_hash = get<std::uint64_t>(v);
  if (get<std::uint64_t>(v) != v.size() || hash_bytes(v) != payload_hash) return std::nullopt;
  return calib::LatencyTable::unpack(v);
}

void write_entry(const std::string& file, std::uint64_t key, std::uint64_t source_size,
                 const calib::LatencyTable& table) {
  static std::atomic<unsigned> serial{0};
  const std::string payload = table.pack();
  std::string bytes(kEntryMagic, sizeof kEntryMagic);
  put(bytes, kEntryVersion);
  put(bytes, key);
  put(bytes, source_size);
  put(bytes, hash_bytes(payload));
  put(bytes, static_cast<std::uint64_t>(payload.size()));
  bytes += payload;
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  if (ec) return;
  const std::string tmp = file + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      out.close();
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed) {
  std::uint64_t h = mix(seed ^ (bytes.size() * 0x9e3779b97f4a7c15ULL));
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ mix(w)) * 0x9e3779b97f4a7c15ULL;
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
                        const calib::LatencyTable& parsed) {
  write_entry(kernel_cache_entry(cache_dir, file_bytes, table), entry_key(file_bytes, table), file_bytes.size(),
              parsed);
}

calib::LatencyTable load_kernel_table(const std::string& path, calib::KernelTable table,
                                      const std::optional<std::string>& cache_dir) {
  std::string bytes = read_file(path);
  if (!cache_dir) return parse_kernel_table(std::move(bytes), path, table);
  const std::uint64_t key = entry_key(bytes, table), size = bytes.size();
  const std::string entry = kernel_cache_entry(*cache_dir, bytes, table);
  if (auto cached = read_entry(entry, key, size)) return std::move(*cached);
  auto parsed = parse_kernel_table(std::move(bytes), path, table);
  write_entry(entry, key, size, parsed);
  return parsed;
}

}  // namespace cs::config
