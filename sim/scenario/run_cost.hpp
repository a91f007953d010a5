#pragma once
#include <string>

#include "sim/scenario/scenario.hpp"

namespace cs::scenario {

/// What a simulated run costs on a rental offer, for training steps and serving runs alike: the
/// boxes rented (one per node) at the offer's hourly price, the run's span at that price, and per
/// million tokens. An offer quoting a range is costed at its top too (the `_max` figures; 0 for a
/// single price). A plan prices whole jobs by rental term instead (sizing::TermCost: months or
/// hours paid, not a share of an hour), and its candidates keep that.
struct RunCost {
  std::string offer, currency;
  int boxes = 1;
  double price_per_hour = 0, price_per_hour_max = 0;          ///< of all the boxes
  double per_run = 0, per_run_max = 0;                        ///< the span's share of it (training: one step)
  double per_million_tokens = 0, per_million_tokens_max = 0;  ///< every token the span processed
  /// Serving: per million generated tokens only (0 for training, whose tokens are all input).
  double per_million_output_tokens = 0, per_million_output_tokens_max = 0;
};

/// The cost of `seconds` of `boxes` of `offer`'s boxes that processed `tokens` tokens, of which
/// `output_tokens` were generated (serving; 0 for training).
[[nodiscard]] inline RunCost run_cost(const Offer& offer, int boxes, double seconds, double tokens,
                                      double output_tokens = 0) {
  RunCost c;
  c.offer = offer.id;
  c.currency = offer.currency;
  c.boxes = boxes;
  const auto fill = [&](double per_hour, double& run, double& per_mtok, double& per_mout) {
    run = per_hour * seconds / 3600.0;
    per_mtok = run / tokens * 1e6;
    per_mout = output_tokens > 0 ? run / output_tokens * 1e6 : 0.0;
  };
  c.price_per_hour = offer.price_per_hour() * boxes;
  fill(c.price_per_hour, c.per_run, c.per_million_tokens, c.per_million_output_tokens);
  if (offer.has_range()) {
    c.price_per_hour_max = offer.high().price_per_hour() * boxes;
    fill(c.price_per_hour_max, c.per_run_max, c.per_million_tokens_max, c.per_million_output_tokens_max);
  }
  return c;
}

/// A fleet of two box kinds run over the same span: their boxes, prices and costs added (one
/// currency, checked by the caller). A quoted range's top adds the other kind's single price.
[[nodiscard]] inline RunCost fleet_cost(const RunCost& a, const RunCost& b) {
  RunCost c = a;
  c.offer = a.offer + "+" + b.offer;
  c.boxes = a.boxes + b.boxes;
  const bool range = a.price_per_hour_max > 0 || b.price_per_hour_max > 0;
  const auto top = [](double max, double single) { return max > 0 ? max : single; };
  const auto add = [&](double& sum, double& sum_max, double av, double amax, double bv, double bmax) {
    sum = av + bv;
    sum_max = range ? top(amax, av) + top(bmax, bv) : 0.0;
  };
  add(c.price_per_hour, c.price_per_hour_max, a.price_per_hour, a.price_per_hour_max, b.price_per_hour,
      b.price_per_hour_max);
  add(c.per_run, c.per_run_max, a.per_run, a.per_run_max, b.per_run, b.per_run_max);
  add(c.per_million_tokens, c.per_million_tokens_max, a.per_million_tokens, a.per_million_tokens_max,
      b.per_million_tokens, b.per_million_tokens_max);
  add(c.per_million_output_tokens, c.per_million_output_tokens_max, a.per_million_output_tokens,
      a.per_million_output_tokens_max, b.per_million_output_tokens, b.per_million_output_tokens_max);
  return c;
}

}  // namespace cs::scenario
