/* core/system.c -- System Bound of one configuration (docs/model.md):
 * the shared part (recompute table, system), per-shape layer costs, and
 * the evaluation. Legality is in config.c, memory in memory.c,
 * communication and the step's time in step.c.
 *
 * T_step = compute + recompute + exposed comm (per axis) + bubble
 *          + optimizer step + overhead,
 * and never less than the busiest network tier's total traffic time.
 * MFU = F_useful / (devices * peak * T_step); HFU adds recompute FLOPs
 * (F-MFU). docs/model.md has every formula (F-*).
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
 *    (docs/model.md "Communication (Q2) and overlap (Q3)", nccl-tests PERFORMANCE.md); the group runs at
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
    MFU_RCM_LAYERNORM | MFU_RCM_ACT | MFU_RCM_MOE_ACT | MFU_RCM_EXPERT_GEMM,
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
    *p = (mfu_rc_policy){MFU_RCK_SELECTIVE, mods, frameworks, device, host, 0};
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
    rc[MFU_RC_NONE] = (mfu_rc_policy){MFU_RCK_NONE, 0u, MG | TT, 0u, 0u, 0};
    const unsigned *std = mfu_rc_std_modules;
    rc[MFU_RC_SELECTIVE] = (mfu_rc_policy){MFU_RCK_SELECTIVE, std[MFU_RC_SELECTIVE], MG, 0u, 0u, 0};
    /* Megatron has moe_act but no module for a dense MLP's (or shared
     * experts') activation */
    unsigned act_mg = sys->has_dense_mlp ? 0u : MG;
    rc[MFU_RC_MINIMAL] = (mfu_rc_policy){MFU_RCK_SELECTIVE, std[MFU_RC_MINIMAL], MX | act_mg, 0u, 0u, 0};
    /* torchtitan's op-level SAC (distributed/activation_checkpoint.py
     * _apply_op_sac with the models' _op_sac_save_list, v0.2.2): each op
     * as F-RC-OP-SAC says where the layer gives it (every other matmul's
     * output kept: mfu_ops_layer's tt_op_sac, on MHA/GQA attention and
     * dense gated MLPs); elsewhere the modules. A dense model's: minimal's.
     * An MoE block's: minimal, approximated (every matmul's output kept),
     * but _grouped_mm is not on the lists, so the routed experts' GEMMs
     * rerun; and the lists differ by family:
     * deepseek_v3's (MLA; and llama4's) keeps all_to_all_single outputs,
     * qwen3's -- the family torchtitan's recipe gives mfud's other MoE
     * models -- does not, so there the whole routed part reruns from the
     * layer's norm output, its all-to-alls included
     * (models/qwen3/infra/parallelize.py) */
    unsigned sac = sys->moe_layers == 0 ? std[MFU_RC_MINIMAL]
                   : sys->has_mla        ? std[MFU_RC_OP_SAC]
                                         : (std[MFU_RC_MINIMAL] | MFU_RCM_MOE);
    rc[MFU_RC_OP_SAC] = (mfu_rc_policy){MFU_RCK_SELECTIVE, sac, TT, 0u, 0u, 1};
    rc[MFU_RC_SAVE_DOT_EXCEPT_MLP] = (mfu_rc_policy){MFU_RCK_SELECTIVE, std[MFU_RC_SAVE_DOT_EXCEPT_MLP],
                                                     MG | MX, 0u, 0u, 0};
    rc[MFU_RC_MLA_UP] = (mfu_rc_policy){MFU_RCK_SELECTIVE, std[MFU_RC_MLA_UP], sys->has_mla ? MG : 0u, 0u, 0u, 0};
    rc[MFU_RC_FULL] = (mfu_rc_policy){MFU_RCK_FULL, 0u, MFU_FW_ALL, 0u, 0u, 0};
    rc[MFU_RC_CUSTOM] = (mfu_rc_policy){MFU_RCK_SELECTIVE, custom,
                                        custom && !(custom & ~MFU_RCM_MEGATRON) ? MG : 0u, 0u, 0u, 0};
    /* F-RC-MAXTEXT: maxtext_utils.get_save_and_offload_names --
     * qkv_proj_offloaded offloads query/key/value/kv_proj, minimal_offloaded
     * every projection (q, k, v, out, mlpwi, mlpwo) but not the context;
     * both save nothing else, the layer input (decoder_layer_input,
     * "device" in base.yml) stays. Offered on TPUs (MaxText's platform)
     * where the host link is known; elsewhere the slots stay empty, so no
     * search weighs them and no shape costs them (GPU presets have a host
     * link for Megatron's CPU offload, F-RC-CPU-OFFLOAD) */
    if (sys->hw->platform == MFU_PLATFORM_TPU) {
        unsigned off = sys->hw->host_bw_bytes_s > 0 ? MX : 0u;
        names_policy(&rc[MFU_RC_QKV_OFFLOADED], MFU_MX_INPUT, MFU_MX_QKV, off);
        names_policy(&rc[MFU_RC_MINIMAL_OFFLOADED], MFU_MX_INPUT,
                     MFU_MX_QKV | MFU_MX_OUT | MFU_MX_WI | MFU_MX_WO, off);
    } else {
        rc[MFU_RC_QKV_OFFLOADED] = (mfu_rc_policy){MFU_RCK_SELECTIVE, 0u, 0u, 0u, 0u, 0};
        rc[MFU_RC_MINIMAL_OFFLOADED] = (mfu_rc_policy){MFU_RCK_SELECTIVE, 0u, 0u, 0u, 0u, 0};
    }
    rc[MFU_RC_MAXTEXT] = (mfu_rc_policy){MFU_RCK_SELECTIVE, 0u, 0u, 0u, 0u, 0}; /* none given */
    /* F-RC-CPU-OFFLOAD: Megatron-LM's --cpu-offloading-num-layers keeps
     * everything (it refuses any recompute granularity with it:
     * megatron/core/transformer/transformer_config.py) and moves whole
     * layers' activations to the host: Megatron only, where the host link
     * is known */
    rc[MFU_RC_CPU_OFFLOAD] = (mfu_rc_policy){MFU_RCK_NONE, 0u, sys->hw->host_bw_bytes_s > 0 ? MG : 0u, 0u, 0u, 0};
}

