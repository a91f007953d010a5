#include "sim/report/trace_writer.hpp"

#include <charconv>
#include <cmath>

#include "sim/core/errors.hpp"

namespace cs::report {

namespace {
constexpr std::size_t kFlushBytes = 1 << 16;  // 64 KiB: large writes, small memory
}

std::int64_t trace_ns(SimTime t) { return (t.ps + 500) / 1000; }

TraceWriter::TraceWriter(std::ostream& out) : out_(out) {
  buf_.reserve(kFlushBytes + 1024);
  put("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[");
}

TraceWriter::~TraceWriter() {
  if (finished_) return;
  try {
    put("\n]}\n");
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  } catch (...) {  // a destructor must not throw; the caller that cares calls finish()
  }
}

void TraceWriter::begin_event() {
  put(events_ == 0 ? "\n{" : ",\n{");
  ++events_;
}

void TraceWriter::flush_if_full() {
  if (buf_.size() < kFlushBytes) return;
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

void TraceWriter::put_string(std::string_view s) {
  buf_ += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      buf_ += '\\';
      buf_ += c;
    } else if (u < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      buf_ += "\\u00";
      buf_ += kHex[u >> 4];
      buf_ += kHex[u & 15];
    } else {
      buf_ += c;
    }
  }
  buf_ += '"';
}

void TraceWriter::put_int(std::int64_t v) {
  char tmp[24];
  const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf_.append(tmp, r.ptr);
}

void TraceWriter::put_number(double v) {
  if (!std::isfinite(v)) v = 0;
  char tmp[32];
  const auto r = std::to_chars(tmp, tmp + sizeof tmp, v, std::chars_format::general, 6);
  buf_.append(tmp, r.ptr);
}

void TraceWriter::put_time(SimTime t) {
  const std::int64_t ns = trace_ns(t);
  put_int(ns / 1000);
  std::int64_t frac = ns % 1000;
  if (frac == 0) return;
  char digits[4] = {static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                    static_cast<char>('0' + frac % 10), 0};
  int len = 3;
  while (digits[len - 1] == '0') --len;
  buf_ += '.';
  buf_.append(digits, static_cast<std::size_t>(len));
}

void TraceWriter::process_name(int pid, std::string_view name) {
  begin_event();
  put("\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
  put_int(pid);
  put(",\"args\":{\"name\":");
  put_string(name);
  put("}}");
  flush_if_full();
}

void TraceWriter::process_sort_index(int pid, int index) {
  begin_event();
  put("\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":");
  put_int(pid);
  put(",\"args\":{\"sort_index\":");
  put_int(index);
  put("}}");
  flush_if_full();
}

void TraceWriter::thread_name(int pid, int tid, std::string_view name) {
  begin_event();
  put("\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
  put_int(pid);
  put(",\"tid\":");
  put_int(tid);
  put(",\"args\":{\"name\":");
  put_string(name);
  put("}}");
  flush_if_full();
}

void TraceWriter::span(std::string_view name, std::string_view category, SimTime start, SimTime end, int pid, int tid,
                       std::span<const TraceArg> args) {
  begin_event();
  put("\"name\":");
  put_string(name);
  put(",\"cat\":");
  put_string(category);
  put(",\"ph\":\"X\",\"ts\":");
  put_time(start);
  put(",\"dur\":");
  // The duration is taken between the rounded ends, so that ts + dur is the rounded end exactly.
  put_time(SimTime{(trace_ns(end) - trace_ns(start)) * 1000});
  put(",\"pid\":");
  put_int(pid);
  put(",\"tid\":");
  put_int(tid);
  if (!args.empty()) {
    put(",\"args\":{");
    bool first = true;
    for (const auto& a : args) {
      if (!first) buf_ += ',';
      first = false;
      put_string(a.key);
      buf_ += ':';
      switch (a.kind) {
        case TraceArg::Kind::kInt: put_int(a.integer); break;
        case TraceArg::Kind::kNumber: put_number(a.number); break;
        case TraceArg::Kind::kText: put_string(a.text); break;
      }
    }
    buf_ += '}';
  }
  buf_ += '}';
  flush_if_full();
}

void TraceWriter::counter(std::string_view name, int pid, SimTime time, std::string_view series, double value) {
  begin_event();
  put("\"name\":");
  put_string(name);
  put(",\"ph\":\"C\",\"ts\":");
  put_time(time);
  put(",\"pid\":");
  put_int(pid);
  put(",\"args\":{");
  put_string(series);
  buf_ += ':';
  put_number(value);
  put("}}");
  flush_if_full();
}

void TraceWriter::finish(const std::string& path_for_errors) {
  put("\n]}\n");
  finished_ = true;
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
  out_.flush();
  if (!out_) throw InputError(path_for_errors, "", "cannot write this trace file (disk full or not writable?)");
}

}  // namespace cs::report
