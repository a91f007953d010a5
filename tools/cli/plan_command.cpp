// `plan`: which rental, how many boxes, which plan, and what the job costs (docs/plan.md). The
// search lives in sim/sizing; this file reads flags and the catalog, and prints.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "models/ops/recompute.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/topology.hpp"
#include "sim/report/html_report.hpp"
#include "sim/sizing/currency.hpp"
#include "sim/sizing/serving_search.hpp"
#include "sim/sizing/training_search.hpp"
#include "sim/study/batch.hpp"
#include "sim/study/machine_topology.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/field_flags.hpp"
#include "tools/cli/mpi_session.hpp"
#include "tools/cli/plan_args.hpp"
#include "tools/cli/work_bounds.hpp"

namespace cs::cli {

namespace {

struct PlanOpts {
  std::string model, job, offers, budget, fabric = "eth-100g", csv, slo_ttft, slo_tpot, report, svg, fx;
  std::string objective = "cost";  ///< serve: what the ranking minimises (cost, gpus, latency)
  std::string fx_note;             ///< what --fx converted ("" when the offers share one currency)
  std::string weights;             ///< serve: the weights' format (empty: bf16)
  std::string engine;              ///< serve: the serving engine's preset (empty: clustersim's defaults)
  std::string mix_link;            ///< serve: the fabric between two offers' prefill and decode pools (empty: eth-100g)
  std::string router;              ///< serve: how requests are spread over replicas (empty: round_robin)
  std::int64_t shared_prefix = 0;  ///< serve: tokens of the shared prompt prefixes (0: none)
  std::int64_t prefix_groups = 1;  ///< serve: how many distinct shared prefixes
  double memory_headroom = -1;     ///< train/finetune: the allocator's share above a plan's modelled memory (<0: 0.07)
  int max_gpus = 64;
  int top = 5;
  int lora_rank = 0;  ///< finetune: LoRA adapters of this rank on the frozen model (0: full fine-tune)
  bool qlora = false;
  std::int64_t seq = 4096, global_batch = 256;
  bool json = false;
  bool per_offer = false;  ///< the best candidate of each offer instead of the top K overall
};

[[noreturn]] void bad(const std::string& flag, const std::string& message) {
  throw InputError(kCommandLine, flag, message);
}

/// The offers named by --offers: ids/paths separated by commas, or a folder of offer files.
std::vector<std::pair<std::string, std::string>> offer_files(const config::Catalog& catalog, const std::string& arg) {
  std::vector<std::pair<std::string, std::string>> out;  // id, path
  namespace fs = std::filesystem;
  // A folder: a path, or one of the catalog's own (`--offers usd-2026`: scenarios/offers/usd-2026/).
  const std::string shipped =
      arg.empty() ? std::string() : (fs::path(catalog.folder(config::CatalogKind::kOffer)) / arg).string();
  if (arg.empty() || fs::is_directory(arg) || (arg.find(',') == std::string::npos && fs::is_directory(shipped))) {
    const std::string dir =
        arg.empty() ? catalog.folder(config::CatalogKind::kOffer) : (fs::is_directory(arg) ? arg : shipped);
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) out.emplace_back(f.stem().string(), f.string());
    if (out.empty()) bad("--offers", "expected offer files (*.json) in folder '" + dir + "'; found none");
    return out;
  }
  std::stringstream ss(arg);
  for (std::string id; std::getline(ss, id, ',');) {
    if (id.empty()) bad("--offers", "expected offer ids separated by commas, or a folder; got '" + arg + "'");
    const auto path = catalog.locate(config::CatalogKind::kOffer, id, kCommandLine, "--offers");
    out.emplace_back(id.find('/') == std::string::npos ? id : std::filesystem::path(id).stem().string(), path);
  }
  return out;
}

std::string time_text(double s) {
  if (s >= 86400) return fixed(s / 86400, 1) + " d";
  if (s >= 3600) return fixed(s / 3600, 1) + " h";
  return fixed(s / 60, 1) + " min";
}

std::string terms_text(const sizing::Candidate& c) {
  std::string t = fixed(c.job_cost, 0) + (c.job_cost_max > 0 ? " to " + fixed(c.job_cost_max, 0) : std::string()) +
                  " " + c.currency + " (" + c.cost_terms;
  for (const auto& term : c.terms) {
    if (term.term == c.cost_terms) continue;
    t += "; " + term.term + " " + fixed(term.cost, 0);
  }
  return t + ")";
}

const char* recompute_text(plan::Recompute r) {
  return r == plan::Recompute::kFull ? "full" : r == plan::Recompute::kSelective ? "selective" : "none";
}

std::string plan_cell(const sizing::Candidate& c) { return sizing::plan_text(c.choice); }

nlohmann::ordered_json candidate_json(const sizing::Candidate& c) {
  nlohmann::ordered_json j;
  j["offer"] = c.offer;
  j["nodes"] = c.choice.nodes;
  j["gpus"] = c.gpus;
  j["plan"] = plan_cell(c);
  j["parallel"] = {{"tp", c.choice.tp},
                   {"pp", c.choice.pp},
                   {"vpp", c.choice.vpp},
                   {"cp", c.choice.cp},
                   {"dp", c.choice.dp},
                   {"ep", c.choice.ep},
                   {"zero", c.choice.zero},
                   {"sp", c.choice.sp},
                   {"recompute", recompute_text(c.choice.recompute)},
                   {"recompute_modules", models::RecomputeModules{c.choice.recompute_modules}.text()},
                   {"micro_batch", c.choice.micro_batch}};
  j["fabric"] = c.fabric.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.fabric);
  j["job_time_s"] = c.job_time_s;
  j["job_cost"] = c.job_cost;
  j["job_cost_max"] = c.job_cost_max > 0 ? nlohmann::ordered_json(c.job_cost_max) : nlohmann::ordered_json(nullptr);
  j["cost_terms"] = c.cost_terms;
  auto terms = nlohmann::ordered_json::array();
  for (const auto& t : c.terms) {
    terms.push_back({{"term", t.term}, {"price_per_node", t.price_per_node}, {"periods", t.periods}, {"cost", t.cost}});
  }
  j["terms"] = terms;
  j["cost_per_mtok"] = c.cost_per_mtok;
  j["cost_per_million_tokens"] = c.cost_per_mtok;
  j["currency"] = c.currency;
  j["mfu"] = c.mfu;
  j["memory_per_gpu_gib"] = c.memory_per_gpu_gib;
  j["gpu_memory_gib"] = c.capacity_gib;
  j["bottleneck"] = c.bottleneck;
  j["bottleneck_share"] = c.bottleneck_share;
  j["step_time_s_analytical"] = c.step_time_s_analytical;
  j["step_time_s_flow"] =
      c.verified_with_flow_model ? nlohmann::ordered_json(c.step_time_s_flow) : nlohmann::ordered_json(nullptr);
  j["verified_with_flow_model"] = c.verified_with_flow_model;
  j["steps"] = c.steps;
  j["tokens_per_step"] = c.tokens_per_step;
  return j;
}

