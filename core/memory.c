/* core/memory.c -- Q1: does a configuration fit? Memory per pipeline stage
 * as the frameworks allocate it, against what the device exposes
 * (docs/model.md F-MEM-*).
 *
 * Per device of pipeline rank r:
 *   weights + gradients + optimizer state  (F-MEM-STATE, by sharding policy)
 * + activations: in-flight micro-batches x the stage's layers x the saved
 *   bytes per layer under the recompute policy, the embedding's on the
 *   first stage, the loss's fp32 logits on the last  (F-MEM-ACT)
 * + buffers: gathered FSDP layers, MoE dispatch/combine, pipeline p2p,
 *   sequence-parallel gathers  (F-MEM-BUF)
 * + reserve: context and collective buffers (fixed) and allocator
 *   fragmentation (a fraction of the rest)  (F-MEM-RESERVE).
 *
 * Assumptions (named):
 *  - a stage's layers are the model's average layer (a hybrid model's
 *    dense and MoE layers are spread evenly over the stages);
 *  - the backward of one layer holds gradients of its activations as large
 *    as what the layer saved (one layer's saved bytes, transient);
 *  - a recomputed layer rematerialises its full activations once, during
 *    its own backward.
 */
#include "system_int.h"

mfu_dev_params mfu_device_params(const mfu_system *sys, const mfu_config *c, int64_t r)
{
    double tp = (double)c->ax[MFU_AX_TP], ep = (double)c->ax[MFU_AX_EP];
    int64_t pp = c->ax[MFU_AX_PP];
    double ls = (double)(mfu_stage_layers(sys, c, r) + mfu_stage_mtp(sys, c, r));
    mfu_dev_params p;
    p.dense = ls * sys->layer_dense_avg;
    p.expert = ls * sys->layer_expert_avg / (ep * (double)c->etp);
    int64_t hr = mfu_head_rank(c);
    /* F-OP-MTP: each depth's projection (2h x h, column-parallel) */
    double h = (double)sys->model->d_model;
    p.dense += (double)mfu_stage_mtp(sys, c, r) * 2.0 * h * h;
    if (pp == 1) {
        p.dense += sys->embed_params + (sys->model->tie_embeddings ? 0.0 : sys->head_params);
    } else {
        /* first stage: token (+ position) embeddings; last: the LM head (a
         * copy of the embedding when tied) -- both on rank 0 in a V */
        if (r == 0) p.dense += sys->embed_params;
        if (r == hr) p.dense += sys->head_params;
        /* F-OP-MTP: the MTP layers' stage builds its own embedding for
         * the shifted tokens (Megatron-Core gpt_model.py: the embedding
         * "if self.pre_process or self.mtp_process"), as a tied head's
         * copy is kept */
        if (r == hr && r != 0 && sys->model->mtp_layers > 0) p.dense += sys->embed_params;
    }
    p.dense /= tp; /* vocab-parallel embedding and head too */
    /* the final norm (replicated over tp) on the last stage, and each MTP
     * depth's three (enorm, hnorm, its final norm) */
    if (r == hr) p.dense += sys->final_params * (1.0 + 3.0 * (double)sys->model->mtp_layers);
    return p;
}

static void state_bytes_(const mfu_system *sys, const mfu_config *c, mfu_dev_params d, int64_t layers,
                         mfu_memory *out);

/* Weights, gradients, optimizer state (F-MEM-STATE); with the optimizer
 * offloaded (MaxText optimizer_memory_host_offload: opt_state, Adam's
 * moments, in pinned host memory, moved to the device for the update --
 * pre_train/train.py, maxtext_utils.py), the moments are host_bytes. */
static void state_bytes(const mfu_system *sys, const mfu_config *c, mfu_dev_params d, int64_t layers,
                        mfu_memory *out)
{
    state_bytes_(sys, c, d, layers, out);
    out->host_bytes = 0.0;
    if (sys->train.optimizer_offload) {
        double opt = sys->master_bytes + sys->moment_bytes;
        double moments = opt > 0 ? out->optimizer_bytes * sys->moment_bytes / opt : 0.0;
        out->optimizer_bytes -= moments;
        out->host_bytes = moments;
    }
}

