#pragma once
#include "calibration/profile/hardware_profile.hpp"
#include "models/llm/model_arch.hpp"
#include "sim/network/topology.hpp"

namespace cs::workload {

/// DeepEP's two kinds of kernels (deepseek-ai/DeepEP): the normal ones (training, prefill) send a
/// token once to each GPU holding one of its experts, across nodes once per node over the rail,
/// then forwarded over NVLink; the low-latency ones (decode) send every one of a token's top-k
/// copies straight to its expert's GPU (no deduplication, no forwarding) and pay a fixed floor.
enum class DeepepKernel { kNormal, kLowLatency };

struct DeepepRequest {
  DeepepKernel kernel = DeepepKernel::kNormal;
  bool combine = false;  ///< the combine (bf16 back to the token's GPU) rather than the dispatch
  bool fp8 = true;       ///< FP8 dispatch (the combine is always bf16)
  double tokens = 0;     ///< tokens per GPU
  int ep = 0;            ///< GPUs of the exchange: ranks 0..ep-1 of the topology
  int nodes = 1;         ///< nodes they span (equal shares)
};

/// One exchange alone on the topology, and the byte counts it is judged by (per GPU).
struct DeepepExchange {
  double seconds = 0;       ///< the kernel's time: the flows' time, plus the floor (low-latency)
  double flow_seconds = 0;  ///< what the flow model charges the traffic (the profile's call latency included)
  double floor_seconds = 0;
  double token_bytes = 0;  ///< one token's message
  double send_bytes = 0;   ///< the all-to-all send buffer (nccl-tests' convention, own share included)
  /// DeepEP's counts (assumed, docs/accuracy.md): each token once per destination it is routed to,
  /// the sender's own included. Normal: per node (RDMA) and per GPU (NVLink); low-latency: per copy.
  double logical_rdma_bytes = 0;
  double logical_nvl_bytes = 0;
  double nic_bytes = 0;     ///< bytes out of the busiest NIC into the fabric (what crosses it)
  double nvlink_bytes = 0;  ///< bytes out of the busiest GPU onto NVLink
};

/// Runs the exchange through the executor and the flow model (balanced routing: every expert the
/// same share). The low-latency kernels need the profile's floors (InputError naming it if absent).
[[nodiscard]] DeepepExchange time_deepep(const net::Topology& topo, const models::ModelArch& m, const DeepepRequest& r,
                                         const calib::HardwareProfile& profile);

}  // namespace cs::workload
