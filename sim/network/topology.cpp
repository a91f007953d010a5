#include "sim/network/topology.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <cmath>
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

/// Route cost: seconds per byte (sum of 1/bandwidth), then hops; costs within 1e-12 relative are
/// equal so that equal-bandwidth paths tie on hops, then on the lowest vertex id.
struct Cost {
  double per_byte = std::numeric_limits<double>::infinity();
  std::uint32_t hops = std::numeric_limits<std::uint32_t>::max();
  bool operator<(const Cost& o) const {
    const double tol = 1e-12 * std::max(per_byte, o.per_byte);
    if (per_byte < o.per_byte - tol) return true;
    if (o.per_byte < per_byte - tol) return false;
    return hops < o.hops;
  }
};

}  // namespace

Topology Topology::build(const ClusterSpec& spec, int gpus) {
  CS_ASSERT(gpus >= 1 && gpus <= spec.gpus, "GPU count checked by the caller");
  FabricSpec none;
  Topology t = build(spec, gpus, 1, none);
  for (int a = 0; a < gpus; ++a) {
    t.compute_source(index(t.gpu(a)));
    for (int b = 0; b < gpus; ++b) {
      if (a != b && t.pred_[index(t.gpu(a))][index(t.gpu(b))] < 0) {
        throw InputError(spec.id, "/links",
                         "gpu" + std::to_string(a) + " cannot reach gpu" + std::to_string(b) + " (with the first " +
                             std::to_string(gpus) + " GPUs)");
      }
    }
  }
  return t;
}

VertexId Topology::add_vertex(Vertex v) {
  const auto id = static_cast<VertexId>(vertices_.size());
  vertices_.push_back(std::move(v));
  boost::add_vertex(graph_->g);
  out_links_.emplace_back();
  return id;
}

void Topology::add_link(Link l) {
  const auto id = static_cast<std::uint32_t>(links_.size());
  boost::add_edge(index(l.from), index(l.to), id, graph_->g);
  out_links_[index(l.from)].push_back(static_cast<LinkId>(id));
  links_.push_back(std::move(l));
}

void Topology::add_duplex(VertexId a, VertexId b, double bw, double latency, const std::string& type) {
  add_link({a, b, bw, latency, type});
  add_link({b, a, bw, latency, type});
}

