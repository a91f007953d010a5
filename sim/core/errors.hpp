#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace cs {

/// One problem in one input: the file (or "command line"), the JSON pointer (or flag) and what was
/// expected. Exit code 2.
struct InputProblem {
  std::string file;
  std::string pointer;
  std::string message;
  [[nodiscard]] std::string to_string() const;
  bool operator==(const InputProblem&) const = default;
};

/// Bad input: one or more problems, all reported together. Exit code 2.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string pointer, std::string message);
  explicit InputError(std::vector<InputProblem> problems);
  [[nodiscard]] const std::vector<InputProblem>& problems() const { return problems_; }

 private:
  std::vector<InputProblem> problems_;
};

/// A well-formed plan that cannot run (does not fit, sizes do not divide). Exit code 4.
class InfeasibleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A GPU, driver or CUDA library is absent or failed. Exit code 3.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Exit codes of every clustersim command (README, "Exit codes").
enum class ExitCode : int { kOk = 0, kBadInput = 2, kNoDevice = 3, kInfeasible = 4, kInternal = 70 };

}  // namespace cs
