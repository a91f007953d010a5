// cs_bench: speed of the simulator itself (not a test: it prints figures).
// Case: Llama-3.1-8B, TP8 on hgx-h100, sequence 8192, 64 micro-batches (the benchmark).
#include <chrono>
#include <iostream>

#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/core/quantity.hpp"
#include "sim/network/topology.hpp"
#include "sim/report/train_results.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/executor.hpp"
#include "sim/workload/training_step.hpp"

#ifndef CLUSTERSIM_DATA_DIR
#define CLUSTERSIM_DATA_DIR "."
#endif

int main() {
  using clock = std::chrono::steady_clock;
  const cs::config::Catalog catalog(CLUSTERSIM_DATA_DIR);
  struct Case {
    const char* name;
    const char* cluster;
  };
  for (const Case c : {Case{"llama3.1-8b TP8, 64 micro-batches, hgx-h100", "hgx-h100"},
                       Case{"llama3.1-8b TP8, 64 micro-batches, pcie-h100x8", "pcie-h100x8"}}) {
    nlohmann::json j = {{"model", "llama3.1-8b"},
                        {"cluster", c.cluster},
                        {"parallel", {{"tp", 8}}},
                        {"training", {{"seq", 8192}, {"global_batch", 64}, {"micro_batch", 1}}}};
    const auto spec = cs::scenario::parse_scenario(cs::config::JsonDoc{"bench", j}).specs.at(0);
    const auto s = cs::scenario::resolve(spec, catalog, "bench");
    const auto t0 = clock::now();
    const cs::workload::ComputeModel compute(s.profile, s.dtype);
    const auto topo = cs::net::Topology::build(s.cluster, s.gpus);
    const auto step = cs::workload::build_training_step(s, compute);
    const auto t1 = clock::now();
    cs::workload::ExecutorOptions eo;
    eo.collective_latency_s = s.profile.collective_latency.value;
    const auto log = cs::workload::simulate(step.graph, topo, eo);
    const auto t2 = clock::now();
    const double build_s = std::chrono::duration<double>(t1 - t0).count();
    const double sim_s = std::chrono::duration<double>(t2 - t1).count();
    std::cout << c.name << "\n"
              << "  tasks " << step.graph.tasks().size() << ", events " << log.events << ", flows " << log.flows << "\n"
              << "  build " << cs::fixed(build_s * 1e3, 1) << " ms, simulate " << cs::fixed(sim_s * 1e3, 1) << " ms, "
              << cs::fixed(static_cast<double>(log.events) / sim_s / 1e6, 2) << " M events/s\n"
              << "  simulated step " << cs::fixed(log.makespan.seconds(), 3) << " s\n";
  }
  return 0;
}
