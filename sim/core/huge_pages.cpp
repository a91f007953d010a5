#include "sim/core/huge_pages.hpp"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace cs {

void advise_huge_pages(const void* p, std::size_t bytes) {
#if defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;  // x86-64 and arm64 (4 KiB base pages)
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const auto first = (begin + kHuge - 1) & ~(kHuge - 1);
  const auto last = (begin + bytes) & ~(kHuge - 1);
  // Advice only: a kernel without transparent huge pages refuses it, and nothing changes.
  if (first < last) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace cs
