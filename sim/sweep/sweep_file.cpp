#include "sim/sweep/sweep_file.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "sim/config/reader.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"

namespace cs::sweep {

namespace {

using config::Field;
using config::FieldType;
using config::ScenarioKind;

std::string dotted(const std::string& pointer) {
  std::string out = pointer.substr(pointer.empty() ? 0 : 1);
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

/// Problems collected by a reader, moved to one pointer of the sweep file and told which field.
void move_problems(const config::Problems& problems, const std::string& file, const std::string& where, const Field& f,
                   std::vector<InputProblem>& out) {
  try {
    problems.throw_if_any();
  } catch (const InputError& e) {
    for (const auto& p : e.problems()) out.push_back({file, where, p.message + " (field " + dotted(f.path) + ")"});
  }
}

/// One override's value as the scenario takes it, checked as `--set` is checked: text goes through
/// the same `value_from_text`, the result through the field's reader. Problems land at `where`.
nlohmann::json checked_value(const config::JsonDoc& base, const Field& f, const nlohmann::json& raw,
                             const std::string& file, const std::string& where, const config::Catalog& catalog,
                             std::vector<InputProblem>& out) {
  const nlohmann::json v = raw.is_string() ? config::value_from_text(&f, raw.get<std::string>()) : raw;
  config::Problems problems;
  if (f.type == FieldType::kLength || f.type == FieldType::kRate) {
    // The serving parser reads these itself: parse the base with the value set and keep only what
    // it says about this field (anything else depends on the point, and is the point's row).
    config::JsonDoc doc = base;
    config::set_path(doc.json, f.path, v, file);
    try {
      (void)config::parse_serving(doc, catalog);
    } catch (const InputError& e) {
      for (const auto& p : e.problems()) {
        if (p.pointer == f.path || p.pointer.rfind(f.path + "/", 0) == 0) problems.add(p);
      }
    } catch (const InfeasibleError&) {
    }
  } else {
    nlohmann::json object = nlohmann::json::object();
    object[f.key()] = v;
    config::Reader r(object, file, "", problems);
    (void)config::read_field(r, f);
  }
  move_problems(problems, file, where, f, out);
  return v;
}

/// The field a key of the sweep file names ("parallel.tp" or "/parallel/tp"), or a problem.
const Field* field_for(ScenarioKind kind, const std::string& key, const std::string& file, const std::string& where,
                       std::vector<InputProblem>& out) {
  if (const auto* f = config::find_field(kind, key)) return f;
  std::vector<std::string> names;
  for (const auto* f : config::fields_of(kind)) names.push_back(dotted(f->path));
  std::string message =
      std::string("no ") + (kind == ScenarioKind::kInfer ? "serving" : "training") + " scenario field '" + key + "'";
  if (auto near = config::closest_match(dotted(config::pointer_from_path(key)), names))
    message += "; did you mean '" + *near + "'?";
  out.push_back({file, where, message + " (clustersim describe lists the fields)"});
  return nullptr;
}

config::JsonDoc load_base(config::Reader& root, const config::JsonDoc& doc) {
  const auto* raw = root.raw("base");
  if (!raw) {
    root.fail_at("base", "missing required field; expected a scenario file path or a scenario object");
    return {};
  }
  if (raw->is_string()) {
    std::filesystem::path p(raw->get<std::string>());
    if (p.is_relative()) p = std::filesystem::path(doc.path).parent_path() / p;
    return config::load(p.string());
  }
  if (raw->is_object()) return config::JsonDoc{doc.path + " (base)", *raw};
  root.fail_at("base", "expected a scenario file path or a scenario object; got " + config::json_type_name(*raw));
  return {};
}

ScenarioKind base_kind(const config::JsonDoc& base, const std::string& file) {
  const auto& j = base.json;
  if (!j.contains("kind") || j["kind"] == "train") return ScenarioKind::kTrain;
  if (j["kind"] == "infer") return ScenarioKind::kInfer;
  throw InputError(base.path, "/kind",
                   std::string("a sweep runs training (\"train\") or serving (\"infer\") ") + "scenarios; got " +
                       j["kind"].dump() + " (sweep file " + file + ")");
}

}  // namespace

const std::vector<SweepKey>& sweep_file_keys() {
  static const std::vector<SweepKey> keys{
      {"name", "string", "a title for people reading the file (not used in the output)", false},
      {"description", "string", "what the sweep is for (not used in the output)", false},
      {"base", "string or object",
       "the scenario every point starts from: a scenario file's path (relative to the sweep file's folder) or a "
       "scenario object; training or serving (\"kind\": \"infer\"), without variants",
       true},
      {"axes", "object",
       "field -> non-empty list of values; the points are their cartesian product, axes in the byte order of their "
       "pointers, the last varying fastest (one of axes and points)",
       false},
      {"points", "array of objects",
       "an explicit list of points, each an object of field -> value, run in the order given (one of axes and points)",
       false},
  };
  return keys;
}

std::string sweep_reference_markdown() {
  std::string s =
      "\n## Sweep files (`clustersim sweep`)\n\n"
      "A sweep file runs one base scenario over field overrides (docs/sweep.md). Fields in `axes` and `points` are "
      "the scenario fields above, named as `--set` names them (`parallel.tp` or `/parallel/tp`), each value checked "
      "as `--set` checks it.\n\n"
      "| key | type | required | meaning |\n|---|---|---|---|\n";
  for (const auto& k : sweep_file_keys())
    s += "| `" + k.key + "` | " + k.type + " | " + (k.required ? "yes" : "no") + " | " + k.meaning + " |\n";
  return s;
}

SweepSpec parse_sweep(const config::JsonDoc& doc, const config::Catalog& catalog) {
  SweepSpec out;
  out.path = doc.path;
  config::Problems problems;
  auto root = config::Reader::root(doc, problems);
  (void)root.opt_string("name", "");
  (void)root.opt_string("description", "");
  problems.throw_if_any();
  out.base = load_base(root, doc);
  problems.throw_if_any();
  if (!out.base.json.is_object())
    throw InputError(out.base.path, "", "expected a scenario object; got " + config::json_type_name(out.base.json));
  out.kind = base_kind(out.base, doc.path);
  if (out.base.json.contains("variants")) {
    throw InputError(out.base.path, "/variants",
                     "a sweep's base is one scenario; list the variants as the sweep's `points` instead");
  }
  const bool has_axes = root.has("axes"), has_points = root.has("points");
  if (has_axes == has_points) {
    root.fail(has_axes ? "give either `axes` or `points`, not both"
                       : "missing `axes` (field -> list of values) or `points` (a list of override objects)");
    (void)root.raw("axes");
    (void)root.raw("points");
  }
  std::vector<InputProblem> bad;
  if (has_axes && !has_points) {
    out.cartesian = true;
    const auto* axes = root.raw("axes");
    if (!axes->is_object() || axes->empty()) {
      root.fail_at("axes", "expected an object of field -> list of values, with at least one field; got " +
                               (axes->is_object() ? std::string("an empty object") : config::json_type_name(*axes)));
    } else {
      // Keyed by the field's pointer, so "parallel.tp" and "/parallel/tp" are one axis.
      std::map<std::string, std::vector<nlohmann::json>> values;
      for (auto it = axes->begin(); it != axes->end(); ++it) {
        const std::string where = "/axes/" + config::escape_pointer_token(it.key());
        const auto* f = field_for(out.kind, it.key(), doc.path, where, bad);
        if (!f) continue;
        if (values.count(f->path)) {
          bad.push_back({doc.path, where, "field " + dotted(f->path) + " is already an axis (under another spelling)"});
          continue;
        }
        if (!it->is_array() || it->empty()) {
          bad.push_back({doc.path, where,
                         "expected a non-empty list of values; got " +
                             (it->is_array() ? std::string("an empty array") : config::json_type_name(*it))});
          continue;
        }
        auto& list = values[f->path];
        for (std::size_t i = 0; i < it->size(); ++i) {
          list.push_back(
              checked_value(out.base, *f, (*it)[i], doc.path, where + "/" + std::to_string(i), catalog, bad));
        }
      }
      if (bad.empty()) {
        std::size_t total = 1;
        for (const auto& [pointer, list] : values) {
          out.columns.push_back(pointer);
          if (total > kMaxPoints / list.size()) {
            throw InputError(doc.path, "/axes",
                             "the axes make more than " + std::to_string(kMaxPoints) +
                                 " points; split the sweep into several files");
          }
          total *= list.size();
        }
        // Odometer order: the last axis varies fastest, like nested loops written in column order.
        std::vector<std::size_t> digit(out.columns.size(), 0);
        for (std::size_t n = 0; n < total; ++n) {
          Point p;
          p.index = n;
          for (std::size_t a = 0; a < out.columns.size(); ++a)
            p.overrides.push_back({out.columns[a], values[out.columns[a]][digit[a]]});
          out.points.push_back(std::move(p));
          for (std::size_t a = out.columns.size(); a-- > 0;) {
            if (++digit[a] < values[out.columns[a]].size()) break;
            digit[a] = 0;
          }
        }
      }
    }
  } else if (has_points && !has_axes) {
    const auto* list = root.raw("points");
    if (!list->is_array() || list->empty()) {
      root.fail_at("points", "expected a non-empty list of override objects; got " +
                                 (list->is_array() ? std::string("an empty array") : config::json_type_name(*list)));
    } else if (list->size() > kMaxPoints) {
      root.fail_at("points", "more than " + std::to_string(kMaxPoints) + " points; split the sweep into several files");
    } else {
      for (std::size_t i = 0; i < list->size(); ++i) {
        const auto& obj = (*list)[i];
        const std::string at = "/points/" + std::to_string(i);
        if (!obj.is_object()) {
          bad.push_back({doc.path, at, "expected an object of field -> value; got " + config::json_type_name(obj)});
          continue;
        }
        Point p;
        p.index = i;
        std::set<std::string> seen;
        for (auto it = obj.begin(); it != obj.end(); ++it) {
          const std::string where = at + "/" + config::escape_pointer_token(it.key());
          const auto* f = field_for(out.kind, it.key(), doc.path, where, bad);
          if (!f) continue;
          if (!seen.insert(f->path).second) {
            bad.push_back({doc.path, where, "field " + dotted(f->path) + " is set twice in this point"});
            continue;
          }
          p.overrides.push_back({f->path, checked_value(out.base, *f, *it, doc.path, where, catalog, bad)});
          if (std::find(out.columns.begin(), out.columns.end(), f->path) == out.columns.end())
            out.columns.push_back(f->path);
        }
        out.points.push_back(std::move(p));
      }
    }
  }
  root.finish();
  for (auto& p : bad) problems.add(std::move(p));
  problems.throw_if_any();
  return out;
}

config::JsonDoc point_doc(const SweepSpec& spec, const Point& point) {
  config::JsonDoc doc{"point " + std::to_string(point.index), spec.base.json};
  for (const auto& o : point.overrides) config::set_path(doc.json, o.pointer, o.value, doc.path);
  return doc;
}

}  // namespace cs::sweep
