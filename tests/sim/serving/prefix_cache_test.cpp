// Prefix caching (issue 28, item 1: the KV cache's prefix reuse, and a prefix-aware router): the
// pool's arithmetic by hand (what is cached, pinned, counted free and evicted), a scheduler fed a
// queue, the router's choices, and whole runs (reuse lowers time to first token; with caching off
// a workload that shares prefixes runs exactly as one that does not).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/serving/batch_scheduler.hpp"
#include "sim/serving/kv_cache.hpp"
#include "sim/serving/request_source.hpp"
#include "sim/serving/router.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"
#include "tests/support/serving_queues.hpp"

using namespace cs;

namespace {

constexpr serving::PrefixReuse kBlocks{true, false}, kTokens{true, true};

/// A fresh request of `input` tokens whose first `prefix` belong to shared prefix `group`.
serving::Request asking(int id, std::int64_t input, int group, std::int64_t prefix) {
  serving::Request r;
  r.id = id;
  r.input = r.prompt = input;
  r.output = 10;
  r.prefix_group = group;
  r.prefix_tokens = prefix;
  return r;
}

/// `r` admitted to hold its prompt, and scheduled whole (its prefix then cached).
void computed(serving::KvCache& kv, serving::Request& r) {
  kv.admit_for(r, r.prompt);
  kv.publish(r, r.prompt);
}

serving::ServingScenario infer_scenario(const std::string& engine, const std::string& workload) {
  const std::string text = R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100",
      "parallel": {"tp": 1, "replicas": 2}, "engine": {)" +
                           engine + R"(}, "workload": )" + workload + "}";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

}  // namespace

TEST_CASE("prefix cache: a computed prefix is shared in whole blocks, pinned while used, free once not") {
  serving::KvCache kv(100, 16, 0, 0, kBlocks);
  auto a = asking(0, 120, 7, 50);  // 50 prefix tokens: 3 whole blocks (48 tokens) can be shared
  CHECK(kv.reusable(a) == 0);      // nothing cached yet
  CHECK(kv.admit_cost(a, 120) == 8);
  computed(kv, a);
  CHECK(kv.cached_prefixes() == 1);
  CHECK(a.blocks == 5);  // 8 blocks for 120 tokens: 3 moved to the pool's cache, pinned by a
  CHECK(a.shared_blocks == 3);
  CHECK(kv.free() == 92);

  auto b = asking(1, 200, 7, 50);
  CHECK(kv.reusable(b) == 48);         // whole blocks only
  CHECK(kv.admit_cost(b, 200) == 10);  // 13 blocks for 200 tokens, 3 of them shared (pinned already)
  kv.admit_for(b, 200);
  CHECK(b.prefilled == 48);
  CHECK(b.reused == 48);
  CHECK(b.blocks == 10);
  CHECK(kv.more_for(b, 208) == 0);  // 13 blocks hold 208 tokens: its shared ones count
  CHECK(kv.more_for(b, 209) == 1);
  CHECK(kv.free() == 82);

  // Another group's request reuses nothing; a request of no group neither.
  CHECK(kv.reusable(asking(2, 200, 8, 50)) == 0);
  CHECK(kv.reusable(asking(3, 200, -1, 0)) == 0);

  // Released by both, the prefix's blocks count as free and stay cached: a later request reuses
  // them, paying their blocks back (they are pinned again).
  kv.release(a);
  kv.release(b);
  CHECK(kv.free() == 100);
  CHECK(kv.used() == doctest::Approx(0.0));
  CHECK(kv.cached_prefixes() == 1);
  auto c = asking(4, 64, 7, 50);
  CHECK(kv.reusable(c) == 48);
  CHECK(kv.admit_cost(c, 64) == 1 + 3);  // its own block and the prefix's 3, pinned again
  kv.admit_for(c, 64);
  CHECK(kv.free() == 96);
  kv.release(c);
  CHECK(kv.free() == 100);
}

TEST_CASE(
    "prefix cache: the prompt's last token is always computed, and reuse is per token where the engine "
    "reuses partial blocks") {
  serving::KvCache blocks(100, 16, 0, 0, kBlocks), tokens(100, 16, 0, 0, kTokens);
  for (auto* kv : {&blocks, &tokens}) {
    auto first = asking(0, 100, 1, 50);
    computed(*kv, first);
  }
  // A prompt of 51 tokens whose 50 are the prefix: at most 50 reused, the 51st computed.
  CHECK(blocks.reusable(asking(1, 51, 1, 50)) == 48);
  CHECK(tokens.reusable(asking(1, 51, 1, 50)) == 50);
  // A prompt that is the prefix's 33 tokens and 1 more, against the cached 50: 33 at most.
  CHECK(blocks.reusable(asking(2, 34, 1, 33)) == 32);
  CHECK(tokens.reusable(asking(2, 34, 1, 33)) == 33);
  // Per token, the partial block's tokens are copied into the request's own block: 3 shared.
  auto r = asking(3, 120, 1, 50);
  CHECK(tokens.admit_cost(r, 120) == 5);
  tokens.admit_for(r, 120);
  CHECK(r.prefilled == 50);
  CHECK(r.shared_blocks == 3);
  // Shorter than a block, a prefix is not cached at all.
  serving::KvCache small(100, 16, 0, 0, kBlocks);
  auto tiny = asking(0, 100, 5, 15);
  computed(small, tiny);
  CHECK(small.cached_prefixes() == 0);
  CHECK(tiny.blocks == 7);
  // Off, nothing is cached or reused.
  serving::KvCache off(100, 16, 0, 0);
  auto x = asking(0, 100, 1, 50);
  computed(off, x);
  CHECK(off.cached_prefixes() == 0);
  CHECK(off.reusable(asking(1, 100, 1, 50)) == 0);
}

TEST_CASE("prefix cache: unpinned prefixes are evicted least recently used first, pinned ones never") {
  serving::KvCache kv(20, 16, 0, 0, kBlocks);
  auto a = asking(0, 80, 1, 64), b = asking(1, 80, 2, 64), c = asking(2, 80, 3, 64);  // 4 shared blocks each
  computed(kv, a);
  computed(kv, b);
  computed(kv, c);
  CHECK(kv.free() == 5);
  kv.release(a);  // prefix 1 idle first
  kv.release(b);  // then prefix 2
  CHECK(kv.free() == 15);
  CHECK(kv.cached_prefixes() == 3);
  // 15 free, 8 of them idle cached prefixes: a request of 8 blocks evicts the prefix idle longest
  // (group 1), and no more.
  auto d = asking(3, 128, -1, 0);
  kv.admit_for(d, 128);
  CHECK(kv.evictions() == 1);
  CHECK(kv.cached_prefixes() == 2);
  CHECK(kv.reusable(asking(4, 80, 1, 64)) == 0);
  CHECK(kv.reusable(asking(5, 80, 2, 64)) == 64);
  // Prefix 3 is pinned by c: a request needing every free block evicts prefix 2 and no more.
  CHECK(kv.free() == 7);
  auto e = asking(6, 112, -1, 0);
  CHECK(kv.has(kv.admit_cost(e, 112)));
  kv.admit_for(e, 112);
  CHECK(kv.evictions() == 2);
  CHECK(kv.free() == 0);
  CHECK(kv.reusable(asking(7, 80, 3, 64)) == 64);
}

TEST_CASE("prefix cache: a conversation's next turn reads its history and the cached prefix grows to it") {
  serving::KvCache kv(100, 16, 0, 0, kBlocks);
  auto turn1 = asking(0, 300, 9, 200);  // a system prompt and the first question: 200 shared tokens
  computed(kv, turn1);
  CHECK(turn1.shared_blocks == 12);     // 192 tokens in whole blocks
  auto turn2 = asking(1, 700, 9, 600);  // the history so far (600 tokens) and a new question
  kv.admit_for(turn2, 700);
  CHECK(turn2.reused == 192);
  kv.publish(turn2, 700);
  CHECK(turn2.shared_blocks == 37);  // 592 tokens: the cached prefix grew by 25 blocks of its own
  CHECK(turn2.blocks == 44 - 37);
  auto turn3 = asking(2, 1000, 9, 900);
  CHECK(kv.reusable(turn3) == 592);
  // Every block is held once: turn 1's own 7, turn 2's own 7, the group's 37.
  CHECK(kv.free() == 100 - 7 - 7 - 37);
  kv.release(turn1);
  kv.release(turn2);
  CHECK(kv.free() == 100);
  // A request of the group with a shorter prefix reads only its own.
  CHECK(kv.reusable(asking(3, 300, 9, 100)) == 96);
}

TEST_CASE("prefix cache: the continuous scheduler admits a request with its cached prefix as prefilled") {
  auto reqs = std::vector<serving::Request>{asking(0, 300, 4, 256), asking(1, 300, 4, 256)};
  serving::ReplicaQueue q;
  q.kv = serving::KvCache(100, 16, 0, 0, kBlocks);
  q.waiting = {0};
  serving::ContinuousScheduler sched({8, 1000, 0}, true);
  serving::StepBuilder step(0, false);
  sched.plan(q, reqs, step);
  CHECK(test::batch(step) == std::vector<std::pair<int, std::int64_t>>{{0, 300}});
  q.kv.publish(reqs[0], 300);  // what the step runner does once the step is planned
  reqs[0].prefilled = 300;     // and the step settled
  // The second request's prompt is 44 tokens of its own after the 256 cached: it fits a budget
  // of 100 tokens that its whole prompt would not.
  q.waiting = {1};
  serving::ContinuousScheduler tight({8, 101, 0}, true);
  step.clear();
  tight.plan(q, reqs, step);
  CHECK(test::batch(step) == std::vector<std::pair<int, std::int64_t>>{{0, 0}, {1, 44}});
  CHECK(reqs[1].reused == 256);
}

TEST_CASE(
    "prefix-aware router: a prefix goes back where it went, a new one to the least loaded, all to the "
    "least loaded when out of balance") {
  serving::PrefixAwareRouter router;
  std::vector<serving::ReplicaLoad> pool{{0, 3}, {1, 1}, {2, 2}};
  const auto g1 = asking(0, 100, 1, 50), g2 = asking(1, 100, 2, 50), none = asking(2, 100, -1, 0);
  CHECK(router.pick(pool, g1) == 1);  // new: the least loaded
  pool[1].load = 5;
  CHECK(router.pick(pool, g1) == 1);  // it holds prefix 1, though no longer the lightest
  CHECK(router.pick(pool, g2) == 2);  // new: the least loaded now
  CHECK(router.pick(pool, none) == 2);
  // Out of balance (70 more than the least, and above 1.5 times it): the least loaded, which then
  // holds prefix 1 too.
  pool = {{0, 80}, {1, 90}, {2, 10}};
  CHECK(router.pick(pool, g1) == 2);
  pool = {{0, 2}, {1, 12}, {2, 10}};
  CHECK(router.pick(pool, g1) == 2);  // two hold it: the lighter of them, not the lightest of all
}

TEST_CASE(
    "prefix cache, whole runs: reuse lowers time to first token, and off a shared-prefix workload runs as one "
    "without") {
  const std::string shared =
      R"({"input_len": 2200, "output_len": 64, "rate": 40, "requests": 300, "shared_prefix": {"tokens": 2000, "groups": 4}})";
  const std::string plain = R"({"input_len": 2200, "output_len": 64, "rate": 40, "requests": 300})";
  const auto on = test::serve(infer_scenario(R"("preset": "vllm")", shared));
  const auto off = test::serve(infer_scenario(R"("preset": "vllm", "prefix_caching": false)", shared));
  const auto none = test::serve(infer_scenario(R"("preset": "vllm")", plain));
  REQUIRE(on.prefix_cache.has_value());
  REQUIRE(off.prefix_cache.has_value());
  CHECK_FALSE(none.prefix_cache.has_value());
  // With 4 prefixes over 2 replicas, every prefix is computed at most a few times per replica.
  CHECK(on.prefix_cache->hit_rate() > 0.8);
  CHECK(on.prefix_cache->reused_tokens + on.prefix_cache->computed_tokens == 300 * 2200);
  CHECK(on.ttft.mean < 0.5 * off.ttft.mean);
  CHECK(off.prefix_cache->reused_tokens == 0);
  CHECK(off.prefix_cache->computed_tokens == 300 * 2200);
  // Off: the same lengths and arrivals as the plain workload (the prefix groups are a stream of
  // their own), so the same run.
  CHECK(off.makespan_s == none.makespan_s);
  CHECK(off.ttft.p90 == none.ttft.p90);
  CHECK(off.tpot.p50 == none.tpot.p50);
  CHECK(off.steps == none.steps);
  // Deterministic.
  const auto again = test::serve(infer_scenario(R"("preset": "vllm")", shared));
  CHECK(again.makespan_s == on.makespan_s);
  CHECK(again.prefix_cache->reused_tokens == on.prefix_cache->reused_tokens);
}

TEST_CASE(
    "prefix cache, whole runs: with many prefixes over many replicas, the prefix-aware router reuses more "
    "than round robin") {
  const std::string many =
      R"({"input_len": 3000, "output_len": 32, "rate": 30, "requests": 400, "shared_prefix": {"tokens": 2800, "groups": 32}})";
  const auto turn = test::serve(infer_scenario(R"("preset": "sglang", "router": "round_robin")", many));
  const auto aware = test::serve(infer_scenario(R"("preset": "sglang", "router": "prefix_aware")", many));
  REQUIRE(turn.prefix_cache.has_value());
  REQUIRE(aware.prefix_cache.has_value());
  CHECK(turn.prefix_cache->per_token);  // SGLang's radix cache
  CHECK(aware.prefix_cache->hit_rate() > turn.prefix_cache->hit_rate());
  CHECK(aware.prefix_cache->computed_tokens < turn.prefix_cache->computed_tokens);
}

TEST_CASE("prefix cache: a shared prefix as long as a prompt, or given with a trace, is refused at its field") {
  // The first problem's pointer, for a workload with this shared_prefix ("" when accepted).
  const auto refused_at = [](const std::string& prefix) -> std::string {
    try {
      (void)infer_scenario("", R"({"input_len": 500, "output_len": 10, "rate": "inf", "requests": 4,
          "shared_prefix": )" + prefix +
                                   "}");
    } catch (const InputError& e) {
      return e.problems().front().pointer;
    }
    return "";
  };
  CHECK(refused_at(R"({"tokens": 500})") == "/workload/shared_prefix/tokens");  // as long as the prompt
  CHECK(refused_at(R"({"groups": 3})") == "/workload/shared_prefix/tokens");    // no tokens
  CHECK(refused_at(R"({"tokens": 499})").empty());
  std::istringstream csv(
      "arrival_s,input_tokens,output_tokens,prefix_group,prefix_tokens\n0,100,10,3,40\n1,100,10,,\n");
  const auto rows = config::read_trace(csv, "t.csv", false, 0);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].prefix_group == 3);
  CHECK(rows[0].prefix_tokens == 40);
  CHECK(rows[1].prefix_group == -1);
  std::istringstream bad(
      R"({"arrival_s": 0, "input_tokens": 100, "output_tokens": 10, "prefix_group": 1, "prefix_tokens": 100})");
  try {
    (void)config::read_trace(bad, "t.jsonl", true, 0);
    FAIL("a prefix as long as the row's prompt was accepted");
  } catch (const InputError& e) {
    CHECK(e.problems().front().pointer == "/prefix_tokens");
  }
  std::istringstream half(R"({"arrival_s": 0, "input_tokens": 100, "output_tokens": 10, "prefix_group": 1})");
  CHECK_THROWS_AS((void)config::read_trace(half, "t.jsonl", true, 0), InputError);
}
