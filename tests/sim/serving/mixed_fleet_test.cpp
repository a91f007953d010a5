#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/network/topology.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/serving/router.hpp"
#include "sim/serving/serving_sim.hpp"
#include "tests/support/builders.hpp"

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
  for (const char* k : {"run_info", "events", "mix", "name", "compute_sources"}) j.erase(k);
  return j;
}

}  // namespace

TEST_CASE("mixed fleet: a second kind alike to the first serves exactly as one fleet of all the replicas") {
  // Three TP-2 replicas in one box, against two there and one in a second box of the same kind:
  // every replica alone in its GPUs, the same router turn, so every figure is the same.
  const auto one = serving::simulate_serving(parse(R"("parallel": {"tp": 2, "replicas": 3})"));
  const auto two = serving::simulate_serving(
      parse(R"("parallel": {"tp": 2, "replicas": 2}, "mix": {"cluster": "hgx-h100", "replicas": 1})"));
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
  const auto r = serving::simulate_serving(s);
  REQUIRE(r.mix);
  CHECK(r.mix->cluster == "dgx-a100");
  CHECK(r.mix->profile == s.mix->profile.id);
  // The weights: each kind's output tokens/s alone with a queue of 2 x max batch requests.
  const auto alone = [&](serving::ServingScenario k) {
    k.mix.reset();
    k.arrivals = serving::Arrivals::kQueued;
    k.requests = 2 * k.max_batch;
    return serving::simulate_serving(k).output_tokens_per_s;
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
  refused(R"("parallel": {"tp": 2}, "disaggregate": {"prefill": 1, "decode": 1}, "mix": {"cluster": "dgx-a100",
          "replicas": 1})",
          "/mix", "colocated");
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
  for (int k = 0; k < 6; ++k) turns += std::to_string(rr.pick(pool));
  CHECK(turns == "010010");
  serving::RoundRobinRouter plain;
  const serving::ReplicaLoad alike[] = {{0, 5, 1.0}, {1, 0, 1.0}, {2, 9, 1.0}};
  turns.clear();
  for (int k = 0; k < 4; ++k) turns += std::to_string(plain.pick(alike));
  CHECK(turns == "0120");
  serving::LeastLoadedRouter ll;
  // (3 + 1) / 4 = 1 against (1 + 1) / 1 = 2: the fast replica despite more requests.
  const serving::ReplicaLoad loaded[] = {{0, 3, 4.0}, {1, 1, 1.0}};
  CHECK(ll.pick(loaded) == 0);
  const serving::ReplicaLoad equal[] = {{0, 3, 1.0}, {1, 1, 1.0}};
  CHECK(ll.pick(equal) == 1);
}
