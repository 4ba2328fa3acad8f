/* core/system.h -- the System Bound of one parallel configuration (seed 000
 * Phase 2: Q1 memory, Q2 compute + communication, Q3 overlap; bubble).
 *
 * Axes (design.md "System Bound"), product = devices: dp, fsdp, tp, ep, pp, cp.
 *   batch split over dp * fsdp * ep (ep is data parallel for non-expert
 *   layers); GBS_tokens = mbs * grad_accum * dp * fsdp * ep * seq (seed 003
 *   step 2). Placement on the network, innermost first: tp, cp, ep, fsdp, dp,
 *   pp; a collective uses the slowest tier its group spans.
 */
#ifndef MFU_SYSTEM_H
#define MFU_SYSTEM_H

#include "hardware.h"
#include "model.h"
#include "ops.h"
#include "roofline.h"

typedef enum { MFU_SCHED_1F1B = 0, MFU_SCHED_INTERLEAVED, MFU_SCHED_ZB, MFU_SCHED_COUNT } mfu_schedule;
typedef enum {
    MFU_RC_NONE = 0,
    MFU_RC_SELECTIVE,           /* recompute the attention core (Korthikanti sec. 5) */
    MFU_RC_SAVE_DOT_EXCEPT_MLP, /* recompute the MLP forward (seed 000 table) */
    MFU_RC_FULL,                /* recompute the whole layer forward */
    MFU_RC_COUNT
} mfu_recompute;

enum { MFU_AX_DP = 0, MFU_AX_FSDP, MFU_AX_TP, MFU_AX_EP, MFU_AX_PP, MFU_AX_CP, MFU_AX_COUNT };

typedef struct mfu_config {
    int64_t ax[MFU_AX_COUNT]; /* dp, fsdp, tp, ep, pp, cp */
    int sp;                   /* sequence parallel (needs tp > 1 to matter) */
    int zero;                 /* 0, 1, 2: ZeRO stage on the dp axis */
    int64_t etp;              /* expert tensor parallel: 1 or tp */
    mfu_schedule schedule;
    int64_t vpp;              /* virtual stages per device (interleaved) */
    int64_t mbs;              /* sequences per micro-batch */
    int64_t grad_accum;       /* micro-batches per step per pipeline */
    mfu_recompute recompute;
    int64_t recompute_layers; /* with full: layers per stage recomputed; -1 = all */
    int tp_overlap;           /* TP communication overlapped with GEMMs */
    int ep_overlap;           /* EP all-to-all chunked under expert compute */
} mfu_config;

/* Named gap components: roofline MFU - system MFU = sum of their MFU points. */
enum {
    MFU_GAP_MEMORY_BOUND = 0, /* memory-bound ops at sharded shapes beyond the roofline's */
    MFU_GAP_KERNEL_EFFICIENCY,/* expected only: GEMM / attention / HBM efficiency */
    MFU_GAP_RECOMPUTE,
    MFU_GAP_COMM_TP,
    MFU_GAP_COMM_CP,
    MFU_GAP_COMM_EP,
    MFU_GAP_COMM_FSDP,
    MFU_GAP_COMM_DP,
    MFU_GAP_COMM_PP,
    MFU_GAP_BUBBLE,
    MFU_GAP_OPTIMIZER,
    MFU_GAP_OVERHEAD,
    MFU_GAP_COUNT
};
extern const char *const mfu_gap_names[MFU_GAP_COUNT];

enum { MFU_COMM_TP = 0, MFU_COMM_CP, MFU_COMM_EP, MFU_COMM_FSDP, MFU_COMM_DP, MFU_COMM_PP,
       MFU_COMM_COUNT };
extern const char *const mfu_comm_names[MFU_COMM_COUNT];

typedef struct mfu_memory {
    double weights_bytes, grads_bytes, optimizer_bytes, activations_bytes, buffers_bytes,
        reserve_bytes, total_bytes, capacity_bytes, headroom_bytes;
} mfu_memory;

/* Time of one step on the busiest device, one set per profile (bound/expected). */
typedef struct mfu_times {
    double compute_s;     /* fwd + bwd ops, no recompute */
    double recompute_s;   /* recomputed forward ops */
    double comm_total_s[MFU_COMM_COUNT];   /* link time per axis */
    double comm_exposed_s[MFU_COMM_COUNT]; /* part not hidden under compute */
    double bubble_s;
    double optimizer_s;
    double overhead_s;
    double step_time_s;
    double mfu, hfu;
    double gap_s[MFU_GAP_COUNT];           /* vs the roofline step (see system.c) */
} mfu_times;

typedef struct mfu_eval {
    int feasible;
    mfu_memory mem;
    mfu_times bound, expected;
    double tokens_per_s;          /* expected */
    double overlap_ratio[MFU_COMM_COUNT]; /* seed 003: t_comm / t_compute per axis */
    double f_useful_flops, f_hw_flops;     /* per step, all devices */
    int64_t global_batch_tokens;
    int64_t micro_batches;        /* per pipeline per step (= grad_accum) */
} mfu_eval;

/* What every configuration shares: the model, hardware, training settings,
 * the roofline, and per-model constants computed once. */
