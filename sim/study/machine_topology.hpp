#pragma once
#include "sim/network/topology.hpp"
#include "sim/scenario/machine_shape.hpp"

namespace cs::study {

/// The topology of a resolved machine: one box's first `gpus_per_node` GPUs, or `nodes` boxes
/// joined by the fabric. Every topology a command needs comes from here (training's, serving's, a
/// collective's, a validation case's), so tools/ builds none itself.
[[nodiscard]] net::Topology machine_topology(const scenario::MachineShape& m);

}  // namespace cs::study
