#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "calibration/profile/kernel_tables.hpp"

namespace cs::calib {

/// Where a figure came from. Reported beside every rate the simulator uses.
enum class Provenance { kDatasheet, kAssumed, kMeasured, kImported, kFitted };
[[nodiscard]] const char* provenance_name(Provenance p);

/// Number formats the matrix units run. FP4 (Blackwell's NVFP4/MXFP4) is a profile dtype: its peak is
/// recorded and listed; training and serving do not run in it.
enum class Dtype { kFp32, kTf32, kBf16, kFp16, kFp8, kFp4 };
[[nodiscard]] const char* dtype_name(Dtype d);
/// Bytes per element of a training dtype; FP4 packs two elements per byte and is no training dtype
/// (asserted).
[[nodiscard]] std::size_t dtype_bytes(Dtype d);

/// One figure with its unit already applied (SI) and where it came from.
struct Rate {
  double value = 0.0;
  Provenance provenance = Provenance::kAssumed;
  std::string source;  ///< datasheet citation, or the basis of an assumption, or the measurement
  bool operator==(const Rate&) const = default;
};

/// Achieved GEMM rate as a fraction of peak: max_fraction * prod_d d / (d + half_rate_dim) over
/// the three GEMM dimensions (m, n, k). Small dimensions waste tensor-core tiles; large GEMMs
/// approach `max_fraction`.
struct GemmEfficiency {
  double max_fraction = 0.0;
  double half_rate_dim = 0.0;
  Provenance provenance = Provenance::kAssumed;
  std::string source;
  [[nodiscard]] double at(double m, double n, double k) const;
  /// prod_d d / (d + half_rate_dim): the shape's share of max_fraction.
  [[nodiscard]] static double shape_factor(double half_rate_dim, double m, double n, double k);
  bool operator==(const GemmEfficiency&) const = default;
};

/// A CTA (thread-block) output tile a GEMM library picks from, with its rate per SM relative to the
/// best tile (a smaller tile reuses each loaded operand less).
struct GemmTile {
  double m = 0, n = 0;
  double efficiency = 1.0;
  bool operator==(const GemmTile&) const = default;
};

/// How one GEMM, or a group of equal GEMMs launched as one grouped kernel (MoE experts), maps onto
/// the SMs with one tile shape.
struct GemmMapping {
  GemmTile tile;         ///< the tile (either orientation) giving the highest fraction
  double tiles = 0;      ///< groups x ceil(m / tile.m) x ceil(n / tile.n) (x splits)
  double waves = 0;      ///< ceil(tiles / SMs): tiles run one per SM at a time
  double pad_util = 0;   ///< m n / (ceil(m / tile.m) tile.m x ceil(n / tile.n) tile.n): edge tiles' padding
  double wave_util = 0;  ///< tiles / (waves x SMs): the last wave's idle SMs
  double splits = 1;     ///< split-K: each output tile's k loop cut into this many CTAs
  double k_util = 0;     ///< k' / (k' + k_fill), k' = k / splits: each CTA's loop over k against its fixed fill
  /// ceiling x tile.efficiency x pad_util x wave_util x k_util; with split-K, lowered by the time
  /// to write and read back the fp32 partial tiles at the HBM rate.
  double fraction = 0;
};

/// GEMM efficiency by shape (issue 11): the m x n output is cut into CTA tiles that run in waves
/// of one tile per SM, so a shape pays for the padded part of its edge tiles and for the idle SMs
/// of its last wave; each tile's loop over k pays a fixed prologue/epilogue worth `k_fill`
/// elements of k; a perfectly filled shape reaches the dtype's `ceiling` of its peak. The library
/// picks the tile with the highest fraction. A grouped GEMM's tiles over all its groups share the
/// waves (one kernel, one tail). Optional in a profile (`achieved.gemm_shape`); without it the
/// `GemmEfficiency` curve applies.
struct GemmShapeModel {
  double sms = 0;
  Provenance sms_provenance = Provenance::kDatasheet;
  std::string sms_source;
  std::vector<GemmTile> tiles;
  double k_fill = 0;
  std::map<Dtype, double> ceiling;  ///< dtypes not listed use GemmEfficiency::max_fraction
  Provenance provenance = Provenance::kAssumed;
  std::string source;
  [[nodiscard]] bool enabled() const { return sms > 0 && !tiles.empty(); }
  /// The best mapping of `groups` GEMMs of m x n x k run as one kernel, at `ceiling`. Split-K is
  /// considered when the grid fills less than two waves and `flops_per_byte` (the dtype's peak
  /// over the achieved HBM rate) is given: every split count up to two waves (at most 16), its fp32
  /// partials costing 8 bytes per output element per split.
  /// `routed`: the groups are experts fed by a router, so each group's rows are not exactly m but
  /// vary from batch to batch; taken as uniform routing (Poisson, mean m: the least imbalance a
  /// router can have), each group needs E[ceil(rows / tile.m)] row tiles, not ceil(m / tile.m)
  /// (and never fewer).
  [[nodiscard]] GemmMapping map(double ceiling, double m, double n, double k, double groups = 1,
                                double flops_per_byte = 0, bool routed = false) const;
  bool operator==(const GemmShapeModel&) const = default;
};

/// One measured GEMM: achieved FLOP/s at a shape and dtype (from the probe's cuBLASLt sweep).
struct GemmPoint {
  Dtype dtype = Dtype::kBf16;
  double m = 0, n = 0, k = 0;
  double flops_per_s = 0;
  bool operator==(const GemmPoint&) const = default;
};

/// A collective's cost on this machine, measured or imported (nccl-tests): time = alpha +
/// bytes * bus_factor / busbw, fitted to `points` (bytes, seconds); sets the time of collectives of
/// its own scope (op, GPUs, boxes, fabric), whose flows still load the links (coll::plan_collective).
struct CollectiveCurve {
  std::string op;  ///< "allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"
  int gpus = 0;    ///< GPUs in the measured group, all nodes together
  /// Where it was measured: inside one box (1), or across `nodes` boxes (copies of the cluster
  /// file: servers, or NVLink domains such as an NVL72 rack) joined by `fabric`.
  int nodes = 1;
  std::string fabric;
  double alpha_s = 0;
  double busbw_bytes_per_s = 0;
  Provenance provenance = Provenance::kImported;
  std::string source;
  std::vector<std::pair<double, double>> points;
  bool operator==(const CollectiveCurve&) const = default;
};

/// Version 2 added the measured sections (device, gemm_table, collectives); version 1 files are
/// read as version 2 without them.
inline constexpr int kProfileSchemaVersion = 2;

/// Rates of one GPU model: peaks per dtype, HBM, and the achieved-rate parameters the compute and
/// collective models use. Datasheet figures cite their document; assumed ones state their basis.
struct HardwareProfile {
  std::string id;
  std::string gpu_name;
  Provenance origin = Provenance::kDatasheet;  ///< the profile as a whole: datasheet, measured, imported
  std::string source;
  std::map<Dtype, Rate> matrix_peak;  ///< FLOP/s, dense
  Rate hbm_capacity;                  ///< bytes usable by applications (as nvidia-smi reports)
  Rate hbm_bandwidth;                 ///< bytes/s, datasheet peak
  GemmEfficiency gemm;
  GemmShapeModel gemm_shape;         ///< when enabled, GEMM efficiency by tile and wave (else `gemm`)
  Rate attention_forward_fraction;   ///< achieved fraction of matrix peak in fused attention forward
  Rate attention_backward_fraction;  ///< ... and backward
  /// Flash-attention backward time over forward time at the same shape: how a measured forward
  /// (the attention tables) gives the backward when no measured backward table exists. Absent:
  /// the backward stays analytic (its FLOPs at attention_backward_fraction).
  std::optional<Rate> attention_backward_ratio;
  /// A grouped GEMM (MoE experts: one kernel over every local expert's rows) over one GEMM of the same
  /// rows stacked, in time: how the GEMM table (single GEMMs) gives a grouped kernel. Absent: 1.
  std::optional<Rate> grouped_gemm_ratio;
  /// Host (CPU) seconds a training framework spends per kernel it launches eagerly (Python, the
  /// dispatcher, autograd, the launch): a run of kernels between two collectives takes at least its
  /// kernel count times this, when the GPU would outrun the host. Absent: never host-bound.
  std::optional<Rate> host_kernel_issue;
  Rate hbm_fraction;           ///< achieved fraction of HBM bandwidth in streaming kernels
  Rate kernel_overhead;        ///< seconds added to every kernel (launch and tail)
  Rate collective_latency;     ///< seconds of fixed cost per collective call (NCCL launch, sync)
  Rate graph_kernel_overhead;  ///< seconds per kernel inside a CUDA graph (serving decode steps)
  Rate serving_step_overhead;  ///< seconds of host work per serving-engine iteration
  /// DeepEP's low-latency dispatch and combine kernels (decode): the fixed seconds each takes
  /// beyond what the flow model charges a collective of its bytes (signalling, per-expert counts,
  /// the receiver's polling and layout). Absent when no figure for this GPU exists.
  std::optional<Rate> deepep_ll_dispatch_floor;
  std::optional<Rate> deepep_ll_combine_floor;
  Rate runtime_reserved;                      ///< bytes taken by CUDA context, library workspaces, comm buffers
  std::map<std::string, std::string> device;  ///< measured device facts (name, SMs, clocks, versions)
  std::vector<GemmPoint> gemm_table;          ///< measured GEMM rates; when present they set GEMM times
  std::vector<CollectiveCurve> collectives;   ///< measured or imported collective costs
  /// Measured per-kernel latency tables (calibration/kernels/): when attached, GEMM and attention
  /// times come from them (interpolated, or scaled beyond their range) instead of the analytic
  /// curves above, which remain for what the tables do not hold.
  KernelTables kernel_tables;

