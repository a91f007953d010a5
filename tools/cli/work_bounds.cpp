#include "tools/cli/work_bounds.hpp"

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

void check_serving_work(const serving::ServingScenario& s, const std::string& who, const Globals& g) {
  double requests = 0, tokens = 0;
  if (s.arrivals == serving::Arrivals::kTrace) {
    requests = static_cast<double>(s.trace.size());
    for (const auto& t : s.trace) tokens += static_cast<double>(t.output);
  } else {
    requests = static_cast<double>(s.requests);
    tokens = requests * s.output.mean();
  }
  const double total = requests + tokens;
  if (total <= g.max_work) return;
  refuse(who, total, figure(requests) + " requests and " + figure(tokens) + " output tokens to generate", g);
}

void check_collective_work(double gpus, double flows_per_size, double sizes, const Globals& g) {
  const double total = gpus + flows_per_size * sizes;
  if (total <= g.max_work) return;
  refuse("command line", total,
         figure(gpus) + " GPUs, " + figure(flows_per_size) + " flow updates per size x " + figure(sizes) + " sizes", g);
}

void check_import_work(double rows, const std::string& file, const Globals& g) {
  if (rows <= g.max_work) return;
  refuse(file, rows, "result rows to fit", g);
}

}  // namespace cs::cli
