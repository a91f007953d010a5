#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/core/errors.hpp"
#include "sim/network/fabric_spec.hpp"
#include "sim/network/network_model.hpp"
#include "sim/network/topology.hpp"
#include "tests/support/builders.hpp"

using namespace cs;
using namespace cs::net;

namespace {

struct FlowReq {
  int src, dst;
  double bytes;
};

/// Runs flows that all start at t=0 to completion; returns each flow's finish time in seconds.
std::vector<double> run_flows(NetworkModelKind kind, const Topology& topo, const std::vector<FlowReq>& flows) {
  auto model = make_network_model(kind, topo);
  for (std::size_t i = 0; i < flows.size(); ++i) {
    model->start(static_cast<FlowId>(i), topo.route(topo.gpu(flows[i].src), topo.gpu(flows[i].dst)), flows[i].bytes,
                 kUncapped, SimTime{});
  }
  std::vector<double> done(flows.size(), -1.0);
  while (auto t = model->next_completion()) {
    for (auto f : model->complete(*t)) done[index(f)] = t->seconds();
  }
  return done;
}

}  // namespace

TEST_CASE("routes are deterministic, never forward through a GPU, and prefer the faster path") {
  const auto topo = Topology::build(test::shipped_cluster("pcie-h100x2-nvlink"), 2);
  const auto& r = topo.route(topo.gpu(0), topo.gpu(1));
  REQUIRE(r.links.size() == 1);
  CHECK(topo.link(r.links[0]).type == "nvlink_bridge");
  const auto pcie = Topology::build(test::shipped_cluster("pcie-h100x8"), 8);
  const auto& cross = pcie.route(pcie.gpu(1), pcie.gpu(6));  // gpu1 -> plx0 -> cpu0 -> cpu1 -> plx3 -> gpu6
  CHECK(cross.links.size() == 5);
  for (auto l : cross.links)
    CHECK((pcie.link(l).to == pcie.gpu(6) || pcie.vertex(pcie.link(l).to).kind != VertexKind::kGpu));
}

TEST_CASE("max-min fair sharing: two flows from one GPU split its link, then the survivor speeds up") {
  const auto topo = Topology::build(test::make_star(3, "100 GB/s"), 3);
  const auto flow = run_flows(NetworkModelKind::kFlow, topo, {{0, 1, 100e9}, {0, 2, 50e9}});
  // Both at 50 GB/s until the 50 GB flow ends at 1 s; the other then has 50 GB left at 100 GB/s.
  CHECK(flow[1] == doctest::Approx(1.0).epsilon(1e-9));
  CHECK(flow[0] == doctest::Approx(1.5).epsilon(1e-9));
  const auto alone = run_flows(NetworkModelKind::kAnalytical, topo, {{0, 1, 100e9}, {0, 2, 50e9}});
  CHECK(alone[0] == doctest::Approx(1.0).epsilon(1e-9));
  CHECK(alone[1] == doctest::Approx(0.5).epsilon(1e-9));
}

TEST_CASE("flow and analytical models agree when no link is shared (a ring on an NVSwitch)") {
  const auto topo = Topology::build(test::shipped_cluster("hgx-h100"), 8);
  std::vector<FlowReq> ring;
  for (int i = 0; i < 8; ++i) ring.push_back({i, (i + 1) % 8, 1e9 * (i + 1)});
  const auto a = run_flows(NetworkModelKind::kFlow, topo, ring);
  const auto b = run_flows(NetworkModelKind::kAnalytical, topo, ring);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
}

TEST_CASE("the flow model shows contention on a shared PCIe switch uplink, the analytical model does not") {
  // pcie-fake8: GPUs 0-3 behind one switch, 4-7 behind the other: four pairs cross one uplink.
  const auto topo = Topology::build(test::shipped_cluster("pcie-fake8"), 8);
  const std::vector<FlowReq> cross{{0, 4, 1e9}, {1, 5, 1e9}, {2, 6, 1e9}, {3, 7, 1e9}};
  const auto shared = run_flows(NetworkModelKind::kFlow, topo, cross);
  const auto alone = run_flows(NetworkModelKind::kAnalytical, topo, cross);
  const double link = 31.5e9 * 0.83;
  CHECK(alone[0] == doctest::Approx(1e9 / link).epsilon(1e-9));
  for (double t : shared) CHECK(t == doctest::Approx(4 * 1e9 / link).epsilon(1e-9));
}

