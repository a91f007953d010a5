#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calibration/profile/latency_table.hpp"

namespace cs::calib {

enum class Provenance;
enum class Dtype;

/// The measured tables a GPU can have, one CSV file each (calibration/kernels/README.md gives their
/// columns and units; the names and columns are NVIDIA aiconfigurator's, so its database and
/// `clustersim calibrate` write the same files).
enum class KernelTable : std::uint8_t {
  kGemm,                 ///< gemm_perf: a linear layer's GEMM by dtype and m, n, k
  kContextAttention,     ///< context_attention_perf: causal prefill attention (forward), as serving runs it
  kTrainAttention,       ///< train_attention_perf: causal attention as training runs it (forward)
  kTrainAttentionBwd,    ///< train_attention_bwd_perf: ... and its backward
  kGenerationAttention,  ///< generation_attention_perf: decode attention over a KV cache
  kContextMla,           ///< context_mla_perf: DeepSeek MLA prefill attention
  kGenerationMla,        ///< generation_mla_perf: DeepSeek MLA decode attention
  kMoe,                  ///< moe_perf: a fused MoE layer on one GPU
  kNccl,                 ///< nccl_perf: NCCL collectives in one node by size and GPU count
  kCustomAllReduce,      ///< custom_allreduce_perf: TensorRT-LLM's one-node all-reduce
  kDeepepLlDispatch,     ///< wideep_deepep_ll_perf (dispatch column): DeepEP low-latency dispatch
  kDeepepLlCombine,      ///< wideep_deepep_ll_perf (combine column)
};
inline constexpr int kKernelTables = 12;

/// How one table is read: its file, the columns joined into its key, its axes in lookup order,
/// and its latency column with the factor to seconds.
struct KernelTableSchema {
  KernelTable table = KernelTable::kGemm;
  const char* file = "";   ///< file stem: `<stem>.csv` or `<stem>.csv.gz`
  const char* group = "";  ///< the `use` group a profile names it by: gemm, attention, mla, moe, nccl, deepep
  std::vector<const char*> keys;
  std::vector<const char*> axes;
  const char* value = "latency";
  double to_seconds = 1e-3;  ///< latency columns are in ms; DeepEP's `_us` columns in us
};
[[nodiscard]] const KernelTableSchema& kernel_table_schema(KernelTable t);
/// Every table, in enum order.
[[nodiscard]] const std::array<KernelTable, kKernelTables>& all_kernel_tables();
/// The `use` groups a profile may name, in order.
[[nodiscard]] const std::vector<std::string>& kernel_table_groups();

/// Where the measured tables come from: a folder read on first use, one table at a time (the
/// reader lives in sim/config, the only code that reads files; this is its seam).
class KernelTableSource {
 public:
  virtual ~KernelTableSource() = default;
  /// The table, loaded on first use (thread-safe); nullptr when the folder has no such file.
  /// A malformed file throws InputError naming it, its line and column.
  [[nodiscard]] virtual const LatencyTable* table(KernelTable t) const = 0;
  /// Whether the folder holds the table's file (without loading it).
  [[nodiscard]] virtual bool has(KernelTable t) const = 0;
};

/// One folder of measured kernel tables a profile takes: which folder, which groups of tables it
/// takes from it (a profile may take only some, e.g. a GPU whose kernels are another SKU's: H800 =
/// H100 SXM silicon with fewer NVLinks takes GEMM and attention but not the NCCL tables), and why.
struct KernelTableRef {
  std::string id;                ///< a folder id under calibration/kernels/, or a path (relative to the profile)
  std::string dir;               ///< the folder as resolved (empty until the catalog attaches the tables)
  std::vector<std::string> use;  ///< groups taken (kernel_table_groups()); all when the profile lists none
  Provenance provenance{};
  std::string source;
  /// Whether the folder's low-precision GEMM rows (fp8, nvfp4) include quantising the bf16 input
  /// inside the timed call, as aiconfigurator's TensorRT-LLM `Linear` rows do; the probe's
  /// cuBLASLt rows take inputs already in FP8 (false).
  bool gemm_quantizes_input = true;
  std::shared_ptr<const KernelTableSource> data;  ///< null until attached: then no table is used

