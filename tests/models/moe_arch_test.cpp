#include <doctest/doctest.h>

#include <cmath>

#include "models/llm/model_arch.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/model_file.hpp"
#include "sim/core/errors.hpp"
#include "tests/support/builders.hpp"

using namespace cs;
using models::AttentionKind;
using models::FeedForwardKind;

namespace {
models::ModelArch parse(const char* text) { return config::parse_model(config::parse_text(text, "m.json"), "m"); }

/// True when `value` rounds to the published label (printed to `digits` significant digits).
bool rounds_to(double value, double label, int digits) {
  const double scale = std::pow(10.0, std::floor(std::log10(label)) - digits + 1);
  return std::round(value / scale) * scale == doctest::Approx(label).epsilon(1e-9);
}
}  // namespace

TEST_CASE("MoE parameter totals match the published totals (model cards), to the digits they print") {
  // total / active as the model cards print them (../shared/reference/moe-architectures.md).
  struct Case {
    const char* id;
    double total;
    int total_digits;
    double active;
    bool active_without_embedding;  // DeepSeek and OpenAI count active parameters without the embedding lookup
  };
  const std::vector<Case> cases{{"deepseek-v3", 671e9, 3, 37e9, true},      {"deepseek-r1", 671e9, 3, 37e9, true},
                                {"mixtral-8x7b", 46.7e9, 3, 12.9e9, false}, {"mixtral-8x22b", 141e9, 3, 39e9, false},
                                {"qwen3-30b-a3b", 30.5e9, 3, 3.3e9, false}, {"qwen3-235b-a22b", 235e9, 3, 22e9, false},
                                {"gpt-oss-120b", 116.8e9, 4, 5.1e9, true}};
  for (const auto& c : cases) {
    CAPTURE(c.id);
    const auto m = test::shipped_model(c.id);
    CHECK(m.is_moe());
    const double total = static_cast<double>(m.params_total());
    double active = static_cast<double>(m.params_active());
    if (c.active_without_embedding) active -= static_cast<double>(m.params_embedding());
    CAPTURE(total);
    CAPTURE(active);
    CHECK(rounds_to(total, c.total, c.total_digits));
    // Active counts are printed to two digits and not always rounded (Qwen3-30B-A3B: 3.35B is
    // printed 3.3B), so they get 2%.
    CHECK(active == doctest::Approx(c.active).epsilon(0.02));
  }
}

TEST_CASE("DeepSeek-V3 by hand: MLA and MoE layer counts, and the MTP module's 14B (685B on disk)") {
  const auto m = test::shipped_model("deepseek-v3");
  const std::int64_t h = 7168;
  const std::int64_t mla = h * 1536 + 1536 + 1536 * 128 * 192 + h * 576 + 512 + 512 * 128 * 256 + 128 * 128 * h;
  CHECK(m.attention_params(AttentionKind::kMla) == mla);
  // Router (256 x h and the 256 score-correction biases), 256 experts and 1 shared, 3 h 2048 each.
  const std::int64_t moe = 256 * h + 256 + 257 * 3 * h * 2048;
  CHECK(m.params_of_kind({AttentionKind::kMla, FeedForwardKind::kMoe}) == mla + moe + 2 * h);
  CHECK(m.params_of_kind({AttentionKind::kMla, FeedForwardKind::kDense}) == mla + 3 * h * 18432 + 2 * h);
  for (int l = 0; l < 61; ++l) {
    CAPTURE(l);
    CHECK(m.layer_kind(l).attention == AttentionKind::kMla);
    CHECK(m.layer_kind(l).ffn == (l < 3 ? FeedForwardKind::kDense : FeedForwardKind::kMoe));
  }
  // The MTP module with its own copies of embedding and head, as the checkpoint stores them. The
  // card's "14B" is 685B - 671B; our count of the module is 13.46B, which puts the checkpoint at
  // 684.5B, 0.07% under the card's 685B.
  const double mtp_on_disk = static_cast<double>(m.params_mtp() + 2 * 129280 * h);
  CHECK(mtp_on_disk == doctest::Approx(13.463e9).epsilon(0.001));
  CHECK(static_cast<double>(m.params_total()) + mtp_on_disk == doctest::Approx(685e9).epsilon(0.001));
}

