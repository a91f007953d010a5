#include "sim/collectives/collective.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/core/check.hpp"
#include "sim/core/errors.hpp"
#include "sim/network/network_model.hpp"

namespace cs::coll {

const char* op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "allreduce";
    case CollectiveOp::kAllGather: return "allgather";
    case CollectiveOp::kReduceScatter: return "reducescatter";
    case CollectiveOp::kAllToAll: return "alltoall";
    case CollectiveOp::kSendRecv: return "sendrecv";
    case CollectiveOp::kShift: return "shift";
  }
  return "?";
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto: return "auto";
    case Algorithm::kRing: return "ring";
    case Algorithm::kTree: return "tree";
    case Algorithm::kNvls: return "nvls";
    case Algorithm::kDirect: return "direct";
    case Algorithm::kMeasured: return "measured";
    case Algorithm::kHierarchical: return "hierarchical";
  }
  return "?";
}

bool parse_op(const std::string& s, CollectiveOp& out) {
  for (auto op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                  CollectiveOp::kAllToAll, CollectiveOp::kSendRecv, CollectiveOp::kShift}) {
    if (s == op_name(op)) {
      out = op;
      return true;
    }
  }
  return false;
}

bool parse_algorithm(const std::string& s, Algorithm& out) {
  for (auto a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree, Algorithm::kNvls, Algorithm::kDirect,
                 Algorithm::kHierarchical}) {
    if (s == algorithm_name(a)) {
      out = a;
      return true;
    }
  }
  return false;
}

double bus_factor(CollectiveOp op, int n) {
  const double dn = n;
  switch (op) {
    case CollectiveOp::kAllReduce: return 2.0 * (dn - 1) / dn;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll: return (dn - 1) / dn;
    case CollectiveOp::kSendRecv:
    case CollectiveOp::kShift: return 1.0;
  }
  return 1.0;
}

