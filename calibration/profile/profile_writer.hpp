#pragma once
#include <nlohmann/json.hpp>

#include "calibration/profile/hardware_profile.hpp"

namespace cs::calib {

/// The profile as a schema-version-2 JSON document that `parse_profile` reads back unchanged
/// (quantities as unit strings, every figure with its status and source). `raw`, when not null,
/// is stored under "raw" (the measurements as recorded).
[[nodiscard]] nlohmann::ordered_json profile_to_json(const HardwareProfile& p,
                                                     const nlohmann::ordered_json& raw = nullptr);

}  // namespace cs::calib
