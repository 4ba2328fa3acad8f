/* core/system.c -- System Bound of one configuration (seed 000 Phase 2):
 * the shared part, per-shape costs, communication, step time, evaluation.
 * Legality is in config.c, memory in memory.c.
 *
 * T_step = compute + recompute + exposed comm (per axis) + bubble
 *          + optimizer step + overhead,
 * and never less than the busiest network tier's total traffic time.
 * MFU = F_useful / (devices * peak * T_step); HFU adds recompute FLOPs
 * (seed 003 sec. 2). docs/model.md has every formula (F-*).
 *
 * Assumptions (named, each a modelling choice):
 *  - compute runs at the pace of the busiest pipeline stage (first: its
 *    layers + embedding; middle: rank 1's layers; last: its layers + LM
 *    head and loss), layers being the model's average layer;
 *  - mixed precision as Megatron-LM with bf16: bf16 weights (2 B), fp32
 *    main gradients reduced in fp32 (4 B; --grad-reduce-in-bf16: 2 B),
 *    fp32 master copy (4 B) and AdamW moments (8 B, or 4 B in bf16) --
 *    Megatron docs/distrib_optimizer.md: 18 B/param, 6 + 12/d distributed;
 *  - collectives: ring all-gather / reduce-scatter (n-1)/n * S / W + (n-1)
 *    latency steps; all-reduce = RS + AG; all-to-all (n-1)/n * S / W
 *    (formulas.md sec. 5.1, nccl-tests PERFORMANCE.md); the group runs at
 *    the bandwidth of the slowest tier it spans (placement tp, cp, fsdp,
 *    dp, pp from innermost; experts etp, ep).
 */
#include "system_int.h"

const char *const mfu_gap_names[MFU_GAP_COUNT] = {
    "memory_bound_ops", "kernel_efficiency", "recompute", "comm_tp", "comm_cp", "comm_ep",
    "comm_fsdp",        "comm_dp",           "comm_pp",   "bubble",  "optimizer", "overhead",
    "offload"};
const char *const mfu_comm_names[MFU_COMM_COUNT] = {"tp", "cp", "ep", "fsdp", "dp", "pp"};

/* ---- shared part ------------------------------------------------------- */

const unsigned mfu_rc_std_modules[MFU_RC_COUNT] = {
    0u,
    MFU_RCM_CORE_ATTN,
    MFU_RCM_LAYERNORM | MFU_RCM_ACT | MFU_RCM_MOE_ACT,
    MFU_RCM_LAYERNORM | MFU_RCM_MLP | MFU_RCM_MOE | MFU_RCM_SHARED,
    MFU_RCM_LAYERNORM | MFU_RCM_MLA_UP,
    0u,
    0u};

int mfu_rc_slot(mfu_rc_kind kind, unsigned modules)
{
    if (kind == MFU_RCK_NONE) return MFU_RC_NONE;
    if (kind == MFU_RCK_FULL) return MFU_RC_FULL;
    for (int j = MFU_RC_SELECTIVE; j < MFU_RC_FULL; j++)
        if (mfu_rc_std_modules[j] == modules) return j;
    return MFU_RC_CUSTOM;
}

/* A MaxText name policy (F-RC-MAXTEXT): what is not kept is recomputed;
 * its modules name the collectives that recompute repeats (the attention
 * kernel's CP ring when the context is recomputed, the MLP's TP and the
 * MoE's all-to-alls when the MLP input projections are). */
static void names_policy(mfu_rc_policy *p, unsigned device, unsigned host, unsigned frameworks)
{
    unsigned keep = device | host, mods = 0u;
    if (!(keep & MFU_MX_CONTEXT)) mods |= MFU_RCM_CORE_ATTN;
    if (!(keep & MFU_MX_WI)) mods |= MFU_RCM_MLP | MFU_RCM_MOE;
    *p = (mfu_rc_policy){MFU_RCK_SELECTIVE, mods, frameworks, device, host};
}

/* The recompute policy table (F-RC-POLICIES) and who can express each for
 * this model (docs/frameworks.md FW-M7, FW-T7, FW-X5). */
static void rc_table(mfu_system *sys, unsigned custom)
{
    const unsigned MG = MFU_FW_MASK(MFU_FW_MEGATRON), TT = MFU_FW_MASK(MFU_FW_TORCHTITAN),
                   MX = MFU_FW_MASK(MFU_FW_MAXTEXT);
    mfu_rc_policy *rc = sys->rc;
    /* MaxText has no save-everything policy: remat_policy "none" (like
     * "full") gives nn.remat no policy, which saves only the layer's
     * inputs (layers/decoders.py set_remat_policy, get_remat_policy) */
    rc[MFU_RC_NONE] = (mfu_rc_policy){MFU_RCK_NONE, 0u, MG | TT, 0u, 0u};
    const unsigned *std = mfu_rc_std_modules;
    rc[MFU_RC_SELECTIVE] = (mfu_rc_policy){MFU_RCK_SELECTIVE, std[MFU_RC_SELECTIVE], MG, 0u, 0u};
    /* Megatron has moe_act but no module for a dense MLP's (or shared
     * experts') activation */
    unsigned act_mg = sys->has_dense_mlp ? 0u : MG;
    rc[MFU_RC_MINIMAL] = (mfu_rc_policy){MFU_RCK_SELECTIVE, std[MFU_RC_MINIMAL], TT | MX | act_mg, 0u, 0u};
    rc[MFU_RC_SAVE_DOT_EXCEPT_MLP] = (mfu_rc_policy){MFU_RCK_SELECTIVE, std[MFU_RC_SAVE_DOT_EXCEPT_MLP],
                                                     MG | MX, 0u, 0u};
    rc[MFU_RC_MLA_UP] = (mfu_rc_policy){MFU_RCK_SELECTIVE, std[MFU_RC_MLA_UP], sys->has_mla ? MG : 0u, 0u, 0u};
    rc[MFU_RC_FULL] = (mfu_rc_policy){MFU_RCK_FULL, 0u, MFU_FW_ALL, 0u, 0u};
    rc[MFU_RC_CUSTOM] = (mfu_rc_policy){MFU_RCK_SELECTIVE, custom,
                                        custom && !(custom & ~MFU_RCM_MEGATRON) ? MG : 0u, 0u, 0u};
    /* F-RC-MAXTEXT: maxtext_utils.get_save_and_offload_names --
     * qkv_proj_offloaded offloads query/key/value/kv_proj, minimal_offloaded
     * every projection (q, k, v, out, mlpwi, mlpwo) but not the context;
     * both save nothing else, the layer input (decoder_layer_input,
     * "device" in base.yml) stays. Offered where the host link is known. */
    unsigned off = sys->hw->host_bw_bytes_s > 0 ? MX : 0u;
    names_policy(&rc[MFU_RC_QKV_OFFLOADED], MFU_MX_INPUT, MFU_MX_QKV, off);
    names_policy(&rc[MFU_RC_MINIMAL_OFFLOADED], MFU_MX_INPUT,
                 MFU_MX_QKV | MFU_MX_OUT | MFU_MX_WI | MFU_MX_WO, off);
    rc[MFU_RC_MAXTEXT] = (mfu_rc_policy){MFU_RCK_SELECTIVE, 0u, 0u, 0u, 0u}; /* none given */
}