int mfu_system_set_scan_unit(mfu_system *sys, int64_t unit)
{
    if (unit < 1 || sys->layers % unit || sys->hw->platform != MFU_PLATFORM_TPU) return MFU_EINVAL;
    sys->scan_unit = unit;
    return MFU_OK;
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
    sys->roof = roof;
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
    sys->scan_unit = 1;
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
    /* the gradient in the activation type, the sum in the main gradient's
     * (F-TIME-WGRAD-ACC) */
    s->grad_acc_bytes = (sys->train.dtype == MFU_DT_FP32 ? 4.0 : 2.0) + 2.0 * sys->grad_bytes;
    s->wgrad_unfused = sys->train.wgrad_acc_unfused;
    s->ce_unfused = sys->train.ce_unfused;
    s->fp8_recipe = sys->train.fp8_recipe;
    s->moe_no_copies = sys->hw->platform == MFU_PLATFORM_TPU;
    s->xla_loss = sys->hw->platform == MFU_PLATFORM_TPU;
}

/* The recompute policies that can be used at all: not an empty selective
 * slot (no custom set, no maxtext names given), not an offload without a
 * host link (part_ops runs for every op of a shape). Their count. */
static int live_policies(const mfu_system *sys, int live[MFU_RC_COUNT])
{
    int n_live = 0;
    for (int j = 0; j < MFU_RC_COUNT; j++) {
        const mfu_rc_policy *rp = &sys->rc[j];
        int names = (rp->mx_device | rp->mx_host) != 0;
        if (rp->kind == MFU_RCK_SELECTIVE && rp->modules == 0 && !names) continue;
        if (rp->mx_host && !(sys->hw->host_bw_bytes_s > 0)) continue;
        if (j == MFU_RC_CPU_OFFLOAD) continue; /* none's bytes, filled after the ops */
        live[n_live++] = j;
    }
    return n_live;
}

