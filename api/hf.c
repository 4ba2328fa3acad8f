/* api/hf.c -- HuggingFace config.json -> our model IR (docs/model-ir.md).
 *
 * The file is taken verbatim: unknown keys are ignored, a multimodal wrapper's
 * "text_config" object is read in place of the top level (keys it lacks, e.g.
 * tie_word_embeddings or vocab_size, fall back to the top level). Every field
 * that we read is validated; a bad one is a 422 whose JSON pointer names it.
 *
 * Layer rules follow the modelling code of each family (transformers
 * models/<family>/modeling_<family>.py unless noted; docs/model-ir.md
 * "HuggingFace config.json"):
 *
 *   llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2:
 *     softmax attention (MHA/GQA/MQA). head_dim = config.head_dim when given
 *     (Qwen3: 128 with hidden 2048 and 32 heads), else hidden/heads.
 *     num_key_value_heads absent or null => = num_attention_heads.
 *   deepseek_v2, deepseek_v3: MLA (q_lora_rank null => no q low-rank path,
 *     DeepSeek-V2-Lite). config.head_dim is the RoPE dim there (transformers
 *     sets head_dim = qk_rope_head_dim) and is ignored.
 *   gla: flash-linear-attention GLAConfig / GatedLinearAttention
 *     (fla/models/gla/configuration_gla.py, fla/layers/gla.py), with optional
 *     softmax-attention layers listed in config.attn.layers.
 *   phi3: Phi3Attention (fused qkv_proj and o_proj without biases, head_dim =
 *     hidden / heads, partial_rotary_factor), sliding_window on every layer
 *     (null = none), Phi3MLP (fused gate_up_proj: a gated MLP).
 *   gpt_oss: GptOssAttention (q/k/v/o biases = attention_bias, a learned
 *     sink logit per head), layer_types sliding / full (default: even layers
 *     slide), GptOssMLP (router with bias, num_local_experts experts with
 *     biases, top num_experts_per_tok) on every layer.
 *   llama4 / llama4_text (configuration_llama4.py Llama4TextConfig,
 *     modeling_llama4.py): no_rope_layers[i] = 1 uses RoPE and chunked
 *     attention (attention_chunk_size), 0 is a NoPE layer with full
 *     attention (default: NoPE every no_rope_layer_interval = 4th layer);
 *     the L2 qk norm on the RoPE layers (use_qk_norm); MoE on moe_layers
 *     (default every interleave_moe_layer_step-th layer, from step - 1):
 *     num_local_experts of intermediate_size + one shared expert of the same
 *     width; other layers a dense MLP of intermediate_size_mlp.
 *   qwen3_next (modular_qwen3_next.py): layer_types linear_attention /
 *     full_attention (default: full every full_attention_interval = 4th);
 *     linear layers Gated DeltaNet (Qwen3NextGatedDeltaNet), full layers
 *     gated attention (q_proj doubled, sigmoid output gate, q/k RMSNorm,
 *     partial_rotary_factor 0.25); the Qwen2-MoE MoE rule with one shared
 *     expert and its sigmoid gate.
 *
 * What an importer cannot express in the IR is said in the IR's
 * "approximations" (docs/model-ir.md), never dropped silently.
 *
 * Consecutive identical layers are merged into one run {count, attention, mlp}
 * (DeepSeek-V3: 3 dense + 58 MoE = 2 runs).
 */
#include "api.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HF_SUPPORTED                                                                  \
    "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v2, "      \
    "deepseek_v3, gla, gemma, gemma2, phi3, gpt_oss, llama4, qwen3_next"

/* fla GatedLinearAttention constants not present in config.json. */
#define GLA_GATE_LOW_RANK_DIM 16 /* fla/layers/gla.py gate_low_rank_dim */
#define GLA_CHUNK_SIZE 64        /* fla/ops/gla chunk kernels: BT = 64 */

/* ---- reading fields ----------------------------------------------------- */

typedef struct hf_ctx {
    json_t *cfg;        /* the object read: text_config when nested, else hf */
    json_t *top;        /* the hf_config object itself */
    char cfg_ptr[208];  /* pointer of cfg */
    char top_ptr[208];  /* pointer of top */
    api_status *st;
    int failed;         /* errors recorded by this conversion */
    json_t *approx;     /* what the IR approximates (strings), or NULL */
} hf_ctx;

/* Say what the import approximates (docs/model-ir.md "approximations"). */
static void hf_approx(hf_ctx *c, const char *text)
{
    if (!c->approx) c->approx = json_array();
    json_array_append_new(c->approx, json_string(text));
}

/* Look `key` up in cfg, then (nested configs) at the top level. A JSON null
 * counts as absent (config.json writes null for "not set"). Sets *ptr_out to
 * the pointer of the field where it was found, or where it should be. */
static json_t *hf_lookup(hf_ctx *c, const char *key, char *ptr_out, size_t n)
{
    json_t *v = json_object_get(c->cfg, key);
    if (v && !json_is_null(v)) {
        snprintf(ptr_out, n, "%.200s/%.50s", c->cfg_ptr, key);
        return v;
    }
    if (c->top != c->cfg) {
        json_t *t = json_object_get(c->top, key);
        if (t && !json_is_null(t)) {
            snprintf(ptr_out, n, "%.200s/%.50s", c->top_ptr, key);
            return t;
        }
    }
    snprintf(ptr_out, n, "%.200s/%.50s", c->cfg_ptr, key);
    return NULL;
}

static void hf_fail(hf_ctx *c, const char *ptr, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void hf_fail(hf_ctx *c, const char *ptr, const char *fmt, ...)
{
    char detail[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    api_fail(c->st, 422, ptr, "%s", detail);
    c->failed++;
}

/* layer_types (HF's per-layer list): each entry "full_attention" or
 * `other`, whose layers get flag[i] = 1. 1: read; 0: absent; -1: invalid
 * (reported at its pointer). */
static int hf_layer_kinds(hf_ctx *c, long long n, const char *other, unsigned char *flag)
{
    char ptr[256];
    json_t *lt = hf_lookup(c, "layer_types", ptr, sizeof ptr);
    if (!lt) return 0;
    if (!json_is_array(lt) || (long long)json_array_size(lt) != n) {
        hf_fail(c, ptr, "layer_types must be an array with num_hidden_layers (%lld) entries", n);
        return -1;
    }
    for (long long i = 0; i < n; i++) {
        const char *t = json_string_value(json_array_get(lt, (size_t)i));
        if (t && !strcmp(t, other)) flag[i] = 1;
        else if (!t || strcmp(t, "full_attention")) {
            char q[300];
            snprintf(q, sizeof q, "%s/%lld", ptr, i);
            hf_fail(c, q, "layer_types entries must be \"full_attention\" or \"%s\"", other);
            return -1;
        }
    }
    return 1;
}

/* A JSON integer, or a real with an integral value (4096.0). 0 on success. */
static int hf_as_int(json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = (long long)json_integer_value(v);
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d) || d != floor(d) || fabs(d) > 9.0e15) return -1;
        *out = (long long)d;
        return 0;
    }
    return -1;
}

/* Read an integer field in [lo, hi]. `required`: absent is an error; else
 * *out = dflt. Returns 1 when present and valid, 0 when absent (default
 * used), -1 on error (recorded). */
static int hf_int(hf_ctx *c, const char *key, int required, long long dflt,
                  long long lo, long long hi, long long *out)
{
    char ptr[256];
    json_t *v = hf_lookup(c, key, ptr, sizeof ptr);
    *out = dflt;
    if (!v) {
        if (required) {
            hf_fail(c, ptr, "%s is required", key);
            return -1;
        }
        return 0;
    }
    long long x;
    if (hf_as_int(v, &x) != 0) {
        hf_fail(c, ptr, "%s must be an integer", key);
        return -1;
    }
    if (x < lo || x > hi) {
        hf_fail(c, ptr, "%s must be in [%lld, %lld]", key, lo, hi);
        return -1;
    }
    *out = x;
    return 1;
}

