// The layers of docs/design.md hold in the tree: every `#include` of a source folder is one the
// layer table allows, each folder README names the same dependencies as its CMake target links, and
// the table asks for nothing CMake does not provide. The table is read from the doc itself, so the
// doc and this test cannot disagree.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/builders.hpp"

namespace fs = std::filesystem;

namespace {

using Names = std::set<std::string>;

struct Row {
  Names allowed;
  bool any = false;  ///< tools: may use everything
};

std::string root() { return CLUSTERSIM_DATA_DIR; }

std::vector<std::string> backticked(const std::string& text) {
  std::vector<std::string> out;
  static const std::regex tick("`([^`]+)`");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), tick); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

/// The table between `<!-- layers: begin -->` and `<!-- layers: end -->` in docs/design.md: one row
/// per folder, its first cell the folder, its second what it may include (backticked), or "any".
std::map<std::string, Row> layer_table() {
  const std::string doc = cs::test::slurp(root() + "/docs/design.md");
  const auto a = doc.find("<!-- layers: begin -->");
  const auto b = doc.find("<!-- layers: end -->");
  REQUIRE_MESSAGE(a != std::string::npos, ("docs/design.md has no <!-- layers: begin --> marker"));
  REQUIRE(b != std::string::npos);
  std::map<std::string, Row> rows;
  std::istringstream lines(doc.substr(a, b - a));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const auto bar = line.find('|', 1);
    const auto folder = backticked(line.substr(0, bar));
    REQUIRE_MESSAGE(folder.size() == 1, (line));
    Row row;
    const std::string rest = line.substr(bar + 1);
    row.any = rest.find("any") != std::string::npos && backticked(rest).empty();
    for (const auto& n : backticked(rest)) row.allowed.insert(n);
    rows[folder[0]] = row;
  }
  REQUIRE(rows.size() >= 10);
  return rows;
}

/// The folder of the table a path belongs to: the longest row that is a prefix of it.
std::string folder_of(const std::map<std::string, Row>& rows, const std::string& path) {
  std::string best;
  for (const auto& [f, row] : rows) {
    if (path.rfind(f + "/", 0) == 0 && f.size() > best.size()) best = f;
  }
  return best;
}

/// External libraries recognised by their include prefix (anything else in <> is the system's).
std::string external_of(const std::string& header) {
  if (header.rfind("nlohmann/", 0) == 0) return "nlohmann/json";
  if (header.rfind("boost/", 0) == 0) return "Boost.Graph";
  if (header.rfind("CLI/", 0) == 0) return "CLI11";
  if (header.rfind("tbb/", 0) == 0 || header.rfind("oneapi/", 0) == 0) return "oneTBB";
  return "";
}

