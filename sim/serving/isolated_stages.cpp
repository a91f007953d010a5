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

/// A vertex that only forwards flows (none starts or ends there).
bool forwards_only(const net::Vertex& v) {
  using net::VertexKind;
  if (v.nvls_bandwidth_bytes_per_s) return false;  // reduces in the switch: may emit
  return v.kind == VertexKind::kFabricSwitch || v.kind == VertexKind::kPcieSwitch || v.kind == VertexKind::kNic ||
         v.kind == VertexKind::kRootComplex || v.kind == VertexKind::kNvSwitch;
}

}  // namespace

std::vector<char> never_binding(const net::Topology& topo) {
  const auto n = topo.vertex_count();
  const auto links = topo.link_count();
  std::vector<double> in(n, 0.0), out(n, 0.0);
  for (std::uint32_t l = 0; l < links; ++l) {
    const auto& k = topo.link(static_cast<net::LinkId>(l));
    in[net::index(k.to)] += k.bandwidth_bytes_per_s;
    out[net::index(k.from)] += k.bandwidth_bytes_per_s;
  }
  std::vector<char> free(links, 0);
  for (std::uint32_t l = 0; l < links; ++l) {
    const auto& k = topo.link(static_cast<net::LinkId>(l));
    const auto back = topo.direct_link(k.to, k.from);
    const double back_bw = back ? topo.link(*back).bandwidth_bytes_per_s : 0.0;
    const auto u = net::index(k.from), v = net::index(k.to);
    // The solver's relative 1e-12 for the sums' rounding (n x bw against bw added n times).
    const double cap = k.bandwidth_bytes_per_s * (1 + 1e-12);
    const bool fed = forwards_only(topo.vertex(k.from)) && in[u] - back_bw <= cap;
    const bool drained = forwards_only(topo.vertex(k.to)) && out[v] - back_bw <= cap;
    free[l] = fed || drained ? 1 : 0;
  }
  return free;
}

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
  const std::size_t first_transfer = classes.size();
  for (const auto& t : transfers) {
    std::vector<std::uint32_t> c;
    for (int r = 0; r < t.pairs; ++r)
      add_route(c, t.from->ranks[static_cast<std::size_t>(r)], t.to->ranks[static_cast<std::size_t>(r)]);
    classes.push_back(std::move(c));
    owner.push_back(nullptr);
  }
  const auto free = never_binding(topo);
  std::vector<int> users(topo.link_count(), 0);        ///< classes that load each link
  std::vector<int> transferred(topo.link_count(), 0);  ///< of those, KV transfer routes
  for (std::size_t i = 0; i < classes.size(); ++i) {
    auto& c = classes[i];
    std::erase_if(c, [&](std::uint32_t l) { return free[l] != 0; });
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    for (auto l : c) {
      ++users[l];
      if (i >= first_transfer) ++transferred[l];
    }
  }
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (!owner[i]) continue;
    bool alone = fast_path, but_transfers = fast_path;
    for (auto l : classes[i]) {
      alone = alone && users[l] == 1;
      but_transfers = but_transfers && users[l] - transferred[l] == 1;
    }
    owner[i]->isolated = alone;
    owner[i]->guarded = !alone && but_transfers;
  }
}

}  // namespace cs::serving
