#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "models/ops/serving_ops.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/serving/serving_sim.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"

using namespace cs;

namespace {

serving::ServingScenario make_serving(const std::string& workload, const std::string& extra = "",
                                      const std::string& model = "llama3.1-8b", int tp = 1,
                                      const std::string& cluster = "hgx-h100") {
  const std::string text = R"({"kind": "infer", "model": ")" + model + R"(", "cluster": ")" + cluster +
                           R"(", "parallel": {"tp": )" + std::to_string(tp) + R"(}, "workload": )" + workload + extra +
                           "}";
  return config::parse_serving(config::parse_text(text, "test.json"), test::catalog());
}

}  // namespace

TEST_CASE("latency never falls as the arrival rate rises (Poisson, same seed)") {
  double prev_e2e = 0, prev_ttft = 0;
  for (double rate : {2.0, 8.0, 32.0, 128.0}) {
    const auto r = test::serve(make_serving(R"({"input_len": 512, "output_len": 256, "rate": )" + std::to_string(rate) +
                                            R"(, "requests": 400})"));
    CHECK(r.e2e.mean >= prev_e2e);
    CHECK(r.ttft.mean >= prev_ttft);
    prev_e2e = r.e2e.mean;
    prev_ttft = r.ttft.mean;
  }
}

TEST_CASE("percentiles are ordered and throughput adds up") {
  const auto r =
      test::serve(make_serving(R"({"input_len": "100-900", "output_len": "50-400", "rate": 20, "requests": 300})"));
  for (const auto& p : {r.ttft, r.tpot, r.e2e}) {
    CHECK(p.p99 >= p.p90);
    CHECK(p.p90 >= p.p50);
  }
  CHECK(r.output_tokens_per_s == doctest::Approx(static_cast<double>(r.output_tokens) / r.makespan_s));
  CHECK(r.output_tokens_per_s_per_gpu == doctest::Approx(r.output_tokens_per_s));
}

TEST_CASE("every request's TTFT is at least its prefill compute time alone") {
  const auto alone = test::serve(make_serving(R"({"input_len": 2048, "output_len": 8, "rate": "inf", "requests": 1})"));
  const double prefill = alone.ttft.mean;
  CHECK(prefill > 0);
  const auto busy =
      test::serve(make_serving(R"({"input_len": 2048, "output_len": 64, "rate": 50, "requests": 200})"), true);
  REQUIRE(busy.request_spans.size() == 200);
  for (const auto& q : busy.request_spans) CHECK(q.first_token - q.arrival >= prefill * (1 - 1e-9));
}

TEST_CASE("when the KV cache runs out, requests are preempted and recomputed, and all still finish") {
  // Llama-3.1-70B in bf16 on two H100s leaves a few GiB of KV per GPU: long outputs must preempt.
  const auto s = make_serving(R"({"input_len": 1024, "output_len": 1024, "rate": "inf", "requests": 200})",
                              R"(, "engine": {"max_batch": 512})", "llama3.1-70b", 2);
  const auto r = test::serve(s);
  CHECK(r.preemptions > 0);
  CHECK(r.requests == 200);
  CHECK(r.kv_utilisation_max <= 1.0);
}

TEST_CASE("continuous batching beats static batching when output lengths vary") {
  const std::string w = R"({"input_len": 256, "output_len": "16-1024", "rate": "inf", "requests": 256})";
  const auto cont = test::serve(make_serving(w, R"(, "engine": {"max_batch": 64})"));
  const auto stat = test::serve(make_serving(w, R"(, "engine": {"max_batch": 64, "scheduler": "static"})"));
  CHECK(cont.output_tokens == stat.output_tokens);
  CHECK(cont.output_tokens_per_s > 1.3 * stat.output_tokens_per_s);
}

TEST_CASE("a closed loop keeps its concurrency and runs the requested number of requests") {
  const auto r =
      test::serve(make_serving(R"({"input_len": 128, "output_len": 128, "concurrency": 16, "requests": 100})"));
  CHECK(r.requests == 100);
  CHECK(r.ttft.p50 < 0.2);  // never more than 16 in flight: no queue builds up
}

TEST_CASE("prefill/decode disaggregation runs every request through both pools") {
  const auto r = test::serve(make_serving(R"({"input_len": 1024, "output_len": 128, "rate": 20, "requests": 100})",
                                          R"(, "disaggregate": {"prefill": 1, "decode": 1})"));
  CHECK(r.requests == 100);
  CHECK(r.gpus == 2);
  CHECK(r.output_tokens == 100 * 128);
}