Topology Topology::build(const ClusterSpec& spec, int gpus_per_domain, int domains, const FabricSpec& fabric) {
  CS_ASSERT(gpus_per_domain >= 1 && gpus_per_domain <= spec.gpus && domains >= 1, "sizes checked by the caller");
  Topology t;
  t.cluster_id_ = spec.id;
  if (domains > 1) t.fabric_id_ = fabric.id;
  t.peer_to_peer_ = spec.peer_to_peer;
  // Servers (nodes) of a domain: spec.gpus_per_node GPUs each; the last may be partial when only
  // the first GPUs are used.
  const int per_node = spec.gpus_per_node > 0 ? std::min(spec.gpus_per_node, gpus_per_domain) : gpus_per_domain;
  const int nodes_per_domain = (gpus_per_domain + per_node - 1) / per_node;
  const int nodes = nodes_per_domain * domains;
  std::vector<std::vector<VertexId>> node_gpus(static_cast<std::size_t>(nodes));
  std::map<std::string, VertexId> domain0_names;
  for (int d = 0; d < domains; ++d) {
    if (d == 1) {
      t.vertices_per_domain_ = static_cast<std::uint32_t>(t.vertices_.size());
      t.links_per_domain_ = static_cast<std::uint32_t>(t.links_.size());
    }
    // Vertex names: "n<k>." per node copy, "d<k>." per domain copy when a domain holds several nodes.
    const std::string pre = domains > 1 ? (nodes_per_domain > 1 ? "d" : "n") + std::to_string(d) + "." : "";
    const int first_node = d * nodes_per_domain;
    std::map<std::string, VertexId> by_name;  // domain d's own vertices by their cluster-file ids
    for (int g = 0; g < gpus_per_domain; ++g) {
      const int node = first_node + g / per_node;
      const auto v = t.add_vertex({pre + "gpu" + std::to_string(g), VertexKind::kGpu, {}, node, d});
      by_name["gpu" + std::to_string(g)] = v;
      node_gpus[static_cast<std::size_t>(node)].push_back(v);
      t.gpu_vertices_.push_back(v);
    }
    for (const auto& sw : spec.switches)
      by_name[sw.id] = t.add_vertex({pre + sw.id, sw.kind, sw.nvls_bandwidth_bytes_per_s, first_node, d});
    for (const auto& l : spec.links) {
      auto a = by_name.find(l.a);
      auto b = by_name.find(l.b);
      if (a == by_name.end() || b == by_name.end()) continue;  // a GPU beyond --gpus
      const auto& type = spec.link_types.at(l.type);
      t.add_duplex(a->second, b->second, type.effective_bandwidth(), type.latency_s, l.type);
    }
    if (d == 0) domain0_names = by_name;
  }
  if (domains > 1) {
    t.has_fabric_ = true;
    t.domain_count_ = domains;
    CS_ASSERT(t.vertices_.size() == std::size_t{t.vertices_per_domain_} * domains &&
                  t.links_.size() == std::size_t{t.links_per_domain_} * domains,
              "domains are identical, contiguous copies");
    // Joins a child to its parent in the tree above the GPUs (GPU - NIC - switch tiers).
    auto attach = [&](VertexId child, VertexId parent, double bw, double latency, const std::string& type) {
      const auto up = static_cast<std::int64_t>(t.links_.size());
      t.add_duplex(child, parent, bw, latency, type);
      t.tree_.resize(t.vertices_.size());
      auto& c = t.tree_[index(child)];
      CS_ASSERT(c.parent < 0, "a vertex has one parent in the fabric tree");
      c.up = up;
      c.down = up + 1;
      c.parent = index(parent);
    };
    if (!fabric.nic_switch.empty() && nodes_per_domain > 1) {
      throw InputError(fabric.id, "/nic_switch",
                       "NICs behind a node switch need a cluster of one server per file; " + spec.id + " holds " +
                           std::to_string(nodes_per_domain) + " servers of " + std::to_string(per_node) + " GPUs");
    }
    // NICs: each on the PCIe path of its node's GPUs that use it.
    const double nic_bw = fabric.nic_bandwidth * fabric.nic_efficiency;
    std::vector<std::vector<VertexId>> nics(static_cast<std::size_t>(nodes));
    for (int n = 0; n < nodes; ++n) {
      const auto& gpus_of_node = node_gpus[static_cast<std::size_t>(n)];
      for (int k = 0; k < fabric.nics_per_node; ++k) {
        nics[static_cast<std::size_t>(n)].push_back(
            t.add_vertex({"n" + std::to_string(n) + ".nic" + std::to_string(k), VertexKind::kNic, {}, n, -1}));
      }
      if (!fabric.nic_switch.empty()) {
        // Each NIC on its node switch by one PCIe link; GPUs reach it through the node.
        t.gpu_nic_.resize(t.vertices_.size(), -1);
        for (std::size_t g = 0; g < gpus_of_node.size(); ++g) {
          t.gpu_nic_[index(gpus_of_node[g])] =
              index(nics[static_cast<std::size_t>(n)][static_cast<std::size_t>(fabric.nic_of(static_cast<int>(g)))]);
        }
        for (int k = 0; k < fabric.nics_per_node; ++k) {
          const auto& name = fabric.nic_switch[static_cast<std::size_t>(k)];
          auto it = domain0_names.find(name);
          if (it == domain0_names.end() || t.vertices_[index(it->second)].kind == VertexKind::kGpu) {
            std::string known;
            for (const auto& sw : spec.switches) known += (known.empty() ? "" : ", ") + sw.id;
            throw InputError(fabric.id, "/nic_switch/" + std::to_string(k),
                             "NIC " + std::to_string(k) + " hangs off '" + name +
                                 "', which is not a switch of cluster " + spec.id + " (its switches: " + known + ")");
          }
          const auto sw =
              static_cast<VertexId>(index(it->second) + static_cast<std::uint32_t>(n) * t.vertices_per_domain_);
          const auto nic = nics[static_cast<std::size_t>(n)][static_cast<std::size_t>(k)];
          const auto up = static_cast<std::int64_t>(t.links_.size());
          t.add_duplex(sw, nic, fabric.gpu_nic_bandwidth, fabric.nic_latency_s, "nic_pcie");
          t.nic_attach_[index(nic)] = TreeLinks{up, up + 1, static_cast<std::int64_t>(index(sw)), 0};
        }
        continue;
      }
      for (std::size_t g = 0; g < gpus_of_node.size(); ++g) {
        attach(gpus_of_node[g],
               nics[static_cast<std::size_t>(n)][static_cast<std::size_t>(fabric.nic_of(static_cast<int>(g)))],
               fabric.gpu_nic_bandwidth, fabric.nic_latency_s, "gpu_nic");
      }
    }
    const double lat = fabric.switch_latency_s;
    switch (fabric.kind) {
      case FabricKind::kSingleSwitch: {
        const auto sw = t.add_vertex({"fabric", VertexKind::kFabricSwitch, {}, -1, -1});
        for (const auto& node : nics) {
          for (auto nic : node) attach(nic, sw, nic_bw, lat, "nic");
        }
        break;
      }
      case FabricKind::kRail: {
        // One switch per rail (NIC index); rails meet at the spine for cross-rail traffic.
        const auto spine = t.add_vertex({"spine", VertexKind::kFabricSwitch, {}, -1, -1});
        for (int k = 0; k < fabric.nics_per_node; ++k) {
          const auto rail = t.add_vertex({"rail" + std::to_string(k), VertexKind::kFabricSwitch, {}, -1, -1});
          for (const auto& node : nics) attach(node[static_cast<std::size_t>(k)], rail, nic_bw, lat, "nic");
          attach(rail, spine, nic_bw * nodes / fabric.oversubscription, lat, "spine");
        }
        break;
      }
      case FabricKind::kFatTree: {
        const auto spine = t.add_vertex({"spine", VertexKind::kFabricSwitch, {}, -1, -1});
        const int leaves = (nodes + fabric.nodes_per_leaf - 1) / fabric.nodes_per_leaf;
        // With pods (a third tier) leaves hang off their pod and pods off the spine (the core).
        const int per_pod = fabric.leaves_per_pod > 0 ? fabric.leaves_per_pod : leaves;
        for (int p0 = 0; p0 < leaves; p0 += per_pod) {
          const auto parent =
              fabric.leaves_per_pod > 0
                  ? t.add_vertex({"pod" + std::to_string(p0 / per_pod), VertexKind::kFabricSwitch, {}, -1, -1})
                  : spine;
          double pod_uplinks = 0;
          for (int l = p0; l < std::min(leaves, p0 + per_pod); ++l) {
            const auto leaf = t.add_vertex({"leaf" + std::to_string(l), VertexKind::kFabricSwitch, {}, -1, -1});
            int in_leaf = 0;
            for (int n = l * fabric.nodes_per_leaf; n < std::min(nodes, (l + 1) * fabric.nodes_per_leaf);
                 ++n, ++in_leaf) {
              for (auto nic : nics[static_cast<std::size_t>(n)]) attach(nic, leaf, nic_bw, lat, "nic");
            }
            const double up = nic_bw * fabric.nics_per_node * in_leaf / fabric.oversubscription;
            attach(leaf, parent, up, lat, fabric.leaves_per_pod > 0 ? "pod" : "spine");
            pod_uplinks += up;
          }
          if (fabric.leaves_per_pod > 0) attach(parent, spine, pod_uplinks / fabric.pod_oversubscription, lat, "spine");
        }
        break;
      }
    }
  }
  t.tree_.resize(t.vertices_.size());
  for (std::size_t v = 0; v < t.tree_.size(); ++v) {
    int d = 0;  // distance to the fabric's root
    for (auto p = t.tree_[v].parent; p >= 0; p = t.tree_[static_cast<std::size_t>(p)].parent) ++d;
    t.tree_[v].depth = d;
  }
  t.pred_.resize(t.vertices_.size());
  return t;
}

