#include "sim/network/network_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

#include "sim/core/check.hpp"
#include "sim/network/max_min_solver.hpp"

namespace cs::net {

const char* network_model_name(NetworkModelKind k) { return k == NetworkModelKind::kFlow ? "flow" : "analytical"; }

LinkEntry::LinkEntry(LinkEntry&& o) noexcept
    : load(o.load), mark(o.mark), slot(o.slot), size(o.size), capacity_(o.capacity_), heap_(o.heap_) {
  std::copy(std::begin(o.inline_), std::end(o.inline_), std::begin(inline_));
  o.heap_ = nullptr;
  o.capacity_ = 0;
  o.size = 0;
}

void LinkEntry::grow() {
  const std::uint32_t capacity = heap_ ? 2 * capacity_ : 2 * kInline + 2;
  auto* fresh = new LinkFlow[capacity];
  std::copy(begin(), end(), fresh);
  delete[] heap_;
  heap_ = fresh;
  capacity_ = capacity;
}

namespace {

struct FlowState {
  const Route* route = nullptr;
  double remaining = 0.0;
  double rate = 0.0;
  double cap = kUncapped;
  SimTime updated{};  ///< when `remaining` was last brought up to date
  SimTime finish{};
  bool active = false;
  bool queued = false;  ///< in the finish queue
  /// Per hop: the flow's position in that link's flow list; in the flow itself up to kInlineHops
  /// (every route of a two-tier fabric), else in `far`.
  static constexpr std::size_t kInlineHops = 6;
  std::uint32_t near[kInlineHops] = {};
  std::vector<std::uint32_t> far;
  [[nodiscard]] std::uint32_t* at() { return far.empty() ? near : far.data(); }
};

/// Shared bookkeeping of both models: per-flow progress kept lazily (a flow is brought up to date
/// only when its rates are recomputed), finish times in an ordered set, per-link loads kept
/// incrementally. Starts wait in `pending_` until the model is next asked for something.
class FluidModel : public NetworkModel {
 public:
  FluidModel(const Topology& topo, LinkState* shared)
      : topo_(topo), own_(shared ? 0 : topo.link_count()), links_(shared ? *shared : own_) {}

  void start(FlowId id, const Route& route, double bytes, double rate_cap, SimTime now) override {
    if (!pending_.empty() && now != pending_time_) settle();
    const auto i = index(id);
    if (i >= flows_.size()) flows_.resize(i + 1);
    auto& f = flows_[i];
    CS_ASSERT(!f.active, "a flow id is started once");
    f.route = &route;
    f.remaining = bytes;
    f.rate = 0.0;
    f.cap = rate_cap;
    f.updated = now;
    f.finish = now;
    f.active = true;
    f.queued = false;
    if (route.links.size() > FlowState::kInlineHops) {
      f.far.resize(route.links.size());
    } else {
      f.far.clear();  // a reused id's longer route
    }
    auto* at = f.at();
    for (std::size_t h = 0; h < route.links.size(); ++h) {
      auto& v = links_.links[index(route.links[h])];
      at[h] = v.size;
      v.push_back({i, static_cast<std::uint32_t>(h)});
    }
    ++active_;
    pending_.push_back(i);
    pending_time_ = now;
  }

  [[nodiscard]] std::optional<SimTime> next_completion() override {
    settle();
    drop_stale();
    if (finish_q_.empty()) return std::nullopt;
    return finish_q_.top().first;
  }

  const std::vector<FlowId>& complete(SimTime now) override {
    settle();
    auto& done = done_;
    done.clear();
    ended_links_.clear();
    for (drop_stale(); !finish_q_.empty() && finish_q_.top().first <= now; drop_stale()) {
      const auto i = finish_q_.top().second;
      finish_q_.pop();
      auto& f = flows_[i];
      const auto* at = f.at();
      for (std::size_t h = 0; h < f.route->links.size(); ++h) {
        const auto l = index(f.route->links[h]);
        auto& v = links_.links[l];
        const auto moved = v[v.size - 1];
        v[at[h]] = moved;
        flows_[moved.flow].at()[moved.hop] = at[h];
        v.pop_back();
        v.load -= f.rate;
        ended_links_.push_back(l);
      }
      f.active = false;
      f.queued = false;
      --active_;
      done.push_back(static_cast<FlowId>(i));
    }
    std::sort(done.begin(), done.end(), [](FlowId a, FlowId b) { return index(a) < index(b); });
    if (!ended_links_.empty()) flows_ended(ended_links_, now);
    return done;
  }

