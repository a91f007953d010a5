#include "calibration/probe/probe_support.hpp"

#include <algorithm>
#include <cmath>

namespace cs::probe {

void require(bool ok, const std::string& call, int gpu, const std::string& message) {
  if (!ok) throw DeviceError(call + " failed on GPU " + std::to_string(gpu) + ": " + message);
}

void check_cuda(cudaError_t e, const char* call, int gpu) {
  if (e != cudaSuccess) require(false, call, gpu, std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e));
}

Stats stats_of(std::vector<double> s) {
  Stats out;
  if (s.empty()) return out;
  std::sort(s.begin(), s.end());
  out.iterations = static_cast<int>(s.size());
  out.min = s.front();
  out.max = s.back();
  out.median = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  out.p99 = s[std::min(s.size() - 1, static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(s.size()))) - 1)];
  return out;
}

Stats time_on_stream(const std::function<void()>& body, cudaStream_t stream, int gpu, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) body();
  CS_CUDA(cudaStreamSynchronize(stream), gpu);
  cudaEvent_t start{}, stop{};
  CS_CUDA(cudaEventCreate(&start), gpu);
  CS_CUDA(cudaEventCreate(&stop), gpu);
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    CS_CUDA(cudaEventRecord(start, stream), gpu);
    body();
    CS_CUDA(cudaEventRecord(stop, stream), gpu);
    CS_CUDA(cudaEventSynchronize(stop), gpu);
    float ms = 0;
    CS_CUDA(cudaEventElapsedTime(&ms, start, stop), gpu);
    times.push_back(static_cast<double>(ms) * 1e-3);
  }
  CS_CUDA(cudaEventDestroy(start), gpu);
  CS_CUDA(cudaEventDestroy(stop), gpu);
  return stats_of(times);
}

}  // namespace cs::probe
