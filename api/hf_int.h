/* api/hf_int.h -- inside the HuggingFace config.json importer: its
 * context, a layer's spec, the families, and what api/hf.c (runs, the
 * entry point), api/hf_read.c (reading fields), api/hf_softmax.c
 * (softmax attention and the MLPs) and api/hf_hybrid.c (Llama 4,
 * Qwen3-Next, DeepSeek, GLA) give one another. */
#ifndef MFU_API_HF_INT_H
#define MFU_API_HF_INT_H

#include "api.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fla GatedLinearAttention constants not present in config.json. */
#define GLA_GATE_LOW_RANK_DIM 16 /* fla/layers/gla.py gate_low_rank_dim */
#define GLA_CHUNK_SIZE 64        /* fla/ops/gla chunk kernels: BT = 64 */

typedef struct hf_ctx {
    json_t *cfg;        /* the object read: text_config when nested, else hf */
    json_t *top;        /* the hf_config object itself */
    char cfg_ptr[208];  /* pointer of cfg */
    char top_ptr[208];  /* pointer of top */
    api_status *st;
    int failed;         /* errors recorded by this conversion */
    json_t *approx;     /* what the IR approximates (strings), or NULL */
} hf_ctx;

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

typedef enum {
    F_LLAMA, F_MISTRAL, F_MIXTRAL, F_QWEN2, F_QWEN2_MOE, F_QWEN3, F_QWEN3_MOE,
    F_DEEPSEEK_V2, F_DEEPSEEK_V3, F_GLA, F_GEMMA, F_GEMMA2, F_PHI3, F_GPT_OSS, F_LLAMA4,
    F_QWEN3_NEXT, F_GEMMA3
} hf_family;

/* Common sizes every family has. */
typedef struct hf_common {
    long long h, n_layers, vocab;
} hf_common;

/* api/hf_read.c: reading fields (commented where defined) */
const char *hf_activation(hf_ctx *c, const char *key, const char *dflt);
void hf_approx(hf_ctx *c, const char *text);
int hf_as_int(json_t *v, long long *out);
int hf_bool(hf_ctx *c, const char *key, int dflt, int *out);
void hf_fail(hf_ctx *c, const char *ptr, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int hf_int(hf_ctx *c, const char *key, int required, long long dflt, long long lo, long long hi, long long *out);
int hf_layer_kinds(hf_ctx *c, long long n, const char *other, unsigned char *flag);
int hf_layer_types(hf_ctx *c, long long n_layers, unsigned char *is_sliding);
json_t *hf_lookup(hf_ctx *c, const char *key, char *ptr_out, size_t n);
int hf_num(hf_ctx *c, const char *key, double dflt, double hi, double *out);

/* api/hf_softmax.c, api/hf_hybrid.c: the families */
void hf_dense_mlp(hf_ctx *c, long long n_layers, layer_spec *ls);
void hf_gpt_oss_mlp(hf_ctx *c, long long n_layers, layer_spec *ls);
void hf_mixtral_mlp(hf_ctx *c, long long n_layers, layer_spec *ls);
int hf_moe_counts(hf_ctx *c, const char *experts_key, long long *e, long long *k);
void hf_moe_layer(layer_spec *l, long long e, long long k, long long ffn);
void hf_qwen_moe_mlp(hf_ctx *c, hf_family fam, long long n_layers, layer_spec *ls);
void hf_softmax_attention(hf_ctx *c, hf_family fam, const hf_common *cm, layer_spec *ls);
void hf_deepseek_layers(hf_ctx *c, hf_family fam, const hf_common *cm, layer_spec *ls);
void hf_gla_layers(hf_ctx *c, const hf_common *cm, layer_spec *ls, int *any_softmax);
void hf_llama4_layers(hf_ctx *c, const hf_common *cm, layer_spec *ls);
void hf_qwen3_next_linear(hf_ctx *c, const hf_common *cm, layer_spec *ls);

/* api/hf_classic.c: gpt2, gpt_bigcode, opt, gpt_neox (one kind of layer,
 * LayerNorm, biases, a plain MLP): the family's index for model_type, or
 * -1; its IR (NULL on failure, recorded in c). */
int hf_classic_index(const char *model_type);
json_t *hf_classic_ir(hf_ctx *c, json_t *hf, const char *mts, int idx);

#endif
