#include "sim/serving/step_settle.hpp"

#include <algorithm>

#include "sim/serving/request_source.hpp"

namespace cs::serving {

void settle_step(const std::vector<Planned>& plan, std::vector<Request>& reqs, SimTime now, bool prefill_only,
                 double mtp_acceptance, std::mt19937_64& mtp_rng, StepSettled& out) {
  out.clear();
  using Kind = StepSettled::Action::Kind;
  for (const auto& p : plan) {
    auto& r = reqs[static_cast<std::size_t>(p.req)];
    if (r.finished()) continue;  // static batching padding
    if (p.chunk > 0) {
      r.prefilled += p.chunk;
      if (r.prefilled < r.prompt) continue;
      ++r.generated;
      ++out.produced;
      if (r.first_token < SimTime{}) r.first_token = now;
      if (prefill_only && r.generated < r.output) {
        out.actions.push_back({Kind::kSendKv, r.id});
        continue;
      }
    } else {
      // Under MTP the draft token is kept with the acceptance probability (its own stream of
      // draws, so arrivals and lengths are those of the run without MTP).
      const std::int64_t accepted = mtp_acceptance > 0 && unit_draw(mtp_rng) < mtp_acceptance ? 1 : 0;
      const std::int64_t n = std::min<std::int64_t>(1 + accepted, r.output - r.generated);
      r.generated += n;
      out.produced += n;
    }
    if (r.generated >= r.output) {
      r.finish = now;  // finished() from here on, as the run's completion stamps it
      out.actions.push_back({Kind::kComplete, r.id});
    }
  }
}

}  // namespace cs::serving
