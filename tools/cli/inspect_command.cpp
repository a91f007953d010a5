// `inspect`: the rental check. Reads a measured profile (clustersim calibrate) and says what the
// box is (NVSwitch or not, NVLink or PCIe, memory class, PCIe links, P2P matrix), compares the
// measured rates with the datasheet and an offer's claims, and flags the seed article's pitfalls.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <regex>
#include <set>

#include "calibration/profile/hardware_profile.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/measured_box_file.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/scenario/scenario.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/rental_check.hpp"

namespace cs::cli {

namespace {

struct Check {
  std::string id;
  bool ok = true;
  std::string text;
};

std::string heat_map_svg(const std::vector<std::vector<double>>& bw, const std::string& title) {
  const std::size_t n = bw.size();
  double best = 0;
  for (const auto& row : bw) {
    for (double v : row) best = std::max(best, v);
  }
  const int cell = 56, margin = 60;
  const int size = margin + static_cast<int>(n) * cell + 20;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << size << "\" height=\"" << size + 30
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  s << "<text x=\"10\" y=\"18\" font-size=\"13\">" << title << "</text>\n";
  for (std::size_t i = 0; i < n; ++i) {
    s << "<text x=\"" << margin - 40 << "\" y=\"" << margin + 30 + static_cast<int>(i) * cell + cell / 2 - 24
      << "\">GPU" << i << "</text>\n";
    s << "<text x=\"" << margin + static_cast<int>(i) * cell + 10 << "\" y=\"" << margin + 20 << "\">GPU" << i
      << "</text>\n";
    for (std::size_t j = 0; j < n; ++j) {
      const double v = bw[i][j];
      const double f = best > 0 && i != j ? v / best : 0;
      const int shade = static_cast<int>(255 - 200 * f);
      const int x = margin + static_cast<int>(j) * cell, y = margin + 30 + static_cast<int>(i) * cell;
      s << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell - 2 << "\" height=\"" << cell - 2
        << "\" fill=\"rgb(" << shade << "," << shade << ",255)\"/>\n";
      s << "<text x=\"" << x + 8 << "\" y=\"" << y + cell / 2 << "\">"
        << (i == j ? std::string("-") : fixed(v / 1e9, 0)) << "</text>\n";
    }
  }
  s << "<text x=\"10\" y=\"" << size + 20
    << "\">GB/s, source row to destination column (copy engines)</text>\n</svg>\n";
  return s.str();
}

}  // namespace

Action add_inspect(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("inspect", "rental check: what a measured box is, against datasheet and offer");
  struct Opts {
    std::string file, offer, svg;
    RentalFiles evidence;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("file", o->file, "profile written by clustersim calibrate (or give the tools' output below)");
  cmd->add_option("--topo", o->evidence.topo, "`nvidia-smi topo -m` output");
  cmd->add_option("--nccl-tests", o->evidence.nccl, "nccl-tests output files (all_reduce_perf ...)");
  cmd->add_option("--nvlink", o->evidence.nvlink, "`nvidia-smi nvlink -s` output");
  cmd->add_option("--smi", o->evidence.smi, "`nvidia-smi -q` output");
  cmd->add_option("--offer", o->offer, "offer id or path whose claims to check");
  cmd->add_option("--svg", o->svg, "write the P2P bandwidth matrix as an SVG heat map");
  cmd->add_flag("--json", o->json, "print {\"box\": ..., \"checks\": [...]} ({\"verdicts\": [...]} from tool output)");
  return [o, &g]() -> int {
    const config::Catalog catalog(g.data_dir);
    if (!o->evidence.empty() || o->file.empty())
      return run_rental_check(o->file, o->evidence, o->offer, o->json, catalog);
    const auto doc = config::load(o->file);
    const auto profile = config::parse_profile(doc, std::filesystem::path(o->file).stem().string());
    if (!doc.json.contains("raw")) {
      throw InputError(o->file, "/raw",
                       "no measurements in this profile (" + std::string(calib::provenance_name(profile.origin)) +
                           "); run `clustersim calibrate --out FILE` on the box and inspect that file, or inspect the "
                           "box's own tool output (--topo, --nccl-tests, --nvlink, --smi)");
    }
    const auto box = config::parse_measured_box(doc);
    std::optional<scenario::Offer> offer;
    if (!o->offer.empty()) {
      offer = config::parse_offer(
          config::load(catalog.locate(config::CatalogKind::kOffer, o->offer, "command line", "--offer")), o->offer);
    }
    const auto& devices = box.devices;
    const std::size_t n = devices.size();
    const auto& d0 = devices[0];
    const std::string name = d0.name;
    const double mem = d0.memory_bytes >= 0 ? d0.memory_bytes : profile.hbm_capacity.value;

    // Interconnect from the topology matrix.
    const auto& topo = box.topology;
    std::set<std::string> rels;
    std::size_t nv_pairs = 0, pairs = 0;
    for (std::size_t i = 0; i < topo.size(); ++i) {
      for (std::size_t j = 0; j < topo[i].size(); ++j) {
        if (i == j) continue;
        const std::string& r = topo[i][j];
        rels.insert(r);
        ++pairs;
        if (r.rfind("NV", 0) == 0) ++nv_pairs;
      }
    }
    std::string interconnect = n < 2 ? "single GPU" : "PCIe only";
    if (n >= 2 && nv_pairs == pairs && rels.size() == 1 && n >= 3)
      interconnect = "NVSwitch (every pair " + *rels.begin() + ")";
    else if (n >= 2 && nv_pairs == pairs)
      interconnect = "NVLink (every pair)";
    else if (nv_pairs > 0)
      interconnect = "NVLink on " + std::to_string(nv_pairs / 2) + " of " + std::to_string(pairs / 2) +
                     " pairs, PCIe for the rest";

    // P2P matrix.
    std::vector<std::vector<double>> bw(n, std::vector<double>(n, 0));
    double best_pair = 0, worst_pair = 1e30;
    std::map<int, std::size_t> pos;
    for (std::size_t i = 0; i < n; ++i) pos[devices[i].index] = i;
    for (const auto& p : box.p2p) {
      const auto s = pos.find(p.src), d = pos.find(p.dst);
      if (s == pos.end() || d == pos.end()) continue;
      const double v = p.ce_bytes_per_s;
      bw[s->second][d->second] = v;
      best_pair = std::max(best_pair, v);
      worst_pair = std::min(worst_pair, v);
    }

    std::vector<Check> checks;
    auto check = [&](const std::string& id, bool ok, const std::string& text) { checks.push_back({id, ok, text}); };
    // Memory class: 40 vs 80 GB and the like, from the offer's GPU text.
    const double mem_gb = mem / 1e9;
    if (offer) {
      check("gpu-count", offer->gpus == static_cast<int>(n),
            "offer claims " + std::to_string(offer->gpus) + " GPUs; the box shows " + std::to_string(n));
      std::smatch m;
      const std::regex gb("([0-9]+)\\s*G");
      if (std::regex_search(offer->gpu, m, gb)) {
        const double claimed = std::strtod(m[1].str().c_str(), nullptr);  // no throw: huge is inf
        check("memory", mem_gb >= 0.9 * claimed,
              "offer claims " + fixed(claimed, 0) + " GB per GPU; the box has " + fixed(mem_gb, 1) + " GB (" +
                  fixed(mem / 1073741824.0, 1) + " GiB)" + (mem_gb < 0.9 * claimed ? ": a smaller-memory GPU" : ""));
      }
      const bool claims_sxm = offer->gpu.find("SXM") != std::string::npos;
      const bool pcie_card = name.find("PCIe") != std::string::npos || d0.nvlink_active_links == 0;
      if (claims_sxm)
        check("form-factor", !pcie_card,
              std::string("offer claims SXM; the box reports '") + name + "'" +
                  (pcie_card ? " with no active NVLink: a PCIe card" : ""));
      if (offer->interconnect == "NVSwitch") {
        check("interconnect", interconnect.rfind("NVSwitch", 0) == 0,
              "offer claims NVSwitch; measured: " + interconnect);
      } else if (offer->interconnect == "NVLink") {
        check("interconnect", nv_pairs > 0, "offer claims NVLink; measured: " + interconnect);
      }
    }
    if (n >= 2 && best_pair > 0) {
      check("p2p-balance", worst_pair >= 0.5 * best_pair,
            "slowest GPU pair " + fixed(worst_pair / 1e9, 1) + " GB/s, fastest " + fixed(best_pair / 1e9, 1) + " GB/s" +
                (worst_pair < 0.5 * best_pair ? ": some pairs share a PCIe uplink or cross the CPU interconnect" : ""));
    }
    if (interconnect == "PCIe only" && n >= 4) {
      // Groups of GPUs under one PCIe switch (PIX); a box that is two switches of four is the
      // seed article's fake 8-GPU server.
      std::vector<int> group(n, -1);
      int groups = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (group[i] >= 0) continue;
        group[i] = groups;
        for (std::size_t j = i + 1; j < n && i < topo.size(); ++j) {
          if (j < topo[i].size() && (topo[i][j] == "PIX" || topo[i][j] == "PXB")) group[j] = groups;
        }
        ++groups;
      }
      std::map<int, int> sizes;
      for (int gi : group) ++sizes[gi];
      std::string shape;
      for (const auto& [gi, sz] : sizes) shape += (shape.empty() ? "" : " + ") + std::to_string(sz);
      check("pcie-groups", groups != 2 || n < 8,
            "GPUs under shared PCIe switches: " + shape +
                (groups == 2 && n >= 8 ? ": two switches of four, every cross-half transfer shares one uplink" : ""));
    }
    // Per-GPU link and clock checks, each reported once with the GPUs it concerns.
    std::string slow_links, capped;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& d = devices[i];
      const double gc = d.pcie_gen_current, gm = d.pcie_gen_max, wc = d.pcie_width_current, wm = d.pcie_width_max;
      if (gc > 0 && gm > 0 && wc > 0 && wm > 0 && (gc < gm || wc < wm)) {
        slow_links +=
            (slow_links.empty() ? "" : ", ") + ("GPU " + std::to_string(i) + " at gen" + fixed(gc, 0) + " x" +
                                                fixed(wc, 0) + " of gen" + fixed(gm, 0) + " x" + fixed(wm, 0));
      }
      const double now = d.sm_clock_now_mhz, max = d.sm_clock_max_mhz;
      if (now > 0 && max > 0 && now < 0.8 * max) {
        capped += (capped.empty() ? "" : ", ") +
                  ("GPU " + std::to_string(i) + " " + fixed(now, 0) + " of " + fixed(max, 0) + " MHz");
      }
    }
    check("pcie-link", slow_links.empty(),
          slow_links.empty() ? "every GPU's PCIe link runs at its maximum generation and width"
                             : slow_links + " (riser, slot or BIOS setting)");
    check("clocks", capped.empty(),
          capped.empty() ? "SM clocks at their maximum after the GEMM sweep"
                         : "SM clock after the GEMM sweep: " + capped + ": power or thermal capping?");
    // Measured against datasheet.
    double best_bf16 = 0;
    for (const auto& gm : box.gemm) {
      if (gm.dtype == "bf16" && gm.correct) best_bf16 = std::max(best_bf16, gm.flops_per_s);
    }
    const double peak =
        profile.matrix_peak.count(calib::Dtype::kBf16) ? profile.matrix_peak.at(calib::Dtype::kBf16).value : 0;
    if (best_bf16 > 0 && peak > 0) {
      check("gemm-rate", best_bf16 >= 0.6 * peak,
            "best bf16 GEMM " + fixed(best_bf16 / 1e12, 0) + " TFLOP/s = " + fixed(100 * best_bf16 / peak, 0) +
                "% of the datasheet's " + fixed(peak / 1e12, 0) +
                (best_bf16 < 0.6 * peak ? ": power capping, clocks or a different GPU" : ""));
    }
    double best_copy = 0;
    for (const auto& h : box.hbm) {
      if (h.kernel == "copy") best_copy = std::max(best_copy, h.bytes_per_s);
    }
    if (best_copy > 0) {
      const double ds = profile.hbm_bandwidth.value;
      check("hbm-rate", best_copy >= 0.7 * ds,
            "HBM copy " + fixed(best_copy / 1e9, 0) + " GB/s = " + fixed(100 * best_copy / ds, 0) +
                "% of the datasheet's " + fixed(ds / 1e9, 0) + " GB/s");
    }
    if (!o->svg.empty() && n >= 2) {
      std::ofstream f(o->svg);
      if (!f) throw InputError(o->svg, "", "cannot write this file");
      f << heat_map_svg(bw, std::to_string(n) + "x " + name + ": P2P bandwidth");
    }
    const std::size_t warnings =
        static_cast<std::size_t>(std::count_if(checks.begin(), checks.end(), [](const Check& c) { return !c.ok; }));
    if (o->json) {
      nlohmann::ordered_json j;
      j["box"] = {{"gpus", n},
                  {"gpu", name},
                  {"memory_bytes", mem},
                  {"interconnect", interconnect},
                  {"best_bf16_flops", best_bf16},
                  {"hbm_copy_bytes_per_s", best_copy}};
      j["checks"] = nlohmann::ordered_json::array();
      for (const auto& c : checks) j["checks"].push_back({{"id", c.id}, {"ok", c.ok}, {"text", c.text}});
      j["warnings"] = warnings;
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::cout << "box:          " << n << "x " << name << " (" << fixed(mem / 1073741824.0, 1) << " GiB each)\n"
              << "measured:     " << box.date << ", probe " << box.probe_version << "\n"
              << "interconnect: " << interconnect << "\n";
    if (n >= 2 && best_pair > 0) {
      std::cout << "P2P (GB/s, copy engines, row -> column):\n      ";
      for (std::size_t j = 0; j < n; ++j) std::cout << std::setw(7) << ("GPU" + std::to_string(j));
      std::cout << "\n";
      for (std::size_t i = 0; i < n; ++i) {
        std::cout << std::setw(6) << ("GPU" + std::to_string(i));
        for (std::size_t j = 0; j < n; ++j)
          std::cout << std::setw(7) << (i == j ? std::string("-") : fixed(bw[i][j] / 1e9, 0));
        std::cout << "\n";
      }
    }
    std::cout << "checks" << (offer ? " (against offer " + offer->id + ")" : "") << ":\n";
    for (const auto& c : checks)
      std::cout << "  [" << (c.ok ? " ok " : "WARN") << "] " << std::left << std::setw(13) << c.id << c.text << "\n";
    std::cout << warnings << (warnings == 1 ? " warning" : " warnings") << "\n";
    return 0;
  };
}

}  // namespace cs::cli
