#pragma once
// What a finished engine step did to its requests, apart from the run that schedules the next one:
// prompt chunks prefilled, first tokens, decoded tokens (MTP's accepted drafts), and which requests
// now leave the replica: a prompt done on a prefill-only replica moves to decode, an answer done
// completes. A pure function of the plan, the requests and the draws, tested without a simulation.
#include <cstdint>
#include <random>
#include <vector>

#include "sim/core/sim_time.hpp"
#include "sim/serving/request.hpp"
#include "sim/serving/step_builder.hpp"

namespace cs::serving {

struct StepSettled {
  /// What the run does next for a request, in the plan's order (the order its effects happen in).
  struct Action {
    enum class Kind { kSendKv, kComplete };
    Kind kind = Kind::kComplete;
    int req = 0;
  };
  std::int64_t produced = 0;  ///< output tokens the step made
  std::vector<Action> actions;
  void clear() {
    produced = 0;
    actions.clear();
  }
};

/// Applies a finished step's plan to its requests at `now`. A prefill chunk adds to the prompt done;
/// the chunk that finishes it makes the first token (stamped once). On a prefill-only replica a
/// request with tokens still to make then moves to decode (kSendKv). A decode entry makes one
/// token, and under MTP (`mtp_acceptance` > 0) a second with that probability, drawn from `mtp_rng`
/// in plan order. A request with all its tokens is stamped finished at `now` (kComplete).
/// Finished requests in the plan (static batching's padding) are left alone.
void settle_step(const std::vector<Planned>& plan, std::vector<Request>& reqs, SimTime now, bool prefill_only,
                 double mtp_acceptance, std::mt19937_64& mtp_rng, StepSettled& out);

}  // namespace cs::serving
