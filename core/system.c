/* core/system.c -- System Bound of one configuration (seed 000 Phase 2).
 *
 * T_step = compute + recompute + exposed comm (per axis) + bubble
 *          + optimizer step + overhead,
 * and never less than the busiest network tier's total traffic time.
 * MFU = F_useful / (devices * peak * T_step); HFU adds recompute FLOPs
 * (seed 003 sec. 2).
 *
 * Assumptions (named, each a modelling choice):
 *  - layers spread evenly over pp stages; the busiest stage has ceil(L/pp)
 *    layers of the model's average layer, plus the LM head (last stage) or
 *    embedding (first stage), whichever stage is busier;
 *  - mixed precision as Megatron-LM with bf16: bf16 weights (2 B), fp32 main
 *    gradients (4 B, reduced in fp32: Megatron sets
 *    accumulate_allreduce_grads_in_fp32 for bf16), AdamW fp32 master + two
 *    moments (12 B) -- formulas.md sec. 6, Megatron distributed-optimizer table;
 *  - collectives: ring all-gather / reduce-scatter (n-1)/n * S / W + (n-1)
 *    latency steps; all-reduce = RS + AG; all-to-all (n-1)/n * S / W
 *    (formulas.md sec. 5.1, nccl-tests PERFORMANCE.md); the group runs at the
 *    bandwidth of the slowest tier it spans (placement tp, cp, ep, fsdp, dp,
 *    pp from innermost);
 *  - a reserve of 5 % of HBM plus 1 GB for allocator fragmentation, the CUDA
 *    context and communication buffers (seed 003 sec. 4 on fragmentation).
 */
#include "system.h"

#include <math.h>
#include <string.h>

const char *const mfu_gap_names[MFU_GAP_COUNT] = {
    "memory_bound_ops", "kernel_efficiency", "recompute", "comm_tp", "comm_cp", "comm_ep",
    "comm_fsdp",        "comm_dp",           "comm_pp",   "bubble",  "optimizer", "overhead"};
const char *const mfu_comm_names[MFU_COMM_COUNT] = {"tp", "cp", "ep", "fsdp", "dp", "pp"};
const char *const mfu_prune_names[MFU_PRUNE_COUNT] = {"divisibility", "batch", "memory", "bound",
                                                      "constraint"};

static double dmax(double a, double b) { return a > b ? a : b; }

/* ---- shared part ------------------------------------------------------- */

void mfu_system_init(mfu_system *sys, const mfu_model *m, const mfu_hardware *hw,
                     const mfu_training *t, int64_t devices, mfu_op *ops)
{
    memset(sys, 0, sizeof *sys);
    sys->model = m;
    sys->hw = hw;
    sys->train = *t;
    sys->devices = devices;
    mfu_roofline roof;
    mfu_roofline_compute(m, hw, t, ops, MFU_MAX_OPS, &roof);
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
        }
    }
    sys->reserve_frac = 0.05;
    sys->reserve_fixed_bytes = 1e9;
    /* Megatron-LM DDP bucket: 40 M parameters (ddp_bucket_size default), fp32. */
    sys->bucket_bytes = 40e6 * 4.0;
    sys->weight_bytes = 2.0;
    sys->grad_bytes = 4.0;
    sys->optim_bytes = 12.0;
    sys->grad_comm_bytes = 4.0;
}

/* ---- legality ---------------------------------------------------------- */

