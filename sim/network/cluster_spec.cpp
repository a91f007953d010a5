#include "sim/network/cluster_spec.hpp"

namespace cs::net {

const char* vertex_kind_name(VertexKind k) {
  switch (k) {
    case VertexKind::kGpu: return "gpu";
    case VertexKind::kNvSwitch: return "nvswitch";
    case VertexKind::kPcieSwitch: return "pcie_switch";
    case VertexKind::kRootComplex: return "root_complex";
    case VertexKind::kNic: return "nic";
    case VertexKind::kHostMemory: return "host_memory";
    case VertexKind::kFabricSwitch: return "fabric_switch";
  }
  return "?";
}

}  // namespace cs::net
