#pragma once

/// CS_ASSERT(cond, msg): an internal invariant. On in every build; prints file:line and aborts.
/// Bugs are ours: never use it for bad input (throw cs::InputError instead).
#define CS_ASSERT(cond, msg)                                          \
  do {                                                                \
    if (!(cond)) ::cs::assert_failed(#cond, msg, __FILE__, __LINE__); \
  } while (false)

namespace cs {
[[noreturn]] void assert_failed(const char* cond, const char* msg, const char* file, int line);
}
