#include "sim/report/svg_chart.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <sstream>

#include "sim/core/quantity.hpp"

namespace cs::report::svg {

namespace {

constexpr double kCharWidth = 7.0;  // an estimate of a 12 px sans-serif glyph, for layout only
constexpr double kLegendRow = 18.0;

/// A pixel coordinate: one decimal, never "-0.0".
std::string px(double v) {
  if (!std::isfinite(v)) v = 0;
  std::string s = fixed(v, 1);
  return s == "-0.0" ? "0.0" : s;
}

/// A data value for a tooltip or a bar's total: whole from 1000 up ("16731"), else four significant
/// digits without trailing zeros ("2", "9.456", "0.0123"; an exponent only below 10^-4).
std::string value_text(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (std::fabs(v) >= 1000) return fixed(v, 0);
  std::array<char, 64> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::general, 4);
  return r.ec == std::errc{} ? std::string(buf.data(), r.ptr) : std::string("n/a");
}

double pow10(int e) { return std::pow(10.0, static_cast<double>(e)); }

/// Where the axis runs and its ticks.
struct Scale {
  double lo = 0, hi = 1;  // in data units (log10 of them on a log axis)
  bool log = false;
  std::vector<double> ticks;  // data units
  double step = 1;            // linear: the tick step (for labels)
  double p0 = 0, p1 = 1;      // pixels of lo and hi
  [[nodiscard]] double map(double v) const {
    const double t = log ? std::log10(v) : v;
    return p0 + (t - lo) / (hi - lo) * (p1 - p0);
  }
  [[nodiscard]] bool contains(double v) const {
    if (!std::isfinite(v) || (log && v <= 0)) return false;
    const double t = log ? std::log10(v) : v;
    const double eps = (hi - lo) * 1e-9;
    return t >= lo - eps && t <= hi + eps;
  }
  [[nodiscard]] std::string label(double v) const { return tick_label(v, log ? v : step); }
};

/// `pad`: leave 3% of the range above the data (room for a point's label at a round maximum).
Scale make_scale(const Axis& a, std::vector<double> values, bool pad = false) {
  Scale s;
  s.log = a.log;
  std::erase_if(values, [&](double v) { return !std::isfinite(v) || (a.log && v <= 0); });
  if (a.min && (!a.log || *a.min > 0)) values.push_back(*a.min);
  if (a.max && (!a.log || *a.max > 0)) values.push_back(*a.max);
  if (a.log) {
    double lo = 1, hi = 10;
    if (!values.empty()) {
      lo = *std::min_element(values.begin(), values.end());
      hi = *std::max_element(values.begin(), values.end());
    }
    s.ticks = log_ticks(lo, hi);
    s.lo = std::log10(a.min && *a.min > 0 ? *a.min : s.ticks.front());
    s.hi = std::log10(a.max && *a.max > 0 ? *a.max : s.ticks.back());
  } else {
    double lo = 0, hi = 1;
    if (!values.empty()) {
      lo = *std::min_element(values.begin(), values.end());
      hi = *std::max_element(values.begin(), values.end());
      if (a.from_zero) {
        lo = std::min(lo, 0.0);
        hi = std::max(hi, 0.0);
      }
      if (pad && !a.max && hi > lo) hi += (hi - lo) * 0.03;
    }
    s.ticks = nice_ticks(lo, hi);
    s.step = s.ticks.size() > 1 ? s.ticks[1] - s.ticks[0] : 1;
    s.lo = a.min ? *a.min : s.ticks.front();
    s.hi = a.max ? *a.max : s.ticks.back();
  }
  if (!(s.hi > s.lo)) s.hi = s.lo + 1;
  std::erase_if(s.ticks, [&](double t) { return !s.contains(t); });
  return s;
}

/// Legend items laid out in rows across `width` pixels; returns each item's (x, row).
std::vector<std::pair<double, int>> legend_layout(const std::vector<std::string>& names, double width) {
  std::vector<std::pair<double, int>> at;
  double x = 0;
  int row = 0;
  for (const auto& n : names) {
    const double w = 34 + kCharWidth * static_cast<double>(n.size()) + 16;
    if (x > 0 && x + w > width) {
      x = 0;
      ++row;
    }
    at.emplace_back(x, row);
    x += w;
  }
  return at;
}

int legend_rows(const std::vector<std::pair<double, int>>& at) { return at.empty() ? 0 : at.back().second + 1; }

void open_svg(std::ostringstream& o, int w, double h) {
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" << w << "\" height=\"" << px(h)
    << "\" viewBox=\"0 0 " << w << " " << px(h) << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"" << w << "\" height=\"" << px(h) << "\" fill=\"white\"/>\n";
}

void title(std::ostringstream& o, const std::string& text, double x) {
  if (text.empty()) return;
  o << "<text class=\"title\" x=\"" << px(x) << "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" << escape(text)
    << "</text>\n";
}

/// A legend swatch: a line (with a dot) for a series, a block for a bar segment.
void legend(std::ostringstream& o, const std::vector<std::string>& names, const std::vector<std::string>& colours,
            const std::vector<bool>& dashed, const std::vector<bool>& dots, bool blocks, double x0, double y0,
            double width) {
  if (names.empty()) return;
  const auto at = legend_layout(names, width);
  o << "<g class=\"legend\">\n";
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double x = x0 + at[i].first;
    const double y = y0 + kLegendRow * at[i].second;
    if (blocks) {
      o << "<rect x=\"" << px(x) << "\" y=\"" << px(y - 9) << "\" width=\"24\" height=\"10\" fill=\"" << colours[i]
        << "\"/>";
    } else if (dots[i]) {
      o << "<circle cx=\"" << px(x + 12) << "\" cy=\"" << px(y - 4) << "\" r=\"3\" fill=\"" << colours[i] << "\"/>";
    } else {
      o << "<line x1=\"" << px(x) << "\" y1=\"" << px(y - 4) << "\" x2=\"" << px(x + 24) << "\" y2=\"" << px(y - 4)
        << "\" stroke=\"" << colours[i] << "\" stroke-width=\"2\"" << (dashed[i] ? " stroke-dasharray=\"6 3\"" : "")
        << "/>";
    }
    o << "<text x=\"" << px(x + 30) << "\" y=\"" << px(y) << "\">" << escape(names[i]) << "</text>\n";
  }
  o << "</g>\n";
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= lo == 0 ? 0 : pad;
    hi += pad;
  }
  target = std::max(target, 1);
  const double raw = (hi - lo) / target;
  const double mag = pow10(static_cast<int>(std::floor(std::log10(raw))));
  const double f = raw / mag;
  const double step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
  const double first = std::floor(lo / step + 1e-9) * step;
  const double last = std::ceil(hi / step - 1e-9) * step;
  const auto n = std::min<long>(std::lround((last - first) / step), 100);
  std::vector<double> t;
  for (long i = 0; i <= n; ++i) {
    double v = first + static_cast<double>(i) * step;
    if (std::fabs(v) < step * 1e-9) v = 0;
    t.push_back(v);
  }
  if (t.size() < 2) t.push_back(first + step);
  return t;
}

