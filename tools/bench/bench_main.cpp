// cs_bench: speed of the simulator itself (not a test: it prints figures).
//   cs_bench                 the single-node cases (Llama-3.1-8B TP8, 64 micro-batches)
//   cs_bench scale [DP]      Llama-3.1-405B on DP x 128 H100 (TP8 PP16, seq 8192, 16 micro-batches
//                            per replica; DP 128 = the 16,384-GPU, 16M-token step of the issue)
//   cs_bench scale DP --symmetry dp   the same with one simulated data-parallel replica
//   cs_bench rail [NODES]    one 1 GiB ring all-reduce over NODES x 8 H100 (default 2,048 nodes =
//                            16,384 GPUs) on ib-ndr-rail and on one flat switch with the same NICs
//   cs_bench gpt3 [NODES]    GPT-3 175B, TP4 PP6 VPP8, FP8, ZeRO-1, SP, 6 micro-batches per replica,
//                            --symmetry dp, on NODES HGX H100 (default 1,452 = 11,616 GPUs, the
//                            size of NVIDIA's MLPerf Training v4.0 GPT-3 submission) over ib-ndr-rail
//   cs_bench deepseek [--symmetry dp]   DeepSeek-V3 training as published: 2,048 H800 (256 nodes,
//                            ib-400g-h800), PP16 EP64 ZeRO-1, FP8, seq 4096, 15,360 sequences
//   cs_bench deepseek-serve  DeepSeek-R1 FP8 serving on 8x H200 (TP8 EP8), 5,000 requests
//   cs_bench sweep           a 1,000-point `clustersim sweep` of Llama-3.1-8B training steps on one
//                            HGX H100: TP 1/2/4/8 x micro-batch 1/2 x 125 sequence lengths
// CS_THREADS=N caps the worker threads (default: all cores); CS_ENGINE=serial runs one partition.
// Each case prints tasks, events, flows, the wall time of every phase and the peak resident memory.
#include <sys/resource.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "sim/config/catalog.hpp"
#include "sim/config/cluster_file.hpp"
#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/parallel.hpp"
#include "sim/core/quantity.hpp"
#include "sim/report/serving_results.hpp"
#include "sim/report/train_results.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/study/serving_run.hpp"
#include "sim/sweep/sweep_file.hpp"
#include "sim/sweep/sweep_run.hpp"
#include "sim/workload/collective_timing.hpp"

#ifndef CLUSTERSIM_DATA_DIR
#define CLUSTERSIM_DATA_DIR "."
#endif

namespace {

double peak_rss_gib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is in KiB on Linux
}

