#include "sim/config/measured_box_file.hpp"

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"

namespace cs::config {

using calib::MeasuredBox;
using calib::MeasuredDevice;
using calib::MeasuredGemm;
using calib::MeasuredHbm;
using calib::MeasuredP2p;

namespace {

constexpr double kMaxRate = 1e18;  // bytes/s or FLOP/s: far above any GPU, below overflow

/// The fields of a measurement row the probe writes but `inspect` does not use, marked read.
void skip(config::Reader& r, std::initializer_list<const char*> keys) {
  for (const char* k : keys) (void)r.raw(k);
}

}  // namespace

MeasuredBox parse_measured_box(const config::JsonDoc& doc) {
  config::Problems problems;
  auto root = config::Reader::root(doc, problems);
  problems.throw_if_any();
  auto raw = root.child("raw");
  problems.throw_if_any();
  MeasuredBox box;
  box.probe_version = raw.opt_string("probe_version", "?");
  box.date = raw.opt_string("date", "?");
  skip(raw, {"quick", "note", "versions", "launch_overhead_s", "host_copy", "nccl", "not_measured"});
  const std::size_t before_devices = problems.size();
  auto devices = raw.each("devices");
  if (devices.size() > static_cast<std::size_t>(calib::kMaxMeasuredDevices)) {
    raw.fail_at("devices", "expected at most " + std::to_string(calib::kMaxMeasuredDevices) + " devices; got " +
                               std::to_string(devices.size()));
    devices.clear();
  } else if (devices.empty() && problems.size() == before_devices) {
    raw.fail_at("devices", "expected the probe's list of devices; got none");
  }
  // Without a device list the topology's shape cannot be judged: only /raw/devices is reported.
  const bool devices_ok = problems.size() == before_devices;
  for (auto& d : devices) {
    MeasuredDevice m;
    m.index = static_cast<int>(d.req_int("index", 0, 1 << 20));
    m.name = d.req_string("name");
    m.memory_bytes = d.opt_number("memory_bytes", 0, kMaxRate, -1);
    m.sm_clock_max_mhz = d.opt_number("sm_clock_max_mhz", -1, 1e6, -1);
    m.sm_clock_now_mhz = d.opt_number("sm_clock_now_mhz", -1, 1e6, -1);
    m.pcie_gen_current = d.opt_number("pcie_gen_current", -1, 100, -1);
    m.pcie_gen_max = d.opt_number("pcie_gen_max", -1, 100, -1);
    m.pcie_width_current = d.opt_number("pcie_width_current", -1, 1024, -1);
    m.pcie_width_max = d.opt_number("pcie_width_max", -1, 1024, -1);
    m.nvlink_active_links = d.opt_number("nvlink_active_links", -1, 1024, -1);
    skip(d, {"pci_bus_id", "sm_count", "compute_capability", "mem_clock_max_mhz", "power_limit_w", "driver_version"});
    d.finish();
    box.devices.push_back(m);
  }
  const std::size_t n = box.devices.size();
  if (const auto* topo = raw.raw("topology"); topo && devices_ok) {
    const std::string expected =
        "expected " + std::to_string(n) + " rows of " + std::to_string(n) + " relations (one per device)";
    if (!topo->is_array() || topo->size() != n) {
      raw.fail_at("topology", expected + "; got " + config::json_type_name(*topo) +
                                  (topo->is_array() ? " of " + std::to_string(topo->size()) + " rows" : ""));
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        const auto& row = (*topo)[i];
        std::vector<std::string> rel;
        for (std::size_t j = 0; row.is_array() && row.size() == n && j < n; ++j) {
          if (!row[j].is_string()) break;
          rel.push_back(row[j].get<std::string>());
        }
        if (rel.size() != n) {
          raw.fail_at("topology", "row " + std::to_string(i) + ": " + expected + ", each a string such as \"NV18\"");
          break;
        }
        box.topology.push_back(std::move(rel));
      }
    }
  }
  for (auto& p : raw.each("p2p", false)) {
    MeasuredP2p m;
    m.src = static_cast<int>(p.req_int("src", 0, 1 << 20));
    m.dst = static_cast<int>(p.req_int("dst", 0, 1 << 20));
    m.ce_bytes_per_s = p.req_number("ce_bytes_per_s", 0, kMaxRate);
    skip(p, {"access", "sm_bytes_per_s", "latency_s"});
    p.finish();
    box.p2p.push_back(m);
  }
  for (auto& g : raw.each("gemm", false)) {
    MeasuredGemm m;
    m.dtype = g.req_string("dtype");
    m.correct = g.req_bool("correct");
    m.flops_per_s = g.req_number("flops_per_s", 0, kMaxRate);
    skip(g, {"m", "n", "k", "time_median_s", "time_min_s", "time_max_s", "time_p99_s", "iterations", "note"});
    g.finish();
    box.gemm.push_back(m);
  }
  for (auto& h : raw.each("hbm", false)) {
    MeasuredHbm m;
    m.kernel = h.req_string("kernel");
    m.bytes_per_s = h.req_number("bytes_per_s", 0, kMaxRate);
    skip(h, {"bytes", "time_median_s", "time_min_s", "time_max_s"});
    h.finish();
    box.hbm.push_back(m);
  }
  raw.finish();
  problems.throw_if_any();
  return box;
}

}  // namespace cs::config
