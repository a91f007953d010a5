#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/report/html_page.hpp"
#include "sim/report/html_report.hpp"
#include "sim/report/svg_chart.hpp"

namespace svg = cs::report::svg;

TEST_CASE("an HTML page escapes every text it is given and fetches nothing") {
  cs::report::html::Page page("<b>title</b>", "a & b");
  page.heading("h <2>");
  page.paragraph("\"quoted\"");
  page.table({"<em>"}, {{"12.5 ms", "<img>"}});
  page.details("<s>", "<pre>");
  const auto text = page.str();
  CHECK(text.starts_with("<!DOCTYPE html>\n"));
  CHECK(text.find("<title>&lt;b&gt;title&lt;/b&gt;</title>") != std::string::npos);
  CHECK(text.find("a &amp; b") != std::string::npos);
  CHECK(text.find("h &lt;2&gt;") != std::string::npos);
  CHECK(text.find("&quot;quoted&quot;") != std::string::npos);
  CHECK(text.find("<td class=\"n\">12.5 ms</td><td>&lt;img&gt;</td>") != std::string::npos);
  CHECK(text.find("<pre>&lt;pre&gt;</pre>") != std::string::npos);
  for (const char* bad : {"<b>", "<em>", "<img>", "<s>", "<script", "src=", "href=", "@import", "url("}) {
    CHECK_MESSAGE(text.find(bad) == std::string::npos, bad);
  }
}

TEST_CASE("the Pareto front keeps the points no other beats on both axes") {
  const std::vector<svg::Point> pts{{1, 9}, {2, 5}, {3, 6}, {4, 2}, {5, 2}, {2, 7}};
  // Lower is better on both: (1,9), (2,5), (4,2); (3,6), (5,2) and (2,7) are beaten.
  const auto lo = svg::pareto_front(pts, true, true);
  REQUIRE(lo.size() == 3);
  CHECK(lo[0].x == 1);
  CHECK(lo[1].x == 2);
  CHECK(lo[1].y == 5);
  CHECK(lo[2].x == 4);
  // Higher is better on both: (5,2), (3,6), (2,7), (1,9).
  const auto hi = svg::pareto_front(pts, false, false);
  REQUIRE(hi.size() == 4);
  CHECK(hi[0].x == 1);
  CHECK(hi[1].x == 2);
  CHECK(hi[1].y == 7);
  CHECK(hi[3].x == 5);
  CHECK(svg::pareto_front({}, true, true).empty());
}

TEST_CASE("a plan report draws its candidates, their front, the ranked table and the rejections") {
  cs::report::PlanReport p;
  p.title = "plan";
  p.header = {"#", "offer"};
  p.rows = {{"1", "a"}, {"2", "b<c"}};
  p.points = {{1, 20}, {2, 10}};
  p.x_title = "job time (hours)";
  p.y_title = "job cost (USD)";
  p.rejected = {{"z", "no cluster"}};
  const auto text = cs::report::plan_report_html(p);
  CHECK(text.find(">#1</text>") != std::string::npos);
  CHECK(text.find(">#2</text>") != std::string::npos);
  CHECK(text.find(">Pareto front</text>") != std::string::npos);
  CHECK(text.find("<polyline") != std::string::npos);  // both points are on the front
  CHECK(text.find("b&lt;c") != std::string::npos);
  CHECK(text.find(">no cluster</td>") != std::string::npos);
  CHECK(text.find(">job cost (USD)</text>") != std::string::npos);
}
