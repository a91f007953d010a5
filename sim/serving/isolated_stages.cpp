#include "sim/serving/isolated_stages.hpp"

#include <algorithm>
#include <cstdint>

#include "sim/collectives/collective.hpp"

namespace cs::serving {

namespace {

/// Every link a collective of `op` over `ranks` can load, whichever algorithm runs it.
void collective_links(const net::Topology& topo, coll::CollectiveOp op, const std::vector<int>& ranks,
                      std::vector<std::uint32_t>& out) {
  for (auto a : coll::available_algorithms(topo, op, ranks)) {
    coll::CollectiveRequest req;
    req.op = op;
    req.algorithm = a;
    req.ranks = ranks;
    req.bytes = 1.0;
    for (const auto& f : coll::plan_collective(topo, req).flows) {
      for (auto l : topo.route(f.src, f.dst).links) out.push_back(net::index(l));
    }
  }
}

}  // namespace

void mark_isolated(const net::Topology& topo, const std::vector<std::vector<Stage>*>& replicas,
                   const std::vector<TransferPairs>& transfers, bool fast_path) {
  std::vector<std::vector<std::uint32_t>> classes;
  std::vector<Stage*> owner;  ///< the stage whose TP collectives a class is (null: a transfer)
  const auto add_route = [&](std::vector<std::uint32_t>& c, int a, int b) {
    for (auto l : topo.route(topo.gpu(a), topo.gpu(b)).links) c.push_back(net::index(l));
  };
  for (auto* stages : replicas) {
    for (std::size_t k = 0; k < stages->size(); ++k) {
      auto& st = (*stages)[k];
      std::vector<std::uint32_t> c;
      if (st.ranks.size() > 1) {
        collective_links(topo, coll::CollectiveOp::kAllReduce, st.ranks, c);
        collective_links(topo, coll::CollectiveOp::kAllGather, st.ranks, c);
      }
      classes.push_back(std::move(c));
      owner.push_back(&st);
      if (k + 1 < stages->size()) {
        std::vector<std::uint32_t> send;
        add_route(send, st.ranks.front(), (*stages)[k + 1].ranks.front());
        classes.push_back(std::move(send));
        owner.push_back(nullptr);
      }
    }
  }
  for (const auto& t : transfers) {
    std::vector<std::uint32_t> c;
    for (int r = 0; r < t.pairs; ++r)
      add_route(c, t.from->ranks[static_cast<std::size_t>(r)], t.to->ranks[static_cast<std::size_t>(r)]);
    classes.push_back(std::move(c));
    owner.push_back(nullptr);
  }
  std::vector<int> users(topo.link_count(), 0);
  for (auto& c : classes) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    for (auto l : c) ++users[l];
  }
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (!owner[i]) continue;
    bool alone = fast_path;
    for (auto l : classes[i]) alone = alone && users[l] == 1;
    owner[i]->isolated = alone;
  }
}

}  // namespace cs::serving
