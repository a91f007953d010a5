// The serving seams on their own, with no simulation: the KV pool's block arithmetic, the routers,
// the request source, the step builder, both batch schedulers and the metrics, each fed state built
// by hand, so a change of contract shows here before it blurs into a whole run's figures.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <utility>
#include <vector>

#include "models/ops/serving_ops.hpp"
#include "sim/report/serving_results.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "sim/serving/arrival_clock.hpp"
#include "sim/serving/batch_scheduler.hpp"
#include "sim/serving/batch_tracker.hpp"
#include "sim/serving/kv_cache.hpp"
#include "sim/serving/kv_transfer.hpp"
#include "sim/serving/pool_router.hpp"
#include "sim/serving/replicas.hpp"
#include "sim/serving/request_source.hpp"
#include "sim/serving/router.hpp"
#include "sim/serving/run_record.hpp"
#include "sim/serving/step_builder.hpp"
#include "sim/serving/step_settle.hpp"
#include "tests/support/serving_queues.hpp"

using namespace cs;

using test::batch;
using test::queue;
using test::requests;

namespace {

using Lengths = std::vector<std::pair<std::int64_t, std::int64_t>>;

/// A request without a shared prefix (what the routers see when prefixes play no part).
const serving::Request kNoPrefix{};

/// Puts `r` in the running set as a decoding sequence: its prompt cached, `generated` tokens out.
void running(serving::ReplicaQueue& q, serving::Request& r, std::int64_t generated, std::int64_t blocks) {
  r.prefilled = r.prompt;
  r.generated = generated;
  q.kv.admit(r, blocks);
  q.running.push_back(r.id);
}

using Plan = std::vector<std::pair<int, std::int64_t>>;

/// The requests' (input, output) lengths.
Lengths lengths(const std::vector<serving::Request>& reqs) {
  Lengths out;
  for (const auto& r : reqs) out.emplace_back(r.input, r.output);
  return out;
}

/// A workload of `n` requests arriving as `a`, with these lengths.
serving::ServingScenario served_workload(serving::Arrivals a, std::int64_t n, serving::LengthDist in,
                                         serving::LengthDist out) {
  serving::ServingScenario s;
  s.arrivals = a;
  s.requests = n;
  s.input = in;
  s.output = out;
  return s;
}

SimTime at(double s) { return SimTime::from_seconds(s); }

}  // namespace

TEST_CASE("serving seams: the KV pool's blocks round up and are accounted for") {
  serving::KvCache kv(10, 16, 0, 0);
  CHECK(kv.blocks_for(0) == 0);
  CHECK(kv.blocks_for(1) == 1);
  CHECK(kv.blocks_for(16) == 1);
  CHECK(kv.blocks_for(17) == 2);
  CHECK(kv.used() == 0.0);

  auto reqs = requests({{20, 4}, {60, 4}});
  auto &a = reqs[0], &b = reqs[1];
  kv.admit(a, kv.blocks_for(20));
  CHECK(a.blocks == 2);
  CHECK(kv.more_for(a, 10) == 0);  // never negative when it holds more than it needs
  CHECK(kv.more_for(a, 33) == 1);
  kv.grow(a, 33);
  CHECK(a.blocks == 3);
  kv.admit(b, kv.blocks_for(60));
  CHECK(b.blocks == 4);
  CHECK(kv.free() + a.blocks + b.blocks == kv.total());
  CHECK(kv.free() == 3);
  CHECK(kv.used() == doctest::Approx(0.7));
  CHECK(kv.has(3));
  CHECK_FALSE(kv.has(4));
  kv.release(a);
  CHECK(a.blocks == 0);
  CHECK(kv.free() == 6);
  kv.release(b);
  CHECK(kv.used() == 0.0);
}

TEST_CASE("serving seams: sliding-window layers keep only their window's blocks") {
  // Every layer on a 32-token window: a 1000-token sequence holds 1000*0 + 32*1 = 32 tokens.
  CHECK(models::kv_held_tokens(1000, 1.0, 32) == 32);
  serving::KvCache all(100, 16, 1.0, 32);
  CHECK(all.blocks_for(1000) == 2);
  CHECK(all.blocks_for(20) == 2);  // inside the window: every token
  CHECK(all.blocks_for(10) == 1);
  // Half the bytes windowed: 1000*0.5 + 32*0.5 = 516 tokens, ceil(516/16) = 33 blocks.
  CHECK(models::kv_held_tokens(1000, 0.5, 32) == 516);
  CHECK(serving::KvCache(100, 16, 0.5, 32).blocks_for(1000) == 33);
}

