/* core/roofline.h -- the Roofline Bound (docs/model.md F-ROOF).
 *
 * One device, infinite memory, no parallelism, no recompute: the whole global
 * batch runs as one micro-batch; T_step = sum over every op of
 * max(FLOPs/peak, bytes/HBM bandwidth); MFU = F_useful / (peak * T_step) with
 * F_useful = 3 * F_forward under the stated attention convention.
 */
#ifndef MFU_ROOFLINE_H
#define MFU_ROOFLINE_H

#include "error.h"
#include "hardware.h"
#include "model.h"
#include "ops.h"

typedef struct mfu_training {
    int64_t seq;                /* sequence length */
    double global_batch_tokens; /* tokens per optimizer step */
    mfu_dtype dtype;            /* GEMM dtype */
    mfu_attn_impl attn_impl;
    mfu_convention conv;        /* MFU convention for attention FLOPs */
    /* Mixed-precision state (docs/model.md F-MEM-STATE); 0 = the defaults:
     * fp32 main gradients reduced in fp32 (Megatron-LM forces
     * accumulate_allreduce_grads_in_fp32 with bf16 unless
     * --grad-reduce-in-bf16), fp32 Adam moments. */
    int grad_bf16;              /* gradients kept and reduced in bf16 */
    int moments_bf16;           /* Adam moments in bf16 (DeepSeek-V3 sec. 3.3.3) */
    int no_grad_overlap;        /* gradient reduction not overlapped with the backward */
    int pp_scatter_gather;      /* pipeline sends split over tp, all-gathered on arrival
                                 * (Megatron-LM before Megatron-Core) */
    int pp_no_overlap_p2p;      /* interleaved pipeline sends waited for, not overlapped */
    /* Megatron-LM before Megatron-Core's defaults (docs/model.md F-COMM-TP-SYNC,
     * F-TIME-WGRAD-ACC): */
    int tp_sync_bwd;            /* backward TP collectives waited for (no async all-reduce) */
    int wgrad_acc_unfused;      /* weight gradients added to the accumulated ones by a
                                 * separate kernel each micro-batch (no gradient-
                                 * accumulation fusion) */
    int ce_unfused;             /* the loss as Megatron's separate PyTorch ops, no
                                 * cross-entropy fusion (F-TIME-CE-UNFUSED) */
    int fp8_recipe;             /* MFU_FP8_*: FP8 scaling (F-TIME-FP8-AMAX) */
    double moe_imbalance;       /* dropless MoE: busiest EP rank's tokens / the mean (0, 1: balanced) */
    /* MaxText memory savers (docs/model.md F-MEM-VOCAB-TILES, F-MEM-OPT-OFFLOAD) */
    int64_t vocab_tiles;        /* num_vocab_tiling: the loss in this many token chunks (0, 1: off) */
    int optimizer_offload;      /* optimizer_memory_host_offload: Adam moments in host memory */
    /* F-MEM-LOGITS-EAGER: the loss as torchtitan runs it without
     * torch.compile, F.cross_entropy(pred.float()) (with ce_unfused's
     * passes) */
    int ce_eager;
} mfu_training;

typedef struct mfu_roofline {
    double f_useful_flops;      /* 3 * F_forward (model FLOPs of the step) */
    double f_exec_flops;        /* FLOPs the ops execute */
    double step_time_s;         /* sum of T_op */
    double mfu;
    double compute_bound_s;     /* time in compute-bound ops */
    double memory_bound_s;      /* time in memory-bound ops */
    double memory_bound_excess_s; /* sum over memory-bound ops of T_op - FLOPs/peak */
    int n_ops;
} mfu_roofline;

/* Useful (model) FLOPs of a step: 3 x forward (docs/model.md F-MFU). */
double mfu_useful_flops(const mfu_model *m, const mfu_training *t);

/* The bound alone, accumulated run by run in a scratch of MFU_SCRATCH_OPS
 * ops (out->n_ops counts every op; ops holds none of them afterwards). */
MFU_MUST_CHECK int mfu_roofline_totals(const mfu_model *m, const mfu_hardware *hw,
                                       const mfu_training *t, mfu_op *scratch, mfu_roofline *out);

/* Fill ops[0..max) with the inventory at roofline shapes and compute the
 * bound. Returns MFU_OK, or MFU_ETOOMANYOPS if max was too small (out is
 * then zeroed: no bound is given over a partial inventory). */
MFU_MUST_CHECK int mfu_roofline_compute(const mfu_model *m, const mfu_hardware *hw, const mfu_training *t,
                         mfu_op *ops, int max, mfu_roofline *out);

#endif