int mfu_system_set_remat_names(mfu_system *sys, unsigned device, unsigned host)
{
    if (!(device & MFU_MX_INPUT) == !(host & MFU_MX_INPUT) || (device & host) ||
        ((device | host) & ~((1u << MFU_MX_COUNT) - 1u)))
        return MFU_EINVAL;
    unsigned fw = MFU_FW_MASK(MFU_FW_MAXTEXT);
    if (host && !(sys->hw->host_bw_bytes_s > 0)) fw = 0u;
    names_policy(&sys->rc[MFU_RC_MAXTEXT], device, host, fw);
    return MFU_OK;
}

int mfu_system_init(mfu_system *sys, const mfu_model *m, const mfu_hardware *hw,
                    const mfu_training *t, int64_t devices, unsigned custom_modules, mfu_op *ops)
{
    memset(sys, 0, sizeof *sys);
    sys->model = m;
    sys->hw = hw;
    sys->train = *t;
    sys->devices = devices;
    mfu_roofline roof;
    int rc = mfu_roofline_totals(m, hw, t, ops, &roof);
    if (rc != MFU_OK) return rc;
    sys->roofline_mfu = roof.mfu;
    sys->roof_step_per_token_s = roof.step_time_s / t->global_batch_tokens;
    sys->f_fwd_per_token = mfu_model_flops_per_token_fwd(m, t->seq, t->conv);
    mfu_params p;
    mfu_model_params(m, &p);
    sys->params_total = p.total;
    sys->params_active = p.active;
    sys->params_embed = p.embedding + p.head;
    sys->layers = mfu_model_layers(m);
    for (int r = 0; r < m->n_runs; r++) {
        double tot;
        mfu_run_params(m, r, &tot, NULL);
        double ex = mfu_expert_params(m, &m->runs[r].mlp);
        sys->params_expert += ex * (double)m->runs[r].count;
        sys->layer_params_dense += (tot - ex) * (double)m->runs[r].count;
        if (m->runs[r].mlp.kind == MFU_MLP_MOE) {
            sys->moe_layers += m->runs[r].count;
            sys->moe_mlp = &m->runs[r].mlp;
            if (m->runs[r].mlp.n_shared_experts > 0) sys->has_dense_mlp = 1;
        } else {
            sys->has_dense_mlp = 1;
        }
        if (m->runs[r].attn.kind == MFU_ATTN_MLA) sys->has_mla = 1;
    }
    sys->layer_dense_avg = sys->layer_params_dense / (double)sys->layers;
    sys->layer_expert_avg = sys->params_expert / (double)sys->layers;
    {
        double vh = (double)m->vocab * (double)m->d_model;
        double pos = m->position == MFU_POS_LEARNED ? (double)m->max_positions * (double)m->d_model : 0;
        sys->embed_params = vh + pos;
        sys->head_params = vh; /* a copy of the embedding on the last stage when tied */
        /* the final norm: whatever the layers and embeddings do not hold */
        sys->final_params = sys->params_total - sys->layer_params_dense - sys->params_expert -
                            sys->params_embed;
    }
    /* Megatron-LM DDP bucket: 40 M parameters (ddp_bucket_size default), fp32. */
    sys->bucket_bytes = 40e6 * 4.0;
    sys->weight_bytes = 2.0;
    sys->grad_bytes = t->grad_bf16 ? 2.0 : 4.0;
    sys->grad_comm_bytes = sys->grad_bytes;
    sys->master_bytes = 4.0;
    sys->moment_bytes = t->moments_bf16 ? 4.0 : 8.0;
    rc_table(sys, custom_modules);
    return MFU_OK;
}

/* ---- per-shape costs --------------------------------------------------- */

void mfu_config_shape(const mfu_system *sys, const mfu_config *c, mfu_shape *s)
{
    memset(s, 0, sizeof *s);
    s->mbs = (double)c->mbs;
    s->seq = sys->train.seq;
    s->tp = c->ax[MFU_AX_TP];
    s->cp = c->ax[MFU_AX_CP];
    s->ep = c->ax[MFU_AX_EP];
    s->etp = c->etp;
    s->sp = c->sp;
    s->dtype = sys->train.dtype;
    s->attn_impl = sys->train.attn_impl;
    s->moe_load = sys->train.moe_imbalance;
}

static void add_layer_ops(const mfu_system *sys, const mfu_op *ops, int n, double ab, double Te,
                          const mfu_efficiency *eff, mfu_layer_cost *lc)
{
    const mfu_model *m = sys->model;
    double saved[MFU_RC_COUNT] = {0}, host_saved[MFU_RC_COUNT] = {0};
    double h = (double)m->d_model;
    /* the policies that can be used at all: not an empty selective slot
     * (no custom set, no maxtext names given), not an offload without a
     * host link (the search's pace: this runs for every op of a shape) */
    int live[MFU_RC_COUNT], n_live = 0;
    for (int j = 0; j < MFU_RC_COUNT; j++) {
        const mfu_rc_policy *rp = &sys->rc[j];
        int names = (rp->mx_device | rp->mx_host) != 0;
        if (rp->kind == MFU_RCK_SELECTIVE && rp->modules == 0 && !names) continue;
        if (rp->mx_host && !(sys->hw->host_bw_bytes_s > 0)) continue;
        live[n_live++] = j;
    }
    double host = eff ? eff->host_op_s : 0.0;
    int moe = 0;
    for (int i = 0; i < n; i++) {
        const mfu_op *o = &ops[i];
        double t = mfu_op_time(o, sys->hw, sys->train.dtype, eff);
        if (host > 0) {
            double hk = host * mfu_op_host_kernels(o, sys->train.dtype);
            if (o->phase == MFU_BWD) lc->host_bwd_s += hk;
            else if (o->tags & MFU_TAG_EXPERT) lc->host_fwd_exp_s += hk;
            else lc->host_fwd_rest_s += hk;
            if (o->phase == MFU_FWD && (o->tags & MFU_TAG_EXPERT)) lc->fwd_exp_s += t;
        }
        if (o->tags & MFU_TAG_EXPERT) moe = 1;
        if (o->phase == MFU_FWD) {
            lc->fwd_s += t;
            lc->fwd_flops += o->flops;
            if (o->tags & MFU_TAG_ATTN_CORE) lc->attn_core_fwd_s += t;
            /* F-RC-MODULES: a selective policy frees what its modules free
             * and runs again what they run */
            for (int q = 0; q < n_live; q++) {
                int j = live[q];
                const mfu_rc_policy *rp = &sys->rc[j];
                if (rp->kind == MFU_RCK_FULL) {
                    lc->rc_s[j] += t;
                    lc->rc_flops[j] += o->flops;
                    continue;
                }
                if (rp->mx_device | rp->mx_host) {
                    /* F-RC-MAXTEXT: a named output is kept where the
                     * policy says; everything else runs again, but the
                     * down projection (its output feeds only the residual
                     * stream the next layer's input carries) */
                    if (o->mx & rp->mx_device) saved[j] += o->out_bytes;
                    else if (o->mx & rp->mx_host) host_saved[j] += o->out_bytes;
                    if (!(o->mx & (rp->mx_device | rp->mx_host | MFU_MX_WO))) {
                        lc->rc_s[j] += t;
                        lc->rc_flops[j] += o->flops;
                    }
                    continue;
                }
                if (!(o->rc_free & rp->modules)) saved[j] += o->saved_bytes;
                if (o->rc_rerun & rp->modules) {
                    lc->rc_s[j] += t;
                    lc->rc_flops[j] += o->flops;
                }
            }
        } else {
            lc->bwd_s += t;
            if (o->tags & MFU_TAG_WGRAD) lc->wgrad_s += t;
        }
        if (o->tags & MFU_TAG_MATMUL) lc->gemm_s += t;
        if (o->tags & MFU_TAG_ATTN_CORE) lc->attn_core_s += t;
        if (o->tags & MFU_TAG_EXPERT) lc->expert_s += t;
    }
    if (host > 0 && moe) {
        /* F-TIME-DISPATCH: the MoE layer's routing and permutation
         * bookkeeping beyond the inventory's ops (mfu_moe_host_kernels) */
        double f_pre, f_post, b;
        mfu_moe_host_kernels(sys->train.dtype, &f_pre, &f_post, &b);
        lc->host_fwd_rest_s += host * f_pre;
        lc->host_fwd_exp_s += host * f_post;
        lc->host_bwd_s += host * b;
    }
    for (int j = 0; j < MFU_RC_COUNT; j++) {
        const mfu_rc_policy *rp = &sys->rc[j];
        lc->saved_bytes[j] += rp->kind == MFU_RCK_FULL
                                  /* full: only the layer input (Korthikanti Table 2: 2sbh; /t with sp) */
                                  ? ab * Te * h
                                  : saved[j];
        /* a name policy keeps the layer input where decoder_layer_input says */
        if (rp->mx_device & MFU_MX_INPUT) lc->saved_bytes[j] += ab * Te * h;
        if (rp->mx_host & MFU_MX_INPUT) host_saved[j] += ab * Te * h;
        lc->host_bytes[j] += host_saved[j];
    }
}

