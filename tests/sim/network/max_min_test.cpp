// The max-min solver and the flow model against plain references written for clarity, on random
// problems: the heap-based filling must give the textbook filling's rates bit for bit, and the
// model (component search from the change, flows started together settled at once) must give the
// finish times of a full recomputation after every single start and end, bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/network/fabric_spec.hpp"
#include "sim/network/max_min_solver.hpp"
#include "sim/network/network_model.hpp"
#include "sim/network/topology.hpp"
#include "tests/support/builders.hpp"

using namespace cs;
using namespace cs::net;

namespace {

/// Raw 64-bit draws (std::mt19937_64 is specified exactly; the std distributions are not).
struct Draw {
  std::mt19937_64 g;
  explicit Draw(std::uint64_t seed) : g(seed) {}
  std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(g() % n); }
  double unit() { return static_cast<double>(g() >> 11) * 0x1.0p-53; }
  template <class T>
  T pick(const std::vector<T>& v) {
    return v[below(static_cast<std::uint32_t>(v.size()))];
  }
};

/// Progressive filling as the textbook states it: every pass rescans every link and every flow.
/// Each pass takes the smallest link share or, if no larger, the smallest cap of an unfixed flow,
/// and fixes (in flow order) every flow at its cap or with a link at that share (relative 1e-12).
std::vector<double> textbook_filling(const MaxMinProblem& p) {
  const std::size_t flows = p.flow_count(), links = p.capacity.size();
  std::vector<double> residual = p.capacity, rate(flows, 0.0);
  std::vector<double> count(links, 0.0);
  for (auto k : p.hops) count[k] += 1;
  std::vector<bool> fixed(flows, false);
  std::size_t left = flows;
  while (left > 0) {
    double share = std::numeric_limits<double>::infinity(), min_cap = share;
    for (std::size_t k = 0; k < links; ++k) {
      if (count[k] > 0) share = std::min(share, residual[k] / count[k]);
    }
    for (std::size_t c = 0; c < flows; ++c) {
      if (!fixed[c]) min_cap = std::min(min_cap, p.cap[c]);
    }
    const bool cap_binds = min_cap <= share;
    const double r = cap_binds ? min_cap : share;
    const double tol = 1e-12 * r;
    for (std::size_t c = 0; c < flows; ++c) {
      if (fixed[c]) continue;
      bool take = cap_binds && p.cap[c] <= r + tol;
      for (auto h = p.first[c]; h < p.first[c + 1] && !cap_binds; ++h)
        take = take || residual[p.hops[h]] / count[p.hops[h]] <= r + tol;
      if (!take) continue;
      fixed[c] = true;
      --left;
      rate[c] = r;
      for (auto h = p.first[c]; h < p.first[c + 1]; ++h) {
        residual[p.hops[h]] = std::max(0.0, residual[p.hops[h]] - r);
        count[p.hops[h]] -= 1;
      }
    }
  }
  return rate;
}

/// A random problem with many ties: capacities and caps from a few values, some of them a hair
/// (inside and outside the 1e-12 tolerance) away from each other.
MaxMinProblem random_problem(Draw& d) {
  const std::vector<double> capacities{100e9,  100e9, 50e9, 400e9 / 3, 25e9, 100e9 * (1 + 4e-13), 100e9 * (1 + 3e-12),
                                       46.8e9, 52.3e9};
  const std::vector<double> caps{25e9, 50e9, 12.5e9, 100e9 / 3, 20e9};
  MaxMinProblem p;
  p.clear();
  const auto links = 1 + d.below(24);
  for (std::uint32_t k = 0; k < links; ++k)
    p.capacity.push_back(d.below(8) == 0 ? 1e9 + d.unit() * 1e11 : d.pick(capacities));
  const auto flows = 1 + d.below(80);
  for (std::uint32_t c = 0; c < flows; ++c) {
    const auto hops = d.below(10) == 0 ? 0 : 1 + d.below(std::min<std::uint32_t>(links, 6));
    std::vector<std::uint32_t> route;
    while (route.size() < hops) {
      const auto k = d.below(links);
      if (std::find(route.begin(), route.end(), k) == route.end()) route.push_back(k);
    }
    p.hops.insert(p.hops.end(), route.begin(), route.end());
    p.first.push_back(static_cast<std::uint32_t>(p.hops.size()));
    p.cap.push_back(hops == 0 || d.below(5) == 0 ? d.pick(caps) : kUncapped);
  }
  return p;
}

}  // namespace