int mfu_config_check_shape(const mfu_system *sys, const mfu_config *c, const char **why)
{
    const mfu_model *m = sys->model;
    int64_t tp = c->ax[MFU_AX_TP], cp = c->ax[MFU_AX_CP], ep = c->ax[MFU_AX_EP];
    int64_t pp = c->ax[MFU_AX_PP];
    int64_t prod = 1;
    for (int a = 0; a < MFU_AX_COUNT; a++) {
        if (c->ax[a] < 1) { *why = "every axis must be >= 1"; return MFU_PRUNE_DIVISIBILITY; }
        prod *= c->ax[a];
    }
    if (prod != sys->devices) { *why = "axes must multiply to the device count"; return MFU_PRUNE_DIVISIBILITY; }
    int has_moe = sys->moe_layers > 0;
    for (int r = 0; r < m->n_runs; r++) {
        const mfu_attention *a = &m->runs[r].attn;
        const mfu_mlp *p = &m->runs[r].mlp;
        if (a->n_heads % tp) { *why = "tp must divide the attention heads"; return MFU_PRUNE_DIVISIBILITY; }
        if (a->kind != MFU_ATTN_MLA && a->n_kv_heads % tp && tp % a->n_kv_heads) {
            *why = "tp and the KV heads must divide one another";
            return MFU_PRUNE_DIVISIBILITY;
        }
        if (p->kind == MFU_MLP_DENSE && p->ffn_dim % tp) { *why = "tp must divide ffn_dim"; return MFU_PRUNE_DIVISIBILITY; }
        if (p->kind == MFU_MLP_MOE) {
            if (p->n_experts % ep) { *why = "ep must divide the experts"; return MFU_PRUNE_DIVISIBILITY; }
            if (p->expert_ffn_dim % c->etp) { *why = "etp must divide expert_ffn_dim"; return MFU_PRUNE_DIVISIBILITY; }
        }
    }
    if (!has_moe && ep > 1) { *why = "ep > 1 needs MoE layers"; return MFU_PRUNE_DIVISIBILITY; }
    if (c->etp != 1 && c->etp != tp) { *why = "etp must be 1 or tp"; return MFU_PRUNE_DIVISIBILITY; }
    if (pp > sys->layers) { *why = "pp must not exceed the layers"; return MFU_PRUNE_DIVISIBILITY; }
    /* causal load balancing splits the sequence in 2*cp chunks (Llama 3 sec. 3.3.2) */
    if (cp > 1 && sys->train.seq % (2 * cp)) { *why = "cp needs seq divisible by 2*cp"; return MFU_PRUNE_DIVISIBILITY; }
    if (c->sp && tp < 2) { *why = "sequence parallel needs tp >= 2"; return MFU_PRUNE_DIVISIBILITY; }
    if (c->sp && (sys->train.seq / cp) % tp) { *why = "sequence parallel needs seq/cp divisible by tp"; return MFU_PRUNE_DIVISIBILITY; }
    if (c->mbs < 1) { *why = "mbs must be >= 1"; return MFU_PRUNE_BATCH; }
    return -1;
}

/* The switches below the shape: zero, schedule, batch, recompute. */
int mfu_config_check_point(const mfu_system *sys, const mfu_config *c, const char **why)
{
    int64_t pp = c->ax[MFU_AX_PP];
    if (c->schedule == MFU_SCHED_INTERLEAVED) {
        if (pp < 2 || c->vpp < 2) { *why = "interleaved needs pp >= 2 and vpp >= 2"; return MFU_PRUNE_DIVISIBILITY; }
        if (pp * c->vpp > sys->layers) { *why = "pp * vpp must not exceed the layers"; return MFU_PRUNE_DIVISIBILITY; }
        /* Narayanan et al. 2021 sec. 2.2.2: micro-batches a multiple of pp */
        if (c->grad_accum % pp) { *why = "interleaved needs grad_accum to be a multiple of pp"; return MFU_PRUNE_DIVISIBILITY; }
    } else if (c->vpp != 1) {
        *why = "vpp > 1 only with the interleaved schedule";
        return MFU_PRUNE_DIVISIBILITY;
    }
    if (c->schedule != MFU_SCHED_1F1B && pp < 2) { *why = "pipeline schedules other than 1f1b need pp >= 2"; return MFU_PRUNE_DIVISIBILITY; }
    if (c->zero && c->ax[MFU_AX_DP] * c->ax[MFU_AX_EP] < 2) { *why = "zero needs dp * ep >= 2"; return MFU_PRUNE_DIVISIBILITY; }
    if (c->zero < 0 || c->zero > 2) { *why = "zero must be 0, 1 or 2 (use fsdp for stage 3)"; return MFU_PRUNE_DIVISIBILITY; }
    if (c->mbs < 1 || c->grad_accum < 1) { *why = "mbs and grad_accum must be >= 1"; return MFU_PRUNE_BATCH; }
    if (c->recompute_layers == 0 || c->recompute_layers < -1) { *why = "recompute_layers must be -1 (all) or >= 1"; return MFU_PRUNE_DIVISIBILITY; }
    return -1;
}

