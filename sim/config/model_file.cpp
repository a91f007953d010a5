#include "sim/config/model_file.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"

namespace cs::config {

using models::Activation;
using models::ModelArch;
using models::NormKind;

namespace {

// Keys Hugging Face configs carry that change neither FLOPs, bytes nor parameter counts.
constexpr std::array<std::string_view, 41> kIgnoredKeys{"architectures",
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

// Keys of MoE and MLA configs that change neither FLOPs, bytes nor parameter counts: loss
// coefficients, routing score functions and scales, rope and quantisation details, the checkpoint's
// own parallel layout. (`quantization_config` says how the checkpoint is stored; the run's weight
// format is chosen by the run.)
constexpr std::array<std::string_view, 20> kIgnoredMoeKeys{
    "router_aux_loss_coef", "aux_loss_alpha",       "seq_aux",
    "norm_topk_prob",       "output_router_logits", "routed_scaling_factor",
    "scoring_func",         "topk_method",          "ep_size",
    "quantization_config",  "swiglu_limit",         "initial_context_length",
    "rope_interleave",      "router_jitter_noise",  "moe_layer_freq_offset",
    "head_dim_v",           "rope_parameters",      "num_experts_per_tok_list",
    "kv_lora_dim",          "qk_head_dim"};

/// The integer at `key`, where a config may write null for "not used": `fallback` then.
std::int64_t opt_int_or_null(Reader& r, const std::string& key, std::int64_t min, std::int64_t max,
                             std::int64_t fallback) {
  const auto* v = r.raw(key);
  if (!v || v->is_null()) return fallback;
  return r.req_int(key, min, max);
}

/// The mixture-of-experts fields, under each family's names (DeepSeek `n_routed_experts`, Mixtral
/// and gpt-oss `num_local_experts`, Qwen `num_experts`); false when the config has none.
bool read_moe(Reader& r, ModelArch& m) {
  const char* experts_key = r.has("n_routed_experts")    ? "n_routed_experts"
                            : r.has("num_local_experts") ? "num_local_experts"
                            : r.has("num_experts")       ? "num_experts"
                                                         : nullptr;
  if (!experts_key) return false;
  m.moe.experts = r.req_int(experts_key, 1, 1 << 16);
  const char* topk_key =
      r.has("experts_per_token") && !r.has("num_experts_per_tok") ? "experts_per_token" : "num_experts_per_tok";
  m.moe.top_k = r.req_int(topk_key, 1, m.moe.experts);
  if (r.has("experts_per_token") && r.has("num_experts_per_tok") &&
      r.req_int("experts_per_token", 1, m.moe.experts) != m.moe.top_k)
    r.fail_at("experts_per_token", "expected the same value as num_experts_per_tok");
  // Mixtral and gpt-oss size their experts by intermediate_size; DeepSeek and Qwen by
  // moe_intermediate_size, keeping intermediate_size for their dense layers.
  if (r.has("moe_intermediate_size")) {
    m.moe.expert_ffn = r.req_int("moe_intermediate_size", 1, 1 << 24);
  } else {
    m.moe.expert_ffn = m.ffn;
    m.ffn = 0;
  }
  const std::int64_t shared = r.opt_int("n_shared_experts", 0, 1 << 10, 0);
  m.moe.shared_experts = shared;
  m.moe.shared_ffn = shared * m.moe.expert_ffn;
  if (r.has("shared_expert_intermediate_size")) {  // Qwen2-MoE: one gated shared expert
    m.moe.shared_ffn = r.req_int("shared_expert_intermediate_size", 0, 1 << 24);
    m.moe.shared_experts = m.moe.shared_ffn > 0 ? 1 : 0;
    m.moe.shared_gate = m.moe.shared_ffn > 0;
  }
  m.moe.groups = opt_int_or_null(r, "n_group", 1, m.moe.experts, 1);
  m.moe.topk_groups = opt_int_or_null(r, "topk_group", 1, m.moe.groups, m.moe.groups);
  if (m.moe.experts % m.moe.groups != 0) r.fail_at("n_group", "expected a divisor of the routed experts");
  // gpt-oss routers have biases; DeepSeek-V3's aux-loss-free balancing (topk_method noaux_tc) keeps a
  // score-correction bias per expert.
  const auto* method = r.raw("topk_method");
  m.moe.router_bias = m.model_type == "gpt_oss" ||
                      (method && method->is_string() && method->get_ref<const std::string&>() == "noaux_tc");
  m.moe.expert_bias = m.model_type == "gpt_oss";
  return true;
}

/// Which layers are MoE layers, under each family's rule.
std::vector<bool> moe_layers(Reader& r, const ModelArch& m) {
  std::vector<bool> out(static_cast<std::size_t>(m.layers), true);
  const std::int64_t first_dense = r.opt_int("first_k_dense_replace", 0, m.layers, 0);
  const std::int64_t freq = r.opt_int("moe_layer_freq", 1, m.layers, 1);       // DeepSeek: every freq-th layer
  const std::int64_t step = r.opt_int("decoder_sparse_step", 1, m.layers, 1);  // Qwen: layers (l + 1) % step == 0
  std::vector<std::int64_t> dense_only;
  if (const auto* v = r.raw("mlp_only_layers"); v && !v->is_null()) {
    if (!v->is_array()) r.fail_at("mlp_only_layers", "expected an array of layer indices");
    for (std::size_t i = 0; v->is_array() && i < v->size(); ++i) {
      const auto& e = (*v)[i];
      if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= m.layers) {
        r.fail_at("mlp_only_layers", "expected layer indices from 0 to " + std::to_string(m.layers - 1));
        break;
      }
      dense_only.push_back(e.get<std::int64_t>());
    }
  }
  for (std::int64_t l = 0; l < m.layers; ++l) {
    bool moe = l >= first_dense && l % freq == 0 && (l + 1) % step == 0;
    for (auto d : dense_only) moe = moe && d != l;
    out[static_cast<std::size_t>(l)] = moe;
  }
  return out;
}

/// Which layers attend in a sliding window: an explicit `layer_types` list (gpt-oss, newer HF
/// configs), or Qwen2's `use_sliding_window` from `max_window_layers` on, or Mistral's
/// `sliding_window` on every layer. Empty: none.
std::vector<bool> sliding_layers(Reader& r, ModelArch& m) {
  std::vector<bool> out;
  m.sliding_window = opt_int_or_null(r, "sliding_window", 1, std::int64_t{1} << 40, 0);
  const bool use = r.opt_bool("use_sliding_window", m.sliding_window > 0);
  const std::int64_t from = r.opt_int("max_window_layers", 0, 1 << 20, 0);
  if (const auto* v = r.raw("layer_types"); v && !v->is_null()) {
    if (!v->is_array() || static_cast<std::int64_t>(v->size()) != m.layers) {
      r.fail_at("layer_types", "expected an array of " + std::to_string(m.layers) +
                                   " entries, \"full_attention\" or \"sliding_attention\"");
      return {};
    }
    for (const auto& e : *v) {
      const std::string_view type = e.is_string() ? std::string_view(e.get_ref<const std::string&>()) : "";
      if (type != "full_attention" && type != "sliding_attention") {
        r.fail_at("layer_types", "expected \"full_attention\" or \"sliding_attention\" entries");
        return {};
      }
      out.push_back(type == "sliding_attention");
    }
  } else if (use && m.sliding_window > 0) {
    out.assign(static_cast<std::size_t>(m.layers), true);
    // Qwen2 (HF Qwen2Attention): layers from max_window_layers on use the window.
    if (r.has("max_window_layers"))
      for (std::int64_t l = 0; l < std::min(from, m.layers); ++l) out[static_cast<std::size_t>(l)] = false;
  }
  bool any = false;
  for (bool b : out) any = any || b;
  if (any && m.sliding_window == 0) r.fail_at("sliding_window", "expected the window of the sliding-attention layers");
  if (!any) m.sliding_window = 0;
  return any ? out : std::vector<bool>{};
}

/// DeepSeek's multi-head latent attention, when the config has `kv_lora_rank`.
bool read_mla(Reader& r, ModelArch& m) {
  if (!r.has("kv_lora_rank")) return false;
  m.mla.kv_lora_rank = r.req_int("kv_lora_rank", 1, 1 << 20);
  m.mla.q_lora_rank = opt_int_or_null(r, "q_lora_rank", 1, 1 << 20, 0);
  m.mla.qk_nope_dim = r.req_int("qk_nope_head_dim", 1, 1 << 16);
  m.mla.qk_rope_dim = r.req_int("qk_rope_head_dim", 1, 1 << 16);
  m.mla.v_dim = r.req_int("v_head_dim", 1, 1 << 16);
  m.head_dim = m.mla.qk_nope_dim + m.mla.qk_rope_dim;
  return true;
}

/// The kind of every layer from the MoE, MLA and sliding-window rules (empty when all are dense,
/// full-attention layers, as ModelArch reads an empty list).
std::vector<models::LayerKind> layer_kinds(const ModelArch& m, const std::vector<bool>& moe,
                                           const std::vector<bool>& sliding) {
  std::vector<models::LayerKind> out;
  bool uniform = true;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const auto i = static_cast<std::size_t>(l);
    models::LayerKind k;
    if (m.mla.kv_lora_rank > 0) k.attention = models::AttentionKind::kMla;
    if (!sliding.empty() && sliding[i]) k.attention = models::AttentionKind::kSlidingWindow;
    if (!moe.empty() && moe[i]) k.ffn = models::FeedForwardKind::kMoe;
    uniform = uniform && k == models::LayerKind{};
    out.push_back(k);
  }
  return uniform ? std::vector<models::LayerKind>{} : out;
}

}  // namespace

