#include "tests/support/serving_queues.hpp"

namespace cs::test {

std::vector<serving::Request> requests(const std::vector<std::pair<std::int64_t, std::int64_t>>& lens) {
  std::vector<serving::Request> out;
  for (const auto& [in, n] : lens) {
    serving::Request r;
    r.id = static_cast<int>(out.size());
    r.input = in;
    r.output = n;
    r.prompt = in;
    out.push_back(r);
  }
  return out;
}

serving::ReplicaQueue queue(std::int64_t blocks, std::deque<int> waiting) {
  serving::ReplicaQueue q;
  q.kv = serving::KvCache(blocks, 16, 0, 0);
  q.waiting = std::move(waiting);
  return q;
}

std::vector<std::pair<int, std::int64_t>> batch(const serving::StepBuilder& b) {
  std::vector<std::pair<int, std::int64_t>> out;
  for (const auto& p : b.plan) out.emplace_back(p.req, p.chunk);
  return out;
}

}  // namespace cs::test