static void add_cost(mfu_layer_cost *dst, const mfu_layer_cost *src, double k)
{
    double *d = (double *)dst;
    const double *s = (const double *)src;
    for (size_t i = 0; i < sizeof *dst / sizeof(double); i++) d[i] += k * s[i];
}

/* One shape's costs for up to two profiles from one inventory: out[0] for
 * effs[0], out[1] (when n == 2) for effs[1]. */
static void shape_costs_n(const mfu_system *sys, const mfu_shape *s, const mfu_efficiency *const *effs,
                          int np, mfu_op *ops, mfu_shape_cost *out)
{
    const mfu_model *m = sys->model;
    double ab = s->dtype == MFU_DT_FP32 ? 4.0 : 2.0;
    double T = s->mbs * (double)s->seq / (double)s->cp;
    double Te = s->sp ? T / (double)s->tp : T;
    for (int p = 0; p < np; p++) {
        memset(&out[p], 0, sizeof out[p]);
        out[p].shape = *s;
    }
    for (int r = 0; r < m->n_runs; r++) {
        /* never more than MFU_MAX_LAYER_OPS <= MFU_SCRATCH_OPS (ops.h) */
        int n = mfu_ops_layer(m, r, s, ops, MFU_SCRATCH_OPS);
        double cnt = (double)m->runs[r].count;
        for (int p = 0; p < np; p++) {
            mfu_layer_cost lc;
            memset(&lc, 0, sizeof lc);
            add_layer_ops(sys, ops, n, ab, Te, effs[p], &lc);
            add_cost(&out[p].avg, &lc, cnt / (double)sys->layers);
            if (m->runs[r].mlp.kind == MFU_MLP_MOE)
                add_cost(&out[p].avg_moe, &lc, cnt / (double)sys->moe_layers);
        }
    }
    int n = mfu_ops_embed(m, s, ops, MFU_SCRATCH_OPS);
    for (int p = 0; p < np; p++)
        for (int i = 0; i < n; i++) {
            double t = mfu_op_time(&ops[i], sys->hw, s->dtype, effs[p]);
            if (ops[i].phase == MFU_FWD) out[p].embed_fwd_s += t; else out[p].embed_bwd_s += t;
            out[p].embed_saved += ops[i].saved_bytes;
        }
    n = mfu_ops_head(m, s, ops, MFU_SCRATCH_OPS);
    /* F-MEM-VOCAB-TILES: MaxText's num_vocab_tiling runs the LM head and the
     * loss over token chunks in a custom VJP that keeps only the hidden
     * states (utils/vocabulary_tiling.py): the loss keeps nothing, one
     * chunk's logits (bf16 and their fp32 softmax) are live at a time, and
     * the backward runs each chunk's head and loss forward again */
    int64_t tiles = sys->train.vocab_tiles > 1 ? sys->train.vocab_tiles : 1;
    for (int p = 0; p < np; p++)
        for (int i = 0; i < n; i++) {
            double t = mfu_op_time(&ops[i], sys->hw, s->dtype, effs[p]);
            int tiled_fwd = tiles > 1 && ops[i].phase == MFU_FWD &&
                            (!strcmp(ops[i].name, "lm_head") || !strcmp(ops[i].name, "loss"));
            if (ops[i].phase == MFU_FWD) out[p].head_fwd_s += t; else out[p].head_bwd_s += t;
            if (tiled_fwd) out[p].head_bwd_s += t;
            if (!(tiles > 1 && !strcmp(ops[i].name, "loss"))) out[p].head_saved += ops[i].saved_bytes;
        }
    /* F-MEM-LOGITS: the LM head's bf16 logits live until the loss has made
     * its fp32 copy (Megatron vocab_parallel_cross_entropy(logits.float())),
     * and again as the logits' gradient in the backward */
    double nl = T * (double)m->vocab / (double)s->tp;
    for (int p = 0; p < np; p++)
        out[p].logits_transient = tiles > 1 ? (ab + 4.0) * nl / (double)tiles : ab * nl;
}

void mfu_shape_costs(const mfu_system *sys, const mfu_shape *s, const mfu_efficiency *eff,
                     mfu_op *ops, mfu_shape_cost *out)
{
    shape_costs_n(sys, s, &eff, 1, ops, out);
}

void mfu_shape_costs2(const mfu_system *sys, const mfu_shape *s, mfu_op *ops, mfu_shape_cost *bound,
                      mfu_shape_cost *expected)
{
    if (!sys->hw->has_profile) {
        mfu_shape_costs(sys, s, NULL, ops, bound);
        *expected = *bound;
        return;
    }
    const mfu_efficiency *effs[2] = {NULL, &sys->hw->eff};
    mfu_shape_cost two[2];
    shape_costs_n(sys, s, effs, 2, ops, two);
    *bound = two[0];
    *expected = two[1];
}

/* ---- communication (Q2) ------------------------------------------------ */

typedef struct link {
    double bw;   /* effective bytes/s for large messages */
    double half; /* message size reaching half of bw (0: no size effect) */
    double lat;  /* per step */
    int tier;
} link;

