#include "sim/core/parallel.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <exception>
#include <vector>

namespace cs {

void parallel_for_each(std::size_t n, const std::function<void(std::size_t)>& body) {
  std::vector<std::exception_ptr> errors(n);
  auto guarded = [&](std::size_t i) {
    try {
      body(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (n < 2) {
    for (std::size_t i = 0; i < n; ++i) guarded(i);
  } else {
    tbb::parallel_for(std::size_t{0}, n, guarded);
  }
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

struct ThreadLimit::Impl {
  std::unique_ptr<tbb::global_control> control;
};

ThreadLimit::ThreadLimit(int threads) : impl_(std::make_unique<Impl>()) {
  if (threads > 0) {
    impl_->control = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                           static_cast<std::size_t>(threads));
  }
}

ThreadLimit::~ThreadLimit() = default;

}  // namespace cs
