// Measured kernel tables (sim/config/kernel_table_file): any file, plain or gzip, read as each
// table kind, then looked up at a shape: a table or an InputError naming the file and line. A table
// read packs and unpacks to the same bytes (the parsed-table cache), and the input itself taken
// as a packed table is refused or unpacked, never read beyond its end.
#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "sim/config/kernel_table_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("cs-fuzz-kernel-table-" + std::to_string(::getpid()) + ".csv"))
          .string();
  return cs::fuzz::run(data, size, [](const std::string& text) {
    {
      std::ofstream f(path, std::ios::binary);
      f << text;
    }
    if (const auto unpacked = cs::calib::LatencyTable::unpack(text)) {
      std::vector<double> axes(unpacked->axes(), 1024.0);
      for (const auto& key : unpacked->keys()) (void)unpacked->lookup(key, axes);
    }
    for (auto t : cs::calib::all_kernel_tables()) {
      try {
        const auto table = cs::config::read_kernel_table(path, t);
        std::vector<double> axes(table.axes(), 1024.0);
        for (const auto& key : table.keys()) (void)table.lookup(key, axes);
        const std::string packed = table.pack();
        const auto back = cs::calib::LatencyTable::unpack(packed);
        if (!back || back->pack() != packed) __builtin_trap();
      } catch (const cs::InputError&) {
      }
    }
  });
}
