#include "sim/study/machine_topology.hpp"

#include "sim/core/check.hpp"

namespace cs::study {

net::Topology machine_topology(const scenario::MachineShape& m) {
  if (m.nodes <= 1) return net::Topology::build(m.cluster, m.gpus_per_node);
  CS_ASSERT(m.fabric.has_value(), "a machine of several nodes names the fabric joining them");
  return net::Topology::build(m.cluster, m.gpus_per_node, m.nodes, *m.fabric);
}

}  // namespace cs::study
