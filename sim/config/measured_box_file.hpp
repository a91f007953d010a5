#pragma once
#include "calibration/profile/measured_box.hpp"

namespace cs::config {

struct JsonDoc;

/// Reads the `/raw` block of a measured profile, checking every field the probe writes (type and
/// range) and rejecting unknown keys; problems are InputErrors naming the file and JSON pointer.
/// The caller checks first that `/raw` exists (its absence has its own message).
[[nodiscard]] calib::MeasuredBox parse_measured_box(const JsonDoc& doc);

}  // namespace cs::config
