#pragma once
#include "models/memory/training_memory.hpp"
#include "sim/scenario/scenario.hpp"

namespace cs::workload {

/// Per-GPU memory of a training scenario's plan: the most loaded pipeline stage (no simulation
/// needed; models/memory does the accounting).
[[nodiscard]] models::MemoryBreakdown training_memory_of(const scenario::Scenario& s);

}  // namespace cs::workload
