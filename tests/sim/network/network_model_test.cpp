#include <doctest/doctest.h>

#include "sim/core/errors.hpp"
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
  for (auto l : cross.links) CHECK((pcie.link(l).to == pcie.gpu(6) || pcie.vertex(pcie.link(l).to).kind != VertexKind::kGpu));
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

TEST_CASE("the flow model shows contention on a shared PCIe switch uplink; the analytical model does not") {
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
  CHECK_THROWS_WITH_AS((void)Topology::build(spec, 2), "test-cluster: /links: gpu0 cannot reach gpu1 (with the first 2 GPUs)",
                       InputError);
}
