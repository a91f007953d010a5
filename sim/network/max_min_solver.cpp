#include "sim/network/max_min_solver.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "sim/core/check.hpp"

namespace cs::net {

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// Shares within this relative distance of a pass's rate count as equal to it: the same level
/// reached through different subtraction orders should not split into two passes.
constexpr double kTolerance = 1e-12;
}  // namespace

void MaxMinSolver::push(std::uint32_t k) {
  heap_.push_back({share(k), k, version_[k]});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>{});
}

void MaxMinSolver::solve(const MaxMinProblem& p, std::vector<double>& rate) {
  const auto flows = static_cast<std::uint32_t>(p.flow_count());
  const auto links = static_cast<std::uint32_t>(p.capacity.size());
  rate.assign(flows, 0.0);
  residual_.assign(p.capacity.begin(), p.capacity.end());
  count_.assign(links, 0);
  version_.assign(links, 0);
  link_pass_.assign(links, 0);
  link_touch_.assign(links, 0);
  flow_pass_.assign(flows, 0);
  fixed_.assign(flows, 0);

  // Each link's flows, in flow order (a transpose of the hops).
  link_first_.assign(links + 1, 0);
  for (auto k : p.hops) {
    ++count_[k];
    ++link_first_[k + 1];
  }
  for (std::uint32_t k = 0; k < links; ++k) link_first_[k + 1] += link_first_[k];
  link_flows_.resize(p.hops.size());
  for (std::uint32_t c = 0; c < flows; ++c) {
    for (auto h = p.first[c]; h < p.first[c + 1]; ++h) link_flows_[link_first_[p.hops[h]]++] = c;
  }
  for (auto k = links; k > 0; --k) link_first_[k] = link_first_[k - 1];
  link_first_[0] = 0;

  capped_.clear();
  for (std::uint32_t c = 0; c < flows; ++c) {
    if (p.cap[c] < kInfinity) capped_.push_back(c);
  }
  std::sort(capped_.begin(), capped_.end(),
            [&](std::uint32_t a, std::uint32_t b) { return p.cap[a] != p.cap[b] ? p.cap[a] < p.cap[b] : a < b; });

  heap_.clear();
  for (std::uint32_t k = 0; k < links; ++k) {
    if (count_[k] > 0) push(k);
  }

  std::size_t left = flows;
  std::size_t next_cap = 0;
  std::uint32_t pass = 0;
  while (left > 0) {
    ++pass;
    // Invariant here: every link with unfixed flows has exactly one current heap entry.
    while (!heap_.empty() &&
           (heap_.front().version != version_[heap_.front().link] || count_[heap_.front().link] == 0)) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
      heap_.pop_back();
    }
    const double min_share = heap_.empty() ? kInfinity : heap_.front().share;
    while (next_cap < capped_.size() && fixed_[capped_[next_cap]]) ++next_cap;
    const double min_cap = next_cap < capped_.size() ? p.cap[capped_[next_cap]] : kInfinity;
    CS_ASSERT(std::isfinite(min_share) || std::isfinite(min_cap), "every flow crosses a link or has a cap");
    const bool cap_binds = min_cap <= min_share;
    const double r = cap_binds ? min_cap : min_share;
    const double tol = kTolerance * r;
    const double limit = r + tol;

    touched_.clear();
    auto fix = [&](std::uint32_t c) {
      fixed_[c] = 1;
      --left;
      rate[c] = r;
      for (auto h = p.first[c]; h < p.first[c + 1]; ++h) {
        const auto k = p.hops[h];
        residual_[k] = std::max(0.0, residual_[k] - r);
        --count_[k];
        if (link_touch_[k] != pass) {
          link_touch_[k] = pass;
          touched_.push_back(k);
        }
      }
    };

    if (cap_binds) {
      // Every flow subtracts the same rate, so the order of this pass does not matter.
      for (auto j = next_cap; j < capped_.size() && p.cap[capped_[j]] <= limit; ++j) {
        if (!fixed_[capped_[j]]) fix(capped_[j]);
      }
    } else {
      // A flow is fixed if one of its links' share is at the limit when its turn comes, so the
      // flows are tested in order; a link reaching the limit during the pass queues its later flows.
      qualified_.clear();
      candidates_.clear();
      auto queue_flows = [&](std::uint32_t k, std::uint32_t after) {
        link_pass_[k] = pass;
        for (auto j = link_first_[k]; j < link_first_[k + 1]; ++j) {
          const auto c = link_flows_[j];
          if (c + 1 > after && !fixed_[c] && flow_pass_[c] != pass) {
            flow_pass_[c] = pass;
            candidates_.push_back(c);
            std::push_heap(candidates_.begin(), candidates_.end(), std::greater<>{});
          }
        }
      };
      while (!heap_.empty() && heap_.front().share <= limit) {
        const auto e = heap_.front();
        std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
        heap_.pop_back();
        if (e.version != version_[e.link] || count_[e.link] == 0) continue;
        qualified_.push_back(e.link);
        queue_flows(e.link, 0);
      }
      while (!candidates_.empty()) {
        std::pop_heap(candidates_.begin(), candidates_.end(), std::greater<>{});
        const auto c = candidates_.back();
        candidates_.pop_back();
        bool take = false;
        for (auto h = p.first[c]; h < p.first[c + 1] && !take; ++h) take = share(p.hops[h]) <= limit;
        if (!take) continue;
        fix(c);
        for (auto h = p.first[c]; h < p.first[c + 1]; ++h) {
          const auto k = p.hops[h];
          if (count_[k] > 0 && link_pass_[k] != pass && share(k) <= limit) queue_flows(k, c + 1);
        }
      }
      // Links popped at the limit keep unfixed flows when none was taken: put them back.
      for (auto k : qualified_) {
        if (link_touch_[k] != pass) {
          link_touch_[k] = pass;
          touched_.push_back(k);
        }
      }
    }
    for (auto k : touched_) {
      ++version_[k];
      if (count_[k] > 0) push(k);
    }
  }
}

}  // namespace cs::net
