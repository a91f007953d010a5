// clustersim-probe: measures this machine's GPUs and writes a HardwareProfile (with the raw
// measurements) for the simulator. `clustersim calibrate` runs it; it links the CUDA libraries
// so that the main binary does not.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "calibration/probe/measurements.hpp"
#include "calibration/probe/nvml_loader.hpp"
#include "calibration/profile/fitting.hpp"
#include "calibration/profile/hardware_profile.hpp"
#include "calibration/profile/profile_writer.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/core/quantity.hpp"

#ifndef CLUSTERSIM_DATA_DIR
#define CLUSTERSIM_DATA_DIR "."
#endif

namespace {

constexpr const char* kProbeVersion = "2";

std::vector<int> parse_gpus(const std::string& s, int count) {
  std::vector<int> out;
  if (s.empty()) {
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  std::stringstream in(s);
  for (std::string tok; std::getline(in, tok, ',');) {
    char* end = nullptr;
    const long v = std::strtol(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0' || v < 0 || v >= count) {
      throw cs::InputError(
          "command line", "--gpus",
          "expected GPU indices from 0 to " + std::to_string(count - 1) + " separated by commas; got '" + s + "'");
    }
    out.push_back(static_cast<int>(v));
  }
  return out;
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int run(int argc, char** argv) {
  CLI::App app{"clustersim-probe: measure this machine's GPUs into a clustersim hardware profile"};
  std::string gpus_arg, out, base, data_dir = CLUSTERSIM_DATA_DIR;
  bool quick = false;
  app.add_option("--gpus", gpus_arg, "GPU indices, e.g. 0,1 (default: all)");
  app.add_flag("--quick", quick, "fewer shapes and sizes (about a minute)");
  app.add_option("--out", out, "profile JSON to write")->required();
  app.add_option("--base", base, "datasheet profile to start from (default: matched from the GPU name)");
  app.add_option("--data-dir", data_dir, "folder holding calibration/profiles");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: command line: " << e.what() << " (see --help)\n";
    return 2;
  }
  const auto t_start = std::chrono::steady_clock::now();
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    throw cs::DeviceError(std::string("no CUDA GPU is visible (cudaGetDeviceCount: ") +
                          (e == cudaSuccess ? "0 devices" : cudaGetErrorString(e)) + "); calibration needs a GPU");
  }
  const auto gpus = parse_gpus(gpus_arg, count);
  cs::probe::Nvml nvml;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  nlohmann::ordered_json raw;
  raw["probe_version"] = kProbeVersion;
  raw["date"] = today();
  raw["quick"] = quick;
  raw["versions"] = {{"cuda_driver", driver},
                     {"cuda_runtime", runtime},
                     {"cublaslt", static_cast<long long>(cublasLtGetVersion())},
                     {"nvml", nvml.available() ? "loaded" : nvml.why_not()}};
  std::vector<cudaDeviceProp> props(gpus.size());
  std::vector<std::string> bus(gpus.size());
  auto devices = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    CS_CUDA(cudaGetDeviceProperties(&props[i], gpus[i]), gpus[i]);
    char b[32] = {};
    CS_CUDA(cudaDeviceGetPCIBusId(b, sizeof b, gpus[i]), gpus[i]);
    bus[i] = b;
    const auto f = nvml.facts(bus[i]);
    devices.push_back({{"index", gpus[i]},
                       {"name", props[i].name},
                       {"pci_bus_id", bus[i]},
                       {"memory_bytes", static_cast<double>(props[i].totalGlobalMem)},
                       {"sm_count", props[i].multiProcessorCount},
                       {"compute_capability", std::to_string(props[i].major) + "." + std::to_string(props[i].minor)},
                       {"sm_clock_max_mhz", f.sm_clock_max_mhz},
                       {"sm_clock_now_mhz", f.sm_clock_now_mhz},
                       {"mem_clock_max_mhz", f.mem_clock_max_mhz},
                       {"power_limit_w", f.power_limit_w},
                       {"pcie_gen_current", f.pcie_gen_current},
                       {"pcie_gen_max", f.pcie_gen_max},
                       {"pcie_width_current", f.pcie_width_current},
                       {"pcie_width_max", f.pcie_width_max},
                       {"nvlink_active_links", f.nvlink_active},
                       {"driver_version", f.driver_version}});
  }
  raw["devices"] = devices;
  auto matrix = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    auto row = nlohmann::ordered_json::array();
    for (std::size_t j = 0; j < gpus.size(); ++j) row.push_back(i == j ? "X" : nvml.relation(bus[i], bus[j]));
    matrix.push_back(row);
  }
  raw["topology"] = matrix;

  const int g0 = gpus.front();
  const auto& p0 = props.front();
  std::cerr << "probing " << gpus.size() << "x " << p0.name << (quick ? " (quick)" : "") << "\n";
  const auto gemm = cs::probe::probe_gemm(g0, quick, p0.major, p0.minor);
  const auto hbm = cs::probe::probe_hbm(g0, quick, p0.multiProcessorCount);
  const auto launch = cs::probe::probe_launch_overhead(g0);
  const auto host = cs::probe::probe_host_copy(g0, quick);
  const auto p2p = cs::probe::probe_p2p(gpus, quick, p0.multiProcessorCount);
  std::string nccl_version;
  const auto nccl = cs::probe::probe_nccl(gpus, quick, nccl_version);
  raw["versions"]["nccl"] = nccl_version;

  auto jg = nlohmann::ordered_json::array();
  for (const auto& g : gemm) {
    jg.push_back({{"dtype", g.dtype},
                  {"m", g.m},
                  {"n", g.n},
                  {"k", g.k},
                  {"time_median_s", g.time.median},
                  {"time_min_s", g.time.min},
                  {"time_max_s", g.time.max},
                  {"time_p99_s", g.time.p99},
                  {"iterations", g.time.iterations},
                  {"flops_per_s", g.flops_per_s},
                  {"correct", g.correct},
                  {"note", g.note}});
  }
  raw["gemm"] = jg;
  auto jh = nlohmann::ordered_json::array();
  for (const auto& h : hbm) {
    jh.push_back({{"kernel", h.kernel},
                  {"bytes", h.bytes},
                  {"time_median_s", h.time.median},
                  {"time_min_s", h.time.min},
                  {"time_max_s", h.time.max},
                  {"bytes_per_s", h.bytes_per_s}});
  }
  raw["hbm"] = jh;
  raw["launch_overhead_s"] = {{"median", launch.median}, {"min", launch.min}, {"max", launch.max}, {"p99", launch.p99}};
  raw["host_copy"] = {{"h2d_bytes_per_s", host.h2d_bytes_per_s}, {"d2h_bytes_per_s", host.d2h_bytes_per_s}};
  auto jp = nlohmann::ordered_json::array();
  for (const auto& p : p2p) {
    jp.push_back({{"src", p.src},
                  {"dst", p.dst},
                  {"access", p.access},
                  {"ce_bytes_per_s", p.ce_bytes_per_s},
                  {"sm_bytes_per_s", p.sm_bytes_per_s},
                  {"latency_s", p.latency_s}});
  }
  raw["p2p"] = jp;
  auto jn = nlohmann::ordered_json::array();
  for (const auto& r : nccl) {
    auto rows = nlohmann::ordered_json::array();
    for (const auto& row : r.rows) {
      rows.push_back({{"bytes", row.bytes},
                      {"time_s", row.time_s},
                      {"algbw_bytes_per_s", row.algbw},
                      {"busbw_bytes_per_s", row.busbw},
                      {"wrong", row.wrong}});
    }
    jn.push_back({{"op", r.op}, {"gpus", r.gpus}, {"rows", rows}});
  }
  raw["nccl"] = jn;
  if (gpus.size() < 2) {
    raw["not_measured"] =
        "one GPU: no P2P and no multi-GPU NCCL; link and collective rates keep their datasheet or imported sources";
  }

  // The profile: the datasheet profile of this GPU, with every measured figure replaced.
  const cs::config::Catalog catalog(data_dir);
  if (base.empty()) {
    for (const auto& id : catalog.ids(cs::config::CatalogKind::kProfile)) {
      const auto p = cs::config::parse_profile(
          cs::config::load(catalog.locate(cs::config::CatalogKind::kProfile, id, "", "")), id);
      if (p.origin == cs::calib::Provenance::kDatasheet && p.gpu_name.rfind(p0.name, 0) == 0) base = id;
    }
    if (base.empty()) {
      throw cs::InputError("command line", "--base",
                           std::string("no shipped datasheet profile names the GPU '") + p0.name + "'; pass --base ID");
    }
  }
  auto profile = cs::config::parse_profile(
      cs::config::load(catalog.locate(cs::config::CatalogKind::kProfile, base, "command line", "--base")), base);
  profile.id = std::filesystem::path(out).stem().string();
  profile.origin = cs::calib::Provenance::kMeasured;
  profile.source = std::string("clustersim-probe v") + kProbeVersion + " on " + std::to_string(gpus.size()) + "x " +
                   p0.name + ", " + raw["date"].get<std::string>() + (quick ? " (--quick)" : "") +
                   "; unmeasured figures from " + base;
  profile.device = {{"name", p0.name},
                    {"sm_count", std::to_string(p0.multiProcessorCount)},
                    {"compute_capability", std::to_string(p0.major) + "." + std::to_string(p0.minor)},
                    {"memory_bytes", std::to_string(p0.totalGlobalMem)},
                    {"cuda_driver", std::to_string(driver)},
                    {"cuda_runtime", std::to_string(runtime)},
                    {"nccl", nccl_version}};
  profile.hbm_capacity = {static_cast<double>(p0.totalGlobalMem), cs::calib::Provenance::kMeasured,
                          "cudaGetDeviceProperties totalGlobalMem"};
  for (const auto& g : gemm) {
    cs::calib::Dtype d{};
    if (!g.correct || !cs::calib::parse_dtype(g.dtype, d)) continue;
    profile.gemm_table.push_back(
        {d, static_cast<double>(g.m), static_cast<double>(g.n), static_cast<double>(g.k), g.flops_per_s});
  }
  if (profile.matrix_peak.count(cs::calib::Dtype::kBf16)) {
    auto fit = cs::calib::fit_gemm_efficiency(profile.gemm_table, cs::calib::Dtype::kBf16,
                                              profile.matrix_peak.at(cs::calib::Dtype::kBf16).value);
    fit.source =
        "fitted to this run's bf16 cuBLASLt sweep (least squares in log space); GEMM times interpolate the measured "
        "table";
    if (fit.max_fraction > 0) profile.gemm = fit;
  }
  double best_copy = 0;
  for (const auto& h : hbm) {
    if (h.kernel == "copy") best_copy = std::max(best_copy, h.bytes_per_s);
  }
  profile.hbm_fraction = {best_copy / profile.hbm_bandwidth.value, cs::calib::Provenance::kMeasured,
                          "largest-buffer copy kernel (16-byte loads and stores, chip filled) / datasheet bandwidth"};
  profile.kernel_overhead = {launch.median, cs::calib::Provenance::kMeasured,
                             "median time per kernel of 1000 back-to-back empty kernels on one stream"};
  for (const auto& r : nccl) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& row : r.rows) pts.emplace_back(row.bytes, row.time_s);
    const auto fit = cs::calib::fit_alpha_beta(pts);
    const double factor = r.op == "allreduce"  ? 2.0 * (r.gpus - 1) / r.gpus
                          : r.op == "sendrecv" ? 1.0
                                               : (r.gpus - 1.0) / r.gpus;
    profile.collectives.push_back({r.op, r.gpus, 1, "", fit.alpha_s, fit.bytes_per_s * factor,
                                   cs::calib::Provenance::kMeasured,
                                   "NCCL " + nccl_version + " in one process, fitted alpha-beta (max error " +
                                       cs::fixed(fit.max_relative_error * 100, 1) + "%)",
                                   pts});
  }
  // The measured kernel tables, in the columns and units of the shipped ones (calibration/kernels/):
  // gemm_perf.csv from the bf16/fp8 grid, nccl_perf.csv from the NCCL runs. The profile takes them
  // first and the public tables of its base profile for what the probe does not measure.
  const std::filesystem::path out_path(out);
  const std::string tables_name = out_path.stem().string() + ".kernels";
  const std::filesystem::path tables_dir = out_path.parent_path() / tables_name;
  std::filesystem::create_directories(tables_dir);
  {
    std::ofstream f(tables_dir / "gemm_perf.csv");
    if (!f) throw cs::InputError((tables_dir / "gemm_perf.csv").string(), "", "cannot write this file");
    f << "gemm_dtype,m,n,k,latency\n";
    char buf[64];
    for (const auto& g : gemm) {
      if (!g.tabled || !g.correct || g.time.median <= 0) continue;
      std::snprintf(buf, sizeof buf, "%.6g", g.time.median * 1e3);
      f << (g.dtype == "bf16" ? "bfloat16" : g.dtype) << ',' << g.m << ',' << g.n << ',' << g.k << ',' << buf << '\n';
    }
  }
  if (!nccl.empty()) {
    std::ofstream f(tables_dir / "nccl_perf.csv");
    if (!f) throw cs::InputError((tables_dir / "nccl_perf.csv").string(), "", "cannot write this file");
    f << "op_name,nccl_dtype,num_gpus,message_size,latency\n";
    char buf[64];
    for (const auto& r : nccl) {
      const std::string op = r.op == "allreduce"       ? "all_reduce"
                             : r.op == "allgather"     ? "all_gather"
                             : r.op == "reducescatter" ? "reduce_scatter"
                             : r.op == "alltoall"      ? "alltoall"
                                                       : "";
      if (op.empty()) continue;
      for (const auto& row : r.rows) {
        if (row.bytes < 4 || row.time_s <= 0) continue;
        std::snprintf(buf, sizeof buf, "%.6g", row.time_s * 1e3);
        f << op << ",float," << r.gpus << ',' << static_cast<long long>(row.bytes / 4) << ',' << buf << '\n';
      }
    }
  }
  {
    cs::calib::KernelTableRef own;
    own.id = "./" + tables_name;
    own.provenance = cs::calib::Provenance::kMeasured;
    own.gemm_quantizes_input = false;
    own.source = std::string("clustersim-probe v") + kProbeVersion + " on " + p0.name + ", " +
                 raw["date"].get<std::string>() +
                 ": cuBLASLt (its heuristic's first algorithm, TN, fp32 accumulation) on random operands, median of "
                 "CUDA-event timings; fp8 rows take inputs already in FP8 (no quantisation in the time)" +
                 (nccl.empty() ? "" : "; NCCL " + nccl_version + " in one process");
    auto refs = profile.kernel_tables.refs;
    profile.kernel_tables.refs.clear();
    profile.kernel_tables.refs.push_back(own);
    for (const auto& r : refs) profile.kernel_tables.refs.push_back(r);
    profile.kernel_tables.listed = profile.kernel_tables.refs.size() > 1;
  }
  const auto j = cs::calib::profile_to_json(profile, raw);
  (void)cs::config::parse_profile(cs::config::JsonDoc{out, nlohmann::json::parse(j.dump())}, profile.id);
  const std::string tmp = out + ".partial";
  {
    std::ofstream f(tmp);
    if (!f) throw cs::InputError(out, "", "cannot write this file");
    f << j.dump(2) << "\n";
  }
  std::filesystem::rename(tmp, out);

  // One-screen summary.
  std::cout << "clustersim-probe " << kProbeVersion << ": " << gpus.size() << "x " << p0.name << " (CC " << p0.major
            << "." << p0.minor << ", " << p0.multiProcessorCount << " SMs, "
            << cs::human_bytes(static_cast<double>(p0.totalGlobalMem)) << "), driver " << driver << ", runtime "
            << runtime << ", NCCL " << nccl_version << "\n";
  for (const std::string dt : {"bf16", "fp16", "tf32", "fp8"}) {
    double best = 0;
    for (const auto& g : gemm) {
      if (g.dtype == dt && g.correct) best = std::max(best, g.flops_per_s);
    }
    if (best <= 0) continue;
    cs::calib::Dtype d{};
    (void)cs::calib::parse_dtype(dt, d);
    const double peak = profile.matrix_peak.count(d) ? profile.matrix_peak.at(d).value : 0;
    std::cout << "  GEMM " << std::left << std::setw(5) << dt << std::right << " best " << std::setw(8)
              << cs::fixed(best / 1e12, 1) << " TFLOP/s"
              << (peak > 0 ? " (" + cs::fixed(100 * best / peak, 0) + "% of datasheet)" : "") << "\n";
  }
  std::cout << "  HBM copy     " << cs::fixed(best_copy / 1e9, 0) << " GB/s ("
            << cs::fixed(100 * profile.hbm_fraction.value, 0) << "% of "
            << cs::fixed(profile.hbm_bandwidth.value / 1e9, 0) << ")\n"
            << "  kernel       " << cs::fixed(launch.median * 1e6, 2) << " us per back-to-back kernel\n"
            << "  host copies  H2D " << cs::fixed(host.h2d_bytes_per_s / 1e9, 1) << " GB/s, D2H "
            << cs::fixed(host.d2h_bytes_per_s / 1e9, 1) << " GB/s\n";
  for (const auto& c : profile.collectives) {
    std::cout << "  NCCL " << std::left << std::setw(14) << c.op << std::right << " x" << c.gpus << "  busbw "
              << cs::fixed(c.busbw_bytes_per_s / 1e9, 1) << " GB/s, alpha " << cs::fixed(c.alpha_s * 1e6, 1) << " us\n";
  }
  std::cout << "  wrote " << out << " in "
            << cs::fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(), 1)
            << " s\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const cs::InputError& e) {
    for (const auto& p : e.problems()) std::cerr << "error: " << p.to_string() << "\n";
    return 2;
  } catch (const cs::DeviceError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "internal error, please report: " << e.what() << "\n";
    return 70;
  }
}
