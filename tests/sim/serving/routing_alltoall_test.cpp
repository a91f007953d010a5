// MoE routing in serving's all-to-alls (issue 12): under attention-DP with DeepEP's exchange the
// dispatch and combine follow the step's expert placement (the most loaded GPU receives its share of
// every GPU's tokens and sends their results back); the all-gather exchange moves every token to
// every GPU whatever the routing.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "models/ops/layer_ops.hpp"
#include "models/ops/serving_ops.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/network/topology.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/workload/expert_placement.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"

using namespace cs;

namespace {

/// DeepSeek-R1 (FP8) with attention-DP over one replica of `tp` GPUs (EP = TP), on H200 boxes
/// (two over the rails for TP 16), with the MoE exchange `a2a` and routing `routing`.
serving::ServingScenario deepseek(const std::string& routing, const std::string& a2a, const std::string& workload,
                                  int tp = 8) {
  const std::string nodes = tp > 8 ? R"("nodes": 2, "fabric": "ib-ndr-rail", )" : "";
  const std::string text = R"({"kind": "infer", "model": "deepseek-r1", "cluster": "hgx-h200", )" + nodes +
                           R"("parallel": {"tp": )" + std::to_string(tp) + R"(, "ep": )" + std::to_string(tp) +
                           R"(, "dp_attention": true, "moe_a2a": ")" + a2a +
                           R"("}, "quantization": {"weights": "fp8"}, "moe": {"routing": ")" + routing +
                           R"("}, "workload": )" + workload + "}";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

/// Seconds the run's collectives of `label` took (0 when none ran).
double collective(const serving::ServingResults& r, const std::string& label) {
  for (const auto& [l, s] : r.collectives_s)
    if (l == label) return s;
  return 0;
}

/// A load file for DeepSeek's 256 experts: GPU 0's 32 experts (of EP 8) `hot` times as popular.
std::string gpu0_hot_file(double hot) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("clustersim_routing_a2a_test_" + std::to_string(static_cast<int>(hot * 100)) + ".json");
  std::ofstream f(path);
  f << R"({"source": "a test histogram", "loads": [)";
  for (int e = 0; e < 256; ++e) f << (e > 0 ? ", " : "") << (e < 32 ? hot : 1.0);
  f << "]}";
  return path.string();
}

/// C(a, k) / C(b, k) as a product (b >= a >= k).
double choose_ratio(int a, int b, int k) {
  double r = 1;
  for (int i = 0; i < k; ++i) r *= static_cast<double>(a - i) / (b - i);
  return r;
}

/// The time of one all-to-all over GPUs 0-7 of an H200 box with nothing else running (the closed
/// form equals the flow model's time here: every flow of the plan shares its links equally).
double alltoall_seconds(const serving::ServingScenario& s, const net::Topology& topo, double bytes) {
  coll::CollectiveRequest req;
  req.op = coll::CollectiveOp::kAllToAll;
  req.ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  req.bytes = bytes;
  req.call_latency_s = s.profile.collective_latency.value;
  return coll::estimate_seconds(topo, coll::plan_collective(topo, req));
}

// 64 prompts of 1,000 tokens queued at once: the same steps whatever the routing (one replica,
// nothing arriving later), prefill (normal kernels) and decode (low-latency kernels).
const std::string kQueued = R"({"input_len": 1000, "output_len": 32, "rate": "inf", "requests": 64})";

}  // namespace

