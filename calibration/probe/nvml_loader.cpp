#include "calibration/probe/nvml_loader.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdio>

namespace cs::probe {

namespace {

using Return = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
using Device = void*;
// NVML constants (nvml.h): clock types, topology levels, NVLink count.
constexpr unsigned kClockSm = 1, kClockMem = 2;
constexpr int kTopoSingle = 10, kTopoMultiple = 20, kTopoHostBridge = 30, kTopoNode = 40;
constexpr unsigned kMaxNvlinks = 18;

template <typename F>
F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

Nvml::Nvml() {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    why_not_ = "libnvidia-ml.so.1 not found (no NVIDIA driver?)";
    return;
  }
  auto init = sym<Return (*)()>(lib_, "nvmlInit_v2");
  if (!init || init() != 0) {
    why_not_ = "nvmlInit_v2 failed";
    return;
  }
  ok_ = true;
}

Nvml::~Nvml() {
  if (ok_) {
    if (auto shutdown = sym<Return (*)()>(lib_, "nvmlShutdown")) shutdown();
  }
  if (lib_) dlclose(lib_);
}

NvmlFacts Nvml::facts(const std::string& bus) const {
  NvmlFacts f;
  if (!ok_) return f;
  auto by_bus = sym<Return (*)(const char*, Device*)>(lib_, "nvmlDeviceGetHandleByPciBusId_v2");
  Device d = nullptr;
  if (!by_bus || by_bus(bus.c_str(), &d) != 0) return f;
  auto get_uint = [&](const char* name, int& out) {
    auto fn = sym<Return (*)(Device, unsigned*)>(lib_, name);
    unsigned v = 0;
    if (fn && fn(d, &v) == 0) out = static_cast<int>(v);
  };
  get_uint("nvmlDeviceGetCurrPcieLinkGeneration", f.pcie_gen_current);
  get_uint("nvmlDeviceGetMaxPcieLinkGeneration", f.pcie_gen_max);
  get_uint("nvmlDeviceGetCurrPcieLinkWidth", f.pcie_width_current);
  get_uint("nvmlDeviceGetMaxPcieLinkWidth", f.pcie_width_max);
  auto clock = sym<Return (*)(Device, unsigned, unsigned*)>(lib_, "nvmlDeviceGetMaxClockInfo");
  auto clock_now = sym<Return (*)(Device, unsigned, unsigned*)>(lib_, "nvmlDeviceGetClockInfo");
  unsigned v = 0;
  if (clock && clock(d, kClockSm, &v) == 0) f.sm_clock_max_mhz = static_cast<int>(v);
  if (clock && clock(d, kClockMem, &v) == 0) f.mem_clock_max_mhz = static_cast<int>(v);
  if (clock_now && clock_now(d, kClockSm, &v) == 0) f.sm_clock_now_mhz = static_cast<int>(v);
  auto power = sym<Return (*)(Device, unsigned*)>(lib_, "nvmlDeviceGetPowerManagementLimit");
  if (power && power(d, &v) == 0) f.power_limit_w = static_cast<int>(v / 1000);
  auto link_state = sym<Return (*)(Device, unsigned, int*)>(lib_, "nvmlDeviceGetNvLinkState");
  if (link_state) {
    int active = 0;
    for (unsigned l = 0; l < kMaxNvlinks; ++l) {
      int state = 0;
      if (link_state(d, l, &state) == 0 && state == 1) ++active;
    }
    f.nvlink_active = active;
  }
  auto driver = sym<Return (*)(char*, unsigned)>(lib_, "nvmlSystemGetDriverVersion");
  std::array<char, 96> buf{};
  if (driver && driver(buf.data(), static_cast<unsigned>(buf.size())) == 0) f.driver_version = buf.data();
  return f;
}

std::string Nvml::relation(const std::string& bus_a, const std::string& bus_b) const {
  if (!ok_) return "";
  auto by_bus = sym<Return (*)(const char*, Device*)>(lib_, "nvmlDeviceGetHandleByPciBusId_v2");
  auto ancestor = sym<Return (*)(Device, Device, int*)>(lib_, "nvmlDeviceGetTopologyCommonAncestor");
  auto remote = sym<Return (*)(Device, unsigned, void*)>(lib_, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  auto link_state = sym<Return (*)(Device, unsigned, int*)>(lib_, "nvmlDeviceGetNvLinkState");
  Device a = nullptr, b = nullptr;
  if (!by_bus || by_bus(bus_a.c_str(), &a) != 0 || by_bus(bus_b.c_str(), &b) != 0) return "";
  // NVLink: count links of `a` whose remote end is `b` (or an NVSwitch: then every pair reports
  // the GPU's full link count, as nvidia-smi does). nvmlPciInfo_t: a 16-character legacy bus id,
  // then domain, bus, device, ids, and the bus id string; we compare bus and device numbers.
  unsigned want_bus = 0, want_dev = 0, dom = 0, fn = 0;
  const bool parsed = std::sscanf(bus_b.c_str(), "%x:%x:%x.%x", &dom, &want_bus, &want_dev, &fn) == 4;
  if (remote && link_state && parsed) {
    int to_b = 0, active = 0;
    struct PciInfo {
      char legacy[16];
      unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
      char bus_id[32];
    } info{};
    for (unsigned l = 0; l < kMaxNvlinks; ++l) {
      int state = 0;
      if (link_state(a, l, &state) != 0 || state != 1) continue;
      ++active;
      if (remote(a, l, &info) == 0 && info.bus == want_bus && info.device == want_dev) ++to_b;
    }
    if (to_b > 0) return "NV" + std::to_string(to_b);
    if (active >= 8) return "NV" + std::to_string(active);  // through NVSwitch
  }
  int level = 0;
  if (!ancestor || ancestor(a, b, &level) != 0) return "";
  if (level <= kTopoSingle) return "PIX";
  if (level <= kTopoMultiple) return "PXB";
  if (level <= kTopoHostBridge) return "PHB";
  if (level <= kTopoNode) return "NODE";
  return "SYS";
}

}  // namespace cs::probe