static void state_bytes_(const mfu_system *sys, const mfu_config *c, mfu_dev_params d, int64_t layers,
                         mfu_memory *out)
{
    double wb = sys->weight_bytes, gb = sys->grad_bytes;
    double opt = sys->master_bytes + sys->moment_bytes;
    double P = d.dense + d.expert;
    /* one transformer layer's parameters on this device */
    double per_layer = sys->layer_dense_avg / (double)c->ax[MFU_AX_TP] +
                       sys->layer_expert_avg / (double)(c->ax[MFU_AX_EP] * c->etp);
    (void)layers;
    if (mfu_fsdp_on(c)) {
        /* ZeRO-3 / FSDP2: dense shards over fsdp * cp (torchtitan shards
         * over dp_shard x cp; MaxText's context axis shards weights too),
         * experts over efsdp. The sharded fp32 parameter is the master copy
         * (FSDP2 MixedPrecisionPolicy param_dtype bf16, fp32 sharded). */
        double Fd = (double)(c->ax[MFU_AX_FSDP] * c->ax[MFU_AX_CP]);
        double shard = d.dense / Fd + d.expert / mfu_expert_fsdp(c);
        out->optimizer_bytes = opt * shard;
        if (c->ax[MFU_AX_PP] > 1 && sys->hw->platform == MFU_PLATFORM_GPU) {
            /* torchtitan with PP (FW-T8): no reshard after forward, the
             * pipelining schedule turns gradient sync and reshard-after-
             * backward off until the last micro-batch: the stage's bf16
             * parameters stay gathered and its gradients accumulate
             * unsharded in reduce_dtype fp32 (stage.py
             * backward_maybe_with_nosync; FSDPParam
             * to_accumulated_grad_if_needed) */
            out->weights_bytes = wb * P;
            out->grads_bytes = 4.0 * P + gb * shard;
        } else if (sys->hw->platform == MFU_PLATFORM_TPU) {
            /* XLA (MaxText's scanned layers): one layer (one scanned unit)
             * gathered at a time,
             * its weights and its gradient in bf16 -- "a single layer of
             * weights ... roughly 10B params per layer, which corresponds
             * to 40GiB of bf16 weights and gradients" (MaxText
             * docs/guides/optimization/custom_model.md) */
            double unit = (double)sys->scan_unit * per_layer; /* F-MEM-SCAN-UNIT */
            out->weights_bytes = wb * unit;
            out->grads_bytes = gb * shard + 2.0 * unit;
        } else {
            /* gathered per layer and micro-batch: the current and the
             * prefetched layer in bf16, one layer's unsharded gradient
             * before its reduce-scatter */
            out->weights_bytes = 2.0 * wb * per_layer;
            out->grads_bytes = gb * shard + gb * per_layer;
        }
        return;
    }
    double R = mfu_dense_replicas(c), Re = mfu_expert_dp(c);
    double sharded = d.dense / R + d.expert / Re;
    out->weights_bytes = wb * P;
    switch (c->zero) {
    case 0: /* DDP: everything replicated */
        out->grads_bytes = gb * P;
        out->optimizer_bytes = opt * P;
        break;
    case 1: /* Megatron distributed optimizer: 6 + 12/d bytes per parameter
             * (docs/distrib_optimizer.md table) */
        out->grads_bytes = gb * P;
        out->optimizer_bytes = opt * sharded;
        break;
    default: /* ZeRO-2: gradients reduce-scattered per micro-batch; one
              * layer's unsharded gradient lives before its reduce-scatter */
        out->grads_bytes = gb * sharded + gb * per_layer;
        out->optimizer_bytes = opt * sharded;
        break;
    }
}

/* Collective communicators a rank belongs to (each holds buffers). */
static int communicators(const mfu_system *sys, const mfu_config *c)
{
    int n = 0;
    n += c->ax[MFU_AX_TP] > 1;
    n += c->ax[MFU_AX_CP] > 1;
    n += mfu_fsdp_on(c);
    /* the dense replicas' group: dp x cp, or dp where FSDP shards over cp */
    n += (mfu_fsdp_on(c) ? (double)c->ax[MFU_AX_DP] : mfu_dense_replicas(c)) > 1;
    n += c->ax[MFU_AX_PP] > 1;
    if (sys->moe_layers > 0) {
        int64_t edp = mfu_expert_dp(c);
        n += c->ax[MFU_AX_EP] > 1;
        n += edp > 1 && edp != mfu_dense_replicas(c);
    }
    return n;
}