static link link_for(const mfu_system *sys, int64_t span, const mfu_efficiency *eff)
{
    int t = mfu_tier_for_span(sys->hw, span);
    link l;
    l.tier = t;
    l.bw = sys->hw->tiers[t].bw_bytes_s * (eff ? eff->net_eff[t] : 1.0);
    l.half = eff ? eff->net_half_bytes[t] : 0.0;
    l.lat = sys->hw->tiers[t].latency_s;
    return l;
}

/* The link of a group of n members placed `stride` devices apart
 * (F-COMM-NICS): when it spans the outer tier with k > 1 members in one
 * inner domain (a node), the collective library drives the k members'
 * network interfaces in parallel (NCCL channels over every NIC), so the
 * group moves k times one device's outer bandwidth, never more than the
 * inner tier's. */
static link link_group(const mfu_system *sys, double n, double stride, const mfu_efficiency *eff)
{
    link l = link_for(sys, (int64_t)(n * stride), eff);
    if (l.tier > 0 && sys->hw->n_tiers > 1) {
        double d0 = (double)sys->hw->tiers[0].domain_size;
        double k = stride < d0 ? fmin(n, d0 / stride) : 1.0;
        if (k > 1) {
            link in = link_for(sys, 1, eff);
            l.bw = fmin(k * l.bw, in.bw);
            /* F-COMM-RING-LAT: of a ring's n - 1 steps only those that
             * cross a domain boundary, n/k - 1, pay the outer tier's
             * latency; the rest pay the inner tier's (NCCL
             * src/graph/tuning.cc ncclTopoTuneModel, ring:
             * (nsteps - nInterSteps) * intraLat + nInterSteps * interLat,
             * nInterSteps = nNodes - 1 for all-gather / reduce-scatter).
             * t_ag charges (n - 1) * lat: lat is the steps' mean. */
            double inter = n / k - 1.0;
            if (n > 1) l.lat = (inter * l.lat + (n - 1.0 - inter) * in.lat) / (n - 1.0);
        }
    }
    return l;
}

/* Bandwidth achieved by a collective over a buffer of S bytes. */
static double bw_at(link l, double S)
{
    return l.half > 0 ? l.bw * S / (S + l.half) : l.bw;
}

/* Ring all-gather or reduce-scatter of a buffer of S bytes over n ranks. */
static double t_ag(double S, double n, link l)
{
    if (n <= 1 || S <= 0) return 0.0;
    return (n - 1.0) / n * S / bw_at(l, S) + (n - 1.0) * l.lat;
}
static double t_ar(double S, double n, link l) { return 2.0 * t_ag(S, n, l); }
/* All-to-all: each rank sends S bytes, (n-1)/n of it leaves the rank. */
static double t_a2a(double S, double n, link l)
{
    if (n <= 1 || S <= 0) return 0.0;
    return (n - 1.0) / n * S / bw_at(l, S) + (n - 1.0) * l.lat;
}

double mfu_bubble_fraction(mfu_schedule s, int64_t pp, int64_t vpp, int64_t m, double w_frac,
                           double b_frac)
{
    if (pp <= 1 || m <= 0) return 0.0;
    double p1 = (double)(pp - 1), mm = (double)m;
    switch (s) {
    case MFU_SCHED_INTERLEAVED: return p1 / ((double)vpp * mm);  /* Narayanan sec. 2.2.2 */
    case MFU_SCHED_GPIPE:
        /* MaxText: (p-1)/(v m + p-1) of the total = (p-1)/(v m) of the ideal */
        return p1 / ((double)(vpp < 1 ? 1 : vpp) * mm);
    case MFU_SCHED_ZB:
        /* (p-1)(F+B-2W) (Qi et al. 2023, ZB-H1) holds with m >= p - 1
         * micro-batches: each stage has m weight-gradient passes to fill its
         * bubble with, so with fewer only m of them do, (p-1)(F+B) - 2mW.
         * Without that cap a slower W made the step shorter when m < p - 1
         * (the fuzzer found expected < bound). */
        return mfu_dmax(0.0, p1 - 2.0 * (mm < p1 ? mm : p1) * w_frac) / mm;
    case MFU_SCHED_DUALPIPEV:
        /* (PP/2 - 1)(F&B + B - 3W) over PP = 2p stages of half a rank's
         * layers (DualPipe repository README table; m >= 2p, which the
         * schedule requires). F&B, a chunk's forward and another's
         * backward run together, is taken as F + B: their overlap hides
         * communication (ep_overlap), not compute. In a rank's own
         * F, B, W: (p-1)(F + 2B - 3W)/2 against m (F + B). */
        return mfu_dmax(0.0, p1 * (1.0 + b_frac - 3.0 * w_frac) / 2.0) / mm;
    default: return p1 / mm;                                      /* (p-1)/m */
    }
}

/* Forward and backward time of one micro-batch on the busiest stage, and
 * that stage's layer count (F-PP-SPLIT). */
static void busiest_stage(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                          double *t_f, double *t_b, int64_t *layers)
{
    const mfu_layer_cost *a = &k->avg;
    if (c->ax[MFU_AX_PP] == 1) {
        *layers = sys->layers;
        *t_f = (double)sys->layers * a->fwd_s + k->head_fwd_s + k->embed_fwd_s;
        *t_b = (double)sys->layers * a->bwd_s + k->head_bwd_s + k->embed_bwd_s;
        return;
    }
    mfu_stages st;
    mfu_config_stages(sys, c, &st);
    /* the LM head and loss: the last rank's, or rank 0's in a V */
    int hv = mfu_head_rank(c) == 0;
    double f[3] = {(double)st.first * a->fwd_s + k->embed_fwd_s + (hv ? k->head_fwd_s : 0.0),
                   (double)st.mid * a->fwd_s, (double)st.last * a->fwd_s + (hv ? 0.0 : k->head_fwd_s)};
    double b[3] = {(double)st.first * a->bwd_s + k->embed_bwd_s + (hv ? k->head_bwd_s : 0.0),
                   (double)st.mid * a->bwd_s, (double)st.last * a->bwd_s + (hv ? 0.0 : k->head_bwd_s)};
    int64_t ls[3] = {st.first, st.mid, st.last};
    int best = 0;
    for (int i = 1; i < 3; i++)
        if (f[i] + b[i] > f[best] + b[best]) best = i;
    *t_f = f[best];
    *t_b = b[best];
    *layers = ls[best];
}