TEST_CASE("serving seams: round robin keeps its turn, least loaded takes the first of the lightest") {
  serving::RoundRobinRouter rr;
  const std::vector<serving::ReplicaLoad> pool{{3, 5}, {7, 0}, {9, 2}};
  for (int want : {3, 7, 9, 3}) CHECK(rr.pick(pool, kNoPrefix) == want);
  // Loads do not move the turn.
  const std::vector<serving::ReplicaLoad> other{{3, 0}, {7, 9}, {9, 9}};
  CHECK(rr.pick(other, kNoPrefix) == 7);

  serving::LeastLoadedRouter ll;
  const std::vector<serving::ReplicaLoad> tied{{0, 4}, {1, 2}, {2, 2}, {3, 5}};
  CHECK(ll.pick(tied, kNoPrefix) == 1);
  CHECK(ll.pick(other, kNoPrefix) == 3);

  const std::vector<serving::ReplicaLoad> two{{0, 5}, {1, 1}};
  auto least = serving::make_router(serving::Router::kLeastLoaded);
  CHECK(least->pick(two, kNoPrefix) == 1);
  CHECK(least->pick(two, kNoPrefix) == 1);
  auto turn = serving::make_router(serving::Router::kRoundRobin);
  CHECK(turn->pick(two, kNoPrefix) == 0);
  CHECK(turn->pick(two, kNoPrefix) == 1);
}

TEST_CASE("serving seams: the pool router picks within its pool by requests waiting, running and incoming") {
  // Disaggregated: replica 0 prefills, replicas 1 and 2 decode.
  serving::ServingScenario s;
  s.router = serving::Router::kLeastLoaded;
  s.prefill_replicas = 1;
  s.decode_replicas = 2;
  std::vector<serving::Replica> reps(3);
  for (int i = 0; i < 3; ++i) reps[static_cast<std::size_t>(i)].index = i;
  reps[0].prefill_only = true;
  reps[1].decode_only = reps[2].decode_only = true;
  reps[0].queue.waiting = {5, 6, 7};
  reps[1].queue.waiting = {1};
  reps[1].incoming = 1;  // two requests' worth: one waiting, one whose KV is on its way
  reps[2].queue.running = {2};
  serving::PoolRouter router(s, {});
  CHECK(router.pick(reps, false, kNoPrefix) == 0);  // the prefill pool has one replica, however loaded
  CHECK(router.pick(reps, true, kNoPrefix) == 2);
  reps[2].queue.running.push_back(3);
  reps[2].queue.waiting.push_back(4);
  CHECK(router.pick(reps, true, kNoPrefix) == 1);

  // A mixed fleet's second kind weighs kind_weights[1]: three times as fast, it takes the request
  // while it holds fewer than three times the requests per replica.
  serving::ServingScenario m;
  m.router = serving::Router::kLeastLoaded;
  m.replicas = 1;
  m.mix = serving::MixedKind{};
  m.mix->replicas = 1;
  std::vector<serving::Replica> fleet(2);
  fleet[1].index = 1;
  fleet[0].queue.running = {1};
  fleet[1].queue.running = {2, 3, 4};
  serving::PoolRouter weighted(m, {1.0, 3.0});
  CHECK(weighted.pick(fleet, false, kNoPrefix) == 1);  // (3 + 1) / 3 < (1 + 1) / 1
  fleet[1].queue.running.push_back(5);
  fleet[1].queue.running.push_back(6);
  CHECK(weighted.pick(fleet, false, kNoPrefix) == 0);  // (5 + 1) / 3 = (1 + 1) / 1: ties to the first
  serving::PoolRouter alike(m, {});
  fleet[1].queue.running = {2};
  CHECK(alike.pick(fleet, false, kNoPrefix) == 0);
}

TEST_CASE("serving seams: a queued workload arrives at once with exact or drawn lengths") {
  auto s = served_workload(serving::Arrivals::kQueued, 5, {100, 100}, {20, 20});
  serving::RequestSource fixed(s);
  const auto reqs = fixed.initial();
  REQUIRE(reqs.size() == 5);
  CHECK(lengths(reqs) == Lengths(5, {100, 20}));
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    CHECK(reqs[i].id == static_cast<int>(i));
    CHECK(reqs[i].arrival == SimTime{});
    CHECK(reqs[i].prompt == 100);
  }
  CHECK_FALSE(fixed.on_finish(at(1), 5));  // open arrivals: nothing follows a finish

  s.requests = 500;
  s.input = {10, 20};
  s.output = {1, 4};
  s.seed = 7;
  const auto a = serving::RequestSource(s).initial();
  // The first request by hand: the output is drawn before the input.
  std::mt19937_64 rng(7);
  const auto out0 = 1 + static_cast<std::int64_t>(serving::unit_draw(rng) * 4);
  const auto in0 = 10 + static_cast<std::int64_t>(serving::unit_draw(rng) * 11);
  CHECK(a[0].output == out0);
  CHECK(a[0].input == in0);
  std::int64_t in_lo = 99, in_hi = 0, out_lo = 99, out_hi = 0;
  for (const auto& r : a) {
    in_lo = std::min(in_lo, r.input), in_hi = std::max(in_hi, r.input);
    out_lo = std::min(out_lo, r.output), out_hi = std::max(out_hi, r.output);
    CHECK(r.prompt == r.input);
  }
  CHECK(in_lo == 10);  // 500 draws reach both ends
  CHECK(in_hi == 20);
  CHECK(out_lo == 1);
  CHECK(out_hi == 4);

  const auto again = serving::RequestSource(s).initial();
  s.seed = 8;
  const auto other = serving::RequestSource(s).initial();
  CHECK(lengths(a) == lengths(again));
  CHECK(lengths(a) != lengths(other));
}

