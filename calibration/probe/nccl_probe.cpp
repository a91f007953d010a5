// NCCL collectives in one process over the chosen GPUs (nccl-tests' all_reduce_perf & co.).
#include <chrono>
#include <cstring>

#include "calibration/probe/kernels.hpp"
#include "calibration/probe/measurements.hpp"

#ifdef CLUSTERSIM_PROBE_NCCL
#include <nccl.h>
#endif

namespace cs::probe {

#ifdef CLUSTERSIM_PROBE_NCCL
namespace {

void check_nccl(ncclResult_t r, const char* call, int gpu) {
  if (r != ncclSuccess) require(false, call, gpu, std::string("NCCL: ") + ncclGetErrorString(r));
}
#define CS_NCCL(call, gpu) check_nccl((call), #call, (gpu))

double bus_factor(const std::string& op, int n) {
  if (op == "allreduce") return 2.0 * (n - 1) / n;
  if (op == "sendrecv") return 1.0;
  return static_cast<double>(n - 1) / n;
}

}  // namespace

std::vector<NcclRun> probe_nccl(const std::vector<int>& gpus, bool quick, std::string& version) {
  std::vector<NcclRun> out;
  int v = 0;
  ncclGetVersion(&v);
  version = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  const int n = static_cast<int>(gpus.size());
  if (n < 2) return out;
  std::vector<ncclComm_t> comms(gpus.size());
  CS_NCCL(ncclCommInitAll(comms.data(), n, gpus.data()), gpus[0]);
  const std::size_t max_bytes = quick ? (std::size_t{256} << 20) : (std::size_t{1} << 30);
  std::vector<float*> send(gpus.size()), recv(gpus.size());
  std::vector<cudaStream_t> streams(gpus.size());
  for (int r = 0; r < n; ++r) {
    CS_CUDA(cudaSetDevice(gpus[r]), gpus[r]);
    CS_CUDA(cudaMalloc(reinterpret_cast<void**>(&send[r]), max_bytes), gpus[r]);
    CS_CUDA(cudaMalloc(reinterpret_cast<void**>(&recv[r]), max_bytes), gpus[r]);
    CS_CUDA(cudaStreamCreate(&streams[r]), gpus[r]);
    CS_CUDA(fill(send[r], max_bytes / 4, FillType::kFp32, 1.0f, streams[r]), gpus[r]);
  }
  auto sync_all = [&] {
    for (int r = 0; r < n; ++r) {
      CS_CUDA(cudaSetDevice(gpus[r]), gpus[r]);
      CS_CUDA(cudaStreamSynchronize(streams[r]), gpus[r]);
    }
  };
  for (const std::string op : {"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"}) {
    NcclRun run;
    run.op = op;
    run.gpus = n;
    for (std::size_t bytes = 8; bytes <= max_bytes; bytes *= quick ? 8 : 2) {
      // nccl-tests sizes: all-reduce the buffer, all-gather the output, reduce-scatter the input,
      // all-to-all each rank's send buffer, send/recv the message.
      const std::size_t count = bytes / 4;
      if (count < static_cast<std::size_t>(n) && op != "allreduce" && op != "sendrecv") continue;
      auto launch = [&] {
        CS_NCCL(ncclGroupStart(), gpus[0]);
        for (int r = 0; r < n; ++r) {
          if (op == "allreduce") {
            CS_NCCL(ncclAllReduce(send[r], recv[r], count, ncclFloat, ncclSum, comms[r], streams[r]), gpus[r]);
          } else if (op == "allgather") {
            CS_NCCL(ncclAllGather(send[r], recv[r], count / n, ncclFloat, comms[r], streams[r]), gpus[r]);
          } else if (op == "reducescatter") {
            CS_NCCL(ncclReduceScatter(send[r], recv[r], count / n, ncclFloat, ncclSum, comms[r], streams[r]), gpus[r]);
          } else if (op == "alltoall") {
            const std::size_t chunk = count / n;
            for (int p = 0; p < n; ++p) {
              CS_NCCL(ncclSend(send[r] + p * chunk, chunk, ncclFloat, p, comms[r], streams[r]), gpus[r]);
              CS_NCCL(ncclRecv(recv[r] + p * chunk, chunk, ncclFloat, p, comms[r], streams[r]), gpus[r]);
            }
          } else {
            CS_NCCL(ncclSend(send[r], count, ncclFloat, (r + 1) % n, comms[r], streams[r]), gpus[r]);
            CS_NCCL(ncclRecv(recv[r], count, ncclFloat, (r + n - 1) % n, comms[r], streams[r]), gpus[r]);
          }
        }
        CS_NCCL(ncclGroupEnd(), gpus[0]);
      };
      for (int w = 0; w < 5; ++w) launch();
      sync_all();
      const int iters = bytes >= (std::size_t{64} << 20) ? 10 : 20;
      std::vector<double> times;
      for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) launch();
        sync_all();
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters);
      }
      NcclRow row;
      row.bytes = static_cast<double>(bytes);
      row.time_s = stats_of(times).median;
      row.algbw = row.bytes / row.time_s;
      row.busbw = row.algbw * bus_factor(op, n);
      // Check: sum of ones over n ranks is n; gathers and sends move ones.
      float first = 0;
      CS_CUDA(cudaSetDevice(gpus[0]), gpus[0]);
      CS_CUDA(cudaMemcpy(&first, recv[0], sizeof first, cudaMemcpyDeviceToHost), gpus[0]);
      const float want = (op == "allreduce" || op == "reducescatter") ? static_cast<float>(n) : 1.0f;
      row.wrong = first == want ? 0 : 1;
      run.rows.push_back(row);
    }
    out.push_back(run);
  }
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(gpus[r]);
    cudaFree(send[r]);
    cudaFree(recv[r]);
    cudaStreamDestroy(streams[r]);
    ncclCommDestroy(comms[r]);
  }
  return out;
}
#else
std::vector<NcclRun> probe_nccl(const std::vector<int>&, bool, std::string& version) {
  version = "not found at build time";
  return {};
}
#endif

}  // namespace cs::probe
