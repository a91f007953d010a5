// The renter's own tool output: `nvidia-smi nvlink -s` and `nvidia-smi -q` parsers, and a Blackwell
// profile's FP4 peak surviving the profile writer.
#include <doctest/doctest.h>

#include "calibration/profile/hardware_profile.hpp"
#include "calibration/profile/nvlink_status_import.hpp"
#include "calibration/profile/profile_writer.hpp"
#include "calibration/profile/smi_query_import.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/core/errors.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

namespace {
std::string data(const std::string& rel) { return test::slurp(test::data_path("tests/data/rental/" + rel)); }
}  // namespace

TEST_CASE("nvlink -s on an HGX H100: eight GPUs with 18 active links at 26.562 GB/s each") {
  const auto s = calib::parse_nvlink_status(data("nvswitch-h100/nvlink.txt"), "nvlink.txt");
  REQUIRE(s.gpus.size() == 8);
  for (const auto& g : s.gpus) {
    CHECK(g.name == "NVIDIA H100 80GB HBM3");
    CHECK(g.active_links() == 18);
    CHECK(g.total_bytes_per_s() == doctest::Approx(18 * 26.562e9));
  }
  const auto down = calib::parse_nvlink_status(data("nvswitch-h100/nvlink-one-down.txt"), "x");
  CHECK(down.gpus[3].active_links() == 17);
  CHECK(down.gpus[3].link_bytes_per_s[5] == 0);
  CHECK(down.gpus[2].active_links() == 18);
}

TEST_CASE("nvlink -s on a PCIe box lists the GPUs with no links") {
  const auto s = calib::parse_nvlink_status(data("two-socket-pcie/nvlink.txt"), "nvlink.txt");
  REQUIRE(s.gpus.size() == 8);
  for (const auto& g : s.gpus) CHECK(g.link_bytes_per_s.empty());
}

TEST_CASE("nvlink -s bad input names file and line, without overflow") {
  CHECK_THROWS_WITH_AS((void)calib::parse_nvlink_status("GPU 0: X\n\t Link 0: fast\n", "f.txt"),
                       "f.txt:2: expected a link rate such as '26.562 GB/s' or '<inactive>'; got 'fast'", InputError);
  CHECK_THROWS_WITH_AS(
      (void)calib::parse_nvlink_status("GPU 99999999999999999999999: X\n", "f.txt"),
      "f.txt:1: expected 'GPU <n>: <name>' or 'Link <k>: <rate> GB/s'; got 'GPU 99999999999999999999999: X'",
      InputError);
  CHECK_THROWS_WITH_AS((void)calib::parse_nvlink_status("GPU 0: X\n\t Link 1: 25 GB/s\n", "f.txt"),
                       "f.txt:2: link 1 out of order (expected link 0)", InputError);
  CHECK_THROWS_WITH_AS((void)calib::parse_nvlink_status("", "empty.txt"),
                       "empty.txt: no 'GPU <n>:' line: is this the output of `nvidia-smi nvlink -s`?", InputError);
}

TEST_CASE("nvidia-smi -q: memory, power limits, clock limits and PCIe link of each GPU") {
  const auto q = calib::parse_smi_query(data("four-plus-four/smi.txt"), "smi.txt");
  CHECK(q.driver_version == "550.54.15");
  REQUIRE(q.gpus.size() == 8);
  const auto& g = q.gpus[7];
  CHECK(g.bus_id == "00000000:1F:00.0");
  CHECK(g.name == "NVIDIA A100-PCIE-40GB");
  CHECK(g.memory_bytes == doctest::Approx(40960.0 * 1048576));
  CHECK(g.power_limit_w == doctest::Approx(150));
  CHECK(g.default_power_limit_w == doctest::Approx(250));
  CHECK(g.sm_clock_hz == doctest::Approx(1005e6));
  CHECK(g.max_sm_clock_hz == doctest::Approx(1410e6));
  CHECK(g.pcie_gen == 4);
  CHECK(g.pcie_width == 16);
  CHECK(g.clock_limits == std::vector<std::string>{"SW Power Cap"});
  const auto idle = calib::parse_smi_query(data("nvswitch-h100/smi.txt"), "smi.txt");
  CHECK(idle.gpus[0].clock_limits.empty());  // "Idle" is not a limit
  CHECK(idle.gpus[0].max_power_limit_w == doctest::Approx(700));
}

TEST_CASE("nvidia-smi -q bad input names file and line") {
  const std::string head = "Attached GPUs : 1\nGPU 00000000:18:00.0\n    Product Name : X\n";
  CHECK_THROWS_WITH_AS((void)calib::parse_smi_query(head + "    FB Memory Usage\n        Total : 8O MiB\n", "q.txt"),
                       "q.txt:5: expected a number in MiB; got '8O MiB'", InputError);
  CHECK_THROWS_WITH_AS(
      (void)calib::parse_smi_query(head + "    FB Memory Usage\n        Total : 1e999999 MiB\n", "q.txt"),
      "q.txt:5: expected a number in MiB; got '1e999999 MiB'", InputError);
  CHECK_THROWS_WITH_AS((void)calib::parse_smi_query("Attached GPUs : 2\nGPU 00000000:18:00.0\n", "q.txt"),
                       "q.txt:1: 'Attached GPUs' says 2 but 1 GPU blocks follow (truncated?)", InputError);
  CHECK_THROWS_WITH_AS((void)calib::parse_smi_query("hello\n", "q.txt"),
                       "q.txt: no 'GPU <bus id>' block: is this the output of `nvidia-smi -q`?", InputError);
}

TEST_CASE("a Blackwell profile's fp4 peak survives the profile writer") {
  const auto c = test::catalog();
  const auto p = config::parse_profile(config::load(c.locate(config::CatalogKind::kProfile, "b200", "t", "")), "b200");
  const auto j = calib::profile_to_json(p);
  const auto back = config::parse_profile(config::JsonDoc{"p.json", nlohmann::json::parse(j.dump())}, "b200");
  CHECK(back.matrix_peak == p.matrix_peak);
  CHECK(back.peak(calib::Dtype::kFp4).value == doctest::Approx(9e15));
}