/* A positive finite number (expand_k, hidden_ratio). */
static int hf_num(hf_ctx *c, const char *key, double dflt, double hi, double *out)
{
    char ptr[256];
    json_t *v = hf_lookup(c, key, ptr, sizeof ptr);
    *out = dflt;
    if (!v) return 0;
    if (!json_is_number(v)) {
        hf_fail(c, ptr, "%s must be a number", key);
        return -1;
    }
    double d = json_number_value(v);
    if (!isfinite(d) || d <= 0.0 || d > hi) {
        hf_fail(c, ptr, "%s must be a positive number (at most %lld)", key, (long long)hi);
        return -1;
    }
    *out = d;
    return 1;
}

static int hf_bool(hf_ctx *c, const char *key, int dflt, int *out)
{
    char ptr[256];
    json_t *v = hf_lookup(c, key, ptr, sizeof ptr);
    *out = dflt;
    if (!v) return 0;
    if (!json_is_boolean(v)) {
        hf_fail(c, ptr, "%s must be true or false", key);
        return -1;
    }
    *out = json_is_true(v);
    return 1;
}

/* hidden_act / hidden_activation -> our activation (gated MLPs only). */
static const char *hf_activation(hf_ctx *c, const char *key, const char *dflt)
{
    char ptr[256];
    json_t *v = hf_lookup(c, key, ptr, sizeof ptr);
    const char *s = v ? json_string_value(v) : dflt;
    if (!s) {
        hf_fail(c, ptr, "%s must be a string", key);
        return "silu";
    }
    if (!strcmp(s, "silu") || !strcmp(s, "swish")) return "silu";
    if (!strncmp(s, "gelu", 4)) return "gelu"; /* gelu, gelu_new, gelu_pytorch_tanh, ... */
    if (!strcmp(s, "relu")) return "relu";
    hf_fail(c, ptr, "%s: unsupported activation (supported: silu, swish, gelu*, relu)", key);
    return "silu";
}

/* ---- one layer, then runs ----------------------------------------------- */

enum { L_MHA = 0, L_MLA, L_GLA, L_GDN };
enum { L_DENSE = 0, L_MOE };

/* All int64 so that two specs compare with memcmp (no padding). */
enum { QKN_NONE = 0, QKN_RMS, QKN_L2 };

typedef struct layer_spec {
    int64_t attn_kind, n_heads, n_kv_heads, head_dim, window, qkv_bias;
    int64_t chunk, rotary_dim, nope, sinks, out_bias, qk_norm; /* mha (rotary_dim 0: all) */
    int64_t q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    int64_t key_dim, value_dim, gate_rank, chunk_size, output_gate, conv_size;
    int64_t mlp_kind, ffn_dim, n_experts, top_k, expert_ffn_dim;
    int64_t n_shared_experts, shared_ffn_dim, route_nodes, moe_bias, shared_gate;
} layer_spec;

static const char *const QKN_NAMES[] = {"none", "rmsnorm", "l2"};

static json_t *attn_json(const layer_spec *l)
{
    json_t *a = json_object();
    switch (l->attn_kind) {
    case L_MHA:
        json_object_set_new(a, "type", json_string("mha"));
        json_object_set_new(a, "n_heads", json_integer(l->n_heads));
        json_object_set_new(a, "n_kv_heads", json_integer(l->n_kv_heads));
        json_object_set_new(a, "head_dim", json_integer(l->head_dim));
        json_object_set_new(a, "window", json_integer(l->window));
        json_object_set_new(a, "qkv_bias", json_boolean(l->qkv_bias));
        json_object_set_new(a, "chunk", json_integer(l->chunk));
        if (l->rotary_dim > 0) json_object_set_new(a, "rotary_dim", json_integer(l->rotary_dim));
        json_object_set_new(a, "nope", json_boolean(l->nope));
        json_object_set_new(a, "sinks", json_boolean(l->sinks));
        json_object_set_new(a, "out_bias", json_boolean(l->out_bias));
        json_object_set_new(a, "output_gate", json_boolean(l->output_gate));
        json_object_set_new(a, "qk_norm", json_string(QKN_NAMES[l->qk_norm]));
        break;
    case L_GDN:
        json_object_set_new(a, "type", json_string("gdn"));
        json_object_set_new(a, "n_heads", json_integer(l->n_heads));
        json_object_set_new(a, "n_kv_heads", json_integer(l->n_kv_heads));
        json_object_set_new(a, "key_dim", json_integer(l->key_dim));
        json_object_set_new(a, "value_dim", json_integer(l->value_dim));
        json_object_set_new(a, "conv_size", json_integer(l->conv_size));
        json_object_set_new(a, "chunk_size", json_integer(l->chunk_size));
        json_object_set_new(a, "output_gate", json_boolean(l->output_gate));
        break;
    case L_MLA:
        json_object_set_new(a, "type", json_string("mla"));
        json_object_set_new(a, "n_heads", json_integer(l->n_heads));
        json_object_set_new(a, "q_lora_rank", json_integer(l->q_lora_rank));
        json_object_set_new(a, "kv_lora_rank", json_integer(l->kv_lora_rank));
        json_object_set_new(a, "qk_nope_head_dim", json_integer(l->qk_nope_head_dim));
        json_object_set_new(a, "qk_rope_head_dim", json_integer(l->qk_rope_head_dim));
        json_object_set_new(a, "v_head_dim", json_integer(l->v_head_dim));
        break;
    default:
        json_object_set_new(a, "type", json_string("gla"));
        json_object_set_new(a, "n_heads", json_integer(l->n_heads));
        json_object_set_new(a, "n_kv_heads", json_integer(l->n_kv_heads));
        json_object_set_new(a, "key_dim", json_integer(l->key_dim));
        json_object_set_new(a, "value_dim", json_integer(l->value_dim));
        json_object_set_new(a, "gate_rank", json_integer(l->gate_rank));
        json_object_set_new(a, "chunk_size", json_integer(l->chunk_size));
        json_object_set_new(a, "output_gate", json_boolean(l->output_gate));
        break;
    }
    return a;
}

static json_t *mlp_json(const layer_spec *l, const char *act)
{
    json_t *m = json_object();
    if (l->mlp_kind == L_DENSE) {
        json_object_set_new(m, "type", json_string("dense"));
        json_object_set_new(m, "ffn_dim", json_integer(l->ffn_dim));
    } else {
        json_object_set_new(m, "type", json_string("moe"));
        json_object_set_new(m, "n_experts", json_integer(l->n_experts));
        json_object_set_new(m, "top_k", json_integer(l->top_k));
        json_object_set_new(m, "expert_ffn_dim", json_integer(l->expert_ffn_dim));
        json_object_set_new(m, "n_shared_experts", json_integer(l->n_shared_experts));
        json_object_set_new(m, "shared_ffn_dim", json_integer(l->shared_ffn_dim));
        json_object_set_new(m, "capacity_factor", json_real(1.0));
        json_object_set_new(m, "route_nodes", json_integer(l->route_nodes));
        json_object_set_new(m, "bias", json_boolean(l->moe_bias));
        json_object_set_new(m, "shared_gate", json_boolean(l->shared_gate));
    }
    /* Every supported family uses a gated MLP (SwiGLU / GeGLU). */
    json_object_set_new(m, "gated", json_true());
    json_object_set_new(m, "activation", json_string(act));
    return m;
}

/* Merge consecutive identical layers into runs. NULL (error recorded) when
 * the pattern has more runs than the core holds. */
static json_t *layers_json(hf_ctx *c, const layer_spec *ls, long long n, const char *act)
{
    json_t *runs = json_array();
    long long i = 0;
    while (i < n) {
        long long j = i + 1;
        while (j < n && memcmp(&ls[j], &ls[i], sizeof *ls) == 0) j++;
        if (json_array_size(runs) >= MFU_MAX_RUNS) {
            char ptr[256];
            hf_lookup(c, "num_hidden_layers", ptr, sizeof ptr);
            hf_fail(c, ptr, "%s: the layer pattern has more than %lld runs of identical layers",
                    "num_hidden_layers", (long long)MFU_MAX_RUNS);
            json_decref(runs);
            return NULL;
        }
        json_t *run = json_object();
        json_object_set_new(run, "count", json_integer(j - i));
        json_object_set_new(run, "attention", attn_json(&ls[i]));
        json_object_set_new(run, "mlp", mlp_json(&ls[i], act));
        json_array_append_new(runs, run);
        i = j;
    }
    return runs;
}