std::string nothing_fits_message(const sizing::Result& r, const PlanOpts& o) {
  const std::string counts = " (" + std::to_string(r.counts.enumerated) + " plans, " +
                             std::to_string(r.counts.too_big) + " do not fit in memory, " +
                             std::to_string(r.counts.invalid) + " invalid sizes, " + std::to_string(r.counts.scored) +
                             " fit and were scored)";
  std::string m = r.counts.scored == 0
                      ? "nothing fits: no plan of " + o.model + " fits in GPU memory" + counts
                      : "no candidate: no plan of " + o.model + " is within the budget and deadline" + counts;
  if (r.counts.scored == 0 && r.closest) {
    const auto& c = *r.closest;
    m += "; the closest: " + c.offer + " x " + std::to_string(c.choice.nodes) + " node(s), " +
         sizing::plan_text(c.choice) + ", needs " + fixed(c.needed_gib, 1) + " GiB per GPU (" +
         fixed(c.needed_gib * (1 + c.headroom), 1) + " with the allocator's " + fixed(c.headroom * 100, 0) +
         "% headroom, --memory-headroom), the GPU has " + fixed(c.available_gib, 1) + " GiB (short by " +
         fixed(c.short_by_gib(), 1) + " GiB)";
    m += "; would help: ";
    if (o.fabric == "none") {
      m += "more boxes (--fabric F: multi-node is off)";
    } else if (c.at_max_nodes) {
      m += "more GPUs (--max-gpus above " + std::to_string(o.max_gpus) + ": ZeRO and PP shard over more of them)";
    } else {
      m += "more GPUs";
    }
    m += ", a shorter sequence (--seq below " + std::to_string(o.seq) +
         ": less activation memory), or GPUs with more memory";
  }
  if (const auto& v = r.cheapest_rejected_verified) {
    // Within by the analytical score, outside once the flow model re-simulated it: say so, with the
    // verified figures, so a budget between the two is not a refusal without a reason.
    m += "; the cheapest plan re-simulated with the flow model: " + v->offer + " x " + std::to_string(v->choice.nodes) +
         " node(s), " + sizing::plan_text(v->choice) + ", " + fixed(v->job_cost, 0) + " " + v->currency + " and " +
         time_text(v->job_time_s) + " (its analytical estimate was within)";
  }
  for (const auto& rej : r.rejected) m += "\n  " + rej.offer + ": " + rej.reason;
  return m;
}

/// "train train:2B", "finetune finetune:500M with LoRA rank 16 (QLoRA: 4-bit base)".
std::string job_text(const JobArg& job, const PlanOpts& o) {
  std::string t = job.kind + " " + o.job;
  if (job.kind == "finetune") {
    t += o.lora_rank > 0 ? " with LoRA rank " + std::to_string(o.lora_rank) +
                               (o.qlora ? " (QLoRA: the frozen model in 4 bits)" : " (the frozen model in bf16)")
                         : " (full: every weight trained)";
  }
  return t;
}

void print_rows(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size());
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t k = 0; k < row.size(); ++k) line += row[k] + std::string(width[k] - row[k].size() + 2, ' ');
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  }
}

/// Serving's batches under mpirun: job i runs on rank i % K (on that rank's workers), and every rank
/// gets every result's text, in index order.
sizing::RunTexts split_texts_among_ranks(const MpiSession& mpi) {
  return [&mpi](std::size_t n, const std::function<std::string(std::size_t)>& job, study::Progress* progress) {
    const auto rank = static_cast<std::size_t>(mpi.rank()), size = static_cast<std::size_t>(mpi.size());
    std::vector<std::size_t> mine;
    for (std::size_t i = rank; i < n; i += size) mine.push_back(i);
    std::vector<std::string> local(mine.size());
    study::run_batch(
        mine.size(), [&](std::size_t k) { local[k] = job(mine[k]); }, progress);
    std::string text;
    for (const auto& t : local) {
      const std::uint64_t length = t.size();
      text.append(reinterpret_cast<const char*>(&length), sizeof length);
      text += t;
    }
    const auto all = mpi.all_gather(text);
    std::vector<std::string> out(n);
    for (std::size_t r = 0; r < all.size(); ++r) {
      std::size_t at = 0;
      for (std::size_t i = r; i < n; i += size) {
        std::uint64_t length = 0;
        if (at + sizeof length > all[r].size()) throw std::runtime_error("plan: a rank's results are cut short");
        std::memcpy(&length, all[r].data() + at, sizeof length);
        at += sizeof length;
        if (at + length > all[r].size()) throw std::runtime_error("plan: a rank's results are cut short");
        out[i] = all[r].substr(at, static_cast<std::size_t>(length));
        at += static_cast<std::size_t>(length);
      }
    }
    return out;
  };
}