std::vector<double> log_ticks(double lo, double hi) {
  if (!(lo > 0) || !(hi > 0) || !std::isfinite(lo) || !std::isfinite(hi)) return {1, 10};
  if (hi < lo) std::swap(lo, hi);
  const int d0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int d1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (d1 <= d0) d1 = d0 + 1;
  std::vector<double> t;
  if (d1 - d0 <= 3) {
    for (int d = d0; d < d1; ++d) {
      for (const double m : {1.0, 2.0, 5.0}) t.push_back(m * pow10(d));
    }
    t.push_back(pow10(d1));
    return t;
  }
  const int stride = (d1 - d0 + 7) / 8;  // at most about eight labelled decades
  int d = d0;
  for (; d < d1; d += stride) t.push_back(pow10(d));
  t.push_back(pow10(d));
  return t;
}

std::string tick_label(double v, double step) {
  step = std::fabs(step);
  if (!std::isfinite(v) || !std::isfinite(step) || step == 0) return value_text(v);
  if (std::fabs(v) < step * 1e-6) return "0";
  std::string suffix;
  if (step >= 1e6 - 0.5) {
    v /= 1e6;
    step /= 1e6;
    suffix = "M";
  } else if (step >= 1e3 - 0.5) {
    v /= 1e3;
    step /= 1e3;
    suffix = "k";
  }
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 12);
  std::string s = fixed(v, decimals);
  if (s.starts_with("-") && s.find_first_not_of("-0.") == std::string::npos) s = s.substr(1);
  return s + suffix;
}

