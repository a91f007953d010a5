#include "sim/sweep/sweep_output.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "sim/config/fields.hpp"
#include "sim/config/reader.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/report/svg_chart.hpp"

namespace cs::sweep {

namespace {

using config::ScenarioKind;

/// A number as JSON writes it: the shortest text that reads back as the same double.
std::string number_text(double v) { return std::isfinite(v) ? nlohmann::json(v).dump() : std::string(); }

/// An override's value as a cell: strings without quotes, anything else as JSON.
std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string dotted(const std::string& pointer) {
  std::string out = pointer.substr(pointer.empty() ? 0 : 1);
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

/// How the table shows a metric: its heading and the value in display units.
struct Display {
  std::string heading;
  double scale;
  int decimals;
};
const std::vector<Display>& displays(ScenarioKind kind) {
  static const std::vector<Display> train{
      {"step (ms)", 1e3, 1}, {"MFU (%)", 100, 1}, {"tokens/s", 1, 0}, {"GiB/GPU", 1, 1}};
  // p50, p90 and p99: the percentiles infer, infer-sweep and plan report.
  static const std::vector<Display> serve{
      {"TTFT p50 (ms)", 1e3, 1}, {"TTFT p90 (ms)", 1e3, 1}, {"TTFT p99 (ms)", 1e3, 1}, {"TPOT p50 (ms)", 1e3, 2},
      {"TPOT p90 (ms)", 1e3, 2}, {"TPOT p99 (ms)", 1e3, 2}, {"tokens/s", 1, 0},        {"req/s", 1, 2}};
  return kind == ScenarioKind::kInfer ? serve : train;
}

const nlohmann::json* value_at(const Row& row, const std::string& pointer) {
  for (const auto& o : row.overrides) {
    if (o.pointer == pointer) return &o.value;
  }
  return nullptr;
}

[[noreturn]] void bad(const config::Problems& problems) {
  problems.throw_if_any();
  throw InputError("", "", "unreadable sweep results");  // not reached: callers add a problem first
}

std::size_t metric_index(const Results& r, const std::string& y) {
  const auto& names = metric_names(r.kind);
  const auto it = std::find(names.begin(), names.end(), y);
  if (it == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw InputError("command line", "--y", "expected one of the metrics " + list + "; got '" + y + "'");
  }
  return static_cast<std::size_t>(it - names.begin());
}

std::string x_column(const Results& r, const std::string& x) {
  const std::string pointer = config::pointer_from_path(x);
  if (std::find(r.columns.begin(), r.columns.end(), pointer) == r.columns.end()) {
    std::string list;
    for (const auto& c : r.columns) list += (list.empty() ? "" : ", ") + c;
    throw InputError(
        "command line", "--x",
        "expected a field the sweep sets (" + (list.empty() ? std::string("none") : list) + "); got '" + x + "'");
  }
  return pointer;
}

void check_numbers(const std::vector<Override>& overrides, const std::string& pointer) {
  for (const auto& o : overrides) {
    if (o.pointer == pointer && !o.value.is_number()) {
      throw InputError(
          "command line", "--x",
          "the values of " + pointer + " are not all numbers (" + o.value.dump() + "); plot against a numeric field");
    }
  }
}

}  // namespace

void check_svg_args(const Results& r, const std::vector<Point>& points, const std::string& x, const std::string& y) {
  (void)metric_index(r, y);
  const auto pointer = x_column(r, x);
  for (const auto& p : points) check_numbers(p.overrides, pointer);
}

std::string svg(const Results& r, const std::string& x, const std::string& y) {
  const std::size_t m = metric_index(r, y);
  const auto pointer = x_column(r, x);
  for (const auto& row : r.rows) check_numbers(row.overrides, pointer);
  const auto& d = displays(r.kind)[m];
  report::svg::LineChart chart;
  // The file's name, not its path: a title has one line of room.
  chart.title =
      d.heading + " against " + dotted(pointer) + " (" + std::filesystem::path(r.sweep).filename().string() + ")";
  const auto* f = config::find_field(r.kind, pointer);
  chart.x.title = dotted(pointer) + (f && !f->unit.empty() ? " (" + f->unit + ")" : "");
  chart.x.from_zero = false;
  chart.y.title = d.heading;
  // One series per combination of the other fields' values, in the order each first appears. A
  // field that takes one value for each x (a points list that sets TP to the GPU count) moves with
  // x rather than naming a curve, so it is left out of the series' names.
  std::set<std::string> follows_x;
  {
    std::map<std::string, std::map<std::string, std::string>> seen;  // field -> x -> its value there
    std::set<std::string> varies;
    for (const auto& row : r.rows) {
      std::string xt;
      for (const auto& o : row.overrides) {
        if (o.pointer == pointer) xt = o.value.dump();
      }
      for (const auto& o : row.overrides) {
        if (o.pointer == pointer) continue;
        const auto [it, fresh] = seen[o.pointer].emplace(xt, o.value.dump());
        if (!fresh && it->second != o.value.dump()) varies.insert(o.pointer);
      }
    }
    for (const auto& entry : seen) {
      if (varies.count(entry.first) == 0) follows_x.insert(entry.first);
    }
  }
  std::vector<std::string> names;
  for (const auto& row : r.rows) {
    if (row.status != Status::kOk) continue;
    std::string name, sep;
    double xv = 0;
    for (const auto& o : row.overrides) {
      if (o.pointer == pointer) {
        xv = o.value.get<double>();
      } else if (follows_x.count(o.pointer) == 0) {
        name += sep + dotted(o.pointer) + "=" + value_text(o.value);
        sep = ", ";
      }
    }
    if (name.empty()) name = y;
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      names.push_back(name);
      chart.series.push_back({});
      chart.series.back().name = name;
      it = names.end() - 1;
    }
    chart.series[static_cast<std::size_t>(it - names.begin())].points.push_back({xv, row.metrics[m] * d.scale});
  }
  // Points in x order within each series (a points list may give them in any order).
  for (auto& s : chart.series) {
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const report::svg::Point& a, const report::svg::Point& b) { return a.x < b.x; });
  }
  return report::svg::line_chart(chart);
}

