/* core/model.h -- the model IR: a layer pattern of runs {count, attention, mlp}.
 *
 * Pure C11: no I/O, no globals but const tables. Sizes are int64_t; derived
 * counts (parameters, FLOPs) are doubles, exact below 2^53.
 *
 * The JSON form of this struct is
 * documented in docs/model-ir.md and parsed by api/.
 */
#ifndef MFU_MODEL_H
#define MFU_MODEL_H

#include <stdint.h>

#define MFU_MAX_RUNS 128
/* multi-token prediction depths (F-OP-MTP; DeepSeek-V3 trains with 1) */
#define MFU_MAX_MTP 4
#define MFU_NAME_LEN 64
#define MFU_MAX_APPROX 16  /* approximation notes a model carries */
#define MFU_APPROX_LEN 192

typedef enum { MFU_ATTN_MHA = 0, MFU_ATTN_MLA, MFU_ATTN_GLA, MFU_ATTN_GDN } mfu_attn_kind;
/* Per-head normalisation of q and k before the scores (Qwen3: RMSNorm with a
 * weight over head_dim; Llama 4: an L2 norm without weights). */
typedef enum { MFU_QKN_NONE = 0, MFU_QKN_RMS, MFU_QKN_L2 } mfu_qk_norm;
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
    int64_t chunk;         /* mha: chunked attention (Llama 4 attention_chunk_size):
                            * queries attend causally within blocks of `chunk`
                            * tokens only; 0 = none */
    int64_t rotary_dim;    /* mha: dims of each head RoPE rotates (partial
                            * rotary); 0 = head_dim */
    int nope;              /* mha: no positional encoding in this layer (Llama 4
                            * NoPE layers): the RoPE op is absent */
    int sinks;             /* mha: a learned sink logit per head in the softmax
                            * denominator (gpt-oss) */
    int out_bias;          /* mha: bias on the output projection */
    mfu_qk_norm qk_norm;   /* mha: norm of q and k per head */
    /* mla (DeepSeek-V2/V3) */
    int64_t q_lora_rank;   /* 0 = no low-rank q path */
    int64_t kv_lora_rank;
    int64_t qk_nope_head_dim;
    int64_t qk_rope_head_dim;
    int64_t v_head_dim;
    /* gla (gated linear attention, chunked kernel) and gdn (Gated DeltaNet):
     * gla: key_dim / value_dim are totals over n_heads;
     * gdn: n_heads value heads (the recurrent states), n_kv_heads query/key
     *      heads (repeated to n_heads for the kernel), key_dim the total over
     *      the n_kv_heads q/k heads, value_dim the total over n_heads */
    int64_t key_dim;       /* total key width */
    int64_t value_dim;     /* total value width */
    int64_t conv_size;     /* gdn: depthwise causal conv kernel over q, k, v (0 = none) */
    int64_t gate_rank;     /* low-rank forget-gate projection (fla: 16) */
    int64_t chunk_size;    /* chunk length C of the chunk kernel (fla: 64) */
    int output_gate;       /* gla: g_proj h x value_dim + swish gate;
                            * gdn: z_proj h x value_dim + gated RMSNorm;
                            * mha: q_proj doubled, o = attn * sigmoid(gate)
                            *      (Qwen3-Next gated attention) */
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
    double capacity_factor; /* 1.0 = dropless, balanced (docs/model.md F-MOE-LOAD) */
    int64_t route_nodes;    /* node-limited routing: a token's experts span at
                             * most this many nodes and cross the network once
                             * per node (DeepSeek-V3 sec. 2.1.2, topk_group);
                             * 0 = unlimited, one transfer per expert copy */
    int bias;               /* moe: biases on the router and on every expert's
                             * projections (gpt-oss) */
    int shared_gate;        /* moe: a sigmoid gate (h x 1) scales the shared
                             * experts' output (Qwen2-MoE / Qwen3-Next
                             * shared_expert_gate) */
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
    int post_norms;        /* a norm on each block's output before its residual add
                            * ("sandwich": Gemma 2's post_attention_layernorm and
                            * post_feedforward_layernorm, F-OP-POSTNORM) */
    int logit_softcap;     /* logits soft-capped, cap * tanh(logits / cap), before
                            * the loss (Gemma 2 final_logit_softcapping, F-OP-SOFTCAP) */
    int mtp_layers;        /* multi-token prediction depths (DeepSeek-V3's MTP module,
                            * Megatron --mtp-num-layers; F-OP-MTP): each a copy of the
                            * last layer with its norms, projection, head and loss,
                            * trained with the model but not part of its parameters */
    int n_runs;
    mfu_layer_run runs[MFU_MAX_RUNS];
    /* What the description approximates, in words (the importer's and the
     * operator inventory's): echoed in results as model.approximations.
     * Informational: nothing in the core reads them. */
    int n_approx;
    char approx[MFU_MAX_APPROX][MFU_APPROX_LEN];
} mfu_model;

/* MFU conventions for attention FLOPs (docs/model.md F-MFU). */
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
/* The same with chunked attention: the sequence cut into blocks of `chunk`
 * tokens (0 = one block), each attended as above on its own (docs/model.md
 * F-OP-CHUNK). */
double mfu_attn_pairs_chunked(int64_t s, int64_t window, int64_t chunk, mfu_convention conv);
/* F-OP-GDN: chunked gated-delta-rule FLOPs per token per head, chunk C, head
 * widths dk, dv; useful = 1 keeps the causal (lower-triangle) halves only. */
double mfu_gdn_flops_per_token_head(double C, double dk, double dv, int useful);
/* Pairs of one attention layer (window and chunk of a). */
double mfu_attn_layer_pairs(const mfu_attention *a, int64_t s, mfu_convention conv);

#endif
