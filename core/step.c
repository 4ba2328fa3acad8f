/* core/step.c -- the time of one step on the busiest device (Q2 + Q3,
 * docs/model.md "Communication (Q2) and overlap (Q3)", F-PP-BUBBLE,
 * F-TIME-*): the links and collectives, each parallel axis's traffic and
 * what of it compute hides, the pipeline bubble, the optimizer, host
 * overheads and offload; the FLOP totals of a configuration. Split from
 * core/system.c (issue 15), which keeps the shared part, the per-shape
 * layer costs and the evaluation that calls in here.
 *
 * Longer than 600 lines on purpose: every function here runs for each
 * evaluated point of the search, and one translation unit lets them inline
 * (moving the per-axis communication to its own file cost 1.5 % more
 * instructions per evaluation under callgrind). Sections: links and
 * collectives; bubble; the busiest stage; compute; TP, CP, EP, host
 * dispatch, FSDP, DP, PP; the step's parts and total; FLOP totals. */
#include "system_int.h"

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
        double k = stride < d0 ? mfu_dmin(n, d0 / stride) : 1.0;
        if (k > 1) {
            link in = link_for(sys, 1, eff);
            l.bw = mfu_dmin(k * l.bw, in.bw);
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

/* A stage's forward and backward time of one micro-batch, the other
 * stages' mean (F-PP-BUBBLE-REST) and its layers. */
typedef struct stage_pick {
    double t_f, t_b, t_rest;
    int64_t ls;
} stage_pick;

/* The busiest stage by compute into *out (F-PP-SPLIT); where another
 * stage holds more layers, that one into *alt, returning 1: its per-layer
 * work (communication, recompute, the host's dispatch) may make it the
 * slower where the LM head and loss (and the MTP layers' heads, F-OP-MTP)
 * weigh on a shorter stage, and step_eval weighs both. */
static int busiest_stage(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k, stage_pick *out,
                         stage_pick *alt)
{
    const mfu_layer_cost *a = &k->avg;
    if (c->ax[MFU_AX_PP] == 1) {
        /* with the MTP layers (F-OP-MTP, mfu_stage_mtp) */
        int64_t L = sys->layers + sys->model->mtp_layers;
        out->ls = L;
        out->t_f = (double)L * a->fwd_s + k->head_fwd_s + k->embed_fwd_s;
        out->t_b = (double)L * a->bwd_s + k->head_bwd_s + k->embed_bwd_s;
        out->t_rest = out->t_f + out->t_b;
        return 0;
    }
    mfu_stages st;
    mfu_config_stages_held(sys, c, &st);
    /* the LM head and loss (and the MTP layers): the last rank's, or rank
     * 0's in a V */
    int hv = mfu_head_rank(c) == 0;
    double f[3] = {(double)st.first * a->fwd_s + k->embed_fwd_s + (hv ? k->head_fwd_s : 0.0),
                   (double)st.mid * a->fwd_s, (double)st.last * a->fwd_s + (hv ? 0.0 : k->head_fwd_s)};
    double b[3] = {(double)st.first * a->bwd_s + k->embed_bwd_s + (hv ? k->head_bwd_s : 0.0),
                   (double)st.mid * a->bwd_s, (double)st.last * a->bwd_s + (hv ? 0.0 : k->head_bwd_s)};
    int64_t ls[3] = {st.first, st.mid, st.last};
    int best = 0, most = 0;
    for (int i = 1; i < 3; i++) {
        if (f[i] + b[i] > f[best] + b[best]) best = i;
        if (ls[i] > ls[most] || (ls[i] == ls[most] && f[i] + b[i] > f[most] + b[most])) most = i;
    }
    /* F-PP-BUBBLE-REST: the fill and drain pass one micro-batch through
     * every other stage, which the busiest one does not slow: the mean
     * forward and backward of the other p - 1 stages */
    double p = (double)c->ax[MFU_AX_PP], n[3] = {1.0, p - 2.0, 1.0}, rest = 0.0;
    for (int i = 0; i < 3; i++) rest += n[i] * (f[i] + b[i]);
    int pick[2] = {best, most};
    stage_pick *to[2] = {out, alt};
    for (int j = 0; j < 2; j++) {
        int i = pick[j];
        to[j]->t_f = f[i];
        to[j]->t_b = b[i];
        to[j]->ls = ls[i];
        to[j]->t_rest = (rest - (f[i] + b[i])) / (p - 1.0);
    }
    return ls[most] != ls[best];
}

/* One profile (bound: eff NULL; expected: the hardware's profile). */
/* What the parts of one step's time share (mfu_step_times fills it). */
typedef struct step_ctx {
    const mfu_system *sys;
    const mfu_config *c;
    const mfu_shape_cost *k;
    const mfu_efficiency *eff;  /* NULL: the bound */
    const mfu_eval *ev;
    mfu_times *tm;
    const mfu_layer_cost *a;    /* the average layer */
    const mfu_rc_policy *rp;
    double dp, fsdp, tp, ep, pp, cp, mb, ab, h, moe_frac;
    int fsdp_on;                /* mfu_fsdp_on: fsdp > 1, or zero 3 over the cp ranks */
    double L, nrc, t_f, t_b, t_rc; /* the busiest stage: layers, recomputed, per micro-batch */
    double t_rest;              /* the other stages' mean t_f + t_b (F-PP-BUBBLE-REST) */
    double T;                   /* local tokens per micro-batch */
    int64_t s_tp, s_cp, s_fsdp, s_dp, s_ep; /* group spans (placement) */
    mfu_dev_params dpar;        /* rank 0's parameters */
    double P_dev;
    double link_s;              /* the host link's busy time (offload) */
    double ep_one;              /* one all-to-all of one MoE layer */
    double host_x;              /* the host's excess (F-TIME-DISPATCH) */
    double fb;                  /* the bubble's fraction (mfu_bubble_fraction) */
    int stages_differ;          /* the busiest stage by compute has fewer layers than another */
    stage_pick alt;             /* that other stage (busiest_stage) */
} step_ctx;

/* F-RC-CPU-OFFLOAD: Transformer Engine's default synchronizer
 * (transformer_engine/pytorch/cpu_offload.py, DefaultOffloadSynchronizer)
 * offloads layers 0..N-1 one after another on one copy stream; layer i's
 * copy starts with layer i+1's forward and must end before layer L-N+i's
 * starts, and its reload starts with layer L-1-N+i's backward and must end
 * before its own. With W = L - N >= 2 and x seconds a layer each way, the
 * stream is never idle once behind, so the forward takes
 * max(L f, 2 f + N x) and the backward max(L b, 2 b + N x); with W = 1
 * every copy waits in full (TE warns that N = L - 1 "prevents
 * overlapping"). Puts the exposed time in tm->offload_s (tm NULL: the
 * bound, which keeps only the link's busy time); returns that busy time. */
static double cpu_offload_time(const mfu_config *c, int64_t ls, double x_s, const mfu_layer_cost *a,
                               double mb, mfu_times *tm)
{
    double n = (double)mfu_offload_layers(c, ls), L = (double)ls;
    if (tm) {
        double per_mb = ls - (int64_t)n >= 2
                            ? mfu_dmax(0.0, n * x_s - (L - 2.0) * a->fwd_s) +
                                  mfu_dmax(0.0, n * x_s - (L - 2.0) * a->bwd_s)
                            : 2.0 * n * x_s;
        tm->offload_s = mb * per_mb;
    }
    return 2.0 * mb * n * x_s;
}

/* Compute and recompute of the busiest stage, and the host-offload
 * transfers (F-RC-MAXTEXT). */
static void apply_stage(step_ctx *x, const stage_pick *sp)
{
    const mfu_system *sys = x->sys;
    const mfu_config *c = x->c;
    const mfu_efficiency *eff = x->eff;
    const mfu_layer_cost *a = x->a;
    const mfu_rc_policy *rp = x->rp;
    mfu_times *tm = x->tm;
    double mb = x->mb;
    /* compute per micro-batch on the stage */
    double t_f = sp->t_f, t_b = sp->t_b, t_rest = sp->t_rest;
    int64_t ls = sp->ls;
    tm->offload_s = 0.0;
    double L = (double)ls;
    double nrc = rp->kind == MFU_RCK_FULL ? (double)mfu_rc_layers(sys, c, ls)
                 : rp->kind == MFU_RCK_SELECTIVE ? L : 0.0;
    double t_rc = nrc * a->rc_s[c->recompute];
    tm->compute_s = mb * (t_f + t_b);
    tm->compute_fwd_s = mb * t_f;
    tm->compute_gemm_s = mfu_dmin(mb * L * a->gemm_s, tm->compute_s);
    tm->compute_attention_s = mfu_dmin(mb * L * a->attn_core_s, tm->compute_s - tm->compute_gemm_s);
    tm->recompute_s = mb * t_rc;
    /* F-RC-MAXTEXT: offloaded activations cross the host link, device to
     * host during their layer's forward and back during its backward,
     * asynchronously under that layer's compute (XLA's host offload); only
     * what the layer's compute cannot cover shows */
    double host_b = c->recompute >= MFU_RC_QKV_OFFLOADED ? a->host_bytes[c->recompute] : 0.0;
    double link_s = 0.0; /* the host link's busy time (the bound's floor) */
    if (c->recompute == MFU_RC_CPU_OFFLOAD) {
        if (host_b > 0 && sys->hw->host_bw_bytes_s > 0)
            link_s = cpu_offload_time(c, ls, host_b / sys->hw->host_bw_bytes_s, a, mb, eff ? tm : NULL);
    } else if (host_b > 0 && sys->hw->host_bw_bytes_s > 0) {
        double x_s = host_b / sys->hw->host_bw_bytes_s;
        link_s = 2.0 * mb * L * x_s;
        /* the bound: no layer's schedule is assumed, only that the step
         * is no shorter than the link's traffic (below); the expected
         * profile's layer-by-layer exposure is never less than that */
        if (eff)
            tm->offload_s = mb * L * (mfu_dmax(0.0, x_s - a->fwd_s) +
                                      mfu_dmax(0.0, x_s - a->bwd_s - a->rc_s[c->recompute]));
    }
    x->t_f = t_f;
    x->t_b = t_b;
    x->t_rest = t_rest;
    x->L = L;
    x->nrc = nrc;
    x->t_rc = t_rc;
    x->link_s = link_s;
    /* the pipeline's idle fraction of a micro-batch's critical path
     * (step_parts charges it) */
    double w_frac = (t_f + t_b) > 0 ? L * a->wgrad_s / (t_f + t_b) : 0.0;
    double b_frac = c->schedule == MFU_SCHED_DUALPIPEV && (t_f + t_b) > 0 ? t_b / (t_f + t_b) : 0.0;
    x->fb = mfu_bubble_fraction(c->schedule, c->ax[MFU_AX_PP], c->vpp, c->grad_accum, w_frac, b_frac);
    /* F-PP-BUBBLE-CHUNK: the interleaved fill and drain pass one virtual
     * stage per hop, so the bubble is (p-1) times a virtual stage's F + B;
     * where the split leaves the stages unequal (a remainder, a layout) the
     * largest one paces it, not the stage's average L/v */
    if (c->vpp > 1 && c->schedule != MFU_SCHED_DUALPIPEV && L > 0) {
        double big = (double)mfu_max_vstage_layers(sys, c) * (double)c->vpp / (double)L;
        if (big > 1.0) x->fb *= big;
    }
}

/* Compute and recompute of the busiest stage by compute (apply_stage);
 * the fuller stage kept for step_eval where it differs. */
static void compute_part(step_ctx *x)
{
    stage_pick sp;
    x->stages_differ = busiest_stage(x->sys, x->c, x->k, &sp, &x->alt);
    apply_stage(x, &sp);
}

/* TP traffic and what hides of it (F-COMM-TP, F-COMM-TP-OVERLAP). */
static void comm_tp(step_ctx *x)
{
    const mfu_system *sys = x->sys;
    const mfu_config *c = x->c;
    const mfu_efficiency *eff = x->eff;
    double *tot = x->tm->comm_total_s, *exp_ = x->tm->comm_exposed_s;
    const mfu_layer_cost *a = x->a;
    const mfu_rc_policy *rp = x->rp;
    double tp = x->tp, mb = x->mb, ab = x->ab, h = x->h, T = x->T, L = x->L, nrc = x->nrc;
    double moe_frac = x->moe_frac;
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
        /* F-RC-OP-SAC: torchtitan's replay reruns the norms, wk and w3, so
         * both blocks' input all-gathers; the reduce-scatters' outputs are
         * on its save list (with sp, half of each block's pair; without,
         * which torchtitan never runs, the all-reduce) */
        if (rp->kind == MFU_RCK_FULL) rc_coll = per_layer_dir;
        else if (rp->op_sac) rc_coll = (c->sp ? 0.5 : 1.0) * per_layer_dir;
        else if (rp->modules & (MFU_RCM_MLP | MFU_RCM_MOE)) rc_coll = mlp_coll;
        double fwd = mb * one * (L * per_layer_dir + nrc * rc_coll);
        /* the routed experts' share with etp > 1: Megatron-Core's token
         * dispatcher gathers and scatters over tp itself (token_dispatcher.py
         * all-gather / reduce-scatter, or all_to_all_sp2hp / hp2sp), and the
         * expert linears skip the async path (explicit_expert_comm: no
         * sequence parallel, no allreduce_dgrad in layers.py): their
         * backward collectives are synchronous, as many bytes as forward */
        double moe_tp = c->etp == 1 ? 0.0 : moe_frac;
        double blocks = per_layer_dir - moe_tp; /* attention, dense MLPs, shared experts */
        double bwd = mb * one * L * blocks, bwd_moe = mb * one * L * moe_tp;
        /* F-COMM-TP-SP-BWD: with sp the backward of each block moves one
         * and a half all-reduces' bytes, not one (Megatron-LM
         * tensor_parallel/mappings.py and layers.py,
         * LinearWithGradAccumulationAndAsyncCommunication.backward):
         * the row-parallel output's reduce-scatter turns into an
         * all-gather of its gradient, synchronous (bwd_sync); the
         * column-parallel input was saved sequence-split, so it is
         * all-gathered again for the weight gradient, asynchronously
         * under that linear's data-gradient GEMM (bwd_ag); the data
         * gradient is reduce-scattered under its weight-gradient GEMM (the
         * half of bwd that stays). Transformer Engine's tp_overlap runs
         * the same re-gather under the dgrad GEMM (ub_bulk_dgrad). */
        double bwd_sync = 0.0, bwd_ag = 0.0;
        if (c->sp) {
            bwd_sync = 0.5 * bwd;
            bwd_ag = 0.5 * bwd;
            bwd *= 0.5;
            /* XLA keeps a recomputed layer's gathered inputs for its
             * backward: under full remat on TPUs the recompute's all-gather
             * (rc_coll) is the re-gather */
            if (sys->hw->platform == MFU_PLATFORM_TPU && rp->kind == MFU_RCK_FULL && L > 0)
                bwd_ag *= mfu_dmax(0.0, 1.0 - nrc / L);
        }
        tot[MFU_COMM_TP] = fwd + bwd_sync + bwd + bwd_ag + bwd_moe;
        /* F-COMM-TP-OVERLAP: the backward's asynchronous collectives run
         * under the column-parallel linears' own GEMMs (MFU_TAG_COLPAR):
         * the reduce-scatter (or, without sp, the all-reduce) of the input
         * gradient under the weight gradient (Megatron's async tensor-
         * parallel communication, on by default; Korthikanti et al. 2022
         * Table 4 note), the re-gather under the data gradient; with
         * tp_overlap everything but the dispatcher's hides under the
         * layer's GEMMs */
        exp_[MFU_COMM_TP] = c->tp_overlap
                                ? mfu_dmax(0.0, tot[MFU_COMM_TP] - bwd_moe - mb * L * a->gemm_s) + bwd_moe
                                : fwd + bwd_sync + bwd_moe + mfu_dmax(0.0, bwd - mb * L * a->colpar_wgrad_s) +
                                      mfu_dmax(0.0, bwd_ag - mb * L * a->colpar_dgrad_s);
        /* F-COMM-TP-SYNC: without the async path (Megatron-LM v2.6 and
         * earlier, --no-async-tensor-model-parallel-allreduce) the input
         * gradient's all-reduce runs after the linear's backward, waited
         * for by the next op */
        if (sys->train.tp_sync_bwd && !c->tp_overlap) exp_[MFU_COMM_TP] = tot[MFU_COMM_TP];
    }
}