/* One profile (bound: eff NULL; expected: the hardware's profile). */
static void step_times(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                       const mfu_efficiency *eff, mfu_eval *ev, mfu_times *tm)
{
    const mfu_model *m = sys->model;
    memset(tm, 0, sizeof *tm);
    double dp = (double)c->ax[MFU_AX_DP], fsdp = (double)c->ax[MFU_AX_FSDP];
    double tp = (double)c->ax[MFU_AX_TP], ep = (double)c->ax[MFU_AX_EP];
    double pp = (double)c->ax[MFU_AX_PP], cp = (double)c->ax[MFU_AX_CP];
    double mb = (double)c->grad_accum;
    double ab = sys->train.dtype == MFU_DT_FP32 ? 4.0 : 2.0;
    double h = (double)m->d_model;
    const mfu_layer_cost *a = &k->avg;
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    double moe_frac = sys->layers ? (double)sys->moe_layers / (double)sys->layers : 0.0;

    /* compute per micro-batch on the busiest stage */
    double t_f, t_b;
    int64_t ls;
    busiest_stage(sys, c, k, &t_f, &t_b, &ls);
    double L = (double)ls;
    double nrc = rp->kind == MFU_RCK_FULL ? (double)mfu_rc_layers(sys, c, ls)
                 : rp->kind == MFU_RCK_SELECTIVE ? L : 0.0;
    double t_rc = nrc * a->rc_s[c->recompute];
    tm->compute_s = mb * (t_f + t_b);
    tm->compute_fwd_s = mb * t_f;
    tm->compute_gemm_s = fmin(mb * L * a->gemm_s, tm->compute_s);
    tm->compute_attention_s = fmin(mb * L * a->attn_core_s, tm->compute_s - tm->compute_gemm_s);
    tm->recompute_s = mb * t_rc;
    /* F-RC-MAXTEXT: offloaded activations cross the host link, device to
     * host during their layer's forward and back during its backward,
     * asynchronously under that layer's compute (XLA's host offload); only
     * what the layer's compute cannot cover shows */
    double host_b = c->recompute >= MFU_RC_QKV_OFFLOADED ? a->host_bytes[c->recompute] : 0.0;
    double link_s = 0.0; /* the host link's busy time (the bound's floor) */
    if (host_b > 0 && sys->hw->host_bw_bytes_s > 0) {
        double x_s = host_b / sys->hw->host_bw_bytes_s;
        link_s = 2.0 * mb * L * x_s;
        /* the bound: no layer's schedule is assumed, only that the step
         * is no shorter than the link's traffic (below); the expected
         * profile's layer-by-layer exposure is never less than that */
        if (eff)
            tm->offload_s = mb * L * (mfu_dmax(0.0, x_s - a->fwd_s) +
                                      mfu_dmax(0.0, x_s - a->bwd_s - a->rc_s[c->recompute]));
    }

    /* placement: tp, cp, fsdp, dp, pp innermost first; experts etp, ep */
    int64_t s_tp = c->ax[MFU_AX_TP], s_cp = s_tp * c->ax[MFU_AX_CP];
    int64_t s_fsdp = s_cp * c->ax[MFU_AX_FSDP];
    int64_t s_dp = s_fsdp * c->ax[MFU_AX_DP];
    int64_t s_ep = c->etp * c->ax[MFU_AX_EP];
    const mfu_shape *s = &k->shape;
    double T = s->mbs * (double)s->seq / cp;
    double *tot = tm->comm_total_s, *exp_ = tm->comm_exposed_s;

    /* TP (Korthikanti sec. 4.2.2): per layer 2 all-reduces forward and 2
     * backward of b*s*h (or, with sp, AG + RS of the same total bandwidth).
     * MoE layers with etp = 1 keep tokens sequence-split: no MLP collective.
     * Recomputing a block runs its forward collectives again. */
    if (tp > 1) {
        link l = link_group(sys, tp, 1.0, eff);
        double one = t_ar(ab * T * h, tp, l);
        double mlp_coll = 1.0 - (c->etp == 1 ? moe_frac : 0.0);
        double per_layer_dir = 1.0 + mlp_coll; /* collectives per direction */
        double rc_coll = 0.0;
        if (rp->kind == MFU_RCK_FULL) rc_coll = per_layer_dir;
        else if (rp->modules & (MFU_RCM_MLP | MFU_RCM_MOE)) rc_coll = mlp_coll;
        double fwd = mb * one * (L * per_layer_dir + nrc * rc_coll), bwd = mb * one * L * per_layer_dir;
        tot[MFU_COMM_TP] = fwd + bwd;
        /* F-COMM-TP-OVERLAP: the backward's collectives run under the
         * weight-gradient GEMMs (Megatron's async tensor-parallel
         * all-reduce / reduce-scatter, on by default; Korthikanti et al.
         * 2022 Table 4 note); with tp_overlap everything hides under the
         * GEMMs */
        exp_[MFU_COMM_TP] = c->tp_overlap ? mfu_dmax(0.0, tot[MFU_COMM_TP] - mb * L * a->gemm_s)
                                          : fwd + mfu_dmax(0.0, bwd - mb * L * a->wgrad_s);
    }
    /* CP (F-COMM-CP; Megatron cp_comm_type p2p, the default): a ring of
     * cp - 1 steps per layer; each step sends the local K,V chunk to the
     * next rank while the attention kernel works on the previous chunk
     * (forward), and K,V plus their gradients in the backward. Only what
     * the step's attention cannot cover is exposed. */
    if (cp > 1) {
        link l = link_group(sys, cp, tp, eff);
        double kv = 0.0; /* K,V bytes of the local chunk, per layer (average) */
        for (int r = 0; r < m->n_runs; r++) {
            const mfu_attention *at = &m->runs[r].attn;
            double w;
            if (at->kind == MFU_ATTN_MHA) {
                double hkv = (double)at->n_kv_heads >= tp ? (double)at->n_kv_heads / tp : 1.0;
                w = hkv * 2.0 * (double)at->head_dim;
            } else if (at->kind == MFU_ATTN_MLA) {
                w = (double)at->n_heads / tp * (double)(at->qk_nope_head_dim + at->qk_rope_head_dim + at->v_head_dim);
            } else if (at->kind == MFU_ATTN_GDN) {
                /* Gated DeltaNet passes its states too: d_k x d_v per value
                 * head, d_k = key_dim / q-k heads (fla cp/chunk_delta_h) */
                double qkh = (double)(at->n_kv_heads > 0 ? at->n_kv_heads : at->n_heads);
                w = (double)at->n_heads / tp * ((double)at->key_dim / qkh) *
                    ((double)at->value_dim / (double)at->n_heads) / T;
            } else {
                /* GLA passes chunk states (d_k x d_v per head) between ranks */
                w = (double)at->n_heads / tp * ((double)at->key_dim / (double)at->n_heads) *
                    ((double)at->value_dim / (double)at->n_heads) / T;
            }
            kv += (double)m->runs[r].count / (double)sys->layers * ab * T * w;
        }
        double step_f = kv / bw_at(l, kv) + l.lat, step_b = 2.0 * step_f;
        double att_f = a->attn_core_fwd_s / cp, att_b = (a->attn_core_s - a->attn_core_fwd_s) / cp;
        double rc_f = (rp->kind == MFU_RCK_FULL || (rp->modules & MFU_RCM_CORE_ATTN)) ? nrc : 0.0;
        double steps = cp - 1.0;
        tot[MFU_COMM_CP] = mb * steps * ((L + rc_f) * step_f + L * step_b);
        exp_[MFU_COMM_CP] = mb * steps * ((L + rc_f) * mfu_dmax(0.0, step_f - att_f) +
                                          L * mfu_dmax(0.0, step_b - att_b));
    }
    /* EP (seed 000 table): per MoE layer dispatch + combine all-to-all,
     * forward and backward, each of the token slots' hidden states. Inside
     * one fast domain: an all-to-all over ep ranks. Across domains (nodes)
     * it is two-level: a token's copies for remote nodes cross the network
     * -- once per expert copy, or once per destination node with
     * node-limited routing (DeepSeek-V3 sec. 2.1.2 / 3.2.2: IB to the node,
     * NVLink forwarding inside it) -- while every copy moves over the fast
     * domain; the two stages pipeline, so the slower one counts. */
    double ep_one = 0.0; /* one all-to-all of one MoE layer */
    if (ep > 1 && sys->moe_layers > 0) {
        const mfu_mlp *mp = sys->moe_mlp;
        double kk = (double)mp->top_k;
        double tok = T * mfu_moe_load(mp, s->moe_load) * (double)c->etp / tp; /* tokens routed per device */
        double d0 = (double)sys->hw->tiers[0].domain_size;
        double one;
        if ((double)s_ep <= d0 || sys->hw->n_tiers == 1) {
            one = t_a2a(ab * tok * kk * h, ep, link_for(sys, s_ep, eff));
        } else {
            link lout = link_for(sys, s_ep, eff), lin = link_for(sys, 1, eff);
            double nodes = (double)s_ep / d0, per_node = ep / nodes;
            double remote = (nodes - 1.0) / nodes;
            double copies = mp->route_nodes > 0 ? fmin((double)mp->route_nodes, fmin(kk, nodes)) : kk;
            double inter = ab * tok * copies * remote * h, intra = ab * tok * kk * h;
            double t_out = inter / bw_at(lout, inter) + (nodes - 1.0) * lout.lat;
            double t_in = per_node > 1 ? intra / bw_at(lin, intra) + (per_node - 1.0) * lin.lat : 0.0;
            one = mfu_dmax(t_out, t_in);
        }
        double Lm = L * moe_frac;
        double rc = rp->kind == MFU_RCK_FULL ? nrc * moe_frac
                    : (rp->modules & MFU_RCM_MOE) ? Lm : 0.0;
        ep_one = one;
        tot[MFU_COMM_EP] = mb * one * (4.0 * Lm + 2.0 * rc);
        exp_[MFU_COMM_EP] = c->ep_overlap ? mfu_dmax(0.0, tot[MFU_COMM_EP] - mb * Lm * k->avg_moe.expert_s)
                                          : tot[MFU_COMM_EP];
    }
    /* F-TIME-DISPATCH: where the host issues kernels slower than the GPU
     * runs them, the GPU waits. An MoE layer's dispatch copies the token
     * counts to the host (the all-to-all's split sizes), so the host
     * cannot run ahead past it: each forward segment (before the sync,
     * after it) takes the longer of its GPU time and its host time. The
     * backward has no sync: its host time shows where it exceeds its GPU
     * time (per MoE layer, the MoE layers being alike). The all-to-alls
     * keep the GPU busy while the host issues. Dense layers queue freely:
     * only a micro-batch's total host time above its GPU time shows.
     * Recomputed forwards are not counted. Expected profile only: the
     * bound's host is infinitely fast. */
    double host_x = 0.0;
    if (eff && eff->host_op_s > 0) {
        double a2a = ep_one;
        const mfu_layer_cost *am = &k->avg_moe;
        double Lm = L * moe_frac, Ld = L - Lm;
        if (Lm > 0) {
            double xf = mfu_dmax(0.0, am->host_fwd_rest_s - (am->fwd_s - am->fwd_exp_s)) +
                        mfu_dmax(0.0, am->host_fwd_exp_s - am->fwd_exp_s - 2.0 * a2a);
            double xb = mfu_dmax(0.0, am->host_bwd_s - am->bwd_s - 2.0 * a2a);
            host_x += Lm * (xf + xb);
        }
        if (Ld > 0) {
            double hd = L * (a->host_fwd_rest_s + a->host_fwd_exp_s + a->host_bwd_s) -
                        Lm * (am->host_fwd_rest_s + am->host_fwd_exp_s + am->host_bwd_s);
            double gd = L * (a->fwd_s + a->bwd_s) - Lm * (am->fwd_s + am->bwd_s);
            host_x += mfu_dmax(0.0, hd - gd);
        }
        host_x *= mb;
    }

    /* FSDP (F-COMM-FSDP): over fsdp * cp ranks. Without PP (and on TPUs,
     * MaxText gathering per iteration) per layer and micro-batch: gather
     * the layer's parameters forward and again backward, reduce-scatter its
     * gradients; layer n+1's gather is prefetched under layer n. torchtitan
     * with PP gathers a stage once per step and reduce-scatters once after
     * the last micro-batch (FW-T8). */
    mfu_dev_params dpar = mfu_device_params(sys, c, 0);
    double P_dev = dpar.dense + dpar.expert;
    double P_layer = sys->layer_params_dense / (double)sys->layers / tp +
                     sys->params_expert / (double)sys->layers / (ep * (double)c->etp);
    if (fsdp > 1) {
        double F = fsdp * cp;
        link l = link_group(sys, fsdp * cp, tp, eff);
        if (pp > 1 && sys->hw->platform == MFU_PLATFORM_GPU) {
            double P_stage = P_layer * L;
            double ag = t_ag(sys->weight_bytes * P_stage, F, l);
            double rs = t_ag(sys->grad_comm_bytes * P_stage, F, l);
            tot[MFU_COMM_FSDP] = ag + rs;
            exp_[MFU_COMM_FSDP] = mfu_dmax(0.0, ag - t_f) + rs;
        } else {
            double ag = t_ag(sys->weight_bytes * P_layer, F, l);
            double rs = t_ag(sys->grad_comm_bytes * P_layer, F, l);
            tot[MFU_COMM_FSDP] = mb * L * (2.0 * ag + rs);
            double lf = a->fwd_s, lb = a->bwd_s + (nrc > 0 ? a->rc_s[c->recompute] : 0.0);
            exp_[MFU_COMM_FSDP] = mb * (L * (mfu_dmax(0.0, ag - lf) + mfu_dmax(0.0, ag + rs - lb)) + 2.0 * ag);
        }
        exp_[MFU_COMM_FSDP] = fmin(exp_[MFU_COMM_FSDP], tot[MFU_COMM_FSDP]);
    }
    /* DP (F-COMM-DP): gradients once per step (all-reduce; ZeRO-1: a
     * reduce-scatter of gradients and an all-gather of parameters), in
     * buckets under the last micro-batch's backward; ZeRO-2 reduce-scatters
     * every micro-batch (the gradients are not kept whole). Dense
     * parameters sync over dp * cp (dp alone when fsdp shards them),
     * experts over their expert-data-parallel group; the groups share the
     * links, so their times add. */
    double rd = fsdp > 1 ? dp : mfu_dense_replicas(c);
    double re = fsdp > 1 ? dp : mfu_expert_dp(c);
    double shard_d = fsdp > 1 ? fsdp * cp : 1.0, shard_e = fsdp > 1 ? mfu_expert_fsdp(c) : 1.0;
    double n_sync = c->zero == 2 ? mb : 1.0;
    if (rd > 1 || re > 1) {
        link l = link_group(sys, dp, (double)s_fsdp, eff);
        double parts[2][2] = {{dpar.dense / shard_d, rd}, {dpar.expert / shard_e, re}};
        double t_sync = 0, t_gather = 0, t_bucket = 0;
        for (int i = 0; i < 2; i++) {
            double P = parts[i][0], n = parts[i][1];
            if (P <= 0 || n <= 1) continue;
            double g = sys->grad_comm_bytes * P;
            double bucket = fmin(sys->bucket_bytes, g);
            if (c->zero == 0) {
                t_sync += t_ar(g, n, l);
                t_bucket = mfu_dmax(t_bucket, t_ar(bucket, n, l));
            } else {
                t_sync += t_ag(g, n, l);
                t_gather += t_ag(sys->weight_bytes * P, n, l);
                t_bucket = mfu_dmax(t_bucket, t_ag(bucket, n, l));
            }
        }
        tot[MFU_COMM_DP] = n_sync * t_sync + t_gather;
        /* sync under the backward it follows (the last bucket always
         * exposed); the ZeRO parameter all-gather under the next forward.
         * ZeRO-2's earlier reduce-scatters run under the rest of the step
         * (later micro-batches' compute), only their excess is exposed. */
        double rest = mb * (t_f + t_b) - (t_f + t_b);
        exp_[MFU_COMM_DP] = mfu_dmax(t_bucket, t_sync - t_b) + mfu_dmax(0.0, t_gather - t_f) +
                            mfu_dmax(0.0, (n_sync - 1.0) * t_sync - rest);
        exp_[MFU_COMM_DP] = fmin(exp_[MFU_COMM_DP], tot[MFU_COMM_DP]);
        /* no overlap of the gradient reduction (Megatron without
         * --overlap-grad-reduce; Korthikanti et al. 2022 sec. 6.3 ran so) */
        if (sys->train.no_grad_overlap) exp_[MFU_COMM_DP] = tot[MFU_COMM_DP];
    }
    /* PP (Narayanan sec. 4.1): per micro-batch b*s*h forward and backward
     * between stages (scatter/gather over tp: /t), x vpp with interleaving;
     * on the critical path during fill and drain, hidden in steady state. */
    double t_mb = t_f + t_b + t_rc;
    if (pp > 1) {
        link l = link_for(sys, sys->devices, eff);
        double bytes = ab * T * h / (c->sp ? tp : 1.0);
        double one = bytes / bw_at(l, bytes) + l.lat;
        double v = (double)c->vpp;
        tot[MFU_COMM_PP] = 2.0 * mb * v * one;
        double chunk = t_mb / v;
        exp_[MFU_COMM_PP] = 2.0 * (pp - 1.0) * one + 2.0 * mb * v * mfu_dmax(0.0, one - chunk);
        exp_[MFU_COMM_PP] = fmin(exp_[MFU_COMM_PP], tot[MFU_COMM_PP]);
    }

    /* contention: communication hidden under compute still takes SMs and
     * HBM bandwidth from it (expected profile only) */
    if (eff && eff->overlap_slowdown > 0)
        for (int i = 0; i < MFU_COMM_COUNT; i++)
            exp_[i] += eff->overlap_slowdown * (tot[i] - exp_[i]);

    /* bubble: the pipeline's idle fraction of a micro-batch's critical path
     * (compute, recompute, in-layer exposed communication). */
    double w_frac = (t_f + t_b) > 0 ? L * a->wgrad_s / (t_f + t_b) : 0.0;
    double b_frac = c->schedule == MFU_SCHED_DUALPIPEV && (t_f + t_b) > 0 ? t_b / (t_f + t_b) : 0.0;
    double fb = mfu_bubble_fraction(c->schedule, c->ax[MFU_AX_PP], c->vpp, c->grad_accum, w_frac, b_frac);
    double inlayer = exp_[MFU_COMM_TP] + exp_[MFU_COMM_CP] + exp_[MFU_COMM_EP] +
                     (pp > 1 && sys->hw->platform == MFU_PLATFORM_GPU ? 0.0 : exp_[MFU_COMM_FSDP]);
    tm->bubble_s = fb * (tm->compute_s + tm->recompute_s + inlayer + host_x);

    /* optimizer step: AdamW over the local optimizer shard, memory bound:
     * reads fp32 master, grad, m, v (16 B), writes master, m, v and the bf16
     * weights (14 B); gradient clipping reads every gradient for the global
     * norm (4 B) and the gradient buffer is zeroed for the next step (4 B). */
    double P_opt;
    if (fsdp > 1) P_opt = dpar.dense / (fsdp * cp) + dpar.expert / mfu_expert_fsdp(c);
    else if (c->zero >= 1) P_opt = dpar.dense / mfu_dense_replicas(c) + dpar.expert / mfu_expert_dp(c);
    else P_opt = P_dev;
    tm->optimizer_s = 38.0 * P_opt / (sys->hw->hbm_bw_bytes_s * (eff ? eff->hbm_eff : 1.0));
    /* F-MEM-OPT-OFFLOAD: the moments cross the host link to the device for
     * the update and back, after the last backward: exposed */
    if (sys->train.optimizer_offload && sys->hw->host_bw_bytes_s > 0)
        tm->optimizer_s += 2.0 * sys->moment_bytes * P_opt / sys->hw->host_bw_bytes_s;
    /* F-TIME-HOST: per step, and per micro-batch pass of each stage */
    tm->overhead_s = eff ? eff->step_overhead_s + mb * eff->microbatch_overhead_s + host_x : 0.0;

    double exposed = 0.0;
    for (int i = 0; i < MFU_COMM_COUNT; i++) exposed += exp_[i];
    double step = tm->compute_s + tm->recompute_s + exposed + tm->bubble_s + tm->optimizer_s +
                  tm->overhead_s + tm->offload_s;
    if (link_s > step) { /* F-RC-MAXTEXT: never shorter than the host link's traffic */
        tm->offload_s += link_s - step;
        step = link_s;
    }
    /* never shorter than the busiest tier's total traffic */
    double tier_tot[MFU_MAX_TIERS] = {0};
    int axis_tier[MFU_COMM_COUNT];
    int64_t spans[MFU_COMM_COUNT] = {s_tp, s_cp, s_ep, s_fsdp, s_dp, sys->devices};
    for (int i = 0; i < MFU_COMM_COUNT; i++) {
        axis_tier[i] = mfu_tier_for_span(sys->hw, spans[i]);
        tier_tot[axis_tier[i]] += tot[i];
    }
    int worst = 0;
    for (int t = 1; t < sys->hw->n_tiers; t++)
        if (tier_tot[t] > tier_tot[worst]) worst = t;
    if (tier_tot[worst] > step) {
        /* charge the difference to the biggest axis on that tier */
        int ax = -1;
        for (int i = 0; i < MFU_COMM_COUNT; i++)
            if (axis_tier[i] == worst && (ax < 0 || tot[i] > tot[ax])) ax = i;
        exp_[ax] += tier_tot[worst] - step;
        step = tier_tot[worst];
    }
    tm->step_time_s = step;

    double N = (double)sys->devices, peak = sys->hw->peak_flops[sys->train.dtype];
    tm->mfu = ev->f_useful_flops / (N * peak * step);
    tm->hfu = ev->f_hw_flops / (N * peak * step);

    /* gap vs the roofline (design.md): the roofline's per-device step for
     * this batch is T_roof / N; every second above it is named. */
    double t_roof = sys->roof_step_per_token_s * (double)ev->global_batch_tokens / N;
    tm->gap_s[MFU_GAP_MEMORY_BOUND] = tm->compute_s - t_roof;
    tm->gap_s[MFU_GAP_RECOMPUTE] = tm->recompute_s;
    tm->gap_s[MFU_GAP_COMM_TP] = exp_[MFU_COMM_TP];
    tm->gap_s[MFU_GAP_COMM_CP] = exp_[MFU_COMM_CP];
    tm->gap_s[MFU_GAP_COMM_EP] = exp_[MFU_COMM_EP];
    tm->gap_s[MFU_GAP_COMM_FSDP] = exp_[MFU_COMM_FSDP];
    tm->gap_s[MFU_GAP_COMM_DP] = exp_[MFU_COMM_DP];
    tm->gap_s[MFU_GAP_COMM_PP] = exp_[MFU_COMM_PP];
    tm->gap_s[MFU_GAP_BUBBLE] = tm->bubble_s;
    tm->gap_s[MFU_GAP_OPTIMIZER] = tm->optimizer_s;
    tm->gap_s[MFU_GAP_OVERHEAD] = tm->overhead_s;
    tm->gap_s[MFU_GAP_OFFLOAD] = tm->offload_s;
}

