#include "sim/network/network_model.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "sim/core/check.hpp"

namespace cs::net {

const char* network_model_name(NetworkModelKind k) { return k == NetworkModelKind::kFlow ? "flow" : "analytical"; }

namespace {

struct FlowState {
  const Route* route = nullptr;
  double remaining = 0.0;
  double rate = 0.0;
  double cap = kUncapped;
  SimTime updated{};  ///< when `remaining` was last brought up to date
  SimTime finish{};
  bool active = false;
};

/// Shared bookkeeping of both models: per-flow progress kept lazily (a flow is brought up to date
/// only when its rate changes), finish times in an ordered set, per-link loads kept incrementally.
class FluidModel : public NetworkModel {
 public:
  FluidModel(const Topology& topo, LinkState* shared)
      : topo_(topo),
        own_(shared ? 0 : topo.link_count()),
        loads_(shared ? shared->loads : own_.loads),
        link_flows_(shared ? shared->flows : own_.flows) {}

  void start(FlowId id, const Route& route, double bytes, double rate_cap, SimTime now) override {
    const auto i = index(id);
    if (i >= flows_.size()) flows_.resize(i + 1);
    auto& f = flows_[i];
    CS_ASSERT(!f.active, "a flow id is started once");
    f = FlowState{&route, bytes, 0.0, rate_cap, now, now, true};
    for (auto l : route.links) link_flows_[index(l)].push_back(i);
    ++active_;
    changed({i}, now);
  }

  [[nodiscard]] std::optional<SimTime> next_completion() const override {
    if (finish_q_.empty()) return std::nullopt;
    return finish_q_.begin()->first;
  }

  std::vector<FlowId> complete(SimTime now) override {
    std::vector<FlowId> done;
    std::vector<std::uint32_t> neighbours;
    while (!finish_q_.empty() && finish_q_.begin()->first <= now) {
      const auto i = finish_q_.begin()->second;
      finish_q_.erase(finish_q_.begin());
      auto& f = flows_[i];
      for (auto l : f.route->links) {
        auto& v = link_flows_[index(l)];
        v.erase(std::find(v.begin(), v.end(), i));
        loads_[index(l)] -= f.rate;
        for (auto other : v) neighbours.push_back(other);
      }
      f.active = false;
      --active_;
      done.push_back(static_cast<FlowId>(i));
    }
    std::sort(done.begin(), done.end(), [](FlowId a, FlowId b) { return index(a) < index(b); });
    if (!neighbours.empty()) changed(neighbours, now);
    return done;
  }

  [[nodiscard]] const std::vector<double>& link_loads() const override { return loads_; }
  [[nodiscard]] std::size_t active_flows() const override { return active_; }

 protected:
  /// Rates of `component` (flows sorted by id) after a change; `links` are the links they cross.
  virtual void assign_rates(const std::vector<std::uint32_t>& component, const std::vector<std::uint32_t>& links) = 0;
  /// The flows whose rates a change to `seeds` can affect.
  virtual std::vector<std::uint32_t> affected(const std::vector<std::uint32_t>& seeds) = 0;

  const Topology& topo_;
  std::vector<FlowState> flows_;
  LinkState own_;  ///< empty when the links are shared
  std::vector<double>& loads_;
  std::vector<std::vector<std::uint32_t>>& link_flows_;  ///< active flows on each link, in start order

 private:
  void changed(const std::vector<std::uint32_t>& seeds, SimTime now) {
    auto component = affected(seeds);
    std::sort(component.begin(), component.end());
    component.erase(std::unique(component.begin(), component.end()), component.end());
    std::vector<std::uint32_t> links;
    for (auto i : component) {
      auto& f = flows_[i];
      // Bring progress up to now at the old rate, and take the old rate off the links.
      f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated).seconds());
      f.updated = now;
      for (auto l : f.route->links) {
        loads_[index(l)] -= f.rate;
        links.push_back(index(l));
      }
    }
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
    assign_rates(component, links);
    for (auto i : component) {
      auto& f = flows_[i];
      CS_ASSERT(f.rate > 0.0 && std::isfinite(f.rate), "every flow gets a positive finite rate");
      finish_q_.erase({f.finish, i});
      f.finish = now + SimTime::from_seconds(f.remaining / f.rate);
      finish_q_.insert({f.finish, i});
      for (auto l : f.route->links) loads_[index(l)] += f.rate;
    }
  }

  std::set<std::pair<SimTime, std::uint32_t>> finish_q_;
  std::size_t active_ = 0;
};

