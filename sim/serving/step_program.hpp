#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "models/ops/serving_ops.hpp"
#include "sim/core/comm_kinds.hpp"
#include "sim/core/sim_time.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "sim/workload/compute_model.hpp"

namespace cs::serving {

struct ServingLog;

/// The kinds of collective a stage's program holds, by label (the breakdown's keys, in its order):
/// TP all-reduce, all-gather and reduce-scatter, and DeepEP's dispatch and combine all-to-alls.
inline constexpr std::array<const char*, 5> kCollectiveLabels = {"tp.allreduce", "tp.allgather", "tp.reducescatter",
                                                                 "ep.dispatch", "ep.combine"};

/// A piece of a stage's program: kernels back to back (one compute task), or a TP collective.
struct Segment {
  SimTime compute{};
  bool collective = false;
  CollectiveOp op = CollectiveOp::kAllReduce;
  double bytes = 0;
  double node_copies = 1;  ///< DeepEP's normal kernels across nodes (models::Comm::node_copies)
  /// An all-to-all under uneven routing: each EP GPU's share of the step's routed pairs (the
  /// step's placement, kept by the builder for the run; null: even), and whether it is a combine
  /// (models::Comm::returning; workload::ep_alltoall_pairs). Set only with shares: an even
  /// exchange moves the same flows either way, so a dispatch and a combine of equal bytes share
  /// their remembered time.
  const std::vector<double>* dest_share = nullptr;
  bool returning = false;
  std::uint8_t kind = 0;  ///< index into kCollectiveLabels
};

/// A stage's program for one batch without repeating its layers: the step overhead (zero after
/// the first stage), `layers` copies of one layer's segments, the LM head's (last stage only).
struct StageProgram {
  SimTime overhead{};
  std::vector<Segment> layer;
  int layers = 0;
  std::vector<Segment> head;
  [[nodiscard]] std::size_t size() const { return 1 + layer.size() * static_cast<std::size_t>(layers) + head.size(); }
  /// The i-th segment in program order.
  [[nodiscard]] Segment at(std::size_t i) const {
    if (i == 0) return Segment{overhead};
    const std::size_t body = layer.size() * static_cast<std::size_t>(layers);
    return i - 1 < body ? layer[(i - 1) % layer.size()] : head[i - 1 - body];
  }
};

/// Where a stage sits in its replica: its layers and whether it runs the LM head.
struct StagePlace {
  int first_layer = 0, layers = 0;
  bool first = true, last = true;
};

/// Turns one engine step (a batch's mix on a replica of some shape) into its stages' programs: the
/// per-layer-kind serving ops of models/ops timed by the compute model (measured tables where the
/// profile has them), the MoE routing of the step's tokens, DeepEP's all-to-alls and the MTP
/// module. Knows nothing of the executor; remembers GEMM times by shape and routings by token
/// count for the run.
class StepProgramBuilder {
 public:
  explicit StepProgramBuilder(const ServingScenario& s);
  /// Builds the step of `mix` (and the MTP module's `mtp_mix`, when it has tokens) on a replica of
  /// `shape`. `counts_imbalance`: the step's MoE load imbalance enters the report's figures.
  /// `sequences`: the batch's sequences (the size a decode-only graph is captured for).
  void build(const models::ServingShape& shape, const models::StepMix& mix, const models::StepMix& mtp_mix,
             std::int64_t sequences, bool counts_imbalance);
  /// Whether a step of `mix` over `sequences` runs as a CUDA graph under the scenario's graph policy,
  /// and the rows it is padded by (ServingScenario::graphs; no sizes: every step as cuda_graphs
  /// says, unpadded).
  struct GraphChoice {
    bool graphed = false;
    double padding = 0;
  };
  [[nodiscard]] GraphChoice graph_for(const models::StepMix& mix, std::int64_t sequences) const;
  /// Steps run as CUDA graphs and eagerly so far.
  [[nodiscard]] std::int64_t graphed_steps() const { return graphed_steps_; }
  [[nodiscard]] std::int64_t eager_steps() const { return eager_steps_; }
  /// The program of a stage of the step last built.
  void stage_program(const StagePlace& place, StageProgram& out) const;
  /// Compute seconds by where each kernel's time came from, over every layer built so far.
  [[nodiscard]] const workload::SourceSeconds& sources() const { return sources_; }
  /// The most loaded EP GPU's routed pairs over the mean: summed and at its worst over the steps
  /// counted, and how many.
  [[nodiscard]] double load_sum() const { return load_sum_; }
  [[nodiscard]] double load_max() const { return load_max_; }
  [[nodiscard]] std::int64_t load_steps() const { return load_steps_; }
  /// Adds these counters (CUDA graphs, MoE load, compute sources and classes) to a run's log: a mixed fleet's
  /// two builders add theirs to one log.
  void count_into(ServingLog& log) const;

 private:
  /// Where a step's routed pairs fall: the pace-setting GPU's routing, the most loaded GPU's pairs
  /// over the mean, and (under EP with uneven GPUs) each GPU's share of the pairs.
  struct RoutedStep {
    models::StepRouting pace;
    double imbalance = 1;
    std::vector<double> gpu_share;
  };
  [[nodiscard]] const RoutedStep& routing_for(const models::ServingShape& shape, double tokens);
  [[nodiscard]] calib::KernelTime gemm_time(const models::Op& op) const;
  void to_segments(const std::vector<models::Item>& items, std::vector<Segment>& out,
                   const std::vector<double>* dest_share = nullptr, double runs = 1);

  const ServingScenario& s_;
  workload::ComputeModel gemm_, other_;              ///< kernels as `cuda_graphs` says (in a graph, by default)
  workload::ComputeModel gemm_eager_, other_eager_;  ///< kernels launched one by one
  bool graphed_ = true;                              ///< the step being built runs as a graph
  std::int64_t graphed_steps_ = 0, eager_steps_ = 0;
  SimTime step_overhead_;
  workload::SourceSeconds sources_{};
  workload::ClassSeconds classes_{};
  std::vector<Segment> layer_, head_;
  std::map<models::LayerKind, std::vector<Segment>> kind_layer_;  ///< per layer kind (models with several)
  /// A GEMM op's shape, bytes and dtype flags (its FLOPs follow from the shape).
  struct GemmKey {
    double m, n, k, groups, bytes;
    int flags;
    bool operator==(const GemmKey&) const = default;
  };
  struct GemmKeyHash {
    std::size_t operator()(const GemmKey& g) const;
  };
  mutable std::unordered_map<GemmKey, calib::KernelTime, GemmKeyHash> gemm_memo_;
  /// Per (EP, TP, routed token count); a std::map, so the shares the all-to-alls point at stay put.
  std::map<std::tuple<int, int, std::int64_t>, RoutedStep> routing_memo_;
  RoutedStep even_;  ///< balanced routing, and steps with no tokens
  double load_sum_ = 0, load_max_ = 0;
  std::int64_t load_steps_ = 0;
};

/// The breakdown index (kCollectiveLabels) of a stage collective: a combine is a returning all-to-all.
[[nodiscard]] std::uint8_t collective_kind(CollectiveOp op, bool returning);

}  // namespace cs::serving
