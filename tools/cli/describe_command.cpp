// `describe [FIELD]`: the scenario fields, from the same table the parser, the flags and `--set`
// use; `describe --markdown` writes docs/config-reference.md (with the sweep file's keys).
#include <iostream>

#include "sim/config/fields.hpp"
#include "sim/config/reader.hpp"
#include "sim/core/errors.hpp"
#include "sim/sweep/sweep_file.hpp"
#include "tools/cli/commands.hpp"

namespace cs::cli {

Action add_describe(CLI::App& app, const Globals& /*g*/) {
  auto* cmd = app.add_subcommand("describe", "the scenario fields: path, type, unit, values, default, flag, meaning");
  struct Opts {
    std::string field;
    bool markdown = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("field", o->field, "one field, as parallel.tp or /parallel/tp (default: list them all)");
  cmd->add_flag("--markdown", o->markdown, "print the whole reference as Markdown (docs/config-reference.md)");
  return [o] {
    if (o->markdown) {
      std::cout << config::config_reference_markdown() << sweep::sweep_reference_markdown();
      return 0;
    }
    if (o->field.empty()) {
      std::cout << config::describe_all();
      return 0;
    }
    bool found = false;
    for (auto kind : {config::ScenarioKind::kTrain, config::ScenarioKind::kInfer}) {
      if (const auto* f = config::find_field(kind, o->field)) {
        std::cout << (found ? "\n" : "") << config::describe_field(*f);
        found = true;
      }
    }
    if (!found) {
      std::vector<std::string> names;
      for (const auto& f : config::scenario_fields()) names.push_back(f.path.substr(1));
      std::string msg = "no scenario field '" + o->field + "' (clustersim describe lists them)";
      std::string dotted = config::pointer_from_path(o->field).substr(o->field.empty() ? 0 : 1);
      if (auto m = config::closest_match(dotted, names)) {
        std::string d = *m;
        for (auto& c : d) c = c == '/' ? '.' : c;
        msg += "; did you mean '" + d + "'?";
      }
      throw InputError("command line", "describe", msg);
    }
    return 0;
  };
}

}  // namespace cs::cli
