#include "sim/serving/step_runner.hpp"

#include <utility>

#include "sim/serving/kv_transfer.hpp"
#include "sim/serving/serving_log.hpp"

namespace cs::serving {

using workload::Category;
using workload::Stream;
using workload::TaskId;

StepRunner::StepRunner(const ServingScenario& s, std::size_t replicas, bool record_trace, TransferBound bound)
    : s_(s),
      bound_(std::move(bound)),
      programs_(s),
      mixed_s_(s.mix ? std::optional<ServingScenario>(s.replica(s.first_mixed())) : std::nullopt),
      mixed_programs_(mixed_s_ ? std::optional<StepProgramBuilder>(std::in_place, *mixed_s_) : std::nullopt),
      step_(static_cast<double>(s.model.sliding_window), s.mtp_acceptance > 0),
      mtp_rng_(s.seed ^ 0x6d7470u),  // "mtp": a stream apart from the workload's draws
      record_(replicas, record_trace) {}

StepProgramBuilder& StepRunner::programs_for(const Replica& rep) {
  return s_.mixed_replica(rep.index) ? *mixed_programs_ : programs_;
}

void StepRunner::start(workload::OpenGraph& g, Replica& rep, std::vector<Request>& reqs) {
  while (rep.inflight < rep.pp()) {
    step_.clear();
    rep.scheduler->plan(rep.queue, reqs, step_);
    if (step_.empty()) return;  // idle until an arrival or a batch leaves the pipeline
    ++rep.inflight;
    for (const auto& p : step_.plan) {
      auto& r = reqs[static_cast<std::size_t>(p.req)];
      r.in_flight = true;
      if (p.chunk == 0) continue;
      prefill_tokens_ += p.chunk;
      // Its blocks are filled by this step: a shared prefix now computed is cached for the next
      // requests (vLLM caches a block when the step computing it is scheduled).
      rep.queue.kv.publish(r, r.prefilled + p.chunk);
    }
    const std::uint64_t b = batches_.acquire();
    Batch& batch = batches_.at(b);
    batch.replica = rep.index;
    std::swap(batch.plan, step_.plan);  // both keep their capacity (batches are reused)
    batch.next = 0;
    rep.batch = b;
    batch.start = g.now();
    batch.kv_used = rep.queue.kv.used();
    record_.started(batch, step_.mix.tokens);
    add_batch(g, rep, b);
  }
}

/// The batch's tasks: each stage's layers (the first with the step overhead, the last with the LM
/// head), stages joined by send/recv of the activations; its end is the last stage's end.
void StepRunner::add_batch(workload::OpenGraph& g, const Replica& rep, std::uint64_t b) {
  // The report's imbalance is the (decode) pool's whose EP it names: the last replica's.
  const bool counts = s_.model.is_moe() && rep.shape.ep > 1 && (s_.prefill_replicas == 0 || rep.decode_only);
  auto& programs = programs_for(rep);
  programs.build(rep.shape, step_.mix, step_.mtp_mix, static_cast<std::int64_t>(batches_.at(b).plan.size()), counts);
  if (resumes(rep)) {
    programs.stage_program(rep.place(0), batches_.at(b).program);
    resume(g, rep, b);
    return;
  }
  std::optional<TaskId> send;
  TaskId last{};
  for (int k = 0; k < rep.pp(); ++k) {
    const auto& st = rep.stages[static_cast<std::size_t>(k)];
    programs.stage_program(rep.place(k), program_);
    const auto [first, end] = tasks_.add_stage(g, st, program_);
    if (send) g.depend(*send, first);
    last = end;
    if (k + 1 < rep.pp()) {
      const double bytes = step_.mix.tokens * static_cast<double>(s_.model.hidden) * 2.0 / rep.shape.tp;
      send = g.add_collective(st.to_next, Stream::kNone, Category::kPpComm, "pp.send", coll::CollectiveOp::kSendRecv,
                              bytes);
      g.depend(end, *send);
    }
  }
  batches_.tag(last, Purpose::kStepEnd, b);
}

/// One isolated stage (no PP): what is known as one task, a collective of a size not seen yet
/// through the flow model, and the batch resumes when it ends (StageTasks::resume).
void StepRunner::resume(workload::OpenGraph& g, const Replica& rep, std::uint64_t b) {
  Batch& batch = batches_.at(b);
  const auto added = tasks_.resume(g, rep.stages.front(), batch.program, batch.next, bound_(rep));
  batch.busy_until = added.end;
  batches_.tag(added.id, added.last ? Purpose::kStepEnd : Purpose::kResume, b);
}

std::optional<int> StepRunner::advance(workload::OpenGraph& g, Purpose p, std::vector<Replica>& replicas,
                                       std::vector<Request>& reqs) {
  const Batch& batch = batches_.at(p.id);
  auto& rep = replicas[static_cast<std::size_t>(batch.replica)];
  if (p.kind == Purpose::kResume && batch.next < batch.program.size()) {
    resume(g, rep, p.id);
    return std::nullopt;
  }
  finish(g.now(), rep, p.id, reqs);
  return rep.index;
}

void StepRunner::finish(SimTime now, Replica& rep, std::uint64_t b, std::vector<Request>& reqs) {
  --rep.inflight;
  batches_.release(b);  // reused by the next batch planned, after the run acts on this one
  const Batch& batch = batches_.at(b);
  for (const auto& p : batch.plan) reqs[static_cast<std::size_t>(p.req)].in_flight = false;
  record_.finished(batch, now, rep.pp(), rep.queue.running.size());
  settle_step(batch.plan, reqs, now, rep.prefill_only, s_.mtp_acceptance, mtp_rng_, settled_);
  record_.produced(now, settled_.produced);
}

void StepRunner::into(ServingLog& log) {
  record_.into(log);
  programs_.count_into(log);
  if (mixed_programs_) mixed_programs_->count_into(log);
  log.collectives_s = tasks_.collectives_s();
  log.prefill_tokens = prefill_tokens_;
}

}  // namespace cs::serving
