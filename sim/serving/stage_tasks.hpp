#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/serving/step_program.hpp"
#include "sim/workload/executor.hpp"

namespace cs::serving {

/// A pipeline stage of a replica: its TP group runs `layers` layers of every batch.
struct Stage {
  std::vector<int> ranks;
  std::uint32_t group = 0;    ///< the TP group (the executor's process group)
  std::uint32_t to_next = 0;  ///< the send/recv pair to the next stage's first GPU
  int layers = 0;
  int first_layer = 0;    ///< the model's index of the stage's first layer
  bool isolated = false;  ///< no other traffic can share its collectives' links (fast path)
  bool guarded = false;   ///< only KV transfers can share them (fast path while none runs)
};

/// The disaggregated KV transfers as the guarded stages see them: how many parts are on the
/// links now, and how many transfers have started (a collective during which one started did not
/// run alone).
struct TransferWatch {
  int in_flight = 0;
  std::uint64_t started = 0;
  /// A transfer of `parts` parts started.
  void started_one(int parts) {
    in_flight += parts;
    ++started;
  }
  void part_arrived() { --in_flight; }
};

/// The compute time of `prog` from segment `next` on (its collectives left out): a lower bound of
/// the time the rest of the program takes, whatever the network does.
[[nodiscard]] SimTime compute_from(const StageProgram& prog, std::size_t next);

/// Puts stage programs on the running executor: kernels between collectives as one compute task
/// on the stage's first GPU, each TP collective (or DeepEP all-to-all) over its group. A stage
/// whose collectives no other traffic can reach (isolated) remembers each collective's first
/// flow-model time and from then on adds what it knows as one task (the same end: alone on its
/// links a collective's time depends only on its size). Keeps the breakdown of collective time.
class StageTasks {
 public:
  /// A task of the run ended after `duration`: a remembered collective's time is kept, a stage
  /// collective's added to the breakdown. Every task's end is passed (ids are reused).
  void ended(workload::TaskId id, SimTime duration);
  /// Adds a stage of a batch: one compute task when its collectives' times are all known (fast
  /// path), else kernels and collectives through the flow model. The first and last task.
  std::pair<workload::TaskId, workload::TaskId> add_stage(workload::OpenGraph& g, const Stage& st,
                                                          const StageProgram& prog);
  /// One isolated or guarded stage (no PP), from segment `next`: everything whose time is known
  /// as one compute task, up to a collective of a size not seen yet, which runs through the flow
  /// model. A guarded stage's known collectives join the task only while they end by `until` (no
  /// KV transfer can start before it) and none is running. Returns the task to follow, and whether
  /// it ends the program (else resume when it ends).
  struct Added {
    workload::TaskId id{};
    bool last = false;
    SimTime end{};  ///< the task's end when it is compute, else its start
  };
  Added resume(workload::OpenGraph& g, const Stage& st, const StageProgram& prog, std::size_t& next, SimTime until);
  /// The KV transfers (the serving run keeps it up to date).
  TransferWatch& transfers() { return watch_; }
  /// Seconds per collective label (kCollectiveLabels order), labels that never ran left out.
  [[nodiscard]] std::vector<std::pair<std::string, double>> collectives_s() const;

 private:
  /// An isolated collective: group, op, bytes, node copies, shares (the builder's routing memo,
  /// so the same shares are the same pointer) and direction.
  using MemoKey = std::tuple<std::uint32_t, int, double, double, const std::vector<double>*, bool>;
  /// Looked up twice per collective per step: hashed, not ordered (nothing iterates the memo).
  struct MemoKeyHash {
    std::size_t operator()(const MemoKey& k) const;
  };
  /// What a collective task is, for its end.
  struct Tag {
    bool memo = false;          ///< an isolated stage's: its time is remembered
    bool watched = false;       ///< a guarded stage's: remembered if no transfer started meanwhile
    std::uint64_t started = 0;  ///< transfers started before it
    MemoKey key{};
    std::uint8_t comm = 0;  ///< 1 + its kind (the breakdown), 0: not a stage collective
  };
  [[nodiscard]] static MemoKey key_of(const Stage& st, const Segment& seg);
  [[nodiscard]] std::optional<SimTime> memo(const Stage& st, const Segment& seg) const;
  /// Each collective kind's time over one run of a segment list (comm_time_'s order).
  using CommTimes = std::array<SimTime, kCollectiveLabels.size()>;
  /// Adds `times` runs of `comm` to the breakdown.
  void count_known(const CommTimes& comm, std::int64_t times);
  /// The time of `segs` run back to back when every collective's time is known, else nothing; one
  /// run's collective times go into `comm` (one memo lookup per collective serves both).
  [[nodiscard]] std::optional<SimTime> known_time(const Stage& st, const std::vector<Segment>& segs,
                                                  CommTimes& comm) const;
  workload::TaskId add_collective(workload::OpenGraph& g, const Stage& st, const Segment& seg, bool alone);

  std::vector<Tag> tags_;  ///< by task index
  std::unordered_map<MemoKey, SimTime, MemoKeyHash> memo_;
  std::array<SimTime, kCollectiveLabels.size()> comm_time_{};  ///< per kind, summed over the run
  TransferWatch watch_;
};

}  // namespace cs::serving
