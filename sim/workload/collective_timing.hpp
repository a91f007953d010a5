#pragma once
#include <vector>

#include "calibration/profile/hardware_profile.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/network/network_model.hpp"
#include "sim/network/topology.hpp"

namespace cs::workload {

struct CollectiveTiming {
  double seconds = 0;
  coll::Algorithm algorithm = coll::Algorithm::kRing;
  double algbw_bytes_per_s = 0;  ///< bytes / seconds (nccl-tests' algbw)
  double busbw_bytes_per_s = 0;  ///< algbw x nccl-tests' bus factor
};

/// One collective alone on the topology, run through the same engine and network model as a
/// training step (what `clustersim collective` and the validation harness report).
[[nodiscard]] CollectiveTiming time_collective(const net::Topology& topo, coll::CollectiveOp op, coll::Algorithm algo,
                                               const std::vector<int>& ranks, double bytes, double call_latency_s,
                                               net::NetworkModelKind network = net::NetworkModelKind::kFlow,
                                               const std::vector<calib::CollectiveCurve>* curves = nullptr);

}  // namespace cs::workload