TEST_CASE("max-min solver: the heap-based filling gives the textbook filling's rates exactly (3,000 random problems)") {
  Draw d(20261203);
  MaxMinSolver solver;
  std::vector<double> rate;
  for (int n = 0; n < 3000; ++n) {
    CAPTURE(n);
    const auto p = random_problem(d);
    solver.solve(p, rate);
    const auto want = textbook_filling(p);
    REQUIRE(rate.size() == want.size());
    for (std::size_t c = 0; c < rate.size(); ++c) REQUIRE(rate[c] == want[c]);
  }
}

TEST_CASE("max-min solver: rates are feasible and every flow is at its cap or has a saturated link it is largest on") {
  Draw d(7);
  MaxMinSolver solver;
  std::vector<double> rate;
  for (int n = 0; n < 1000; ++n) {
    CAPTURE(n);
    const auto p = random_problem(d);
    solver.solve(p, rate);
    std::vector<double> load(p.capacity.size(), 0.0), top(p.capacity.size(), 0.0);
    for (std::size_t c = 0; c < p.flow_count(); ++c) {
      REQUIRE(rate[c] > 0.0);
      CHECK(rate[c] <= p.cap[c] * (1 + 1e-12));
      for (auto h = p.first[c]; h < p.first[c + 1]; ++h) {
        load[p.hops[h]] += rate[c];
        top[p.hops[h]] = std::max(top[p.hops[h]], rate[c]);
      }
    }
    for (std::size_t k = 0; k < load.size(); ++k) CHECK(load[k] <= p.capacity[k] * (1 + 1e-9));
    for (std::size_t c = 0; c < p.flow_count(); ++c) {
      bool bottleneck = rate[c] >= p.cap[c] * (1 - 1e-9);
      for (auto h = p.first[c]; h < p.first[c + 1]; ++h) {
        const auto k = p.hops[h];
        bottleneck = bottleneck || (load[k] >= p.capacity[k] * (1 - 1e-9) && rate[c] >= top[k] * (1 - 1e-9));
      }
      CHECK(bottleneck);
    }
  }
}

namespace {

/// The flow model recomputed in full, the plain way: after every single start, and after every
/// set of flows ending together, it rebuilds every link's list of flows from all active flows,
/// finds the flows connected to the change through them and fills those with the textbook loop.
class FullRecomputation {
 public:
  explicit FullRecomputation(const Topology& topo) : topo_(topo) {}

  void start(FlowId id, const Route& route, double bytes, double cap, SimTime now) {
    const auto i = index(id);
    if (i >= flows_.size()) flows_.resize(i + 1);
    flows_[i] = {&route, bytes, 0.0, cap, now, now, true};
    changed({i}, {}, now);
  }
  [[nodiscard]] std::optional<SimTime> next_completion() const {
    std::optional<SimTime> t;
    for (const auto& f : flows_) {
      if (f.active && (!t || f.finish < *t)) t = f.finish;
    }
    return t;
  }
  std::vector<FlowId> complete(SimTime now) {
    std::vector<FlowId> ended;
    std::vector<std::uint32_t> links;
    for (std::uint32_t i = 0; i < flows_.size(); ++i) {
      if (!flows_[i].active || flows_[i].finish > now) continue;
      flows_[i].active = false;
      ended.push_back(static_cast<FlowId>(i));
      for (auto l : flows_[i].route->links) links.push_back(index(l));
    }
    changed({}, links, now);
    return ended;
  }

