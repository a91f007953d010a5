#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/config/json_doc.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/sizing/serving_search.hpp"
#include "sim/sizing/serving_trials.hpp"
#include "tests/support/builders.hpp"

// plan's serving search called directly (tools/cli builds the same scenarios from flags): its
// batches run locally, or split as ranks split them (ServingOptions::run_texts), to the same answer.

using namespace cs;

namespace {

/// The two seed 2-GPU offers, one box each at most four boxes, and one scenario per choice as the CLI builds it.
struct Fixture {
  std::vector<sizing::OfferSpace> offers;
  sizing::MakeServing make;
  Fixture() {
    for (const char* id : {"hk-2x-h100-nvlink", "hk-2x-a100-80g-nvlink"}) {
      sizing::OfferSpace sp;
      sp.offer =
          config::parse_offer(config::load(test::data_path(std::string("scenarios/offers/") + id + ".json")), id);
      sp.gpus_per_node = sp.offer.gpus;
      sp.node_counts = {1, 2, 4};
      offers.push_back(sp);
    }
    make = [this](std::size_t oi, const sizing::ServingChoice& c, double rate, std::int64_t requests) {
      nlohmann::json j = {
          {"kind", "infer"},
          {"model", "llama3.1-8b"},
          {"cluster", offers[oi].offer.cluster},
          {"gpus", c.tp * c.pp * (c.second && c.prefill_replicas > 0 ? c.prefill_replicas : c.replicas)},
          {"parallel", {{"tp", c.tp}, {"pp", c.pp}, {"replicas", c.replicas}}},
          {"engine", {{"max_batch", c.max_batch}}},
          {"workload", {{"input_len", 1024}, {"output_len", 256}, {"rate", rate}, {"requests", requests}}}};
      if (c.prefill_replicas > 0)
        j["disaggregate"] = {{"prefill", c.prefill_replicas}, {"decode", c.replicas - c.prefill_replicas}};
      if (c.max_tokens > 0) j["engine"]["max_tokens"] = j["engine"]["chunked_prefill"] = c.max_tokens;
      if (c.second) {
        j["mix"] = {
            {"cluster", offers[c.second->offer].offer.cluster}, {"replicas", c.second->replicas}, {"tp", c.second->tp}};
        if (c.prefill_replicas > 0) j["mix"]["link"] = "eth-100g";
      }
      if (c.span > 1) {
        j["nodes"] = c.span;
        j["fabric"] = "eth-100g";
      }
      return config::parse_serving(config::JsonDoc{"test", j}, test::catalog());
    };
    offers[0].fabric = offers[1].fabric = "eth-100g";
  }
};

nlohmann::json answer(const sizing::ServingResult& r) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : r.candidates) j.push_back(sizing::detail::candidate_json(c));
  for (const auto& x : r.rejected) j.push_back({x.offer, x.reason});
  return j;
}

}  // namespace

TEST_CASE("a candidate survives its text form bit for bit, mixed fleets' second kind included") {
  sizing::ServingCandidate c;
  c.offer = "a";
  c.choice.second = sizing::SecondKind{1, 2, 4, 4};
  c.choice.prefill_replicas = 1;
  c.ttft = {0.1, 1.0 / 3.0, 0.7000000000000001, 2e-300, 17};
  c.cost_per_hour = 59.722222222222214;
  c.steady_requests_per_s = 4.94;
  c.second_offer = "b";
  const auto back =
      sizing::detail::candidate_from_json(nlohmann::json::parse(sizing::detail::candidate_json(c).dump()));
  CHECK(back.choice == c.choice);
  CHECK(back.ttft.p50 == c.ttft.p50);
  CHECK(back.ttft.p90 == c.ttft.p90);
  CHECK(back.ttft.p99 == c.ttft.p99);
  CHECK(back.ttft.count == 17);
  CHECK(back.cost_per_hour == c.cost_per_hour);
  CHECK(*back.steady_requests_per_s == 4.94);
  CHECK(back.second_offer == "b");
  CHECK(sizing::detail::candidate_json(back) == sizing::detail::candidate_json(c));
}

TEST_CASE("the serving search split as ranks split it (texts, another order) gives the local answer bit for bit") {
  Fixture f;
  sizing::ServingJob job;
  job.rate = 40;
  job.isl = 1024;
  job.osl = 256;
  job.slo_ttft_s = 1.0;
  sizing::ServingOptions local;
  local.top = 20;
  const auto a = sizing::search_serving(f.offers, job, f.make, local);
  REQUIRE(!a.candidates.empty());
  CHECK(a.mixed_found >= 1);  // the same job as plan's mixed-fleet test: one of each box kind wins
  auto split = local;
  std::size_t batches = 0;
  split.run_texts = [&](std::size_t n, const std::function<std::string(std::size_t)>& one, study::Progress*) {
    ++batches;
    std::vector<std::string> out(n);
    for (std::size_t i = n; i-- > 0;) out[i] = one(i);  // last first, one at a time: another rank's order
    return out;
  };
  const auto b = sizing::search_serving(f.offers, job, f.make, split);
  CHECK(batches >= 3);  // shapes, variants, the mixed phases
  CHECK(answer(a) == answer(b));
  CHECK(a.plans == b.plans);
  CHECK(a.mixed_found == b.mixed_found);
}
