#pragma once
// The machine a run or a measurement needs, resolved: `nodes` copies of a cluster's box, the first
// `gpus_per_node` GPUs of each used, joined by `fabric` when there are several. A plain value:
// sim/study builds its topology (study::machine_topology), so no command builds one itself.
#include <optional>

#include "sim/network/cluster_spec.hpp"
#include "sim/network/fabric_spec.hpp"

namespace cs::scenario {

struct MachineShape {
  net::ClusterSpec cluster;
  int gpus_per_node = 0;
  int nodes = 1;
  std::optional<net::FabricSpec> fabric;  ///< required when nodes > 1
};

}  // namespace cs::scenario