TEST_CASE("more bandwidth is never slower (flow model, mixed flows, bandwidth sweep)") {
  const std::vector<FlowReq> flows{{0, 1, 3e9}, {0, 2, 1e9}, {3, 2, 2e9}, {1, 0, 5e8}, {2, 3, 4e9}};
  double prev_last = 1e30;
  std::vector<double> prev(flows.size(), 1e30);
  for (const char* bw : {"10 GB/s", "25 GB/s", "50 GB/s", "100 GB/s", "450 GB/s"}) {
    const auto topo = Topology::build(test::make_star(4, bw), 4);
    const auto t = run_flows(NetworkModelKind::kFlow, topo, flows);
    double last = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      CHECK(t[i] <= prev[i] * (1 + 1e-12));
      last = std::max(last, t[i]);
    }
    CHECK(last < prev_last);
    prev = t;
    prev_last = last;
  }
}

TEST_CASE("a cluster whose GPUs cannot reach each other is bad input") {
  const auto spec = test::cluster_from_json(R"({"name": "split", "profile": "h100-sxm", "gpus": 2, "source": "t",
    "link_types": {"l": {"bandwidth": "1 GB/s", "efficiency": 1, "latency": "1 us", "source": "t", "efficiency_source": "t"}},
    "switches": [{"id": "a", "kind": "pcie_switch"}, {"id": "b", "kind": "pcie_switch"}],
    "links": [{"a": "gpu0", "b": "a", "type": "l"}, {"a": "gpu1", "b": "b", "type": "l"}]})");
  CHECK_THROWS_WITH_AS((void)Topology::build(spec, 2),
                       "test-cluster: /links: gpu0 cannot reach gpu1 (with the first 2 GPUs)", InputError);
}

namespace {

/// Least time per byte, then fewest hops, from `src` to `dst` by a plain search over the public
/// graph (GPUs other than `src` do not forward): the reference for the structural routes.
std::pair<double, int> best_cost(const Topology& t, VertexId src, VertexId dst, bool stay_in_node) {
  const std::size_t n = t.vertex_count();
  std::vector<double> cost(n, std::numeric_limits<double>::infinity());
  std::vector<int> hops(n, 0);
  std::vector<bool> done(n, false);
  cost[index(src)] = 0;
  const int node = t.vertex(src).node;
  for (std::size_t it = 0; it < n; ++it) {
    std::size_t u = n;
    for (std::size_t v = 0; v < n; ++v) {
      if (!done[v] && std::isfinite(cost[v]) &&
          (u == n || cost[v] < cost[u] * (1 - 1e-12) || (cost[v] <= cost[u] * (1 + 1e-12) && hops[v] < hops[u]))) {
        u = v;
      }
    }
    if (u == n) break;
    done[u] = true;
    if (u != index(src) && t.vertex(static_cast<VertexId>(u)).kind == VertexKind::kGpu) continue;
    for (std::uint32_t l = 0; l < t.link_count(); ++l) {
      const auto& link = t.link(static_cast<LinkId>(l));
      if (index(link.from) != u) continue;
      const auto& to = t.vertex(link.to);
      if (stay_in_node && (to.node != node || to.kind == VertexKind::kNic)) continue;
      const double c = cost[u] + 1.0 / link.bandwidth_bytes_per_s;
      if (c < cost[index(link.to)] * (1 - 1e-12) ||
          (c <= cost[index(link.to)] * (1 + 1e-12) && hops[u] + 1 < hops[index(link.to)])) {
        cost[index(link.to)] = c;
        hops[index(link.to)] = hops[u] + 1;
      }
    }
  }
  return {cost[index(dst)], hops[index(dst)]};
}

}  // namespace

TEST_CASE(
    "multi-node routes (node templates and the fabric tree) are least-cost paths: checked against a full search") {
  for (const std::string fabric_id :
       {"ib-ndr-rail", "ib-hdr-fattree", "eth-100g", "roce-400g-pods", "ib-400g-h800", "eth-2x100g-pcie"}) {
    for (const std::string cluster : {"hgx-h100", "pcie-h100x8"}) {
      if (fabric_id == "eth-2x100g-pcie" && cluster == "hgx-h100") continue;  // NICs on root complexes it does not have
      CAPTURE(fabric_id);
      CAPTURE(cluster);
      const auto fabric =
          config::parse_fabric(config::load(test::data_path("scenarios/fabrics/" + fabric_id + ".json")), fabric_id);
      const auto topo = Topology::build(test::shipped_cluster(cluster), 8, 3, fabric);
      for (int a = 0; a < topo.gpu_count(); a += 3) {
        for (int b = 0; b < topo.gpu_count(); ++b) {
          if (a == b) continue;
          const auto& r = topo.route(topo.gpu(a), topo.gpu(b));
          // A contiguous path from a to b through no other GPU.
          REQUIRE_FALSE(r.links.empty());
          CHECK(topo.link(r.links.front()).from == topo.gpu(a));
          CHECK(topo.link(r.links.back()).to == topo.gpu(b));
          double per_byte = 0, latency = 0;
          for (std::size_t k = 0; k < r.links.size(); ++k) {
            const auto& l = topo.link(r.links[k]);
            if (k > 0) CHECK(topo.link(r.links[k - 1]).to == l.from);
            if (k + 1 < r.links.size()) CHECK(topo.vertex(l.to).kind != VertexKind::kGpu);
            per_byte += 1.0 / l.bandwidth_bytes_per_s;
            latency += l.latency_s;
          }
          CHECK(r.latency_s == doctest::Approx(latency));
          const bool same_node = topo.node_of_rank(a) == topo.node_of_rank(b);
          const auto [best, hops] = best_cost(topo, topo.gpu(a), topo.gpu(b), same_node);
          CHECK(per_byte == doctest::Approx(best).epsilon(1e-9));
          CHECK(static_cast<int>(r.links.size()) == hops);
        }
      }
    }
  }
}