/* CP ring traffic and what the attention kernels hide (F-COMM-CP). */
static void comm_cp(step_ctx *x)
{
    const mfu_system *sys = x->sys;
    const mfu_efficiency *eff = x->eff;
    double *tot = x->tm->comm_total_s, *exp_ = x->tm->comm_exposed_s;
    const mfu_model *m = sys->model;
    const mfu_layer_cost *a = x->a;
    const mfu_rc_policy *rp = x->rp;
    double tp = x->tp, cp = x->cp, mb = x->mb, ab = x->ab, T = x->T, L = x->L, nrc = x->nrc;
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
}

/* EP all-to-alls, flat or two-level (F-COMM-EP); x->ep_one is one of them. */
static void comm_ep(step_ctx *x)
{
    const mfu_system *sys = x->sys;
    const mfu_config *c = x->c;
    const mfu_efficiency *eff = x->eff;
    double *tot = x->tm->comm_total_s, *exp_ = x->tm->comm_exposed_s;
    const mfu_shape_cost *k = x->k;
    const mfu_shape *s = &k->shape;
    const mfu_rc_policy *rp = x->rp;
    double tp = x->tp, ep = x->ep, mb = x->mb, ab = x->ab, h = x->h, T = x->T, L = x->L, nrc = x->nrc;
    double moe_frac = x->moe_frac;
    int64_t s_ep = x->s_ep;
    /* EP (F-COMM-EP): per MoE layer dispatch + combine all-to-all,
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
        double tok = T * mfu_moe_load(mp, s->moe_load) * (double)c->etp / tp; /* tokens routed per device */
        double d0 = (double)sys->hw->tiers[0].domain_size;
        double one;
        if ((double)s_ep <= d0 || sys->hw->n_tiers == 1) {
            one = t_a2a(ab * tok * kk * h, ep, link_for(sys, s_ep, eff));
        } else {
            link lout = link_for(sys, s_ep, eff), lin = link_for(sys, 1, eff);
            double nodes = (double)s_ep / d0, per_node = ep / nodes;
            double remote = (nodes - 1.0) / nodes;
            double copies = mp->route_nodes > 0 ? mfu_dmin((double)mp->route_nodes, mfu_dmin(kk, nodes)) : kk;
            double inter = ab * tok * copies * remote * h, intra = ab * tok * kk * h;
            double t_out = inter / bw_at(lout, inter) + (nodes - 1.0) * lout.lat;
            double t_in = per_node > 1 ? intra / bw_at(lin, intra) + (per_node - 1.0) * lin.lat : 0.0;
            one = mfu_dmax(t_out, t_in);
        }
        double Lm = L * moe_frac;
        double rc = rp->kind == MFU_RCK_FULL ? nrc * moe_frac
                    : (rp->modules & MFU_RCM_MOE) ? Lm : 0.0;
        x->ep_one = one;
        tot[MFU_COMM_EP] = mb * one * (4.0 * Lm + 2.0 * rc);
        exp_[MFU_COMM_EP] = c->ep_overlap ? mfu_dmax(0.0, tot[MFU_COMM_EP] - mb * Lm * k->avg_moe.expert_s)
                                          : tot[MFU_COMM_EP];
    }
}