std::vector<Point> pareto_front(const std::vector<Point>& points, bool minimize_x, bool minimize_y) {
  // Better is smaller after the flips; sort by x (then y), keep each point better in y than all before.
  const double fx = minimize_x ? 1 : -1, fy = minimize_y ? 1 : -1;
  std::vector<Point> v;
  for (const auto& p : points) {
    if (std::isfinite(p.x) && std::isfinite(p.y)) v.push_back(p);
  }
  std::sort(v.begin(), v.end(), [&](const Point& a, const Point& b) {
    return fx * a.x < fx * b.x || (fx * a.x == fx * b.x && fy * a.y < fy * b.y);
  });
  std::vector<Point> front;
  for (const auto& p : v) {
    if (front.empty() || fy * p.y < fy * front.back().y) front.push_back(p);
  }
  std::sort(front.begin(), front.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  return front;
}

std::string palette(std::size_t i) {
  // Tableau-like hues, chosen to stay apart for the colour-blind as far as ten colours can.
  static constexpr std::array<const char*, 10> kColours{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                                        "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#d62728"};
  return kColours[i % kColours.size()];
}

std::string line_chart(const LineChart& c) {
  const double ml = 76, mr = 24, mt = 40;
  const double w = c.width, h = c.height;
  std::vector<std::string> names, colours;
  std::vector<bool> dashed, dots;
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    dots.push_back(!c.series[i].line);
    names.push_back(c.series[i].name);
    colours.push_back(c.series[i].colour.empty() ? palette(i) : c.series[i].colour);
    dashed.push_back(c.series[i].dashed);
  }
  const double plot_w = w - ml - mr;
  const int rows = legend_rows(legend_layout(names, plot_w));
  const double mb = 52 + kLegendRow * rows;
  // The axes' ranges: the drawable points and the reference lines.
  std::vector<double> xs, ys;
  bool any = false;
  for (const auto& s : c.series) {
    for (const auto& p : s.points) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y) || (c.x.log && p.x <= 0) || (c.y.log && p.y <= 0)) continue;
      xs.push_back(p.x);
      ys.push_back(p.y);
      any = true;
    }
  }
  for (const auto& r : c.refs) (r.horizontal ? ys : xs).push_back(r.value);
  bool labelled = false;
  for (const auto& s : c.series) labelled = labelled || !s.labels.empty();
  Scale sx = make_scale(c.x, xs, labelled);
  Scale sy = make_scale(c.y, ys, labelled);
  sx.p0 = ml;
  sx.p1 = w - mr;
  sy.p0 = h - mb;
  sy.p1 = mt;

  std::ostringstream o;
  open_svg(o, c.width, h);
  title(o, c.title, ml);
  // Grid and ticks.
  o << "<g class=\"grid\" stroke=\"#e4e4e4\">\n";
  for (const double t : sx.ticks) {
    o << "<line x1=\"" << px(sx.map(t)) << "\" y1=\"" << px(sy.p1) << "\" x2=\"" << px(sx.map(t)) << "\" y2=\""
      << px(sy.p0) << "\"/>\n";
  }
  for (const double t : sy.ticks) {
    o << "<line x1=\"" << px(sx.p0) << "\" y1=\"" << px(sy.map(t)) << "\" x2=\"" << px(sx.p1) << "\" y2=\""
      << px(sy.map(t)) << "\"/>\n";
  }
  o << "</g>\n";
  o << "<g class=\"axis x\">\n<line x1=\"" << px(sx.p0) << "\" y1=\"" << px(sy.p0) << "\" x2=\"" << px(sx.p1)
    << "\" y2=\"" << px(sy.p0) << "\" stroke=\"black\"/>\n";
  for (const double t : sx.ticks) {
    const std::string x = px(sx.map(t));
    o << "<g class=\"tick x\"><line x1=\"" << x << "\" y1=\"" << px(sy.p0) << "\" x2=\"" << x << "\" y2=\""
      << px(sy.p0 + 5) << "\" stroke=\"black\"/><text x=\"" << x << "\" y=\"" << px(sy.p0 + 18)
      << "\" text-anchor=\"middle\">" << escape(sx.label(t)) << "</text></g>\n";
  }
  o << "<text class=\"axis-title\" x=\"" << px((sx.p0 + sx.p1) / 2) << "\" y=\"" << px(sy.p0 + 38)
    << "\" text-anchor=\"middle\">" << escape(c.x.title) << (c.x.log ? ", log scale" : "") << "</text>\n</g>\n";
  o << "<g class=\"axis y\">\n<line x1=\"" << px(sx.p0) << "\" y1=\"" << px(sy.p0) << "\" x2=\"" << px(sx.p0)
    << "\" y2=\"" << px(sy.p1) << "\" stroke=\"black\"/>\n";
  for (const double t : sy.ticks) {
    const std::string y = px(sy.map(t));
    o << "<g class=\"tick y\"><line x1=\"" << px(sx.p0 - 5) << "\" y1=\"" << y << "\" x2=\"" << px(sx.p0) << "\" y2=\""
      << y << "\" stroke=\"black\"/><text x=\"" << px(sx.p0 - 8) << "\" y=\"" << px(sy.map(t) + 4)
      << "\" text-anchor=\"end\">" << escape(sy.label(t)) << "</text></g>\n";
  }
  const double ty = (sy.p0 + sy.p1) / 2;
  o << "<text class=\"axis-title\" x=\"16\" y=\"" << px(ty) << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
    << px(ty) << ")\">" << escape(c.y.title) << (c.y.log ? ", log scale" : "") << "</text>\n</g>\n";
  // Reference lines, under the data.
  for (const auto& r : c.refs) {
    const Scale& s = r.horizontal ? sy : sx;
    if (!s.contains(r.value)) continue;
    const double at = s.map(r.value);
    o << "<g class=\"ref\" stroke=\"" << escape(r.colour) << "\">";
    if (r.horizontal) {
      o << "<line x1=\"" << px(sx.p0) << "\" y1=\"" << px(at) << "\" x2=\"" << px(sx.p1) << "\" y2=\"" << px(at)
        << "\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/><text x=\"" << px(sx.p1 - 4) << "\" y=\"" << px(at - 5)
        << "\" text-anchor=\"end\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\" fill=\""
        << escape(r.colour) << "\">" << escape(r.label) << "</text>";
    } else {
      o << "<line x1=\"" << px(at) << "\" y1=\"" << px(sy.p0) << "\" x2=\"" << px(at) << "\" y2=\"" << px(sy.p1)
        << "\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/><text x=\"" << px(at + 4) << "\" y=\"" << px(sy.p1 + 12)
        << "\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\" fill=\"" << escape(r.colour) << "\">"
        << escape(r.label) << "</text>";
    }
    o << "</g>\n";
  }
  // The series.
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    const auto& s = c.series[i];
    std::vector<Point> pts;
    for (const auto& p : s.points) {
      if (sx.contains(p.x) && sy.contains(p.y)) pts.push_back(p);
    }
    o << "<g class=\"series\" fill=\"" << escape(colours[i]) << "\">\n";
    if (s.line && pts.size() > 1) {
      o << "<polyline fill=\"none\" stroke=\"" << escape(colours[i]) << "\" stroke-width=\"2\""
        << (s.dashed ? " stroke-dasharray=\"6 3\"" : "") << " points=\"";
      for (std::size_t k = 0; k < pts.size(); ++k)
        o << (k ? " " : "") << px(sx.map(pts[k].x)) << "," << px(sy.map(pts[k].y));
      o << "\"/>\n";
    }
    if (s.markers || !s.line) {
      for (std::size_t k = 0; k < s.points.size(); ++k) {
        const auto& p = s.points[k];
        if (!sx.contains(p.x) || !sy.contains(p.y)) continue;
        const std::string label = k < s.labels.size() ? s.labels[k] : std::string();
        o << "<circle class=\"marker\" cx=\"" << px(sx.map(p.x)) << "\" cy=\"" << px(sy.map(p.y))
          << "\" r=\"3\"><title>" << escape(s.name) << (label.empty() ? "" : " " + escape(label)) << ": "
          << value_text(p.x) << ", " << value_text(p.y) << "</title></circle>\n";
        if (!label.empty()) {
          o << "<text class=\"point-label\" x=\"" << px(sx.map(p.x) + 5) << "\" y=\"" << px(sy.map(p.y) - 5)
            << "\" font-size=\"11\">" << escape(label) << "</text>\n";
        }
      }
    }
    o << "</g>\n";
  }
  if (!any) {
    o << "<text class=\"no-data\" x=\"" << px((sx.p0 + sx.p1) / 2) << "\" y=\"" << px((sy.p0 + sy.p1) / 2)
      << "\" text-anchor=\"middle\" fill=\"#777\">no data</text>\n";
  }
  std::vector<std::string> escaped_colours;
  for (const auto& col : colours) escaped_colours.push_back(escape(col));
  legend(o, names, escaped_colours, dashed, dots, false, ml, h - kLegendRow * rows + 4, plot_w);
  o << "</svg>\n";
  return o.str();
}