/* ---- per-layer attention windows (softmax families) --------------------- */

/* config.layer_types (transformers >= 4.53): "sliding_attention" /
 * "full_attention" per layer. Returns 1 if present and valid (is_sliding
 * filled), 0 if absent, -1 on error. */
static int hf_layer_types(hf_ctx *c, long long n_layers, unsigned char *is_sliding)
{
    char ptr[256];
    json_t *lt = hf_lookup(c, "layer_types", ptr, sizeof ptr);
    if (!lt) return 0;
    if (!json_is_array(lt) || (long long)json_array_size(lt) != n_layers) {
        hf_fail(c, ptr, "%s must be an array with num_hidden_layers (%lld) entries",
                "layer_types", n_layers);
        return -1;
    }
    for (long long i = 0; i < n_layers; i++) {
        const char *s = json_string_value(json_array_get(lt, (size_t)i));
        if (s && !strcmp(s, "sliding_attention")) is_sliding[i] = 1;
        else if (s && !strcmp(s, "full_attention")) is_sliding[i] = 0;
        else {
            char p[300];
            snprintf(p, sizeof p, "%s/%lld", ptr, i);
            hf_fail(c, p, "%s entries must be \"full_attention\" or \"sliding_attention\"",
                    "layer_types");
            return -1;
        }
    }
    return 1;
}

/* ---- the families -------------------------------------------------------- */

typedef enum {
    F_LLAMA, F_MISTRAL, F_MIXTRAL, F_QWEN2, F_QWEN2_MOE, F_QWEN3, F_QWEN3_MOE,
    F_DEEPSEEK_V2, F_DEEPSEEK_V3, F_GLA, F_GEMMA, F_GEMMA2, F_PHI3, F_GPT_OSS, F_LLAMA4,
    F_QWEN3_NEXT
} hf_family;

static const struct {
    const char *name;
    hf_family fam;
} hf_families[] = {
    {"llama", F_LLAMA},       {"mistral", F_MISTRAL},         {"mixtral", F_MIXTRAL},
    {"qwen2", F_QWEN2},       {"qwen2_moe", F_QWEN2_MOE},     {"qwen3", F_QWEN3},
    {"qwen3_moe", F_QWEN3_MOE}, {"deepseek_v2", F_DEEPSEEK_V2}, {"deepseek_v3", F_DEEPSEEK_V3},
    {"gla", F_GLA},           {"gemma", F_GEMMA},             {"gemma2", F_GEMMA2},
    {"phi3", F_PHI3},         {"gpt_oss", F_GPT_OSS},         {"llama4", F_LLAMA4},
    {"llama4_text", F_LLAMA4}, {"qwen3_next", F_QWEN3_NEXT},
};

/* Common sizes every family has. */
typedef struct hf_common {
    long long h, n_layers, vocab;
} hf_common;

/* Softmax-attention families: attention of layer i into ls[i]. */
/* Heads, KV heads and head_dim of a softmax-attention layer. */
static int attn_heads(hf_ctx *c, hf_family fam, const hf_common *cm, long long *heads_out, long long *kv_out,
                      long long *hd_out)
{
    long long heads, kv, hd;
    char ptr[256];
    if (hf_int(c, "num_attention_heads", 1, 0, 1, API_MAX_DIM, &heads) < 0) return -1;
    if (hf_int(c, "num_key_value_heads", 0, heads, 1, API_MAX_DIM, &kv) < 0) return -1;
    if (heads % kv != 0) {
        hf_lookup(c, "num_key_value_heads", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s (%lld) must divide num_attention_heads (%lld)",
                "num_key_value_heads", kv, heads);
        return -1;
    }
    /* Config-class defaults when head_dim is absent: Qwen3Config and
     * Qwen3MoeConfig 128, GemmaConfig and Gemma2Config 256; the others
     * (modeling_llama.py: getattr(config, "head_dim", hidden // heads))
     * hidden / heads. */
    long long hd_default = 0;
    if (fam == F_QWEN3 || fam == F_QWEN3_MOE) hd_default = 128;
    if (fam == F_GEMMA || fam == F_GEMMA2) hd_default = 256;
    /* GptOssConfig head_dim 64, Llama4TextConfig 128, Qwen3NextConfig 256 */
    if (fam == F_GPT_OSS) hd_default = 64;
    if (fam == F_LLAMA4) hd_default = 128;
    if (fam == F_QWEN3_NEXT) hd_default = 256;
    int r = hf_int(c, "head_dim", 0, hd_default, 1, API_MAX_DIM, &hd);
    if (r < 0) return -1;
    if (r == 0 && hd_default == 0) {
        if (cm->h % heads != 0) {
            hf_lookup(c, "num_attention_heads", ptr, sizeof ptr);
            hf_fail(c, ptr, "%s (%lld) must divide hidden_size (%lld) when head_dim is absent",
                    "num_attention_heads", heads, cm->h);
            return -1;
        }
        hd = cm->h / heads;
    }
    if (heads * hd > API_MAX_DIM) {
        hf_lookup(c, "head_dim", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s x num_attention_heads = %lld exceeds %lld", "head_dim", heads * hd,
                (long long)API_MAX_DIM);
        return -1;
    }
    *heads_out = heads;
    *kv_out = kv;
    *hd_out = hd;
    return 0;
}

static int attn_biases(hf_ctx *c, hf_family fam, int *qkv_bias, int *out_bias)
{
    /* Biases on q/k/v: Qwen2 / Qwen2-MoE always (modeling_qwen2.py
     * q_proj(bias=True)), Phi-3 never (qkv_proj bias=False); the others
     * follow attention_bias (default false; GptOssConfig true). The output
     * projection too where the modelling code passes attention_bias to
     * o_proj (LlamaAttention, Qwen3Attention, GemmaAttention,
     * GptOssAttention, Llama4TextAttention, Qwen3NextAttention); Qwen2,
     * Mistral and Phi-3 have none there. */
    *qkv_bias = 0;
    *out_bias = 0;
    if (fam == F_QWEN2 || fam == F_QWEN2_MOE) *qkv_bias = 1;
    else if (fam != F_PHI3 && hf_bool(c, "attention_bias", fam == F_GPT_OSS, qkv_bias) < 0) return -1;
    if (fam == F_LLAMA || fam == F_QWEN3 || fam == F_QWEN3_MOE || fam == F_GEMMA ||
        fam == F_GEMMA2 || fam == F_GPT_OSS || fam == F_LLAMA4 || fam == F_QWEN3_NEXT)
        *out_bias = *qkv_bias;
    return 0;
}

static int attn_rotary(hf_ctx *c, hf_family fam, long long hd, long long *rotary_dim)
{
    char ptr[256];
    /* Partial rotary (Phi3Config / Qwen3NextConfig partial_rotary_factor,
     * also inside rope_parameters in newer files): RoPE rotates
     * int(head_dim x factor) dims. Qwen3-Next's default is 0.25. */
    *rotary_dim = 0;
    if (fam == F_PHI3 || fam == F_QWEN3_NEXT) {
        double prf;
        int got = hf_num(c, "partial_rotary_factor", fam == F_QWEN3_NEXT ? 0.25 : 1.0, 1.0, &prf);
        if (got < 0) return -1;
        if (got == 0) {
            json_t *rp = hf_lookup(c, "rope_parameters", ptr, sizeof ptr);
            json_t *f = json_is_object(rp) ? json_object_get(rp, "partial_rotary_factor") : NULL;
            if (json_is_number(f) && json_number_value(f) > 0 && json_number_value(f) <= 1.0)
                prf = json_number_value(f);
        }
        *rotary_dim = (long long)((double)hd * prf);
        if (*rotary_dim < 1) *rotary_dim = 1;
        if (*rotary_dim >= hd) *rotary_dim = 0;
    }
    return 0;
}

