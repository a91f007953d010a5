#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sim/network/cluster_spec.hpp"
#include "sim/network/fabric_spec.hpp"

namespace cs::net {

enum class VertexId : std::uint32_t {};
enum class LinkId : std::uint32_t {};
[[nodiscard]] constexpr std::uint32_t index(VertexId v) { return static_cast<std::uint32_t>(v); }
[[nodiscard]] constexpr std::uint32_t index(LinkId l) { return static_cast<std::uint32_t>(l); }

/// One directed link as the network models see it.
struct Link {
  VertexId from{};
  VertexId to{};
  double bandwidth_bytes_per_s = 0.0;  ///< effective (line rate x efficiency), per direction
  double latency_s = 0.0;
  std::string type;
};

struct Vertex {
  std::string name;
  VertexKind kind = VertexKind::kGpu;
  std::optional<double> nvls_bandwidth_bytes_per_s;
  int node = 0;    ///< the server it belongs to (a domain's shared switches: its first server); -1 for fabric switches
  int domain = 0;  ///< the NVLink domain (copy of the cluster file) it belongs to; -1 for NICs and fabric switches
};

/// The path a flow takes: directed links in order, with their summed latency.
struct Route {
  std::vector<LinkId> links;
  double latency_s = 0.0;
};

/// The machine as a graph (Boost.Graph inside, never exposed): GPU, NVSwitch, PCIe switch, root
/// complex, host memory and NIC vertices joined by directed links. Routes are computed once,
/// deterministically: least time per byte (sum of 1/bandwidth), then fewest hops, ties to the lowest
/// vertex ids; GPUs are end points and never forward traffic. Without peer-to-peer (GeForce), a
/// GPU-to-GPU route goes through the host memory nearest the sender (the staging buffer).
///
/// A cluster file is one NVLink domain: usually one server (node), or several servers sharing
/// NVLink switches (GB200 NVL72: 18 servers of 4 GPUs). Nodes own the NICs; domains own the links
/// between GPUs. Traffic inside a domain stays on its links; traffic between domains uses the NICs
/// of the sender's and receiver's nodes and the fabric.
class Topology {
 public:
  /// The first `gpus` GPUs of `spec`, with every switch and link among what remains.
  static Topology build(const ClusterSpec& spec, int gpus);
  /// `domains` copies of the first `gpus_per_domain` GPUs of `spec`, joined by `fabric`: each
  /// node's NICs (spec.gpus_per_node GPUs to a node) hang off their GPUs (the PCIe path), and the
  /// NICs off the fabric's switches. GPU rank r is GPU r % gpus_per_domain of domain
  /// r / gpus_per_domain. Routes between GPUs of one domain never leave it.
  static Topology build(const ClusterSpec& spec, int gpus_per_domain, int domains, const FabricSpec& fabric);
  /// Machines side by side with no link between them (boxes of different kinds serving the same
  /// requests, whose replicas never talk to each other): every part's vertices and links in order,
  /// GPU ranks following the parts, nodes and NVLink domains numbered on. Routes are computed over
  /// the whole graph (least time per byte, as in one box), so a part's own routes stay inside it
  /// and no route joins two parts (asking for one is a bug). Parts must all allow peer-to-peer or
  /// none. The cluster id is the parts' joined by '+'; cluster_of_rank names each rank's.
  static Topology join(const std::vector<const Topology*>& parts);
  /// As above, the parts (one box each) joined by `link`: each box's NICs on its GPUs' PCIe path,
  /// every NIC on one switch (two rentals' boxes over their Ethernet, or one fabric's leaf), so
  /// traffic between parts crosses NICs and switch as flows like any other.
  static Topology join(const std::vector<const Topology*>& parts, const FabricSpec& link);
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  ~Topology();

