#include <doctest/doctest.h>

#include "sim/collectives/collective.hpp"
#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/core/errors.hpp"
#include "sim/network/fabric_spec.hpp"
#include "sim/workload/collective_timing.hpp"
#include "sim/workload/executor.hpp"
#include "tests/support/builders.hpp"

using namespace cs;
using coll::Algorithm;
using coll::CollectiveOp;

namespace {

double simulate_one(const net::Topology& topo, CollectiveOp op, Algorithm algo, std::vector<int> ranks, double bytes,
                    double call_latency_s, net::NetworkModelKind kind = net::NetworkModelKind::kFlow,
                    Algorithm* used = nullptr) {
  const auto t = workload::time_collective(topo, op, algo, ranks, bytes, call_latency_s, kind);
  if (used) *used = t.algorithm;
  return t.seconds;
}

std::vector<int> first(int n) {
  std::vector<int> r;
  for (int i = 0; i < n; ++i) r.push_back(i);
  return r;
}

}  // namespace

TEST_CASE("ring all-reduce on n GPUs takes 2(n-1)/n S/B plus 2(n-1) hop latencies plus the call latency") {
  for (int n : {2, 4, 8}) {
    for (double S : {1e6, 1e9}) {
      const auto topo = net::Topology::build(test::make_star(n, "100 GB/s", 1e-6), n);
      const double t = simulate_one(topo, CollectiveOp::kAllReduce, Algorithm::kRing, first(n), S, 5e-6);
      // Each ring hop crosses two links (GPU -> switch -> GPU): 2 us per step.
      CHECK(t ==
            doctest::Approx(coll::ring_closed_form(CollectiveOp::kAllReduce, n, S, 100e9, 2e-6, 5e-6)).epsilon(1e-9));
      CHECK(t == doctest::Approx(5e-6 + 2 * (n - 1) * 2e-6 + 2.0 * (n - 1) / n * S / 100e9).epsilon(1e-9));
    }
  }
}

TEST_CASE(
    "ring all-gather and reduce-scatter take (n-1)/n S/B plus (n-1) hop latencies, on directly connected GPUs too") {
  const auto topo = net::Topology::build(test::make_mesh(8, "50 GB/s", 2e-6), 8);
  for (auto op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
    const double t = simulate_one(topo, op, Algorithm::kRing, first(8), 8e9, 0.0);
    CHECK(t == doctest::Approx(7 * 2e-6 + 7.0 / 8 * 8e9 / 50e9).epsilon(1e-9));
  }
}

TEST_CASE("the double binary tree moves 2S through each GPU's link, NVLS moves S each way at the switch's rate") {
  const auto topo = net::Topology::build(test::make_star(8, "100 GB/s"), 8);
  CHECK(simulate_one(topo, CollectiveOp::kAllReduce, Algorithm::kTree, first(8), 1e9, 0.0) ==
        doctest::Approx(2 * 1e9 / 100e9).epsilon(1e-9));
  const auto hgx = net::Topology::build(test::shipped_cluster("hgx-h100"), 8);
  // NVLS: S / min(link, 275 GB/s switch rate) plus two hop latencies and the call.
  CHECK(simulate_one(hgx, CollectiveOp::kAllReduce, Algorithm::kNvls, first(8), 1e9, 0.0) ==
        doctest::Approx(1e9 / 275e9 + 2 * 0.5e-6).epsilon(1e-9));
}

TEST_CASE("direct all-to-all sends S/n to every peer, send/recv moves S once") {
  const auto topo = net::Topology::build(test::make_star(4, "100 GB/s"), 4);
  CHECK(simulate_one(topo, CollectiveOp::kAllToAll, Algorithm::kDirect, first(4), 4e9, 0.0) ==
        doctest::Approx(3 * 1e9 / 100e9).epsilon(1e-9));
  CHECK(simulate_one(topo, CollectiveOp::kSendRecv, Algorithm::kDirect, {0, 3}, 4e9, 0.0) ==
        doctest::Approx(4e9 / 100e9).epsilon(1e-9));
}

