/* core/model.h -- the model IR: a layer pattern of runs {count, attention, mlp}.
 *
 * Pure C11: no I/O, no globals but const tables. Sizes are int64_t; derived
 * counts (parameters, FLOPs) are doubles, exact below 2^53.
 *
 * Design: ../shared/design.md "The model IR". The JSON form of this struct is
 * documented in docs/model-ir.md and parsed by api/.
 */
#ifndef MFU_MODEL_H
#define MFU_MODEL_H

#include <stdint.h>

#define MFU_MAX_RUNS 128
#define MFU_NAME_LEN 64

typedef enum { MFU_ATTN_MHA = 0, MFU_ATTN_MLA, MFU_ATTN_GLA } mfu_attn_kind;
typedef enum { MFU_MLP_DENSE = 0, MFU_MLP_MOE } mfu_mlp_kind;
typedef enum { MFU_ACT_SILU = 0, MFU_ACT_GELU, MFU_ACT_RELU } mfu_act;
typedef enum { MFU_NORM_RMS = 0, MFU_NORM_LAYER } mfu_norm;
typedef enum { MFU_POS_ROPE = 0, MFU_POS_LEARNED, MFU_POS_NONE } mfu_pos;

typedef struct mfu_attention {
    mfu_attn_kind kind;
    int64_t n_heads;       /* query heads (all kinds) */
    int64_t n_kv_heads;    /* mha: KV heads (GQA/MQA); gla: K/V/gate groups */
    int64_t head_dim;      /* mha: per-head q/k/v width */
    int64_t window;        /* mha: sliding window in tokens, 0 = none */
    /* mla (DeepSeek-V2/V3) */
    int64_t q_lora_rank;   /* 0 = no low-rank q path */
    int64_t kv_lora_rank;
    int64_t qk_nope_head_dim;
    int64_t qk_rope_head_dim;
    int64_t v_head_dim;
    /* gla (gated linear attention, chunked kernel) */
    int64_t key_dim;       /* total key width over heads */
    int64_t value_dim;     /* total value width over heads */
    int64_t gate_rank;     /* low-rank forget-gate projection (fla: 16) */
    int64_t chunk_size;    /* chunk length C of the chunk kernel (fla: 64) */
    int output_gate;       /* gla: g_proj h x value_dim + swish gate */
    int qkv_bias;          /* bias on q/k/v projections */
} mfu_attention;

typedef struct mfu_mlp {
    mfu_mlp_kind kind;
    int gated;             /* SwiGLU-style: 3 matrices, else 2 */
    mfu_act act;
    int64_t ffn_dim;       /* dense */
    int64_t n_experts;     /* moe: routed experts */
    int64_t top_k;
    int64_t expert_ffn_dim;
    int64_t n_shared_experts;
    int64_t shared_ffn_dim; /* width of each shared expert */
    double capacity_factor; /* 1.0 = perfectly balanced (seed 000 roofline) */
    int64_t route_nodes;    /* node-limited routing: a token's experts span at
                             * most this many nodes and cross the network once
                             * per node (DeepSeek-V3 sec. 2.1.2, topk_group);
                             * 0 = unlimited, one transfer per expert copy */
} mfu_mlp;

typedef struct mfu_layer_run {
    int64_t count;
    mfu_attention attn;
    mfu_mlp mlp;
} mfu_layer_run;

typedef struct mfu_model {
    char name[MFU_NAME_LEN];
    int64_t d_model;
    int64_t vocab;
    int tie_embeddings;
    mfu_norm norm;
    mfu_pos position;
    int64_t max_positions; /* learned position table rows (position = learned) */
    int bias;              /* linear biases (GPT-2/3 style) on every projection */
    int dropout;           /* dropout layers (Korthikanti's GPT block); masks cost memory */
    int n_runs;
    mfu_layer_run runs[MFU_MAX_RUNS];
} mfu_model;

/* MFU conventions for attention FLOPs (design.md "Roofline Bound"). */
typedef enum {
    MFU_CONV_CAUSAL = 0, /* only the causal (lower) triangle counts */
    MFU_CONV_FULL,       /* full s^2 (Megatron / Korthikanti papers, PaLM) */
    MFU_CONV_NONE        /* 6 N T: attention core not counted */
} mfu_convention;

typedef struct mfu_params {
    double total;        /* every parameter, embeddings included */
    double active;       /* per token: routed experts counted top_k of n_experts */
    double embedding;    /* token (+ learned position) embeddings */
    double head;         /* LM head (0 when tied) */
} mfu_params;

int64_t mfu_model_layers(const mfu_model *m);
/* Parameters of one layer of run r (total and per-token active). */
void mfu_run_params(const mfu_model *m, int r, double *total, double *active);
/* Parameters of the attention block / the MLP block alone of run r. */
double mfu_attn_params(const mfu_model *m, const mfu_attention *a);
double mfu_mlp_params(const mfu_model *m, const mfu_mlp *p, int active_only);
/* Expert (routed) parameters of one layer: those divided over ep. */
double mfu_expert_params(const mfu_model *m, const mfu_mlp *p);
void mfu_model_params(const mfu_model *m, mfu_params *out);

/* Forward FLOPs per token, averaged over a sequence of seq_len tokens, under
 * a convention (model FLOPs: what MFU counts). */
double mfu_model_flops_per_token_fwd(const mfu_model *m, int64_t seq_len, mfu_convention conv);
/* The same for one layer of run r, and its split (attention core alone). */
double mfu_run_flops_per_token_fwd(const mfu_model *m, int r, int64_t seq_len, mfu_convention conv);

/* Number of (query, key) pairs one sequence of length s attends to, per head,
 * with a sliding window w (0 = none): causal counts i<=j pairs, full s*min(s,w). */
double mfu_attn_pairs(int64_t s, int64_t window, mfu_convention conv);

#endif