TEST_CASE("replicas behind a router multiply throughput under full load") {
  const std::string w = R"({"input_len": 512, "output_len": 256, "rate": "inf", "requests": 800})";
  const auto one = test::serve(make_serving(w));
  const auto s4 = config::parse_serving(
      config::parse_text(
          R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1, "replicas": 4},
        "engine": {"router": "least_loaded"}, "workload": )" +
              w + "}",
          "t.json"),
      test::catalog());
  const auto r4 = test::serve(s4);
  CHECK(r4.output_tokens_per_s > 3.0 * one.output_tokens_per_s);
  CHECK(r4.output_tokens_per_s_per_gpu <= one.output_tokens_per_s_per_gpu * 1.05);
}

TEST_CASE("the same serving input gives byte-identical JSON apart from run_info") {
  const auto s =
      make_serving(R"({"input_len": "64-512", "output_len": "16-256", "rate": 40, "requests": 200, "seed": 7})");
  auto a = report::serving_json(test::serve(s));
  auto b = report::serving_json(test::serve(s));
  a.erase("run_info");
  b.erase("run_info");
  CHECK(a.dump() == b.dump());
}

TEST_CASE("a trace file drives arrivals and lengths") {
  const std::string path = "/tmp/cs-trace-test.csv";
  {
    std::ofstream f(path);
    f << "arrival_s,input_tokens,output_tokens\n0.0,100,10\n0.5,200,20\n1.0,300,30\n";
  }
  const auto r = test::serve(make_serving(R"({"trace_file": ")" + path + R"("})"));
  CHECK(r.requests == 3);
  CHECK(r.input_tokens == 600);
  CHECK(r.output_tokens == 60);
}

TEST_CASE("pipeline-parallel serving: stages hold their layers' weights and KV, PP batches run in flight") {
  auto run = [](int pp) {
    const auto s = config::parse_serving(
        config::parse_text(
            R"({"kind": "infer", "model": "llama3.1-70b", "cluster": "hgx-h100", "parallel": {"tp": 2, "pp": )" +
                std::to_string(pp) + R"(}, "quantization": {"weights": "fp8"},
          "workload": {"input_len": 512, "output_len": 128, "rate": "inf", "requests": 300}})",
            "t.json"),
        test::catalog());
    return test::serve(s);
  };
  const auto one = run(1);
  const auto two = run(2);
  CHECK(two.gpus == 4);
  CHECK(two.requests == 300);
  CHECK(two.memory.weights < 0.6 * one.memory.weights);
  CHECK(two.kv_blocks > 2 * one.kv_blocks);
  CHECK(two.output_tokens_per_s > one.output_tokens_per_s);
  CHECK_THROWS_AS(
      (void)config::parse_serving(config::parse_text(R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100",
      "parallel": {"tp": 1, "pp": 2}, "engine": {"scheduler": "static"},
      "workload": {"input_len": 8, "output_len": 8, "rate": "inf", "requests": 2}})",
                                                     "t.json"),
                                  test::catalog()),
      InfeasibleError);
}

TEST_CASE("disaggregated pools can have their own TP and PP") {
  const auto s = config::parse_serving(
      config::parse_text(R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1},
        "disaggregate": {"prefill": 2, "decode": 1, "decode_tp": 2, "decode_pp": 2},
        "workload": {"input_len": 1024, "output_len": 64, "rate": 20, "requests": 100}})",
                         "t.json"),
      test::catalog());
  CHECK(s.gpus == 6);
  const auto r = test::serve(s);
  CHECK(r.requests == 100);
  CHECK(r.output_tokens == 6400);
}

