// `inspect` from the renter's own tool output (tests/data/rental: an NVSwitch box, a two-socket
// PCIe box, a four-plus-four box), against the seed's offers.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <map>

#include "tests/support/builders.hpp"

using cs::test::run_cli;

namespace {

std::string box(const std::string& dir, bool nvlink_down = false) {
  const std::string d = "tests/data/rental/" + dir + "/";
  return "--topo " + d + "topo.txt --nccl-tests " + d + "all_reduce_perf.txt --nvlink " + d +
         (nvlink_down ? "nvlink-one-down.txt" : "nvlink.txt") + " --smi " + d + "smi.txt";
}

std::map<std::string, std::string> verdicts(const std::string& args) {
  const auto r = run_cli("inspect " + args + " --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  std::map<std::string, std::string> v;
  for (const auto& x : j["verdicts"]) {
    CHECK_FALSE(x["detail"].get<std::string>().empty());
    v[x["check"]] = x["verdict"];
  }
  return v;
}

}  // namespace

TEST_CASE("a genuine HGX H100 passes every check against its offer") {
  const auto v = verdicts(box("nvswitch-h100") + " --offer cn-8x-h100-sxm");
  for (const char* c : {"gpu-count", "pcie-switches", "interconnect", "form-factor", "memory", "nvlink",
                        "allreduce-busbw", "power-clocks", "pcie-width"}) {
    CAPTURE(c);
    CHECK(v.at(c) == "ok");
  }
}

TEST_CASE("an NVLink down shows in nvlink -s as a failed check naming the GPU and link") {
  const auto r = run_cli("inspect " + box("nvswitch-h100", true) + " --offer cn-8x-h100-sxm");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("  fail  nvlink           GPU 3: 17 of 18 links active (link 5 inactive)") != std::string::npos);
}

TEST_CASE("8x H100 PCIe sold as 8x H100 SXM is flagged from tool output alone") {
  const auto v = verdicts(box("two-socket-pcie") + " --offer cn-8x-h100-sxm");
  CHECK(v.at("form-factor") == "fail");
  CHECK(v.at("interconnect") == "fail");
  CHECK(v.at("allreduce-busbw") == "fail");
  CHECK(v.at("pcie-switches") == "ok");  // four switches of two on two sockets: an honest PCIe layout
  CHECK(v.at("memory") == "ok");
  CHECK(v.at("gpu-count") == "ok");
  // From nvidia-smi -q alone.
  CHECK(verdicts("--smi tests/data/rental/two-socket-pcie/smi.txt --offer cn-8x-h100-sxm").at("form-factor") == "fail");
}

TEST_CASE("the fake 8-GPU box (two PCIe switches of four), 40 GB, power capped, sold as 8x A100 80G SXM") {
  const auto v = verdicts(box("four-plus-four") + " --offer cn-8x-a100-80g-sxm");
  CHECK(v.at("pcie-switches") == "fail");
  CHECK(v.at("form-factor") == "fail");
  CHECK(v.at("memory") == "fail");
  CHECK(v.at("interconnect") == "fail");
  CHECK(v.at("power-clocks") == "fail");
  CHECK(v.at("allreduce-busbw") == "fail");
  // From topo -m alone.
  CHECK(verdicts("--topo tests/data/rental/four-plus-four/topo.txt").at("pcie-switches") == "fail");
}

TEST_CASE("the all-reduce verdict gives bus and algorithm bandwidth, measured and modelled") {
  const auto r =
      run_cli("inspect --nccl-tests tests/data/rental/nvswitch-h100/all_reduce_perf.txt --offer cn-8x-h100-sxm");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("measured busbw 479.7 GB/s (algbw 274.1) at 8192 MiB on 8 GPUs; our model of hgx-h100 (offer "
                   "cn-8x-h100-sxm): busbw ") != std::string::npos);
  CHECK(r.out.find("(algbw ") != std::string::npos);
}

TEST_CASE("inspect on a measured profile from calibrate works as before") {
  const auto r = run_cli("inspect tests/data/box-hgx-h100.measured.json --offer cn-8x-h100-sxm --json");
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out).contains("checks"));
}