/* F-RC-XLA-DEAD: the dense MLP's output projection (mlpwo) feeds only the
 * residual add whose sum the next layer's input carries; no backward op
 * reads it. Under XLA a rematerialized layer's dead ops are removed (JAX
 * keeps as residuals only what the backward reads; XLA's dead-code
 * elimination drops the rest), so it neither runs again nor is kept, under
 * full remat as under a name policy. Not so where a post-norm reads it
 * (Gemma 2), nor for the experts' output, which MaxText's combine weighs
 * by the routing probabilities (moe.py "BSEM,BSE -> BSM": its backward
 * reads it). */
static int xla_dead_output(const mfu_system *sys, const mfu_op *o)
{
    return (o->mx & MFU_MX_WO) && !(o->tags & MFU_TAG_EXPERT) && !sys->model->post_norms;
}

/* One forward op under every live policy: what it keeps (on the device, or
 * the host), and for each of np profiles (time t[p], costs lc[p]) whether
 * it runs again. */
static void policy_op(const mfu_system *sys, const int *live, int n_live, const mfu_op *o, const double *t,
                      int np, double *saved, double *host_saved, mfu_layer_cost *lc)
{
    int dead = xla_dead_output(sys, o);
    /* F-RC-MODULES: a selective policy frees what its modules free and
     * runs again what they run */
    for (int q = 0; q < n_live; q++) {
        int j = live[q];
        const mfu_rc_policy *rp = &sys->rc[j];
        int again = 0; /* the whole op runs again */
        if (rp->kind == MFU_RCK_FULL) {
            if (dead && sys->hw->platform == MFU_PLATFORM_TPU) continue;
            again = 1;
        } else if (rp->op_sac && o->sac_rerun >= 0) {
            /* F-RC-OP-SAC: what torchtitan keeps of this op, and how much
             * of it runs again */
            saved[j] += o->sac_saved;
            for (int p = 0; p < np; p++) {
                lc[p].rc_s[j] += t[p] * o->sac_rerun;
                lc[p].rc_flops[j] += o->flops * o->sac_rerun;
            }
            continue;
        } else if (rp->mx_device | rp->mx_host) {
            /* F-RC-MAXTEXT: a named output is kept where the policy says;
             * everything else runs again, but a dead one (F-RC-XLA-DEAD),
             * which is neither kept nor run */
            if (dead) continue;
            if (o->mx & rp->mx_device) saved[j] += o->out_bytes;
            else if (o->mx & rp->mx_host) host_saved[j] += o->out_bytes;
            again = !(o->mx & (rp->mx_device | rp->mx_host));
        } else {
            if (!(o->rc_free & rp->modules)) saved[j] += o->saved_bytes;
            again = (o->rc_rerun & rp->modules) != 0;
        }
        if (again)
            for (int p = 0; p < np; p++) {
                lc[p].rc_s[j] += t[p];
                lc[p].rc_flops[j] += o->flops;
            }
    }
}

/* One op's time t into a layer's totals (lc; hosted: the profile has a
 * host cost per kernel launch, hk the op's). */
