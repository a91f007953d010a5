// Serving inputs at their limits (issue 16): trace ranges, the closed loop past 2^52 ps, and
// the table with latencies of hours.
#include <doctest/doctest.h>

#include <sstream>

#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/serving/serving_sim.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/serve.hpp"

using namespace cs;

namespace {

std::vector<InputProblem> trace_problems(const std::string& text, bool jsonl, std::int64_t context = 0) {
  std::istringstream in(text);
  try {
    (void)config::read_trace(in, "t", jsonl, context);
  } catch (const InputError& e) {
    return e.problems();
  }
  return {};
}

}  // namespace

TEST_CASE("a trace read from a stream gives the same requests as from a file, sorted by arrival") {
  std::istringstream csv("input_tokens,arrival_s,output_tokens\n10,2.5,3\n20,0.5,4\n");
  const auto r = config::read_trace(csv, "t.csv", false);
  REQUIRE(r.size() == 2);
  CHECK(r[0].arrival_s == 0.5);
  CHECK(r[0].input == 20);
  CHECK(r[1].output == 3);
  std::istringstream jsonl(R"({"arrival_s": 1, "input_tokens": 7, "output_tokens": 8})");
  CHECK(config::read_trace(jsonl, "t.jsonl", true).at(0).input == 7);
}

TEST_CASE("trace arrivals must end before the simulator's clock does, and token counts must be exact integers") {
  auto p = trace_problems("arrival_s,input_tokens,output_tokens\n10000000,1,1\n", false);
  REQUIRE(p.size() == 1);
  CHECK(p[0].to_string() ==
        "t:2: /arrival_s: expected a time from 0 to 9000000 seconds (the end of the simulator's clock); got 1e+07");
  p = trace_problems(R"({"arrival_s": 0, "input_tokens": 1e300, "output_tokens": 2.5})", true);
  REQUIRE(p.size() == 2);
  CHECK(p[0].to_string() == "t:1: /input_tokens: expected a positive integer of at most 1099511627776; got 1e+300");
  CHECK(p[1].pointer == "/output_tokens");
  // "12abc" is not a number, even though it starts like one.
  p = trace_problems("arrival_s,input_tokens,output_tokens\n0,12abc,1\n", false);
  REQUIRE(p.size() == 1);
  CHECK(p[0].pointer == "/input_tokens");
}

TEST_CASE("a trace request longer than the model's context is refused with its line") {
  const auto p = trace_problems("arrival_s,input_tokens,output_tokens\n0,100,10\n0,4000,200\n", false, 4096);
  REQUIRE(p.size() == 1);
  CHECK(p[0].to_string() ==
        "t:3: /input_tokens: 4000 input + 200 output tokens exceed the model's context of 4096 tokens");
}

TEST_CASE("a closed loop running past 2^52 ps (4,504 s) re-adds its requests on the integer clock") {
  // Each request is one long prefill (about 4 s) and one token: 1,500 of them pass 4,504 s of
  // simulated time in a few thousand steps. Re-adding a request at the clock's time converted to
  // seconds and back once landed a picosecond in the past there, and aborted.
  const auto s = config::parse_serving(
      config::parse_text(R"({"kind": "infer", "model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1},
                            "engine": {"max_tokens": 131072},
                            "workload": {"input_len": 120000, "output_len": 1, "concurrency": 1, "requests": 1500}})",
                         "test.json"),
      test::catalog());
  const auto r = test::serve(s);
  CHECK(r.requests == 1500);
  CHECK(r.makespan_s > 4504.0);
  // One request at a time: each starts when the previous finishes, so time only adds up.
  CHECK(r.e2e.mean * 1500 == doctest::Approx(r.makespan_s).epsilon(1e-9));
}

TEST_CASE("the serving table keeps its columns for latencies of hours and days") {
  serving::ServingResults r;
  r.ttft = {1.5, 0.05, 99.99, 3600.0, 100};
  r.tpot = {1e6, 2e6, 8.9e6, 8.99e6, 100};
  const auto table = report::serving_table(r);
  CHECK(table.find("TTFT" + std::string(26, ' ') + "  1500.0 ms    50.0 ms 99990.0 ms   3600.0 s\n") !=
        std::string::npos);
  CHECK(table.find("TPOT (inter-token)" + std::string(12, ' ') + "  1000000 s  2000000 s  8900000 s  8990000 s\n") !=
        std::string::npos);
}

TEST_CASE("--allow-oom with no room for the KV cache runs to the end as if the GPU had the memory, and says so") {
  // DeepSeek-R1 in FP8 on 4 H200s per replica: 166.5 GiB of weights per GPU on a 140 GiB GPU, so
  // no KV block at all. Without allow_oom: refused (exit 4). With it the run used to stop on an
  // internal error (no request could ever be admitted); now every pool holds max batch of the
  // longest requests, every request finishes, and the result says it does not fit.
  const auto text = [](bool allow) {
    return std::string(R"({"kind": "infer", "model": "deepseek-r1", "cluster": "hgx-h200",
        "parallel": {"tp": 4, "ep": 4, "replicas": 2, "dp_attention": true, "moe_a2a": "deepep"},
        "quantization": {"weights": "fp8"}, "allow_oom": )") +
           (allow ? "true" : "false") + R"(,
        "workload": {"input_len": 1000, "output_len": 100, "concurrency": 8, "requests": 16}})";
  };
  CHECK_THROWS_WITH_AS(
      (void)test::serve(config::parse_serving(config::parse_text(text(false), "t.json"), test::catalog())),
      doctest::Contains("does not fit"), InfeasibleError);
  const auto r = test::serve(config::parse_serving(config::parse_text(text(true), "t.json"), test::catalog()));
  CHECK_FALSE(r.fits);
  CHECK(r.requests == 16);
  CHECK(r.output_tokens == 16 * 100);
  CHECK(r.memory.kv_cache == 0);  // the memory shown is the GPU's, not the one assumed
  CHECK(r.kv_blocks == 0);
  CHECK(r.max_concurrency == 0);
  REQUIRE_FALSE(r.warnings.empty());
  CHECK(r.warnings.front().find("does not fit (--allow-oom)") == 0);
}