const MeasuredCurve* curve_for(const net::Topology& topo, const CollectiveRequest& req) {
  if (req.curves.empty() || req.algorithm != Algorithm::kAuto || !req.pair_bytes.empty() || req.ranks.size() < 2)
    return nullptr;
  std::vector<int> nodes;
  for (int r : req.ranks) {
    const int node = topo.domain_of_rank(r);
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
  const int n = static_cast<int>(req.ranks.size()), spanned = static_cast<int>(nodes.size());
  const auto& cluster = topo.cluster_of_rank(req.ranks.front());
  for (int r : req.ranks) {
    if (topo.cluster_of_rank(r) != cluster) return nullptr;  // no curve measured across box kinds
  }
  for (const auto& c : req.curves) {
    if (c.op == req.op && c.gpus == n && c.nodes == spanned && (spanned == 1 || c.fabric == topo.fabric_id()) &&
        (c.cluster.empty() || c.cluster == cluster))
      return &c;
  }
  return nullptr;
}

std::vector<std::vector<int>> node_groups(const net::Topology& topo, const std::vector<int>& ranks) {
  // The ranks grouped by domain, in first-seen order; empty unless they span several domains with the
  // same number (at least two) on each.
  std::vector<int> nodes;
  std::vector<std::vector<int>> out;
  for (int r : ranks) {
    const int n = topo.domain_of_rank(r);
    auto it = std::find(nodes.begin(), nodes.end(), n);
    if (it == nodes.end()) {
      nodes.push_back(n);
      out.push_back({r});
    } else {
      out[static_cast<std::size_t>(it - nodes.begin())].push_back(r);
    }
  }
  if (out.size() < 2 || out.front().size() < 2) return {};
  for (const auto& g : out) {
    if (g.size() != out.front().size()) return {};
  }
  return out;
}

std::vector<Algorithm> available_algorithms(const net::Topology& topo, CollectiveOp op, const std::vector<int>& ranks) {
  switch (op) {
    case CollectiveOp::kAllReduce: {
      std::vector<Algorithm> out{Algorithm::kRing, Algorithm::kTree};
      if (ranks.size() > 2 && topo.nvls_switch(ranks)) out.push_back(Algorithm::kNvls);
      if (!node_groups(topo, ranks).empty()) out.push_back(Algorithm::kHierarchical);
      return out;
    }
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter: return {Algorithm::kRing};
    case CollectiveOp::kAllToAll: {
      std::vector<Algorithm> out{Algorithm::kDirect};
      if (!node_groups(topo, ranks).empty()) out.push_back(Algorithm::kHierarchical);
      return out;
    }
    case CollectiveOp::kSendRecv:
    case CollectiveOp::kShift: return {Algorithm::kDirect};
  }
  return {};
}

namespace {

double hop_latency(const net::Topology& topo, net::VertexId a, net::VertexId b) { return topo.route(a, b).latency_s; }

/// A ring over several nodes as NCCL runs it: one ring per channel, g channels (g GPUs per node),
/// each carrying 1/g of the data and leaving every node through a different NIC. Channel c visits
/// each node's GPUs from local index c round to c - 1, and its last GPU hands the data over NVLink
/// to local GPU c, whose NIC sends it to GPU c of the next node (PXN, NCCL >= 2.12: traffic stays
/// on one rail, the NIC next to the GPU that owns it). Per channel every GPU sends one intra-node
/// flow and GPU c one inter-node flow, each `per_flow / g` bytes. The channels' intra-node hops
/// are the same GPU pairs (local i to i + 1), so they run as one flow of `per_flow` per pair; each
/// NIC then carries 1/g of what one ring through one NIC would.
template <class Add>
void rail_rings(const std::vector<std::vector<int>>& groups, double per_flow, const Add& add_rank_flow) {
  const auto g = groups.front().size();
  const auto nodes = groups.size();
  for (std::size_t k = 0; k < nodes; ++k) {
    const auto& here = groups[k];
    for (std::size_t i = 0; i < g; ++i) add_rank_flow(here[i], here[(i + 1) % g], per_flow);
    for (std::size_t c = 0; c < g; ++c)
      add_rank_flow(here[c], groups[(k + 1) % nodes][c], per_flow / static_cast<double>(g));
  }
}

/// DeepEP's normal all-to-all across nodes: rank (node a, local l) sends everything it has for
/// node b != a to (b, l) over the rail, `node_copies` of the pair bytes, and each GPU passes what it
/// received (and its own node's share) to the GPUs of its node over NVLink. Flows: nodes x g x
/// (nodes - 1) across, nodes x g x (g - 1) inside, against n (n - 1) direct ones.
template <class Add>
void rail_forwarded_alltoall(const net::Topology& topo, const CollectiveRequest& req, const Add& add) {
  const auto groups = node_groups(topo, req.ranks);
  const auto n = req.ranks.size();
  std::map<int, std::size_t> index;  // topology rank -> position in the request
  for (std::size_t i = 0; i < n; ++i) index[req.ranks[i]] = i;
  auto pair = [&](int from, int to) {
    const auto i = index.at(from), j = index.at(to);
    if (i == j) return 0.0;
    return req.pair_bytes.empty() ? req.bytes / static_cast<double>(n) : req.pair_bytes[i * n + j];
  };
  const auto nodes = groups.size(), g = groups.front().size();
  for (std::size_t a = 0; a < nodes; ++a) {
    for (std::size_t l = 0; l < g; ++l) {
      for (std::size_t b = 0; b < nodes; ++b) {
        if (b == a) continue;
        double bytes = 0;
        for (std::size_t m = 0; m < g; ++m) bytes += pair(groups[a][l], groups[b][m]);
        if (bytes > 0) add(topo.gpu(groups[a][l]), topo.gpu(groups[b][l]), bytes * req.node_copies, net::kUncapped);
      }
    }
  }
  for (std::size_t b = 0; b < nodes; ++b) {
    for (std::size_t l = 0; l < g; ++l) {
      for (std::size_t m = 0; m < g; ++m) {
        if (m == l) continue;
        double bytes = 0;  // from every node's GPU l (forwarded by (b, l), or its own) to (b, m)
        for (std::size_t a = 0; a < nodes; ++a) bytes += pair(groups[a][l], groups[b][m]);
        if (bytes > 0) add(topo.gpu(groups[b][l]), topo.gpu(groups[b][m]), bytes, net::kUncapped);
      }
    }
  }
}

CollectivePlan expand(const net::Topology& topo, const CollectiveRequest& req, Algorithm algo) {
  CollectivePlan p;
  p.algorithm = algo;
  const int n = static_cast<int>(req.ranks.size());
  const double S = req.bytes;
  auto v = [&](int i) { return topo.gpu(req.ranks[static_cast<std::size_t>(i)]); };
  double max_hop = 0.0;
  auto add = [&](net::VertexId a, net::VertexId b, double bytes, double cap) {
    p.flows.push_back({a, b, bytes, cap});
    max_hop = std::max(max_hop, hop_latency(topo, a, b));
  };
  switch (algo) {
    case Algorithm::kRing: {
      const bool all_reduce = req.op == CollectiveOp::kAllReduce;
      const double per_flow = (all_reduce ? 2.0 : 1.0) * (n - 1) / n * S;
      p.steps = (all_reduce ? 2 : 1) * (n - 1);
      if (const auto groups = node_groups(topo, req.ranks); !groups.empty()) {
        rail_rings(groups, per_flow,
                   [&](int a, int b, double bytes) { add(topo.gpu(a), topo.gpu(b), bytes, net::kUncapped); });
        break;
      }
      for (int i = 0; i < n; ++i) add(v(i), v((i + 1) % n), per_flow, net::kUncapped);
      break;
    }
    case Algorithm::kTree: {
      // NCCL's double binary tree: two heap-ordered trees over the ranks, the second mirrored,
      // each carrying half the data up (reduce) and down (broadcast), pipelined.
      for (int t = 0; t < 2; ++t) {
        auto pos = [&](int i) { return t == 0 ? i : n - 1 - i; };
        for (int i = 1; i < n; ++i) {
          const int parent = (i - 1) / 2;
          add(v(pos(i)), v(pos(parent)), S / 2, net::kUncapped);
          add(v(pos(parent)), v(pos(i)), S / 2, net::kUncapped);
        }
      }
      p.steps = 2 * static_cast<int>(std::ceil(std::log2(std::max(2, n))));
      break;
    }
    case Algorithm::kNvls: {
      // NVLink SHARP: every GPU pushes its buffer into the switch, which reduces and multicasts the
      // result back: S up and S down per GPU, at most the switch's reduction rate per port.
      const auto sw = topo.nvls_switch(req.ranks);
      CS_ASSERT(sw.has_value(), "NVLS availability checked before expansion");
      const double cap = *topo.vertex(*sw).nvls_bandwidth_bytes_per_s;
      for (int i = 0; i < n; ++i) {
        add(v(i), *sw, S, cap);
        add(*sw, v(i), S, cap);
      }
      p.steps = 2;
      break;
    }
    case Algorithm::kHierarchical: {
      if (req.op == CollectiveOp::kAllToAll) {
        rail_forwarded_alltoall(topo, req, add);
        p.steps = 2;
        break;
      }
      // Intra-node reduce-scatter + all-gather rings (2(g-1)/g S per GPU) and, per local index,
      // an inter-node ring all-reduce of the 1/g shard (2(n-1)/n S/g), pipelined together.
      const auto groups = node_groups(topo, req.ranks);
      const auto g = static_cast<int>(groups.front().size());
      const auto nn = static_cast<int>(groups.size());
      for (const auto& grp : groups) {
        for (int i = 0; i < g; ++i) {
          add(topo.gpu(grp[static_cast<std::size_t>(i)]), topo.gpu(grp[static_cast<std::size_t>((i + 1) % g)]),
              2.0 * (g - 1) / g * S, net::kUncapped);
        }
      }
      for (int i = 0; i < g; ++i) {
        for (int k = 0; k < nn; ++k) {
          add(topo.gpu(groups[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)]),
              topo.gpu(groups[static_cast<std::size_t>((k + 1) % nn)][static_cast<std::size_t>(i)]),
              2.0 * (nn - 1) / nn * S / g, net::kUncapped);
        }
      }
      p.steps = 2 * (g - 1) + 2 * (nn - 1);
      break;
    }
    case Algorithm::kDirect: {
      if (req.op == CollectiveOp::kSendRecv) {
        add(v(0), v(1), S, net::kUncapped);
      } else if (req.op == CollectiveOp::kShift) {
        for (int i = 0; i < n; ++i) add(v(i), v((i + 1) % n), S, net::kUncapped);
      } else if (!req.pair_bytes.empty()) {
        // A traffic matrix (expert dispatch with routing imbalance): each pair its own bytes.
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) {
            const double b = req.pair_bytes[static_cast<std::size_t>(i * n + j)];
            if (i != j && b > 0) add(v(i), v(j), b, net::kUncapped);
          }
        }
      } else {
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) {
            if (i != j) add(v(i), v(j), S / n, net::kUncapped);
          }
        }
      }
      p.steps = 1;
      break;
    }
    case Algorithm::kAuto:
    case Algorithm::kMeasured: CS_ASSERT(false, "auto and measured are resolved before expansion"); break;
  }
  p.latency_s = req.call_latency_s + p.steps * max_hop;
  return p;
}

}  // namespace