/* Which layers slide (sl[i]) and the window. */
static int attn_windows(hf_ctx *c, hf_family fam, const hf_common *cm, unsigned char *sl, long long *window)
{
    switch (fam) {
    case F_MISTRAL:
    case F_MIXTRAL:
    case F_PHI3:
        /* modeling_mistral.py / modeling_mixtral.py: sliding_window (null =
         * none) on every layer; modular_phi3.py the same (Phi3Attention
         * passes sliding_window to every layer's attention) */
        if (hf_int(c, "sliding_window", 0, 0, 0, API_MAX_SEQ, window) < 0) return -1;
        for (long long i = 0; i < cm->n_layers; i++) sl[i] = *window > 0;
        break;
    case F_QWEN2:
    case F_QWEN2_MOE:
    case F_QWEN3:
    case F_QWEN3_MOE: {
        /* configuration_qwen2.py: sliding_window applies only when
         * use_sliding_window; layer_types, when given, names the sliding
         * layers, else layers i >= max_window_layers slide. */
        int use_sw, lt;
        long long mwl;
        if (hf_bool(c, "use_sliding_window", 0, &use_sw) < 0) return -1;
        if ((lt = hf_layer_types(c, cm->n_layers, sl)) < 0) return -1;
        if (!use_sw) {
            for (long long i = 0; i < cm->n_layers; i++) sl[i] = 0;
            break;
        }
        if (hf_int(c, "sliding_window", 0, 0, 0, API_MAX_SEQ, window) < 0) return -1;
        if (lt == 0) {
            if (hf_int(c, "max_window_layers", 0, 28, 0, API_MAX_LAYERS, &mwl) < 0) return -1;
            for (long long i = 0; i < cm->n_layers; i++) sl[i] = i >= mwl;
        }
        break;
    }
    case F_GEMMA2:
    case F_GPT_OSS: {
        /* modeling_gemma2.py: sliding window on even layers (layer_idx % 2
         * == 0), global attention on odd ones; default window 4096.
         * GptOssConfig: layer_types default "sliding_attention" if
         * (i + 1) % 2 else "full_attention" (even layers slide), window 128. */
        int lt;
        if (hf_int(c, "sliding_window", 0, fam == F_GPT_OSS ? 128 : 4096, 0, API_MAX_SEQ, window) < 0)
            return -1;
        if ((lt = hf_layer_types(c, cm->n_layers, sl)) < 0) return -1;
        if (lt == 0)
            for (long long i = 0; i < cm->n_layers; i++) sl[i] = (i % 2) == 0;
        break;
    }
    default:
        break; /* llama, gemma: full attention everywhere */
    }
    return 0;
}

static void softmax_attention(hf_ctx *c, hf_family fam, const hf_common *cm, layer_spec *ls)
{
    long long heads, kv, hd, window = 0, rotary_dim;
    int qkv_bias, out_bias;
    if (attn_heads(c, fam, cm, &heads, &kv, &hd) || attn_biases(c, fam, &qkv_bias, &out_bias) ||
        attn_rotary(c, fam, hd, &rotary_dim))
        return;
    /* Sliding windows. */
    unsigned char *sl = api_calloc((size_t)cm->n_layers, 1);
    if (!sl) {
        api_fail(c->st, 500, c->cfg_ptr, "out of memory");
        c->failed++;
        return;
    }
    if (attn_windows(c, fam, cm, sl, &window) == 0) {
        for (long long i = 0; i < cm->n_layers; i++) {
            ls[i].attn_kind = L_MHA;
            ls[i].n_heads = heads;
            ls[i].n_kv_heads = kv;
            ls[i].head_dim = hd;
            ls[i].window = (sl[i] && window > 0) ? window : 0;
            ls[i].qkv_bias = qkv_bias;
            ls[i].out_bias = out_bias;
            ls[i].rotary_dim = rotary_dim;
            /* Qwen3Attention / Qwen3MoeAttention / Qwen3NextAttention: q_norm and
             * k_norm, RMSNorm over head_dim */
            if (fam == F_QWEN3 || fam == F_QWEN3_MOE || fam == F_QWEN3_NEXT) ls[i].qk_norm = QKN_RMS;
            /* GptOssAttention.sinks */
            if (fam == F_GPT_OSS) ls[i].sinks = 1;
            /* Qwen3NextAttention: q_proj doubled, output * sigmoid(gate) */
            if (fam == F_QWEN3_NEXT) ls[i].output_gate = 1;
        }
    }
    free(sl);
}

static void dense_mlp(hf_ctx *c, long long n_layers, layer_spec *ls)
{
    long long ffn;
    if (hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &ffn) < 0) return;
    for (long long i = 0; i < n_layers; i++) {
        ls[i].mlp_kind = L_DENSE;
        ls[i].ffn_dim = ffn;
    }
}

/* Routed experts and top-k, checked together. */
static int moe_counts(hf_ctx *c, const char *experts_key, long long *e, long long *k)
{
    char ptr[256];
    if (hf_int(c, experts_key, 1, 0, 1, API_MAX_EXPERTS, e) < 0) return -1;
    if (hf_int(c, "num_experts_per_tok", 1, 0, 1, API_MAX_EXPERTS, k) < 0) return -1;
    if (*k > *e) {
        hf_lookup(c, "num_experts_per_tok", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s (%lld) exceeds the number of experts (%lld)", "num_experts_per_tok",
                *k, *e);
        return -1;
    }
    return 0;
}

/* Mixtral (modeling_mixtral.py MixtralSparseMoeBlock): every layer is MoE,
 * num_local_experts experts of intermediate_size each. */
static void mixtral_mlp(hf_ctx *c, long long n_layers, layer_spec *ls)
{
    long long e, k, ffn;
    if (moe_counts(c, "num_local_experts", &e, &k) < 0) return;
    if (hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &ffn) < 0) return;
    for (long long i = 0; i < n_layers; i++) {
        ls[i].mlp_kind = L_MOE;
        ls[i].n_experts = e;
        ls[i].top_k = k;
        ls[i].expert_ffn_dim = ffn;
    }
}

/* Qwen2-MoE / Qwen3-MoE / Qwen3-Next (modeling_qwen2_moe.py
 * Qwen2MoeDecoderLayer): layer i is MoE iff i not in mlp_only_layers and
 * num_experts > 0 and (i + 1) % decoder_sparse_step == 0; else a dense MLP of
 * intermediate_size. Qwen2-MoE and Qwen3-Next add one shared expert of
 * shared_expert_intermediate_size, scaled by its sigmoid shared_expert_gate
 * (Linear(hidden, 1): Qwen2MoeSparseMoeBlock). */
