#pragma once
#include "models/memory/training_memory.hpp"
#include "sim/scenario/scenario.hpp"

namespace cs::workload {

/// Per-GPU memory of a training scenario's plan: the most loaded pipeline stage (no simulation
/// needed; models/memory does the accounting).
[[nodiscard]] models::MemoryBreakdown training_memory_of(const scenario::Scenario& s);

/// Micro-batches whose activations pipeline stage `stage` holds at its peak, walked from the
/// schedule the step runs (GPipe, 1F1B, interleaved: in micro-batches of the whole stage, each
/// model chunk weighted by its share of the stage's layers).
[[nodiscard]] double micro_batches_in_flight(const scenario::Scenario& s, int stage);

}  // namespace cs::workload
