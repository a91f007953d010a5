#include "sim/serving/step_builder.hpp"

#include <algorithm>

namespace cs::serving {

StepBuilder::StepBuilder(double window, bool mtp) : window_(window), mtp_(mtp) { clear(); }

void StepBuilder::clear() {
  plan.clear();
  mix = models::StepMix{};
  mix.window = window_;
  mtp_mix = models::StepMix{};
  mtp_mix.window = window_;
}

void StepBuilder::prefill(const Request& r, std::int64_t chunk) {
  plan.push_back({r.id, chunk});
  const double c = static_cast<double>(chunk);
  mix.tokens += c;
  mix.add_prefill_context(static_cast<double>(r.prefilled), c);
  if (r.prefilled + chunk == r.prompt) mix.sampled += 1;
}

void StepBuilder::decode(int req, double kv_tokens) {
  plan.push_back({req, 0});
  mix.tokens += 1;
  mix.sampled += 1;
  mix.add_decode_context(kv_tokens);
  if (!mtp_) return;
  mix.tokens += 1;
  mix.sampled += 1;
  mix.add_decode_context(kv_tokens + 1);
  mtp_mix.tokens += 1;
  mtp_mix.sampled += 1;
  mtp_mix.add_decode_context(kv_tokens + 1);
}

std::int64_t StepBuilder::decodes() const {
  return std::count_if(plan.begin(), plan.end(), [](const Planned& p) { return p.chunk == 0; });
}

}  // namespace cs::serving