int mfu_config_check(const mfu_system *sys, const mfu_config *c, const char **why)
{
    int r = mfu_config_check_shape(sys, c, why);
    return r >= 0 ? r : mfu_config_check_point(sys, c, why);
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
}

static void add_layer_ops(const mfu_system *sys, const mfu_op *ops, int n, double ab, double Te,
                          const mfu_efficiency *eff, mfu_layer_cost *lc)
{
    const mfu_model *m = sys->model;
    double saved = 0, saved_scores = 0, saved_mlp = 0;
    double h = (double)m->d_model;
    for (int i = 0; i < n; i++) {
        const mfu_op *o = &ops[i];
        double t = mfu_op_time(o, sys->hw, sys->train.dtype, eff);
        if (o->phase == MFU_FWD) {
            lc->fwd_s += t;
            lc->fwd_flops += o->flops;
            saved += o->saved_bytes;
            if (o->tags & MFU_TAG_SCORES) saved_scores += o->saved_bytes;
            if (o->tags & MFU_TAG_MLP) saved_mlp += o->saved_bytes;
            if (o->tags & MFU_TAG_ATTN_CORE) {
                lc->rc_s[MFU_RC_SELECTIVE] += t;
                lc->rc_flops[MFU_RC_SELECTIVE] += o->flops;
            }
            if (o->tags & MFU_TAG_MLP) {
                lc->rc_s[MFU_RC_SAVE_DOT_EXCEPT_MLP] += t;
                lc->rc_flops[MFU_RC_SAVE_DOT_EXCEPT_MLP] += o->flops;
            }
            lc->rc_s[MFU_RC_FULL] += t;
            lc->rc_flops[MFU_RC_FULL] += o->flops;
        } else {
            lc->bwd_s += t;
            if (o->tags & MFU_TAG_WGRAD) lc->wgrad_s += t;
        }
        if (o->tags & MFU_TAG_MATMUL) lc->gemm_s += t;
        if (o->tags & MFU_TAG_ATTN_CORE) lc->attn_core_s += t;
        if (o->tags & MFU_TAG_EXPERT) lc->expert_s += t;
    }
    lc->saved_bytes[MFU_RC_NONE] += saved;
    /* selective (Korthikanti sec. 5): the s x s tensors are not kept */
    lc->saved_bytes[MFU_RC_SELECTIVE] += saved - saved_scores;
    /* save_dot_except_mlp: the MLP block keeps only its input */
    lc->saved_bytes[MFU_RC_SAVE_DOT_EXCEPT_MLP] += saved - saved_mlp + ab * Te * h;
    /* full: only the layer input (Korthikanti Table 2: 2sbh; /t with sp) */
    lc->saved_bytes[MFU_RC_FULL] += ab * Te * h;
}

static void add_cost(mfu_layer_cost *dst, const mfu_layer_cost *src, double k)
{
    double *d = (double *)dst;
    const double *s = (const double *)src;
    for (size_t i = 0; i < sizeof *dst / sizeof(double); i++) d[i] += k * s[i];
}

