/* core/system_int.h -- what the System Bound's files share and nobody else
 * needs (SQLite's sqliteInt.h habit): config.c (legality, splits,
 * in-flight), memory.c (Q1), system.c (costs, time, evaluation). */
#ifndef MFU_SYSTEM_INT_H
#define MFU_SYSTEM_INT_H

#include <math.h>
#include <string.h>

#include "system.h"

static inline double mfu_dmax(double a, double b) { return a > b ? a : b; }
/* fmin for the finite operands of the model: inlined (-std=c11 keeps
 * fmin a libm call, through the PLT, for its NaN rules) */
static inline double mfu_dmin(double a, double b) { return a < b ? a : b; }

/* memory.c: a shape's buffers (F-MEM-BUF), [0] pp = 1, [1] pp > 1 */
void mfu_shape_buffers(const mfu_system *sys, const mfu_shape *s, double out[2]);


/* The pipeline rank holding the LM head, the final norm and the loss: the
 * last one, except in a V-shaped schedule, whose rank 0 holds the first and
 * the last virtual stage (DualPipeV; torchtitan pipeline_parallel.py
 * _get_pp_rank_to_stage_indices_mapping, style "v"). */
static inline int64_t mfu_head_rank(const mfu_config *c)
{
    return c->schedule == MFU_SCHED_DUALPIPEV ? 0 : c->ax[MFU_AX_PP] - 1;
}

/* F-OP-MTP: the multi-token prediction layers rank r holds besides its
 * decoder layers -- all of them on the rank that holds the LM head and
 * loss (Megatron places MTP with the loss on the last stage:
 * pipeline_parallel_layer_layout.py, MTP layers last). Each counts as one
 * more of the stage's layers: its time, activations, recompute and
 * communication are a layer's (the model's average layer). */
static inline int64_t mfu_stage_mtp(const mfu_system *sys, const mfu_config *c, int64_t r)
{
    return r == mfu_head_rank(c) ? (int64_t)sys->model->mtp_layers : 0;
}

/* Fully recomputed layers on a stage of `ls` layers under c (0 unless the
 * policy is full). */
static inline int64_t mfu_rc_layers(const mfu_system *sys, const mfu_config *c, int64_t ls)
{
    if (sys->rc[c->recompute].kind != MFU_RCK_FULL) return 0;
    return c->recompute_layers < 0 || c->recompute_layers > ls ? ls : c->recompute_layers;
}

/* Parameters held by one device of pipeline rank r (before any data-parallel
 * sharding): the dense part (split over tp) and the routed experts (split
 * over ep * etp). memory.c. */
typedef struct mfu_dev_params { double dense, expert; } mfu_dev_params;
mfu_dev_params mfu_device_params(const mfu_system *sys, const mfu_config *c, int64_t r);

/* The groups a parameter's gradients are reduced over and its optimizer
 * state may be sharded over (docs/model.md F-MEM-SHARD): dense parameters
 * are replicated over dp * cp (Megatron shards its distributed optimizer
 * over the DP x CP group: optimizer/__init__.py intra_dp_cp_group) and
 * sharded over fsdp; experts over edp = dp*fsdp*cp*tp / (ep*etp)
 * (expert data parallel), of which fsdp > 1 shards efsdp = edp / dp. */
static inline double mfu_dense_replicas(const mfu_config *c)
{
    return (double)(c->ax[MFU_AX_DP] * c->ax[MFU_AX_CP]);
}
static inline double mfu_expert_dp(const mfu_config *c)
{
    return (double)(c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP] * c->ax[MFU_AX_CP] * c->ax[MFU_AX_TP]) /
           (double)(c->ax[MFU_AX_EP] * c->etp);
}
static inline double mfu_expert_fsdp(const mfu_config *c)
{
    return mfu_fsdp_on(c) ? mfu_expert_dp(c) / (double)c->ax[MFU_AX_DP] : 1.0;
}

/* step.c: the time of one step under one profile (eff NULL: the bound),
 * and the FLOP totals and batch it reads (ev). */
void mfu_step_times(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                    const mfu_efficiency *eff, const mfu_eval *ev, mfu_times *tm);
void mfu_eval_totals(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *bound,
                     mfu_eval *out);

#endif
