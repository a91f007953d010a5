#include <doctest/doctest.h>

#include <string>

#include "models/ops/layer_ops.hpp"
#include "models/ops/tp_overlap.hpp"
#include "sim/core/errors.hpp"
#include "sim/report/train_results.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/step_memory.hpp"
#include "tests/support/builders.hpp"

using namespace cs;

namespace {

report::TrainResults eval(const scenario::Scenario& s) {
  return report::train_results(s, study::run_training(s, study::RunOptions{}));
}

std::string dense_tp_json(bool overlap, double sms, const std::string& dtype = "bf16") {
  return R"({"model": "llama3.1-70b", "cluster": "hgx-h100", "gpus": 8,
             "parallel": {"tp": 8, "pp": 1, "sp": true, "tp_comm_overlap": )" +
         std::string(overlap ? "true" : "false") + R"(, "tp_overlap_comm_sms": )" + std::to_string(sms) +
         R"(}, "training": {"seq": 4096, "global_batch": 2, "micro_batch": 1, "dtype": ")" + dtype +
         R"("}, "allow_oom": true})";
}

struct Tally {
  double comm_bytes = 0, shift_bytes = 0, rs_bytes = 0;
  int shifts = 0, rs_pieces = 0, async = 0, waits = 0;
};

Tally tally(const std::vector<models::Item>& items) {
  Tally t;
  for (const auto& it : items) {
    t.async += it.async ? 1 : 0;
    t.waits += it.wait > 0 ? 1 : 0;
    if (!it.comm) continue;
    t.comm_bytes += it.comm->bytes;
    if (it.comm->op == CollectiveOp::kShift) {
      t.shift_bytes += it.comm->bytes;
      ++t.shifts;
    }
    if (it.async && it.comm->op == CollectiveOp::kReduceScatter) {
      t.rs_bytes += it.comm->bytes;
      ++t.rs_pieces;
    }
  }
  return t;
}

}  // namespace

TEST_CASE(
    "TP overlap, forward by hand: each SP all-gather as TP - 1 shifts of one shard, each reduce-scatter in 4 "
    "pipelined pieces, the same FLOPs") {
  const auto m = test::shipped_model("llama3.1-8b");
  models::StepShape s;
  s.seq = 4096;
  s.tp = 4;
  s.sp = true;
  const auto plain = models::layer_forward(m, s);
  const models::TpOverlap o{.tp = 4, .comm_sm_fraction = 0.25};
  const auto over = models::tp_comm_overlap(plain, o);
  CHECK(models::model_flops(over) == doctest::Approx(models::model_flops(plain)));
  // Two all-gathers (before QKV and MLP-up) and two reduce-scatters (after out_proj and MLP-down),
  // each of the full activation b s h x 2 bytes (output / input in the nccl-tests convention).
  const double X = 4096.0 * 4096 * 2;
  const auto t = tally(over);
  CHECK(t.shifts == 2 * 3);
  CHECK(t.shift_bytes == doctest::Approx(2 * 3 * X / 4));  // a ring all-gather's per-rank traffic, (TP-1)/TP X
  CHECK(t.rs_pieces == 2 * 4);
  CHECK(t.rs_bytes == doctest::Approx(2 * X));
  CHECK(t.async == t.shifts + t.rs_pieces);
  CHECK(tally(plain).async == 0);
  // QKV in 4 chunks of a quarter of the rows; chunk c waits for shift c; full SMs (copy engines).
  std::vector<const models::Item*> qkv, out_proj;
  for (const auto& it : over) {
    if (it.op.name == "qkv_proj") qkv.push_back(&it);
    if (it.op.name == "out_proj") out_proj.push_back(&it);
  }
  REQUIRE(qkv.size() == 4);
  CHECK(qkv[0]->op.m == doctest::Approx(4096.0 / 4));
  CHECK(qkv[0]->wait == 0);
  CHECK(qkv[1]->wait == o.first_tag);
  CHECK(qkv[3]->wait == o.first_tag + 2);
  CHECK(qkv[2]->op.sm_share == 1.0);
  // out_proj in 4 chunks beside the reduce-scatter kernels, on 1 - 0.25 of the SMs.
  REQUIRE(out_proj.size() == 4);
  CHECK(out_proj[1]->op.sm_share == doctest::Approx(0.75));
  // The residual after it waits for the last piece.
  for (std::size_t i = 0; i < over.size(); ++i) {
    if (over[i].op.name != "attn_residual") continue;
    REQUIRE(i > 0);
    CHECK(over[i - 1].async);
    CHECK(over[i].wait == over[i - 1].tag);
  }
}