/// Max-min fairness by progressive filling over the connected component of flows (flows linked
/// by shared links, transitively) that a start or end touches: components are independent, so
/// this equals the global allocation. Ties break by lowest link id, then flow id.
class FlowModel final : public FluidModel {
 public:
  using FluidModel::FluidModel;

 protected:
  std::vector<std::uint32_t> affected(const std::vector<std::uint32_t>& seeds) override {
    std::vector<std::uint32_t> out;
    std::vector<std::uint32_t> stack;
    for (auto s : seeds) {
      if (flows_[s].active && mark(s)) stack.push_back(s);
    }
    while (!stack.empty()) {
      const auto i = stack.back();
      stack.pop_back();
      out.push_back(i);
      for (auto l : flows_[i].route->links) {
        for (auto j : link_flows_[index(l)]) {
          if (mark(j)) stack.push_back(j);
        }
      }
    }
    ++epoch_;
    return out;
  }

  void assign_rates(const std::vector<std::uint32_t>& comp, const std::vector<std::uint32_t>& links) override {
    std::vector<double> residual(links.size());
    std::vector<std::uint32_t> count(links.size(), 0);
    auto slot = [&](LinkId l) {
      return static_cast<std::size_t>(std::lower_bound(links.begin(), links.end(), index(l)) - links.begin());
    };
    for (std::size_t k = 0; k < links.size(); ++k)
      residual[k] = topo_.link(static_cast<LinkId>(links[k])).bandwidth_bytes_per_s;
    for (auto i : comp) {
      for (auto l : flows_[i].route->links) ++count[slot(l)];
    }
    std::vector<bool> fixed(comp.size(), false);
    std::size_t left = comp.size();
    while (left > 0) {
      double share = kUncapped;
      for (std::size_t k = 0; k < links.size(); ++k) {
        if (count[k] > 0) share = std::min(share, residual[k] / count[k]);
      }
      double min_cap = kUncapped;
      for (std::size_t c = 0; c < comp.size(); ++c) {
        if (!fixed[c]) min_cap = std::min(min_cap, flows_[comp[c]].cap);
      }
      CS_ASSERT(std::isfinite(share) || std::isfinite(min_cap), "every flow crosses a link or has a cap");
      const bool cap_binds = min_cap <= share;
      const double rate = cap_binds ? min_cap : share;
      const double tol = 1e-12 * rate;
      for (std::size_t c = 0; c < comp.size(); ++c) {
        if (fixed[c]) continue;
        auto& f = flows_[comp[c]];
        bool take = false;
        if (cap_binds) {
          take = f.cap <= rate + tol;
        } else {
          for (auto l : f.route->links) {
            const auto k = slot(l);
            if (residual[k] / count[k] <= rate + tol) take = true;
          }
        }
        if (!take) continue;
        fixed[c] = true;
        --left;
        f.rate = rate;
        for (auto l : f.route->links) {
          const auto k = slot(l);
          residual[k] = std::max(0.0, residual[k] - rate);
          --count[k];
        }
      }
    }
  }

 private:
  bool mark(std::uint32_t i) {
    if (seen_.size() <= i) seen_.resize(flows_.size(), 0);
    if (seen_[i] == epoch_ + 1) return false;
    seen_[i] = epoch_ + 1;
    return true;
  }
  std::vector<std::uint64_t> seen_;
  std::uint64_t epoch_ = 0;
};

/// Closed form per flow: bottleneck bandwidth of its route (or its cap), ignoring other flows, so
/// a start or end changes no other flow's rate.
class AnalyticalModel final : public FluidModel {
 public:
  using FluidModel::FluidModel;

 protected:
  std::vector<std::uint32_t> affected(const std::vector<std::uint32_t>& seeds) override {
    std::vector<std::uint32_t> out;
    for (auto s : seeds) {
      if (flows_[s].active && flows_[s].rate == 0.0) out.push_back(s);  // only a newly started flow
    }
    return out;
  }
  void assign_rates(const std::vector<std::uint32_t>& comp, const std::vector<std::uint32_t>& /*links*/) override {
    for (auto i : comp) flows_[i].rate = std::min(topo_.bottleneck(*flows_[i].route), flows_[i].cap);
  }
};

}  // namespace

std::unique_ptr<NetworkModel> make_network_model(NetworkModelKind kind, const Topology& topo, LinkState* shared) {
  if (kind == NetworkModelKind::kFlow) return std::make_unique<FlowModel>(topo, shared);
  return std::make_unique<AnalyticalModel>(topo, shared);
}

}  // namespace cs::net
