#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <sstream>

#include "sim/report/trace_writer.hpp"
#include "sim/report/training_trace.hpp"

using cs::SimTime;
using cs::report::bucket_averages;
using cs::report::TraceArg;
using cs::report::TraceWriter;

namespace {
SimTime us(std::int64_t v) { return SimTime{v * 1'000'000}; }
}  // namespace

TEST_CASE("link counter buckets are time-weighted averages of the load's step function") {
  // 0 until 10 us, 5 until 30 us, 0 after: over [0, 40) us in 4 buckets, 0 5 5 0.
  const std::vector<std::pair<SimTime, double>> s{{us(10), 5.0}, {us(30), 0.0}};
  const auto four = bucket_averages(s, us(0), us(40), 4);
  REQUIRE(four.size() == 4);
  CHECK(four[0] == doctest::Approx(0));
  CHECK(four[1] == doctest::Approx(5));
  CHECK(four[2] == doctest::Approx(5));
  CHECK(four[3] == doctest::Approx(0));
  // Two buckets of 20 us: each holds 10 us at 5, so the mean is 2.5 in both.
  const auto two = bucket_averages(s, us(0), us(40), 2);
  CHECK(two[0] == doctest::Approx(2.5));
  CHECK(two[1] == doctest::Approx(2.5));
  // The integral is kept whatever the bucket count (bytes moved do not depend on the rate).
  for (int n : {1, 3, 7, 1000}) {
    const auto a = bucket_averages(s, us(0), us(40), n);
    double bytes = 0;
    for (double v : a) bytes += v * 40.0 / n;
    CHECK(bytes == doctest::Approx(5.0 * 20.0));
  }
  // A window that starts inside a busy stretch sees the load from its start.
  const auto late = bucket_averages(s, us(20), us(30), 2);
  CHECK(late[0] == doctest::Approx(5));
  CHECK(late[1] == doctest::Approx(5));
  // No samples: an idle link.
  CHECK(bucket_averages({}, us(0), us(10), 3) == std::vector<double>{0, 0, 0});
}

TEST_CASE("the trace writer's output is the Chrome trace-event JSON format, times in whole nanoseconds") {
  std::ostringstream out;
  {
    TraceWriter w(out);
    w.process_name(0, "GPU \"0\"\n");
    w.thread_name(0, 1, "comm stream");
    const TraceArg args[] = {TraceArg::of("layer", std::int64_t{3}), TraceArg::of("gbs", 1.5),
                             TraceArg::of("algorithm", std::string_view("ring"))};
    // 1,234,567 ps starts at 1.235 us; ends at 2,000,400 ps = 2.000 us: 0.765 us long.
    w.span("layer.fwd", "forward", SimTime{1'234'567}, SimTime{2'000'400}, 0, 1, args);
    w.counter("gpu0->nvswitch", 1, SimTime{5'000'000}, "GB/s", std::numeric_limits<double>::quiet_NaN());
    w.finish("test");
    CHECK(w.events() == 4);
  }
  const auto j = nlohmann::json::parse(out.str());
  REQUIRE(j["traceEvents"].size() == 4);
  CHECK(j["displayTimeUnit"] == "ms");
  CHECK(j["traceEvents"][0]["args"]["name"] == "GPU \"0\"\n");
  const auto& x = j["traceEvents"][2];
  CHECK(x["ph"] == "X");
  CHECK(x["ts"].get<double>() == 1.235);
  CHECK(x["dur"].get<double>() == 0.765);
  CHECK(out.str().find("\"ts\":1.235,\"dur\":0.765,") != std::string::npos);
  CHECK(x["args"]["layer"] == 3);
  CHECK(x["args"]["gbs"].get<double>() == 1.5);
  CHECK(x["args"]["algorithm"] == "ring");
  const auto& c = j["traceEvents"][3];
  CHECK(c["ph"] == "C");
  CHECK(c["ts"].get<double>() == 5);
  CHECK(c["args"]["GB/s"].get<double>() == 0);  // a non-finite value cannot be JSON: written as 0
}

TEST_CASE("the trace writer streams: output beyond its buffer arrives whole, and an empty trace is valid") {
  std::ostringstream out;
  TraceWriter w(out);
  for (int i = 0; i < 5000; ++i) w.span("k", "forward", us(i), us(i + 1), i % 8, 0);
  CHECK(out.str().size() > 64 * 1024);  // flushed while writing, not held to the end
  w.finish("test");
  const auto j = nlohmann::json::parse(out.str());
  CHECK(j["traceEvents"].size() == 5000);
  CHECK(j["traceEvents"][4999]["ts"].get<double>() == 4999);

  std::ostringstream empty;
  { TraceWriter e(empty); }  // the destructor closes an unfinished document
  CHECK(nlohmann::json::parse(empty.str())["traceEvents"].empty());
}