void run_case(const cs::config::Catalog& catalog, const std::string& name, const nlohmann::json& j) {
  const auto spec = cs::config::parse_scenario(cs::config::JsonDoc{"bench", j}).specs.at(0);
  const auto s = cs::config::resolve(spec, catalog, "bench");
  cs::study::RunOptions opt;
  opt.single_gpu_baseline = false;
  opt.partition = std::getenv("CS_ENGINE") == nullptr || std::string(std::getenv("CS_ENGINE")) != "serial";
  const auto r = cs::report::train_results(s, cs::study::run_training(s, opt));
  const auto& p = r.phase_s;
  const double sim_s = p.simulate;
  std::cout << name << "\n"
            << "  gpus " << r.gpus << ", events " << r.events << ", flows " << r.flows << ", partitions "
            << r.partitions << ", windows " << r.windows << "\n"
            << "  wall " << cs::fixed(r.wall_s, 3) << " s: topology " << cs::fixed(p.topology, 3) << ", graph "
            << cs::fixed(p.graph, 3) << ", simulate " << cs::fixed(sim_s, 3) << ", metrics " << cs::fixed(p.metrics, 3)
            << " (" << cs::fixed(static_cast<double>(r.events) / sim_s / 1e6, 2) << " M events/s)\n"
            << "  peak memory " << cs::fixed(peak_rss_gib(), 2) << " GiB (process, so far)\n"
            << "  simulated step " << cs::fixed(r.step_time_s, 6) << " s, MFU " << cs::fixed(r.mfu * 100, 2) << "%\n";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// DeepSeek-R1 with FP8 weights on 8x H200 (TP8, experts spread over the 8 GPUs): 5,000 requests
/// of 1,000 + 1,000 tokens, 256 in flight.
int run_serving_case(const cs::config::Catalog& catalog) {
  const nlohmann::json j = {
      {"kind", "infer"},
      {"model", "deepseek-r1"},
      {"cluster", "hgx-h200"},
      {"parallel", {{"tp", 8}, {"ep", 8}}},
      {"quantization", {{"weights", "fp8"}}},
      {"workload", {{"input_len", 1000}, {"output_len", 1000}, {"requests", 5000}, {"concurrency", 256}}}};
  const auto t0 = std::chrono::steady_clock::now();
  const auto s = cs::config::parse_serving(cs::config::JsonDoc{"bench", j}, catalog);
  const auto r = cs::report::serving_results(s, cs::study::run_serving(s));
  const double wall = seconds_since(t0);
  std::cout << "deepseek-r1 FP8 TP8 EP8 on 8x H200, 5,000 requests (1,000 in, 1,000 out, 256 in flight)\n"
            << "  wall " << cs::fixed(wall, 3) << " s, events " << r.events << ", engine steps " << r.steps << "\n"
            << "  peak memory " << cs::fixed(peak_rss_gib(), 2) << " GiB (process, so far)\n"
            << "  simulated makespan " << cs::fixed(r.makespan_s, 3) << " s, "
            << cs::fixed(r.output_tokens_per_s_per_gpu, 1) << " output tokens/s per GPU\n";
  return 0;
}

/// One 1 GiB ring all-reduce over every GPU of `nodes` HGX H100 nodes, on the rail fabric and on
/// one flat switch with the same NICs (the same flows, fewer shared links): the flow model's cost
/// should follow the flows, not the fabric's tiers.
void run_rail(const cs::config::Catalog& catalog, int nodes) {
  using cs::config::CatalogKind;
  const auto cluster = cs::config::parse_cluster(
      cs::config::load(catalog.locate(CatalogKind::kCluster, "hgx-h100", "bench", "/cluster")), "hgx-h100");
  const auto profile = cs::config::parse_profile(
      cs::config::load(catalog.locate(CatalogKind::kProfile, cluster.profile, "bench", "/profile")), cluster.profile);
  const auto rail = cs::config::parse_fabric(
      cs::config::load(catalog.locate(CatalogKind::kFabric, "ib-ndr-rail", "bench", "/fabric")), "ib-ndr-rail");
  auto flat = rail;
  flat.kind = cs::net::FabricKind::kSingleSwitch;
  double wall[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto topo = cs::net::Topology::build(cluster, cluster.gpus, nodes, k == 0 ? rail : flat);
    const double topology_s = seconds_since(t0);
    std::vector<int> ranks(static_cast<std::size_t>(topo.gpu_count()));
    for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r] = static_cast<int>(r);
    const auto t = cs::workload::time_collective(topo, cs::coll::CollectiveOp::kAllReduce, cs::coll::Algorithm::kRing,
                                                 ranks, 1024.0 * 1024 * 1024, profile.collective_latency.value);
    wall[k] = seconds_since(t0);
    std::cout << "ring all-reduce, 1 GiB, " << topo.gpu_count() << " H100, "
              << (k == 0 ? "ib-ndr-rail" : "one flat switch (ib-ndr-rail's NICs)") << "\n"
              << "  wall " << cs::fixed(wall[k], 3) << " s: topology " << cs::fixed(topology_s, 3) << ", collective "
              << cs::fixed(wall[k] - topology_s, 3) << "\n"
              << "  peak memory " << cs::fixed(peak_rss_gib(), 2) << " GiB (process, so far)\n"
              << "  simulated " << cs::fixed(t.seconds * 1e3, 3) << " ms, busbw "
              << cs::fixed(t.busbw_bytes_per_s / 1e9, 2) << " GB/s\n";
  }
  std::cout << "rail / flat wall time: " << cs::fixed(wall[0] / wall[1], 2) << "\n";
}

