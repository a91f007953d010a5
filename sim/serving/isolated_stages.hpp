#pragma once
#include <vector>

#include "sim/network/topology.hpp"
#include "sim/serving/stage_tasks.hpp"

namespace cs::serving {

/// A KV transfer route between two replicas' first stages: rank t of one to rank t of the other,
/// for t below `pairs`.
struct TransferPairs {
  const Stage* from = nullptr;
  const Stage* to = nullptr;
  int pairs = 0;
};

/// Marks each stage whose TP collectives no other traffic of the run can ever load (no other
/// stage's or replica's collectives, no pipeline send, no KV transfer) as isolated; with
/// `fast_path` false none is. Alone on its links a collective takes the same time whenever it runs
/// (the flow model's arithmetic depends on time differences only), so its first run through the
/// flow model gives every later one of the same size (StageTasks): identical results, one task
/// per stage and step.
void mark_isolated(const net::Topology& topo, const std::vector<std::vector<Stage>*>& replicas,
                   const std::vector<TransferPairs>& transfers, bool fast_path);

}  // namespace cs::serving
