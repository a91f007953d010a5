#pragma once
#include <cstddef>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>

namespace cs::study {

/// How a batch reports progress: a bar redrawn in place on a terminal, plain lines otherwise (at
/// most one per tenth of the batch, so logs stay short), or nothing. Thread-safe; the count only
/// goes up, and what it prints never reaches the results, so results stay the same bytes.
class Progress {
 public:
  enum class Style { kNone, kBar, kLines };
  Progress(std::ostream& out, Style style, std::string what);
  /// kBar when `fd` is a terminal, else kLines.
  [[nodiscard]] static Style style_for(int fd);
  void start(std::size_t total);
  void done_one(bool ok);
  void finish();

 private:
  void draw_locked();
  std::ostream& out_;
  Style style_;
  std::string what_;
  std::mutex mu_;
  std::size_t total_ = 0, done_ = 0, failed_ = 0, last_line_ = 0;
};

/// Runs body(i) for every i in [0, n) on the workers, as cs::parallel_for_each does (each index
/// writes its own slot; the exception of the lowest failing index is rethrown afterwards), and
/// counts each finished index on `progress` (may be null).
void run_batch(std::size_t n, const std::function<void(std::size_t)>& body, Progress* progress);

}  // namespace cs::study