Topology Topology::join(const std::vector<const Topology*>& parts) {
  CS_ASSERT(!parts.empty(), "a joined topology has parts");
  Topology t;
  t.peer_to_peer_ = parts.front()->peer_to_peer_;
  int node_base = 0, domain_base = 0;
  for (const auto* part : parts) {
    if (part->peer_to_peer_ != t.peer_to_peer_) {
      throw InputError(part->cluster_id_, "/peer_to_peer",
                       "boxes with and without peer-to-peer cannot serve side by side (" + parts.front()->cluster_id_ +
                           " and " + part->cluster_id_ + ")");
    }
    const auto vbase = static_cast<std::uint32_t>(t.vertices_.size());
    const auto lbase = static_cast<std::uint32_t>(t.links_.size());
    int nodes = 0, domains = 0;
    for (Vertex v : part->vertices_) {
      nodes = std::max(nodes, v.node + 1);
      domains = std::max(domains, v.domain + 1);
      if (v.node >= 0) v.node += node_base;
      if (v.domain >= 0) v.domain += domain_base;
      (void)t.add_vertex(std::move(v));
    }
    for (Link l : part->links_) {
      l.from = static_cast<VertexId>(index(l.from) + vbase);
      l.to = static_cast<VertexId>(index(l.to) + vbase);
      t.add_link(std::move(l));
    }
    CS_ASSERT(t.links_.size() - lbase == part->links_.size(), "every link copied");
    for (auto g : part->gpu_vertices_) {
      t.gpu_vertices_.push_back(static_cast<VertexId>(index(g) + vbase));
      t.rank_clusters_.push_back(part->cluster_id_);
    }
    t.cluster_id_ += (t.cluster_id_.empty() ? "" : "+") + part->cluster_id_;
    node_base += nodes;
    domain_base += domains;
  }
  t.pred_.resize(t.vertices_.size());
  return t;
}

