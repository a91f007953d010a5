#pragma once
// The probe's measurements, one function each (nccl-tests' design: warm-up apart from timed
// iterations, CUDA events, median and spread, a correctness check of every result).
#include <cstdint>
#include <string>
#include <vector>

#include "calibration/probe/probe_support.hpp"

namespace cs::probe {

struct GemmResult {
  std::string dtype;
  std::int64_t m = 0, n = 0, k = 0;
  Stats time;
  double flops_per_s = 0;  ///< 2 m n k / median time
  bool correct = false;
  std::string note;     ///< why a shape was skipped (no cuBLASLt algorithm)
  bool tabled = false;  ///< a bf16/fp8 grid shape, written to gemm_perf.csv
};
/// cuBLASLt GEMMs (TN layout, fp32 accumulation) over LLM shapes; fp8 only on sm_89 and newer.
[[nodiscard]] std::vector<GemmResult> probe_gemm(int gpu, bool quick, int cc_major, int cc_minor);

struct HbmResult {
  std::string kernel;  ///< read, write, copy
  double bytes = 0;    ///< buffer size
  Stats time;
  double bytes_per_s = 0;  ///< bytes moved (copy counts read + write) / median time
};
[[nodiscard]] std::vector<HbmResult> probe_hbm(int gpu, bool quick, int sm_count);

/// Back-to-back empty kernels on one stream: seconds per kernel.
[[nodiscard]] Stats probe_launch_overhead(int gpu);

struct HostCopy {
  double h2d_bytes_per_s = 0, d2h_bytes_per_s = 0;
};
[[nodiscard]] HostCopy probe_host_copy(int gpu, bool quick);

struct PeerResult {
  int src = 0, dst = 0;
  bool access = false;
  double ce_bytes_per_s = 0;  ///< cudaMemcpyPeerAsync (copy engines)
  double sm_bytes_per_s = 0;  ///< a copy kernel on src writing into dst's memory
  double latency_s = 0;       ///< a 4-byte peer copy, median
};
[[nodiscard]] std::vector<PeerResult> probe_p2p(const std::vector<int>& gpus, bool quick, int sm_count);

struct NcclRow {
  double bytes = 0, time_s = 0, algbw = 0, busbw = 0;
  int wrong = 0;
};
struct NcclRun {
  std::string op;
  int gpus = 0;
  std::vector<NcclRow> rows;
};
/// NCCL in one process over all chosen GPUs: all-reduce, all-gather, reduce-scatter, all-to-all,
/// send/recv from 8 B to 1 GiB (quick: 256 MiB). Empty when NCCL was not found at build time.
[[nodiscard]] std::vector<NcclRun> probe_nccl(const std::vector<int>& gpus, bool quick, std::string& version);

}  // namespace cs::probe
