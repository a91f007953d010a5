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

/// Per link: 1 where no traffic can ever load it to its capacity. A link u -> v whose every flow
/// entered u through links no wider together than it (u only forwards; the way back from v left
/// out), or leaves v through such links, has a constraint those links' own imply, so the max-min
/// shares of any set of flows are the same with it as without it (up to the solver's 1e-12 ties):
/// a full-bisection fabric's uplinks, where a rail switch's link to the spine carries at most what
/// its nodes' NICs send. Sharing one does not make traffic meet.
[[nodiscard]] std::vector<char> never_binding(const net::Topology& topo);

/// Marks each stage whose TP collectives no other traffic of the run can ever load (no other
/// stage's or replica's collectives, no pipeline send, no KV transfer) as isolated, and each
/// stage that only the KV transfers can reach as guarded; with `fast_path` false none is either.
/// Alone on its links a collective takes the same time whenever it runs (the flow model's
/// arithmetic depends on time differences only), so its first run through the flow model gives
/// every later one of the same size (StageTasks): one task per stage and step. A guarded stage's
/// collectives are alone while no transfer runs or starts (StageTasks::resume's window). Links
/// that never bind (never_binding) do not count as shared.
void mark_isolated(const net::Topology& topo, const std::vector<std::vector<Stage>*>& replicas,
                   const std::vector<TransferPairs>& transfers, bool fast_path);

}  // namespace cs::serving