std::string stacked_bars(const StackedBars& b) {
  const double ml = b.label_width, mr = 70, mt = 40, bar_h = 20, gap = 10;
  const double w = b.width;
  const double plot_w = std::max(w - ml - mr, 50.0);
  std::vector<std::string> colours;
  for (std::size_t k = 0; k < b.categories.size(); ++k) {
    colours.push_back(escape(k < b.colours.size() && !b.colours[k].empty() ? b.colours[k] : palette(k)));
  }
  const auto cell = [&](std::size_t r, std::size_t k) {
    const double v = r < b.values.size() && k < b.values[r].size() ? b.values[r][k] : 0;
    return std::isfinite(v) && v > 0 ? v : 0.0;
  };
  std::vector<double> totals(b.rows.size(), 0);
  for (std::size_t r = 0; r < b.rows.size(); ++r) {
    for (std::size_t k = 0; k < b.categories.size(); ++k) totals[r] += cell(r, k);
  }
  const double top = totals.empty() ? 0 : *std::max_element(totals.begin(), totals.end());
  Axis ax;
  ax.max = b.max;
  Scale sx = make_scale(ax, {top});
  sx.p0 = ml;
  sx.p1 = ml + plot_w;
  const double plot_h = std::max<double>(static_cast<double>(b.rows.size()), 1) * (bar_h + gap) + gap;
  const int rows = legend_rows(legend_layout(b.categories, plot_w));
  const double y0 = mt, y1 = mt + plot_h;
  const double h = y1 + 54 + kLegendRow * rows;  // the legend clear of the axis title

  std::ostringstream o;
  open_svg(o, b.width, h);
  title(o, b.title, 10);
  o << "<g class=\"grid\" stroke=\"#e4e4e4\">\n";
  for (const double t : sx.ticks) {
    o << "<line x1=\"" << px(sx.map(t)) << "\" y1=\"" << px(y0) << "\" x2=\"" << px(sx.map(t)) << "\" y2=\"" << px(y1)
      << "\"/>\n";
  }
  o << "</g>\n";
  for (std::size_t r = 0; r < b.rows.size(); ++r) {
    const double y = y0 + gap + static_cast<double>(r) * (bar_h + gap);
    o << "<g class=\"bar\">\n<text x=\"" << px(ml - 8) << "\" y=\"" << px(y + bar_h / 2 + 4)
      << "\" text-anchor=\"end\">" << escape(b.rows[r]) << "</text>\n";
    double acc = 0;
    for (std::size_t k = 0; k < b.categories.size(); ++k) {
      const double v = cell(r, k);
      if (v <= 0) continue;
      const double xa = sx.map(acc), xb = sx.map(acc + v);
      o << "<rect class=\"segment\" x=\"" << px(xa) << "\" y=\"" << px(y) << "\" width=\"" << px(xb - xa)
        << "\" height=\"" << px(bar_h) << "\" fill=\"" << colours[k] << "\"><title>" << escape(b.rows[r]) << ": "
        << escape(b.categories[k]) << " " << value_text(v) << "</title></rect>\n";
      acc += v;
    }
    o << "<text class=\"total\" x=\"" << px(sx.map(acc) + 4) << "\" y=\"" << px(y + bar_h / 2 + 4) << "\">"
      << value_text(acc) << "</text>\n</g>\n";
  }
  o << "<g class=\"axis x\">\n<line x1=\"" << px(sx.p0) << "\" y1=\"" << px(y1) << "\" x2=\"" << px(sx.p1) << "\" y2=\""
    << px(y1) << "\" stroke=\"black\"/>\n";
  for (const double t : sx.ticks) {
    const std::string x = px(sx.map(t));
    o << "<g class=\"tick x\"><line x1=\"" << x << "\" y1=\"" << px(y1) << "\" x2=\"" << x << "\" y2=\"" << px(y1 + 5)
      << "\" stroke=\"black\"/><text x=\"" << x << "\" y=\"" << px(y1 + 18) << "\" text-anchor=\"middle\">"
      << escape(sx.label(t)) << "</text></g>\n";
  }
  o << "<text class=\"axis-title\" x=\"" << px((sx.p0 + sx.p1) / 2) << "\" y=\"" << px(y1 + 36)
    << "\" text-anchor=\"middle\">" << escape(b.unit) << "</text>\n</g>\n";
  if (b.rows.empty() || top <= 0) {
    o << "<text class=\"no-data\" x=\"" << px((sx.p0 + sx.p1) / 2) << "\" y=\"" << px((y0 + y1) / 2 + 4)
      << "\" text-anchor=\"middle\" fill=\"#777\">no data</text>\n";
  }
  const std::vector<bool> none(b.categories.size(), false);
  legend(o, b.categories, colours, none, none, true, ml, h - kLegendRow * rows + 4, plot_w);
  o << "</svg>\n";
  return o.str();
}

}  // namespace cs::report::svg
