// The rental check from the renter's own tool output (`inspect --topo/--nccl-tests/--nvlink/--smi`):
// what the box is, and one verdict per pitfall of the seed article, with the numbers behind it.
#include "tools/cli/rental_check.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

#include "calibration/profile/hardware_profile.hpp"
#include "calibration/profile/text_tokens.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/cluster_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/cluster_spec.hpp"
#include "sim/network/topology.hpp"
#include "sim/study/machine_topology.hpp"
#include "sim/workload/collective_timing.hpp"

namespace cs::cli {

namespace {

// Thresholds, with their basis (docs/rental-check.md):
// - all-reduce: the model's error on published NCCL all-reduce cases is within ~10% (docs/accuracy.md),
//   so a box below 80% of the model is slower than the model's error explains; below half is what a
//   down link, a PCIe path or a throttled GPU gives.
constexpr double kBusbwOk = 0.8;
constexpr double kBusbwFail = 0.5;
// - memory: nvidia-smi reports the usable framebuffer, a few percent under the marketed size.
constexpr double kMemoryOk = 0.9;
// - power: a limit set below 95% of the board's default is a cap, not rounding.
constexpr double kPowerCap = 0.95;

std::string gpu_list(const std::vector<int>& ids) {
  // "GPU 0-3, 6" from sorted indices.
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ids[i]) + (j > i ? "-" + std::to_string(ids[j]) : "");
    i = j + 1;
  }
  return (ids.size() == 1 ? "GPU " : "GPUs ") + out;
}

int nv_count(const std::string& rel) {
  if (rel.size() <= 2 || rel.compare(0, 2, "NV") != 0) return 0;
  std::int64_t k = 0;
  return calib::parse_whole_int(rel.substr(2), k) && k > 0 && k < 1000 ? static_cast<int>(k) : 0;
}

/// The box's interconnect from `topo -m`.
struct TopoShape {
  bool nvswitch = false;  ///< every pair NV<k> with one k, three or more GPUs
  bool all_nvlink = false;
  int nv_pairs = 0, pairs = 0, nv_links = 0;
  std::vector<std::vector<int>> pcie_groups;  ///< GPUs under one PCIe switch tree (PIX/PXB)
  int sockets = 1;
  std::string text;
};

TopoShape shape_of(const calib::TopoMatrix& m) {
  TopoShape s;
  const int n = static_cast<int>(m.gpus.size());
  auto rel = [&](int a, int b) { return m.relation[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]; };
  std::set<int> counts;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      ++s.pairs;
      if (const int k = nv_count(rel(a, b))) {
        ++s.nv_pairs;
        counts.insert(k);
      }
    }
  }
  s.all_nvlink = n >= 2 && s.nv_pairs == s.pairs;
  s.nvswitch = s.all_nvlink && n >= 3 && counts.size() == 1;
  if (!counts.empty()) s.nv_links = *counts.rbegin();
  // PCIe switch groups (PIX or PXB: under a common switch) and sockets (SYS between them).
  std::vector<int> group(static_cast<std::size_t>(n), -1), socket(static_cast<std::size_t>(n), -1);
  for (int a = 0; a < n; ++a) {
    if (group[static_cast<std::size_t>(a)] < 0) {
      group[static_cast<std::size_t>(a)] = static_cast<int>(s.pcie_groups.size());
      s.pcie_groups.push_back({a});
    }
    if (socket[static_cast<std::size_t>(a)] < 0) socket[static_cast<std::size_t>(a)] = s.sockets++ - 1;
    for (int b = a + 1; b < n; ++b) {
      const auto r = rel(a, b);
      if ((r == "PIX" || r == "PXB") && group[static_cast<std::size_t>(b)] < 0) {
        group[static_cast<std::size_t>(b)] = group[static_cast<std::size_t>(a)];
        s.pcie_groups[static_cast<std::size_t>(group[static_cast<std::size_t>(a)])].push_back(b);
      }
      if (r != "SYS" && r != "SOC" && socket[static_cast<std::size_t>(b)] < 0)
        socket[static_cast<std::size_t>(b)] = socket[static_cast<std::size_t>(a)];
    }
  }
  s.sockets -= 1;
  if (n < 2) {
    s.text = "single GPU";
  } else if (s.nvswitch) {
    s.text = "NVSwitch (every pair NV" + std::to_string(s.nv_links) + ")";
  } else if (s.all_nvlink) {
    s.text = "NVLink (every pair)";
  } else if (s.nv_pairs > 0) {
    s.text = "NVLink on " + std::to_string(s.nv_pairs) + " of " + std::to_string(s.pairs) + " pairs, PCIe for the rest";
  } else {
    std::string sizes;
    for (const auto& g : s.pcie_groups) sizes += (sizes.empty() ? "" : " + ") + std::to_string(g.size());
    s.text = "PCIe only: " + std::to_string(s.pcie_groups.size()) + " PCIe switch groups (" + sizes + ") on " +
             std::to_string(s.sockets) + (s.sockets == 1 ? " socket" : " sockets");
  }
  return s;
}

