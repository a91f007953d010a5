#include "sim/report/html_report.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "sim/report/html_page.hpp"
#include "sim/report/svg_chart.hpp"
#include "sim/report/writers.hpp"

namespace cs::report {

namespace {

constexpr std::size_t kMaxGpuRows = 32;  // a per-GPU chart shows at most this many GPUs (evenly spread)
constexpr std::size_t kTopLinks = 12;    // links listed per variant, the most bytes first

const char* kCompute = "#1f77b4";
const char* kComm = "#ff7f0e";
const char* kIdle = "#c7c7c7";

std::string ms_text(double s) { return fixed(s * 1e3, s * 1e3 < 10 ? 2 : 1) + " ms"; }
/// A percentile of latencies, "-" where there were none (TPOT of one-token outputs).
std::string ms_text(const serving::Percentiles& p, double s) { return p.count == 0 ? "-" : ms_text(s); }
std::string pct_text(double f) { return fixed(f * 100, 1) + "%"; }
std::string gib_text(double b) { return fixed(b / 1073741824.0, 1) + " GiB"; }
std::string gb_text(double b) { return fixed(b / 1e9, b < 1e10 ? 3 : 1) + " GB"; }

std::string plan_text(const plan::ParallelPlan& p) {
  std::string t = "TP" + std::to_string(p.tp) + " PP" + std::to_string(p.pp) + " DP" + std::to_string(p.dp);
  if (p.cp > 1) t += " CP" + std::to_string(p.cp);
  if (p.ep > 1) t += " EP" + std::to_string(p.ep);
  if (p.vpp > 1) t += " VPP" + std::to_string(p.vpp);
  if (p.zero > 0) t += " ZeRO-" + std::to_string(p.zero);
  if (p.sp) t += " SP";
  return t;
}

/// Rows of one metric per line, one column per variant.
using Rows = std::vector<std::vector<std::string>>;
template <typename T, typename F>
void metric(Rows& rows, const std::string& label, const std::vector<T>& items, F cell) {
  std::vector<std::string> row{label};
  for (const auto& it : items) row.push_back(cell(it));
  rows.push_back(std::move(row));
}

/// At most kMaxGpuRows indices of `n`, evenly spread, first and last included.
std::vector<std::size_t> spread(std::size_t n) {
  std::vector<std::size_t> out;
  if (n <= kMaxGpuRows) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (std::size_t k = 0; k < kMaxGpuRows; ++k) out.push_back(k * (n - 1) / (kMaxGpuRows - 1));
  return out;
}

void gpu_section(html::Page& page, const TrainReportItem& it, bool named) {
  std::vector<std::size_t> simulated;
  for (std::size_t r = 0; r < it.gpus.size(); ++r) {
    if (it.gpus[r].simulated) simulated.push_back(r);
  }
  if (simulated.empty()) return;
  svg::StackedBars b;
  b.title = named ? it.name : "";
  b.unit = "time per step per GPU (ms)";
  b.categories = {"compute", "exposed communication", "idle"};
  b.colours = {kCompute, kComm, kIdle};
  b.label_width = 90;
  double busy_min = 1, busy_max = 0, busy_sum = 0;
  for (const auto r : simulated) {
    const auto& t = it.gpus[r];
    const double c = static_cast<double>(t.compute) * 1e-12, e = static_cast<double>(t.exposed_comm) * 1e-12;
    const double busy = it.makespan_s > 0 ? (c + e) / it.makespan_s : 0;
    busy_min = std::min(busy_min, busy);
    busy_max = std::max(busy_max, busy);
    busy_sum += busy;
  }
  for (const auto k : spread(simulated.size())) {
    const auto& t = it.gpus[simulated[k]];
    const double c = static_cast<double>(t.compute) * 1e-12, e = static_cast<double>(t.exposed_comm) * 1e-12;
    b.rows.push_back("GPU " + std::to_string(simulated[k]));
    b.values.push_back({c * 1e3, e * 1e3, std::max(0.0, it.makespan_s - c - e) * 1e3});
  }
  std::string caption =
      "Each bar is one GPU's step: its kernels (compute), its communication that no kernel hides, "
      "and the rest (idle: waiting for peers, dependencies or the pipeline). Busy (compute + "
      "exposed communication) over the step: min " +
      pct_text(busy_min) + ", mean " + pct_text(busy_sum / static_cast<double>(simulated.size())) + ", max " +
      pct_text(busy_max) + " over " + std::to_string(simulated.size()) + " simulated GPUs.";
  if (simulated.size() > kMaxGpuRows) {
    caption += " " + std::to_string(kMaxGpuRows) + " of them shown, evenly spread.";
  }
  if (simulated.size() < it.gpus.size()) {
    caption += " One data-parallel replica was simulated; the other replicas' GPUs are identical.";
  }
  page.figure(svg::stacked_bars(b), caption);
}

void link_section(html::Page& page, const TrainReportItem& it, bool named) {
  if (named) page.paragraph(it.name + ":");
  if (it.links.empty()) {
    page.paragraph("No link carried any bytes (one GPU, or every transfer stayed inside a GPU).");
    return;
  }
  // Totals per link type, then the busiest links.
  std::map<std::string, std::pair<double, int>> by_type;
  for (const auto& l : it.links) {
    by_type[l.type].first += l.bytes;
    by_type[l.type].second += 1;
  }
  Rows types;
  for (const auto& [type, v] : by_type) types.push_back({type, std::to_string(v.second), gb_text(v.first)});
  page.table({"link type", "links used", "bytes moved (all of them)"}, types);
  svg::StackedBars b;
  b.title = "busiest links" + (named ? ": " + it.name : std::string());
  b.unit = "utilisation over the step (%)";
  b.max = 100;
  b.categories = {"utilisation"};
  b.colours = {kComm};
  b.label_width = 260;
  Rows rows;
  for (std::size_t i = 0; i < std::min(kTopLinks, it.links.size()); ++i) {
    const auto& l = it.links[i];
    b.rows.push_back(l.name);
    b.values.push_back({l.utilisation * 100});
    rows.push_back({l.name, l.type, gb_text(l.bytes), ms_text(l.busy_s),
                    pct_text(it.makespan_s > 0 ? l.busy_s / it.makespan_s : 0), pct_text(l.utilisation),
                    fixed(l.busy_s > 0 ? l.bytes / l.busy_s / 1e9 : 0, 1), fixed(l.bandwidth_bytes_per_s / 1e9, 1)});
  }
  page.figure(svg::stacked_bars(b),
              "Utilisation: the bytes a directed link carried over its bandwidth x the step time; the " +
                  std::to_string(rows.size()) + " links that carried the most bytes, of " +
                  std::to_string(it.links.size()) + " that carried any.");
  page.table({"link", "type", "bytes", "busy", "busy % of step", "utilisation", "GB/s while busy", "bandwidth GB/s"},
             rows);
}

}  // namespace

std::string train_report_html(const std::string& title, const std::string& subtitle,
                              const std::vector<TrainReportItem>& items, const std::string& table_text) {
  html::Page page(title, subtitle);
  const bool named = items.size() > 1;
  page.heading("Results");
  Rows rows;
  metric(rows, "model", items, [](const TrainReportItem& i) { return i.results.model; });
  metric(rows, "cluster", items, [](const TrainReportItem& i) { return i.results.cluster; });
  metric(rows, "GPUs", items, [](const TrainReportItem& i) { return std::to_string(i.results.gpus); });
  metric(rows, "plan", items, [](const TrainReportItem& i) { return plan_text(i.results.plan); });
  metric(rows, "step time", items, [](const TrainReportItem& i) { return ms_text(i.results.step_time_s); });
  metric(rows, "tokens/s", items, [](const TrainReportItem& i) { return fixed(i.results.tokens_per_s, 0); });
  metric(rows, "TFLOP/s per GPU", items, [](const TrainReportItem& i) { return fixed(i.results.tflops_per_gpu, 1); });
  metric(rows, "MFU", items, [](const TrainReportItem& i) { return pct_text(i.results.mfu); });
  metric(rows, "memory per GPU", items, [](const TrainReportItem& i) {
    return gib_text(i.results.memory.total) + " of " + gib_text(i.results.memory.capacity) +
           (i.results.memory.fits() ? "" : " (does not fit)");
  });
  metric(rows, "speedup over one GPU", items, [](const TrainReportItem& i) { return fixed(i.results.speedup, 2); });
  metric(rows, "scaling efficiency", items,
         [](const TrainReportItem& i) { return pct_text(i.results.scaling_efficiency); });
  metric(rows, "cost per million tokens", items, [](const TrainReportItem& i) {
    return i.results.cost ? fixed(i.results.cost->per_million_tokens, 2) + " " + i.results.cost->currency : "-";
  });
  std::vector<std::string> header{""};
  for (const auto& i : items) header.push_back(i.name);
  page.table(header, rows);

  page.heading("Where a step's time goes");
  svg::StackedBars bd;
  bd.unit = "time per step (ms), mean over GPUs";
  bool any_pp = false;
  for (const auto& i : items) any_pp = any_pp || i.results.plan.pp > 1;
  bd.categories = {"compute", "exposed communication", any_pp ? "idle (pipeline bubble with PP)" : "idle"};
  bd.colours = {kCompute, kComm, kIdle};
  for (const auto& i : items) {
    bd.rows.push_back(i.name);
    const auto& b = i.results.breakdown;
    bd.values.push_back({b.compute * 1e3, b.exposed_comm * 1e3, b.idle * 1e3});
  }
  page.figure(svg::stacked_bars(bd),
              "One bar per variant: compute + exposed communication + idle = the step time. Communication that "
              "overlaps a kernel is hidden and counts as compute here; the communication chart below has all of it.");
  {
    // What the compute was spent on, and how much of it rests on measured kernels.
    svg::StackedBars kb;
    kb.unit = "compute time per GPU per step (ms), by kernel";
    // The classes some variant spent time on (a dense model has no experts' GEMMs).
    const auto& labels = compute_class_labels();
    std::vector<std::size_t> used;
    for (std::size_t k = 0; k < labels.size(); ++k) {
      if (std::any_of(items.begin(), items.end(),
                      [&](const TrainReportItem& i) { return i.results.compute_classes[k] > 0; })) {
        used.push_back(k);
        kb.categories.emplace_back(labels[k]);
        kb.colours.push_back(svg::palette(k));  // a class keeps its colour whichever others are shown
      }
    }
    std::string sources;
    for (const auto& i : items) {
      kb.rows.push_back(i.name);
      std::vector<double> v;
      for (std::size_t k : used) v.push_back(i.results.breakdown.compute * i.results.compute_classes[k] * 1e3);
      kb.values.push_back(std::move(v));
      sources += (sources.empty() ? "" : "; ") + (named ? i.name + ": " : std::string()) +
                 compute_sources_text(i.results.compute_sources);
    }
    page.figure(svg::stacked_bars(kb),
                "The compute bar above split by what the kernels do: dense GEMMs, routed experts' GEMMs, core "
                "attention, elementwise kernels (norms, activations, casts, the optimizer) and the wait for the "
                "host to issue kernels. Kernel times from: " +
                    sources + ".");
  }
  // Communication by kind: every collective label any variant used.
  std::vector<std::string> kinds;
  for (const auto& i : items) {
    for (const auto& c : i.results.collectives) {
      if (std::find(kinds.begin(), kinds.end(), c.label) == kinds.end()) kinds.push_back(c.label);
    }
  }
  if (!kinds.empty()) {
    svg::StackedBars ck;
    ck.unit = "communication time per GPU per step (ms), hidden or not";
    ck.categories = kinds;
    for (const auto& i : items) {
      ck.rows.push_back(i.name);
      std::vector<double> v(kinds.size(), 0);
      for (const auto& c : i.results.collectives) {
        const auto at = static_cast<std::size_t>(std::find(kinds.begin(), kinds.end(), c.label) - kinds.begin());
        v[at] += c.seconds_per_gpu * 1e3;
      }
      ck.values.push_back(std::move(v));
    }
    page.figure(svg::stacked_bars(ck),
                "Time each kind of communication takes per GPU and step (mean over GPUs), whether or not compute "
                "hides it. Compare with the exposed communication above to see how much overlap saves.");
  }

  page.heading("Per-GPU time");
  for (const auto& i : items) gpu_section(page, i, named);

  page.heading("Link utilisation");
  for (const auto& i : items) link_section(page, i, named);

  page.heading("The terminal table");
  page.details("every figure, as `clustersim run` prints it", table_text);
  return page.str();
}

std::string serving_report_html(const std::string& title, const std::vector<std::string>& names,
                                const std::vector<ServingResults>& results) {
  const auto& first = results.front();
  html::Page page(title, first.model + " on " + std::to_string(first.gpus) + (first.gpus > 1 ? " GPUs" : " GPU") +
                             " of " + first.cluster);
  std::vector<std::string> label;
  for (std::size_t i = 0; i < results.size(); ++i) label.push_back(names.empty() ? results[i].name : names[i]);
  page.heading("Results");
  Rows rows;
  metric(rows, "GPUs, TP, replicas", results, [](const ServingResults& r) {
    return std::to_string(r.gpus) + ", TP" + std::to_string(r.tp) + ", " + std::to_string(r.replicas);
  });
  metric(rows, "requests", results, [](const ServingResults& r) { return std::to_string(r.requests); });
  metric(rows, "TTFT p50 / p99", results,
         [](const ServingResults& r) { return ms_text(r.ttft, r.ttft.p50) + " / " + ms_text(r.ttft, r.ttft.p99); });
  metric(rows, "TPOT p50 / p99", results,
         [](const ServingResults& r) { return ms_text(r.tpot, r.tpot.p50) + " / " + ms_text(r.tpot, r.tpot.p99); });
  metric(rows, "end-to-end p50 / p99", results,
         [](const ServingResults& r) { return ms_text(r.e2e, r.e2e.p50) + " / " + ms_text(r.e2e, r.e2e.p99); });
  metric(rows, "output tokens/s (per GPU)", results, [](const ServingResults& r) {
    return fixed(r.output_tokens_per_s, 0) + " (" + fixed(r.output_tokens_per_s_per_gpu, 0) + ")";
  });
  metric(rows, "goodput (within SLOs)", results, [](const ServingResults& r) {
    return r.goodput_requests_per_s ? fixed(*r.goodput_requests_per_s, 2) + " requests/s" : "-";
  });
  metric(rows, "KV cache utilisation (max)", results,
         [](const ServingResults& r) { return pct_text(r.kv_utilisation_max); });
  metric(rows, "memory per GPU", results,
         [](const ServingResults& r) { return gib_text(r.memory.total) + " of " + gib_text(r.memory.capacity); });
  metric(rows, "cost per million output tokens", results, [](const ServingResults& r) {
    return r.cost ? fixed(r.cost->per_million_output_tokens, 2) + " " + r.cost->currency : "-";
  });
  metric(rows, "compute spent on", results,
         [](const ServingResults& r) { return compute_classes_text(r.compute_classes); });
  metric(rows, "kernel times from", results,
         [](const ServingResults& r) { return compute_sources_text(r.compute_sources); });
  std::vector<std::string> header{""};
  header.insert(header.end(), label.begin(), label.end());
  page.table(header, rows);

  page.heading("Where a request's time goes");
  svg::StackedBars b;
  b.unit = "mean time per request (ms)";
  b.categories = {"waiting + prefill (mean TTFT)", "decode (mean end-to-end - mean TTFT)"};
  b.colours = {kComm, kCompute};
  for (std::size_t i = 0; i < results.size(); ++i) {
    b.rows.push_back(label[i]);
    b.values.push_back({results[i].ttft.mean * 1e3, std::max(0.0, results[i].e2e.mean - results[i].ttft.mean) * 1e3});
  }
  page.figure(svg::stacked_bars(b),
              "One bar per variant: until the first token (queueing and prefill), then the "
              "decode of the remaining tokens. The tails (p99) are in the table above.");

  page.heading("Per-replica time");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    svg::StackedBars rb;
    rb.title = results.size() > 1 ? label[i] : "";
    rb.unit = "time over the run (s)";
    rb.categories = {"engine steps running", "idle"};
    rb.colours = {kCompute, kIdle};
    rb.label_width = 100;
    std::vector<double> busy(static_cast<std::size_t>(std::max(r.replicas, 1)), 0);
    for (const auto& s : r.step_spans) {
      if (s.replica >= 0 && static_cast<std::size_t>(s.replica) < busy.size())
        busy[static_cast<std::size_t>(s.replica)] += s.end - s.start;
    }
    for (const auto k : spread(busy.size())) {
      rb.rows.push_back("replica " + std::to_string(k));
      rb.values.push_back({busy[k], std::max(0.0, r.makespan_s - busy[k])});
    }
    page.figure(svg::stacked_bars(rb), "Each bar is one replica over the whole run (" + fixed(r.makespan_s, 2) +
                                           " s): the time its engine ran a batch, and the time it waited for "
                                           "requests.");
  }
  page.heading("Link utilisation");
  page.paragraph(
      "Not in serving reports: the serving simulation keeps no link samples. The report of a training "
      "run (`clustersim run` or `train --report`) has its links.");
  page.heading("The terminal tables");
  for (std::size_t i = 0; i < results.size(); ++i) page.details(label[i], serving_table(results[i]));
  return page.str();
}