std::string csv_header(const Results& r) {
  std::string out = "index";
  for (const auto& c : r.columns) out += "," + csv_cell(c);
  out += ",status";
  for (const auto& m : metric_names(r.kind)) out += "," + m;
  return out + ",reason\n";
}

std::string csv_row(const Results& r, const Row& row) {
  std::string out = std::to_string(row.index);
  for (const auto& c : r.columns) {
    const auto* v = value_at(row, c);
    out += "," + (v ? csv_cell(value_text(*v)) : std::string());
  }
  out += std::string(",") + status_name(row.status);
  for (std::size_t m = 0; m < metric_names(r.kind).size(); ++m)
    out += "," + (m < row.metrics.size() ? number_text(row.metrics[m]) : std::string());
  return out + "," + csv_cell(row.reason) + "\n";
}

std::string table(const Results& r) {
  std::vector<std::string> head{"#"};
  for (const auto& c : r.columns) head.push_back(dotted(c));
  head.push_back("status");
  for (const auto& d : displays(r.kind)) head.push_back(d.heading);
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : r.rows) {
    std::vector<std::string> line{std::to_string(row.index)};
    for (const auto& c : r.columns) {
      const auto* v = value_at(row, c);
      line.push_back(v ? value_text(*v) : "-");
    }
    line.push_back(status_name(row.status));
    for (std::size_t m = 0; m < displays(r.kind).size(); ++m) {
      const auto& d = displays(r.kind)[m];
      line.push_back(m < row.metrics.size() ? fixed(row.metrics[m] * d.scale, d.decimals) : "-");
    }
    cells.push_back(std::move(line));
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (std::size_t i = 0; i < head.size(); ++i) width[i] = head[i].size();
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  std::ostringstream out;
  const auto put = [&](const std::vector<std::string>& line, const std::string& last) {
    for (std::size_t i = 0; i < line.size(); ++i)
      out << (i ? "  " : "") << std::string(width[i] - line[i].size(), ' ') << line[i];
    out << (last.empty() ? "" : "  " + last) << "\n";
  };
  put(head, "reason");
  for (std::size_t k = 0; k < cells.size(); ++k) put(cells[k], r.rows[k].reason);
  std::size_t ok = 0;
  for (const auto& row : r.rows) ok += row.status == Status::kOk ? 1 : 0;
  out << "\n"
      << r.rows.size() << " of " << r.points_total << " points" << (r.shard ? " (this shard's)" : "") << ", " << ok
      << " ok, " << (r.rows.size() - ok) << " infeasible or invalid" << (r.interrupted ? "; interrupted" : "") << "\n";
  return out.str();
}

nlohmann::ordered_json to_json(const Results& r) {
  nlohmann::ordered_json j;
  j["sweep"] = r.sweep;
  j["kind"] = config::scenario_kind_name(r.kind);
  j["points_total"] = r.points_total;
  j["columns"] = r.columns;
  j["metrics"] = metric_names(r.kind);
  if (r.shard) j["shard"] = {{"index", r.shard->index}, {"count", r.shard->count}};
  if (r.interrupted) j["interrupted"] = true;
  j["points"] = nlohmann::ordered_json::array();
  for (const auto& row : r.rows) {
    nlohmann::ordered_json p;
    p["index"] = row.index;
    p["overrides"] = nlohmann::ordered_json::object();
    for (const auto& o : row.overrides) p["overrides"][o.pointer] = o.value;
    p["status"] = status_name(row.status);
    p["reason"] = row.reason;
    if (row.status == Status::kOk) {
      p["metrics"] = nlohmann::ordered_json::object();
      for (std::size_t m = 0; m < row.metrics.size(); ++m) p["metrics"][metric_names(r.kind)[m]] = row.metrics[m];
    } else {
      p["metrics"] = nullptr;
    }
    j["points"].push_back(std::move(p));
  }
  return j;
}