ModelArch parse_model(const config::JsonDoc& doc, const std::string& id) {
  config::Problems problems;
  auto r = config::Reader::root(doc, problems);
  problems.throw_if_any();
  for (auto key : kIgnoredKeys) (void)r.raw(std::string(key));
  for (auto key : kIgnoredMoeKeys) (void)r.raw(std::string(key));

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
    const bool moe_config = r.has("n_routed_experts") || r.has("num_local_experts") || r.has("num_experts");
    m.ffn = moe_config ? r.opt_int("intermediate_size", 1, 1 << 24, 0) : r.req_int("intermediate_size", 1, 1 << 24);
    m.vocab = r.req_int("vocab_size", 1, 1 << 24);
    m.max_positions = r.opt_int("max_position_embeddings", 1, 1 << 26, 0);
    m.tied_embeddings = r.opt_bool("tie_word_embeddings", false);
    const auto act = r.req_enum("hidden_act", {"silu", "swiglu", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu"});
    m.activation = (act == "silu" || act == "swiglu") ? Activation::kSwiGlu : Activation::kGelu;
    m.norm = NormKind::kRms;
    // Qwen2 configs do not write `attention_bias`; the architecture always has Q/K/V biases.
    m.qkv_bias = r.opt_bool("attention_bias", m.model_type == "qwen2" || m.model_type == "qwen2_moe");
    // Llama-style attention_bias covers the output projection too; Qwen2's biases are on Q, K, V only.
    m.o_bias = m.qkv_bias && m.model_type != "qwen2" && m.model_type != "qwen2_moe";
    m.qk_norm = m.model_type == "qwen3" || m.model_type == "qwen3_moe";
    m.attention_sinks = m.model_type == "gpt_oss";
    m.mtp_layers = r.opt_int("num_nextn_predict_layers", 0, 16, 0);
    m.hidden_dropout = r.opt_number("hidden_dropout", 0.0, 1.0, 0.0) > 0.0;
    m.attention_dropout = r.opt_number("attention_dropout", 0.0, 1.0, 0.0) > 0.0;
    if (r.has("head_dim")) m.head_dim = r.req_int("head_dim", 1, 1 << 16);
    read_mla(r, m);
    const bool moe = read_moe(r, m);
    const auto sliding = sliding_layers(r, m);
    const auto moe_at = moe ? moe_layers(r, m) : std::vector<bool>{};
    m.kinds = layer_kinds(m, moe_at, sliding);
    bool any_dense = false;
    for (std::int64_t l = 0; l < m.layers; ++l)
      any_dense = any_dense || m.layer_kind(l).ffn == models::FeedForwardKind::kDense;
    if (any_dense && m.ffn == 0) r.fail_at("intermediate_size", "expected the dense layers' MLP width");
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