static void qwen_moe_mlp(hf_ctx *c, hf_family fam, long long n_layers, layer_spec *ls)
{
    char ptr[256];
    long long e, k = 0, moe_ffn = 0, step, dense_ffn = 0, shared = 0;
    if (hf_int(c, "num_experts", 1, 0, 0, API_MAX_EXPERTS, &e) < 0) return;
    if (e > 0) {
        if (moe_counts(c, "num_experts", &e, &k) < 0) return;
        if (hf_int(c, "moe_intermediate_size", 1, 0, 1, API_MAX_DIM, &moe_ffn) < 0) return;
        if ((fam == F_QWEN2_MOE || fam == F_QWEN3_NEXT) &&
            hf_int(c, "shared_expert_intermediate_size", 1, 0, 0, API_MAX_DIM, &shared) < 0)
            return;
    }
    if (hf_int(c, "decoder_sparse_step", 0, 1, 1, API_MAX_LAYERS, &step) < 0) return;

    unsigned char *dense = api_calloc((size_t)n_layers, 1);
    if (!dense) {
        api_fail(c->st, 500, c->cfg_ptr, "out of memory");
        c->failed++;
        return;
    }
    json_t *mol = hf_lookup(c, "mlp_only_layers", ptr, sizeof ptr);
    if (mol && !json_is_array(mol)) {
        hf_fail(c, ptr, "%s must be an array of layer indices", "mlp_only_layers");
        goto out;
    }
    for (size_t j = 0; mol && j < json_array_size(mol); j++) {
        long long idx;
        if (hf_as_int(json_array_get(mol, j), &idx) != 0 || idx < 0 || idx >= n_layers) {
            char p[300];
            snprintf(p, sizeof p, "%s/%zu", ptr, j);
            hf_fail(c, p, "%s entries must be layer indices in [0, %lld)", "mlp_only_layers",
                    n_layers);
            goto out;
        }
        dense[idx] = 1;
    }
    int any_dense = 0;
    for (long long i = 0; i < n_layers; i++) {
        if (e == 0 || (i + 1) % step != 0) dense[i] = 1;
        any_dense |= dense[i];
    }
    if (any_dense && hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &dense_ffn) < 0)
        goto out;
    for (long long i = 0; i < n_layers; i++) {
        if (dense[i]) {
            ls[i].mlp_kind = L_DENSE;
            ls[i].ffn_dim = dense_ffn;
        } else {
            ls[i].mlp_kind = L_MOE;
            ls[i].n_experts = e;
            ls[i].top_k = k;
            ls[i].expert_ffn_dim = moe_ffn;
            ls[i].n_shared_experts = shared > 0 ? 1 : 0;
            ls[i].shared_ffn_dim = shared > 0 ? shared : moe_ffn;
            ls[i].shared_gate = shared > 0;
        }
    }
out:
    free(dense);
}

/* gpt-oss (modular_gpt_oss.py GptOssMLP): every layer MoE, num_local_experts
 * experts of intermediate_size with biases (gate_up_proj_bias,
 * down_proj_bias), a router with a bias, top num_experts_per_tok. */
static void gpt_oss_mlp(hf_ctx *c, long long n_layers, layer_spec *ls)
{
    long long e, k, ffn;
    if (moe_counts(c, "num_local_experts", &e, &k) < 0) return;
    if (hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &ffn) < 0) return;
    for (long long i = 0; i < n_layers; i++) {
        ls[i].mlp_kind = L_MOE;
        ls[i].n_experts = e;
        ls[i].top_k = k;
        ls[i].expert_ffn_dim = ffn;
        ls[i].moe_bias = 1;
    }
    /* GptOssExperts._apply_gate: gate.clamp(max=7), up.clamp(-7, 7),
     * (up + 1) * gate * sigmoid(1.702 gate) */
    hf_approx(c, "gpt_oss: the experts' clamped SwiGLU ((up + 1) * gate * sigmoid(1.702 gate), "
                 "limit 7) is counted as a SwiGLU (a few elementwise FLOPs per element less)");
}

/* A list of per-layer integers, e.g. Llama 4's no_rope_layers or moe_layers.
 * `as_mask`: the entries are 0/1 per layer (length num_hidden_layers), else
 * layer indices. Returns 1 when present and valid (out filled), 0 when
 * absent or empty, -1 on error. */
static int hf_layer_list(hf_ctx *c, const char *key, long long n_layers, int as_mask,
                         unsigned char *out)
{
    char ptr[256];
    json_t *a = hf_lookup(c, key, ptr, sizeof ptr);
    if (!a || (json_is_array(a) && json_array_size(a) == 0)) return 0;
    if (!json_is_array(a) || (as_mask && (long long)json_array_size(a) != n_layers)) {
        if (as_mask)
            hf_fail(c, ptr, "%s must be an array of 0/1 with num_hidden_layers (%lld) entries", key,
                    n_layers);
        else
            hf_fail(c, ptr, "%s must be an array of layer indices", key);
        return -1;
    }
    if (!as_mask) memset(out, 0, (size_t)n_layers);
    for (size_t j = 0; j < json_array_size(a); j++) {
        long long x;
        int ok = hf_as_int(json_array_get(a, j), &x) == 0;
        if (ok && as_mask) ok = x == 0 || x == 1;
        if (ok && !as_mask) ok = x >= 0 && x < n_layers;
        if (!ok) {
            char q[300];
            snprintf(q, sizeof q, "%s/%zu", ptr, j);
            if (as_mask) hf_fail(c, q, "%s entries must be 0 or 1", key);
            else hf_fail(c, q, "%s entries must be layer indices in [0, %lld)", key, n_layers);
            return -1;
        }
        if (as_mask) out[j] = (unsigned char)x;
        else out[x] = 1;
    }
    return 1;
}

/* Llama 4 (configuration_llama4.py Llama4TextConfig.__post_init__,
 * modeling_llama4.py Llama4TextAttention / Llama4TextDecoderLayer), on the
 * softmax-attention layers softmax_attention() built:
 *   use_rope(i) = no_rope_layers[i], default int((i + 1) % interval != 0)
 *     with no_rope_layer_interval 4; layer_types default "chunked_attention"
 *     where RoPE is used, "full_attention" on the NoPE layers; chunked
 *     layers attend within attention_chunk_size (default 8192) tokens;
 *   the L2 qk norm (Llama4TextL2Norm, no weights) where use_qk_norm and RoPE;
 *   MoE on moe_layers, default range(step - 1, L, step) with
 *     interleave_moe_layer_step: num_local_experts experts of
 *     intermediate_size, top num_experts_per_tok, plus one shared expert of
 *     intermediate_size (Llama4TextMoe.shared_expert); the other layers a
 *     dense MLP of intermediate_size_mlp. */
static void llama4_layers(hf_ctx *c, const hf_common *cm, layer_spec *ls)
{
    long long n = cm->n_layers, interval, chunk = 8192, step, e, k, moe_ffn, dense_ffn = 0;
    int qkn;
    unsigned char *rope = api_calloc((size_t)n, 1), *moe = api_calloc((size_t)n, 1);
    unsigned char *chunked = api_calloc((size_t)n, 1);
    if (!rope || !moe || !chunked) {
        api_fail(c->st, 500, c->cfg_ptr, "out of memory");
        c->failed++;
        goto out;
    }
    int r = hf_layer_list(c, "no_rope_layers", n, 1, rope);
    if (r < 0) goto out;
    if (r == 0) {
        if (hf_int(c, "no_rope_layer_interval", 0, 4, 1, API_MAX_LAYERS, &interval) < 0) goto out;
        for (long long i = 0; i < n; i++) rope[i] = (i + 1) % interval != 0;
    }
    /* attention_chunk_size: null in the file means no chunking */
    {
        json_t *raw = json_object_get(c->cfg, "attention_chunk_size");
        if (raw && json_is_null(raw)) chunk = 0;
        else if (hf_int(c, "attention_chunk_size", 0, 8192, 0, API_MAX_SEQ, &chunk) < 0) goto out;
    }
    int lt = hf_layer_kinds(c, n, "chunked_attention", chunked);
    if (lt < 0) goto out;
    if (!lt)
        for (long long i = 0; i < n; i++) chunked[i] = rope[i];
    if (hf_bool(c, "use_qk_norm", 1, &qkn) < 0) goto out;

    if (moe_counts(c, "num_local_experts", &e, &k) < 0) goto out;
    if (hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &moe_ffn) < 0) goto out;
    r = hf_layer_list(c, "moe_layers", n, 0, moe);
    if (r < 0) goto out;
    if (r == 0) {
        if (hf_int(c, "interleave_moe_layer_step", 0, 1, 1, API_MAX_LAYERS, &step) < 0) goto out;
        for (long long i = step - 1; i < n; i += step) moe[i] = 1;
    }
    int any_dense = 0;
    for (long long i = 0; i < n; i++) any_dense |= !moe[i];
    if (any_dense && hf_int(c, "intermediate_size_mlp", 1, 0, 1, API_MAX_DIM, &dense_ffn) < 0)
        goto out;
    for (long long i = 0; i < n; i++) {
        layer_spec *l = &ls[i];
        l->nope = !rope[i];
        l->chunk = chunked[i] ? chunk : 0;
        l->qk_norm = (qkn && rope[i]) ? QKN_L2 : QKN_NONE;
        if (moe[i]) {
            l->mlp_kind = L_MOE;
            l->n_experts = e;
            l->top_k = k;
            l->expert_ffn_dim = moe_ffn;
            l->n_shared_experts = 1;
            l->shared_ffn_dim = moe_ffn;
        } else {
            l->mlp_kind = L_DENSE;
            l->ffn_dim = dense_ffn;
        }
    }
    {
        /* Llama4TextAttention: attn_temperature_tuning scales q on NoPE
         * layers; Llama4TextMoe scales the routed inputs by the sigmoid
         * router score before the experts */
        int tt = 0;
        for (long long i = 0; i < n; i++) tt |= !rope[i];
        if (tt)
            hf_approx(c, "llama4: the attention temperature tuning of the NoPE layers (a per-token "
                         "scale of q) is not counted");
        hf_approx(c, "llama4: routed inputs are scaled by the router score before the experts; "
                     "memory counted as for scores applied in the experts' activation");
        if (json_object_get(c->top, "vision_config"))
            hf_approx(c, "llama4: the vision encoder and projector (vision_config) are not modelled: "
                         "text model only");
    }
