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
    for (std::size_t i = 0; i < g.tasks().size(); ++i) preds_left_[i] = g.tasks()[i].preds;
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
    const auto& plan = plan_for(task);
    log_.spans[t].algorithm = plan.algorithm;
    latency_[t] = plan.latency_s;
    if (plan.flows.empty()) {
      engine_.schedule(engine_.now() + SimTime::from_seconds(plan.latency_s), engine::Phase::kTaskEnd, task.gpu,
                       kTaskEnd, t);
      return;
    }
    flows_left_[t] = static_cast<std::uint32_t>(plan.flows.size());
    for (const auto& f : plan.flows) {
      const auto fid = static_cast<net::FlowId>(flow_owner_.size());
      flow_owner_.push_back(t);
      net_->start(fid, topo_.route(f.src, f.dst), f.bytes, f.rate_cap, engine_.now());
    }
    log_.flows += plan.flows.size();
    network_changed();
  }

  const coll::CollectivePlan& plan_for(const Task& task) {
    const auto key = std::make_tuple(task.group, static_cast<int>(task.op) * 8 + static_cast<int>(task.algorithm), task.bytes);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    const auto& ranks = g_.groups()[task.group];
    if (opt_.curves && task.algorithm == coll::Algorithm::kAuto && ranks.size() > 1) {
      for (const auto& c : *opt_.curves) {
        if (c.op != coll::op_name(task.op) || c.gpus != static_cast<int>(ranks.size())) continue;
        coll::CollectivePlan measured;
        measured.algorithm = coll::Algorithm::kMeasured;
        measured.latency_s = c.alpha_s + task.bytes * coll::bus_factor(task.op, c.gpus) / c.busbw_bytes_per_s;
        return plans_.emplace(key, measured).first->second;
      }
    }
    coll::CollectiveRequest req;
    req.op = task.op;
    req.algorithm = task.algorithm;
    req.ranks = g_.groups()[task.group];
    req.bytes = task.bytes;
    req.call_latency_s = opt_.collective_latency_s;
    return plans_.emplace(key, coll::plan_collective(topo_, req)).first->second;
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
    std::vector<std::size_t> touched;
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
    for (auto succ : task.succs) {
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
    for (auto s : touched) try_start(s);
  }

  const WorkloadGraph& g_;
  const net::Topology& topo_;
  ExecutorOptions opt_;
  engine::Engine engine_;
  std::unique_ptr<net::NetworkModel> net_;
  std::vector<std::uint32_t> preds_left_;
  std::vector<std::uint32_t> arrived_;
  std::vector<std::uint32_t> flows_left_;
  std::vector<double> latency_;
  std::vector<std::size_t> head_;
  std::vector<bool> busy_;
  std::vector<std::uint32_t> flow_owner_;
  std::vector<double> last_loads_;
  std::map<std::tuple<std::uint32_t, int, double>, coll::CollectivePlan> plans_;
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