Topology Topology::join(const std::vector<const Topology*>& parts, const FabricSpec& link) {
  Topology t = join(parts);
  t.fabric_id_ = link.id;
  const auto sw = t.add_vertex({"link", VertexKind::kFabricSwitch, {}, -1, -1});
  int rank = 0;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const int gpus = parts[p]->gpu_count();
    const int node = t.vertices_[index(t.gpu(rank))].node;
    std::vector<VertexId> nics;
    for (int k = 0; k < link.nics_per_node; ++k) {
      nics.push_back(
          t.add_vertex({"p" + std::to_string(p) + ".nic" + std::to_string(k), VertexKind::kNic, {}, node, -1}));
      t.add_duplex(nics.back(), sw, link.nic_bandwidth * link.nic_efficiency, link.switch_latency_s, "nic");
    }
    for (int g = 0; g < gpus; ++g) {
      t.add_duplex(t.gpu(rank + g), nics[static_cast<std::size_t>(link.nic_of(g))], link.gpu_nic_bandwidth,
                   link.nic_latency_s, "gpu_nic");
    }
    rank += gpus;
  }
  t.pred_.assign(t.vertices_.size(), {});
  return t;
}

void Topology::compute_source(std::uint32_t src) const {
  if (!pred_[src].empty()) return;
  const std::size_t n = vertices_.size();
  std::vector<Cost> cost(n);
  std::vector<std::int64_t> pred(n, -1);
  std::vector<bool> done(n, false);
  // Binary-heap Dijkstra; entries ordered by cost then vertex id (deterministic ties).
  using Entry = std::pair<Cost, std::uint32_t>;
  auto later = [](const Entry& a, const Entry& b) {
    if (a.first < b.first) return false;
    if (b.first < a.first) return true;
    return a.second > b.second;
  };
  std::vector<Entry> heap;
  cost[src] = {0.0, 0};
  heap.push_back({cost[src], src});
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const auto [c, u] = heap.back();
    heap.pop_back();
    if (done[u]) continue;
    done[u] = true;
    if (u != src && vertices_[u].kind == VertexKind::kGpu) continue;  // GPUs do not forward
    for (auto lid : out_links_[u]) {
      const Link& link = links_[index(lid)];
      const auto v = index(link.to);
      const Cost nc{c.per_byte + 1.0 / link.bandwidth_bytes_per_s, c.hops + 1};
      if (nc < cost[v] || (!(cost[v] < nc) && pred[v] >= 0 && index(lid) < static_cast<std::uint32_t>(pred[v]))) {
        cost[v] = nc;
        pred[v] = index(lid);
        heap.push_back({nc, v});
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
  }
  pred_[src] = std::move(pred);
}

Route Topology::intra_domain_route(std::uint32_t src, std::uint32_t dst) const {
  // Domain 0's route between the same local vertices, shifted to this domain (domains are copies).
  const std::uint32_t domain = src / vertices_per_domain_, base = domain * vertices_per_domain_;
  const auto key = std::make_pair(src - base, dst - base);
  auto it = domain0_routes_.find(key);
  if (it == domain0_routes_.end()) {
    // Domains are small: a plain Dijkstra over domain 0's own vertices (no NICs, no fabric).
    const std::uint32_t n = vertices_per_domain_, s0 = key.first;
    std::vector<Cost> cost(n);
    std::vector<std::int64_t> pred(n, -1);
    std::vector<bool> done(n, false);
    cost[s0] = {0.0, 0};
    for (std::uint32_t iter = 0; iter < n; ++iter) {
      auto u = n;
      for (std::uint32_t v = 0; v < n; ++v) {
        if (!done[v] && std::isfinite(cost[v].per_byte) && (u == n || cost[v] < cost[u])) u = v;
      }
      if (u == n) break;
      done[u] = true;
      if (u != s0 && vertices_[u].kind == VertexKind::kGpu) continue;
      for (auto lid : out_links_[u]) {
        const Link& link = links_[index(lid)];
        const auto v = index(link.to);
        if (v >= n) continue;  // a NIC: traffic inside a domain never leaves it
        const Cost nc{cost[u].per_byte + 1.0 / link.bandwidth_bytes_per_s, cost[u].hops + 1};
        if (nc < cost[v]) {
          cost[v] = nc;
          pred[v] = index(lid);
        }
      }
    }
    Route r;
    for (std::uint32_t v = key.second; v != s0;) {
      CS_ASSERT(pred[v] >= 0, "GPUs of one domain reach each other inside it");
      const auto lid = static_cast<std::uint32_t>(pred[v]);
      r.links.insert(r.links.begin(), static_cast<LinkId>(lid));
      r.latency_s += links_[lid].latency_s;
      v = index(links_[lid].from);
    }
    it = domain0_routes_.emplace(key, std::move(r)).first;
  }
  Route r = it->second;
  for (auto& l : r.links) l = static_cast<LinkId>(index(l) + domain * links_per_domain_);
  return r;
}

Route Topology::fabric_route(std::uint32_t src, std::uint32_t dst) const {
  // NICs behind a node switch: the node's route to that switch and the switch's link to the NIC
  // (and the same in reverse at the far end); the tree then starts at the NICs.
  std::vector<LinkId> head, tail;
  auto a = static_cast<std::int64_t>(src), b = static_cast<std::int64_t>(dst);
  if (!nic_attach_.empty()) {
    a = gpu_nic_[src];
    b = gpu_nic_[dst];
    const auto& na = nic_attach_.at(static_cast<std::uint32_t>(a));
    const auto& nb = nic_attach_.at(static_cast<std::uint32_t>(b));
    head = intra_domain_route(src, static_cast<std::uint32_t>(na.parent)).links;
    head.push_back(static_cast<LinkId>(na.up));
    tail.push_back(static_cast<LinkId>(nb.down));
    const auto back = intra_domain_route(static_cast<std::uint32_t>(nb.parent), dst).links;
    tail.insert(tail.end(), back.begin(), back.end());
  }
  // Climb from the deeper end until both meet at their lowest common ancestor.
  std::vector<LinkId> up, down;
  auto step = [&](std::int64_t& v, std::vector<LinkId>& out, bool upward) {
    const auto& t = tree_[static_cast<std::size_t>(v)];
    CS_ASSERT(t.parent >= 0, "two vertices of the fabric tree share its root");
    out.push_back(static_cast<LinkId>(upward ? t.up : t.down));
    v = t.parent;
  };
  while (tree_[static_cast<std::size_t>(a)].depth > tree_[static_cast<std::size_t>(b)].depth) step(a, up, true);
  while (tree_[static_cast<std::size_t>(b)].depth > tree_[static_cast<std::size_t>(a)].depth) step(b, down, false);
  while (a != b) {
    step(a, up, true);
    step(b, down, false);
  }
  Route r;
  r.links = std::move(head);
  r.links.insert(r.links.end(), up.begin(), up.end());
  r.links.insert(r.links.end(), down.rbegin(), down.rend());
  r.links.insert(r.links.end(), tail.begin(), tail.end());
  for (auto l : r.links) r.latency_s += links_[index(l)].latency_s;
  return r;
}

const Route& Topology::route(VertexId from, VertexId to) const {
  CS_ASSERT(from != to, "a route joins two different vertices");
  const std::lock_guard lock(*route_mutex_);
  const auto key = std::make_pair(index(from), index(to));
  auto it = routes_.find(key);
  if (it != routes_.end()) return it->second;
  return routes_.emplace(key, compute_route(index(from), index(to))).first->second;
}

Route Topology::compute_route(std::uint32_t src, std::uint32_t dst) const {
  const auto& a = vertices_[src];
  const auto& b = vertices_[dst];
  if (!peer_to_peer_ && a.kind == VertexKind::kGpu && b.kind == VertexKind::kGpu && a.domain == b.domain) {
    // No peer-to-peer: the sender writes into a host-memory buffer, the receiver reads it.
    const auto stage = staging_vertex(src);
    Route r = direct_route(src, stage);
    const Route back = direct_route(stage, dst);
    r.links.insert(r.links.end(), back.links.begin(), back.links.end());
    r.latency_s += back.latency_s;
    return r;
  }
  return direct_route(src, dst);
}

Route Topology::direct_route(std::uint32_t src, std::uint32_t dst) const {
  const auto own = [&](std::uint32_t v) {  // one of a domain's own vertices (not a NIC or a fabric switch)
    return vertices_[v].domain >= 0;
  };
  const int domain_a = vertices_[src].domain, domain_b = vertices_[dst].domain;
  if (has_fabric_ && domain_a == domain_b && own(src) && own(dst)) return intra_domain_route(src, dst);
  if (has_fabric_ && domain_a != domain_b && vertices_[src].kind == VertexKind::kGpu &&
      vertices_[dst].kind == VertexKind::kGpu) {
    return fabric_route(src, dst);
  }
  compute_source(src);
  const auto& pred = pred_[src];
  Route r;
  for (std::uint32_t v = dst; v != src;) {
    CS_ASSERT(pred[v] >= 0, "every pair of GPUs is connected (checked when the topology is built)");
    const auto lid = static_cast<std::uint32_t>(pred[v]);
    r.links.insert(r.links.begin(), static_cast<LinkId>(lid));
    r.latency_s += links_[lid].latency_s;
    v = index(links_[lid].from);
  }
  return r;
}

std::uint32_t Topology::staging_vertex(std::uint32_t gpu) const {
  // Host memory of the GPU's own domain, the one reached at least time per byte (then lowest id).
  std::int64_t best = -1;
  double best_cost = std::numeric_limits<double>::infinity();
  for (std::uint32_t v = 0; v < vertices_.size(); ++v) {
    if (vertices_[v].kind != VertexKind::kHostMemory || vertices_[v].domain != vertices_[gpu].domain) continue;
    double cost = 0;
    for (auto l : direct_route(gpu, v).links) cost += 1.0 / links_[index(l)].bandwidth_bytes_per_s;
    if (cost < best_cost * (1 - 1e-12)) {
      best = v;
      best_cost = cost;
    }
  }
  CS_ASSERT(best >= 0, "a cluster without peer-to-peer has host memory (checked by the parser)");
  return static_cast<std::uint32_t>(best);
}

double Topology::bottleneck(const Route& r) const {
  double bw = std::numeric_limits<double>::infinity();
  for (auto l : r.links) bw = std::min(bw, links_[index(l)].bandwidth_bytes_per_s);
  return bw;
}

std::optional<VertexId> Topology::nvls_switch(const std::vector<int>& ranks) const {
  // A switch adjacent to every rank is adjacent to the first: only its neighbours are candidates.
  if (ranks.empty()) return std::nullopt;
  std::vector<std::uint32_t> candidates;
  for (auto l : out_links_[index(gpu(ranks.front()))]) {
    const auto v = index(links_[index(l)].to);
    if (vertices_[v].nvls_bandwidth_bytes_per_s) candidates.push_back(v);
  }
  std::sort(candidates.begin(), candidates.end());
  for (auto v : candidates) {
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
