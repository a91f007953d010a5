#include "sim/serving/request_source.hpp"

#include <algorithm>
#include <cmath>

namespace cs::serving {

namespace {

std::int64_t draw(const LengthDist& d, std::mt19937_64& rng) {
  if (d.lo == d.hi) return d.lo;
  return d.lo + static_cast<std::int64_t>(unit_draw(rng) * static_cast<double>(d.hi - d.lo + 1));
}

Request make(int id, SimTime arrival, std::int64_t input, std::int64_t output) {
  Request r;
  r.id = id;
  r.arrival = arrival;
  r.input = input;
  r.output = output;
  r.prompt = input;
  return r;
}

Request make(int id, const RequestSpec& t) {
  Request r = make(id, SimTime::from_seconds(t.arrival_s), t.input, t.output);
  r.prefix_group = t.prefix_group;
  r.prefix_tokens = t.prefix_tokens;
  return r;
}

}  // namespace

double unit_draw(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// The prefix groups come from a stream apart from the lengths' and arrivals', so a workload keeps
// its lengths whether or not it shares prefixes.
RequestSource::RequestSource(const ServingScenario& s) : s_(s), rng_(s.seed), prefix_rng_(s.seed ^ 0x707265666978u) {}

Request RequestSource::drawn(int id, SimTime arrival) {
  // The output length is drawn before the input: the order every run so far has used (the two
  // were one call's arguments, which g++ evaluates right to left), so seeded workloads keep their
  // lengths.
  const std::int64_t output = draw(s_.output, rng_);
  const std::int64_t input = draw(s_.input, rng_);
  Request r = make(id, arrival, input, output);
  if (s_.shared_prefix.tokens > 0) {
    r.prefix_tokens = s_.shared_prefix.tokens;
    r.prefix_group = static_cast<int>(draw(LengthDist{0, s_.shared_prefix.groups - 1}, prefix_rng_));
  }
  return r;
}

std::vector<Request> RequestSource::initial() {
  std::vector<Request> out;
  const auto next_id = [&] { return static_cast<int>(out.size()); };
  switch (s_.arrivals) {
    case Arrivals::kTrace:
      for (const auto& t : s_.trace) out.push_back(make(next_id(), t));
      break;
    case Arrivals::kQueued:
      for (std::int64_t i = 0; i < s_.requests; ++i) out.push_back(drawn(next_id(), SimTime{}));
      break;
    case Arrivals::kPoisson: {
      double t = 0;
      for (std::int64_t i = 0; i < s_.requests; ++i) {
        t += -std::log(1.0 - unit_draw(rng_)) / s_.rate;
        out.push_back(drawn(next_id(), SimTime::from_seconds(t)));
      }
      break;
    }
    case Arrivals::kClosedLoop:
      for (std::int64_t i = 0; i < std::min(s_.concurrency, s_.requests); ++i)
        out.push_back(drawn(next_id(), SimTime{}));
      break;
  }
  return out;
}

std::optional<Request> RequestSource::on_finish(SimTime now, std::size_t issued) {
  if (s_.arrivals != Arrivals::kClosedLoop || static_cast<std::int64_t>(issued) >= s_.requests) return std::nullopt;
  return drawn(static_cast<int>(issued), now);
}

std::vector<int> arrival_order(const std::vector<Request>& reqs) {
  std::vector<int> order(reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return reqs[static_cast<std::size_t>(a)].arrival < reqs[static_cast<std::size_t>(b)].arrival;
  });
  return order;
}

}  // namespace cs::serving
