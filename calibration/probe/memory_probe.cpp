// HBM streaming, launch overhead, host <-> device copies and GPU pairs (p2pBandwidthLatencyTest's idea).
#include <chrono>
#include <cstring>

#include "calibration/probe/kernels.hpp"
#include "calibration/probe/measurements.hpp"

namespace cs::probe {

std::vector<HbmResult> probe_hbm(int gpu, bool quick, int sm_count) {
  CS_CUDA(cudaSetDevice(gpu), gpu);
  std::size_t free_b = 0, total_b = 0;
  CS_CUDA(cudaMemGetInfo(&free_b, &total_b), gpu);
  std::size_t max_bytes = quick ? (std::size_t{1} << 30) : (std::size_t{4} << 30);
  while (2 * max_bytes > free_b / 2 && max_bytes > (std::size_t{64} << 20)) max_bytes /= 2;
  cudaStream_t stream{};
  CS_CUDA(cudaStreamCreate(&stream), gpu);
  void *x = nullptr, *y = nullptr;
  unsigned* sink = nullptr;
  CS_CUDA(cudaMalloc(&x, max_bytes), gpu);
  CS_CUDA(cudaMalloc(&y, max_bytes), gpu);
  CS_CUDA(cudaMalloc(reinterpret_cast<void**>(&sink), sizeof(unsigned)), gpu);
  CS_CUDA(hbm_write(x, max_bytes, sm_count * 8, stream), gpu);
  const int blocks = sm_count * 8;  // fill the chip: 8 blocks of 256 threads per SM
  std::vector<HbmResult> out;
  for (std::size_t bytes = std::size_t{4} << 20; bytes <= max_bytes; bytes *= 4) {
    for (const char* kernel : {"read", "write", "copy"}) {
      HbmResult r;
      r.kernel = kernel;
      r.bytes = static_cast<double>(bytes);
      auto body = [&] {
        if (std::strcmp(kernel, "read") == 0)
          CS_CUDA(hbm_read(x, bytes, sink, blocks, stream), gpu);
        else if (std::strcmp(kernel, "write") == 0)
          CS_CUDA(hbm_write(y, bytes, blocks, stream), gpu);
        else
          CS_CUDA(hbm_copy(y, x, bytes, blocks, stream), gpu);
      };
      r.time = time_on_stream(body, stream, gpu, 3, quick ? 10 : 30);
      const double moved = std::strcmp(kernel, "copy") == 0 ? 2.0 * r.bytes : r.bytes;
      r.bytes_per_s = moved / r.time.median;
      out.push_back(r);
    }
  }
  // Correctness: the last copy reproduced the source.
  unsigned a[4]{}, b[4]{};
  CS_CUDA(cudaMemcpy(a, x, sizeof a, cudaMemcpyDeviceToHost), gpu);
  CS_CUDA(cudaMemcpy(b, y, sizeof b, cudaMemcpyDeviceToHost), gpu);
  require(std::memcmp(a, b, sizeof a) == 0, "HBM copy check", gpu, "the copy kernel's output differs from its input");
  cudaFree(x);
  cudaFree(y);
  cudaFree(sink);
  cudaStreamDestroy(stream);
  return out;
}

Stats probe_launch_overhead(int gpu) {
  CS_CUDA(cudaSetDevice(gpu), gpu);
  cudaStream_t stream{};
  CS_CUDA(cudaStreamCreate(&stream), gpu);
  constexpr int kKernels = 1000;
  auto body = [&] {
    for (int i = 0; i < kKernels; ++i) CS_CUDA(empty_kernel(stream), gpu);
  };
  Stats s = time_on_stream(body, stream, gpu, 2, 10);
  s.median /= kKernels;
  s.min /= kKernels;
  s.max /= kKernels;
  s.p99 /= kKernels;
  cudaStreamDestroy(stream);
  return s;
}

HostCopy probe_host_copy(int gpu, bool quick) {
  CS_CUDA(cudaSetDevice(gpu), gpu);
  const std::size_t bytes = quick ? (std::size_t{64} << 20) : (std::size_t{256} << 20);
  void* host = nullptr;
  void* dev = nullptr;
  CS_CUDA(cudaHostAlloc(&host, bytes, cudaHostAllocDefault), gpu);
  CS_CUDA(cudaMalloc(&dev, bytes), gpu);
  cudaStream_t stream{};
  CS_CUDA(cudaStreamCreate(&stream), gpu);
  std::memset(host, 1, bytes);
  HostCopy hc;
  const auto h2d = time_on_stream(
      [&] { CS_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream), gpu); }, stream, gpu, 2, 10);
  const auto d2h = time_on_stream(
      [&] { CS_CUDA(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, stream), gpu); }, stream, gpu, 2, 10);
  hc.h2d_bytes_per_s = static_cast<double>(bytes) / h2d.median;
  hc.d2h_bytes_per_s = static_cast<double>(bytes) / d2h.median;
  require(static_cast<unsigned char*>(host)[bytes - 1] == 1, "host copy check", gpu, "round trip changed the data");
  cudaStreamDestroy(stream);
  cudaFree(dev);
  cudaFreeHost(host);
  return hc;
}

