// `list`: the catalog of models, clusters, profiles, offers, fabrics and serving engines.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "calibration/profile/hardware_profile.hpp"
#include "models/llm/model_arch.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/cluster_file.hpp"
#include "sim/config/engine_file.hpp"
#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/model_file.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/cluster_spec.hpp"
#include "sim/network/fabric_spec.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serving/serving_sim.hpp"
#include "tools/cli/commands.hpp"

namespace cs::cli {

Action add_list(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("list", "list shipped models, clusters, profiles, offers, fabrics or engines");
  auto what = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("what", *what, "models, clusters, profiles, offers, fabrics or engines (serving presets)")
      ->required()
      ->check(CLI::IsMember({"models", "clusters", "profiles", "offers", "fabrics", "engines"}));
  cmd->add_flag("--json", *json, "print a JSON array");
  return [what, json, &g] {
    const config::Catalog catalog(g.data_dir);
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    std::ostringstream t;
    if (*what == "models") {
      t << std::left << std::setw(22) << "id" << std::right << std::setw(12) << "params" << std::setw(10) << "active"
        << std::setw(8) << "layers" << std::setw(8) << "hidden" << std::setw(7) << "heads" << std::setw(5) << "kv"
        << std::setw(8) << "ffn" << std::setw(16) << "experts x ffn" << std::setw(9) << "vocab\n";
      for (const auto& id : catalog.ids(config::CatalogKind::kModel)) {
        const auto m = config::parse_model(config::load(catalog.locate(config::CatalogKind::kModel, id, "", "")), id);
        rows.push_back({{"id", id},
                        {"params_total", m.params_total()},
                        {"params_active", m.params_active()},
                        {"layers", m.layers},
                        {"hidden", m.hidden},
                        {"heads", m.heads},
                        {"kv_heads", m.kv_heads},
                        {"ffn", m.ffn},
                        {"experts", m.moe.experts},
                        {"top_k", m.moe.top_k},
                        {"expert_ffn", m.moe.expert_ffn},
                        {"vocab", m.vocab}});
        // The dense FFN ("-" where every layer is MoE) and the routed experts' own width.
        const std::string experts = m.is_moe() ? std::to_string(m.moe.top_k) + "/" + std::to_string(m.moe.experts) +
                                                     " x " + std::to_string(m.moe.expert_ffn)
                                               : std::string("-");
        const std::string ffn = m.ffn > 0 ? std::to_string(m.ffn) : std::string("-");
        t << std::left << std::setw(22) << id << std::right << std::setw(11)
          << fixed(static_cast<double>(m.params_total()) / 1e9, 2) << "B" << std::setw(9)
          << fixed(static_cast<double>(m.params_active()) / 1e9, 2) << "B" << std::setw(8) << m.layers << std::setw(8)
          << m.hidden << std::setw(7) << m.heads << std::setw(5) << m.kv_heads << std::setw(8) << ffn << std::setw(16)
          << experts << std::setw(8) << m.vocab << "\n";
      }
    } else if (*what == "clusters") {
      t << std::left << std::setw(22) << "id" << std::setw(6) << "gpus" << std::setw(14) << "profile"
        << "name\n";
      for (const auto& id : catalog.ids(config::CatalogKind::kCluster)) {
        const auto c =
            config::parse_cluster(config::load(catalog.locate(config::CatalogKind::kCluster, id, "", "")), id);
        rows.push_back({{"id", id}, {"gpus", c.gpus}, {"profile", c.profile}, {"name", c.name}});
        t << std::left << std::setw(22) << id << std::setw(6) << c.gpus << std::setw(14) << c.profile << c.name << "\n";
      }
    } else if (*what == "profiles") {
      t << std::left << std::setw(16) << "id" << std::setw(11) << "origin" << std::right << std::setw(12) << "bf16 TF/s"
        << std::setw(10) << "HBM GiB" << std::setw(10) << "HBM TB/s"
        << "  gpu\n";
      for (const auto& id : catalog.ids(config::CatalogKind::kProfile)) {
        const auto p =
            config::parse_profile(config::load(catalog.locate(config::CatalogKind::kProfile, id, "", "")), id);
        const double bf16 = p.peak(calib::Dtype::kBf16).value;
        rows.push_back({{"id", id},
                        {"gpu", p.gpu_name},
                        {"origin", calib::provenance_name(p.origin)},
                        {"bf16_flops", bf16},
                        {"hbm_bytes", p.hbm_capacity.value},
                        {"hbm_bytes_per_s", p.hbm_bandwidth.value}});
        t << std::left << std::setw(16) << id << std::setw(11) << calib::provenance_name(p.origin) << std::right
          << std::setw(12) << fixed(bf16 / 1e12, 1) << std::setw(10) << fixed(p.hbm_capacity.value / 1073741824.0, 1)
          << std::setw(10) << fixed(p.hbm_bandwidth.value / 1e12, 2) << "  " << p.gpu_name << "\n";
      }
    } else if (*what == "fabrics") {
      t << std::left << std::setw(18) << "id" << std::setw(6) << "NICs" << std::right << std::setw(12) << "NIC"
        << "  name\n";
      for (const auto& id : catalog.ids(config::CatalogKind::kFabric)) {
        const auto f = config::parse_fabric(config::load(catalog.locate(config::CatalogKind::kFabric, id, "", "")), id);
        rows.push_back(
            {{"id", id}, {"nics_per_node", f.nics_per_node}, {"nic_bytes_per_s", f.nic_bandwidth}, {"name", f.name}});
        t << std::left << std::setw(18) << id << std::setw(6) << f.nics_per_node << std::right << std::setw(12)
          << (fixed(f.nic_bandwidth * 8 / 1e9, 0) + " Gb/s") << "  " << f.name << "\n";
      }
    } else if (*what == "engines") {
      t << std::left << std::setw(10) << "id" << std::setw(15) << "scheduler" << std::setw(12) << "block"
        << "name\n";
      for (const auto& id : catalog.ids(config::CatalogKind::kEngine)) {
        const auto e = config::parse_engine(config::load(catalog.locate(config::CatalogKind::kEngine, id, "", "")), id);
        const char* policy = serving::scheduler_name(e.policy);
        rows.push_back({{"id", id},
                        {"engine", e.engine},
                        {"version", e.version},
                        {"scheduler", policy},
                        {"block_size", e.block_size}});
        t << std::left << std::setw(10) << id << std::setw(15) << policy << std::setw(12)
          << (std::to_string(e.block_size) + " tokens") << e.engine << "\n";
      }
    } else {
      const auto ids = catalog.ids(config::CatalogKind::kOffer);
      int width = 26;  // the id column: as wide as the longest id, and a gap
      for (const auto& id : ids) width = std::max(width, static_cast<int>(id.size()) + 2);
      // Prices as quoted: whole amounts stay whole, per-hour rates of a few units keep their cents.
      const auto amount = [](double v) { return v == std::floor(v) ? fixed(v, 0) : fixed(v, 2); };
      t << std::left << std::setw(width) << "id" << std::setw(6) << "gpus" << std::right << std::setw(34) << "price"
        << "  " << std::left << std::setw(20) << "cluster"
        << "name\n";
      for (const auto& id : ids) {
        const auto o = config::parse_offer(config::load(catalog.locate(config::CatalogKind::kOffer, id, "", "")), id);
        const std::string per = o.hours_per_period == 1.0 ? "/h" : "/month";
        rows.push_back(
            {{"id", id},
             {"gpus", o.gpus},
             {"price", o.price},
             {"currency", o.currency},
             {"per", o.hours_per_period == 1.0 ? "hour" : "month"},
             {"hourly_price",
              o.hourly_price > 0 ? nlohmann::ordered_json(o.hourly_price) : nlohmann::ordered_json(nullptr)},
             {"price_max", o.price_max > 0 ? nlohmann::ordered_json(o.price_max) : nlohmann::ordered_json(nullptr)},
             {"hourly_price_max",
              o.hourly_price_max > 0 ? nlohmann::ordered_json(o.hourly_price_max) : nlohmann::ordered_json(nullptr)},
             {"cluster", o.cluster},
             {"name", o.name}});
        t << std::left << std::setw(width) << id << std::setw(6) << o.gpus << std::right << std::setw(34)
          << (amount(o.price) + (o.price_max > 0 ? "-" + amount(o.price_max) : std::string()) + " " + o.currency + per +
              (o.hourly_price > 0
                   ? " or " + amount(o.hourly_price) +
                         (o.hourly_price_max > 0 ? "-" + amount(o.hourly_price_max) : std::string()) + "/h"
                   : std::string()))
          << "  " << std::left << std::setw(20) << (o.cluster.empty() ? "-" : o.cluster) << o.name << "\n";
      }
    }
    if (*json) {
      std::cout << rows.dump(2) << "\n";
    } else {
      std::cout << t.str();
    }
    return 0;
  };
}

}  // namespace cs::cli
