#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <span>

#include "calibration/profile/kernel_tables.hpp"
#include "calibration/profile/latency_table.hpp"
#include "sim/config/catalog.hpp"
#include "sim/config/kernel_table_file.hpp"
#include "sim/config/machine_file.hpp"
#include "sim/core/errors.hpp"
#include "sim/workload/compute_model.hpp"

using cs::calib::KernelSource;
using cs::calib::KernelTable;
using cs::calib::LatencyTable;

namespace {

/// A 2-axis table with rows on a 2 x 2 grid (and one lone row under another key).
LatencyTable grid() {
  LatencyTable t({"m", "n"});
  const double rows[][3] = {{16, 1024, 1e-5}, {16, 4096, 4e-5}, {64, 1024, 2e-5}, {64, 4096, 8e-5}};
  for (const auto& r : rows) {
    const double axes[] = {r[0], r[1]};
    t.add("bf16", axes, r[2]);
  }
  const double lone[] = {32, 2048};
  t.add("fp8", lone, 3e-5);
  t.finish();
  return t;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() : path(std::filesystem::temp_directory_path() / ("cs_kt_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name) << text; }
};

}  // namespace

TEST_CASE("a latency table returns a measured row's latency exactly at its shape, marked measured") {
  const auto t = grid();
  const double at[] = {64, 1024};
  const auto r = t.lookup("bf16", at);
  REQUIRE(r);
  CHECK(r->seconds == doctest::Approx(2e-5).epsilon(1e-12));
  CHECK(r->source == KernelSource::kMeasured);
}

TEST_CASE("a point between grid points lies between their latencies, interpolated in log-log") {
  const auto t = grid();
  const double at[] = {32, 2048};  // geometric midpoints of both axes
  const auto r = t.lookup("bf16", at);
  REQUIRE(r);
  CHECK(r->source == KernelSource::kInterpolated);
  CHECK(r->seconds > 1e-5);
  CHECK(r->seconds < 8e-5);
  // log-linear in both: the geometric mean of the four corners.
  CHECK(r->seconds == doctest::Approx(std::pow(1e-5 * 4e-5 * 2e-5 * 8e-5, 0.25)).epsilon(1e-9));
  // On one axis only: between the two rows of that edge.
  const double edge[] = {16, 2048};
  const auto e = t.lookup("bf16", edge);
  REQUIRE(e);
  CHECK(e->seconds == doctest::Approx(2e-5).epsilon(1e-9));  // sqrt(1e-5 * 4e-5)
}

TEST_CASE("beyond the measured range a row is scaled by the model and marked extrapolated") {
  const auto t = grid();
  const LatencyTable::Model linear_in_m = [](std::span<const double> x) { return x[0] * x[1]; };
  const double beyond[] = {256, 4096};  // m 4x the largest measured
  const auto r = t.lookup("bf16", beyond, linear_in_m);
  REQUIRE(r);
  CHECK(r->source == KernelSource::kExtrapolated);
  CHECK(r->seconds == doctest::Approx(8e-5 * 4).epsilon(1e-9));
  // Without a model, the edge row as it is, still marked.
  const auto bare = t.lookup("bf16", beyond);
  REQUIRE(bare);
  CHECK(bare->seconds == doctest::Approx(8e-5).epsilon(1e-9));
  CHECK(bare->source == KernelSource::kExtrapolated);
}

TEST_CASE("a latency table never matches across keys, and says so with no answer") {
  const auto t = grid();
  const double at[] = {64, 1024};
  CHECK_FALSE(t.lookup("fp16", at));
  const auto f = t.lookup("fp8", at);  // the fp8 key's only row, reached by clamping
  REQUIRE(f);
  CHECK(f->source == KernelSource::kExtrapolated);
  CHECK(t.rows() == 5);
  CHECK(t.coverage("bf16", 0).values == 2);
  CHECK(t.coverage("bf16", 1).max == 4096);
}

TEST_CASE("a GEMM table file is read by column name, gzip or not, and a bad cell names its line and column") {
  TempDir d;
  d.write("gemm_perf.csv",
          "k,gemm_dtype,m,n,latency,extra\n1024,bfloat16,16,1024,0.01,x\n1024,bfloat16,32,1024,0.02,y\n");
  const auto t = cs::config::read_kernel_table((d.path / "gemm_perf.csv").string(), KernelTable::kGemm);
  const double at[] = {32, 1024, 1024};
  const auto r = t.lookup("bfloat16", at);
  REQUIRE(r);
  CHECK(r->seconds == doctest::Approx(2e-5));  // ms in the file
  d.write("bad.csv", "gemm_dtype,m,n,k,latency\nbfloat16,16,1024,1024,-1\n");
  try {
    (void)cs::config::read_kernel_table((d.path / "bad.csv").string(), KernelTable::kGemm);
    FAIL("expected an InputError");
  } catch (const cs::InputError& e) {
    CHECK(std::string(e.what()) ==
          (d.path / "bad.csv").string() + ":2: column 'latency': expected a positive number; got '-1'");
  }
  d.write("nocol.csv", "gemm_dtype,m,n,latency\nbfloat16,16,1024,1\n");
  CHECK_THROWS_WITH_AS(
      (void)cs::config::read_kernel_table((d.path / "nocol.csv").string(), KernelTable::kGemm),
      doctest::Contains("no column 'k'; a gemm_perf table needs the columns gemm_dtype, m, n, k, latency"),
      cs::InputError);
}

TEST_CASE("the shipped H100 tables give a 4096 x 8192 x 8192 bf16 GEMM its measured latency through the profile") {
  const cs::config::Catalog catalog(CLUSTERSIM_DATA_DIR);
  const auto box = cs::config::resolve_box(catalog, "test", {.cluster = "hgx-h100", .profile = "", .fabric = ""});
  REQUIRE(box.profile.kernel_tables.attached());
  const cs::workload::ComputeModel cm(box.profile, cs::calib::Dtype::kBf16);
  cs::models::Op op{"x", cs::models::OpKind::kGemm, 4096, 8192, 8192, 2.0 * 4096 * 8192 * 8192, 0};
  const auto t = cm.timed(op);
  CHECK(t.source == KernelSource::kMeasured);
  // The table's row (h100_sxm/gemm_perf: bfloat16,4096,8192,8192) plus the eager launch gap beyond
  // the in-graph one (2 us - 1 us, the profile's assumptions).
  const double axes[] = {4096, 8192, 8192};
  const auto row = box.profile.kernel_tables.table(KernelTable::kGemm)->lookup("bfloat16", axes);
  REQUIRE(box.profile.kernel_tables.refs.size() == 2);
  CHECK(box.profile.kernel_tables.refs[0].id == "h100_sxm");
  CHECK(box.profile.kernel_tables.source_of(KernelTable::kGemm)->id == "h100_sxm");
  CHECK(box.profile.kernel_tables.source_of(KernelTable::kTrainAttention)->id == "h200_probe");
  REQUIRE(row);
  CHECK(t.seconds == doctest::Approx(row->seconds + 1e-6).epsilon(1e-9));
  // A physical rate: below the bf16 peak, above half of it for this large square-ish shape.
  const double rate = op.flops / t.seconds;
  CHECK(rate < box.profile.peak(cs::calib::Dtype::kBf16).value);
  CHECK(rate > 0.5 * box.profile.peak(cs::calib::Dtype::kBf16).value);
}

TEST_CASE("the fused MoE table: a measured row exactly, and beyond its most tokens scaled with them, marked") {
  const cs::config::Catalog catalog(CLUSTERSIM_DATA_DIR);
  const auto box = cs::config::resolve_box(catalog, "test", {.cluster = "hgx-h100", .profile = "", .fabric = ""});
  // Mixtral 8x7B's experts split TP 2, FP8 (h100_sxm/moe_perf: its largest row, 16,384 tokens,
  // 4.42237 ms).
  cs::calib::MoeQuery q{
      .dtype = "fp8", .tokens = 16384, .hidden = 4096, .inter = 14336, .topk = 2, .experts = 8, .tp = 2};
  const auto edge = cs::calib::table_moe(box.profile.kernel_tables, q);
  REQUIRE(edge);
  CHECK(edge->source == KernelSource::kMeasured);
  CHECK(edge->seconds == doctest::Approx(4.42237e-3).epsilon(1e-9));
  q.tokens = 4 * 16384;
  const auto beyond = cs::calib::table_moe(box.profile.kernel_tables, q);
  REQUIRE(beyond);
  CHECK(beyond->source == KernelSource::kExtrapolated);
  CHECK(beyond->seconds == doctest::Approx(4 * edge->seconds).epsilon(1e-9));
  // A physical rate: 4 x the work never runs in the largest row's time (it read 4.42 ms here,
  // 5.2 PFLOP/s of FP8, before the scaling).
  const double flops = 2.0 * q.tokens * q.topk * 3.0 * q.hidden * q.inter / q.tp;
  CHECK(flops / beyond->seconds < box.profile.peak(cs::calib::Dtype::kFp8).value);
}

TEST_CASE("an FP8 GEMM with static activation scales is the table's time less the dynamic scale's amax pass") {
  const cs::config::Catalog catalog(CLUSTERSIM_DATA_DIR);
  const auto box = cs::config::resolve_box(catalog, "test", {.cluster = "hgx-h100", .profile = "", .fabric = ""});
  const auto& p = box.profile;
  const cs::workload::ComputeModel cm(p, cs::calib::Dtype::kFp8, true);
  for (const double m : {234.0, 8192.0}) {
    cs::models::Op dynamic{"x", cs::models::OpKind::kGemm, m, 6144, 4096, 2.0 * m * 6144 * 4096, 0};
    cs::models::Op fixed = dynamic;
    fixed.input_static_scale = true;
    const auto a = cm.timed(dynamic), b = cm.timed(fixed);
    // The amax pass the table's rows include: the bf16 input read once at the achieved HBM rate,
    // and its launch inside a CUDA graph.
    const double amax = m * 4096 * 2.0 / (p.hbm_bandwidth.value * p.hbm_fraction.value) + p.graph_kernel_overhead.value;
    CHECK(b.seconds == doctest::Approx(a.seconds - amax).epsilon(1e-9));
    CHECK(b.source == a.source);
  }
  // Only FP8: a bf16 GEMM is the table's either way.
  const cs::workload::ComputeModel bf16(p, cs::calib::Dtype::kBf16, true);
  cs::models::Op op{"x", cs::models::OpKind::kGemm, 234, 6144, 4096, 2.0 * 234 * 6144 * 4096, 0};
  cs::models::Op marked = op;
  marked.input_static_scale = true;
  CHECK(bf16.timed(op).seconds == bf16.timed(marked).seconds);
}

TEST_CASE(
    "a decode attention lookup beyond its heads' measured range scales its own rows, never another head count's") {
  // Measured grids are not products: aiconfigurator stops each head configuration's batch x
  // sequence at a token budget. Here 32 heads / 8 K/V heads stop at 1,023 cached tokens for batch
  // 256, while 8 / 8 (a quarter of the work per token, so faster) goes on to 4,095.
  TempDir d;
  d.write("generation_attention_perf.csv",
          "kernel_source,batch_size,num_heads,num_key_value_heads,head_dim,window_size,kv_cache_dtype,step,latency\n"
          "torch_flow,256,32,8,128,0,bfloat16,511,0.19\n"
          "torch_flow,256,32,8,128,0,bfloat16,1023,0.37\n"
          "torch_flow,128,32,8,128,0,bfloat16,2047,0.37\n"
          "torch_flow,256,8,8,128,0,bfloat16,1023,0.10\n"
          "torch_flow,256,8,8,128,0,bfloat16,2047,0.19\n"
          "torch_flow,256,8,8,128,0,bfloat16,4095,0.37\n");
  cs::calib::KernelTables tables;
  tables.refs.push_back({});
  tables.refs.back().id = "test";
  tables.refs.back().data = cs::config::open_kernel_folder(d.path.string());
  // The caller's model (batch, sequence, heads, K/V heads): the K/V bytes read.
  const LatencyTable::Model kv_bytes = [](std::span<const double> x) { return x[0] * x[1] * x[3]; };
  cs::calib::AttentionQuery q;
  q.batch = 256;
  q.heads = 32;
  q.kv_heads = 8;
  // 2,048 cached tokens (step 2,047): measured at batch 128 for this head count; batch 256 is
  // beyond its budget there, so batch 128's row doubles (sequences are independent work).
  const auto r = cs::calib::table_generation_attention(tables, q, 2048, kv_bytes);
  REQUIRE(r);
  CHECK(r->source == KernelSource::kExtrapolated);
  CHECK(r->seconds == doctest::Approx(2 * 0.37e-3).epsilon(1e-9));
  // Inside the range: the row itself.
  const auto in = cs::calib::table_generation_attention(tables, q, 1024, kv_bytes);
  REQUIRE(in);
  CHECK(in->source == KernelSource::kMeasured);
  CHECK(in->seconds == doctest::Approx(0.37e-3).epsilon(1e-9));
}