out:
    free(rope);
    free(moe);
    free(chunked);
}

/* Qwen3-Next (configuration_qwen3_next.py, modular_qwen3_next.py
 * Qwen3NextGatedDeltaNet): layer_types, default "linear_attention" if
 * (i + 1) % full_attention_interval else "full_attention" (interval 4); a
 * linear layer is Gated DeltaNet with linear_num_value_heads value heads of
 * linear_value_head_dim, linear_num_key_heads q/k heads of
 * linear_key_head_dim, a causal conv of linear_conv_kernel_dim over q, k, v,
 * and the z-gated RMSNorm; chunk 64 (fla chunk_gated_delta_rule). The full
 * layers were built by softmax_attention(). */
static void qwen3_next_linear(hf_ctx *c, const hf_common *cm, layer_spec *ls)
{
    char ptr[256];
    long long n = cm->n_layers, interval, vh, kh, kd, vd, conv;
    unsigned char *lin = api_calloc((size_t)n, 1);
    if (!lin) {
        api_fail(c->st, 500, c->cfg_ptr, "out of memory");
        c->failed++;
        return;
    }
    int lt = hf_layer_kinds(c, n, "linear_attention", lin);
    if (lt < 0) goto out;
    if (!lt) {
        if (hf_int(c, "full_attention_interval", 0, 4, 1, API_MAX_LAYERS, &interval) < 0) goto out;
        for (long long i = 0; i < n; i++) lin[i] = (i + 1) % interval != 0;
    }
    if (hf_int(c, "linear_num_value_heads", 0, 32, 1, API_MAX_DIM, &vh) < 0 ||
        hf_int(c, "linear_num_key_heads", 0, 16, 1, API_MAX_DIM, &kh) < 0 ||
        hf_int(c, "linear_key_head_dim", 0, 128, 1, API_MAX_DIM, &kd) < 0 ||
        hf_int(c, "linear_value_head_dim", 0, 128, 1, API_MAX_DIM, &vd) < 0 ||
        hf_int(c, "linear_conv_kernel_dim", 0, 4, 1, 64, &conv) < 0)
        goto out;
    if (vh % kh) {
        hf_lookup(c, "linear_num_key_heads", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s (%lld) must divide linear_num_value_heads (%lld)",
                "linear_num_key_heads", kh, vh);
        goto out;
    }
    if (kh * kd > API_MAX_DIM || vh * vd > API_MAX_DIM) {
        hf_lookup(c, "linear_num_value_heads", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s: the linear-attention widths exceed %lld", "linear_num_value_heads",
                (long long)API_MAX_DIM);
        goto out;
    }
    for (long long i = 0; i < n; i++) {
        if (!lin[i]) continue;
        layer_spec *l = &ls[i];
        l->attn_kind = L_GDN;
        l->n_heads = vh;
        l->n_kv_heads = kh;
        l->key_dim = kh * kd;
        l->value_dim = vh * vd;
        l->conv_size = conv;
        l->chunk_size = GLA_CHUNK_SIZE;
        l->output_gate = 1;
        l->head_dim = l->window = l->qkv_bias = l->chunk = l->rotary_dim = 0;
        l->nope = l->sinks = l->out_bias = l->qk_norm = 0;
    }
    hf_approx(c, "qwen3_next: the multi-token-prediction module (mtp.* weights) is not modelled");
out:
    free(lin);
}

/* DeepSeek-V2/V3 (hub modeling_deepseek.py DeepseekV2DecoderLayer): MLA in
 * every layer; layer i is MoE iff n_routed_experts is not null and
 * i >= first_k_dense_replace and i % moe_layer_freq == 0, else a dense MLP of
 * intermediate_size. Shared experts: the code builds one MLP of width
 * n_shared_experts x moe_intermediate_size; we keep n_shared_experts experts
 * of moe_intermediate_size each (same parameters and FLOPs).
 * num_nextn_predict_layers (V3's multi-token-prediction module, used in
 * training but not part of the 671B main model) is ignored. */
static void deepseek_layers(hf_ctx *c, hf_family fam, const hf_common *cm, layer_spec *ls)
{
    char ptr[256];
    long long heads, q_rank, kv_rank, nope, rope, vhd;
    if (hf_int(c, "num_attention_heads", 1, 0, 1, API_MAX_DIM, &heads) < 0) return;
    /* q_lora_rank must be present; null means no q low-rank path (V2-Lite). */
    if (!json_object_get(c->cfg, "q_lora_rank")) {
        snprintf(ptr, sizeof ptr, "%.200s/q_lora_rank", c->cfg_ptr);
        hf_fail(c, ptr, "%s is required (null for no low-rank query path)", "q_lora_rank");
        return;
    }
    if (hf_int(c, "q_lora_rank", 0, 0, 1, API_MAX_DIM, &q_rank) < 0) return;
    if (hf_int(c, "kv_lora_rank", 1, 0, 1, API_MAX_DIM, &kv_rank) < 0) return;
    if (hf_int(c, "qk_nope_head_dim", 1, 0, 1, API_MAX_DIM, &nope) < 0) return;
    if (hf_int(c, "qk_rope_head_dim", 1, 0, 0, API_MAX_DIM, &rope) < 0) return;
    if (hf_int(c, "v_head_dim", 1, 0, 1, API_MAX_DIM, &vhd) < 0) return;
    if (nope + rope < 1) {
        hf_lookup(c, "qk_nope_head_dim", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s + qk_rope_head_dim must be positive", "qk_nope_head_dim");
        return;
    }
    /* config.head_dim is qk_rope_head_dim here: deliberately not read. */

    long long e = 0, k = 0, moe_ffn = 0, n_shared = 0, fkd, freq, dense_ffn = 0;
    char eptr[256];
    int has_moe = hf_lookup(c, "n_routed_experts", eptr, sizeof eptr) != NULL;
    if (has_moe) {
        if (moe_counts(c, "n_routed_experts", &e, &k) < 0) return;
        if (hf_int(c, "moe_intermediate_size", 1, 0, 1, API_MAX_DIM, &moe_ffn) < 0) return;
        if (hf_int(c, "n_shared_experts", 0, 0, 0, API_MAX_EXPERTS, &n_shared) < 0) return;
    }
    /* Absent: the config classes' defaults (DeepseekV3Config 3, V2 0). */
    if (hf_int(c, "first_k_dense_replace", 0, fam == F_DEEPSEEK_V3 ? 3 : 0, 0, API_MAX_LAYERS,
               &fkd) < 0)
        return;
    if (hf_int(c, "moe_layer_freq", 0, 1, 1, API_MAX_LAYERS, &freq) < 0) return;
    /* Device/node-limited routing (DeepSeek-V2 sec. 2.1.3, V3 sec. 2.1.2):
     * topk_method "group_limited_greedy" (V2) or "noaux_tc" (V3) picks experts
     * from topk_group of n_group groups; deployed one group per node, a
     * token's experts then span at most topk_group nodes. "greedy" (V2-Lite)
     * routes freely. */
    long long route_nodes = 0;
    json_t *tm = has_moe ? json_object_get(c->cfg, "topk_method") : NULL;
    if (json_is_string(tm) && (strcmp(json_string_value(tm), "group_limited_greedy") == 0 ||
                               strcmp(json_string_value(tm), "noaux_tc") == 0)) {
        if (hf_int(c, "topk_group", 0, 0, 0, API_MAX_EXPERTS, &route_nodes) < 0) return;
    }
    int any_dense = 0;
    for (long long i = 0; i < cm->n_layers; i++) {
        int moe = has_moe && i >= fkd && i % freq == 0;
        ls[i].mlp_kind = moe ? L_MOE : L_DENSE;
        any_dense |= !moe;
    }
    if (any_dense && hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &dense_ffn) < 0) return;
    for (long long i = 0; i < cm->n_layers; i++) {
        ls[i].attn_kind = L_MLA;
        ls[i].n_heads = heads;
        ls[i].q_lora_rank = q_rank;
        ls[i].kv_lora_rank = kv_rank;
        ls[i].qk_nope_head_dim = nope;
        ls[i].qk_rope_head_dim = rope;
        ls[i].v_head_dim = vhd;
        if (ls[i].mlp_kind == L_DENSE) {
            ls[i].ffn_dim = dense_ffn;
        } else {
            ls[i].n_experts = e;
            ls[i].top_k = k;
            ls[i].expert_ffn_dim = moe_ffn;
            ls[i].n_shared_experts = n_shared;
            ls[i].shared_ffn_dim = moe_ffn;
            ls[i].route_nodes = route_nodes;
        }
    }
}