TEST_CASE(
    "TP overlap, backward: the data gradient's reduce-scatter under the weight-gradient GEMM (bulk), the "
    "output gradient's all-gather as a ring exchange under the dgrad") {
  const auto m = test::shipped_model("llama3.1-8b");
  models::StepShape s;
  s.seq = 4096;
  s.tp = 2;
  s.sp = true;
  s.fp8 = true;
  s.weight_bytes = 1;
  const auto plain = models::layer_backward(m, s);
  const auto over = models::tp_comm_overlap(plain, models::TpOverlap{.tp = 2, .comm_sm_fraction = 0.1});
  CHECK(models::model_flops(over) == doctest::Approx(models::model_flops(plain)));
  int bulk = 0;
  for (std::size_t i = 0; i + 1 < over.size(); ++i) {
    const auto& it = over[i];
    if (!(it.comm && it.async && it.comm->op == CollectiveOp::kReduceScatter)) continue;
    ++bulk;
    CHECK(std::string(it.comm->label) == "tp.reducescatter.bulk");
    CHECK(over[i - 1].op.name.ends_with(".dgrad"));  // after the GEMM whose output it reduces
    CHECK(over[i + 1].op.weight_gradient);           // under the wgrad GEMM, on 0.9 of the SMs
    CHECK(over[i + 1].op.sm_share == doctest::Approx(0.9));
    CHECK(over[i + 2].wait == it.tag);  // the norm's backward waits for it
  }
  CHECK(bulk == 2);  // QKV and MLP-up
  CHECK(tally(over).shifts == 2 * 1);
  // The LM head's collectives are outside Transformer Engine's linear layers: untouched.
  const auto head = models::head_backward(m, s);
  CHECK(tally(models::tp_comm_overlap(head, models::TpOverlap{.tp = 2})).async == 0);
}

TEST_CASE("a kernel on a share of the SMs: compute-bound time scales by 1 / share") {
  const auto s = test::scenario_from_json(dense_tp_json(false, 0.0));
  const auto& profile = s.profile;
  const workload::ComputeModel compute(profile, calib::Dtype::kBf16, false);
  models::Op g{"g", models::OpKind::kGemm, 8192, 8192, 8192, 2.0 * 8192 * 8192 * 8192, 3 * 8192.0 * 8192 * 2};
  const double full = compute.seconds(g) - profile.kernel_overhead.value;
  g.sm_share = 0.5;
  CHECK(compute.seconds(g) - profile.kernel_overhead.value == doctest::Approx(2 * full));
}

TEST_CASE(
    "TP communication overlap hides SP's collectives: less exposed communication and a shorter step, and SMs given "
    "to the collectives never make it faster") {
  const auto plain = eval(test::scenario_from_json(dense_tp_json(false, 0.0)));
  const auto free = eval(test::scenario_from_json(dense_tp_json(true, 0.0)));
  const auto costly = eval(test::scenario_from_json(dense_tp_json(true, 0.2)));
  CHECK(free.breakdown.exposed_comm < 0.5 * plain.breakdown.exposed_comm);
  CHECK(free.step_time_s < plain.step_time_s);
  CHECK(costly.step_time_s > free.step_time_s);
  CHECK(costly.breakdown.compute > free.breakdown.compute);
  // Model FLOPs per step are the same: MFU moves with the step time only.
  CHECK(free.mfu == doctest::Approx(plain.mfu * plain.step_time_s / free.step_time_s));
  // The same communication, in pieces: reduce-scatter inputs add up to the plain ones; the ring
  // exchange's shifts carry (TP - 1) / TP of the all-gathers' outputs (a ring all-gather's traffic).
  auto volume = [](const report::TrainResults& r, const std::string& prefix) {
    double v = 0;
    for (const auto& c : r.collectives)
      if (c.label.starts_with(prefix)) v += static_cast<double>(c.calls_per_gpu) * c.bytes_per_call;
    return v;
  };
  CHECK(volume(free, "tp.reducescatter") == doctest::Approx(volume(plain, "tp.reducescatter")));
  const double gathered_by_ring = volume(free, "tp.allgather.ring_exchange");
  CHECK(gathered_by_ring > 0);
  // Every decoder-layer all-gather becomes a ring exchange (TP 8: 7/8 of its output moves); the LM
  // head's all-gather stays whole.
  const double plain_gathered = volume(plain, "tp.allgather");
  const double kept = volume(free, "tp.allgather") - gathered_by_ring;
  CHECK(kept > 0);
  CHECK(kept < plain_gathered);
  CHECK(gathered_by_ring == doctest::Approx((plain_gathered - kept) * 7.0 / 8.0));
}

TEST_CASE("TP communication overlap needs sequence parallelism, and with TP 1 it is a no-op") {
  CHECK_THROWS_WITH_AS((void)test::scenario_from_json(R"({"model": "llama3.1-8b", "cluster": "hgx-h100",
      "parallel": {"tp": 8, "tp_comm_overlap": true}, "training": {"seq": 4096, "global_batch": 8}})"),
                       doctest::Contains("/parallel/tp_comm_overlap: TP communication overlap splits sequence "
                                         "parallelism's all-gathers"),
                       InputError);
  const auto one = test::scenario_from_json(R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "gpus": 1,
      "parallel": {"tp": 1, "tp_comm_overlap": true}, "training": {"seq": 4096, "global_batch": 1}})");
  CHECK_FALSE(one.tp_comm_overlap);
}

TEST_CASE("TP overlap's userbuffers by hand: 10 full-sequence activation buffers per GPU in the memory total") {
  const auto plain = workload::training_memory_of(test::scenario_from_json(dense_tp_json(false, 0.0)));
  const auto over = workload::training_memory_of(test::scenario_from_json(dense_tp_json(true, 0.1)));
  const double buffers = 10 * 4096.0 * 8192 * 2;  // roles x tokens x hidden (70B) x 2 bytes
  CHECK(over.other - plain.other == doctest::Approx(buffers));
  CHECK(over.total - plain.total == doctest::Approx(buffers));
  CHECK(over.activations == plain.activations);
}
