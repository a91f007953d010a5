#include "sim/core/comm_kinds.hpp"

namespace cs {

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::kTp: return "tp";
    case GroupKind::kCp: return "cp";
    case GroupKind::kDp: return "dp";
    case GroupKind::kDpCp: return "dpcp";
    case GroupKind::kPp: return "pp";
    case GroupKind::kEp: return "ep";
    case GroupKind::kExpertTp: return "etp";
    case GroupKind::kExpertDp: return "edp";
  }
  return "?";
}

}  // namespace cs
