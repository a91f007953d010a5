#include "tests/support/builders.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sim/config/cluster_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/model_file.hpp"
#include "sim/config/scenario_file.hpp"

namespace cs::test {

config::Catalog catalog() { return config::Catalog(CLUSTERSIM_DATA_DIR); }
std::string data_path(const std::string& relative) { return std::string(CLUSTERSIM_DATA_DIR) + "/" + relative; }

namespace {
std::string link_type(const std::string& bw, double latency_s) {
  std::ostringstream s;
  s << R"({"bandwidth": ")" << bw << R"(", "efficiency": 1, "latency": ")" << latency_s * 1e6
    << R"( us", "source": "test", "efficiency_source": "test"})";
  return s.str();
}
}  // namespace

net::ClusterSpec cluster_from_json(const std::string& text) {
  return config::parse_cluster(config::parse_text(text, "test-cluster"), "test-cluster");
}

net::ClusterSpec make_star(int n, const std::string& bw, double latency_s, const std::string& switch_kind) {
  std::ostringstream s;
  s << R"({"name": "star", "profile": "h100-sxm", "gpus": )" << n << R"(, "source": "test", "link_types": {"l": )"
    << link_type(bw, latency_s) << R"(}, "switches": [{"id": "sw", "kind": ")" << switch_kind << R"("}], "links": [)";
  for (int g = 0; g < n; ++g) s << (g ? "," : "") << R"({"a": "gpu)" << g << R"(", "b": "sw", "type": "l"})";
  s << "]}";
  return cluster_from_json(s.str());
}

net::ClusterSpec make_mesh(int n, const std::string& bw, double latency_s) {
  std::ostringstream s;
  s << R"({"name": "mesh", "profile": "h100-sxm", "gpus": )" << n << R"(, "source": "test", "link_types": {"l": )"
    << link_type(bw, latency_s) << R"(}, "switches": [], "links": [)";
  bool first = true;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      s << (first ? "" : ",") << R"({"a": "gpu)" << a << R"(", "b": "gpu)" << b << R"(", "type": "l"})";
      first = false;
    }
  }
  s << "]}";
  return cluster_from_json(s.str());
}

net::ClusterSpec shipped_cluster(const std::string& id) {
  const auto c = catalog();
  return config::parse_cluster(config::load(c.locate(config::CatalogKind::kCluster, id, "test", "")), id);
}

models::ModelArch shipped_model(const std::string& id) {
  const auto c = catalog();
  return config::parse_model(config::load(c.locate(config::CatalogKind::kModel, id, "test", "")), id);
}

scenario::Scenario scenario_from_json(const std::string& text) {
  const auto doc = config::parse_text(text, "test-scenario");
  const auto file = config::parse_scenario(doc);
  return config::resolve(file.specs.at(0), catalog(), doc.path);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream b;
  b << f.rdbuf();
  return b.str();
}

CliRun run_cli(const std::string& args) {
  char out_tmpl[] = "/tmp/cs_cli_out_XXXXXX";
  char err_tmpl[] = "/tmp/cs_cli_err_XXXXXX";
  const int fo = mkstemp(out_tmpl);
  const int fe = mkstemp(err_tmpl);
  CliRun r;
  if (fo < 0 || fe < 0) return r;
  const std::string cmd = std::string("cd ") + CLUSTERSIM_DATA_DIR + " && " + CLUSTERSIM_BINARY + " " + args + " >" +
                          out_tmpl + " 2>" + err_tmpl + " </dev/null";
  const int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_tmpl);
  r.err = slurp(err_tmpl);
  std::remove(out_tmpl);
  std::remove(err_tmpl);
  return r;
}

}  // namespace cs::test
