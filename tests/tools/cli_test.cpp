#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "sim/config/fields.hpp"
#include "tests/support/builders.hpp"

using cs::test::data_path;
using cs::test::run_cli;
using cs::test::slurp;

namespace {
nlohmann::json without_run_info(nlohmann::json j) {
  j.erase("run_info");
  if (j.contains("variants")) {
    for (auto& v : j["variants"]) v.erase("run_info");
  }
  return j;
}
}  // namespace

TEST_CASE("the default scenario runs and prints the NVSwitch and PCIe columns side by side") {
  const auto r = run_cli("run scenarios/default.json");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("8x H100 SXM (NVSwitch)") != std::string::npos);
  CHECK(r.out.find("8x H100 PCIe") != std::string::npos);
  CHECK(r.out.find("exposed communication") != std::string::npos);
  CHECK(r.out.find("cost per million tokens") != std::string::npos);
}

TEST_CASE("global flags work after the command too: --threads 1 there gives the same bytes as before it") {
  const std::string infer =
      "infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 512 --output-len 64 --requests 20 --rate 10";
  const auto before = run_cli("--threads 1 " + infer);
  const auto after = run_cli(infer + " --threads 1");
  CHECK(before.exit_code == 0);
  CHECK(after.exit_code == 0);
  CHECK(after.out == before.out);
  // Misspelt, it is still an unknown flag with the closest one named.
  const auto typo = run_cli(infer + " --thread 1");
  CHECK(typo.exit_code == 2);
  CHECK(typo.err.find("unknown flag --thread (did you mean --threads?)") != std::string::npos);
}

TEST_CASE("run --json prints one document per variant with the contract's fields, byte-identical across runs") {
  const auto a = run_cli("run scenarios/default.json --json");
  const auto b = run_cli("run scenarios/default.json --json");
  REQUIRE(a.exit_code == 0);
  const auto ja = nlohmann::json::parse(a.out);
  REQUIRE(ja["variants"].size() == 2);
  for (const auto& v : ja["variants"]) {
    for (const char* key : {"name", "step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "breakdown_s",
                            "memory_per_gpu", "fits", "speedup", "scaling_efficiency", "run_info"}) {
      CHECK_MESSAGE(v.contains(key), key);
    }
    for (const char* key : {"compute", "exposed_comm", "idle"}) CHECK(v["breakdown_s"].contains(key));
    for (const char* key : {"weights", "gradients", "optimizer", "activations", "other", "total", "capacity"}) {
      CHECK(v["memory_per_gpu"].contains(key));
    }
  }
  CHECK(ja["variants"][0].contains("cost"));
  CHECK(without_run_info(ja).dump() == without_run_info(nlohmann::json::parse(b.out)).dump());
}

TEST_CASE("train from flags equals the same scenario from a file") {
  const auto flags = run_cli("train --model llama3.1-8b --cluster hgx-h100 --tp 8 --seq 4096 --global-batch 8 --json");
  REQUIRE(flags.exit_code == 0);
  const auto file = run_cli(
      "run scenarios/default.json --set training.seq=4096 "
      "--set training.global_batch=8 --json");
  REQUIRE(file.exit_code == 0);
  const auto jf = nlohmann::json::parse(flags.out);
  const auto jv = nlohmann::json::parse(file.out)["variants"][0];
  CHECK(jf["step_time_s"] == jv["step_time_s"]);
  CHECK(jf["memory_per_gpu"] == jv["memory_per_gpu"]);
}

