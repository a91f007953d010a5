#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cs::net {

/// Most GPUs one cluster file (a server or an NVLink domain) may hold: NVLink 5 switches join up to
/// 576 GPUs in one domain (NVIDIA GB200 NVL72 datasheet).
inline constexpr int kMaxClusterGpus = 576;

/// What a topology vertex is. kHostMemory: a socket's DRAM as the staging buffer of GPU-to-GPU
/// copies when the GPUs have no peer-to-peer access (GeForce parts). kFabricSwitch: an aggregated
/// tier of the fabric between nodes (a leaf, rail, spine or pod vertex); never in a cluster file.
enum class VertexKind { kGpu, kNvSwitch, kPcieSwitch, kRootComplex, kNic, kHostMemory, kFabricSwitch };
[[nodiscard]] const char* vertex_kind_name(VertexKind k);

/// A kind of link, shared by many links of a cluster: rate per direction as specified, the
/// achievable fraction of it for GPU traffic, and one-way latency, each cited.
struct LinkTypeSpec {
  std::string name;
  double bandwidth_bytes_per_s = 0.0;  ///< per direction, as specified (line rate)
  double efficiency = 1.0;             ///< achieved / specified for SM-driven transfers
  double latency_s = 0.0;              ///< one hop, one way
  std::string source;
  std::string efficiency_source;
  [[nodiscard]] double effective_bandwidth() const { return bandwidth_bytes_per_s * efficiency; }
  bool operator==(const LinkTypeSpec&) const = default;
};

/// A non-GPU vertex: an NVSwitch, PCIe switch, CPU root complex or NIC.
struct SwitchSpec {
  std::string id;
  VertexKind kind = VertexKind::kNvSwitch;
  /// NVLink SHARP (NVLS) in-switch reduction rate per GPU port, when the switch has it.
  std::optional<double> nvls_bandwidth_bytes_per_s;
  std::string nvls_source;
  bool operator==(const SwitchSpec&) const = default;
};

/// A duplex link between two named vertices ("gpu0".."gpuN-1" or a switch id).
struct LinkSpec {
  std::string a;
  std::string b;
  std::string type;
  bool operator==(const LinkSpec&) const = default;
};

/// One server, or one NVLink domain of several servers, as a data file: its GPUs (named gpu0..),
/// switches and links.
struct ClusterSpec {
  std::string id;
  std::string name;
  std::string profile;  ///< hardware profile id of its GPUs
  int gpus = 0;
  /// GPUs per server (node) when the file is an NVLink domain of several servers, each with its own
  /// NICs (GB200 NVL72: 72 GPUs, 4 per compute tray); equal to `gpus` when the file is one server.
  int gpus_per_node = 0;
  /// False when the GPUs cannot reach each other's memory over PCIe (GeForce parts): every
  /// GPU-to-GPU copy is staged through the sender's socket's host memory (a `host_memory` switch).
  bool peer_to_peer = true;
  std::string peer_to_peer_source;  ///< citation for peer_to_peer = false
  std::string source;
  std::map<std::string, LinkTypeSpec> link_types;
  std::vector<SwitchSpec> switches;
  std::vector<LinkSpec> links;
  bool operator==(const ClusterSpec&) const = default;
};

}  // namespace cs::net