 private:
  struct Flow {
    const Route* route;
    double remaining, rate, cap;
    SimTime updated, finish;
    bool active;
  };
  void changed(const std::vector<std::uint32_t>& seed_flows, const std::vector<std::uint32_t>& seed_links,
               SimTime now) {
    std::vector<std::vector<std::uint32_t>> on_link(topo_.link_count());
    for (std::uint32_t j = 0; j < flows_.size(); ++j) {
      if (flows_[j].active) {
        for (auto l : flows_[j].route->links) on_link[index(l)].push_back(j);
      }
    }
    std::set<std::uint32_t> comp(seed_flows.begin(), seed_flows.end()), links;
    std::vector<std::uint32_t> todo(seed_links);
    for (auto i : seed_flows) {
      for (auto l : flows_[i].route->links) todo.push_back(index(l));
    }
    while (!todo.empty()) {
      const auto l = todo.back();
      todo.pop_back();
      if (!links.insert(l).second) continue;
      for (auto j : on_link[l]) {
        if (!comp.insert(j).second) continue;
        for (auto m : flows_[j].route->links) todo.push_back(index(m));
      }
    }
    if (comp.empty()) return;
    const std::vector<std::uint32_t> link_list(links.begin(), links.end());
    MaxMinProblem p;
    p.clear();
    for (auto l : link_list) p.capacity.push_back(topo_.link(static_cast<LinkId>(l)).bandwidth_bytes_per_s);
    for (auto i : comp) {
      auto& f = flows_[i];
      f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated).seconds());
      f.updated = now;
      for (auto l : f.route->links) {
        p.hops.push_back(static_cast<std::uint32_t>(std::lower_bound(link_list.begin(), link_list.end(), index(l)) -
                                                    link_list.begin()));
      }
      p.first.push_back(static_cast<std::uint32_t>(p.hops.size()));
      p.cap.push_back(f.cap);
    }
    const auto rate = textbook_filling(p);
    std::size_t c = 0;
    for (auto i : comp) {
      auto& f = flows_[i];
      f.rate = rate[c++];
      f.finish = now + SimTime::from_seconds(f.remaining / f.rate);
    }
  }

  const Topology& topo_;
  std::vector<Flow> flows_;
};

struct Ended {
  SimTime at;
  std::vector<FlowId> flows;
};

/// Random batches of flows (random GPU pairs, sizes and a few caps) started at random times, some
/// while others run, some at the same instant as flows end; ids reused last-in first-out as the
/// executor does. Returns every completion, in order.
template <class Model>
std::vector<Ended> run_random(Model& model, const Topology& topo, std::uint64_t seed) {
  Draw d(seed);
  std::vector<Ended> out;
  std::vector<FlowId> free_ids;
  std::uint32_t next_id = 0;
  SimTime now{};
  auto advance_to = [&](std::optional<SimTime> until) {
    while (auto t = model.next_completion()) {
      if (until && *t > *until) break;
      auto done = model.complete(*t);
      for (auto f : done) free_ids.push_back(f);
      out.push_back({*t, std::move(done)});
    }
  };
  for (int batch = 0; batch < 40; ++batch) {
    const auto step = d.below(4);
    if (step == 0 && !out.empty()) now = std::max(now, out.back().at);  // start where flows just ended
    if (step >= 2) now = now + SimTime::from_seconds(d.unit() * 2e-3);
    advance_to(now);
    const auto n = 1 + d.below(batch % 7 == 0 ? 120 : 16);
    for (std::uint32_t k = 0; k < n; ++k) {
      const auto a = static_cast<int>(d.below(static_cast<std::uint32_t>(topo.gpu_count())));
      auto b = static_cast<int>(d.below(static_cast<std::uint32_t>(topo.gpu_count() - 1)));
      if (b >= a) ++b;
      FlowId id{};
      if (free_ids.empty()) {
        id = static_cast<FlowId>(next_id++);
      } else {
        id = free_ids.back();
        free_ids.pop_back();
      }
      const double bytes = d.below(3) == 0 ? 1e8 : 1e5 + d.unit() * 1e9;  // equal sizes make ties
      model.start(id, topo.route(topo.gpu(a), topo.gpu(b)), bytes, d.below(8) == 0 ? 20e9 : kUncapped, now);
    }
  }
  advance_to(std::nullopt);
  return out;
}

}  // namespace