/* GLA (fla/models/gla/configuration_gla.py, fla/layers/gla.py):
 *   key_dim = int(hidden * expand_k), value_dim = int(hidden * expand_v),
 *   both divisible by num_heads; num_kv_heads (null = num_heads) divides
 *   num_heads; GatedMLP (fla/modules/mlp.py): intermediate_size null =>
 *   I = int(hidden * hidden_ratio * 2 / 3) rounded up to a multiple of 256.
 *   config.attn = {layers, num_heads, num_kv_heads, qkv_bias, window_size}
 *   makes the listed layers softmax attention (fla/layers/attn.py: head_dim
 *   = hidden / num_heads). */
/* A hybrid's softmax-attention layers (flash-linear-attention's GLAConfig.attn: layers,
 * num_heads, num_kv_heads, qkv_bias, window_size) over the GLA ones. */
static void gla_hybrid(hf_ctx *c, const hf_common *cm, layer_spec *ls, int *any_softmax)
{
    char ptr[256];
    json_t *attn = hf_lookup(c, "attn", ptr, sizeof ptr);
    if (!attn) return;
    if (!json_is_object(attn)) {
        hf_fail(c, ptr, "%s must be an object {layers, num_heads, ...} or null", "attn");
        return;
    }
    hf_ctx sub = *c; /* read the attn object's fields with the same helpers */
    sub.cfg = sub.top = attn;
    snprintf(sub.cfg_ptr, sizeof sub.cfg_ptr, "%.200s", ptr);
    snprintf(sub.top_ptr, sizeof sub.top_ptr, "%.200s", ptr);
    sub.failed = 0;
    long long ah, akv, win;
    int bias;
    char p[256];
    json_t *layers = hf_lookup(&sub, "layers", p, sizeof p);
    if (!json_is_array(layers)) {
        hf_fail(c, p, "%s must be an array of layer indices", "attn.layers");
        return;
    }
    if (hf_int(&sub, "num_heads", 1, 0, 1, API_MAX_DIM, &ah) < 0 ||
        hf_int(&sub, "num_kv_heads", 0, ah, 1, API_MAX_DIM, &akv) < 0 ||
        hf_bool(&sub, "qkv_bias", 0, &bias) < 0 ||
        hf_int(&sub, "window_size", 0, 0, 0, API_MAX_SEQ, &win) < 0) {
        c->failed += sub.failed;
        return;
    }
    if (cm->h % ah != 0) {
        hf_lookup(&sub, "num_heads", p, sizeof p);
        hf_fail(c, p, "%s (%lld) must divide hidden_size (%lld)", "attn.num_heads", ah, cm->h);
        return;
    }
    if (ah % akv != 0) {
        hf_lookup(&sub, "num_kv_heads", p, sizeof p);
        hf_fail(c, p, "%s (%lld) must divide attn.num_heads (%lld)", "attn.num_kv_heads", akv, ah);
        return;
    }
    for (size_t j = 0; j < json_array_size(layers); j++) {
        long long idx;
        if (hf_as_int(json_array_get(layers, j), &idx) != 0 || idx < 0 || idx >= cm->n_layers) {
            char q[300];
            snprintf(q, sizeof q, "%s/layers/%zu", ptr, j);
            hf_fail(c, q, "%s entries must be layer indices in [0, %lld)", "attn.layers",
                    cm->n_layers);
            return;
        }
        layer_spec *l = &ls[idx];
        l->attn_kind = L_MHA;
        l->n_heads = ah;
        l->n_kv_heads = akv;
        l->head_dim = cm->h / ah;
        l->window = win;
        l->qkv_bias = bias;
        l->key_dim = l->value_dim = l->gate_rank = l->chunk_size = l->output_gate = 0;
        *any_softmax = 1;
    }
}