TEST_CASE("--set overrides a field before parsing, --dump-resolved shows every default") {
  // --set reaches every variant of a file; values are typed by the field table.
  const auto r = run_cli(
      "run scenarios/default.json --set parallel.tp=2 --set /training/micro_batch=2 --set network_model=analytical "
      "--dump-resolved");
  REQUIRE(r.exit_code == 0);
  const auto all = nlohmann::json::parse(r.out);
  REQUIRE(all.size() == 2);
  for (const auto& j : all) {
    CHECK(j["parallel"]["tp"] == 2);
    CHECK(j["parallel"]["dp"] == 4);  // the default, GPUs / TP, after the override
    CHECK(j["training"]["micro_batch"] == 2);
    CHECK(j["network_model"] == "analytical");
    CHECK(j["training"]["seq"] == 8192);  // untouched by --set
  }
  // Without --set the file's own values come back.
  const auto plain = nlohmann::json::parse(run_cli("run scenarios/default.json --dump-resolved").out);
  CHECK(plain[0]["parallel"]["tp"] == 8);
  CHECK(plain[0]["network_model"] == "flow");
  // A flag-built scenario resolves its defaults the same way.
  const auto f = run_cli(
      "train --model qwen2.5-7b --cluster pcie-h100x8 --gpus 4 --tp 2 --seq 2048 --global-batch 8 --dump-resolved");
  REQUIRE(f.exit_code == 0);
  const auto j = nlohmann::json::parse(f.out);
  CHECK(j["parallel"]["dp"] == 2);
  CHECK(j["profile"] == "h100-pcie");
  CHECK(j["training"]["micro_batch"] == 1);
}

TEST_CASE("describe prints a field from the table, and names the closest field when there is none") {
  const auto r = run_cli("describe parallel.zero");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("parallel.zero (train)") != std::string::npos);
  CHECK(r.out.find("values:  0 to 3") != std::string::npos);
  CHECK(r.out.find("flag:    --zero") != std::string::npos);
  const auto both = run_cli("describe /parallel/tp");
  CHECK(both.out.find("(train)") != std::string::npos);
  CHECK(both.out.find("(infer)") != std::string::npos);
  const auto bad = run_cli("describe parallel.zeroo");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("did you mean 'parallel.zero'?") != std::string::npos);
}

TEST_CASE("docs/config-reference.md is what describe --markdown prints (regenerate: clustersim describe --markdown)") {
  const auto r = run_cli("describe --markdown");
  REQUIRE(r.exit_code == 0);
  CHECK_MESSAGE(r.out == slurp(data_path("docs/config-reference.md")),
                "docs/config-reference.md is stale: build/clustersim describe --markdown > docs/config-reference.md");
}

TEST_CASE("train and infer have one flag per field that names one, with the field's meaning as help") {
  for (auto kind : {cs::config::ScenarioKind::kTrain, cs::config::ScenarioKind::kInfer}) {
    const std::string cmd = cs::config::scenario_kind_name(kind);
    const auto help = run_cli(cmd + " --help");
    REQUIRE(help.exit_code == 0);
    for (const auto* f : cs::config::fields_of(kind)) {
      if (f->flag.empty()) continue;
      CAPTURE(f->path);
      CHECK(help.out.find(f->flag) != std::string::npos);
      if (f->flag != "--disaggregate") CHECK(help.out.find(f->meaning.substr(0, 20)) != std::string::npos);
    }
  }
}