TEST_CASE("serving seams: Poisson arrivals rise with a mean gap of 1/rate") {
  auto s = served_workload(serving::Arrivals::kPoisson, 5000, {8, 8}, {8, 8});
  s.rate = 4;
  s.seed = 3;
  const auto reqs = serving::RequestSource(s).initial();
  REQUIRE(reqs.size() == 5000);
  // Fixed lengths draw nothing: the first gap is the stream's first draw.
  std::mt19937_64 rng(3);
  CHECK(reqs[0].arrival == at(-std::log(1.0 - serving::unit_draw(rng)) / 4));
  bool rising = true;
  for (std::size_t i = 1; i < reqs.size(); ++i) rising = rising && reqs[i - 1].arrival <= reqs[i].arrival;
  CHECK(rising);
  const double gap = reqs.back().arrival.seconds() / 5000;
  CHECK(gap > 0.9 * 0.25);
  CHECK(gap < 1.1 * 0.25);
}

TEST_CASE("serving seams: a closed loop issues a request per finish until it has them all") {
  auto s = served_workload(serving::Arrivals::kClosedLoop, 5, {16, 16}, {4, 4});
  s.concurrency = 3;
  serving::RequestSource src(s);
  const auto first = src.initial();
  REQUIRE(first.size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(first[static_cast<std::size_t>(i)].id == i);
  const auto next = src.on_finish(at(2), 3);
  REQUIRE(next);
  CHECK(next->id == 3);
  CHECK(next->arrival == at(2));
  const auto last = src.on_finish(at(3), 4);
  REQUIRE(last);
  CHECK(last->id == 4);
  CHECK_FALSE(src.on_finish(at(4), 5));

  s.concurrency = 8;  // more clients than requests
  CHECK(serving::RequestSource(s).initial().size() == 5);
}

TEST_CASE("serving seams: a trace keeps its lines, arrival_order sorts them stably, unit_draw is from 0 up to 1") {
  auto s = served_workload(serving::Arrivals::kTrace, 0, {}, {});
  s.trace = {{0.5, 10, 2}, {0.1, 20, 3}, {0.5, 30, 4}, {0.0, 40, 5}};
  const auto reqs = serving::RequestSource(s).initial();
  REQUIRE(reqs.size() == 4);
  CHECK(reqs[1].arrival == at(0.1));
  CHECK(reqs[2].input == 30);
  CHECK(reqs[2].output == 4);
  CHECK(serving::arrival_order(reqs) == std::vector<int>{3, 1, 0, 2});

  std::mt19937_64 rng(11);
  double lo = 1, hi = 0, sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const double u = serving::unit_draw(rng);
    lo = std::min(lo, u), hi = std::max(hi, u), sum += u;
  }
  CHECK(lo >= 0.0);
  CHECK(hi < 1.0);
  CHECK(std::abs(sum / 10000 - 0.5) < 0.01);
}

TEST_CASE("serving seams: the step builder counts prefill chunks, decodes and MTP's draft") {
  serving::StepBuilder b(0, false);
  auto reqs = requests({{100, 8}});
  auto& r = reqs[0];
  b.prefill(r, 60);
  CHECK(b.mix.tokens == 60);
  CHECK(b.mix.sampled == 0);  // the prompt is not done: no token yet
  CHECK(b.mix.prefill_pairs == 60 * 30.5);
  r.prefilled = 60;
  b.prefill(r, 40);
  CHECK(b.mix.tokens == 100);
  CHECK(b.mix.sampled == 1);
  CHECK(b.mix.prefill_pairs == 5050);  // 100 * 101 / 2 causal pairs in all
  b.decode(7, 50);
  CHECK(b.mix.tokens == 101);
  CHECK(b.mix.sampled == 2);
  CHECK(b.mix.decode_context == 50);
  CHECK(b.mtp_mix.tokens == 0);
  CHECK(b.decodes() == 1);
  CHECK(batch(b) == Plan{{0, 60}, {0, 40}, {7, 0}});
  b.clear();
  CHECK(b.empty());
  CHECK(b.mix.tokens == 0);

  serving::StepBuilder m(128, true);
  m.decode(3, 50);
  m.decode(4, 10);
  CHECK(m.decode_tokens() == 2);
  CHECK(m.decodes() == 2);
  CHECK(m.mix.tokens == 4);
  CHECK(m.mix.sampled == 4);
  CHECK(m.mix.decode_context == 50 + 51 + 10 + 11);
  CHECK(m.mtp_mix.tokens == 2);
  CHECK(m.mtp_mix.sampled == 2);
  CHECK(m.mtp_mix.decode_context == 51 + 11);
  m.clear();
  CHECK(m.mtp_mix.tokens == 0);
  CHECK(m.mix.window == 128);  // the window outlives a clear
  CHECK(m.mtp_mix.window == 128);
}

