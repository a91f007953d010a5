#include "sim/report/html_page.hpp"

#include <cctype>

#include "sim/report/svg_chart.hpp"

namespace cs::report::html {

namespace {

using svg::escape;

/// "12.5", "-3", "1,234", "45%", "12.0 ms": a leading number (right-aligned in a table).
bool numeric(const std::string& s) {
  std::size_t i = s.starts_with('-') ? 1 : 0;
  return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}"
    "h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}"
    ".sub{color:#555;margin-top:0}"
    "table{border-collapse:collapse;margin:8px 0;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "figure{margin:12px 0}figcaption{font-size:13px;color:#444;max-width:720px}"
    "pre{font-size:12px;background:#f8f8f8;padding:8px;overflow-x:auto}"
    "footer{margin-top:32px;font-size:12px;color:#777}";

}  // namespace

Page::Page(std::string title, std::string subtitle) : title_(std::move(title)), subtitle_(std::move(subtitle)) {}

void Page::heading(const std::string& text) { body_ += "<h2>" + escape(text) + "</h2>\n"; }

void Page::paragraph(const std::string& text) { body_ += "<p>" + escape(text) + "</p>\n"; }

void Page::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table>\n";
  if (!header.empty()) {
    body_ += "<tr>";
    for (const auto& h : header) body_ += "<th>" + escape(h) + "</th>";
    body_ += "</tr>\n";
  }
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const auto& c : row) body_ += (numeric(c) ? "<td class=\"n\">" : "<td>") + escape(c) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void Page::figure(const std::string& svg, const std::string& caption) {
  body_ += "<figure>\n" + svg + "<figcaption>" + escape(caption) + "</figcaption>\n</figure>\n";
}

void Page::preformatted(const std::string& text) { body_ += "<pre>" + escape(text) + "</pre>\n"; }

void Page::details(const std::string& summary, const std::string& text) {
  body_ += "<details><summary>" + escape(summary) + "</summary>\n<pre>" + escape(text) + "</pre>\n</details>\n";
}

std::string Page::str() const {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + escape(title_) +
                    "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" + escape(title_) + "</h1>\n";
  if (!subtitle_.empty()) out += "<p class=\"sub\">" + escape(subtitle_) + "</p>\n";
  out += body_;
  out +=
      "<footer>Written by clustersim: a simulation, not a measurement. How to read each chart: "
      "docs/report.md.</footer>\n</body>\n</html>\n";
  return out;
}

}  // namespace cs::report::html