TEST_CASE("collective prints an nccl-tests-style table, --json has rows with bytes, time, algbw and busbw") {
  const auto r = run_cli("collective --cluster hgx-h100 --op allreduce --min 1M --max 1G --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 11);
  for (const auto& row : j["rows"]) {
    CHECK(row["busbw_GBps"].get<double>() == doctest::Approx(row["algbw_GBps"].get<double>() * 1.75));
    CHECK(row["time_s"].get<double>() > 0);
  }
  CHECK(j["rows"].back()["bytes"] == 1073741824.0);
  const auto t = run_cli("collective --cluster pcie-h100x8 --op allgather --max 64M");
  CHECK(t.exit_code == 0);
  CHECK(t.out.find("busbw(GB/s)") != std::string::npos);
}

TEST_CASE("list prints the catalogs, --json has id, params_total, params_active, layers and hidden for models") {
  const auto r = run_cli("list models --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& m : j) {
    if (m["id"] == "llama3.1-70b") {
      found = true;
      CHECK(m["layers"] == 80);
      CHECK(m["hidden"] == 8192);
      CHECK(m["params_total"].get<double>() == doctest::Approx(70.55e9).epsilon(0.005));
      CHECK(m["params_active"] == m["params_total"]);  // dense: every parameter is used by every token
    }
    if (m["id"] == "deepseek-v3") {
      CHECK(m["experts"] == 256);
      CHECK(m["top_k"] == 8);
      CHECK(m["params_total"].get<double>() == doctest::Approx(671e9).epsilon(0.001));
      CHECK(m["params_active"].get<double>() < 0.06 * m["params_total"].get<double>());
    }
    CHECK(m.contains("params_active"));
  }
  CHECK(found);
  for (const char* what : {"clusters", "profiles", "offers"})
    CHECK(run_cli(std::string("list ") + what).exit_code == 0);
}

TEST_CASE("validate checks a scenario without simulating") {
  const auto r = run_cli("validate scenarios/default.json");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("ok: 8x H100 PCIe: llama3.1-8b on 8x NVIDIA H100 PCIe") != std::string::npos);
  CHECK(run_cli("validate scenarios/seed-claims/claim4-70b-full-finetune.json").exit_code == 4);
}

TEST_CASE("every shipped scenario either runs or explains why not (exit 4 for plans that do not fit)") {
  for (const char* s : {"scenarios/default.json", "scenarios/seed-claims/claim6-scaling-8b-dp8.json",
                        "scenarios/seed-claims/claim3-gpt3-175b-tp8.json",
                        "scenarios/seed-claims/claim5-qwen72b-tp2-nvlink-vs-pcie.json"}) {
    CAPTURE(s);
    CHECK(run_cli(std::string("validate ") + s).exit_code == 0);
  }
  const auto r = run_cli("run scenarios/seed-claims/claim4-70b-full-finetune.json");
  CHECK(r.exit_code == 4);
  CHECK(r.err.find("does not fit: needs ") != std::string::npos);
  CHECK(r.err.find("weights ") != std::string::npos);
}

TEST_CASE("seed claim 9: DeepSeek-R1 in FP8 does not fit 8x H100, INT4 does and so does FP8 on 8x H200") {
  const auto fp8 = run_cli("run scenarios/seed-claims/claim9-deepseek-r1-fp8-h100.json");
  CHECK(fp8.exit_code == 4);
  CHECK(fp8.err.find("79.2 GiB of weights") != std::string::npos);
  const auto ok = run_cli("run scenarios/seed-claims/claim9-deepseek-r1-serving.json --json");
  REQUIRE(ok.exit_code == 0);
  const auto j = nlohmann::json::parse(ok.out);
  REQUIRE(j["variants"].size() == 3);
  for (const auto& v : j["variants"]) {
    CAPTURE(v["name"].get<std::string>());
    CHECK(v["memory_per_gpu"]["kv_cache"].get<double>() > 30.0 * 1073741824.0);
  }
  CHECK(run_cli("validate scenarios/seed-claims/claim9-deepseek-v3-training.json").exit_code == 0);
}