/* F-TIME-DISPATCH: what the host issues beyond the GPU's time, x->host_x. */
static void host_dispatch(step_ctx *x)
{
    const mfu_efficiency *eff = x->eff;
    const mfu_shape_cost *k = x->k;
    const mfu_layer_cost *a = x->a;
    double mb = x->mb, L = x->L, moe_frac = x->moe_frac;
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
        double a2a = x->ep_one;
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
    x->host_x = host_x;
}

/* FSDP gathers and reduce-scatters (F-COMM-FSDP, FW-T8). */
static void comm_fsdp(step_ctx *x)
{
    const mfu_system *sys = x->sys;
    const mfu_config *c = x->c;
    const mfu_efficiency *eff = x->eff;
    double *tot = x->tm->comm_total_s, *exp_ = x->tm->comm_exposed_s;
    const mfu_layer_cost *a = x->a;
    double tp = x->tp, ep = x->ep, pp = x->pp, cp = x->cp, fsdp = x->fsdp, mb = x->mb, L = x->L;
    double nrc = x->nrc, t_f = x->t_f;
    /* FSDP (F-COMM-FSDP): over fsdp * cp ranks. Without PP (and on TPUs,
     * MaxText gathering per iteration) per layer and micro-batch: gather
     * the layer's parameters forward and again backward, reduce-scatter its
     * gradients; layer n+1's gather is prefetched under layer n. torchtitan
     * with PP gathers a stage once per step and reduce-scatters once after
     * the last micro-batch (FW-T8). */
    double P_layer = sys->layer_params_dense / (double)sys->layers / tp +
                     sys->params_expert / (double)sys->layers / (ep * (double)c->etp);
    if (x->fsdp_on) {
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
        exp_[MFU_COMM_FSDP] = mfu_dmin(exp_[MFU_COMM_FSDP], tot[MFU_COMM_FSDP]);
    }
}