/* The FLOP totals and batch of a configuration (what step_times reads). */
static void eval_totals(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *bound,
                        mfu_eval *out)
{
    double D = (double)(c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP]);
    out->micro_batches = c->grad_accum;
    out->global_batch_tokens = (int64_t)((double)c->mbs * (double)c->grad_accum * D * (double)sys->train.seq);
    double gbt = (double)out->global_batch_tokens;
    out->f_useful_flops = 3.0 * gbt * sys->f_fwd_per_token;
    /* recompute FLOPs over all devices: per-device per-layer recompute at
     * sharded shapes x (tp * cp) devices sharing a micro-batch x layers
     * recomputed x micro-batches in the step. */
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    double nrc_total = 0.0;
    if (rp->kind == MFU_RCK_SELECTIVE) nrc_total = (double)sys->layers;
    else if (rp->kind == MFU_RCK_FULL) {
        /* first + last + the middle stages (as rank 1) */
        int64_t pp = c->ax[MFU_AX_PP];
        nrc_total = (double)mfu_rc_layers(sys, c, mfu_stage_layers(sys, c, 0));
        if (pp > 1) nrc_total += (double)mfu_rc_layers(sys, c, mfu_stage_layers(sys, c, pp - 1));
        if (pp > 2) nrc_total += (double)(pp - 2) * (double)mfu_rc_layers(sys, c, mfu_stage_layers(sys, c, 1));
        if (nrc_total > (double)sys->layers) nrc_total = (double)sys->layers;
    }
    double n_mb = gbt / ((double)c->mbs * (double)sys->train.seq);
    double rcf = rp->kind == MFU_RCK_NONE ? 0.0 : bound->avg.rc_flops[c->recompute];
    out->f_hw_flops = out->f_useful_flops +
                      rcf * (double)(c->ax[MFU_AX_TP] * c->ax[MFU_AX_CP]) * nrc_total * n_mb;
}

