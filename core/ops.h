/* core/ops.h -- the operator inventory (docs/model.md F-OP).
 *
 * For one micro-batch at given (possibly sharded) shapes, every forward and
 * backward operator of the model: FLOPs, HBM bytes, and what each forward op
 * saves for the backward (the activation memory model reads these).
 */
#ifndef MFU_OPS_H
#define MFU_OPS_H

#include "hardware.h"
#include "model.h"

typedef enum { MFU_FWD = 0, MFU_BWD = 1 } mfu_phase;

/* Op tags: what an op belongs to, for recompute policies and efficiency. */
enum {
    MFU_TAG_MATMUL = 1u << 0,    /* a GEMM (efficiency curve applies) */
    MFU_TAG_ATTN_CORE = 1u << 1, /* scores / softmax / AV (selective recompute) */
    MFU_TAG_MLP = 1u << 2,       /* MLP block (save_dot_except_mlp recomputes it) */
    MFU_TAG_LAYER = 1u << 3,     /* inside a transformer layer (full recompute) */
    MFU_TAG_EXPERT = 1u << 4,    /* routed-expert work (divided over ep) */
    MFU_TAG_WGRAD = 1u << 5,     /* weight-gradient GEMM (zero-bubble W pass) */
    MFU_TAG_TP_REPL = 1u << 6,   /* saved tensor replicated over tp without sp */
    MFU_TAG_FUSED_ATTN = 1u << 7, /* fused attention kernel (attention efficiency) */
    MFU_TAG_SCORES = 1u << 8,     /* s x s score tensors (unfused softmax, dropout) */
    MFU_TAG_SHARED = 1u << 9,     /* shared-expert MLP of an MoE block */
    /* a GEMM that stays in 16-bit under FP8 training (F-TIME-FP8: the LM
     * head and the MoE router): 16-bit operands, no quantization, the
     * 16-bit peak */
    MFU_TAG_HIGH_PREC = 1u << 10,
    /* a column-parallel linear that takes a block's tensor-parallel input
     * (QKV, MLP up, shared-expert up): Megatron hides that block's
     * backward collectives under its own dgrad and wgrad GEMMs
     * (F-COMM-TP-OVERLAP, F-COMM-TP-SP-BWD) */
    MFU_TAG_COLPAR = 1u << 11
};

/* Recompute modules (Megatron-LM --recompute-modules names, TransformerConfig
 * recompute_modules; ACT is the dense MLP activation that torchtitan's
 * op-level SAC and MaxText's "minimal" policies recompute and Megatron has
 * no module for). A saved tensor is freed when any module of its rc_free
 * set is recomputed; a forward op runs again when any of its rc_rerun set
 * is (docs/model.md F-RC-MODULES). */
enum {
    MFU_RCM_CORE_ATTN = 1u << 0,
    MFU_RCM_LAYERNORM = 1u << 1,
    MFU_RCM_MLP = 1u << 2,
    MFU_RCM_MOE_ACT = 1u << 3,
    MFU_RCM_MOE = 1u << 4,
    MFU_RCM_MLA_UP = 1u << 5,
    MFU_RCM_SHARED = 1u << 6,
    MFU_RCM_ACT = 1u << 7,
    /* the routed experts' grouped GEMMs and their activation rerun from
     * the dispatched tokens, which stay (torchtitan's op-level SAC: its
     * save list has no _grouped_mm and keeps all_to_all_single outputs) */
    MFU_RCM_EXPERT_GEMM = 1u << 8,
    MFU_RCM_COUNT = 9
};
/* Megatron-LM's recompute modules (core_v0.14+ for shared_experts) */
#define MFU_RCM_MEGATRON (MFU_RCM_CORE_ATTN | MFU_RCM_LAYERNORM | MFU_RCM_MLP | MFU_RCM_MOE_ACT | \
                          MFU_RCM_MOE | MFU_RCM_MLA_UP | MFU_RCM_SHARED)
extern const char *const mfu_rcm_names[MFU_RCM_COUNT];

/* MaxText checkpoint names (src/maxtext/configs/base.yml, layers/
 * decoders.py checkpoint_name): the output an op produces, which a MaxText
 * remat policy saves on the device, offloads to the host, or recomputes
 * (docs/model.md F-RC-MAXTEXT). MFU_MX_INPUT is the layer's input
 * (decoder_layer_input), no op's output. Ops of no category (norms, RoPE,
 * activations, residual adds, casts) are always recomputed; the down
 * projection's output (mlpwo) feeds only the residual stream, which the
 * next layer's input carries, so it is never recomputed. */