/* F-COMM-DP-CHUNKS: how much of the step's gradient reduction (t_sync,
 * its last bucket t_bucket) shows. One model chunk per stage: the buckets
 * reduce under the last micro-batch's backward (recompute included), the
 * last bucket after it (Megatron-Core's rank 0 enables the sync before its
 * last backward; the other ranks reduce after theirs, which end earlier:
 * pipeline_parallel/schedules.py, forward_backward_pipelining_without_
 * interleaving). Interleaved (v chunks of a stage), each chunk's gradients
 * are reduced, all its buckets at once, after that chunk's last backward,
 * at the same moment on every stage (forward_backward_pipelining_with_
 * interleaving: grad_sync_func at virtual micro-batch id - rank,
 * --align-grad-reduce by default; each chunk is its own
 * DistributedDataParallel), and the cool-down runs the chunks' last
 * backwards from chunk v-1 down to 0, g micro-batches (the group, p)
 * apart: chunk j's reduction has j g chunk-steps of backward, w = g b / v
 * each, after it. On one communication stream the queue ends
 * max(s0, t_sync - (v-1) w) past the last backward (the earlier chunks'
 * s = (t_sync - s0)/(v-1) each: s0 + max(0, (v-1)(s - w))), s0 (t_last)
 * chunk 0's own reduction, which on the first stage holds the embedding
 * table as well as its layers (Megatron-Core puts the embedding in the
 * first model chunk: core/models/gpt/gpt_model.py pre_process). */