  /// The table when this reference takes its group and the folder has it; else nullptr.
  [[nodiscard]] const LatencyTable* table(KernelTable t) const;
  [[nodiscard]] bool uses(const std::string& group) const;
  /// Equal when they name the same folder and groups (the data is the folder's).
  bool operator==(const KernelTableRef& o) const {
    return id == o.id && use == o.use && provenance == o.provenance && source == o.source &&
           gemm_quantizes_input == o.gemm_quantizes_input;
  }
};

/// A profile's measured kernel tables: folders in order of preference (a calibrated box's own
/// tables first, then the public ones for what the probe did not measure). Each table comes from
/// the first folder that has it.
struct KernelTables {
  std::vector<KernelTableRef> refs;
  bool listed = false;  ///< written as an array in the profile (JSON pointers in messages say so)
  /// The folder that provides table `t`, or nullptr.
  [[nodiscard]] const KernelTableRef* source_of(KernelTable t) const;
  [[nodiscard]] const LatencyTable* table(KernelTable t) const;
  /// Whether any folder is attached (the simulator then asks the tables first).
  [[nodiscard]] bool attached() const;
  bool operator==(const KernelTables&) const = default;
};

/// The `gemm_dtype` a table keys a training or serving dtype by ("bfloat16", "fp8", "nvfp4"), or
/// empty when tables never hold it (fp16, tf32, fp32: those GEMMs stay analytic).
[[nodiscard]] std::string gemm_table_dtype(Dtype d);

/// The table a lookup reads and the key it reads under (the first kernel source, in order of
/// preference, with rows for the query): what `clustersim kernels` reports the coverage of. Each
/// table_* lookup below reads exactly this table and key.
struct TableKey {
  const LatencyTable* table = nullptr;
  std::string key;
  KernelTable kind = KernelTable::kGemm;
  std::string folder;  ///< the id of the folder it comes from
};

/// A GEMM from the table: `m` x `n` output, `k` reduction, one kernel.
[[nodiscard]] std::optional<KernelTime> table_gemm(const KernelTables& t, Dtype d, double m, double n, double k,
                                                   const LatencyTable::Model& model);
[[nodiscard]] std::optional<TableKey> gemm_key(const KernelTables& t, Dtype d);

/// Causal attention over whole prompts (prefill; training's forward), one layer on one GPU.
struct AttentionQuery {
  double batch = 1, seq = 0;       ///< sequences and their length (queries = keys, causal)
  double heads = 0, kv_heads = 0;  ///< on this GPU
  double head_dim = 128;           ///< qk head dimension (MLA: 192, its MHA form)
  double window = 0;               ///< sliding window (0: full)
  bool mla = false;                ///< DeepSeek MLA (the MLA tables)
  bool fp8 = false;                ///< FP8 attention compute and KV (serving); training is bf16
};
/// Forward time from context_attention_perf (or context_mla_perf): the serving engines' prefill.
[[nodiscard]] std::optional<KernelTime> table_context_attention(const KernelTables& t, const AttentionQuery& q,
                                                                const LatencyTable::Model& model);
[[nodiscard]] std::optional<TableKey> context_attention_key(const KernelTables& t, const AttentionQuery& q);
/// Training's attention (train_attention_perf, or its backward train_attention_bwd_perf) when a
/// folder has it; MLA as its multi-head form (head_dim 192 rows, v 128); nullopt otherwise.
[[nodiscard]] std::optional<KernelTime> table_train_attention(const KernelTables& t, const AttentionQuery& q,
                                                              bool backward, const LatencyTable::Model& model);
[[nodiscard]] std::optional<TableKey> train_attention_key(const KernelTables& t, const AttentionQuery& q,
                                                          bool backward);
/// Decode attention: `batch` sequences each attending `context` cached tokens (step = context - 1).
[[nodiscard]] std::optional<KernelTime> table_generation_attention(const KernelTables& t, const AttentionQuery& q,
                                                                   double context, const LatencyTable::Model& model);
[[nodiscard]] std::optional<TableKey> generation_attention_key(const KernelTables& t, const AttentionQuery& q);

/// A fused MoE layer on one GPU (TensorRT-LLM's): `tokens` entering it, the model's shape and
/// the split. Exact match on the shape (the table holds named models' shapes), tokens interpolated.
struct MoeQuery {
  std::string dtype = "bfloat16";  ///< moe_dtype
  bool gated = true;
  double tokens = 0, hidden = 0, inter = 0, topk = 0, experts = 0, tp = 1, ep = 1;
};
[[nodiscard]] std::optional<KernelTime> table_moe(const KernelTables& t, const MoeQuery& q);
[[nodiscard]] std::optional<TableKey> moe_key(const KernelTables& t, const MoeQuery& q);

/// An NCCL collective in one node from nccl_perf: `op` as the table names it (all_reduce,
/// all_gather, reduce_scatter, alltoall), `bytes` per rank in nccl-tests' convention (half rows,
/// else float rows, each counted in its elements).
[[nodiscard]] std::optional<KernelTime> table_nccl(const KernelTables& t, const std::string& op, int gpus,
                                                   double bytes);
/// ... its table and key, and the bytes per element its `message_size` counts (2 or 4).
[[nodiscard]] std::optional<TableKey> nccl_key(const KernelTables& t, const std::string& op, int gpus,
                                               double* element_bytes = nullptr);
/// TensorRT-LLM's custom all-reduce of `bytes` of bf16 per rank over `gpus` GPUs of one node.
[[nodiscard]] std::optional<KernelTime> table_custom_allreduce(const KernelTables& t, int gpus, double bytes);
[[nodiscard]] std::optional<TableKey> custom_allreduce_key(const KernelTables& t, int gpus);

}  // namespace cs::calib
