#include "tools/cli/trace_flags.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>

#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"
#include "tools/cli/field_flags.hpp"

namespace cs::cli {

namespace {

[[noreturn]] void bad(const char* flag, const std::string& message) { throw InputError(kCommandLine, flag, message); }

/// A whole number >= 0, all of `text`.
bool whole(std::string_view text, int& out) {
  if (text.empty()) return false;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc{} && r.ptr == text.data() + text.size() && out >= 0;
}

/// "A:B" (or "A") split in two; the second is empty when there is no colon.
std::pair<std::string, std::string> split_range(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {text, ""};
  return {text.substr(0, colon), text.substr(colon + 1)};
}

/// A time with a unit ("12.5ms"), or a plain number of seconds ("0", "1.5").
SimTime time_of(const char* flag, const std::string& text) {
  auto q = parse_quantity(text, Dimension::kTime);
  if (!q.error.empty()) {
    double v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec == std::errc{} && r.ptr == text.data() + text.size()) q = {v, ""};
  }
  if (!q.error.empty() || !(q.value >= 0) || q.value >= kMaxSimSeconds) {
    bad(flag, "expected a time like 0, 12.5ms, 2s or 300us (0 or more); got '" + text + "'");
  }
  return SimTime::from_seconds(q.value);
}

/// --trace-window's T0:T1 into [from, to]; unchanged when the flag is absent.
void window_of(const TraceFlags& f, SimTime& from, SimTime& to) {
  if (f.window.empty()) return;
  if (f.window.find(':') == std::string::npos) {
    bad("--trace-window", "expected T0:T1, e.g. 0:20ms or 5ms: (to the end); got '" + f.window + "'");
  }
  const auto [a, b] = split_range(f.window);
  from = a.empty() ? SimTime{} : time_of("--trace-window", a);
  if (!b.empty()) to = time_of("--trace-window", b);
  if (!(to > from)) bad("--trace-window", "the window must end after it starts; got '" + f.window + "'");
}

}  // namespace

void add_trace_flags(CLI::App* cmd, TraceFlags& f, bool training) {
  cmd->add_option("--trace", f.path,
                  "write a Chrome/Perfetto trace to this file (opens in ui.perfetto.dev); a name ending in .gz is "
                  "written gzip-compressed");
  cmd->add_option("--trace-window", f.window,
                  "trace only what runs in this time window, T0:T1 (e.g. 0:20ms; T1 may be left out: to the end)");
  if (!training) return;
  cmd->add_option("--trace-gpus", f.gpus, "trace only these GPUs (ranks), e.g. 0-3,8");
  cmd->add_option("--trace-micro-batches", f.micro_batches,
                  "trace only these micro-batches, FIRST:LAST inclusive (e.g. 0:1), with the link counters of "
                  "the time they span");
  cmd->add_option("--trace-detail", f.detail,
                  "layer: from micro-batch 1 on, one slice per layer's forward or backward on a stream (its "
                  "kernels and the TP collectives between them; micro-batch 0 keeps every span); full: every span")
      ->check(CLI::IsMember({"layer", "full"}))
      ->capture_default_str();
  // Range() alone names the type "INT:INT in [0 - 1000000]", which reads as a pair.
  cmd->add_option("--trace-link-points", f.link_points,
                  "link counters in the trace: how many time-averaged samples each link gets over the traced "
                  "window (a counter track per link in Perfetto; 0 = no link counters; 0 to 1000000)")
      ->type_name("N")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000).description(""));
}

std::string variant_trace_path(const std::string& base, const std::string& variant) {
  if (variant.empty()) return base;
  std::string slug;
  for (char c : variant) slug += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  auto p = std::filesystem::path(base);
  // `t.json.gz`: the variant goes before `.json.gz`, so the name still says what the file holds.
  std::string ext = p.extension().string();
  if (ext == ".gz" && p.stem().has_extension()) {
    ext = p.stem().extension().string() + ext;
    p = p.parent_path() / p.stem();
  }
  return (p.parent_path() / (p.stem().string() + "." + slug + ext)).string();
}

