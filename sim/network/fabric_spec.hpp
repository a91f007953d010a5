#pragma once
#include <string>
#include <vector>

namespace cs::net {

enum class FabricKind { kSingleSwitch, kRail, kFatTree };

/// How nodes are joined (scenarios/fabrics/*.json): NICs per node and which GPU uses which, the
/// NIC rate, and the switch layout. Leaf and spine tiers are aggregated into one vertex each
/// whose links carry the tier's total bandwidth (ECMP spreads flows over the real switches).
struct FabricSpec {
  std::string id;
  std::string name;
  std::string source;
  FabricKind kind = FabricKind::kFatTree;
  int nics_per_node = 1;
  std::vector<int> gpu_nic;  ///< NIC index of each GPU of a node (empty: GPU g uses NIC g % nics)
  /// The node switch (a cluster file's switch id: PCIe switch or root complex) each NIC hangs off;
  /// empty: each GPU has its own PCIe path to its NIC. Given, GPU-to-NIC traffic crosses the node's
  /// PCIe tree and shares it with peer-to-peer traffic (what matters on PCIe servers).
  std::vector<std::string> nic_switch;
  double nic_bandwidth = 0;  ///< bytes/s per direction, line rate
  double nic_efficiency = 1;
  double nic_latency_s = 0;
  double gpu_nic_bandwidth = 0;  ///< the PCIe path from a GPU to its NIC, bytes/s
  double switch_latency_s = 0;
  int nodes_per_leaf = 1;       ///< fat tree: nodes whose NICs share a leaf
  double oversubscription = 1;  ///< leaf downlink over uplink bandwidth (1 = full bisection)
  /// Fat tree, third tier: leaves grouped into pods (0: two tiers, leaves straight under the
  /// spine); a pod's uplink to the core carries its leaves' uplinks over `pod_oversubscription`.
  int leaves_per_pod = 0;
  double pod_oversubscription = 1;
  std::string nic_source, efficiency_source, switch_latency_source;
  [[nodiscard]] int nic_of(int gpu) const {
    return gpu_nic.empty() ? gpu % nics_per_node : gpu_nic[static_cast<std::size_t>(gpu) % gpu_nic.size()];
  }
};

}  // namespace cs::net
