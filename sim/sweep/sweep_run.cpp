#include "sim/sweep/sweep_run.hpp"
#include "sim/report/serving_results.hpp"
#include "sim/study/serving_run.hpp"

#include "sim/config/scenario_file.hpp"
#include "sim/config/serving_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/report/train_results.hpp"
#include "sim/serving/serving_sim.hpp"
#include "sim/study/batch.hpp"
#include "sim/study/training_run.hpp"

namespace cs::sweep {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// A message without the "point N: " its scenario's path put in front (the row has the index).
std::string without_prefix(const std::string& text, const std::string& who) {
  const std::string prefix = who + ": ";
  return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
}

std::string reason_of(const InputError& e, const std::string& who) {
  std::string out;
  for (const auto& p : e.problems()) {
    if (!out.empty()) out += "; ";
    if (p.file != who) out += p.file + ": ";
    if (!p.pointer.empty()) out += p.pointer + ": ";
    out += p.message;
  }
  return out;
}

Row run_point(const SweepSpec& spec, const Point& point, const config::Catalog& catalog,
              study::TopologyCache& topologies, const WorkChecks& checks) {
  Row row;
  row.index = point.index;
  row.overrides = point.overrides;
  const auto doc = point_doc(spec, point);
  const std::string& who = doc.path;
  try {
    if (spec.kind == config::ScenarioKind::kTrain) {
      const auto file = config::parse_scenario(doc);
      const auto s = config::resolve(file.specs.front(), catalog, who);
      const auto f = study::training_feasibility(s);
      if (!f.ok()) {
        row.status = Status::kInfeasible;
        row.reason = f.reasons.front().message;
        return row;
      }
      if (checks.training) checks.training(s, who);
      study::RunOptions options;
      options.single_gpu_baseline = false;  // a sweep reports the step, not the speedup over one GPU
      options.topologies = &topologies;
      const auto run = study::run_training(s, options);
      const auto r = report::train_results(s, run);
      row.metrics = {r.step_time_s, r.mfu, r.tokens_per_s, r.memory.total / kGiB};
    } else {
      const auto s = config::parse_serving(doc, catalog);
      if (checks.serving) checks.serving(s, who);
      const auto r = report::serving_results(s, study::run_serving(s, {}, &topologies));
      row.metrics = {r.ttft.p50,      r.ttft.p90, r.ttft.p99, r.tpot.p50, r.tpot.p90, r.tpot.p99, r.output_tokens_per_s,
                     r.requests_per_s};
    }
  } catch (const InputError& e) {
    row.status = Status::kInvalid;
    row.reason = reason_of(e, who);
  } catch (const InfeasibleError& e) {
    row.status = Status::kInfeasible;
    row.reason = without_prefix(e.what(), who);
  }
  return row;
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kInfeasible: return "infeasible";
    case Status::kInvalid: return "invalid";
  }
  return "?";
}

const std::vector<std::string>& metric_names(config::ScenarioKind kind) {
  static const std::vector<std::string> train{"step_time_s", "mfu", "tokens_per_s", "memory_per_gpu_gib"};
  static const std::vector<std::string> serve{"ttft_p50_s", "ttft_p90_s", "ttft_p99_s",          "tpot_p50_s",
                                              "tpot_p90_s", "tpot_p99_s", "output_tokens_per_s", "requests_per_s"};
  return kind == config::ScenarioKind::kInfer ? serve : train;
}

std::vector<std::size_t> shard_indices(std::size_t points, std::size_t shard, std::size_t count) {
  std::vector<std::size_t> out;
  for (std::size_t i = shard; i < points; i += count) out.push_back(i);
  return out;
}

SweepWork sweep_work(const SweepSpec& spec, const std::vector<std::size_t>& indices, const config::Catalog& catalog,
                     const WorkEstimates& estimates) {
  SweepWork w;
  for (auto i : indices) {
    const auto doc = point_doc(spec, spec.points.at(i));
    double work = 0;
    try {
      if (spec.kind == config::ScenarioKind::kTrain) {
        const auto s = config::resolve(config::parse_scenario(doc).specs.front(), catalog, doc.path);
        if (!study::training_feasibility(s).ok()) continue;
        work = estimates.training ? estimates.training(s) : 0.0;
      } else {
        work = estimates.serving ? estimates.serving(config::parse_serving(doc, catalog)) : 0.0;
      }
    } catch (const InputError&) {
      continue;  // an invalid row, reported when the point runs
    } catch (const InfeasibleError&) {
      continue;
    }
    w.total += work;
    if (work > w.largest) {
      w.largest = work;
      w.largest_index = i;
    }
  }
  return w;
}

std::vector<Row> run_points(const SweepSpec& spec, const std::vector<std::size_t>& indices,
                            const config::Catalog& catalog, const WorkChecks& checks, const std::atomic<bool>* stop,
                            const std::function<void(const Row&)>& on_row, study::Progress* progress) {
  const std::size_t n = indices.size();
  std::mutex mu;
  std::vector<std::optional<Row>> finished(n);
  std::size_t next = 0;
  std::vector<Row> out;
  const auto hand_over = [&](std::size_t k) {
    on_row(*finished[k]);
    out.push_back(std::move(*finished[k]));
    finished[k].reset();
  };
  study::TopologyCache topologies;
  if (progress) progress->start(n);
  study::run_batch(
      n,
      [&](std::size_t k) {
        if (stop && stop->load()) return;  // stopped: this point never starts
        Row row = run_point(spec, spec.points.at(indices[k]), catalog, topologies, checks);
        const bool ok = row.status == Status::kOk;
        {
          std::lock_guard lock(mu);
          finished[k] = std::move(row);
          while (next < n && finished[next]) hand_over(next++);
        }
        if (progress) progress->done_one(ok);
      },
      nullptr);
  if (progress) progress->finish();
  // Stopped: the rows that finished after a point that never ran, still in order.
  for (std::size_t k = next; k < n; ++k) {
    if (finished[k]) hand_over(k);
  }
  return out;
}

}  // namespace cs::sweep