/// `--job serve:RATE:ISL:OSL`: per offer and TP, the fewest boxes that meet the objectives.
int plan_serving(const std::vector<sizing::OfferSpace>& spaces,
                 const std::vector<std::optional<net::FabricSpec>>& offer_fabric, const models::ModelArch& model,
                 const JobArg& job, const PlanOpts& o, double budget, const config::Catalog& catalog, const Globals& g,
                 const MpiSession* mpi) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!o.csv.empty()) report::check_writable(o.csv, "--csv");  // before the search, not after
  if (o.slo_ttft.empty())
    bad("--slo-ttft",
        "expected a TTFT objective for a serve job (e.g. 1s, on p90, or p99:2s): it is what says a box keeps up");
  sizing::ServingJob sj;
  sj.rate = job.rate;
  sj.isl = job.isl;
  sj.osl = job.osl;
  const auto ttft_slo = parse_slo(o.slo_ttft, "--slo-ttft");
  sj.slo_ttft_s = ttft_slo.seconds;
  sj.slo_ttft_percentile = ttft_slo.percentile;
  if (!o.slo_tpot.empty()) {
    const auto tpot_slo = parse_slo(o.slo_tpot, "--slo-tpot");
    sj.slo_tpot_s = tpot_slo.seconds;
    sj.slo_tpot_percentile = tpot_slo.percentile;
  }
  // Two offers' pools meet over this fabric: checked before the search, not at its first pool.
  const std::string mix_link = o.mix_link.empty() ? "eth-100g" : o.mix_link;
  if (mix_link != "none") (void)catalog.locate(config::CatalogKind::kFabric, mix_link, kCommandLine, "--mix-link");
  const std::string ttft_p = "p" + std::to_string(sj.slo_ttft_percentile);
  const std::string tpot_p = "p" + std::to_string(sj.slo_tpot_percentile);
  // The job's own fields, read once as a scenario file gives them (so a bad --engine, --router or
  // --weights is named as its field); each candidate sets its shape on a copy, and resolve_serving
  // applies the engine preset for its GPU and TP and checks it, as for a file.
  const auto base = [&] {
    nlohmann::json j = nlohmann::json::object();
    const auto set = [&](const std::string& path, const std::string& text) {
      config::set_field_text(j, path, text, "plan");
    };
    j["kind"] = "infer";
    j["engine"] = nlohmann::json::object();  // its fields' defaults read, as a candidate sets max_batch
    set("/model", o.model);
    set("/cluster", "(each candidate's)");  // required by the reader; every candidate sets its own
    set("/parallel/tp", "1");
    if (!o.weights.empty()) set("/quantization/weights", o.weights);
    if (!o.engine.empty()) set("/engine/preset", o.engine);
    if (!o.router.empty()) set("/engine/router", o.router);
    if (o.shared_prefix > 0) {
      set("/workload/shared_prefix/tokens", std::to_string(o.shared_prefix));
      set("/workload/shared_prefix/groups", std::to_string(o.prefix_groups));
    }
    set("/workload/rate", shortest(job.rate));
    set("/workload/requests", "1");
    set("/workload/input_len", std::to_string(job.isl));
    set("/workload/output_len", std::to_string(job.osl));
    return config::read_serving(config::JsonDoc{kCommandLine, j});
  }();
  const sizing::MakeServing make = [&](std::size_t oi, const sizing::ServingChoice& c, double rate,
                                       std::int64_t requests) {
    auto spec = base;
    auto& v = spec.values;
    spec.cluster = spaces[oi].offer.cluster;
    // Pools on two kinds: this kind's box holds the prefill replicas alone.
    const int own_replicas = c.second && c.prefill_replicas > 0 ? c.prefill_replicas : c.replicas;
    spec.gpus = c.tp * c.pp * own_replicas;
    v.tp = c.tp;
    v.pp = c.pp;
    v.ep = c.ep;
    v.dp_attention = c.dp_attention;
    v.deepep = c.deepep;
    v.replicas = c.replicas;
    v.max_batch = c.max_batch;
    spec.engine.give("max_batch");
    if (c.prefill_replicas > 0) {
      v.prefill_replicas = c.prefill_replicas;
      v.decode_replicas = c.replicas - c.prefill_replicas;
    }
    if (c.max_tokens > 0) {
      v.max_tokens = c.max_tokens;
      v.chunked_prefill = c.max_tokens;
      spec.engine.give("max_tokens");
      spec.engine.give("chunked_prefill");
    }
    if (c.span > 1) {  // one unit: `span` boxes joined by the offer's fabric
      v.nodes = c.span;
      spec.fabric = offer_fabric[oi]->id;
    }
    if (c.second) {  // a mixed fleet: the second offer's boxes beside these (priced by the search)
      auto& mix = spec.mix.emplace();
      mix.cluster = spaces[c.second->offer].offer.cluster;
      mix.replicas = c.second->replicas;
      mix.tp = c.second->tp;
      if (c.prefill_replicas > 0) mix.link = mix_link;
    }
    v.rate = rate;
    v.requests = requests;
    auto s = config::resolve_serving(std::move(spec), catalog);
    check_serving_work(s, spaces[oi].offer.id + " " + sizing::serving_plan_text(c), g);
    return s;
  };
  sizing::ServingOptions so;
  so.budget = budget;
  so.objective = o.objective == "gpus"      ? sizing::Objective::kGpus
                 : o.objective == "latency" ? sizing::Objective::kLatency
                                            : sizing::Objective::kCost;
  so.top = o.top;
  so.per_offer = o.per_offer;
  so.mixed_pools = mix_link != "none";
  if (mpi && mpi->size() > 1) so.run_texts = split_texts_among_ranks(*mpi);
  so.moe = model.is_moe();
  so.experts = model.is_moe() ? static_cast<int>(model.moe.experts) : 0;
  const bool quiet_rank = mpi && mpi->rank() != 0;  // its stdout is closed by the caller
  auto progress = quiet_rank ? nullptr : batch_progress("plan: serving shapes", 64);
  so.progress = progress.get();
  const auto r = sizing::search_serving(spaces, sj, make, so);
  if (!quiet_rank)
    std::cerr << "plan: searched " << r.plans << " (offer, TP x PP x EP, attention-DP, max batch) shapes, "
              << r.variants << " of them variants of the best (disaggregated, max tokens " << so.small_max_tokens
              << " chunked, DeepEP) (" << r.invalid << " invalid, " << r.too_big
              << " do not fit); mixed fleets: " << r.mixed_pairs << " offer pairs, " << r.mixed_simulated
              << " fleets simulated whole, " << r.mixed_found
              << " beat both kinds alone; prefill and decode on two offers: " << r.pool_pairs << " tried, "
              << r.pools_found << " beat both kinds alone; " << r.simulated << " serving simulations in "
              << fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1) << " s\n";
  if (r.candidates.empty()) {
    std::string m = "no candidate: no offer serves " + o.model + " at " + shortest(job.rate) +
                    " requests/s within the objectives" + (budget > 0 ? " and budget" : "");
    for (const auto& rej : r.rejected) m += "\n  " + rej.offer + ": " + rej.reason;
    throw InfeasibleError(m);
  }
  // The weights' format on every line: a plan in bf16 and one in FP8 are different purchases.
  const std::string weights_text = o.weights.empty() ? "bf16" : o.weights;
  std::vector<std::vector<std::string>> rows{{"#", "offer", "boxes", "GPUs", "plan", "cost/hour (terms)",
                                              "per Mtok out", "TTFT " + ttft_p, "TPOT " + tpot_p, "tok/s/GPU",
                                              "mem/GPU", "bottleneck"}};
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    const bool mixed = !c.second_offer.empty();
    rows.push_back(
        {std::to_string(i + 1), mixed ? c.offer + " + " + c.second_offer : c.offer,
         mixed ? std::to_string(c.choice.nodes) + " + " + std::to_string(c.choice.second->boxes * c.choice.units())
               : std::to_string(c.choice.nodes),
         std::to_string(c.gpus), weights_text + ", " + sizing::serving_plan_text(c.choice),
         fixed(c.cost_per_hour, 1) +
             (c.cost_per_hour_max > 0 ? " to " + fixed(c.cost_per_hour_max, 1) : std::string()) + " " + c.currency +
             " (" + c.cost_terms + ")",
         fixed(c.cost_per_mtok, 2), fixed(c.ttft_slo_s * 1e3, 0) + " ms", fixed(c.tpot_slo_s * 1e3, 1) + " ms",
         fixed(c.output_tokens_per_s_per_gpu, 0),
         fixed(c.memory_per_gpu_gib, 1) + "/" + fixed(c.capacity_gib, 1) + " GiB", c.bottleneck});
  }
  if (!o.csv.empty() && !quiet_rank) {
    // The ranked candidates in the JSON's order: the table's figures unrounded, each percentile.
    std::ofstream f(o.csv, std::ios::binary);
    if (!f) bad("--csv", "cannot write '" + o.csv + "'");
    f << "rank,offer,nodes,gpus,plan,weights,cost_per_hour,cost_per_hour_max,cost_terms,currency,cost_per_mtok,"
         "ttft_p50_s,ttft_p90_s,ttft_p99_s,tpot_p50_s,tpot_p90_s,tpot_p99_s,e2e_p90_s,output_tokens_per_s_per_gpu,"
         "memory_per_gpu_gib,gpu_memory_gib,bottleneck,mix_offer,mix_role,mix_boxes\n";
    const auto pcts = [](const serving::Percentiles& q) {
      return q.count == 0 ? std::string(",,") : shortest(q.p50) + "," + shortest(q.p90) + "," + shortest(q.p99);
    };
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
      const auto& c = r.candidates[i];
      const bool mixed = !c.second_offer.empty();
      f << i + 1 << "," << csv_cell(c.offer) << "," << c.choice.nodes << "," << c.gpus << ","
        << csv_cell(sizing::serving_plan_text(c.choice)) << "," << weights_text << "," << shortest(c.cost_per_hour)
        << "," << (c.cost_per_hour_max > 0 ? shortest(c.cost_per_hour_max) : std::string()) << ","
        << csv_cell(c.cost_terms) << "," << c.currency << "," << shortest(c.cost_per_mtok) << "," << pcts(c.ttft) << ","
        << pcts(c.tpot) << "," << shortest(c.e2e.p90) << "," << shortest(c.output_tokens_per_s_per_gpu) << ","
        << shortest(c.memory_per_gpu_gib) << "," << shortest(c.capacity_gib) << "," << csv_cell(c.bottleneck) << ","
        << (mixed ? csv_cell(c.second_offer) : std::string()) << ","
        << (mixed ? (c.choice.prefill_replicas > 0 ? "decode" : "replicas") : "") << ","
        << (mixed ? std::to_string(c.choice.second->boxes * c.choice.units()) : std::string()) << "\n";
    }
  }
  if (!o.report.empty() || !o.svg.empty()) {
    report::PlanReport p;
    p.title = "plan: " + o.model + ", serve " + shortest(job.rate) + " requests/s";
    p.subtitle =
        std::to_string(job.isl) + " + " + std::to_string(job.osl) + " tokens per request; " + ttft_p +
        " TTFT <= " + shortest(sj.slo_ttft_s * 1e3) + " ms" +
        (sj.slo_tpot_s > 0 ? ", " + tpot_p + " TPOT <= " + shortest(sj.slo_tpot_s * 1e3) + " ms" : std::string());
    p.header = rows.front();
    p.rows.assign(rows.begin() + 1, rows.end());
    for (const auto& c : r.candidates) {
      p.points.push_back({c.tpot.p90 > 0 ? 1.0 / c.tpot.p90 : 0.0, c.output_tokens_per_s_per_gpu});
    }
    p.x_title = "output tokens/s per user (1 / p90 TPOT)";
    p.y_title = "output tokens/s per GPU";
    p.minimize_x = p.minimize_y = false;
    p.front_caption =
        "Each point is a ranked candidate (#rank): how fast each user sees tokens against how much "
        "each GPU serves. Up and right is better; the red line joins the candidates no other beats on "
        "both (the Pareto front among those ranked).";
    for (const auto& rej : r.rejected) p.rejected.emplace_back(rej.offer, rej.reason);
    p.notes.push_back("Searched " + std::to_string(r.plans) +
                      " (offer, TP x PP x EP, attention-DP, max batch) shapes and variants of the best "
                      "(disaggregated prefill and decode, a smaller chunked token budget), " +
                      std::to_string(r.simulated) +
                      " serving simulations. Cost per hour is the cheapest term per box-hour of continuous serving x "
                      "boxes (a month = 720 h). docs/plan.md");
    if (!o.report.empty()) {
      report::write_report(o.report, "--report", report::plan_report_html(p));
      std::cerr << "report written to " << o.report << "\n";
    }
    if (!o.svg.empty()) report::write_report(o.svg, "--svg", report::plan_front_svg(p));
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["job"] = {{"kind", "serve"},
                {"rate", job.rate},
                {"isl", job.isl},
                {"osl", job.osl},
                {"shared_prefix", o.shared_prefix > 0
                                      ? nlohmann::ordered_json{{"tokens", o.shared_prefix}, {"groups", o.prefix_groups}}
                                      : nlohmann::ordered_json(nullptr)},
                {"router", o.router.empty() ? "round_robin" : o.router},
                {"slo_ttft_s", sj.slo_ttft_s},
                {"slo_tpot_s", sj.slo_tpot_s > 0 ? nlohmann::ordered_json(sj.slo_tpot_s) : nullptr},
                {"slo_ttft_percentile", sj.slo_ttft_percentile},
                {"slo_tpot_percentile", sj.slo_tpot_percentile}};
    j["candidates"] = nlohmann::ordered_json::array();
    for (const auto& c : r.candidates) {
      nlohmann::ordered_json x;
      x["offer"] = c.offer;
      x["nodes"] = c.choice.nodes;
      x["gpus"] = c.gpus;
      x["plan"] = sizing::serving_plan_text(c.choice);
      x["weights"] = weights_text;
      x["parallel"] = {{"tp", c.choice.tp},
                       {"pp", c.choice.pp},
                       {"ep", c.choice.ep},
                       {"dp_attention", c.choice.dp_attention},
                       {"moe_a2a", c.choice.deepep ? "deepep" : "allgather"},
                       {"max_batch", c.choice.max_batch},
                       {"replicas_per_box", c.choice.second ? nlohmann::ordered_json(c.choice.replicas / c.choice.nodes)
                                            : c.choice.span == 1 ? nlohmann::ordered_json(c.choice.replicas)
                                                                 : nlohmann::ordered_json(nullptr)},
                       {"boxes_per_unit", c.choice.span},
                       {"replicas_per_unit", c.choice.replicas},
                       {"prefill_replicas_per_unit", c.choice.prefill_replicas},
                       {"decode_replicas_per_unit",
                        c.choice.prefill_replicas > 0 ? c.choice.replicas - c.choice.prefill_replicas : 0}};
      // A mixed fleet: the second offer's boxes beside the first's, behind one router (null: one kind).
      x["mix"] = c.second_offer.empty()
                     ? nlohmann::ordered_json(nullptr)
                     : nlohmann::ordered_json{{"offer", c.second_offer},
                                              {"role", c.choice.prefill_replicas > 0 ? "decode" : "replicas"},
                                              {"boxes", c.choice.second->boxes * c.choice.units()},
                                              {"boxes_per_unit", c.choice.second->boxes},
                                              {"gpus", c.second_gpus},
                                              {"tp", c.choice.second->tp},
                                              {"replicas", c.choice.second->replicas * c.choice.units()},
                                              {"link", c.choice.prefill_replicas > 0 ? nlohmann::ordered_json(mix_link)
                                                                                     : nlohmann::ordered_json(nullptr)},
                                              {"cost_per_hour", c.second_cost_per_hour}};
      x["engine"] = {{"preset", o.engine.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(o.engine)},
                     {"max_batch", c.max_batch},
                     {"max_tokens", c.max_tokens},
                     {"chunked_prefill", c.chunked_prefill}};
      x["job_time_s"] = 3600.0;
      x["job_cost"] = c.cost_per_hour;
      x["cost_per_hour"] = c.cost_per_hour;
      x["cost_per_hour_max"] =
          c.cost_per_hour_max > 0 ? nlohmann::ordered_json(c.cost_per_hour_max) : nlohmann::ordered_json(nullptr);
      x["cost_terms"] = c.cost_terms;
      x["cost_per_mtok"] = c.cost_per_mtok;
      x["cost_per_million_tokens"] = c.cost_per_mtok;
      x["currency"] = c.currency;
      x["ttft_p90_s"] = c.ttft.p90;
      x["tpot_p90_s"] = c.tpot.p90;
      // The three percentiles every command reports, and the figures at the objectives' own.
      const auto pcts = [](const serving::Percentiles& q) {
        return nlohmann::ordered_json{{"p50", q.p50}, {"p90", q.p90}, {"p99", q.p99}};
      };
      x["ttft_s"] = pcts(c.ttft);
      x["tpot_s"] = c.tpot.count > 0 ? pcts(c.tpot) : nlohmann::ordered_json(nullptr);
      x["e2e_s"] = pcts(c.e2e);
      x["requests_simulated"] = c.requests_simulated;
      x["steady_requests_per_s"] =
          c.steady_requests_per_s ? nlohmann::ordered_json(*c.steady_requests_per_s) : nlohmann::ordered_json(nullptr);
      x["ttft_at_slo_s"] = c.ttft_slo_s;
      x["tpot_at_slo_s"] = c.tpot_slo_s;
      x["output_tokens_per_s_per_gpu"] = c.output_tokens_per_s_per_gpu;
      x["memory_per_gpu_gib"] = c.memory_per_gpu_gib;
      x["gpu_memory_gib"] = c.capacity_gib;
      x["kv_utilisation_max"] = c.kv_utilisation_max;
      x["bottleneck"] = c.bottleneck;
      x["verified_with_flow_model"] = true;
      j["candidates"].push_back(x);
    }
    j["rejected"] = nlohmann::ordered_json::array();
    for (const auto& rej : r.rejected) j["rejected"].push_back({{"offer", rej.offer}, {"reason", rej.reason}});
    j["currency_conversion"] = o.fx_note.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(o.fx_note);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (!o.fx_note.empty()) std::cout << o.fx_note << "\n";
  std::cout << "plan: " << o.model << ", serve " << shortest(job.rate) << " requests/s of " << job.isl << " + "
            << job.osl << " tokens; " << ttft_p << " TTFT <= " << shortest(sj.slo_ttft_s * 1e3) << " ms"
            << (sj.slo_tpot_s > 0 ? ", " + tpot_p + " TPOT <= " + shortest(sj.slo_tpot_s * 1e3) + " ms" : std::string())
            << "\n"
            << "each unit (a box, or the boxes one replica spans) takes RATE / units (units share no traffic); "
            << (o.per_offer ? "the best of each offer, " : "") << "ranked by "
            << (o.objective == "gpus"      ? "GPUs, then cost per hour"
                : o.objective == "latency" ? "TTFT at the objective's percentile, then cost per hour"
                                           : "cost per hour, then TTFT")
            << ":\n\n";
  print_rows(rows);
  for (const auto& rej : r.rejected) std::cout << "not ranked: " << rej.offer << ": " << rej.reason << "\n";
  std::cout << "Each unit is simulated until its arrivals span 10 request lifetimes (p99 end-to-end), 200 to "
               "20,000 requests; a unit whose completions over the steady window (10% to 90% of requests done) fall "
               "below 90% of its rate cannot sustain it and does not count as meeting the objectives.\n";
  std::cout
      << "Cost per hour is the cheapest term per box-hour of continuous serving x boxes (a month = 720 h). "
         "Serving limits: the max batch each plan names (256 and 1024 tried), max tokens 8192 unless the plan "
         "names a smaller chunked budget, "
      << (o.engine.empty() ? std::string("clustersim's other engine defaults (docs/serving.md; --engine sizes for "
                                         "vLLM, SGLang or TensorRT-LLM)")
                           : o.engine +
                                 "'s scheduler, KV-cache rule, blocks and CUDA graphs as it ships "
                                 "(scenarios/engines/" +
                                 o.engine + ".json)")
      << ". "
      << (o.shared_prefix > 0 ? "Every prompt starts with one of " + std::to_string(o.prefix_groups) +
                                    " shared prefixes of " + std::to_string(o.shared_prefix) +
                                    " tokens, computed once per replica and reused by prefix caching (requests "
                                    "routed " +
                                    (o.router.empty() ? std::string("round_robin") : o.router) + "). "
                              : std::string())
      << "Plans with \"prefill + decode\" run disaggregated pools (the KV cache sent over the box's links). "
      << (r.mixed_found > 0
              ? "A fleet of two offers (\"A + B\") puts both kinds' replicas behind one router, each kind "
                "weighted by what one of its replicas serves alone, and is simulated whole at the job's rate. "
              : "")
      << (r.pools_found > 0
              ? "A plan whose first box runs prefill and whose second offer decodes: each unit is one box of the first "
                "running prompts and the second's boxes decoding, the KV caches crossing " +
                    mix_link + " (--mix-link). "
              : std::string())
      << "docs/plan.md\n";
  return 0;
}

}  // namespace

