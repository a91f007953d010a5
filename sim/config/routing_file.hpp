#pragma once
#include <string>

#include "models/llm/model_arch.hpp"
#include "sim/scenario/scenario.hpp"

namespace cs::config {

/// Parses a `moe.routing` value: "balanced", "uniform", "zipf:S" (S > 0), or the path of a JSON
/// file `{"loads": [one number >= 0 per routed expert], "source": "..."}`. `pointer` names the
/// field in `file` for messages.
[[nodiscard]] scenario::MoeRouting parse_routing(const std::string& text, const models::ModelArch& model,
                                                 const std::string& file, const std::string& pointer);

}  // namespace cs::config
