#include <doctest/doctest.h>

#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/serving/isolated_stages.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/serving/stage_tasks.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"

// The serving fast path: which links can make traffic meet, and the guarded stages (reachable
// only by KV transfers) timed from remembered collectives while no transfer can run.

using namespace cs;

namespace {

net::FabricSpec fabric(const std::string& id) {
  return config::parse_fabric(config::load(test::data_path("scenarios/fabrics/" + id + ".json")), id);
}

/// The links of `topo` of a type, and how many of them never bind.
std::pair<int, int> count(const net::Topology& topo, const std::vector<char>& free, const std::string& type) {
  int all = 0, never = 0;
  for (std::uint32_t l = 0; l < topo.link_count(); ++l) {
    if (topo.link(static_cast<net::LinkId>(l)).type != type) continue;
    ++all;
    never += free[l];
  }
  return {all, never};
}

serving::ServingScenario disaggregated(const std::string& workload, const std::string& fabric_id) {
  // Llama-3.1-70B, prefill and decode pools of 16 GPUs, each over two HGX H100 boxes: every
  // step's all-reduces cross the fabric, and the prompts' KV caches cross it to the decode pool.
  const std::string text = R"({"kind": "infer", "model": "llama3.1-70b", "cluster": "hgx-h100", "nodes": 4,
    "fabric": ")" + fabric_id +
                           R"(", "parallel": {"tp": 16},
    "disaggregate": {"prefill": 1, "decode": 1}, "workload": )" +
                           workload + "}";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

/// An executor stand-in: a clock the test sets, and what each added task was.
class FakeGraph final : public workload::OpenGraph {
 public:
  SimTime clock{};
  std::vector<std::pair<bool, SimTime>> tasks;  ///< (collective, compute time)
  [[nodiscard]] SimTime now() const override { return clock; }
  std::uint32_t add_group(const std::vector<int>&) override { return 0; }
  workload::TaskId add_compute(int, workload::Stream, workload::Category, const char*, SimTime d) override {
    return add(false, d);
  }
  workload::TaskId add_collective(std::uint32_t, workload::Stream, workload::Category, const char*, CollectiveOp,
                                  double) override {
    return add(true, SimTime{});
  }
  workload::TaskId add_ep_alltoall(std::uint32_t, workload::Stream, workload::Category, const char*,
                                   const workload::EpAllToAll&) override {
    return add(true, SimTime{});
  }
  void depend(workload::TaskId, workload::TaskId) override {}

 private:
  workload::TaskId add(bool collective, SimTime d) {
    tasks.emplace_back(collective, d);
    return static_cast<workload::TaskId>(tasks.size() - 1);
  }
};

/// Three layers of 10 us of kernels around one all-reduce.
serving::StageProgram three_layers() {
  serving::StageProgram p;
  serving::Segment kernels{SimTime::from_seconds(10e-6)};
  serving::Segment ar;
  ar.collective = true;
  ar.bytes = 1e6;
  p.layer = {kernels, ar, kernels};
  p.layers = 3;
  return p;
}

}  // namespace

