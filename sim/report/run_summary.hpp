#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/network/topology.hpp"
#include "sim/workload/executor.hpp"
#include "sim/workload/workload_graph.hpp"

namespace cs::report {

/// Where one GPU's step went, in picoseconds of the log's clock: the union of its compute kernels,
/// the union of its communication (every collective and transfer it takes part in), and the part
/// of that communication no kernel hides (exposed). Idle is the rest of the makespan.
struct GpuTimePs {
  bool simulated = false;  ///< false: a data-parallel replica the run did not simulate (symmetry)
  std::int64_t compute = 0, comm = 0, exposed_comm = 0;
};

/// Per GPU, in GPU order (on the workers; the same result for any thread count).
[[nodiscard]] std::vector<GpuTimePs> gpu_times(const workload::WorkloadGraph& g, const workload::RunLog& log);

/// What one directed link carried over a run, from the log's link samples (its load changes).
struct LinkUse {
  std::uint32_t link = 0;
  std::string name;  ///< "from->to"
  std::string type;  ///< the link's type in the topology ("nvlink", "pcie", ...)
  double bandwidth_bytes_per_s = 0;
  double bytes = 0;        ///< the load integrated over time
  double busy_s = 0;       ///< time with any load
  double utilisation = 0;  ///< bytes / (bandwidth x makespan)
};

/// The links that carried anything, most bytes first (then by link id). Empty when the run did not
/// record link samples (RunOptions::record_links).
[[nodiscard]] std::vector<LinkUse> link_use(const workload::RunLog& log, const net::Topology& topo);

}  // namespace cs::report
