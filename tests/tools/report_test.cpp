// `--report FILE.html` on run, train, infer, infer-sweep and plan: one self-contained page.
#include <doctest/doctest.h>

#include <cstdio>
#include <regex>
#include <string>

#include "tests/support/builders.hpp"

using cs::test::run_cli;
using cs::test::slurp;

namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

/// A page that needs nothing but itself: no script, no fetched resource (the only URL is SVG's
/// namespace name, which is never fetched).
void check_self_contained(const std::string& page, const std::string& what) {
  CHECK_MESSAGE(page.starts_with("<!DOCTYPE html>"), what);
  CHECK_MESSAGE(page.ends_with("</html>\n"), what);
  CHECK_MESSAGE(!has(page, "<script"), what);
  CHECK_MESSAGE(!has(page, "src="), what);
  CHECK_MESSAGE(!has(page, "href="), what);
  CHECK_MESSAGE(!has(page, "url("), what);
  CHECK_MESSAGE(count(page, "http") == count(page, "xmlns=\"http://www.w3.org/2000/svg\""), what);
  // No number printed as NaN or infinity ("provenance" has the letters, not the number).
  CHECK_MESSAGE(!std::regex_search(page, std::regex("[^a-z](-?nan|-?inf)[^a-z]")), what);
}

}  // namespace

TEST_CASE("run --report writes the table, the breakdown, per-GPU time and link utilisation, results unchanged") {
  const std::string path = "/tmp/cs-report-run.html";
  const auto with = run_cli("run scenarios/default.json --report " + path);
  REQUIRE(with.exit_code == 0);
  const auto without = run_cli("run scenarios/default.json");
  CHECK(with.out == without.out);  // recording link samples changes no figure
  const auto page = slurp(path);
  check_self_contained(page, "run");
  for (const char* part : {"Results", "Where a step&#39;s time goes", "Per-GPU time", "Link utilisation",
                           ">exposed communication</text>", ">GPU 7</text>", "nvswitch", "8x H100 PCIe"}) {
    CHECK_MESSAGE(has(page, part), part);
  }
  CHECK(count(page, "<svg") >= 6);  // breakdown, comm by kind, two per-GPU, two link charts
  // The same bytes with one worker thread or several.
  REQUIRE(run_cli("--threads 1 run scenarios/default.json --report /tmp/cs-report-run1.html").exit_code == 0);
  CHECK(slurp("/tmp/cs-report-run1.html") == page);
  std::remove(path.c_str());
  std::remove("/tmp/cs-report-run1.html");
}

TEST_CASE("report pages escape the names users give") {
  const std::string path = "/tmp/cs-report-escape.html";
  const auto t = run_cli("run scenarios/default.json --set 'name=<i>x</i> & \"y\"' --report " + path);
  REQUIRE(t.exit_code == 0);
  const auto page = slurp(path);
  CHECK(!has(page, "<i>"));
  CHECK(has(page, "&lt;i&gt;x&lt;/i&gt; &amp; &quot;y&quot;"));
  std::remove(path.c_str());
}

TEST_CASE("train, infer, infer-sweep and plan write their reports") {
  const std::string train = "/tmp/cs-report-train.html", infer = "/tmp/cs-report-infer.html",
                    sweep = "/tmp/cs-report-sweep.html", plan = "/tmp/cs-report-plan.html";
  REQUIRE(run_cli("train --model llama3.1-8b --cluster hgx-h100 --tp 8 --seq 2048 --global-batch 8 --report " + train)
              .exit_code == 0);
  check_self_contained(slurp(train), "train");
  CHECK(has(slurp(train), "Link utilisation"));
  REQUIRE(run_cli("infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 512 --output-len 128 "
                  "--requests 100 --rate 4 --report " +
                  infer)
              .exit_code == 0);
  const auto ip = slurp(infer);
  check_self_contained(ip, "infer");
  CHECK(has(ip, "Where a request&#39;s time goes"));
  CHECK(has(ip, ">replica 0</text>"));
  REQUIRE(run_cli("infer-sweep --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 512 --output-len 128 "
                  "--requests 100 --rates 1,8,32 --slo-ttft '200 ms' --slo-tpot '20 ms' --report " +
                  sweep)
              .exit_code == 0);
  const auto sp = slurp(sweep);
  check_self_contained(sp, "infer-sweep");
  for (const char* part : {">TTFT p50<", ">TTFT p99<", ">TPOT p50<", ">TPOT p99<", ">TTFT SLO 200.0 ms<",
                           ">TPOT SLO 20.0 ms<", "class=\"tick x\"", "class=\"tick y\""}) {
    CHECK_MESSAGE(has(sp, part), part);
  }
  REQUIRE(run_cli("plan --model megatron-gpt-1.7b --job train:1B --offers cn-8x-h100-sxm,hk-2x-h100-nvlink "
                  "--fabric none --seq 2048 --global-batch 32 --json --report " +
                  plan)
              .exit_code == 0);  // --json too: the report is written either way
  const auto pp = slurp(plan);
  check_self_contained(pp, "plan");
  CHECK(has(pp, ">Pareto front</text>"));
  CHECK(has(pp, "Ranked candidates"));
  CHECK(has(pp, ">#1</text>"));
  for (const auto& p : {train, infer, sweep, plan}) std::remove(p.c_str());
}

