#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario/engine_preset.hpp"

namespace cs::config {

struct JsonDoc;

/// Parses an engine preset (scenarios/engines/*.json).
[[nodiscard]] serving::EnginePreset parse_engine(const JsonDoc& doc, const std::string& id);

/// The first tier of `preset` for a GPU of `memory_gib` whose profile is `profile_id`, at TP `tp`
/// (the files end with a tier every GPU matches).
[[nodiscard]] const serving::EngineTier& engine_tier(const serving::EnginePreset& preset, double memory_gib,
                                                     const std::string& profile_id, int tp);

/// The captured batch sizes up to `largest`, ascending: the padded list when `padding` and the
/// engine generates one (TensorRT-LLM), and `largest` itself where the engine captures it.
[[nodiscard]] std::vector<std::int64_t> graph_sizes(const serving::EnginePreset& preset, std::int64_t largest,
                                                    bool padding);

/// SGLang's mem_fraction_static for a GPU of `capacity_bytes`, chunk size, largest graph batch and
/// TP x PP GPUs: round((capacity - reserved) / capacity, 3), in MiB.
[[nodiscard]] double static_memory_fraction(const serving::ReservedMemoryRule& rule, double capacity_bytes,
                                            std::int64_t chunk, std::int64_t graph_largest, int gpus);

}  // namespace cs::config
