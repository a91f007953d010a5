#pragma once
#include <cstdint>
#include <vector>

#include "models/ops/serving_ops.hpp"
#include "sim/serving/request.hpp"

namespace cs::serving {

/// A request's part in a batch.
struct Planned {
  int req = 0;
  std::int64_t chunk = 0;  ///< prefill tokens, or 0 for a decode token
};

/// The batch a scheduler forms: which requests run with how many tokens, and the work they put
/// through the model (the step's mix, and under MTP the draft module's own).
class StepBuilder {
 public:
  /// `window`: the model's sliding window (0: none); `mtp`: MTP speculative decoding is on.
  StepBuilder(double window, bool mtp);
  /// Empties the batch (keeping its capacity).
  void clear();
  /// A prefill chunk of `chunk` of `r`'s prompt tokens after those it has cached.
  void prefill(const Request& r, std::int64_t chunk);
  /// A decoding sequence whose cache holds `kv_tokens` tokens with this step's. Under MTP the draft
  /// token is verified too (one more query, one more position), and the MTP module drafts the
  /// next token from this step's last position (its own mix, run after the LM head).
  void decode(int req, double kv_tokens);
  /// Tokens a decoding sequence puts through the model per step: its last token, and under MTP
  /// the draft token verified beside it.
  [[nodiscard]] std::int64_t decode_tokens() const { return mtp_ ? 2 : 1; }
  [[nodiscard]] bool empty() const { return plan.empty(); }
  /// Sequences decoding in the batch.
  [[nodiscard]] std::int64_t decodes() const;

  std::vector<Planned> plan;
  models::StepMix mix, mtp_mix;

 private:
  double window_ = 0;
  bool mtp_ = false;
};

}  // namespace cs::serving
