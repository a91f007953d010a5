#include "sim/config/fabric_file.hpp"

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"

namespace cs::config {

using net::FabricKind;
using net::FabricSpec;

FabricSpec parse_fabric(const config::JsonDoc& doc, const std::string& id) {
  config::Problems problems;
  auto r = config::Reader::root(doc, problems);
  problems.throw_if_any();
  FabricSpec f;
  f.id = id;
  (void)r.opt_string("id", id);
  f.name = r.req_string("name");
  f.source = r.req_string("source");
  const auto kind = r.req_enum("topology", {"single_switch", "rail", "fat_tree"});
  f.kind = kind == "single_switch" ? FabricKind::kSingleSwitch
           : kind == "rail"        ? FabricKind::kRail
                                   : FabricKind::kFatTree;
  f.nics_per_node = static_cast<int>(r.req_int("nics_per_node", 1, 64));
  if (const auto* m = r.raw("gpu_nic")) {
    if (!m->is_array()) {
      r.fail_at("gpu_nic", "expected an array giving each GPU's NIC index");
    } else {
      for (const auto& v : *m) {
        // Compared as int64: an index beyond int must not wrap into range.
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= f.nics_per_node) {
          r.fail_at("gpu_nic", "expected NIC indices from 0 to " + std::to_string(f.nics_per_node - 1));
          break;
        }
        f.gpu_nic.push_back(static_cast<int>(v.get<std::int64_t>()));
      }
    }
  }
  if (const auto* m = r.raw("nic_switch")) {
    if (!m->is_array() || static_cast<int>(m->size()) != f.nics_per_node) {
      r.fail_at("nic_switch", "expected an array of " + std::to_string(f.nics_per_node) +
                                  " switch ids of the node (one per NIC), e.g. [\"cpu0\"]");
    } else {
      for (const auto& v : *m) {
        if (!v.is_string()) {
          r.fail_at("nic_switch", "expected switch ids (strings) of the cluster file");
          break;
        }
        f.nic_switch.push_back(v.get<std::string>());
      }
    }
  }
  {
    auto n = r.child("nic");
    f.nic_bandwidth = n.req_quantity("bandwidth", Dimension::kBandwidth, 1.0);
    f.nic_efficiency = n.req_number("efficiency", 0.01, 1.0);
    f.nic_latency_s = n.req_quantity("latency", Dimension::kTime, 0.0);
    f.gpu_nic_bandwidth = n.req_quantity("gpu_link_bandwidth", Dimension::kBandwidth, 1.0);
    f.nic_source = n.req_string("source");
    f.efficiency_source = n.req_string("efficiency_source");
    n.finish();
  }
  f.switch_latency_s = r.req_quantity("switch_latency", Dimension::kTime, 0.0);
  f.switch_latency_source = r.req_string("switch_latency_source");
  f.nodes_per_leaf = static_cast<int>(r.opt_int("nodes_per_leaf", 1, 1 << 20, 1));
  f.oversubscription = r.opt_number("oversubscription", 1.0, 1000.0, 1.0);
  if (r.has("pods")) {
    auto pods = r.child("pods");
    f.leaves_per_pod = static_cast<int>(pods.req_int("leaves_per_pod", 1, 1 << 20));
    f.pod_oversubscription = pods.opt_number("oversubscription", 1.0, 1000.0, 1.0);
    pods.finish();
    if (kind != "fat_tree") r.fail_at("pods", "pods (a third tier) apply to \"topology\": \"fat_tree\" only");
  }
  r.finish();
  problems.throw_if_any();
  return f;
}

}  // namespace cs::config
