#include <doctest/doctest.h>

#include "calibration/profile/hardware_profile.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/core/errors.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

TEST_CASE("every shipped profile loads, cites a source for each figure, and has bf16 and HBM rates") {
  const auto c = test::catalog();
  const auto ids = c.ids(config::CatalogKind::kProfile);
  CHECK(ids.size() >= 8);
  for (const auto& id : ids) {
    CAPTURE(id);
    const auto p = config::parse_profile(config::load(c.locate(config::CatalogKind::kProfile, id, "t", "")), id);
    CHECK(p.peak(calib::Dtype::kBf16).value > 1e14);
    CHECK_FALSE(p.peak(calib::Dtype::kBf16).source.empty());
    CHECK(p.hbm_bandwidth.value > 0.8e12);  // GDDR6 parts (L40S, L20) have 864 GB/s
    CHECK(p.hbm_capacity.value > 20e9);     // RTX 4090: 24 GB
    CHECK(p.peak(calib::Dtype::kFp32).value > 1e13);
    CHECK_FALSE(p.gemm.source.empty());
  }
}

TEST_CASE("datasheet peaks are as published (H- cases of shared/validation)") {
  const auto c = test::catalog();
  auto load = [&](const char* id) {
    return config::parse_profile(config::load(c.locate(config::CatalogKind::kProfile, id, "t", "")), id);
  };
  CHECK(load("h100-sxm").peak(calib::Dtype::kBf16).value == doctest::Approx(989.4e12));
  CHECK(load("h100-sxm").peak(calib::Dtype::kFp8).value == doctest::Approx(1978.9e12));
  CHECK(load("a100-sxm-80").peak(calib::Dtype::kBf16).value == doctest::Approx(312e12));
  CHECK(load("h200-sxm").hbm_bandwidth.value == doctest::Approx(4.8e12));
  CHECK(load("h100-pcie").hbm_bandwidth.value == doctest::Approx(2.0e12));
  CHECK_THROWS_AS((void)load("a100-sxm-80").peak(calib::Dtype::kFp8), InputError);
}

TEST_CASE("the 2026 rental parts carry their datasheet peaks, FP4 on Blackwell only") {
  const auto c = test::catalog();
  auto load = [&](const char* id) {
    return config::parse_profile(config::load(c.locate(config::CatalogKind::kProfile, id, "t", "")), id);
  };
  // shared/reference/gpus-2026.md, dense rates.
  CHECK(load("b200").peak(calib::Dtype::kBf16).value == doctest::Approx(2250e12));
  CHECK(load("b200").peak(calib::Dtype::kFp8).value == doctest::Approx(4500e12));
  CHECK(load("b200").peak(calib::Dtype::kFp4).value == doctest::Approx(9000e12));
  CHECK(load("gb200").peak(calib::Dtype::kFp4).value == doctest::Approx(10000e12));
  CHECK(load("gb200").hbm_capacity.value == doctest::Approx(186e9));
  CHECK(load("h20").peak(calib::Dtype::kBf16).value == doctest::Approx(148e12));
  CHECK(load("h20").hbm_bandwidth.value == doctest::Approx(4.0e12));
  CHECK(load("a800-sxm-80").peak(calib::Dtype::kBf16).value == doctest::Approx(312e12));
  CHECK(load("l40s").peak(calib::Dtype::kFp8).value == doctest::Approx(733e12));
  CHECK(load("l20").peak(calib::Dtype::kBf16).value == doctest::Approx(119.5e12));
  CHECK(load("rtx4090").peak(calib::Dtype::kBf16).value == doctest::Approx(165.2e12));
  CHECK(load("rtx4090").hbm_bandwidth.value == doctest::Approx(1008e9));
  for (const char* id : {"h20", "a800-sxm-80", "l40s", "l20", "rtx4090", "h100-sxm"}) {
    CAPTURE(id);
    CHECK_THROWS_AS((void)load(id).peak(calib::Dtype::kFp4), InputError);
  }
}

TEST_CASE("fp4 is a profile dtype: parsed, named and written back") {
  calib::Dtype d{};
  REQUIRE(calib::parse_dtype("fp4", d));
  CHECK(d == calib::Dtype::kFp4);
  CHECK(std::string(calib::dtype_name(calib::Dtype::kFp4)) == "fp4");
  CHECK_FALSE(calib::parse_dtype("fp6", d));
}

TEST_CASE("GEMM efficiency saturates with size and never exceeds its maximum") {
  calib::GemmEfficiency g;
  g.max_fraction = 0.8;
  g.half_rate_dim = 64;
  CHECK(g.at(64, 1e9, 1e9) == doctest::Approx(0.4).epsilon(1e-6));
  CHECK(g.at(8192, 8192, 8192) < 0.8);
  CHECK(g.at(8192, 8192, 8192) > 0.78);
  CHECK(g.at(1, 4096, 4096) < 0.02);
}

TEST_CASE("a profile of another schema version is rejected, saying which") {
  CHECK_THROWS_WITH_AS((void)config::parse_profile(config::parse_text(R"({"schema_version": 7})", "p.json"), "p"),
                       "p.json: /schema_version: expected schema version 1 or 2; got 7 (written by a different "
                       "clustersim; re-run calibration)",
                       InputError);
}
