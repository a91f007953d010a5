#include "models/ops/tp_overlap.hpp"

#include <cstddef>

#include "sim/core/check.hpp"

namespace cs::models {

namespace {

bool sync_tp(const Item& it, CollectiveOp op) {
  return it.comm && !it.async && it.comm->group == GroupKind::kTp && it.comm->op == op;
}

/// A decoder linear layer's GEMM, the kind TE's userbuffers overlap (not core attention, not the
/// LM head or the MoE router, which Megatron runs outside Transformer Engine's linear modules).
bool te_linear(const Item& it) {
  return !it.comm && it.op.kind == OpKind::kGemm && !it.op.core_attention && !it.op.keep_16bit;
}

Item chunk_of(const Item& gemm, int parts, double sm_share) {
  Item c = gemm;
  c.op.m /= parts;
  c.op.flops /= parts;
  c.op.bytes /= parts;
  c.op.sm_share = sm_share;
  c.wait = 0;
  return c;
}

Item async_piece(Comm comm, CollectiveOp op, const char* label, double bytes, int tag) {
  comm.op = op;
  comm.label = label;
  comm.bytes = bytes;
  Item x{Op{}, comm};
  x.async = true;
  x.tag = tag;
  return x;
}

/// Index of the GEMM an all-gather at `i` feeds: past memory-bound ops (FP8 casts) only.
std::size_t fed_gemm(const std::vector<Item>& items, std::size_t i) {
  std::size_t j = i + 1;
  while (j < items.size() && !items[j].comm && items[j].op.kind == OpKind::kMemoryBound) ++j;
  const bool ok = j < items.size() && te_linear(items[j]) && !items[j].op.weight_gradient;
  return ok ? j : items.size();
}

}  // namespace

std::vector<Item> tp_comm_overlap(const std::vector<Item>& items, const TpOverlap& o) {
  CS_ASSERT(o.tp > 1 && o.rs_splits >= 1 && o.comm_sm_fraction >= 0 && o.comm_sm_fraction < 1,
            "TP overlap needs TP > 1 and a share of the SMs left to compute");
  const double shared = 1.0 - o.comm_sm_fraction;
  std::vector<Item> out;
  out.reserve(items.size() * 2);
  int tag = o.first_tag;
  int pending = 0;  // the last async piece the next op must wait for
  auto release = [&](Item it) {
    if (pending > 0 && !it.comm) {
      if (it.wait > 0) {
        out.push_back({Op{"tp.overlap.wait", OpKind::kMemoryBound}, std::nullopt, false, 0, pending});
      } else {
        it.wait = pending;
      }
      pending = 0;
    }
    out.push_back(it);
  };
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    if (sync_tp(it, CollectiveOp::kAllGather)) {
      const std::size_t j = fed_gemm(items, i);
      if (j < items.size()) {
        for (std::size_t k = i + 1; k < j; ++k) release(items[k]);  // TE casts the local shard first
        // Ring exchange: each of TP - 1 steps passes one rank's shard (output / TP) to the next rank.
        const int first = tag;
        for (int p = 1; p < o.tp; ++p)
          out.push_back(
              async_piece(*it.comm, CollectiveOp::kShift, "tp.allgather.ring_exchange", it.comm->bytes / o.tp, tag++));
        for (int c = 0; c < o.tp; ++c) {
          Item g = chunk_of(items[j], o.tp, 1.0);
          if (c == 0) {
            g.wait = items[j].wait;
            release(g);
          } else {
            g.wait = first + c - 1;
            out.push_back(g);
          }
        }
        i = j;
        continue;
      }
    }
    if (sync_tp(it, CollectiveOp::kReduceScatter) && pending == 0 && !out.empty()) {
      const std::size_t n = out.size();
      const bool bulk = n >= 2 && te_linear(out[n - 1]) && out[n - 1].op.weight_gradient && te_linear(out[n - 2]) &&
                        !out[n - 2].op.weight_gradient && out[n - 1].wait == 0;
      if (bulk) {
        Item w = out.back();
        out.pop_back();
        out.push_back(
            async_piece(*it.comm, CollectiveOp::kReduceScatter, "tp.reducescatter.bulk", it.comm->bytes, tag));
        pending = tag++;
        w.op.sm_share = shared;
        out.push_back(w);
        continue;
      }
      if (te_linear(out[n - 1]) && !out[n - 1].op.weight_gradient) {
        const Item g = out.back();
        out.pop_back();
        for (int c = 0; c < o.rs_splits; ++c) {
          Item part = chunk_of(g, o.rs_splits, shared);
          if (c == 0) part.wait = g.wait;
          out.push_back(part);
          out.push_back(async_piece(*it.comm, CollectiveOp::kReduceScatter, "tp.reducescatter.pipelined",
                                    it.comm->bytes / o.rs_splits, tag));
          pending = tag++;
        }
        continue;
      }
    }
    release(it);
  }
  if (pending > 0) out.push_back({Op{"tp.overlap.wait", OpKind::kMemoryBound}, std::nullopt, false, 0, pending});
  return out;
}

double tp_overlap_buffer_bytes(const ModelArch& m, const StepShape& s) {
  constexpr double kRoles = 10;
  return kRoles * s.tokens() * static_cast<double>(m.hidden) * 2.0;
}

}  // namespace cs::models