enum {
    MFU_MX_QKV = 1u << 0,     /* query/key/value/kv/qkv_proj */
    MFU_MX_CONTEXT = 1u << 1, /* context: the attention kernel's output */
    MFU_MX_OUT = 1u << 2,     /* out_proj */
    MFU_MX_WI = 1u << 3,      /* mlpwi, mlpwi_0/1 (and moe_mlpwi_*: the routing before them) */
    MFU_MX_WO = 1u << 4,      /* mlpwo (moe_mlpwo, the combine after it) */
    MFU_MX_INPUT = 1u << 5,   /* decoder_layer_input */
    MFU_MX_COUNT = 6
};
extern const char *const mfu_mx_names[MFU_MX_COUNT];

typedef struct mfu_op {
    const char *name;   /* static string */
    mfu_phase phase;
    unsigned tags;
    int run;            /* layer run index, -1 for embedding / head / loss */
    double count;       /* invocations: layers of the run (1 outside layers) */
    double flops;       /* executed FLOPs per invocation */
    double bytes;       /* HBM bytes per invocation */
    double gemm_flops;  /* FLOPs of one GEMM call (for the efficiency curve) */
    double gemm_out;    /* output elements of one GEMM call (F-TIME-WAVE); 0: not known */
    double gemm_k;      /* reduction length of one GEMM call (F-TIME-GEMM-K); 0: not known */
    double saved_bytes; /* fwd only: bytes kept for the backward */
    unsigned rc_free;   /* MFU_RCM_*: recomputing any of these frees saved_bytes */
    unsigned rc_rerun;  /* MFU_RCM_*: recomputing any of these runs this fwd op again */
    unsigned mx;        /* fwd only: the MaxText name of its output (MFU_MX_*), 0 for none */
    double kv_len;      /* fused softmax attention: the keys one kernel call runs over
                         * (F-TIME-ATTN-LEN); 0 for every other op */
    double out_bytes;   /* fwd only, with mx: the bytes of that output */
    /* fused softmax attention: the query/key and value head dimensions
     * of its per-head products (F-TIME-MXU); 0 for every other op */
    double head_dim_qk, head_dim_v;
    /* kernels the op launches, each paying F-TIME-KERNEL's launch and tail
     * (an FP8 cast under current scaling: amax, scale, cast) */
    double kernels;
    /* fwd only, F-RC-OP-SAC: under torchtitan's op-level SAC on a layer of
     * its family (the attention, and a dense MLP), the bytes this op leaves
     * kept and the share of it run again; sac_rerun < 0 where not given
     * (the policy's modules decide) */
    double sac_saved, sac_rerun;
} mfu_op;

typedef enum { MFU_ATTN_FLASH = 0, MFU_ATTN_UNFUSED } mfu_attn_impl;

/* FP8 scaling recipes (Transformer Engine's, as Megatron's --fp8-recipe
 * names them). Per-tensor current scaling (tensorwise) finds each tensor's
 * amax in a pass of its own before the cast (F-TIME-FP8-AMAX); the others
 * take the scale with the cast: delayed from the amax history, blockwise
 * and MXFP8 per block inside the quantizing kernel. */
enum { MFU_FP8_TENSORWISE = 0, MFU_FP8_DELAYED, MFU_FP8_BLOCKWISE, MFU_FP8_MXFP8, MFU_FP8_RECIPES };

/* Shapes of one micro-batch on one device. */
typedef struct mfu_shape {
    double mbs;          /* sequences per micro-batch */
    int64_t seq;         /* sequence length */
    int64_t tp, cp, ep, etp;
    int sp;              /* sequence parallel (with tp) */
    mfu_dtype dtype;
    mfu_attn_impl attn_impl;
    /* dropless MoE: the busiest expert-parallel rank's routed tokens over the
     * mean (training.moe_imbalance, F-MOE-LOAD); 0 or 1 = balanced */
    double moe_load;
    /* F-TIME-WGRAD-ACC: bytes per element of a gradient added to the
     * accumulated one by its own kernel (read the new gradient and the
     * sum, write the sum; 0: none counted): the embedding table's always,
     * every weight's with wgrad_unfused (no gradient-accumulation fusion) */
    double grad_acc_bytes;
    int wgrad_unfused;
    /* F-TIME-CE-UNFUSED: the cross-entropy as Megatron's vocab_parallel_
     * cross_entropy runs it, one PyTorch op per pass over the logits */
    int ce_unfused;
    /* F-TIME-FP8-AMAX: the FP8 scaling recipe (MFU_FP8_*), with dtype fp8 */
    int fp8_recipe;
    /* an MoE layer whose slots move only to and from their experts,
     * without Megatron-Core's chunk sorts (F-MOE-SORT, which one expert per
     * rank avoids) or FP8 padding copies (F-MOE-FP8-PAD, which padding in
     * the router avoids): the roofline's ideal, and XLA's (MaxText on
     * TPUs routes with its own sort) */
    int moe_no_copies;
    /* F-MEM-LOGITS-XLA: the loss as XLA compiles MaxText's -- the fp32
     * softmax fused into its consumers, the 16-bit logits kept instead */
    int xla_loss;
} mfu_shape;

