#include "sim/network/network_model.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/check.hpp"

namespace cs::net {

const char* network_model_name(NetworkModelKind k) { return k == NetworkModelKind::kFlow ? "flow" : "analytical"; }

namespace {

struct ActiveFlow {
  FlowId id{};
  const Route* route = nullptr;
  double remaining = 0.0;
  double rate = 0.0;
  double cap = kUncapped;
  SimTime finish{};
};

/// Shared bookkeeping: fluid progress of active flows between events.
class FluidModel : public NetworkModel {
 public:
  explicit FluidModel(const Topology& topo) : topo_(topo), loads_(topo.link_count(), 0.0) {}

  void start(FlowId id, const Route& route, double bytes, double rate_cap, SimTime now) override {
    advance(now);
    ActiveFlow f{id, &route, bytes, 0.0, rate_cap, now};
    auto pos = std::lower_bound(flows_.begin(), flows_.end(), id,
                                [](const ActiveFlow& a, FlowId b) { return index(a.id) < index(b); });
    flows_.insert(pos, f);
    reshare(now);
  }

  [[nodiscard]] std::optional<SimTime> next_completion() const override {
    std::optional<SimTime> best;
    for (const auto& f : flows_) {
      if (!best || f.finish < *best) best = f.finish;
    }
    return best;
  }

  std::vector<FlowId> complete(SimTime now) override {
    advance(now);
    std::vector<FlowId> done;
    std::erase_if(flows_, [&](const ActiveFlow& f) {
      if (f.finish <= now) {
        done.push_back(f.id);
        return true;
      }
      return false;
    });
    if (!done.empty()) reshare(now);
    return done;
  }

  [[nodiscard]] const std::vector<double>& link_loads() const override { return loads_; }
  [[nodiscard]] std::size_t active_flows() const override { return flows_.size(); }

 protected:
  virtual void assign_rates() = 0;
  const Topology& topo_;
  std::vector<ActiveFlow> flows_;  ///< sorted by id

 private:
  void advance(SimTime now) {
    const double dt = (now - last_).seconds();
    if (dt > 0) {
      for (auto& f : flows_) f.remaining = std::max(0.0, f.remaining - f.rate * dt);
    }
    last_ = now;
  }

  void reshare(SimTime now) {
    assign_rates();
    std::fill(loads_.begin(), loads_.end(), 0.0);
    for (auto& f : flows_) {
      CS_ASSERT(f.rate > 0.0 && std::isfinite(f.rate), "every flow gets a positive finite rate");
      f.finish = now + SimTime::from_seconds(f.remaining / f.rate);
      for (auto l : f.route->links) loads_[index(l)] += f.rate;
    }
  }

  std::vector<double> loads_;
  SimTime last_{};
};

/// Max-min fairness by progressive filling: repeatedly find the tightest constraint (a link's
/// residual capacity shared equally by its unfixed flows, or a flow's own cap), fix those flows at
/// that rate, and remove their share. Ties break by lowest link id, then flow id.
class FlowModel final : public FluidModel {
 public:
  using FluidModel::FluidModel;

 protected:
  void assign_rates() override {
    const std::size_t nl = topo_.link_count();
    std::vector<double> residual(nl);
    std::vector<std::uint32_t> count(nl, 0);
    for (std::size_t l = 0; l < nl; ++l) residual[l] = topo_.link(static_cast<LinkId>(l)).bandwidth_bytes_per_s;
    std::vector<bool> fixed(flows_.size(), false);
    for (const auto& f : flows_) {
      for (auto l : f.route->links) ++count[index(l)];
    }
    std::size_t left = flows_.size();
    while (left > 0) {
      double share = kUncapped;
      for (std::size_t l = 0; l < nl; ++l) {
        if (count[l] > 0) share = std::min(share, residual[l] / count[l]);
      }
      double min_cap = kUncapped;
      for (std::size_t i = 0; i < flows_.size(); ++i) {
        if (!fixed[i]) min_cap = std::min(min_cap, flows_[i].cap);
      }
      CS_ASSERT(std::isfinite(share) || std::isfinite(min_cap), "every flow crosses a link or has a cap");
      const bool cap_binds = min_cap <= share;
      const double rate = cap_binds ? min_cap : share;
      const double tol = 1e-12 * rate;
      for (std::size_t i = 0; i < flows_.size(); ++i) {
        if (fixed[i]) continue;
        bool take = false;
        if (cap_binds) {
          take = flows_[i].cap <= rate + tol;
        } else {
          for (auto l : flows_[i].route->links) {
            if (residual[index(l)] / count[index(l)] <= rate + tol) take = true;
          }
        }
        if (!take) continue;
        fixed[i] = true;
        --left;
        flows_[i].rate = rate;
        for (auto l : flows_[i].route->links) {
          residual[index(l)] = std::max(0.0, residual[index(l)] - rate);
          --count[index(l)];
        }
      }
    }
  }
};

/// Closed form per flow: bottleneck bandwidth of its route (or its cap), ignoring other flows.
class AnalyticalModel final : public FluidModel {
 public:
  using FluidModel::FluidModel;

 protected:
  void assign_rates() override {
    for (auto& f : flows_) f.rate = std::min(topo_.bottleneck(*f.route), f.cap);
  }
};

}  // namespace

std::unique_ptr<NetworkModel> make_network_model(NetworkModelKind kind, const Topology& topo) {
  if (kind == NetworkModelKind::kFlow) return std::make_unique<FlowModel>(topo);
  return std::make_unique<AnalyticalModel>(topo);
}

}  // namespace cs::net
