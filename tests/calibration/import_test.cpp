#include <doctest/doctest.h>

#include "calibration/profile/fitting.hpp"
#include "calibration/profile/nccl_tests_import.hpp"
#include "calibration/profile/profile_writer.hpp"
#include "calibration/profile/topo_import.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/cluster_file.hpp"
#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/network/topology.hpp"
#include "sim/workload/collective_timing.hpp"
#include "sim/workload/executor.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

TEST_CASE("alpha-beta fitting recovers a synthetic latency and bandwidth exactly") {
  std::vector<std::pair<double, double>> pts;
  for (double s = 8; s <= 1e9; s *= 4) pts.emplace_back(s, 20e-6 + s / 274e9);
  const auto fit = calib::fit_alpha_beta(pts);
  CHECK(fit.alpha_s == doctest::Approx(20e-6).epsilon(1e-6));
  CHECK(fit.bytes_per_s == doctest::Approx(274e9).epsilon(1e-6));
  CHECK(fit.max_relative_error < 1e-9);
}

TEST_CASE("nccl-tests output (12- and 13-column layouts) is read into op, GPU count, devices and rows") {
  const auto syn = calib::parse_nccl_tests(
      test::slurp(test::data_path("tests/data/nccl-tests/all_reduce_perf-h100-synthetic.txt")), "syn.txt", "", 0);
  CHECK(syn.op == "allreduce");
  CHECK(syn.gpus == 8);
  CHECK(syn.devices.front() == "NVIDIA H100 80GB HBM3");
  CHECK(syn.rows.size() == 14);
  CHECK(syn.rows.back().bytes == 536870912.0);
  std::vector<std::pair<double, double>> pts;
  for (const auto& r : syn.rows) pts.emplace_back(r.bytes, r.time_s);
  const auto fit = calib::fit_alpha_beta(pts);
  // The fixture's times are printed with 0.01 us resolution, so the fit is good to ~0.1%.
  CHECK(fit.alpha_s == doctest::Approx(20e-6).epsilon(0.002));
  CHECK(fit.bytes_per_s * 1.75 == doctest::Approx(480e9).epsilon(0.002));
  const auto pub = calib::parse_nccl_tests(
      test::slurp(test::data_path("tests/data/nccl-tests/all_reduce_perf-a100-published.txt")), "pub.txt", "", 0);
  REQUIRE(pub.rows.size() == 4);
  CHECK(pub.rows[3].busbw == doctest::Approx(234.89e9).epsilon(1e-4));
}

TEST_CASE("a truncated or foreign nccl-tests file is bad input naming file and line") {
  const auto trunc = test::slurp(test::data_path("tests/data/nccl-tests/truncated_all_reduce_perf.txt"));
  CHECK_THROWS_WITH_AS(
      (void)calib::parse_nccl_tests(trunc, "t.txt", "", 0),
      "t.txt:20: truncated or unknown result row: expected 12 or 13 columns (size count type redop [root] "
      "time algbw busbw #wrong, then in-place); got 3",
      InputError);
  CHECK_THROWS_AS((void)calib::parse_nccl_tests("# only comments\n", "c.txt", "allreduce", 8), InputError);
  CHECK_THROWS_WITH_AS(
      (void)calib::parse_nccl_tests("  8  2 float sum -1 1.0 0.0 0.0 0 1.0 0.0 0.0 0\n", "mystery.txt", "", 8),
      "mystery.txt: cannot tell which collective this is (no *_perf name in the file or its name); pass --op",
      InputError);
}

