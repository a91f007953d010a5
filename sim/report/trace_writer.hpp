#pragma once
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "sim/core/sim_time.hpp"

namespace cs::report {

/// One named argument of a trace event: an integer, a number or a string.
struct TraceArg {
  std::string_view key;
  enum class Kind { kInt, kNumber, kText } kind = Kind::kInt;
  std::int64_t integer = 0;
  double number = 0;
  std::string_view text;

  static TraceArg of(std::string_view k, std::int64_t v) { return {k, Kind::kInt, v, 0, {}}; }
  static TraceArg of(std::string_view k, double v) { return {k, Kind::kNumber, 0, v, {}}; }
  static TraceArg of(std::string_view k, std::string_view v) { return {k, Kind::kText, 0, 0, v}; }
};

/// A streaming writer of the Chrome trace-event JSON format (the "JSON Object Format" that
/// ui.perfetto.dev and chrome://tracing open): events go to the stream as they are written, through
/// a fixed-size buffer, so the memory it takes does not grow with the trace. Times are whole
/// nanoseconds printed in microseconds ("ts":12.345), rounded once from picoseconds so that a
/// span's end is exactly start + duration and nested spans stay nested. The output is the same
/// bytes for the same calls (no locale, no float formatting that depends on the platform).
class TraceWriter {
 public:
  explicit TraceWriter(std::ostream& out);
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  ~TraceWriter();  ///< finishes the document if `finish` was not called (never throws)

  void process_name(int pid, std::string_view name);
  /// Perfetto and Chrome order processes by this index (GPUs first, then links).
  void process_sort_index(int pid, int index);
  void thread_name(int pid, int tid, std::string_view name);
  /// A complete span ("ph":"X") from `start` to `end` on (pid, tid).
  void span(std::string_view name, std::string_view category, SimTime start, SimTime end, int pid, int tid,
            std::span<const TraceArg> args = {});
  /// A counter sample ("ph":"C"): the track `name` of process `pid` takes `value` from `time` on.
  void counter(std::string_view name, int pid, SimTime time, std::string_view series, double value);
  /// Closes the event array and the document, and flushes; a stream error is an InputError on
  /// `path_for_errors`.
  void finish(const std::string& path_for_errors);

  [[nodiscard]] std::uint64_t events() const { return events_; }

 private:
  void begin_event();
  void put(std::string_view s) { buf_.append(s); }
  void put_string(std::string_view s);  ///< a JSON string literal, escaped
  void put_int(std::int64_t v);
  void put_number(double v);  ///< up to 6 significant digits; non-finite values are written as 0
  void put_time(SimTime t);   ///< microseconds with three decimals (whole nanoseconds), trailing zeros cut
  void flush_if_full();

  std::ostream& out_;
  std::string buf_;
  std::uint64_t events_ = 0;
  bool finished_ = false;
};

/// A time rounded to whole nanoseconds (as the writer prints it), in picoseconds.
[[nodiscard]] std::int64_t trace_ns(SimTime t);

}  // namespace cs::report
