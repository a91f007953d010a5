#include <doctest/doctest.h>

#include "sim/engine/engine.hpp"

using namespace cs;
using namespace cs::engine;

TEST_CASE("events pop in (time, phase, lp, seq) order whatever the push order") {
  EventQueue q;
  q.push({SimTime{5}, Phase::kTaskStart, 0, 0, 0, 1});
  q.push({SimTime{5}, Phase::kNetwork, 3, 0, 0, 2});
  q.push({SimTime{1}, Phase::kTaskEnd, 9, 0, 0, 3});
  q.push({SimTime{5}, Phase::kNetwork, 1, 1, 0, 4});
  q.push({SimTime{5}, Phase::kNetwork, 1, 0, 0, 5});
  std::vector<std::uint64_t> order;
  while (!q.empty()) order.push_back(q.pop().payload);
  CHECK(order == std::vector<std::uint64_t>{3, 5, 4, 2, 1});
}

namespace {
struct Recorder : EventHandler {
  std::vector<std::pair<std::int64_t, std::uint64_t>> seen;
  void handle(const Event& e, Engine& engine) override {
    seen.emplace_back(e.time.ps, e.payload);
    if (e.payload < 3) engine.schedule(e.time + SimTime{10}, Phase::kTaskEnd, 0, 0, e.payload + 10);
  }
};
}  // namespace

TEST_CASE("the engine advances its clock to each event and lets handlers schedule more") {
  Engine engine;
  engine.schedule(SimTime{0}, Phase::kTaskStart, 0, 0, 1);
  engine.schedule(SimTime{0}, Phase::kTaskStart, 0, 0, 2);
  Recorder r;
  CHECK(engine.run(r) == 4);
  CHECK(r.seen == std::vector<std::pair<std::int64_t, std::uint64_t>>{{0, 1}, {0, 2}, {10, 11}, {10, 12}});
  CHECK(engine.now().ps == 10);
}
