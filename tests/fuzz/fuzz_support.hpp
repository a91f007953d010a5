#pragma once
// Shared by the libFuzzer targets: the input as text, and the one rule every target checks.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/core/errors.hpp"

namespace cs::fuzz {

/// The repository's data folder (models/, calibration/, scenarios/) for readers that resolve ids.
inline const char* data_dir() { return CLUSTERSIM_DATA_DIR; }

/// Runs `body` on the input as text. Bad input must end as InputError (exit 2) or, for a
/// well-formed plan that cannot run, InfeasibleError (exit 4); any other exception escapes, which
/// libFuzzer reports as a crash, as it does signals and sanitizer findings.
template <class Body>
int run(const std::uint8_t* data, std::size_t size, Body&& body) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    body(text);
  } catch (const InputError&) {
  } catch (const InfeasibleError&) {
  }
  return 0;
}

}  // namespace cs::fuzz