void mfu_shape_costs(const mfu_system *sys, const mfu_shape *s, const mfu_efficiency *eff,
                     mfu_op *ops, mfu_shape_cost *out)
{
    const mfu_model *m = sys->model;
    memset(out, 0, sizeof *out);
    out->shape = *s;
    double ab = s->dtype == MFU_DT_FP32 ? 4.0 : 2.0;
    double T = s->mbs * (double)s->seq / (double)s->cp;
    double Te = s->sp ? T / (double)s->tp : T;
    for (int r = 0; r < m->n_runs; r++) {
        int n = mfu_ops_layer(m, r, s, ops, MFU_MAX_OPS);
        mfu_layer_cost lc;
        memset(&lc, 0, sizeof lc);
        add_layer_ops(sys, ops, n, ab, Te, eff, &lc);
        double cnt = (double)m->runs[r].count;
        add_cost(&out->avg, &lc, cnt / (double)sys->layers);
        if (m->runs[r].mlp.kind == MFU_MLP_MOE)
            add_cost(&out->avg_moe, &lc, cnt / (double)sys->moe_layers);
    }
    int n = mfu_ops_embed(m, s, ops, MFU_MAX_OPS);
    for (int i = 0; i < n; i++) {
        double t = mfu_op_time(&ops[i], sys->hw, s->dtype, eff);
        if (ops[i].phase == MFU_FWD) out->embed_fwd_s += t; else out->embed_bwd_s += t;
        out->embed_saved += ops[i].saved_bytes;
    }
    n = mfu_ops_head(m, s, ops, MFU_MAX_OPS);
    for (int i = 0; i < n; i++) {
        double t = mfu_op_time(&ops[i], sys->hw, s->dtype, eff);
        if (ops[i].phase == MFU_FWD) out->head_fwd_s += t; else out->head_bwd_s += t;
        out->head_saved += ops[i].saved_bytes;
    }
}

/* ---- memory (Q1) ------------------------------------------------------- */

static int64_t stage_layers(const mfu_system *sys, const mfu_config *c)
{
    int64_t pp = c->ax[MFU_AX_PP];
    return (sys->layers + pp - 1) / pp;
}

static int64_t rc_layers(const mfu_config *c, int64_t ls)
{
    if (c->recompute != MFU_RC_FULL) return c->recompute == MFU_RC_NONE ? 0 : ls;
    return c->recompute_layers < 0 || c->recompute_layers > ls ? ls : c->recompute_layers;
}

/* Parameters held by one device of a stage (before fsdp sharding), split
 * into the dense part (replicated over dp and ep: ep is data parallel for
 * non-expert layers) and the routed experts (divided over ep, and over
 * etp; replicated over dp only). */
typedef struct dev_params { double dense, expert; } dev_params;

static dev_params device_params(const mfu_system *sys, const mfu_config *c, int first_stage)
{
    const mfu_model *m = sys->model;
    double tp = (double)c->ax[MFU_AX_TP], ep = (double)c->ax[MFU_AX_EP];
    double frac = (double)stage_layers(sys, c) / (double)sys->layers;
    dev_params p;
    p.dense = frac * sys->layer_params_dense / tp;
    p.expert = frac * sys->params_expert / (ep * (double)c->etp);
    double vh = (double)m->vocab * (double)m->d_model;
    double pos = m->position == MFU_POS_LEARNED ? (double)m->max_positions * (double)m->d_model : 0;
    /* the final norm: whatever the layers and embeddings do not hold */
    double fin = sys->params_total - sys->layer_params_dense - sys->params_expert -
                 sys->params_embed;
    if (c->ax[MFU_AX_PP] == 1) {
        p.dense += (vh + pos) / tp + (m->tie_embeddings ? 0.0 : vh / tp) + fin;
    } else {
        /* first stage: token (+ position) embeddings; last: the LM head (a
         * copy of the embedding when tied) and the final norm */
        p.dense += first_stage ? (vh + pos) / tp : vh / tp + fin;
    }
    return p;
}

/* Replicas of the dense part and of the experts that ZeRO shards over. */
static double dense_replicas(const mfu_config *c)
{
    return (double)(c->ax[MFU_AX_DP] * c->ax[MFU_AX_EP]);
}