namespace {
/// Checks a file against the Chrome trace-event format as ui.perfetto.dev reads it: every event has
/// the fields of its phase, every process shown is named, no span ends past `end_us`. Returns the
/// events.
nlohmann::json checked_trace(const std::string& path, double end_us) {
  const auto j = nlohmann::json::parse(slurp(path));
  REQUIRE(j["traceEvents"].is_array());
  std::set<int> named;
  std::set<int> used;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    REQUIRE((ph == "M" || ph == "X" || ph == "C"));
    REQUIRE(e["name"].is_string());
    REQUIRE(e["pid"].is_number_integer());
    if (ph == "M" && e["name"] == "process_name") named.insert(e["pid"].get<int>());
    if (ph == "X") {
      REQUIRE(e["tid"].is_number_integer());
      REQUIRE(e["cat"].is_string());
      CHECK(e["ts"].get<double>() >= 0);
      CHECK(e["dur"].get<double>() >= 0);
      CHECK(e["ts"].get<double>() + e["dur"].get<double>() <= end_us + 0.001);
    }
    if (ph == "C") {
      REQUIRE(e["args"].is_object());
      CHECK(e["args"].begin()->is_number());
      CHECK(e["ts"].get<double>() <= end_us + 0.001);
    }
    if (ph != "M") used.insert(e["pid"].get<int>());
  }
  for (int pid : used) CHECK_MESSAGE(named.count(pid) == 1, "process " << pid << " has a name");
  return j["traceEvents"];
}
std::map<int, std::size_t> spans_per_pid(const nlohmann::json& events) {
  std::map<int, std::size_t> n;
  for (const auto& e : events) {
    if (e["ph"] == "X") ++n[e["pid"].get<int>()];
  }
  return n;
}
}  // namespace

TEST_CASE("--trace writes a Perfetto-readable trace of every GPU's streams and bounded link counters") {
  const std::string base =
      "train --model llama3.1-8b --cluster pcie-h100x8 --gpus 4 --tp 4 --seq 1024 --global-batch 4";
  const auto step = run_cli(base + " --json");
  REQUIRE(step.exit_code == 0);
  const double end_us = nlohmann::json::parse(step.out)["step_time_s"].get<double>() * 1e6;
  const std::string path = "/tmp/cs_trace_test.json";
  const auto r = run_cli(base + " --trace " + path + " --trace-link-points 50");
  REQUIRE(r.exit_code == 0);
  const auto events = checked_trace(path, end_us);
  const auto full = spans_per_pid(events);
  REQUIRE(full.size() == 4);  // GPUs 0-3; the links process holds counters only
  std::map<std::string, std::size_t> per_link;
  for (const auto& e : events) {
    if (e["ph"] == "C") ++per_link[e["name"].get<std::string>()];
  }
  CHECK(per_link.size() >= 8);  // each GPU's up and down PCIe links carried the all-reduces
  for (const auto& link : per_link) CHECK_MESSAGE(link.second <= 51, link.first);  // 50 buckets, the closing 0
  const std::string again = slurp(path);
  REQUIRE(run_cli(base + " --trace " + path + " --trace-link-points 50").exit_code == 0);
  CHECK(slurp(path) == again);  // the same bytes every time

  // A subset of GPUs: the same spans for the GPUs kept, none for the others, none of their links.
  REQUIRE(run_cli(base + " --trace " + path + " --trace-gpus 1,3").exit_code == 0);
  const auto some = checked_trace(path, end_us);
  const auto kept = spans_per_pid(some);
  CHECK(kept.size() == 2);
  CHECK(kept.at(1) == full.at(1));
  CHECK(kept.at(3) == full.at(3));
  for (const auto& e : some) {
    if (e["ph"] == "C") {
      const std::string name = e["name"];
      CHECK_MESSAGE(name.find("gpu0") == std::string::npos, name);
      CHECK_MESSAGE(name.find("gpu2") == std::string::npos, name);
    }
  }

  // One micro-batch, and a time window.
  REQUIRE(run_cli(base + " --trace " + path + " --trace-micro-batches 1").exit_code == 0);
  std::size_t mb_spans = 0;
  for (const auto& e : checked_trace(path, end_us)) {
    if (e["ph"] != "X") continue;
    ++mb_spans;
    CHECK(e["args"]["micro_batch"] == 1);
  }
  CHECK(mb_spans > 0);
  CHECK(mb_spans < full.at(0) * 4 / 2);
  REQUIRE(run_cli(base + " --trace " + path + " --trace-window 1ms:2ms --trace-link-points 0").exit_code == 0);
  std::size_t in_window = 0;
  for (const auto& e : checked_trace(path, end_us)) {
    CHECK(e["ph"] != "C");
    if (e["ph"] != "X") continue;
    ++in_window;
    CHECK(e["ts"].get<double>() <= 2000.0);
    CHECK(e["ts"].get<double>() + e["dur"].get<double>() >= 1000.0);
  }
  CHECK(in_window > 0);

  // Serving: steps per replica and request spans, windowed the same way.
  REQUIRE(run_cli("infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 256 --output-len 32 --rate 20 "
                  "--requests 40 --trace " +
                  path + " --trace-window 0:0.5s")
              .exit_code == 0);
  std::size_t steps = 0;
  for (const auto& e : checked_trace(path, 0.5e6 + 1e6)) {
    if (e["ph"] != "X") continue;
    CHECK(e["ts"].get<double>() <= 0.5e6);
    steps += e["name"] == "step";
  }
  CHECK(steps > 0);
  std::remove(path.c_str());
}

