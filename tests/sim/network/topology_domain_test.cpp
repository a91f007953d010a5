// NVLink domains larger than a node (GB200 NVL72) and GPUs without peer-to-peer (GeForce).
#include <doctest/doctest.h>

#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/core/errors.hpp"
#include "sim/network/fabric_spec.hpp"
#include "sim/network/topology.hpp"
#include "sim/workload/collective_timing.hpp"
#include "tests/support/builders.hpp"

using namespace cs;
using namespace cs::net;

namespace {

FabricSpec nvl72_fabric() {
  return config::parse_fabric(config::load(test::data_path("scenarios/fabrics/ib-ndr-nvl72-rail.json")),
                              "ib-ndr-nvl72-rail");
}

std::vector<int> first(int n) {
  std::vector<int> r(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

double busbw(const Topology& t, const std::vector<int>& ranks, coll::Algorithm algo = coll::Algorithm::kRing) {
  return workload::time_collective(t, coll::CollectiveOp::kAllReduce, algo, ranks, 1073741824.0, 0.0).busbw_bytes_per_s;
}

}  // namespace

TEST_CASE("an NVL72 rack is one NVLink domain of 18 nodes of 4 GPUs, and the NICs belong to the nodes") {
  const auto spec = test::shipped_cluster("gb200-nvl72");
  CHECK(spec.gpus == 72);
  CHECK(spec.gpus_per_node == 4);
  const auto topo = Topology::build(spec, 72, 2, nvl72_fabric());
  CHECK(topo.node_of_rank(0) == 0);
  CHECK(topo.node_of_rank(4) == 1);
  CHECK(topo.node_of_rank(71) == 17);
  CHECK(topo.node_of_rank(72) == 18);
  CHECK(topo.domain_of_rank(71) == 0);
  CHECK(topo.domain_of_rank(72) == 1);
  // Two trays of one rack: GPU -> NVLink switch -> GPU, never a NIC.
  const auto& in = topo.route(topo.gpu(0), topo.gpu(70));
  REQUIRE(in.links.size() == 2);
  for (auto l : in.links) CHECK(topo.link(l).type == "nvlink");
  // Two racks: the GPU's own tray NIC, the fabric, the far tray's NIC.
  const auto& across = topo.route(topo.gpu(5), topo.gpu(72 + 9));
  CHECK(topo.link(across.links.front()).type == "gpu_nic");
  CHECK(topo.vertex(topo.link(across.links.front()).to).name == "n1.nic1");  // tray 1, GPU 5 = its GPU 1
  CHECK(topo.link(across.links.back()).type == "gpu_nic");
  CHECK(topo.vertex(topo.link(across.links.back()).from).name == "n20.nic1");  // rack 1 tray 2, its GPU 1
  for (auto l : across.links) CHECK(topo.link(l).type != "nvlink");
}

TEST_CASE("all-reduce inside an NVL72 rack runs at the NVLink rate, across racks at the NICs' rate") {
  const auto spec = test::shipped_cluster("gb200-nvl72");
  // In the domain, across two trays: ring busbw = the GPU's NVLink rate, 900 GB/s x 0.83.
  const auto one = Topology::build(spec, 8);
  CHECK(busbw(one, first(8)) == doctest::Approx(900e9 * 0.83).epsilon(0.02));
  // One tray in each of two racks: the ring crosses the fabric, one channel per rail (NCCL's rings
  // with PXN), so each tray's four 400 Gb/s NICs carry a quarter of the data each.
  const auto two = Topology::build(spec, 4, 2, nvl72_fabric());
  const double nic = 400e9 / 8 * 0.94;
  CHECK(busbw(two, first(8)) < 0.5 * busbw(one, first(8)));
  CHECK(busbw(two, first(8)) == doctest::Approx(4 * nic).epsilon(0.02));
}

TEST_CASE("GeForce GPUs stage every copy in host memory: routes pass it, all-reduce is bounded by it") {
  auto spec = test::shipped_cluster("pcie-rtx4090x8");
  REQUIRE_FALSE(spec.peer_to_peer);
  const auto topo = Topology::build(spec, 8);
  const auto& r = topo.route(topo.gpu(0), topo.gpu(1));  // gpu0 -> cpu0 -> mem0 -> cpu0 -> gpu1
  REQUIRE(r.links.size() == 4);
  CHECK(topo.vertex(topo.link(r.links[1]).to).kind == VertexKind::kHostMemory);
  CHECK(topo.vertex(topo.link(r.links[1]).to).name == "mem0");
  const auto& x = topo.route(topo.gpu(5), topo.gpu(2));  // staged on the sender's socket, then across UPI
  CHECK(topo.vertex(topo.link(x.links[1]).to).name == "mem1");
  // Four GPUs of one socket: each ring flow writes into and reads out of mem0, four flows share each
  // direction of the staging link (102.4 GB/s x 0.8), below the PCIe links' 31.5 GB/s x 0.83.
  const double staging = 102.4e9 * 0.8;
  const auto four = Topology::build(spec, 4);
  CHECK(busbw(four, first(4)) == doctest::Approx(staging / 4).epsilon(0.02));
  // The same box with peer-to-peer: PCIe-bound instead, and faster.
  spec.peer_to_peer = true;
  const auto p2p = Topology::build(spec, 4);
  CHECK(busbw(p2p, first(4)) == doctest::Approx(31.5e9 * 0.83).epsilon(0.02));
  CHECK(busbw(p2p, first(4)) > busbw(four, first(4)));
  // Eight GPUs on two sockets: never faster than the four on one.
  CHECK(busbw(topo, first(8)) <= busbw(four, first(4)) * 1.001);
}

TEST_CASE("a cluster without peer-to-peer must give the host memory it stages in") {
  CHECK_THROWS_WITH_AS((void)test::cluster_from_json(R"({"name": "x", "profile": "rtx4090", "gpus": 2, "source": "s",
        "peer_to_peer": {"enabled": false, "source": "GeForce"},
        "link_types": {"pcie": {"bandwidth": "31.5 GB/s", "efficiency": 0.83, "latency": "0.5 us", "source": "s",
                                "efficiency_source": "s"}},
        "switches": [{"id": "cpu0", "kind": "root_complex"}],
        "links": [{"a": "gpu0", "b": "cpu0", "type": "pcie"}, {"a": "gpu1", "b": "cpu0", "type": "pcie"}]})"),
                       doctest::Contains("expected a switch of kind host_memory"), InputError);
}