std::vector<PeerResult> probe_p2p(const std::vector<int>& gpus, bool quick, int sm_count) {
  std::vector<PeerResult> out;
  if (gpus.size() < 2) return out;
  const std::size_t bytes = quick ? (std::size_t{64} << 20) : (std::size_t{256} << 20);
  std::vector<void*> buf(gpus.size(), nullptr);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    CS_CUDA(cudaSetDevice(gpus[i]), gpus[i]);
    CS_CUDA(cudaMalloc(&buf[i], bytes), gpus[i]);
    CS_CUDA(hbm_write(buf[i], bytes, sm_count * 8, nullptr), gpus[i]);
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (std::size_t j = 0; j < gpus.size(); ++j) {
      if (i == j) continue;
      PeerResult r;
      r.src = gpus[i];
      r.dst = gpus[j];
      int can = 0;
      CS_CUDA(cudaDeviceCanAccessPeer(&can, gpus[i], gpus[j]), gpus[i]);
      r.access = can != 0;
      CS_CUDA(cudaSetDevice(gpus[i]), gpus[i]);
      if (r.access) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(gpus[j], 0);
        if (e != cudaErrorPeerAccessAlreadyEnabled) CS_CUDA(e, gpus[i]);
        cudaGetLastError();
      }
      cudaStream_t stream{};
      CS_CUDA(cudaStreamCreate(&stream), gpus[i]);
      const auto ce = time_on_stream(
          [&] { CS_CUDA(cudaMemcpyPeerAsync(buf[j], gpus[j], buf[i], gpus[i], bytes, stream), gpus[i]); }, stream,
          gpus[i], 2, quick ? 5 : 20);
      r.ce_bytes_per_s = static_cast<double>(bytes) / ce.median;
      if (r.access) {
        const auto sm = time_on_stream([&] { CS_CUDA(hbm_copy(buf[j], buf[i], bytes, sm_count * 8, stream), gpus[i]); },
                                       stream, gpus[i], 2, quick ? 5 : 20);
        r.sm_bytes_per_s = static_cast<double>(bytes) / sm.median;
      }
      const auto lat =
          time_on_stream([&] { CS_CUDA(cudaMemcpyPeerAsync(buf[j], gpus[j], buf[i], gpus[i], 4, stream), gpus[i]); },
                         stream, gpus[i], 10, 100);
      r.latency_s = lat.median;
      cudaStreamDestroy(stream);
      out.push_back(r);
    }
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    cudaSetDevice(gpus[i]);
    cudaFree(buf[i]);
  }
  return out;
}

}  // namespace cs::probe
