#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <cstring>
#include <string>

#include "sim/core/errors.hpp"
#include "sim/report/train_results.hpp"
#include "sim/study/training_run.hpp"
#include "sim/workload/pipeline_schedule.hpp"
#include "sim/workload/step_memory.hpp"
#include "tests/support/builders.hpp"

using namespace cs;
using workload::BlockRef;

namespace {

/// Where micro-batch `micro`'s chunk runs on rank `rank`: its position along its direction.
int position(int rank, int chunk, int stages) { return chunk == 0 ? rank : stages - 1 - rank; }

/// The rank at `pos` along direction `chunk`.
int rank_at(int pos, int chunk, int stages) { return chunk == 0 ? pos : stages - 1 - pos; }

/// Block times in whole units: a forward, a backward's input-gradient half, its weight-gradient
/// half (a whole backward is both).
struct Times {
  int f = 1, b = 1, w = 1;
};

/// Runs every rank's DualPipe blocks in order, each block starting when its inputs are there (a
/// forward: the previous position's forward; a backward: the next position's backward and its own
/// forward; a W: its split backward) and communication free; a pair starts when both halves'
/// inputs are there, as the simulator interleaves them. Returns the makespan, -1 on deadlock.
int run_schedule(int stages, int micro, Times d = {}) {
  std::vector<std::vector<BlockRef>> order;
  for (int r = 0; r < stages; ++r) order.push_back(workload::dualpipe(r, stages, micro));
  std::map<std::tuple<int, bool, int>, int> done;  // (rank, forward, micro) -> end time
  std::vector<std::size_t> next(static_cast<std::size_t>(stages), 0);
  std::vector<int> clock(static_cast<std::size_t>(stages), 0);
  auto ready = [&](int r, const BlockRef& b) -> int {  // earliest start, -1 if an input is missing
    if (b.weight) return done.contains({r, false, b.micro}) ? 0 : -1;
    const int pos = position(r, b.chunk, stages);
    int t = 0;
    if (b.forward && pos > 0) {
      auto it = done.find({rank_at(pos - 1, b.chunk, stages), true, b.micro});
      if (it == done.end()) return -1;
      t = it->second;
    }
    if (!b.forward) {
      auto own = done.find({r, true, b.micro});
      if (own == done.end()) return -1;
      t = own->second;
      if (pos + 1 < stages) {
        auto it = done.find({rank_at(pos + 1, b.chunk, stages), false, b.micro});
        if (it == done.end()) return -1;
        t = std::max(t, it->second);
      }
    }
    return t;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < stages; ++r) {
      auto& i = next[static_cast<std::size_t>(r)];
      const auto& blocks = order[static_cast<std::size_t>(r)];
      while (i < blocks.size()) {
        const auto& b = blocks[i];
        const bool pair = b.paired;
        int t = ready(r, b);
        if (t < 0) break;
        if (pair) {
          const int t2 = ready(r, blocks[i + 1]);
          if (t2 < 0) break;
          t = std::max(t, t2);
        }
        auto length = [&](const BlockRef& x) { return x.forward ? d.f : x.weight ? d.w : x.split ? d.b : d.b + d.w; };
        int& c = clock[static_cast<std::size_t>(r)];
        c = std::max(c, t) + length(b);
        if (!b.weight) done[{r, b.forward, b.micro}] = c;
        if (pair) {
          c += length(blocks[i + 1]);
          done[{r, false, blocks[i + 1].micro}] = c;
          ++i;
        }
        ++i;
        progress = true;
      }
    }
  }
  for (int r = 0; r < stages; ++r)
    if (next[static_cast<std::size_t>(r)] != order[static_cast<std::size_t>(r)].size()) return -1;
  return *std::max_element(clock.begin(), clock.end());
}

}  // namespace

TEST_CASE("DualPipe: every rank runs each micro-batch of both directions forward and backward once, W after its B") {
  for (int stages : {2, 4, 6, 8, 16}) {
    for (int micro : {2 * stages, 2 * stages + 2, 4 * stages + 6}) {
      for (int r = 0; r < stages; ++r) {
        const auto blocks = workload::dualpipe(r, stages, micro);
        std::set<std::tuple<int, int, int>> seen;  // (kind 0 F / 1 B / 2 W, micro, chunk)
        std::set<int> split, forwarded, backwarded;
        for (std::size_t i = 0; i < blocks.size(); ++i) {
          const auto& b = blocks[i];
          CHECK(b.chunk == (b.micro < micro / 2 ? 0 : 1));
          const int kind = b.forward ? 0 : (b.weight ? 2 : 1);
          CHECK(seen.insert({kind, b.micro, b.chunk}).second);
          if (b.forward) forwarded.insert(b.micro);
          if (!b.forward && !b.weight) {
            CHECK(forwarded.contains(b.micro));
            backwarded.insert(b.micro);
            if (b.split) split.insert(b.micro);
          }
          if (b.weight) {
            CHECK(split.contains(b.micro));
            CHECK(backwarded.contains(b.micro));
          }
          if (b.paired) {
            REQUIRE(i + 1 < blocks.size());
            CHECK_FALSE(blocks[i + 1].forward);
            CHECK(blocks[i + 1].chunk != b.chunk);
          }
        }
        CHECK(forwarded.size() == static_cast<std::size_t>(micro));
        CHECK(backwarded.size() == static_cast<std::size_t>(micro));
        // The weight gradients of the first and last rank's late direction are deferred (zero bubble).
        CHECK(std::count_if(blocks.begin(), blocks.end(), [](const BlockRef& b) { return b.weight; }) ==
              static_cast<std::ptrdiff_t>(split.size()));
      }
    }
  }
}

