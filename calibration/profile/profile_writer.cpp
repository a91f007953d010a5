#include "calibration/profile/profile_writer.hpp"

#include "sim/core/quantity.hpp"

namespace cs::calib {

namespace {

nlohmann::ordered_json rate(const std::string& value, Provenance p, const std::string& source) {
  return {{"value", value}, {"status", provenance_name(p)}, {"source", source}};
}
nlohmann::ordered_json rate(double value, Provenance p, const std::string& source) {
  return {{"value", value}, {"status", provenance_name(p)}, {"source", source}};
}
// SI base units, shortest form: the reader parses them back to the identical double.
std::string flops(double v) { return shortest(v) + " FLOP/s"; }
std::string bytes(double v) { return shortest(v) + " B"; }
std::string bandwidth(double v) { return shortest(v) + " B/s"; }
std::string seconds(double v) { return shortest(v) + " s"; }

}  // namespace

nlohmann::ordered_json profile_to_json(const HardwareProfile& p, const nlohmann::ordered_json& raw) {
  nlohmann::ordered_json j;
  j["schema_version"] = kProfileSchemaVersion;
  j["id"] = p.id;
  j["gpu"] = p.gpu_name;
  j["source"] = {{"kind", provenance_name(p.origin)}, {"document", p.source}};
  nlohmann::ordered_json peaks = nlohmann::ordered_json::object();
  for (const auto& [d, r] : p.matrix_peak) peaks[dtype_name(d)] = rate(flops(r.value), r.provenance, r.source);
  j["matrix_peak"] = peaks;
  j["hbm"] = {
      {"capacity", rate(bytes(p.hbm_capacity.value), p.hbm_capacity.provenance, p.hbm_capacity.source)},
      {"bandwidth", rate(bandwidth(p.hbm_bandwidth.value), p.hbm_bandwidth.provenance, p.hbm_bandwidth.source)}};
  j["achieved"] = {
      {"gemm_efficiency",
       {{"max_fraction", p.gemm.max_fraction},
        {"half_rate_dim", p.gemm.half_rate_dim},
        {"status", provenance_name(p.gemm.provenance)},
        {"source", p.gemm.source}}},
      {"attention_forward_fraction", rate(p.attention_forward_fraction.value, p.attention_forward_fraction.provenance,
                                          p.attention_forward_fraction.source)},
      {"attention_backward_fraction",
       rate(p.attention_backward_fraction.value, p.attention_backward_fraction.provenance,
            p.attention_backward_fraction.source)},
      {"hbm_fraction", rate(p.hbm_fraction.value, p.hbm_fraction.provenance, p.hbm_fraction.source)},
      {"kernel_overhead",
       rate(seconds(p.kernel_overhead.value), p.kernel_overhead.provenance, p.kernel_overhead.source)},
      {"collective_latency",
       rate(seconds(p.collective_latency.value), p.collective_latency.provenance, p.collective_latency.source)},
      {"graph_kernel_overhead", rate(seconds(p.graph_kernel_overhead.value), p.graph_kernel_overhead.provenance,
                                     p.graph_kernel_overhead.source)},
      {"serving_step_overhead", rate(seconds(p.serving_step_overhead.value), p.serving_step_overhead.provenance,
                                     p.serving_step_overhead.source)}};
  for (const auto& [key, floor] : {std::pair{"deepep_ll_dispatch_floor", &p.deepep_ll_dispatch_floor},
                                   std::pair{"deepep_ll_combine_floor", &p.deepep_ll_combine_floor}}) {
    if (*floor) j["achieved"][key] = rate(seconds((*floor)->value), (*floor)->provenance, (*floor)->source);
  }
  if (p.attention_backward_ratio) {
    const auto& r = *p.attention_backward_ratio;
    j["achieved"]["attention_backward_ratio"] = rate(r.value, r.provenance, r.source);
  }
  if (p.grouped_gemm_ratio) {
    const auto& r = *p.grouped_gemm_ratio;
    j["achieved"]["grouped_gemm_ratio"] = rate(r.value, r.provenance, r.source);
  }
  if (p.host_kernel_issue) {
    const auto& r = *p.host_kernel_issue;
    j["achieved"]["host_kernel_issue"] = rate(seconds(r.value), r.provenance, r.source);
  }
  if (p.gemm_shape.enabled()) {
    const auto& g = p.gemm_shape;
    auto tiles = nlohmann::ordered_json::array();
    for (const auto& t : g.tiles) tiles.push_back({{"m", t.m}, {"n", t.n}, {"efficiency", t.efficiency}});
    nlohmann::ordered_json ceiling = nlohmann::ordered_json::object();
    for (const auto& [d, f] : g.ceiling) ceiling[dtype_name(d)] = f;
    j["achieved"]["gemm_shape"] = {{"sms", rate(g.sms, g.sms_provenance, g.sms_source)},
                                   {"tiles", tiles},
                                   {"k_fill", g.k_fill},
                                   {"ceiling", ceiling},
                                   {"status", provenance_name(g.provenance)},
                                   {"source", g.source}};
  }
  j["runtime_reserved"] =
      rate(bytes(p.runtime_reserved.value), p.runtime_reserved.provenance, p.runtime_reserved.source);
  if (!p.kernel_tables.refs.empty()) {
    auto all = nlohmann::ordered_json::array();
    for (const auto& k : p.kernel_tables.refs) {
      nlohmann::ordered_json kt{{"id", k.id}};
      if (!k.use.empty()) kt["use"] = k.use;
      if (!k.gemm_quantizes_input) kt["gemm_quantizes_input"] = false;
      kt["status"] = provenance_name(k.provenance);
      kt["source"] = k.source;
      all.push_back(kt);
    }
    j["kernel_tables"] = all.size() == 1 && !p.kernel_tables.listed ? all.front() : all;
  }
  if (!p.device.empty()) {
    nlohmann::ordered_json dev = nlohmann::ordered_json::object();
    for (const auto& [k, v] : p.device) dev[k] = v;
    j["device"] = dev;
  }
  if (!p.gemm_table.empty()) {
    auto table = nlohmann::ordered_json::array();
    for (const auto& g : p.gemm_table) {
      table.push_back({{"dtype", dtype_name(g.dtype)},
                       {"m", static_cast<std::int64_t>(g.m)},
                       {"n", static_cast<std::int64_t>(g.n)},
                       {"k", static_cast<std::int64_t>(g.k)},
                       {"rate", flops(g.flops_per_s)}});
    }
    j["gemm_table"] = table;
  }
  if (!p.collectives.empty()) {
    auto curves = nlohmann::ordered_json::array();
    for (const auto& c : p.collectives) {
      auto points = nlohmann::ordered_json::array();
      for (const auto& [b, t] : c.points)
        points.push_back({{"bytes", static_cast<std::int64_t>(b)}, {"time", seconds(t)}});
      nlohmann::ordered_json curve{{"op", c.op}, {"gpus", c.gpus}};
      if (c.nodes > 1) {
        curve["nodes"] = c.nodes;
        curve["fabric"] = c.fabric;
      }
      curve["alpha"] = seconds(c.alpha_s);
      curve["busbw"] = bandwidth(c.busbw_bytes_per_s);
      curve["status"] = provenance_name(c.provenance);
      curve["source"] = c.source;
      curve["points"] = points;
      curves.push_back(curve);
    }
    j["collectives"] = curves;
  }
  if (!raw.is_null()) j["raw"] = raw;
  return j;
}

}  // namespace cs::calib
