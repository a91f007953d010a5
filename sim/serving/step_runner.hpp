#pragma once
// A replica's engine steps from plan to settle, apart from where requests come from and go: the
// scheduler plans a batch, the step programs of the replica's box kind time it, its stages go onto
// the running executor (whole, or a task at a time on the fast path), and when its last task ends
// the batch leaves the pipeline and its requests are settled. The run acts on what they do next.
#include <cstddef>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/batch_tracker.hpp"
#include "sim/serving/replicas.hpp"
#include "sim/serving/run_record.hpp"
#include "sim/serving/stage_tasks.hpp"
#include "sim/serving/step_builder.hpp"
#include "sim/serving/step_program.hpp"
#include "sim/serving/step_settle.hpp"
#include "sim/workload/executor.hpp"

namespace cs::serving {

class StepRunner {
 public:
  /// The earliest time a KV transfer not yet started could start, the replica asking aside (a
  /// guarded stage's known collectives join a task only up to it; kv_transfer_bound).
  using TransferBound = std::function<SimTime(const Replica&)>;

  /// The steps of `s`'s `replicas` replicas (and of a mixed fleet's second kind, from its own
  /// profile); `record_trace`: keep step spans.
  StepRunner(const ServingScenario& s, std::size_t replicas, bool record_trace, TransferBound bound);

  /// Plans and adds batches on `rep` while its pipeline has room (one batch without PP, up to PP
  /// with it); idle when its scheduler forms none.
  void start(workload::OpenGraph& g, Replica& rep, std::vector<Request>& reqs);

  /// A batch's followed task ended (`p`: a step end or a resume): the batch resumes, or it leaves
  /// the pipeline and its requests are settled. Returns the replica whose batch left (settled()
  /// says what its requests do next: the run acts, then start()s the replica), else none.
  [[nodiscard]] std::optional<int> advance(workload::OpenGraph& g, Purpose p, std::vector<Replica>& replicas,
                                           std::vector<Request>& reqs);
  [[nodiscard]] const StepSettled& settled() const { return settled_; }

  /// The batches in flight; the run follows its own tasks (arrivals, KV parts) here too.
  [[nodiscard]] BatchTracker& batches() { return batches_; }
  [[nodiscard]] const BatchTracker& batches() const { return batches_; }
  /// The stage tasks (every ended task passes through them; the KV transfers' watch).
  [[nodiscard]] StageTasks& tasks() { return tasks_; }

  /// Moves the steps' counts into the log: the record's, the step programs' counters, collectives.
  void into(ServingLog& log);

 private:
  StepProgramBuilder& programs_for(const Replica& rep);
  void add_batch(workload::OpenGraph& g, const Replica& rep, std::uint64_t b);
  void resume(workload::OpenGraph& g, const Replica& rep, std::uint64_t b);
  void finish(SimTime now, Replica& rep, std::uint64_t b, std::vector<Request>& reqs);

  const ServingScenario& s_;
  TransferBound bound_;
  StepProgramBuilder programs_;
  /// A mixed fleet's second kind as its replicas run it (its builder keeps a reference).
  std::optional<ServingScenario> mixed_s_;
  std::optional<StepProgramBuilder> mixed_programs_;
  StepBuilder step_;  ///< the batch being planned
  std::mt19937_64 mtp_rng_;
  BatchTracker batches_;             ///< batches in flight, and why each task is followed
  StageTasks tasks_;                 ///< stage programs onto the executor, collective times remembered
  StageProgram program_;             ///< add_batch's scratch
  StepSettled settled_;              ///< the last batch's settlement
  RunRecord record_;                 ///< steps, KV use, tokens out, spans
  std::int64_t prefill_tokens_ = 0;  ///< prompt tokens put through the model (cached prefixes not)
};

}  // namespace cs::serving
