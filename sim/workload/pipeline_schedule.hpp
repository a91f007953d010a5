#pragma once
#include <vector>

#include "sim/parallel/parallel_plan.hpp"

namespace cs::workload {

/// One block of a stage's schedule: the forward (F) or backward (B) of one micro-batch on one
/// model chunk of the stage.
struct BlockRef {
  bool forward = true;
  int micro = 0;
  int chunk = 0;  ///< model chunk of this stage (interleaved schedule), else 0
  bool operator==(const BlockRef&) const = default;
};

/// The order of F and B blocks on pipeline stage `stage` of `stages`, for `micro` micro-batches and
/// `chunks` model chunks per stage: GPipe (all F, then all B), 1F1B (PipeDream-Flush, as
/// Megatron-LM runs it: P - s - 1 warm-up forwards, then one forward one backward, then the
/// cool-down), or interleaved 1F1B when chunks > 1.
[[nodiscard]] std::vector<BlockRef> schedule(plan::PipelineSchedule kind, int stage, int stages, int micro,
                                             int chunks = 1);

}  // namespace cs::workload
