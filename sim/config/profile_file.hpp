#pragma once
#include <string>

#include "calibration/profile/hardware_profile.hpp"

namespace cs::config {

struct JsonDoc;

/// Parses a profile file (schema version 1 or 2; any other version is an error saying which).
[[nodiscard]] calib::HardwareProfile parse_profile(const JsonDoc& doc, const std::string& id);

}  // namespace cs::config
