#include "sim/network/topology.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <limits>
#include <map>

#include "sim/core/check.hpp"
#include "sim/core/errors.hpp"

namespace cs::net {

// vecS/vecS so that descriptors are dense indices and iteration order is insertion order.
struct Topology::Graph {
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                  boost::property<boost::edge_index_t, std::uint32_t>>;
  G g;
};

Topology::Topology() : graph_(std::make_unique<Graph>()) {}
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;
Topology::~Topology() = default;

namespace {

/// Deterministic single-source shortest paths: cost = (seconds per byte, hops), ties by lowest
/// predecessor id. GPUs other than the source do not forward.
struct Cost {
  double per_byte = std::numeric_limits<double>::infinity();
  std::uint32_t hops = std::numeric_limits<std::uint32_t>::max();
  bool operator<(const Cost& o) const {
    // Costs within 1e-12 relative are equal so that equal-bandwidth paths tie on hops.
    const double tol = 1e-12 * std::max(per_byte, o.per_byte);
    if (per_byte < o.per_byte - tol) return true;
    if (o.per_byte < per_byte - tol) return false;
    return hops < o.hops;
  }
};

}  // namespace

Topology Topology::build(const ClusterSpec& spec, int gpus) {
  CS_ASSERT(gpus >= 1 && gpus <= spec.gpus, "GPU count checked by the caller");
  Topology t;
  t.cluster_id_ = spec.id;
  std::map<std::string, VertexId> by_name;
  auto add_vertex = [&](Vertex v) {
    const auto id = static_cast<VertexId>(t.vertices_.size());
    by_name[v.name] = id;
    t.vertices_.push_back(std::move(v));
    boost::add_vertex(t.graph_->g);
    return id;
  };
  for (int g = 0; g < gpus; ++g) t.gpu_vertices_.push_back(add_vertex({"gpu" + std::to_string(g), VertexKind::kGpu, {}}));
  for (const auto& s : spec.switches) add_vertex({s.id, s.kind, s.nvls_bandwidth_bytes_per_s});
  for (const auto& l : spec.links) {
    auto a = by_name.find(l.a);
    auto b = by_name.find(l.b);
    if (a == by_name.end() || b == by_name.end()) continue;  // a GPU beyond --gpus
    const auto& type = spec.link_types.at(l.type);
    for (auto [from, to] : {std::pair{a->second, b->second}, std::pair{b->second, a->second}}) {
      const auto id = static_cast<std::uint32_t>(t.links_.size());
      t.links_.push_back({from, to, type.effective_bandwidth(), type.latency_s, l.type});
      boost::add_edge(index(from), index(to), id, t.graph_->g);
    }
  }
  // All-pairs routes (a node has tens of vertices; multi-node fabrics will route hierarchically).
  const std::size_t n = t.vertices_.size();
  t.routes_.resize(n * n);
  const auto edge_index = boost::get(boost::edge_index, t.graph_->g);
  for (std::size_t src = 0; src < n; ++src) {
    std::vector<Cost> cost(n);
    std::vector<std::int64_t> pred_link(n, -1);
    std::vector<bool> done(n, false);
    cost[src] = {0.0, 0};
    for (std::size_t iter = 0; iter < n; ++iter) {
      std::size_t u = n;
      for (std::size_t v = 0; v < n; ++v) {
        if (!done[v] && std::isfinite(cost[v].per_byte) && (u == n || cost[v] < cost[u])) u = v;
      }
      if (u == n) break;
      done[u] = true;
      if (u != src && t.vertices_[u].kind == VertexKind::kGpu) continue;  // GPUs do not forward
      for (auto [e, e_end] = boost::out_edges(u, t.graph_->g); e != e_end; ++e) {
        const std::uint32_t lid = edge_index[*e];
        const auto v = boost::target(*e, t.graph_->g);
        const Link& link = t.links_[lid];
        Cost c{cost[u].per_byte + 1.0 / link.bandwidth_bytes_per_s, cost[u].hops + 1};
        if (c < cost[v]) {
          cost[v] = c;
          pred_link[v] = lid;
        }
      }
    }
    for (std::size_t dst = 0; dst < n; ++dst) {
      if (dst == src || pred_link[dst] < 0) continue;
      Route r;
      for (std::size_t v = dst; v != src;) {
        const auto lid = static_cast<std::uint32_t>(pred_link[v]);
        r.links.insert(r.links.begin(), static_cast<LinkId>(lid));
        r.latency_s += t.links_[lid].latency_s;
        v = index(t.links_[lid].from);
      }
      t.routes_[src * n + dst] = std::move(r);
    }
  }
  for (int a = 0; a < gpus; ++a) {
    for (int b = 0; b < gpus; ++b) {
      if (a != b && t.routes_[index(t.gpu(a)) * n + index(t.gpu(b))].links.empty()) {
        throw InputError(spec.id, "/links", "gpu" + std::to_string(a) + " cannot reach gpu" + std::to_string(b) +
                                                " (with the first " + std::to_string(gpus) + " GPUs)");
      }
    }
  }
  return t;
}

const Route& Topology::route(VertexId from, VertexId to) const {
  CS_ASSERT(from != to, "a route joins two different vertices");
  const auto& r = routes_[index(from) * vertices_.size() + index(to)];
  CS_ASSERT(!r.links.empty(), "every pair of GPUs is connected (checked when the cluster is loaded)");
  return r;
}

double Topology::bottleneck(const Route& r) const {
  double bw = std::numeric_limits<double>::infinity();
  for (auto l : r.links) bw = std::min(bw, links_[index(l)].bandwidth_bytes_per_s);
  return bw;
}

std::optional<VertexId> Topology::nvls_switch(const std::vector<int>& ranks) const {
  for (std::size_t v = 0; v < vertices_.size(); ++v) {
    if (!vertices_[v].nvls_bandwidth_bytes_per_s) continue;
    bool all = true;
    for (int r : ranks) all = all && direct_link(gpu(r), static_cast<VertexId>(v)).has_value();
    if (all) return static_cast<VertexId>(v);
  }
  return std::nullopt;
}

std::optional<LinkId> Topology::direct_link(VertexId from, VertexId to) const {
  const auto edge_index = boost::get(boost::edge_index, graph_->g);
  for (auto [e, e_end] = boost::out_edges(index(from), graph_->g); e != e_end; ++e) {
    if (boost::target(*e, graph_->g) == index(to)) return static_cast<LinkId>(edge_index[*e]);
  }
  return std::nullopt;
}

}  // namespace cs::net