namespace {

/// pcie-h100x8 with its GPUs numbered alternately across the two sockets (as a board's PCI order
/// or CUDA_VISIBLE_DEVICES can make them): TP2 replicas {0,1} and {2,3} then both cross the socket
/// link, and both go through the same PCIe switch uplinks (plx0 and plx2).
net::ClusterSpec interleaved_sockets() {
  auto j = nlohmann::json::parse(test::slurp(test::data_path("scenarios/clusters/pcie-h100x8.json")));
  const std::vector<std::string> sw{"plx0", "plx2", "plx0", "plx2", "plx1", "plx3", "plx1", "plx3"};
  for (std::size_t g = 0; g < sw.size(); ++g) {
    REQUIRE(j["links"][g]["a"] == "gpu" + std::to_string(g));
    j["links"][g]["b"] = sw[g];
  }
  return test::cluster_from_json(j.dump());
}

serving::ServingScenario tp2_replicas(int replicas, std::int64_t requests) {
  return config::parse_serving(config::parse_text(R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "pcie-h100x8",
        "parallel": {"tp": 2, "replicas": )" + std::to_string(replicas) +
                                                      R"(}, "workload": {"input_len": 512, "output_len": 128,
        "rate": "inf", "requests": )" + std::to_string(requests) +
                                                      "}}",
                                                  "t.json"),
                               test::catalog());
}

}  // namespace

TEST_CASE("TP replicas whose all-reduces cross the same socket link are slower than one replica at the same load") {
  // 64 requests per replica, all queued; round robin gives each replica the same requests.
  auto run = [](int replicas, bool interleaved) {
    auto s = tp2_replicas(replicas, 64 * replicas);
    if (interleaved) s.cluster = interleaved_sockets();
    return test::serve(s);
  };
  // The shipped box keeps each pair under its own PCIe switch: two replicas share no link and each
  // runs exactly as one alone.
  const auto one = run(1, false);
  const auto two = run(2, false);
  CHECK(two.makespan_s == doctest::Approx(one.makespan_s).epsilon(1e-12));
  CHECK(two.tpot.mean == doctest::Approx(one.tpot.mean).epsilon(1e-12));
  // Interleaved: each pair's ring crosses the socket link (37 GB/s, host-staged); two replicas'
  // all-reduces share it and the switch uplinks, so every step's all-reduces take longer.
  const auto one_x = run(1, true);
  const auto two_x = run(2, true);
  MESSAGE("TPOT one replica " << one_x.tpot.mean * 1e3 << " ms, two " << two_x.tpot.mean * 1e3 << " ms; per-replica "
                              << one_x.output_tokens_per_s << " vs " << two_x.output_tokens_per_s / 2 << " tokens/s");
  CHECK(one_x.tpot.mean > one.tpot.mean);  // the socket link is slower than a PCIe switch
  CHECK(two_x.tpot.mean > 1.1 * one_x.tpot.mean);
  CHECK(two_x.output_tokens_per_s < 2 * one_x.output_tokens_per_s / 1.1);
}

TEST_CASE(
    "the fast path is exact: a stage whose collectives share no link gives the same run as every collective through "
    "the flow model") {
  const std::vector<serving::ServingScenario> cases{
      make_serving(R"({"input_len": "64-1024", "output_len": "16-256", "rate": 30, "requests": 150, "seed": 3})", "",
                   "llama3.1-8b", 2),
      make_serving(R"({"input_len": 512, "output_len": "16-300", "rate": "inf", "requests": 100})",
                   R"(, "engine": {"scheduler": "static", "max_batch": 32})", "llama3.1-8b", 4),
      tp2_replicas(4, 200)};
  for (const auto& s : cases) {
    serving::ServingRunOptions fast, slow;
    fast.record_trace = slow.record_trace = true;
    slow.fast_path = false;
    auto a = test::serve(s, fast);
    auto b = test::serve(s, slow);
    REQUIRE(a.step_spans.size() == b.step_spans.size());
    for (std::size_t i = 0; i < a.step_spans.size(); ++i) {
      CHECK(a.step_spans[i].start == b.step_spans[i].start);
      CHECK(a.step_spans[i].end == b.step_spans[i].end);
    }
    CHECK(a.events < b.events);  // the point of it
    auto ja = report::serving_json(a), jb = report::serving_json(b);
    for (auto* j : {&ja, &jb}) {
      j->erase("run_info");
      j->erase("events");
    }
    CHECK(ja.dump() == jb.dump());
  }
}

TEST_CASE("a closed loop longer than 2^52 ps (4,505 s) runs on the integer clock (issue 16, item 8)") {
  const auto r =
      test::serve(make_serving(R"({"input_len": 128, "output_len": 4096, "concurrency": 1, "requests": 400})"));
  CHECK(r.requests == 400);
  CHECK(r.output_tokens == 400 * 4096);
  CHECK(r.makespan_s > 4505.0);
}

