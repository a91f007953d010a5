// DeepEP's kernels as flows (workload::time_deepep): the bytes per NIC and per NVLink port counted
// by hand for one inter-node case, and the low-latency kernels' floor.
#include <doctest/doctest.h>

#include "models/ops/layer_ops.hpp"
#include "models/ops/serving_ops.hpp"
#include "sim/config/machine_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/workload/deepep_exchange.hpp"
#include "sim/workload/executor.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

namespace {

config::Box h800_box(bool fabric) {
  return config::resolve_box(test::catalog(), "test",
                             config::BoxRefs{"hgx-h800", "", fabric ? "ib-400g-h800" : "", "/cluster", "", "/fabric"});
}

net::Topology h800_nodes(const config::Box& box, int nodes) {
  return nodes > 1 ? net::Topology::build(box.cluster, 8, nodes, *box.fabric) : net::Topology::build(box.cluster, 8);
}

/// C(a, k) / C(b, k) as a product (b >= a >= k).
double choose_ratio(int a, int b, int k) {
  double r = 1;
  for (int i = 0; i < k; ++i) r *= static_cast<double>(a - i) / (b - i);
  return r;
}

/// One rail-forwarded all-to-all added to an open run (serving's path for prefill's normal kernels).
class OneExchange final : public workload::TaskSource {
 public:
  OneExchange(int ep, double bytes, double copies) : ep_(ep), bytes_(bytes), copies_(copies) {}
  void begin(workload::OpenGraph& g) override {
    std::vector<int> ranks;
    for (int r = 0; r < ep_; ++r) ranks.push_back(r);
    g.add_ep_alltoall(g.add_group(ranks), workload::Stream::kComm, workload::Category::kEpComm, "ep.dispatch",
                      {.bytes = bytes_, .node_copies = copies_});
  }
  void ended(workload::TaskId, const workload::TaskSpan&, workload::OpenGraph&) override {}

 private:
  int ep_;
  double bytes_, copies_;
};

}  // namespace

TEST_CASE("DeepEP normal dispatch on EP 16 (2 H800 nodes), 4096 tokens: bytes through the NIC and NVLink by hand") {
  const auto box = h800_box(true);
  const auto topo = h800_nodes(box, 2);
  const auto m = test::shipped_model("deepseek-v3");
  workload::DeepepRequest r;
  r.tokens = 4096;
  r.ep = 16;
  r.nodes = 2;
  const auto x = workload::time_deepep(topo, m, r, box.profile);
  // FP8 message: 7,168 bytes and 7,168 / 128 fp32 scales.
  const double tb = 7168 + 56 * 4;
  CHECK(x.token_bytes == doctest::Approx(tb));
  // Top-4 of 8 groups, 4 groups per node: a token misses a node only when its 4 groups are all the
  // other node's (1 of C(8,4) = 70 choices). DeepEP's RDMA count takes every node it reaches, its
  // own included: 2 x 69/70 per token.
  const double remote = 69.0 / 70.0;
  CHECK(x.logical_rdma_bytes == doctest::Approx(4096 * tb * 2 * remote));
  // Each GPU sends what all its tokens need on the other node through its own NIC, once.
  CHECK(x.nic_bytes == doctest::Approx(4096 * tb * remote));
  // Distinct GPUs per token: within the 4 chosen groups' 8 GPUs (16 experts each), top-8 of 128.
  const double gpus = 8 * (1 - choose_ratio(112, 128, 8));
  CHECK(gpus < 16 * (1 - choose_ratio(240, 256, 8)));  // node-limited routing lowers it
  CHECK(x.send_bytes == doctest::Approx(4096 * gpus * tb));
  // NVLink: each GPU passes on to the 7 others of its node what both nodes' GPUs of its rail
  // (its own tokens included) have for them: 7 x 2 x send / 16.
  CHECK(x.nvlink_bytes == doctest::Approx(x.send_bytes * 7.0 / 8.0));
  // NVLink sets the pace here: 206 MB at 160 GB/s against 30 MB at 47 GB/s through the NIC.
  const double nvlink = x.nvlink_bytes / (200e9 * 0.8), nic = x.nic_bytes / (50e9 * 0.94);
  CHECK(nvlink > nic);
  CHECK(x.flow_seconds >= nvlink);
  CHECK(x.flow_seconds <= nvlink + 20e-6);  // the call latency and two hops
  CHECK(x.floor_seconds == 0);              // the normal kernels have no floor of their own
}

