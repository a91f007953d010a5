#include "sim/serving/serving_log.hpp"

#include <algorithm>

namespace cs::serving {

SimTime ServingLog::makespan() const {
  if (requests.empty()) return SimTime{};
  SimTime first = requests.front().arrival, last{};
  for (const auto& q : requests) {
    first = std::min(first, q.arrival);
    last = std::max(last, q.finish);
  }
  return last - first;
}

double ServingLog::output_tokens_per_s() const {
  std::int64_t out = 0;
  for (const auto& q : requests) out += q.output;
  return static_cast<double>(out) / std::max(makespan().seconds(), 1e-12);
}

}  // namespace cs::serving
