// The cache of parsed kernel tables (sim/config/kernel_table_cache.hpp): it must answer exactly as
// parsing does, be consulted when it holds an entry, and fall back to parsing (and repair itself)
// when an entry does not check out.
#include <doctest/doctest.h>
#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "calibration/profile/latency_table.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/kernel_table_cache.hpp"
#include "sim/config/kernel_table_file.hpp"
#include "sim/core/errors.hpp"

using cs::calib::KernelTable;
using cs::calib::LatencyTable;
namespace fs = std::filesystem;

namespace {

const std::string kGemm = std::string(CLUSTERSIM_DATA_DIR) + "/calibration/kernels/h100_sxm/gemm_perf.csv.gz";

struct CacheDir {
  fs::path path = fs::temp_directory_path() / ("cs_ktc_" + std::to_string(::getpid()));
  CacheDir() { fs::remove_all(path); }
  ~CacheDir() { fs::remove_all(path); }
  [[nodiscard]] std::string str() const { return path.string(); }
};

std::string slurp(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Every lookup on a spread of shapes (measured, between rows, beyond the range, with and
/// without a scaling model), as the exact bits.
std::vector<double> answers(const LatencyTable& t) {
  std::vector<double> out;
  const LatencyTable::Model roofline = [](std::span<const double> a) { return a[0] * a[1] * a[2]; };
  for (const char* dtype : {"bfloat16", "fp8"}) {
    for (double m : {1.0, 3.0, 64.0, 1000.0, 8192.0, 300000.0}) {
      for (double nk : {128.0, 4096.0, 5000.0, 100000.0}) {
        const double axes[] = {m, nk, 4096};
        for (const auto* model : {&roofline, static_cast<const LatencyTable::Model*>(nullptr)}) {
          const auto r = model ? t.lookup(dtype, axes, *model) : t.lookup(dtype, axes);
          out.push_back(r ? r->seconds : -1);
          out.push_back(r ? static_cast<double>(r->source) : -1);
        }
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a packed kernel table unpacks to one that answers every lookup bit for bit") {
  const auto parsed = cs::config::read_kernel_table(kGemm, KernelTable::kGemm);
  const auto back = LatencyTable::unpack(parsed.pack());
  REQUIRE(back);
  CHECK(back->rows() == parsed.rows());
  CHECK(back->keys() == parsed.keys());
  CHECK(back->axis_names() == parsed.axis_names());
  const auto a = answers(parsed), b = answers(*back);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    CHECK(std::bit_cast<std::uint64_t>(a[i]) == std::bit_cast<std::uint64_t>(b[i]));
  CHECK(back->pack() == parsed.pack());

  // Read in place from storage the caller keeps (the cache's way), aligned or not (then copied).
  const std::string packed = parsed.pack();
  for (std::size_t offset : {std::size_t{0}, std::size_t{8}, std::size_t{3}}) {
    auto storage = std::make_shared<std::vector<double>>(packed.size() / sizeof(double) + 2);
    char* at = reinterpret_cast<char*>(storage->data()) + offset;
    std::memcpy(at, packed.data(), packed.size());
    auto placed = LatencyTable::unpack(std::string_view(at, packed.size()), storage);
    REQUIRE(placed);
    storage.reset();  // the table keeps what it reads from
    const LatencyTable copy = *placed;
    placed.reset();
    CHECK(answers(copy) == a);
  }
}

TEST_CASE("unpack refuses bytes that are not a whole packed table") {
  LatencyTable t({"m", "n"});
  for (double m : {16.0, 64.0}) {
    for (double n : {1024.0, 4096.0}) {
      const double axes[] = {m, n};
      t.add("bf16", axes, m * n * 1e-9);
    }
  }
  t.finish();
  const std::string bytes = t.pack();
  REQUIRE(LatencyTable::unpack(bytes));
  for (std::size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(LatencyTable::unpack(bytes.substr(0, n)));
  CHECK_FALSE(LatencyTable::unpack(bytes + "x"));
  std::string other_version = bytes;
  other_version[4] = static_cast<char>(other_version[4] + 1);
  CHECK_FALSE(LatencyTable::unpack(other_version));
  // The first row's m (16) made larger than the next row's: rows out of order are refused.
  std::string disordered = bytes;
  const double big = 1e9;
  const auto first_row = disordered.size() - 4 * 3 * sizeof(double);
  std::memcpy(disordered.data() + first_row, &big, sizeof big);
  CHECK_FALSE(LatencyTable::unpack(disordered));
}

TEST_CASE("the kernel-table cache is written on a miss, read on a hit, and repaired when it does not check out") {
  CacheDir dir;
  const std::string bytes = cs::config::read_file(kGemm);
  const std::string entry = cs::config::kernel_cache_entry(dir.str(), bytes, KernelTable::kGemm);
  std::uint64_t text_size = 0;
  const auto parsed = cs::config::parse_kernel_table(bytes, kGemm, KernelTable::kGemm, &text_size);
  CHECK(text_size > bytes.size());  // the CSV text, after gunzip

  // A miss parses and writes the entry; the entry then answers as the parse did.
  const auto first = cs::config::load_kernel_table(kGemm, KernelTable::kGemm, dir.str());
  REQUIRE(fs::is_regular_file(entry));
  const std::string written = slurp(entry);
  const auto second = cs::config::load_kernel_table(kGemm, KernelTable::kGemm, dir.str());
  CHECK(answers(first) == answers(parsed));
  CHECK(answers(second) == answers(parsed));
  CHECK(second.pack() == parsed.pack());

  // A hit is read, not parsed: an entry stored under this file's key is what comes back.
  LatencyTable stand_in({"m", "n", "k"});
  const double one[] = {1, 1, 1};
  stand_in.add("bfloat16", one, 1.0);
  stand_in.finish();
  cs::config::store_kernel_table(dir.str(), bytes, KernelTable::kGemm, stand_in, text_size);
  CHECK(cs::config::load_kernel_table(kGemm, KernelTable::kGemm, dir.str()).rows() == 1);

  // ... but not one whose axes are not the schema's (another build's): a miss, parsed again.
  LatencyTable other_axes({"x", "y", "z"});
  other_axes.add("bfloat16", one, 1.0);
  other_axes.finish();
  cs::config::store_kernel_table(dir.str(), bytes, KernelTable::kGemm, other_axes, text_size);
  CHECK(answers(cs::config::load_kernel_table(kGemm, KernelTable::kGemm, dir.str())) == answers(parsed));

  // A hit answers as the parse would under the input size limit in force: a limit below the CSV
  // text's size refuses the file, with the reader's message, whether the entry is there or not.
  REQUIRE(fs::is_regular_file(entry));
  const auto refused = [&](const std::optional<std::string>& cache) {
    const cs::config::FileSizeLimit limit(text_size - 1);
    try {
      (void)cs::config::load_kernel_table(kGemm, KernelTable::kGemm, cache);
    } catch (const cs::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string warm = refused(dir.str());
  CHECK_FALSE(warm.empty());
  CHECK(warm == refused(std::nullopt));

  // The same file read as another table is another entry (the schema is part of the key).
  CHECK(cs::config::kernel_cache_entry(dir.str(), bytes, KernelTable::kMoe) != entry);

  // One flipped byte in the payload: the checksum refuses it, the table is parsed and the entry rewritten.
  cs::config::store_kernel_table(dir.str(), bytes, KernelTable::kGemm, parsed, text_size);
  std::string damaged = slurp(entry);
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x10);
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << damaged;
  CHECK(answers(cs::config::load_kernel_table(kGemm, KernelTable::kGemm, dir.str())) == answers(parsed));
  CHECK(slurp(entry) == written);

  // A truncated entry and an empty one: parsed again.
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << written.substr(0, written.size() / 3);
  CHECK(answers(cs::config::load_kernel_table(kGemm, KernelTable::kGemm, dir.str())) == answers(parsed));
  std::ofstream(entry, std::ios::binary | std::ios::trunc);
  CHECK(answers(cs::config::load_kernel_table(kGemm, KernelTable::kGemm, dir.str())) == answers(parsed));
  CHECK(slurp(entry) == written);
  // Every write went through a temporary file renamed into place: none is left behind.
  for (const auto& f : fs::directory_iterator(fs::path(entry).parent_path())) CHECK(f.path().extension() == ".bin");
}

TEST_CASE("a cache folder that cannot be written is passed over, and table errors are the reader's") {
  CacheDir dir;
  fs::create_directories(dir.path);
  const std::string blocker = (dir.path / "a-file").string();
  std::ofstream(blocker) << "not a folder";
  // The cache folder would be under a regular file: nothing can be written there.
  const auto t = cs::config::load_kernel_table(kGemm, KernelTable::kGemm, blocker + "/cache");
  CHECK(t.rows() == cs::config::read_kernel_table(kGemm, KernelTable::kGemm).rows());

  const std::string bad = (dir.path / "gemm_perf.csv").string();
  std::ofstream(bad) << "gemm_dtype,m,n,k,latency\nbfloat16,16,16,16,-1\n";
  std::string with_cache, without;
  try {
    (void)cs::config::load_kernel_table(bad, KernelTable::kGemm, dir.str());
  } catch (const cs::InputError& e) {
    with_cache = e.what();
  }
  try {
    (void)cs::config::read_kernel_table(bad, KernelTable::kGemm);
  } catch (const cs::InputError& e) {
    without = e.what();
  }
  CHECK_FALSE(with_cache.empty());
  CHECK(with_cache == without);
  CHECK(with_cache.find("gemm_perf.csv:2") != std::string::npos);
}

TEST_CASE("the cache folder comes from CLUSTERSIM_CACHE_DIR, XDG_CACHE_HOME or HOME, and off turns it off") {
  struct Saved {
    const char* name;
    std::optional<std::string> value;
    explicit Saved(const char* n) : name(n) {
      if (const char* v = std::getenv(n)) value = v;
    }
    ~Saved() {
      if (value) {
        ::setenv(name, value->c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
  } cache("CLUSTERSIM_CACHE_DIR"), xdg("XDG_CACHE_HOME"), home("HOME");
  ::setenv("CLUSTERSIM_CACHE_DIR", "/somewhere/cache", 1);
  CHECK(cs::config::kernel_cache_dir() == std::optional<std::string>("/somewhere/cache"));
  for (const char* off : {"off", ""}) {
    ::setenv("CLUSTERSIM_CACHE_DIR", off, 1);
    CHECK_FALSE(cs::config::kernel_cache_dir());
  }
  ::unsetenv("CLUSTERSIM_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  ::setenv("HOME", "/home/user", 1);
  CHECK(cs::config::kernel_cache_dir() == std::optional<std::string>("/xdg/clustersim"));
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(cs::config::kernel_cache_dir() == std::optional<std::string>("/home/user/.cache/clustersim"));
  ::unsetenv("HOME");
  CHECK_FALSE(cs::config::kernel_cache_dir());
}
