#include "sim/core/errors.hpp"

namespace cs {

std::string InputProblem::to_string() const {
  std::string out = file;
  if (!pointer.empty()) out += ": " + pointer;
  out += ": " + message;
  return out;
}

namespace {
std::string join(const std::vector<InputProblem>& problems) {
  std::string out;
  for (const auto& p : problems) {
    if (!out.empty()) out += '\n';
    out += p.to_string();
  }
  return out;
}
}  // namespace

InputError::InputError(std::string file, std::string pointer, std::string message)
    : InputError(std::vector<InputProblem>{{std::move(file), std::move(pointer), std::move(message)}}) {}

InputError::InputError(std::vector<InputProblem> problems)
    : std::runtime_error(join(problems)), problems_(std::move(problems)) {}

}  // namespace cs
