#include "sim/workload/collective_timing.hpp"

#include "sim/workload/executor.hpp"

namespace cs::workload {

CollectiveTiming time_collective(const net::Topology& topo, coll::CollectiveOp op, coll::Algorithm algo,
                                 const std::vector<int>& ranks, double bytes, double call_latency_s,
                                 net::NetworkModelKind network, const std::vector<calib::CollectiveCurve>* curves) {
  WorkloadGraph g(topo.gpu_count());
  g.add_collective(g.add_group(ranks), Stream::kComm, Category::kTpComm, "collective", -1, -1, op, bytes, algo);
  ExecutorOptions eo;
  eo.network = network;
  eo.collective_latency_s = call_latency_s;
  eo.curves = curves;
  const auto log = simulate(g, topo, eo);
  CollectiveTiming t;
  t.seconds = log.makespan.seconds();
  t.algorithm = log.algorithms.front();
  t.algbw_bytes_per_s = bytes / t.seconds;
  t.busbw_bytes_per_s = t.algbw_bytes_per_s * coll::bus_factor(op, static_cast<int>(ranks.size()));
  return t;
}

}  // namespace cs::workload
