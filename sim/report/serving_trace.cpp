#include "sim/report/serving_trace.hpp"

#include "sim/report/trace_writer.hpp"

namespace cs::report {

std::uint64_t write_serving_trace(std::ostream& out, const std::string& path_for_errors,
                                  const serving::ServingResults& r, SimTime from, SimTime to) {
  TraceWriter w(out);
  for (int i = 0; i < r.replicas; ++i) {
    w.process_name(i, "replica " + std::to_string(i));
    w.process_sort_index(i, i);
    w.thread_name(i, 0, "engine steps");
  }
  const auto in_window = [&](SimTime a, SimTime b) { return !(b < from || a > to); };
  for (const auto& s : r.step_spans) {
    const auto a = SimTime::from_seconds(s.start);
    const auto b = SimTime::from_seconds(s.end);
    if (!in_window(a, b)) continue;
    const TraceArg args[] = {TraceArg::of("tokens", s.tokens), TraceArg::of("sequences", s.sequences)};
    w.span("step", "engine", a, b, s.replica, 0, args);
  }
  const int req_pid = r.replicas;
  w.process_name(req_pid, "requests");
  w.process_sort_index(req_pid, req_pid);
  for (const auto& q : r.request_spans) {
    const auto arrival = SimTime::from_seconds(q.arrival);
    const auto first = SimTime::from_seconds(q.first_token);
    const auto finish = SimTime::from_seconds(q.finish);
    const TraceArg args[] = {TraceArg::of("replica", std::int64_t{q.replica})};
    if (in_window(arrival, first)) w.span("waiting+prefill", "request", arrival, first, req_pid, q.id, args);
    if (in_window(first, finish)) w.span("decode", "request", first, finish, req_pid, q.id, args);
  }
  w.finish(path_for_errors);
  return w.events();
}

}  // namespace cs::report
