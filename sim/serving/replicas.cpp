#include "sim/serving/replicas.hpp"

#include <algorithm>

#include "sim/serving/serving_log.hpp"

namespace cs::serving {

models::ServingShape shape_of(const ServingScenario& s, const ServingScenario& mine) {
  models::ServingShape shape;
  shape.tp = mine.tp;
  shape.ep = mine.ep;
  shape.dp_attention = s.dp_attention;
  shape.deepep = s.deepep;
  if (s.deepep) {
    // serving_file checks that the profile has them.
    shape.ll_dispatch_floor_s = mine.profile.deepep_ll_dispatch_floor->value;
    shape.ll_combine_floor_s = mine.profile.deepep_ll_combine_floor->value;
  }
  shape.expert_slots = expert_slots(mine);
  shape.weights = s.weights;
  shape.static_fp8_scales = s.static_fp8_scales;
  shape.fp4_tensor_cores = mine.profile.matrix_peak.count(calib::Dtype::kFp4) > 0;
  shape.kv_bytes = s.kv_bytes;
  return shape;
}

Replicas make_replicas(const ServingScenario& s, std::int64_t oom_longest_blocks) {
  Replicas out;
  const bool disagg = s.prefill_replicas > 0;
  const int n = s.replica_count();
  // The sliding-window share of a token's KV bytes, of the (decode) pool's shape.
  const double sliding_share = models::kv_sliding_share(s.model, shape_of(s, s.replica(n - 1)));
  int next_rank = 0;
  for (int i = 0; i < n; ++i) {
    Replica r;
    r.index = i;
    // Each replica's own TP, PP and EP (disaggregated pools may differ): op shapes, memory, blocks.
    const ServingScenario mine = s.replica(i);
    r.shape = shape_of(s, mine);
    std::int64_t blocks = 0;
    const auto memory = serving_memory(mine, &blocks);
    if (i == n - 1) {
      out.memory = memory;
      out.blocks = blocks;
    }
    // --allow-oom: pools with room keep their own blocks.
    const std::int64_t pools = s.dp_attention ? mine.tp : 1;
    if (oom_longest_blocks > 0 && blocks / pools < oom_longest_blocks) {
      blocks = oom_longest_blocks * s.max_batch * pools;
      out.oom = true;
    }
    r.queue.kv = KvCache(blocks, s.block_size, sliding_share, s.model.sliding_window, s.reuses_prefixes());
    r.scheduler = make_scheduler(mine);
    int first_layer = 0;
    for (int k = 0; k < mine.pp; ++k) {
      Stage st;
      st.layers = static_cast<int>(s.model.layers / mine.pp + (k < s.model.layers % mine.pp ? 1 : 0));
      st.first_layer = first_layer;
      first_layer += st.layers;
      for (int t = 0; t < mine.tp; ++t) st.ranks.push_back(next_rank++);
      r.stages.push_back(st);
    }
    // The nodes the replica's first stage (its EP group) spans.
    r.shape.nodes = s.mixed_replica(i) ? 1
                                       : (r.stages.front().ranks.back() / s.cluster.gpus) -
                                             (r.stages.front().ranks.front() / s.cluster.gpus) + 1;
    r.prefill_only = disagg && i < s.prefill_replicas;
    r.decode_only = disagg && i >= s.prefill_replicas;
    out.replicas.push_back(std::move(r));
  }
  return out;
}

void mark_isolated(const net::Topology& topo, std::vector<Replica>& replicas, int kv_pairs, bool fast_path) {
  std::vector<std::vector<Stage>*> stages;
  std::vector<TransferPairs> transfers;
  for (auto& rep : replicas) stages.push_back(&rep.stages);
  for (const auto& p : replicas) {
    if (!p.prefill_only || kv_pairs == 0) continue;
    for (const auto& d : replicas) {
      if (d.decode_only) transfers.push_back({&p.stages.front(), &d.stages.front(), kv_pairs});
    }
  }
  mark_isolated(topo, stages, transfers, fast_path);
}

void add_groups(workload::OpenGraph& g, std::vector<Replica>& replicas) {
  for (auto& rep : replicas) {
    for (std::size_t k = 0; k < rep.stages.size(); ++k) {
      auto& st = rep.stages[k];
      st.group = g.add_group(st.ranks);
      if (k + 1 < rep.stages.size()) st.to_next = g.add_group({st.ranks.front(), rep.stages[k + 1].ranks.front()});
    }
  }
}

void fleet_into(const ServingScenario& s, const Replicas& fleet, ServingLog& log) {
  const auto& replicas = fleet.replicas;
  log.replicas = static_cast<int>(replicas.size());
  if (s.prefill_replicas > 0) {
    const auto pool = [&](int count, int first) {
      const Replica& rep = replicas[static_cast<std::size_t>(first)];
      return ServingResults::Pool{count, rep.shape.tp, rep.pp(), std::max(1, rep.shape.ep)};
    };
    log.pools = ServingResults::Pools{pool(s.prefill_replicas, 0), pool(s.decode_replicas, s.prefill_replicas)};
  }
  for (const auto& rep : replicas) {
    log.preemptions += rep.scheduler->preemptions();
    log.prefix_evictions += rep.queue.kv.evictions();
  }
  log.memory = fleet.memory;
  log.kv_blocks = fleet.blocks;
  log.oom = fleet.oom;
  log.decode_pool = replicas.back().queue.kv;
  log.moe_ep = std::max(1, replicas.back().shape.ep);  // the (decode) pool the report's memory is of
}

}  // namespace cs::serving
