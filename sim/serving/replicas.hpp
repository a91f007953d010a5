#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "models/ops/serving_ops.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/batch_scheduler.hpp"
#include "sim/serving/isolated_stages.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/serving/stage_tasks.hpp"
#include "sim/serving/step_program.hpp"

namespace cs::serving {

struct ServingLog;

/// A replica of the run: its op shape, pipeline stages (GPUs in rank order), pool role, queue
/// with its KV cache, and batch scheduler.
struct Replica {
  int index = 0;
  models::ServingShape shape;
  std::vector<Stage> stages;
  int inflight = 0;  ///< batches in the pipeline (at most PP)
  bool prefill_only = false, decode_only = false;
  ReplicaQueue queue;
  std::unique_ptr<BatchScheduler> scheduler;
  int incoming = 0;         ///< disaggregated: requests whose KV is moving here
  std::uint64_t batch = 0;  ///< the batch it runs (without PP: at most one)
  [[nodiscard]] int pp() const { return static_cast<int>(stages.size()); }
  [[nodiscard]] StagePlace place(int k) const {
    const auto& st = stages[static_cast<std::size_t>(k)];
    return {st.first_layer, st.layers, k == 0, k + 1 == pp()};
  }
};

/// A replica's op shape: its TP and EP, the scenario's attention-DP, DeepEP, weights and KV format.
[[nodiscard]] models::ServingShape shape_of(const ServingScenario& s, const ServingScenario& mine);

/// The run's replicas, and the memory the report shows: the last (decode) pool's, which holds the
/// KV cache longest.
struct Replicas {
  std::vector<Replica> replicas;
  ServingMemory memory;
  std::int64_t blocks = 0;  ///< the last pool's own KV blocks, also under --allow-oom
  bool oom = false;         ///< a pool was given the KV blocks its memory lacks (allow_oom)
};

/// Every replica of `s` (the prefill pool's first when disaggregated), each with its own TP, PP
/// and EP, its ranks taken in order. `oom_longest_blocks` > 0 (--allow-oom): a pool that cannot
/// hold that many blocks is given max batch of them, as if the GPU had the memory.
[[nodiscard]] Replicas make_replicas(const ServingScenario& s, std::int64_t oom_longest_blocks);

/// Each replica's stages as the running graph's process groups: every stage's TP group, and the
/// send/recv pair from its first GPU to the next stage's.
void add_groups(workload::OpenGraph& g, std::vector<Replica>& replicas);

/// The fleet's part of a run's log: its replicas, each pool's shape when disaggregated, the
/// schedulers' preemptions, and the (decode) pool's memory, KV blocks and EP, which the report shows.
void fleet_into(const ServingScenario& s, const Replicas& fleet, ServingLog& log);

/// The fast path's stages (isolated_stages): every replica's stages, and with `kv_pairs` > 0 every
/// prefill-decode pair's KV transfer routes.
void mark_isolated(const net::Topology& topo, std::vector<Replica>& replicas, int kv_pairs, bool fast_path);

}  // namespace cs::serving