std::vector<std::string> sources_under(const std::string& top) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root() + "/" + top)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".cpp" || ext == ".hpp" || ext == ".cu")) {
      out.push_back(fs::relative(e.path(), root()).generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// CMake target names and the folder or library each stands for.
std::string cmake_name(const std::string& target) {
  static const std::map<std::string, std::string> m{
      {"cs_core", "sim/core"},
      {"cs_config", "sim/config"},
      {"cs_engine", "sim/engine"},
      {"cs_network", "sim/network"},
      {"cs_collectives", "sim/collectives"},
      {"cs_parallel", "sim/parallel"},
      {"cs_scenario", "sim/scenario"},
      {"cs_workload", "sim/workload"},
      {"cs_serving", "sim/serving"},
      {"cs_study", "sim/study"},
      {"cs_report", "sim/report"},
      {"cs_claims", "sim/claims"},
      {"cs_models", "models"},
      {"cs_calib_profile", "calibration/profile"},
      {"nlohmann_json::nlohmann_json", "nlohmann/json"},
      {"Boost::headers", "Boost.Graph"},
      {"TBB::tbb", "oneTBB"},
      {"CLI11::CLI11", "CLI11"},
      {"CUDA::cudart", "CUDA"},
      {"CUDA::cublasLt", "CUDA"},
      {"NCCL::nccl", "NCCL"},
  };
  const auto it = m.find(target);
  return it == m.end() ? "" : it->second;
}

/// What a folder's CMakeLists.txt links its own targets to (every target_link_libraries call),
/// as folder or library names; its own targets and the warning flags left out.
Names cmake_links(const std::string& folder) {
  const std::string text = cs::test::slurp(root() + "/" + folder + "/CMakeLists.txt");
  REQUIRE_MESSAGE(!text.empty(), (folder + "/CMakeLists.txt is missing"));
  Names own;
  static const std::regex def(R"((add_library|add_executable)\(\s*([A-Za-z0-9_:\-]+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), def); it != std::sregex_iterator(); ++it)
    own.insert((*it)[2]);
  Names out;
  static const std::regex link(R"(target_link_libraries\(([^)]*)\))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
    std::istringstream words((*it)[1].str());
    std::string w;
    words >> w;  // the target itself
    while (words >> w) {
      if (w == "PUBLIC" || w == "PRIVATE" || w == "INTERFACE" || w == "cs_warnings" || own.count(w) ||
          w.rfind("${", 0) == 0)
        continue;
      const auto name = cmake_name(w);
      CHECK_MESSAGE(!name.empty(), (folder + "/CMakeLists.txt links '" + w +
                                    "', which this test does not know: add it to cmake_name()"));
      if (!name.empty()) out.insert(name);
    }
  }
  return out;
}

/// The backticked names of the sentence starting "Depends on" in a folder's README.
Names readme_depends(const std::string& folder) {
  const std::string text = cs::test::slurp(root() + "/" + folder + "/README.md");
  const auto at = text.find("Depends on");
  REQUIRE_MESSAGE(at != std::string::npos, (folder + "/README.md has no 'Depends on' sentence"));
  const auto end = text.find(".\n", at);
  const auto names = backticked(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
  return {names.begin(), names.end()};
}

std::string joined(const Names& s) {
  std::string out;
  for (const auto& n : s) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(nothing)" : out;
}

}  // namespace

TEST_CASE("every #include follows the layer table of docs/design.md") {
  const auto rows = layer_table();
  static const std::regex inc(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  int checked = 0;
  for (const char* top : {"sim", "models", "calibration", "tools"}) {
    for (const auto& file : sources_under(top)) {
      const std::string folder = folder_of(rows, file);
      CHECK_MESSAGE(!folder.empty(), (file + " is in no folder of the layer table in docs/design.md"));
      if (folder.empty() || rows.at(folder).any) continue;
      const auto& allowed = rows.at(folder).allowed;
      std::ifstream in(root() + "/" + file);
      int lineno = 0;
      for (std::string line; std::getline(in, line);) {
        ++lineno;
        std::smatch m;
        if (!std::regex_search(line, m, inc)) continue;
        const std::string header = m[2];
        const std::string target = m[1] == "<" ? external_of(header) : folder_of(rows, header);
        if (m[1] == "\"" && target.empty() && header.find('/') != std::string::npos) {
          FAIL_CHECK((file + ":" + std::to_string(lineno) + " includes " + header + ", in no folder of the table"));
          continue;
        }
        if (target.empty() || target == folder) continue;
        ++checked;
        CHECK_MESSAGE(allowed.count(target),
                      (file + ":" + std::to_string(lineno) + ": " + folder + " may not include " + target + " (" +
                       header + "); docs/design.md allows " + joined(allowed)));
      }
    }
  }
  CHECK(checked > 50);
}

TEST_CASE("each folder README names what its CMake target links, and the layer table asks for no more") {
  const auto rows = layer_table();
  std::map<std::string, Names> links;
  for (const auto& [folder, row] : rows) {
    if (!row.any) links[folder] = cmake_links(folder);
  }
  for (const auto& entry : rows) {
    // Named, not structured bindings: clang 14 cannot capture those in doctest's message lambdas.
    const std::string& folder = entry.first;
    const Row& row = entry.second;
    if (row.any) continue;
    CAPTURE(folder);
    const Names& direct = links.at(folder);
    CHECK_MESSAGE(readme_depends(folder) == direct,
                  (folder + "/README.md says it depends on " + joined(readme_depends(folder)) + "; CMake links " +
                   joined(direct)));
    Names reach;
    std::vector<std::string> todo(direct.begin(), direct.end());
    while (!todo.empty()) {
      const auto n = todo.back();
      todo.pop_back();
      if (!reach.insert(n).second) continue;
      if (links.count(n)) todo.insert(todo.end(), links.at(n).begin(), links.at(n).end());
    }
    for (const auto& n : direct) {
      CHECK_MESSAGE(row.allowed.count(n), (folder + " links " + n + ", which docs/design.md does not allow it"));
    }
    for (const auto& n : row.allowed) {
      CHECK_MESSAGE(reach.count(n),
                    ("docs/design.md lets " + folder + " include " + n + ", but its CMake links do not reach it"));
    }
  }
}

TEST_CASE("the commands build no topology themselves: every machine comes from study::machine_topology") {
  // Issue 28: a resolved machine is a plain value (scenario::MachineShape) that sim/study turns
  // into a topology; a command that built its own would bypass the rule (and the cache) study keeps.
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root() + "/tools/cli")) {
    const auto ext = e.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp") continue;
    ++files;
    const std::string text = cs::test::slurp(e.path().string());
    const std::string file = e.path().filename().string();
    CAPTURE(file);
    CHECK(text.find("Topology::build(") == std::string::npos);
    CHECK(text.find("Topology::join(") == std::string::npos);
  }
  CHECK(files > 10);
}

namespace {

/// A definition at namespace level (class, struct or function) and its length in lines.
struct Unit {
  std::string head;
  int lines = 0;
};

/// The namespace-level definitions of a source file as clang-format lays them out: a declaration
/// that starts in column 0 (its template line, its signature's first line) and opens a brace on
/// its last line, up to the next line that starts with `}`. Namespaces are not definitions.
std::vector<Unit> units_of(const std::string& text) {
  std::vector<Unit> out;
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::size_t decl = 0;
  bool in_decl = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    const bool column0 = !l.empty() && l[0] != ' ' && l[0] != '#' && l[0] != '}' && l.rfind("//", 0) != 0;
    if (!in_decl && column0) {
      decl = i;
      in_decl = true;
    }
    if (!in_decl) continue;
    if (l.empty() || l.back() == ';') {  // a declaration, not a definition
      in_decl = false;
      continue;
    }
    if (l.back() != '{') continue;
    in_decl = false;
    if (lines[decl].rfind("namespace", 0) == 0 || lines[decl].rfind("extern", 0) == 0) continue;
    std::size_t end = i;
    while (end < lines.size() && lines[end].rfind('}', 0) != 0) ++end;
    out.push_back({lines[decl], static_cast<int>(end - decl + 1)});
    i = end;
  }
  return out;
}

}  // namespace

TEST_CASE("the unit scanner measures namespace-level classes and functions, namespaces aside") {
  std::string body;
  for (int i = 0; i < 149; ++i) body += "  x();\n";
  const std::string text =
      "namespace a {\n\n/// doc\ntemplate <class T>\nint f(int a,\n      int b) {\n" + body +
      "}\n\nclass C final : public B {\n public:\n  void g() {\n  }\n};\n\nint h();\n}  // namespace a\n";
  const auto units = units_of(text);
  REQUIRE(units.size() == 2);
  CHECK(units[0].head == "template <class T>");
  CHECK(units[0].lines == 153);  // the template line, two signature lines, 149 body lines, the brace
  CHECK(units[1].head == "class C final : public B {");
  CHECK(units[1].lines == 5);
}

TEST_CASE("sim/serving: no class or function over 150 lines (issue 28: each seam a small unit)") {
  int files = 0;
  for (const auto& e : fs::directory_iterator(root() + "/sim/serving")) {
    const auto ext = e.path().extension();
    if (ext != ".cpp" && ext != ".hpp") continue;
    ++files;
    for (const auto& u : units_of(cs::test::slurp(e.path().string())))
      CHECK_MESSAGE(u.lines <= 150, e.path().filename().string() << ": `" << u.head << "` is " << u.lines << " lines");
  }
  CHECK(files >= 20);
}
