#pragma once
#include <vector>

#include "sim/parallel/parallel_plan.hpp"

namespace cs::workload {

/// One block of a stage's schedule: the forward (F) or backward (B) of one micro-batch on one
/// model chunk of the stage, or (zero-bubble split, DualPipe) the weight-gradient half (W) of a
/// backward that ran without it.
struct BlockRef {
  bool forward = true;
  int micro = 0;
  int chunk = 0;        ///< model chunk of this stage (interleaved schedule; DualPipe's direction), else 0
  bool split = false;   ///< a backward that leaves its weight gradients to a later W block
  bool weight = false;  ///< the W block of micro-batch `micro`'s split backward (forward false)
  bool paired = false;  ///< a forward that runs overlapped with the backward after it (DualPipe's F&B)
  bool operator==(const BlockRef&) const = default;
};

/// The order of F and B blocks on pipeline stage `stage` of `stages`, for `micro` micro-batches and
/// `chunks` model chunks per stage: GPipe (all F, then all B), 1F1B (PipeDream-Flush, as
/// Megatron-LM runs it: P - s - 1 warm-up forwards, then one forward one backward, then the
/// cool-down), or interleaved 1F1B when chunks > 1.
[[nodiscard]] std::vector<BlockRef> schedule(plan::PipelineSchedule kind, int stage, int stages, int micro,
                                             int chunks = 1);

/// DualPipe (DeepSeek-V3 technical report, arXiv:2412.19437, Sec. 3.2.1 and Fig. 5): the model
/// in P stages, rank r holding stage r and stage P - 1 - r; half the micro-batches enter at rank 0
/// and run down (chunk 0: micro-batches 0 .. M/2 - 1, stage r on rank r), the other half enter at
/// rank P - 1 and run up (chunk 1: micro-batches M/2 .. M - 1, stage j on rank P - 1 - j). Each
/// rank runs eight phases (warm-up forwards of the direction it is early in, then both, backwards
/// with their weight gradients split off and deferred where a bubble would be, the steady state of
/// overlapped forward-backward pairs, and the cool-down's deferred W blocks). Needs P even and
/// M even with M >= 2 P.
[[nodiscard]] std::vector<BlockRef> dualpipe(int stage, int stages, int micro);

}  // namespace cs::workload
