#pragma once
#include <cstddef>
#include <utility>
#include <vector>

namespace cs {

/// Asks the OS to back [p, p + bytes) with huge pages where it can (Linux transparent huge pages
/// "on request"; elsewhere, or for less than one huge page, nothing happens). Only pages not yet
/// touched are affected, so call it before filling the memory. Contents and results never change:
/// this is about speed only.
void advise_huge_pages(const void* p, std::size_t bytes);

/// Room for `n` elements in `v`, in memory advised for huge pages. The arrays of a large step
/// (tens of millions of tasks and their per-task state, indexed in no local order) otherwise cost
/// a page fault per 4 KiB when first filled and a TLB miss per access.
template <class T>
void reserve_huge(std::vector<T>& v, std::size_t n) {
  if (n <= v.capacity()) return;
  std::vector<T> fresh;
  fresh.reserve(n);
  advise_huge_pages(fresh.data(), n * sizeof(T));
  for (auto& x : v) fresh.push_back(std::move(x));
  v = std::move(fresh);
}

/// `n` copies of `value` in `v` (as std::vector::assign), in memory advised for huge pages.
template <class T>
void assign_huge(std::vector<T>& v, std::size_t n, const T& value) {
  v.clear();
  reserve_huge(v, n);
  v.assign(n, value);
}

}  // namespace cs
