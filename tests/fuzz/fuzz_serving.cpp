// Inference scenarios: parse and resolve against the catalog (no simulation).
#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/serving_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cs::fuzz::run(data, size, [](const std::string& text) {
    const cs::config::Catalog catalog(cs::fuzz::data_dir());
    (void)cs::config::parse_serving(cs::config::parse_text(text, "fuzz.json"), catalog);
  });
}