typedef struct mfu_system {
    const mfu_model *model;
    const mfu_hardware *hw;
    mfu_training train;
    int64_t devices;
    double roofline_mfu;
    double f_fwd_per_token;       /* model FLOPs per token (convention) */
    double params_total, params_active, params_expert, params_embed;
    int64_t layers;
    double roof_step_per_token_s; /* roofline T_step / global batch tokens */
    int64_t moe_layers;
    const mfu_mlp *moe_mlp;       /* the MoE block (of the last MoE run), NULL if dense */
    double layer_params_dense;    /* non-expert params of all layers */
    double reserve_frac;          /* fraction of HBM kept for fragmentation */
    double reserve_fixed_bytes;   /* CUDA context, NCCL buffers */
    double bucket_bytes;          /* DP gradient bucket */
    double weight_bytes, grad_bytes, optim_bytes; /* per parameter */
    double grad_comm_bytes;       /* per gradient element reduced */
} mfu_system;

/* Prepare the shared part (computes the roofline once; ops is scratch of
 * MFU_MAX_OPS entries). */
void mfu_system_init(mfu_system *sys, const mfu_model *m, const mfu_hardware *hw,
                     const mfu_training *t, int64_t devices, mfu_op *ops);

/* Legality (divisibility) of a configuration: 0 if legal, else a reason
 * index into mfu_prune_names and *why a short static text. */
enum { MFU_PRUNE_DIVISIBILITY = 0, MFU_PRUNE_BATCH, MFU_PRUNE_MEMORY, MFU_PRUNE_BOUND,
       MFU_PRUNE_CONSTRAINT, MFU_PRUNE_COUNT };
extern const char *const mfu_prune_names[MFU_PRUNE_COUNT];
int mfu_config_check(const mfu_system *sys, const mfu_config *c, const char **why);
/* The two halves: axes and micro-batch shape; the switches below them. */
int mfu_config_check_shape(const mfu_system *sys, const mfu_config *c, const char **why);
int mfu_config_check_point(const mfu_system *sys, const mfu_config *c, const char **why);

/* Model one configuration fully. ops is scratch (MFU_MAX_OPS entries).
 * Returns 0; out->feasible says whether memory fits. */
int mfu_evaluate(const mfu_system *sys, const mfu_config *c, mfu_op *ops, mfu_eval *out);

/* Memory only (cheap; used by the search before the full evaluation). */
void mfu_memory_model(const mfu_system *sys, const mfu_config *c, mfu_op *ops, mfu_memory *out);

/* Pipeline bubble as a fraction of the ideal pipeline time (Narayanan et
 * al. 2021 sec. 2.2; ZB-H1: Qi et al. 2023, DeepSeek-V3 Table 2).
 * w_frac = W / (F + B): the weight-gradient share of a micro-batch. */
double mfu_bubble_fraction(mfu_schedule s, int64_t pp, int64_t vpp, int64_t m, double w_frac);

/* Per-shape costs of one micro-batch on one device, for one profile: what
 * the search caches per (tp, cp, ep, etp, sp, mbs). Filled from the op
 * inventory by mfu_shape_costs(). */
typedef struct mfu_layer_cost {
    double fwd_s, bwd_s, wgrad_s;  /* all ops of one layer */
    double gemm_s;                 /* matmul ops, fwd + bwd (TP overlap) */
    double attn_core_s;            /* attention core fwd + bwd (CP overlap) */
    double expert_s;               /* routed-expert ops fwd + bwd (EP overlap) */
    double rc_s[MFU_RC_COUNT];     /* recomputed forward time per policy */
    double rc_flops[MFU_RC_COUNT];
    double saved_bytes[MFU_RC_COUNT]; /* activations kept per policy */
    double fwd_flops;
} mfu_layer_cost;

typedef struct mfu_shape_cost {
    mfu_shape shape;
    mfu_layer_cost avg;            /* per layer, averaged over the model's layers */
    mfu_layer_cost avg_moe;        /* MoE layers only (zero if none) */
    double embed_fwd_s, embed_bwd_s, embed_saved;
    double head_fwd_s, head_bwd_s, head_saved;
} mfu_shape_cost;

/* eff NULL = ideal (bound). ops: scratch of MFU_MAX_OPS. */
void mfu_shape_costs(const mfu_system *sys, const mfu_shape *s, const mfu_efficiency *eff,
                     mfu_op *ops, mfu_shape_cost *out);

/* Evaluate with precomputed costs (bound and expected); mem: the memory
 * model's answer if the caller has it, else NULL. */
int mfu_evaluate_costs(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *bound,
                       const mfu_shape_cost *expected, const mfu_memory *mem, mfu_eval *out);
/* Step time of one profile only (k: that profile's costs; bound: the
 * bound costs, for recompute FLOPs), for ranking before a full evaluation. */
double mfu_step_time(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                     const mfu_shape_cost *bound, int expected);
/* Memory from precomputed (bound) costs. */
void mfu_memory_costs(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                      mfu_memory *out);
/* exact = 0: an infeasible answer may stop at the first stage that does not
 * fit (the search only needs to know that it does not). */
void mfu_memory_costs_ex(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                         int exact, mfu_memory *out);
/* Shape of a config's micro-batch. */
void mfu_config_shape(const mfu_system *sys, const mfu_config *c, mfu_shape *s);

#endif