TEST_CASE("serving seams: continuous batching spends one token budget, decodes first") {
  serving::StepBuilder step(0, false);
  SUBCASE("chunked: the budget and the chunk cap split the prompts") {
    serving::ContinuousScheduler sched({256, 100, 64}, true);
    auto reqs = requests({{150, 4}, {30, 4}, {30, 4}});
    auto q = queue(1000, {0, 1, 2});
    sched.plan(q, reqs, step);
    CHECK(batch(step) == Plan{{0, 64}, {1, 30}, {2, 6}});
    CHECK(step.mix.tokens == 100);
    CHECK(step.mix.sampled == 1);  // only request 1's prompt is done
    CHECK(q.running == std::vector<int>{0, 1, 2});
    CHECK(q.kv.free() == 1000 - 10 - 2 - 2);  // whole prompts' blocks on admission
  }
  SUBCASE("unchunked: a prompt longer than what is left waits, and those behind it") {
    serving::ContinuousScheduler sched({256, 100, 0}, true);
    auto reqs = requests({{60, 4}, {50, 4}, {30, 4}});
    auto q = queue(1000, {0, 1, 2});
    sched.plan(q, reqs, step);
    CHECK(batch(step) == Plan{{0, 60}});
    CHECK(q.waiting == std::deque<int>{1, 2});
  }
  SUBCASE("running decodes come before waiting prompts") {
    serving::ContinuousScheduler sched({256, 100, 0}, true);
    auto reqs = requests({{40, 4}, {20, 4}});
    auto q = queue(1000, {0});
    running(q, reqs[1], 1, 2);
    sched.plan(q, reqs, step);
    CHECK(batch(step) == Plan{{1, 0}, {0, 40}});
    CHECK(step.mix.tokens == 41);
    CHECK(step.mix.decode_context == 21);  // its 20 prompt tokens and the one it sampled
  }
  SUBCASE("max_batch caps the running set") {
    serving::ContinuousScheduler sched({2, 8192, 0}, true);
    auto reqs = requests({{10, 4}, {10, 4}, {10, 4}, {10, 4}});
    auto q = queue(1000, {0, 1, 2, 3});
    sched.plan(q, reqs, step);
    CHECK(q.running == std::vector<int>{0, 1});
    CHECK(q.waiting == std::deque<int>{2, 3});
    CHECK(step.plan.size() == 2);
  }
  SUBCASE("a request whose blocks do not fit waits") {
    serving::ContinuousScheduler sched({256, 8192, 0}, true);
    auto reqs = requests({{50, 4}, {40, 4}, {10, 4}});
    auto q = queue(5, {0, 1, 2});
    sched.plan(q, reqs, step);
    CHECK(q.running == std::vector<int>{0});
    CHECK(q.waiting == std::deque<int>{1, 2});
    CHECK(q.kv.free() == 1);
  }
  SUBCASE("requests in flight are not stepped, nor preempted: the one asking preempts itself") {
    serving::ContinuousScheduler sched({256, 8192, 0}, true);
    auto reqs = requests({{16, 4}, {20, 4}});
    auto q = queue(3, {});
    running(q, reqs[0], 1, 1);  // 17 tokens now: needs a second block
    running(q, reqs[1], 1, 2);
    reqs[1].in_flight = true;
    sched.plan(q, reqs, step);
    // No block for 0, and the only other request is in flight: 0 is the newest that can go, so
    // it preempts itself (vLLM's rule) and waits with its 17 tokens to recompute.
    CHECK(step.empty());
    CHECK(sched.preemptions() == 1);
    CHECK(q.running == std::vector<int>{1});
    CHECK(q.waiting == std::deque<int>{0});
    CHECK(reqs[0].blocks == 0);
    CHECK(reqs[0].prompt == 17);
    reqs[1].in_flight = false;
    step.clear();
    sched.plan(q, reqs, step);
    CHECK(batch(step) == Plan{{1, 0}});  // 0 needs 2 blocks again, 1 is free
    CHECK(q.waiting == std::deque<int>{0});
  }
  SUBCASE("a request asking for a block never preempts one already in this step's batch") {
    // Running 0 then 1, the pool full: 0 steps (it has room), 1 needs a block. The newest is 1
    // itself, so it goes, and 0, already in the batch, keeps its blocks.
    serving::ContinuousScheduler sched({256, 8192, 0}, true);
    auto reqs = requests({{10, 4}, {16, 4}});
    auto q = queue(2, {});
    running(q, reqs[0], 1, 1);  // 11 tokens in 1 block
    running(q, reqs[1], 1, 1);  // 17 tokens: needs a second block
    sched.plan(q, reqs, step);
    CHECK(batch(step) == Plan{{0, 0}});
    CHECK(q.running == std::vector<int>{0});
    CHECK(q.waiting == std::deque<int>{1});
    CHECK(reqs[0].blocks == 1);
    CHECK(sched.preemptions() == 1);
  }
}

