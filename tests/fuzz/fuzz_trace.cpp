// Serving request traces: the first byte chooses JSON lines (odd) or CSV (even).
#include <sstream>

#include "sim/config/serving_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool jsonl = (data[0] & 1) != 0;
  return cs::fuzz::run(data + 1, size - 1, [jsonl](const std::string& text) {
    std::istringstream in(text);
    (void)cs::config::read_trace(in, "fuzz", jsonl, 131072);
  });
}