TEST_CASE(
    "StageTasks on a guarded stage: a collective is remembered only if no transfer started while it ran, used "
    "only while none runs, and layers fold only as far as the window reaches") {
  serving::Stage st;
  st.ranks = {0, 1};
  st.guarded = true;
  const auto prog = three_layers();
  const auto us = [](std::int64_t n) { return SimTime{n * 1000000}; };
  const SimTime forever{std::numeric_limits<std::int64_t>::max()};
  serving::StageTasks tasks;
  FakeGraph g;
  std::size_t next = 0;
  // The overhead and the first kernels as one task, then the all-reduce through the flow model.
  auto a = tasks.resume(g, st, prog, next, forever);
  CHECK_FALSE(g.tasks.back().first);
  CHECK(g.tasks.back().second == us(10));
  a = tasks.resume(g, st, prog, next, forever);
  REQUIRE(g.tasks.back().first);
  // A transfer starts while it runs: its 50 us are not remembered.
  ++tasks.transfers().started;
  tasks.ended(a.id, us(50));
  a = tasks.resume(g, st, prog, next, forever);  // the kernels up to the next all-reduce
  CHECK(g.tasks.back().second == us(20));
  a = tasks.resume(g, st, prog, next, forever);
  CHECK(g.tasks.back().first);  // still unknown: through the flow model again
  tasks.ended(a.id, us(40));    // alone this time: remembered
  // A transfer running: nothing known is used, the last layer's all-reduce goes through the
  // flow model although its time is known.
  tasks.transfers().in_flight = 1;
  a = tasks.resume(g, st, prog, next, forever);
  CHECK(g.tasks.back().second == us(20));
  a = tasks.resume(g, st, prog, next, forever);
  CHECK(g.tasks.back().first);
  tasks.ended(a.id, us(45));
  a = tasks.resume(g, st, prog, next, forever);
  CHECK(a.last);
  CHECK(g.tasks.back().second == us(10));

  // A new batch with nothing running: whole layers of 60 us fold as far as a transfer that may
  // start 130 us from now allows (two), the third layer's kernels follow, its all-reduce waits.
  tasks.transfers().in_flight = 0;
  next = 0;
  a = tasks.resume(g, st, prog, next, us(130));
  CHECK_FALSE(a.last);
  CHECK(g.tasks.back().second == us(130));  // 2 x 60 us + the third layer's first kernels
  CHECK(a.end == us(130));
  g.clock = us(130);
  a = tasks.resume(g, st, prog, next, us(130));
  CHECK(g.tasks.back().first);
  // The breakdown: every all-reduce that ran (50, 40, 45) or was folded (2 x 40).
  REQUIRE(tasks.collectives_s().size() == 1);
  CHECK(tasks.collectives_s()[0].second == doctest::Approx(215e-6));
}

TEST_CASE(
    "never_binding: a full-bisection rail fabric's spine links never bind, NIC links and an oversubscribed "
    "fabric's uplinks do, one box has none") {
  const auto rail = net::Topology::build(test::shipped_cluster("hgx-h100"), 8, 4, fabric("ib-ndr-rail"));
  const auto free = serving::never_binding(rail);
  const auto [spine, spine_free] = count(rail, free, "spine");
  CHECK(spine == 16);  // 8 rails, both directions
  CHECK(spine_free == spine);
  const auto [nic, nic_free] = count(rail, free, "nic");
  CHECK(nic > 0);
  CHECK(nic_free == 0);  // a NIC's GPU link is wider than its port: the port binds

  auto thin = fabric("ib-hdr-fattree");
  thin.oversubscription = 2;
  thin.nodes_per_leaf = 1;  // four leaves (with two, each down link carries only the other's up link: free)
  const auto tree = net::Topology::build(test::shipped_cluster("hgx-h100"), 8, 4, thin);
  const auto tree_free = serving::never_binding(tree);
  CHECK(count(tree, tree_free, "spine").first > 0);
  CHECK(count(tree, tree_free, "spine").second == 0);  // half a leaf's NICs fill its up link

  const auto box = net::Topology::build(test::shipped_cluster("hgx-h100"), 8);
  for (auto f : serving::never_binding(box)) CHECK(f == 0);
}

TEST_CASE(
    "a disaggregated run whose pools span boxes: the stages are guarded (only KV transfers reach them), and the "
    "fast path gives the same run as every collective through the flow model") {
  // Poisson arrivals: prefill steps end (and transfers start) while decode steps run, so some
  // decode collectives run beside a transfer and the guard must send them through the flow model.
  const auto s =
      disaggregated(R"({"input_len": "1000-3000", "output_len": "20-80", "rate": 6, "requests": 40})", "ib-ndr-rail");
  serving::ServingRunOptions fast, slow;
  fast.record_trace = slow.record_trace = true;
  slow.fast_path = false;
  const auto a = test::serve(s, fast);
  const auto b = test::serve(s, slow);
  REQUIRE(a.step_spans.size() == b.step_spans.size());
  for (std::size_t i = 0; i < a.step_spans.size(); ++i) {
    CHECK(a.step_spans[i].start == b.step_spans[i].start);
    CHECK(a.step_spans[i].end == b.step_spans[i].end);
  }
  MESSAGE("events: fast path " << a.events << ", flow model only " << b.events);
  CHECK(a.events * 4 < b.events);  // the point of it
  auto ja = report::serving_json(a), jb = report::serving_json(b);
  for (auto* j : {&ja, &jb}) {
    j->erase("run_info");
    j->erase("events");
  }
  CHECK(ja.dump() == jb.dump());
}