TEST_CASE("serving seams: a decode with no block preempts the newest running request") {
  // 4 blocks, all held: 0 (16 tokens + 1 sampled: needs a second block), 1 (20 + 1), 2 (10 + 2).
  serving::ContinuousScheduler sched({256, 8192, 0}, true);
  serving::StepBuilder step(0, false);
  auto reqs = requests({{16, 4}, {20, 4}, {10, 4}, {8, 4}});
  auto q = queue(4, {3});
  running(q, reqs[0], 1, 1);
  running(q, reqs[1], 1, 2);
  running(q, reqs[2], 2, 1);
  sched.plan(q, reqs, step);
  CHECK(sched.preemptions() == 1);
  CHECK(q.running == std::vector<int>{0, 1});
  CHECK(q.waiting == std::deque<int>{2, 3});  // back at the head
  CHECK(reqs[2].blocks == 0);
  CHECK(reqs[2].prefilled == 0);
  CHECK(reqs[2].prompt == 12);  // its input and the two tokens it generated, recomputed
  CHECK(reqs[2].generated == 2);
  CHECK(reqs[0].blocks == 2);
  CHECK(q.kv.free() + reqs[0].blocks + reqs[1].blocks == 4);
  CHECK(batch(step) == Plan{{0, 0}, {1, 0}});  // 2 needs a block again: none is free
  CHECK(step.mix.decode_context == 17 + 21);
}

TEST_CASE("serving seams: admit_after_preempt false admits nothing in a step that preempted") {
  // Request 2 holds 3 blocks though its 12 tokens need 1 (as if reserved), so once preempted it
  // would fit again at once: only the rule keeps it out.
  const auto plan_with = [](bool admit, serving::ReplicaQueue& q, std::vector<serving::Request>& reqs) {
    serving::ContinuousScheduler sched({256, 8192, 0}, admit);
    serving::StepBuilder step(0, false);
    running(q, reqs[0], 1, 1);
    running(q, reqs[1], 1, 2);
    running(q, reqs[2], 2, 3);
    sched.plan(q, reqs, step);
    CHECK(sched.preemptions() == 1);
    return batch(step);
  };
  auto reqs = requests({{16, 4}, {20, 4}, {10, 4}});
  auto q = queue(6, {});
  CHECK(plan_with(true, q, reqs) == Plan{{0, 0}, {1, 0}, {2, 12}});
  CHECK(q.running == std::vector<int>{0, 1, 2});

  auto reqs2 = requests({{16, 4}, {20, 4}, {10, 4}});
  auto q2 = queue(6, {});
  CHECK(plan_with(false, q2, reqs2) == Plan{{0, 0}, {1, 0}});
  CHECK(q2.waiting == std::deque<int>{2});
  CHECK(q2.kv.free() == 2);
}

TEST_CASE("serving seams: a static batch reserves whole lengths and decodes until all are done") {
  serving::StaticScheduler sched({2, 8192, 0});
  CHECK(sched.keeps_finished());
  serving::StepBuilder step(0, false);
  auto reqs = requests({{20, 12}, {30, 3}, {10, 10}, {10, 10}});
  auto q = queue(20, {0, 1, 2});
  sched.plan(q, reqs, step);
  CHECK(q.running == std::vector<int>{0, 1});  // max_batch 2
  CHECK(reqs[0].blocks == 2);                  // blocks_for(20 + 12)
  CHECK(reqs[1].blocks == 3);                  // blocks_for(30 + 3)
  CHECK(batch(step) == Plan{{0, 20}, {1, 30}});
  CHECK(step.mix.sampled == 2);

  for (int id : {0, 1}) reqs[static_cast<std::size_t>(id)].prefilled = reqs[static_cast<std::size_t>(id)].prompt;
  reqs[0].generated = 5;
  reqs[1].generated = 3;
  reqs[1].finish = at(1);
  q.waiting.push_back(3);
  step.clear();
  sched.plan(q, reqs, step);
  // Request 0 still runs: nothing is admitted, and finished 1 decodes beside it.
  CHECK(batch(step) == Plan{{0, 0}, {1, 0}});
  CHECK(step.mix.decode_context == 25 + 33);
  CHECK(q.waiting == std::deque<int>{2, 3});
  CHECK(q.kv.free() == 15);

  reqs[0].generated = 12;
  reqs[0].finish = at(2);
  step.clear();
  sched.plan(q, reqs, step);
  // The batch is done: its blocks go back and the next one forms and prefills.
  CHECK(q.running == std::vector<int>{2, 3});
  CHECK(reqs[0].blocks == 0);
  CHECK(q.kv.free() == 20 - 2 - 2);
  CHECK(batch(step) == Plan{{2, 10}, {3, 10}});

  serving::ServingScenario s;
  s.scheduler = serving::Scheduler::kStatic;
  CHECK(serving::make_scheduler(s)->keeps_finished());
  s.scheduler = serving::Scheduler::kContinuous;
  CHECK_FALSE(serving::make_scheduler(s)->keeps_finished());
}