TEST_CASE("an imported profile round-trips through the writer and reader, and its curve sets collective times") {
  auto p = test::scenario_from_json(R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 8},
    "training": {"seq": 1024, "global_batch": 1}})")
               .profile;
  calib::CollectiveCurve c;
  c.op = "allreduce";
  c.gpus = 8;
  c.alpha_s = 20e-6;
  c.busbw_bytes_per_s = 480e9;
  c.source = "test";
  c.points = {{8.0, 20e-6}, {1073741824.0, 0.0039}};
  p.collectives.push_back(c);
  p.gemm_table.push_back({calib::Dtype::kBf16, 8192, 8192, 8192, 700e12});
  const auto j = calib::profile_to_json(p);
  const auto back = config::parse_profile(config::JsonDoc{"p.json", nlohmann::json::parse(j.dump())}, p.id);
  CHECK(back.collectives == p.collectives);
  CHECK(back.gemm_table == p.gemm_table);
  CHECK(p.gemm_shape.enabled());
  CHECK(back.gemm_shape == p.gemm_shape);
  CHECK(back.matrix_peak == p.matrix_peak);
  CHECK(back.gemm_fraction(calib::Dtype::kBf16, 8192, 8192, 8192) == doctest::Approx(700e12 / 989.4e12));
  CHECK(back.gemm_provenance(calib::Dtype::kBf16) == calib::Provenance::kMeasured);
  const auto topo = net::Topology::build(test::shipped_cluster("hgx-h100"), 8);
  const auto t =
      workload::time_collective(topo, coll::CollectiveOp::kAllReduce, coll::Algorithm::kAuto, {0, 1, 2, 3, 4, 5, 6, 7},
                                1e9, 6e-6, net::NetworkModelKind::kFlow, &back.collectives);
  CHECK(t.algorithm == coll::Algorithm::kMeasured);
  CHECK(t.seconds == doctest::Approx(20e-6 + 1e9 * 1.75 / 480e9).epsilon(1e-9));
}

TEST_CASE("GEMM-efficiency fitting recovers the model that generated the points") {
  calib::GemmEfficiency truth;
  truth.max_fraction = 0.72;
  truth.half_rate_dim = 96;
  std::vector<calib::GemmPoint> pts;
  for (double m : {1.0, 16.0, 256.0, 4096.0, 32768.0}) {
    for (double nk : {1024.0, 4096.0, 16384.0})
      pts.push_back({calib::Dtype::kBf16, m, nk, nk, truth.at(m, nk, nk) * 989e12});
  }
  const auto fit = calib::fit_gemm_efficiency(pts, calib::Dtype::kBf16, 989e12);
  CHECK(fit.max_fraction == doctest::Approx(0.72).epsilon(0.005));
  CHECK(fit.half_rate_dim == doctest::Approx(96));
  CHECK(fit.provenance == calib::Provenance::kFitted);
}

TEST_CASE("nvidia-smi topo -m of an HGX H100 becomes an NVSwitch cluster that matches the shipped one") {
  const auto m = calib::parse_topo_matrix(test::slurp(test::data_path("tests/data/topo/hgx-h100.txt")), "hgx.txt");
  REQUIRE(m.gpus.size() == 8);
  CHECK(m.relation[0][1] == "NV18");
  CHECK(m.numa[5] == 1);
  const auto j = calib::topo_to_cluster(m, "hgx.txt", "h100-sxm", 5);
  const auto spec = config::parse_cluster(config::JsonDoc{"hgx.json", nlohmann::json::parse(j.dump())}, "imported");
  const auto topo = net::Topology::build(spec, 8);
  const auto shipped = net::Topology::build(test::shipped_cluster("hgx-h100"), 8);
  const std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7};
  for (auto algo : {coll::Algorithm::kRing, coll::Algorithm::kTree}) {
    const auto a = workload::time_collective(topo, coll::CollectiveOp::kAllReduce, algo, all, 1e9, 6e-6);
    const auto b = workload::time_collective(shipped, coll::CollectiveOp::kAllReduce, algo, all, 1e9, 6e-6);
    CHECK(a.seconds == doctest::Approx(b.seconds).epsilon(1e-12));
  }
}