TEST_CASE(
    "EP all-to-all traffic by hand: a dispatch's most loaded GPU receives its share of the total, a combine's "
    "sends it back, and equal shares are the uniform exchange") {
  const std::vector<double> share = {0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
  const double bytes = 1000;
  const auto dispatch = workload::ep_alltoall_pairs(bytes, share);
  const auto combine = workload::ep_alltoall_pairs(bytes, share, true);
  REQUIRE(dispatch.size() == 64);
  double into0 = 0, out_of0 = 0, total = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    double sent = 0, received = 0;
    for (std::size_t j = 0; j < 8; ++j) {
      sent += dispatch[i * 8 + j];
      received += combine[i * 8 + j];  // what rank i sends back
      CHECK(combine[i * 8 + j] == dispatch[j * 8 + i]);
    }
    CHECK(sent == doctest::Approx(bytes));  // every GPU's send buffer is its own tokens
    into0 += dispatch[i * 8];
    out_of0 += combine[i];
    total += sent;
    CHECK(received == doctest::Approx(bytes * share[i] * 8));
  }
  // GPU 0 holds 0.3 of the pairs: it receives 0.3 of everything sent (2.4x the mean GPU), and sends
  // as much back.
  CHECK(into0 == doctest::Approx(0.3 * total));
  CHECK(out_of0 == doctest::Approx(0.3 * total));
  // Equal shares: exactly bytes / n per pair, as the uniform all-to-all splits its buffer.
  for (double b : workload::ep_alltoall_pairs(bytes, std::vector<double>(8, 0.125))) CHECK(b == bytes / 8);

  // On an H200 box: GPU 0's NVLink port takes 7 x 0.3 of a send buffer (its own share stays local),
  // against 7 / 8 of one balanced.
  const auto s = deepseek("balanced", "deepep", kQueued);
  const auto topo = net::Topology::build(s.cluster, 8);
  coll::CollectiveRequest req;
  req.op = coll::CollectiveOp::kAllToAll;
  req.algorithm = coll::Algorithm::kDirect;
  req.ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  req.bytes = bytes;
  req.pair_bytes = dispatch;
  double to_gpu0 = 0;
  for (const auto& f : coll::plan_collective(topo, req).flows)
    if (f.dst == topo.gpu(0)) to_gpu0 += f.bytes;
  CHECK(to_gpu0 == doctest::Approx(7 * 0.3 * bytes));
}

TEST_CASE(
    "serving DeepEP, balanced routing: each dispatch and combine moves own tokens x destination GPUs x token "
    "bytes per GPU, evenly (the uniform all-to-all)") {
  // One prompt of 800 tokens: a prefill step (100 tokens per GPU on average, normal kernels: each
  // token once per GPU its top-8 of 256 experts sit on), then a decode step (1 / 8 token per GPU,
  // low-latency kernels: all 8 copies). DeepSeek-R1's 58 MoE layers each run one dispatch and one
  // combine per step.
  const auto s = deepseek("balanced", "deepep", R"({"input_len": 800, "output_len": 2, "rate": "inf", "requests": 1})");
  const auto r = test::serve(s);
  REQUIRE(r.steps == 2);
  const auto topo = net::Topology::build(s.cluster, 8);
  const double gpus = 8 * (1 - choose_ratio(224, 256, 8));
  const double fp8 = 7168 + 56 * 4.0, bf16 = 7168 * 2.0;
  CHECK(collective(r, "ep.dispatch") ==
        doctest::Approx(58 * (alltoall_seconds(s, topo, 100 * gpus * fp8) + alltoall_seconds(s, topo, 8 * fp8 / 8)))
            .epsilon(1e-6));
  CHECK(collective(r, "ep.combine") ==
        doctest::Approx(58 * (alltoall_seconds(s, topo, 100 * gpus * bf16) + alltoall_seconds(s, topo, 8 * bf16 / 8)))
            .epsilon(1e-6));
}

TEST_CASE(
    "serving DeepEP: a load file putting 0.3 of the pairs on GPU 0 makes its dispatch and combine carry 2.4x "
    "the balanced bytes") {
  const auto balanced = test::serve(deepseek("balanced", "deepep", kQueued));
  const auto skewed = test::serve(deepseek(gpu0_hot_file(3), "deepep", kQueued));
  // GPU 0's 32 experts at load 3, the other 224 at 1: 96 / 320 = 0.3 of the pairs, 2.4x the mean.
  REQUIRE(skewed.moe);
  CHECK(skewed.moe->load_imbalance_mean == doctest::Approx(2.4));
  REQUIRE(skewed.steps == balanced.steps);
  // Each all-to-all is the call latency plus its busiest NVLink port's bytes over the port's rate:
  // GPU 0 receives (dispatch) or sends (combine) 7 x 0.3 of a send buffer against 7 / 8 of one, so
  // past the latency every exchange takes 2.4x as long.
  const auto s = deepseek("balanced", "deepep", kQueued);
  const auto topo = net::Topology::build(s.cluster, 8);
  const double latency = 58.0 * static_cast<double>(balanced.steps) * alltoall_seconds(s, topo, 0);
  for (const char* label : {"ep.dispatch", "ep.combine"}) {
    CAPTURE(label);
    CHECK(collective(skewed, label) - latency ==
          doctest::Approx(2.4 * (collective(balanced, label) - latency)).epsilon(1e-6));
  }
}

