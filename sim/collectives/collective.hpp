#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "sim/core/comm_kinds.hpp"
#include "sim/network/topology.hpp"

namespace cs::coll {

/// The op vocabulary lives in sim/core (models/ names ops too); collectives expand it into flows.
using CollectiveOp = ::cs::CollectiveOp;
/// kMeasured: the collective's time came from a measured or imported curve in the profile.
/// kHierarchical (all-reduce over several nodes): rings inside each node carry the buffer while
/// rings across nodes, one per local GPU index (a rail), carry 1/g of it. For an all-to-all over
/// several nodes (DeepEP's normal kernels): each GPU sends what it has for a remote node to the GPU
/// of the same local index there (its rail), once per node, which forwards it over NVLink.
enum class Algorithm : std::uint8_t { kAuto, kRing, kTree, kNvls, kDirect, kMeasured, kHierarchical };

[[nodiscard]] const char* op_name(CollectiveOp op);
[[nodiscard]] const char* algorithm_name(Algorithm a);
[[nodiscard]] bool parse_op(const std::string& s, CollectiveOp& out);
[[nodiscard]] bool parse_algorithm(const std::string& s, Algorithm& out);

/// nccl-tests' bus-bandwidth factor (PERFORMANCE.md): busbw = algbw * factor.
/// all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; send/recv and shift 1.
[[nodiscard]] double bus_factor(CollectiveOp op, int n);

/// One point-to-point transfer of a collective.
struct FlowSpec {
  net::VertexId src{};
  net::VertexId dst{};
  double bytes = 0.0;
  double rate_cap = 0.0;  ///< bytes/s; infinity when only the links limit it
};

/// A collective as the engine runs it: flows that all start together (the pipelined steady state
/// of NCCL's chunked algorithms, in which every step's links are busy at once) plus a latency:
/// the call's fixed cost and `steps` sequential hops, each paying the slowest hop's latency.
struct CollectivePlan {
  Algorithm algorithm = Algorithm::kRing;
  std::vector<FlowSpec> flows;
  int steps = 0;
  double latency_s = 0.0;
};

/// Sizes follow nccl-tests: all-reduce `bytes` = the buffer; all-gather = the gathered output;
/// reduce-scatter = the input; all-to-all = each rank's send buffer; send/recv: ranks[0] sends
/// `bytes` to ranks[1]; shift: each rank sends `bytes` to the next.
/// A measured (or imported) collective cost for one scope: `op` on `gpus` GPUs spread over `nodes`
/// nodes (inside one node when 1) joined by `fabric` ("" inside a node); time alpha + S x bus
/// factor / busbw (nccl-tests' fit).
/// Or a measured table of times by size (a GPU's NCCL table): `time_s(bytes)` when set, its smallest
/// size's time as alpha and the rest as the bandwidth term of each call.
struct MeasuredCurve {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int gpus = 0;
  int nodes = 1;
  std::string fabric;
  double alpha_s = 0;
  double busbw_bytes_per_s = 0;
  std::function<double(double)> time_s;
  /// The cluster whose GPUs it was measured on (a joined topology's parts differ); empty: any.
  std::string cluster;
};

/// A non-uniform all-to-all carries its traffic matrix in `pair_bytes`: n x n, row-major, entry
/// (i, j) the bytes rank i sends to rank j (the diagonal stays local and moves nothing); `bytes`
/// is then only its nominal size. Empty: the uniform collective of `bytes`.
struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::kAllReduce;
  Algorithm algorithm = Algorithm::kAuto;
  std::vector<int> ranks;  ///< GPU ranks of the topology, in ring order
  double bytes = 0.0;
  double call_latency_s = 0.0;
  std::span<const double> pair_bytes{};
  /// Hierarchical all-to-all: the bytes crossing between nodes as a fraction of the pair bytes they
  /// stand for (a MoE token is sent once per node that holds its experts, then copied to each
  /// GPU there; 1: every pair's bytes cross).
  double node_copies = 1.0;
  /// Measured curves (the profile's): with `kAuto`, a uniform collective whose group has a curve of
  /// its own scope takes the curve's time (algorithm kMeasured) yet still moves its flows.
  std::span<const MeasuredCurve> curves{};
};

/// The ranks grouped by NVLink domain (a node, or a rack of nodes sharing NVLink switches) when they
/// span several domains with the same count (>= 2) on each; empty otherwise (then no hierarchical
/// algorithm).
[[nodiscard]] std::vector<std::vector<int>> node_groups(const net::Topology& topo, const std::vector<int>& ranks);

/// The algorithms that can run `op` on `ranks` of this topology (NVLS needs an NVLS switch
/// adjacent to every rank; hierarchical needs several nodes with equal shares of the ranks).
[[nodiscard]] std::vector<Algorithm> available_algorithms(const net::Topology& topo, CollectiveOp op,
                                                          const std::vector<int>& ranks);

/// The curve measured for this request's scope (op, GPU count, the nodes its ranks span and the
/// topology's fabric), or null.
[[nodiscard]] const MeasuredCurve* curve_for(const net::Topology& topo, const CollectiveRequest& req);

/// Expands a request into flows. A measured curve of the request's scope (kAuto only) keeps the
/// flows of the algorithm the model would pick, each capped at its bytes over the curve's bandwidth
/// term, with the curve's alpha as latency: alone on the machine it takes the measured time (unless
/// the cluster file's links are slower than the measurement), and its bytes still load the links
/// they cross, so other traffic slows it and is slowed by it. Otherwise `kAuto` picks the available algorithm with the
/// lowest `estimate_seconds` (ties: ring, tree, nvls, direct), as NCCL's tuner picks by its cost model. Throws
/// InputError when an explicit algorithm cannot run this op here.
[[nodiscard]] CollectivePlan plan_collective(const net::Topology& topo, const CollectiveRequest& req);

/// Closed-form time of a plan without outside traffic: latency plus the busiest link's bytes over
/// its bandwidth (each flow also bounded by its cap). Equals the flow model's result when the
/// plan's own flows load every link they share equally.
[[nodiscard]] double estimate_seconds(const net::Topology& topo, const CollectivePlan& plan);

/// Textbook formulas on uniform links of bandwidth B and hop latency a (used in tests and docs):
/// ring all-reduce 2(n-1)/n S/B + 2(n-1)a; ring all-gather / reduce-scatter (n-1)/n S/B + (n-1)a.
[[nodiscard]] double ring_closed_form(CollectiveOp op, int n, double bytes, double bw, double hop_latency_s,
                                      double call_latency_s);

}  // namespace cs::coll
