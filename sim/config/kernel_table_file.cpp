#include "sim/config/kernel_table_file.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <string_view>

#include "sim/config/json_doc.hpp"
#include "sim/config/kernel_table_cache.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/inflate.hpp"

namespace cs::config {

namespace fs = std::filesystem;

namespace {

/// Splits one CSV line at commas (the tables are written without quoting: PROVENANCE.md).
void split(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t start = 0;
  for (std::size_t i = 0; i <= line.size(); ++i) {
    if (i == line.size() || line[i] == ',') {
      out.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

/// A folder's tables, each parsed once on first use.
class FolderSource : public calib::KernelTableSource {
 public:
  explicit FolderSource(std::string dir) : dir_(std::move(dir)), cache_dir_(kernel_cache_dir()) {
    for (auto t : calib::all_kernel_tables()) paths_[static_cast<std::size_t>(t)] = kernel_table_path(dir_, t);
  }
  [[nodiscard]] bool has(calib::KernelTable t) const override { return !paths_[static_cast<std::size_t>(t)].empty(); }
  [[nodiscard]] const calib::LatencyTable* table(calib::KernelTable t) const override {
    const auto i = static_cast<std::size_t>(t);
    if (paths_[i].empty()) return nullptr;
    // A failed read (a malformed file) throws from call_once and leaves it to be tried again, so
    // every user of the table sees the same error.
    std::call_once(once_[i], [&] { tables_[i] = load_kernel_table(paths_[i], t, cache_dir_); });
    return &tables_[i];
  }

 private:
  std::string dir_;
  std::optional<std::string> cache_dir_;
  std::array<std::string, calib::kKernelTables> paths_;
  mutable std::array<std::once_flag, calib::kKernelTables> once_;
  mutable std::array<calib::LatencyTable, calib::kKernelTables> tables_;
};

}  // namespace

std::string kernel_table_path(const std::string& dir, calib::KernelTable table) {
  const std::string stem = dir + "/" + calib::kernel_table_schema(table).file + ".csv";
  if (is_regular_file(stem + ".gz")) return stem + ".gz";
  if (is_regular_file(stem)) return stem;
  return "";
}

calib::LatencyTable read_kernel_table(const std::string& path, calib::KernelTable table) {
  return parse_kernel_table(read_file(path), path, table);
}

// The parsed-table cache keeps what this returns: a change to how a file reads must raise
// kReaderVersion in sim/config/kernel_table_cache.cpp.
calib::LatencyTable parse_kernel_table(std::string bytes, const std::string& path, calib::KernelTable table,
                                       std::uint64_t* text_size) {
  const auto& schema = calib::kernel_table_schema(table);
  if (is_gzip(bytes)) bytes = gunzip(bytes, path, FileSizeLimit::current());
  if (text_size) *text_size = bytes.size();
  const std::string_view text(bytes);
  std::size_t pos = 0, line_no = 0;
  const auto next_line = [&](std::string_view& line) {
    if (pos >= text.size()) return false;
    const auto end = text.find('\n', pos);
    line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    ++line_no;
    return true;
  };
  const auto at = [&](std::size_t line) { return path + ":" + std::to_string(line); };
  std::string_view line;
  if (!next_line(line)) throw InputError(path, "", "empty file; expected a header row naming the columns");
  std::vector<std::string_view> cells;
  split(trim(line), cells);
  const auto column = [&](const char* name) -> std::size_t {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (trim(cells[i]) == name) return i;
    }
    std::string all;
    for (const char* k : schema.keys) all += std::string(k) + ", ";
    for (const char* a : schema.axes) all += std::string(a) + ", ";
    all += schema.value;
    throw InputError(at(1), "",
                     std::string("no column '") + name + "'; a " + schema.file + " table needs the columns " + all);
  };
  std::vector<std::size_t> key_cols, axis_cols;
  for (const char* k : schema.keys) key_cols.push_back(column(k));
  for (const char* a : schema.axes) axis_cols.push_back(column(a));
  const std::size_t value_col = column(schema.value);
  const std::size_t width = cells.size();
  std::vector<std::string> axis_names(schema.axes.begin(), schema.axes.end());
  calib::LatencyTable out(axis_names);
  std::vector<double> axes(axis_cols.size());
  std::string key;
  const auto number = [&](std::string_view cell, const char* name) {
    cell = trim(cell);
    double v = 0;
    const auto r = std::from_chars(cell.data(), cell.data() + cell.size(), v);
    if (r.ec != std::errc{} || r.ptr != cell.data() + cell.size() || !std::isfinite(v) || v <= 0) {
      throw InputError(
          at(line_no), "",
          std::string("column '") + name + "': expected a positive number; got '" + std::string(cell) + "'");
    }
    return v;
  };
  std::size_t rows = 0;
  while (next_line(line)) {
    line = trim(line);
    if (line.empty()) continue;
    split(line, cells);
    if (cells.size() != width) {
      throw InputError(at(line_no), "",
                       "expected " + std::to_string(width) + " comma-separated cells as in the header; got " +
                           std::to_string(cells.size()));
    }
    key.clear();
    for (std::size_t i = 0; i < key_cols.size(); ++i) {
      if (i > 0) key += '|';
      const auto cell = trim(cells[key_cols[i]]);
      if (cell.empty()) throw InputError(at(line_no), "", std::string("column '") + schema.keys[i] + "' is empty");
      key.append(cell);
    }
    for (std::size_t i = 0; i < axis_cols.size(); ++i) axes[i] = number(cells[axis_cols[i]], schema.axes[i]);
    out.add(key, axes, number(cells[value_col], schema.value) * schema.to_seconds);
    ++rows;
  }
  if (rows == 0) throw InputError(path, "", "no rows after the header; expected one measurement per row");
  out.finish();
  return out;
}

std::shared_ptr<const calib::KernelTableSource> open_kernel_folder(const std::string& dir) {
  return std::make_shared<FolderSource>(dir);
}

void attach_kernel_tables(const Catalog& catalog, const std::string& profile_path, calib::HardwareProfile& profile) {
  auto& refs = profile.kernel_tables.refs;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    auto& kt = refs[i];
    const std::string at = refs.size() == 1 && !profile.kernel_tables.listed
                               ? "/kernel_tables/id"
                               : "/kernel_tables/" + std::to_string(i) + "/id";
    std::string dir;
    if (kt.id.find('/') != std::string::npos) {
      const fs::path base = fs::path(profile_path).parent_path();
      dir = fs::path(kt.id).is_absolute() ? kt.id : (base / kt.id).lexically_normal().string();
    } else {
      dir = catalog.root() + "/calibration/kernels/" + kt.id;
    }
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      throw InputError(profile_path, at,
                       "no folder of kernel tables '" + kt.id + "'" +
                           (kt.id.find('/') == std::string::npos ? " in calibration/kernels/" : "") +
                           " (see calibration/kernels/README.md)");
    }
    bool any = false;
    for (auto t : calib::all_kernel_tables()) any = any || !kernel_table_path(dir, t).empty();
    if (!any) {
      throw InputError(profile_path, at,
                       "the folder '" + dir + "' holds no kernel table (expected files such as gemm_perf.csv.gz)");
    }
    kt.dir = dir;
    kt.data = catalog.kernel_folder(dir);
  }
}

}  // namespace cs::config
