// `collective`: an nccl-tests-style bandwidth table for one collective on a cluster.
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "calibration/profile/hardware_profile.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/cluster_file.hpp"
#include "sim/config/collective_file.hpp"
#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/machine_file.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/cluster_spec.hpp"
#include "sim/network/fabric_spec.hpp"
#include "sim/network/topology.hpp"
#include "sim/study/machine_topology.hpp"
#include "sim/workload/collective_timing.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/work_bounds.hpp"

namespace cs::cli {

namespace {

double parse_size(const std::string& text, const std::string& flag) {
  std::string t = text;
  if (!t.empty() && t.find_first_not_of("0123456789") == std::string::npos) t += " B";
  const auto r = parse_quantity(t, Dimension::kBytes);
  if (!r.error.empty() || r.value < 1) {
    throw InputError("command line", flag,
                     "expected a size such as 8, 64K, 128M or 1G (powers of two); got '" + text + "'");
  }
  return r.value;
}

}  // namespace

Action add_collective(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("collective", "nccl-tests-style table: time, algbw and busbw per message size");
  struct Opts {
    std::string cluster, profile, op = "allreduce", algo = "auto", min = "8", max = "1G", network = "flow", fabric;
    int gpus = 0, nodes = 1;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--cluster", o->cluster, "cluster id or path")->required();
  cmd->add_option("--gpus", o->gpus, "use the first N GPUs of each copy of the cluster (default: all)");
  cmd->add_option("--nodes", o->nodes,
                  "copies of the cluster joined by --fabric: nodes, or racks for a rack-scale NVLink domain such as "
                  "gb200-nvl72 (the collective spans all their GPUs)");
  cmd->add_option("--fabric", o->fabric, "fabric id or path, with --nodes");
  cmd->add_option("--profile", o->profile, "hardware profile id or path (default: the cluster's)");
  cmd->add_option("--op", o->op, "allreduce, allgather, reducescatter, alltoall, sendrecv or shift");
  cmd->add_option("--algo", o->algo, "auto, ring, tree, nvls, hierarchical or direct");
  cmd->add_option("--min", o->min, "smallest size (nccl-tests -b), e.g. 8 or 64K");
  cmd->add_option("--max", o->max, "largest size (nccl-tests -e), e.g. 1G");
  cmd->add_option("--network-model", o->network, "flow or analytical");
  cmd->add_flag("--json", o->json, "print {\"rows\": [...]} instead of the table");
  return [o, cmd, &g] {
    const config::Catalog catalog(g.data_dir);
    if (o->nodes > 1 && o->fabric.empty())
      throw InputError("command line", "--fabric", "a fabric is required with --nodes > 1");
    const auto box = config::resolve_box(
        catalog, "command line",
        config::BoxRefs{o->cluster, o->profile, o->nodes > 1 ? o->fabric : "", "--cluster", "--profile", "--fabric"});
    const auto& cluster = box.cluster;
    const auto& profile = box.profile;
    const int gpus = cmd->count("--gpus") ? o->gpus : cluster.gpus;
    if (gpus < 1 || gpus > cluster.gpus) {
      throw InputError("command line", "--gpus",
                       "expected 1 to " + std::to_string(cluster.gpus) + " (GPUs of " + cluster.id + "); got " +
                           std::to_string(gpus));
    }
    coll::CollectiveOp op{};
    if (!coll::parse_op(o->op, op)) {
      throw InputError(
          "command line", "--op",
          "expected allreduce, allgather, reducescatter, alltoall, sendrecv or shift; got '" + o->op + "'");
    }
    coll::Algorithm algo{};
    if (!coll::parse_algorithm(o->algo, algo)) {
      throw InputError("command line", "--algo",
                       "expected auto, ring, tree, nvls, hierarchical or direct; got '" + o->algo + "'");
    }
    if (o->network != "flow" && o->network != "analytical") {
      throw InputError("command line", "--network-model", "expected flow or analytical; got '" + o->network + "'");
    }
    const double lo = parse_size(o->min, "--min");
    const double hi = parse_size(o->max, "--max");
    if (lo > hi) throw InputError("command line", "--min", "must not exceed --max");
    if (o->nodes < 1)
      throw InputError("command line", "--nodes", "expected at least 1; got " + std::to_string(o->nodes));
    if (o->nodes > 1 && o->fabric.empty())
      throw InputError("command line", "--fabric", "a fabric is required with --nodes > 1");
    // Before anything is built: the GPUs (as int64: --nodes may be any int) and the flows of each
    // size (all-to-all n(n-1), the others about 2n); work_bounds.hpp says what each costs.
    const double all_gpus = static_cast<double>(std::int64_t{gpus} * o->nodes);
    const double flows = op == coll::CollectiveOp::kAllToAll ? all_gpus * (all_gpus - 1) : 2 * all_gpus;
    check_collective_work(all_gpus, flows, std::floor(std::log2(hi / lo)) + 1, o->network == "flow", g);
    const int total = gpus * o->nodes;
    const int n = op == coll::CollectiveOp::kSendRecv ? 2 : total;
    if (n > total || n < 2) {
      throw InputError("command line", "--gpus", std::string(coll::op_name(op)) + " needs at least 2 GPUs");
    }
    const auto topo = study::machine_topology({cluster, gpus, o->nodes, o->nodes > 1 ? box.fabric : std::nullopt});
    std::vector<int> ranks;
    for (int r = 0; r < n; ++r) ranks.push_back(op == coll::CollectiveOp::kSendRecv && r == 1 ? total - 1 : r);
    const auto network = o->network == "flow" ? net::NetworkModelKind::kFlow : net::NetworkModelKind::kAnalytical;

    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    std::ostringstream table;
    table << "# clustersim collective: " << coll::op_name(op) << " on "
          << (o->nodes > 1 ? std::to_string(o->nodes) + "x " : "") << cluster.id
          << (o->nodes > 1 ? " over " + o->fabric : "") << " (" << n << " GPUs), network model " << o->network
          << ", algorithm " << coll::algorithm_name(algo) << "\n"
          << "# busbw = algbw x "
          << (op == coll::CollectiveOp::kAllReduce                                      ? "2(n-1)/n"
              : op == coll::CollectiveOp::kSendRecv || op == coll::CollectiveOp::kShift ? "1"
                                                                                        : "(n-1)/n")
          << " (nccl-tests); GB/s = 1e9 B/s\n"
          << std::right << std::setw(14) << "size(B)" << std::setw(14) << "time(us)" << std::setw(14) << "algbw(GB/s)"
          << std::setw(14) << "busbw(GB/s)"
          << "  algorithm\n";
    for (double bytes = lo; bytes <= hi; bytes *= 2) {
      const auto t = [&] {
        try {
          return workload::time_collective(topo, op, algo, ranks, bytes, profile.collective_latency.value, network,
                                           &profile.collectives);
        } catch (const InputError& e) {
          // The collective names the request's field; here the flag set it.
          std::vector<InputProblem> out;
          for (auto p : e.problems()) {
            if (p.pointer == "/algorithm") p = {"command line", "--algo", p.message};
            out.push_back(p);
          }
          throw InputError(out);
        }
      }();
      const double secs = t.seconds;
      const double algbw = t.algbw_bytes_per_s / 1e9;
      const double busbw = t.busbw_bytes_per_s / 1e9;
      const char* used = coll::algorithm_name(t.algorithm);
      rows.push_back(
          {{"bytes", bytes}, {"time_s", secs}, {"algbw_GBps", algbw}, {"busbw_GBps", busbw}, {"algorithm", used}});
      table << std::setw(14) << static_cast<long long>(bytes) << std::setw(14) << fixed(secs * 1e6, 2) << std::setw(14)
            << fixed(algbw, 2) << std::setw(14) << fixed(busbw, 2) << "  " << used << "\n";
    }
    if (o->json) {
      nlohmann::ordered_json j;
      j["op"] = coll::op_name(op);
      j["cluster"] = cluster.id;
      j["gpus"] = n;
      j["network_model"] = o->network;
      j["rows"] = rows;
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << table.str();
    }
    return 0;
  };
}

int run_collective_document(const config::JsonDoc& doc, const Globals& g, bool json, bool validate_only) {
  const config::Catalog catalog(g.data_dir);
  const auto c = config::parse_collective_doc(doc, catalog);
  coll::CollectiveOp op{};
  coll::Algorithm algo{};
  if (!coll::parse_op(c.op, op)) throw InputError(doc.path, "/op", "unknown collective '" + c.op + "'");
  if (!coll::parse_algorithm(c.algo, algo)) throw InputError(doc.path, "/algorithm", "unknown '" + c.algo + "'");
  for (const auto& v : c.variants) {
    const double gpus = v.gpus;
    check_collective_work(gpus, op == coll::CollectiveOp::kAllToAll ? gpus * (gpus - 1) : 2 * gpus, 1, true, g);
  }
  if (validate_only) {
    std::cout << "ok: " << (c.name.empty() ? doc.path : c.name) << ": " << coll::op_name(op) << " of "
              << static_cast<long long>(c.bytes) << " B on " << c.variants.size() << " box(es)\n";
    return 0;
  }
  // As `clustersim collective` times one size (and claims read it): the flow model on each box.
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::ostringstream table;
  table << (c.name.empty() ? doc.path : c.name) << ": " << coll::op_name(op) << " of "
        << static_cast<long long>(c.bytes) << " B, algorithm " << coll::algorithm_name(algo) << "\n"
        << std::left << std::setw(40) << "variant" << std::right << std::setw(6) << "gpus" << std::setw(14)
        << "time(us)" << std::setw(14) << "algbw(GB/s)" << std::setw(14) << "busbw(GB/s)"
        << "  algorithm\n";
  for (const auto& v : c.variants) {
    const auto topo = study::machine_topology({v.box.cluster, v.gpus, 1, std::nullopt});
    std::vector<int> ranks;
    for (int r = 0; r < v.gpus; ++r) ranks.push_back(r);
    const auto t = workload::time_collective(topo, op, algo, ranks, c.bytes, v.box.profile.collective_latency.value,
                                             net::NetworkModelKind::kFlow, &v.box.profile.collectives);
    const char* used = coll::algorithm_name(t.algorithm);
    rows.push_back({{"variant", v.name},
                    {"cluster", v.box.cluster.id},
                    {"gpus", v.gpus},
                    {"time_s", t.seconds},
                    {"algbw_GBps", t.algbw_bytes_per_s / 1e9},
                    {"busbw_GBps", t.busbw_bytes_per_s / 1e9},
                    {"algorithm", used}});
    table << std::left << std::setw(40) << v.name << std::right << std::setw(6) << v.gpus << std::setw(14)
          << fixed(t.seconds * 1e6, 2) << std::setw(14) << fixed(t.algbw_bytes_per_s / 1e9, 2) << std::setw(14)
          << fixed(t.busbw_bytes_per_s / 1e9, 2) << "  " << used << "\n";
  }
  if (json) {
    nlohmann::ordered_json j;
    j["name"] = c.name;
    j["op"] = coll::op_name(op);
    j["bytes"] = c.bytes;
    j["variants"] = rows;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << table.str();
  }
  return 0;
}

}  // namespace cs::cli
