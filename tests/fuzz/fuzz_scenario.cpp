// Scenario files: parse (with variants and --set overrides), resolve against the catalog,
// estimate the work and write the resolved scenario back.
#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/workload/work_estimate.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cs::fuzz::run(data, size, [](const std::string& text) {
    const cs::config::Catalog catalog(cs::fuzz::data_dir());
    const auto file = cs::config::parse_scenario(cs::config::parse_text(text, "fuzz.json"));
    for (const auto& spec : file.specs) {
      const auto s = cs::config::resolve(spec, catalog, "fuzz.json");
      (void)cs::workload::estimate_training_work(s, true);
      (void)cs::config::dump_resolved(s).dump();
    }
  });
}
