#pragma once
#include <cstdint>
#include <vector>

namespace cs::net {

/// One max-min fair-share problem: flows crossing links, numbered locally (flow c = 0..F-1 in the
/// caller's canonical order, link k = 0..L-1 in any order). Flow c crosses the links
/// `hops[first[c] .. first[c + 1])` and never runs faster than `cap[c]` (infinity: no cap).
struct MaxMinProblem {
  std::vector<double> capacity;      ///< per link, bytes/s
  std::vector<std::uint32_t> first;  ///< per flow, then one past the last: offsets into `hops`
  std::vector<std::uint32_t> hops;   ///< local link of each hop
  std::vector<double> cap;           ///< per flow, bytes/s

  void clear() {
    capacity.clear();
    first.assign(1, 0);
    hops.clear();
    cap.clear();
  }
  [[nodiscard]] std::size_t flow_count() const { return cap.size(); }
};

/// Max-min fairness by progressive filling. Each pass takes the smallest fair share left on any
/// link (its residual capacity over its unfixed flows) or the smallest cap of an unfixed flow, if
/// that is no larger; then, in flow order, fixes every flow whose cap (cap pass) or one of whose
/// links' current share (share pass) is within a relative 1e-12 of it, taking its rate off its
/// links at once. The result depends only on the problem and the flow order.
///
/// The textbook loop rescans every link and every flow per pass (levels x flows); here a heap
/// keeps the links by share and each pass visits only the flows on links at the pass's share
/// (with those links that reach it during the pass, for flows later in order), so a solve costs
/// about (hops + links) log links. Scratch buffers are kept between solves.
class MaxMinSolver {
 public:
  /// Rates of every flow of `p` (resized to its flow count).
  void solve(const MaxMinProblem& p, std::vector<double>& rate);

 private:
  struct Entry {
    double share;
    std::uint32_t link;
    std::uint32_t version;
    bool operator>(const Entry& o) const { return share > o.share; }
  };
  void push(std::uint32_t k);
  [[nodiscard]] double share(std::uint32_t k) const { return residual_[k] / count_[k]; }

  std::vector<double> residual_;
  std::vector<std::uint32_t> count_;
  std::vector<std::uint32_t> version_;
  std::vector<std::uint32_t> link_pass_;   ///< the last share pass that queued this link's flows
  std::vector<std::uint32_t> link_touch_;  ///< the last pass that listed this link in touched_
  std::vector<std::uint32_t> link_first_;  ///< per link: offsets into link_flows_ (flows in order)
  std::vector<std::uint32_t> link_flows_;
  std::vector<Entry> heap_;               ///< min-heap by share; stale entries skipped
  std::vector<std::uint32_t> flow_pass_;  ///< the last share pass that queued this flow
  std::vector<char> fixed_;
  std::vector<std::uint32_t> capped_;      ///< flows with a finite cap, by cap then order
  std::vector<std::uint32_t> candidates_;  ///< min-heap of flows to test in this pass
  std::vector<std::uint32_t> qualified_;   ///< links at the pass's share, popped from the heap
  std::vector<std::uint32_t> touched_;     ///< links whose share changed in this pass
};

}  // namespace cs::net
