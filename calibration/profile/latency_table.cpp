#include "calibration/profile/latency_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "sim/core/check.hpp"

namespace cs::calib {

const char* kernel_source_name(KernelSource s) {
  switch (s) {
    case KernelSource::kMeasured: return "measured";
    case KernelSource::kInterpolated: return "interpolated";
    case KernelSource::kExtrapolated: return "extrapolated";
    case KernelSource::kAnalytic: return "analytic";
  }
  return "?";
}

LatencyTable::LatencyTable(std::vector<std::string> axis_names) : axis_names_(std::move(axis_names)) {}

void LatencyTable::add(const std::string& key, std::span<const double> axes, double seconds) {
  CS_ASSERT(!finished_, "rows are added before finish()");
  CS_ASSERT(axes.size() == axis_names_.size(), "a row has one value per axis");
  CS_ASSERT(seconds > 0, "latencies are positive (the reader refuses others)");
  auto& d = adding_[key];
  for (double a : axes) {
    CS_ASSERT(a > 0, "axis values are positive (the reader refuses others)");
    d.push_back(a);
  }
  d.push_back(std::log(seconds));
}

// What finish() leaves is what the parsed-table cache keeps: a change to its result must raise
// kReaderVersion in sim/config/kernel_table_cache.cpp (calibration/kernels/README.md).
void LatencyTable::finish() {
  CS_ASSERT(!finished_, "finish() once");
  const std::size_t n = axes(), stride = n + 1;
  // Every key's sorted rows, one after another in one array the table keeps.
  auto all = std::make_shared<std::vector<double>>();
  std::vector<std::pair<std::string, std::size_t>> starts;
  for (auto& [key, d] : adding_) {
    const std::size_t rows = d.size() / stride;
    std::vector<std::size_t> order(rows);
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto less = [&d = d, n, stride](std::size_t x, std::size_t y) {
      return std::lexicographical_compare(
          d.begin() + static_cast<std::ptrdiff_t>(x * stride), d.begin() + static_cast<std::ptrdiff_t>(x * stride + n),
          d.begin() + static_cast<std::ptrdiff_t>(y * stride), d.begin() + static_cast<std::ptrdiff_t>(y * stride + n));
    };
    std::stable_sort(order.begin(), order.end(), less);
    starts.emplace_back(key, all->size());
    for (std::size_t i = 0; i < rows;) {
      // Rows with equal axes: one row at their mean log latency.
      std::size_t j = i + 1;
      while (j < rows && !less(order[i], order[j])) ++j;
      double sum = 0;
      for (std::size_t r = i; r < j; ++r) sum += d[order[r] * stride + n];
      for (std::size_t a = 0; a < n; ++a) all->push_back(d[order[i] * stride + a]);
      all->push_back(sum / static_cast<double>(j - i));
      i = j;
    }
  }
  adding_.clear();
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::size_t end = i + 1 < starts.size() ? starts[i + 1].second : all->size();
    blocks_[starts[i].first] = Block{all->data() + starts[i].second, end - starts[i].second};
  }
  storage_ = std::move(all);
  finished_ = true;
}

std::size_t LatencyTable::rows() const {
  std::size_t n = 0;
  for (const auto& [key, b] : blocks_) n += b.rows(axes() + 1);
  return n;
}

std::vector<std::string> LatencyTable::keys() const {
  std::vector<std::string> out;
  for (const auto& [key, b] : blocks_) out.push_back(key);
  return out;
}

LatencyTable::Coverage LatencyTable::coverage(const std::string& key, std::size_t axis) const {
  Coverage c;
  const auto it = blocks_.find(key);
  if (it == blocks_.end() || axis >= axes()) return c;
  const std::size_t stride = axes() + 1;
  std::vector<double> values;
  for (std::size_t r = 0; r < it->second.rows(stride); ++r) values.push_back(it->second.data[r * stride + axis]);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (values.empty()) return c;
  return {values.front(), values.back(), values.size()};
}