/// The training search's simulations split among mpirun's ranks as serving's batches are
/// (split_texts_among_ranks), each result sent as its bytes (the doubles bit for bit), so every rank
/// goes on with the same search and rank 0 prints what one process would.
sizing::RunSimulations split_among_ranks(const MpiSession& mpi) {
  return [texts = split_texts_among_ranks(mpi)](std::size_t n, const std::function<sizing::Simulated(std::size_t)>& sim,
                                                std::vector<sizing::Simulated>& out, study::Progress* progress) {
    const auto all = texts(
        n,
        [&](std::size_t i) {
          const auto s = sim(i);
          std::string text;
          for (const double v : {s.step_time_s, s.mfu, s.bottleneck_share})
            text.append(reinterpret_cast<const char*>(&v), sizeof v);
          return text + s.bottleneck;
        },
        progress);
    constexpr std::size_t kHead = 3 * sizeof(double);
    for (std::size_t i = 0; i < n; ++i) {
      if (all[i].size() < kHead) throw std::runtime_error("plan: a rank's results are cut short");
      auto& s = out[i];
      std::memcpy(&s.step_time_s, all[i].data(), sizeof(double));
      std::memcpy(&s.mfu, all[i].data() + sizeof(double), sizeof(double));
      std::memcpy(&s.bottleneck_share, all[i].data() + 2 * sizeof(double), sizeof(double));
      s.bottleneck = all[i].substr(kHead);
    }
  };
}

