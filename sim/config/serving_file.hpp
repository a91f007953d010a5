#pragma once
#include <cstdint>
#include <iosfwd>
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

/// The most tokens one request of a trace may have (input or output) before the model's context
/// is known: keeps every count exact in a double and far from int64 overflow.
inline constexpr std::int64_t kMaxRequestTokens = std::int64_t{1} << 40;

/// Reads a request trace: CSV with a header naming arrival_s, input_tokens, output_tokens (any
/// order), or JSON lines with those keys (a path ending in .jsonl or .json). Arrivals must be in
/// [0, kMaxSimSeconds), token counts in [1, kMaxRequestTokens] and, when `context` > 0, input +
/// output at most `context` (the model's); problems name `path:line` and the field.
[[nodiscard]] std::vector<serving::RequestSpec> read_trace(const std::string& path, std::int64_t context = 0);
/// The same from a stream; `origin` names it in messages.
[[nodiscard]] std::vector<serving::RequestSpec> read_trace(std::istream& in, const std::string& origin, bool jsonl,
                                                           std::int64_t context = 0);

}  // namespace cs::config