static void op_totals(const mfu_op *o, double t, int hosted, double hk, mfu_layer_cost *lc)
{
    if (hosted) {
        if (o->phase == MFU_BWD) lc->host_bwd_s += hk;
        else if (o->tags & MFU_TAG_EXPERT) lc->host_fwd_exp_s += hk;
        else lc->host_fwd_rest_s += hk;
        if (o->phase == MFU_FWD && (o->tags & MFU_TAG_EXPERT)) lc->fwd_exp_s += t;
    }
    if (o->phase == MFU_FWD) {
        lc->fwd_s += t;
        lc->fwd_flops += o->flops;
        if (o->tags & MFU_TAG_ATTN_CORE) lc->attn_core_fwd_s += t;
    } else {
        lc->bwd_s += t;
        if (o->tags & MFU_TAG_WGRAD) lc->wgrad_s += t;
        if (o->tags & MFU_TAG_COLPAR) {
            if (o->tags & MFU_TAG_WGRAD) lc->colpar_wgrad_s += t;
            else lc->colpar_dgrad_s += t;
        }
    }
    if (o->tags & MFU_TAG_MATMUL) lc->gemm_s += t;
    if (o->tags & MFU_TAG_ATTN_CORE) lc->attn_core_s += t;
    if (o->tags & MFU_TAG_EXPERT) lc->expert_s += t;
}

/* Ops [i0, i1) of one layer into a's totals for each of np profiles
 * (effs[p]; NULL: the bound's ideal). The policies' bookkeeping is the
 * profiles' own but for the times, so it is done once. */
static void part_ops(const mfu_system *sys, const mfu_op *ops, int i0, int i1, const mfu_efficiency *const *effs,
                     int np, mfu_layer_part *a)
{
    int live[MFU_RC_COUNT], n_live = live_policies(sys, live);
    double host[2];
    for (int p = 0; p < np; p++) host[p] = effs[p] ? effs[p]->host_op_s : 0.0;
    for (int i = i0; i < i1; i++) {
        const mfu_op *o = &ops[i];
        double t[2];
        for (int p = 0; p < np; p++) {
            t[p] = mfu_op_time(o, sys->hw, sys->train.dtype, effs[p]);
            int hosted = host[p] > 0;
            double hk = hosted ? host[p] * mfu_op_host_kernels(o, sys->train.dtype) : 0.0;
            op_totals(o, t[p], hosted, hk, &a->lc[p]);
        }
        if (o->tags & MFU_TAG_EXPERT) a->moe = 1;
        if (o->phase == MFU_FWD) policy_op(sys, live, n_live, o, t, np, a->saved, a->host_saved, a->lc);
    }
}

/* A layer whose ops are all in a: what is per layer rather than per op. */
static void part_finish(const mfu_system *sys, double ab, double Te, const mfu_efficiency *const *effs, int np,
                        mfu_layer_part *a)
{
    double h = (double)sys->model->d_model;
    for (int p = 0; p < np; p++) {
        mfu_layer_cost *lc = &a->lc[p];
        double host = effs[p] ? effs[p]->host_op_s : 0.0;
        if (host > 0 && a->moe) {
            /* F-TIME-DISPATCH: the MoE layer's routing and permutation
             * bookkeeping beyond the inventory's ops (mfu_moe_host_kernels) */
            double f_pre, f_post, b;
            mfu_moe_host_kernels(sys->train.dtype, &f_pre, &f_post, &b);
            lc->host_fwd_rest_s += host * f_pre;
            lc->host_fwd_exp_s += host * f_post;
            lc->host_bwd_s += host * b;
        }
        /* the input of each scanned unit, a layer's share (F-MEM-SCAN-UNIT) */
        double input = ab * Te * h / (double)sys->scan_unit;
        for (int j = 0; j < MFU_RC_COUNT; j++) {
            const mfu_rc_policy *rp = &sys->rc[j];
            lc->saved_bytes[j] += rp->kind == MFU_RCK_FULL
                                      /* full: only the layer input (Korthikanti Table 2: 2sbh; /t with sp) */
                                      ? input
                                      : a->saved[j];
            /* a name policy keeps the layer input where decoder_layer_input says */
            if (rp->mx_device & MFU_MX_INPUT) lc->saved_bytes[j] += input;
            lc->host_bytes[j] += a->host_saved[j] + (rp->mx_host & MFU_MX_INPUT ? input : 0.0);
        }
        /* F-RC-CPU-OFFLOAD: a layer keeps what "none" keeps, on the device
         * or, offloaded, all of it on the host */
        lc->saved_bytes[MFU_RC_CPU_OFFLOAD] += a->saved[MFU_RC_NONE];
        lc->host_bytes[MFU_RC_CPU_OFFLOAD] += a->saved[MFU_RC_NONE];
    }
}