TEST_CASE("help exits 0 and a missing subcommand is bad input") {
  CHECK(run_cli("--help").exit_code == 0);
  CHECK(run_cli("train --help").exit_code == 0);
  CHECK(run_cli("").exit_code == 2);
}

TEST_CASE("infer --json has the contract's fields, run handles infer scenarios with variants") {
  const auto r = run_cli(
      "infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 256 --output-len 64 --rate inf "
      "--requests 50 --offer cn-8x-h100-sxm --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"ttft_s", "tpot_s", "e2e_s"}) {
    for (const char* p : {"mean", "p50", "p90", "p99"}) CHECK(j[k].contains(p));
  }
  for (const char* k : {"output_tokens_per_s", "output_tokens_per_s_per_gpu", "input_tokens_per_s", "requests_per_s",
                        "max_concurrency", "fits", "cost"}) {
    CHECK_MESSAGE(j.contains(k), k);
  }
  // The engine limits in force, defaults included, and which one bounds concurrency: a 256-sequence
  // max batch, while an H100's KV cache holds far more 320-token sequences of Llama-3.1-8B.
  CHECK(j["engine"]["max_batch"] == 256);
  CHECK(j["engine"]["max_tokens"] == 8192);
  CHECK(j["engine"]["chunked_prefill"] == 0);
  CHECK(j["engine"]["block_size"] == 16);
  CHECK(j["max_concurrency"] == 256);
  CHECK(j["kv_concurrency"].get<std::int64_t>() > 256);
  const auto text = run_cli(
      "infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 256 --output-len 64 --rate inf --requests 50");
  CHECK(text.out.find("bound by max batch, the KV cache would hold") != std::string::npos);
  CHECK(text.out.find("engine limits                 max batch 256 sequences, 8192 tokens per step") !=
        std::string::npos);
  const auto v = run_cli("run scenarios/seed-claims/claim5-qwen72b-tp2-nvlink-vs-pcie.json --json");
  REQUIRE(v.exit_code == 0);
  const auto jv = nlohmann::json::parse(v.out);
  REQUIRE(jv["variants"].size() == 3);
  // NVLink (bridge) against PCIe on the same H100 PCIe cards: TP all-reduces are faster.
  CHECK(jv["variants"][1]["output_tokens_per_s"].get<double>() >
        jv["variants"][2]["output_tokens_per_s"].get<double>());
}

TEST_CASE("infer-sweep prints the latency-throughput curve and writes CSV and SVG") {
  const auto r = run_cli(
      "infer-sweep --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 512 --output-len 128 --requests 200 "
      "--rates 1,4,16 --slo-ttft '500 ms' --csv /tmp/cs-sweep.csv --svg /tmp/cs-sweep.svg");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("TTFT p99") != std::string::npos);
  const auto csv = cs::test::slurp("/tmp/cs-sweep.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
  // The chart: ticks, p50 and p99 of TTFT and TPOT, and the SLO given (only that one).
  const auto svg = cs::test::slurp("/tmp/cs-sweep.svg");
  CHECK(svg.find("class=\"tick x\"") != std::string::npos);
  CHECK(svg.find("class=\"tick y\"") != std::string::npos);
  CHECK(std::count(svg.begin(), svg.end(), '\n') > 20);
  for (const char* name : {">TTFT p50<", ">TTFT p99<", ">TPOT p50<", ">TPOT p99<", ">TTFT SLO 500.0 ms<"}) {
    CHECK_MESSAGE(svg.find(name) != std::string::npos, name);
  }
  CHECK(svg.find("TPOT SLO") == std::string::npos);
}

