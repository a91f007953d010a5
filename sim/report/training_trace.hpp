#pragma once
#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

#include "sim/network/topology.hpp"
#include "sim/workload/executor.hpp"
#include "sim/workload/workload_graph.hpp"

namespace cs::report {

/// What part of a run a trace shows (`--trace-gpus`, `--trace-window`, `--trace-micro-batches`,
/// `--trace-link-points`). The default is everything, with link counters at most
/// `link_points` samples per link.
struct TraceSelection {
  std::vector<int> gpus;                                 ///< ranks to show, ascending; empty = every GPU
  SimTime from{};                                        ///< spans that end before this are left out
  SimTime to{std::numeric_limits<std::int64_t>::max()};  ///< spans that start after this are left out
  int first_micro = -1;  ///< with last_micro: only tasks of these micro-batches (inclusive); -1 = all
  int last_micro = -1;
  int link_points = 1000;  ///< link counters: time buckets per link over the window (a bounded rate)
  /// `--trace-detail layer` (the default): from micro-batch 1 on, the spans one layer's micro-batch
  /// runs back to back on one stream (its compute pieces and the TP collectives between them) are
  /// one slice; micro-batch 0 keeps every span, so the pattern stays visible. false: every span.
  bool merge_layers = true;
};

/// What a trace holds, for the caller's message and the tests.
struct TraceStats {
  std::uint64_t events = 0;
  std::uint64_t spans = 0;
  std::uint64_t merged = 0;  ///< spans folded into a layer slice (--trace-detail layer)
  std::uint64_t counter_samples = 0;
  SimTime from{};  ///< the window the link counters cover
  SimTime to{};
};

/// Streams a training step's Chrome / Perfetto trace to `out`: one process per shown GPU with its
/// compute, communication, context-parallel and pipeline-transfer streams as threads; and, when the
/// run recorded link loads, one counter track per link that carried traffic in the window (the
/// links of GPUs not shown are left out), as time-weighted averages over `link_points` equal
/// buckets, so the counters' size is bounded whatever the number of network changes. Memory does
/// not grow with the trace: events are written as they are produced.
TraceStats write_training_trace(std::ostream& out, const std::string& path_for_errors, const workload::WorkloadGraph& g,
                                const workload::RunLog& log, const net::Topology& topo, const TraceSelection& sel);

/// Time-weighted averages of a step function over `buckets` equal buckets of [from, to): the
/// function is 0 before the first sample and takes each sample's value from its time on (samples in
/// time order). Exposed for the tests.
[[nodiscard]] std::vector<double> bucket_averages(const std::vector<std::pair<SimTime, double>>& samples, SimTime from,
                                                  SimTime to, int buckets);

}  // namespace cs::report