TEST_CASE(
    "serving DeepEP: more expert skew never speeds up the most loaded GPU's dispatch and combine (one box and "
    "two over the rails)") {
  for (int tp : {8, 16}) {
    CAPTURE(tp);
    double load = 0, dispatch = 0, combine = 0, balanced_dispatch = -1, balanced_combine = -1;
    for (const char* routing : {"balanced", "zipf:0.5", "zipf:1.0", "zipf:1.5"}) {
      CAPTURE(routing);
      const auto r = test::serve(deepseek(routing, "deepep", kQueued, tp));
      REQUIRE(r.moe);
      CHECK(r.moe->load_imbalance_mean >= load);
      CHECK(collective(r, "ep.dispatch") >= dispatch);
      CHECK(collective(r, "ep.combine") >= combine);
      load = r.moe->load_imbalance_mean;
      dispatch = collective(r, "ep.dispatch");
      combine = collective(r, "ep.combine");
      if (balanced_dispatch < 0) {
        balanced_dispatch = dispatch;
        balanced_combine = combine;
      }
    }
    CHECK(load > 2);  // zipf:1.5 does skew, and its exchanges take longer
    CHECK(dispatch > balanced_dispatch);
    CHECK(combine > balanced_combine);
  }
}

TEST_CASE(
    "serving all-gather exchange: every token goes to every GPU whatever the routing, so skew leaves its "
    "volume and time alone") {
  // The MoE layer's all-gather and reduce-scatter carry all T tokens' hidden states for any router.
  const auto m = test::shipped_model("deepseek-r1");
  models::StepMix mix;
  mix.add_prefill_context(0, 800);
  mix.tokens = 800;
  models::ServingShape shape{.tp = 8, .ep = 8, .weights = models::WeightFormat::kFp8, .dp_attention = true};
  const models::LayerKind moe{models::AttentionKind::kMla, models::FeedForwardKind::kMoe};
  const auto comm_bytes = [&](double load) {
    shape.routing = {load, 32};
    std::vector<double> bytes;
    for (const auto& it : models::serving_layer(m, mix, shape, moe))
      if (it.comm) bytes.push_back(it.comm->bytes);
    return bytes;
  };
  const auto even = comm_bytes(1), skewed = comm_bytes(2.4);
  CHECK(even == skewed);
  CHECK(even == std::vector<double>{800 * 7168 * 2.0, 800 * 7168 * 2.0});  // the all-gather, the reduce-scatter
  // Simulated: the same steps take the same all-gather and reduce-scatter times under any routing,
  // while the most loaded GPU's experts slow the steps down.
  const auto balanced = test::serve(deepseek("balanced", "allgather", kQueued));
  const auto skew = test::serve(deepseek("zipf:1.5", "allgather", kQueued));
  REQUIRE(skew.moe);
  CHECK(skew.moe->load_imbalance_mean > 2);
  REQUIRE(skew.steps == balanced.steps);
  CHECK(collective(skew, "tp.allgather") == collective(balanced, "tp.allgather"));
  CHECK(collective(skew, "tp.reducescatter") == collective(balanced, "tp.reducescatter"));
  CHECK(collective(balanced, "tp.reducescatter") > 0);
  CHECK(collective(skew, "ep.dispatch") == 0);
}

TEST_CASE("serving DeepEP under skew: the same bytes with and without the fast path") {
  auto s = deepseek("zipf:1.0", "deepep", kQueued);
  serving::ServingRunOptions fast, slow;
  slow.fast_path = false;
  const auto a = test::serve(s, fast), b = test::serve(s, slow);
  CHECK(a.collectives_s == b.collectives_s);
  CHECK(a.tpot.p50 == b.tpot.p50);
  CHECK(a.makespan_s == b.makespan_s);
}