Action add_plan(CLI::App& app, const Globals& g) {
  auto* cmd =
      app.add_subcommand("plan", "search offers x node counts x plans for a job; rank by job cost (docs/plan.md)");
  auto o = std::make_shared<PlanOpts>();
  cmd->add_option("--model", o->model, "model id or config.json")->required();
  cmd->add_option("--job", o->job,
                  "train:TOKENS[:DEADLINE] or finetune:TOKENS[:DEADLINE] (TOKENS like 2B, 1T; DEADLINE like 30d, "
                  "12h), or serve:RATE:ISL:OSL")
      ->required();
  cmd->add_option("--lora-rank", o->lora_rank,
                  "finetune: LoRA adapters of this rank on the frozen model (default: a full fine-tune)");
  cmd->add_flag("--qlora", o->qlora, "finetune: the frozen model in 4 bits (QLoRA; needs --lora-rank)");
  const auto& weights = config::field(config::ScenarioKind::kInfer, "/quantization/weights");
  cmd->add_option("--weights", o->weights, "serve: the served weights' format (as infer --weights; default bf16)")
      ->check(CLI::IsMember(weights.choices));
  cmd->add_option(
      "--engine", o->engine,
      "serve: size for this engine as it ships (as infer --engine: vllm, sglang or trtllm; its scheduler, "
      "KV-cache memory rule, blocks and CUDA graphs; the searched max batch and token budgets still apply)");
  cmd->add_option("--offers", o->offers,
                  "offer ids separated by commas, or a folder of offer files (default: all shipped)");
  cmd->add_option("--budget", o->budget,
                  "the most a job may cost, in the offers' currency (with --fx: the currency the rates convert into)");
  cmd->add_option("--memory-headroom", o->memory_headroom,
                  "train/finetune: a plan fits when its modelled memory per GPU x (1 + this) is within the GPU's "
                  "(the caching allocator reserves more than it hands out; 0.07: the largest excess measured in "
                  "Megatron-LM runs, docs/plan.md) (default: 0.07); serve plans size the KV cache by the engine's "
                  "rule instead");
  const auto& router = config::field(config::ScenarioKind::kInfer, "/engine/router");
  cmd->add_option("--router", o->router,
                  "serve: how requests are spread over a plan's replicas (as infer --router: round_robin, "
                  "least_loaded or prefix_aware; default round_robin)")
      ->check(CLI::IsMember(router.choices));
  cmd->add_option("--shared-prefix", o->shared_prefix,
                  "serve: every prompt starts with one of --prefix-groups shared prefixes of this many tokens (a "
                  "system prompt), which the engines' prefix caching computes once per replica (docs/serving.md); "
                  "fewer than the job's ISL")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{10000000}));
  cmd->add_option("--prefix-groups", o->prefix_groups,
                  "serve: distinct shared prefixes (default 1; needs --shared-prefix)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000000}));
  cmd->add_option("--mix-link", o->mix_link,
                  "serve: the fabric joining a prefill pool's box on one offer and its decode pool's boxes on "
                  "another (default: eth-100g, two rentals over their Ethernet); none: no such pools are searched");
  cmd->add_flag("--per-offer", o->per_offer,
                "print the best candidate of each offer (each verified as the top one is), ranked, instead of the "
                "--top best overall");
  cmd->add_option("--objective", o->objective,
                  "serve: what the ranking minimises among the plans that meet the objectives: cost (per hour), "
                  "gpus, or latency (TTFT at the objective's percentile)")
      ->check(CLI::IsMember({"cost", "gpus", "latency"}))
      ->capture_default_str();
  cmd->add_option("--fx", o->fx,
                  "exchange rates, CUR=RATE,...: units of the one currency left unnamed per unit of each named one "
                  "(--fx CNY=0.14 ranks CNY and USD offers together in USD); needed when the offers' currencies "
                  "differ");
  cmd->add_option("--max-gpus", o->max_gpus, "the most GPUs a candidate may use (whole boxes)")->capture_default_str();
  cmd->add_option("--top", o->top, "candidates printed (each re-simulated with the flow model)")->capture_default_str();
  cmd->add_option("--fabric", o->fabric, "the fabric joining boxes of multi-node candidates; none: one box only")
      ->capture_default_str();
  const auto* seq_flag = cmd->add_option("--seq", o->seq, "sequence length of the training job")->capture_default_str();
  const auto* batch_flag =
      cmd->add_option("--global-batch", o->global_batch, "sequences per step")->capture_default_str();
  cmd->add_option("--slo-ttft", o->slo_ttft,
                  "serve: the time-to-first-token objective, on p90 (1, 1s, 800ms) or a percentile given "
                  "(p99:800ms, p50:1s); required");
  cmd->add_option("--slo-tpot", o->slo_tpot,
                  "serve: the time-per-output-token objective, on p90 (50ms) or a percentile given (p99:60ms)");
  cmd->add_flag("--json", o->json, "print one JSON document instead of the table");
  cmd->add_option("--csv", o->csv, "also write the ranked candidates as CSV to this file");
  cmd->add_option("--report", o->report, "also write a self-contained HTML report (Pareto front, table) to this file");
  cmd->add_option("--svg", o->svg,
                  "also write the Pareto front as SVG: job cost against job time (train), tokens/s per GPU against "
                  "tokens/s per user (serve)");
  return [o, &g, seq_flag, batch_flag] {
    const auto t0 = std::chrono::steady_clock::now();
    // Under mpirun the ranks split the simulations; only rank 0 writes (stdout, --csv).
    const auto mpi = MpiSession::start_if_launched();
    const bool quiet_rank = mpi && mpi->rank() != 0;
    if (quiet_rank) std::cout.setstate(std::ios::badbit);
    const auto job = parse_job(o->job);
    if (o->lora_rank < 0) bad("--lora-rank", "expected a rank >= 1; got " + std::to_string(o->lora_rank));
    if (o->lora_rank > 0 && job.kind != "finetune")
      bad("--lora-rank", "LoRA adapters are for a finetune:TOKENS job; this job is '" + o->job + "'");
    if (o->qlora && o->lora_rank == 0)
      bad("--qlora", "QLoRA trains LoRA adapters on a 4-bit model: give --lora-rank R as well");
    sizing::TrainingJob tj{job.tokens, job.deadline_s};
    sizing::Options opts;
    opts.budget = o->budget.empty() ? 0.0 : parse_amount(o->budget, "--budget");
    if (o->max_gpus < 1) bad("--max-gpus", "expected a whole number of GPUs >= 1; got " + std::to_string(o->max_gpus));
    if (o->top < 1) bad("--top", "expected a count >= 1; got " + std::to_string(o->top));
    if (o->seq < 1) bad("--seq", "expected a sequence length >= 1; got " + std::to_string(o->seq));
    if (o->global_batch < 1) bad("--global-batch", "expected sequences >= 1; got " + std::to_string(o->global_batch));
    if (!o->report.empty()) report::check_writable(o->report, "--report");  // before the search, not after
    if (!o->svg.empty()) report::check_writable(o->svg, "--svg");
    opts.top = o->top;
    opts.per_offer = o->per_offer;
    opts.seq = o->seq;
    const bool headroom_given = o->memory_headroom != -1;
    if (headroom_given && !(o->memory_headroom >= 0 && o->memory_headroom < 1))
      bad("--memory-headroom",
          "expected a fraction in [0, 1) of a plan's modelled memory; got " + shortest(o->memory_headroom));
    if (headroom_given) opts.memory_headroom = o->memory_headroom;
    opts.global_batch = o->global_batch;
    const config::Catalog catalog(g.data_dir);
    // The fabric of each offer's multi-node candidates: the offer's own, else --fabric (none: one box).
    std::map<std::string, net::FabricSpec> fabrics;
    const auto load_fabric = [&](const std::string& id, const std::string& referrer, const std::string& pointer) {
      if (!fabrics.count(id))
        fabrics.emplace(id, config::parse_fabric(
                                config::load(catalog.locate(config::CatalogKind::kFabric, id, referrer, pointer)), id));
      return fabrics.at(id);
    };
    if (o->fabric != "none") (void)load_fabric(o->fabric, kCommandLine, "--fabric");
    std::vector<sizing::OfferSpace> spaces;
    std::vector<config::Machine> machines;
    std::vector<std::optional<net::FabricSpec>> offer_fabric;
    std::optional<models::ModelArch> model;
    for (const auto& [id, path] : offer_files(catalog, o->offers)) {
      sizing::OfferSpace sp;
      sp.offer = config::parse_offer(config::load(path), id);
      sp.gpus_per_node = sp.offer.gpus;
      config::Machine m;
      std::optional<net::FabricSpec> fabric;
      if (o->fabric != "none")
        fabric = sp.offer.fabric.empty() ? load_fabric(o->fabric, kCommandLine, "--fabric")
                                         : load_fabric(sp.offer.fabric, path, "/fabric");
      if (sp.offer.cluster.empty()) {
        sp.unusable = "names no cluster (no /cluster in its file), so no run can be priced with it";
      } else {
        m = config::resolve_machine(catalog, kCommandLine, o->model, sp.offer.cluster, "", "");
        if (!model) model = m.model;
        if (sp.gpus_per_node > o->max_gpus) {
          sp.unusable = "rents " + std::to_string(sp.gpus_per_node) + " GPUs per box; --max-gpus is " +
                        std::to_string(o->max_gpus);
        }
        for (int n = 1; n * sp.gpus_per_node <= o->max_gpus; n *= 2) {
          if (n > 1 && !fabric && job.training()) break;  // serving boxes never talk to each other
          if (sp.offer.max_nodes > 0 && n > sp.offer.max_nodes) break;
          sp.node_counts.push_back(n);
        }
        if (fabric && sp.node_counts.size() > 1) {
          sp.fabric = fabric->id;
          try {  // a fabric whose NIC layout does not match this box cannot join it
            (void)study::machine_topology({m.cluster, sp.gpus_per_node, 2, fabric});
          } catch (const std::exception& e) {
            sp.node_counts.resize(1);
            sp.fabric.clear();
            std::cerr << "note: " << id << ": one box only; fabric '" << fabric->id << "' does not fit it: " << e.what()
                      << "\n";
          }
        }
      }
      machines.push_back(std::move(m));
      spaces.push_back(std::move(sp));
      offer_fabric.push_back(std::move(fabric));
    }
    {
      std::vector<scenario::Offer*> priced;
      for (auto& sp : spaces) priced.push_back(&sp.offer);
      o->fx_note = sizing::one_currency(priced, parse_fx(o->fx, "--fx"), kCommandLine, "--fx");
    }
    if (!model) {
      // No offer names a cluster: nothing to resolve the model against; read it for its errors.
      model = config::resolve_machine(catalog, kCommandLine, o->model, "hgx-h100", "", "").model;
    }
    if (job.kind == "serve" && !o->engine.empty())  // an unknown engine is a bad flag, not a plan that fails
      (void)catalog.locate(config::CatalogKind::kEngine, o->engine, kCommandLine, "--engine");
    if (job.kind == "serve") {
      // A serve job's lengths are its --job's ISL and OSL; the training shape flags would be ignored.
      for (const auto* f : {seq_flag, batch_flag}) {
        if (f->count() > 0)
          bad(f->get_name(),
              "sets a training job's step; a serve job's request lengths are in --job "
              "serve:RATE:ISL:OSL ('" +
                  o->job + "')");
      }
    }
    if (job.kind == "serve" && o->shared_prefix >= job.isl)
      bad("--shared-prefix", "a shared prefix of " + std::to_string(o->shared_prefix) +
                                 " tokens leaves no token of its own to a prompt of " + std::to_string(job.isl) +
                                 " (the job's ISL): it must be shorter");
    if (o->prefix_groups != 1 && o->shared_prefix == 0)
      bad("--prefix-groups", "counts the shared prefixes of --shared-prefix, which is not given");
    if (job.kind == "serve" && headroom_given)
      bad("--memory-headroom",
          "sets a training plan's allocator headroom; a serve job's memory is the engine's KV-cache rule (--engine)");
    if (job.kind == "serve")
      return plan_serving(spaces, offer_fabric, *model, job, *o, opts.budget, catalog, g, mpi.get());
    if (!o->weights.empty())
      bad("--weights", "sets the served weights' format; this is a training job ('" + o->job + "')");
    if (!o->engine.empty()) bad("--engine", "sets the serving engine; this is a training job ('" + o->job + "')");
    if (!o->router.empty())
      bad("--router", "spreads a serve job's requests; this is a training job ('" + o->job + "')");
    if (o->shared_prefix > 0)
      bad("--shared-prefix", "shapes a serve job's prompts; this is a training job ('" + o->job + "')");
    for (const auto& [flag, given] : {std::pair{"--slo-ttft", &o->slo_ttft}, std::pair{"--slo-tpot", &o->slo_tpot}}) {
      if (!given->empty())
        bad(flag, std::string("sets a serve job's latency objective; this is a training job ('") + o->job +
                      "'), which ranks by job cost, then time (a deadline goes in --job train:TOKENS:DEADLINE)");
    }
    if (!o->mix_link.empty())
      bad("--mix-link",
          "joins a serve job's prefill and decode pools on two offers; this is a training job ('" + o->job + "')");
    if (o->objective != "cost")
      bad("--objective",
          "picks what a serve job's ranking minimises; a training job ('" + o->job + "') ranks by job cost, then time");
    if (o->lora_rank > 0 && model->is_moe())  // every plan would be refused alike; say why once
      throw InfeasibleError(
          "LoRA on MoE models is not modelled (issue 12): adapters per expert are not counted; "
          "plan a full fine-tune (no --lora-rank) of " +
          o->model);
    opts.experts = model->is_moe() ? static_cast<int>(model->moe.experts) : 0;
    const sizing::MakeScenario make = [&](std::size_t oi, const sizing::Choice& c) {
      config::ScenarioSpec spec;
      spec.name = spaces[oi].offer.id;
      spec.model = o->model;
      spec.cluster = spaces[oi].offer.cluster;
      spec.gpus = spaces[oi].gpus_per_node;
      spec.nodes = c.nodes;
      spec.fabric = c.nodes > 1 ? offer_fabric[oi]->id : "";
      spec.tp = c.tp;
      spec.pp = c.pp;
      spec.vpp = c.vpp;
      spec.cp = c.cp;
      spec.dp = c.dp;
      spec.ep = c.ep;
      spec.zero = c.zero;
      spec.sp = c.sp;
      spec.recompute = recompute_text(c.recompute);
      spec.recompute_modules = models::RecomputeModules{c.recompute_modules}.text();
      spec.micro_batch = c.micro_batch;
      spec.seq = o->seq;
      spec.global_batch = o->global_batch;
      spec.lora_rank = o->lora_rank;
      spec.qlora = o->qlora;
      auto s = config::resolve_on(spec, machines[oi], c.nodes > 1 ? offer_fabric[oi] : std::nullopt, kCommandLine);
      check_training_work(s, false, spaces[oi].offer.id + " " + sizing::plan_text(c), g);
      return s;
    };
    opts.check_work = [&g](double work, std::size_t runs) {
      check_batch_work(work, runs, "simulations of the search", "fewer --offers or a smaller --top narrow it", g);
    };
    if (mpi && mpi->size() > 1) opts.run_simulations = split_among_ranks(*mpi);
    auto progress = quiet_rank ? nullptr : batch_progress("plan: scoring (analytical)", 64);
    auto verify_progress = quiet_rank ? nullptr : batch_progress("plan: re-simulating the best (flow)", 64);
    opts.progress = progress.get();
    opts.verify_progress = verify_progress.get();
    const auto r = sizing::search_training(spaces, tj, make, opts);
    const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!quiet_rank)
      std::cerr << "plan: searched " << r.counts.enumerated << " plans (" << r.counts.invalid << " invalid, "
                << r.counts.too_big << " do not fit, " << r.counts.dominated << " dominated), scored "
                << r.counts.scored << " (analytical; " << r.counts.distinct << " distinct simulations), re-simulated "
                << r.counts.verified << " (flow) in " << fixed(search_s, 1) << " s (enumerate and size "
                << fixed(r.wall_s.enumerate, 1) << " s, analytical " << fixed(r.wall_s.score, 1) << " s, flow "
                << fixed(r.wall_s.verify, 1) << " s)\n";
    if (r.candidates.empty()) throw InfeasibleError(nothing_fits_message(r, *o));
    if (!o->csv.empty() && !quiet_rank) {
      std::ofstream f(o->csv, std::ios::binary);
      if (!f) bad("--csv", "cannot write '" + o->csv + "'");
      f << "rank,offer,nodes,gpus,plan,fabric,job_time_s,job_cost,cost_terms,currency,cost_per_mtok,mfu,"
           "memory_per_gpu_gib,bottleneck,step_time_s_analytical,step_time_s_flow\n";
      for (std::size_t i = 0; i < r.candidates.size(); ++i) {
        const auto& c = r.candidates[i];
        f << i + 1 << "," << csv_cell(c.offer) << "," << c.choice.nodes << "," << c.gpus << ","
          << csv_cell(plan_cell(c)) << "," << c.fabric << "," << shortest(c.job_time_s) << "," << shortest(c.job_cost)
          << "," << c.cost_terms << "," << c.currency << "," << shortest(c.cost_per_mtok) << "," << shortest(c.mfu)
          << "," << shortest(c.memory_per_gpu_gib) << "," << csv_cell(c.bottleneck) << ","
          << shortest(c.step_time_s_analytical) << "," << shortest(c.step_time_s_flow) << "\n";
      }
    }
    std::vector<std::vector<std::string>> rows{{"#", "offer", "nodes", "GPUs", "plan", "job time", "job cost (terms)",
                                                "per Mtok", "MFU", "mem/GPU", "bottleneck", "step (an. / flow)"}};
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
      const auto& c = r.candidates[i];
      rows.push_back({std::to_string(i + 1), c.offer, std::to_string(c.choice.nodes), std::to_string(c.gpus),
                      plan_cell(c), time_text(c.job_time_s), terms_text(c), fixed(c.cost_per_mtok, 2),
                      fixed(c.mfu * 100, 1) + "%",
                      fixed(c.memory_per_gpu_gib, 1) + "/" + fixed(c.capacity_gib, 1) + " GiB",
                      c.bottleneck + " " + fixed(c.bottleneck_share * 100, 0) + "%",
                      fixed(c.step_time_s_analytical, 2) + " / " + fixed(c.step_time_s_flow, 2) + " s"});
    }
    if (!o->report.empty() || !o->svg.empty()) {
      report::PlanReport p;
      p.title = "plan: " + o->model + ", " + job_text(job, *o);
      p.subtitle = "sequence " + std::to_string(o->seq) + ", " + std::to_string(o->global_batch) +
                   " sequences per step; multi-node over " +
                   (o->fabric == "none" ? std::string("nothing (one box)") : o->fabric);
      p.header = rows.front();
      p.rows.assign(rows.begin() + 1, rows.end());
      std::string currency = r.candidates.front().currency;
      for (const auto& c : r.candidates) {
        p.points.push_back({c.job_time_s / 3600, c.job_cost});
        if (c.currency != currency) currency = "each offer's currency";
      }
      p.x_title = "job time (hours)";
      p.y_title = "job cost (" + currency + ")";
      p.front_caption =
          "Each point is a ranked candidate (#rank): how long the job takes against what it costs. "
          "Down and left is better; the red line joins the candidates no other beats on both (the "
          "Pareto front among those ranked).";
      for (const auto& rej : r.rejected) p.rejected.emplace_back(rej.offer, rej.reason);
      p.notes.push_back(std::to_string(r.counts.enumerated) + " plans enumerated, " + std::to_string(r.counts.invalid) +
                        " invalid, " + std::to_string(r.counts.too_big) + " do not fit, " +
                        std::to_string(r.counts.dominated) + " dominated; " + std::to_string(r.counts.scored) +
                        " scored (analytical), " + std::to_string(r.counts.verified) + " re-simulated (flow); " +
                        std::to_string(r.feasible) + " fit within budget and deadline.");
      p.notes.push_back(
          "Job cost is whole periods of each term (hours, 30-day months) x boxes; cost per Mtok is job "
          "cost / tokens. docs/plan.md");
      if (!o->report.empty()) {
        report::write_report(o->report, "--report", report::plan_report_html(p));
        std::cerr << "report written to " << o->report << "\n";
      }
      if (!o->svg.empty()) report::write_report(o->svg, "--svg", report::plan_front_svg(p));
    }
    if (o->json) {
      nlohmann::ordered_json j;
      j["model"] = o->model;
      j["job"] = {{"kind", job.kind},
                  {"tokens", job.tokens},
                  {"deadline_s", job.deadline_s > 0 ? nlohmann::ordered_json(job.deadline_s) : nullptr},
                  {"seq", o->seq},
                  {"global_batch", o->global_batch}};
      if (job.kind == "finetune") {
        j["job"]["lora_rank"] = o->lora_rank > 0 ? nlohmann::ordered_json(o->lora_rank) : nullptr;
        j["job"]["qlora"] = o->qlora;
      }
      j["fabric"] = o->fabric;
      j["memory_headroom"] = opts.memory_headroom;
      j["budget"] = opts.budget > 0 ? nlohmann::ordered_json(opts.budget) : nullptr;
      j["candidates"] = nlohmann::ordered_json::array();
      for (const auto& c : r.candidates) j["candidates"].push_back(candidate_json(c));
      j["rejected"] = nlohmann::ordered_json::array();
      for (const auto& rej : r.rejected) j["rejected"].push_back({{"offer", rej.offer}, {"reason", rej.reason}});
      j["currency_conversion"] =
          o->fx_note.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(o->fx_note);
      j["search"] = {{"enumerated", r.counts.enumerated}, {"invalid", r.counts.invalid},
                     {"too_big", r.counts.too_big},       {"dominated", r.counts.dominated},
                     {"scored", r.counts.scored},         {"distinct_simulations", r.counts.distinct},
                     {"verified", r.counts.verified},     {"feasible", r.feasible}};
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    if (!o->fx_note.empty()) std::cout << o->fx_note << "\n";
    std::cout << "plan: " << o->model << ", " << job_text(job, *o) << " (sequence " << o->seq << ", " << o->global_batch
              << " sequences per step); multi-node over "
              << (o->fabric == "none" ? std::string("nothing (one box)")
                                      : o->fabric + " (--fabric), or the fabric an offer names")
              << "\n"
              << r.feasible << " plans fit"
              << (opts.budget > 0 || job.deadline_s > 0 ? " within budget and deadline" : "")
              << (o->per_offer ? "; the best of each offer (" + std::to_string(r.candidates.size()) + " offers)"
                               : "; the best " + std::to_string(r.candidates.size()))
              << " by job cost, then time (step times: analytical / flow):\n\n";
    print_rows(rows);
    for (const auto& rej : r.rejected) std::cout << "not ranked: " << rej.offer << ": " << rej.reason << "\n";
    // The break-even job length between an offer's two terms (the seed's claim 12).
    std::vector<std::string> told;
    for (const auto& c : r.candidates) {
      const auto& offer = spaces[c.offer_index].offer;
      if (offer.hourly_price <= 0 || std::find(told.begin(), told.end(), offer.id) != told.end()) continue;
      told.push_back(offer.id);
      std::cout << "terms: " << offer.id << ": " << shortest(offer.hourly_price) << " " << offer.currency
                << " per box-hour or " << shortest(offer.price) << " per box-month (720 h): monthly is cheaper for "
                << "jobs over " << fixed(offer.price / offer.hourly_price, 0) << " h per box\n";
    }
    std::cout
        << "Plans fit when their memory per GPU x " << shortest(1 + opts.memory_headroom)
        << " is within the GPU's (the allocator's headroom, --memory-headroom). Job cost is whole periods of each "
           "term (hours, 30-day months) x boxes; cost per Mtok is job cost / tokens. docs/plan.md\n";
    return 0;
  };
}

}  // namespace cs::cli
