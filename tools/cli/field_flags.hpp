#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "sim/config/fields.hpp"
#include "sim/core/errors.hpp"

namespace cs::cli {

/// The flags of `train` or `infer`, made from the field table: one per field that names a flag,
/// typed as the field is, with the field's meaning as its help. Values land at the field's path.
class FieldFlags {
 public:
  /// Registers the flags of `kind`'s fields, except those in `skip` (flags the command handles
  /// itself). Required fields make required flags.
  FieldFlags(CLI::App* cmd, config::ScenarioKind kind, const std::set<std::string>& skip = {});
  /// Writes every flag given on the command line into `doc` at its field's path.
  void put(nlohmann::json& doc) const;
  /// The text given for a flag, or empty.
  [[nodiscard]] std::string text(const std::string& flag) const;

 private:
  CLI::App* cmd_;
  config::ScenarioKind kind_;
  std::map<std::string, long long> ints_;
  std::map<std::string, double> numbers_;
  std::map<std::string, bool> bools_;
  std::map<std::string, std::string> texts_;
};

/// Problems found in JSON built from flags name the flag instead of the field: the pointer of a
/// problem becomes its field's flag (or `extra`'s entry), and a field path in the message text
/// becomes the flag too. Problems of files are left as they are.
[[nodiscard]] InputError name_flags(const InputError& e, config::ScenarioKind kind,
                                    const std::map<std::string, std::string>& extra = {});

/// Where JSON built from flags says it came from.
inline constexpr const char* kCommandLine = "command line";

}  // namespace cs::cli