TEST_CASE("bus-bandwidth factors follow nccl-tests") {
  CHECK(coll::bus_factor(CollectiveOp::kAllReduce, 8) == doctest::Approx(1.75));
  CHECK(coll::bus_factor(CollectiveOp::kAllGather, 8) == doctest::Approx(0.875));
  CHECK(coll::bus_factor(CollectiveOp::kReduceScatter, 4) == doctest::Approx(0.75));
  CHECK(coll::bus_factor(CollectiveOp::kAllToAll, 2) == doctest::Approx(0.5));
  CHECK(coll::bus_factor(CollectiveOp::kSendRecv, 2) == doctest::Approx(1.0));
}

TEST_CASE("auto picks the algorithm with the smallest closed-form time, so small messages prefer the tree") {
  const auto topo = net::Topology::build(test::make_star(8, "100 GB/s", 1e-6), 8);
  for (double S : {8.0, 1e4, 1e6, 1e9}) {
    Algorithm used{};
    const double t = simulate_one(topo, CollectiveOp::kAllReduce, Algorithm::kAuto, first(8), S, 0.0,
                                  net::NetworkModelKind::kFlow, &used);
    const double ring = simulate_one(topo, CollectiveOp::kAllReduce, Algorithm::kRing, first(8), S, 0.0);
    const double tree = simulate_one(topo, CollectiveOp::kAllReduce, Algorithm::kTree, first(8), S, 0.0);
    CHECK(t == doctest::Approx(std::min(ring, tree)).epsilon(1e-9));
    CHECK(used == (tree < ring ? Algorithm::kTree : Algorithm::kRing));
  }
  Algorithm small{}, large{};
  (void)simulate_one(topo, CollectiveOp::kAllReduce, Algorithm::kAuto, first(8), 8.0, 0.0, net::NetworkModelKind::kFlow,
                     &small);
  (void)simulate_one(topo, CollectiveOp::kAllReduce, Algorithm::kAuto, first(8), 1e9, 0.0, net::NetworkModelKind::kFlow,
                     &large);
  CHECK(small == Algorithm::kTree);
  CHECK(large == Algorithm::kRing);
}

TEST_CASE("an algorithm that cannot run here is bad input naming the request's algorithm field") {
  const auto topo = net::Topology::build(test::shipped_cluster("dgx-a100"), 8);
  coll::CollectiveRequest req{CollectiveOp::kAllReduce, Algorithm::kNvls, first(8), 1e6, 0.0};
  CHECK_THROWS_WITH_AS((void)coll::plan_collective(topo, req),
                       "collective request: /algorithm: algorithm 'nvls' cannot run allreduce on these GPUs of "
                       "dgx-a100; available: ring, tree",
                       InputError);
}

TEST_CASE("more link bandwidth never makes a collective slower") {
  for (auto op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kAllToAll}) {
    double prev = 1e30;
    for (const char* bw : {"5 GB/s", "20 GB/s", "100 GB/s", "400 GB/s"}) {
      const auto topo = net::Topology::build(test::make_star(8, bw, 1e-6), 8);
      const double t = simulate_one(topo, op, Algorithm::kAuto, first(8), 64e6, 5e-6);
      CHECK(t < prev);
      prev = t;
    }
  }
}

TEST_CASE(
    "across nodes, the hierarchical all-reduce beats the rail rings for large buffers (fewer bytes on the NICs)") {
  const auto fabric =
      config::parse_fabric(config::load(test::data_path("scenarios/fabrics/ib-ndr-rail.json")), "ib-ndr-rail");
  const auto topo = net::Topology::build(test::shipped_cluster("hgx-h100"), 8, 4, fabric);
  std::vector<int> all;
  for (int r = 0; r < 32; ++r) all.push_back(r);
  const auto ring = workload::time_collective(topo, CollectiveOp::kAllReduce, Algorithm::kRing, all, 1e9, 6e-6);
  const auto hier = workload::time_collective(topo, CollectiveOp::kAllReduce, Algorithm::kHierarchical, all, 1e9, 6e-6);
  const auto best = workload::time_collective(topo, CollectiveOp::kAllReduce, Algorithm::kAuto, all, 1e9, 6e-6);
  // Rings move 2(N-1)/N S / g per NIC, the hierarchical form 2(n-1)/n S / g (N GPUs, n nodes).
  CHECK(hier.seconds < ring.seconds);
  CHECK(ring.seconds < 1.25 * hier.seconds);
  CHECK(best.algorithm == Algorithm::kHierarchical);
  // One GPU per node (a DP group of the first GPUs): no hierarchical algorithm to choose.
  CHECK(coll::node_groups(topo, {0, 8, 16, 24}).empty());
}

