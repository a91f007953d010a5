#pragma once
#include <optional>
#include <vector>

#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/batch_tracker.hpp"
#include "sim/serving/replicas.hpp"
#include "sim/serving/request.hpp"
#include "sim/workload/executor.hpp"

namespace cs::serving {

/// Whether a replica's batches are added a task at a time (StageTasks::resume): one stage whose
/// collectives' times may be reused (isolated or guarded), or with no collectives.
[[nodiscard]] bool resumes(const Replica& rep);

/// Disaggregated: the prompt's KV cache of `r` moves from `from` to `to` over `pairs` GPU pairs
/// (the smaller pool's TP), each a send/recv on the topology's links, sharing them with whatever
/// else runs there. Every TP rank holds a shard of the sequence's cache and sends it to its peer;
/// under attention-DP one GPU holds it all and sends it whole (the sequences' GPUs taken in turn).
/// Returns the parts' tasks.
[[nodiscard]] std::vector<workload::TaskId> add_kv_transfer(workload::OpenGraph& g, const ServingScenario& s,
                                                            const Replica& from, const Replica& to, const Request& r,
                                                            int pairs);

/// The earliest time a KV transfer not yet started could start, `self` aside (a replica's own
/// transfers start when its step ends): a prefill replica's running step ends no sooner than its
/// running task and the rest of its kernels; an idle one starts a step at the next arrival
/// (`next_arrival`; none left: never; `closed_loop`: any step's end may bring one, so now).
[[nodiscard]] SimTime kv_transfer_bound(SimTime now, const Replica& self, const std::vector<Replica>& replicas,
                                        const BatchTracker& batches, std::optional<SimTime> next_arrival,
                                        bool closed_loop);

}  // namespace cs::serving
