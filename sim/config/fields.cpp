#include "sim/config/fields.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "models/ops/recompute.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/core/check.hpp"
#include "sim/core/errors.hpp"

namespace cs::config {

namespace {

using J = nlohmann::ordered_json;
constexpr auto kT = ScenarioKind::kTrain;
constexpr auto kI = ScenarioKind::kInfer;
constexpr double kInt24 = 1 << 24;

std::string order_name(const std::array<char, 4>& o) {
  std::string out;
  for (char c : o)
    out += std::string(out.empty() ? "" : "-") + (c == 't' ? "tp" : c == 'c' ? "cp" : c == 'd' ? "dp" : "pp");
  return out;
}

// The entries name only what they set; every other member keeps its default (GCC warns about
// designated initializers that leave members out, which is the point here).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

// Training fields, in the order they are parsed (messages come out in this order).
std::vector<Field> training_fields() {
  using enum FieldType;
  return {
      {.kind = kT,
       .path = "/kind",
       .type = kEnum,
       .choices = {"train"},
       .fallback = "train",
       .default_text = "train",
       .meaning = "what the file describes: a training step (\"infer\": serving)",
       .resolved = [](const Scenario&) { return J("train"); }},
      {.kind = kT,
       .path = "/name",
       .type = kString,
       .fallback = "",
       .default_text = "(none)",
       .meaning = "a title for the report",
       .member = &ScenarioSpec::name,
       .resolved = [](const Scenario& s) { return J(s.name); }},
      {.kind = kT,
       .path = "/description",
       .type = kString,
       .fallback = "",
       .default_text = "(none)",
       .meaning = "a line printed under the title",
       .member = &ScenarioSpec::description,
       .resolved = [](const Scenario& s) { return J(s.description); }},
      {.kind = kT,
       .path = "/model",
       .type = kString,
       .required = true,
       .default_text = "(required)",
       .flag = "--model",
       .meaning = "model id (clustersim list models) or path to a HF config.json",
       .member = &ScenarioSpec::model,
       .resolved = [](const Scenario& s) { return J(s.model.id); }},
      {.kind = kT,
       .path = "/cluster",
       .type = kString,
       .required = true,
       .default_text = "(required)",
       .flag = "--cluster",
       .meaning = "cluster id (clustersim list clusters) or path: one node",
       .member = &ScenarioSpec::cluster,
       .resolved = [](const Scenario& s) { return J(s.cluster.id); }},
      {.kind = kT,
       .path = "/gpus",
       .type = kInt,
       .unit = "GPUs per node",
       .min = 1,
       .max = net::kMaxClusterGpus,
       .fallback = 0,
       .default_text = "all GPUs of the cluster",
       .flag = "--gpus",
       .meaning = "use the first N GPUs of each node",
       .member = &ScenarioSpec::gpus,
       .resolved = [](const Scenario& s) { return J(s.gpus_per_node); }},
      {.kind = kT,
       .path = "/nodes",
       .type = kInt,
       .unit = "nodes",
       .min = 1,
       .max = 100000,
       .fallback = 1,
       .default_text = "1",
       .flag = "--nodes",
       .meaning = "copies of the cluster joined by the fabric: nodes, or racks for a rack-scale NVLink domain such as "
                  "gb200-nvl72",
       .member = &ScenarioSpec::nodes,
       .resolved = [](const Scenario& s) { return J(s.nodes); }},
      {.kind = kT,
       .path = "/fabric",
       .type = kString,
       .fallback = "",
       .default_text = "none (required when nodes > 1)",
       .flag = "--fabric",
       .meaning = "fabric id or path joining the nodes (clustersim list fabrics)",
       .member = &ScenarioSpec::fabric,
       .resolved = [](const Scenario& s) { return s.fabric ? J(s.fabric->id) : J(nullptr); }},
      {.kind = kT,
       .path = "/profile",
       .type = kString,
       .fallback = "",
       .default_text = "the cluster's profile",
       .flag = "--profile",
       .meaning = "hardware profile id or path",
       .member = &ScenarioSpec::profile,
       .resolved = [](const Scenario& s) { return J(s.profile.id); }},
      {.kind = kT,
       .path = "/offer",
       .type = kString,
       .fallback = "",
       .default_text = "none (no cost figures)",
       .flag = "--offer",
       .meaning = "rental offer id or path, for cost figures",
       .member = &ScenarioSpec::offer,
       .resolved = [](const Scenario& s) { return s.offer ? J(s.offer->id) : J(nullptr); }},
      {.kind = kT,
       .path = "/parallel/tp",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 64,
       .required = true,
       .default_text = "(required)",
       .flag = "--tp",
       .meaning = "tensor-parallel degree",
       .member = &ScenarioSpec::tp,
       .resolved = [](const Scenario& s) { return J(s.plan.tp); }},
      {.kind = kT,
       .path = "/parallel/dp",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 65536,
       .fallback = 0,
       .default_text = "GPUs / (TP x PP x CP)",
       .flag = "--dp",
       .meaning = "data-parallel degree",
       .member = &ScenarioSpec::dp,
       .resolved = [](const Scenario& s) { return J(s.plan.dp); }},
      {.kind = kT,
       .path = "/parallel/pp",
       .type = kInt,
       .unit = "stages",
       .min = 1,
       .max = 1024,
       .fallback = 1,
       .default_text = "1",
       .flag = "--pp",
       .meaning = "pipeline-parallel stages",
       .member = &ScenarioSpec::pp,
       .resolved = [](const Scenario& s) { return J(s.plan.pp); }},
      {.kind = kT,
       .path = "/parallel/vpp",
       .type = kInt,
       .unit = "chunks per stage",
       .min = 1,
       .max = 64,
       .fallback = 1,
       .default_text = "1",
       .flag = "--vpp",
       .meaning = "model chunks per pipeline stage: interleaved 1F1B when > 1",
       .member = &ScenarioSpec::vpp,
       .resolved = [](const Scenario& s) { return J(s.plan.vpp); }},
      {.kind = kT,
       .path = "/parallel/cp",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 1024,
       .fallback = 1,
       .default_text = "1",
       .flag = "--cp",
       .meaning = "context parallelism: split each sequence over CP GPUs",
       .member = &ScenarioSpec::cp,
       .resolved = [](const Scenario& s) { return J(s.plan.cp); }},
      {.kind = kT,
       .path = "/parallel/ep",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 65536,
       .fallback = 1,
       .default_text = "1",
       .flag = "--ep",
       .meaning = "expert parallelism: each MoE layer's routed experts split over EP GPUs (EP x ETP divides TP x CP x "
                  "DP)",
       .member = &ScenarioSpec::ep,
       .resolved = [](const Scenario& s) { return J(s.plan.ep); }},
      {.kind = kT,
       .path = "/parallel/etp",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 64,
       .fallback = 1,
       .default_text = "1",
       .flag = "--etp",
       .meaning = "expert tensor parallelism: each expert's MLP split over ETP GPUs",
       .member = &ScenarioSpec::etp,
       .resolved = [](const Scenario& s) { return J(s.plan.etp); }},
      {.kind = kT,
       .path = "/parallel/rank_order",
       .type = kString,
       .fallback = "tp-cp-dp-pp",
       .default_text = "tp-cp-dp-pp",
       .flag = "--rank-order",
       .meaning = "placement: tp, cp, dp, pp innermost first, joined by '-' (the default keeps TP inside a node)",
       .member = &ScenarioSpec::rank_order,
       .resolved = [](const Scenario& s) { return J(order_name(s.plan.order)); }},
      {.kind = kT,
       .path = "/parallel/schedule",
       .type = kEnum,
       .choices = {"1f1b", "gpipe", "dualpipe"},
       .fallback = "1f1b",
       .default_text = "1f1b",
       .flag = "--schedule",
       .meaning = "pipeline schedule (dualpipe: DeepSeek-V3's bidirectional schedule, two model stages per rank; PP "
                  "even, VPP 1, micro-batches even and at least 2 PP)",
       .member = &ScenarioSpec::schedule,
       .resolved = [](const Scenario& s) { return J(plan::schedule_name(s.plan.schedule)); }},
      {.kind = kT,
       .path = "/parallel/sp",
       .type = kBool,
       .fallback = false,
       .default_text = "false",
       .flag = "--sp",
       .meaning = "sequence parallelism along the TP group (a no-op with TP 1)",
       .member = &ScenarioSpec::sp,
       .resolved = [](const Scenario& s) { return J(s.plan.sp); }},
      {.kind = kT,
       .path = "/parallel/tp_comm_overlap",
       .type = kBool,
       .fallback = false,
       .default_text = "false",
       .flag = "--tp-comm-overlap",
       .meaning = "tensor-parallel communication overlap as Transformer Engine's userbuffers run it (Megatron "
                  "--tp-comm-overlap): SP all-gathers as ring exchanges under the GEMM they feed, reduce-scatters "
                  "pipelined under the GEMM they drain or under the weight-gradient GEMM (needs sp; a no-op with TP 1)",
       .member = &ScenarioSpec::tp_comm_overlap,
       .resolved = [](const Scenario& s) { return J(s.tp_comm_overlap); }},
      {.kind = kT,
       .path = "/parallel/tp_overlap_comm_sms",
       .type = kNumber,
       .unit = "fraction of SMs",
       .min = 0,
       .max = 0.9,
       .fallback = 16.0 / 132.0,
       .default_text = "0.1212 (16 of an H100's 132 SMs: Transformer Engine's userbuffers default for pipelined and "
                       "bulk overlap)",
       .flag = "--tp-overlap-comm-sms",
       .meaning = "under TP communication overlap, the SMs the pipelined and bulk reduce-scatter kernels take from "
                  "the GEMMs beside them (those GEMMs run at 1 - this of their rate; ring exchanges use copy engines)",
       .member = &ScenarioSpec::tp_overlap_comm_sms,
       .resolved = [](const Scenario& s) { return J(s.tp_overlap_comm_sm_fraction); }},
      {.kind = kT,
       .path = "/parallel/cp_comm",
       .type = kEnum,
       .choices = {"ring", "allgather"},
       .fallback = "ring",
       .default_text = "ring",
       .flag = "--cp-comm",
       .meaning = "CP's K/V exchange: ring attention (blocks passed to the next rank, overlapped) or one all-gather",
       .member = &ScenarioSpec::cp_comm,
       .resolved = [](const Scenario& s) { return J(s.cp_ring ? "ring" : "allgather"); }},
      {.kind = kT,
       .path = "/parallel/zero",
       .type = kInt,
       .unit = "stage",
       .min = 0,
       .max = 3,
       .fallback = 0,
       .default_text = "0",
       .flag = "--zero",
       .meaning = "ZeRO stage: 0, 1 (optimizer state sharded over DP), 2 (+ gradients) or 3 (+ parameters, FSDP)",
       .member = &ScenarioSpec::zero,
       .resolved = [](const Scenario& s) { return J(s.plan.zero); }},
      {.kind = kT,
       .path = "/training/seq",
       .type = kInt,
       .unit = "tokens",
       .min = 1,
       .max = kInt24,
       .required = true,
       .default_text = "(required)",
       .flag = "--seq",
       .meaning = "sequence length",
       .member = &ScenarioSpec::seq,
       .resolved = [](const Scenario& s) { return J(s.seq); }},
      {.kind = kT,
       .path = "/training/global_batch",
       .type = kInt,
       .unit = "sequences",
       .min = 1,
       .max = kInt24,
       .required = true,
       .default_text = "(required)",
       .flag = "--global-batch",
       .meaning = "sequences per step",
       .member = &ScenarioSpec::global_batch,
       .resolved = [](const Scenario& s) { return J(s.global_batch); }},
      {.kind = kT,
       .path = "/training/micro_batch",
       .type = kInt,
       .unit = "sequences",
       .min = 1,
       .max = 65536,
       .fallback = 1,
       .default_text = "1",
       .flag = "--micro-batch",
       .meaning = "sequences per micro-batch",
       .member = &ScenarioSpec::micro_batch,
       .resolved = [](const Scenario& s) { return J(s.micro_batch); }},
      {.kind = kT,
       .path = "/training/dtype",
       .type = kEnum,
       .choices = {"bf16", "fp16", "fp8"},
       .fallback = "bf16",
       .default_text = "bf16",
       .flag = "--dtype",
       .meaning = "GEMM number format (fp8: FP8 GEMMs, bf16 activations and master state)",
       .member = &ScenarioSpec::dtype,
       .resolved = [](const Scenario& s) { return J(calib::dtype_name(s.dtype)); }},
      {.kind = kT,
       .path = "/training/fp8_recipe",
       .type = kEnum,
       .choices = {"delayed", "tensorwise"},
       .fallback = "delayed",
       .default_text = "delayed",
       .flag = "--fp8-recipe",
       .meaning = "how FP8 training scales its tensors (Megatron --fp8-recipe): delayed (Transformer Engine's "
                  "DelayedScaling, the amax taken inside each cast for the next step) or tensorwise (current "
                  "scaling, NeMo's FP8-CS: each tensor's amax read in a pass of its own before its cast)",
       .member = &ScenarioSpec::fp8_recipe,
       .resolved = [](const Scenario& s) { return J(s.fp8_current_scaling ? "tensorwise" : "delayed"); }},
      {.kind = kT,
       .path = "/training/grad_dtype",
       .type = kEnum,
       .choices = {"fp32", "bf16"},
       .fallback = "fp32",
       .default_text = "fp32",
       .flag = "--grad-dtype",
       .meaning = "main gradients, held and reduced over data parallel: fp32 (Megatron-LM's default under bf16) or "
                  "bf16",
       .member = &ScenarioSpec::grad_dtype,
       .resolved = [](const Scenario& s) { return J(s.grad_bytes == 2.0 ? "bf16" : "fp32"); }},
      {.kind = kT,
       .path = "/training/overlap_grad_reduce",
       .type = kBool,
       .fallback = true,
       .default_text = "true",
       .flag = "--overlap-grad-reduce",
       .meaning = "reduce each gradient bucket over data parallel as soon as the last micro-batch's backward has "
                  "produced it, under the rest of that backward (Megatron --overlap-grad-reduce, on in NeMo and "
                  "Megatron-Bridge recipes); false: every bucket after the whole backward, as Megatron-LM runs "
                  "without the flag",
       .member = &ScenarioSpec::overlap_grad_reduce,
       .resolved = [](const Scenario& s) { return J(s.overlap_grad_reduce); }},
      {.kind = kT,
       .path = "/training/grad_bucket_params",
       .type = kInt,
       .unit = "parameters",
       .min = 1,
       .max = static_cast<double>(std::int64_t{1} << 40),
       .fallback = 40000000,
       .default_text = "40000000",
       .flag = "--grad-bucket-params",
       .meaning = "parameters per data-parallel gradient bucket",
       .member = &ScenarioSpec::grad_bucket_params,
       .resolved = [](const Scenario& s) { return J(static_cast<std::int64_t>(s.grad_bucket_params)); }},
      {.kind = kT,
       .path = "/training/recompute",
       .type = kEnum,
       .choices = {"none", "selective", "full"},
       .fallback = "none",
       .default_text = "none",
       .flag = "--recompute",
       .meaning = "activation recompute",
       .member = &ScenarioSpec::recompute,
       .resolved =
           [](const Scenario& s) {
             return J(s.plan.recompute == plan::Recompute::kFull        ? "full"
                      : s.plan.recompute == plan::Recompute::kSelective ? "selective"
                                                                        : "none");
           }},
      {.kind = kT,
       .path = "/training/recompute_modules",
       .type = kString,
       .fallback = "",
       .default_text = "(none; core_attn under selective)",
       .flag = "--recompute-modules",
       .meaning = "selective recompute's modules, comma-separated, as Megatron-core names them: core_attn, mlp, moe, "
                  "moe_act, layernorm, mla_up_proj, shared_experts (each keeps less for backward and runs its forward "
                  "again before it); implies recompute selective",
       .member = &ScenarioSpec::recompute_modules,
       .resolved = [](const Scenario& s) { return J(models::RecomputeModules{s.plan.recompute_modules}.text()); }},
      {.kind = kT,
       .path = "/training/recompute_method",
       .type = kEnum,
       .choices = {"uniform", "block"},
       .fallback = "uniform",
       .default_text = "uniform",
       .flag = "--recompute-method",
       .meaning = "full recompute's layers (Megatron --recompute-method): uniform checkpoints every layer in groups "
                  "of recompute_num_layers; block recomputes only the first recompute_num_layers layers of each "
                  "pipeline stage's model chunk",
       .member = &ScenarioSpec::recompute_method,
       .resolved =
           [](const Scenario& s) {
             return J(s.plan.recompute_method == plan::RecomputeMethod::kBlock ? "block" : "uniform");
           }},
      {.kind = kT,
       .path = "/training/recompute_num_layers",
       .type = kInt,
       .unit = "layers",
       .min = 1,
       .max = 100000,
       .fallback = 1,
       .default_text = "1",
       .flag = "--recompute-num-layers",
       .meaning = "full recompute: the layers of a checkpointed group (uniform) or recomputed per model chunk (block)",
       .member = &ScenarioSpec::recompute_num_layers,
       .resolved = [](const Scenario& s) { return J(s.plan.recompute_layers); }},
      {.kind = kT,
       .path = "/training/activation_cache",
       .type = kEnum,
       .choices = {"bf16", "fp8"},
       .fallback = "bf16",
       .default_text = "bf16",
       .flag = "--activation-cache",
       .meaning = "activations kept for backward: bf16, or fp8 as DeepSeek-V3 caches the attention output and the "
                  "activation functions' inputs (arXiv:2412.19437 Sec. 3.3.2; with their cast kernels)",
       .member = &ScenarioSpec::activation_cache,
       .resolved = [](const Scenario& s) { return J(s.fp8_activation_cache ? "fp8" : "bf16"); }},
      {.kind = kT,
       .path = "/training/optimizer_dtype",
       .type = kEnum,
       .choices = {"fp32", "bf16"},
       .fallback = "fp32",
       .default_text = "fp32",
       .flag = "--optimizer-dtype",
       .meaning = "the Adam moments: fp32, or bf16 as DeepSeek-V3 keeps them (master weights stay fp32)",
       .member = &ScenarioSpec::optimizer_dtype,
       .resolved = [](const Scenario& s) { return J(s.optimizer_moment_bytes == 2 ? "bf16" : "fp32"); }},
      {.kind = kT,
       .path = "/training/ema",
       .type = kEnum,
       .choices = {"none", "gpu", "cpu"},
       .fallback = "none",
       .default_text = "none",
       .flag = "--ema",
       .meaning = "an fp32 moving average of the weights: none, on the GPU (sharded as the optimizer state), or in CPU "
                  "memory as DeepSeek-V3 keeps it (neither GPU memory nor GPU time)",
       .member = &ScenarioSpec::ema,
       .resolved =
           [](const Scenario& s) {
             return J(s.ema == Scenario::Ema::kGpu ? "gpu" : s.ema == Scenario::Ema::kCpu ? "cpu" : "none");
           }},
      {.kind = kT,
       .path = "/training/attention",
       .type = kEnum,
       .choices = {"flash", "unfused"},
       .fallback = "flash",
       .default_text = "flash",
       .flag = "--attention",
       .meaning = "flash (fused) or unfused (score matrix in HBM, as Megatron-LM before FlashAttention)",
       .member = &ScenarioSpec::attention,
       .resolved = [](const Scenario& s) { return J(s.flash_attention ? "flash" : "unfused"); }},
      {.kind = kT,
       .path = "/training/lora_rank",
       .type = kInt,
       .unit = "rank",
       .min = 0,
       .max = 65536,
       .fallback = 0,
       .default_text = "0 (full training)",
       .flag = "--lora-rank",
       .meaning = "LoRA fine-tuning: adapter rank on a frozen base",
       .member = &ScenarioSpec::lora_rank,
       .resolved = [](const Scenario& s) { return J(s.lora_rank); }},
      {.kind = kT,
       .path = "/training/qlora",
       .type = kBool,
       .fallback = false,
       .default_text = "false",
       .flag = "--qlora",
       .meaning = "QLoRA: the frozen base in 4 bits (needs lora_rank)",
       .member = &ScenarioSpec::qlora,
       .resolved = [](const Scenario& s) { return J(s.qlora); }},
      {.kind = kT,
       .path = "/moe/routing",
       .type = kString,
       .fallback = "balanced",
       .default_text = "balanced",
       .flag = "--routing",
       .meaning = "MoE routing: balanced, uniform (random top-k, seeded), zipf:S (popularity ~ rank^-S) or a "
                  "per-expert load file ({\"loads\": [...]})",
       .member = &ScenarioSpec::routing,
       .resolved = [](const Scenario& s) { return J(s.routing.text); }},
      {.kind = kT,
       .path = "/moe/dispatch_dtype",
       .type = kEnum,
       .choices = {"auto", "bf16", "fp8"},
       .fallback = "auto",
       .default_text = "auto: fp8 under FP8 training, else bf16",
       .flag = "--dispatch-dtype",
       .meaning = "number format of the MoE dispatch all-to-all (the combine stays bf16)",
       .member = &ScenarioSpec::dispatch_dtype,
       .resolved = [](const Scenario& s) { return J(s.routing.fp8_dispatch ? "fp8" : "bf16"); }},
      {.kind = kT,
       .path = "/moe/redundant_experts",
       .type = kInt,
       .unit = "experts",
       .min = 0,
       .max = 65536,
       .fallback = 0,
       .default_text = "0",
       .flag = "--redundant-experts",
       .meaning = "EPLB: extra expert slots holding copies of the most loaded experts (experts + K divisible by EP)",
       .member = &ScenarioSpec::redundant_experts,
       .resolved = [](const Scenario& s) { return J(s.routing.redundant_experts); }},
      {.kind = kT,
       .path = "/moe/two_batch_overlap",
       .type = kBool,
       .fallback = false,
       .default_text = "false",
       .flag = "--two-batch-overlap",
       .meaning = "MoE layers as two half-batches, each one's EP all-to-alls under the other's compute (needs EP > 1)",
       .member = &ScenarioSpec::two_batch_overlap,
       .resolved = [](const Scenario& s) { return J(s.two_batch_overlap); }},
      {.kind = kT,
       .path = "/moe/overlap_comm_sms",
       .type = kNumber,
       .unit = "fraction of SMs",
       .min = 0,
       .max = 0.9,
       .fallback = 20.0 / 132.0,
       .default_text = "0.1515 (20 of an H800's 132 SMs, DeepSeek-V3 technical report Sec. 3.2.2)",
       .flag = "--overlap-comm-sms",
       .meaning = "under two-batch overlap or in DualPipe's overlapped pairs, the SMs the all-to-all kernels take from "
                  "compute: MoE layers compute at 1 - this of their rate",
       .member = &ScenarioSpec::overlap_comm_sms,
       .resolved = [](const Scenario& s) { return J(s.overlap_comm_sm_fraction); }},
      {.kind = kT,
       .path = "/moe/seed",
       .type = kInt,
       .unit = "seed",
       .min = 0,
       .max = static_cast<double>(std::int64_t{1} << 40),
       .fallback = 1,
       .default_text = "1",
       .flag = "--routing-seed",
       .meaning = "seed of the uniform routing sample and of the zipf expert shuffle",
       .member = &ScenarioSpec::routing_seed,
       .resolved = [](const Scenario& s) { return J(static_cast<std::int64_t>(s.routing.seed)); }},
      {.kind = kT,
       .path = "/network_model",
       .type = kEnum,
       .choices = {"flow", "analytical"},
       .fallback = "flow",
       .default_text = "flow",
       .flag = "--network-model",
       .meaning = "flow (max-min sharing of every link) or analytical (each flow alone at its bottleneck)",
       .member = &ScenarioSpec::network_model,
       .resolved = [](const Scenario& s) { return J(net::network_model_name(s.network_model)); }},
      {.kind = kT,
       .path = "/symmetry",
       .type = kEnum,
       .choices = {"none", "dp"},
       .fallback = "none",
       .default_text = "none",
       .flag = "--symmetry",
       .meaning = "dp: simulate one data-parallel replica (its DP collectives still carry every replica's "
                  "traffic); faster, approximate, reported",
       .member = &ScenarioSpec::symmetry,
       .resolved = [](const Scenario& s) { return J(s.dp_symmetry ? "dp" : "none"); }},
      {.kind = kT,
       .path = "/allow_oom",
       .type = kBool,
       .fallback = false,
       .default_text = "false",
       .flag = "--allow-oom",
       .meaning = "simulate even when the plan does not fit in memory",
       .member = &ScenarioSpec::allow_oom,
       .resolved = [](const Scenario& s) { return J(s.allow_oom); }},
  };
}

// Serving fields, in the order they are parsed.
std::vector<Field> serving_fields() {
  using enum FieldType;
  return {
      {.kind = kI,
       .path = "/kind",
       .type = kEnum,
       .choices = {"infer"},
       .required = true,
       .default_text = "(required)",
       .meaning = "what the file describes: serving (\"train\": a training step)"},
      {.kind = kI,
       .path = "/name",
       .type = kString,
       .fallback = "",
       .default_text = "(none)",
       .meaning = "a title for the report"},
      {.kind = kI,
       .path = "/description",
       .type = kString,
       .fallback = "",
       .default_text = "(none)",
       .meaning = "a line describing the scenario (not printed)"},
      {.kind = kI,
       .path = "/model",
       .type = kString,
       .required = true,
       .default_text = "(required)",
       .flag = "--model",
       .meaning = "model id or path to a HF config.json"},
      {.kind = kI,
       .path = "/cluster",
       .type = kString,
       .required = true,
       .default_text = "(required)",
       .flag = "--cluster",
       .meaning = "cluster id or path"},
      {.kind = kI,
       .path = "/gpus",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = net::kMaxClusterGpus,
       .fallback = 0,
       .default_text = "what the plan needs: replicas x TP x PP",
       .flag = "--gpus",
       .meaning = "GPUs to use (all nodes together)"},
      {.kind = kI,
       .path = "/nodes",
       .type = kInt,
       .unit = "nodes",
       .min = 1,
       .max = 4096,
       .fallback = 1,
       .default_text = "1",
       .flag = "--nodes",
       .meaning = "copies of the cluster joined by the fabric; a multi-node run uses every GPU of its nodes, "
                  "replicas and their stages taking GPUs in order (a stage or TP group may span nodes)"},
      {.kind = kI,
       .path = "/fabric",
       .type = kString,
       .fallback = "",
       .default_text = "none (required when nodes > 1)",
       .flag = "--fabric",
       .meaning = "fabric id or path joining the nodes (clustersim list fabrics)"},
      {.kind = kI,
       .path = "/profile",
       .type = kString,
       .fallback = "",
       .default_text = "the cluster's profile",
       .flag = "--profile",
       .meaning = "hardware profile id or path"},
      {.kind = kI,
       .path = "/offer",
       .type = kString,
       .fallback = "",
       .default_text = "none (no cost figures)",
       .flag = "--offer",
       .meaning = "rental offer, for cost per million tokens"},
      {.kind = kI,
       .path = "/parallel/tp",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 512,
       .required = true,
       .default_text = "(required)",
       .flag = "--tp",
       .meaning = "tensor-parallel degree per replica"},
      {.kind = kI,
       .path = "/parallel/pp",
       .type = kInt,
       .unit = "stages",
       .min = 1,
       .max = 64,
       .fallback = 1,
       .default_text = "1",
       .flag = "--pp",
       .meaning = "pipeline stages per replica: layers split evenly, up to PP batches in flight (continuous "
                  "batching only)"},
      {.kind = kI,
       .path = "/parallel/replicas",
       .type = kInt,
       .unit = "replicas",
       .min = 1,
       .max = 64,
       .fallback = 1,
       .default_text = "1",
       .flag = "--replicas",
       .meaning = "data-parallel replicas behind a router"},
      {.kind = kI,
       .path = "/parallel/ep",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 512,
       .fallback = 1,
       .default_text = "1 (each expert split TP ways)",
       .flag = "--ep",
       .meaning = "MoE: 1 splits every expert TP ways; TP spreads whole experts over the replica's TP GPUs"},
      {.kind = kI,
       .path = "/parallel/dp_attention",
       .type = kBool,
       .fallback = false,
       .default_text = "false",
       .flag = "--dp-attention",
       .meaning =
           "attention data-parallel over the replica's TP GPUs (SGLang's DP attention): each runs attention with "
           "every head over its own sequences and holds their KV cache alone; the feed-forward stays split "
           "(TP, or EP = TP), tokens all-gathered before it and reduce-scattered after"},
      {.kind = kI,
       .path = "/parallel/moe_a2a",
       .type = kEnum,
       .choices = {"allgather", "deepep"},
       .fallback = "allgather",
       .default_text = "allgather",
       .flag = "--moe-a2a",
       .meaning = "under --dp-attention with EP = TP, the MoE exchange: allgather (every token to every GPU, "
                  "reduce-scatter back) or deepep (DeepEP's normal dispatch and combine: each token only to the "
                  "GPUs holding its experts; shared experts whole on every GPU)"},
      {.kind = kI,
       .path = "/moe/routing",
       .type = kString,
       .fallback = "balanced",
       .default_text = "balanced",
       .flag = "--routing",
       .meaning = "MoE routing of each step's tokens: balanced (every GPU's share equal), uniform (random top-k of "
                  "the step's tokens, seeded), zipf:S (popularity ~ rank^-S) or a per-expert load file "
                  "({\"loads\": [...]}); under EP the most loaded GPU sets each MoE layer's pace"},
      {.kind = kI,
       .path = "/moe/redundant_experts",
       .type = kInt,
       .unit = "experts",
       .min = 0,
       .max = 65536,
       .fallback = 0,
       .default_text = "0",
       .flag = "--redundant-experts",
       .meaning = "EPLB: extra expert slots over the EP GPUs holding copies of the most loaded experts (experts + K "
                  "divisible by EP; the copies' weights are counted)"},
      {.kind = kI,
       .path = "/moe/seed",
       .type = kInt,
       .unit = "seed",
       .min = 0,
       .max = static_cast<double>(std::int64_t{1} << 40),
       .fallback = 1,
       .default_text = "1",
       .flag = "--routing-seed",
       .meaning = "seed of the uniform routing samples and of the zipf expert shuffle"},
      {.kind = kI,
       .path = "/quantization/weights",
       .type = kEnum,
       .choices = {"bf16", "fp8", "int8", "int4", "fp4", "mxfp4"},
       .fallback = "bf16",
       .default_text = "bf16",
       .flag = "--weights",
       .meaning = "weight format (embedding and LM head stay bf16): fp8 W8A8 on the FP8 tensor cores; "
                  "int8/int4 weight-only (dequantised to bf16); fp4 = NVFP4 (E2M1, an E4M3 scale per 16 "
                  "values: 0.5625 bytes/param), mxfp4 = OCP MXFP4 (E2M1, an E8M0 scale per 32: 0.53125 "
                  "bytes/param), on the FP4 tensor cores where the GPU has them (activations quantised "
                  "to FP4), else weight-only like int4"},
      {.kind = kI,
       .path = "/quantization/activation_scales",
       .type = kEnum,
       .choices = {"dynamic", "static"},
       .fallback = "dynamic",
       .default_text = "dynamic",
       .flag = "--activation-scales",
       .meaning = "fp8 weights: how each GEMM's input is quantised: dynamic (a per-tensor scale computed every "
                  "call, as the kernel tables time FP8 GEMMs, and as online quantisation runs) or static (the "
                  "scales calibrated into the checkpoint, as TensorRT Model Optimizer's FP8 checkpoints such as "
                  "nvidia/Llama-3.1-8B-Instruct-FP8 hold them: no amax pass, the table's time less it)"},
      {.kind = kI,
       .path = "/quantization/kv_dtype",
       .type = kEnum,
       .choices = {"bf16", "fp8"},
       .fallback = "bf16",
       .default_text = "bf16",
       .flag = "--kv-dtype",
       .meaning = "KV-cache number format"},
      {.kind = kI,
       .path = "/engine/preset",
       .type = kString,
       .default_text = "none (clustersim's own defaults, below)",
       .flag = "--engine",
       .meaning =
           "serve as this engine ships: vllm, sglang or trtllm (scenarios/engines/<id>.json, each value with its "
           "source): its scheduler, token budget, chunked prefill, sequence cap, KV-cache memory rule, block "
           "size, CUDA-graph batch sizes and TP all-reduce kernel; any engine field given as well overrides the "
           "preset's"},
      {.kind = kI,
       .path = "/engine/scheduler",
       .type = kEnum,
       .choices = {"continuous", "static", "prefill_first", "no_evict"},
       .fallback = "continuous",
       .default_text = "continuous (or the preset's)",
       .flag = "--scheduler",
       .meaning = "continuous: one token budget per step, running requests first, recompute preemption (vLLM); "
                  "static: batches run to completion; prefill_first: a prefill step whenever one can be formed, else "
                  "a decode step (SGLang); no_evict: admit a request only when its blocks to completion fit, "
                  "prompts and decodes in one step (TensorRT-LLM's GUARANTEED_NO_EVICT)"},
      {.kind = kI,
       .path = "/engine/max_batch",
       .type = kInt,
       .unit = "sequences",
       .min = 1,
       .max = 1 << 20,
       .fallback = 256,
       .default_text = "256",
       .flag = "--max-batch",
       .meaning = "most sequences per engine step (vLLM max_num_seqs)"},
      {.kind = kI,
       .path = "/engine/max_tokens",
       .type = kInt,
       .unit = "tokens",
       .min = 1,
       .max = kInt24,
       .fallback = 8192,
       .default_text = "8192",
       .flag = "--max-tokens",
       .meaning = "most tokens per engine step (vLLM max_num_batched_tokens)"},
      {.kind = kI,
       .path = "/engine/chunked_prefill",
       .type = kInt,
       .unit = "tokens",
       .min = 0,
       .max = kInt24,
       .fallback = 0,
       .default_text = "0 (off)",
       .flag = "--chunked-prefill",
       .meaning = "chunk prompts: at most this many tokens of one prompt per step"},
      {.kind = kI,
       .path = "/engine/mtp_acceptance",
       .type = kNumber,
       .unit = "probability",
       .min = 0,
       .max = 1,
       .fallback = 0.0,
       .default_text = "0 (off)",
       .flag = "--mtp-acceptance",
       .meaning = "MTP speculative decoding with the model's multi-token-prediction module as a one-token draft: the "
                  "chance each draft token is accepted (DeepSeek-V3 reports 85-90%); every decode step verifies two "
                  "tokens per sequence and runs the module once (needs num_nextn_predict_layers)"},
      {.kind = kI,
       .path = "/engine/kv_fraction",
       .type = kNumber,
       .unit = "fraction",
       .min = 0.05,
       .max = 1.0,
       .fallback = 0.9,
       .default_text = "0.9",
       .flag = "--kv-fraction",
       .meaning = "fraction of the memory left after weights given to the KV cache"},
      {.kind = kI,
       .path = "/engine/block_size",
       .type = kInt,
       .unit = "tokens",
       .min = 1,
       .max = 4096,
       .fallback = 16,
       .default_text = "16",
       .meaning = "tokens per paged KV block"},
      {.kind = kI,
       .path = "/engine/router",
       .type = kEnum,
       .choices = {"round_robin", "least_loaded", "prefix_aware"},
       .fallback = "round_robin",
       .default_text = "round_robin",
       .flag = "--router",
       .meaning = "how requests are spread over replicas: in turn, to the fewest requests, or (prefix_aware, as "
                  "SGLang's cache-aware router) a shared prefix to the least loaded replica it was sent to before "
                  "unless the replicas' loads are out of balance"},
      {.kind = kI,
       .path = "/engine/prefix_caching",
       .type = kBool,
       .fallback = true,
       .default_text = "true (or the preset's: on in all three engines)",
       .meaning = "a shared prompt prefix, once computed, stays in the replica's KV cache and later requests "
                  "starting with it skip computing it (vLLM's prefix caching in whole blocks; SGLang's radix "
                  "cache and TensorRT-LLM's block reuse to the last token); unpinned prefixes count as free and "
                  "are evicted least recently used first"},
      {.kind = kI,
       .path = "/engine/cuda_graphs",
       .type = kBool,
       .fallback = true,
       .default_text = "true",
       .meaning = "decode steps run as CUDA graphs (the profile's per-kernel graph overhead)"},
      {.kind = kI,
       .path = "/engine/cuda_graph_max_batch",
       .type = kInt,
       .unit = "sequences",
       .min = 1,
       .max = 1048576,
       .fallback = 0,
       .default_text = "the preset's (needs engine.preset)",
       .meaning = "the largest batch the engine captures as a CUDA graph (vLLM's largest capture size, SGLang "
                  "cuda_graph_max_bs, TensorRT-LLM cuda_graph_config.max_batch_size): the captured sizes follow "
                  "the preset's own generator up to it, and SGLang's memory reserve counts it"},
      {.kind = kI,
       .path = "/engine/cuda_graph_padding",
       .type = kBool,
       .fallback = false,
       .default_text = "the preset's (needs engine.preset)",
       .meaning = "a batch between captured sizes is padded up to the next (else only an exact size runs as a "
                  "graph); TensorRT-LLM's generator makes another list with padding (enable_padding)"},
      {.kind = kI,
       .path = "/engine/custom_allreduce",
       .type = kBool,
       .fallback = false,
       .default_text = "false (or the preset's: true for trtllm)",
       .meaning = "TP all-reduces inside a node run as TensorRT-LLM's own all-reduce (strategy AUTO: its one-shot "
                  "and two-shot kernels for small messages, NCCL above), timed by the profile's custom_allreduce "
                  "kernel table where it has one; false: NCCL's table or the flow model"},
      {.kind = kI,
       .path = "/workload/trace_file",
       .type = kString,
       .default_text = "none",
       .flag = "--trace-file",
       .meaning = "CSV or JSONL of arrival_s, input_tokens, output_tokens (one of rate, concurrency, trace_file)"},
      {.kind = kI,
       .path = "/workload/input_len",
       .type = kLength,
       .unit = "tokens",
       .required = true,
       .default_text = "(required without trace_file)",
       .flag = "--input-len",
       .meaning = "prompt tokens: N, or LO-HI drawn uniformly"},
      {.kind = kI,
       .path = "/workload/output_len",
       .type = kLength,
       .unit = "tokens",
       .required = true,
       .default_text = "(required without trace_file)",
       .flag = "--output-len",
       .meaning = "output tokens: N, or LO-HI drawn uniformly"},
      {.kind = kI,
       .path = "/workload/requests",
       .type = kInt,
       .unit = "requests",
       .min = 1,
       .max = 100000000,
       .required = true,
       .default_text = "(required without trace_file)",
       .flag = "--requests",
       .meaning = "number of requests"},
      {.kind = kI,
       .path = "/workload/concurrency",
       .type = kInt,
       .unit = "requests",
       .min = 1,
       .max = 1 << 20,
       .required = true,
       .default_text = "none",
       .flag = "--concurrency",
       .meaning = "closed loop: this many requests in flight (one of rate, concurrency, trace_file)"},
      {.kind = kI,
       .path = "/workload/rate",
       .type = kRate,
       .unit = "requests/s",
       .default_text = "none",
       .flag = "--rate",
       .meaning = "Poisson arrivals at this rate, or \"inf\": all queued at once (one of rate, concurrency, "
                  "trace_file)"},
      {.kind = kI,
       .path = "/workload/shared_prefix/tokens",
       .type = kInt,
       .unit = "tokens",
       .min = 1,
       .max = 1e7,
       .required = true,
       .default_text = "none (no shared prefix)",
       .flag = "--shared-prefix",
       .meaning = "every prompt starts with one of `groups` shared prefixes of this many tokens (a system prompt, "
                  "a few-shot preamble); shorter than the shortest prompt"},
      {.kind = kI,
       .path = "/workload/shared_prefix/groups",
       .type = kInt,
       .min = 1,
       .max = 1e6,
       .fallback = 1,
       .default_text = "1",
       .flag = "--prefix-groups",
       .meaning = "distinct shared prefixes; each request's drawn uniformly with the workload's seed (a stream "
                  "of its own: the lengths drawn stay as without prefixes)"},
      {.kind = kI,
       .path = "/workload/seed",
       .type = kInt,
       .min = 0,
       .max = static_cast<double>(std::int64_t{1} << 62),
       .fallback = 1,
       .default_text = "1",
       .flag = "--seed",
       .meaning = "seed for Poisson arrivals and length draws"},
      {.kind = kI,
       .path = "/slo/ttft",
       .type = kTime,
       .unit = "s",
       .min = 1e-9,
       .default_text = "none",
       .flag = "--slo-ttft",
       .meaning = "time-to-first-token objective, e.g. \"500 ms\""},
      {.kind = kI,
       .path = "/slo/tpot",
       .type = kTime,
       .unit = "s",
       .min = 1e-9,
       .default_text = "none",
       .flag = "--slo-tpot",
       .meaning = "time-per-output-token objective, e.g. \"50 ms\""},
      {.kind = kI,
       .path = "/disaggregate/prefill",
       .type = kInt,
       .unit = "replicas",
       .min = 1,
       .max = 64,
       .required = true,
       .default_text = "none (not disaggregated)",
       .flag = "--disaggregate",
       .meaning = "prefill replicas; the flag takes PREFILL:DECODE (1:1) or with each pool's TP (2x1:1x4); with EP > 1 "
                  "each pool spreads its experts over its own TP GPUs"},
      {.kind = kI,
       .path = "/disaggregate/decode",
       .type = kInt,
       .unit = "replicas",
       .min = 1,
       .max = 64,
       .required = true,
       .default_text = "none (not disaggregated)",
       .flag = "--disaggregate",
       .meaning = "decode replicas (disaggregated serving)"},
      {.kind = kI,
       .path = "/disaggregate/prefill_tp",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 512,
       .fallback = 0,
       .default_text = "the scenario's TP",
       .flag = "--disaggregate",
       .meaning = "TP of each prefill replica"},
      {.kind = kI,
       .path = "/disaggregate/decode_tp",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 512,
       .fallback = 0,
       .default_text = "the scenario's TP",
       .flag = "--disaggregate",
       .meaning = "TP of each decode replica"},
      {.kind = kI,
       .path = "/disaggregate/prefill_pp",
       .type = kInt,
       .unit = "stages",
       .min = 1,
       .max = 64,
       .fallback = 0,
       .default_text = "the scenario's PP",
       .meaning = "PP of each prefill replica"},
      {.kind = kI,
       .path = "/disaggregate/decode_pp",
       .type = kInt,
       .unit = "stages",
       .min = 1,
       .max = 64,
       .fallback = 0,
       .default_text = "the scenario's PP",
       .meaning = "PP of each decode replica"},
      {.kind = kI,
       .path = "/disaggregate/prefill_ep",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 512,
       .fallback = 0,
       .default_text = "the prefill TP when the scenario's EP > 1, else 1",
       .meaning = "EP of each prefill replica: 1 (each expert split TP ways) or its TP (whole experts over its GPUs)"},
      {.kind = kI,
       .path = "/disaggregate/decode_ep",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 512,
       .fallback = 0,
       .default_text = "the decode TP when the scenario's EP > 1, else 1",
       .meaning = "EP of each decode replica: 1 (each expert split TP ways) or its TP (whole experts over its GPUs)"},
      {.kind = kI,
       .path = "/mix/cluster",
       .type = kString,
       .required = true,
       .default_text = "none (one box kind)",
       .flag = "--mix-cluster",
       .meaning = "a mixed fleet: the second box kind (cluster id or path) whose replicas serve beside the "
                  "scenario's own behind the same router, each inside one of its boxes; with disaggregation, the "
                  "decode pool's hardware"},
      {.kind = kI,
       .path = "/mix/replicas",
       .type = kInt,
       .unit = "replicas",
       .min = 1,
       .max = 64,
       .required = true,
       .default_text = "none (one box kind)",
       .flag = "--mix-replicas",
       .meaning = "replicas of the second box kind"},
      {.kind = kI,
       .path = "/mix/tp",
       .type = kInt,
       .unit = "GPUs",
       .min = 1,
       .max = 64,
       .fallback = 0,
       .default_text = "the scenario's TP",
       .flag = "--mix-tp",
       .meaning = "TP of each second-kind replica (at most the GPUs of its box)"},
      {.kind = kI,
       .path = "/mix/profile",
       .type = kString,
       .fallback = "",
       .default_text = "the second cluster's profile",
       .flag = "--mix-profile",
       .meaning = "hardware profile id or path of the second box kind"},
      {.kind = kI,
       .path = "/mix/offer",
       .type = kString,
       .fallback = "",
       .default_text = "none (no cost figures unless both kinds have one)",
       .flag = "--mix-offer",
       .meaning = "rental offer of the second box kind (cost needs an offer for both kinds)"},
      {.kind = kI,
       .path = "/mix/link",
       .type = kString,
       .fallback = "",
       .default_text = "none (required with disaggregation)",
       .flag = "--mix-link",
       .meaning = "disaggregated: the fabric joining the prefill pool's box and the decode pool's boxes of the second "
                  "kind, which the KV caches cross (e.g. eth-100g for two rentals)"},
      {.kind = kI,
       .path = "/allow_oom",
       .type = kBool,
       .fallback = false,
       .default_text = "false",
       .flag = "--allow-oom",
       .meaning = "simulate even when a request cannot fit"},
  };
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

std::string range_text(const Field& f) {
  std::ostringstream s;
  switch (f.type) {
    case FieldType::kInt:
      s << static_cast<std::int64_t>(f.min) << " to " << static_cast<std::int64_t>(f.max);
      return s.str();
    case FieldType::kNumber: s << f.min << " to " << f.max; return s.str();
    case FieldType::kEnum: {
      std::string out;
      for (const auto& c : f.choices) out += (out.empty() ? "" : ", ") + c;
      return out;
    }
    case FieldType::kTime: return "a time, at least 1 ns";
    case FieldType::kLength: return ">= 1, or LO-HI with 1 <= LO <= HI";
    case FieldType::kRate: return "> 0, or \"inf\"";
    case FieldType::kBool: return "true, false";
    case FieldType::kString: return "";
  }
  return "";
}

std::string dotted(const std::string& pointer) {
  std::string out = pointer.substr(1);
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

/// Command-line JSON through the same checked parser as files (depth, duplicate keys, number
/// range); nothing when the text is not such JSON, so the caller takes it as plain text.
std::optional<nlohmann::json> checked_json(const std::string& text) {
  try {
    return parse_text(text, "command line: --set").json;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

}  // namespace

const char* scenario_kind_name(ScenarioKind k) {
  switch (k) {
    case ScenarioKind::kTrain: return "train";
    case ScenarioKind::kInfer: return "infer";
  }
  return "?";
}

const char* field_type_name(FieldType t) {
  switch (t) {
    case FieldType::kString: return "string";
    case FieldType::kEnum: return "enum";
    case FieldType::kInt: return "integer";
    case FieldType::kNumber: return "number";
    case FieldType::kBool: return "boolean";
    case FieldType::kTime: return "time";
    case FieldType::kLength: return "length";
    case FieldType::kRate: return "rate";
  }
  return "?";
}

std::string Field::key() const { return path.substr(path.rfind('/') + 1); }
std::string Field::object() const { return path.substr(0, path.rfind('/')); }

const std::vector<Field>& scenario_fields() {
  static const std::vector<Field> all = [] {
    auto out = training_fields();
    auto s = serving_fields();
    out.insert(out.end(), s.begin(), s.end());
    return out;
  }();
  return all;
}

std::vector<const Field*> fields_of(ScenarioKind kind) {
  std::vector<const Field*> out;
  for (const auto& f : scenario_fields()) {
    if (f.kind == kind) out.push_back(&f);
  }
  return out;
}

std::string pointer_from_path(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  std::string out = "/";
  for (char c : path) out += (c == '.') ? '/' : c;
  return out;
}

const Field* find_field(ScenarioKind kind, const std::string& path) {
  const std::string p = pointer_from_path(path);
  for (const auto& f : scenario_fields()) {
    if (f.kind == kind && f.path == p) return &f;
  }
  return nullptr;
}

const Field& field(ScenarioKind kind, const std::string& path) {
  const Field* f = find_field(kind, path);
  CS_ASSERT(f != nullptr, ("no field " + path + " in the field table").c_str());
  return *f;
}

const std::string& flag_of(ScenarioKind kind, const std::string& path) { return field(kind, path).flag; }

std::int64_t read_int(Reader& r, const Field& f) {
  CS_ASSERT(f.type == FieldType::kInt, (f.path + " is not an integer field").c_str());
  const auto lo = static_cast<std::int64_t>(f.min), hi = static_cast<std::int64_t>(f.max);
  if (f.required) return r.req_int(f.key(), lo, hi);
  return r.opt_int(f.key(), lo, hi, f.fallback.get<std::int64_t>());
}

double read_number(Reader& r, const Field& f) {
  CS_ASSERT(f.type == FieldType::kNumber, (f.path + " is not a number field").c_str());
  if (f.required) return r.req_number(f.key(), f.min, f.max);
  return r.opt_number(f.key(), f.min, f.max, f.fallback.get<double>());
}

bool read_bool(Reader& r, const Field& f) {
  CS_ASSERT(f.type == FieldType::kBool, (f.path + " is not a boolean field").c_str());
  if (f.required) return r.req_bool(f.key());
  return r.opt_bool(f.key(), f.fallback.get<bool>());
}

std::string read_string(Reader& r, const Field& f) {
  if (f.type == FieldType::kEnum) {
    if (f.required) return r.req_enum(f.key(), f.choices);
    return r.opt_enum(f.key(), f.choices, f.fallback.get<std::string>());
  }
  CS_ASSERT(f.type == FieldType::kString, (f.path + " is not a string field").c_str());
  if (f.required) return r.req_string(f.key());
  return r.opt_string(f.key(), f.fallback.is_string() ? f.fallback.get<std::string>() : std::string());
}

nlohmann::json read_field(Reader& r, const Field& f) {
  switch (f.type) {
    case FieldType::kString:
    case FieldType::kEnum: return read_string(r, f);
    case FieldType::kInt: return read_int(r, f);
    case FieldType::kNumber: return read_number(r, f);
    case FieldType::kBool: return read_bool(r, f);
    case FieldType::kTime:
      if (!f.required && !r.has(f.key())) return f.fallback;
      return r.req_quantity(f.key(), Dimension::kTime, f.min);
    case FieldType::kLength:
    case FieldType::kRate: break;
  }
  CS_ASSERT(false, (f.path + ": lengths and rates are read by the serving parser").c_str());
  return nullptr;
}

nlohmann::json value_from_text(const Field* f, const std::string& text) {
  if (f && (f->type == FieldType::kString || f->type == FieldType::kEnum || f->type == FieldType::kTime)) {
    // A quoted JSON string is taken unquoted, anything else as written.
    const auto v = checked_json(text);
    return v && v->is_string() ? *v : nlohmann::json(text);
  }
  if (f && f->type == FieldType::kLength && !text.empty() &&
      text.find_first_not_of("0123456789") == std::string::npos) {
    std::int64_t n = 0;
    if (std::from_chars(text.data(), text.data() + text.size(), n).ec == std::errc{}) return n;
  }
  if (f && f->type == FieldType::kLength) return text;
  if (f && f->type == FieldType::kRate) {
    // A finite number is a rate; anything else ("inf", a typo) goes to the parser as text.
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (!text.empty() && end && *end == '\0' && std::isfinite(v)) return v;
    return text;
  }
  const auto value = checked_json(text);
  return value ? *value : nlohmann::json(text);
}

std::string describe_field(const Field& f) {
  std::ostringstream s;
  s << dotted(f.path) << " (" << scenario_kind_name(f.kind) << ")\n";
  s << "  meaning: " << f.meaning << "\n";
  s << "  type:    " << field_type_name(f.type);
  if (!f.unit.empty()) s << ", in " << f.unit;
  s << "\n";
  const auto range = range_text(f);
  if (!range.empty()) s << "  values:  " << range << "\n";
  s << "  default: " << f.default_text << "\n";
  s << "  flag:    "
    << (f.flag.empty() ? "(none; set it in the file or with --set " + dotted(f.path) + "=...)" : f.flag) << "\n";
  s << "  JSON:    " << f.path << "\n";
  return s.str();
}

std::string describe_all() {
  std::ostringstream s;
  for (auto kind : {ScenarioKind::kTrain, ScenarioKind::kInfer}) {
    s << "\"kind\": \"" << scenario_kind_name(kind) << "\" scenario fields (clustersim describe FIELD for one):\n";
    std::size_t width = 0;
    for (const auto* f : fields_of(kind)) width = std::max(width, dotted(f->path).size());
    for (const auto* f : fields_of(kind)) {
      const auto name = dotted(f->path);
      s << "  " << name << std::string(width - name.size() + 2, ' ') << f->meaning << "\n";
    }
    if (kind == ScenarioKind::kTrain) s << "\n";
  }
  return s.str();
}

std::string config_reference_markdown() {
  std::ostringstream s;
  s << "# Scenario fields\n\n"
    << "Generated from the field table (sim/config/fields.cpp) by `clustersim describe --markdown`;\n"
    << "do not edit by hand (a test fails when this file is stale). `clustersim describe FIELD`\n"
    << "prints one entry. A field is written in JSON at its path (`parallel.tp` is\n"
    << "`{\"parallel\": {\"tp\": ...}}`), set with `--set parallel.tp=4`, or with its flag.\n"
    << "Times are strings with a unit (\"500 ms\").\n";
  for (auto kind : {ScenarioKind::kTrain, ScenarioKind::kInfer}) {
    s << "\n## \"kind\": \"" << scenario_kind_name(kind) << "\" (`clustersim "
      << (kind == ScenarioKind::kTrain ? "train" : "infer") << "`)\n\n";
    s << "| field | type | unit | values | default | flag | meaning |\n|---|---|---|---|---|---|---|\n";
    for (const auto* f : fields_of(kind)) {
      auto cell = [](std::string t) {
        std::string out;
        for (char c : t) out += c == '|' ? std::string("\\|") : std::string(1, c);
        return out;
      };
      s << "| `" << dotted(f->path) << "` | " << field_type_name(f->type) << " | " << cell(f->unit) << " | "
        << cell(range_text(*f)) << " | " << cell(f->default_text) << " | "
        << (f->flag.empty() ? std::string() : "`" + f->flag + "`") << " | " << cell(f->meaning) << " |\n";
    }
  }
  return s.str();
}

}  // namespace cs::config
