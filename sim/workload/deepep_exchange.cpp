#include "sim/workload/deepep_exchange.hpp"

#include <algorithm>
#include <map>

#include "models/ops/layer_ops.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/core/check.hpp"
#include "sim/core/errors.hpp"
#include "sim/workload/executor.hpp"

namespace cs::workload {

DeepepExchange time_deepep(const net::Topology& topo, const models::ModelArch& m, const DeepepRequest& r,
                           const calib::HardwareProfile& profile) {
  CS_ASSERT(m.is_moe() && r.ep >= 2 && r.nodes >= 1 && r.ep % r.nodes == 0 && r.ep <= topo.gpu_count(),
            "a DeepEP exchange joins EP >= 2 GPUs of a MoE model, in equal shares of its nodes");
  DeepepExchange x;
  x.token_bytes = models::deepep_token_bytes(m, r.fp8 && !r.combine);
  const bool ll = r.kernel == DeepepKernel::kLowLatency;
  const double k = static_cast<double>(m.moe.top_k);
  const auto spread = models::dispatch_spread(m, r.ep, r.nodes);
  // Normal: once per distinct GPU (and per distinct node across nodes); low-latency: every copy.
  const double per_token_gpus = ll ? k : spread.gpus;
  x.send_bytes = r.tokens * per_token_gpus * x.token_bytes;
  x.logical_nvl_bytes = x.send_bytes;
  x.logical_rdma_bytes = ll ? x.send_bytes : r.tokens * spread.nodes * x.token_bytes;
  const bool forwarded = !ll && r.nodes > 1;
  const auto n = static_cast<std::size_t>(r.ep);
  std::vector<int> ranks(n);
  for (std::size_t i = 0; i < n; ++i) ranks[i] = static_cast<int>(i);
  // Balanced routing: every GPU sends each GPU (itself included) the same share.
  std::vector<double> pairs(n * n, x.send_bytes / static_cast<double>(n));
  const double node_copies = forwarded ? spread.nodes / spread.gpus : 1.0;
  const auto algo = forwarded ? coll::Algorithm::kHierarchical : coll::Algorithm::kDirect;

  WorkloadGraph g(topo.gpu_count());
  const auto group = g.add_group(ranks);
  g.add_alltoall(group, group, Stream::kComm, Category::kEpComm, r.combine ? "ep.combine" : "ep.dispatch", -1, -1,
                 g.add_traffic(pairs, node_copies), algo);
  ExecutorOptions eo;
  eo.collective_latency_s = profile.collective_latency.value;
  x.flow_seconds = simulate(g, topo, eo).makespan.seconds();

  // The bytes each link carries, from the same plan the executor ran.
  coll::CollectiveRequest req;
  req.op = coll::CollectiveOp::kAllToAll;
  req.algorithm = algo;
  req.ranks = ranks;
  req.bytes = x.send_bytes;
  req.pair_bytes = pairs;
  req.node_copies = node_copies;
  std::map<std::uint32_t, double> load;
  for (const auto& f : coll::plan_collective(topo, req).flows) {
    for (auto l : topo.route(f.src, f.dst).links) load[net::index(l)] += f.bytes;
  }
  for (const auto& [l, bytes] : load) {
    const auto& link = topo.link(static_cast<net::LinkId>(l));
    const auto from = topo.vertex(link.from).kind;
    if (from == net::VertexKind::kNic && link.type == "nic") x.nic_bytes = std::max(x.nic_bytes, bytes);
    if (from == net::VertexKind::kGpu && link.type == "nvlink") x.nvlink_bytes = std::max(x.nvlink_bytes, bytes);
  }

  if (ll) {
    const auto& floor = r.combine ? profile.deepep_ll_combine_floor : profile.deepep_ll_dispatch_floor;
    if (!floor) {
      throw InputError("profile " + profile.id,
                       r.combine ? "/achieved/deepep_ll_combine_floor" : "/achieved/deepep_ll_dispatch_floor",
                       "DeepEP's low-latency kernels need their fixed floor for this GPU (a fitted or cited time); "
                       "this profile has none");
    }
    x.floor_seconds = floor->value;
  }
  x.seconds = x.flow_seconds + x.floor_seconds;
  return x;
}

}  // namespace cs::workload
