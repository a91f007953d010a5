#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

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
  Rate attention_forward_fraction;            ///< achieved fraction of matrix peak in fused attention forward
  Rate attention_backward_fraction;           ///< ... and backward
  Rate hbm_fraction;                          ///< achieved fraction of HBM bandwidth in streaming kernels
  Rate kernel_overhead;                       ///< seconds added to every kernel (launch and tail)
  Rate collective_latency;                    ///< seconds of fixed cost per collective call (NCCL launch, sync)
  Rate graph_kernel_overhead;                 ///< seconds per kernel inside a CUDA graph (serving decode steps)
  Rate serving_step_overhead;                 ///< seconds of host work per serving-engine iteration
  Rate runtime_reserved;                      ///< bytes taken by CUDA context, library workspaces, comm buffers
  std::map<std::string, std::string> device;  ///< measured device facts (name, SMs, clocks, versions)
  std::vector<GemmPoint> gemm_table;          ///< measured GEMM rates; when present they set GEMM times
  std::vector<CollectiveCurve> collectives;   ///< measured or imported collective costs

  /// Achieved fraction of the dtype's peak for a GEMM: interpolated from `gemm_table` when it has
  /// points of this dtype, else the `gemm` model.
  [[nodiscard]] double gemm_fraction(Dtype d, double m, double n, double k) const;
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
