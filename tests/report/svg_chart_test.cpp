#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include "sim/report/serving_report.hpp"
#include "sim/report/svg_chart.hpp"

namespace svg = cs::report::svg;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

/// The texts of the labels of the ticks of one axis ("x" or "y"), in order.
std::vector<std::string> tick_labels(const std::string& text, const std::string& axis) {
  std::vector<std::string> out;
  const std::regex re("<g class=\"tick " + axis + "\">.*?<text[^>]*>([^<]*)</text></g>");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

/// The points attribute of every polyline.
std::vector<std::string> polylines(const std::string& text) {
  std::vector<std::string> out;
  const std::regex re("<polyline[^>]* points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

/// No number in the output is NaN or infinite.
bool all_finite(const std::string& text) {
  return text.find("nan") == std::string::npos && text.find("inf") == std::string::npos;
}

}  // namespace

TEST_CASE("svg escape covers markup, quotes and the control characters XML forbids") {
  CHECK(svg::escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  CHECK(svg::escape(std::string("x\x01y\tz\n", 6)) == "xy\tz\n");
  CHECK(svg::escape("µs") == "µs");  // UTF-8 passes through
}

TEST_CASE("nice ticks step by 1, 2 or 5 x 10^k and cover the range") {
  CHECK(svg::nice_ticks(0, 97) == std::vector<double>{0, 20, 40, 60, 80, 100});
  CHECK(svg::nice_ticks(0, 1) == std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1});
  const auto t = svg::nice_ticks(-3.2, 7.1);
  CHECK(t.front() <= -3.2);
  CHECK(t.back() >= 7.1);
  CHECK(t.front() == -4);
  CHECK(t[1] - t[0] == 2);
  // A single value, non-finite input: a usable range, never NaN.
  const auto one = svg::nice_ticks(5, 5);
  CHECK(one.size() >= 2);
  CHECK(one.front() <= 5);
  CHECK(one.back() >= 5);
  CHECK(svg::nice_ticks(0, 0).size() >= 2);
  CHECK(svg::nice_ticks(std::nan(""), 1) == std::vector<double>{0, 1});
}

TEST_CASE("log ticks are powers of ten, with 2 and 5 between them over a short range") {
  CHECK(svg::log_ticks(3, 800) == std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000});
  const auto wide = svg::log_ticks(1e-3, 1e5);
  CHECK(wide.front() == doctest::Approx(1e-3));
  CHECK(wide.back() >= 1e5);
  CHECK(wide.size() <= 10);
  CHECK(svg::log_ticks(0, 10) == std::vector<double>{1, 10});
}

TEST_CASE("tick labels have the decimals of the step, and k or M for whole thousands and millions") {
  CHECK(svg::tick_label(0.4, 0.2) == "0.4");
  CHECK(svg::tick_label(0.6000000000000001, 0.2) == "0.6");
  CHECK(svg::tick_label(40, 20) == "40");
  CHECK(svg::tick_label(2000, 1000) == "2k");
  CHECK(svg::tick_label(1500, 500) == "1500");
  CHECK(svg::tick_label(1500000, 500000) == "1500k");
  CHECK(svg::tick_label(3e6, 1e6) == "3M");
  CHECK(svg::tick_label(-1e-17, 0.2) == "0");
  CHECK(svg::tick_label(0.005, 0.005) == "0.005");
}

TEST_CASE("a line chart maps values onto the plot area, with ticks on both axes") {
  svg::LineChart c;
  c.title = "t";
  c.x.title = "output tokens/s";
  c.y.title = "latency (ms)";
  c.series.push_back({.name = "a", .points = {{0, 0}, {50, 25}, {100, 50}}});
  const auto text = svg::line_chart(c);
  CHECK(text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(text.ends_with("</svg>\n"));
  CHECK(tick_labels(text, "x") == std::vector<std::string>{"0", "20", "40", "60", "80", "100"});
  CHECK(tick_labels(text, "y") == std::vector<std::string>{"0", "10", "20", "30", "40", "50"});
  // The plot spans x 76..696 (720 wide, margins 76 and 24) and y 350..40 (420 high, one legend row).
  const auto lines = polylines(text);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "76.0,350.0 386.0,195.0 696.0,40.0");
  CHECK(count(text, "class=\"marker\"") == 3);
  CHECK(text.find(">output tokens/s</text>") != std::string::npos);
  CHECK(text.find(">latency (ms)</text>") != std::string::npos);
  CHECK(text.find("class=\"legend\"") != std::string::npos);
  CHECK(text.find("no data") == std::string::npos);
  CHECK(all_finite(text));
}

TEST_CASE("a reference line outside the data widens the axis so it is drawn") {
  svg::LineChart c;
  c.series.push_back({.name = "p50", .points = {{1, 10}, {2, 30}}});
  c.refs.push_back({.value = 80, .label = "SLO 80 ms"});
  c.refs.push_back({.horizontal = false, .value = 3, .label = "x=3"});
  const auto text = svg::line_chart(c);
  CHECK(tick_labels(text, "y").back() == "80");
  CHECK(tick_labels(text, "x").back() == "3.0");
  CHECK(count(text, "<g class=\"ref\"") == 2);
  // y = 80 is the top of the plot (y = 40 px), the whole width.
  CHECK(text.find("<line x1=\"76.0\" y1=\"40.0\" x2=\"696.0\" y2=\"40.0\"") != std::string::npos);
  CHECK(text.find(">SLO 80 ms</text>") != std::string::npos);
}

TEST_CASE("a log axis places decades evenly and skips points it cannot show") {
  svg::LineChart c;
  c.y.log = true;
  c.series.push_back({.name = "s", .points = {{0, 1}, {1, 10}, {2, 100}, {3, 0}, {4, -5}}});
  const auto text = svg::line_chart(c);
  CHECK(tick_labels(text, "y") == std::vector<std::string>{"1", "2", "5", "10", "20", "50", "100"});
  const auto lines = polylines(text);
  REQUIRE(lines.size() == 1);
  // 1, 10, 100 at the bottom, middle and top of 350..40; the y <= 0 points are not drawn.
  CHECK(lines[0] == "76.0,350.0 386.0,195.0 696.0,40.0");
  CHECK(text.find(", log scale<") != std::string::npos);
}

TEST_CASE("empty or non-finite data gives axes and a note, never NaN") {
  svg::LineChart none;
  none.y.log = true;
  const auto a = svg::line_chart(none);
  CHECK(a.find("no data") != std::string::npos);
  CHECK(all_finite(a));
  CHECK(count(a, "class=\"tick y\"") >= 2);
  svg::LineChart bad;
  bad.series.push_back({.name = "s", .points = {{std::nan(""), 1}, {1, std::numeric_limits<double>::infinity()}}});
  const auto b = svg::line_chart(bad);
  CHECK(b.find("no data") != std::string::npos);
  CHECK(all_finite(b));
  CHECK(polylines(b).empty());
  svg::StackedBars bars;
  const auto c = svg::stacked_bars(bars);
  CHECK(c.find("no data") != std::string::npos);
  CHECK(all_finite(c));
}

TEST_CASE("every text given to a chart is escaped") {
  svg::LineChart c;
  c.title = "<script>alert(1)</script>";
  c.x.title = "a & b";
  c.series.push_back({.name = "\"quoted\"", .points = {{1, 1}, {2, 2}}});
  c.refs.push_back({.value = 1.5, .label = "<slo>"});
  const auto text = svg::line_chart(c);
  CHECK(text.find("<script") == std::string::npos);
  CHECK(text.find("&lt;script&gt;") != std::string::npos);
  CHECK(text.find("a &amp; b") != std::string::npos);
  CHECK(text.find("&quot;quoted&quot;") != std::string::npos);
  CHECK(text.find("&lt;slo&gt;") != std::string::npos);
  svg::StackedBars b{.rows = {"<row>"}, .categories = {"c&d"}, .values = {{1}}};
  const auto bt = svg::stacked_bars(b);
  CHECK(bt.find("<row>") == std::string::npos);
  CHECK(bt.find("&lt;row&gt;: c&amp;d 1</title>") != std::string::npos);
}

TEST_CASE("stacked bars share one axis from zero: segment widths are proportional to their values") {
  svg::StackedBars b;
  b.unit = "time per step (ms)";
  b.rows = {"tp8", "tp4"};
  b.categories = {"compute", "comm", "idle"};
  b.values = {{6, 3, 1}, {2, 2, -1}};
  b.width = 700;
  b.label_width = 130;
  const auto text = svg::stacked_bars(b);
  // Plot from x 130 to 630 (700 - 70 on the right) for 0..10 ms: 50 px per ms.
  CHECK(tick_labels(text, "x") == std::vector<std::string>{"0", "2", "4", "6", "8", "10"});
  CHECK(text.find("x=\"130.0\" y=\"50.0\" width=\"300.0\"") != std::string::npos);  // compute 6
  CHECK(text.find("x=\"430.0\" y=\"50.0\" width=\"150.0\"") != std::string::npos);  // comm 3
  CHECK(text.find("x=\"580.0\" y=\"50.0\" width=\"50.0\"") != std::string::npos);   // idle 1
  CHECK(count(text, "class=\"segment\"") == 5);                                     // the negative value is not drawn
  CHECK(count(text, "<g class=\"bar\">") == 2);
  CHECK(text.find(">time per step (ms)</text>") != std::string::npos);
  CHECK(all_finite(text));
}

TEST_CASE("the infer-sweep chart has TTFT and TPOT at p50 and p99 and the SLO lines") {
  std::vector<std::pair<double, cs::serving::ServingResults>> pts(2);
  pts[0].first = 1;
  pts[0].second.output_tokens_per_s = 100;
  pts[0].second.ttft = {.mean = 0.05, .p50 = 0.04, .p90 = 0.06, .p99 = 0.08};
  pts[0].second.tpot = {.mean = 0.02, .p50 = 0.02, .p90 = 0.02, .p99 = 0.03};
  pts[1].first = 4;
  pts[1].second.output_tokens_per_s = 400;
  pts[1].second.ttft = {.mean = 1, .p50 = 0.5, .p90 = 3, .p99 = 8.4};
  pts[1].second.tpot = {.mean = 0.03, .p50 = 0.03, .p90 = 0.04, .p99 = 0.05};
  const auto text = cs::report::sweep_svg(pts, "m on c", {.ttft_s = 0.5, .tpot_s = 0.05});
  CHECK(polylines(text).size() == 4);
  for (const char* name :
       {">TTFT p50<", ">TTFT p99<", ">TPOT p50<", ">TPOT p99<", ">TTFT SLO 500.0 ms<", ">TPOT SLO 50.0 ms<"}) {
    CHECK_MESSAGE(text.find(name) != std::string::npos, name);
  }
  // The p99 TTFT of 8.4 s is on the chart: the log axis reaches 10 s.
  CHECK(tick_labels(text, "y").back() == "10k");
  CHECK(count(text, "class=\"tick x\"") >= 3);
}