/* What rank r holds whatever the schedule, micro-batch and policy
 * (mfu_stage_state, core/system.h). */
static void stage_state_of(const mfu_system *sys, const mfu_config *c, int64_t r, mfu_stage_state *out)
{
    mfu_memory m;
    int64_t ls = mfu_stage_layers(sys, c, r) + mfu_stage_mtp(sys, c, r);
    state_bytes(sys, c, mfu_device_params(sys, c, r), ls, &m);
    out->layers = ls;
    /* F-MEM-ACT: Megatron's interleaved order runs each group's forwards
     * chunk 0 first and its backwards chunk v-1 first, so at the peak the
     * early chunks are the ones held; where the split leaves them larger (a
     * remainder goes to the earliest virtual stages) a micro-batch in
     * flight weighs v times the largest chunk, not the stage's average (a
     * review simulated the schedule: GPT-3's 96 layers at pp 8 vpp 8 hold
     * 1.27-1.33 times the average) */
    out->act_layers = (double)ls;
    int64_t v = c->vpp, pp = c->ax[MFU_AX_PP];
    if (pp > 1 && v > 1 && c->schedule != MFU_SCHED_DUALPIPEV) {
        int64_t big = 0;
        for (int64_t j = 0; j < v; j++) {
            int64_t n = mfu_vstage_decoder_layers(sys, c, r, j);
            if (n > big) big = n;
        }
        if ((double)(v * big) > out->act_layers) out->act_layers = (double)(v * big);
    }
    out->weights_bytes = m.weights_bytes;
    out->grads_bytes = m.grads_bytes;
    out->optimizer_bytes = m.optimizer_bytes;
    out->host_bytes = m.host_bytes;
    /* the fixed part of the reserve; fragmentation is added with the total */
    const mfu_mem_reserve *rs = &sys->hw->reserve;
    out->reserve_bytes = rs->context_bytes + rs->comm_buffer_bytes * (double)communicators(sys, c);
}

/* Buffers (F-MEM-BUF) of a micro-batch's shape: [0] without pipeline
 * parallelism, [1] with its p2p send and receive buffers. The shape costs
 * carry them (system.c), so the search does not redo the divisions at
 * every schedule point. */
void mfu_shape_buffers(const mfu_system *sys, const mfu_shape *s, double out[2])
{
    double ab = sys->train.dtype == MFU_DT_FP32 ? 4.0 : 2.0;
    double T = s->mbs * (double)s->seq / (double)s->cp;
    double h = (double)sys->model->d_model;
    for (int piped = 0; piped < 2; piped++) {
        double buf = 0.0;
        if (sys->moe_mlp) {
            /* all-to-all send and receive buffers of one MoE layer's token slots */
            const mfu_mlp *mp = sys->moe_mlp;
            double Ts = T * (double)mp->top_k * mfu_moe_load(mp, s->moe_load) * (double)s->etp / (double)s->tp;
            buf += 2.0 * ab * Ts * h;
        }
        if (piped) buf += 2.0 * ab * T * h / (s->sp ? (double)s->tp : 1.0); /* p2p send/recv */
        if (s->sp) buf += ab * T * h;                                       /* gathered layer input */
        out[piped] = buf;
    }
}

/* What a stage holds besides the activations the recompute policy decides
 * (F-MEM-STATE, F-MEM-BUF, the embedding's and the loss's tensors, the
 * in-flight count) from its state: the same for every policy, so the
 * search computes it once per schedule point (mfu_memory_base). */
static void stage_fixed(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                        int64_t r, const mfu_stage_state *st, mfu_memory *out)
{
    int64_t pp = c->ax[MFU_AX_PP];
    /* every field is set below (no memset: a rep stos per schedule point
     * and stage was a seventh of this function's time in the search) */
    out->total_bytes = out->headroom_bytes = out->head_bytes = 0.0;
    out->stage = r;
    out->layers = st->layers;
    out->act_layers = st->act_layers;
    out->weights_bytes = st->weights_bytes;
    out->grads_bytes = st->grads_bytes;
    out->optimizer_bytes = st->optimizer_bytes;
    out->host_bytes = st->host_bytes;

    double inflight = mfu_inflight(c->schedule, pp, c->vpp, c->grad_accum, r);
    out->inflight = inflight;
    double act = 0.0;
    if (r == 0) act += inflight * k->embed_saved;
    /* the loss's logits are kept for one micro-batch: the last stage runs
     * each micro-batch's backward right after its forward (F-MEM-LOGITS) */
    if (r == mfu_head_rank(c)) out->head_bytes = k->head_saved + k->logits_transient;
    act += out->head_bytes;
    out->activations_bytes = act;

    /* Buffers (F-MEM-BUF), the shape's (mfu_shape_buffers) */
    out->buffers_bytes = k->buffers_bytes[pp > 1];
    out->capacity_bytes = sys->hw->hbm_bytes;
    out->reserve_bytes = st->reserve_bytes;
}

