#include "sim/claims/outcomes.hpp"
#include "sim/study/serving_run.hpp"

#include <filesystem>
#include <functional>
#include <memory>

#include "sim/collectives/collective.hpp"
#include "sim/config/collective_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/check.hpp"
#include "sim/core/errors.hpp"
#include "sim/network/topology.hpp"
#include "sim/report/serving_results.hpp"
#include "sim/study/training_run.hpp"
#include "sim/workload/collective_timing.hpp"

namespace cs::claims {

namespace {

constexpr double kGiB = 1073741824.0;

/// A scenario document's kind, read like any other field (train is the default).
std::string kind_of(const config::JsonDoc& doc) {
  config::Problems problems;
  config::Reader r(doc.json, doc.path, "", problems);
  problems.throw_if_any();
  const std::string kind = r.opt_enum("kind", {"train", "infer", "collective"}, "train");
  problems.throw_if_any();
  return kind;
}

/// One variant prepared serially (parsing is quick) and then run on the workers: `work` fills
/// `out` and may throw InfeasibleError, which is recorded as the outcome's problem.
struct Job {
  Outcome out;
  std::function<void(Outcome&)> work;
};

void size_training(Outcome& o, const scenario::Scenario& s) {
  const auto f = study::training_feasibility(s);
  o.fits = f.memory.fits();
  o.memory_gib = f.memory.total / kGiB;
  o.capacity_gib = f.memory.capacity / kGiB;
  if (s.fabric && s.nodes > 1)
    o.fabric_GBps = s.fabric->nics_per_node * s.fabric->nic_bandwidth * s.fabric->nic_efficiency / 1e9;
  if (!f.ok()) o.problem = f.reasons.front().message;
}

void add_training(std::vector<Job>& jobs, const config::JsonDoc& doc, const std::string& file, Mode mode,
                  const config::Catalog& catalog, study::TopologyCache& topologies) {
  const auto parsed = config::parse_scenario(doc);
  for (std::size_t i = 0; i < parsed.specs.size(); ++i) {
    Job job;
    job.out.file = file;
    job.out.kind = "train";
    job.out.variant = parsed.variant_names.empty() ? "" : parsed.variant_names[i];
    const std::string where =
        parsed.variant_names.empty() ? doc.path : doc.path + " (variant '" + job.out.variant + "')";
    std::shared_ptr<const scenario::Scenario> s;
    try {
      s = std::make_shared<const scenario::Scenario>(config::resolve(parsed.specs[i], catalog, where));
    } catch (const InfeasibleError& e) {
      job.out.fits = false;
      job.out.problem = e.what();
      jobs.push_back(std::move(job));
      continue;
    }
    job.work = [s, mode, &topologies](Outcome& o) {
      size_training(o, *s);
      if (mode == Mode::kSize || !o.problem.empty()) return;
      study::RunOptions ro;
      ro.topologies = &topologies;
      o.train = report::train_results(*s, study::run_training(*s, ro));
    };
    jobs.push_back(std::move(job));
  }
}

void add_serving(std::vector<Job>& jobs, const config::JsonDoc& doc, const std::string& file, Mode mode,
                 const config::Catalog& catalog) {
  for (const auto& [name, d] : config::expand_variants(doc)) {
    Job job;
    job.out.file = file;
    job.out.kind = "infer";
    job.out.variant = name;
    std::shared_ptr<const serving::ServingScenario> s;
    try {
      s = std::make_shared<const serving::ServingScenario>(config::parse_serving(d, catalog));
    } catch (const InfeasibleError& e) {
      job.out.fits = false;
      job.out.problem = e.what();
      jobs.push_back(std::move(job));
      continue;
    }
    job.work = [s, mode](Outcome& o) {
      std::int64_t blocks = 0;
      const auto m = serving::serving_memory(*s, &blocks);
      o.memory_gib = (m.weights + m.activations + m.other) / kGiB;
      o.capacity_gib = m.capacity / kGiB;
      o.kv_cache_gib = m.kv_cache / kGiB;
      o.fits = blocks > 0;
      if (!o.fits) o.problem = "no room for a KV cache";
      if (mode == Mode::kSize || !o.fits) return;
      o.serve = report::serving_results(*s, study::run_serving(*s));
    };
    jobs.push_back(std::move(job));
  }
}

void add_collective(std::vector<Job>& jobs, const config::JsonDoc& doc, const std::string& file,
                    const config::Catalog& catalog) {
  const auto c = std::make_shared<const config::CollectiveDoc>(config::parse_collective_doc(doc, catalog));
  coll::CollectiveOp op{};
  coll::Algorithm algo{};
  CS_ASSERT(coll::parse_op(c->op, op) && coll::parse_algorithm(c->algo, algo), "the parser checked op and algo");
  for (std::size_t i = 0; i < c->variants.size(); ++i) {
    Job job;
    job.out.file = file;
    job.out.kind = "collective";
    job.out.variant = c->variants[i].name;
    job.work = [c, i, op, algo](Outcome& o) {
      const auto& v = c->variants[i];
      const auto topo = net::Topology::build(v.box.cluster, v.gpus);
      std::vector<int> ranks;
      for (int r = 0; r < v.gpus; ++r) ranks.push_back(r);
      const auto t = workload::time_collective(topo, op, algo, ranks, c->bytes, v.box.profile.collective_latency.value,
                                               net::NetworkModelKind::kFlow, &v.box.profile.collectives);
      o.busbw_GBps = t.busbw_bytes_per_s / 1e9;
      o.algbw_GBps = t.algbw_bytes_per_s / 1e9;
      o.algorithm = coll::algorithm_name(t.algorithm);
    };
    jobs.push_back(std::move(job));
  }
}

}  // namespace

Outcomes Outcomes::run(const config::Catalog& catalog, const std::vector<Input>& inputs, study::Progress* progress) {
  std::vector<Job> jobs;
  study::TopologyCache topologies;
  for (const auto& in : inputs) {
    const auto doc = config::load((std::filesystem::path(catalog.root()) / in.path).string());
    const auto kind = kind_of(doc);
    if (kind == "infer") {
      add_serving(jobs, doc, in.path, in.mode, catalog);
    } else if (kind == "collective") {
      add_collective(jobs, doc, in.path, catalog);
    } else {
      add_training(jobs, doc, in.path, in.mode, catalog, topologies);
    }
  }
  study::run_batch(
      jobs.size(),
      [&](std::size_t i) {
        if (!jobs[i].work) return;
        try {
          jobs[i].work(jobs[i].out);
        } catch (const InfeasibleError& e) {
          jobs[i].out.fits = false;
          jobs[i].out.problem = e.what();
        }
      },
      progress);
  Outcomes out;
  for (auto& j : jobs) {
    const auto key = std::make_pair(j.out.file, j.out.variant);
    if (out.by_key_.count(key))
      throw InputError(j.out.file, "/variants", "the variant name '" + j.out.variant + "' repeats in this file");
    out.by_key_.emplace(key, std::move(j.out));
  }
  return out;
}

// A data folder's claim files can be edited (a variant renamed, a plan that no longer fits): each
// is the input's fault, named with its file and variant, never an abort.
const Outcome& Outcomes::at(const std::string& file, const std::string& variant) const {
  const auto it = by_key_.find({file, variant});
  if (it != by_key_.end()) return it->second;
  std::string have;
  for (const auto& [key, o] : by_key_) {
    if (key.first == file) have += (have.empty() ? "'" : ", '") + key.second + "'";
  }
  throw InputError(file, "/variants",
                   "the seed claims read a variant named '" + variant + "', which this file does not have" +
                       (have.empty() ? std::string(" (it has none)") : " (it has " + have + ")"));
}

namespace {
/// The claim needs `o` simulated; it was not because it does not fit or run (exit 4, naming it).
[[noreturn]] void not_simulated(const Outcome& o, const std::string& what) {
  throw InfeasibleError(o.file + (o.variant.empty() ? "" : " (variant '" + o.variant + "')") +
                        ": the seed claims need " + what +
                        ", but it did not run: " + (o.problem.empty() ? "sized only" : o.problem));
}
}  // namespace

const report::TrainResults& Outcomes::train(const std::string& file, const std::string& variant) const {
  const auto& o = at(file, variant);
  if (!o.train) not_simulated(o, "its training step");
  return *o.train;
}

const serving::ServingResults& Outcomes::serve(const std::string& file, const std::string& variant) const {
  const auto& o = at(file, variant);
  if (!o.serve) not_simulated(o, "its serving run");
  return *o.serve;
}

}  // namespace cs::claims