TEST_CASE("a non-uniform all-to-all moves each pair's bytes: the busiest sender sets the time") {
  // Four GPUs on a star of 100 GB/s links: rank 0 sends 3 GB to each peer, the others 1 GB each.
  const auto topo = net::Topology::build(test::make_star(4, "100 GB/s"), 4);
  std::vector<double> pairs(16, 1e9);
  for (int j = 0; j < 4; ++j) pairs[static_cast<std::size_t>(j * 4 + j)] = 0;
  for (int j = 1; j < 4; ++j) pairs[static_cast<std::size_t>(j)] = 3e9;
  coll::CollectiveRequest req;
  req.op = CollectiveOp::kAllToAll;
  req.ranks = first(4);
  req.bytes = 4e9;
  req.pair_bytes = pairs;
  const auto plan = coll::plan_collective(topo, req);
  CHECK(plan.flows.size() == 12);
  double from0 = 0, total = 0;
  for (const auto& f : plan.flows) {
    total += f.bytes;
    if (f.src == topo.gpu(0)) from0 += f.bytes;
  }
  CHECK(from0 == 9e9);
  CHECK(total == 18e9);
  // Rank 0's uplink carries 9 GB at 100 GB/s; every downlink carries 3 + 1 + 1 = 5 GB.
  CHECK(coll::estimate_seconds(topo, plan) == doctest::Approx(0.09).epsilon(1e-9));
  // The uniform all-to-all of the same mean send buffer (4.5 GB, 1.5 GB per peer) is faster.
  req.pair_bytes = {};
  req.bytes = 4.5e9 * 4.0 / 3.0;
  CHECK(coll::estimate_seconds(topo, coll::plan_collective(topo, req)) < 0.09);
}

TEST_CASE("the executor runs a traffic-matrix all-to-all on the flow model in the closed-form time") {
  const auto topo = net::Topology::build(test::make_star(4, "100 GB/s"), 4);
  std::vector<double> pairs(16, 1e9);
  for (int j = 0; j < 4; ++j) pairs[static_cast<std::size_t>(j * 4 + j)] = 0;
  for (int j = 1; j < 4; ++j) pairs[static_cast<std::size_t>(j)] = 3e9;
  workload::WorkloadGraph g(4);
  const auto gid = g.add_group(first(4));
  const auto id =
      g.add_alltoall(gid, gid, workload::Stream::kComm, workload::Category::kTpComm, "ep.dispatch", 0, 0, pairs);
  CHECK(g.collective(g.task(id)).bytes == doctest::Approx(18e9 / 4));  // the mean send buffer
  const auto log = workload::simulate(g, topo, workload::ExecutorOptions{});
  // Flows from rank 0 share its uplink (9 GB); the others finish earlier: 0.09 s in all.
  CHECK(log.makespan.seconds() == doctest::Approx(0.09).epsilon(1e-6));
  CHECK(log.flows == 12);
}