static void gla_layers(hf_ctx *c, const hf_common *cm, layer_spec *ls, int *any_softmax)
{
    char ptr[256];
    long long heads, kv, ffn, gate_rank;
    double ek, ev, ratio;
    int out_gate;
    *any_softmax = 0;
    if (hf_int(c, "num_heads", 1, 0, 1, API_MAX_DIM, &heads) < 0) return;
    if (hf_int(c, "num_kv_heads", 0, heads, 1, API_MAX_DIM, &kv) < 0) return;
    if (heads % kv != 0) {
        hf_lookup(c, "num_kv_heads", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s (%lld) must divide num_heads (%lld)", "num_kv_heads", kv, heads);
        return;
    }
    if (hf_num(c, "expand_k", 0.5, 64.0, &ek) < 0) return;
    if (hf_num(c, "expand_v", 1.0, 64.0, &ev) < 0) return;
    long long key_dim = (long long)((double)cm->h * ek);
    long long value_dim = (long long)((double)cm->h * ev);
    if (key_dim < heads || key_dim % heads != 0 || key_dim > API_MAX_DIM) {
        hf_lookup(c, "expand_k", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s: key_dim = int(hidden_size * expand_k) = %lld must be a positive "
                        "multiple of num_heads (%lld)", "expand_k", key_dim, heads);
        return;
    }
    if (value_dim < heads || value_dim % heads != 0 || value_dim > API_MAX_DIM) {
        hf_lookup(c, "expand_v", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s: value_dim = int(hidden_size * expand_v) = %lld must be a positive "
                        "multiple of num_heads (%lld)", "expand_v", value_dim, heads);
        return;
    }
    if (hf_bool(c, "use_output_gate", 1, &out_gate) < 0) return;
    if (hf_int(c, "gate_low_rank_dim", 0, GLA_GATE_LOW_RANK_DIM, 1, API_MAX_DIM, &gate_rank) < 0)
        return;
    int r = hf_int(c, "intermediate_size", 0, 0, 1, API_MAX_DIM, &ffn);
    if (r < 0) return;
    if (r == 0) {
        if (hf_num(c, "hidden_ratio", 4.0, 64.0, &ratio) < 0) return;
        ffn = (long long)((double)cm->h * ratio * 2.0 / 3.0);
        ffn = 256 * ((ffn + 255) / 256);
        if (ffn < 1 || ffn > API_MAX_DIM) {
            hf_lookup(c, "hidden_ratio", ptr, sizeof ptr);
            hf_fail(c, ptr, "%s gives an MLP width of %lld, out of range", "hidden_ratio", ffn);
            return;
        }
    }
    for (long long i = 0; i < cm->n_layers; i++) {
        ls[i].attn_kind = L_GLA;
        ls[i].n_heads = heads;
        ls[i].n_kv_heads = kv;
        ls[i].key_dim = key_dim;
        ls[i].value_dim = value_dim;
        ls[i].gate_rank = gate_rank;
        ls[i].chunk_size = GLA_CHUNK_SIZE;
        ls[i].output_gate = out_gate;
        ls[i].mlp_kind = L_DENSE;
        ls[i].ffn_dim = ffn;
    }
    gla_hybrid(c, cm, ls, any_softmax);
}

/* ---- entry point --------------------------------------------------------- */

/* The config's family by model_type (the text config's own, else the
 * wrapper's); -1 when absent or not supported (st says so). */
static int hf_family_index(hf_ctx *c, const char **mts_out, api_status *st)
{
    char mptr[256];
    json_t *mt = hf_lookup(c, "model_type", mptr, sizeof mptr);
    const char *mts = json_string_value(mt);
    int fi = -1;
    for (size_t i = 0; mts && i < sizeof hf_families / sizeof hf_families[0]; i++)
        if (!strcmp(mts, hf_families[i].name)) fi = (int)i;
    if (fi < 0) {
        if (!mt) api_fail(st, 422, mptr, "model_type is required; supported: " HF_SUPPORTED);
        else if (!mts) api_fail(st, 422, mptr, "model_type must be a string; supported: " HF_SUPPORTED);
        else
            api_fail(st, 422, mptr, "unsupported model_type \"%.64s\"; supported: " HF_SUPPORTED,
                     mts);
        return -1;
    }
    *mts_out = mts;
    return fi;
}

/* Every layer of a family into ls; the MLP's activation. */
static const char *hf_layers(hf_ctx *c, hf_family fam, const hf_common *cm, layer_spec *ls, int *any_softmax)
{
    const char *act = "silu";
    *any_softmax = 1;
    switch (fam) {
    case F_DEEPSEEK_V2:
    case F_DEEPSEEK_V3:
        deepseek_layers(c, fam, cm, ls);
        act = hf_activation(c, "hidden_act", "silu");
        break;
    case F_GLA:
        gla_layers(c, cm, ls, any_softmax);
        act = hf_activation(c, "hidden_act", "swish");
        break;
    default:
        softmax_attention(c, fam, cm, ls);
        if (c->failed) break;
        if (fam == F_MIXTRAL) mixtral_mlp(c, cm->n_layers, ls);
        else if (fam == F_GPT_OSS) gpt_oss_mlp(c, cm->n_layers, ls);
        else if (fam == F_LLAMA4) llama4_layers(c, cm, ls);
        else if (fam == F_QWEN2_MOE || fam == F_QWEN3_MOE || fam == F_QWEN3_NEXT)
            qwen_moe_mlp(c, fam, cm->n_layers, ls);
        else dense_mlp(c, cm->n_layers, ls);
        if (!c->failed && fam == F_QWEN3_NEXT) qwen3_next_linear(c, cm, ls);
        if (fam == F_GEMMA || fam == F_GEMMA2) {
            /* GemmaMLP: gate/up/down with hidden_activation, falling back
             * to hidden_act (configuration_gemma.py). GeGLU. */
            char p[256];
            act = hf_lookup(c, "hidden_activation", p, sizeof p)
                      ? hf_activation(c, "hidden_activation", "gelu_pytorch_tanh")
                      : hf_activation(c, "hidden_act", "gelu_pytorch_tanh");
        } else {
            act = hf_activation(c, "hidden_act", "silu");
        }
        break;
    }
    return act;
}

/* The model description (docs/model-ir.md) of an imported config. */
static json_t *hf_ir_json(hf_ctx *c, json_t *hf, const char *mts, const hf_common *cm, long long maxpos, int tie,
                          int any_softmax, json_t *layers)
{
    /* Name: _name_or_path when the file carries one, else the model_type. */
    char name[MFU_NAME_LEN];
    const char *np = json_string_value(json_object_get(hf, "_name_or_path"));
    snprintf(name, sizeof name, "%s", (np && *np) ? np : mts);
    json_t *jname = json_string(name); /* NULL if truncation split a UTF-8 char */
    if (!jname) jname = json_string(mts);

    json_t *ir = json_object();
    json_object_set_new(ir, "name", jname);
    json_object_set_new(ir, "d_model", json_integer(cm->h));
    json_object_set_new(ir, "vocab", json_integer(cm->vocab));
    json_object_set_new(ir, "tie_embeddings", json_boolean(tie));
    json_object_set_new(ir, "norm", json_string("rmsnorm")); /* all families: RMSNorm */
    json_object_set_new(ir, "position", json_string(any_softmax ? "rope" : "none"));
    if (maxpos > 0) json_object_set_new(ir, "max_positions", json_integer(maxpos));
    json_object_set_new(ir, "bias", json_false());
    json_object_set_new(ir, "dropout", json_false());
    json_object_set_new(ir, "layers", layers);
    if (c->approx) json_object_set_new(ir, "approximations", c->approx);
    return ir;
}

json_t *api_hf_to_ir(json_t *hf, const char *ptr, api_status *st)
{
    hf_ctx c;
    memset(&c, 0, sizeof c);
    c.st = st;
    if (!ptr) ptr = "";
    if (!json_is_object(hf)) {
        api_fail(st, 422, ptr, "hf_config must be a JSON object (a config.json)");
        return NULL;
    }
    c.top = c.cfg = hf;
    snprintf(c.top_ptr, sizeof c.top_ptr, "%.200s", ptr);
    snprintf(c.cfg_ptr, sizeof c.cfg_ptr, "%.200s", ptr);

    /* Multimodal wrappers (Llava, Mistral3, ...) nest the language model. */
    json_t *tc = json_object_get(hf, "text_config");
    if (tc && !json_is_null(tc)) {
        if (!json_is_object(tc)) {
            char p[256];
            snprintf(p, sizeof p, "%.200s/text_config", ptr);
            api_fail(st, 422, p, "text_config must be an object");
            return NULL;
        }
        c.cfg = tc;
        snprintf(c.cfg_ptr, sizeof c.cfg_ptr, "%.190s/text_config", ptr);
    }

    const char *mts = NULL;
    int fi = hf_family_index(&c, &mts, st);
    if (fi < 0) return NULL;
    hf_family fam = hf_families[fi].fam;

    hf_common cm;
    long long maxpos = 0;
    if (hf_int(&c, "hidden_size", 1, 0, 1, API_MAX_DIM, &cm.h) < 0 ||
        hf_int(&c, "num_hidden_layers", 1, 0, 1, API_MAX_LAYERS, &cm.n_layers) < 0 ||
        hf_int(&c, "vocab_size", 1, 0, 1, API_MAX_DIM, &cm.vocab) < 0)
        return NULL;
    /* max_position_embeddings: informative only (RoPE has no table). */
    {
        char p[256];
        json_t *v = hf_lookup(&c, "max_position_embeddings", p, sizeof p);
        long long x;
        if (v && hf_as_int(v, &x) == 0 && x >= 1 && x <= API_MAX_SEQ) maxpos = x;
    }

    /* tie_word_embeddings: PretrainedConfig default true, but every family
     * here overrides the default: false except Gemma/Gemma2 (true). */
    int tie;
    if (hf_bool(&c, "tie_word_embeddings", fam == F_GEMMA || fam == F_GEMMA2, &tie) < 0)
        return NULL;

    layer_spec *ls = api_calloc((size_t)cm.n_layers, sizeof *ls);
    if (!ls) {
        api_fail(st, 500, c.cfg_ptr, "out of memory");
        return NULL;
    }
    int any_softmax = 1;
    const char *act = hf_layers(&c, fam, &cm, ls, &any_softmax);
    if (c.failed) {
        free(ls);
        json_decref(c.approx);
        return NULL;
    }
    json_t *layers = layers_json(&c, ls, cm.n_layers, act);
    free(ls);
    if (!layers) {
        json_decref(c.approx);
        return NULL;
    }

    return hf_ir_json(&c, hf, mts, &cm, maxpos, tie, any_softmax, layers);
}
