#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "calibration/probe/kernels.hpp"
#include "calibration/probe/measurements.hpp"

namespace cs::probe {

namespace {

void check_lt(cublasStatus_t s, const char* call, int gpu) {
  if (s != CUBLAS_STATUS_SUCCESS)
    require(false, call, gpu, std::string("cuBLAS status ") + std::to_string(static_cast<int>(s)));
}
#define CS_LT(call, gpu) check_lt((call), #call, (gpu))

struct DtypeSpec {
  const char* name;
  cudaDataType_t ab;
  cudaDataType_t cd;
  cublasComputeType_t compute;
  FillType fill_ab;
  std::size_t ab_bytes;
  std::size_t cd_bytes;
};

float to_float(const unsigned char* p, cudaDataType_t t) {
  if (t == CUDA_R_32F) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  if (t == CUDA_R_16BF) {
    const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  // IEEE half -> float
  const std::uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    bits = sign << 31;  // zero (subnormals do not occur in this check)
  } else if (exp == 31) {
    bits = (sign << 31) | 0x7f800000u | (mant << 13);
  } else {
    bits = (sign << 31) | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

std::vector<GemmResult> probe_gemm(int gpu, bool quick, int cc_major, int cc_minor) {
  CS_CUDA(cudaSetDevice(gpu), gpu);
  std::vector<DtypeSpec> dtypes{
      {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, FillType::kBf16, 2, 2},
      {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, FillType::kFp16, 2, 2},
      {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, FillType::kFp32, 4, 4},
  };
  const bool fp8 = cc_major > 8 || (cc_major == 8 && cc_minor >= 9);
  if (fp8) dtypes.push_back({"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, FillType::kFp8E4M3, 1, 2});
  if (quick) dtypes = fp8 ? std::vector<DtypeSpec>{dtypes[0], dtypes[3]} : std::vector<DtypeSpec>{dtypes[0]};
  using Shape = std::array<std::int64_t, 3>;
  // bf16 and fp8 (the dtypes the kernel tables hold): a grid of m (tokens: 1 = a decode step, 16K
  // = a long prefill or a training micro-batch) by n and k (LLM widths from 1K to 28K), written as
  // gemm_perf.csv; fp16 and tf32 over Llama-3.1 8B/70B's widths, whole and divided by TP 8.
  std::vector<Shape> grid, llm;
  const std::vector<std::int64_t> ms =
      quick ? std::vector<std::int64_t>{1, 512, 8192} : std::vector<std::int64_t>{1, 4, 16, 64, 256, 1024, 4096, 16384};
  const std::vector<std::int64_t> widths =
      quick ? std::vector<std::int64_t>{4096, 14336} : std::vector<std::int64_t>{1024, 4096, 8192, 16384, 28672};
  for (auto m : ms)
    for (auto n : widths)
      for (auto k : widths) grid.push_back({m, n, k});
  for (auto m : std::vector<std::int64_t>{1, 16, 128, 512, 2048, 8192, 32768}) {
    for (auto [n, k] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {4096, 4096}, {6144, 4096}, {14336, 4096}, {4096, 14336}, {8192, 8192}, {3584, 8192}, {8192, 3584}}) {
      llm.push_back({m, n, k});
    }
  }
  std::int64_t max_m = 0, max_n = 0, max_k = 0;
  for (const auto* list : {&grid, &llm}) {
    for (const auto& [m, n, k] : *list) {
      max_m = std::max(max_m, m);
      max_n = std::max(max_n, n);
      max_k = std::max(max_k, k);
    }
  }
  cublasLtHandle_t lt{};
  CS_LT(cublasLtCreate(&lt), gpu);
  cudaStream_t stream{};
  CS_CUDA(cudaStreamCreate(&stream), gpu);
  const std::size_t ws_bytes = 64u << 20;
  void *a = nullptr, *b = nullptr, *d = nullptr, *ws = nullptr;
  CS_CUDA(cudaMalloc(&a, static_cast<std::size_t>(max_k * max_m) * 4), gpu);
  CS_CUDA(cudaMalloc(&b, static_cast<std::size_t>(max_k * max_n) * 4), gpu);
  CS_CUDA(cudaMalloc(&d, static_cast<std::size_t>(max_m * max_n) * 4), gpu);
  CS_CUDA(cudaMalloc(&ws, ws_bytes), gpu);
  std::vector<GemmResult> out;
  // One GEMM: its cuBLASLt heuristic's first algorithm, timed, or checked once on operands of ones.
  const auto run_shape = [&](const DtypeSpec& t, std::int64_t m, std::int64_t n, std::int64_t k, bool check) {
    GemmResult r;
    r.dtype = t.name;
    r.m = m;
    r.n = n;
    r.k = k;
    cublasLtMatmulDesc_t desc{};
    CS_LT(cublasLtMatmulDescCreate(&desc, t.compute, CUDA_R_32F), gpu);
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    CS_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa), gpu);
    CS_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb), gpu);
    // A linear layer as frameworks call it, y = x W^T, in column-major terms: D (n x m, leading
    // dimension n) = W^T (W stored k x n) * x (stored k x m). Every leading dimension is a multiple
    // of 16 even at m = 1, which FP8 GEMMs need.
    cublasLtMatrixLayout_t la{}, lb{}, lc{};
    CS_LT(cublasLtMatrixLayoutCreate(&la, t.ab, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(n), k), gpu);
    CS_LT(cublasLtMatrixLayoutCreate(&lb, t.ab, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(m), k), gpu);
    CS_LT(cublasLtMatrixLayoutCreate(&lc, t.cd, static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(m), n), gpu);
    cublasLtMatmulPreference_t pref{};
    CS_LT(cublasLtMatmulPreferenceCreate(&pref), gpu);
    CS_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                               sizeof ws_bytes),
          gpu);
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &heur, &found);
    if (hs != CUBLAS_STATUS_SUCCESS || found == 0) {
      r.note = "no cuBLASLt algorithm for this shape and dtype";
    } else {
      const float alpha = 1.0f, beta = 0.0f;
      auto run = [&] {
        CS_LT(cublasLtMatmul(lt, desc, &alpha, b, la, a, lb, &beta, d, lc, d, lc, &heur.algo, ws, ws_bytes, stream),
              gpu);
      };
      if (check) {
        run();
        CS_CUDA(cudaStreamSynchronize(stream), gpu);
        // A = B = 1, so every element of D is k (exact in every output type used here).
        unsigned char first[4]{}, last[4]{};
        const std::size_t esz = t.cd_bytes;
        CS_CUDA(cudaMemcpy(first, d, esz, cudaMemcpyDeviceToHost), gpu);
        CS_CUDA(cudaMemcpy(last, static_cast<unsigned char*>(d) + (static_cast<std::size_t>(m * n) - 1) * esz, esz,
                           cudaMemcpyDeviceToHost),
                gpu);
        const float want = static_cast<float>(k);
        const float f0 = to_float(first, t.cd), f1 = to_float(last, t.cd);
        r.correct = std::abs(f0 - want) <= 0.01f * want && std::abs(f1 - want) <= 0.01f * want;
        if (!r.correct)
          r.note = "result check failed: D[0] = " + std::to_string(f0) + ", expected " + std::to_string(want);
      } else {
        const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
        const int iters = flops > 1e12 ? 10 : (flops > 1e10 ? 30 : 100);
        r.time = time_on_stream(run, stream, gpu, 5, iters);
        r.flops_per_s = flops / r.time.median;
      }
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
    return r;
  };
  for (const auto& t : dtypes) {
    const bool tabled = std::string(t.name) == "bf16" || std::string(t.name) == "fp8";
    const auto& shapes = tabled || quick ? grid : llm;
    // The dtype's result checked once on ones (each row of A^T B sums k ones), then every shape
    // timed on random operands: constant data draws less power and clocks higher than real weights.
    CS_CUDA(fill(a, static_cast<std::size_t>(max_k * max_m), t.fill_ab, 1.0f, stream), gpu);
    CS_CUDA(fill(b, static_cast<std::size_t>(max_k * max_n), t.fill_ab, 1.0f, stream), gpu);
    const auto checked = run_shape(t, 256, 1024, 1024, true);
    CS_CUDA(fill_random(a, static_cast<std::size_t>(max_k * max_m), t.fill_ab, 1u, stream), gpu);
    CS_CUDA(fill_random(b, static_cast<std::size_t>(max_k * max_n), t.fill_ab, 2u, stream), gpu);
    for (const auto& [m, n, k] : shapes) {
      auto r = run_shape(t, m, n, k, false);
      if (r.note.empty()) {
        r.correct = checked.correct;
        if (!checked.correct) r.note = checked.note;
      }
      r.tabled = tabled;
      out.push_back(r);
    }
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  cudaFree(ws);
  cudaStreamDestroy(stream);
  cublasLtDestroy(lt);
  return out;
}

}  // namespace cs::probe
