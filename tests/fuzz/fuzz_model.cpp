// Model files (Hugging Face config.json).
#include "sim/config/json_doc.hpp"
#include "sim/config/model_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cs::fuzz::run(data, size, [](const std::string& text) {
    (void)cs::config::parse_model(cs::config::parse_text(text, "fuzz.json"), "fuzz");
  });
}
