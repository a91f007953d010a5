// The seed article's claims 1-12 (shared/seed/DIGEST.md): each claim's scenarios, the figures we
// compute from their runs, and the rule that compares those figures with the numbers the claim
// states. The rules are written down before any run and use the claim's own numbers; where a claim
// gives a word ("about", "close to"), the tolerance is stated beside it.
#include <algorithm>
#include <cmath>

#include "sim/claims/claims.hpp"
#include "sim/claims/outcomes.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/core/check.hpp"
#include "sim/core/quantity.hpp"

namespace cs::claims {

std::string depends_on(const std::string& x) { return "depends on " + x; }

bool valid_verdict(const std::string& v) {
  return v == kSupported || v == kContradicted || (v.rfind("depends on ", 0) == 0 && v.size() > 11);
}

namespace {

const std::string kDir = "scenarios/seed-claims/";
const std::string C1 = kDir + "claim1-fabric-10x-32gpu.json";
const std::string C3 = kDir + "claim3-gpt3-175b-tp8.json";
const std::string C4L = kDir + "claim4-70b-lora-nvlink-vs-pcie.json";
const std::string C4F = kDir + "claim4-70b-full-finetune.json";
const std::string C5 = kDir + "claim5-qwen72b-tp2-nvlink-vs-pcie.json";
const std::string C6 = kDir + "claim6-scaling-8b-dp8.json";
const std::string C7 = kDir + "claim7-allreduce-8gpu.json";
const std::string C8S = kDir + "claim8-7b-serving-one-gpu.json";
const std::string C8L = kDir + "claim8-14b-lora-dp8.json";
const std::string C9A = kDir + "claim9-7b-inference-a100.json";
const std::string C9B = kDir + "claim9-14b-finetune-a100.json";
const std::string C9R = kDir + "claim9-deepseek-r1-serving.json";
const std::string C9F = kDir + "claim9-deepseek-r1-fp8-h100.json";
const std::string C9V = kDir + "claim9-deepseek-v3-training.json";
const std::string C9G = kDir + "claim9-175b-training-nodes.json";
const std::string C11 = kDir + "claim11-h200-decode.json";
const std::string kOffers = "scenarios/offers/";

const std::string kNv = "8x H100 SXM (NVSwitch)";
const std::string kPcie = "8x H100 PCIe";

std::string pct(double frac) { return fixed(frac * 100.0, 1) + "%"; }
std::string times(double r) { return fixed(r, 2) + "x"; }
bool within(double v, double lo, double hi) { return v >= lo && v <= hi; }

/// A claim that leaves a parameter unstated (the plan, the model) holds for each case or not:
/// all hold -> supported, none -> contradicted, some -> depends on that parameter.
std::string over_cases(const std::vector<bool>& ok, const std::string& parameter) {
  const auto n = std::count(ok.begin(), ok.end(), true);
  if (n == static_cast<long>(ok.size())) return kSupported;
  if (n == 0) return kContradicted;
  return depends_on(parameter);
}

/// A claim made of stated parts holds only if every part does: one contradicted part contradicts
/// it; otherwise any part that depends on something makes the whole depend on those things.
std::string over_parts(const std::vector<Part>& parts) {
  std::string deps;
  for (const auto& p : parts) {
    if (p.verdict == kContradicted) return kContradicted;
    if (p.verdict != kSupported) deps += (deps.empty() ? "" : "; ") + p.verdict.substr(11);
  }
  return deps.empty() ? kSupported : depends_on(deps);
}

/// A claim before its figures and verdict.
ClaimResult make(int id, std::string title, std::string claim, std::string figure, std::string rule,
                 std::vector<std::string> scenarios) {
  ClaimResult c;
  c.id = id;
  c.title = std::move(title);
  c.claim = std::move(claim);
  c.article_figure = std::move(figure);
  c.rule = std::move(rule);
  c.scenarios = std::move(scenarios);
  return c;
}

Figure fits_figure(const std::string& name, const Outcome& o) {
  return {name, o.memory_gib, "GiB",
          (o.fits ? "fits " : "does not fit ") + fixed(o.capacity_gib, 1) + " GiB" +
              (o.kind == "infer" && o.fits ? " (" + fixed(o.kv_cache_gib, 1) + " GiB left for KV cache)" : "")};
}

ClaimResult claim1(const Outcomes& o) {
  auto c = make(1, "ten times the bandwidth: scaling from under 40% to about 90%",
                "One order of magnitude more interconnect bandwidth lifts large-scale training's scaling efficiency "
                "from under 40% to close to 90%.",
                "under 40% -> close to 90% with 10x the bandwidth",
                "for each plan: the slow fabric's efficiency under 40% and the fast one's within 10 points of 90% "
                "(\"close to\"); holds for every plan -> supported, none -> contradicted, some -> depends on the plan",
                {C1});
  std::vector<bool> ok;
  std::string why;
  for (const std::string plan : {"DP32", "TP8 x DP4"}) {
    const auto& slow = o.at(C1, plan + ", 1x 100 GbE per node");
    const auto& fast = o.at(C1, plan + ", 8x 200G InfiniBand per node");
    const double lo = o.train(C1, slow.variant).scaling_efficiency;
    const double hi = o.train(C1, fast.variant).scaling_efficiency;
    c.figures.push_back({plan + ": fabric bandwidth ratio", fast.fabric_GBps / slow.fabric_GBps, "x",
                         fixed(slow.fabric_GBps, 2) + " -> " + fixed(fast.fabric_GBps, 1) + " GB/s per node"});
    c.figures.push_back({plan + ": scaling efficiency, 100 GbE", lo * 100, "%", ""});
    c.figures.push_back({plan + ": scaling efficiency, 8x 200G IB", hi * 100, "%", ""});
    ok.push_back(lo < 0.40 && std::fabs(hi - 0.90) <= 0.10);
    why += (why.empty() ? "" : "; ") + plan + ": " + pct(lo) + " -> " + pct(hi);
  }
  c.verdict = over_cases(ok, "the parallel plan (" + why + ")");
  c.reason = why;
  return c;
}

ClaimResult claim2(const Outcomes& o) {
  auto c = make(2, "NVLink full mesh trains 30-55% faster than PCIe",
                "NVLink full-mesh vs PCIe machines with the same GPU count: end-to-end training time 30%-55% shorter "
                "(attributed to MLPerf Training v4.1, BERT and GPT-3 175B).",
                "30%-55% shorter training time",
                "time saved = 1 - NVSwitch step / PCIe step for each training pair of claims 3, 4 and 6 (8 H100 each, "
                "the PCIe box with H100 PCIe cards); within 30-55% for every pair -> supported, none -> "
                "contradicted, some -> depends on the model and plan",
                {C3, C4L, C6});
  struct Pair {
    std::string label, file, nv, pcie;
  };
  const std::vector<Pair> pairs{
      {"GPT-3 175B TP8 (claim 3)", C3, kNv, kPcie},
      {"Llama-3.1-70B LoRA TP8 (claim 4)", C4L, "8x H100 SXM (NVSwitch), TP8", "8x H100 PCIe, TP8"},
      {"Llama-3.1-70B LoRA TP4 PP2 (claim 4)", C4L, "8x H100 SXM (NVSwitch), TP4 PP2", "8x H100 PCIe, TP4 PP2"},
      {"Llama-3.1-8B DP8 ZeRO-1 (claim 6)", C6, kNv, kPcie}};
  std::vector<bool> ok;
  std::string why;
  for (const auto& p : pairs) {
    const double saved = 1.0 - o.train(p.file, p.nv).step_time_s / o.train(p.file, p.pcie).step_time_s;
    c.figures.push_back({p.label + ": time saved on NVSwitch", saved * 100, "%", ""});
    ok.push_back(within(saved, 0.30, 0.55));
    why += (why.empty() ? "" : ", ") + p.label + " " + pct(saved);
  }
  c.verdict = over_cases(ok, "the model and plan (" + why + ")");
  c.reason = why;
  return c;
}

ClaimResult claim3(const Outcomes& o) {
  auto c =
      make(3, "GPT-3 175B TP8: communication under 15% on NVSwitch, over 40% on PCIe",
           "GPT-3 175B tensor-parallel on 8x H100: communication is under 15% of a step on NVSwitch, over 40% "
           "on PCIe 5.0 x16.",
           "communication < 15% of a step (NVSwitch), > 40% (PCIe 5.0 x16)",
           "exposed communication / step time: NVSwitch < 15% and PCIe > 40% -> supported, else contradicted", {C3});
  const auto& nv = o.train(C3, kNv);
  const auto& pc = o.train(C3, kPcie);
  const double a = nv.breakdown.exposed_comm / nv.step_time_s, b = pc.breakdown.exposed_comm / pc.step_time_s;
  c.figures.push_back({"NVSwitch: exposed communication share", a * 100, "%", ""});
  c.figures.push_back({"PCIe: exposed communication share", b * 100, "%", ""});
  c.figures.push_back({"NVSwitch: step time", nv.step_time_s, "s", ""});
  c.figures.push_back({"PCIe: step time", pc.step_time_s, "s", ""});
  const bool ok_nv = a<0.15, ok_pc = b> 0.40;
  c.verdict = ok_nv && ok_pc ? kSupported : kContradicted;
  c.reason = "NVSwitch " + pct(a) + (ok_nv ? " (< 15%)" : " (not < 15%)") + ", PCIe " + pct(b) +
             (ok_pc ? " (> 40%)" : " (not > 40%)");
  return c;
}

ClaimResult claim4(const Outcomes& o) {
  auto c = make(4, "70B fine-tuning: NVLink 2-3x the throughput of PCIe",
                "70B fine-tuning: NVLink machines give 2-3x the throughput of PCIe machines.", "2x-3x the throughput",
                "tokens/s on NVSwitch / tokens/s on PCIe for each plan (LoRA: full-parameter fine-tuning does not fit "
                "one box); within 2-3x for every plan -> supported, none -> contradicted, some -> depends on the plan",
                {C4L, C4F});
  std::vector<bool> ok;
  std::string why;
  for (const std::string plan : {"TP8", "TP4 PP2"}) {
    const double r = o.train(C4L, "8x H100 SXM (NVSwitch), " + plan).tokens_per_s /
                     o.train(C4L, "8x H100 PCIe, " + plan).tokens_per_s;
    c.figures.push_back({plan + ": NVSwitch / PCIe throughput", r, "x", ""});
    ok.push_back(within(r, 2.0, 3.0));
    why += (why.empty() ? "" : ", ") + plan + " " + times(r);
  }
  c.figures.push_back(fits_figure("full-parameter TP8: memory per GPU", o.at(C4F)));
  c.verdict = over_cases(ok, "the parallel plan (" + why + ")");
  c.reason = why;
  return c;
}

ClaimResult claim5(const Outcomes& o) {
  auto c = make(5, "Qwen-72B on 2x H100: NVLink ~1.8x the per-GPU throughput of PCIe",
                "Qwen-72B inference, tensor parallel on 2x H100: NVLink gives ~1.8x the per-GPU throughput of PCIe "
                "(so half the cost per token).",
                "~1.8x per-GPU throughput",
                "output tokens/s per GPU with an NVLink bridge / without, on the same H100 PCIe cards; \"~1.8x\" "
                "taken as within 15% (1.53-2.07x) -> supported, else contradicted",
                {C5});
  const double bridge = o.serve(C5, "2x H100 PCIe + NVLink bridge").output_tokens_per_s_per_gpu;
  const double plain = o.serve(C5, "2x H100 PCIe (no NVLink)").output_tokens_per_s_per_gpu;
  const double sxm = o.serve(C5, "2x H100 SXM (NVSwitch)").output_tokens_per_s_per_gpu;
  c.figures.push_back({"NVLink bridge / PCIe, per GPU", bridge / plain, "x", ""});
  c.figures.push_back({"H100 SXM NVSwitch / H100 PCIe, per GPU", sxm / plain, "x", "different GPUs"});
  c.figures.push_back({"output tokens/s per GPU, PCIe", plain, "tokens/s", ""});
  const double r = bridge / plain;
  c.verdict = within(r, 1.8 * 0.85, 1.8 * 1.15) ? kSupported : kContradicted;
  c.reason = "NVLink bridge gives " + times(r) + " the per-GPU throughput";
  return c;
}

ClaimResult claim6(const Outcomes& o) {
  auto c = make(6, "8-GPU scaling: PCIe 60-75%, NVSwitch 85-95%",
                "8-GPU scaling efficiency: PCIe machines 60-75%, NVLink/NVSwitch 85-95%.",
                "PCIe 60%-75%, NVLink/NVSwitch 85%-95%",
                "scaling efficiency against one GPU of the same kind: the NVSwitch box within 85-95% and each PCIe box "
                "within 60-75% -> supported; none in its range -> contradicted; some -> depends on the machine",
                {C6});
  const std::vector<std::pair<std::string, std::pair<double, double>>> boxes{
      {kNv, {0.85, 0.95}}, {kPcie, {0.60, 0.75}}, {"'8-GPU' A100 PCIe (2 switches of 4)", {0.60, 0.75}}};
  std::vector<bool> ok;
  std::string why;
  for (const auto& [name, range] : boxes) {
    const double e = o.train(C6, name).scaling_efficiency;
    c.figures.push_back({name + ": scaling efficiency", e * 100, "%",
                         "claim: " + fixed(range.first * 100, 0) + "-" + fixed(range.second * 100, 0) + "%"});
    ok.push_back(within(e, range.first, range.second));
    why += (why.empty() ? "" : ", ") + name + " " + pct(e);
  }
  c.verdict = over_cases(ok, "the machine (" + why + ")");
  c.reason = why;
  return c;
}

ClaimResult claim7(const Outcomes& o) {
  auto c = make(7, "all_reduce_perf: NVSwitch over 600 GB/s, PCIe tens of GB/s",
                "NCCL all_reduce_perf on 8-GPU NVSwitch machines should exceed 600 GB/s \"aggregate\"; PCIe machines "
                "reach only tens of GB/s.",
                "> 600 GB/s (NVSwitch), tens of GB/s (PCIe); bus or algorithm bandwidth not said",
                "a 1 GiB all-reduce over 8 GPUs, read as bus and as algorithm bandwidth: NVSwitch > 600 GB/s and PCIe "
                "within 10-100 GB/s under both readings -> supported, under neither -> contradicted, under one -> "
                "depends on which bandwidth is meant",
                {C7});
  const auto& nv = o.at(C7, kNv);
  const auto& pc = o.at(C7, kPcie);
  for (const auto* x : {&nv, &pc}) {
    c.figures.push_back({x->variant + ": busbw", x->busbw_GBps, "GB/s", x->algorithm});
    c.figures.push_back({x->variant + ": algbw", x->algbw_GBps, "GB/s", x->algorithm});
  }
  const bool bus = nv.busbw_GBps > 600 && within(pc.busbw_GBps, 10, 100);
  const bool alg = nv.algbw_GBps > 600 && within(pc.algbw_GBps, 10, 100);
  c.verdict = bus && alg ? kSupported
              : bus      ? depends_on("which bandwidth is meant: bus bandwidth agrees, algorithm bandwidth does not")
              : alg      ? depends_on("which bandwidth is meant: algorithm bandwidth agrees, bus bandwidth does not")
                         : kContradicted;
  c.reason = "NVSwitch busbw " + fixed(nv.busbw_GBps, 0) + ", algbw " + fixed(nv.algbw_GBps, 0) + " GB/s; PCIe busbw " +
             fixed(pc.busbw_GBps, 1) + ", algbw " + fixed(pc.algbw_GBps, 1) + " GB/s";
  return c;
}

ClaimResult claim8(const Outcomes& o) {
  auto c = make(8, "for models that fit one GPU, PCIe is enough",
                "Only the interconnect matters once a model no longer fits one GPU; for models that fit one GPU "
                "(7B/13B inference, LoRA), PCIe is enough.",
                "PCIe is enough for 7B/13B inference and LoRA",
                "the same GPU profile in both boxes; \"enough\" taken as the PCIe box reaching at least 90% of the "
                "NVSwitch box's throughput, for 7B serving and 13B-class LoRA -> supported if both, contradicted if "
                "neither; the first half (interconnect matters when the model is split) is claims 3, 4 and 6",
                {C8S, C8L});
  const double s = o.serve(C8S, "1 GPU of 8x H100 PCIe (SXM profile)").output_tokens_per_s /
                   o.serve(C8S, "1 GPU of 8x H100 SXM (NVSwitch)").output_tokens_per_s;
  const double l =
      o.train(C8L, "8x H100 PCIe (SXM profile)").tokens_per_s / o.train(C8L, "8x H100 SXM (NVSwitch)").tokens_per_s;
  c.figures.push_back({"Qwen2.5-7B serving, one GPU: PCIe / NVSwitch", s * 100, "%", ""});
  c.figures.push_back({"Qwen2.5-14B LoRA DP8: PCIe / NVSwitch", l * 100, "%", ""});
  c.parts.push_back({"7B inference on one GPU", s >= 0.90 ? kSupported : kContradicted});
  c.parts.push_back({"13B-class LoRA, data parallel", l >= 0.90 ? kSupported : kContradicted});
  c.verdict = over_parts(c.parts);
  c.reason = "PCIe reaches " + pct(s) + " (7B serving) and " + pct(l) + " (14B LoRA) of NVSwitch";
  return c;
}

ClaimResult claim9(const Outcomes& o) {
  auto c = make(9, "sizing rules, 7B to DeepSeek-V3",
                "Sizing rules: 7B inference fits one A100 40/80G; 13B fine-tune needs 2x A100 80G NVLink (or 1x 80G "
                "with recompute); 34B-70B fine-tune needs 4-8 A100/H100 with NVLink; 175B training needs 8x H100 "
                "NVSwitch or multi-node RDMA; DeepSeek-V3/R1 671B MoE (~37B active per token) inference needs 8x "
                "H100 (640 GB) with FP8/INT4 quantisation, training needs multi-node 8x H100 + 400G InfiniBand.",
                "the GPU counts and memory sizes above",
                "memory per GPU (sized, not simulated) against each rule: a setup the article names fits -> "
                "supported; it fits only with LoRA or only in INT4 -> depends on that; it does not fit -> "
                "contradicted; all parts must hold",
                {C9A, C9B, C4F, C4L, C9G, C9F, C9R, C9V});
  // 7B inference on one A100 40G and 80G.
  const auto& a40 = o.at(C9A, "1x A100 40GB");
  const auto& a80 = o.at(C9A, "1x A100 80GB");
  c.figures.push_back(fits_figure("7B inference, 1x A100 40GB", a40));
  c.figures.push_back(fits_figure("7B inference, 1x A100 80GB", a80));
  c.parts.push_back({"7B inference on one A100 40/80G", a40.fits && a80.fits ? kSupported : kContradicted});
  // 13B fine-tuning (Qwen2.5-14B): full-parameter on 2x 80G or 1x 80G with recompute, else LoRA.
  const auto& tp2 = o.at(C9B, "full, 2x A100 80G NVLink, TP2");
  const auto& z3 = o.at(C9B, "full, 2x A100 80G NVLink, ZeRO-3");
  const auto& one = o.at(C9B, "full, 1x A100 80G, full recompute");
  const auto& lora = o.at(C9B, "LoRA, 1x A100 80G");
  for (const auto* x : {&tp2, &z3, &one, &lora}) c.figures.push_back(fits_figure("14B " + x->variant, *x));
  const bool full14 = (tp2.fits || z3.fits) && one.fits;
  c.parts.push_back({"13B fine-tune on 2x A100 80G NVLink or 1x 80G with recompute",
                     full14 ? kSupported
                     : lora.fits
                         ? depends_on("the fine-tuning method: 14B full-parameter needs " +
                                      fixed(std::min(tp2.memory_gib, z3.memory_gib), 1) +
                                      " GiB per GPU on 2x 80G, LoRA " + fixed(lora.memory_gib, 1) + " GiB on one")
                         : kContradicted});
  // 70B fine-tuning on 8x H100 with NVLink.
  const auto& full70 = o.at(C4F);
  const auto& lora70 = o.at(C4L, "8x H100 SXM (NVSwitch), TP8");
  c.figures.push_back(fits_figure("70B full-parameter, 8x H100 TP8", full70));
  c.figures.push_back(fits_figure("70B LoRA, 8x H100 TP8", lora70));
  c.parts.push_back(
      {"34B-70B fine-tune on 4-8 A100/H100 with NVLink",
       full70.fits   ? kSupported
       : lora70.fits ? depends_on("the fine-tuning method: 70B full-parameter needs " + fixed(full70.memory_gib, 1) +
                                  " GiB per GPU on 8x H100, LoRA " + fixed(lora70.memory_gib, 1) + " GiB")
                     : kContradicted});
  // 175B training on one 8x H100 NVSwitch box, and on eight joined by 400G InfiniBand.
  const auto& box = o.at(C9G, "one 8x H100 box, TP8");
  const auto& nodes = o.at(C9G, "8 nodes of 8x H100, TP8 PP8");
  c.figures.push_back(fits_figure("GPT-3 175B training, one 8x H100 box, TP8", box));
  c.figures.push_back(fits_figure("GPT-3 175B training, 8 nodes of 8x H100, TP8 PP8", nodes));
  c.parts.push_back({"175B training on one 8x H100 NVSwitch box", box.fits ? kSupported : kContradicted});
  c.parts.push_back({"175B training on multi-node 8x H100 with RDMA", nodes.fits ? kSupported : kContradicted});
  // DeepSeek-R1 inference on 8x H100 in FP8 or INT4.
  const auto& fp8 = o.at(C9F);
  const auto& int4 = o.at(C9R, "8x H100 80GB, INT4 weights");
  c.figures.push_back(fits_figure("DeepSeek-R1 FP8, 8x H100", fp8));
  c.figures.push_back(fits_figure("DeepSeek-R1 INT4, 8x H100", int4));
  c.figures.push_back(fits_figure("DeepSeek-R1 FP8, 8x H200", o.at(C9R, "8x H200 141GB, FP8 weights")));
  c.parts.push_back({"DeepSeek-V3/R1 inference on 8x H100 with FP8/INT4",
                     fp8.fits && int4.fits ? kSupported
                     : int4.fits ? depends_on("the quantisation: DeepSeek-R1 fits 8x H100 in INT4; FP8 needs " +
                                              fixed(fp8.memory_gib, 1) + " GiB per GPU before KV cache")
                                 : kContradicted});
  // DeepSeek-V3 training on 2,048 H800 with 400G InfiniBand: sized as our memory model sees it.
  const auto& v3 = o.at(C9V);
  c.figures.push_back(fits_figure("DeepSeek-V3 training, 256 nodes of 8x H800", v3));
  c.parts.push_back({"DeepSeek-V3 training on multi-node 8x H100/H800 + 400G InfiniBand",
                     v3.fits ? kSupported
                             : depends_on("the activation recompute DeepSeek uses, which our memory model lacks "
                                          "(docs/moe.md): " +
                                          fixed(v3.memory_gib, 1) + " GiB per GPU as modelled")});
  c.verdict = over_parts(c.parts);
  std::string failed;
  for (const auto& p : c.parts)
    if (p.verdict == kContradicted) failed += (failed.empty() ? "" : "; ") + p.what;
  c.reason = failed.empty() ? "every part holds or depends as listed" : "does not fit as the article says: " + failed;
  return c;
}

ClaimResult claim10(const Outcomes& o) {
  auto c = make(10, "70B fine-tuning: TP8 or TP4 x PP2 on one 8x H100 box",
                "70B fine-tune: TP=8, or TP=4 with PP=2, on one 8x H100 box is a practical start.",
                "TP8 or TP4 + PP2 on 8x H100",
                "both plans fit one 8x H100 box for full-parameter fine-tuning -> supported; they fit only with LoRA "
                "-> depends on the fine-tuning method; not even with LoRA -> contradicted",
                {C4L, C4F});
  const auto& tp8 = o.at(C4L, "8x H100 SXM (NVSwitch), TP8");
  const auto& tp4 = o.at(C4L, "8x H100 SXM (NVSwitch), TP4 PP2");
  const auto& full = o.at(C4F);
  c.figures.push_back(fits_figure("full-parameter TP8: memory per GPU", full));
  c.figures.push_back(fits_figure("LoRA TP8: memory per GPU", tp8));
  c.figures.push_back(fits_figure("LoRA TP4 PP2: memory per GPU", tp4));
  if (tp8.train) c.figures.push_back({"LoRA TP8: MFU", tp8.train->mfu * 100, "%", ""});
  if (tp4.train) c.figures.push_back({"LoRA TP4 PP2: MFU", tp4.train->mfu * 100, "%", ""});
  const bool lora = tp8.fits && tp4.fits;
  c.verdict = full.fits ? kSupported
              : lora    ? depends_on("the fine-tuning method: LoRA fits (" + fixed(tp8.memory_gib, 1) + " GiB TP8, " +
                                     fixed(tp4.memory_gib, 1) + " GiB TP4 PP2), full-parameter needs " +
                                     fixed(full.memory_gib, 1) + " GiB per GPU")
                        : kContradicted;
  c.reason =
      "full-parameter TP8 needs " + fixed(full.memory_gib, 1) + " of " + fixed(full.capacity_gib, 1) + " GiB per GPU";
  return c;
}

ClaimResult claim11(const Outcomes& o) {
  auto c = make(11, "H200 mainly helps long-context and MoE inference",
                "H200's larger, faster memory mainly helps long-context and MoE inference (memory-bound decode).",
                "no number; H200 has 141 GB at 4.8 TB/s against H100's 80 GB at 3.35 TB/s",
                "H200 / H100 output tokens/s: the long-context gain and the MoE gain each larger than the "
                "short-context dense gain -> supported; both parts must hold",
                {C11});
  const auto gain = [&](const std::string& what) {
    return o.serve(C11, "H200, " + what).output_tokens_per_s / o.serve(C11, "H100, " + what).output_tokens_per_s;
  };
  const double g_short = gain("70B, 1k context"), g_long = gain("70B, 32k context"),
               g_moe = gain("Mixtral-8x7B, 1k context");
  c.figures.push_back({"70B, 1k context: H200 / H100", g_short, "x", ""});
  c.figures.push_back({"70B, 32k context: H200 / H100", g_long, "x", ""});
  c.figures.push_back({"Mixtral-8x7B, 1k context: H200 / H100", g_moe, "x", ""});
  const double tpot = o.serve(C11, "H100, 70B, 32k context").tpot.p50 / o.serve(C11, "H200, 70B, 32k context").tpot.p50;
  c.figures.push_back({"70B, 32k context: H100 / H200 TPOT p50", tpot, "x", "decode steps alone"});
  c.parts.push_back({"long context gains more than short", g_long > g_short ? kSupported : kContradicted});
  c.parts.push_back({"MoE gains more than dense", g_moe > g_short ? kSupported : kContradicted});
  c.verdict = over_parts(c.parts);
  c.reason = "gains: short " + times(g_short) + ", long " + times(g_long) + ", MoE " + times(g_moe);
  return c;
}

ClaimResult claim12(const config::Catalog& catalog) {
  auto c = make(12, "monthly rental beats on-demand beyond about two months",
                "Monthly rental beats on-demand cloud for loads over about two months.", "about two months",
                "for each monthly price with an hourly price for the same GPUs (the offer's own `hourly_price`, or an "
                "hourly offer of the same GPU and count), the break-even load is monthly price / (hourly price x "
                "720 h); within 1.5-2.5 months (\"about two\") for every pair -> supported, for none -> "
                "contradicted, some -> depends on the offer; no hourly price at all -> depends on it",
                {kOffers});
  std::vector<scenario::Offer> offers;
  for (const auto& id : catalog.ids(config::CatalogKind::kOffer)) {
    offers.push_back(
        config::parse_offer(config::load(catalog.locate(config::CatalogKind::kOffer, id, "claims", "/offers")), id));
  }
  std::vector<bool> ok;
  std::string pairs, monthly_as_hourly;
  const auto pair = [&](const scenario::Offer& m, double hourly, const std::string& from) {
    const double months = m.price / (hourly * 720.0);
    c.figures.push_back(
        {m.id + ": break-even load against " + from, months, "months",
         fixed(m.price, 0) + " " + m.currency + " per month against " + fixed(hourly, 0) + " " + m.currency + "/h"});
    ok.push_back(within(months, 1.5, 2.5));
    pairs += (pairs.empty() ? "" : ", ") + m.id + " " + fixed(months, 2) + " months against " + from;
  };
  for (const auto& m : offers) {
    if (m.hours_per_period <= 1) continue;
    c.figures.push_back({m.id + ": monthly price as hourly", m.price_per_hour(), m.currency + "/h",
                         fixed(m.price, 0) + " " + m.currency + " per month / 720 h"});
    if (monthly_as_hourly.empty() || m.gpus == 8)
      monthly_as_hourly = fixed(m.price_per_hour(), 0) + " " + m.currency + "/h for " + m.id;
    if (m.hourly_price > 0) pair(m, m.hourly_price, "its own hourly price");
    for (const auto& h : offers) {
      if (h.hours_per_period > 1 || h.gpu != m.gpu || h.gpus != m.gpus || h.currency != m.currency) continue;
      pair(m, h.price, h.id);
    }
  }
  c.verdict = ok.empty() ? depends_on(
                               "the on-demand hourly price, which no shipped offer gives (the article says "
                               "\"hundreds per hour\"): monthly rental wins over a whole month whenever "
                               "on-demand costs more than the monthly price / 720 h (" +
                               monthly_as_hourly + ")")
                         : over_cases(ok, "the offer (" + pairs + ")");
  c.reason = ok.empty() ? "no hourly price in scenarios/offers"
                        : "break-even " + pairs +
                              "; the public cloud's on-demand price is not in the data (\"hundreds per hour\")";
  return c;
}

}  // namespace

std::vector<ClaimResult> run_seed_claims(const config::Catalog& catalog, study::Progress* progress) {
  const std::vector<Input> inputs{{C1},
                                  {C3},
                                  {C4L},
                                  {C4F, Mode::kSize},
                                  {C5},
                                  {C6},
                                  {C7},
                                  {C8S},
                                  {C8L},
                                  {C9A, Mode::kSize},
                                  {C9B, Mode::kSize},
                                  {C9R, Mode::kSize},
                                  {C9F, Mode::kSize},
                                  {C9V, Mode::kSize},
                                  {C9G, Mode::kSize},
                                  {C11}};
  const auto o = Outcomes::run(catalog, inputs, progress);
  std::vector<ClaimResult> out{claim1(o), claim2(o), claim3(o), claim4(o),  claim5(o),  claim6(o),
                               claim7(o), claim8(o), claim9(o), claim10(o), claim11(o), claim12(catalog)};
  for (const auto& c : out) CS_ASSERT(valid_verdict(c.verdict), "a rule gave a verdict outside the allowed strings");
  return out;
}

}  // namespace cs::claims
