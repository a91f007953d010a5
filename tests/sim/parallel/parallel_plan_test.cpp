#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "sim/parallel/parallel_plan.hpp"

using namespace cs;

namespace {

plan::ParallelPlan make(int tp, int cp, int dp, int pp, int ep = 1, int etp = 1) {
  plan::ParallelPlan p;
  p.tp = tp;
  p.cp = cp;
  p.dp = dp;
  p.pp = pp;
  p.ep = ep;
  p.etp = etp;
  return p;
}

constexpr GroupKind kAllKinds[] = {GroupKind::kTp, GroupKind::kCp, GroupKind::kDp,       GroupKind::kDpCp,
                                   GroupKind::kPp, GroupKind::kEp, GroupKind::kExpertTp, GroupKind::kExpertDp};

}  // namespace

TEST_CASE("coords inverts rank for every placement order") {
  for (const char* order : {"tp-cp-dp-pp", "pp-dp-cp-tp", "cp-tp-pp-dp", "dp-pp-tp-cp"}) {
    auto p = make(2, 2, 3, 2);
    REQUIRE(plan::ParallelPlan::parse_order(order, p.order));
    for (int r = 0; r < p.gpus(); ++r) {
      const auto c = p.coords(r);
      CHECK(p.rank(c.stage, c.d, c.t) == r);
    }
  }
}

TEST_CASE("every group kind partitions the ranks, each rank in exactly one group of its kind (of the kind size)") {
  const auto p = make(2, 2, 4, 2, /*ep=*/4, /*etp=*/2);
  for (auto kind : kAllKinds) {
    std::set<std::vector<int>> groups;
    for (int r = 0; r < p.gpus(); ++r) {
      const auto g = p.group(kind, r);
      CHECK(static_cast<int>(g.size()) == p.group_size(kind));
      CHECK(std::count(g.begin(), g.end(), r) == 1);
      // The same group from every member (so a group is a property of the partition, not of who asks).
      for (int x : g) CHECK(p.group(kind, x) == g);
      groups.insert(g);
    }
    CHECK(static_cast<int>(groups.size()) * p.group_size(kind) == p.gpus());
  }
}

TEST_CASE("default placement: TP consecutive, then CP, DP, PP, and EP groups take consecutive ranks of a stage") {
  const auto p = make(2, 1, 8, 2, /*ep=*/4);
  CHECK(p.group(GroupKind::kTp, 5) == std::vector<int>{4, 5});
  CHECK(p.group(GroupKind::kDp, 5) == std::vector<int>{1, 3, 5, 7, 9, 11, 13, 15});
  CHECK(p.group(GroupKind::kPp, 5) == std::vector<int>{5, 21});
  // Experts re-split the stage's 16 ranks as ETP 1 x EP 4 x EDP 4 (Megatron-core's expert layout).
  CHECK(p.group(GroupKind::kEp, 5) == std::vector<int>{4, 5, 6, 7});
  CHECK(p.group(GroupKind::kExpertDp, 5) == std::vector<int>{1, 5, 9, 13});
  CHECK(p.group(GroupKind::kEp, 21) == std::vector<int>{20, 21, 22, 23});
  CHECK(p.edp() == 4);
}

TEST_CASE("the DP x CP group holds the replicas of the same dense weights: DP x CP ranks of one TP rank and stage") {
  const auto p = make(2, 2, 2, 1);
  CHECK(p.group(GroupKind::kCp, 0) == std::vector<int>{0, 2});
  CHECK(p.group(GroupKind::kDp, 0) == std::vector<int>{0, 4});
  CHECK(p.group(GroupKind::kDpCp, 0) == std::vector<int>{0, 2, 4, 6});
}
