#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/scenario/scenario.hpp"

namespace cs::config {

using scenario::Offer;
using scenario::Scenario;

/// A scenario as written (stage 2): ids and numbers, checked for type and range.
struct ScenarioSpec {
  std::string name;
  std::string description;
  std::string model;
  std::string cluster;
  int gpus = 0;         ///< 0: all GPUs of the cluster
  std::string profile;  ///< empty: the cluster's profile
  std::string offer;    ///< empty: no cost
  int nodes = 1;
  std::string fabric;  ///< required when nodes > 1
  int tp = 1;
  int dp = 0;  ///< 0: GPUs / (TP x PP)
  int pp = 1;
  int vpp = 1;
  int cp = 1;
  int ep = 1;
  int etp = 1;
  std::string routing = "balanced";
  std::string dispatch_dtype = "auto";  ///< auto: fp8 under FP8 training, else bf16
  int redundant_experts = 0;
  std::int64_t routing_seed = 1;
  bool two_batch_overlap = false;
  double overlap_comm_sms = 20.0 / 132.0;
  std::string rank_order = "tp-cp-dp-pp";
  std::string schedule = "1f1b";
  std::string recompute = "none";
  std::string attention = "flash";
  std::string cp_comm = "ring";
  int lora_rank = 0;
  bool qlora = false;
  bool sp = false;
  bool tp_comm_overlap = false;
  double tp_overlap_comm_sms = 16.0 / 132.0;
  int zero = 0;
  std::int64_t seq = 0;
  std::int64_t global_batch = 0;
  std::int64_t micro_batch = 1;
  std::string dtype = "bf16";
  std::string grad_dtype = "fp32";
  std::string fp8_recipe = "delayed";
  bool overlap_grad_reduce = true;
  std::string recompute_modules;
  std::string recompute_method = "uniform";
  int recompute_num_layers = 1;
  std::string activation_cache = "bf16";
  std::string optimizer_dtype = "fp32";
  std::string ema = "none";
  double grad_bucket_params = 40e6;
  std::string network_model = "flow";
  std::string symmetry = "none";
  bool allow_oom = false;
  bool operator==(const ScenarioSpec&) const = default;
};

/// The machine and model a scenario names, resolved against the catalog (shared by training and
/// serving scenarios): ids or paths; the profile defaults to the cluster's; the offer is optional.
struct Machine {
  models::ModelArch model;
  net::ClusterSpec cluster;
  calib::HardwareProfile profile;
  std::optional<Offer> offer;
};
[[nodiscard]] Machine resolve_machine(const Catalog& catalog, const std::string& file, const std::string& model,
                                      const std::string& cluster, const std::string& profile, const std::string& offer);

/// A scenario file may carry named variants: sets of overrides reported side by side.
struct ScenarioFile {
  std::vector<std::string> variant_names;  ///< empty: a single scenario
  std::vector<ScenarioSpec> specs;         ///< one per variant (or the one scenario)
};

/// A scenario document's variants as whole documents: the base with each variant's `set`
/// overrides applied (one unnamed entry when there are no variants). Paths name the variant.
[[nodiscard]] std::vector<std::pair<std::string, JsonDoc>> expand_variants(const JsonDoc& doc);

/// Parses a scenario document (stage 2); with variants, one spec per variant.
[[nodiscard]] ScenarioFile parse_scenario(const JsonDoc& doc);
/// Resolves ids against the catalog and checks the plan (stage 3): unknown ids -> InputError;
/// sizes that do not divide -> InfeasibleError with the numbers.
[[nodiscard]] Scenario resolve(const ScenarioSpec& spec, const Catalog& catalog, const std::string& file);
/// The fabric joining `nodes` copies of a cluster, training's or serving's: none on one node; with
/// more, the fabric id or path is required (InputError at `/fabric` of `file` otherwise).
[[nodiscard]] std::optional<net::FabricSpec> resolve_fabric(const Catalog& catalog, const std::string& file, int nodes,
                                                            const std::string& fabric);
/// `resolve` on a machine already resolved (model, cluster, profile, offer) and the fabric the
/// spec's nodes use (required when nodes > 1): every check `resolve` makes, no file read. A search
/// resolves each machine once and each plan on it (clustersim plan).
[[nodiscard]] Scenario resolve_on(const ScenarioSpec& spec, Machine machine, std::optional<net::FabricSpec> fabric,
                                  const std::string& file);
[[nodiscard]] Offer parse_offer(const JsonDoc& doc, const std::string& id);

/// Sets the field at `path` ("a.b" or "/a/b") from text as a flag or `--set` gives it, typed by
/// the field table (`value_from_text`); `origin` names where the text came from in messages.
void set_field_text(nlohmann::json& doc, const std::string& path, const std::string& text, const std::string& origin);
/// Sets one JSON-pointer path (creating objects on the way).
void set_path(nlohmann::json& doc, const std::string& path, const nlohmann::json& value, const std::string& origin);

/// Writes the resolved scenario back as JSON, every default visible (`run --dump-resolved`).
[[nodiscard]] nlohmann::ordered_json dump_resolved(const Scenario& s);

}  // namespace cs::config
