// Sweep files (parse, expand, each of the first points' scenario parsed and resolved) and sweep
// results files (`--merge`): every input goes to both readers.
#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/scenario_file.hpp"
#include "sim/sweep/sweep_file.hpp"
#include "sim/sweep/sweep_output.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  cs::fuzz::run(data, size, [](const std::string& text) {
    const cs::config::Catalog catalog(cs::fuzz::data_dir());
    const auto spec = cs::sweep::parse_sweep(cs::config::parse_text(text, "fuzz.json"), catalog);
    // A few points are enough to reach the scenario readers; a sweep may hold a million.
    for (std::size_t i = 0; i < spec.points.size() && i < 3; ++i) {
      try {
        const auto file = cs::config::parse_scenario(cs::sweep::point_doc(spec, spec.points[i]));
        for (const auto& s : file.specs) (void)cs::config::resolve(s, catalog, "fuzz.json");
      } catch (const cs::InputError&) {  // an invalid point is a row of the results, not a failure
      }
    }
  });
  return cs::fuzz::run(data, size, [](const std::string& text) {
    const auto results = cs::sweep::from_json(cs::config::parse_text(text, "results.json"));
    (void)cs::sweep::merge({results}, {"results.json"});
    (void)cs::sweep::to_json(results).dump();
  });
}