LatencyTable::Leaf LatencyTable::descend(const Block& b, std::size_t depth, std::size_t lo, std::size_t hi,
                                         std::span<const double> query, std::vector<double>& target,
                                         std::vector<char>& clamped, const Model& model) const {
  const std::size_t n = axes(), stride = n + 1;
  const auto value = [&](std::size_t row, std::size_t axis) { return b.data[row * stride + axis]; };
  if (depth == n) {
    Leaf leaf{value(lo, n), false, false};
    bool any_clamped = false;
    for (std::size_t a = 0; a < n; ++a) {
      any_clamped = any_clamped || clamped[a] != 0;
      target[a] = clamped[a] ? query[a] : value(lo, a);
    }
    if (any_clamped) {
      leaf.extrapolated = true;
      if (model) {
        std::vector<double> row(n);
        for (std::size_t a = 0; a < n; ++a) row[a] = value(lo, a);
        const double at_row = model(row), at_target = model(target);
        if (at_row > 0 && at_target > 0) leaf.log_seconds += std::log(at_target) - std::log(at_row);
      }
    }
    return leaf;
  }
  // Rows [lo, hi) share axes 0 .. depth-1, so their values of axis `depth` are sorted.
  const auto lower = [&](double v) {
    std::size_t a = lo, z = hi;
    while (a < z) {
      const std::size_t mid = a + (z - a) / 2;
      if (value(mid, depth) < v) {
        a = mid + 1;
      } else {
        z = mid;
      }
    }
    return a;
  };
  const auto upper = [&](double v) {
    std::size_t a = lo, z = hi;
    while (a < z) {
      const std::size_t mid = a + (z - a) / 2;
      if (value(mid, depth) <= v) {
        a = mid + 1;
      } else {
        z = mid;
      }
    }
    return a;
  };
  const double q = query[depth];
  const std::size_t p = lower(q);
  if (p < hi && value(p, depth) == q) {
    clamped[depth] = 0;
    return descend(b, depth + 1, p, upper(q), query, target, clamped, model);
  }
  if (p == lo || p == hi) {
    // Outside the measured range of this axis (among the rows matching so far): its edge.
    const double edge = p == lo ? value(lo, depth) : value(hi - 1, depth);
    clamped[depth] = 1;
    auto leaf = descend(b, depth + 1, lower(edge), upper(edge), query, target, clamped, model);
    clamped[depth] = 0;
    leaf.extrapolated = true;
    return leaf;
  }
  const double v1 = value(p - 1, depth), v2 = value(p, depth);
  clamped[depth] = 0;
  const auto below = descend(b, depth + 1, lower(v1), p, query, target, clamped, model);
  const auto above = descend(b, depth + 1, p, upper(v2), query, target, clamped, model);
  const double w = (std::log(q) - std::log(v1)) / (std::log(v2) - std::log(v1));
  return {(1 - w) * below.log_seconds + w * above.log_seconds, true, below.extrapolated || above.extrapolated};
}

std::optional<KernelTime> LatencyTable::lookup(const std::string& key, std::span<const double> axes_in,
                                               const Model& model) const {
  CS_ASSERT(finished_, "lookups after finish()");
  CS_ASSERT(axes_in.size() == axes(), "a query has one value per axis");
  const auto it = blocks_.find(key);
  if (it == blocks_.end() || it->second.size == 0) return std::nullopt;
  for (double a : axes_in) {
    if (!(a > 0) || !std::isfinite(a)) return std::nullopt;  // no shape to look up (a zero-sized GEMM)
  }
  std::vector<double> target(axes());
  std::vector<char> clamped(axes(), 0);
  const auto leaf = descend(it->second, 0, 0, it->second.rows(axes() + 1), axes_in, target, clamped, model);
  KernelTime t;
  t.seconds = std::exp(leaf.log_seconds);
  t.source = leaf.extrapolated   ? KernelSource::kExtrapolated
             : leaf.interpolated ? KernelSource::kInterpolated
                                 : KernelSource::kMeasured;
  return t;
}

