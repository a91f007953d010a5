#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "calibration/profile/nccl_tests_import.hpp"
#include "calibration/profile/nvlink_status_import.hpp"
#include "calibration/profile/smi_query_import.hpp"
#include "calibration/profile/topo_import.hpp"
#include "sim/scenario/scenario.hpp"

namespace cs::config {
class Catalog;
}

namespace cs::cli {

/// What a renter can run on the box without our probe, each part optional: `nvidia-smi topo -m`,
/// nccl-tests output, `nvidia-smi nvlink -s`, `nvidia-smi -q`.
struct RentalEvidence {
  std::optional<calib::TopoMatrix> topo;
  std::vector<calib::NcclTestsRun> nccl;
  std::optional<calib::NvlinkStatus> nvlink;
  std::optional<calib::SmiQuery> smi;
  std::vector<std::string> files;  ///< the files read, for the report's header
};

/// One check of the seed article's pitfalls: "ok", "warn" or "fail", with the numbers behind it.
struct Verdict {
  std::string check;
  std::string verdict;
  std::string detail;
  bool operator==(const Verdict&) const = default;
};

/// What the box is, and one verdict per pitfall the evidence can speak to.
struct RentalReport {
  int gpus = 0;
  std::string gpu;           ///< product name as the tools print it
  double memory_bytes = -1;  ///< per GPU; -1 when no tool says
  std::string interconnect;  ///< e.g. "NVSwitch (every pair NV18)", "PCIe only: switches of 4 + 4"
  std::vector<Verdict> verdicts;
};

/// Runs the checks. With an offer, the claims are checked and the expected all-reduce comes from
/// our model of the offer's cluster; without one, from the box's own `topo -m` (imported as a
/// cluster) when given. Pure: reads catalog files only.
[[nodiscard]] RentalReport check_rental(const RentalEvidence& e, const std::optional<scenario::Offer>& offer,
                                        const config::Catalog& catalog);

/// The report as text (one verdict line each) and as JSON ({"box": ..., "verdicts": [...]}).
[[nodiscard]] std::string rental_report_text(const RentalReport& r, const RentalEvidence& e,
                                             const std::optional<scenario::Offer>& offer);
[[nodiscard]] nlohmann::ordered_json rental_report_json(const RentalReport& r, const RentalEvidence& e,
                                                        const std::optional<scenario::Offer>& offer);

/// The files of `inspect --topo/--nccl-tests/--nvlink/--smi`.
struct RentalFiles {
  std::string topo;
  std::vector<std::string> nccl;
  std::string nvlink;
  std::string smi;
  [[nodiscard]] bool empty() const { return topo.empty() && nccl.empty() && nvlink.empty() && smi.empty(); }
};

/// `inspect` from tool output: reads the files (bad input: InputError naming file and line), runs
/// the checks against `offer_id` (empty: none) and prints them. Returns 0 whatever the verdicts.
int run_rental_check(const std::string& profile_file, const RentalFiles& files, const std::string& offer_id, bool json,
                     const config::Catalog& catalog);

}  // namespace cs::cli