static double dp_sync_exposed(const step_ctx *x, double t_sync, double t_last, double t_bucket)
{
    double b = x->t_b + x->t_rc, v = (double)x->c->vpp;
    double one = mfu_dmax(t_bucket, t_sync - b);
    if (x->c->schedule != MFU_SCHED_INTERLEAVED || v <= 1.0 || x->pp <= 1.0) return one;
    double w = mfu_dmin(x->pp, x->mb) * b / v, rest = t_sync - (v - 1.0) * w;
    if (x->eff) return mfu_dmax(t_last, rest);
    /* the bound: whichever hides more -- without the alignment
     * (--no-align-grad-reduce, torch.distributed.pipelining) a chunk's
     * buckets reduce under its own last backward too -- and chunk 0 at
     * no more than an even share (its layers and expert parameters are
     * taken at the average) */
    return mfu_dmin(one, mfu_dmax(mfu_dmin(t_last, t_sync / v), rest));
}

/* The ZeRO parameter all-gather of the next step under its forward. One
 * chunk: prefetched bucket by bucket under the first micro-batch's
 * forward. Interleaved, Megatron-Core gathers chunks 0 and 1 at the step's
 * start and chunk j + 1 when chunk j's first forward begins
 * (forward_backward_pipelining_with_interleaving, param_sync_func): chunk
 * 0 waits for its own gather (beyond what its first forward hides), each
 * later one for what g chunk-forwards do not cover. */
static double dp_gather_exposed(const step_ctx *x, double t_gather)
{
    double f = x->t_f, v = (double)x->c->vpp;
    double one = mfu_dmax(0.0, t_gather - f);
    if (x->c->schedule != MFU_SCHED_INTERLEAVED || v <= 1.0 || x->pp <= 1.0) return one;
    double g = t_gather / v;
    double chunks = mfu_dmax(0.0, g - f / v) + (v - 1.0) * mfu_dmax(0.0, g - mfu_dmin(x->pp, x->mb) * f / v);
    return x->eff ? chunks : mfu_dmin(one, chunks); /* the bound: as dp_sync_exposed's */
}