TEST_CASE(
    "NICs behind a node's PCIe switches: GPU-to-NIC traffic crosses the node, and a missing switch is bad input") {
  const auto fabric =
      config::parse_fabric(config::load(test::data_path("scenarios/fabrics/eth-2x100g-pcie.json")), "eth-2x100g-pcie");
  const auto topo = Topology::build(test::shipped_cluster("pcie-h100x8"), 8, 2, fabric);
  // gpu5 (socket 1, plx2) to node 1's gpu5: gpu5 -> plx2 -> cpu1 -> nic1 -> switch -> nic1 -> cpu1 -> plx2 -> gpu5.
  const auto& r = topo.route(topo.gpu(5), topo.gpu(13));
  REQUIRE(r.links.size() == 8);
  CHECK(topo.vertex(topo.link(r.links[1]).to).name == "n0.cpu1");
  CHECK(topo.link(r.links[2]).type == "nic_pcie");
  // The PCIe link from gpu5 to its switch carries both its NIC traffic and its peer traffic.
  const auto& p2p = topo.route(topo.gpu(5), topo.gpu(4));
  CHECK(p2p.links.front() == r.links.front());
  try {
    (void)Topology::build(test::shipped_cluster("hgx-h100"), 8, 2, fabric);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("/nic_switch/0") != std::string::npos);
    CHECK(std::string(e.what()).find("'cpu0'") != std::string::npos);
  }
}

TEST_CASE("a three-tier fat tree: traffic inside a pod does not see the pods 1:7 uplinks, traffic between pods does") {
  auto fabric =
      config::parse_fabric(config::load(test::data_path("scenarios/fabrics/roce-400g-pods.json")), "roce-400g-pods");
  fabric.leaves_per_pod = 2;  // small pods (racks of 2 nodes, 2 racks per pod) for the test
  const auto topo = Topology::build(test::shipped_cluster("hgx-h100"), 8, 8, fabric);
  // GPU 0 of node 0 to GPU 0 of node 2 (same pod, other rack): NIC, rack, pod, rack, NIC.
  const auto& in_pod = topo.route(topo.gpu(0), topo.gpu(16));
  CHECK(in_pod.links.size() == 6);
  const auto& across = topo.route(topo.gpu(0), topo.gpu(32));  // node 4: the next pod, through the core
  CHECK(across.links.size() == 8);
  // Four flows from pod 0 to pod 1 share the pod's uplink (1/7 of its 2 racks x 2 nodes x 8 NICs)...
  std::vector<FlowReq> cross, inside;
  for (int g = 0; g < 4; ++g) {
    cross.push_back({g, 32 + g, 1e9});
    inside.push_back({g, 16 + g, 1e9});
  }
  const auto t_cross = run_flows(NetworkModelKind::kFlow, topo, cross);
  const auto t_inside = run_flows(NetworkModelKind::kFlow, topo, inside);
  // ...which still has room for them (32 NICs / 7 = 4.6 NICs' worth): only latency differs.
  CHECK(t_cross[0] == doctest::Approx(t_inside[0]).epsilon(0.01));
  // Every GPU of pod 0 sending to pod 1 exceeds it: 4 nodes x 8 NICs through a 1:7 uplink.
  std::vector<FlowReq> all;
  for (int g = 0; g < 32; ++g) all.push_back({g, 32 + g, 1e9});
  const auto t_all = run_flows(NetworkModelKind::kFlow, topo, all);
  CHECK(t_all[0] == doctest::Approx(t_inside[0] * 7).epsilon(0.02));
}
