#pragma once
#include <string>
#include <vector>

namespace cs::calib {

/// One GPU as the probe saw it. NVML facts the probe could not read are -1.
struct MeasuredDevice {
  int index = 0;  ///< CUDA device index
  std::string name;
  double memory_bytes = -1;
  double sm_clock_max_mhz = -1, sm_clock_now_mhz = -1;
  double pcie_gen_current = -1, pcie_gen_max = -1, pcie_width_current = -1, pcie_width_max = -1;
  double nvlink_active_links = -1;
  bool operator==(const MeasuredDevice&) const = default;
};

/// A copy-engine transfer rate between two devices (by CUDA index), bytes/s.
struct MeasuredP2p {
  int src = 0, dst = 0;
  double ce_bytes_per_s = 0;
  bool operator==(const MeasuredP2p&) const = default;
};

/// One GEMM measurement: its dtype, whether the result checked out, and the rate in FLOP/s.
struct MeasuredGemm {
  std::string dtype;
  bool correct = false;
  double flops_per_s = 0;
  bool operator==(const MeasuredGemm&) const = default;
};

/// One HBM kernel measurement ("copy", "read", ...), bytes/s.
struct MeasuredHbm {
  std::string kernel;
  double bytes_per_s = 0;
  bool operator==(const MeasuredHbm&) const = default;
};

/// The `raw` block `clustersim calibrate` writes into a measured profile: what `inspect` reads
/// (config::parse_measured_box reads it).
struct MeasuredBox {
  std::string probe_version, date;
  std::vector<MeasuredDevice> devices;             ///< at least one, at most kMaxMeasuredDevices
  std::vector<std::vector<std::string>> topology;  ///< devices x devices `nvidia-smi topo -m` relations
  std::vector<MeasuredP2p> p2p;
  std::vector<MeasuredGemm> gemm;
  std::vector<MeasuredHbm> hbm;
  bool operator==(const MeasuredBox&) const = default;
};

/// The most devices one measured box may list (as many as a cluster file holds).
inline constexpr int kMaxMeasuredDevices = 576;

}  // namespace cs::calib