std::string sweep_report_html(const std::string& title, const std::vector<std::pair<double, ServingResults>>& points,
                              const SweepSlo& slo) {
  html::Page page(title + ": latency against throughput",
                  std::to_string(points.size()) + " arrival rates, each a separate simulation");
  page.heading("Latency against throughput");
  page.figure(svg::line_chart(sweep_chart(points, title, slo)),
              "Each point is one arrival rate: its output tokens/s (x) and latencies (y, log scale). Solid: the "
              "median (p50); dashed: the 99th percentile (p99). A horizontal line is an SLO: points above it miss "
              "it. Where the curves turn up, the servers are saturated.");
  svg::LineChart tput;
  tput.title = "throughput against offered load";
  tput.x.title = "arrival rate (requests/s)";
  tput.y.title = "output tokens/s";
  svg::Series s{.name = "output tokens/s"};
  svg::Series g{.name = "goodput x output tokens/request", .dashed = true};
  bool any_goodput = false;
  for (const auto& pr : points) {
    const auto& r = pr.second;
    s.points.push_back({pr.first, r.output_tokens_per_s});
    if (r.goodput_requests_per_s && r.requests_per_s > 0) {
      any_goodput = true;
      g.points.push_back({pr.first, r.output_tokens_per_s * *r.goodput_requests_per_s / r.requests_per_s});
    }
  }
  tput.series.push_back(std::move(s));
  if (any_goodput) tput.series.push_back(std::move(g));
  page.figure(svg::line_chart(tput),
              "Output tokens/s delivered at each offered rate; it stops growing with the rate "
              "when the servers are saturated. With SLOs, the dashed line counts only the "
              "requests that met them.");
  page.heading("Points");
  Rows rows;
  for (const auto& pr : points) {
    const auto& r = pr.second;
    rows.push_back({fixed(pr.first, 2), fixed(r.output_tokens_per_s, 0), ms_text(r.ttft, r.ttft.p50),
                    ms_text(r.ttft, r.ttft.p99), ms_text(r.tpot, r.tpot.p50), ms_text(r.tpot, r.tpot.p99),
                    ms_text(r.e2e, r.e2e.p50), ms_text(r.e2e, r.e2e.p99),
                    r.goodput_requests_per_s ? fixed(*r.goodput_requests_per_s, 2) : "-"});
  }
  page.table({"rate (requests/s)", "output tokens/s", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "e2e p50",
              "e2e p99", "goodput (requests/s)"},
             rows);
  return page.str();
}

