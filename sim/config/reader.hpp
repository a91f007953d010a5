#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"

namespace cs::config {

struct JsonDoc;

/// Collects every problem found in one parse (up to 20) so a user fixes them in one pass.
class Problems {
 public:
  void add(InputProblem p);
  [[nodiscard]] bool empty() const { return list_.empty(); }
  /// How many problems are recorded (to tell whether one field's read added any).
  [[nodiscard]] std::size_t size() const { return list_.size(); }
  /// Throws InputError with everything collected, if anything was.
  void throw_if_any() const;

 private:
  std::vector<InputProblem> list_;
};

/// Walks one JSON object, tracking the file and JSON pointer, checking each field's type and range,
/// and marking keys consumed so that `finish()` can reject unknown ones with a suggestion.
/// On a bad field it records a problem and returns a neutral value, so parsing goes on.
class Reader {
 public:
  Reader(const nlohmann::json& value, std::string file, std::string pointer, Problems& problems);
  /// A reader over a whole document's root object.
  static Reader root(const JsonDoc& doc, Problems& problems);

  [[nodiscard]] bool has(const std::string& key) const;
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& pointer() const { return pointer_; }
  [[nodiscard]] std::string pointer_of(const std::string& key) const;
  [[nodiscard]] bool ok() const { return is_object_; }

  std::string req_string(const std::string& key);
  std::string opt_string(const std::string& key, const std::string& fallback);
  std::string req_enum(const std::string& key, const std::vector<std::string>& choices);
  std::string opt_enum(const std::string& key, const std::vector<std::string>& choices, const std::string& fallback);
  std::int64_t req_int(const std::string& key, std::int64_t min, std::int64_t max);
  std::int64_t opt_int(const std::string& key, std::int64_t min, std::int64_t max, std::int64_t fallback);
  double req_number(const std::string& key, double min, double max);
  double opt_number(const std::string& key, double min, double max, double fallback);
  bool req_bool(const std::string& key);
  bool opt_bool(const std::string& key, bool fallback);
  /// A quantity string with a unit of dimension `dim` (a bare number is an error), in SI units.
  double req_quantity(const std::string& key, Dimension dim, double min_si = 0.0);
  double opt_quantity(const std::string& key, Dimension dim, double fallback);
  /// A required nested object.
  Reader child(const std::string& key);
  std::optional<Reader> opt_child(const std::string& key);
  /// Each element of an array of objects (an empty vector if absent or mistyped).
  std::vector<Reader> each(const std::string& key, bool required = true);
  std::vector<std::string> opt_string_list(const std::string& key);
  /// Marks a key as consumed without reading it (its value is read through `raw`).
  const nlohmann::json* raw(const std::string& key);
  /// The keys of this object in document order, each marked consumed.
  std::vector<std::string> keys();

  /// Records a problem at this object (or at `key` under it).
  void fail(const std::string& message) const;
  void fail_at(const std::string& key, const std::string& message) const;
  /// Reports every key not read, with a "did you mean" suggestion.
  void finish();

 private:
  const nlohmann::json* find(const std::string& key, bool required, const char* expected);
  const nlohmann::json& value_;
  std::string file_;
  std::string pointer_;
  Problems* problems_;
  bool is_object_ = false;
  std::set<std::string> consumed_;
};

/// The closest of `candidates` to `word` by edit distance, if close enough to suggest.
[[nodiscard]] std::optional<std::string> closest_match(const std::string& word,
                                                       const std::vector<std::string>& candidates);
/// Human description of a JSON value's type ("a string", "a number").
[[nodiscard]] std::string json_type_name(const nlohmann::json& v);

}  // namespace cs::config