TEST_CASE("Mixtral: every layer MoE with 8 experts of 14336, top-2, and active is the total less 6 experts per layer") {
  const auto m = test::shipped_model("mixtral-8x7b");
  CHECK(m.moe.experts == 8);
  CHECK(m.moe.top_k == 2);
  CHECK(m.moe.expert_ffn == 14336);
  CHECK(m.ffn == 0);
  CHECK(m.params_total() - m.params_active() == std::int64_t{32} * 6 * 3 * 4096 * 14336);
}

TEST_CASE("gpt-oss: sliding window 128 on even layers, full attention on odd ones, sinks and biases counted") {
  const auto m = test::shipped_model("gpt-oss-120b");
  CHECK(m.sliding_window == 128);
  for (int l = 0; l < 36; ++l) {
    CAPTURE(l);
    CHECK(m.layer_kind(l).attention == (l % 2 == 0 ? AttentionKind::kSlidingWindow : AttentionKind::kFull));
  }
  const std::int64_t h = 2880, q = 64 * 64, kv = 8 * 64;
  CHECK(m.attention_params(AttentionKind::kFull) == h * q + q + 2 * (h * kv + kv) + q * h + h + 64);
  CHECK(m.expert_params() == h * 2 * 2880 + 2 * 2880 + 2880 * h + h);
}

TEST_CASE("sliding_window in dense configs is honoured (Mistral: every layer), and off when the config says so") {
  const auto mistral = parse(R"({"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 4,
      "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
      "hidden_act": "silu", "sliding_window": 4096})");
  CHECK(mistral.sliding_window == 4096);
  for (int l = 0; l < 4; ++l) CHECK(mistral.layer_kind(l).attention == AttentionKind::kSlidingWindow);
  const auto qwen = parse(R"({"model_type": "qwen2", "hidden_size": 1024, "num_hidden_layers": 4,
      "num_attention_heads": 16, "num_key_value_heads": 2, "intermediate_size": 4096, "vocab_size": 32000,
      "hidden_act": "silu", "sliding_window": 131072, "use_sliding_window": false, "max_window_layers": 2})");
  CHECK(qwen.sliding_window == 0);
  CHECK(qwen.kinds.empty());
  const auto qwen_on = parse(R"({"model_type": "qwen2", "hidden_size": 1024, "num_hidden_layers": 4,
      "num_attention_heads": 16, "num_key_value_heads": 2, "intermediate_size": 4096, "vocab_size": 32000,
      "hidden_act": "silu", "sliding_window": 512, "use_sliding_window": true, "max_window_layers": 2})");
  CHECK(qwen_on.layer_kind(1).attention == AttentionKind::kFull);
  CHECK(qwen_on.layer_kind(2).attention == AttentionKind::kSlidingWindow);
}

TEST_CASE("MoE config errors name the field") {
  CHECK_THROWS_WITH_AS(parse(R"({"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "hidden_act": "silu",
      "num_local_experts": 8, "num_experts_per_tok": 9})"),
                       "m.json: /num_experts_per_tok: expected an integer from 1 to 8; got 9", InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"model_type": "gpt_oss", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "hidden_act": "silu",
      "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": 16, "layer_types": ["full_attention"]})"),
                       "m.json: /layer_types: expected an array of 2 entries, \"full_attention\" or "
                       "\"sliding_attention\"",
                       InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"model_type": "deepseek_v3", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "vocab_size": 100, "hidden_act": "silu", "moe_intermediate_size": 32,
      "n_routed_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 1})"),
                       "m.json: /intermediate_size: expected the dense layers' MLP width", InputError);
}