namespace {

/// The packed form's first bytes (its version is LatencyTable::kPackVersion); a change of layout changes the version,
/// and an unpack of another version is refused (the cache then parses the CSV again).
constexpr char kPackMagic[4] = {'C', 'S', 'L', 'T'};

void put_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_text(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

/// Reads the packed form front to back; every read checks the bytes left, and a failed read
/// leaves the reader failed.
struct PackReader {
  std::string_view in;
  bool ok = true;
  bool take(void* dst, std::size_t n) {
    if (!ok || in.size() < n) return ok = false;
    std::memcpy(dst, in.data(), n);
    in.remove_prefix(n);
    return true;
  }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    take(&v, sizeof v);
    return v;
  }
  std::string text() {
    const std::uint64_t n = u64();
    if (!ok || in.size() < n) {
      ok = false;
      return {};
    }
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
};

}  // namespace

std::string LatencyTable::pack() const {
  CS_ASSERT(finished_, "a table is packed after finish()");
  std::string out(kPackMagic, sizeof kPackMagic);
  const std::uint32_t version = kPackVersion;
  out.append(reinterpret_cast<const char*>(&version), sizeof version);
  put_u64(out, axis_names_.size());
  for (const auto& a : axis_names_) put_text(out, a);
  put_u64(out, blocks_.size());
  for (const auto& [key, b] : blocks_) {
    put_text(out, key);
    put_u64(out, b.size);
    out.append((sizeof(double) - out.size() % sizeof(double)) % sizeof(double), '\0');
    out.append(reinterpret_cast<const char*>(b.data), b.size * sizeof(double));
  }
  return out;
}

std::optional<LatencyTable> LatencyTable::unpack(std::string_view bytes, std::shared_ptr<const void> storage) {
  PackReader r{bytes};
  char magic[sizeof kPackMagic] = {};
  std::uint32_t version = 0;
  if (!r.take(magic, sizeof magic) || std::memcmp(magic, kPackMagic, sizeof magic) != 0) return std::nullopt;
  if (!r.take(&version, sizeof version) || version != kPackVersion) return std::nullopt;
  const std::uint64_t n = r.u64();
  if (!r.ok || n == 0 || n > 16) return std::nullopt;
  std::vector<std::string> names;
  for (std::uint64_t i = 0; i < n && r.ok; ++i) names.push_back(r.text());
  LatencyTable t(std::move(names));
  const std::uint64_t blocks = r.u64();
  const std::size_t stride = n + 1;
  // Where each key's rows lie in `bytes` (after the padding that aligns them).
  struct Found {
    std::string key;
    const char* at;
    std::size_t count;
  };
  std::vector<Found> found;
  bool aligned = storage != nullptr;
  for (std::uint64_t i = 0; i < blocks && r.ok; ++i) {
    std::string key = r.text();
    const std::uint64_t count = r.u64();
    const std::size_t pad = (sizeof(double) - (bytes.size() - r.in.size()) % sizeof(double)) % sizeof(double);
    if (!r.ok || r.in.size() < pad || r.in.substr(0, pad).find_first_not_of('\0') != std::string_view::npos) {
      return std::nullopt;
    }
    r.in.remove_prefix(pad);
    if (count == 0 || count % stride != 0 || count > r.in.size() / sizeof(double)) return std::nullopt;
    found.push_back({std::move(key), r.in.data(), count});
    aligned = aligned && reinterpret_cast<std::uintptr_t>(r.in.data()) % alignof(double) == 0;
    r.in.remove_prefix(count * sizeof(double));
  }
  if (!r.ok || !r.in.empty()) return std::nullopt;
  // In place when the caller keeps the bytes and they are aligned; else one copy of the rows.
  std::vector<const double*> rows_at;
  if (aligned) {
    for (const auto& f : found) rows_at.push_back(reinterpret_cast<const double*>(f.at));
    t.storage_ = std::move(storage);
  } else {
    std::size_t total = 0;
    for (const auto& f : found) total += f.count;
    auto copy = std::make_shared<std::vector<double>>(total);
    std::size_t at = 0;
    for (const auto& f : found) {
      std::memcpy(copy->data() + at, f.at, f.count * sizeof(double));
      rows_at.push_back(copy->data() + at);
      at += f.count;
    }
    t.storage_ = std::move(copy);
  }
  for (std::size_t i = 0; i < found.size(); ++i) {
    const double* d = rows_at[i];
    // What finish() leaves: positive finite axes, finite log latencies, rows strictly in order.
    for (std::size_t row = 0; row * stride < found[i].count; ++row) {
      const double* v = d + row * stride;
      bool ok = std::isfinite(v[n]);
      for (std::size_t a = 0; a < n; ++a) ok = ok && v[a] > 0 && v[a] <= std::numeric_limits<double>::max();
      if (!ok) return std::nullopt;
      if (row > 0) {
        const double* u = v - stride;  // the row before: the first axis that differs must grow
        std::size_t a = 0;
        while (a < n && u[a] == v[a]) ++a;
        if (a == n || u[a] > v[a]) return std::nullopt;
      }
    }
    if (!t.blocks_.emplace(std::move(found[i].key), Block{d, found[i].count}).second) return std::nullopt;
  }
  t.finished_ = true;
  return t;
}

}  // namespace cs::calib
