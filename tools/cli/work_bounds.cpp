#include "tools/cli/work_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "sim/workload/work_estimate.hpp"

namespace cs::cli {

namespace {

/// A count as people read it: whole below ten million, else three significant digits (1.79e+10).
std::string figure(double v) {
  if (v < 1e7) return std::to_string(static_cast<long long>(v));
  std::ostringstream o;
  o << std::setprecision(3) << v;
  return o.str();
}

[[noreturn]] void refuse(const std::string& who, double estimate, const std::string& parts, const Globals& g) {
  throw InfeasibleError(who + ": too large to simulate: about " + figure(estimate) + " work items (" + parts +
                        "); the limit is " + figure(g.max_work) +
                        " (clustersim --max-work N raises it; each item takes about 120 bytes of memory)");
}

}  // namespace

void check_training_work(const scenario::Scenario& s, bool single_gpu_baseline, const std::string& who,
                         const Globals& g) {
  const auto w = workload::estimate_training_work(s, single_gpu_baseline);
  if (w.total() <= g.max_work) return;
  std::string parts = figure(w.step_tasks) + " tasks in the step's graph";
  if (w.baseline_tasks > 0) parts += ", " + figure(w.baseline_tasks) + " in the one-GPU baseline's";
  parts += ", " + figure(w.index_slots) + " index slots, " + figure(w.gpus) + " GPUs";
  refuse(who, w.total(), parts, g);
}

ServingWork serving_work(const serving::ServingScenario& s) {
  ServingWork w;
  double input = 0;
  if (s.arrivals == serving::Arrivals::kTrace) {
    w.requests = static_cast<double>(s.trace.size());
    for (const auto& t : s.trace) {
      w.output_tokens += static_cast<double>(t.output);
      input += static_cast<double>(t.input);
    }
  } else {
    w.requests = static_cast<double>(s.requests);
    w.output_tokens = w.requests * s.output.mean();
    input = w.requests * s.input.mean();
  }
  // A prompt takes a step per chunk (the chunk size, or the step's token budget).
  const double chunk = static_cast<double>(s.chunked_prefill > 0 ? s.chunked_prefill : s.max_tokens);
  w.prefill_chunks = std::max(w.requests, std::ceil(input / std::max(1.0, chunk)));
  // Replicas spanning several boxes simulate their expert all-to-alls as flows every step (a
  // box's own are timed once and remembered): each GPU to each other of the replica, per step.
  const int replicas = s.prefill_replicas > 0 ? s.prefill_replicas + s.decode_replicas : s.replicas;
  const int per_node = std::max(1, s.cluster.gpus);
  for (int i = 0; i < replicas; ++i) {
    const double gpus = static_cast<double>(s.replica_tp(i)) * s.replica_pp(i);
    if (s.model.is_moe() && s.replica_ep(i) > 1 && gpus > per_node) w.flows_per_step += gpus * (gpus - 1);
  }
  // Steps: at least one per output token of a full batch, one per prompt chunk.
  const double batch = std::max(1.0, std::min(static_cast<double>(s.max_batch), w.requests));
  w.steps = w.output_tokens / batch + w.prefill_chunks;
  return w;
}

void check_serving_work(const serving::ServingScenario& s, const std::string& who, const Globals& g) {
  const auto w = serving_work(s);
  if (w.total() <= g.max_work) return;
  std::string parts = figure(w.requests) + " requests, " + figure(w.steps) + " steps (" + figure(w.prefill_chunks) +
                      " of them prompt chunks), " + figure(w.output_tokens) + " output tokens (1/64 each)";
  if (w.flows_per_step > 0)
    parts += ", about " + figure(w.steps) + " steps x " + figure(w.flows_per_step) + " all-to-all flows";
  refuse(who, w.total(), parts, g);
}

void check_batch_work(double total, std::size_t runs, const std::string& what, const std::string& detail,
                      const Globals& g) {
  if (total <= g.max_work) return;
  refuse("command line", total, std::to_string(runs) + " " + what + " together" + (detail.empty() ? "" : "; " + detail),
         g);
}

double collective_work(double gpus, double flows_per_size, double sizes, bool flow_model) {
  return 32 * gpus + (flow_model ? 4.0 : 1.0) * flows_per_size * sizes;
}

void check_collective_work(double gpus, double flows_per_size, double sizes, bool flow_model, const Globals& g) {
  const double per_flow = flow_model ? 4.0 : 1.0;
  const double total = collective_work(gpus, flows_per_size, sizes, flow_model);
  if (total <= g.max_work) return;
  refuse("command line", total,
         figure(gpus) + " GPUs x 32 for the topology, " + figure(flows_per_size) + " flows per size x " +
             figure(per_flow) + " x " + figure(sizes) + " sizes",
         g);
}

void check_import_work(double rows, const std::string& file, const Globals& g) {
  if (rows <= g.max_work) return;
  refuse(file, rows, "result rows to fit", g);
}

}  // namespace cs::cli