/// The shipped profile whose GPU name starts with `device` followed by a word boundary.
std::optional<std::string> match_profile(const config::Catalog& catalog, const std::string& device) {
  if (device.empty()) return std::nullopt;
  std::vector<std::string> hits;
  for (const auto& id : catalog.ids(config::CatalogKind::kProfile)) {
    const auto p = config::parse_profile(config::load(catalog.locate(config::CatalogKind::kProfile, id, "", "")), id);
    if (p.gpu_name.rfind(device, 0) == 0 && (p.gpu_name.size() == device.size() || p.gpu_name[device.size()] == ' '))
      hits.push_back(id);
  }
  if (hits.size() != 1) return std::nullopt;
  return hits.front();
}

bool says_pcie(const std::string& name) {
  // "NVIDIA H100 PCIe", "NVIDIA A100-PCIE-40GB": drivers spell it both ways.
  std::string l = name;
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l.find("pcie") != std::string::npos;
}

double gb_in_name(const std::string& text) {
  std::smatch m;
  static const std::regex gb("([0-9]{2,3})\\s*GB");
  if (!std::regex_search(text, m, gb)) return -1;
  std::int64_t v = 0;
  return calib::parse_whole_int(m[1].str(), v) ? static_cast<double>(v) : -1;
}

}  // namespace