static void memory_stage(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                         int first_stage, mfu_memory *out)
{
    const mfu_model *m = sys->model;
    double dp = (double)c->ax[MFU_AX_DP], fsdp = (double)c->ax[MFU_AX_FSDP];
    double pp = (double)c->ax[MFU_AX_PP];
    dev_params dpar = device_params(sys, c, first_stage);
    double P = dpar.dense + dpar.expert;
    double rd = dense_replicas(c);
    out->weights_bytes = P * sys->weight_bytes / fsdp;
    /* ZeRO-1/2 (distributed optimizer) shard over the replicas of each part */
    out->grads_bytes = sys->grad_bytes / fsdp *
                       (c->zero >= 2 ? dpar.dense / rd + dpar.expert / dp : P);
    out->optimizer_bytes = sys->optim_bytes / fsdp *
                           (c->zero >= 1 ? dpar.dense / rd + dpar.expert / dp : P);

    /* Activations of one micro-batch on this stage under the policy. */
    int64_t ls = stage_layers(sys, c);
    int64_t nrc = rc_layers(c, ls);
    const mfu_layer_cost *a = &k->avg;
    double per_mb;
    if (c->recompute == MFU_RC_FULL)
        per_mb = (double)nrc * a->saved_bytes[MFU_RC_FULL] +
                 (double)(ls - nrc) * a->saved_bytes[MFU_RC_NONE];
    else
        per_mb = (double)ls * a->saved_bytes[c->recompute];
    /* Micro-batches in flight (Korthikanti sec. 4.2.3, formulas.md sec. 3):
     * 1F1B and ZB-H1 keep p on the first stage (min with m); interleaving
     * multiplies by 1 + (p-1)/(p*v); the last stage keeps one. */
    double inflight;
    if (!first_stage) inflight = 1.0;
    else {
        inflight = dmax(1.0, fmin(pp, (double)c->grad_accum));
        if (c->schedule == MFU_SCHED_INTERLEAVED)
            inflight *= 1.0 + (pp - 1.0) / (pp * (double)c->vpp);
    }
    double act = inflight * per_mb;
    if (first_stage) act += inflight * k->embed_saved;
    if (!first_stage || c->ax[MFU_AX_PP] == 1) act += k->head_saved;
    /* recomputing a layer rematerialises its full activations once */
    if (nrc > 0) act += a->saved_bytes[MFU_RC_NONE] - a->saved_bytes[c->recompute];
    out->activations_bytes = act;

    /* Buffers. */
    double buf = 0.0;
    const mfu_shape *s = &k->shape;
    double T = s->mbs * (double)s->seq / (double)s->cp;
    if (c->ax[MFU_AX_FSDP] > 1) /* prefetch: current + next layer unsharded (bf16) */
        buf += 2.0 * sys->weight_bytes * P / (double)ls;
    if (sys->moe_mlp) {
        /* dispatch and combine buffers of one MoE layer's token slots */
        const mfu_mlp *mp = sys->moe_mlp;
        double Ts = T * (double)mp->top_k * mp->capacity_factor * (double)c->etp / (double)s->tp;
        buf += 2.0 * 2.0 * Ts * (double)m->d_model;
    }
    if (c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP] > 1) buf += 2.0 * sys->bucket_bytes;
    out->buffers_bytes = buf;
    out->capacity_bytes = sys->hw->hbm_bytes;
    out->reserve_bytes = sys->reserve_frac * sys->hw->hbm_bytes + sys->reserve_fixed_bytes;
    out->total_bytes = out->weights_bytes + out->grads_bytes + out->optimizer_bytes +
                       out->activations_bytes + out->buffers_bytes + out->reserve_bytes;
    out->headroom_bytes = out->capacity_bytes - out->total_bytes;
}

void mfu_memory_costs_ex(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                         int exact, mfu_memory *out)
{
    mfu_memory first, last;
    memory_stage(sys, c, k, 1, &first);
    /* one stage; or, when only feasibility matters, the first does not fit */
    if (c->ax[MFU_AX_PP] == 1 || (!exact && first.headroom_bytes < 0)) { *out = first; return; }
    memory_stage(sys, c, k, 0, &last);
    *out = first.total_bytes >= last.total_bytes ? first : last;
}

void mfu_memory_costs(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                      mfu_memory *out)
{
    mfu_memory_costs_ex(sys, c, k, 1, out);
}