/* DP gradient sync and ZeRO gathers (F-COMM-DP). */
static void comm_dp(step_ctx *x)
{
    const mfu_system *sys = x->sys;
    const mfu_config *c = x->c;
    const mfu_efficiency *eff = x->eff;
    double *tot = x->tm->comm_total_s, *exp_ = x->tm->comm_exposed_s;
    double dp = x->dp, cp = x->cp, fsdp = x->fsdp, mb = x->mb, t_f = x->t_f, t_b = x->t_b;
    int64_t s_fsdp = x->s_fsdp;
    /* DP (F-COMM-DP): gradients once per step (all-reduce; ZeRO-1: a
     * reduce-scatter of gradients and an all-gather of parameters), in
     * buckets under the last micro-batch's backward; ZeRO-2 reduce-scatters
     * every micro-batch (the gradients are not kept whole). Dense
     * parameters sync over dp * cp (dp alone when fsdp shards them),
     * experts over their expert-data-parallel group; the groups share the
     * links, so their times add. */
    const mfu_dev_params dpar = x->dpar;
    double rd = x->fsdp_on ? dp : mfu_dense_replicas(c);
    double re = x->fsdp_on ? dp : mfu_expert_dp(c);
    double shard_d = x->fsdp_on ? fsdp * cp : 1.0, shard_e = x->fsdp_on ? mfu_expert_fsdp(c) : 1.0;
    double n_sync = c->zero == 2 ? mb : 1.0;
    if (rd > 1 || re > 1) {
        link l = link_group(sys, dp, (double)s_fsdp, eff);
        double parts[2][2] = {{dpar.dense / shard_d, rd}, {dpar.expert / shard_e, re}};
        /* chunk 0's share of rank 0's parameters (dp_sync_exposed): its
         * layers and the embedding; experts only in layers. Layers are
         * taken at the average (as mfu_device_params): where the first
         * layers are dense (first-k-dense MoE), chunk 0 holds more dense
         * and fewer expert parameters than that. */
        double share[2] = {1.0, 1.0};
        if (c->schedule == MFU_SCHED_INTERLEAVED && c->vpp > 1 && x->pp > 1) {
            double ls0 = (double)mfu_stage_layers(sys, c, 0), lc0 = (double)mfu_chunk0_layers(sys, c);
            double E = sys->embed_params, lay = sys->layer_dense_avg;
            share[0] = (lc0 * lay + E) / (ls0 * lay + E);
            share[1] = ls0 > 0 ? lc0 / ls0 : 1.0;
        }
        double t_sync = 0, t_gather = 0, t_bucket = 0, t_last = 0;
        for (int i = 0; i < 2; i++) {
            double P = parts[i][0], n = parts[i][1];
            if (P <= 0 || n <= 1) continue;
            double g = sys->grad_comm_bytes * P;
            double bucket = mfu_dmin(sys->bucket_bytes, g);
            int zr = c->zero == 1 || c->zero == 2; /* ZeRO on the replica axis; zero 3 all-reduces the shards */
            double t_part = zr ? t_ag(g, n, l) : t_ar(g, n, l);
            t_sync += t_part;
            t_last += share[i] * t_part;
            if (!zr) {
                t_bucket = mfu_dmax(t_bucket, t_ar(bucket, n, l));
            } else {
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
        exp_[MFU_COMM_DP] = dp_sync_exposed(x, t_sync, t_last, t_bucket) + dp_gather_exposed(x, t_gather) +
                            mfu_dmax(0.0, (n_sync - 1.0) * t_sync - rest);
        exp_[MFU_COMM_DP] = mfu_dmin(exp_[MFU_COMM_DP], tot[MFU_COMM_DP]);
        /* no overlap of the gradient reduction (Megatron without
         * --overlap-grad-reduce; Korthikanti et al. 2022 sec. 6.3 ran so) */
        if (sys->train.no_grad_overlap) exp_[MFU_COMM_DP] = tot[MFU_COMM_DP];
    }
}

/* PP sends between stages (Narayanan sec. 4.1). */
static void comm_pp(step_ctx *x)
{
    const mfu_system *sys = x->sys;
    const mfu_config *c = x->c;
    const mfu_efficiency *eff = x->eff;
    double *tot = x->tm->comm_total_s, *exp_ = x->tm->comm_exposed_s;
    double tp = x->tp, pp = x->pp, mb = x->mb, ab = x->ab, h = x->h, T = x->T;
    double t_f = x->t_f, t_b = x->t_b, t_rc = x->t_rc;
    /* PP (Narayanan sec. 4.1): per micro-batch b*s*h forward and backward
     * between stages (/t with sp), x vpp with interleaving; on the
     * critical path during fill and drain. F-COMM-PP-1F1B: the 1F1B
     * schedule exchanges them blocking in steady state too -- Megatron's
     * send_forward_recv_backward / send_backward_recv_forward wait on both
     * transfers (core_r0.8 arguments.py: "non-interleaved schedule does not
     * support overlapping p2p communication"; torch.distributed.pipelining's
     * Schedule1F1B waits on its batched isend/irecv before the backward),
     * so every micro-batch waits for two transfers. The interleaved
     * schedule overlaps them with the next chunk's compute
     * (--overlap-p2p-communication, on by default): only what is longer
     * than a chunk shows; without it (training.pp_overlap_p2p false, and
     * Megatron-LM before Megatron-Core, whose p2p_communication.py waited
     * on every batch_isend_irecv) each chunk waits as 1F1B does. */
    double t_mb = t_f + t_b + t_rc;
    if (pp > 1) {
        link l = link_for(sys, sys->devices, eff);
        double bytes = ab * T * h / (c->sp ? tp : 1.0);
        double one = bytes / bw_at(l, bytes) + l.lat;
        if (!c->sp && tp > 1 && sys->train.pp_scatter_gather) {
            /* Megatron-LM before Megatron-Core (v2.5 p2p_communication.py,
             * --scatter-gather-tensors-in-pipeline, on by default): each
             * tensor-parallel rank sends 1/t of the replicated tensor and
             * the receivers all-gather it over their own group (Narayanan
             * et al. 2021 sec. 4.1); Megatron-Core sends it whole from
             * every rank */
            double part = bytes / tp;
            one = part / bw_at(l, part) + l.lat + t_ag(bytes, tp, link_group(sys, tp, 1.0, eff));
        }
        double v = (double)c->vpp;
        tot[MFU_COMM_PP] = 2.0 * mb * v * one;
        if (c->schedule == MFU_SCHED_1F1B ||
            (c->schedule == MFU_SCHED_INTERLEAVED && sys->train.pp_no_overlap_p2p)) {
            /* the stage's own transfers (per chunk with interleaving) and
             * the fill's and drain's chain through the other stages */
            exp_[MFU_COMM_PP] = 2.0 * (mb * v + pp - 1.0) * one;
            tot[MFU_COMM_PP] = exp_[MFU_COMM_PP];
        } else {
            double chunk = t_mb / v;
            exp_[MFU_COMM_PP] = 2.0 * (pp - 1.0) * one + 2.0 * mb * v * mfu_dmax(0.0, one - chunk);
            exp_[MFU_COMM_PP] = mfu_dmin(exp_[MFU_COMM_PP], tot[MFU_COMM_PP]);
        }
    }
}

/* Contention, the bubble, the optimizer and host overhead. */
static void step_parts(step_ctx *x)
{
    const mfu_system *sys = x->sys;
    const mfu_config *c = x->c;
    const mfu_efficiency *eff = x->eff;
    double *tot = x->tm->comm_total_s, *exp_ = x->tm->comm_exposed_s;
    mfu_times *tm = x->tm;
    const mfu_dev_params dpar = x->dpar;
    double fsdp = x->fsdp, pp = x->pp, cp = x->cp, mb = x->mb;
    double t_f = x->t_f, t_b = x->t_b, host_x = x->host_x, P_dev = x->P_dev;
    /* contention: communication hidden under compute still takes SMs and
     * HBM bandwidth from it (expected profile only) */
    if (eff && eff->overlap_slowdown > 0)
        for (int i = 0; i < MFU_COMM_COUNT; i++)
            exp_[i] += eff->overlap_slowdown * (tot[i] - exp_[i]);

    /* bubble: the pipeline's idle fraction of a micro-batch's critical path
     * (compute, recompute, in-layer exposed communication). */
    double fb = x->fb;
    double inlayer = exp_[MFU_COMM_TP] + exp_[MFU_COMM_CP] + exp_[MFU_COMM_EP] +
                     (pp > 1 && sys->hw->platform == MFU_PLATFORM_GPU ? 0.0 : exp_[MFU_COMM_FSDP]);
    double rest = t_f + t_b > 0 ? x->t_rest / (t_f + t_b) : 1.0;
    tm->bubble_s = fb * (rest * tm->compute_s + tm->recompute_s + inlayer + host_x);

    /* optimizer step: AdamW over the local optimizer shard, memory bound:
     * reads fp32 master, grad, m, v (16 B), writes master, m, v and the bf16
     * weights (14 B); gradient clipping reads every gradient for the global
     * norm (4 B) and the gradient buffer is zeroed for the next step (4 B). */
    double P_opt;
    if (x->fsdp_on) P_opt = dpar.dense / (fsdp * cp) + dpar.expert / mfu_expert_fsdp(c);
    else if (c->zero == 1 || c->zero == 2) P_opt = dpar.dense / mfu_dense_replicas(c) + dpar.expert / mfu_expert_dp(c);
    else P_opt = P_dev;
    tm->optimizer_s = 38.0 * P_opt / (sys->hw->hbm_bw_bytes_s * (eff ? eff->hbm_eff : 1.0));
    /* F-MEM-OPT-OFFLOAD: the moments cross the host link to the device for
     * the update and back, after the last backward: exposed */
    if (sys->train.optimizer_offload && sys->hw->host_bw_bytes_s > 0)
        tm->optimizer_s += 2.0 * sys->moment_bytes * P_opt / sys->hw->host_bw_bytes_s;
    /* F-TIME-HOST: per step, and per micro-batch pass of each stage */
    tm->overhead_s = eff ? eff->step_overhead_s + mb * eff->microbatch_overhead_s + host_x : 0.0;


}

/* The step with its floors (the host link, the busiest tier), MFU and the
 * gap to the roofline. */
static void step_total(step_ctx *x)
{
    const mfu_system *sys = x->sys;
    double *tot = x->tm->comm_total_s, *exp_ = x->tm->comm_exposed_s;
    const mfu_eval *ev = x->ev;
    mfu_times *tm = x->tm;
    double link_s = x->link_s;
    int64_t s_tp = x->s_tp, s_cp = x->s_cp, s_fsdp = x->s_fsdp, s_dp = x->s_dp, s_ep = x->s_ep;
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
    if (!ev) return; /* the step alone (mfu_step_time_below) */

    double N = (double)sys->devices, peak = sys->hw->peak_flops[sys->train.dtype];
    tm->mfu = ev->f_useful_flops / (N * peak * step);
    tm->hfu = ev->f_hw_flops / (N * peak * step);

    /* gap vs the roofline (F-GAP): the roofline's per-device step for
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

/* A lower bound on what step_total will answer from the terms computed
 * so far: compute, recompute, the host's fixed overheads, the in-layer
 * communication's exposed part (TP, CP, EP; 0 until computed), and the
 * bubble's share of them. Every other term only adds (contention, FSDP,
 * DP and PP traffic, the optimizer, the host's excess, the floors of
 * step_total), so the step is never below it. */
static double step_floor(const step_ctx *x)
{
    const mfu_times *tm = x->tm;
    const double *e = tm->comm_exposed_s;
    double inlayer = e[MFU_COMM_TP] + e[MFU_COMM_CP] + e[MFU_COMM_EP];
    double oh = x->eff ? x->eff->step_overhead_s + x->mb * x->eff->microbatch_overhead_s : 0.0;
    return tm->compute_s + tm->recompute_s + inlayer +
           x->fb * (x->mb * x->t_rest + tm->recompute_s + inlayer) + oh;
}

/* The per-layer part of a stage's step after compute_part: its tensor-,
 * context- and expert-parallel traffic, the host's dispatch and FSDP's
 * gathers; returns step_floor (the search's pruning test). */
static double stage_layer_part(step_ctx *x)
{
    if (x->tp > 1) comm_tp(x);
    if (x->cp > 1) comm_cp(x);
    comm_ep(x);
    double floor_s = step_floor(x);
    host_dispatch(x);
    comm_fsdp(x);
    return floor_s;
}

/* What a stage's choice changes of the step: its compute, recompute,
 * offload, in-layer exposed traffic, FSDP's and the host's excess. */
static double stage_time(const step_ctx *x)
{
    const mfu_times *tm = x->tm;
    const double *e = tm->comm_exposed_s;
    double inlayer = e[MFU_COMM_TP] + e[MFU_COMM_CP] + e[MFU_COMM_EP] +
                     (x->sys->hw->platform == MFU_PLATFORM_GPU ? 0.0 : e[MFU_COMM_FSDP]);
    double rest = x->t_f + x->t_b > 0 ? x->t_rest / (x->t_f + x->t_b) : 1.0;
    /* step_parts' bubble, of this stage's parts */
    return tm->compute_s + tm->recompute_s + tm->offload_s + e[MFU_COMM_TP] + e[MFU_COMM_CP] +
           e[MFU_COMM_EP] + e[MFU_COMM_FSDP] + x->host_x +
           x->fb * (rest * tm->compute_s + tm->recompute_s + inlayer + x->host_x);
}

/* The step of one profile into tm; ev NULL: the step time alone (no MFU,
 * no gap). Returns 1, with tm incomplete, as soon as step_floor passes
 * limit_s (the search's pruning, F-SEARCH), else 0. */
static int step_eval(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                     const mfu_efficiency *eff, const mfu_eval *ev, mfu_times *tm, double limit_s)
{
    memset(tm, 0, sizeof *tm);
    /* every field set here, none zero-filled: the search calls this for
     * each point that fits (a whole-struct fill was 3 % of its time) */
    step_ctx sx;
    step_ctx *x = &sx;
    x->L = x->nrc = x->t_f = x->t_b = x->t_rc = x->t_rest = x->T = 0.0;
    x->s_tp = x->s_cp = x->s_fsdp = x->s_dp = x->s_ep = 0;
    x->dpar.dense = x->dpar.expert = 0.0;
    x->P_dev = x->link_s = x->ep_one = x->host_x = x->fb = 0.0;
    x->stages_differ = 0;
    x->alt.t_f = x->alt.t_b = x->alt.t_rest = 0.0;
    x->alt.ls = 0;
    x->sys = sys;
    x->c = c;
    x->k = k;
    x->eff = eff;
    x->ev = ev;
    x->tm = tm;
    x->a = &k->avg;
    x->rp = &sys->rc[c->recompute];
    x->dp = (double)c->ax[MFU_AX_DP];
    x->fsdp = (double)c->ax[MFU_AX_FSDP];
    x->fsdp_on = mfu_fsdp_on(c);
    x->tp = (double)c->ax[MFU_AX_TP];
    x->ep = (double)c->ax[MFU_AX_EP];
    x->pp = (double)c->ax[MFU_AX_PP];
    x->cp = (double)c->ax[MFU_AX_CP];
    x->mb = (double)c->grad_accum;
    x->ab = sys->train.dtype == MFU_DT_FP32 ? 4.0 : 2.0;
    x->h = (double)sys->model->d_model;
    x->moe_frac = sys->layers ? (double)sys->moe_layers / (double)sys->layers : 0.0;
    compute_part(x);
    if (step_floor(x) > limit_s) return 1;
    /* placement: tp, cp, fsdp, dp, pp innermost first; experts etp, ep */
    x->s_tp = c->ax[MFU_AX_TP];
    x->s_cp = x->s_tp * c->ax[MFU_AX_CP];
    x->s_fsdp = x->s_cp * c->ax[MFU_AX_FSDP];
    x->s_dp = x->s_fsdp * c->ax[MFU_AX_DP];
    x->s_ep = c->etp * c->ax[MFU_AX_EP];
    x->T = k->shape.mbs * (double)k->shape.seq / x->cp;
    if (stage_layer_part(x) > limit_s) return 1;
    if (x->stages_differ && x->L > 0) {
        /* F-PP-SPLIT: the stage with the most layers, its per-layer traffic,
         * FSDP's gathers and the host's dispatch the busiest stage's in
         * proportion to the layers (each is per layer); the slower of the
         * two paces the pipeline */
        mfu_times ty = *tm;
        step_ctx y = *x;
        y.tm = &ty;
        double r = (double)x->alt.ls / x->L;
        apply_stage(&y, &x->alt);
        static const int per_layer[] = {MFU_COMM_TP, MFU_COMM_CP, MFU_COMM_EP, MFU_COMM_FSDP};
        for (int i = 0; i < 4; i++) {
            ty.comm_total_s[per_layer[i]] *= r;
            ty.comm_exposed_s[per_layer[i]] *= r;
        }
        y.host_x *= r;
        if (stage_time(&y) > stage_time(x)) {
            *tm = ty;
            y.tm = tm;
            *x = y;
        }
    }
    x->dpar = mfu_device_params(sys, c, 0);
    x->P_dev = x->dpar.dense + x->dpar.expert;
    comm_dp(x);
    comm_pp(x);
    step_parts(x);
    step_total(x);
    return 0;
}

void mfu_step_times(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                    const mfu_efficiency *eff, const mfu_eval *ev, mfu_times *tm)
{
    (void)step_eval(sys, c, k, eff, ev, tm, INFINITY);
}

/* The FLOP totals and batch of a configuration (what step_times reads). */
void mfu_eval_totals(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *bound,
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
    if (rp->kind == MFU_RCK_SELECTIVE) nrc_total = (double)(sys->layers + sys->model->mtp_layers);
    else if (rp->kind == MFU_RCK_FULL) {
        /* first + last + the middle stages (as rank 1) */
        int64_t pp = c->ax[MFU_AX_PP];
        nrc_total = (double)mfu_rc_layers(sys, c, mfu_stage_layers(sys, c, 0) + mfu_stage_mtp(sys, c, 0));
        if (pp > 1)
            nrc_total += (double)mfu_rc_layers(sys, c, mfu_stage_layers(sys, c, pp - 1) + mfu_stage_mtp(sys, c, pp - 1));
        if (pp > 2) nrc_total += (double)(pp - 2) * (double)mfu_rc_layers(sys, c, mfu_stage_layers(sys, c, 1));
        if (nrc_total > (double)(sys->layers + sys->model->mtp_layers))
            nrc_total = (double)(sys->layers + sys->model->mtp_layers);
    }
    double n_mb = gbt / ((double)c->mbs * (double)sys->train.seq);
    double rcf = rp->kind == MFU_RCK_NONE ? 0.0 : bound->avg.rc_flops[c->recompute];
    out->f_hw_flops = out->f_useful_flops +
                      rcf * (double)(c->ax[MFU_AX_TP] * c->ax[MFU_AX_CP]) * nrc_total * n_mb;
}

double mfu_step_time_below(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                           int expected, double limit_s)
{
    mfu_times t;
    const mfu_hardware *hw = sys->hw;
    if (step_eval(sys, c, k, expected && hw->has_profile ? &hw->eff : NULL, NULL, &t, limit_s))
        return INFINITY;
    return t.step_time_s;
}
