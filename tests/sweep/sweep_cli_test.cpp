// `clustersim sweep` end to end (docs/sweep.md): rows kept with reasons, the same bytes for any
// thread count and across shards, exit 2 for bad input, Ctrl-C keeping the finished rows.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/builders.hpp"

using cs::test::run_cli;
using cs::test::slurp;

namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

/// A folder of its own under the temp folder, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/cs_sweep_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] std::string file(const std::string& name, const std::string& text = "") const {
    const auto p = (path / name).string();
    if (!text.empty()) std::ofstream(p) << text;
    return p;
  }
};

// Twelve quick points: 1.7B steps on one H100 box. TP 3 does not divide the 8 GPUs and a
// micro-batch of 64 does not fit: rows with reasons, between the rows that run.
const std::string kSweep = R"({
  "base": {"model": "megatron-gpt-1.7b", "cluster": "hgx-h100", "parallel": {"tp": 1},
           "training": {"seq": 2048, "global_batch": 64}},
  "axes": {"/parallel/tp": [1, 3, 8], "/training/micro_batch": [1, 2, 8, 64]}
})";

std::size_t lines(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n' ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("sweep keeps infeasible and invalid points as rows with their reason, in point order") {
  TempDir dir;
  const auto f = dir.file("s.json", kSweep);
  const auto r = run_cli("sweep " + f + " --json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["points_total"] == 12);
  CHECK(j["columns"] == nlohmann::json::array({"/parallel/tp", "/training/micro_batch"}));
  const auto& pts = j["points"];
  REQUIRE(pts.size() == 12);
  int ok = 0, infeasible = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    CHECK(p["index"] == i);
    const int tp = p["overrides"]["/parallel/tp"], mb = p["overrides"]["/training/micro_batch"];
    CHECK(tp == std::vector<int>{1, 3, 8}[i / 4]);
    CHECK(mb == std::vector<int>{1, 2, 8, 64}[i % 4]);
    if (p["status"] == "ok") {
      ++ok;
      CHECK(p["reason"] == "");
      const double step = p["metrics"]["step_time_s"], mfu = p["metrics"]["mfu"];
      CHECK(step > 0);
      CHECK(mfu > 0);
      CHECK(mfu < 1);
      // tokens/s is the step's tokens over its time.
      CHECK(p["metrics"]["tokens_per_s"].get<double>() == doctest::Approx(64.0 * 2048 / step).epsilon(1e-9));
    } else {
      ++infeasible;
      CHECK(p["status"] == "infeasible");
      CHECK(p["metrics"].is_null());
      CHECK(!p["reason"].get<std::string>().empty());
    }
    if (tp == 3) {
      CHECK(p["status"] == "infeasible");
      CHECK(has(p["reason"], "divide"));
    }
    if (mb == 64) {
      CHECK(p["status"] == "infeasible");
      // TP 1 leaves DP 8: 8 x 64 sequences are more than the step's 64; TP 8 runs out of memory.
      if (tp == 1) CHECK(has(p["reason"], "not a multiple of DP 8 x micro-batch 64"));
      if (tp == 8) CHECK(has(p["reason"], "does not fit: needs"));
    }
  }
  CHECK(ok >= 6);
  CHECK(infeasible >= 5);
  // The table has the same rows, reasons included.
  const auto t = run_cli("sweep " + f);
  REQUIRE(t.exit_code == 0);
  CHECK(has(t.out, "parallel.tp"));
  CHECK(has(t.out, "12 of 12 points"));
}

