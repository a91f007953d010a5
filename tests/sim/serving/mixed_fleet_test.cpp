#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/network/topology.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/serving/router.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/study/training_run.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"

// A mixed colocated fleet: replicas of a second box kind beside the scenario's own, behind one
// router, each kind timed by its own profile on its own boxes (joined side by side, no link between).

using namespace cs;

namespace {

serving::ServingScenario parse(const std::string& fields) {
  const std::string text = R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100", )" + fields +
                           R"(, "workload": {"input_len": "500-1500", "output_len": "100-300", "requests": 300,
                           "rate": 20}})";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

/// The figures without what names the run or measures the simulator (wall time, events).
nlohmann::ordered_json figures(const serving::ServingResults& r) {
  auto j = report::serving_json(r);
  for (const char* k : {"run_info", "events", "mix", "name", "compute_sources", "compute_by_kernel"}) j.erase(k);
  return j;
}

}  // namespace

TEST_CASE("mixed fleet: a second kind alike to the first serves exactly as one fleet of all the replicas") {
  // Three TP-2 replicas in one box, against two there and one in a second box of the same kind:
  // every replica alone in its GPUs, the same router turn, so every figure is the same.
  const auto one = test::serve(parse(R"("parallel": {"tp": 2, "replicas": 3})"));
  const auto two =
      test::serve(parse(R"("parallel": {"tp": 2, "replicas": 2}, "mix": {"cluster": "hgx-h100", "replicas": 1})"));
  CHECK(figures(one) == figures(two));
  REQUIRE(two.mix);
  CHECK(two.mix->boxes == 1);
  CHECK(two.gpus == 6);
  CHECK(two.own_kind_requests + two.mix->requests == 300);
  CHECK(two.mix->requests == 100);  // round robin: every third request
  for (std::size_t k = 0; k < one.compute_sources.size(); ++k)
    CHECK(two.compute_sources[k] == doctest::Approx(one.compute_sources[k]).epsilon(1e-9));
}

TEST_CASE("mixed fleet: each kind runs on its own profile and takes requests in proportion to its throughput alone") {
  const auto s = parse(R"("parallel": {"tp": 2, "replicas": 1}, "mix": {"cluster": "dgx-a100", "replicas": 1})");
  REQUIRE(s.mix);
  const auto r = test::serve(s);
  REQUIRE(r.mix);
  CHECK(r.mix->cluster == "dgx-a100");
  CHECK(r.mix->profile == s.mix->profile.id);
  // The weights: each kind's output tokens/s alone with a queue of 2 x max batch requests.
  const auto alone = [&](serving::ServingScenario k) {
    k.mix.reset();
    k.arrivals = serving::Arrivals::kQueued;
    k.requests = 2 * k.max_batch;
    return test::serve(k).output_tokens_per_s;
  };
  const double h100 = alone(s);
  const double a100 = alone(s.replica(1));
  REQUIRE(h100 > a100);  // the A100's kernels and HBM are slower
  // Smooth weighted round robin: each kind's share of the 300 requests is its weight's, to within
  // one request.
  const double expected = 300 * a100 / (a100 + h100);
  CHECK(std::abs(static_cast<double>(r.mix->requests) - expected) <= 1.0);
  CHECK(r.own_kind_requests + r.mix->requests == 300);
}

TEST_CASE("mixed fleet: joined boxes keep their own routes, ranks in order, and name each rank's cluster") {
  const auto s = parse(R"("parallel": {"tp": 2, "replicas": 1}, "mix": {"cluster": "dgx-a100", "replicas": 5,
                       "tp": 2})");
  const auto joined = serving::serving_topology(s);
  // 2 GPUs of the H100 box, then the A100 replicas: 4 to a box of 8, so two boxes (8 + 2 GPUs).
  CHECK(joined.gpu_count() == 2 + 10);
  CHECK(joined.cluster_of_rank(1) == "hgx-h100");
  CHECK(joined.cluster_of_rank(2) == "dgx-a100");
  CHECK(joined.cluster_of_rank(11) == "dgx-a100");
  CHECK(joined.domain_of_rank(0) == 0);
  CHECK(joined.domain_of_rank(2) == 1);
  CHECK(joined.domain_of_rank(10) == 2);
  const auto a100 = net::Topology::build(s.mix->cluster, 8);
  // A route inside the first A100 box: the same links (types, bandwidths) as in the box alone.
  const auto& mine = joined.route(joined.gpu(2), joined.gpu(5));
  const auto& alone = a100.route(a100.gpu(0), a100.gpu(3));
  REQUIRE(mine.links.size() == alone.links.size());
  for (std::size_t k = 0; k < mine.links.size(); ++k) {
    CHECK(joined.link(mine.links[k]).type == a100.link(alone.links[k]).type);
    CHECK(joined.link(mine.links[k]).bandwidth_bytes_per_s == a100.link(alone.links[k]).bandwidth_bytes_per_s);
  }
  CHECK(mine.latency_s == doctest::Approx(alone.latency_s));
}