TEST_CASE("serving seams: nearest-rank percentiles and their summary") {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  CHECK(report::percentile(v, 50) == 50);
  CHECK(report::percentile(v, 90) == 90);
  CHECK(report::percentile(v, 99) == 99);
  CHECK(report::percentile(v, 100) == 100);
  CHECK(report::percentile(v, 0) == 1);
  CHECK(report::percentile({7}, 50) == 7);
  CHECK(report::percentile({}, 50) == 0);
  CHECK(report::percentile({40, 10, 30, 20}, 50) == 20);
  CHECK(report::percentile({40, 10, 30, 20}, 90) == 40);

  const auto p = report::summarise({4, 1, 3, 2});
  CHECK(p.count == 4);
  CHECK(p.mean == 2.5);
  CHECK(p.p50 == 2);
  CHECK(p.p90 == 4);
  CHECK(p.p99 == 4);
  CHECK(report::summarise({}).count == 0);
}

TEST_CASE("serving seams: the steady window between the 10% and 90% completions") {
  // `n` requests finishing at 1, 2, ..., n s, each finish in a step that produced 10 tokens.
  const auto finishing = [](int n) {
    serving::ServingLog out;
    out.gpus = 4;
    out.peak_in_service = 1;
    for (int i = 0; i < n; ++i) {
      out.requests.emplace_back().finish = at(i + 1);
      out.tokens_out.emplace_back(at(i + 1), 10);
    }
    return out;
  };
  CHECK_FALSE(report::steady_state(finishing(19), SimTime{}));  // under 20 requests
  CHECK(report::steady_state(finishing(20), SimTime{}));
  auto log = finishing(100);
  // From done[100 / 10] = 11 s to done[(900 + 9) / 10 - 1] = 90 s: 79 s holding the 79
  // completions (and token entries) after 11 s up to 90 s.
  const auto st = report::steady_state(log, at(1));
  REQUIRE(st);
  CHECK(st->from_s == doctest::Approx(10));  // from the first arrival, at 1 s
  CHECK(st->to_s == doctest::Approx(89));
  CHECK(st->output_tokens_per_s == doctest::Approx(790.0 / 79));
  CHECK(st->output_tokens_per_s_per_gpu == doctest::Approx(790.0 / 79 / 4));
  CHECK(st->requests_per_s == doctest::Approx(1.0));
  CHECK_FALSE(st->goodput_requests_per_s);  // no objectives
  // Every other request within the objectives: of the 79 in the window (i = 11..89, finishing at
  // i + 1 s), the 39 of even i; a request outside the window counts in neither.
  std::vector<char> met(100);
  for (std::size_t i = 0; i < met.size(); ++i) met[i] = i % 2 == 0 ? 1 : 0;
  const auto good = report::steady_state(log, at(1), &met);
  REQUIRE(good);
  REQUIRE(good->goodput_requests_per_s);
  CHECK(*good->goodput_requests_per_s == doctest::Approx(39.0 / 79));

  log.peak_in_service = 39;  // 79 completions >= 2 x 39: still a steady state
  CHECK(report::steady_state(log, SimTime{}));
  log.peak_in_service = 40;  // 79 < 80: a wave or two
  CHECK_FALSE(report::steady_state(log, SimTime{}));
}

TEST_CASE("serving seams: request metrics from the requests' times") {
  serving::ServingLog log;
  log.gpus = 2;
  auto reqs = requests({{100, 5}, {50, 1}, {30, 3}});
  // (arrival, first token, finish): TTFT 0.5, 0.2, 1; TPOT 2/4, none, 3/2; e2e 2.5, 0.2, 4.
  const double times[3][3] = {{0, 0.5, 2.5}, {1, 1.2, 1.2}, {2, 3, 6}};
  for (std::size_t i = 0; i < 3; ++i) {
    reqs[i].arrival = at(times[i][0]);
    reqs[i].first_token = at(times[i][1]);
    reqs[i].finish = at(times[i][2]);
    reqs[i].replica = static_cast<int>(i);
  }
  log.requests = reqs;
  serving::ServingResults r;
  r.gpus = 2;
  report::request_metrics(log, std::nullopt, std::nullopt, true, r);
  CHECK(r.requests == 3);
  CHECK(r.input_tokens == 180);
  CHECK(r.output_tokens == 9);
  CHECK(r.makespan_s == doctest::Approx(6));
  CHECK(r.ttft.count == 3);
  CHECK(r.ttft.mean == doctest::Approx(1.7 / 3));
  CHECK(r.ttft.p50 == doctest::Approx(0.5));
  CHECK(r.tpot.count == 2);  // the one-token request has no TPOT
  CHECK(r.tpot.mean == doctest::Approx(1.0));
  CHECK(r.tpot.p99 == doctest::Approx(1.5));
  CHECK(r.e2e.mean == doctest::Approx(6.7 / 3));
  CHECK(r.output_tokens_per_s == doctest::Approx(1.5));
  CHECK(r.output_tokens_per_s_per_gpu == doctest::Approx(0.75));
  CHECK(r.requests_per_s == doctest::Approx(0.5));
  CHECK_FALSE(r.goodput_requests_per_s);
  CHECK_FALSE(r.steady);  // 3 requests
  REQUIRE(r.request_spans.size() == 3);
  CHECK(r.request_spans[2].replica == 2);

  const auto goodput = [&](std::optional<double> ttft, std::optional<double> tpot) {
    serving::ServingResults g;
    g.gpus = 2;
    report::request_metrics(log, ttft, tpot, false, g);
    CHECK(g.request_spans.empty());
    REQUIRE(g.goodput_requests_per_s);
    return *g.goodput_requests_per_s;
  };
  CHECK(goodput(0.6, std::nullopt) == doctest::Approx(2.0 / 6));  // the third is 1 s to first
  CHECK(goodput(std::nullopt, 1.0) == doctest::Approx(2.0 / 6));  // the third is 1.5 s a token
  CHECK(goodput(0.6, 0.4) == doctest::Approx(1.0 / 6));           // only the one-token request
}