  [[nodiscard]] const std::vector<double>& link_loads() override {
    settle();
    loads_.resize(links_.links.size());
    for (std::size_t l = 0; l < loads_.size(); ++l) loads_[l] = links_.links[l].load;
    return loads_;
  }
  [[nodiscard]] std::size_t active_flows() const override { return active_; }

 protected:
  /// Assigns the rates of `component` (active flows, sorted by id) after a change.
  virtual void assign_rates(const std::vector<std::uint32_t>& component) = 0;
  /// Flows `started` (in start order) at `now` are waiting for rates.
  virtual void flows_started(const std::vector<std::uint32_t>& started, SimTime now) = 0;
  /// Flows that crossed `links` (repeats allowed) ended at `now`.
  virtual void flows_ended(const std::vector<std::uint32_t>& links, SimTime now) = 0;

  /// Brings `component` (active flows, sorted by id) up to `now` at their old rates, assigns new
  /// rates and finish times, and moves the link loads from the old rates to the new.
  void update(const std::vector<std::uint32_t>& component, SimTime now) {
    for (auto i : component) {
      auto& f = flows_[i];
      f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated).seconds());
      f.updated = now;
      for (auto l : f.route->links) links_.links[index(l)].load -= f.rate;
    }
    assign_rates(component);
    for (auto i : component) {
      auto& f = flows_[i];
      CS_ASSERT(f.rate > 0.0 && std::isfinite(f.rate), "every flow gets a positive finite rate");
      const auto finish = now + SimTime::from_seconds(f.remaining / f.rate);
      if (!f.queued || finish != f.finish) {
        f.finish = finish;  // an entry at the old time goes stale
        finish_q_.push({f.finish, i});
        f.queued = true;
      }
      for (auto l : f.route->links) links_.links[index(l)].load += f.rate;
    }
    if (finish_q_.size() > 2 * active_ + 1024) rebuild_finish_queue();
  }

  const Topology& topo_;
  std::vector<FlowState> flows_;
  LinkState own_;  ///< empty when the links are shared
  LinkState& links_;

 private:
  void settle() {
    if (pending_.empty()) return;
    flows_started(pending_, pending_time_);
    pending_.clear();
  }

  /// An entry of the finish queue: live while its flow is queued with this finish time.
  using Finish = std::pair<SimTime, std::uint32_t>;
  [[nodiscard]] bool live(const Finish& e) const {
    const auto& f = flows_[e.second];
    return f.queued && f.finish == e.first;
  }
  void drop_stale() {
    while (!finish_q_.empty() && !live(finish_q_.top())) finish_q_.pop();
  }
  /// One entry per queued flow, when stale entries have piled up (finishes that moved earlier).
  void rebuild_finish_queue() {
    std::vector<Finish> live_entries;
    for (std::uint32_t i = 0; i < flows_.size(); ++i) {
      if (flows_[i].queued) live_entries.push_back({flows_[i].finish, i});
    }
    finish_q_ =
        std::priority_queue<Finish, std::vector<Finish>, std::greater<>>(std::greater<>{}, std::move(live_entries));
  }

  /// Finish times in order (time, then flow): a min-heap of (finish, flow) whose entry goes stale
  /// when its flow's finish moves or the flow ends, dropped when it surfaces. A heap of pairs, not a
  /// tree: every rate change moves a finish time (no node allocation, no rebalancing).
  std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finish_q_;
  std::vector<std::uint32_t> pending_;  ///< started, no rate yet, in start order
  SimTime pending_time_{};
  std::vector<std::uint32_t> ended_links_;
  std::vector<FlowId> done_;   ///< what complete() returns
  std::vector<double> loads_;  ///< what link_loads() returns
  std::size_t active_ = 0;
};

/// Max-min fairness (MaxMinSolver) over the connected component of flows (flows linked by shared
/// links, transitively) that a change touches: components are independent, so this equals the
/// global allocation, and no other flow is visited. Flows started together are settled one final
/// component at a time, as if each had been settled on its own start; the components around flows
/// ending together are solved as one problem.
class FlowModel final : public FluidModel {
 public:
  using FluidModel::FluidModel;

 protected:
  void flows_started(const std::vector<std::uint32_t>& started, SimTime now) override {
    new_search();
    for (auto s : started) {
      if (!flows_[s].active || flow_mark_[s] == epoch_) continue;
      component_.clear();
      reach_flow(s);
      spread();
      solve(now);
    }
  }

  void flows_ended(const std::vector<std::uint32_t>& links, SimTime now) override {
    new_search();
    component_.clear();
    for (auto l : links) reach_link(l);
    spread();
    if (!component_.empty()) solve(now);
  }

