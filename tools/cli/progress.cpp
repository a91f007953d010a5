#include <unistd.h>

#include <iostream>

#include "sim/study/batch.hpp"
#include "tools/cli/commands.hpp"

namespace cs::cli {

std::unique_ptr<study::Progress> batch_progress(const std::string& what, std::size_t n) {
  const auto style = study::Progress::style_for(STDERR_FILENO);
  if (n < 2 || (style == study::Progress::Style::kLines && n < 4)) return nullptr;
  return std::make_unique<study::Progress>(std::cerr, style, what);
}

}  // namespace cs::cli
