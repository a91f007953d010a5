#pragma once
#include <vector>

#include "models/ops/layer_ops.hpp"

namespace cs::models {

/// How tensor-parallel communication overlap runs (Transformer Engine's userbuffers, Megatron's
/// `--tp-comm-overlap`; TE `initialize_ub` defaults).
struct TpOverlap {
  int tp = 1;
  /// SMs the pipelined and bulk overlap kernels hold (TE: 16 SMs): the GEMMs beside them run on
  /// the rest. Ring exchanges move data with copy engines and take none.
  double comm_sm_fraction = 16.0 / 132.0;
  int rs_splits = 4;     ///< chunks of a pipelined reduce-scatter (TE `num_splits` 4)
  int first_tag = 1000;  ///< tags of the async pieces (above ring attention's and two-batch overlap's)
};

/// A layer's program with sequence parallelism's TP collectives overlapped as TE runs them:
/// - an all-gather that feeds a decoder linear GEMM (forward QKV and MLP-up, backward the output
///   gradient before out_proj and MLP-down dgrad) becomes a ring exchange: TP - 1 shifts of one
///   rank's shard, on their own stream, and the GEMM in TP chunks, chunk c waiting for shift c
///   (chunk 0 is the local shard);
/// - a reduce-scatter that drains a forward GEMM (out_proj, MLP-down) is pipelined: the GEMM in
///   `rs_splits` chunks, each chunk's reduce-scatter async behind it, the GEMMs on 1 - f of the SMs;
/// - a reduce-scatter of a data gradient followed by its weight-gradient GEMM in the program (QKV
///   and MLP-up backward) is a bulk overlap: the reduce-scatter runs under the wgrad GEMM.
/// The next op waits for the last piece. Collectives of other shapes (the LM head's, the
/// embedding's, all-reduces without SP) stay as they are. Chunks split FLOPs, rows and bytes
/// evenly (each chunk re-reads the weight in practice; training GEMMs are compute-bound).
[[nodiscard]] std::vector<Item> tp_comm_overlap(const std::vector<Item>& items, const TpOverlap& o);

/// Bytes of the userbuffers TE registers for the overlap on each GPU: one buffer of a micro-batch's
/// full-sequence activations (b s / CP x hidden, 16-bit) for each of the 10 overlapped GEMM roles
/// (QKV, proj, fc1, fc2 forward; their dgrad; QKV and fc1 wgrad), allocated once for the run.
[[nodiscard]] double tp_overlap_buffer_bytes(const ModelArch& m, const StepShape& s);

}  // namespace cs::models
