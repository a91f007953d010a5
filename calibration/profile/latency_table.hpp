#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cs::calib {

/// Where one kernel's time came from, best first: a measured table row at exactly this shape, a
/// point between measured rows, a measured row scaled beyond the table's range by the analytic
/// model, or the analytic model alone (no table, or no row of this kind).
enum class KernelSource : std::uint8_t { kMeasured = 0, kInterpolated = 1, kExtrapolated = 2, kAnalytic = 3 };
inline constexpr int kKernelSources = 4;
[[nodiscard]] const char* kernel_source_name(KernelSource s);

/// A kernel's time and where it came from.
struct KernelTime {
  double seconds = 0;
  KernelSource source = KernelSource::kAnalytic;
  bool operator==(const KernelTime&) const = default;
};

/// A measured latency table: rows of (key, axes..., seconds). The key (the categorical columns
/// joined, e.g. "bfloat16" or "torch_flow|128|0|bfloat16|bfloat16") must match exactly; the axes
/// (shape dimensions, all > 0) are interpolated. Rows need not fill a grid: at each axis in turn
/// the lookup brackets the query between the nearest values present among the rows that match so
/// far, and interpolates log(latency) linearly in log(axis) between the two brackets (exact in
/// each regime a latency follows a power of the dimension: flat when launch-bound, linear when
/// throughput-bound). A query outside an axis's range is clamped to its edge and the leaf row is
/// scaled by the caller's analytic model, model(query) / model(row), on the clamped axes only.
/// Each lookup is O(axes x log rows) per bracket, 2^axes brackets at most.
class LatencyTable {
 public:
  /// The analytic model used to scale beyond the measured range: seconds at a shape (same axes).
  using Model = std::function<double(std::span<const double>)>;

  LatencyTable() = default;
  /// `axis_names`: the numeric columns in lookup order (reports and `clustersim kernels` show them).
  explicit LatencyTable(std::vector<std::string> axis_names);

  /// Adds a row (before `finish`). Rows with the same key and axes are averaged (in log space).
  void add(const std::string& key, std::span<const double> axes, double seconds);
  /// Sorts the rows and merges duplicates; must be called once, after the last `add`.
  void finish();

  /// The latency at `axes` under `key`, or nullopt when no row has this key. `model` may be empty:
  /// then a clamped axis is taken at its edge unscaled (still marked extrapolated).
  [[nodiscard]] std::optional<KernelTime> lookup(const std::string& key, std::span<const double> axes,
                                                 const Model& model = {}) const;

  [[nodiscard]] const std::vector<std::string>& axis_names() const { return axis_names_; }
  [[nodiscard]] std::size_t axes() const { return axis_names_.size(); }
  [[nodiscard]] std::size_t rows() const;
  /// Whether any row has this key.
  [[nodiscard]] bool has(const std::string& key) const { return blocks_.count(key) > 0; }
  /// Every key, sorted.
  [[nodiscard]] std::vector<std::string> keys() const;
  /// The measured range of one axis under one key: (min, max, distinct values); zeros when absent.
  struct Coverage {
    double min = 0, max = 0;
    std::size_t values = 0;
  };
  [[nodiscard]] Coverage coverage(const std::string& key, std::size_t axis) const;

  /// The finished table as bytes, and back: the parsed form sim/config keeps in its cache of
  /// parsed tables (kernel_table_cache.hpp), so a process need not parse 100,000 CSV rows again.
  /// The bytes hold the very doubles the table holds (native byte order: a cache belongs to one
  /// machine), each key's rows 8-byte aligned from the start, so an unpacked table answers every
  /// lookup bit for bit as the packed one did. `unpack` returns nullopt for bytes it does not
  /// recognise or that do not hold together (other version, truncated, rows out of order); it
  /// never reads outside `bytes`. Given `storage` that owns `bytes` (and never changes them), the
  /// table reads its rows where they lie instead of copying them (when they are aligned).
  [[nodiscard]] std::string pack() const;
  /// The packed layout's version (the cache keys its entries by it).
  static constexpr std::uint32_t kPackVersion = 2;
  [[nodiscard]] static std::optional<LatencyTable> unpack(std::string_view bytes,
                                                          std::shared_ptr<const void> storage = {});

 private:
  /// One key's rows, flattened: each row is `axes()` values then log(seconds), sorted by axes;
  /// they lie in `storage_` (immutable and shared, so a copied table shares them).
  struct Block {
    const double* data = nullptr;
    std::size_t size = 0;
    [[nodiscard]] std::size_t rows(std::size_t stride) const { return size / stride; }
  };
  struct Leaf {
    double log_seconds = 0;
    bool interpolated = false;
    bool extrapolated = false;
  };
  Leaf descend(const Block& b, std::size_t depth, std::size_t lo, std::size_t hi, std::span<const double> query,
               std::vector<double>& target, std::vector<char>& clamped, const Model& model) const;

  std::vector<std::string> axis_names_;
  std::map<std::string, std::vector<double>> adding_;  ///< rows by key, before finish()
  std::map<std::string, Block> blocks_;                ///< after finish()
  std::shared_ptr<const void> storage_;                ///< owns what blocks_ point into
  bool finished_ = false;
};

}  // namespace cs::calib