/// A whole number from lo to hi given on the command line, read with from_chars (no wrap, no
/// trailing text); 0 after saying what was expected, so the caller exits 2.
int count_arg(std::string_view arg, int lo, int hi, const char* what) {
  int v = 0;
  const auto r = std::from_chars(arg.data(), arg.data() + arg.size(), v);
  if (r.ec != std::errc{} || r.ptr != arg.data() + arg.size() || v < lo || v > hi) {
    std::cerr << what << ": expected a whole number from " << lo << " to " << hi << "; got '" << arg << "'\n";
    return 0;
  }
  return v;
}

/// A 1,000-point sweep of single-node training steps, as `clustersim sweep` runs it (parse, expand,
/// every point resolved, checked and simulated on the workers): the sweep figure.
int run_sweep_case(const cs::config::Catalog& catalog) {
  nlohmann::json seqs = nlohmann::json::array();
  for (int i = 0; i < 125; ++i) seqs.push_back(1024 + 16 * i);
  const nlohmann::json j = {
      {"base",
       {{"model", "llama3.1-8b"},
        {"cluster", "hgx-h100"},
        {"parallel", {{"tp", 1}, {"zero", 1}}},
        {"training", {{"seq", 2048}, {"global_batch", 32}, {"micro_batch", 1}}}}},
      {"axes", {{"/parallel/tp", {1, 2, 4, 8}}, {"/training/micro_batch", {1, 2}}, {"/training/seq", seqs}}}};
  const auto t0 = std::chrono::steady_clock::now();
  const auto spec = cs::sweep::parse_sweep(cs::config::JsonDoc{"bench sweep", j}, catalog);
  const auto rows = cs::sweep::run_points(
      spec, cs::sweep::shard_indices(spec.points.size(), 0, 1), catalog, {}, nullptr, [](const cs::sweep::Row&) {},
      nullptr);
  const double wall = seconds_since(t0);
  std::size_t ok = 0;
  for (const auto& r : rows) ok += r.status == cs::sweep::Status::kOk ? 1 : 0;
  std::cout << "sweep: " << rows.size() << " points of llama3.1-8b on one hgx-h100 (TP 1/2/4/8 x micro-batch 1/2 x "
            << seqs.size() << " sequence lengths, 32 sequences, ZeRO-1)\n"
            << "  " << ok << " ok, " << rows.size() - ok << " infeasible or invalid\n"
            << "  wall " << cs::fixed(wall, 2) << " s (" << cs::fixed(wall / static_cast<double>(rows.size()) * 1e3, 1)
            << " ms per point), peak memory " << cs::fixed(peak_rss_gib(), 2) << " GiB\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const cs::config::Catalog catalog(CLUSTERSIM_DATA_DIR);
  // CS_THREADS caps the worker threads (the parallel engine's partitions), like --threads.
  const cs::ThreadLimit limit(std::getenv("CS_THREADS") ? std::atoi(std::getenv("CS_THREADS")) : 0);
  const std::string which = argc > 1 ? argv[1] : "node";
  if (which == "scale") {
    const int dp = argc > 2 ? count_arg(argv[2], 1, 4096, "cs_bench scale DP") : 128;
    if (dp == 0) return 2;
    const std::string symmetry = argc > 4 && std::string(argv[3]) == "--symmetry" ? argv[4] : "none";
    nlohmann::json j = {
        {"model", "llama3.1-405b"},
        {"cluster", "hgx-h100"},
        {"nodes", 16 * dp},
        {"fabric", "ib-ndr-rail"},
        {"parallel", {{"tp", 8}, {"pp", 16}, {"dp", dp}, {"sp", true}, {"zero", 1}}},
        {"training", {{"seq", 8192}, {"global_batch", 16 * dp}, {"micro_batch", 1}, {"recompute", "full"}}}};
    if (symmetry != "none") j["symmetry"] = symmetry;
    run_case(catalog,
             "llama3.1-405b TP8 PP16 DP" + std::to_string(dp) + " on " + std::to_string(128 * dp) +
                 " H100 (ib-ndr-rail), symmetry " + symmetry,
             j);
    return 0;
  }
  if (which == "rail") {
    const int nodes = argc > 2 ? count_arg(argv[2], 1, 16384, "cs_bench rail NODES") : 2048;
    if (nodes == 0) return 2;
    run_rail(catalog, nodes);
    return 0;
  }
  if (which == "gpt3") {
    // Three nodes (24 GPUs) make one TP4 x PP6 replica.
    const int nodes = argc > 2 ? count_arg(argv[2], 1, 16384, "cs_bench gpt3 NODES") : 1452;
    if (nodes == 0) return 2;
    if (nodes % 3 != 0) {
      std::cerr << "cs_bench gpt3 NODES: expected a multiple of 3 (one TP4 x PP6 replica is 24 GPUs); got " << nodes
                << "\n";
      return 2;
    }
    const int dp = nodes * 8 / 24;
    const nlohmann::json j = {
        {"model", "gpt3-175b"},
        {"cluster", "hgx-h100"},
        {"nodes", nodes},
        {"fabric", "ib-ndr-rail"},
        {"symmetry", "dp"},
        {"parallel", {{"tp", 4}, {"pp", 6}, {"vpp", 8}, {"dp", dp}, {"sp", true}, {"zero", 1}}},
        {"training", {{"seq", 2048}, {"global_batch", 6 * dp}, {"micro_batch", 1}, {"dtype", "fp8"}}}};
    run_case(catalog,
             "gpt3-175b TP4 PP6 VPP8 DP" + std::to_string(dp) + " FP8 on " + std::to_string(8 * nodes) +
                 " H100 (ib-ndr-rail), symmetry dp",
             j);
    return 0;
  }
  if (which == "deepseek") {
    const std::string symmetry = argc > 3 && std::string(argv[2]) == "--symmetry" ? argv[3] : "none";
    nlohmann::json j = {{"model", "deepseek-v3"},
                        {"cluster", "hgx-h800"},
                        {"nodes", 256},
                        {"fabric", "ib-400g-h800"},
                        {"allow_oom", true},  // our activation model lacks DeepSeek's partial recompute (docs/moe.md)
                        {"parallel", {{"tp", 1}, {"pp", 16}, {"ep", 64}, {"zero", 1}}},
                        {"training", {{"seq", 4096}, {"global_batch", 15360}, {"micro_batch", 1}, {"dtype", "fp8"}}}};
    if (symmetry != "none") j["symmetry"] = symmetry;
    run_case(catalog, "deepseek-v3 PP16 EP64 ZeRO-1 FP8 on 2,048 H800 (ib-400g-h800), symmetry " + symmetry, j);
    return 0;
  }
  if (which == "deepseek-serve") return run_serving_case(catalog);
  if (which == "sweep") return run_sweep_case(catalog);
  for (const char* cluster : {"hgx-h100", "pcie-h100x8"}) {
    const nlohmann::json j = {{"model", "llama3.1-8b"},
                              {"cluster", cluster},
                              {"parallel", {{"tp", 8}}},
                              {"training", {{"seq", 8192}, {"global_batch", 64}, {"micro_batch", 1}}}};
    run_case(catalog, std::string("llama3.1-8b TP8, 64 micro-batches, ") + cluster, j);
  }
  return 0;
}