TEST_CASE("serving seams: the batch tracker reuses a released batch and forgets a task once taken") {
  serving::BatchTracker t;
  const auto a = t.acquire();
  const auto b = t.acquire();
  CHECK(a != b);
  t.at(a).plan = {{1, 0}, {2, 0}};
  t.release(a);
  CHECK(t.acquire() == a);          // the finished batch comes back...
  CHECK(t.at(a).plan.size() == 2);  // ...with its buffers (the run swaps the new plan in)
  CHECK(t.acquire() != b);
  const auto id = static_cast<workload::TaskId>(7);
  CHECK(t.take(id).kind == serving::Purpose::kNone);  // never tagged (beyond the table)
  t.tag(id, serving::Purpose::kResume, b);
  const auto p = t.take(id);
  CHECK(p.kind == serving::Purpose::kResume);
  CHECK(p.id == b);
  CHECK(t.take(id).kind == serving::Purpose::kNone);  // a task id is reused: the purpose is gone
}

TEST_CASE("serving seams: the run record sums KV use over time per stage, the peak batch and the tokens out") {
  serving::RunRecord rec(2, true);
  serving::Batch one;
  one.replica = 0;
  one.plan = {{1, 0}, {2, 0}, {3, 100}};
  one.start = SimTime::from_seconds(1.0);
  one.kv_used = 0.5;
  rec.started(one, 102);
  serving::Batch two;
  two.replica = 1;
  two.start = SimTime::from_seconds(1.5);
  two.kv_used = 0.25;
  rec.started(two, 1);
  rec.finished(one, SimTime::from_seconds(3.0), 2, 5);  // 2 s at half the blocks, over 2 stages
  rec.finished(two, SimTime::from_seconds(2.5), 1, 4);
  rec.produced(SimTime::from_seconds(2.5), 3);
  rec.produced(SimTime::from_seconds(3.0), 0);  // no token: no entry
  serving::ServingLog log;
  rec.into(log);
  CHECK(log.steps == 2);
  CHECK(log.kv_area == doctest::Approx(0.5 * 2.0 / 2 + 0.25 * 1.0));
  CHECK(log.kv_max == 0.5);
  CHECK(log.peak_in_service == 5 + 4);
  REQUIRE(log.tokens_out.size() == 1);
  CHECK(log.tokens_out[0].second == 3);
  REQUIRE(log.step_spans.size() == 2);
  CHECK(log.step_spans[0].start == doctest::Approx(1.0));
  CHECK(log.step_spans[0].end == doctest::Approx(3.0));
  CHECK(log.step_spans[0].tokens == 102);
  CHECK(log.step_spans[0].sequences == 3);
  CHECK(log.step_spans[1].replica == 1);
}

TEST_CASE("serving seams: a guarded decode stage may run alone until the earliest KV transfer could start") {
  const auto at = [](double s) { return SimTime::from_seconds(s); };
  std::vector<serving::Replica> reps(3);
  reps[0].index = 0;  // a prefill replica, idle
  reps[0].prefill_only = true;
  reps[0].stages.push_back({.ranks = {0}});
  reps[1].index = 1;  // another prefill replica, busy
  reps[1].prefill_only = true;
  reps[1].stages.push_back({.ranks = {1}, .isolated = true});
  reps[2].index = 2;  // the decode replica asking
  reps[2].decode_only = true;
  reps[2].stages.push_back({.ranks = {2, 3}, .guarded = true});
  serving::BatchTracker batches;
  const auto b = batches.acquire();
  batches.at(b).busy_until = at(4.0);  // its running task ends then; no kernels left after it
  reps[1].inflight = 1;
  reps[1].batch = b;
  // The busy replica's step ends at 4 s at the earliest; the idle one starts a step at the next
  // arrival: the earlier of the two bounds.
  CHECK(serving::kv_transfer_bound(at(1.0), reps[2], reps, batches, at(3.0), false) == at(3.0));
  CHECK(serving::kv_transfer_bound(at(1.0), reps[2], reps, batches, at(6.0), false) == at(4.0));
  CHECK(serving::kv_transfer_bound(at(1.0), reps[2], reps, batches, std::nullopt, false) == at(4.0));
  // A closed loop's next request may come at any step's end: no room.
  CHECK(serving::kv_transfer_bound(at(1.0), reps[2], reps, batches, at(6.0), true) == at(1.0));
  // A stage that is not guarded never waits on transfers.
  reps[2].stages.front().guarded = false;
  CHECK(serving::kv_transfer_bound(at(1.0), reps[2], reps, batches, at(6.0), false) == at(1.0));
}

