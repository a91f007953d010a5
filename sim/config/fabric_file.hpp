#pragma once
#include <string>

#include "sim/network/fabric_spec.hpp"

namespace cs::config {

struct JsonDoc;

/// Parses a fabric file (scenarios/fabrics/*.json).
[[nodiscard]] net::FabricSpec parse_fabric(const JsonDoc& doc, const std::string& id);

}  // namespace cs::config