static void add_cost(mfu_layer_cost *dst, const mfu_layer_cost *src, double k)
{
    double *d = (double *)dst;
    const double *s = (const double *)src;
    for (size_t i = 0; i < sizeof *dst / sizeof(double); i++) d[i] += k * s[i];
}

/* A finished layer of run r (a) into out[p]'s averages. */
static void add_layer(const mfu_system *sys, int r, int np, const mfu_layer_part *a, mfu_shape_cost *out)
{
    double cnt = (double)sys->model->runs[r].count;
    for (int p = 0; p < np; p++) {
        add_cost(&out[p].avg, &a->lc[p], cnt / (double)sys->layers);
        if (sys->model->runs[r].mlp.kind == MFU_MLP_MOE)
            add_cost(&out[p].avg_moe, &a->lc[p], cnt / (double)sys->moe_layers);
    }
}

static double shape_ab(const mfu_shape *s) { return s->dtype == MFU_DT_FP32 ? 4.0 : 2.0; }

/* tokens of norms and residuals per micro-batch (T / tp with sp) */
static double shape_te(const mfu_shape *s)
{
    double T = s->mbs * (double)s->seq / (double)s->cp;
    return s->sp ? T / (double)s->tp : T;
}

/* The attention block of MoE run r at shape s (ep = etp = 1), into a. */
static void attn_part(const mfu_system *sys, const mfu_shape *s, int r, const mfu_efficiency *const *effs, int np,
                      mfu_op *ops, mfu_layer_part *a)
{
    int k = 0;
    memset(a, 0, sizeof *a);
    /* never more than MFU_MAX_LAYER_OPS <= MFU_SCRATCH_OPS (ops.h) */
    mfu_ops_layer_at(sys->model, r, s, ops, MFU_SCRATCH_OPS, &k);
    part_ops(sys, ops, 0, k, effs, np, a);
}

/* A dense run r's layer at shape s into out[p]'s averages. */
static void dense_layer(const mfu_system *sys, const mfu_shape *s, int r, const mfu_efficiency *const *effs, int np,
                        mfu_op *ops, mfu_shape_cost *out)
{
    mfu_layer_part a;
    memset(&a, 0, sizeof a);
    /* never more than MFU_MAX_LAYER_OPS <= MFU_SCRATCH_OPS (ops.h) */
    int n = mfu_ops_layer(sys->model, r, s, ops, MFU_SCRATCH_OPS);
    part_ops(sys, ops, 0, n, effs, np, &a);
    part_finish(sys, shape_ab(s), shape_te(s), effs, np, &a);
    add_layer(sys, r, np, &a, out);
}

/* Stage 1 of a shape's costs, what no expert axis changes (F-SEARCH-MEMO):
 * the dense runs before the first MoE run, the embedding, the head and the
 * logits, and the attention blocks of the first MFU_DENSE_MOE_RUNS MoE
 * runs, computed at ep = etp = 1 so that the answer cannot depend on them;
 * d->two[p] for effs[p], everything else zero. The layers' averages are
 * sums in run order (floating-point addition is not associative), so a
 * dense run after an MoE run is left to stage 2, which continues from
 * d->first_moe. */