RentalReport check_rental(const RentalEvidence& e, const std::optional<scenario::Offer>& offer,
                          const config::Catalog& catalog) {
  RentalReport r;
  auto add = [&](const std::string& check, const std::string& verdict, const std::string& detail) {
    r.verdicts.push_back({check, verdict, detail});
  };
  const calib::NcclTestsRun* allreduce = nullptr;
  for (const auto& run : e.nccl) {
    if (run.op == "allreduce" && (!allreduce || run.gpus > allreduce->gpus)) allreduce = &run;
  }
  // What the box is.
  r.gpus = e.topo      ? static_cast<int>(e.topo->gpus.size())
           : e.smi     ? static_cast<int>(e.smi->gpus.size())
           : e.nvlink  ? static_cast<int>(e.nvlink->gpus.size())
           : allreduce ? allreduce->gpus
                       : 0;
  if (e.smi && !e.smi->gpus.empty()) {
    r.gpu = e.smi->gpus.front().name;
    r.memory_bytes = e.smi->gpus.front().memory_bytes;
    for (const auto& g : e.smi->gpus) {
      if (g.memory_bytes >= 0) r.memory_bytes = std::min(r.memory_bytes, g.memory_bytes);
    }
  } else if (!e.nccl.empty() && !e.nccl.front().devices.empty()) {
    r.gpu = e.nccl.front().devices.front();
  } else if (e.nvlink && !e.nvlink->gpus.empty()) {
    r.gpu = e.nvlink->gpus.front().name;
  }
  std::optional<TopoShape> shape;
  if (e.topo) shape = shape_of(*e.topo);
  r.interconnect = shape ? shape->text : "";
  if (!shape && e.nvlink) {
    int min_links = 1 << 30;
    for (const auto& g : e.nvlink->gpus) min_links = std::min(min_links, g.active_links());
    r.interconnect = min_links > 0 ? "NVLink on every GPU (nvlink -s)" : "no NVLink on some GPU (nvlink -s)";
  }

  if (offer) {
    add("gpu-count", r.gpus == offer->gpus ? "ok" : "fail",
        "offer rents " + std::to_string(offer->gpus) + " GPUs; the box shows " + std::to_string(r.gpus));
  }
  // An "8-GPU" box that is two PCIe switches of four.
  if (shape && r.gpus >= 2) {
    if (shape->all_nvlink) {
      add("pcie-switches", "ok",
          "GPU-to-GPU traffic runs on NVLink: " + shape->text + "; the PCIe tree carries host traffic only");
    } else {
      std::string groups;
      for (const auto& g : shape->pcie_groups) groups += (groups.empty() ? "" : "; ") + gpu_list(g);
      const bool two_of_half =
          r.gpus >= 8 && shape->pcie_groups.size() == 2 && shape->pcie_groups[0].size() == shape->pcie_groups[1].size();
      if (two_of_half) {
        add("pcie-switches", "fail",
            "two PCIe switches of " + std::to_string(shape->pcie_groups[0].size()) + " (" + groups +
                "): every transfer between the halves shares one switch uplink: the seed's fake " +
                std::to_string(r.gpus) + "-GPU server");
      } else {
        add("pcie-switches", "ok",
            "GPUs under PCIe switches as " + groups + ", on " + std::to_string(shape->sockets) +
                (shape->sockets == 1 ? " socket" : " sockets"));
      }
    }
  }
  // Interconnect against the offer's claim.
  if (offer && (shape || e.nvlink) && (offer->interconnect == "NVSwitch" || offer->interconnect == "NVLink")) {
    bool has = false;
    std::string seen;
    if (shape) {
      has = offer->interconnect == "NVSwitch" ? shape->nvswitch : shape->nv_pairs > 0;
      seen = "topo -m: " + shape->text;
    } else {
      has = true;
      for (const auto& g : e.nvlink->gpus) has = has && g.active_links() > 0;
      seen = "nvlink -s: " + r.interconnect;
    }
    add("interconnect", has ? "ok" : "fail", "offer claims " + offer->interconnect + "; " + seen);
  }
  // PCIe parts sold as SXM.
  if (offer && offer->gpu.find("SXM") != std::string::npos) {
    std::vector<std::string> pcie_signs;
    if (e.smi) {
      for (const auto& g : e.smi->gpus) {
        if (says_pcie(g.name)) {
          pcie_signs.push_back(
              "nvidia-smi -q names '" + g.name + "'" +
              (g.max_power_limit_w > 0 ? " (max power limit " + fixed(g.max_power_limit_w, 0) + " W)" : ""));
          break;
        }
      }
    }
    for (const auto& run : e.nccl) {
      for (const auto& d : run.devices) {
        if (says_pcie(d)) {
          pcie_signs.push_back("nccl-tests lists '" + d + "'");
          break;
        }
      }
      if (!pcie_signs.empty()) break;
    }
    if (e.nvlink) {
      bool none = true;
      for (const auto& g : e.nvlink->gpus) none = none && g.active_links() == 0;
      if (none) pcie_signs.push_back("nvlink -s shows no NVLink on any GPU (every SXM board has NVLink)");
    }
    if (shape && shape->nv_pairs == 0 && r.gpus >= 2)
      pcie_signs.push_back("topo -m shows no NV# link between any pair");
    std::string detail = "offer says '" + offer->gpu + "'; ";
    if (pcie_signs.empty()) {
      add("form-factor", "ok", detail + "nothing in the tool output says PCIe (" + r.gpu + ")");
    } else {
      for (std::size_t i = 0; i < pcie_signs.size(); ++i) detail += (i ? "; " : "") + pcie_signs[i];
      add("form-factor", "fail", detail + ": PCIe cards");
    }
  }
  // 40 GB parts sold as 80 GB.
  if (offer) {
    const double claimed = gb_in_name(offer->gpu);
    double have_gb = r.memory_bytes > 0 ? r.memory_bytes / 1e9 : gb_in_name(r.gpu);
    const std::string from = r.memory_bytes > 0 ? "nvidia-smi -q reports " + fixed(r.memory_bytes / 1048576.0, 0) +
                                                      " MiB (" + fixed(r.memory_bytes / 1e9, 1) + " GB)"
                                                : "the device name says " + fixed(have_gb, 0) + " GB";
    if (claimed > 0 && have_gb > 0) {
      add("memory", have_gb >= kMemoryOk * claimed ? "ok" : "fail",
          "offer claims " + fixed(claimed, 0) + " GB per GPU; " + from +
              (have_gb < kMemoryOk * claimed ? ": a smaller-memory part" : ""));
    }
  }
  // NVLinks down or missing.
  if (e.nvlink) {
    int most = 0;
    double fastest = 0;
    for (const auto& g : e.nvlink->gpus) {
      most = std::max(most, static_cast<int>(g.link_bytes_per_s.size()));
      for (double b : g.link_bytes_per_s) fastest = std::max(fastest, b);
    }
    if (most == 0) {
      add("nvlink", "ok", "no GPU has NVLink (a PCIe box); nothing to be down");
    } else {
      std::vector<std::string> bad;
      std::vector<int> slow;
      for (const auto& g : e.nvlink->gpus) {
        const int active = g.active_links();
        if (active < most) {
          std::string down;
          for (std::size_t k = 0; k < g.link_bytes_per_s.size(); ++k) {
            if (g.link_bytes_per_s[k] <= 0) down += (down.empty() ? "" : ", ") + std::to_string(k);
          }
          bad.push_back("GPU " + std::to_string(g.index) + ": " + std::to_string(active) + " of " +
                        std::to_string(most) + " links active" + (down.empty() ? "" : " (link " + down + " inactive)"));
        }
        for (double b : g.link_bytes_per_s) {
          if (b > 0 && b < 0.9 * fastest) {
            slow.push_back(g.index);
            break;
          }
        }
      }
      const double per_gpu = static_cast<double>(most) * fastest;
      if (!bad.empty()) {
        std::string d;
        for (const auto& b : bad) d += (d.empty() ? "" : "; ") + b;
        add("nvlink", "fail", d + ": collectives run at the slowest GPU's NVLink rate");
      } else if (!slow.empty()) {
        add("nvlink", "warn",
            gpu_list(slow) + " have links below " + fixed(0.9 * fastest / 1e9, 1) + " GB/s (others " +
                fixed(fastest / 1e9, 3) + " GB/s)");
      } else {
        add("nvlink", "ok",
            std::to_string(e.nvlink->gpus.size()) + " GPUs x " + std::to_string(most) + " links active at " +
                fixed(fastest / 1e9, 3) + " GB/s each (" + fixed(per_gpu / 1e9, 0) +
                " GB/s per GPU as the driver reports it)");
      }
    }
  }
  // All-reduce bus bandwidth against our model of the offer's hardware (or of the box's topo -m).
  if (allreduce && !allreduce->rows.empty()) {
    const auto best = *std::max_element(allreduce->rows.begin(), allreduce->rows.end(),
                                        [](const auto& a, const auto& b) { return a.busbw < b.busbw; });
    const std::string measured = "measured busbw " + fixed(best.busbw / 1e9, 1) + " GB/s (algbw " +
                                 fixed(best.algbw / 1e9, 1) + ") at " + fixed(best.bytes / 1048576.0, 0) + " MiB on " +
                                 std::to_string(allreduce->gpus) + " GPUs";
    std::optional<net::ClusterSpec> ref;
    std::string ref_name, profile_id;
    if (offer && !offer->cluster.empty()) {
      const auto path = catalog.locate(config::CatalogKind::kCluster, offer->cluster, offer->id, "/cluster");
      ref = config::parse_cluster(config::load(path), offer->cluster);
      ref_name = ref->id + " (offer " + offer->id + ")";
      profile_id = ref->profile;
    } else if (e.topo) {
      const auto pid = match_profile(catalog, r.gpu);
      if (pid) {
        const auto p =
            config::parse_profile(config::load(catalog.locate(config::CatalogKind::kProfile, *pid, "", "")), *pid);
        const auto j = calib::topo_to_cluster(*e.topo, "topo -m", *pid, calib::pcie_gen_of(p.gpu_name),
                                              "by the GPU's name (" + p.gpu_name + ")");
        ref = config::parse_cluster(config::JsonDoc{"topo -m", nlohmann::json::parse(j.dump())}, "this box");
        ref_name = "this box's topo -m with " + *pid;
        profile_id = *pid;
      }
    }
    if (!ref) {
      add("allreduce-busbw", "warn",
          measured +
              "; no reference to compare with (give --offer, or --topo with a GPU name "
              "that matches one profile)");
    } else if (allreduce->gpus > ref->gpus || allreduce->gpus < 2) {
      add("allreduce-busbw", "warn",
          measured + "; " + ref_name + " has " + std::to_string(ref->gpus) + " GPUs: no like-for-like model");
    } else {
      const auto profile = config::parse_profile(
          config::load(catalog.locate(config::CatalogKind::kProfile, profile_id, ref_name, "/profile")), profile_id);
      const auto topo = study::machine_topology({*ref, allreduce->gpus, 1, std::nullopt});
      std::vector<int> ranks(static_cast<std::size_t>(allreduce->gpus));
      std::iota(ranks.begin(), ranks.end(), 0);
      const auto t = workload::time_collective(topo, coll::CollectiveOp::kAllReduce, coll::Algorithm::kAuto, ranks,
                                               best.bytes, profile.collective_latency.value);
      const double ratio = best.busbw / t.busbw_bytes_per_s;
      const std::string verdict = ratio >= kBusbwOk ? "ok" : ratio >= kBusbwFail ? "warn" : "fail";
      add("allreduce-busbw", verdict,
          measured + "; our model of " + ref_name + ": busbw " + fixed(t.busbw_bytes_per_s / 1e9, 1) + " GB/s (algbw " +
              fixed(t.algbw_bytes_per_s / 1e9, 1) + ", " + coll::algorithm_name(t.algorithm) +
              ") = " + fixed(100 * ratio, 0) + "% of the model");
    }
  }
  // Power capping, clock limits and PCIe width (nvidia-smi -q).
  if (e.smi) {
    std::vector<int> capped, limited, narrow;
    std::string cap_text, limit_text, narrow_text;
    std::set<std::string> reasons;
    for (std::size_t i = 0; i < e.smi->gpus.size(); ++i) {
      const auto& g = e.smi->gpus[i];
      if (g.power_limit_w > 0 && g.default_power_limit_w > 0 && g.power_limit_w < kPowerCap * g.default_power_limit_w) {
        capped.push_back(static_cast<int>(i));
        cap_text = "power limit " + fixed(g.power_limit_w, 0) + " W of the default " +
                   fixed(g.default_power_limit_w, 0) + " W";
      }
      static const std::set<std::string> kLimits{"SW Power Cap", "HW Slowdown", "HW Thermal Slowdown",
                                                 "HW Power Brake Slowdown", "SW Thermal Slowdown"};
      bool lim = false;
      for (const auto& reason : g.clock_limits) {
        if (kLimits.count(reason)) {
          lim = true;
          reasons.insert(reason);
        }
      }
      if (lim) {
        limited.push_back(static_cast<int>(i));
        if (g.sm_clock_hz > 0 && g.max_sm_clock_hz > 0)
          limit_text =
              "SM clock " + fixed(g.sm_clock_hz / 1e6, 0) + " of " + fixed(g.max_sm_clock_hz / 1e6, 0) + " MHz";
      }
      if (g.pcie_width > 0 && g.pcie_width_max > 0 && g.pcie_width < g.pcie_width_max) {
        narrow.push_back(static_cast<int>(i));
        narrow_text = "x" + std::to_string(g.pcie_width) + " of x" + std::to_string(g.pcie_width_max);
      }
    }
    std::string why;
    for (const auto& x : reasons) why += (why.empty() ? "" : ", ") + x;
    if (!capped.empty()) {
      add("power-clocks", "fail",
          gpu_list(capped) + ": " + cap_text + (why.empty() ? "" : "; active clock limits: " + why) +
              (limit_text.empty() ? "" : " (" + limit_text + ")") + ": power capped");
    } else if (!limited.empty()) {
      add("power-clocks", "warn",
          gpu_list(limited) + ": active clock limits: " + why + (limit_text.empty() ? "" : " (" + limit_text + ")"));
    } else {
      const auto& g = e.smi->gpus.front();
      add("power-clocks", "ok",
          "power limits at their default" +
              (g.default_power_limit_w > 0 ? " (" + fixed(g.default_power_limit_w, 0) + " W)" : std::string()) +
              "; no power or thermal clock limit active");
    }
    if (!narrow.empty()) {
      add("pcie-width", "warn", gpu_list(narrow) + ": PCIe link " + narrow_text + " (riser, slot or BIOS setting)");
    } else {
      add("pcie-width", "ok",
          "every GPU's PCIe link at its full width (the generation drops at idle, so it is not checked)");
    }
  }
  return r;
}