TEST_CASE("mixed fleet: a second kind that cannot serve as asked is refused with its field") {
  const auto refused = [](const std::string& fields, const std::string& pointer, const std::string& words) {
    try {
      (void)parse(fields);
      FAIL("expected an InputError at " << pointer);
    } catch (const InputError& e) {
      REQUIRE(!e.problems().empty());
      CHECK(e.problems().front().pointer == pointer);
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
  };
  refused(R"("parallel": {"tp": 2}, "mix": {"cluster": "dgx-a100", "replicas": 1, "tp": 16})", "/mix/tp",
          "does not fit a box");
  refused(R"("parallel": {"tp": 2}, "offer": "usd-8x-h100-sxm-long-tail", "mix": {"cluster": "dgx-a100",
          "replicas": 1})",
          "/mix/offer", "both box kinds");
  refused(R"("parallel": {"tp": 2}, "offer": "usd-8x-h100-sxm-long-tail", "mix": {"cluster": "dgx-a100",
          "replicas": 1, "offer": "cn-8x-a100-80g-sxm"})",
          "/mix/offer", "one currency");
  refused(R"("parallel": {"tp": 2}, "mix": {"replicas": 1})", "/mix/cluster", "");
  refused(R"("parallel": {"tp": 2}, "mix": {"cluster": "hgx-a1000", "replicas": 1})", "/mix/cluster", "hgx-a1000");
  refused(R"("parallel": {"tp": 2}, "offer": "usd-8x-h100-sxm-long-tail", "mix": {"cluster": "dgx-a100",
          "replicas": 1, "offer": "usd-8x-h100-sxm-long-tail"})",
          "/mix/offer", "rents cluster 'hgx-h100'");
}

TEST_CASE("mixed fleet: a weighted round robin interleaves by weight, least loaded divides the load by it") {
  serving::RoundRobinRouter rr;
  const serving::ReplicaLoad pool[] = {{0, 0, 2.0}, {1, 0, 1.0}};
  std::string turns;
  for (int k = 0; k < 6; ++k) turns += std::to_string(rr.pick(pool, serving::Request{}));
  CHECK(turns == "010010");
  serving::RoundRobinRouter plain;
  const serving::ReplicaLoad alike[] = {{0, 5, 1.0}, {1, 0, 1.0}, {2, 9, 1.0}};
  turns.clear();
  for (int k = 0; k < 4; ++k) turns += std::to_string(plain.pick(alike, serving::Request{}));
  CHECK(turns == "0120");
  serving::LeastLoadedRouter ll;
  // (3 + 1) / 4 = 1 against (1 + 1) / 1 = 2: the fast replica despite more requests.
  const serving::ReplicaLoad loaded[] = {{0, 3, 4.0}, {1, 1, 1.0}};
  CHECK(ll.pick(loaded, serving::Request{}) == 0);
  const serving::ReplicaLoad equal[] = {{0, 3, 1.0}, {1, 1, 1.0}};
  CHECK(ll.pick(equal, serving::Request{}) == 1);
}

namespace {

serving::ServingScenario pools_apart(const std::string& link, const std::string& workload) {
  const std::string text = R"({"kind": "infer", "model": "llama3.1-70b", "cluster": "hgx-h100", "parallel": {"tp": 4},
    "disaggregate": {"prefill": 1, "decode": 1}, "mix": {"cluster": "dgx-a100", "replicas": 1, "tp": 4,
    "link": ")" + link + R"("}, "workload": )" +
                           workload + "}";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

}  // namespace

