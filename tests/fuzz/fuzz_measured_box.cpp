// Measured profiles as `inspect` reads them: the profile, then its raw block.
#include "sim/config/json_doc.hpp"
#include "sim/config/measured_box_file.hpp"
#include "sim/config/profile_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cs::fuzz::run(data, size, [](const std::string& text) {
    const auto doc = cs::config::parse_text(text, "fuzz.json");
    (void)cs::config::parse_profile(doc, "fuzz");
    if (doc.json.contains("raw")) (void)cs::config::parse_measured_box(doc);
  });
}