TEST_CASE("flow model: the incremental solver gives exactly the finish times of a full recomputation (random flows)") {
  const auto rail =
      config::parse_fabric(config::load(test::data_path("scenarios/fabrics/ib-ndr-rail.json")), "ib-ndr-rail");
  const auto eth = config::parse_fabric(config::load(test::data_path("scenarios/fabrics/eth-100g.json")), "eth-100g");
  auto build = [&](int which) {
    if (which == 0) return Topology::build(test::shipped_cluster("hgx-h100"), 8, 4, rail);
    if (which == 1) return Topology::build(test::shipped_cluster("pcie-h100x8"), 8, 3, eth);  // shared NICs
    return Topology::build(test::shipped_cluster("pcie-fake8"), 8);
  };
  for (int which = 0; which < 3; ++which) {
    const auto topo = build(which);
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      CAPTURE(which);
      CAPTURE(seed);
      auto model = make_network_model(NetworkModelKind::kFlow, topo);
      FullRecomputation full(topo);
      const auto got = run_random(*model, topo, seed);
      const auto want = run_random(full, topo, seed);
      CHECK(got.size() > 100);
      REQUIRE(got.size() == want.size());
      for (std::size_t n = 0; n < got.size(); ++n) {
        CAPTURE(n);
        REQUIRE(got[n].at.ps == want[n].at.ps);
        REQUIRE(got[n].flows == want[n].flows);
      }
      CHECK(model->active_flows() == 0);
      for (double load : model->link_loads()) CHECK(std::abs(load) < 1.0);  // bytes/s left by rounding
    }
  }
}

TEST_CASE("flow model: a flow alone on its links runs at its route's bottleneck or its cap, whichever is lower") {
  const auto rail =
      config::parse_fabric(config::load(test::data_path("scenarios/fabrics/ib-ndr-rail.json")), "ib-ndr-rail");
  const auto topo = Topology::build(test::shipped_cluster("hgx-h100"), 8, 2, rail);
  const auto& inside = topo.route(topo.gpu(0), topo.gpu(1));  // NVLink
  const auto& across = topo.route(topo.gpu(0), topo.gpu(8));  // NIC and fabric
  const auto& other = topo.route(topo.gpu(2), topo.gpu(3));   // disjoint from `inside`
  const double bytes = 1e9;
  for (const double cap : {kUncapped, 1e9, topo.bottleneck(inside)}) {
    CAPTURE(cap);
    auto model = make_network_model(NetworkModelKind::kFlow, topo);
    model->start(FlowId{0}, inside, bytes, cap, SimTime{});
    model->start(FlowId{1}, across, bytes, kUncapped, SimTime{});
    model->start(FlowId{2}, other, bytes, kUncapped, SimTime{});
    const auto alone = [&](const Route& r, double c) {
      return SimTime::from_seconds(bytes / std::min(topo.bottleneck(r), c)).ps;
    };
    std::vector<std::int64_t> want = {alone(inside, cap), alone(across, kUncapped), alone(other, kUncapped)};
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    std::vector<std::int64_t> got;
    while (auto t = model->next_completion()) {
      got.push_back(t->ps);
      (void)model->complete(*t);
    }
    CHECK(got == want);
  }
}