TEST_CASE("DualPipe never deadlocks, and its bubble is the published (P/2 - 1)(F&B + B - 3W)") {
  // DeepSeek-V3 technical report, Table 2: DualPipe's bubble against 1F1B's (P - 1)(F + B), with
  // B a whole backward and F&B a pair run back to back (no communication to hide here). The
  // formula is exact where a forward takes as long as a backward's input-gradient half (the
  // zero-bubble papers' premise) and an upper bound otherwise.
  for (const Times d : {Times{1, 1, 1}, Times{2, 2, 1}, Times{3, 3, 2}, Times{3, 4, 2}, Times{4, 3, 1}}) {
    for (int stages : {2, 4, 8, 16}) {
      for (int micro : {2 * stages, 2 * stages + 4, 6 * stages}) {
        CAPTURE(stages);
        CAPTURE(micro);
        CAPTURE(d.f);
        const int span = run_schedule(stages, micro, d);
        REQUIRE(span > 0);
        const int work = micro * (d.f + d.b + d.w);  // each rank: M micro-batches' worth of one stage
        const int whole_b = d.b + d.w;
        const int published = (stages / 2 - 1) * ((d.f + whole_b) + whole_b - 3 * d.w);
        if (d.f == d.b) {
          CHECK(span - work == published);
        } else {
          CHECK(span - work <= published + (stages / 2 - 1) * std::abs(d.f - d.b));
        }
        CHECK(span - work < (stages - 1) * (d.f + whole_b) + (stages == 2 ? 1 : 0));
      }
    }
  }
}

namespace {

std::string dense_json(int pp, const std::string& schedule, int gb = 16) {
  return R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "gpus": )" + std::to_string(2 * pp) +
         R"(, "parallel": {"tp": 2, "pp": )" + std::to_string(pp) + R"(, "schedule": ")" + schedule +
         R"("}, "training": {"seq": 4096, "global_batch": )" + std::to_string(gb) + R"(, "micro_batch": 1}})";
}

std::string moe_json(const std::string& schedule, double comm_sms) {
  return R"({"model": "mixtral-8x7b", "cluster": "hgx-h100", "gpus": 8,
             "parallel": {"tp": 1, "pp": 2, "ep": 4, "zero": 1, "schedule": ")" +
         schedule + R"("}, "moe": {"overlap_comm_sms": )" + std::to_string(comm_sms) +
         R"(}, "training": {"seq": 4096, "global_batch": 64, "micro_batch": 1}, "allow_oom": true})";
}

report::TrainResults eval(const scenario::Scenario& s) {
  return report::train_results(s, study::run_training(s, study::RunOptions{}));
}

}  // namespace

TEST_CASE("DualPipe on a dense model: a smaller bubble than 1F1B's, and two model stages' memory per GPU") {
  const auto one = eval(test::scenario_from_json(dense_json(4, "1f1b")));
  const auto dual = eval(test::scenario_from_json(dense_json(4, "dualpipe")));
  CHECK(dual.breakdown.idle < 0.5 * one.breakdown.idle);
  CHECK(dual.step_time_s < one.step_time_s);
  // The same work: model FLOPs per step do not depend on the schedule.
  CHECK(dual.tflops_per_gpu * dual.step_time_s == doctest::Approx(one.tflops_per_gpu * one.step_time_s));
  // With PP 2 each GPU holds both stages, the whole model: the weights, gradients and optimizer
  // state of a PP 1 run with the same TP (no ZeRO).
  const auto pp1 = workload::training_memory_of(test::scenario_from_json(
      R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "gpus": 2, "parallel": {"tp": 2},
          "training": {"seq": 4096, "global_batch": 16, "micro_batch": 1}})"));
  const auto dual2 = workload::training_memory_of(test::scenario_from_json(dense_json(2, "dualpipe")));
  CHECK(dual2.weights == doctest::Approx(pp1.weights).epsilon(1e-12));
  CHECK(dual2.gradients == doctest::Approx(pp1.gradients).epsilon(1e-12));
  CHECK(dual2.optimizer == doctest::Approx(pp1.optimizer).epsilon(1e-12));
  CHECK(dual2.total ==
        doctest::Approx(dual2.weights + dual2.gradients + dual2.optimizer + dual2.activations + dual2.other));
}

