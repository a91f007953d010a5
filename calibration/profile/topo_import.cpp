#include "calibration/profile/topo_import.hpp"

#include <charconv>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "calibration/profile/text_tokens.hpp"
#include "sim/core/errors.hpp"

namespace cs::calib {

namespace {

bool is_indexed(const std::string& s, const char* prefix) {
  const std::string p(prefix);
  return s.size() > p.size() && s.compare(0, p.size(), p) == 0 &&
         s.find_first_not_of("0123456789", p.size()) == std::string::npos;
}

/// The link count of an "NV<k>" relation, 1 to kMaxNvlinks; 0 if it is not one.
int nvlinks(const std::string& r) {
  if (r.size() <= 2 || r.compare(0, 2, "NV") != 0) return 0;
  int k = 0;
  const auto [p, ec] = std::from_chars(r.data() + 2, r.data() + r.size(), k);
  return ec == std::errc{} && p == r.data() + r.size() && k >= 1 && k <= kMaxNvlinks ? k : 0;
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(static_cast<std::size_t>(n)) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[static_cast<std::size_t>(x)] != x)
      x = parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    return x;
  }
  void unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);  // lowest index is the root
  }
};

// Citations shared with the shipped cluster files (scenarios/clusters).
const char* kNvlinkSource =
    "nvidia-smi topo -m reports NV<k>: k bonded NVLink links; NVLink 2.0-4.0 carry 25 GB/s per link per direction "
    "(A100 datasheet: 12 links = 300 GB/s; H100: 18 links = 450 GB/s)";
const char* kNvlinkEff =
    "NCCL maintainer (F-nccl-a100-8gpu-allreduce-expected): SM-driven transfers carry ~20 of 25 GB/s per link; "
    "latency assumed 0.5 us per hop";
const char* kPcieEff =
    "p2pBandwidthLatencyTest (F-p2p-rtx6000ada-pcie): 26.3 of 31.5 GB/s on PCIe 4.0 x16 = 0.83; latency ~1.1 us over "
    "two hops";

}  // namespace

TopoMatrix parse_topo_matrix(const std::string& text, const std::string& file) {
  TopoMatrix m;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  int ngpu = 0, nnic = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto t = split_words(line);
    if (t.empty()) continue;
    if (t[0] == "Legend:") break;
    if (!header) {
      if (t[0] == "GPU0") {
        header = true;
        for (const auto& c : t) {
          if (is_indexed(c, "GPU")) ++ngpu;
          if (is_indexed(c, "NIC") || is_indexed(c, "mlx5_")) ++nnic;
        }
        if (ngpu > kMaxTopoGpus) {
          throw InputError(file + ":" + std::to_string(lineno), "",
                           "the header names " + std::to_string(ngpu) + " GPUs; a cluster file holds at most " +
                               std::to_string(kMaxTopoGpus));
        }
      }
      continue;
    }
    if (!is_indexed(t[0], "GPU")) continue;  // NIC rows
    const auto needed = static_cast<std::size_t>(1 + ngpu + nnic);
    if (t.size() < needed) {
      throw InputError(file + ":" + std::to_string(lineno), "",
                       "row " + t[0] + " has " + std::to_string(t.size() - 1) + " entries; expected at least " +
                           std::to_string(ngpu + nnic) + " (one per GPU and NIC column)");
    }
    std::vector<std::string> rel(t.begin() + 1, t.begin() + 1 + ngpu);
    for (const auto& r : rel) {
      static const std::set<std::string> kKnown{"X", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC"};
      if (!kKnown.count(r) && nvlinks(r) == 0) {
        throw InputError(file + ":" + std::to_string(lineno), "",
                         "unknown relation '" + r + "'; expected X, NV<n> (n from 1 to " + std::to_string(kMaxNvlinks) +
                             "), PIX, PXB, PHB, NODE or SYS");
      }
    }
    m.gpus.push_back(t[0]);
    m.relation.push_back(rel);
    int numa = -1;
    if (t.size() > needed + 1) {
      const std::string& s = t[needed + 1];
      int v = 0;
      const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc{} && p == s.data() + s.size() && v >= 0) numa = v;
    }
    m.numa.push_back(numa);
  }
  if (!header) throw InputError(file, "", "no header row with GPU0: is this the output of `nvidia-smi topo -m`?");
  if (static_cast<int>(m.gpus.size()) != ngpu) {
    throw InputError(file, "",
                     "the header names " + std::to_string(ngpu) + " GPUs but " + std::to_string(m.gpus.size()) +
                         " GPU rows follow (truncated?)");
  }
  return m;
}

int pcie_gen_of(const std::string& gpu_name) {
  for (const char* gen5 : {"H100", "H200", "H800", "H20", "B100", "B200", "GB200"}) {
    if (gpu_name.find(gen5) != std::string::npos) return 5;
  }
  return 4;
}

