#include "sim/workload/pipeline_schedule.hpp"

#include <algorithm>
#include <deque>

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

/// One DualPipe rank's blocks as they are appended: each of its two chunks runs its forwards and
/// its backwards in micro-batch order; W blocks take the oldest split backward's weight gradients.
class DualPipeRank {
 public:
  DualPipeRank(int stage, int stages, int micro) : half_(micro / 2) {
    // Local chunk 0 is the direction this rank is early in: down for the first half of the ranks.
    early_ = stage < stages / 2 ? 0 : 1;
  }
  void forward(int local, bool paired = false) {
    const int c = global(local);
    out.push_back({.forward = true, .micro = c * half_ + next_f_[local]++, .chunk = c, .paired = paired});
  }
  void backward(int local, bool split = false) {
    const int c = global(local);
    const BlockRef b{.forward = false, .micro = c * half_ + next_b_[local]++, .chunk = c, .split = split};
    out.push_back(b);
    if (split) deferred_.push_back(b);
  }
  void weight() {
    auto w = deferred_.front();
    deferred_.pop_front();
    w.split = false;
    w.weight = true;
    out.push_back(w);
  }
  /// A forward of `f` overlapped with a backward of `b` (DualPipe's F&B chunk pair).
  void pair(int f, int b) {
    forward(f, true);
    backward(b);
  }
  std::vector<BlockRef> out;

 private:
  [[nodiscard]] int global(int local) const { return local == 0 ? early_ : 1 - early_; }
  int half_ = 0, early_ = 0;
  int next_f_[2] = {0, 0}, next_b_[2] = {0, 0};
  std::deque<BlockRef> deferred_;
};

}  // namespace

std::vector<BlockRef> dualpipe(int stage, int stages, int micro) {
  const int half = stages / 2;                        // ranks per half of the pipeline
  const int n = micro / 2;                            // micro-batches per direction
  const int h = std::min(stage, stages - 1 - stage);  // this rank's place in its early direction
  DualPipeRank r(stage, stages, micro);
  // 1. Warm-up: forwards of the early direction until the late one's first micro-batch arrives.
  for (int i = 0; i < 2 * (half - h - 1); ++i) r.forward(0);
  // 2. Forwards of both directions.
  for (int i = 0; i <= h; ++i) {
    r.forward(0);
    r.forward(1);
  }
  // 3. The late direction's backwards start; its weight gradients run at once (B, W, F).
  for (int i = 0; i < half - h - 1; ++i) {
    r.backward(1, true);
    r.weight();
    r.forward(1);
  }
  // 4. Steady state: forward-backward pairs, one direction's forward under the other's backward.
  //    The two middle ranks run their first pair apart: the backward's gradient comes back from
  //    the neighbour that first needs this rank's forward output.
  for (int i = 0; i < n - stages + h + 1; ++i) {
    if (i == 0 && h == half - 1) {
      r.forward(0);
      r.backward(1);
    } else {
      r.pair(0, 1);
    }
    r.pair(1, 0);
  }
  // 5. The late direction's last forwards, paired with the early direction's backwards.
  for (int i = 0; i < half - h - 1; ++i) {
    r.backward(1);
    r.pair(1, 0);
  }
  // 6. Backwards of both directions; from the middle on, weight gradients are deferred (zero
  //    bubble) to fill the cool-down.
  bool split = false;
  for (int i = 0; i <= h; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) split = true;
    r.backward(1, split);
    if (i == (h + 1) / 2 && h % 2 == 0) split = true;
    r.backward(0, split);
  }
  // 7. Deferred weight gradients between the early direction's last backwards.
  for (int i = 0; i < half - h - 1; ++i) {
    r.weight();
    r.backward(0, true);
  }
  // 8. The remaining weight gradients.
  for (int i = 0; i <= h; ++i) r.weight();
  return std::move(r.out);
}

std::vector<BlockRef> schedule(plan::PipelineSchedule kind, int stage, int stages, int micro, int chunks) {
  if (chunks > 1) return interleaved(stage, stages, micro, chunks);
  std::vector<BlockRef> out;
  switch (kind) {
    case plan::PipelineSchedule::kGpipe:
      for (int m = 0; m < micro; ++m) out.push_back({true, m});
      for (int m = micro - 1; m >= 0; --m) out.push_back({false, m});
      return out;
    case plan::PipelineSchedule::kDualPipe: return dualpipe(stage, stages, micro);
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
