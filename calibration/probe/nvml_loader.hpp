#pragma once
// NVML loaded at run time with dlopen (TOOLCHAIN.md: the CUDA toolkit here ships no nvml.h or
// libnvidia-ml; the driver provides libnvidia-ml.so.1 on a GPU machine). Our own declarations of
// the few functions used, from NVML's documented C API.
#include <string>

namespace cs::probe {

/// What NVML tells about one GPU (fields stay -1 / empty when NVML is absent or a call fails).
struct NvmlFacts {
  int pcie_gen_current = -1, pcie_gen_max = -1, pcie_width_current = -1, pcie_width_max = -1;
  int nvlink_active = -1;
  int sm_clock_max_mhz = -1, sm_clock_now_mhz = -1, mem_clock_max_mhz = -1;
  int power_limit_w = -1;
  std::string driver_version;
};

class Nvml {
 public:
  Nvml();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  [[nodiscard]] bool available() const { return ok_; }
  [[nodiscard]] const std::string& why_not() const { return why_not_; }
  /// Facts for the GPU with this PCI bus id ("0000:18:00.0", as cudaDeviceGetPCIBusId gives it).
  [[nodiscard]] NvmlFacts facts(const std::string& pci_bus_id) const;
  /// nvidia-smi topo -m's relation between two GPUs: "NV<k>", "PIX", "PXB", "PHB", "NODE", "SYS".
  [[nodiscard]] std::string relation(const std::string& bus_a, const std::string& bus_b) const;

 private:
  void* lib_ = nullptr;
  bool ok_ = false;
  std::string why_not_;
};

}  // namespace cs::probe