void mfu_memory_model(const mfu_system *sys, const mfu_config *c, mfu_op *ops, mfu_memory *out)
{
    mfu_shape s;
    mfu_config_shape(sys, c, &s);
    mfu_shape_cost k;
    mfu_shape_costs(sys, &s, NULL, ops, &k);
    mfu_memory_costs(sys, c, &k, out);
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

double mfu_bubble_fraction(mfu_schedule s, int64_t pp, int64_t vpp, int64_t m, double w_frac)
{
    if (pp <= 1 || m <= 0) return 0.0;
    double p1 = (double)(pp - 1), mm = (double)m;
    switch (s) {
    case MFU_SCHED_INTERLEAVED: return p1 / ((double)vpp * mm);  /* Narayanan sec. 2.2.2 */
    case MFU_SCHED_ZB: return p1 / mm * dmax(0.0, 1.0 - 2.0 * w_frac); /* (p-1)(F+B-2W) */
    default: return p1 / mm;                                      /* (p-1)/m */
    }
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
    int64_t ls = stage_layers(sys, c);
    double L = (double)ls;
    double nrc = (double)rc_layers(c, ls);
    const mfu_layer_cost *a = &k->avg;
    double moe_frac = sys->layers ? (double)sys->moe_layers / (double)sys->layers : 0.0;

    /* compute per micro-batch on the busiest stage */
    double head_f = k->head_fwd_s, head_b = k->head_bwd_s;
    double emb_f = k->embed_fwd_s, emb_b = k->embed_bwd_s;
    double extra_f, extra_b;
    if (c->ax[MFU_AX_PP] == 1) { extra_f = head_f + emb_f; extra_b = head_b + emb_b; }
    else if (head_f + head_b >= emb_f + emb_b) { extra_f = head_f; extra_b = head_b; }
    else { extra_f = emb_f; extra_b = emb_b; }
    double t_f = L * a->fwd_s + extra_f;
    double t_b = L * a->bwd_s + extra_b;
    double t_rc = c->recompute == MFU_RC_NONE ? 0.0 : nrc * a->rc_s[c->recompute];
    tm->compute_s = mb * (t_f + t_b);
    tm->recompute_s = mb * t_rc;

    /* placement: tp, cp, ep, fsdp, dp, pp innermost first */
    int64_t s_tp = c->ax[MFU_AX_TP], s_cp = s_tp * c->ax[MFU_AX_CP];
    int64_t s_ep = s_cp * c->ax[MFU_AX_EP], s_fsdp = s_ep * c->ax[MFU_AX_FSDP];
    int64_t s_dp = s_fsdp * c->ax[MFU_AX_DP];
    const mfu_shape *s = &k->shape;
    double T = s->mbs * (double)s->seq / cp;
    double *tot = tm->comm_total_s, *exp_ = tm->comm_exposed_s;

    /* TP (Korthikanti sec. 4.2.2): per layer 2 all-reduces forward and 2
     * backward of b*s*h (or, with sp, AG + RS of the same total bandwidth).
     * MoE layers with etp = 1 keep tokens sequence-split: no MLP collective. */
    if (tp > 1) {
        link l = link_for(sys, s_tp, eff);
        double one = t_ar(ab * T * h, tp, l);
        double mlp_coll = 1.0 - (c->etp == 1 ? moe_frac : 0.0);
        double per_layer_dir = 1.0 + mlp_coll; /* collectives per direction */
        double rc_coll = 0.0;
        if (c->recompute == MFU_RC_FULL) rc_coll = per_layer_dir;
        else if (c->recompute == MFU_RC_SAVE_DOT_EXCEPT_MLP) rc_coll = mlp_coll;
        tot[MFU_COMM_TP] = mb * one * (2.0 * L * per_layer_dir + (c->recompute == MFU_RC_FULL ? nrc : L) * rc_coll);
        exp_[MFU_COMM_TP] = c->tp_overlap ? dmax(0.0, tot[MFU_COMM_TP] - mb * L * a->gemm_s)
                                          : tot[MFU_COMM_TP];
    }
    /* CP (Llama 3 sec. 3.3.2 all-gather of K and V; ring equivalent): per
     * layer forward AG of K,V; backward AG again + RS of dK,dV. Hidden under
     * the attention core. */
    if (cp > 1) {
        link l = link_for(sys, s_cp, eff);
        double kv = 0.0;
        for (int r = 0; r < m->n_runs; r++) {
            const mfu_attention *at = &m->runs[r].attn;
            double w;
            if (at->kind == MFU_ATTN_MHA) {
                double hkv = (double)at->n_kv_heads >= tp ? (double)at->n_kv_heads / tp : 1.0;
                w = hkv * 2.0 * (double)at->head_dim;
            } else if (at->kind == MFU_ATTN_MLA) {
                w = (double)at->n_heads / tp * (double)(at->qk_nope_head_dim + at->qk_rope_head_dim + at->v_head_dim);
            } else {
                /* GLA passes chunk states (d_k x d_v per head) between ranks */
                w = (double)at->n_heads / tp * ((double)at->key_dim / (double)at->n_heads) *
                    ((double)at->value_dim / (double)at->n_heads) / T;
            }
            kv += (double)m->runs[r].count / (double)sys->layers * ab * T * cp * w;
        }
        double one = t_ag(kv, cp, l);
        tot[MFU_COMM_CP] = mb * L * 3.0 * one + mb * nrc * (c->recompute == MFU_RC_FULL ? one : 0.0);
        exp_[MFU_COMM_CP] = dmax(0.0, tot[MFU_COMM_CP] - mb * L * a->attn_core_s);
    }
    /* EP (seed 000 table): per MoE layer dispatch + combine all-to-all,
     * forward and backward, each of the token slots' hidden states. Inside
     * one fast domain: an all-to-all over ep ranks. Across domains (nodes)
     * it is two-level: a token's copies for remote nodes cross the network
     * -- once per expert copy, or once per destination node with
     * node-limited routing (DeepSeek-V3 sec. 2.1.2 / 3.2.2: IB to the node,
     * NVLink forwarding inside it) -- while every copy moves over the fast
     * domain; the two stages pipeline, so the slower one counts. */
    if (ep > 1 && sys->moe_layers > 0) {
        const mfu_mlp *mp = sys->moe_mlp;
        double kk = (double)mp->top_k;
        double tok = T * mp->capacity_factor * (double)c->etp / tp; /* tokens routed per device */
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
            one = dmax(t_out, t_in);
        }
        double Lm = L * moe_frac;
        double rc = (c->recompute == MFU_RC_FULL ? nrc * moe_frac
                     : c->recompute == MFU_RC_SAVE_DOT_EXCEPT_MLP ? Lm : 0.0);
        tot[MFU_COMM_EP] = mb * one * (4.0 * Lm + 2.0 * rc);
        exp_[MFU_COMM_EP] = c->ep_overlap ? dmax(0.0, tot[MFU_COMM_EP] - mb * Lm * k->avg_moe.expert_s)
                                          : tot[MFU_COMM_EP];
    }
    /* FSDP (ZeRO-3): per layer and micro-batch, all-gather the layer's
     * parameters forward and again backward, reduce-scatter its gradients;
     * layer n+1's gather is prefetched under layer n (seed 000 step 4). */
    dev_params dpar = device_params(sys, c, 1);
    double P_first = dpar.dense + dpar.expert;
    if (fsdp > 1) {
        link l = link_for(sys, s_fsdp, eff);
        double layer_p = (P_first - (c->ax[MFU_AX_PP] == 1 ? sys->params_embed / tp : 0.0)) / L;
        double ag = t_ag(sys->weight_bytes * layer_p, fsdp, l);
        double rs = t_ag(sys->grad_comm_bytes * layer_p, fsdp, l);
        tot[MFU_COMM_FSDP] = mb * L * (2.0 * ag + rs);
        double lf = a->fwd_s, lb = a->bwd_s + (nrc > 0 ? a->rc_s[c->recompute] : 0.0);
        exp_[MFU_COMM_FSDP] = mb * (L * (dmax(0.0, ag - lf) + dmax(0.0, ag + rs - lb)) + 2.0 * ag);
        exp_[MFU_COMM_FSDP] = fmin(exp_[MFU_COMM_FSDP], tot[MFU_COMM_FSDP]);
    }
    /* DP: gradients once per step (all-reduce, or with ZeRO-1/2 a
     * reduce-scatter of gradients and an all-gather of parameters), in
     * buckets under the last micro-batch's backward. Dense parameters sync
     * over dp x ep (ep is data parallel for them), experts over dp; the two
     * groups share the links, so their times add. */
    double rd = dense_replicas(c);
    if (rd > 1) {
        link l = link_for(sys, s_dp, eff);
        double parts[2][2] = {{dpar.dense / fsdp, rd}, {dpar.expert / fsdp, dp}};
        double t_sync = 0, t_gather = 0, t_bucket = 0;
        for (int i = 0; i < 2; i++) {
            double P = parts[i][0], n = parts[i][1];
            if (P <= 0 || n <= 1) continue;
            double g = sys->grad_comm_bytes * P;
            double bucket = fmin(sys->bucket_bytes, g);
            if (c->zero == 0) {
                t_sync += t_ar(g, n, l);
                t_bucket = dmax(t_bucket, t_ar(bucket, n, l));
            } else {
                t_sync += t_ag(g, n, l);
                t_gather += t_ag(sys->weight_bytes * P, n, l);
                t_bucket = dmax(t_bucket, t_ag(bucket, n, l));
            }
        }
        tot[MFU_COMM_DP] = t_sync + t_gather;
        /* sync under the last backward (the last bucket always exposed);
         * the ZeRO parameter all-gather under the next forward */
        exp_[MFU_COMM_DP] = dmax(t_bucket, t_sync - t_b) + dmax(0.0, t_gather - t_f);
        exp_[MFU_COMM_DP] = fmin(exp_[MFU_COMM_DP], tot[MFU_COMM_DP]);
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
        exp_[MFU_COMM_PP] = 2.0 * (pp - 1.0) * one + 2.0 * mb * v * dmax(0.0, one - chunk);
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
    double fb = mfu_bubble_fraction(c->schedule, c->ax[MFU_AX_PP], c->vpp, c->grad_accum, w_frac);
    double inlayer = exp_[MFU_COMM_TP] + exp_[MFU_COMM_CP] + exp_[MFU_COMM_EP] + exp_[MFU_COMM_FSDP];
    tm->bubble_s = fb * (tm->compute_s + tm->recompute_s + inlayer);

    /* optimizer step: AdamW over the local optimizer shard, memory bound:
     * reads fp32 master, grad, m, v (16 B), writes master, m, v and the bf16
     * weights (14 B); gradient clipping reads every gradient for the global
     * norm (4 B) and the gradient buffer is zeroed for the next step (4 B). */
    double P_opt = (c->zero >= 1 ? dpar.dense / rd + dpar.expert / dp : P_first) / fsdp;
    tm->optimizer_s = 38.0 * P_opt / (sys->hw->hbm_bw_bytes_s * (eff ? eff->hbm_eff : 1.0));
    tm->overhead_s = eff ? eff->step_overhead_s : 0.0;

    double exposed = 0.0;
    for (int i = 0; i < MFU_COMM_COUNT; i++) exposed += exp_[i];
    double step = tm->compute_s + tm->recompute_s + exposed + tm->bubble_s + tm->optimizer_s +
                  tm->overhead_s;
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
}

/* The FLOP totals and batch of a configuration (what step_times reads). */
static void eval_totals(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *bound,
                        mfu_eval *out)
{
    double D = (double)(c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP] * c->ax[MFU_AX_EP]);
    out->micro_batches = c->grad_accum;
    out->global_batch_tokens = (int64_t)((double)c->mbs * (double)c->grad_accum * D * (double)sys->train.seq);
    double gbt = (double)out->global_batch_tokens;
    out->f_useful_flops = 3.0 * gbt * sys->f_fwd_per_token;
    /* recompute FLOPs over all devices: per-device per-layer recompute at
     * sharded shapes x (tp * cp) devices sharing a micro-batch x layers
     * recomputed x micro-batches in the step. */
    int64_t ls = stage_layers(sys, c);
    double nrc_total = (double)rc_layers(c, ls) * (double)c->ax[MFU_AX_PP];
    if (nrc_total > (double)sys->layers) nrc_total = (double)sys->layers;
    double n_mb = gbt / ((double)c->mbs * (double)sys->train.seq);
    double rcf = c->recompute == MFU_RC_NONE ? 0.0 : bound->avg.rc_flops[c->recompute];
    out->f_hw_flops = out->f_useful_flops +
                      rcf * (double)(c->ax[MFU_AX_TP] * c->ax[MFU_AX_CP]) * nrc_total * n_mb;
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
    return 0;
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
