#include "sim/core/check.hpp"

#include <cstdio>
#include <cstdlib>

namespace cs {

void assert_failed(const char* cond, const char* msg, const char* file, int line) {
  std::fprintf(stderr, "internal error, please report: %s:%d: %s (%s)\n", file, line, msg, cond);
  std::abort();
}

}  // namespace cs
