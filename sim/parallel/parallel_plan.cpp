#include "sim/parallel/parallel_plan.hpp"

#include <algorithm>

#include "sim/core/check.hpp"

namespace cs::plan {

const char* schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::kGpipe: return "gpipe";
    case PipelineSchedule::kDualPipe: return "dualpipe";
    case PipelineSchedule::kOneFOneB: break;
  }
  return "1f1b";
}

namespace {
int dim_size(const ParallelPlan& p, char dim) {
  return dim == 't' ? p.tp : dim == 'c' ? p.cp : dim == 'd' ? p.dp : p.pp;
}
}  // namespace

int ParallelPlan::rank(int stage, int d, int t) const {
  int r = 0, stride = 1;
  for (char dim : order) {
    const int coord = dim == 't' ? t : dim == 'c' ? d % cp : dim == 'd' ? d / cp : stage;
    r += coord * stride;
    stride *= dim_size(*this, dim);
  }
  return r;
}

Coords ParallelPlan::coords(int r) const {
  int c = 0, dpi = 0;
  Coords out;
  for (char dim : order) {
    const int size = dim_size(*this, dim);
    const int coord = r % size;
    r /= size;
    if (dim == 't') out.t = coord;
    if (dim == 'c') c = coord;
    if (dim == 'd') dpi = coord;
    if (dim == 'p') out.stage = coord;
  }
  out.d = dpi * cp + c;
  return out;
}

int ParallelPlan::group_size(GroupKind kind) const {
  switch (kind) {
    case GroupKind::kTp: return tp;
    case GroupKind::kCp: return cp;
    case GroupKind::kDp: return dp;
    case GroupKind::kDpCp: return dpcp();
    case GroupKind::kPp: return pp;
    case GroupKind::kEp: return ep;
    case GroupKind::kExpertTp: return etp;
    case GroupKind::kExpertDp: return edp();
  }
  CS_ASSERT(false, "unknown group kind");
  return 1;
}

std::vector<int> ParallelPlan::group(GroupKind kind, int r) const {
  // Plain variables, not a structured binding: clang 14 (the sanitizer builds) cannot capture a
  // binding in the lambda below.
  const Coords at = coords(r);
  const int stage = at.stage, d = at.d, t = at.t;
  const int c = d % cp, dpi = d / cp;
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(group_size(kind)));
  // The expert kinds index the stage's ranks as i = t + TP (c + CP dp) and split i as
  // et + ETP (e + EP ed).
  auto expert = [&](int vary) {
    CS_ASSERT(stage_ranks() % (etp * ep) == 0, "ETP x EP divides the ranks of a stage");
    const int i = t + tp * d;
    int co[3] = {i % etp, (i / etp) % ep, i / (etp * ep)};
    const int sizes[3] = {etp, ep, edp()};
    for (int k = 0; k < sizes[vary]; ++k) {
      co[vary] = k;
      const int j = co[0] + etp * (co[1] + ep * co[2]);
      out.push_back(rank(stage, j / tp, j % tp));
    }
  };
  switch (kind) {
    case GroupKind::kTp:
      for (int k = 0; k < tp; ++k) out.push_back(rank(stage, d, k));
      break;
    case GroupKind::kCp:
      for (int k = 0; k < cp; ++k) out.push_back(rank(stage, dpi * cp + k, t));
      break;
    case GroupKind::kDp:
      for (int k = 0; k < dp; ++k) out.push_back(rank(stage, k * cp + c, t));
      break;
    case GroupKind::kDpCp:
      for (int k = 0; k < dpcp(); ++k) out.push_back(rank(stage, k, t));
      break;
    case GroupKind::kPp:
      for (int k = 0; k < pp; ++k) out.push_back(rank(k, d, t));
      break;
    case GroupKind::kExpertTp: expert(0); break;
    case GroupKind::kEp: expert(1); break;
    case GroupKind::kExpertDp: expert(2); break;
  }
  return out;
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

}  // namespace cs::plan