std::string plan_front_svg(const PlanReport& p, bool titled) {
  svg::LineChart c;
  if (titled) c.title = p.title;
  c.x.title = p.x_title;
  c.y.title = p.y_title;
  svg::Series all{.name = "ranked candidates (#rank)", .line = false};
  for (std::size_t i = 0; i < p.points.size(); ++i) {
    all.points.push_back(p.points[i]);
    all.labels.push_back("#" + std::to_string(i + 1));
  }
  svg::Series front{
      .name = "Pareto front", .points = svg::pareto_front(p.points, p.minimize_x, p.minimize_y), .colour = "#d62728"};
  c.series.push_back(std::move(all));
  c.series.push_back(std::move(front));
  return svg::line_chart(c);
}

std::string plan_report_html(const PlanReport& p) {
  html::Page page(p.title, p.subtitle);
  page.heading("Pareto front");
  page.figure(plan_front_svg(p, false), p.front_caption);
  page.heading("Ranked candidates");
  page.table(p.header, p.rows);
  if (!p.rejected.empty()) {
    page.heading("Not ranked");
    Rows rows;
    for (const auto& [offer, reason] : p.rejected) rows.push_back({offer, reason});
    page.table({"offer", "why"}, rows);
  }
  for (const auto& n : p.notes) page.paragraph(n);
  return page.str();
}

void check_writable(const std::string& path, const std::string& flag) {
  std::ofstream f(path, std::ios::app | std::ios::binary);
  if (!f) throw InputError("command line", flag, "cannot write '" + path + "' (a folder that exists? permission?)");
}

void write_report(const std::string& path, const std::string& flag, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw InputError("command line", flag, "cannot write '" + path + "' (a folder that exists? permission?)");
  f << text;
  if (!f) throw InputError("command line", flag, "could not write all of '" + path + "'");
}

}  // namespace cs::report
