#include "sim/report/serving_results.hpp"

#include <algorithm>
#include <cmath>

namespace cs::report {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

Percentiles summarise(const std::vector<double>& v) {
  Percentiles p;
  if (v.empty()) return p;
  p.count = v.size();
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  p.p50 = percentile(v, 50);
  p.p90 = percentile(v, 90);
  p.p99 = percentile(v, 99);
  return p;
}

std::optional<ServingResults::SteadyState> steady_state(const ServingLog& log, SimTime first,
                                                        const std::vector<char>* met) {
  constexpr std::size_t kMinRequests = 20;  // fewer: the "middle" is a handful of completions
  const auto& reqs = log.requests;
  if (reqs.size() < kMinRequests) return std::nullopt;
  std::vector<SimTime> done;
  done.reserve(reqs.size());
  for (const auto& q : reqs) done.push_back(q.finish);
  std::sort(done.begin(), done.end());
  const std::size_t n = done.size();
  const SimTime from = done[n / 10], to = done[(9 * n + 9) / 10 - 1];  // the 10% and 90% completions
  if (to <= from) return std::nullopt;
  const double window = (to - from).seconds();
  std::int64_t tokens = 0;
  for (const auto& [at, count] : log.tokens_out) tokens += at > from && at <= to ? count : 0;
  const auto finished = std::count_if(done.begin(), done.end(), [&](SimTime t) { return t > from && t <= to; });
  // A steady state turns its batch over: a run of a wave or two (a closed loop whose requests
  // are few times its clients) has none, and its middle would mix waves' completions.
  if (finished < 2 * log.peak_in_service) return std::nullopt;
  ServingResults::SteadyState st;
  st.from_s = (from - first).seconds();
  st.to_s = (to - first).seconds();
  st.output_tokens_per_s = static_cast<double>(tokens) / window;
  st.output_tokens_per_s_per_gpu = st.output_tokens_per_s / log.gpus;
  st.requests_per_s = static_cast<double>(finished) / window;
  if (met) {
    std::int64_t good = 0;
    for (std::size_t i = 0; i < reqs.size(); ++i)
      good += (*met)[i] != 0 && reqs[i].finish > from && reqs[i].finish <= to ? 1 : 0;
    st.goodput_requests_per_s = static_cast<double>(good) / window;
  }
  return st;
}

void request_metrics(const ServingLog& log, const std::optional<double>& slo_ttft_s,
                     const std::optional<double>& slo_tpot_s, bool spans, ServingResults& r) {
  const auto& reqs = log.requests;
  r.requests = static_cast<std::int64_t>(reqs.size());
  std::vector<double> ttft, tpot, e2e;
  SimTime first = reqs.empty() ? SimTime{} : reqs.front().arrival;
  std::int64_t goodput = 0;
  std::vector<char> met;  ///< per request: within the objectives
  met.reserve(reqs.size());
  for (const auto& q : reqs) {
    first = std::min(first, q.arrival);
    r.input_tokens += q.input;
    r.output_tokens += q.output;
    const double to_first = (q.first_token - q.arrival).seconds();
    ttft.push_back(to_first);
    e2e.push_back((q.finish - q.arrival).seconds());
    const double per_token =
        q.output > 1 ? (q.finish - q.first_token).seconds() / static_cast<double>(q.output - 1) : 0.0;
    if (q.output > 1) tpot.push_back(per_token);
    const bool ok = (!slo_ttft_s || to_first <= *slo_ttft_s) && (!slo_tpot_s || per_token <= *slo_tpot_s);
    goodput += ok ? 1 : 0;
    met.push_back(ok ? 1 : 0);
    if (spans && r.request_spans.size() < 5000)
      r.request_spans.push_back({q.id, q.arrival.seconds(), q.first_token.seconds(), q.finish.seconds(), q.replica});
  }
  r.makespan_s = log.makespan().seconds();
  r.ttft = summarise(ttft);
  r.tpot = summarise(tpot);
  r.e2e = summarise(e2e);
  const double span = std::max(r.makespan_s, 1e-12);
  r.output_tokens_per_s = log.output_tokens_per_s();
  r.output_tokens_per_s_per_gpu = r.output_tokens_per_s / r.gpus;
  r.input_tokens_per_s = static_cast<double>(r.input_tokens) / span;
  r.requests_per_s = static_cast<double>(r.requests) / span;
  if (slo_ttft_s || slo_tpot_s) r.goodput_requests_per_s = static_cast<double>(goodput) / span;
  r.steady = steady_state(log, first, slo_ttft_s || slo_tpot_s ? &met : nullptr);
}

}  // namespace cs::report
