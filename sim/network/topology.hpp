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
  int node = 0;  ///< the server it belongs to; -1 for fabric switches
};

/// The path a flow takes: directed links in order, with their summed latency.
struct Route {
  std::vector<LinkId> links;
  double latency_s = 0.0;
};

/// The machine as a graph (Boost.Graph inside, never exposed): GPU, NVSwitch, PCIe switch, root
/// complex and NIC vertices joined by directed links. Routes are computed once, deterministically:
/// least time per byte (sum of 1/bandwidth), then fewest hops, ties to the lowest vertex ids;
/// GPUs are end points and never forward traffic.
class Topology {
 public:
  /// The first `gpus` GPUs of `spec`, with every switch and link among what remains.
  static Topology build(const ClusterSpec& spec, int gpus);
  /// `nodes` copies of the first `gpus_per_node` GPUs of `spec`, joined by `fabric`: each node's
  /// NICs hang off their GPUs (the PCIe path), and the NICs off the fabric's switches. GPU rank
  /// r is GPU r % gpus_per_node of node r / gpus_per_node. Routes between GPUs of one node never
  /// leave it.
  static Topology build(const ClusterSpec& spec, int gpus_per_node, int nodes, const FabricSpec& fabric);
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
  [[nodiscard]] int node_of_rank(int rank) const { return vertices_[index(gpu(rank))].node; }
  /// Links below this id are the nodes' own (node n's: [n, n + 1) x links per node); the rest join
  /// GPUs or node switches to NICs, and NICs to the fabric.
  [[nodiscard]] std::size_t node_link_end() const {
    return has_fabric_ ? static_cast<std::size_t>(vertices_per_node_ ? links_per_node_ : 0) *
                             static_cast<std::size_t>(node_count_)
                       : links_.size();
  }

 private:
  Topology();
  struct Graph;
  std::unique_ptr<Graph> graph_;
  std::string cluster_id_;
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<VertexId> gpu_vertices_;
  /// Routes are computed on demand and materialised once. One node: one Dijkstra per source
  /// (predecessor links kept). Several nodes: nodes are identical copies, so a route inside node n
  /// is node 0's route shifted by n's vertex and link offsets; a route between nodes is the GPU's
  /// link to its NIC, the unique path up and down the fabric's tree, and the far NIC's link to the
  /// GPU (GPUs never forward and a NIC joins only its GPUs and one fabric switch, so no other path
  /// exists). Callers of route() may run on several threads (it locks).
  void compute_source(std::uint32_t src) const;
  [[nodiscard]] Route intra_node_route(std::uint32_t src, std::uint32_t dst) const;
  [[nodiscard]] Route fabric_route(std::uint32_t src, std::uint32_t dst) const;
  bool has_fabric_ = false;
  std::uint32_t vertices_per_node_ = 0;  ///< node n's own vertices: [n * this, (n + 1) * this)
  std::uint32_t links_per_node_ = 0;     ///< node n's own links: [n * this, (n + 1) * this)
  int node_count_ = 1;
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
  std::unique_ptr<std::mutex> route_mutex_ = std::make_unique<std::mutex>();       ///< guards the route caches
  mutable std::map<std::pair<std::uint32_t, std::uint32_t>, Route> node0_routes_;  ///< intra-node template
  std::vector<std::vector<LinkId>> out_links_;
};

}  // namespace cs::net
