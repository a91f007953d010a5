#include "sim/parallel/parallel_plan.hpp"

namespace cs::plan {

std::vector<std::vector<int>> ParallelPlan::tp_groups() const {
  std::vector<std::vector<int>> out;
  for (int s = 0; s < pp; ++s) {
    for (int d = 0; d < dpcp(); ++d) {
      std::vector<int> g;
      for (int t = 0; t < tp; ++t) g.push_back(rank(s, d, t));
      out.push_back(g);
    }
  }
  return out;
}

std::vector<std::vector<int>> ParallelPlan::dp_groups() const {
  std::vector<std::vector<int>> out;
  for (int s = 0; s < pp; ++s) {
    for (int t = 0; t < tp; ++t) {
      std::vector<int> g;
      for (int d = 0; d < dpcp(); ++d) g.push_back(rank(s, d, t));
      out.push_back(g);
    }
  }
  return out;
}

}  // namespace cs::plan