/* A lower bound on mfu_step_time's answer from the terms that need no
 * communication model: step = compute + recompute + exposed communication
 * + bubble + optimizer + host overhead (or the busiest tier's traffic, when
 * longer), every term >= 0 and the bubble >= its fraction of compute +
 * recompute (step_times above). */
double mfu_step_lower_bound(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                            int expected)
{
    double t_f, t_b;
    int64_t ls;
    busiest_stage(sys, c, k, &t_f, &t_b, &ls);
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    double L = (double)ls;
    double nrc = rp->kind == MFU_RCK_FULL ? (double)mfu_rc_layers(sys, c, ls)
                 : rp->kind == MFU_RCK_SELECTIVE ? L : 0.0;
    double mb = (double)c->grad_accum;
    double work = mb * (t_f + t_b) + mb * nrc * k->avg.rc_s[c->recompute];
    double w_frac = (t_f + t_b) > 0 ? L * k->avg.wgrad_s / (t_f + t_b) : 0.0;
    double b_frac = c->schedule == MFU_SCHED_DUALPIPEV && (t_f + t_b) > 0 ? t_b / (t_f + t_b) : 0.0;
    double fb = mfu_bubble_fraction(c->schedule, c->ax[MFU_AX_PP], c->vpp, c->grad_accum, w_frac, b_frac);
    const mfu_efficiency *eff = expected && sys->hw->has_profile ? &sys->hw->eff : NULL;
    double oh = eff ? eff->step_overhead_s + mb * eff->microbatch_overhead_s : 0.0;
    return work * (1.0 + (fb > 0 ? fb : 0.0)) + oh;
}