TEST_CASE("nvidia-smi topo -m of a two-socket PCIe server becomes switch pairs under two root complexes") {
  const auto m = calib::parse_topo_matrix(test::slurp(test::data_path("tests/data/topo/pcie-8gpu.txt")), "pcie.txt");
  const auto j = calib::topo_to_cluster(m, "pcie.txt", "h100-pcie", 5);
  const auto spec = config::parse_cluster(config::JsonDoc{"pcie.json", nlohmann::json::parse(j.dump())}, "imported");
  int pcie_switches = 0, cpus = 0;
  for (const auto& s : spec.switches) {
    pcie_switches += s.kind == net::VertexKind::kPcieSwitch;
    cpus += s.kind == net::VertexKind::kRootComplex;
  }
  CHECK(pcie_switches == 4);
  CHECK(cpus == 2);
  const auto topo = net::Topology::build(spec, 8);
  const auto shipped = net::Topology::build(test::shipped_cluster("pcie-h100x8"), 8);
  const std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7};
  const auto a =
      workload::time_collective(topo, coll::CollectiveOp::kAllReduce, coll::Algorithm::kRing, all, 1e9, 6e-6);
  const auto b =
      workload::time_collective(shipped, coll::CollectiveOp::kAllReduce, coll::Algorithm::kRing, all, 1e9, 6e-6);
  CHECK(a.seconds == doctest::Approx(b.seconds).epsilon(1e-12));
}

TEST_CASE("a truncated topo matrix is bad input naming the line") {
  CHECK_THROWS_WITH_AS(
      (void)calib::parse_topo_matrix(test::slurp(test::data_path("tests/data/topo/truncated.txt")), "t.txt"),
      "t.txt:3: row GPU1 has 3 entries; expected at least 4 (one per GPU and NIC column)", InputError);
}

TEST_CASE("a measured curve stands for its own scope only, and its collective still loads the links") {
  const auto cluster = test::shipped_cluster("hgx-h100");
  config::Catalog cat = test::catalog();
  const auto fabric = config::parse_fabric(
      config::load(cat.locate(config::CatalogKind::kFabric, "ib-ndr-rail", "test", "/fabric")), "ib-ndr-rail");
  std::vector<calib::CollectiveCurve> curves(1);
  curves[0].op = "allreduce";
  curves[0].gpus = 8;
  curves[0].alpha_s = 20e-6;
  curves[0].busbw_bytes_per_s = 500e9;
  curves[0].source = "test";
  const std::vector<int> eight{0, 1, 2, 3, 4, 5, 6, 7};
  // Measured inside one node: used for eight GPUs of one node...
  const auto one_node = net::Topology::build(cluster, 8);
  auto t = workload::time_collective(one_node, coll::CollectiveOp::kAllReduce, coll::Algorithm::kAuto, eight, 1e9, 6e-6,
                                     net::NetworkModelKind::kFlow, &curves);
  CHECK(t.algorithm == coll::Algorithm::kMeasured);
  CHECK(t.seconds == doctest::Approx(20e-6 + 1e9 * 1.75 / 500e9).epsilon(1e-6));
  // ...but not for eight GPUs spread over two nodes (4 + 4 on the fabric).
  const auto two_nodes = net::Topology::build(cluster, 4, 2, fabric);
  t = workload::time_collective(two_nodes, coll::CollectiveOp::kAllReduce, coll::Algorithm::kAuto, eight, 1e9, 6e-6,
                                net::NetworkModelKind::kFlow, &curves);
  CHECK(t.algorithm != coll::Algorithm::kMeasured);
  // A curve measured on two nodes of that fabric is.
  curves[0].nodes = 2;
  curves[0].fabric = "ib-ndr-rail";
  t = workload::time_collective(two_nodes, coll::CollectiveOp::kAllReduce, coll::Algorithm::kAuto, eight, 1e9, 6e-6,
                                net::NetworkModelKind::kFlow, &curves);
  CHECK(t.algorithm == coll::Algorithm::kMeasured);
  // The measured collective's flows load the links: two at once on the same GPUs take longer than one.
  curves[0].nodes = 1;
  curves[0].fabric.clear();
  workload::WorkloadGraph g(8);
  const auto gid = g.add_group(eight);
  g.add_collective(gid, workload::Stream::kComm, workload::Category::kDpComm, "a", -1, -1,
                   coll::CollectiveOp::kAllReduce, 1e9);
  g.add_collective(gid, workload::Stream::kCp, workload::Category::kDpComm, "b", -1, -1, coll::CollectiveOp::kAllReduce,
                   1e9);
  workload::ExecutorOptions eo;
  eo.curves = &curves;
  const double alone = 20e-6 + 1e9 * 1.75 / 500e9;
  const auto log = workload::simulate(g, one_node, eo);
  CHECK(log.flows > 0);
  CHECK(log.makespan.seconds() > alone * 1.2);
}