TraceFile::TraceFile(std::string path) : path_(std::move(path)), file_(path_, std::ios::binary | std::ios::trunc) {
  if (!file_) throw InputError(path_, "", "cannot write this file");
  if (path_.size() > 3 && path_.ends_with(".gz")) {
    gzip_ = std::make_unique<report::GzipStreambuf>(file_);
    gzip_stream_ = std::make_unique<std::ostream>(gzip_.get());
  }
}

void TraceFile::close() {
  bool ok = !gzip_ || (gzip_stream_->flush() && gzip_->finish());
  file_.close();
  ok = ok && !file_.fail();
  if (!ok) throw InputError(path_, "", "cannot write this trace file (disk full or not writable?)");
}

void trace_window(const TraceFlags& f, SimTime& from, SimTime& to) {
  if (!f.gpus.empty()) bad("--trace-gpus", "applies to training steps only (a serving trace shows replicas)");
  if (!f.micro_batches.empty()) bad("--trace-micro-batches", "applies to training steps only");
  if (!f.wanted()) {
    if (!f.window.empty()) bad("--trace-window", "needs --trace FILE (where to write the trace)");
    return;
  }
  window_of(f, from, to);
}

report::TraceSelection trace_selection(const TraceFlags& f, int gpus, std::int64_t micro_batches) {
  report::TraceSelection sel;
  sel.link_points = f.link_points;
  sel.merge_layers = f.detail != "full";
  if (!f.wanted()) {
    for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"--trace-gpus", &f.gpus},
                                      {"--trace-window", &f.window},
                                      {"--trace-micro-batches", &f.micro_batches}}) {
      if (!value->empty()) bad(flag, "needs --trace FILE (where to write the trace)");
    }
    return sel;
  }
  window_of(f, sel.from, sel.to);
  if (!f.gpus.empty()) {
    std::size_t pos = 0;
    while (pos <= f.gpus.size()) {
      const auto comma = std::min(f.gpus.find(',', pos), f.gpus.size());
      const std::string item = f.gpus.substr(pos, comma - pos);
      const auto dash = item.find('-');
      int lo = 0;
      int hi = 0;
      const bool ok = dash == std::string::npos ? whole(item, lo) && whole(item, hi)
                                                : whole(std::string_view(item).substr(0, dash), lo) &&
                                                      whole(std::string_view(item).substr(dash + 1), hi) && hi >= lo;
      if (!ok) bad("--trace-gpus", "expected ranks and ranges like 0-3,8; got '" + item + "' in '" + f.gpus + "'");
      if (hi >= gpus) {
        bad("--trace-gpus", "GPU " + std::to_string(hi) + " is not in this run: it has " + std::to_string(gpus) +
                                " GPUs (0-" + std::to_string(gpus - 1) + ")");
      }
      for (int r = lo; r <= hi; ++r) sel.gpus.push_back(r);
      pos = comma + 1;
    }
    std::sort(sel.gpus.begin(), sel.gpus.end());
    sel.gpus.erase(std::unique(sel.gpus.begin(), sel.gpus.end()), sel.gpus.end());
  }
  if (!f.micro_batches.empty()) {
    const auto [a, b] = split_range(f.micro_batches);
    int first = 0;
    int last = 0;
    const bool single = f.micro_batches.find(':') == std::string::npos;
    const bool ok = whole(a, first) && whole(single ? a : b, last) && last >= first;
    if (!ok) bad("--trace-micro-batches", "expected FIRST:LAST (e.g. 0:1) or one index; got '" + f.micro_batches + "'");
    if (last >= micro_batches) {
      bad("--trace-micro-batches", "micro-batch " + std::to_string(last) + " is not in this step: it has " +
                                       std::to_string(micro_batches) + " (0-" + std::to_string(micro_batches - 1) +
                                       ")");
    }
    sel.first_micro = first;
    sel.last_micro = last;
  }
  return sel;
}

}  // namespace cs::cli
