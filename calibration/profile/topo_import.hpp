#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cs::calib {

/// The most GPUs one imported matrix may name: as many as a cluster file holds
/// (net::kMaxClusterGpus; tools/cli/import_command.cpp checks they agree).
inline constexpr int kMaxTopoGpus = 576;
/// The most bonded NVLink links one "NV<k>" relation may claim (18 on an H100).
inline constexpr int kMaxNvlinks = 64;

/// `nvidia-smi topo -m`, read: GPU names in order and the relation of each GPU pair
/// ("X", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"), plus each GPU's NUMA node when given.
struct TopoMatrix {
  std::vector<std::string> gpus;
  std::vector<std::vector<std::string>> relation;
  std::vector<int> numa;  ///< -1 when not reported
};

/// Parses the matrix; throws InputError naming file:line for a malformed row.
[[nodiscard]] TopoMatrix parse_topo_matrix(const std::string& text, const std::string& file);

/// Turns the matrix into a cluster file (the schema of scenarios/clusters): NV# everywhere with
/// one count -> an NVSwitch with that many 25 GB/s links per GPU; NV# on some pairs -> bridges;
/// PIX groups -> PCIe switches, PXB -> a switch above them, GPUs per NUMA node under one root
/// complex, root complexes joined by the host-staged socket link. PCIe generation 4 or 5.
/// `pcie_gen_origin` says where the generation came from, for the file's source.
[[nodiscard]] nlohmann::ordered_json topo_to_cluster(const TopoMatrix& m, const std::string& file,
                                                     const std::string& profile, int pcie_gen,
                                                     const std::string& pcie_gen_origin = "given on the command line");

/// The PCIe generation of a GPU's host link by its name: 5 for Hopper (H100, H200, H800, H20) and
/// Blackwell (B100, B200), 4 for Ampere and Ada (A100, A800, L40S, L20, RTX 4090) and anything older.
[[nodiscard]] int pcie_gen_of(const std::string& gpu_name);

}  // namespace cs::calib
