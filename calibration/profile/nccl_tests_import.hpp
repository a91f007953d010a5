#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cs::calib {

/// The most GPUs an imported nccl-tests run may span (nGpus x nThread, or its "#  Rank" lines).
inline constexpr int kMaxImportGpus = 1 << 20;

/// One nccl-tests result file, read: which collective, on how many GPUs, which devices, and the
/// out-of-place rows (size in bytes, time in seconds, algbw and busbw in bytes/s).
struct NcclTestsRun {
  std::string file;
  std::string op;  ///< "allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"
  int gpus = 0;
  std::vector<std::string> devices;  ///< device names from the "#  Rank" lines
  struct Row {
    double bytes = 0;
    double time_s = 0;
    double algbw = 0;
    double busbw = 0;
  };
  std::vector<Row> rows;
};

/// Parses the text output of nccl-tests (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
/// alltoall_perf, sendrecv_perf; with or without the root column). The op comes from `op_hint`
/// if not empty, else from a "_perf" name in the file's name or text. Throws InputError naming
/// `file:line` for a truncated or foreign line, and the file when it has no result rows.
[[nodiscard]] NcclTestsRun parse_nccl_tests(const std::string& text, const std::string& file,
                                            const std::string& op_hint, int gpus_hint);

}  // namespace cs::calib