nlohmann::ordered_json topo_to_cluster(const TopoMatrix& m, const std::string& file, const std::string& profile,
                                       int pcie_gen, const std::string& pcie_gen_origin) {
  const int n = static_cast<int>(m.gpus.size());
  auto nv = [&](int a, int b) { return nvlinks(m.relation[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]); };
  auto rel = [&](int a, int b) { return m.relation[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]; };
  std::set<int> counts;
  bool all_nv = n >= 2;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      if (nv(a, b) > 0)
        counts.insert(nv(a, b));
      else
        all_nv = false;
    }
  }
  const bool nvswitch = all_nv && n >= 3 && counts.size() == 1;

  nlohmann::ordered_json c;
  c["name"] = "imported from " + file;
  c["profile"] = profile;
  c["gpus"] = n;
  c["source"] = "nvidia-smi topo -m output " + file + " (clustersim import topo); PCIe generation " +
                std::to_string(pcie_gen) + " " + pcie_gen_origin;
  nlohmann::ordered_json types = nlohmann::ordered_json::object();
  const bool gen5 = pcie_gen >= 5;
  types["pcie"] = {{"bandwidth", gen5 ? "63 GB/s" : "31.5 GB/s"},
                   {"efficiency", 0.83},
                   {"latency", "0.55 us"},
                   {"source", gen5 ? "PCI Express 5.0 x16: 63.0 GB/s per direction after 128b/130b"
                                   : "PCI Express 4.0 x16: 31.5 GB/s per direction after 128b/130b"},
                   {"efficiency_source", kPcieEff}};
  types["socket"] = {
      {"bandwidth", gen5 ? "37 GB/s" : "22.2 GB/s"},
      {"efficiency", 1.0},
      {"latency", "9 us"},
      {"source", gen5 ? "host-staged GPU-to-GPU across sockets, measured 36-38 GB/s on Gen5 (F-p2p-h100-uni note)"
                      : "host-staged GPU-to-GPU, measured 22.2 GB/s on Gen4 (F-p2p-rtx6000ada-pcie)"},
      {"efficiency_source",
       "a measured rate (efficiency 1); latency from F-p2p-rtx6000ada-pcie's ~10.5 us host-staged"}};
  std::map<int, int> nv_types;  // link count -> used
  auto nv_type = [&](int k) {
    const std::string name = "nvlink" + std::to_string(k);
    if (!nv_types.count(k)) {
      types[name] = {{"bandwidth", std::to_string(25 * k) + " GB/s"},
                     {"efficiency", 0.8},
                     {"latency", "0.5 us"},
                     {"source", kNvlinkSource},
                     {"efficiency_source", kNvlinkEff}};
      nv_types[k] = 1;
    }
    return name;
  };
  auto switches = nlohmann::ordered_json::array();
  auto links = nlohmann::ordered_json::array();
  auto gpu = [](int i) { return "gpu" + std::to_string(i); };
  if (nvswitch) {
    switches.push_back({{"id", "nvswitch"}, {"kind", "nvswitch"}});
    const std::string t = nv_type(*counts.begin());
    for (int g = 0; g < n; ++g) links.push_back({{"a", gpu(g)}, {"b", "nvswitch"}, {"type", t}});
  } else {
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        if (nv(a, b) > 0) links.push_back({{"a", gpu(a)}, {"b", gpu(b)}, {"type", nv_type(nv(a, b))}});
      }
    }
  }
  // PCIe tree (present in every box: NVLink machines use it for host traffic, PCIe ones for all).
  if (!nvswitch) {
    UnionFind pix(n), pxb(n), node(n);
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        const auto r = rel(a, b);
        const bool same_numa = m.numa[static_cast<std::size_t>(a)] >= 0
                                   ? m.numa[static_cast<std::size_t>(a)] == m.numa[static_cast<std::size_t>(b)]
                                   : (r != "SYS" && r != "SOC");
        if (r == "PIX") pix.unite(a, b);
        if (r == "PIX" || r == "PXB") pxb.unite(a, b);
        if (same_numa) node.unite(a, b);
      }
    }
    std::map<int, std::string> cpu_of_root, upper_of_root, leaf_of_root;
    for (int g = 0; g < n; ++g) {
      const int nr = node.find(g);
      if (!cpu_of_root.count(nr)) {
        const std::string id = "cpu" + std::to_string(cpu_of_root.size());
        cpu_of_root[nr] = id;
        switches.push_back({{"id", id}, {"kind", "root_complex"}});
      }
    }
    for (int g = 0; g < n; ++g) {
      const std::string cpu = cpu_of_root[node.find(g)];
      const int leaf = pix.find(g), upper = pxb.find(g);
      bool has_leaf = false, has_upper = false;
      for (int o = 0; o < n; ++o) {
        if (o == g) continue;
        has_leaf = has_leaf || pix.find(o) == leaf;
        has_upper = has_upper || (pxb.find(o) == upper && pix.find(o) != leaf);
      }
      std::string attach = cpu;
      if (has_upper) {
        if (!upper_of_root.count(upper)) {
          const std::string id = "pxb" + std::to_string(upper_of_root.size());
          upper_of_root[upper] = id;
          switches.push_back({{"id", id}, {"kind", "pcie_switch"}});
          links.push_back({{"a", id}, {"b", cpu}, {"type", "pcie"}});
        }
        attach = upper_of_root[upper];
      }
      if (has_leaf) {
        if (!leaf_of_root.count(leaf)) {
          const std::string id = "plx" + std::to_string(leaf_of_root.size());
          leaf_of_root[leaf] = id;
          switches.push_back({{"id", id}, {"kind", "pcie_switch"}});
          links.push_back({{"a", id}, {"b", attach}, {"type", "pcie"}});
        }
        attach = leaf_of_root[leaf];
      }
      links.push_back({{"a", gpu(g)}, {"b", attach}, {"type", "pcie"}});
    }
    std::vector<std::string> cpus;
    for (const auto& [root, id] : cpu_of_root) cpus.push_back(id);
    for (std::size_t a = 0; a < cpus.size(); ++a) {
      for (std::size_t b = a + 1; b < cpus.size(); ++b)
        links.push_back({{"a", cpus[a]}, {"b", cpus[b]}, {"type", "socket"}});
    }
  } else {
    types.erase("pcie");
    types.erase("socket");
  }
  c["link_types"] = types;
  c["switches"] = switches;
  c["links"] = links;
  return c;
}

}  // namespace cs::calib
