// `import nccl-tests`, `import kernels` and `import topo`: a user who already ran nccl-tests,
// measured kernel tables or `nvidia-smi topo -m` on a rented box gets a calibrated profile or a
// cluster file without our probe.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "calibration/profile/fitting.hpp"
#include "calibration/profile/hardware_profile.hpp"
#include "calibration/profile/nccl_tests_import.hpp"
#include "calibration/profile/profile_writer.hpp"
#include "calibration/profile/topo_import.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/cluster_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/kernel_table_file.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/cluster_spec.hpp"
#include "sim/network/topology.hpp"
#include "sim/study/machine_topology.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/work_bounds.hpp"

namespace cs::cli {

static_assert(calib::kMaxTopoGpus == net::kMaxClusterGpus, "an imported matrix holds what a cluster file can");

namespace {

/// Regular files only, within the input size limit (config::read_file).
std::string read_text(const std::string& path) { return config::read_file(path); }

void write_text(const std::string& path, const std::string& text) {
  // Write beside the target and rename, so a failure never leaves half a file.
  const std::string tmp = path + ".partial";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw InputError(path, "", "cannot write this file");
    f << text;
    if (!f) throw InputError(path, "", "write failed");
  }
  std::filesystem::rename(tmp, path);
}

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

}  // namespace