/* The policy's activations (F-MEM-ACT) on a stage_fixed answer: the
 * activations' bytes, and in *noff the layers whose activations go to the
 * host (cpu_offload). */
static double stage_act(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                        const mfu_memory *fixed, int64_t *noff)
{
    int64_t ls = fixed->layers;
    const mfu_layer_cost *a = &k->avg;
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    int64_t nrc = mfu_rc_layers(sys, c, ls);
    /* F-RC-CPU-OFFLOAD: Transformer Engine's default synchronizer
     * offloads layers 0..N-1 and keeps "(num_layers - num_offloaded_layers)
     * * T" of activations on the device (transformer_engine/pytorch/
     * cpu_offload.py, get_cpu_offload_context); the N layers' are on the
     * host (pp 1: one micro-batch at a time) */
    *noff = 0;
    double per_mb;
    if (rp->kind == MFU_RCK_FULL) {
        per_mb = (double)nrc * a->saved_bytes[MFU_RC_FULL] + (double)(ls - nrc) * a->saved_bytes[MFU_RC_NONE];
    } else {
        *noff = mfu_offload_layers(c, ls);
        per_mb = (double)(ls - *noff) * a->saved_bytes[c->recompute];
    }
    /* F-MEM-LOGITS: the loss's and the LM head's tensors (stage_fixed) are
     * freed by their own backward, which runs before any layer's: the
     * stage peaks at the larger of those and one layer's backward, not
     * their sum. Not in DualPipeV's V, where a chunk's forward (the loss's
     * among them) runs beside another micro-batch's backward, nor in ZB-H1,
     * which defers the LM head's weight gradient past the next layer's
     * backward. */
    double head = fixed->head_bytes;
    int apart = c->schedule != MFU_SCHED_DUALPIPEV && c->schedule != MFU_SCHED_ZB;
    double f = ls > 0 && fixed->act_layers > (double)ls ? fixed->act_layers / (double)ls : 1.0;
    double act = fixed->activations_bytes - (apart ? head : 0.0) + fixed->inflight * per_mb * f;
    double bwd = 0.0;
    if (ls > 0) {
        /* the backward of one layer: gradients as large as what it saved */
        bwd += a->saved_bytes[MFU_RC_NONE];
        /* a recomputed layer rematerialises its activations once; XLA a
         * scanned unit's layers together (F-MEM-SCAN-UNIT) */
        double u = (double)sys->scan_unit;
        if (rp->kind == MFU_RCK_SELECTIVE)
            bwd += u * (a->saved_bytes[MFU_RC_NONE] - a->saved_bytes[c->recompute]);
        else if (rp->kind == MFU_RCK_FULL && nrc > 0)
            bwd += u * (a->saved_bytes[MFU_RC_NONE] - a->saved_bytes[MFU_RC_FULL]);
    }
    return act + (apart ? mfu_dmax(head, bwd) : bwd);
}

/* A stage's peak bytes before the reserve's fragmentation share, from its
 * stage_fixed answer and its activations. */
static double stage_used(const mfu_memory *fixed, double act)
{
    double used = fixed->weights_bytes + fixed->grads_bytes + fixed->optimizer_bytes + act +
                  fixed->buffers_bytes;
    /* offloaded moments come back for the update, when the activations
     * are gone: the peak is the larger of the two moments of the step */
    if (fixed->host_bytes > 0) {
        double update = fixed->weights_bytes + fixed->grads_bytes + fixed->optimizer_bytes +
                        fixed->host_bytes + fixed->buffers_bytes;
        if (update > used) used = update;
    }
    return used;
}

