#include <unistd.h>

#include <iostream>

#include "sim/study/batch.hpp"
#include "tools/cli/commands.hpp"

namespace cs::cli {

namespace {
bool g_progress_lines = false;

/// A bar on a terminal; elsewhere plain lines only when `--progress` asked for them (a script's
/// captured stderr stays clean); else none.
study::Progress::Style style_now() {
  const auto style = study::Progress::style_for(STDERR_FILENO);
  if (style == study::Progress::Style::kBar) return style;
  return g_progress_lines ? study::Progress::Style::kLines : study::Progress::Style::kNone;
}
}  // namespace

void set_progress_lines(bool on) { g_progress_lines = on; }

std::unique_ptr<study::Progress> batch_progress(const std::string& what, std::size_t n) {
  const auto style = style_now();
  if (style == study::Progress::Style::kNone || n < 2) return nullptr;
  return std::make_unique<study::Progress>(std::cerr, style, what);
}

std::unique_ptr<study::Progress> run_progress(const std::string& what, std::size_t units) {
  const auto style = style_now();
  if (style == study::Progress::Style::kNone || units < 1) return nullptr;
  return std::make_unique<study::Progress>(std::cerr, style, what);
}

}  // namespace cs::cli