  /// Achieved fraction of the dtype's peak for a GEMM (or `groups` equal GEMMs as one grouped
  /// kernel): interpolated from `gemm_table` when it has points of this dtype (each group's own
  /// shape), else the `gemm_shape` model when the profile has one, else the `gemm` curve.
  [[nodiscard]] double gemm_fraction(Dtype d, double m, double n, double k, double groups = 1,
                                     bool routed = false) const;
  /// The shape model's mapping of a GEMM of this dtype (requires `gemm_shape.enabled()`).
  [[nodiscard]] GemmMapping gemm_mapping(Dtype d, double m, double n, double k, double groups = 1,
                                         bool routed = false) const;
  /// The fraction a perfectly filled large GEMM of this dtype approaches (the shape model's
  /// ceiling, else the curve's maximum).
  [[nodiscard]] double gemm_ceiling(Dtype d) const;
  /// Where GEMM rates of this dtype come from.
  [[nodiscard]] Provenance gemm_provenance(Dtype d) const;
  /// The curve for an op over `gpus` GPUs, if the profile has one.
  [[nodiscard]] const CollectiveCurve* collective_curve(const std::string& op, int gpus) const;

  bool operator==(const HardwareProfile&) const = default;
  /// Peak for a dtype; throws InputError naming the profile if this GPU has no such matrix rate.
  [[nodiscard]] const Rate& peak(Dtype d) const;
};

/// Parses a dtype name ("bf16", "fp8"...); empty optional-like: returns false if unknown.
[[nodiscard]] bool parse_dtype(const std::string& name, Dtype& out);

}  // namespace cs::calib
