#pragma once
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "sim/serving/batch_scheduler.hpp"

namespace cs::test {

/// Requests 0, 1, ... with these (input, output) lengths, nothing prefilled.
[[nodiscard]] std::vector<serving::Request> requests(const std::vector<std::pair<std::int64_t, std::int64_t>>& lens);

/// A replica queue over a pool of `blocks` 16-token blocks (no sliding window), these ids waiting.
[[nodiscard]] serving::ReplicaQueue queue(std::int64_t blocks, std::deque<int> waiting);

/// The batch a scheduler formed, as (request, chunk) pairs.
[[nodiscard]] std::vector<std::pair<int, std::int64_t>> batch(const serving::StepBuilder& b);

}  // namespace cs::test
