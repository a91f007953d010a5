#include "sim/config/cluster_file.hpp"

#include <algorithm>
#include <set>

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"

namespace cs::config {

using net::ClusterSpec;
using net::LinkSpec;
using net::LinkTypeSpec;
using net::SwitchSpec;
using net::VertexKind;

ClusterSpec parse_cluster(const config::JsonDoc& doc, const std::string& id) {
  config::Problems problems;
  auto r = config::Reader::root(doc, problems);
  problems.throw_if_any();
  ClusterSpec c;
  c.id = id;
  (void)r.opt_string("id", id);
  c.name = r.req_string("name");
  c.profile = r.req_string("profile");
  const std::size_t before_gpus = problems.size();
  c.gpus = static_cast<int>(r.req_int("gpus", 1, net::kMaxClusterGpus));
  // With no usable GPU count, links to gpuN cannot be judged: only /gpus is reported.
  const bool gpus_known = problems.size() == before_gpus;
  const auto is_gpu_name = [](const std::string& v) {
    return v.size() > 3 && v.compare(0, 3, "gpu") == 0 && v.find_first_not_of("0123456789", 3) == std::string::npos;
  };
  c.gpus_per_node = static_cast<int>(r.opt_int("gpus_per_node", 1, net::kMaxClusterGpus, c.gpus));
  if (c.gpus_per_node > 0 && c.gpus % c.gpus_per_node != 0) {
    r.fail_at("gpus_per_node",
              "expected a divisor of gpus (" + std::to_string(c.gpus) + "); got " + std::to_string(c.gpus_per_node));
  }
  if (auto p2p = r.opt_child("peer_to_peer")) {
    c.peer_to_peer = p2p->req_bool("enabled");
    c.peer_to_peer_source = p2p->req_string("source");
    p2p->finish();
  }
  c.source = r.req_string("source");
  {
    auto types = r.child("link_types");
    for (const auto& name : types.keys()) {
      auto t = types.child(name);
      LinkTypeSpec s;
      s.name = name;
      s.bandwidth_bytes_per_s = t.req_quantity("bandwidth", Dimension::kBandwidth, 1.0);
      s.efficiency = t.req_number("efficiency", 0.01, 1.0);
      s.latency_s = t.req_quantity("latency", Dimension::kTime, 0.0);
      s.source = t.req_string("source");
      s.efficiency_source = t.req_string("efficiency_source");
      t.finish();
      c.link_types[name] = s;
    }
    types.finish();
  }
  std::set<std::string> names;
  for (int g = 0; g < c.gpus; ++g) names.insert("gpu" + std::to_string(g));
  for (auto& s : r.each("switches")) {
    SwitchSpec sw;
    sw.id = s.req_string("id");
    const auto kind = s.req_enum("kind", {"nvswitch", "pcie_switch", "root_complex", "nic", "host_memory"});
    sw.kind = kind == "nvswitch"       ? VertexKind::kNvSwitch
              : kind == "pcie_switch"  ? VertexKind::kPcieSwitch
              : kind == "root_complex" ? VertexKind::kRootComplex
              : kind == "host_memory"  ? VertexKind::kHostMemory
                                       : VertexKind::kNic;
    if (auto nvls = s.opt_child("nvls")) {
      sw.nvls_bandwidth_bytes_per_s = nvls->req_quantity("bandwidth", Dimension::kBandwidth, 1.0);
      sw.nvls_source = nvls->req_string("source");
      nvls->finish();
      if (sw.kind != VertexKind::kNvSwitch) s.fail_at("nvls", "only an nvswitch can have NVLS");
    }
    if (!sw.id.empty() && !names.insert(sw.id).second) s.fail_at("id", "duplicate vertex id '" + sw.id + "'");
    s.finish();
    c.switches.push_back(sw);
  }
  std::set<std::string> connected;
  auto links = r.each("links");
  for (auto& l : links) {
    LinkSpec ls;
    ls.a = l.req_string("a");
    ls.b = l.req_string("b");
    ls.type = l.req_string("type");
    for (const auto* key : {"a", "b"}) {
      const auto& v = std::string(key) == "a" ? ls.a : ls.b;
      if (!v.empty() && !names.count(v) && (gpus_known || !is_gpu_name(v))) {
        std::vector<std::string> all(names.begin(), names.end());
        std::string msg = "unknown vertex '" + v + "' (GPUs are gpu0..gpu" + std::to_string(c.gpus - 1) +
                          ", switches are listed under /switches)";
        if (auto m = config::closest_match(v, all)) msg += "; did you mean '" + *m + "'?";
        l.fail_at(key, msg);
      }
    }
    if (ls.a == ls.b && !ls.a.empty()) l.fail_at("b", "a link must join two different vertices");
    if (!ls.type.empty() && !c.link_types.count(ls.type)) {
      std::vector<std::string> all;
      for (const auto& [k, v] : c.link_types) all.push_back(k);
      std::string msg = "unknown link type '" + ls.type + "' (not in /link_types)";
      if (auto m = config::closest_match(ls.type, all)) msg += "; did you mean '" + *m + "'?";
      l.fail_at("type", msg);
    }
    l.finish();
    connected.insert(ls.a);
    connected.insert(ls.b);
    c.links.push_back(ls);
  }
  if (!c.peer_to_peer && std::none_of(c.switches.begin(), c.switches.end(),
                                      [](const SwitchSpec& sw) { return sw.kind == VertexKind::kHostMemory; })) {
    r.fail_at("peer_to_peer",
              "without peer-to-peer, GPU-to-GPU copies are staged in host memory: expected a switch "
              "of kind host_memory (a socket's DRAM) linked to the root complex");
  }
  r.finish();
  for (int g = 0; g < c.gpus && gpus_known; ++g) {
    if (!connected.count("gpu" + std::to_string(g))) {
      problems.add({doc.path, "/links", "gpu" + std::to_string(g) + " has no link"});
    }
  }
  problems.throw_if_any();
  return c;
}

}  // namespace cs::config
