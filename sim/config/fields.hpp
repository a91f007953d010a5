#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "sim/config/reader.hpp"
#include "sim/config/scenario_file.hpp"

namespace cs::config {

/// The two kinds of scenario file ("kind": "train" or "infer").
enum class ScenarioKind { kTrain, kInfer };
[[nodiscard]] const char* scenario_kind_name(ScenarioKind k);

/// How a field is written in JSON (and read from a flag or `--set`).
enum class FieldType {
  kString,
  kEnum,    ///< a string, one of `choices`
  kInt,     ///< an integer in [min, max]
  kNumber,  ///< a number in [min, max]
  kBool,
  kTime,    ///< a quantity string with a time unit ("500 ms"), at least `min` seconds
  kLength,  ///< a positive integer, or a range "lo-hi" drawn uniformly
  kRate,    ///< a positive number of requests per second, or "inf"
};
[[nodiscard]] const char* field_type_name(FieldType t);

/// Where a training field lands in `ScenarioSpec` (stage 2); none for fields read and dropped.
using SpecMember = std::variant<std::monostate, std::string ScenarioSpec::*, int ScenarioSpec::*,
                                std::int64_t ScenarioSpec::*, double ScenarioSpec::*, bool ScenarioSpec::*>;

/// One scenario field: everything the parser, `--set`, the CLI flags, `--dump-resolved`,
/// `clustersim describe` and docs/config-reference.md know about it. Adding a field is one entry
/// here plus its use.
struct Field {
  ScenarioKind kind = ScenarioKind::kTrain;
  std::string path;  ///< JSON pointer, e.g. "/parallel/tp"
  FieldType type = FieldType::kString;
  std::string unit;  ///< what one unit of the value is ("GPUs", "tokens"); empty when unitless
  double min = 0, max = 0;
  std::vector<std::string> choices;  ///< kEnum
  bool required = false;             ///< required (inside its object, when the object is optional)
  nlohmann::json fallback;           ///< what parsing stores when absent (null: nothing)
  std::string default_text;          ///< the default as a reader should understand it
  std::string flag;                  ///< the `train`/`infer` flag that sets it; empty: none
  std::string meaning;               ///< one line
  SpecMember member;                 ///< training fields: where the value goes
  /// Training fields: the value as resolved (`--dump-resolved`); null to leave it out.
  nlohmann::ordered_json (*resolved)(const Scenario&) = nullptr;

  /// The last token of the path: the key inside its object.
  [[nodiscard]] std::string key() const;
  /// The path of the object holding it ("" for the root, "/parallel").
  [[nodiscard]] std::string object() const;
};

/// Every field of both kinds: training first, then serving, each in the order they are parsed.
[[nodiscard]] const std::vector<Field>& scenario_fields();
[[nodiscard]] std::vector<const Field*> fields_of(ScenarioKind kind);
/// The field at `path` ("a.b" or "/a/b") of one kind, or null.
[[nodiscard]] const Field* find_field(ScenarioKind kind, const std::string& path);
/// The field at `path`; a missing entry is our bug.
[[nodiscard]] const Field& field(ScenarioKind kind, const std::string& path);
/// "a.b" -> "/a/b"; a path starting with '/' is returned as is.
[[nodiscard]] std::string pointer_from_path(const std::string& path);
/// The flag of a field (for the messages whose wording names one; see docs/design.md).
[[nodiscard]] const std::string& flag_of(ScenarioKind kind, const std::string& path);

/// Reads one field from the reader of its object, checked as its entry says (messages as the
/// Reader words them); absent optional fields give `fallback`. kLength and kRate are read by
/// the serving parser itself.
[[nodiscard]] nlohmann::json read_field(Reader& r, const Field& f);
[[nodiscard]] std::int64_t read_int(Reader& r, const Field& f);
[[nodiscard]] double read_number(Reader& r, const Field& f);
[[nodiscard]] bool read_bool(Reader& r, const Field& f);
[[nodiscard]] std::string read_string(Reader& r, const Field& f);

/// A value typed text becomes for this field (a flag's text, or the right side of `--set`):
/// strings, enums and quantities stay text; integers that read as integers become numbers; other
/// text is parsed as JSON when it is valid JSON, else kept as a string (the parser then says
/// what was expected). `f` may be null (a path of no field).
[[nodiscard]] nlohmann::json value_from_text(const Field* f, const std::string& text);

/// `clustersim describe FIELD`: every line the table has on it.
[[nodiscard]] std::string describe_field(const Field& f);
/// `clustersim describe`: one line per field, both kinds.
[[nodiscard]] std::string describe_all();
/// docs/config-reference.md, generated from the table.
[[nodiscard]] std::string config_reference_markdown();

}  // namespace cs::config
