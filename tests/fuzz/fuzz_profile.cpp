// Hardware profiles (datasheet, measured or imported).
#include "sim/config/json_doc.hpp"
#include "sim/config/profile_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cs::fuzz::run(data, size, [](const std::string& text) {
    (void)cs::config::parse_profile(cs::config::parse_text(text, "fuzz.json"), "fuzz");
  });
}
