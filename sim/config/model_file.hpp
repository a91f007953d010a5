#pragma once
#include <string>

#include "models/llm/model_arch.hpp"

namespace cs::config {

struct JsonDoc;

/// Parses a HF-style config. Unknown keys are errors; keys HF writes that do not change cost
/// (token ids, rope settings, dtype, routing loss coefficients...) are accepted and ignored. MoE
/// (DeepSeek, Mixtral, Qwen-MoE, gpt-oss names), MLA and sliding-window fields are read.
[[nodiscard]] models::ModelArch parse_model(const JsonDoc& doc, const std::string& id);

}  // namespace cs::config
