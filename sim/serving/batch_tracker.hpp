#pragma once
#include <cstdint>
#include <vector>

#include "sim/serving/stage_tasks.hpp"
#include "sim/serving/step_builder.hpp"
#include "sim/workload/workload_graph.hpp"

namespace cs::serving {

/// A batch in a replica's pipeline.
struct Batch {
  int replica = 0;
  std::vector<Planned> plan;
  SimTime start{};
  double kv_used = 0;    ///< the replica's KV-block fraction in use when it was planned
  std::size_t span = 0;  ///< its StepSpan (when tracing)
  StageProgram program;  ///< one isolated or guarded stage: what is left to add, from `next`
  std::size_t next = 0;
  SimTime busy_until{};  ///< resumed: its running task's end when compute, else that task's start
};

/// Why the run follows a task of the executor.
struct Purpose {
  enum Kind : std::uint8_t { kNone, kArrivals, kStepEnd, kResume, kKvPart } kind = kNone;
  std::uint64_t id = 0;  ///< batch (step end, resume), request (KV part)
};

/// The batches in flight (finished ones kept for reuse, with their buffers' capacity) and why the
/// run follows each task it added (indexed by task id, which the executor reuses).
class BatchTracker {
 public:
  /// A batch to plan into: a finished one when there is one (its vectors keep their capacity).
  [[nodiscard]] std::uint64_t acquire();
  /// The batch left the pipeline; the next acquire may return it.
  void release(std::uint64_t b) { free_.push_back(b); }
  [[nodiscard]] Batch& at(std::uint64_t b) { return batches_.at(b); }
  [[nodiscard]] const Batch& at(std::uint64_t b) const { return batches_.at(b); }

  /// Follow task `id`: when it ends, `kind` about `what`.
  void tag(workload::TaskId id, Purpose::Kind kind, std::uint64_t what = 0);
  /// What task `id` was followed for (kNone when it was not), forgetting it.
  [[nodiscard]] Purpose take(workload::TaskId id);

 private:
  std::vector<Batch> batches_;
  std::vector<std::uint64_t> free_;
  std::vector<Purpose> purpose_;  ///< by task id
};

}  // namespace cs::serving