TEST_CASE("sweep writes the same bytes with 1 and 2 threads, and shards merge into the one-process output") {
  TempDir dir;
  const auto f = dir.file("s.json", kSweep);
  const auto one = run_cli("--threads 1 sweep " + f + " --json --csv " + dir.file("one.csv"));
  const auto two = run_cli("--threads 2 sweep " + f + " --json --csv " + dir.file("two.csv"));
  REQUIRE(one.exit_code == 0);
  REQUIRE(two.exit_code == 0);
  CHECK(one.out == two.out);
  const auto csv = slurp(dir.file("one.csv"));
  CHECK(csv == slurp(dir.file("two.csv")));
  CHECK(lines(csv) == 13);
  CHECK(csv.rfind("index,/parallel/tp,/training/micro_batch,status,step_time_s,mfu,tokens_per_s,"
                  "memory_per_gpu_gib,reason\n",
                  0) == 0);
  // Shards: round robin; their union, merged, is the one-process output byte for byte.
  const auto a = run_cli("sweep " + f + " --shard 0/3 --json");
  const auto b = run_cli("sweep " + f + " --shard 1/3 --json");
  const auto c = run_cli("sweep " + f + " --shard 2/3 --json");
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  REQUIRE(c.exit_code == 0);
  const auto ja = nlohmann::json::parse(a.out);
  CHECK(ja["points"].size() == 4);
  CHECK(ja["points"][1]["index"] == 3);
  CHECK(ja["shard"]["count"] == 3);
  std::ofstream(dir.file("a.json")) << a.out;
  std::ofstream(dir.file("b.json")) << b.out;
  std::ofstream(dir.file("c.json")) << c.out;
  const auto merged = run_cli("sweep --merge " + dir.file("c.json") + " " + dir.file("a.json") + " " +
                              dir.file("b.json") + " --json --csv " + dir.file("m.csv"));
  REQUIRE_MESSAGE(merged.exit_code == 0, merged.err);
  CHECK(merged.out == one.out);
  CHECK(slurp(dir.file("m.csv")) == csv);
  const auto table =
      run_cli("sweep --merge " + dir.file("a.json") + " " + dir.file("b.json") + " " + dir.file("c.json"));
  CHECK(table.out == run_cli("sweep " + f).out);
  // A shard missing, or given twice: exit 2 naming what is wrong.
  const auto missing = run_cli("sweep --merge " + dir.file("a.json") + " " + dir.file("b.json"));
  CHECK(missing.exit_code == 2);
  CHECK(has(missing.err, "4 of 12 points are in none of the files"));
  const auto twice = run_cli("sweep --merge " + dir.file("a.json") + " " + dir.file("a.json"));
  CHECK(twice.exit_code == 2);
  CHECK(has(twice.err, "is also in"));
}

TEST_CASE("sweep bad input: exit 2 naming the sweep file and the pointer (or the flag)") {
  TempDir dir;
  const auto bad = dir.file("bad.json", R"({"base": {"model": "megatron-gpt-1.7b", "cluster": "hgx-h100",
      "training": {"seq": 2048, "global_batch": 8}}, "axes": {"/parallel/tp": [1, 2, 0]}})");
  auto r = run_cli("sweep " + bad);
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, bad + ": /axes/~1parallel~1tp/2: "));
  CHECK(r.out.empty());
  const auto f = dir.file("s.json", kSweep);
  r = run_cli("sweep " + f + " --shard 2/2");
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, "--shard"));
  r = run_cli("sweep " + f + " --csv /nonexistent-dir/x.csv");
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, "/nonexistent-dir/x.csv"));
  r = run_cli("sweep " + dir.file("missing.json"));
  CHECK(r.exit_code == 2);
  // A base file is read relative to the sweep file's folder.
  (void)dir.file("base.json", R"({"model": "megatron-gpt-1.7b", "cluster": "hgx-h100", "training": {"seq": 2048,
      "global_batch": 8}})");
  const auto rel = dir.file("rel.json", R"({"base": "base.json", "points": [{"parallel.tp": 2}]})");
  r = run_cli("sweep " + rel + " --json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["points"][0]["status"] == "ok");
}

TEST_CASE("sweep on SIGINT stops scheduling, keeps every finished row in order in the CSV and exits 130") {
  TempDir dir;
  // Enough points that the sweep is still running when the signal comes (the script waits for the
  // first rows in the CSV, then interrupts).
  const auto f = dir.file("long.json", R"({"base": {"model": "llama3.1-8b", "cluster": "hgx-h100",
      "parallel": {"tp": 8}, "training": {"seq": 4096, "global_batch": 32}},
      "axes": {"/training/micro_batch": [1, 2, 4, 8], "/training/seq": [4096, 4097, 4098, 4099, 4100, 4101, 4102, 4103,
      4104, 4105, 4106, 4107, 4108, 4109, 4110, 4111, 4112, 4113, 4114, 4115]}})");
  const auto csv = dir.file("rows.csv");
  const std::string script = "cd " + std::string(CLUSTERSIM_DATA_DIR) + " && (" + CLUSTERSIM_BINARY +
                             " --threads 2 sweep " + f + " --csv " + csv + " >" + dir.file("out.txt") + " 2>" +
                             dir.file("err.txt") + " & pid=$!; n=0; while [ \"$(cat " + csv +
                             " 2>/dev/null | wc -l)\" -lt 3 ] && " +
                             "[ $n -lt 6000 ]; do sleep 0.05; n=$((n+1)); done; kill -INT $pid; wait $pid; exit $?)";
  const int status = std::system(script.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const auto text = slurp(csv);
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  CHECK(line.rfind("index,", 0) == 0);
  long last = -1;
  std::size_t rows = 0;
  while (std::getline(in, line)) {
    const long index = std::stol(line.substr(0, line.find(',')));
    CHECK(index > last);
    last = index;
    ++rows;
  }
  CHECK(rows >= 2);
  CHECK(rows < 80);
  CHECK(has(slurp(dir.file("err.txt")), "interrupted"));
}

