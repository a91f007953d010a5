#pragma once
#include <cstddef>
#include <functional>
#include <memory>

namespace cs {

/// Runs body(i) for every i in [0, n) on the oneTBB workers. Every index runs even when some
/// throw; afterwards the exception of the lowest failing index is rethrown, so which error a user
/// sees never depends on thread timing. Bodies write per-index slots; callers combine them in index
/// order, so results are the same bytes with one thread or many.
void parallel_for_each(std::size_t n, const std::function<void(std::size_t)>& body);

/// Caps oneTBB's worker threads while alive (`threads` <= 0: all hardware threads).
class ThreadLimit {
 public:
  explicit ThreadLimit(int threads);
  ~ThreadLimit();
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cs