/* Routed token slots on the busiest expert rank relative to the mean
 * (F-MOE-LOAD): a capacity factor above 1 pads every expert to capacity
 * (tokens beyond it are dropped, so no rank exceeds it); a dropless layer
 * (capacity_factor 1) carries the stated imbalance. */
static inline double mfu_moe_load(const mfu_mlp *p, double moe_load)
{
    return p->capacity_factor > 1.0 ? p->capacity_factor : moe_load > 1.0 ? moe_load : 1.0;
}

/* Sizes from the limits, so no inventory is ever cut short: one layer run
 * has at most MFU_MAX_LAYER_OPS ops (worst case today: MLA + unfused
 * attention with dropout + MoE with a gated shared expert and biases, FP8
 * casts, F-MOE-SORT and F-MOE-FP8-PAD = 95, 106 with unfused gradient
 * accumulation, 110 with post-norms; tests/unit/test_ops.c
 * builds it and checks the margin), the embedding and head at most
 * MFU_MAX_EDGE_OPS (23 with learned positions, dropout, unfused gradient
 * accumulation, the unfused loss and soft-capped logits; 22 more for each
 * MTP depth, F-OP-MTP, of which the model has at most MFU_MAX_MTP), and a
 * model at most MFU_MAX_RUNS runs and MFU_MAX_MTP MTP layers. */
#define MFU_MAX_LAYER_OPS 128
#define MFU_MAX_EDGE_OPS (32 + 24 * MFU_MAX_MTP)
#define MFU_MAX_OPS ((MFU_MAX_RUNS + MFU_MAX_MTP) * MFU_MAX_LAYER_OPS + MFU_MAX_EDGE_OPS)
/* Scratch for one layer run (or the embedding and head) at a time: what
 * every engine but the per-operator roofline table needs. */
#define MFU_SCRATCH_OPS (MFU_MAX_LAYER_OPS + MFU_MAX_EDGE_OPS)

/* Fill out[] with the ops of layer run r (count = layers of the run) and
 * return how many the run has. At most `max` are written: a return value
 * above `max` means the buffer was too small (nothing is silently dropped;
 * the caller must check). The same holds for the functions below. */
int mfu_ops_layer(const mfu_model *m, int r, const mfu_shape *s, mfu_op *out, int max);
/* The same, and where the MLP block's ops begin (*mlp_from; NULL: not
 * wanted): ops before it are the attention block's, which neither ep nor
 * etp changes. */
int mfu_ops_layer_at(const mfu_model *m, int r, const mfu_shape *s, mfu_op *out, int max, int *mlp_from);
/* Ops outside the layers: embedding (+ positions), final norm, LM head, loss. */
int mfu_ops_embed(const mfu_model *m, const mfu_shape *s, mfu_op *out, int max);
int mfu_ops_head(const mfu_model *m, const mfu_shape *s, mfu_op *out, int max);
/* Everything: embed, every run, head (a return above max: too small). */
int mfu_ops_model(const mfu_model *m, const mfu_shape *s, mfu_op *out, int max);

/* T_op = max(FLOPs / (peak * eff), bytes / (bw * hbm_eff)) (docs/model.md F-ROOF, F-TIME-OP).
 * With eff == NULL the ideal roofline. */
double mfu_op_time(const mfu_op *op, const mfu_hardware *hw, mfu_dtype dt,
                   const mfu_efficiency *eff);
int mfu_op_compute_bound(const mfu_op *op, const mfu_hardware *hw, mfu_dtype dt);

/* F-TIME-DISPATCH (docs/model.md): framework ops the host issues for one op
 * of the inventory, in units of one eager op's host time (host_op_s), and
 * an MoE layer's routing/permutation bookkeeping beyond the inventory:
 * forward before its dispatch sync, forward after it, backward. */
double mfu_op_host_kernels(const mfu_op *op, mfu_dtype dt);
void mfu_moe_host_kernels(mfu_dtype dt, double *fwd_pre, double *fwd_post, double *bwd);

/* The arithmetic intensity of a [M,K]x[K,N] matmul (docs/model.md F-OP,
 * F-ROOF: Williams et al. 2009), MNK/(MN+NK+MK) for 2-byte elements
 * (FLOPs per byte = 2MNK / (2(MN+NK+MK))). */
double mfu_matmul_intensity(double M, double N, double K, double elem_bytes);
/* Attention's arithmetic intensity 2T/(T/S + H_kv/H) (docs/model.md F-OP:
 * FLOPs per byte, 2-byte elements, T queries, S keys). */
double mfu_attention_intensity(double T, double S, double H, double H_kv);

#endif