Results from_json(const config::JsonDoc& doc) {
  Results r;
  config::Problems problems;
  auto root = config::Reader::root(doc, problems);
  r.sweep = root.req_string("sweep");
  const std::string kind = root.req_enum("kind", {"train", "infer"});
  r.kind = kind == "infer" ? ScenarioKind::kInfer : ScenarioKind::kTrain;
  r.points_total = static_cast<std::size_t>(root.req_int("points_total", 1, static_cast<std::int64_t>(kMaxPoints)));
  r.columns = root.opt_string_list("columns");
  (void)root.raw("metrics");  // implied by the kind
  if (auto shard = root.opt_child("shard")) {
    Results::Shard s;
    s.count = static_cast<std::size_t>(shard->req_int("count", 1, static_cast<std::int64_t>(kMaxPoints)));
    s.index = static_cast<std::size_t>(shard->req_int("index", 0, static_cast<std::int64_t>(kMaxPoints)));
    shard->finish();
    r.shard = s;
  }
  r.interrupted = root.opt_bool("interrupted", false);
  const auto& names = metric_names(r.kind);
  for (auto& p : root.each("points")) {
    Row row;
    row.index = static_cast<std::size_t>(p.req_int("index", 0, static_cast<std::int64_t>(r.points_total) - 1));
    if (auto o = p.opt_child("overrides")) {
      for (const auto& key : o->keys()) row.overrides.push_back({key, *o->raw(key)});
    }
    const std::string status = p.req_enum("status", {"ok", "infeasible", "invalid"});
    row.status = status == "ok" ? Status::kOk : status == "infeasible" ? Status::kInfeasible : Status::kInvalid;
    row.reason = p.req_string("reason");
    if (row.status == Status::kOk) {
      auto m = p.child("metrics");
      for (const auto& name : names) row.metrics.push_back(m.req_number(name, -1e308, 1e308));
      m.finish();
    } else {
      (void)p.raw("metrics");
    }
    p.finish();
    r.rows.push_back(std::move(row));
  }
  root.finish();
  if (!problems.empty()) bad(problems);
  // Overrides come back in key order; put them in column order, as the run wrote them.
  for (auto& row : r.rows) {
    std::vector<Override> ordered;
    for (const auto& c : r.columns) {
      if (const auto* v = value_at(row, c)) ordered.push_back({c, *v});
    }
    if (ordered.size() != row.overrides.size())
      throw InputError(doc.path, "/points", "point " + std::to_string(row.index) + " sets a field not in `columns`");
    row.overrides = std::move(ordered);
  }
  return r;
}

Results merge(const std::vector<Results>& parts, const std::vector<std::string>& files) {
  if (parts.empty()) throw InputError("command line", "--merge", "expected at least one results file");
  Results out = parts.front();
  out.shard.reset();
  out.interrupted = false;
  out.rows.clear();
  std::map<std::size_t, std::size_t> owner;  // point index -> the part that holds it
  std::vector<const Row*> rows(out.points_total, nullptr);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    const auto differ = [&](const std::string& what) {
      throw InputError(files[i], "/" + what,
                       "not the same sweep as " + files.front() + " (its `" + what +
                           "` differs); merge the shards of " + "one run of one sweep file");
    };
    if (p.sweep != out.sweep) differ("sweep");
    if (p.kind != out.kind) differ("kind");
    if (p.points_total != out.points_total) differ("points_total");
    if (p.columns != out.columns) differ("columns");
    for (const auto& row : p.rows) {
      if (rows[row.index]) {
        throw InputError(files[i], "/points",
                         "point " + std::to_string(row.index) + " is also in " + files[owner[row.index]]);
      }
      rows[row.index] = &row;
      owner[row.index] = i;
    }
  }
  std::string missing;
  std::size_t n_missing = 0;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (rows[k]) {
      out.rows.push_back(*rows[k]);
    } else if (++n_missing <= 10) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(k);
    }
  }
  if (n_missing > 0) {
    throw InputError("command line", "--merge",
                     std::to_string(n_missing) + " of " + std::to_string(out.points_total) +
                         " points are in none of the files (" + missing + (n_missing > 10 ? ", ..." : "") +
                         "); give every shard's results, each run to the end");
  }
  return out;
}

}  // namespace cs::sweep
