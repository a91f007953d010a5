#include "sim/workload/executor.hpp"

#include <map>
#include <tuple>

#include "sim/core/check.hpp"
#include "sim/engine/engine.hpp"

namespace cs::workload {

namespace {

enum EventKind : std::uint32_t { kTaskEnd = 0, kNetworkWake = 1 };

class Executor final : public engine::EventHandler {
 public:
  Executor(const WorkloadGraph& g, const net::Topology& topo, const ExecutorOptions& opt)
      : g_(g),
        topo_(topo),
        opt_(opt),
        net_(net::make_network_model(opt.network, topo)),
        preds_left_(g.tasks().size()),
        arrived_(g.tasks().size(), 0),
        flows_left_(g.tasks().size(), 0),
        latency_(g.tasks().size(), 0.0),
        head_(g.stream_count(), 0),
        busy_(g.stream_count(), false),
        network_lp_(static_cast<std::uint32_t>(g.gpus())) {
    log_.spans.resize(g.tasks().size());
    // Successors in compressed rows (a stable counting sort keeps each task's edges in the order
    // they were added, so the run does not depend on how edges are stored).
    succ_begin_.assign(g.tasks().size() + 1, 0);
    for (const auto& e : g.edges()) {
      ++succ_begin_[index(e.before) + 1];
      ++preds_left_[index(e.after)];
    }
    for (std::size_t i = 0; i < g.tasks().size(); ++i) succ_begin_[i + 1] += succ_begin_[i];
    succ_.resize(g.edges().size());
    std::vector<std::uint32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
    for (const auto& e : g.edges()) succ_[fill[index(e.before)]++] = e.after;
  }

  RunLog run() {
    for (std::size_t t = 0; t < g_.tasks().size(); ++t) {
      if (g_.tasks()[t].stream == Stream::kNone && preds_left_[t] == 0) start_unordered(static_cast<TaskId>(t));
    }
    for (std::size_t s = 0; s < g_.stream_count(); ++s) try_start(s);
    log_.events = engine_.run(*this);
    for (std::size_t s = 0; s < g_.stream_count(); ++s) {
      CS_ASSERT(head_[s] == g_.stream_order(s).size(), "every task ran (no deadlock in the workload graph)");
    }
    log_.makespan = engine_.now();
    return std::move(log_);
  }

  void handle(const engine::Event& e, engine::Engine& /*engine*/) override {
    if (e.kind == kTaskEnd) {
      finish(static_cast<TaskId>(e.payload));
    } else if (e.payload == net_version_) {
      for (auto f : net_->complete(engine_.now())) {
        const auto t = flow_owner_[net::index(f)];
        free_flows_.push_back(f);  // ids are reused: the model's state stays as small as the active set
        if (--flows_left_[t] == 0) {
          engine_.schedule(engine_.now() + SimTime::from_seconds(latency_[t]), engine::Phase::kTaskEnd,
                           g_.task(static_cast<TaskId>(t)).gpu, kTaskEnd, t);
        }
      }
      network_changed();
    }
  }

 private:
  [[nodiscard]] std::size_t stream_index(std::uint32_t gpu, Stream s) const {
    return static_cast<std::size_t>(gpu) * kStreamsPerGpu + static_cast<std::size_t>(s);
  }

  void try_start(std::size_t s) {
    if (busy_[s]) return;
    const auto& order = g_.stream_order(s);
    if (head_[s] == order.size()) return;
    const TaskId id = order[head_[s]];
    const auto t = index(id);
    if (preds_left_[t] > 0) return;
    const Task& task = g_.task(id);
    busy_[s] = true;  // a collective's kernel occupies the stream while it waits for its peers
    if (!task.collective) {
      log_.spans[t].start = engine_.now();
      engine_.schedule(engine_.now() + task.duration, engine::Phase::kTaskEnd, task.gpu, kTaskEnd, t);
      return;
    }
    const auto& ranks = g_.groups()[task.group];
    if (++arrived_[t] < ranks.size()) return;
    start_collective(id, task);
  }

  /// A task outside every stream starts as soon as its dependencies are done.
  void start_unordered(TaskId id) {
    const Task& task = g_.task(id);
    if (task.collective) {
      start_collective(id, task);
    } else {
      log_.spans[index(id)].start = engine_.now();
      engine_.schedule(engine_.now() + task.duration, engine::Phase::kTaskEnd, task.gpu, kTaskEnd, index(id));
    }
  }

  void start_collective(TaskId id, const Task& task) {
    const auto t = index(id);
    log_.spans[t].start = engine_.now();
    const auto& cached = plan_for(task);
    const auto& plan = cached.plan;
    log_.spans[t].algorithm = plan.algorithm;
    latency_[t] = plan.latency_s;
    if (plan.flows.empty()) {
      engine_.schedule(engine_.now() + SimTime::from_seconds(plan.latency_s), engine::Phase::kTaskEnd, task.gpu,
                       kTaskEnd, t);
      return;
    }
    flows_left_[t] = static_cast<std::uint32_t>(plan.flows.size());
    for (std::size_t k = 0; k < plan.flows.size(); ++k) {
      net::FlowId fid{};
      if (free_flows_.empty()) {
        fid = static_cast<net::FlowId>(flow_owner_.size());
        flow_owner_.push_back(t);
      } else {
        fid = free_flows_.back();
        free_flows_.pop_back();
        flow_owner_[net::index(fid)] = t;
      }
      net_->start(fid, *cached.routes[k], plan.flows[k].bytes, plan.flows[k].rate_cap, engine_.now());
    }
    log_.flows += plan.flows.size();
    network_changed();
  }

