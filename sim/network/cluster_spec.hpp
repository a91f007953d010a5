#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cs::net {

enum class VertexKind { kGpu, kNvSwitch, kPcieSwitch, kRootComplex, kNic };
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

/// One server as a data file: its GPUs (named gpu0..), switches and links.
struct ClusterSpec {
  std::string id;
  std::string name;
  std::string profile;  ///< hardware profile id of its GPUs
  int gpus = 0;
  std::string source;
  std::map<std::string, LinkTypeSpec> link_types;
  std::vector<SwitchSpec> switches;
  std::vector<LinkSpec> links;
  bool operator==(const ClusterSpec&) const = default;
};

}  // namespace cs::net