  void assign_rates(const std::vector<std::uint32_t>& comp) override {
    if (comp.size() == 1 && solve_alone(flows_[comp[0]])) return;
    problem_.clear();
    for (auto l : problem_links_) problem_.capacity.push_back(topo_.link(static_cast<LinkId>(l)).bandwidth_bytes_per_s);
    for (auto i : comp) {
      const auto& f = flows_[i];
      for (auto l : f.route->links) problem_.hops.push_back(links_.links[index(l)].slot);
      problem_.first.push_back(static_cast<std::uint32_t>(problem_.hops.size()));
      problem_.cap.push_back(f.cap);
    }
    solver_.solve(problem_, rates_);
    for (std::size_t c = 0; c < comp.size(); ++c) flows_[comp[c]].rate = rates_[c];
  }

 private:
  /// A flow alone on its links (a ring step over NVLink, a rail-aligned pipeline send: nearly
  /// every solve of a training step): the filling's one pass gives it its smallest link capacity
  /// (a share of one flow), or its cap when that is no larger. The same value, without building
  /// a problem; false (not solved) when its hops are not the problem's links one for one.
  bool solve_alone(FlowState& f) const {
    const auto& hops = f.route->links;
    if (hops.size() != problem_links_.size() || hops.empty() || hops.size() >= 64) return false;
    std::uint64_t slots = 0;
    double share = kUncapped;
    for (auto l : hops) {
      slots |= std::uint64_t{1} << links_.links[index(l)].slot;
      share = std::min(share, topo_.link(l).bandwidth_bytes_per_s);
    }
    if (slots != (std::uint64_t{1} << hops.size()) - 1) return false;  // a link crossed twice
    f.rate = f.cap <= share ? f.cap : share;
    return true;
  }
  void new_search() {
    ++epoch_;
    if (flow_mark_.size() < flows_.size()) flow_mark_.resize(flows_.size(), 0);
    problem_links_.clear();
  }
  void solve(SimTime now) {
    std::sort(component_.begin(), component_.end());
    update(component_, now);
    problem_links_.clear();
  }
  /// Adds flow `i` to the component and queues its links.
  void reach_flow(std::uint32_t i) {
    flow_mark_[i] = epoch_;
    component_.push_back(i);
    for (auto l : flows_[i].route->links) reach_link(index(l));
  }
  void reach_link(std::uint32_t l) {
    auto& link = links_.links[l];
    if (link.mark == epoch_) return;
    link.mark = epoch_;
    link.slot = static_cast<std::uint32_t>(problem_links_.size());
    problem_links_.push_back(l);
  }
  /// Follows every reached link to its flows and their links, until nothing new is reached.
  void spread() {
    for (std::size_t k = 0; k < problem_links_.size(); ++k) {
      for (const auto& e : links_.links[problem_links_[k]]) {
        if (flow_mark_[e.flow] != epoch_) reach_flow(e.flow);
      }
    }
  }

  std::uint64_t epoch_ = 0;
  std::vector<std::uint64_t> flow_mark_;      ///< the last search that reached each flow
  std::vector<std::uint32_t> component_;      ///< flows reached by the current search
  std::vector<std::uint32_t> problem_links_;  ///< links reached, in slot order
  MaxMinProblem problem_;
  MaxMinSolver solver_;
  std::vector<double> rates_;
};

/// Closed form per flow: bottleneck bandwidth of its route (or its cap), ignoring other flows, so
/// a start or end changes no other flow's rate.
class AnalyticalModel final : public FluidModel {
 public:
  using FluidModel::FluidModel;

 protected:
  void flows_started(const std::vector<std::uint32_t>& started, SimTime now) override {
    for (auto s : started) {
      one_[0] = s;
      update(one_, now);
    }
  }
  void flows_ended(const std::vector<std::uint32_t>& /*links*/, SimTime /*now*/) override {}
  void assign_rates(const std::vector<std::uint32_t>& comp) override {
    for (auto i : comp) flows_[i].rate = std::min(topo_.bottleneck(*flows_[i].route), flows_[i].cap);
  }

 private:
  std::vector<std::uint32_t> one_ = {0};
};

}  // namespace

std::unique_ptr<NetworkModel> make_network_model(NetworkModelKind kind, const Topology& topo, LinkState* shared) {
  if (kind == NetworkModelKind::kFlow) return std::make_unique<FlowModel>(topo, shared);
  return std::make_unique<AnalyticalModel>(topo, shared);
}

}  // namespace cs::net