/* Add the policy's activations and the totals to a stage_fixed answer. */
static void stage_finish(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                         const mfu_memory *fixed, mfu_memory *out)
{
    int64_t noff;
    double act = stage_act(sys, c, k, fixed, &noff);
    double used = stage_used(fixed, act);
    *out = *fixed;
    out->activations_bytes = act;
    if (noff > 0) out->host_bytes += fixed->inflight * (double)noff * k->avg.host_bytes[MFU_RC_CPU_OFFLOAD];
    out->reserve_bytes = fixed->reserve_bytes + sys->hw->reserve.fragmentation * used;
    out->total_bytes = used + out->reserve_bytes;
    out->headroom_bytes = out->capacity_bytes - out->total_bytes;
}

/* stage_finish's headroom alone (the same operations in the same order,
 * so the same bits): the search's test of whether a point fits. */
static double stage_headroom(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                             const mfu_memory *fixed)
{
    int64_t noff;
    double used = stage_used(fixed, stage_act(sys, c, k, fixed, &noff));
    double reserve = fixed->reserve_bytes + sys->hw->reserve.fragmentation * used;
    return fixed->capacity_bytes - (used + reserve);
}

void mfu_memory_stage(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                      int64_t r, mfu_memory *out)
{
    mfu_stage_state st;
    mfu_memory fixed;
    stage_state_of(sys, c, r, &st);
    stage_fixed(sys, c, k, r, &st, &fixed);
    stage_finish(sys, c, k, &fixed, out);
}

void mfu_memory_base_init(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                          mfu_memory_base *b)
{
    (void)sys;
    (void)k;
    int64_t pp = c->ax[MFU_AX_PP];
    /* the candidates for the least headroom: the first stage (most micro-
     * batches in flight, embedding), the busiest middle one (rank 1: the
     * most in flight among them and, with a remainder, the most layers),
     * the last (LM head, logits); each weighed when first needed */
    b->n = pp == 1 ? 1 : pp == 2 ? 2 : 3;
    b->ready = 0;
    b->memo = NULL;
    b->memo_ready = NULL;
}

/* Stage i of the base, computed on first use (its state from the
 * caller's memo when there is one). */
static void base_stage_fill(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                            mfu_memory_base *b, int i)
{
    int64_t pp = c->ax[MFU_AX_PP];
    int64_t ranks[3] = {0, 1, pp - 1};
    mfu_stage_state own, *st = b->memo ? &b->memo[i] : &own;
    if (!b->memo || !(*b->memo_ready & (1u << i))) {
        stage_state_of(sys, c, ranks[i], st);
        if (b->memo) *b->memo_ready |= 1u << i;
    }
    stage_fixed(sys, c, k, ranks[i], st, &b->stage[i]);
    b->ready |= 1u << i;
}

static inline const mfu_memory *base_stage(const mfu_system *sys, const mfu_config *c,
                                           const mfu_shape_cost *k, mfu_memory_base *b, int i)
{
    if (!(b->ready & (1u << i))) base_stage_fill(sys, c, k, b, i);
    return &b->stage[i];
}

void mfu_memory_from_base(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                          mfu_memory_base *b, int exact, mfu_memory *out)
{
    stage_finish(sys, c, k, base_stage(sys, c, k, b, 0), out);
    for (int i = 1; i < b->n; i++) {
        if (!exact && out->headroom_bytes < 0) return;
        mfu_memory one;
        stage_finish(sys, c, k, base_stage(sys, c, k, b, i), &one);
        if (one.headroom_bytes < out->headroom_bytes) *out = one;
    }
}

double mfu_memory_headroom_from_base(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                                     mfu_memory_base *b)
{
    double h = stage_headroom(sys, c, k, base_stage(sys, c, k, b, 0));
    for (int i = 1; i < b->n && !(h < 0); i++) {
        double one = stage_headroom(sys, c, k, base_stage(sys, c, k, b, i));
        if (one < h) h = one;
    }
    return h;
}

void mfu_memory_costs_ex(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                         int exact, mfu_memory *out)
{
    mfu_memory_base b;
    mfu_memory_base_init(sys, c, k, &b);
    mfu_memory_from_base(sys, c, k, &b, exact, out);
}

void mfu_memory_costs(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                      mfu_memory *out)
{
    mfu_memory_costs_ex(sys, c, k, 1, out);
}
