// The workload graph's storage: tasks made from a shared prototype (8 bytes a task) read back
// as the tasks they stand for, and an open run's recycled tasks give back their own prototypes.
#include <doctest/doctest.h>

#include "sim/workload/workload_graph.hpp"

using namespace cs;
using namespace cs::workload;

TEST_CASE("tasks of a shared prototype read back its fields with their own GPU or group") {
  WorkloadGraph g(4);
  const auto pair01 = g.add_group({0, 1});
  const auto pair23 = g.add_group({2, 3});
  const auto all = g.add_group({0, 1, 2, 3});
  const auto k = g.add_proto(Stream::kCompute, Category::kBackward, "layer.bwd", 7, 3, SimTime::from_seconds(2e-6));
  const auto c = g.add_proto(Stream::kComm, Category::kDpComm, "dp.grad_allreduce", -1, 3, SimTime{}, true);
  const auto k2 = g.add_compute(2, k);
  const auto k1 = g.add_compute(1, k);
  const auto c23 = g.add_collective_on(c, pair23, all, coll::CollectiveOp::kReduceScatter, 4e6);
  const auto c01 = g.add_collective_on(c, pair01, pair01, coll::CollectiveOp::kAllReduce, 1e6);
  CHECK(g.task_count() == 4);
  CHECK(g.proto_count() == 2);

  for (auto id : {k1, k2}) {
    const Task t = g.task(id);
    CHECK_FALSE(t.collective);
    CHECK(std::string(t.label) == "layer.bwd");
    CHECK(t.category == Category::kBackward);
    CHECK(t.stream == Stream::kCompute);
    CHECK(t.layer == 7);
    CHECK(t.micro == 3);
    CHECK(t.duration == SimTime::from_seconds(2e-6));
  }
  CHECK(g.task(k1).gpu == 1);
  CHECK(g.task(k2).gpu == 2);

  const Task a = g.task(c23);
  CHECK(a.collective);
  CHECK(std::string(a.label) == "dp.grad_allreduce");
  CHECK(a.group == pair23);
  CHECK(a.gpu == 2);  // the group's first rank
  CHECK(g.collective(a).flow_group == all);
  CHECK(g.collective(a).op == coll::CollectiveOp::kReduceScatter);
  CHECK(g.collective(a).bytes == 4e6);
  const Task b = g.task(c01);
  CHECK(b.group == pair01);
  CHECK(b.gpu == 0);
  CHECK(g.collective(b).flow_group == pair01);
  CHECK(g.collective(b).bytes == 1e6);

  // Each task sits in its ranks' streams, in the order added.
  CHECK(g.stream_order(1 * kStreamsPerGpu + 0) == std::vector<TaskId>{k1});
  CHECK(g.stream_order(2 * kStreamsPerGpu + 0) == std::vector<TaskId>{k2});
  CHECK(g.stream_order(2 * kStreamsPerGpu + 1) == std::vector<TaskId>{c23});
  CHECK(g.stream_order(3 * kStreamsPerGpu + 1) == std::vector<TaskId>{c23});
  CHECK(g.stream_order(0 * kStreamsPerGpu + 1) == std::vector<TaskId>{c01});
}

TEST_CASE("an open run's recycled tasks give back their prototypes and arguments: the tables stay small") {
  WorkloadGraph g(2);
  const auto pair = g.add_group({0, 1});
  for (int i = 0; i < 1000; ++i) {
    const auto k =
        g.add_compute(i % 2, Stream::kNone, Category::kForward, "decode", -1, i, SimTime::from_seconds(1e-6));
    const auto c = g.add_collective(pair, Stream::kNone, Category::kTpComm, "tp.allreduce", -1, i,
                                    coll::CollectiveOp::kAllReduce, 1e3 * (i + 1));
    CHECK(g.task(k).micro == i);
    CHECK(g.task(k).gpu == static_cast<std::uint32_t>(i % 2));
    CHECK(g.task(c).micro == i);
    CHECK(g.collective(g.task(c)).bytes == 1e3 * (i + 1));
    g.recycle(k);
    g.recycle(c);
  }
  CHECK(g.task_count() <= 4);
  CHECK(g.proto_count() <= 4);
  CHECK(g.collective_slots() <= 2);
}