static void shape_costs_dense(const mfu_system *sys, const mfu_shape *s0, const mfu_efficiency *const *effs,
                              int np, mfu_op *ops, mfu_shape_dense *d)
{
    const mfu_model *m = sys->model;
    mfu_shape sh = *s0;
    sh.ep = sh.etp = 1;
    const mfu_shape *s = &sh;
    mfu_shape_cost *out = d->two;
    double ab = shape_ab(s);
    double T = s->mbs * (double)s->seq / (double)s->cp;
    for (int p = 0; p < np; p++) memset(&out[p], 0, sizeof out[p]);
    d->n_attn = 0;
    d->first_moe = m->n_runs;
    for (int r = 0; r < m->n_runs; r++) {
        if (m->runs[r].mlp.kind == MFU_MLP_MOE) {
            if (d->first_moe == m->n_runs) d->first_moe = r;
            if (d->n_attn < MFU_DENSE_MOE_RUNS) attn_part(sys, s, r, effs, np, ops, &d->attn[d->n_attn++]);
        } else if (d->first_moe == m->n_runs) {
            dense_layer(sys, s, r, effs, np, ops, out);
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
     * chunk's logits (bf16, and their gradient) are live at a time, and
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
    /* a chunk's softmax: fp32, but under XLA fused away (F-MEM-LOGITS-XLA):
     * its 16-bit gradient instead */
    double soft = s->xla_loss ? ab : 4.0;
    /* F-MEM-LOGITS-EAGER: in the eager loss's backward the kept fp32
     * log-softmax, its fp32 gradient (nll_loss's) and the input's (the
     * log-softmax backward's output) are live at once: 4 + 4 + 4 bytes a
     * logit, 8 beyond the kept 4 (the forward's bf16 logits, fp32 copy and
     * log-softmax, 2 + 4 + 4, are fewer) */
    double one = sys->train.ce_eager ? 8.0 : ab;
    for (int p = 0; p < np; p++)
        out[p].logits_transient = tiles > 1 ? (ab + soft) * nl / (double)tiles : one * nl;
}

/* Stage 2: the runs from the first MoE run on, in run order, and the
 * shape's buffers, added to stage 1's answer d for the same shape
 * (whatever its ep and etp): each MoE run's attention block from d (or,
 * past its first MFU_DENSE_MOE_RUNS, from the same computation) and its
 * MLP block at s; a dense run as stage 1 weighs one. */
static void shape_costs_moe(const mfu_system *sys, const mfu_shape *s, const mfu_efficiency *const *effs,
                            int np, mfu_op *ops, const mfu_shape_dense *d, mfu_shape_cost *out)
{
    const mfu_model *m = sys->model;
    double buffers[2];
    mfu_shape_buffers(sys, s, buffers);
    for (int p = 0; p < np; p++) {
        out[p] = d->two[p];
        out[p].shape = *s;
        out[p].buffers_bytes[0] = buffers[0];
        out[p].buffers_bytes[1] = buffers[1];
    }
    mfu_shape s1 = *s;
    s1.ep = s1.etp = 1;
    for (int r = d->first_moe, q = 0; r < m->n_runs; r++) {
        if (m->runs[r].mlp.kind != MFU_MLP_MOE) {
            dense_layer(sys, &s1, r, effs, np, ops, out); /* after an MoE run: in run order */
            continue;
        }
        mfu_layer_part a;
        if (q < d->n_attn) a = d->attn[q];
        else attn_part(sys, &s1, r, effs, np, ops, &a);
        q++;
        int k = 0;
        /* never more than MFU_MAX_LAYER_OPS <= MFU_SCRATCH_OPS (ops.h) */
        int n = mfu_ops_layer_at(m, r, s, ops, MFU_SCRATCH_OPS, &k);
        part_ops(sys, ops, k, n, effs, np, &a);
        part_finish(sys, shape_ab(s), shape_te(s), effs, np, &a);
        add_layer(sys, r, np, &a, out);
    }
}

/* One shape's costs for up to two profiles from one inventory: out[0] for
 * effs[0], out[1] (when n == 2) for effs[1]. */
static void shape_costs_n(const mfu_system *sys, const mfu_shape *s, const mfu_efficiency *const *effs,
                          int np, mfu_op *ops, mfu_shape_cost *out)
{
    mfu_shape_dense d;
    shape_costs_dense(sys, s, effs, np, ops, &d);
    shape_costs_moe(sys, s, effs, np, ops, &d, out);
}

void mfu_shape_costs(const mfu_system *sys, const mfu_shape *s, const mfu_efficiency *eff,
                     mfu_op *ops, mfu_shape_cost *out)
{
    shape_costs_n(sys, s, &eff, 1, ops, out);
}

void mfu_shape_costs2_dense(const mfu_system *sys, const mfu_shape *s, mfu_op *ops, mfu_shape_dense *d)
{
    const mfu_efficiency *effs[2] = {NULL, &sys->hw->eff};
    shape_costs_dense(sys, s, effs, sys->hw->has_profile ? 2 : 1, ops, d);
}

void mfu_shape_costs2_moe(const mfu_system *sys, const mfu_shape *s, mfu_op *ops, const mfu_shape_dense *d,
                          mfu_shape_cost *bound, mfu_shape_cost *expected)
{
    const mfu_efficiency *effs[2] = {NULL, &sys->hw->eff};
    mfu_shape_cost two[2];
    int np = sys->hw->has_profile ? 2 : 1;
    shape_costs_moe(sys, s, effs, np, ops, d, two);
    *bound = two[0];
    *expected = two[np - 1];
}

void mfu_shape_costs2(const mfu_system *sys, const mfu_shape *s, mfu_op *ops, mfu_shape_cost *bound,
                      mfu_shape_cost *expected)
{
    mfu_shape_dense d;
    mfu_shape_costs2_dense(sys, s, ops, &d);
    mfu_shape_costs2_moe(sys, s, ops, &d, bound, expected);
}

int mfu_evaluate_costs(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *bound,
                       const mfu_shape_cost *expected, const mfu_memory *mem, mfu_eval *out)
{
    memset(out, 0, sizeof *out);
    mfu_eval_totals(sys, c, bound, out);
    if (mem) out->mem = *mem;
    else mfu_memory_costs(sys, c, bound, &out->mem);
    out->feasible = out->mem.headroom_bytes >= 0;
    out->frameworks = mfu_config_frameworks(sys, c, NULL);
    mfu_step_times(sys, c, bound, NULL, out, &out->bound);
    /* the bound's gap has no kernel-efficiency term */
    const mfu_hardware *hw = sys->hw;
    mfu_step_times(sys, c, expected, hw->has_profile ? &hw->eff : NULL, out, &out->expected);
    /* expected: split compute into the bound's compute + kernel efficiency */
    out->expected.gap_s[MFU_GAP_KERNEL_EFFICIENCY] =
        (out->expected.compute_s - out->bound.compute_s) +
        (out->expected.recompute_s - out->bound.recompute_s);
    out->expected.gap_s[MFU_GAP_MEMORY_BOUND] -=
        out->expected.compute_s - out->bound.compute_s;
    out->expected.gap_s[MFU_GAP_RECOMPUTE] = out->bound.recompute_s;
    /* F-GAP: the expected step is never shorter than the bound. Slower
     * kernels give communication a longer window to hide under, so where
     * the exposed communication dominates, the expected profile could
     * otherwise come out a hair faster (a fuzz input: TPU, FSDP, 131
     * micro-batches, 0.03 %); the difference is held as overhead. */
    double short_s = out->bound.step_time_s - out->expected.step_time_s;
    if (short_s > 0) {
        double k = out->expected.step_time_s / out->bound.step_time_s;
        out->expected.overhead_s += short_s;
        out->expected.gap_s[MFU_GAP_OVERHEAD] += short_s;
        out->expected.step_time_s = out->bound.step_time_s;
        out->expected.mfu *= k;
        out->expected.hfu *= k;
    }
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