TEST_CASE("serving seams: a finished step settles its requests in plan order, prompts to decode and answers done") {
  using Kind = serving::StepSettled::Action::Kind;
  std::vector<serving::Request> reqs(5);
  for (int i = 0; i < 5; ++i) {
    reqs[i].id = i;
    reqs[i].prompt = 100;
    reqs[i].output = 3;
  }
  reqs[1].prefilled = 60;                          // its last chunk: the prompt is done
  reqs[2].prefilled = 100, reqs[2].generated = 2;  // its last token
  reqs[3].prefilled = 100, reqs[3].generated = 1;  // a middle token
  reqs[4].prefilled = 100, reqs[4].generated = 3;  // static batching's padding: done before
  reqs[4].finish = at(1.0);
  const std::vector<serving::Planned> plan{{0, 40}, {1, 40}, {2, 0}, {3, 0}, {4, 0}};
  std::mt19937_64 rng(7);
  serving::StepSettled out;
  serving::settle_step(plan, reqs, at(2.0), false, 0.0, rng, out);
  CHECK(reqs[0].prefilled == 40);  // a chunk short of the prompt: no token
  CHECK(reqs[0].generated == 0);
  CHECK(reqs[1].generated == 1);  // the chunk that finishes the prompt samples the first token
  CHECK(reqs[1].first_token == at(2.0));
  CHECK(reqs[3].generated == 2);
  CHECK(reqs[4].finish == at(1.0));  // padding left alone
  CHECK(out.produced == 3);
  REQUIRE(out.actions.size() == 1);
  CHECK(out.actions[0].kind == Kind::kComplete);
  CHECK(out.actions[0].req == 2);
  CHECK(reqs[2].finish == at(2.0));
  // On a prefill-only replica the finished prompt moves to decode; a one-token answer completes there.
  std::vector<serving::Request> p(2);
  for (int i = 0; i < 2; ++i) {
    p[i].id = i;
    p[i].prompt = 50;
    p[i].output = i == 0 ? 4 : 1;
  }
  serving::settle_step({{1, 50}, {0, 50}}, p, at(3.0), true, 0.0, rng, out);
  REQUIRE(out.actions.size() == 2);
  CHECK(out.actions[0].kind == Kind::kComplete);  // the plan's order, not the ids'
  CHECK(out.actions[0].req == 1);
  CHECK(out.actions[1].kind == Kind::kSendKv);
  CHECK(out.actions[1].req == 0);
  CHECK(p[0].first_token == at(3.0));
  CHECK_FALSE(p[0].finished());
  // MTP: every draft accepted (probability 1) makes two tokens a step, never past the answer's length.
  std::vector<serving::Request> m(1);
  m[0].prompt = 10, m[0].prefilled = 10, m[0].output = 4, m[0].generated = 1;
  serving::settle_step({{0, 0}}, m, at(4.0), false, 1.0, rng, out);
  CHECK(m[0].generated == 3);
  CHECK(out.produced == 2);
  serving::settle_step({{0, 0}}, m, at(5.0), false, 1.0, rng, out);
  CHECK(m[0].generated == 4);
  CHECK(out.produced == 1);
  CHECK(m[0].finish == at(5.0));
}

TEST_CASE("serving seams: the arrival clock admits requests in order when due, and keeps one timer, the earliest") {
  std::vector<serving::Request> reqs(3);
  reqs[0].arrival = at(2.0), reqs[1].arrival = at(1.0), reqs[2].arrival = at(1.0);
  serving::ArrivalClock clock;
  clock.start(serving::arrival_order(reqs));  // 1, 2 (stable at equal times), then 0
  CHECK_FALSE(clock.pop_due(at(0.5), reqs));
  CHECK(*clock.next_at(reqs) == at(1.0));
  CHECK(*clock.pop_due(at(1.0), reqs) == 1);
  CHECK(*clock.pop_due(at(1.0), reqs) == 2);
  CHECK_FALSE(clock.pop_due(at(1.0), reqs));
  CHECK(*clock.next_at(reqs) == at(2.0));
  // One timer: a later one is not needed while an earlier one is pending; an earlier one is.
  CHECK(clock.arm(at(2.0)));
  CHECK_FALSE(clock.arm(at(2.5)));
  CHECK_FALSE(clock.arm(at(2.0)));
  CHECK(clock.arm(at(1.5)));
  clock.fired(at(1.0));  // not due yet: still pending
  CHECK_FALSE(clock.arm(at(1.7)));
  clock.fired(at(1.5));
  CHECK(clock.arm(at(1.7)));
  // A closed loop's request joins after the known ones, and is due when added.
  CHECK(*clock.pop_due(at(2.0), reqs) == 0);
  reqs.push_back({});
  reqs.back().id = 3;
  reqs.back().arrival = at(2.0);
  clock.add(3);
  CHECK(*clock.pop_due(at(2.0), reqs) == 3);
  CHECK_FALSE(clock.next_at(reqs));
}