Action add_import(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("import", "turn nccl-tests or nvidia-smi topo -m output into a profile or cluster");
  cmd->require_subcommand(1);
  struct Opts {
    std::vector<std::string> files;
    std::string base, op, out, topo_file, profile;
    int gpus = 0, pcie_gen = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* nccl = cmd->add_subcommand(
      "nccl-tests", "read all_reduce_perf/all_gather_perf/... output into a profile's collective curves");
  nccl->add_option("files", o->files, "nccl-tests output files")->required();
  nccl->add_option("--base", o->base, "profile the curves are added to (default: matched from the device names)");
  nccl->add_option("--op", o->op, "collective of every file, when their names do not say it");
  nccl->add_option("--gpus", o->gpus, "GPUs per run, when the files do not list their ranks");
  nccl->add_option("--out", o->out, "profile JSON to write")->required();
  struct KernelOpts {
    std::string dir, base, out, source;
    std::vector<std::string> use;
  };
  auto ko = std::make_shared<KernelOpts>();
  auto* kernels = cmd->add_subcommand(
      "kernels", "a folder of measured kernel tables (calibration/kernels/README.md) into a profile that uses them");
  kernels->add_option("dir", ko->dir, "folder of gemm_perf.csv[.gz], context_attention_perf.csv[.gz], ...")->required();
  kernels->add_option("--base", ko->base, "profile whose rates the new one starts from (the GPU's datasheet profile)")
      ->required();
  kernels->add_option("--use", ko->use,
                      "table groups to take from the folder (gemm, attention, mla, moe, nccl, deepep; "
                      "default: every group it has)");
  kernels->add_option("--source", ko->source, "where and how the tables were measured (default: the folder)");
  kernels->add_option("--out", ko->out, "profile JSON to write")->required();
  auto* topo = cmd->add_subcommand("topo", "read `nvidia-smi topo -m` output into a cluster file");
  topo->add_option("file", o->topo_file, "nvidia-smi topo -m output")->required();
  topo->add_option("--profile", o->profile,
                   "profile id of the GPUs (required: topo -m does not name them; clustersim list profiles)");
  topo->add_option("--pcie-gen", o->pcie_gen,
                   "PCIe generation of the GPU links: 4 or 5 (default: by the profile's GPU, 5 for Hopper and "
                   "Blackwell, else 4)");
  topo->add_option("--out", o->out, "cluster JSON to write")->required();
  return [o, nccl, kernels, ko, &g]() -> int {
    const config::Catalog catalog(g.data_dir);
    if (kernels->parsed()) {
      std::error_code ec;
      if (!std::filesystem::is_directory(ko->dir, ec))
        throw InputError("command line", "dir", "'" + ko->dir + "' is not a folder");
      const auto& groups = calib::kernel_table_groups();
      for (const auto& u : ko->use) {
        if (std::find(groups.begin(), groups.end(), u) == groups.end())
          throw InputError("command line", "--use",
                           "unknown table group '" + u + "'; expected gemm, attention, mla, moe, nccl or deepep");
      }
      // Every table in the folder read in full now, so a bad row is reported here, not mid-run.
      std::cout << "# kernel tables in " << ko->dir << "\n";
      int found = 0;
      for (auto t : calib::all_kernel_tables()) {
        const auto path = config::kernel_table_path(ko->dir, t);
        if (path.empty()) continue;
        const auto& schema = calib::kernel_table_schema(t);
        if (!ko->use.empty() && std::find(ko->use.begin(), ko->use.end(), schema.group) == ko->use.end()) continue;
        const auto table = config::read_kernel_table(path, t);
        ++found;
        std::cout << "  " << std::left << std::setw(32) << std::filesystem::path(path).filename().string() << std::right
                  << std::setw(9) << table.rows() << " rows, " << table.keys().size() << " keys (" << schema.group
                  << ")\n";
      }
      if (found == 0)
        throw InputError(ko->dir, "", "no kernel table of the groups asked for (expected files such as gemm_perf.csv)");
      const auto base_path = catalog.locate(config::CatalogKind::kProfile, ko->base, "command line", "--base");
      auto p = config::parse_profile(config::load(base_path), ko->base);
      p.id = stem(ko->out);
      p.origin = calib::Provenance::kImported;
      calib::KernelTableRef ref;
      // The folder as seen from the profile's own folder, so the pair can move together.
      const auto out_dir = std::filesystem::absolute(ko->out).parent_path();
      auto rel = std::filesystem::absolute(ko->dir).lexically_relative(out_dir).string();
      if (rel.empty() || rel == ".") {
        rel = "./";
      } else if (rel.find('/') == std::string::npos) {
        rel = "./" + rel;
      }
      ref.id = rel;
      ref.use = ko->use;
      ref.provenance = calib::Provenance::kImported;
      ref.source = ko->source.empty() ? "kernel tables imported from " + ko->dir : ko->source;
      auto refs = p.kernel_tables.refs;
      p.kernel_tables.refs.assign(1, ref);
      for (const auto& r : refs) p.kernel_tables.refs.push_back(r);
      p.kernel_tables.listed = p.kernel_tables.refs.size() > 1;
      p.source =
          "kernel tables imported from " + ko->dir + "; every other figure from " + ko->base + " (" + p.source + ")";
      const auto j = calib::profile_to_json(p);
      (void)config::parse_profile(config::JsonDoc{ko->out, nlohmann::json::parse(j.dump())}, p.id);  // reads back
      write_text(ko->out, j.dump(2) + "\n");
      std::cout << "# wrote " << ko->out << " (base profile " << ko->base << "; tables " << ref.id << " first)\n";
      return 0;
    }
    if (nccl->parsed()) {
      if (!o->op.empty()) {
        coll::CollectiveOp op{};
        if (!coll::parse_op(o->op, op)) {
          throw InputError(
              "command line", "--op",
              "expected allreduce, allgather, reducescatter, alltoall, sendrecv or shift; got '" + o->op + "'");
        }
      }
      std::vector<calib::NcclTestsRun> runs;
      for (const auto& f : o->files) {
        runs.push_back(calib::parse_nccl_tests(read_text(f), f, o->op, o->gpus));
        check_import_work(static_cast<double>(runs.back().rows.size()), f, g);
      }
      std::string base_id = o->base;
      if (base_id.empty()) {
        // Match the devices' name against the shipped profiles' GPU names.
        const std::string device = runs.front().devices.empty() ? "" : runs.front().devices.front();
        std::vector<std::string> matches;
        for (const auto& id : catalog.ids(config::CatalogKind::kProfile)) {
          const auto p =
              config::parse_profile(config::load(catalog.locate(config::CatalogKind::kProfile, id, "", "")), id);
          // A prefix ending at a word boundary: "NVIDIA H20" names the H20, not the H200.
          if (!device.empty() && p.gpu_name.rfind(device, 0) == 0 &&
              (p.gpu_name.size() == device.size() || p.gpu_name[device.size()] == ' '))
            matches.push_back(id);
        }
        if (matches.size() != 1) {
          throw InputError("command line", "--base",
                           "cannot choose a base profile from the device name '" + device + "' (" +
                               std::to_string(matches.size()) + " profiles match); pass --base");
        }
        base_id = matches.front();
      }
      const auto base_path = catalog.locate(config::CatalogKind::kProfile, base_id, "command line", "--base");
      auto p = config::parse_profile(config::load(base_path), base_id);
      p.id = stem(o->out);
      p.origin = calib::Provenance::kImported;
      std::string files;
      for (const auto& r : runs) files += (files.empty() ? "" : ", ") + r.file;
      p.source = "collective curves imported from nccl-tests output (" + files + "); every other figure from " +
                 base_id + " (" + calib::provenance_name(p.origin) + " base: " + p.source + ")";
      std::cout << "# imported into " << o->out << " (base profile " << base_id << ")\n";
      std::cout << "# op              gpus  rows   alpha(us)  busbw(GB/s)  max fit error\n";
      for (const auto& r : runs) {
        coll::CollectiveOp op{};
        (void)coll::parse_op(r.op, op);
        std::vector<std::pair<double, double>> points;
        for (const auto& row : r.rows) points.emplace_back(row.bytes, row.time_s);
        const auto fit = calib::fit_alpha_beta(points);
        calib::CollectiveCurve c;
        c.op = r.op;
        c.gpus = r.gpus;
        c.alpha_s = fit.alpha_s;
        c.busbw_bytes_per_s = fit.bytes_per_s * coll::bus_factor(op, r.gpus);
        c.provenance = calib::Provenance::kImported;
        c.source = "nccl-tests " + r.file + ": " + std::to_string(r.rows.size()) +
                   " out-of-place rows, fitted time = alpha + bytes / algbw (least squares on relative error, max " +
                   fixed(fit.max_relative_error * 100, 1) + "%)";
        c.points = points;
        std::erase_if(p.collectives, [&](const calib::CollectiveCurve& x) { return x.op == c.op && x.gpus == c.gpus; });
        p.collectives.push_back(c);
        std::cout << "  " << std::left << std::setw(16) << r.op << std::right << std::setw(5) << r.gpus << std::setw(6)
                  << r.rows.size() << std::setw(12) << fixed(c.alpha_s * 1e6, 2) << std::setw(13)
                  << fixed(c.busbw_bytes_per_s / 1e9, 1) << std::setw(14) << fixed(fit.max_relative_error * 100, 1)
                  << "%\n";
      }
      const auto j = calib::profile_to_json(p);
      (void)config::parse_profile(config::JsonDoc{o->out, nlohmann::json::parse(j.dump())}, p.id);  // reads back
      write_text(o->out, j.dump(2) + "\n");
      return 0;
    }
    const auto m = calib::parse_topo_matrix(read_text(o->topo_file), o->topo_file);
    // A guessed GPU would write a wrong cluster (an A100 box filed as H100 with PCIe gen 5).
    if (o->profile.empty())
      throw InputError("command line", "--profile",
                       "nvidia-smi topo -m does not name the GPU; give its profile (e.g. --profile a100-pcie-40; "
                       "clustersim list profiles)");
    const auto ppath = catalog.locate(config::CatalogKind::kProfile, o->profile, "command line", "--profile");
    const auto profile = config::parse_profile(config::load(ppath), o->profile);
    int gen = o->pcie_gen;
    std::string origin = "given on the command line";
    if (gen == 0) {
      gen = calib::pcie_gen_of(profile.gpu_name);
      origin = "by the GPU's name in profile " + o->profile + " (" + profile.gpu_name + "; --pcie-gen sets it)";
    }
    if (gen != 4 && gen != 5)
      throw InputError("command line", "--pcie-gen", "expected 4 or 5; got " + std::to_string(gen));
    const auto j = calib::topo_to_cluster(m, o->topo_file, o->profile, gen, origin);
    const auto spec = config::parse_cluster(config::JsonDoc{o->out, nlohmann::json::parse(j.dump())}, stem(o->out));
    (void)study::machine_topology({spec, spec.gpus, 1, std::nullopt});  // every GPU reaches every other
    write_text(o->out, j.dump(2) + "\n");
    std::size_t nvs = 0, pcie_sw = 0;
    for (const auto& s : spec.switches) {
      nvs += s.kind == net::VertexKind::kNvSwitch;
      pcie_sw += s.kind == net::VertexKind::kPcieSwitch;
    }
    std::cout << "wrote " << o->out << ": " << spec.gpus << " GPUs, " << (nvs ? "NVSwitch" : "no NVSwitch") << ", "
              << pcie_sw << " PCIe switches, " << spec.links.size() << " links (PCIe gen " << gen << ")\n";
    return 0;
  };
}

}  // namespace cs::cli
