#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/serving/batch_tracker.hpp"
#include "sim/serving/serving_log.hpp"

namespace cs::serving {

/// What a run counts as its steps start and end, for its log: steps, each replica's KV use over
/// time and largest batch, the output tokens each step produced, and (when tracing) step spans.
class RunRecord {
 public:
  RunRecord(std::size_t replicas, bool trace) : kv_area_(replicas, 0.0), peak_running_(replicas, 0), trace_(trace) {}

  /// A step planned on its replica with `kv_used` of the replica's KV blocks in use: counted, and
  /// its span opened (batch.span) when tracing.
  void started(Batch& batch, double tokens);
  /// The step ended at `now` on a replica of `pp` stages with `running` sequences in its queue.
  void finished(const Batch& batch, SimTime now, int pp, std::size_t running);
  /// A step's output tokens at its end.
  void produced(SimTime now, std::int64_t tokens) {
    if (tokens > 0) tokens_out_.emplace_back(now, tokens);
  }
  /// Moves the counts into the log (steps, tokens out, peak in service, KV area and peak, spans).
  void into(ServingLog& log);

 private:
  std::vector<double> kv_area_;  ///< per replica: KV share in use x seconds (per stage)
  double kv_max_ = 0;
  std::int64_t steps_ = 0;
  std::vector<std::pair<SimTime, std::int64_t>> tokens_out_;  ///< (step end, output tokens it produced)
  std::vector<std::int64_t> peak_running_;                    ///< per replica: the most requests in its batch at once
  std::vector<StepSpan> step_spans_;
  bool trace_ = false;
};

}  // namespace cs::serving
