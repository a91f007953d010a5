// GEMM efficiency by shape (issue 11 item 3): tile and wave counts by hand, the memory-bound regime
// of thin GEMMs, per-dtype ceilings, grouped GEMMs, and the invariants the model must keep.
#include <doctest/doctest.h>

#include "calibration/profile/hardware_profile.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/profile_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/workload/compute_model.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

namespace {

calib::HardwareProfile shipped(const char* id) {
  const auto c = test::catalog();
  return config::parse_profile(config::load(c.locate(config::CatalogKind::kProfile, id, "t", "")), id);
}

/// A profile with one 128x256 tile, no k fill and ceiling 1, so the fractions are pure counts.
calib::HardwareProfile counting(double sms) {
  calib::HardwareProfile p;
  p.id = "counting";
  p.matrix_peak[calib::Dtype::kBf16].value = 7.5e12 * sms;  // per-SM rate fixed: peak scales with SMs
  p.matrix_peak[calib::Dtype::kFp8].value = 15e12 * sms;
  p.matrix_peak[calib::Dtype::kFp32].value = 1e12 * sms;
  p.hbm_bandwidth.value = 3e12;
  p.hbm_fraction.value = 1.0;
  p.gemm.max_fraction = 0.8;
  p.gemm_shape.sms = sms;
  p.gemm_shape.tiles = {{128, 256, 1.0}};
  p.gemm_shape.k_fill = 0;
  p.gemm_shape.ceiling = {{calib::Dtype::kBf16, 1.0}, {calib::Dtype::kFp8, 1.0}};
  return p;
}

models::Op gemm_op(double m, double n, double k, double bytes_per_element, double groups = 1) {
  models::Op op{"g",
                models::OpKind::kGemm,
                m,
                n,
                k,
                2.0 * groups * m * n * k,
                groups * (m * k + k * n + m * n) * bytes_per_element};
  op.groups = groups;
  return op;
}

}  // namespace

TEST_CASE("a 4096^3 GEMM on 132 SMs: 512 tiles of 128x256 in 4 waves, 512/528 of the SMs busy") {
  const auto p = counting(132);
  const auto g = p.gemm_shape.map(1.0, 4096, 4096, 4096);
  CHECK(g.tiles == 512);  // 4096/128 x 4096/256 = 32 x 16
  CHECK(g.waves == 4);    // ceil(512 / 132)
  CHECK(g.pad_util == 1.0);
  CHECK(g.wave_util == doctest::Approx(512.0 / 528.0));
  CHECK(g.fraction == doctest::Approx(512.0 / 528.0));
  // Padding: m = 4000 still needs 32 tile rows; the edge tiles are 4000/4096 full.
  CHECK(p.gemm_shape.map(1.0, 4000, 4096, 4096).fraction == doctest::Approx(4000.0 / 4096 * 512.0 / 528.0));
  // The shipped H100 profile picks the same tile and adds its k fill and bf16 ceiling.
  const auto h = shipped("h100-sxm");
  const auto hm = h.gemm_mapping(calib::Dtype::kBf16, 4096, 4096, 4096);
  CHECK(hm.tiles == 512);
  CHECK(hm.waves == 4);
  CHECK(hm.splits == 1);
  CHECK(hm.fraction ==
        doctest::Approx(h.gemm_ceiling(calib::Dtype::kBf16) * 512.0 / 528.0 * 4096.0 / (4096.0 + 128.0)));
}

TEST_CASE("a shape just past a wave boundary costs more per FLOP than one just under it") {
  const auto h = shipped("h100-sxm");
  const workload::ComputeModel cm(h, calib::Dtype::kBf16);
  // 1536 x 2816: 12 x 11 = 132 tiles of 128x256, one full wave; one more column spills into a second.
  const auto under = h.gemm_mapping(calib::Dtype::kBf16, 1536, 2816, 4096);
  CHECK(under.tiles == 132);
  CHECK(under.waves == 1);
  const auto a = gemm_op(1536, 2816, 4096, 2), b = gemm_op(1536, 2817, 4096, 2);
  CHECK(cm.seconds(b) / b.flops > 1.3 * cm.seconds(a) / a.flops);
}

