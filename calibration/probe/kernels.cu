#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "calibration/probe/kernels.hpp"

namespace cs::probe {

namespace {

template <typename T>
__global__ void fill_kernel(T* dst, std::size_t count, T value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = value;
  }
}

__global__ void read_kernel(const uint4* src, std::size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = src[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // practically never true; keeps the loads alive
}

__global__ void write_kernel(uint4* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const unsigned x = static_cast<unsigned>(i);
    dst[i] = make_uint4(x, x + 1, x + 2, x + 3);
  }
}

__global__ void copy_kernel(uint4* dst, const uint4* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

/// Uniform values in [-scale, scale) from a hash of (seed, index): reproducible, no state.
template <typename T, typename Convert>
__global__ void random_kernel(T* dst, std::size_t count, unsigned seed, float scale, Convert convert) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 0x9e3779b1u ^ seed;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    dst[i] = convert((static_cast<float>(x >> 8) * (1.0f / 8388608.0f) - 1.0f) * scale);
  }
}

struct ToBf16 {
  __device__ __nv_bfloat16 operator()(float v) const { return __float2bfloat16(v); }
};
struct ToHalf {
  __device__ __half operator()(float v) const { return __float2half(v); }
};
struct ToFloat {
  __device__ float operator()(float v) const { return v; }
};
struct ToFp8 {
  __device__ __nv_fp8_e4m3 operator()(float v) const { return __nv_fp8_e4m3(v); }
};

__global__ void nothing_kernel() {}

constexpr int kThreads = 256;

int grid_for(std::size_t n, int blocks) {
  const std::size_t needed = (n + kThreads - 1) / kThreads;
  return static_cast<int>(needed < static_cast<std::size_t>(blocks) ? (needed > 0 ? needed : 1) : blocks);
}

}  // namespace

cudaError_t fill(void* dst, std::size_t count, FillType type, float value, cudaStream_t stream) {
  const int grid = grid_for(count, 4096);
  switch (type) {
    case FillType::kBf16:
      fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), count, __float2bfloat16(value));
      break;
    case FillType::kFp16:
      fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(dst), count, __float2half(value));
      break;
    case FillType::kFp32: fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(dst), count, value); break;
    case FillType::kFp8E4M3:
      fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(dst), count, __nv_fp8_e4m3(value));
      break;
  }
  return cudaGetLastError();
}

cudaError_t fill_random(void* dst, std::size_t count, FillType type, unsigned seed, cudaStream_t stream) {
  const int grid = grid_for(count, 4096);
  const float scale = 1.0f;
  switch (type) {
    case FillType::kBf16:
      random_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), count, seed, scale, ToBf16{});
      break;
    case FillType::kFp16:
      random_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(dst), count, seed, scale, ToHalf{});
      break;
    case FillType::kFp32:
      random_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(dst), count, seed, scale, ToFloat{});
      break;
    case FillType::kFp8E4M3:
      random_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(dst), count, seed, scale, ToFp8{});
      break;
  }
  return cudaGetLastError();
}

cudaError_t hbm_read(const void* src, std::size_t bytes, unsigned* sink, int blocks, cudaStream_t stream) {
  const std::size_t n = bytes / sizeof(uint4);
  read_kernel<<<grid_for(n, blocks), kThreads, 0, stream>>>(static_cast<const uint4*>(src), n, sink);
  return cudaGetLastError();
}

cudaError_t hbm_write(void* dst, std::size_t bytes, int blocks, cudaStream_t stream) {
  const std::size_t n = bytes / sizeof(uint4);
  write_kernel<<<grid_for(n, blocks), kThreads, 0, stream>>>(static_cast<uint4*>(dst), n);
  return cudaGetLastError();
}

cudaError_t hbm_copy(void* dst, const void* src, std::size_t bytes, int blocks, cudaStream_t stream) {
  const std::size_t n = bytes / sizeof(uint4);
  copy_kernel<<<grid_for(n, blocks), kThreads, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src),
                                                            n);
  return cudaGetLastError();
}

cudaError_t empty_kernel(cudaStream_t stream) {
  nothing_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace cs::probe
