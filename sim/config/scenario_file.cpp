#include "sim/config/scenario_file.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <optional>
#include <type_traits>
#include <variant>

#include "models/ops/recompute.hpp"
#include "sim/config/cluster_file.hpp"
#include "sim/config/fabric_file.hpp"
#include "sim/config/fields.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/machine_file.hpp"
#include "sim/config/model_file.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/config/reader.hpp"
#include "sim/config/routing_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"

namespace cs::config {

namespace {

/// Stores a field's value in its spec member.
void store(ScenarioSpec& s, const Field& f, const nlohmann::json& v) {
  std::visit(
      [&](auto member) {
        using M = decltype(member);
        if constexpr (std::is_same_v<M, std::string ScenarioSpec::*>) {
          s.*member = v.is_string() ? v.get<std::string>() : std::string();
        } else if constexpr (std::is_same_v<M, bool ScenarioSpec::*>) {
          s.*member = v.is_boolean() && v.get<bool>();
        } else if constexpr (std::is_same_v<M, int ScenarioSpec::*>) {
          s.*member = v.is_number() ? static_cast<int>(v.get<std::int64_t>()) : 0;
        } else if constexpr (std::is_same_v<M, std::int64_t ScenarioSpec::*>) {
          s.*member = v.is_number() ? v.get<std::int64_t>() : 0;
        } else if constexpr (std::is_same_v<M, double ScenarioSpec::*>) {
          s.*member = v.is_number() ? v.get<double>() : 0.0;
        }
      },
      f.member);
}

/// Stage 2 of a training scenario: every field of the table read from its object, in table order
/// (so problems come out in that order), each object finished before the next is opened.
ScenarioSpec parse_spec(const config::JsonDoc& doc) {
  config::Problems problems;
  auto root = config::Reader::root(doc, problems);
  problems.throw_if_any();
  ScenarioSpec s;
  std::optional<Reader> child;
  std::string open;  // the object `child` reads
  for (const auto* f : fields_of(ScenarioKind::kTrain)) {
    const std::string object = f->object();
    if (object != open) {
      if (child) child->finish();
      child.reset();
      open = object;
      if (!object.empty()) {
        // An object whose fields are all optional may be left out (`moe` in a dense run).
        const std::string key = object.substr(1);
        const auto fields = fields_of(ScenarioKind::kTrain);
        const bool optional = std::none_of(fields.begin(), fields.end(),
                                           [&](const Field* g) { return g->object() == object && g->required; });
        static const nlohmann::json kEmptyObject = nlohmann::json::object();
        if (optional && !root.has(key)) {
          (void)root.opt_child(key);
          child.emplace(kEmptyObject, doc.path, "/" + key, problems);
        } else {
          child.emplace(root.child(key));
        }
      }
    }
    Reader& r = object.empty() ? root : *child;
    store(s, *f, read_field(r, *f));
    if (f->path == "/parallel/rank_order") {
      std::array<char, 4> order{};
      if (!plan::ParallelPlan::parse_order(s.rank_order, order)) {
        r.fail_at("rank_order",
                  "expected the four of tp, cp, dp, pp, innermost first, joined by '-' (e.g. tp-cp-dp-pp); got \"" +
                      s.rank_order + "\"");
      }
    }
  }
  if (child) child->finish();
  (void)root.raw("variants");
  root.finish();
  problems.throw_if_any();
  return s;
}

[[noreturn]] void infeasible(const std::string& file, const std::string& msg) {
  throw InfeasibleError(file + ": infeasible plan: " + msg);
}

}  // namespace

void set_path(nlohmann::json& doc, const std::string& path, const nlohmann::json& value, const std::string& origin) {
  const std::string ptr = pointer_from_path(path);
  if (ptr.size() < 2) throw InputError(origin, path, "expected a field path such as 'parallel.tp' or '/parallel/tp'");
  nlohmann::json* cur = &doc;
  std::size_t pos = 1;
  while (true) {
    const std::size_t next = ptr.find('/', pos);
    const std::string key = ptr.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (key.empty()) throw InputError(origin, path, "empty field name in path");
    if (!cur->is_object()) throw InputError(origin, path, "'" + key + "' is inside a value that is not an object");
    if (next == std::string::npos) {
      (*cur)[key] = value;
      return;
    }
    cur = &(*cur)[key];
    if (cur->is_null()) *cur = nlohmann::json::object();
    pos = next + 1;
  }
}

void set_field_text(nlohmann::json& doc, const std::string& path, const std::string& text, const std::string& origin) {
  // Compared, not read with value(): a "kind" that is not a string is the parser's to refuse by name.
  const bool infer = doc.is_object() && doc.contains("kind") && doc["kind"] == "infer";
  const auto kind = infer ? ScenarioKind::kInfer : ScenarioKind::kTrain;
  set_path(doc, path, value_from_text(find_field(kind, path), text), origin);
}

std::vector<std::pair<std::string, config::JsonDoc>> expand_variants(const config::JsonDoc& doc) {
  std::vector<std::pair<std::string, config::JsonDoc>> out;
  if (!doc.json.is_object() || !doc.json.contains("variants")) {
    out.emplace_back("", doc);
    return out;
  }
  config::Problems problems;
  auto root = config::Reader::root(doc, problems);
  auto variants = root.each("variants");
  problems.throw_if_any();
  if (variants.empty()) throw InputError(doc.path, "/variants", "expected at least one variant; got an empty array");
  nlohmann::json base = doc.json;
  base.erase("variants");
  for (auto& v : variants) {
    const std::string name = v.req_string("name");
    nlohmann::json copy = base;
    if (auto set = v.opt_child("set")) {
      for (const auto& key : set->keys()) {
        set_path(copy, key, doc.json.at(nlohmann::json::json_pointer(set->pointer_of(key))),
                 doc.path + ": " + set->pointer_of(key));
      }
    }
    v.finish();
    problems.throw_if_any();
    out.emplace_back(name, config::JsonDoc{doc.path + " (variant '" + name + "')", copy});
  }
  return out;
}

ScenarioFile parse_scenario(const config::JsonDoc& doc) {
  ScenarioFile out;
  const auto docs = expand_variants(doc);
  for (const auto& [name, d] : docs) {
    if (!name.empty()) out.variant_names.push_back(name);
    out.specs.push_back(parse_spec(d));
  }
  return out;
}

Offer parse_offer(const config::JsonDoc& doc, const std::string& id) {
  config::Problems problems;
  auto r = config::Reader::root(doc, problems);
  problems.throw_if_any();
  Offer o;
  o.id = id;
  o.name = r.req_string("name");
  o.gpus = static_cast<int>(r.req_int("gpus", 1, 100000));
  o.gpu = r.req_string("gpu");
  o.interconnect = r.req_string("interconnect");
  o.cluster = r.opt_string("cluster", "");
  {
    auto p = r.child("price");
    o.price = p.req_number("amount", 0.0, 1e12);
    o.price_max = p.opt_number("amount_max", 0.0, 1e12, 0.0);
    o.currency = p.req_string("currency");
    const auto per = p.req_enum("per", {"hour", "month"});
    o.hours_per_period = per == "hour" ? 1.0 : 720.0;  // a month is taken as 30 days (docs/metrics.md)
    p.finish();
  }
  o.hourly_price = r.opt_number("hourly_price", 0.0, 1e12, 0.0);
  o.hourly_price_max = r.opt_number("hourly_price_max", 0.0, 1e12, 0.0);
  if (o.price_max > 0 && o.price_max < o.price)
    problems.add({doc.path, "/price/amount_max",
                  "the top of the price range is below its bottom (/price/amount " + shortest(o.price) + ")"});
  if (o.hourly_price_max > 0 && (o.hourly_price == 0 || o.price_max == 0))
    problems.add({doc.path, "/hourly_price_max",
                  "an hourly range needs /hourly_price (its bottom) and a monthly range (/price/amount_max)"});
  if (o.hourly_price_max > 0 && o.hourly_price_max < o.hourly_price)
    problems.add({doc.path, "/hourly_price_max",
                  "the top of the hourly range is below its bottom (/hourly_price " + shortest(o.hourly_price) + ")"});
  if (o.price_max > 0 && o.hourly_price > 0 && o.hourly_price_max == 0)
    problems.add(
        {doc.path, "/hourly_price_max", "a monthly range with an hourly term needs the hourly range's top too"});
  o.fabric = r.opt_string("fabric", "");
  o.max_nodes = static_cast<int>(r.opt_int("max_nodes", 1, 100000, 0));
  if (o.hourly_price > 0 && o.hours_per_period == 1.0)
    problems.add(
        {doc.path, "/hourly_price", "a second, hourly term needs a monthly /price/per; this price is already hourly"});
  o.source = r.req_string("source");
  (void)r.raw("notes");
  r.finish();
  problems.throw_if_any();
  return o;
}

Machine resolve_machine(const config::Catalog& catalog, const std::string& file, const std::string& model,
                        const std::string& cluster, const std::string& profile, const std::string& offer) {
  Machine m;
  {
    const auto path = catalog.locate(config::CatalogKind::kModel, model, file, "/model");
    m.model = parse_model(config::load(path), model.find('/') == std::string::npos ? model : path);
  }
  auto box = resolve_box(catalog, file, BoxRefs{cluster, profile, ""});
  m.cluster = std::move(box.cluster);
  m.profile = std::move(box.profile);
  if (!offer.empty())
    m.offer = parse_offer(config::load(catalog.locate(config::CatalogKind::kOffer, offer, file, "/offer")), offer);
  // An offer's price is for the box it names: pricing another box with it would be a wrong answer.
  if (m.offer && !m.offer->cluster.empty() && m.offer->cluster != m.cluster.id) {
    throw InputError(file, "/offer",
                     "offer '" + m.offer->id + "' rents cluster '" + m.offer->cluster + "'; this run uses cluster '" +
                         m.cluster.id + "' (price a run on the offer's cluster, or pick an offer for '" + m.cluster.id +
                         "': clustersim list offers)");
  }
  return m;
}

/// Expert parallelism and routing: EP and ETP against the model and the stage's ranks.
void resolve_experts(const ScenarioSpec& spec, Scenario& s, const std::string& file) {
  const auto& m = s.model;
  s.plan.ep = spec.ep;
  s.plan.etp = spec.etp;
  if (!m.is_moe()) {
    if (spec.ep > 1 || spec.etp > 1)
      throw InputError(file, spec.ep > 1 ? "/parallel/ep" : "/parallel/etp",
                       m.id + " is a dense model (no experts to split); expected 1");
    if (spec.routing != "balanced" || spec.redundant_experts > 0 || spec.two_batch_overlap)
      throw InputError(file,
                       spec.routing != "balanced" ? "/moe/routing"
                       : spec.two_batch_overlap   ? "/moe/two_batch_overlap"
                                                  : "/moe/redundant_experts",
                       m.id + " is a dense model (no experts to route)");
    return;
  }
  const std::int64_t slots = m.moe.experts + spec.redundant_experts;
  if (slots % spec.ep != 0) {
    infeasible(file, "EP " + std::to_string(spec.ep) + " does not divide the " + std::to_string(m.moe.experts) +
                         " routed experts" +
                         (spec.redundant_experts > 0 ? " + " + std::to_string(spec.redundant_experts) + " redundant"
                                                     : std::string()) +
                         " of " + m.id);
  }
  if (m.moe.expert_ffn % spec.etp != 0) {
    infeasible(file, "ETP " + std::to_string(spec.etp) + " does not divide the expert MLP width " +
                         std::to_string(m.moe.expert_ffn));
  }
  if (s.plan.stage_ranks() % (spec.ep * spec.etp) != 0) {
    infeasible(file, "EP " + std::to_string(spec.ep) + " x ETP " + std::to_string(spec.etp) + " does not divide the " +
                         std::to_string(s.plan.stage_ranks()) +
                         " GPUs of a pipeline stage (TP x CP x DP): experts are re-split over the attention's ranks");
  }
  if (spec.two_batch_overlap && spec.ep == 1)
    throw InputError(file, "/moe/two_batch_overlap", "two-batch overlap hides EP all-to-alls; expected EP > 1");
  if (spec.redundant_experts > 0 && spec.ep == 1)
    throw InputError(file, "/moe/redundant_experts", "redundant experts balance EP ranks; expected EP > 1");
  if (spec.lora_rank > 0)
    infeasible(file, "LoRA on MoE models is not modelled (issue 12): adapters per expert are not counted");
  s.routing = parse_routing(spec.routing, m, file, "/moe/routing");
  s.routing.seed = static_cast<std::uint64_t>(spec.routing_seed);
  s.routing.redundant_experts = spec.redundant_experts;
  s.two_batch_overlap = spec.two_batch_overlap;
  s.overlap_comm_sm_fraction = spec.two_batch_overlap || spec.schedule == "dualpipe" ? spec.overlap_comm_sms : 0.0;
  s.routing.fp8_dispatch = spec.dispatch_dtype == "auto" ? s.dtype == calib::Dtype::kFp8 : spec.dispatch_dtype == "fp8";
}

std::optional<net::FabricSpec> resolve_fabric(const Catalog& catalog, const std::string& file, int nodes,
                                              const std::string& fabric) {
  if (nodes <= 1) return std::nullopt;  // one node: no fabric joins anything (a sweep over nodes may set one)
  if (fabric.empty())
    throw InputError(file, "/fabric", "a fabric is required with more than one node (see `clustersim list fabrics`)");
  return parse_fabric(config::load(catalog.locate(config::CatalogKind::kFabric, fabric, file, "/fabric")), fabric);
}

Scenario resolve(const ScenarioSpec& spec, const config::Catalog& catalog, const std::string& file) {
  auto m = resolve_machine(catalog, file, spec.model, spec.cluster, spec.profile, spec.offer);
  return resolve_on(spec, std::move(m), resolve_fabric(catalog, file, spec.nodes, spec.fabric), file);
}

Scenario resolve_on(const ScenarioSpec& spec, Machine machine, std::optional<net::FabricSpec> fabric,
                    const std::string& file) {
  Scenario s;
  s.name = spec.name;
  s.description = spec.description;
  if (spec.nodes <= 1 && !spec.fabric.empty())
    s.warnings.push_back("fabric '" + spec.fabric + "' not used: one node has no fabric (set nodes to join several)");
  s.model = std::move(machine.model);
  s.cluster = std::move(machine.cluster);
  s.profile = std::move(machine.profile);
  s.offer = std::move(machine.offer);
  s.gpus_per_node = spec.gpus == 0 ? s.cluster.gpus : spec.gpus;
  if (s.gpus_per_node > s.cluster.gpus) {
    throw InputError(file, "/gpus",
                     "cluster '" + s.cluster.id + "' has " + std::to_string(s.cluster.gpus) + " GPUs; got " +
                         std::to_string(s.gpus_per_node));
  }
  s.nodes = spec.nodes;
  if (s.nodes > 1) {
    if (!fabric) {
      throw InputError(file, "/fabric", "a fabric is required with more than one node (see `clustersim list fabrics`)");
    }
    s.fabric = std::move(fabric);
  }
  s.gpus = s.gpus_per_node * s.nodes;
  // An offer rents a box: a multi-node run rents one per node (and pays for each).
  if (s.offer && s.offer->gpus < s.gpus_per_node) {
    throw InputError(file, "/offer",
                     "offer '" + s.offer->id + "' rents " + std::to_string(s.offer->gpus) +
                         " GPUs per box; this run uses " + std::to_string(s.gpus_per_node) +
                         (s.nodes > 1 ? " per node" : ""));
  }
  (void)calib::parse_dtype(spec.dtype, s.dtype);  // checked by the parser
  (void)s.profile.peak(s.dtype);
  s.plan.tp = spec.tp;
  s.plan.sp = spec.sp && spec.tp > 1;  // sequence parallelism splits along the TP group; with TP 1 it is a no-op
  s.plan.zero = spec.zero;
  s.plan.pp = spec.pp;
  s.plan.vpp = spec.vpp;
  s.plan.cp = spec.cp;
  (void)plan::ParallelPlan::parse_order(spec.rank_order, s.plan.order);  // checked by the parser
  s.plan.schedule = spec.schedule == "gpipe"      ? plan::PipelineSchedule::kGpipe
                    : spec.schedule == "dualpipe" ? plan::PipelineSchedule::kDualPipe
                                                  : plan::PipelineSchedule::kOneFOneB;
  s.plan.recompute = spec.recompute == "full"        ? plan::Recompute::kFull
                     : spec.recompute == "selective" ? plan::Recompute::kSelective
                                                     : plan::Recompute::kNone;
  {
    models::RecomputeModules modules;
    if (auto bad = models::parse_recompute_modules(spec.recompute_modules, modules)) {
      std::vector<std::string> names;
      for (auto m : models::all_recompute_modules()) names.emplace_back(models::recompute_module_name(m));
      const auto near = closest_match(*bad, names);
      throw InputError(file, "/training/recompute_modules",
                       "unknown module '" + *bad + "'" + (near ? "; did you mean '" + *near + "'?" : "") +
                           " (expected some of core_attn, mlp, moe, moe_act, layernorm, mla_up_proj, shared_experts, "
                           "comma-separated)");
    }
    if (!modules.empty() && s.plan.recompute == plan::Recompute::kFull) {
      throw InputError(file, "/training/recompute_modules",
                       "modules are selective recompute's; recompute is full (every layer's forward runs again)");
    }
    if (!modules.empty()) s.plan.recompute = plan::Recompute::kSelective;
    // Megatron's selective recompute without modules named recomputes core attention.
    if (s.plan.recompute == plan::Recompute::kSelective && modules.empty())
      modules.add(models::RecomputeModule::kCoreAttn);
    s.plan.recompute_modules = modules.bits;
  }
  s.plan.recompute_method =
      spec.recompute_method == "block" ? plan::RecomputeMethod::kBlock : plan::RecomputeMethod::kUniform;
  s.plan.recompute_layers = spec.recompute_num_layers;
  // Megatron takes --recompute-method and --recompute-num-layers with full recompute only.
  if (s.plan.recompute != plan::Recompute::kFull &&
      (s.plan.recompute_method == plan::RecomputeMethod::kBlock || s.plan.recompute_layers != 1)) {
    throw InputError(file,
                     s.plan.recompute_method == plan::RecomputeMethod::kBlock ? "/training/recompute_method"
                                                                              : "/training/recompute_num_layers",
                     "applies to full recompute (training.recompute \"full\"); recompute is " +
                         std::string(s.plan.recompute == plan::Recompute::kSelective ? "selective" : "none"));
  }
  s.fp8_activation_cache = spec.activation_cache == "fp8";
  s.optimizer_moment_bytes = spec.optimizer_dtype == "bf16" ? 2.0 : 4.0;
  s.ema = spec.ema == "gpu"   ? scenario::Scenario::Ema::kGpu
          : spec.ema == "cpu" ? scenario::Scenario::Ema::kCpu
                              : scenario::Scenario::Ema::kNone;
  if (spec.pp > s.model.layers) {
    infeasible(file, "PP " + std::to_string(spec.pp) + " is larger than the " + std::to_string(s.model.layers) +
                         " layers of " + s.model.id);
  }
  if (s.gpus % (spec.tp * spec.pp * spec.cp) != 0) {
    infeasible(file, "TP " + std::to_string(spec.tp) + " x PP " + std::to_string(spec.pp) +
                         (spec.cp > 1 ? " x CP " + std::to_string(spec.cp) : std::string()) + " does not divide the " +
                         std::to_string(s.gpus) + " GPUs");
  }
  s.plan.dp = spec.dp == 0 ? s.gpus / (spec.tp * spec.pp * spec.cp) : spec.dp;
  if (s.plan.gpus() != s.gpus) {
    infeasible(file, "TP " + std::to_string(s.plan.tp) + " x DP " + std::to_string(s.plan.dp) + " x PP " +
                         std::to_string(s.plan.pp) +
                         (s.plan.cp > 1 ? " x CP " + std::to_string(s.plan.cp) : std::string()) + " = " +
                         std::to_string(s.plan.gpus()) + " GPUs, but " + std::to_string(s.gpus) +
                         " GPUs are selected (" + flag_of(ScenarioKind::kTrain, "/gpus") +
                         " / /gpus)");  // wording pinned by tests
  }
  const auto& m = s.model;
  if (m.heads % s.plan.tp != 0) {
    infeasible(file, "TP " + std::to_string(s.plan.tp) + " does not divide the " + std::to_string(m.heads) +
                         " attention heads of " + m.id);
  }
  if (m.kv_heads % s.plan.tp != 0 && s.plan.tp % m.kv_heads != 0) {
    infeasible(file, "TP " + std::to_string(s.plan.tp) + " and the " + std::to_string(m.kv_heads) + " KV heads of " +
                         m.id + " neither divide the other");
  }
  if (m.ffn % s.plan.tp != 0) {
    infeasible(file, "TP " + std::to_string(s.plan.tp) + " does not divide the MLP width " + std::to_string(m.ffn));
  }
  resolve_experts(spec, s, file);
  s.seq = spec.seq;
  if (s.model.max_positions > 0 && s.seq > s.model.max_positions) {
    s.warnings.push_back("sequence " + std::to_string(s.seq) + " is past " + s.model.id + "'s context of " +
                         std::to_string(s.model.max_positions) +
                         " tokens: simulated as a context-extension run (the same layers at this length)");
  }
  s.global_batch = spec.global_batch;
  s.micro_batch = spec.micro_batch;
  if (s.seq % (s.plan.cp * (s.plan.sp ? s.plan.tp : 1)) != 0) {
    infeasible(file, "context parallelism splits the sequence of " + std::to_string(s.seq) + " tokens " +
                         std::to_string(s.plan.cp * (s.plan.sp ? s.plan.tp : 1)) + " ways; it does not divide");
  }
  if (s.plan.sp && s.seq % s.plan.tp != 0) {
    infeasible(file, "sequence parallelism splits the sequence of " + std::to_string(s.seq) + " tokens " +
                         std::to_string(s.plan.tp) + " ways; it does not divide");
  }
  if (s.plan.vpp > 1) {
    if (s.plan.pp == 1)
      infeasible(file, "an interleaved schedule (VPP " + std::to_string(s.plan.vpp) + ") needs PP > 1");
    if (s.plan.schedule != plan::PipelineSchedule::kOneFOneB)
      infeasible(file, "VPP > 1 is the interleaved 1F1B schedule; set schedule 1f1b");
    if (s.plan.pp * s.plan.vpp > s.model.layers) {
      infeasible(file, "PP " + std::to_string(s.plan.pp) + " x VPP " + std::to_string(s.plan.vpp) +
                           " model chunks exceed the " + std::to_string(s.model.layers) + " layers");
    }
    if (s.global_batch % (s.plan.dp * s.micro_batch) == 0 && s.micro_batches() % s.plan.pp != 0) {
      infeasible(file, "the interleaved schedule needs the " + std::to_string(s.micro_batches()) +
                           " micro-batches per replica to be a multiple of PP " + std::to_string(s.plan.pp));
    }
  }
  if (s.plan.zero == 3 && s.plan.pp > 1) {
    infeasible(file,
               "ZeRO-3 (fully sharded parameters) with pipeline parallelism is not supported; use ZeRO-1 with PP");
  }
  if (s.global_batch % (s.plan.dp * s.micro_batch) != 0) {
    infeasible(file, "global batch " + std::to_string(s.global_batch) + " is not a multiple of DP " +
                         std::to_string(s.plan.dp) + " x micro-batch " + std::to_string(s.micro_batch) + " = " +
                         std::to_string(s.plan.dp * s.micro_batch));
  }
  if (s.plan.schedule == plan::PipelineSchedule::kDualPipe) {
    // DualPipe feeds half the micro-batches from each end of the pipeline: P even (rank r pairs
    // with rank P - 1 - r), the micro-batches even, and at least 2 P of them so that every rank
    // reaches the steady state of overlapped pairs (DeepSeek's schedule assumes it).
    const auto micro = s.micro_batches();
    if (s.plan.pp < 2 || s.plan.pp % 2 != 0)
      infeasible(file, "DualPipe needs an even PP of at least 2 (rank r holds stages r and P - 1 - r); PP is " +
                           std::to_string(s.plan.pp));
    if (s.plan.vpp > 1) infeasible(file, "DualPipe runs two model chunks per rank of its own; set VPP 1");
    if (micro % 2 != 0 || micro < 2 * s.plan.pp) {
      infeasible(file, "DualPipe needs an even number of micro-batches per replica, at least 2 x PP = " +
                           std::to_string(2 * s.plan.pp) + "; this step has " + std::to_string(micro));
    }
    if (spec.two_batch_overlap) {
      throw InputError(file, "/moe/two_batch_overlap",
                       "DualPipe overlaps one micro-batch's all-to-alls with another's compute itself; expected false "
                       "with schedule dualpipe");
    }
  }
  s.grad_bucket_params = spec.grad_bucket_params;
  s.grad_bytes = spec.grad_dtype == "bf16" ? 2.0 : 4.0;
  if (spec.fp8_recipe != "delayed" && s.dtype != calib::Dtype::kFp8) {
    throw InputError(file, "/training/fp8_recipe",
                     "a scaling recipe for FP8 training; expected training.dtype \"fp8\" with it, or no fp8_recipe");
  }
  s.fp8_current_scaling = s.dtype == calib::Dtype::kFp8 && spec.fp8_recipe == "tensorwise";
  s.overlap_grad_reduce = spec.overlap_grad_reduce;
  s.network_model =
      spec.network_model == "analytical" ? net::NetworkModelKind::kAnalytical : net::NetworkModelKind::kFlow;
  s.dp_symmetry = spec.symmetry == "dp";
  s.allow_oom = spec.allow_oom;
  s.lora_rank = spec.lora_rank;
  s.qlora = spec.qlora;
  s.flash_attention = spec.attention == "flash";
  s.cp_ring = spec.cp_comm == "ring";
  if (s.qlora && s.lora_rank == 0)
    throw InputError(file, "/training/qlora", "QLoRA needs LoRA adapters: set /training/lora_rank");
  // With TP 1 there is nothing to overlap (a no-op, as sequence parallelism is).
  if (spec.tp_comm_overlap && s.plan.tp > 1) {
    if (!s.plan.sp) {
      throw InputError(file, "/parallel/tp_comm_overlap",
                       "TP communication overlap splits sequence parallelism's all-gathers and reduce-scatters "
                       "(Megatron requires it too); set /parallel/sp");
    }
    if (s.lora_rank > 0) {
      throw InputError(file, "/parallel/tp_comm_overlap",
                       "TP communication overlap with LoRA adapters is not modelled (the adapters' GEMMs sit between "
                       "the overlapped GEMM and its collective); turn one of them off");
    }
    s.tp_comm_overlap = true;
    s.tp_overlap_comm_sm_fraction = spec.tp_overlap_comm_sms;
  }
  return s;
}

nlohmann::ordered_json dump_resolved(const Scenario& s) {
  nlohmann::ordered_json j;
  for (const auto* f : fields_of(ScenarioKind::kTrain)) {
    auto v = f->resolved(s);
    if (v.is_null()) continue;
    nlohmann::ordered_json* at = &j;
    const std::string object = f->object();
    if (!object.empty()) at = &j[object.substr(1)];
    (*at)[f->key()] = std::move(v);
  }
  return j;
}

}  // namespace cs::config