TEST_CASE("DualPipe's gradients of a stage's two copies are reduced together, the optimizer sharded over both") {
  // PP 2, DP 1: the only reduction is between the two copies of each stage (rank 0's chunk 0 and
  // rank 1's chunk 1); a 1F1B step has none.
  const auto dual = eval(test::scenario_from_json(dense_json(2, "dualpipe")));
  const auto one = eval(test::scenario_from_json(dense_json(2, "1f1b")));
  double dual_bytes = 0, one_bytes = 0;
  for (const auto& c : dual.collectives)
    if (std::strncmp(c.label.c_str(), "dp.grad", 7) == 0)
      dual_bytes += c.bytes_per_call * static_cast<double>(c.calls_per_gpu);
  for (const auto& c : one.collectives)
    if (std::strncmp(c.label.c_str(), "dp.grad", 7) == 0)
      one_bytes += c.bytes_per_call * static_cast<double>(c.calls_per_gpu);
  CHECK(one_bytes == 0.0);
  // Each GPU reduces both of its stages' gradients (fp32 main gradients): with PP 2 the whole
  // model's share of its TP rank, what a PP 1 run's GPU holds.
  const auto pp1 = workload::training_memory_of(test::scenario_from_json(
      R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "gpus": 2, "parallel": {"tp": 2},
          "training": {"seq": 4096, "global_batch": 16, "micro_batch": 1}})"));
  CHECK(dual_bytes > 0.0);
  CHECK(dual_bytes == doctest::Approx(pp1.gradients).epsilon(1e-9));
}

/// Seconds of GPU 0's EP all-to-alls spent under compute of another micro-batch on GPU 0.
double hidden_all_to_all(const study::TrainingRun& run) {
  const auto& g = run.step.graph;
  struct Span {
    double start, end;
    int micro;
  };
  std::vector<Span> compute, a2a;
  for (std::size_t i = 0; i < g.task_count(); ++i) {
    const auto id = static_cast<workload::TaskId>(i);
    const auto t = g.task(id);
    if (t.gpu != 0) continue;
    const auto span = run.log.span(id, t);
    const Span x{span.start.seconds(), span.end.seconds(), t.micro};
    if (!t.collective && t.stream == workload::Stream::kCompute) compute.push_back(x);
    if (t.collective && t.category == workload::Category::kEpComm) a2a.push_back(x);
  }
  double hidden = 0;
  for (const auto& a : a2a)
    for (const auto& c : compute)
      if (c.micro != a.micro) hidden += std::max(0.0, std::min(a.end, c.end) - std::max(a.start, c.start));
  return hidden;
}

TEST_CASE("DualPipe's overlapped pairs hide a MoE model's all-to-alls under the other micro-batch's compute") {
  // With no SMs given to the all-to-all kernels a pair costs its compute nothing. No recompute: a
  // backward then has as many all-to-alls as a forward (DeepSeek recomputes only norms and
  // up-projections), so the pair alternates them one for one.
  const auto one_s = test::scenario_from_json(moe_json("1f1b", 0));
  const auto dual_s = test::scenario_from_json(moe_json("dualpipe", 0));
  const auto one_run = study::run_training(one_s, study::RunOptions{});
  const auto dual_run = study::run_training(dual_s, study::RunOptions{});
  const auto one = report::train_results(one_s, one_run), dual = report::train_results(dual_s, dual_run);
  CHECK(dual.breakdown.compute == doctest::Approx(one.breakdown.compute).epsilon(1e-9));
  // 1F1B runs each all-to-all in line (nothing of another micro-batch beside it); DualPipe's
  // pairs run most of theirs under the paired block's compute.
  CHECK(hidden_all_to_all(one_run) == 0.0);
  double ep_seconds = 0;
  for (const auto& c : dual.collectives)
    if (c.label.starts_with("ep.")) ep_seconds += c.seconds_per_gpu;
  // 14 of the 16 forwards run paired (the bound 87%); 80% measured when written.
  CHECK(hidden_all_to_all(dual_run) > 0.7 * ep_seconds);
  // The SMs DeepSeek gives its communication kernels (20 of 132) slow the pairs' MoE compute.
  const auto dual_sms = eval(test::scenario_from_json(moe_json("dualpipe", 20.0 / 132)));
  CHECK(dual_sms.breakdown.compute > dual.breakdown.compute);
}

TEST_CASE("DualPipe refuses what it cannot run, naming the reason") {
  CHECK_THROWS_AS(test::scenario_from_json(dense_json(4, "dualpipe", 6)), InfeasibleError);  // 6 < 2 PP
  CHECK_THROWS_AS(test::scenario_from_json(dense_json(4, "dualpipe", 9)), InfeasibleError);  // odd
  CHECK_THROWS_AS(test::scenario_from_json(R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "gpus": 6,
      "parallel": {"tp": 2, "pp": 3, "schedule": "dualpipe"}, "training": {"seq": 4096, "global_batch": 12}})"),
                  InfeasibleError);
  CHECK_THROWS_WITH_AS(test::scenario_from_json(R"({"model": "mixtral-8x7b", "cluster": "hgx-h100", "gpus": 8,
      "parallel": {"tp": 1, "pp": 2, "ep": 4, "schedule": "dualpipe"}, "moe": {"two_batch_overlap": true},
      "training": {"seq": 4096, "global_batch": 32}})"),
                       doctest::Contains("/moe/two_batch_overlap"), InputError);
}
