// Fabric files.
#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cs::fuzz::run(data, size, [](const std::string& text) {
    (void)cs::config::parse_fabric(cs::config::parse_text(text, "fuzz.json"), "fuzz");
  });
}
