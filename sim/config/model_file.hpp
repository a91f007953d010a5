#pragma once
#include <string>

#include "models/llm/model_arch.hpp"

namespace cs::config {

struct JsonDoc;

/// Parses a HF-style config. Unknown keys are errors; keys HF writes that do not change cost
/// (token ids, rope settings, dtype...) are accepted and ignored; MoE and MLA fields are recognised
/// and rejected ("MoE models are not supported yet").
[[nodiscard]] models::ModelArch parse_model(const JsonDoc& doc, const std::string& id);

}  // namespace cs::config