  [[nodiscard]] int gpu_count() const { return static_cast<int>(gpu_vertices_.size()); }
  [[nodiscard]] VertexId gpu(int rank) const { return gpu_vertices_.at(static_cast<std::size_t>(rank)); }
  [[nodiscard]] const Vertex& vertex(VertexId v) const { return vertices_[index(v)]; }
  [[nodiscard]] std::size_t vertex_count() const { return vertices_.size(); }
  [[nodiscard]] const Link& link(LinkId l) const { return links_[index(l)]; }
  [[nodiscard]] std::size_t link_count() const { return links_.size(); }
  /// The route from one vertex to another (cached; `from != to`). Thread-safe; the reference stays
  /// valid for the topology's life.
  [[nodiscard]] const Route& route(VertexId from, VertexId to) const;
  /// Bottleneck effective bandwidth along a route.
  [[nodiscard]] double bottleneck(const Route& r) const;
  /// An NVSwitch with NVLS adjacent to every GPU of `ranks`, if any (lowest id first).
  [[nodiscard]] std::optional<VertexId> nvls_switch(const std::vector<int>& ranks) const;
  /// The directed link between two adjacent vertices, if any.
  [[nodiscard]] std::optional<LinkId> direct_link(VertexId from, VertexId to) const;
  [[nodiscard]] const std::string& cluster_id() const { return cluster_id_; }
  /// The cluster file a rank's GPU belongs to (a joined topology's parts differ).
  [[nodiscard]] const std::string& cluster_of_rank(int rank) const {
    return rank_clusters_.empty() ? cluster_id_ : rank_clusters_.at(static_cast<std::size_t>(rank));
  }
  /// The fabric joining the nodes ("" for one node).
  [[nodiscard]] const std::string& fabric_id() const { return fabric_id_; }
  /// The server (node) a rank's GPU sits in: the unit that owns NICs.
  [[nodiscard]] int node_of_rank(int rank) const { return vertices_[index(gpu(rank))].node; }
  /// The NVLink domain (copy of the cluster file) a rank's GPU sits in; equal to its node unless
  /// the cluster file holds several servers.
  [[nodiscard]] int domain_of_rank(int rank) const { return vertices_[index(gpu(rank))].domain; }
  /// Links below this id are the domains' own (domain d's: [d, d + 1) x links per domain); the
  /// rest join GPUs or node switches to NICs, and NICs to the fabric.
  [[nodiscard]] std::size_t domain_link_end() const {
    return has_fabric_ ? static_cast<std::size_t>(vertices_per_domain_ ? links_per_domain_ : 0) *
                             static_cast<std::size_t>(domain_count_)
                       : links_.size();
  }

 private:
  Topology();
  /// Builders' steps: a vertex, a directed link, a link each way (the graph and the tables together).
  VertexId add_vertex(Vertex v);
  void add_link(Link l);
  void add_duplex(VertexId a, VertexId b, double bw, double latency, const std::string& type);
  struct Graph;
  std::unique_ptr<Graph> graph_;
  std::string cluster_id_;
  std::string fabric_id_;
  std::vector<std::string> rank_clusters_;  ///< joined: each rank's cluster id (else empty)
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<VertexId> gpu_vertices_;
  /// Routes are computed on demand and materialised once. One domain: one Dijkstra per source
  /// (predecessor links kept). Several domains: domains are identical copies, so a route inside
  /// domain d is domain 0's route shifted by d's vertex and link offsets; a route between domains
  /// is the GPU's link to its node's NIC, the unique path up and down the fabric's tree, and the far
  /// NIC's link to the GPU (GPUs never forward and a NIC joins only its GPUs and one fabric switch,
  /// so no other path exists). Callers of route() may run on several threads (it locks).
  void compute_source(std::uint32_t src) const;
  [[nodiscard]] Route compute_route(std::uint32_t src, std::uint32_t dst) const;
  [[nodiscard]] Route direct_route(std::uint32_t src, std::uint32_t dst) const;
  [[nodiscard]] Route intra_domain_route(std::uint32_t src, std::uint32_t dst) const;
  [[nodiscard]] Route fabric_route(std::uint32_t src, std::uint32_t dst) const;
  /// Without peer-to-peer: the host memory vertex a GPU stages its copies in (least time per byte
  /// from the GPU, then the lowest id).
  [[nodiscard]] std::uint32_t staging_vertex(std::uint32_t gpu) const;
  bool has_fabric_ = false;
  bool peer_to_peer_ = true;
  std::uint32_t vertices_per_domain_ = 0;  ///< domain d's own vertices: [d * this, (d + 1) * this)
  std::uint32_t links_per_domain_ = 0;     ///< domain d's own links: [d * this, (d + 1) * this)
  int domain_count_ = 1;
  struct TreeLinks {
    std::int64_t up = -1;    ///< link to the parent (GPU: to its NIC; NIC: to its switch)
    std::int64_t down = -1;  ///< the parent's link back
    std::int64_t parent = -1;
    std::int32_t depth = 0;
  };
  std::vector<TreeLinks> tree_;  ///< several nodes: per vertex (GPUs, NICs, fabric switches)
  /// NICs behind a node switch (fabric `nic_switch`): each GPU's NIC, and each NIC's switch and
  /// links (`tree_` then starts at the NICs; a GPU reaches its NIC through the node).
  std::vector<std::int64_t> gpu_nic_;                    ///< by GPU vertex
  std::map<std::uint32_t, TreeLinks> nic_attach_;        ///< by NIC vertex: parent = its node switch
  mutable std::vector<std::vector<std::int64_t>> pred_;  ///< per source: predecessor link of each vertex
  mutable std::map<std::pair<std::uint32_t, std::uint32_t>, Route> routes_;
  std::unique_ptr<std::mutex> route_mutex_ = std::make_unique<std::mutex>();         ///< guards the route caches
  mutable std::map<std::pair<std::uint32_t, std::uint32_t>, Route> domain0_routes_;  ///< intra-domain template
  std::vector<std::vector<LinkId>> out_links_;
};

}  // namespace cs::net
