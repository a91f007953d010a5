// nccl-tests text output.
#include "calibration/profile/nccl_tests_import.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cs::fuzz::run(data, size, [](const std::string& text) {
    (void)cs::calib::parse_nccl_tests(text, "fuzz_all_reduce_perf.txt", "", 0);
  });
}