TEST_CASE("steady-state throughput counts what the window holds: one client, a hand count") {
  // One client at a time: request k+1 starts when k finishes, so the window between the 11th and the
  // 90th completions (of 100) holds exactly 79 whole requests and their 79 x 32 output tokens.
  const auto r =
      test::serve(make_serving(R"({"input_len": 256, "output_len": 32, "concurrency": 1, "requests": 100})"), true);
  REQUIRE(r.steady.has_value());
  REQUIRE(r.request_spans.size() == 100);
  const double from = r.request_spans[10].finish - r.request_spans[0].arrival;
  const double to = r.request_spans[89].finish - r.request_spans[0].arrival;
  CHECK(r.steady->from_s == doctest::Approx(from).epsilon(1e-12));
  CHECK(r.steady->to_s == doctest::Approx(to).epsilon(1e-12));
  CHECK(r.steady->requests_per_s * (to - from) == doctest::Approx(79.0));
  CHECK(r.steady->output_tokens_per_s * (to - from) == doctest::Approx(79.0 * 32));
  CHECK(r.steady->output_tokens_per_s_per_gpu == doctest::Approx(r.steady->output_tokens_per_s));
  CHECK(r.warnings.empty());  // one client cannot be in lockstep with another
}

TEST_CASE("steady-state throughput leaves out the ramp and the drain of a queued run") {
  // Everything queued at 0: the first completions wait for a full batch's prefill, the last ones
  // drain a shrinking batch; the middle runs at the engine's capacity, above the whole-run mean.
  const auto r = test::serve(make_serving(R"({"input_len": 512, "output_len": 128, "rate": "inf", "requests": 1000})"));
  REQUIRE(r.steady.has_value());
  CHECK(r.steady->output_tokens_per_s > r.output_tokens_per_s);
  CHECK(r.steady->requests_per_s > r.requests_per_s);
  CHECK(r.steady->from_s > 0);
  CHECK(r.steady->to_s <= r.makespan_s);
  // Too few requests for a middle: no steady state rather than a number from a handful.
  const auto few = test::serve(make_serving(R"({"input_len": 512, "output_len": 16, "rate": "inf", "requests": 19})"));
  CHECK_FALSE(few.steady.has_value());
  const auto j = report::serving_json(few);
  CHECK(j["steady_state"].is_null());
  // Two waves of 64 clients: the batch never turns over, so no steady state either.
  const auto waves =
      test::serve(make_serving(R"({"input_len": 512, "output_len": 64, "concurrency": 64, "requests": 128})"));
  CHECK_FALSE(waves.steady.has_value());
  const auto many =
      test::serve(make_serving(R"({"input_len": 512, "output_len": 64, "concurrency": 64, "requests": 640})"));
  CHECK(many.steady.has_value());
}

TEST_CASE("a closed loop of fixed lengths is warned about: its clients move in lockstep") {
  const auto fixed =
      test::serve(make_serving(R"({"input_len": 512, "output_len": 64, "concurrency": 16, "requests": 160})"));
  REQUIRE(fixed.warnings.size() == 1);
  CHECK(fixed.warnings[0].find("lockstep") != std::string::npos);
  CHECK(fixed.warnings[0].find("--input-len 384-640") != std::string::npos);
  // The symptom the warning names: every TTFT percentile is one wave's.
  CHECK(fixed.ttft.p50 == fixed.ttft.p99);
  CHECK(report::serving_table(fixed).find("warning: closed loop with fixed lengths") != std::string::npos);
  CHECK(report::serving_json(fixed)["warnings"].size() == 1);
  // Lengths that vary, or arrivals at a rate, break the lockstep: no warning.
  for (const char* w : {R"({"input_len": "384-640", "output_len": 64, "concurrency": 16, "requests": 160})",
                        R"({"input_len": 512, "output_len": 64, "rate": 10, "requests": 160})"}) {
    const auto r = test::serve(make_serving(w));
    CHECK_MESSAGE(r.warnings.empty(), w);
  }
}