TEST_CASE("pools on two box kinds: the decode pool on its own boxes, the KV caches over the link that joins them") {
  // One request of 4,000 prompt tokens and 2 output tokens: its end-to-end time is the prefill, the
  // KV transfer and one decode step, so two links differ by the transfer alone. Llama-3.1-70B's KV
  // cache is 80 layers x 8 K/V heads x 128 x 2 (K and V) x 2 bytes = 327,680 bytes a token, sent
  // by the 4 prefill GPUs to their 4 decode peers.
  const std::string one = R"({"input_len": 4000, "output_len": 2, "requests": 1, "rate": 1})";
  const auto eth = test::serve(pools_apart("eth-100g", one));
  const auto ib = test::serve(pools_apart("ib-ndr-rail", one));
  REQUIRE(eth.mix);
  CHECK(eth.mix->link == "eth-100g");
  CHECK(eth.mix->cluster == "dgx-a100");
  CHECK(eth.ttft.p50 == doctest::Approx(ib.ttft.p50).epsilon(1e-9));  // the prefill is the same
  const double bytes = 4000.0 * 327680.0;
  const auto spec = [](const std::string& id) {
    return config::parse_fabric(config::load(test::data_path("scenarios/fabrics/" + id + ".json")), id);
  };
  const auto e = spec("eth-100g"), i = spec("ib-ndr-rail");
  // eth-100g: one NIC a box, the four pairs share it; ib-ndr-rail: a NIC per GPU, a pair each.
  const double t_eth = bytes / std::min(e.nic_bandwidth * e.nic_efficiency, e.gpu_nic_bandwidth);
  const double t_ib = bytes / 4 / std::min(i.nic_bandwidth * i.nic_efficiency, i.gpu_nic_bandwidth);
  CHECK(eth.e2e.p50 - ib.e2e.p50 == doctest::Approx(t_eth - t_ib).epsilon(0.02));
}

TEST_CASE("pools on two box kinds: a faster link is never slower, and an impossible pairing is refused") {
  const std::string load = R"({"input_len": "2000-4000", "output_len": "50-150", "requests": 60, "rate": 2})";
  const auto eth = test::serve(pools_apart("eth-100g", load));
  const auto ib = test::serve(pools_apart("ib-ndr-rail", load));
  CHECK(ib.e2e.mean <= eth.e2e.mean);
  CHECK(ib.makespan_s <= eth.makespan_s);
  const auto refused = [](const std::string& text, const std::string& pointer) {
    try {
      (void)config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
      FAIL("expected an InputError at " << pointer);
    } catch (const InputError& e) {
      CHECK(e.problems().front().pointer == pointer);
    }
  };
  const std::string head = R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 2},
    "workload": {"input_len": 100, "output_len": 10, "requests": 5, "rate": 1}, )";
  refused(head + R"("disaggregate": {"prefill": 1, "decode": 2}, "mix": {"cluster": "dgx-a100", "replicas": 1,
    "link": "eth-100g"}})",
          "/mix/replicas");
  refused(head + R"("disaggregate": {"prefill": 1, "decode": 1}, "mix": {"cluster": "dgx-a100", "replicas": 1}})",
          "/mix/link");
  refused(head + R"("disaggregate": {"prefill": 1, "decode": 1}, "mix": {"cluster": "dgx-a100", "replicas": 1,
    "link": "eth-100g-typo"}})",
          "/mix/link");
}

TEST_CASE("pools on two box kinds: a batch's topology cache keeps one machine per link") {
  // A comparison of links in one file shares a cache: each link must get its own machine.
  const std::string load = R"({"input_len": 100, "output_len": 10, "requests": 2, "rate": 1})";
  study::TopologyCache cache;
  const auto eth = cache.get(pools_apart("eth-100g", load));
  const auto ib = cache.get(pools_apart("ib-ndr-rail", load));
  CHECK(eth != ib);
  CHECK(eth->fabric_id() == "eth-100g");
  CHECK(ib->fabric_id() == "ib-ndr-rail");
  CHECK(cache.get(pools_apart("eth-100g", load)) == eth);
}
