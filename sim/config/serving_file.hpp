#pragma once
#include <algorithm>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/catalog.hpp"
#include "sim/scenario/serving_scenario.hpp"

namespace cs::config {

struct JsonDoc;

/// The engine preset a serving scenario names, and the engine fields it gives (which override the
/// preset's). At namespace scope, as is ServingMixGiven, so that ServingSpec's `std::optional` of
/// it sees a complete type (clang evaluates a nested class's default member initialisers only at
/// the end of the enclosing class, and then refuses `optional::emplace()`).
struct ServingEngineGiven {
  std::string preset;
  std::vector<std::string> keys;
  [[nodiscard]] bool has(const std::string& key) const {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  }
  void give(const std::string& key) {
    if (!has(key)) keys.push_back(key);
  }
};

/// A mixed fleet's second box kind (`/mix`), unresolved.
struct ServingMixGiven {
  std::string cluster, profile, offer, link;
  int replicas = 0, tp = 0;
};

/// An inference scenario as read, before anything is looked up: the plain values it gives (and
/// the defaults of the fields it leaves out), and the names and choices resolve_serving turns into
/// the machine, the engine preset's settings, the trace and the routing. A program that builds
/// scenarios of its own (plan's candidates) reads its common part once and sets each one's shape
/// here, so every scenario is resolved and checked by the one function, from a file or not.
struct ServingSpec {
  using Engine = ServingEngineGiven;
  using Mix = ServingMixGiven;
  std::string origin;               ///< the file (or "command line") problems point into
  serving::ServingScenario values;  ///< every plain value; the machine, preset and trace unset
  std::string model, cluster, fabric, profile, offer;
  int gpus = 0;  ///< 0: as many as the plan needs
  std::string routing = "balanced";
  std::int64_t routing_seed = 1, redundant_experts = 0;
  Engine engine;
  std::string trace_file;
  std::optional<Mix> mix;
};

/// Reads an inference scenario document (kind "infer"): types, ranges and choices of every field,
/// each problem an InputError at its JSON pointer. Nothing is looked up.
[[nodiscard]] ServingSpec read_serving(const JsonDoc& doc);

/// Resolves a read scenario against the catalog (model, cluster, profile, offer, fabric, engine
/// preset for its GPU and TP, trace, MoE routing) and checks it as a whole. Bad workloads (zero
/// lengths, negative rates, a trace line with a negative time or a missing field) are InputErrors
/// naming the line and field; plans that cannot run are InfeasibleErrors.
[[nodiscard]] serving::ServingScenario resolve_serving(ServingSpec spec, const Catalog& catalog);

/// read_serving, then resolve_serving.
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