TEST_CASE("plan --svg writes the Pareto front alone, the same chart the report holds") {
  const std::string svg = "/tmp/cs-plan-front.svg", page = "/tmp/cs-plan-front.html";
  REQUIRE(run_cli("plan --model megatron-gpt-1.7b --job train:1B --offers cn-8x-h100-sxm,hk-2x-h100-nvlink "
                  "--fabric none --seq 2048 --global-batch 32 --svg " +
                  svg + " --report " + page)
              .exit_code == 0);
  const auto chart = slurp(svg);
  CHECK(chart.rfind("<svg", 0) == 0);
  CHECK(has(chart, ">Pareto front</text>"));
  CHECK(has(chart, ">#1</text>"));
  CHECK(has(chart, "job time (hours)"));
  CHECK(has(chart, "plan: megatron-gpt-1.7b, train train:1B"));  // titled, unlike the report's figure
  CHECK(has(slurp(page), ">Pareto front</text>"));
  const auto bad = run_cli("plan --model megatron-gpt-1.7b --job train:1B --svg /nonexistent-dir/x.svg");
  CHECK(bad.exit_code == 2);
  CHECK(has(bad.err, "--svg"));
  std::remove(svg.c_str());
  std::remove(page.c_str());
}

TEST_CASE("sweep --report writes the table, and the chart of --x and --y when given") {
  const std::string path = "/tmp/cs-report-sweep-file.html";
  const std::string file = "scenarios/tutorials/interconnect-scaling-7b.json";
  REQUIRE(run_cli("sweep " + file + " --x gpus --y tokens_per_s --report " + path).exit_code == 0);
  const auto page = slurp(path);
  check_self_contained(page, "sweep");
  CHECK(count(page, "<svg") == 1);
  CHECK(has(page, ">cluster=dgx-a100</text>"));
  CHECK(has(page, "12 of 12 points"));
  REQUIRE(run_cli("sweep " + file + " --report " + path).exit_code == 0);  // no --x/--y: the table alone
  CHECK(count(slurp(path), "<svg") == 0);
  const auto half = run_cli("sweep " + file + " --x gpus --report " + path);  // --x without --y
  CHECK(half.exit_code == 2);
  CHECK(has(half.err, "--y"));
  std::remove(path.c_str());
}

TEST_CASE("a report path that cannot be written is exit 2 naming --report, before any simulation") {
  for (const char* cmd : {"run scenarios/default.json",
                          "infer-sweep --model llama3.1-8b --cluster hgx-h100 --tp 1 "
                          "--input-len 64 --output-len 8 --requests 4 --rates 1",
                          "plan --model megatron-gpt-1.7b --job train:1B --offers cn-8x-h100-sxm --fabric none",
                          "sweep scenarios/tutorials/interconnect-scaling-7b.json"}) {
    const auto r = run_cli(std::string(cmd) + " --report /nonexistent-dir/r.html");
    CHECK_MESSAGE(r.exit_code == 2, cmd);
    CHECK_MESSAGE(has(r.err, "--report"), (std::string(cmd) + ": " + r.err));
    CHECK_MESSAGE(has(r.err, "/nonexistent-dir/r.html"), r.err);
    CHECK_MESSAGE(r.out.empty(), r.out);
  }
}