double estimate_seconds(const net::Topology& topo, const CollectivePlan& plan) {
  std::map<std::uint32_t, double> load;
  double capped = 0.0;
  for (const auto& f : plan.flows) {
    for (auto l : topo.route(f.src, f.dst).links) load[net::index(l)] += f.bytes;
    if (std::isfinite(f.rate_cap)) capped = std::max(capped, f.bytes / f.rate_cap);
  }
  double t = capped;
  for (const auto& [l, bytes] : load)
    t = std::max(t, bytes / topo.link(static_cast<net::LinkId>(l)).bandwidth_bytes_per_s);
  return plan.latency_s + t;
}

CollectivePlan plan_collective(const net::Topology& topo, const CollectiveRequest& req) {
  const int n = static_cast<int>(req.ranks.size());
  CS_ASSERT(n >= 1, "a collective has at least one rank");
  CS_ASSERT(req.op != CollectiveOp::kSendRecv || n == 2, "send/recv joins two ranks");
  CS_ASSERT(req.pair_bytes.empty() ||
                (req.op == CollectiveOp::kAllToAll && req.pair_bytes.size() == static_cast<std::size_t>(n * n)),
            "a traffic matrix belongs to an all-to-all, n x n entries");
  if (n == 1) return CollectivePlan{Algorithm::kDirect, {}, 0, 0.0};  // nothing to move
  const auto avail = available_algorithms(topo, req.op, req.ranks);
  if (req.algorithm != Algorithm::kAuto) {
    if (std::find(avail.begin(), avail.end(), req.algorithm) == avail.end()) {
      std::string names;
      for (auto a : avail) names += std::string(names.empty() ? "" : ", ") + algorithm_name(a);
      throw InputError("collective request", "/algorithm",
                       std::string("algorithm '") + algorithm_name(req.algorithm) + "' cannot run " + op_name(req.op) +
                           " on these GPUs of " + topo.cluster_id() + "; available: " + names);
    }
    return expand(topo, req, req.algorithm);
  }
  if (const auto* c = curve_for(topo, req)) {
    CollectiveRequest model = req;
    model.curves = {};
    auto p = plan_collective(topo, model);
    // A table: its time at this size, less the floor it has at any size (its smallest size's time),
    // is this call's bandwidth term.
    const double bw_s = c->time_s ? std::max(c->time_s(req.bytes) - c->alpha_s, 1e-9)
                                  : req.bytes * bus_factor(req.op, n) / c->busbw_bytes_per_s;
    for (auto& f : p.flows) f.rate_cap = bw_s > 0 ? f.bytes / bw_s : net::kUncapped;
    p.algorithm = Algorithm::kMeasured;
    p.latency_s = c->alpha_s;
    return p;
  }
  CollectivePlan best;
  double best_t = 0.0;
  for (auto a : avail) {
    // NCCL's all-to-all sends directly; the rail-forwarded form is DeepEP's, asked for by name.
    if (req.op == CollectiveOp::kAllToAll && a == Algorithm::kHierarchical) continue;
    auto p = expand(topo, req, a);
    const double t = estimate_seconds(topo, p);
    if (best.flows.empty() || t < best_t) {
      best = std::move(p);
      best_t = t;
    }
  }
  return best;
}

double ring_closed_form(CollectiveOp op, int n, double bytes, double bw, double hop_latency_s, double call_latency_s) {
  const int k = op == CollectiveOp::kAllReduce ? 2 : 1;
  return call_latency_s + k * (n - 1) * hop_latency_s + k * (n - 1.0) / n * bytes / bw;
}

}  // namespace cs::coll
