#pragma once
#include <string>

#include "sim/network/cluster_spec.hpp"

namespace cs::config {

struct JsonDoc;

/// Parses and checks a cluster file: every link names known vertices and a known type, every GPU
/// is connected, `gpus_per_node` divides `gpus`, and a cluster without peer-to-peer has host memory.
[[nodiscard]] net::ClusterSpec parse_cluster(const JsonDoc& doc, const std::string& id);

}  // namespace cs::config