TEST_CASE("infer-sweep: p50, p90 and p99 as infer prints them, its SLO flags in the table, and --json") {
  const std::string base =
      "infer-sweep --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 512 --output-len 128 --requests 200 "
      "--rates 2,200";
  const auto plain = run_cli(base);
  REQUIRE(plain.exit_code == 0);
  for (const char* col : {"TTFT p50", "TTFT p90", "TTFT p99", "TPOT p90", "e2e p90", "e2e p99"})
    CHECK_MESSAGE(plain.out.find(col) != std::string::npos, col);
  CHECK(plain.out.find("goodput") == std::string::npos);  // no objectives, no goodput column
  // An objective 2 r/s meets and 200 r/s (far past one GPU's rate) misses: the table says which.
  const auto slo = run_cli(base + " --slo-ttft 1s");
  REQUIRE(slo.exit_code == 0);
  CHECK(slo.out.find("goodput r/s") != std::string::npos);
  CHECK(slo.out.find(" met\n") != std::string::npos);
  CHECK(slo.out.find("missed\n") != std::string::npos);
  const auto js = run_cli(base + " --slo-ttft 1s --json");
  REQUIRE(js.exit_code == 0);
  const auto j = nlohmann::json::parse(js.out);
  CHECK(j["slo"]["ttft_s"].get<double>() == 1.0);
  REQUIRE(j["points"].size() == 2);
  CHECK(j["points"][0]["meets_slo_p90"] == true);
  CHECK(j["points"][1]["meets_slo_p90"] == false);
  // Each point is infer's own document: the same figures as infer at that rate.
  const auto one = nlohmann::json::parse(
      run_cli("infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 512 --output-len 128 --requests 200 "
              "--rate 2 --slo-ttft 1s --json")
          .out);
  CHECK(j["points"][0]["result"]["ttft_s"] == one["ttft_s"]);
  CHECK(j["points"][0]["result"]["goodput_requests_per_s"] == one["goodput_requests_per_s"]);
  // p99 is never easier than p90, nor p90 than p50.
  for (const auto& p : j["points"]) {
    for (const char* m : {"ttft_s", "tpot_s", "e2e_s"}) {
      CHECK(p["result"][m]["p50"].get<double>() <= p["result"][m]["p90"].get<double>());
      CHECK(p["result"][m]["p90"].get<double>() <= p["result"][m]["p99"].get<double>());
    }
  }
}

