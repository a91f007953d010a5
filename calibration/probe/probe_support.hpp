#pragma once
// Shared pieces of the GPU probe: error checks that name the call, the library's message and the
// GPU; timing with CUDA events (warm-up apart from timed iterations); statistics.
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/core/errors.hpp"

namespace cs::probe {

/// Throws DeviceError("<call> failed on GPU <g>: <message>") when `ok` is false.
void require(bool ok, const std::string& call, int gpu, const std::string& message);
/// Checks a CUDA runtime result.
void check_cuda(cudaError_t e, const char* call, int gpu);
#define CS_CUDA(call, gpu) ::cs::probe::check_cuda((call), #call, (gpu))

/// Median, min, max and p99 of repeated timings (seconds).
struct Stats {
  double median = 0, min = 0, max = 0, p99 = 0;
  int iterations = 0;
};
[[nodiscard]] Stats stats_of(std::vector<double> seconds);

/// Runs `body` `warmup` times untimed, then `iters` times, each bracketed by CUDA events on
/// `stream`; returns the per-iteration times.
[[nodiscard]] Stats time_on_stream(const std::function<void()>& body, cudaStream_t stream, int gpu, int warmup,
                                   int iters);

}  // namespace cs::probe
