// Cluster files, and the topology they build (every GPU must reach every other).
#include "sim/config/cluster_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/network/topology.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cs::fuzz::run(data, size, [](const std::string& text) {
    const auto spec = cs::config::parse_cluster(cs::config::parse_text(text, "fuzz.json"), "fuzz");
    (void)cs::net::Topology::build(spec, spec.gpus);
  });
}
