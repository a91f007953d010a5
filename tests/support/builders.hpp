#pragma once
#include <string>
#include <vector>

#include "models/llm/model_arch.hpp"
#include "sim/config/catalog.hpp"
#include "sim/network/cluster_spec.hpp"
#include "sim/scenario/scenario.hpp"

namespace cs::test {

/// The repository's catalog (shipped models, profiles, clusters, offers).
[[nodiscard]] config::Catalog catalog();
[[nodiscard]] std::string data_path(const std::string& relative);

/// n GPUs each joined to one switch by a duplex link of `bw` (per direction) and `latency_s`.
[[nodiscard]] net::ClusterSpec make_star(int n, const std::string& bw, double latency_s = 0.0,
                                         const std::string& switch_kind = "nvswitch");
/// n GPUs directly connected pairwise (no switch), each pair by a duplex link of `bw`.
[[nodiscard]] net::ClusterSpec make_mesh(int n, const std::string& bw, double latency_s = 0.0);
/// Parse a cluster from JSON text (for hand-made topologies in tests).
[[nodiscard]] net::ClusterSpec cluster_from_json(const std::string& text);
/// Load a shipped cluster / model by id.
[[nodiscard]] net::ClusterSpec shipped_cluster(const std::string& id);
[[nodiscard]] models::ModelArch shipped_model(const std::string& id);
/// A resolved scenario from JSON text against the shipped catalog.
[[nodiscard]] scenario::Scenario scenario_from_json(const std::string& text);

/// A whole file as a string (empty if unreadable).
[[nodiscard]] std::string slurp(const std::string& path);

/// Result of running the clustersim executable.
struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};
/// Runs `clustersim ARGS` in the repository folder (args are passed to /bin/sh as written).
[[nodiscard]] CliRun run_cli(const std::string& args);

}  // namespace cs::test
