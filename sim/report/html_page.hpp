#pragma once
#include <string>
#include <vector>

namespace cs::report::html {

/// One self-contained HTML page: inline CSS, inline SVG, no scripts, no external fonts, images or
/// links to fetch. Every text given is escaped here (SVG given to `figure` is taken as it is: it
/// comes from svg_chart, which escapes its own text). Deterministic: the same calls, the same bytes.
class Page {
 public:
  /// `title` is the page's <title> and first heading; `subtitle` a line under it (may be empty).
  Page(std::string title, std::string subtitle);
  void heading(const std::string& text);    ///< a section (h2)
  void paragraph(const std::string& text);  ///< a paragraph of plain text
  /// A table; `header` may be empty. Cells that look like numbers are right-aligned.
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
  /// An inline SVG chart with a caption saying what it shows and how to read it.
  void figure(const std::string& svg, const std::string& caption);
  /// Preformatted text (a terminal table), shown as it is.
  void preformatted(const std::string& text);
  /// Preformatted text (the terminal table), folded under `summary` (<details>, no script needed).
  void details(const std::string& summary, const std::string& text);
  [[nodiscard]] std::string str() const;

 private:
  std::string title_, subtitle_, body_;
};

}  // namespace cs::report::html
