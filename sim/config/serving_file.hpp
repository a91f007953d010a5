#pragma once
#include <string>
#include <vector>

#include "sim/config/catalog.hpp"
#include "sim/scenario/serving_scenario.hpp"

namespace cs::config {

struct JsonDoc;

/// Parses an inference scenario document (kind "infer") and resolves it against the catalog.
/// Bad workloads (zero lengths, negative rates, a trace line with a negative time or a missing
/// field) are InputErrors naming the line and field; plans that cannot run are InfeasibleErrors.
[[nodiscard]] serving::ServingScenario parse_serving(const JsonDoc& doc, const Catalog& catalog);

/// Reads a request trace: CSV with a header naming arrival_s, input_tokens, output_tokens (any
/// order), or JSON lines with those keys.
[[nodiscard]] std::vector<serving::RequestSpec> read_trace(const std::string& path);

}  // namespace cs::config
