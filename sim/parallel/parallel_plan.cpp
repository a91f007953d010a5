#include "sim/parallel/parallel_plan.hpp"

#include <algorithm>

namespace cs::plan {

int ParallelPlan::rank(int stage, int d, int t) const {
  int r = 0, stride = 1;
  for (char dim : order) {
    const int coord = dim == 't' ? t : dim == 'c' ? d % cp : dim == 'd' ? d / cp : stage;
    const int size = dim == 't' ? tp : dim == 'c' ? cp : dim == 'd' ? dp : pp;
    r += coord * stride;
    stride *= size;
  }
  return r;
}

bool ParallelPlan::parse_order(const std::string& text, std::array<char, 4>& out) {
  std::array<char, 4> o{};
  std::size_t n = 0, pos = 0;
  while (pos <= text.size() && n < 4) {
    const auto dash = text.find('-', pos);
    const std::string part = text.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    char c = part == "tp" ? 't' : part == "cp" ? 'c' : part == "dp" ? 'd' : part == "pp" ? 'p' : 0;
    if (!c || std::find(o.begin(), o.begin() + static_cast<long>(n), c) != o.begin() + static_cast<long>(n))
      return false;
    o[n++] = c;
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  if (n != 4 || text.find('-', pos) != std::string::npos) return false;
  out = o;
  return true;
}

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
