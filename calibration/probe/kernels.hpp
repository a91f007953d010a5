#pragma once
// The probe's CUDA kernels behind a C-style interface, so that the .cu file stays thin
// (TOOLCHAIN.md pitfall 6) and the driver compiles as plain C++.
#include <cuda_runtime.h>

#include <cstddef>

namespace cs::probe {

enum class FillType { kBf16, kFp16, kFp32, kFp8E4M3 };

/// Fills `count` elements of `type` at `dst` with `value`.
cudaError_t fill(void* dst, std::size_t count, FillType type, float value, cudaStream_t stream);
/// Fills `count` elements with reproducible pseudo-random values in [-1, 1) (GEMM timings on
/// random data: constant operands draw less power and clock higher than real weights).
cudaError_t fill_random(void* dst, std::size_t count, FillType type, unsigned seed, cudaStream_t stream);
/// Streams `bytes` (a multiple of 16) from `src` with 16-byte loads; writes one word to `sink`
/// only if the data hold an impossible pattern, so the loads cannot be optimised away.
cudaError_t hbm_read(const void* src, std::size_t bytes, unsigned* sink, int blocks, cudaStream_t stream);
/// Writes `bytes` of a pattern with 16-byte stores.
cudaError_t hbm_write(void* dst, std::size_t bytes, int blocks, cudaStream_t stream);
/// Copies `bytes` with 16-byte loads and stores (also used for SM-driven peer copies, where
/// `src` is another GPU's memory).
cudaError_t hbm_copy(void* dst, const void* src, std::size_t bytes, int blocks, cudaStream_t stream);
/// An empty kernel (launch overhead).
cudaError_t empty_kernel(cudaStream_t stream);

}  // namespace cs::probe
