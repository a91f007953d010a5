#include "sim/config/model_file.hpp"

#include <array>
#include <string_view>

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"

namespace cs::config {

using models::Activation;
using models::ModelArch;
using models::NormKind;

namespace {

// Keys Hugging Face configs carry that change neither FLOPs, bytes nor parameter counts.
constexpr std::array<std::string_view, 44> kIgnoredKeys{"architectures",
                                                        "bos_token_id",
                                                        "eos_token_id",
                                                        "pad_token_id",
                                                        "torch_dtype",
                                                        "transformers_version",
                                                        "use_cache",
                                                        "rope_theta",
                                                        "rope_scaling",
                                                        "rms_norm_eps",
                                                        "layer_norm_epsilon",
                                                        "layer_norm_eps",
                                                        "initializer_range",
                                                        "pretraining_tp",
                                                        "mlp_bias",
                                                        "auto_map",
                                                        "sliding_window",
                                                        "use_sliding_window",
                                                        "max_window_layers",
                                                        "model_name",
                                                        "name",
                                                        "description",
                                                        "source",
                                                        "_name_or_path",
                                                        "embd_pdrop",
                                                        "summary_type",
                                                        "summary_use_proj",
                                                        "summary_activation",
                                                        "summary_proj_to_labels",
                                                        "summary_first_dropout",
                                                        "scale_attn_weights",
                                                        "n_ctx",
                                                        "task_specific_params",
                                                        "use_return_dict",
                                                        "gradient_checkpointing",
                                                        "bias",
                                                        "scale_attn_by_inverse_layer_idx",
                                                        "reorder_and_upcast_attn",
                                                        "rotary_dim",
                                                        "rotary_pct",
                                                        "use_parallel_residual",
                                                        "tokenizer_class",
                                                        "dtype",
                                                        "qk_layernorm"};

constexpr std::array<std::string_view, 12> kMoeKeys{"num_local_experts",
                                                    "num_experts",
                                                    "n_routed_experts",
                                                    "num_experts_per_tok",
                                                    "moe_intermediate_size",
                                                    "n_shared_experts",
                                                    "first_k_dense_replace",
                                                    "kv_lora_rank",
                                                    "q_lora_rank",
                                                    "router_aux_loss_coef",
                                                    "shared_expert_intermediate_size",
                                                    "moe_layer_freq"};

}  // namespace

ModelArch parse_model(const config::JsonDoc& doc, const std::string& id) {
  config::Problems problems;
  auto r = config::Reader::root(doc, problems);
  problems.throw_if_any();
  for (auto key : kMoeKeys) {
    if (r.has(std::string(key))) {
      throw InputError(doc.path, "/" + std::string(key),
                       "MoE models are not supported yet (this config has mixture-of-experts or MLA fields)");
    }
  }
  for (auto key : kIgnoredKeys) (void)r.raw(std::string(key));

  ModelArch m;
  m.id = id;
  m.model_type = r.req_string("model_type");
  const bool gpt_style = r.has("n_embd") || r.has("n_layer");
  if (gpt_style) {
    m.hidden = r.req_int("n_embd", 1, 1 << 20);
    m.layers = r.req_int("n_layer", 1, 100000);
    m.heads = r.req_int("n_head", 1, 1 << 16);
    m.kv_heads = m.heads;
    const auto* inner = r.raw("n_inner");
    if (inner && !inner->is_null()) {
      if (!inner->is_number_integer() || inner->get<std::int64_t>() <= 0) {
        r.fail_at("n_inner", "expected a positive integer or null (null means 4 x n_embd)");
      } else {
        m.ffn = inner->get<std::int64_t>();
      }
    } else {
      m.ffn = 4 * m.hidden;
    }
    m.vocab = r.req_int("vocab_size", 1, 1 << 24);
    m.max_positions = r.req_int("n_positions", 1, 1 << 24);
    m.tied_embeddings = r.opt_bool("tie_word_embeddings", true);
    const auto act =
        r.opt_enum("activation_function", {"gelu_new", "gelu", "gelu_fast", "gelu_pytorch_tanh"}, "gelu_new");
    (void)act;
    m.activation = Activation::kGelu;
    m.norm = NormKind::kLayer;
    m.learned_positions = true;
    m.linear_bias = true;
    m.hidden_dropout = r.opt_number("resid_pdrop", 0.0, 1.0, 0.1) > 0.0;
    m.attention_dropout = r.opt_number("attn_pdrop", 0.0, 1.0, 0.1) > 0.0;  // GPT2Config's default
  } else {
    m.hidden = r.req_int("hidden_size", 1, 1 << 20);
    m.layers = r.req_int("num_hidden_layers", 1, 100000);
    m.heads = r.req_int("num_attention_heads", 1, 1 << 16);
    m.kv_heads = r.opt_int("num_key_value_heads", 1, 1 << 16, m.heads);
    m.ffn = r.req_int("intermediate_size", 1, 1 << 24);
    m.vocab = r.req_int("vocab_size", 1, 1 << 24);
    m.max_positions = r.opt_int("max_position_embeddings", 1, 1 << 26, 0);
    m.tied_embeddings = r.opt_bool("tie_word_embeddings", false);
    const auto act = r.req_enum("hidden_act", {"silu", "swiglu", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu"});
    m.activation = (act == "silu" || act == "swiglu") ? Activation::kSwiGlu : Activation::kGelu;
    m.norm = NormKind::kRms;
    // Qwen2 configs do not write `attention_bias`; the architecture always has Q/K/V biases.
    m.qkv_bias = r.opt_bool("attention_bias", m.model_type == "qwen2");
    m.hidden_dropout = r.opt_number("hidden_dropout", 0.0, 1.0, 0.0) > 0.0;
    m.attention_dropout = r.opt_number("attention_dropout", 0.0, 1.0, 0.0) > 0.0;
    if (r.has("head_dim")) m.head_dim = r.req_int("head_dim", 1, 1 << 16);
  }
  r.finish();
  problems.throw_if_any();
  if (m.head_dim == 0) {
    if (m.hidden % m.heads != 0) {
      throw InputError(
          doc.path, gpt_style ? "/n_head" : "/num_attention_heads",
          "hidden size " + std::to_string(m.hidden) + " is not divisible by " + std::to_string(m.heads) + " heads");
    }
    m.head_dim = m.hidden / m.heads;
  }
  if (m.heads % m.kv_heads != 0) {
    throw InputError(doc.path, "/num_key_value_heads",
                     "expected a divisor of num_attention_heads (" + std::to_string(m.heads) + "); got " +
                         std::to_string(m.kv_heads));
  }
  return m;
}

}  // namespace cs::config
