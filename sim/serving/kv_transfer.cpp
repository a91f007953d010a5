#include "sim/serving/kv_transfer.hpp"

#include <algorithm>
#include <limits>

namespace cs::serving {

bool resumes(const Replica& rep) {
  const auto& only = rep.stages.front();
  return rep.pp() == 1 && (only.isolated || only.guarded || only.ranks.size() == 1);
}

std::vector<workload::TaskId> add_kv_transfer(workload::OpenGraph& g, const ServingScenario& s, const Replica& from,
                                              const Replica& to, const Request& r, int pairs) {
  const bool whole = from.shape.dp_attention;
  const int parts = whole ? 1 : pairs;
  const double holders = whole ? 1.0 : from.shape.tp;
  const double bytes = static_cast<double>(r.input) * models::kv_bytes_per_token(s.model, from.shape) * holders / parts;
  std::vector<workload::TaskId> ids;
  for (int t = 0; t < parts; ++t) {
    const auto k = static_cast<std::size_t>(whole ? r.id % pairs : t);
    const auto group = g.add_group({from.stages.front().ranks[k], to.stages.front().ranks[k]});
    ids.push_back(g.add_collective(group, workload::Stream::kNone, workload::Category::kPpComm, "kv.transfer",
                                   coll::CollectiveOp::kSendRecv, bytes));
  }
  return ids;
}

SimTime kv_transfer_bound(SimTime now, const Replica& self, const std::vector<Replica>& replicas,
                          const BatchTracker& batches, std::optional<SimTime> next_arrival, bool closed_loop) {
  if (!self.stages.front().guarded) return now;
  SimTime until{std::numeric_limits<std::int64_t>::max()};
  for (const auto& r : replicas) {
    if (!r.prefill_only || &r == &self) continue;
    if (r.inflight == 0) {
      if (closed_loop) return now;  // an arrival may come at any step's end
      if (next_arrival) until = std::min(until, *next_arrival);
      continue;
    }
    const Batch& batch = batches.at(r.batch);
    if (!resumes(r)) return now;
    until = std::min(until, std::max(now, batch.busy_until) + compute_from(batch.program, batch.next));
  }
  return std::max(now, until);
}

}  // namespace cs::serving