TEST_CASE("sweep --svg: a field that moves with x (TP set to the GPU count) does not split the curves") {
  TempDir dir;
  const auto f = dir.file("follow.json", R"({
    "base": {"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1, "zero": 1},
             "training": {"seq": 1024, "global_batch": 8, "micro_batch": 1}},
    "points": [{"cluster": "hgx-h100", "gpus": 2, "parallel.tp": 2}, {"cluster": "hgx-h100", "gpus": 4, "parallel.tp": 4},
               {"cluster": "pcie-h100x8", "gpus": 2, "parallel.tp": 2}, {"cluster": "pcie-h100x8", "gpus": 4, "parallel.tp": 4}]
  })");
  const auto r = run_cli("sweep " + f + " --svg " + dir.file("f.svg") + " --x gpus --y tokens_per_s");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto text = slurp(dir.file("f.svg"));
  // Two curves, one per cluster, each through both GPU counts; TP names none of them.
  CHECK(has(text, "cluster=hgx-h100"));
  CHECK(has(text, "cluster=pcie-h100x8"));
  CHECK(!has(text, "parallel.tp="));
  std::size_t polylines = 0;
  for (auto at = text.find("<polyline"); at != std::string::npos; at = text.find("<polyline", at + 1)) ++polylines;
  CHECK(polylines == 2);
}

TEST_CASE("sweep --svg draws a metric against a field, one series per value of the other axis") {
  TempDir dir;
  const auto f = dir.file("s.json", kSweep);
  const auto r = run_cli("sweep " + f + " --svg " + dir.file("a.svg") + " --x training.micro_batch --y step_time_s");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto text = slurp(dir.file("a.svg"));
  CHECK(text.rfind("<svg", 0) == 0);
  // TP 1 and TP 8 have ok rows; TP 3 has none, so no series.
  CHECK(has(text, "parallel.tp=1"));
  CHECK(has(text, "parallel.tp=8"));
  CHECK(!has(text, "parallel.tp=3"));
  CHECK(has(text, "step (ms)"));
  // The same bytes from two threads and from merged shards.
  CHECK(run_cli("--threads 2 sweep " + f + " --svg " + dir.file("b.svg") + " --x /training/micro_batch --y step_time_s")
            .exit_code == 0);
  CHECK(slurp(dir.file("b.svg")) == text);
  std::ofstream(dir.file("p0.json")) << run_cli("sweep " + f + " --shard 0/2 --json").out;
  std::ofstream(dir.file("p1.json")) << run_cli("sweep " + f + " --shard 1/2 --json").out;
  CHECK(run_cli("sweep --merge " + dir.file("p0.json") + " " + dir.file("p1.json") + " --svg " + dir.file("m.svg") +
                " --x training.micro_batch --y step_time_s")
            .exit_code == 0);
  CHECK(slurp(dir.file("m.svg")) == text);
  // A metric or field that is not there: exit 2 naming the flag, before anything runs.
  auto bad = run_cli("sweep " + f + " --svg " + dir.file("c.svg") + " --x training.micro_batch --y ttft_p50_s");
  CHECK(bad.exit_code == 2);
  CHECK(has(bad.err, "--y"));
  bad = run_cli("sweep " + f + " --svg " + dir.file("c.svg") + " --x training.seq --y mfu");
  CHECK(bad.exit_code == 2);
  CHECK(has(bad.err, "--x"));
  bad = run_cli("sweep " + f + " --svg " + dir.file("c.svg"));
  CHECK(bad.exit_code == 2);
}

TEST_CASE("a serving sweep's rows carry p50, p90 and p99 of TTFT and TPOT, in that order, never decreasing") {
  const auto r = run_cli("sweep scenarios/sweeps/qwen2.5-7b-serving-rate-batch.json --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const std::vector<std::string> names = j["metrics"];
  CHECK(names == std::vector<std::string>{"ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "tpot_p50_s", "tpot_p90_s",
                                          "tpot_p99_s", "output_tokens_per_s", "requests_per_s"});
  int ok = 0;
  for (const auto& p : j["points"]) {
    if (p["status"] != "ok") continue;
    ++ok;
    for (const char* m : {"ttft", "tpot"}) {
      const std::string k = m;
      CHECK(p["metrics"][k + "_p50_s"].get<double>() <= p["metrics"][k + "_p90_s"].get<double>());
      CHECK(p["metrics"][k + "_p90_s"].get<double>() <= p["metrics"][k + "_p99_s"].get<double>());
    }
  }
  CHECK(ok >= 2);
}