TEST_CASE("multi-node serving: a TP group across nodes runs its all-reduces over the fabric, and each box is paid") {
  // Llama-3.1-70B TP16 over two HGX H100 boxes: every decode step all-reduces across the fabric,
  // so 100 GbE Ethernet (one NIC per box) is slower than eight 400 Gb/s rails.
  const std::string w = R"({"input_len": 512, "output_len": 64, "concurrency": 8, "requests": 64})";
  const auto on = [&](const std::string& fabric, const std::string& extra = "") {
    return test::serve(make_serving(w, R"(, "nodes": 2, "fabric": ")" + fabric + "\"" + extra, "llama3.1-70b", 16));
  };
  const auto rail = on("ib-ndr-rail");
  const auto eth = on("eth-100g");
  CHECK(rail.gpus == 16);
  CHECK(rail.nodes == 2);
  CHECK(rail.fabric == "ib-ndr-rail");
  CHECK(eth.tpot.mean > 1.5 * rail.tpot.mean);
  CHECK(eth.ttft.mean > rail.ttft.mean);
  // Each node is a rented box: twice the one-box price per hour.
  const auto priced = on("ib-ndr-rail", R"(, "offer": "cn-8x-h100-sxm")");
  const auto box = test::serve(make_serving(w, R"(, "offer": "cn-8x-h100-sxm")", "llama3.1-70b", 8));
  REQUIRE(priced.cost.has_value());
  REQUIRE(box.cost.has_value());
  CHECK(priced.cost->price_per_hour == doctest::Approx(2 * box.cost->price_per_hour));
  CHECK(report::serving_table(priced).find("16 GPUs of 2 x hgx-h100 over ib-ndr-rail") != std::string::npos);
  CHECK(report::serving_json(priced)["nodes"] == 2);
}

TEST_CASE("multi-node serving: DeepSeek-R1 in FP8 fits two HGX H100 boxes (PP2 over the fabric), not one") {
  const std::string w = R"({"input_len": 1000, "output_len": 100, "rate": 2, "requests": 20})";
  CHECK_THROWS_AS((void)test::serve(make_serving(w, R"(, "quantization": {"weights": "fp8"})", "deepseek-r1", 8)),
                  InfeasibleError);
  const std::string text = R"({"kind": "infer", "model": "deepseek-r1", "cluster": "hgx-h100", "nodes": 2,
    "fabric": "ib-ndr-rail", "quantization": {"weights": "fp8"}, "parallel": {"tp": 8, "pp": 2, "ep": 8},
    "workload": )" + w + "}";
  const auto r = test::serve(config::parse_serving(config::parse_text(text, "t.json"), test::catalog()));
  CHECK(r.fits);
  CHECK(r.requests == 20);
  // Half the layers per stage: each GPU holds about half of the one-box weights.
  CHECK(r.memory.weights < 0.6 * 79.2 * 1073741824.0);
}

TEST_CASE("sliding-window layers hold only their window of KV: gpt-oss keeps about half a long sequence's cache") {
  // Hand count: gpt-oss-120b alternates 128-token sliding and full attention over its 36 layers,
  // all with the same KV heads, so half the KV bytes are in windowed layers.
  const auto s =
      make_serving(R"({"input_len": 8000, "output_len": 192, "rate": "inf", "requests": 4})", "", "gpt-oss-120b", 8);
  models::ServingShape shape;
  shape.tp = 8;
  shape.kv_bytes = 2;
  CHECK(models::kv_sliding_share(s.model, shape) == doctest::Approx(0.5));
  // 8,192 tokens: 4,096 of the full layers' share plus 64 of the window's.
  CHECK(models::kv_held_tokens(8192, 0.5, 128) == 4096 + 64);
  CHECK(models::kv_held_tokens(100, 0.5, 128) == 100);  // inside the window: every token
  CHECK(models::kv_held_tokens(8192, 0.0, 128) == 8192);
  // A model without windows holds everything.
  const auto dense = make_serving(R"({"input_len": 8000, "output_len": 192, "rate": "inf", "requests": 4})");
  CHECK(models::kv_sliding_share(dense.model, shape) == 0.0);
  // The engine admits by those blocks: the KV cache holds about twice the sequences it would if the
  // windowed layers kept everything.
  const auto r = test::serve(s);
  const std::int64_t per_sequence = (models::kv_held_tokens(8192, 0.5, 128) + 15) / 16;
  CHECK(r.kv_concurrency == r.kv_blocks / per_sequence);
  CHECK(static_cast<double>(r.kv_concurrency) > 1.9 * static_cast<double>(r.kv_blocks / (8192 / 16)));
}
