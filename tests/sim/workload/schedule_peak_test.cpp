// The activation peak of 1F1B and interleaved 1F1B is reached in the warm-up and then repeats: a
// walk of 4P micro-batches holds what one of many holds (sim/workload/step_memory.cpp walks only
// that many when sizing memory, which made plan's search of large batches 10x slower otherwise).
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "sim/workload/pipeline_schedule.hpp"

namespace {

/// The peak over a walk of sum(held[chunk] x weight[chunk]): a forward holds its chunk's
/// micro-batch, its backward frees it (as step_memory.cpp counts).
double peak(int stage, int stages, int micro, int chunks, const std::vector<double>& weight) {
  std::vector<double> held(static_cast<std::size_t>(chunks), 0.0);
  double best = 0;
  for (const auto& b : cs::workload::schedule(cs::plan::PipelineSchedule::kOneFOneB, stage, stages, micro, chunks)) {
    if (b.weight) continue;
    held[static_cast<std::size_t>(b.chunk)] += b.forward ? 1.0 : -1.0;
    double now = 0;
    for (int c = 0; c < chunks; ++c) now += held[static_cast<std::size_t>(c)] * weight[static_cast<std::size_t>(c)];
    best = std::max(best, now);
  }
  return best;
}

}  // namespace

TEST_CASE("1F1B and interleaved: the activation peak of 4P micro-batches is that of any more") {
  for (int P : {1, 2, 3, 4, 8}) {
    for (int V : {1, 2, 3, 4}) {
      if (V > 1 && P < 2) continue;
      // Chunks of different sizes (the last stage's chunk carries the LM head).
      std::vector<double> w;
      for (int c = 0; c < V; ++c) w.push_back(1.0 + 0.37 * c + (c == V - 1 ? 2.5 : 0.0));
      for (int s = 0; s < P; ++s) {
        const double capped = peak(s, P, 4 * P, V, w);
        for (int m : {4 * P + P, 8 * P, 32 * P}) {
          CAPTURE(P);
          CAPTURE(V);
          CAPTURE(s);
          CAPTURE(m);
          CHECK(peak(s, P, m, V, w) == capped);
        }
      }
    }
  }
}