  /// A collective's plan with its flows' routes resolved (cached: the same group, op and size
  /// recur every micro-batch).
  struct CachedPlan {
    coll::CollectivePlan plan;
    std::vector<const net::Route*> routes;
  };

  const CachedPlan& plan_for(const Task& task) {
    const auto key = std::make_tuple(task.flow_group, static_cast<int>(task.op) * 8 + static_cast<int>(task.algorithm), task.bytes);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    const auto cache = [&](coll::CollectivePlan plan) -> const CachedPlan& {
      CachedPlan c{std::move(plan), {}};
      for (const auto& f : c.plan.flows) c.routes.push_back(&topo_.route(f.src, f.dst));
      return plans_.emplace(key, std::move(c)).first->second;
    };
    const auto& ranks = g_.groups()[task.flow_group];
    if (opt_.curves && task.algorithm == coll::Algorithm::kAuto && ranks.size() > 1) {
      for (const auto& c : *opt_.curves) {
        if (c.op != coll::op_name(task.op) || c.gpus != static_cast<int>(ranks.size())) continue;
        coll::CollectivePlan measured;
        measured.algorithm = coll::Algorithm::kMeasured;
        measured.latency_s = c.alpha_s + task.bytes * coll::bus_factor(task.op, c.gpus) / c.busbw_bytes_per_s;
        return cache(measured);
      }
    }
    coll::CollectiveRequest req;
    req.op = task.op;
    req.algorithm = task.algorithm;
    req.ranks = ranks;
    req.bytes = task.bytes;
    req.call_latency_s = opt_.collective_latency_s;
    return cache(coll::plan_collective(topo_, req));
  }

  void network_changed() {
    ++net_version_;
    if (opt_.record_links) {
      const auto& loads = net_->link_loads();
      if (last_loads_.size() != loads.size()) last_loads_.assign(loads.size(), 0.0);
      for (std::size_t l = 0; l < loads.size(); ++l) {
        if (loads[l] != last_loads_[l]) {
          log_.link_samples.push_back({engine_.now(), static_cast<std::uint32_t>(l), loads[l]});
          last_loads_[l] = loads[l];
        }
      }
    }
    if (auto next = net_->next_completion()) {
      engine_.schedule(*next, engine::Phase::kNetwork, network_lp_, kNetworkWake, net_version_);
    }
  }

  void finish(TaskId id) {
    const auto t = index(id);
    const Task& task = g_.task(id);
    log_.spans[t].end = engine_.now();
    // Free the stream(s) that ran it, then release successors; start whatever is now ready.
    auto& touched = touched_;
    touched.clear();
    if (task.stream != Stream::kNone) {
      if (task.collective) {
        for (int r : g_.groups()[task.group]) touched.push_back(stream_index(static_cast<std::uint32_t>(r), task.stream));
      } else {
        touched.push_back(stream_index(task.gpu, task.stream));
      }
    }
    for (auto s : touched) {
      busy_[s] = false;
      ++head_[s];
    }
    for (auto k = succ_begin_[t]; k < succ_begin_[t + 1]; ++k) {
      const TaskId succ = succ_[k];
      const Task& st = g_.task(succ);
      if (--preds_left_[index(succ)] > 0) continue;
      if (st.stream == Stream::kNone) {
        start_unordered(succ);
      } else if (st.collective) {
        for (int r : g_.groups()[st.group]) touched.push_back(stream_index(static_cast<std::uint32_t>(r), st.stream));
      } else {
        touched.push_back(stream_index(st.gpu, st.stream));
      }
    }
    // try_start never re-enters finish (ends are events), so the scratch list is stable here.
    for (auto s : touched) try_start(s);
  }

  const WorkloadGraph& g_;
  const net::Topology& topo_;
  ExecutorOptions opt_;
  engine::Engine engine_;
  std::unique_ptr<net::NetworkModel> net_;
  std::vector<std::uint32_t> succ_begin_;  ///< task t's successors: succ_[succ_begin_[t] .. succ_begin_[t + 1])
  std::vector<TaskId> succ_;
  std::vector<std::uint32_t> preds_left_;
  std::vector<std::uint32_t> arrived_;
  std::vector<std::uint32_t> flows_left_;
  std::vector<double> latency_;
  std::vector<std::size_t> head_;
  std::vector<bool> busy_;
  std::vector<std::uint32_t> flow_owner_;  ///< by flow id: the task it belongs to
  std::vector<net::FlowId> free_flows_;      ///< finished flows' ids, reused last-in first-out
  std::vector<std::size_t> touched_;         ///< scratch of finish(): streams to try
  std::vector<double> last_loads_;
  std::map<std::tuple<std::uint32_t, int, double>, CachedPlan> plans_;
  std::uint64_t net_version_ = 0;
  std::uint32_t network_lp_;
  RunLog log_;
};

}  // namespace

RunLog simulate(const WorkloadGraph& graph, const net::Topology& topo, const ExecutorOptions& options) {
  Executor ex(graph, topo, options);
  return ex.run();
}

}  // namespace cs::workload
