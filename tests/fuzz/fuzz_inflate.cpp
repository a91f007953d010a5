// The gzip decoder (sim/core/inflate) on any bytes: a result or an InputError, never a crash, a
// read out of bounds or a hang; its output bounded by the caller's limit.
#include "sim/core/inflate.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cs::fuzz::run(data, size, [](const std::string& text) {
    const auto out = cs::gunzip(text, "fuzz.gz", std::size_t{1} << 24);
    if (out.size() > (std::size_t{1} << 24)) __builtin_trap();
  });
}