TEST_CASE("thin decode GEMMs (m = 1..8) are bound by HBM, not by the tensor cores") {
  const auto h = shipped("h100-sxm");
  const workload::ComputeModel cm(h, calib::Dtype::kBf16);
  const double hbm = h.hbm_bandwidth.value * h.hbm_fraction.value;
  for (double m : {1.0, 2.0, 4.0, 8.0}) {
    CAPTURE(m);
    const auto op = gemm_op(m, 4096, 4096, 2);
    const double compute =
        op.flops / (h.peak(calib::Dtype::kBf16).value * h.gemm_fraction(calib::Dtype::kBf16, op.m, op.n, op.k));
    CHECK(compute < op.bytes / hbm);
    CHECK(cm.seconds(op) == doctest::Approx(op.bytes / hbm + h.kernel_overhead.value));
  }
}

TEST_CASE("invariants: more SMs never slower, a bigger k never a lower rate, FP8 never slower than BF16") {
  const auto h = shipped("h100-sxm");
  const workload::ComputeModel bf16(h, calib::Dtype::kBf16), fp8(h, calib::Dtype::kFp8);
  for (double m : {1.0, 8.0, 100.0, 1000.0, 4096.0, 10000.0}) {
    for (double n : {128.0, 1000.0, 4096.0, 28672.0}) {
      for (double groups : {1.0, 8.0}) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(groups);
        double last_seconds = 1e30;
        for (double sms = 60; sms <= 160; sms += 1) {
          const auto p = counting(sms);
          const double t =
              2.0 * m * n * 4096 /
              (p.peak(calib::Dtype::kBf16).value * p.gemm_fraction(calib::Dtype::kBf16, m, n, 4096, groups));
          CHECK(t <= last_seconds * (1 + 1e-12));
          last_seconds = t;
        }
        double last_fraction = 0;
        for (double k = 16; k <= 65536; k *= 2) {
          const double f = h.gemm_fraction(calib::Dtype::kBf16, m, n, k, groups);
          CHECK(f >= last_fraction * (1 - 1e-12));
          last_fraction = f;
          // FP8 moves half the operand bytes of bf16; with equal bytes it must still not be slower.
          CHECK(fp8.seconds(gemm_op(m, n, k, 1, groups)) <= bf16.seconds(gemm_op(m, n, k, 2, groups)));
          CHECK(fp8.seconds(gemm_op(m, n, k, 2, groups)) <= bf16.seconds(gemm_op(m, n, k, 2, groups)));
        }
      }
    }
  }
  // FP8 reaches a smaller fraction of its doubled peak than BF16 does on H100 (cited ceilings).
  CHECK(h.gemm_ceiling(calib::Dtype::kFp8) < h.gemm_ceiling(calib::Dtype::kBf16));
}

TEST_CASE("64 experts of 8 tokens: one grouped GEMM shares the waves and beats 64 kernels, by hand count") {
  const auto p = counting(132);
  // Each expert: m = 8 (one 128-row tile, 8/128 of it used), n = 2048 (8 tiles of 256).
  const auto one = p.gemm_shape.map(1.0, 8, 2048, 4096);
  CHECK(one.tiles == 8);
  CHECK(one.waves == 1);
  const auto group = p.gemm_shape.map(1.0, 8, 2048, 4096, 64);
  CHECK(group.tiles == 512);  // 64 x 8
  CHECK(group.waves == 4);    // ceil(512 / 132), against 64 separate one-wave kernels
  CHECK(group.fraction == doctest::Approx(8.0 / 128 * 512.0 / 528.0));
  CHECK(one.fraction == doctest::Approx(8.0 / 128 * 8.0 / 132.0));
  // Time at the tensor cores: 4 waves for the group against 64 waves one by one, and 64 launches.
  const workload::ComputeModel cm(p, calib::Dtype::kBf16);
  auto grouped = gemm_op(8, 2048, 4096, 0, 64);
  auto single = gemm_op(8, 2048, 4096, 0);
  CHECK(cm.seconds(grouped) < 64 * cm.seconds(single));
  CHECK(64 * single.flops / (p.peak(calib::Dtype::kBf16).value * one.fraction) ==
        doctest::Approx(16.0 * grouped.flops / (p.peak(calib::Dtype::kBf16).value * group.fraction)));
  // The shipped H100 profile: the grouped kernel is faster than 64 kernels too.
  const auto h = shipped("h100-sxm");
  const workload::ComputeModel hm(h, calib::Dtype::kBf16);
  CHECK(hm.seconds(gemm_op(8, 14336, 4096, 2, 64)) < 64 * hm.seconds(gemm_op(8, 14336, 4096, 2)));
}

