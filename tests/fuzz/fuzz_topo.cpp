// `nvidia-smi topo -m` output, the cluster file made from it, and that file read back and built.
#include "calibration/profile/topo_import.hpp"
#include "sim/config/cluster_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/network/topology.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cs::fuzz::run(data, size, [](const std::string& text) {
    const auto m = cs::calib::parse_topo_matrix(text, "fuzz.txt");
    const auto j = cs::calib::topo_to_cluster(m, "fuzz.txt", "h100-sxm", 5);
    const auto spec = cs::config::parse_cluster(cs::config::parse_text(j.dump(), "fuzz.json"), "fuzz");
    (void)cs::net::Topology::build(spec, spec.gpus);
  });
}