TEST_CASE("across nodes a ring runs one channel per rail: every NIC carries (N-1)/N S/g, not one NIC all of it") {
  // NCCL builds one ring per channel, each leaving the node through a different NIC (PXN keeps the
  // traffic on the NIC's rail). 2 nodes x 8 GPUs: 16 inter-node flows, one per NIC and direction.
  const auto fabric =
      config::parse_fabric(config::load(test::data_path("scenarios/fabrics/ib-ndr-rail.json")), "ib-ndr-rail");
  const auto topo = net::Topology::build(test::shipped_cluster("hgx-h100"), 8, 2, fabric);
  const double S = 1024.0 * 1024 * 1024;
  const auto p = coll::plan_collective(topo, {CollectiveOp::kReduceScatter, Algorithm::kRing, first(16), S, 0.0});
  int inter = 0;
  for (const auto& f : p.flows) {
    const bool crosses = topo.vertex(f.src).node != topo.vertex(f.dst).node;
    inter += crosses ? 1 : 0;
    CHECK(f.bytes == doctest::Approx(crosses ? 15.0 / 16 * S / 8 : 15.0 / 16 * S));
  }
  CHECK(inter == 16);
  CHECK(p.steps == 15);

  // The acceptance figure: a 1 GiB reduce-scatter and all-gather within 15% of the
  // all-reduce's bus bandwidth on the same two nodes (docs/accuracy.md has the figures).
  const auto ar = workload::time_collective(topo, CollectiveOp::kAllReduce, Algorithm::kAuto, first(16), S, 6e-6);
  for (auto op : {CollectiveOp::kReduceScatter, CollectiveOp::kAllGather}) {
    const auto t = workload::time_collective(topo, op, Algorithm::kAuto, first(16), S, 6e-6);
    CAPTURE(coll::op_name(op));
    CHECK(t.busbw_bytes_per_s >= 0.85 * ar.busbw_bytes_per_s);
    CHECK(t.busbw_bytes_per_s <= 1.15 * ar.busbw_bytes_per_s);
  }
}

TEST_CASE(
    "rail-forwarded all-to-all (DeepEP normal kernels): the same bytes reach every GPU, each token crosses once per "
    "node") {
  const auto fabric =
      config::parse_fabric(config::load(test::data_path("scenarios/fabrics/ib-ndr-rail.json")), "ib-ndr-rail");
  const auto topo = net::Topology::build(test::shipped_cluster("hgx-h100"), 8, 4, fabric);
  std::vector<int> all;
  for (int r = 0; r < 32; ++r) all.push_back(r);
  coll::CollectiveRequest req;
  req.op = CollectiveOp::kAllToAll;
  req.ranks = all;
  req.bytes = 32e6;  // 1 MB to each of 32 ranks
  req.algorithm = Algorithm::kDirect;
  const auto direct = coll::plan_collective(topo, req);
  req.algorithm = Algorithm::kHierarchical;
  const auto hier = coll::plan_collective(topo, req);
  // 4 nodes of 8: 32 x 3 rail flows across, 4 x 8 x 7 inside, against 32 x 31 direct.
  CHECK(direct.flows.size() == 32u * 31u);
  CHECK(hier.flows.size() == 32u * 3u + 4u * 8u * 7u);
  auto node = [&](net::VertexId v) {
    for (int r = 0; r < 32; ++r)
      if (topo.gpu(r) == v) return r / 8;
    return -1;
  };
  double across = 0, total_direct_across = 0;
  for (const auto& f : hier.flows)
    if (node(f.src) != node(f.dst)) across += f.bytes;
  for (const auto& f : direct.flows)
    if (node(f.src) != node(f.dst)) total_direct_across += f.bytes;
  CHECK(across == doctest::Approx(total_direct_across));  // node_copies 1: every pair's bytes cross
  // A token sent once per node: half the copies cross, the NVLink forwarding is unchanged.
  req.node_copies = 0.5;
  const auto dedup = coll::plan_collective(topo, req);
  double across_dedup = 0;
  for (const auto& f : dedup.flows)
    if (node(f.src) != node(f.dst)) across_dedup += f.bytes;
  CHECK(across_dedup == doctest::Approx(0.5 * total_direct_across));
  CHECK(coll::estimate_seconds(topo, dedup) < coll::estimate_seconds(topo, hier));
  // kAuto keeps NCCL's direct all-to-all; the forwarded form is asked for by name.
  req.algorithm = Algorithm::kAuto;
  req.node_copies = 1;
  CHECK(coll::plan_collective(topo, req).algorithm == Algorithm::kDirect);
}