TEST_CASE(
    "a measured GEMM table still overrides the shape model, and a profile without a shape model keeps the curve") {
  auto h = shipped("h100-sxm");
  REQUIRE(h.gemm_shape.enabled());
  h.gemm_table.push_back({calib::Dtype::kBf16, 4096, 4096, 4096, 600e12});
  CHECK(h.gemm_fraction(calib::Dtype::kBf16, 4096, 4096, 4096) == doctest::Approx(600e12 / 989.4e12));
  CHECK(h.gemm_fraction(calib::Dtype::kBf16, 4096, 4096, 4096, 8) == doctest::Approx(600e12 / 989.4e12));
  CHECK(h.gemm_provenance(calib::Dtype::kBf16) == calib::Provenance::kMeasured);
  // The FP8 rate has no measured point: still the shape model.
  CHECK(h.gemm_fraction(calib::Dtype::kFp8, 4096, 4096, 4096) ==
        doctest::Approx(h.gemm_mapping(calib::Dtype::kFp8, 4096, 4096, 4096).fraction));
  auto old = h;
  old.gemm_table.clear();
  old.gemm_shape = {};
  CHECK(old.gemm_fraction(calib::Dtype::kBf16, 512, 4096, 4096) == doctest::Approx(old.gemm.at(512, 4096, 4096)));
}

TEST_CASE("a profile's gemm_shape is checked: a bad tile names its JSON pointer") {
  auto doc = config::load(test::catalog().locate(config::CatalogKind::kProfile, "h100-sxm", "t", ""));
  doc.json["achieved"]["gemm_shape"]["tiles"][1]["efficiency"] = 1.5;
  CHECK_THROWS_WITH_AS((void)config::parse_profile(doc, "h100-sxm"),
                       doctest::Contains("/achieved/gemm_shape/tiles/1/efficiency"), InputError);
  doc.json["achieved"]["gemm_shape"]["tiles"][1]["efficiency"] = 0.9;
  doc.json["achieved"]["gemm_shape"]["ceiling"]["fp9"] = 0.5;
  CHECK_THROWS_WITH_AS((void)config::parse_profile(doc, "h100-sxm"),
                       doctest::Contains("/achieved/gemm_shape/ceiling/fp9"), InputError);
}

TEST_CASE("routed experts: rows vary around their mean, so 128 rows per expert need about 1.5 row tiles of 128") {
  auto p = counting(132);
  p.gemm_shape.tiles = {{128, 128, 1.0}};
  // Poisson(128) rows, normal approximation with continuity correction: P(rows >= 1) = 1,
  // P(rows >= 129) = 1 - Phi(0.5 / sqrt(128)) = 0.4824, P(rows >= 257) = 0.
  const auto even = p.gemm_shape.map(1.0, 128, 2048, 4096, 8);
  const auto routed = p.gemm_shape.map(1.0, 128, 2048, 4096, 8, 0, true);
  CHECK(even.tiles == 8 * 16);
  CHECK(even.waves == 1);
  CHECK(routed.tiles == doctest::Approx(8 * 16 * 1.4824).epsilon(1e-3));
  CHECK(routed.waves == 2);
  CHECK(routed.fraction == doctest::Approx(1 / 1.4824 * routed.tiles / 264).epsilon(1e-3));
  CHECK(routed.fraction < 0.6 * even.fraction);
  // Never fewer tiles than the even split: 8 rows per expert still take one row tile each.
  CHECK(p.gemm_shape.map(1.0, 8, 2048, 4096, 64, 0, true).tiles == 64 * 16);
  // Thousands of rows per expert: the spread costs little.
  const auto big = p.gemm_shape.map(1.0, 8192, 2048, 4096, 8, 0, true);
  CHECK(big.tiles < 8 * 16 * 65.0);
  CHECK(big.tiles >= 8 * 16 * 64.0);
}