TEST_CASE("the interconnect tutorial's 'Try it yourself' model runs on each of its run commands") {
  // The suggestion is read from the tutorial itself, so the doc and this test cannot drift apart.
  const auto doc = slurp(data_path("docs/tutorials/why-interconnect-matters.md"));
  const auto at = doc.find("--set model=");
  REQUIRE(at != std::string::npos);
  const auto model = doc.substr(at + 12, doc.find('`', at) - (at + 12));
  std::set<std::string> scenarios;
  for (auto p = doc.find("clustersim run "); p != std::string::npos; p = doc.find("clustersim run ", p + 1)) {
    const auto from = p + 15;
    scenarios.insert(doc.substr(from, doc.find_first_of(" \n\\", from) - from));
  }
  REQUIRE(scenarios.size() >= 2);
  for (const auto& sc : scenarios) {
    INFO(sc << " with model " << model);
    const auto r = run_cli("run " + sc + " --set model=" + model);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("input the run does not use as written is a warning in the text and the JSON, never silent") {
  const std::string train = "train --model llama3.1-8b --cluster hgx-h100 --tp 8 --seq 2048 --global-batch 8";
  const auto one_node = run_cli(train + " --fabric ib-ndr-rail --json");
  REQUIRE(one_node.exit_code == 0);
  const auto w = nlohmann::json::parse(one_node.out)["warnings"];
  REQUIRE(w.size() == 1);
  CHECK(w[0].get<std::string>().find("fabric 'ib-ndr-rail' not used") == 0);
  CHECK(nlohmann::json::parse(run_cli(train + " --json").out)["warnings"].empty());
  // Past the model's context (131,072 for Llama 3.1): simulated, and said.
  const auto long_seq = run_cli(
      "train --model llama3.1-8b --cluster hgx-h100 --tp 8 --seq 262144 --global-batch 1 "
      "--recompute full --allow-oom");
  REQUIRE(long_seq.exit_code == 0);
  CHECK(long_seq.out.find("warning: sequence 262144 is past llama3.1-8b's context of 131072") != std::string::npos);
  const auto infer = run_cli(
      "infer --model llama3.1-8b --cluster hgx-h100 --fabric ib-ndr-rail --tp 1 --input-len 128 --output-len 8 "
      "--requests 4 --rate inf --json");
  REQUIRE(infer.exit_code == 0);
  CHECK(nlohmann::json::parse(infer.out)["warnings"][0].get<std::string>().find("fabric") != std::string::npos);
}

TEST_CASE("one output token has no inter-token time: TPOT is null and '-', not 0 ms") {
  const std::string cmd =
      "infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 128 --output-len 1 --requests 4 --rate inf";
  const auto j = nlohmann::json::parse(run_cli(cmd + " --json").out);
  CHECK(j["tpot_s"].is_null());
  CHECK(j["ttft_s"]["p50"].get<double>() > 0);
  const auto text = run_cli(cmd).out;
  CHECK(text.find("(no request generated two tokens)") != std::string::npos);
  CHECK(text.find("0.0 ms") == std::string::npos);
}

TEST_CASE("list models shows the experts' FFN width where every layer is MoE, not ffn 0") {
  const auto r = run_cli("list models");
  REQUIRE(r.exit_code == 0);
  const auto line = [&](const std::string& id) {
    const auto at = r.out.find("\n" + id + " ");
    REQUIRE(at != std::string::npos);
    return r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  CHECK(line("mixtral-8x7b").find("2/8 x 14336") != std::string::npos);
  CHECK(line("gpt-oss-120b").find("4/128 x 2880") != std::string::npos);
  CHECK(line("gpt-oss-120b").find(" 0 ") == std::string::npos);
  CHECK(line("llama3.1-8b").find("14336") != std::string::npos);
}

TEST_CASE("inspect --json writes null for what the evidence does not say, never -1 or an empty string") {
  const auto r = run_cli("inspect --topo tests/data/rental/two-socket-pcie/topo.txt --json");
  REQUIRE(r.exit_code == 0);
  const auto box = nlohmann::json::parse(r.out)["box"];
  CHECK(box["gpus"] == 8);
  CHECK(box["gpu"].is_null());
  CHECK(box["memory_bytes"].is_null());
}

TEST_CASE("import topo names where the PCIe generation came from, and without --profile it asks") {
  const std::string out = "/tmp/cs_import_topo_test.json";
  const auto r = run_cli("import topo tests/data/topo/pcie-8gpu.txt --profile a100-pcie-40 --out " + out);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(slurp(out));
  CHECK(j["profile"] == "a100-pcie-40");
  const auto src = j["source"].get<std::string>();
  CHECK(src.find("PCIe generation 4 by the GPU's name") != std::string::npos);
  CHECK(src.find("given on the command line") == std::string::npos);
  CHECK(run_cli("import topo tests/data/topo/pcie-8gpu.txt --profile h100-pcie --pcie-gen 4 --out " + out).exit_code ==
        0);
  CHECK(slurp(out).find("PCIe generation 4 given on the command line") != std::string::npos);
  std::remove(out.c_str());
}

TEST_CASE("--trace-detail layer folds each layer's later micro-batches into one slice, and full keeps every span") {
  const std::string base =
      "train --model llama3.1-8b --cluster pcie-h100x8 --gpus 4 --tp 4 --seq 1024 --global-batch 4";
  const double end_us = nlohmann::json::parse(run_cli(base + " --json").out)["step_time_s"].get<double>() * 1e6;
  const std::string path = "/tmp/cs_trace_detail_test.json";
  REQUIRE(run_cli(base + " --trace " + path + " --trace-link-points 0 --trace-detail full").exit_code == 0);
  const auto full = checked_trace(path, end_us);
  const auto layer = run_cli(base + " --trace " + path + " --trace-link-points 0");
  REQUIRE(layer.exit_code == 0);
  CHECK(layer.err.find("more folded into per-layer slices") != std::string::npos);
  const auto folded = checked_trace(path, end_us);
  // Per (GPU, stream, micro-batch, layer): micro-batch 0 and step-level spans are the same; later
  // micro-batches' layers are one slice covering exactly what their spans covered, the spans
  // counted in it.
  using Key = std::tuple<int, int, int, int>;
  struct Cover {
    double from = 1e300, to = -1e300;
    std::size_t spans = 0, count = 0;
  };
  const auto covers = [](const nlohmann::json& events) {
    std::map<Key, Cover> out;
    for (const auto& e : events) {
      if (e["ph"] != "X") continue;
      const auto a = e.contains("args") && e["args"].is_object() ? e["args"] : nlohmann::json::object();
      const Key k{e["pid"], e["tid"], a.value("micro_batch", -1), a.value("layer", -1)};
      auto& c = out[k];
      c.from = std::min(c.from, e["ts"].get<double>());
      c.to = std::max(c.to, e["ts"].get<double>() + e["dur"].get<double>());
      c.spans += a.contains("spans") ? a["spans"].get<std::size_t>() : 1;
      ++c.count;
    }
    return out;
  };
  const auto a = covers(full), b = covers(folded);
  REQUIRE(a.size() == b.size());
  std::size_t slices = 0;
  for (const auto& [k, c] : a) {
    const int micro = std::get<2>(k), layer_id = std::get<3>(k);  // CAPTURE cannot name a structured binding
    CAPTURE(micro);
    CAPTURE(layer_id);
    REQUIRE(b.count(k) == 1);
    const auto& d = b.at(k);
    CHECK(d.spans == c.spans);
    CHECK(d.from == doctest::Approx(c.from).epsilon(1e-9));
    CHECK(d.to == doctest::Approx(c.to).epsilon(1e-9));
    if (micro >= 1 && layer_id >= 0) {
      CHECK(d.count < c.count);  // folded
      ++slices;
    } else {
      CHECK(d.count == c.count);  // micro-batch 0 and step-level tasks in full
    }
  }
  CHECK(slices > 0);
  std::remove(path.c_str());
}

TEST_CASE("run and validate take a collective document (the seed claims' kind) as the claims time it") {
  const auto r = run_cli("run scenarios/seed-claims/claim7-allreduce-8gpu.json --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["variants"].size() == 2);
  // NVSwitch moves the gigabyte faster than PCIe, and busbw = algbw x 2(n-1)/n for an all-reduce.
  CHECK(j["variants"][0]["time_s"].get<double>() < j["variants"][1]["time_s"].get<double>());
  for (const auto& v : j["variants"])
    CHECK(v["busbw_GBps"].get<double>() == doctest::Approx(v["algbw_GBps"].get<double>() * 2 * 7 / 8));
  CHECK(run_cli("validate scenarios/seed-claims/claim7-allreduce-8gpu.json").exit_code == 0);
  CHECK(run_cli("run scenarios/seed-claims/claim7-allreduce-8gpu.json --trace /tmp/x.json").exit_code == 2);
}