TEST_CASE(
    "DeepEP low-latency kernels: never faster than their floor, and more EP ranks never make the same tokens "
    "per GPU faster") {
  const auto m = test::shipped_model("deepseek-v3");
  for (const bool combine : {false, true}) {
    CAPTURE(combine);
    double before = 0;
    for (int ep : {8, 16, 32, 64, 128, 256}) {
      CAPTURE(ep);
      const int nodes = ep / 8;
      const auto box = h800_box(nodes > 1);
      const auto topo = h800_nodes(box, nodes);
      workload::DeepepRequest r;
      r.kernel = workload::DeepepKernel::kLowLatency;
      r.combine = combine;
      r.tokens = 128;
      r.ep = ep;
      r.nodes = nodes;
      const auto x = workload::time_deepep(topo, m, r, box.profile);
      const auto& floor = combine ? box.profile.deepep_ll_combine_floor : box.profile.deepep_ll_dispatch_floor;
      REQUIRE(floor.has_value());
      CHECK(x.floor_seconds == floor->value);
      CHECK(x.seconds >= floor->value + x.flow_seconds);
      // Every one of the 8 copies is sent, none deduplicated.
      CHECK(x.send_bytes == doctest::Approx(128 * 8 * (combine ? 7168 * 2 : 7168 + 56 * 4)));
      // Across nodes the share for other nodes crosses each GPU's own NIC.
      if (nodes > 1) CHECK(x.nic_bytes == doctest::Approx(x.send_bytes * (nodes - 1) / nodes));
      CHECK(x.seconds >= before);
      before = x.seconds;
    }
  }
}

TEST_CASE("DeepEP low-latency kernels on a GPU without a floor: an error naming the profile field") {
  auto box = h800_box(false);
  box.profile.deepep_ll_dispatch_floor.reset();
  const auto topo = h800_nodes(box, 1);
  workload::DeepepRequest r;
  r.kernel = workload::DeepepKernel::kLowLatency;
  r.tokens = 128;
  r.ep = 8;
  try {
    (void)workload::time_deepep(topo, test::shipped_model("deepseek-v3"), r, box.profile);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("deepep_ll_dispatch_floor") != std::string::npos);
  }
}

TEST_CASE(
    "Serving's prefill runs DeepEP's normal kernels forwarded once per node: the same exchange as the harness's") {
  const auto box = h800_box(true);
  const auto topo = h800_nodes(box, 2);
  const auto m = test::shipped_model("deepseek-v3");
  workload::DeepepRequest r;
  r.tokens = 4096;
  r.ep = 16;
  r.nodes = 2;
  const auto x = workload::time_deepep(topo, m, r, box.profile);
  const auto spread = models::dispatch_spread(m, 16, 2);
  // Serving's program for a prefill step of 16 x 4096 tokens over EP 16 on two nodes (FP8).
  models::StepMix prefill;
  prefill.add_prefill_context(0, 16 * 4096);
  prefill.tokens = 16 * 4096;
  models::ServingShape s{.tp = 16, .ep = 16, .weights = models::WeightFormat::kFp8, .dp_attention = true};
  s.deepep = true;
  s.nodes = 2;
  const models::LayerKind moe{models::AttentionKind::kMla, models::FeedForwardKind::kMoe};
  int forwarded = 0;
  for (const auto& it : models::serving_layer(m, prefill, s, moe)) {
    if (!it.comm || std::string(it.comm->label) != "ep.dispatch") continue;
    ++forwarded;
    CHECK(it.comm->bytes == doctest::Approx(x.send_bytes));
    CHECK(it.comm->node_copies == doctest::Approx(spread.nodes / spread.gpus));
    // In an open run (as serving adds it) it takes the harness's time for the same exchange.
    OneExchange source(16, it.comm->bytes, it.comm->node_copies);
    workload::ExecutorOptions eo;
    eo.collective_latency_s = box.profile.collective_latency.value;
    CHECK(workload::simulate_open(16, topo, eo, source).makespan.seconds() == doctest::Approx(x.flow_seconds));
  }
  CHECK(forwarded == 1);
  // Decode (low-latency) and one node: plain all-to-alls.
  s.low_latency = true;
  s.ll_dispatch_floor_s = s.ll_combine_floor_s = 1e-5;
  for (const auto& it : models::serving_layer(m, prefill, s, moe))
    if (it.comm) CHECK(it.comm->node_copies == 1.0);
  s.low_latency = false;
  s.nodes = 1;
  for (const auto& it : models::serving_layer(m, prefill, s, moe))
    if (it.comm) CHECK(it.comm->node_copies == 1.0);
}
