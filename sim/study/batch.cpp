#include "sim/study/batch.hpp"

#include <unistd.h>

#include "sim/core/parallel.hpp"

namespace cs::study {

Progress::Progress(std::ostream& out, Style style, std::string what)
    : out_(out), style_(style), what_(std::move(what)) {}

Progress::Style Progress::style_for(int fd) { return isatty(fd) ? Style::kBar : Style::kLines; }

void Progress::start(std::size_t total) {
  std::lock_guard lock(mu_);
  total_ = total;
  done_ = failed_ = last_line_ = 0;
  draw_locked();
}

void Progress::done_one(bool ok) {
  std::lock_guard lock(mu_);
  ++done_;
  if (!ok) ++failed_;
  draw_locked();
}

void Progress::finish() {
  std::lock_guard lock(mu_);
  if (style_ == Style::kBar && total_ > 0) out_ << "\n";
  out_.flush();
}

void Progress::draw_locked() {
  if (style_ == Style::kNone || total_ == 0) return;
  const std::string counts = std::to_string(done_) + "/" + std::to_string(total_) +
                             (failed_ ? " (" + std::to_string(failed_) + " infeasible or invalid)" : "");
  if (style_ == Style::kBar) {
    // Redrawn at each thousandth (a run counted in requests may finish tens of thousands).
    const std::size_t permille = done_ * 1000 / total_;
    if (done_ != 0 && done_ != total_ && permille == last_line_ && !failed_) return;
    last_line_ = permille;
    constexpr std::size_t kWidth = 30;
    const std::size_t filled = done_ * kWidth / total_;
    out_ << "\r" << what_ << " [" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] " << counts
         << std::flush;
    return;
  }
  // Lines: the start, each further tenth, and the end.
  const std::size_t tenth = (done_ * 10) / total_;
  if (done_ != 0 && done_ != total_ && tenth == last_line_) return;
  last_line_ = tenth;
  out_ << what_ << ": " << counts << "\n";
}

void run_batch(std::size_t n, const std::function<void(std::size_t)>& body, Progress* progress) {
  if (progress) progress->start(n);
  const auto each = [&](std::size_t i) {
    bool ok = false;
    try {
      body(i);
      ok = true;
    } catch (...) {
      if (progress) progress->done_one(false);
      throw;
    }
    if (progress) progress->done_one(ok);
  };
  try {
    parallel_for_each(n, each);
  } catch (...) {
    if (progress) progress->finish();
    throw;
  }
  if (progress) progress->finish();
}

}  // namespace cs::study
