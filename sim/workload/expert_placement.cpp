#include "sim/workload/expert_placement.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/core/check.hpp"

namespace cs::workload {

namespace {

/// SplitMix64: a fixed, portable sequence for a seed (std:: distributions differ between
/// standard libraries, which would break bit-for-bit determinism across machines).
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n): the bias of a 64-bit modulo is below 2^-40 for n < 2^24.
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

std::vector<double> expert_loads(const models::ModelArch& m, const scenario::MoeRouting& r, double tokens) {
  const auto E = static_cast<std::size_t>(m.moe.experts);
  const auto k = static_cast<std::size_t>(m.moe.top_k);
  std::vector<double> load(E, 1.0);
  using Kind = scenario::MoeRouting::Kind;
  switch (r.kind) {
    case Kind::kBalanced: break;
    case Kind::kFile: load = r.loads; break;
    case Kind::kZipf: {
      std::vector<std::size_t> order(E);
      std::iota(order.begin(), order.end(), std::size_t{0});
      SplitMix64 rng{r.seed};
      for (std::size_t i = E; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);  // Fisher-Yates
      for (std::size_t rank = 0; rank < E; ++rank)
        load[order[rank]] = std::pow(static_cast<double>(rank + 1), -r.zipf_exponent);
      break;
    }
    case Kind::kUniform: {
      // Each token draws k distinct experts: a partial Fisher-Yates over the expert ids.
      std::fill(load.begin(), load.end(), 0.0);
      SplitMix64 rng{r.seed};
      std::vector<std::size_t> ids(E), picked(k);
      std::iota(ids.begin(), ids.end(), std::size_t{0});
      const auto n = static_cast<std::int64_t>(std::max(1.0, std::round(tokens)));
      for (std::int64_t t = 0; t < n; ++t) {
        for (std::size_t j = 0; j < k; ++j) {
          picked[j] = j + rng.below(E - j);
          std::swap(ids[j], ids[picked[j]]);
          load[ids[j]] += 1;
        }
        for (std::size_t j = k; j-- > 0;) std::swap(ids[j], ids[picked[j]]);  // back to the identity
      }
      break;
    }
  }
  const double sum = std::accumulate(load.begin(), load.end(), 0.0);
  CS_ASSERT(sum > 0, "routing loads are not all zero (the reader checks it)");
  for (auto& x : load) x /= sum;
  return load;
}

}  // namespace

double ExpertPlacement::imbalance() const {
  if (gpu_share.empty()) return 1;
  const double mean = 1.0 / static_cast<double>(gpu_share.size());
  return *std::max_element(gpu_share.begin(), gpu_share.end()) / mean;
}

ExpertPlacement place_experts(const models::ModelArch& m, const scenario::MoeRouting& routing, int ep, double tokens) {
  CS_ASSERT(m.is_moe() && ep >= 1, "a MoE model over at least one EP rank");
  ExpertPlacement p;
  p.expert_share = expert_loads(m, routing, tokens);
  const auto E = static_cast<std::size_t>(m.moe.experts);
  const auto slots = E + static_cast<std::size_t>(routing.redundant_experts);
  CS_ASSERT(slots % static_cast<std::size_t>(ep) == 0, "EP divides the expert slots (the resolver checks it)");
  p.slots_per_gpu = static_cast<int>(slots / static_cast<std::size_t>(ep));
  p.gpu_share.assign(static_cast<std::size_t>(ep), 0.0);
  p.gpu_copies.assign(static_cast<std::size_t>(ep), {});
  if (routing.redundant_experts == 0) {
    for (std::size_t e = 0; e < E; ++e) {
      const auto g = e / static_cast<std::size_t>(p.slots_per_gpu);
      p.gpu_share[g] += p.expert_share[e];
      p.gpu_copies[g].emplace_back(e, p.expert_share[e]);
    }
    return p;
  }
  // EPLB: give each extra copy to the expert with the most pairs per copy, then place copies
  // heaviest first on the least loaded GPU that has a free slot (ties: lowest index).
  std::vector<int> copies(E, 1);
  for (int i = 0; i < routing.redundant_experts; ++i) {
    std::size_t best = 0;
    for (std::size_t e = 1; e < E; ++e)
      if (p.expert_share[e] / copies[e] > p.expert_share[best] / copies[best]) best = e;
    ++copies[best];
  }
  std::vector<std::pair<double, std::size_t>> pieces;  // (share, expert)
  for (std::size_t e = 0; e < E; ++e)
    for (int c = 0; c < copies[e]; ++c) pieces.emplace_back(p.expert_share[e] / copies[e], e);
  std::stable_sort(pieces.begin(), pieces.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<int> used(static_cast<std::size_t>(ep), 0);
  for (const auto& [piece, expert] : pieces) {
    std::size_t g = static_cast<std::size_t>(ep);
    for (std::size_t i = 0; i < used.size(); ++i)
      if (used[i] < p.slots_per_gpu && (g == used.size() || p.gpu_share[i] < p.gpu_share[g])) g = i;
    CS_ASSERT(g < used.size(), "every expert copy finds a slot");
    p.gpu_share[g] += piece;
    p.gpu_copies[g].emplace_back(expert, piece);
    ++used[g];
  }
  return p;
}

std::vector<double> ep_alltoall_pairs(double bytes, const std::vector<double>& gpu_share, bool returning) {
  const auto n = gpu_share.size();
  std::vector<double> pairs(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) pairs[i * n + j] = bytes * gpu_share[returning ? i : j];
  return pairs;
}

}  // namespace cs::workload