double mfu_step_time(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                     const mfu_shape_cost *bound, int expected)
{
    mfu_eval ev;
    mfu_times t;
    eval_totals(sys, c, bound, &ev);
    const mfu_hardware *hw = sys->hw;
    step_times(sys, c, k, expected && hw->has_profile ? &hw->eff : NULL, &ev, &t);
    return t.step_time_s;
}

int mfu_evaluate_costs(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *bound,
                       const mfu_shape_cost *expected, const mfu_memory *mem, mfu_eval *out)
{
    memset(out, 0, sizeof *out);
    eval_totals(sys, c, bound, out);
    if (mem) out->mem = *mem;
    else mfu_memory_costs(sys, c, bound, &out->mem);
    out->feasible = out->mem.headroom_bytes >= 0;
    out->frameworks = mfu_config_frameworks(sys, c, NULL);
    step_times(sys, c, bound, NULL, out, &out->bound);
    /* the bound's gap has no kernel-efficiency term */
    const mfu_hardware *hw = sys->hw;
    step_times(sys, c, expected, hw->has_profile ? &hw->eff : NULL, out, &out->expected);
    /* expected: split compute into the bound's compute + kernel efficiency */
    out->expected.gap_s[MFU_GAP_KERNEL_EFFICIENCY] =
        (out->expected.compute_s - out->bound.compute_s) +
        (out->expected.recompute_s - out->bound.recompute_s);
    out->expected.gap_s[MFU_GAP_MEMORY_BOUND] -=
        out->expected.compute_s - out->bound.compute_s;
    out->expected.gap_s[MFU_GAP_RECOMPUTE] = out->bound.recompute_s;
    out->tokens_per_s = (double)out->global_batch_tokens / out->expected.step_time_s;
    double tc = out->bound.compute_s + out->bound.recompute_s;
    for (int i = 0; i < MFU_COMM_COUNT; i++)
        out->overlap_ratio[i] = tc > 0 ? out->bound.comm_total_s[i] / tc : 0.0;
    return MFU_OK;
}

int mfu_evaluate(const mfu_system *sys, const mfu_config *c, mfu_op *ops, mfu_eval *out)
{
    mfu_shape s;
    mfu_config_shape(sys, c, &s);
    mfu_shape_cost kb, ke;
    mfu_shape_costs(sys, &s, NULL, ops, &kb);
    if (sys->hw->has_profile) mfu_shape_costs(sys, &s, &sys->hw->eff, ops, &ke);
    else ke = kb;
    return mfu_evaluate_costs(sys, c, &kb, &ke, NULL, out);
}