std::string rental_report_text(const RentalReport& r, const RentalEvidence& e,
                               const std::optional<scenario::Offer>& offer) {
  std::ostringstream s;
  s << "box:          " << r.gpus << "x " << (r.gpu.empty() ? "?" : r.gpu);
  if (r.memory_bytes > 0) s << " (" << fixed(r.memory_bytes / 1073741824.0, 1) << " GiB each)";
  s << "\n";
  if (!r.interconnect.empty()) s << "interconnect: " << r.interconnect << "\n";
  std::string files;
  for (const auto& f : e.files) files += (files.empty() ? "" : ", ") + f;
  s << "evidence:     " << files << "\n";
  s << "checks" << (offer ? " (against offer " + offer->id + ")" : " (no offer: the box's own consistency)") << ":\n";
  for (const auto& v : r.verdicts) {
    s << "  " << v.verdict << std::string(6 - v.verdict.size(), ' ') << v.check
      << std::string(v.check.size() < 17 ? 17 - v.check.size() : 1, ' ') << v.detail << "\n";
  }
  int warn = 0, fail = 0;
  for (const auto& v : r.verdicts) {
    warn += v.verdict == "warn";
    fail += v.verdict == "fail";
  }
  s << fail << " fail, " << warn << " warn, " << (static_cast<int>(r.verdicts.size()) - fail - warn) << " ok\n";
  return s.str();
}

