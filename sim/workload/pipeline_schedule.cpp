#include "sim/workload/pipeline_schedule.hpp"

#include <algorithm>

namespace cs::workload {

namespace {

/// Interleaved 1F1B (Narayanan et al. SC'21, Sec. 2.2; Megatron-LM's schedule): the k-th forward
/// runs chunk (k / P) % V of micro-batch (k / (P V)) P + k % P; backwards visit the chunks in
/// reverse; (P - s - 1) * 2 + (V - 1) * P warm-up forwards.
std::vector<BlockRef> interleaved(int stage, int stages, int micro, int chunks) {
  std::vector<BlockRef> out;
  const int total = micro * chunks;
  const int warmup = std::min(total, (stages - stage - 1) * 2 + (chunks - 1) * stages);
  auto mb = [&](int k) { return k / (stages * chunks) * stages + k % stages; };
  auto fwd = [&](int k) { return BlockRef{true, mb(k), (k / stages) % chunks}; };
  auto bwd = [&](int k) { return BlockRef{false, mb(k), chunks - 1 - (k / stages) % chunks}; };
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back(fwd(f));
  while (f < total) {
    out.push_back(fwd(f++));
    out.push_back(bwd(b++));
  }
  while (b < total) out.push_back(bwd(b++));
  return out;
}

}  // namespace

std::vector<BlockRef> schedule(plan::PipelineSchedule kind, int stage, int stages, int micro, int chunks) {
  if (chunks > 1) return interleaved(stage, stages, micro, chunks);
  std::vector<BlockRef> out;
  switch (kind) {
    case plan::PipelineSchedule::kGpipe:
      for (int m = 0; m < micro; ++m) out.push_back({true, m});
      for (int m = micro - 1; m >= 0; --m) out.push_back({false, m});
      return out;
    case plan::PipelineSchedule::kOneFOneB: break;
  }
  const int warmup = std::min(stages - stage - 1, micro);
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back({true, f});
  while (f < micro) {
    out.push_back({true, f++});
    out.push_back({false, b++});
  }
  while (b < micro) out.push_back({false, b++});
  return out;
}

}  // namespace cs::workload
