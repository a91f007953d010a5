// The executor's open runs (simulate_open): a workload added while it runs, task by task, runs on
// the same clock, streams and flow model as the same graph built up front.
#include <doctest/doctest.h>

#include <algorithm>

#include "sim/network/topology.hpp"
#include "sim/workload/executor.hpp"
#include "tests/support/builders.hpp"

using namespace cs;
using namespace cs::workload;

namespace {

/// Step i: a kernel of (i + 1) us on GPU 0, then an all-reduce of (i + 1) MB over GPUs 0 and 1,
/// while GPUs 2 and 3 run an all-reduce of their own beside it (sharing nothing) and a send from
/// GPU 1 to GPU 2 crosses both (sharing links with each).
SimTime kernel(int i) { return SimTime::from_seconds(1e-6 * (i + 1)); }
double buffer(int i) { return 1e6 * (i + 1); }

/// Adds the open version: each step's tasks when the previous step's all-reduce ends.
class Steps final : public TaskSource {
 public:
  explicit Steps(int n) : n_(n) {}
  void begin(OpenGraph& g) override {
    pair_ = g.add_group({0, 1});
    other_ = g.add_group({2, 3});
    link_ = g.add_group({1, 2});
    add(g);
  }
  void ended(TaskId id, const TaskSpan& span, OpenGraph& g) override {
    spans.push_back(span);
    if (id == last_ && step_ < n_) add(g);
  }
  std::vector<TaskSpan> spans;

 private:
  void add(OpenGraph& g) {
    const auto k = g.add_compute(0, Stream::kCompute, Category::kForward, "k", kernel(step_));
    last_ = g.add_collective(pair_, Stream::kCompute, Category::kTpComm, "ar", coll::CollectiveOp::kAllReduce,
                             buffer(step_));
    (void)k;
    g.add_collective(other_, Stream::kCompute, Category::kTpComm, "ar2", coll::CollectiveOp::kAllReduce, buffer(step_));
    const auto send =
        g.add_collective(link_, Stream::kNone, Category::kPpComm, "send", coll::CollectiveOp::kSendRecv, 3e6);
    g.depend(last_, send);
    ++step_;
  }
  int n_;
  int step_ = 0;
  std::uint32_t pair_ = 0, other_ = 0, link_ = 0;
  TaskId last_{};
};

}  // namespace

TEST_CASE("an open run equals the same graph built up front: tasks added when others end, flows shared") {
  const auto topo = net::Topology::build(test::make_star(4, "100 GB/s", 1e-6), 4);
  ExecutorOptions opt;
  opt.collective_latency_s = 5e-6;
  const int n = 6;
  // Built up front: the next step's kernel waits for this step's all-reduce on GPU 0's stream, as
  // in the open run, where it is added when that all-reduce ends and starts at once.
  WorkloadGraph g(4);
  const auto pair = g.add_group({0, 1}), other = g.add_group({2, 3}), link = g.add_group({1, 2});
  std::vector<TaskId> ars, others, sends;
  for (int i = 0; i < n; ++i) {
    g.add_compute(0, Stream::kCompute, Category::kForward, "k", -1, -1, kernel(i));
    ars.push_back(g.add_collective(pair, Stream::kCompute, Category::kTpComm, "ar", -1, -1,
                                   coll::CollectiveOp::kAllReduce, buffer(i)));
    others.push_back(g.add_collective(other, Stream::kCompute, Category::kTpComm, "ar2", -1, -1,
                                      coll::CollectiveOp::kAllReduce, buffer(i)));
    sends.push_back(
        g.add_collective(link, Stream::kNone, Category::kPpComm, "send", -1, -1, coll::CollectiveOp::kSendRecv, 3e6));
    g.depend(ars.back(), sends.back());
  }
  // The open run adds step i + 1 only when step i's all-reduce ends: the GPU 2-3 all-reduce of
  // step i + 1 cannot start earlier. The same order up front:
  for (int i = 0; i + 1 < n; ++i) g.depend(ars[static_cast<std::size_t>(i)], others[static_cast<std::size_t>(i) + 1]);
  const auto closed = simulate(g, topo, opt);

  Steps steps(n);
  const auto open = simulate_open(4, topo, opt, steps);
  CHECK(open.makespan == closed.makespan);
  CHECK(open.flows == closed.flows);
  // Every span of the up-front graph appears in the open run (ends are reported in time order).
  auto key = [](const TaskSpan& s) { return std::make_pair(s.end.ps, s.start.ps); };
  std::vector<std::pair<std::int64_t, std::int64_t>> a, b;
  for (std::size_t i = 0; i < g.task_count(); ++i) {
    const auto id = static_cast<TaskId>(i);
    a.push_back(key(closed.span(id, g.task(id))));
  }
  for (const auto& s : steps.spans) b.push_back(key(s));
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  CHECK(a == b);
}

TEST_CASE("an open run's timer: a task of no stream ends when asked, and ids are reused as tasks end") {
  struct Timers final : TaskSource {
    void begin(OpenGraph& g) override { next(g); }
    void ended(TaskId id, const TaskSpan& span, OpenGraph& g) override {
      CHECK(span.end == g.now());
      ids.push_back(index(id));
      times.push_back(g.now());
      if (times.size() < 1000) next(g);
    }
    void next(OpenGraph& g) {
      g.add_compute(1, Stream::kNone, Category::kForward, "timer",
                    SimTime{static_cast<std::int64_t>(times.size()) + 1});
    }
    std::vector<std::uint32_t> ids;
    std::vector<SimTime> times;
  } timers;
  const auto topo = net::Topology::build(test::make_star(2, "100 GB/s"), 2);
  const auto log = simulate_open(2, topo, ExecutorOptions{}, timers);
  REQUIRE(timers.times.size() == 1000);
  CHECK(timers.times.back() == SimTime{1000 * 1001 / 2});
  CHECK(log.makespan == timers.times.back());
  // One task in flight at a time (the next is added before the last one's slot is free): two slots.
  CHECK(*std::max_element(timers.ids.begin(), timers.ids.end()) == 1);
}
