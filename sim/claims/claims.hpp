#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/config/catalog.hpp"
#include "sim/study/batch.hpp"

namespace cs::claims {

/// One number a claim's verdict rests on (or shows beside it), as we computed it.
struct Figure {
  std::string name;
  double value = 0;
  std::string unit;  ///< "%", "x", "GB/s", "GiB", "tokens/s", "CNY/h", ...
  std::string note;  ///< e.g. "fits" / "does not fit", the algorithm used; may be empty
};

/// One stated sub-claim and its own verdict (claims that bundle several rules).
struct Part {
  std::string what;
  std::string verdict;
};

/// A seed claim, judged: verdict is "supported", "contradicted" or "depends on X" (X with the
/// figures it depends on); `reason` says which numbers decided it.
struct ClaimResult {
  int id = 0;
  std::string title;
  std::string claim;           ///< the claim in English (shared/seed/DIGEST.md)
  std::string article_figure;  ///< the number(s) the article states
  std::string rule;            ///< how the verdict is decided, in words (the code is seed_claims.cpp)
  std::vector<std::string> scenarios;
  std::vector<Figure> figures;
  std::vector<Part> parts;
  std::string verdict;
  std::string reason;
};

inline const char* const kSupported = "supported";
inline const char* const kContradicted = "contradicted";
/// "depends on X".
[[nodiscard]] std::string depends_on(const std::string& x);
/// Whether `v` is one of the allowed verdict strings.
[[nodiscard]] bool valid_verdict(const std::string& v);

/// Runs the scenarios of claims 1-12 of the seed article (scenarios/seed-claims/, the offers) as
/// one batch and judges each claim by its rule.
[[nodiscard]] std::vector<ClaimResult> run_seed_claims(const config::Catalog& catalog, study::Progress* progress);

/// docs/seed-claims.md.
[[nodiscard]] std::string claims_markdown(const std::vector<ClaimResult>& claims);
/// The terminal summary: one line per claim.
[[nodiscard]] std::string claims_table(const std::vector<ClaimResult>& claims);
/// `{"claims": [{"id", "claim", "verdict", "figures", ...}]}`.
[[nodiscard]] nlohmann::ordered_json claims_json(const std::vector<ClaimResult>& claims);

}  // namespace cs::claims