nlohmann::ordered_json rental_report_json(const RentalReport& r, const RentalEvidence& e,
                                          const std::optional<scenario::Offer>& offer) {
  nlohmann::ordered_json j;
  // Unknown (no nvidia-smi -q among the evidence, or no GPU count anywhere) is null, never -1 or "".
  const auto known = [](auto v, bool ok) { return ok ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  j["box"] = {{"gpus", known(r.gpus, r.gpus > 0)},
              {"gpu", known(r.gpu, !r.gpu.empty())},
              {"memory_bytes", known(r.memory_bytes, r.memory_bytes > 0)},
              {"interconnect", known(r.interconnect, !r.interconnect.empty())}};
  j["evidence"] = e.files;
  j["offer"] = offer ? nlohmann::ordered_json(offer->id) : nlohmann::ordered_json(nullptr);
  j["verdicts"] = nlohmann::ordered_json::array();
  for (const auto& v : r.verdicts)
    j["verdicts"].push_back({{"check", v.check}, {"verdict", v.verdict}, {"detail", v.detail}});
  return j;
}

int run_rental_check(const std::string& profile_file, const RentalFiles& files, const std::string& offer_id, bool json,
                     const config::Catalog& catalog) {
  if (files.empty()) {
    throw InputError("command line", "inspect",
                     "expected a profile from `clustersim calibrate`, or tool output: --topo, --nccl-tests, --nvlink, "
                     "--smi (any of them)");
  }
  if (!profile_file.empty()) {
    throw InputError("command line", profile_file,
                     "give either a measured profile or tool output (--topo, --nccl-tests, --nvlink, --smi), not both");
  }
  // The shared bounded reader: regular files only, at most --max-file-size bytes (/dev/zero is refused).
  const auto read_text = [](const std::string& path) { return config::read_file(path); };
  RentalEvidence e;
  if (!files.topo.empty()) {
    e.topo = calib::parse_topo_matrix(read_text(files.topo), files.topo);
    e.files.push_back(files.topo);
  }
  for (const auto& f : files.nccl) {
    e.nccl.push_back(calib::parse_nccl_tests(read_text(f), f, "", 0));
    e.files.push_back(f);
  }
  if (!files.nvlink.empty()) {
    e.nvlink = calib::parse_nvlink_status(read_text(files.nvlink), files.nvlink);
    e.files.push_back(files.nvlink);
  }
  if (!files.smi.empty()) {
    e.smi = calib::parse_smi_query(read_text(files.smi), files.smi);
    e.files.push_back(files.smi);
  }
  std::optional<scenario::Offer> offer;
  if (!offer_id.empty()) {
    offer = config::parse_offer(
        config::load(catalog.locate(config::CatalogKind::kOffer, offer_id, "command line", "--offer")), offer_id);
  }
  const auto report = check_rental(e, offer, catalog);
  if (json) {
    std::cout << rental_report_json(report, e, offer).dump(2) << "\n";
  } else {
    std::cout << rental_report_text(report, e, offer);
  }
  return 0;
}

}  // namespace cs::cli
