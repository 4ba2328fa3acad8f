/* api/recipe.c -- launch recipes: what to give Megatron-LM, torchtitan and
 * MaxText so that each runs one configuration as mfud modelled it
 * (docs/recipes.md has the mapping, field by field, with its sources).
 *
 * Every argument name written here comes from the framework's own source,
 * read at these versions:
 *   Megatron-LM  NVIDIA/Megatron-LM tag core_v0.15.0
 *                (0d7e02bd26d3eb347ad8d1bef625002babfa6df7):
 *                megatron/training/arguments.py, the last release whose
 *                parser spells every flag out (from core_v0.16 the model
 *                flags are generated from TransformerConfig's fields, same
 *                names); tests/data/megatron_arguments.txt lists them.
 *   torchtitan   pytorch/torchtitan tag v0.2.2
 *                (73a0e6979dd10b6b1904098eb3c8f62c18ab87ce):
 *                torchtitan/config/job_config.py (tests/data/torchtitan_keys.txt);
 *                flavors from torchtitan/models/{llama3,qwen3,deepseek_v3}/__init__.py.
 *   MaxText      AI-Hypercomputer/maxtext main, 2026
 *                (e591f30cbbf217ed67ef71263ec0538239f9c3b8):
 *                src/maxtext/configs/base.yml (tests/data/maxtext_keys.txt);
 *                models from src/maxtext/configs/models/NAME.yml.
 *
 * A recipe is {"argv": [...], "notes": [...]} (Megatron-LM, MaxText),
 * {"toml": "...", "notes": [...]} (torchtitan), or {"unavailable": why}.
 * Notes say, one sentence each, what the framework does differently from
 * what the estimate assumes, or what the launch needs besides the argv. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Steps of the throughput run every recipe asks for (synthetic data). */
#define RECIPE_STEPS 100

unsigned api_rc_effective_modules(const mfu_system *sys, unsigned modules)
{
    return sys->has_dense_mlp ? modules : modules & ~(unsigned)MFU_RCM_ACT;
}

/* ---- small builders ------------------------------------------------------ */

static void note(json_t *notes, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void note(json_t *notes, const char *fmt, ...)
{
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_array_append_new(notes, json_string(text));
}

static json_t *unavailable(const char *why)
{
    return json_pack("{s:s}", "unavailable", why);
}

static void word(json_t *argv, const char *w) { json_array_append_new(argv, json_string(w)); }

static void opt_int(json_t *argv, const char *name, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    word(argv, name);
    word(argv, num);
}

static void opt_str(json_t *argv, const char *name, const char *v)
{
    word(argv, name);
    word(argv, v);
}

/* MaxText's key=value words */
static void kv_int(json_t *argv, const char *key, int64_t v)
{
    char w[160];
    snprintf(w, sizeof w, "%s=%lld", key, (long long)v);
    word(argv, w);
}

static void kv_str(json_t *argv, const char *key, const char *v)
{
    char w[256];
    snprintf(w, sizeof w, "%s=%s", key, v);
    word(argv, w);
}

/* ---- the model as the recipes need it ------------------------------------ */

typedef struct model_view {
    const mfu_model *m;
    int64_t L;
    const mfu_attention *at;    /* the first run's attention */
    int attn_same;              /* every run's attention has at's shape (windows aside) */
    int64_t window;             /* the windowed layers' window (0: none has one) */
    int64_t windowed;           /* layers with a window */
    int windows_same;           /* one window size for every windowed layer */
    const mfu_mlp *dense, *moe; /* the first dense / MoE run's MLP (NULL: none) */
    int mlp_same;               /* the dense runs agree with each other, and the MoE runs */
    int act_same;               /* every MLP and shared expert: one gating and activation */
    int gated;
    mfu_act act;
    int64_t moe_layers;
    int64_t lead_dense;         /* dense layers before the first MoE one when every later
                                 * layer is MoE; -1 for any other pattern */
} model_view;

static int attn_shape_eq(const mfu_attention *a, const mfu_attention *b)
{
    return a->kind == b->kind && a->n_heads == b->n_heads && a->n_kv_heads == b->n_kv_heads &&
           a->head_dim == b->head_dim && a->q_lora_rank == b->q_lora_rank &&
           a->kv_lora_rank == b->kv_lora_rank && a->qk_nope_head_dim == b->qk_nope_head_dim &&
           a->qk_rope_head_dim == b->qk_rope_head_dim && a->v_head_dim == b->v_head_dim &&
           a->key_dim == b->key_dim && a->value_dim == b->value_dim && a->qkv_bias == b->qkv_bias;
}

static int mlp_eq(const mfu_mlp *a, const mfu_mlp *b)
{
    if (a->kind != b->kind || a->gated != b->gated || a->act != b->act) return 0;
    if (a->kind == MFU_MLP_DENSE) return a->ffn_dim == b->ffn_dim;
    return a->n_experts == b->n_experts && a->top_k == b->top_k &&
           a->expert_ffn_dim == b->expert_ffn_dim && a->n_shared_experts == b->n_shared_experts &&
           a->shared_ffn_dim == b->shared_ffn_dim && a->capacity_factor == b->capacity_factor &&
           a->route_nodes == b->route_nodes;
}

static void model_view_of(const mfu_system *sys, model_view *v)
{
    const mfu_model *m = sys->model;
    memset(v, 0, sizeof *v);
    v->m = m;
    v->L = sys->layers;
    v->at = &m->runs[0].attn;
    v->attn_same = v->windows_same = v->mlp_same = v->act_same = 1;
    v->gated = m->runs[0].mlp.gated;
    v->act = m->runs[0].mlp.act;
    v->lead_dense = 0;
    int seen_moe = 0;
    for (int r = 0; r < m->n_runs; r++) {
        const mfu_layer_run *run = &m->runs[r];
        if (!attn_shape_eq(&run->attn, v->at)) v->attn_same = 0;
        if (run->attn.window > 0) {
            if (v->window && run->attn.window != v->window) v->windows_same = 0;
            v->window = run->attn.window;
            v->windowed += run->count;
        }
        const mfu_mlp *p = &run->mlp;
        if (p->gated != v->gated || p->act != v->act) v->act_same = 0;
        if (p->kind == MFU_MLP_MOE) {
            if (v->moe && !mlp_eq(p, v->moe)) v->mlp_same = 0;
            if (!v->moe) v->moe = p;
            v->moe_layers += run->count;
            seen_moe = 1;
        } else {
            if (v->dense && !mlp_eq(p, v->dense)) v->mlp_same = 0;
            if (!v->dense) v->dense = p;
            if (seen_moe) v->lead_dense = -1;
            else v->lead_dense += run->count;
        }
    }
    if (!v->moe) v->lead_dense = -1;
}

/* A Python list expression of a per-layer 0/1 pattern (Megatron-LM's
 * moe_freq_type, arguments.py: "([0]*3+[1]*58)"), run-length coded over
 * the model's runs. */
static void layer_pattern(const mfu_model *m, int moe, char *out, size_t n)
{
    size_t k = 0;
    int prev = -1;
    int64_t cnt = 0;
    out[0] = 0;
    for (int r = 0; r <= m->n_runs; r++) {
        int f = -1;
        if (r < m->n_runs)
            f = moe ? m->runs[r].mlp.kind == MFU_MLP_MOE : m->runs[r].attn.window > 0;
        if (f == prev && r < m->n_runs) {
            cnt += m->runs[r].count;
            continue;
        }
        if (prev >= 0 && k < n) {
            int w = snprintf(out + k, n - k, "%s[%d]*%lld", k ? "+" : "(", prev, (long long)cnt);
            if (w > 0) k += (size_t)w;
        }
        if (r < m->n_runs) {
            prev = f;
            cnt = m->runs[r].count;
        }
    }
    if (k + 2 < n) memcpy(out + k, ")", 2);
}

/* --no-rope-freq as a Python list expression, 1 = a NoPE layer
 * (arguments.py no_rope_freq_type), run-length coded over the runs. */
static void nope_pattern(const mfu_model *m, char *out, size_t n)
{
    size_t k = 0;
    int prev = -1;
    int64_t cnt = 0;
    out[0] = 0;
    for (int r = 0; r <= m->n_runs; r++) {
        int f = r < m->n_runs ? m->runs[r].attn.nope != 0 : -1;
        if (f == prev && r < m->n_runs) {
            cnt += m->runs[r].count;
            continue;
        }
        if (prev >= 0 && k < n) {
            int w = snprintf(out + k, n - k, "%s[%d]*%lld", k ? "+" : "(", prev, (long long)cnt);
            if (w > 0) k += (size_t)w;
        }
        if (r < m->n_runs) {
            prev = f;
            cnt = m->runs[r].count;
        }
    }
    if (k + 2 < n) memcpy(out + k, ")", 2);
}

/* The period N of a window pattern that is N-1 windowed layers then one
 * full-attention layer, repeated (Megatron-LM --window-attn-skip-freq N);
 * 0 if it is not one. */
static int64_t window_period(const mfu_model *m, int64_t L)
{
    int64_t first_full = -1, i = 0;
    for (int r = 0; r < m->n_runs && first_full < 0; r++) {
        if (m->runs[r].attn.window == 0) first_full = i;
        i += m->runs[r].count;
    }
    if (first_full < 0) return 0;
    int64_t N = first_full + 1;
    if (L % N) return 0;
    i = 0;
    for (int r = 0; r < m->n_runs; r++)
        for (int64_t j = 0; j < m->runs[r].count; j++, i++)
            if ((m->runs[r].attn.window > 0) != (i % N != N - 1)) return 0;
    return N;
}

static const char *act_name(const model_view *v)
{
    const char *a = v->act == MFU_ACT_SILU ? "SiLU" : v->act == MFU_ACT_GELU ? "GeLU" : "ReLU";
    static const char *const gated[] = {"gated SiLU", "gated GeLU", "gated ReLU"};
    return v->gated ? gated[v->act] : a;
}

/* Features of the newer HF families (docs/model-ir.md) that mfud's recipe
 * for a framework does not render: NULL if none. Megatron-LM renders sinks
 * (--softmax-type learnable), NoPE layers (--no-rope-freq), q/k norms
 * (--qk-layernorm, --qk-l2-norm) and partial rotary (--rotary-percent);
 * torchtitan and MaxText their families' q/k norms. Everything else is
 * refused with the feature named, not rendered wrong. */
enum { FW_R_MEGATRON = 0, FW_R_TORCHTITAN, FW_R_MAXTEXT };
static const char *feature_gap(const model_view *v, int fw)
{
    const mfu_model *m = v->m;
    for (int r = 0; r < m->n_runs; r++) {
        const mfu_attention *a = &m->runs[r].attn;
        const mfu_mlp *p = &m->runs[r].mlp;
        if (a->kind == MFU_ATTN_GDN) return "Gated DeltaNet linear attention";
        if (a->kind != MFU_ATTN_MHA) continue;
        if (a->chunk > 0) return "chunked attention";
        if (a->output_gate) return "an attention output gate";
        if (a->out_bias) return "a bias on the attention output projection";
        if (p->kind == MFU_MLP_MOE && p->bias) return "router and expert biases";
        if (p->kind == MFU_MLP_MOE && p->shared_gate && p->n_shared_experts > 0)
            return "a shared-expert gate";
        if (fw == FW_R_MEGATRON) continue;
        if (a->sinks) return "attention sinks";
        if (a->nope) return "NoPE layers";
        if (a->rotary_dim > 0 && a->rotary_dim < a->head_dim) return "partial rotary embeddings";
    }
    return NULL;
}

static json_t *feature_refused(const model_view *v, int fw, const char *framework)
{
    const char *gap = feature_gap(v, fw);
    if (!gap) return NULL;
    char why[320];
    snprintf(why, sizeof why, "mfud does not render a %s recipe for a model with %s", framework, gap);
    return unavailable(why);
}

/* What no framework here builds, whichever the framework: NULL if fine. */
static const char *common_model_gap(const model_view *v)
{
    if (v->at->kind == MFU_ATTN_GLA) return "gated linear attention";
    if (!v->attn_same) return "layers whose attention shapes differ";
    if (!v->windows_same) return "sliding windows of more than one size";
    if (!v->mlp_same) return "MLP or MoE blocks whose shapes differ from layer to layer";
    if (!v->act_same) return "MLPs with different activations";
    return NULL;
}

/* The recipe of a framework that cannot launch c at all: the rule it
 * breaks (why_not), or a model no framework here builds ("<says> <gap>");
 * NULL when neither. */
static json_t *refused(const char *why_not, const model_view *v, const char *says)
{
    if (why_not) return unavailable(why_not);
    const char *gap = common_model_gap(v);
    if (!gap) return NULL;
    char why[320];
    snprintf(why, sizeof why, "%s %s", says, gap);
    return unavailable(why);
}

static int64_t global_batch_seqs(const mfu_config *c)
{
    return c->mbs * c->grad_accum * c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
}

/* ---- Megatron-LM ----------------------------------------------------------
 * Flags of pretrain_gpt.py, megatron/training/arguments.py (core_v0.15.0). */

/* Megatron-LM argv: sliding windows and the newer families' attention
 * switches. */
static void mg_attention_features(json_t *argv, const model_view *v)
{
    const mfu_model *m = v->m;
    const mfu_attention *at = v->at;
    if (v->window > 0) {
        /* TE's (left, right) window: a query sees `left` earlier tokens and
         * itself (megatron/core/transformer/utils.py
         * get_sliding_window_causal_mask); mfud's window counts the query */
        char w[48];
        snprintf(w, sizeof w, "%lld,0", (long long)(v->window - 1));
        opt_str(argv, "--window-size", w);
        if (v->windowed < v->L) {
            int64_t N = window_period(m, v->L);
            char pat[4096];
            if (N > 0) snprintf(pat, sizeof pat, "%lld", (long long)N);
            else layer_pattern(m, 0, pat, sizeof pat);
            opt_str(argv, "--window-attn-skip-freq", pat);
        }
    }
    {
        /* the newer families' attention (core_v0.15.0 arguments.py):
         * --softmax-type learnable (a learnable softmax offset per head, the
         * sink), --no-rope-freq (1 = no RoPE in that layer), --qk-layernorm
         * (the --normalization norm on q and k) or --qk-l2-norm (Llama 4),
         * --rotary-percent */
        int sinks = 0, nope = 0, rms = 0, l2 = 0;
        int64_t rot = 0;
        for (int r = 0; r < m->n_runs; r++) {
            const mfu_attention *a = &m->runs[r].attn;
            sinks |= a->sinks;
            nope |= a->nope;
            rms |= a->qk_norm == MFU_QKN_RMS;
            l2 |= a->qk_norm == MFU_QKN_L2;
            if (a->rotary_dim > 0 && a->rotary_dim < a->head_dim) rot = a->rotary_dim;
        }
        if (sinks) opt_str(argv, "--softmax-type", "learnable");
        if (nope) {
            char pat[4096];
            nope_pattern(m, pat, sizeof pat);
            opt_str(argv, "--no-rope-freq", pat);
        }
        if (rms) word(argv, "--qk-layernorm");
        if (l2) word(argv, "--qk-l2-norm");
        if (rot > 0) {
            char pc[32];
            snprintf(pc, sizeof pc, "%g", (double)rot / (double)at->head_dim);
            opt_str(argv, "--rotary-percent", pc);
        }
    }
}

/* Megatron-LM argv: the model's shape: layers, widths, attention, positions, norms. */
static void mg_model(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                     const model_view *v)
{
    const mfu_model *m = v->m;
    const mfu_attention *at = v->at;
    opt_int(argv, "--num-layers", v->L);
    opt_int(argv, "--hidden-size", m->d_model);
    opt_int(argv, "--ffn-hidden-size", v->dense ? v->dense->ffn_dim : v->moe->expert_ffn_dim);
    opt_int(argv, "--num-attention-heads", at->n_heads);
    if (at->kind == MFU_ATTN_MLA) {
        word(argv, "--multi-latent-attention");
        if (at->q_lora_rank > 0) opt_int(argv, "--q-lora-rank", at->q_lora_rank);
        opt_int(argv, "--kv-lora-rank", at->kv_lora_rank);
        opt_int(argv, "--qk-head-dim", at->qk_nope_head_dim);
        opt_int(argv, "--qk-pos-emb-head-dim", at->qk_rope_head_dim);
        opt_int(argv, "--v-head-dim", at->v_head_dim);
    } else {
        if (at->n_kv_heads != at->n_heads) {
            word(argv, "--group-query-attention");
            opt_int(argv, "--num-query-groups", at->n_kv_heads);
        }
        /* validate_args: kv_channels defaults to hidden_size / heads */
        if (m->d_model % at->n_heads || m->d_model / at->n_heads != at->head_dim)
            opt_int(argv, "--kv-channels", at->head_dim);
    }
    mg_attention_features(argv, v);
    opt_int(argv, "--seq-length", sys->train.seq);    /* validate_args: max_position_embeddings >= seq_length (a learned
     * table is never shorter: the request is refused) */
    int64_t maxpos = m->max_positions > sys->train.seq ? m->max_positions : sys->train.seq;
    opt_int(argv, "--max-position-embeddings", maxpos);
    if (v->gated) word(argv, "--swiglu");
    opt_str(argv, "--normalization", m->norm == MFU_NORM_RMS ? "RMSNorm" : "LayerNorm");
    opt_str(argv, "--position-embedding-type",
            m->position == MFU_POS_ROPE ? "rope" : m->position == MFU_POS_LEARNED ? "learned_absolute" : "none");
    if (m->position == MFU_POS_ROPE)
        note(notes, "The RoPE base is not part of mfud's model description: set --rotary-base "
                    "(default 10000) to the model's.");
    if (!m->tie_embeddings) word(argv, "--untie-embeddings-and-output-weights");
    if (!m->bias) {
        word(argv, "--disable-bias-linear");
        if (at->qkv_bias) word(argv, "--add-qkv-bias");
    }
    if (!m->dropout) {
        /* arguments.py defaults both to 0.1 */
        opt_str(argv, "--attention-dropout", "0.0");
        opt_str(argv, "--hidden-dropout", "0.0");
    }
}

/* Megatron-LM argv: the MoE layers: experts, routing, dispatch, their parallelism. */
static void mg_moe(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                   const model_view *v)
{
    const mfu_model *m = v->m;
    int64_t ep = c->ax[MFU_AX_EP];
    if (v->moe) {
        const mfu_mlp *e = v->moe;
        opt_int(argv, "--num-experts", e->n_experts);
        opt_int(argv, "--moe-router-topk", e->top_k);
        opt_int(argv, "--moe-ffn-hidden-size", e->expert_ffn_dim);
        if (e->n_shared_experts > 0)
            /* "num_shared_experts * ffn_size_of_each_shared_expert" */
            opt_int(argv, "--moe-shared-expert-intermediate-size", e->n_shared_experts * e->shared_ffn_dim);
        if (v->moe_layers < v->L) {
            char pat[4096];
            layer_pattern(m, 1, pat, sizeof pat);
            opt_str(argv, "--moe-layer-freq", pat);
        }
        opt_str(argv, "--moe-token-dispatcher-type", "alltoall");
        /* validate_args: grouped GEMM asserts bf16 */
        if (sys->train.dtype == MFU_DT_BF16 || sys->train.dtype == MFU_DT_FP8)
            word(argv, "--moe-grouped-gemm");
        else
            note(notes, "Without bf16 Megatron-LM has no grouped GEMM for the experts "
                        "(--moe-grouped-gemm asserts bf16); they run as a loop of GEMMs.");
        if (e->route_nodes > 0) {
            /* node-limited routing: experts in one group per node the EP
             * group spans (--moe-router-num-groups), top groups per token */
            int64_t node = sys->hw->n_tiers > 0 ? sys->hw->tiers[0].domain_size : 1;
            int64_t groups = (ep + node - 1) / node;
            if (groups > e->route_nodes && e->n_experts % groups == 0) {
                opt_int(argv, "--moe-router-num-groups", groups);
                opt_int(argv, "--moe-router-group-topk", e->route_nodes);
            }
        }
        if (e->capacity_factor != 1.0) {
            char cf[32];
            snprintf(cf, sizeof cf, "%g", e->capacity_factor);
            opt_str(argv, "--moe-expert-capacity-factor", cf);
            word(argv, "--moe-pad-expert-input-to-capacity");
        }
        note(notes, "The router (score function, load-balancing loss) is not part of mfud's model "
                    "description; Megatron-LM's defaults (softmax, aux_loss) apply.");
    }
}

/* Megatron-LM argv: batch, micro-batch and the parallel layout with its pipeline split. */
static void mg_layout(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                      const model_view *v)
{
    int64_t tp = c->ax[MFU_AX_TP];
    int64_t pp = c->ax[MFU_AX_PP];
    int64_t cp = c->ax[MFU_AX_CP];
    int64_t ep = c->ax[MFU_AX_EP];
    opt_int(argv, "--micro-batch-size", c->mbs);
    opt_int(argv, "--global-batch-size", global_batch_seqs(c));
    opt_int(argv, "--tensor-model-parallel-size", tp);
    opt_int(argv, "--pipeline-model-parallel-size", pp);
    opt_int(argv, "--context-parallel-size", cp);
    if (v->moe) {
        opt_int(argv, "--expert-model-parallel-size", ep);
        opt_int(argv, "--expert-tensor-parallel-size", c->etp);
    }
    if (c->sp && tp > 1) word(argv, "--sequence-parallel");
    if (pp > 1) {
        if (c->schedule == MFU_SCHED_INTERLEAVED)
            opt_int(argv, "--num-virtual-stages-per-pipeline-rank", c->vpp);
        if (c->split == MFU_SPLIT_ACCOUNT) {
            word(argv, "--account-for-embedding-in-pipeline-split");
            word(argv, "--account-for-loss-in-pipeline-split");
        } else if (c->split == MFU_SPLIT_FIRST_LAST) {
            opt_int(argv, "--decoder-first-pipeline-num-layers", c->pp_first);
            opt_int(argv, "--decoder-last-pipeline-num-layers", c->pp_last);
        }
    }
}

/* Megatron-LM argv: recompute, or CPU activation offload. */
static void mg_recompute(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                         const model_view *v)
{
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    if (rp->kind == MFU_RCK_SELECTIVE) {
        opt_str(argv, "--recompute-granularity", "selective");
        word(argv, "--recompute-modules");
        unsigned mods = api_rc_effective_modules(sys, rp->modules);
        for (int k = 0; k < MFU_RCM_COUNT; k++)
            if (mods & (1u << k)) word(argv, mfu_rcm_names[k]);
    } else if (rp->kind == MFU_RCK_FULL) {
        opt_str(argv, "--recompute-granularity", "full");
        if (c->recompute_layers < 0) {
            opt_str(argv, "--recompute-method", "uniform");
            opt_int(argv, "--recompute-num-layers", 1);
        } else {
            /* block: the first n layers of each model chunk (virtual stage) */
            int64_t vv = c->schedule == MFU_SCHED_INTERLEAVED ? c->vpp : 1;
            int64_t per = (c->recompute_layers + vv - 1) / vv;
            opt_str(argv, "--recompute-method", "block");
            opt_int(argv, "--recompute-num-layers", per);
            if (per * vv != c->recompute_layers)
                note(notes, "--recompute-num-layers counts layers per virtual stage: %lld per stage "
                            "recompute %lld layers on each rank, not the %lld the estimate assumes.",
                     (long long)per, (long long)(per * vv), (long long)c->recompute_layers);
        }
    } else if (c->recompute == MFU_RC_CPU_OFFLOAD) {
        /* core_v0.16+ generates the flag from TransformerConfig's
         * cpu_offloading_num_layers and turns cpu_offloading on when it is
         * > 0 (megatron/training/arguments.py); activations are offloaded,
         * weights not, by default (model_parallel_config.py) */
        int64_t n = mfu_offload_layers(c, sys->layers);
        opt_int(argv, "--cpu-offloading-num-layers", n);
        note(notes, "--cpu-offloading-num-layers needs Megatron-LM core_v0.16 or later and Transformer Engine "
                    "layers (the default --transformer-impl); the estimate offloads the first %lld layers' "
                    "activations as Transformer Engine's default synchronizer does.",
             (long long)n);
        if (n == sys->layers - 1)
            note(notes, "Transformer Engine warns that offloading all but one layer prevents overlapping the "
                        "copies with compute; the estimate charges them in full.");
    }
}

/* Megatron-LM argv: precision: bf16/fp16, FP8, gradient reduction dtype. */
static void mg_precision(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                         const model_view *v)
{
    if (sys->train.dtype == MFU_DT_BF16 || sys->train.dtype == MFU_DT_FP8) word(argv, "--bf16");
    else if (sys->train.dtype == MFU_DT_FP16) word(argv, "--fp16");
    if (sys->train.dtype == MFU_DT_FP8) {
        opt_str(argv, "--fp8-format", "hybrid");
        opt_str(argv, "--fp8-recipe", "tensorwise");
        note(notes, "FP8 runs with Transformer Engine's per-tensor current scaling (--fp8-recipe tensorwise); "
                    "mfud does not model the scaling recipe (delayed, blockwise, mxfp8 are the others).");
    }
    if (sys->train.grad_bf16) word(argv, "--grad-reduce-in-bf16");
}

/* Megatron-LM argv: sharding: distributed optimizer, Megatron-FSDP or FSDP2, moment dtypes. */
static void mg_sharding(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                        const model_view *v)
{
    int64_t dp = c->ax[MFU_AX_DP];
    int64_t fsdp = c->ax[MFU_AX_FSDP];
    int64_t tp = c->ax[MFU_AX_TP];
    int64_t cp = c->ax[MFU_AX_CP];
    int dist_opt = c->zero >= 1;
    if (c->zero == 1) word(argv, "--use-distributed-optimizer");
    if (c->zero == 2) {
        /* Megatron-FSDP: "optim_grads: Shards gradients and optimizer
         * states, this is conceptually close to ZeRO-2"
         * (megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py);
         * validate_args asserts --ckpt-format fsdp_dtensor with it */
        word(argv, "--use-megatron-fsdp");
        opt_str(argv, "--data-parallel-sharding-strategy", "optim_grads");
        word(argv, "--use-distributed-optimizer");
        opt_str(argv, "--ckpt-format", "fsdp_dtensor");
        word(argv, "--no-gradient-accumulation-fusion");
        note(notes, "ZeRO-2 is Megatron-FSDP's optim_grads strategy (its own sharded buffers and "
                    "communication schedule, not the distributed optimizer's buckets the estimate prices).");
    }
    if (fsdp > 1 && (dp > 1 || c->ax[MFU_AX_EP] > 1)) {
        /* experts or a replica axis: Megatron-FSDP's ZeRO-3
         * ("optim_grads_params: shards gradients, optimizer states and
         * parameters", megatron_fsdp.py), HSDP as dp instances of the
         * sharded optimizer over the fsdp ranks
         * (DistributedDataParallelConfig.num_distributed_optimizer_instances);
         * validate_args: fsdp_dtensor checkpoints, the distributed
         * optimizer with v1 */
        word(argv, "--use-megatron-fsdp");
        opt_str(argv, "--data-parallel-sharding-strategy", "optim_grads_params");
        word(argv, "--use-distributed-optimizer");
        if (dp > 1) opt_int(argv, "--num-distributed-optimizer-instances", dp);
        opt_str(argv, "--ckpt-format", "fsdp_dtensor");
        word(argv, "--no-gradient-accumulation-fusion");
        note(notes, "FSDP with %s is Megatron-FSDP's optim_grads_params (ZeRO-3): its own sharded buffers and "
                    "prefetching, which the estimate prices as per-layer gathers and reduce-scatters.",
             dp > 1 ? "a replica axis (HSDP)" : "experts");
    } else if (fsdp > 1) {
        /* validate_args: not with gradient accumulation fusion */
        word(argv, "--use-torch-fsdp2");
        word(argv, "--no-gradient-accumulation-fusion");
    }
    if (sys->train.moments_bf16) {
        if (dist_opt) {
            word(argv, "--use-precision-aware-optimizer");
            opt_str(argv, "--exp-avg-dtype", "bf16");
            opt_str(argv, "--exp-avg-sq-dtype", "bf16");
        } else {
            note(notes, "bf16 Adam moments need --use-precision-aware-optimizer, which works only with the "
                        "distributed optimizer; this configuration keeps them in fp32.");
        }
    }
    if (fsdp > 1 || c->zero == 2)
        note(notes, "FSDP needs CUDA_DEVICE_MAX_CONNECTIONS unset or above 1 (validate_args asserts it).");
    else if (tp > 1 || cp > 1)
        note(notes, "Set CUDA_DEVICE_MAX_CONNECTIONS=1 (validate_args asserts it with tensor or context "
                    "parallelism before Blackwell).");
}

/* Megatron-LM argv: what overlaps: gradient reduce, TP communication, EP dispatch. */
static void mg_overlap(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                       const model_view *v)
{
    int64_t dp = c->ax[MFU_AX_DP];
    int64_t fsdp = c->ax[MFU_AX_FSDP];
    int64_t tp = c->ax[MFU_AX_TP];
    int64_t pp = c->ax[MFU_AX_PP];
    int64_t cp = c->ax[MFU_AX_CP];
    int64_t ep = c->ax[MFU_AX_EP];
    int dist_opt = c->zero >= 1;
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    int64_t edp = v->moe ? dp * cp * tp / (ep * c->etp) : 1;
    if (!sys->train.no_grad_overlap && fsdp == 1 && (dp * cp > 1 || edp > 1)) {
        word(argv, "--overlap-grad-reduce");
        /* validate_args: --overlap-param-gather needs the distributed
         * optimizer or Megatron-FSDP, and --overlap-grad-reduce */
        if (dist_opt) word(argv, "--overlap-param-gather");
    }
    if (c->tp_overlap && tp > 1) {
        if (c->sp) word(argv, "--tp-comm-overlap");
        else
            note(notes, "--tp-comm-overlap needs --sequence-parallel (validate_args), so the TP overlap "
                        "the estimate assumes is not applied.");
    }
    if (c->ep_overlap && v->moe && ep > 1) {
        /* transformer_config.py: needs vpp with pp > 1, alltoall/flex,
         * no full recompute, bf16 or fp16 */
        int ok = (pp == 1 || c->schedule == MFU_SCHED_INTERLEAVED) && rp->kind != MFU_RCK_FULL &&
                 sys->train.dtype != MFU_DT_FP32;
        if (ok) {
            word(argv, "--overlap-moe-expert-parallel-comm");
            note(notes, "Megatron-LM hides the EP all-to-all behind another micro-batch's compute "
                        "(batch-level overlap), not chunk by chunk within one as the estimate models it.");
        } else {
            note(notes, "--overlap-moe-expert-parallel-comm needs interleaving when pp > 1, no full recompute "
                        "and bf16/fp16 (transformer_config.py), so the EP overlap the estimate assumes is not applied.");
        }
    }
}

/* Megatron-LM argv: the attention kernel, the vocabulary and the throughput-run switches. */
static void mg_tail(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                    const model_view *v)
{
    const mfu_model *m = v->m;
    const mfu_attention *at = v->at;
    int64_t tp = c->ax[MFU_AX_TP];
    /* attention kernel: TE's flash-attn backend wants one head size for
     * q, k and v; MLA (q/k 192, v 128) goes to cuDNN's fused attention */
    if (sys->train.attn_impl == MFU_ATTN_UNFUSED) opt_str(argv, "--attention-backend", "unfused");
    else opt_str(argv, "--attention-backend", at->kind == MFU_ATTN_MLA ? "fused" : "flash");

    /* vocabulary: NullTokenizer's vocabulary is --vocab-size plus its EOD
     * token; it is padded to a multiple of
     * --make-vocab-size-divisible-by x tp (tokenizer.py
     * _vocab_size_with_padding): the largest power of two up to the
     * default 128 that keeps the model's vocabulary exact */
    int64_t V = m->vocab, div = 128;
    while (div > 1 && V % (div * tp)) div /= 2;
    if (V % (div * tp)) {
        div = 128;
        int64_t padded = (V + div * tp - 1) / (div * tp) * (div * tp);
        note(notes, "Megatron-LM pads the vocabulary from %lld to %lld (a multiple of 128 x tp); "
                    "the estimate counts %lld.", (long long)V, (long long)padded, (long long)V);
    }
    opt_str(argv, "--tokenizer-type", "NullTokenizer");
    opt_int(argv, "--vocab-size", V - 1);
    opt_int(argv, "--make-vocab-size-divisible-by", div);
    word(argv, "--mock-data");
    opt_int(argv, "--train-iters", RECIPE_STEPS);
    opt_str(argv, "--lr", "1e-4");
    note(notes, "--mock-data, NullTokenizer, --train-iters and --lr make this a throughput run on "
                "synthetic data; replace them with the real data, tokenizer and schedule.");
}

static json_t *megatron_recipe(const mfu_system *sys, const mfu_config *c, const model_view *v,
                               const char *why_not)
{
    json_t *no = refused(why_not, v, "Megatron-LM core_v0.15.0 has no flags for");
    if (no) return no;
    if ((no = feature_refused(v, FW_R_MEGATRON, "Megatron-LM"))) return no;
    const mfu_model *m = v->m;
    char why[320];
    /* arguments.py: --swiglu is gated SiLU; without it the MLP is GeLU;
     * --squared-relu and --quick-geglu are other functions */
    if (!((v->gated && v->act == MFU_ACT_SILU) || (!v->gated && v->act == MFU_ACT_GELU))) {
        snprintf(why, sizeof why,
                 "Megatron-LM core_v0.15.0 builds a %s MLP only through TransformerConfig "
                 "(gated_linear_unit, activation_func), which have no command-line flags",
                 act_name(v));
        return unavailable(why);
    }
    /* validate_args: --use-torch-fsdp2 asserts untie_embeddings_and_output_weights */
    if (c->ax[MFU_AX_FSDP] > 1 && m->tie_embeddings)
        return unavailable("Megatron-LM's --use-torch-fsdp2 requires --untie-embeddings-and-output-weights "
                           "(arguments.py validate_args) and this model ties them");

    json_t *argv = json_array(), *notes = json_array();
    note(notes, "Arguments of pretrain_gpt.py (Megatron-LM core_v0.15.0, megatron/training/arguments.py) "
                "for %lld GPUs, e.g. torchrun --nnodes N --nproc-per-node G pretrain_gpt.py ARGV with "
                "N x G = %lld.", (long long)sys->devices, (long long)sys->devices);

    mg_model(argv, notes, sys, c, v);
    mg_moe(argv, notes, sys, c, v);
    mg_layout(argv, notes, sys, c, v);
    mg_recompute(argv, notes, sys, c, v);
    mg_precision(argv, notes, sys, c, v);
    mg_sharding(argv, notes, sys, c, v);
    mg_overlap(argv, notes, sys, c, v);
    mg_tail(argv, notes, sys, c, v);
    return json_pack("{s:o,s:o}", "argv", argv, "notes", notes);
}

/* ---- torchtitan -------------------------------------------------------------
 * A job config for torchtitan v0.2.2 (torchtitan/config/job_config.py). */

/* Flavors of torchtitan v0.2.2 by shape: torchtitan/models/llama3/__init__.py
 * (llama3_args), qwen3/__init__.py (qwen3_args), deepseek_v3/__init__.py. */
typedef struct tt_flavor {
    const char *name, *flavor;
    int64_t d, L, heads, kv;  /* kv: 0 for MLA */
    int64_t ffn;              /* dense layers' (0: none) */
    int64_t moe_ffn, experts, topk, shared;
    int64_t vocab;
    int pipelining;           /* the TrainSpec has a pipelining_fn */
} tt_flavor;

static const tt_flavor TT_FLAVORS[] = {
    {"llama3", "8B", 4096, 32, 32, 8, 14336, 0, 0, 0, 0, 128256, 1},
    {"llama3", "70B", 8192, 80, 64, 8, 28672, 0, 0, 0, 0, 128256, 1},
    {"llama3", "405B", 16384, 126, 128, 8, 53248, 0, 0, 0, 0, 128256, 1},
    {"qwen3", "8B", 4096, 36, 32, 8, 12288, 0, 0, 0, 0, 151936, 0},
    {"qwen3", "14B", 5120, 40, 40, 8, 17408, 0, 0, 0, 0, 151936, 0},
    {"qwen3", "32B", 5120, 64, 64, 8, 25600, 0, 0, 0, 0, 151936, 0},
    {"qwen3", "30B-A3B", 2048, 48, 32, 4, 0, 768, 128, 8, 0, 151936, 0},
    {"qwen3", "235B-A22B", 4096, 94, 64, 4, 0, 1536, 128, 8, 0, 151936, 0},
    {"deepseek_v3", "16B", 2048, 27, 16, 0, 10944, 1408, 64, 6, 2, 102400, 1},
    {"deepseek_v3", "236B", 5120, 60, 128, 0, 12288, 1536, 160, 6, 2, 102400, 1},
    {"deepseek_v3", "671B", 7168, 61, 128, 0, 18432, 2048, 256, 8, 1, 129280, 1},
};

static int tt_matches(const tt_flavor *f, const model_view *v)
{
    const mfu_model *m = v->m;
    if (f->d != m->d_model || f->L != v->L || f->heads != v->at->n_heads || f->vocab != m->vocab) return 0;
    if ((f->kv == 0) != (v->at->kind == MFU_ATTN_MLA)) return 0;
    if (f->kv && f->kv != v->at->n_kv_heads) return 0;
    if ((f->ffn != 0) != (v->dense != NULL) || (v->dense && v->dense->ffn_dim != f->ffn)) return 0;
    if ((f->experts != 0) != (v->moe != NULL)) return 0;
    if (v->moe && (v->moe->n_experts != f->experts || v->moe->top_k != f->topk ||
                   v->moe->expert_ffn_dim != f->moe_ffn || v->moe->n_shared_experts != f->shared))
        return 0;
    return 1;
}

/* The modules of the virtual stages (torchtitan's FQNs, as
 * pipeline_parallel.py generate_llm_fqn_per_model_part names them), with
 * the layers mfud puts on each (core/config.c: rank r holds virtual stages
 * r, r+p, ...; its layers spread evenly over them, remainder first). */
static void tt_stage_modules(FILE *f, const mfu_system *sys, const mfu_config *c)
{
    int64_t p = c->ax[MFU_AX_PP], vv = c->vpp < 1 ? 1 : c->vpp, S = p * vv, next = 0;
    int64_t L = sys->layers;
    int acc = c->split == MFU_SPLIT_ACCOUNT;
    fputs("module_fqns_per_model_part = [", f);
    for (int64_t s = 0; s < S; s++) {
        int64_t n;
        if (c->split == MFU_SPLIT_FIRST_LAST) {
            int64_t r = s % p, k = s / p, tot = mfu_stage_layers(sys, c, r);
            n = tot / vv + (k < tot % vv ? 1 : 0);
        } else {
            int64_t eff = L + (acc ? 2 : 0);
            n = eff / S + (s < eff % S ? 1 : 0) - (acc && s == 0) - (acc && s == S - 1);
        }
        fputs(s ? ", [" : "[", f);
        int first = 1;
        if (s == 0) { fputs("\"tok_embeddings\"", f); first = 0; }
        for (int64_t i = 0; i < n && next < L; i++, next++) {
            fprintf(f, "%s\"layers.%lld\"", first ? "" : ", ", (long long)next);
            first = 0;
        }
        if (s == S - 1) fprintf(f, "%s\"norm\", \"output\"", first ? "" : ", ");
        fputs("]", f);
    }
    fputs("]\n", f);
}

/* torchtitan job config: [model], by flavor when one has the shape; the
 * FP8 converters. Returns whether FP8 is on. */
static int tt_model(FILE *f, json_t *notes, const mfu_system *sys, const model_view *v, const char *family,
                    const tt_flavor *fl)
{
    const mfu_model *m = v->m;
    fprintf(f, "[model]\nname = \"%s\"\n", family);
    if (fl) {
        fprintf(f, "flavor = \"%s\"\n", fl->flavor);
    } else {
        fprintf(f, "flavor = \"mfud\"\n");
        if (v->at->kind == MFU_ATTN_MLA)
            note(notes, "No torchtitan v0.2.2 flavor has this shape: register a flavor \"mfud\" in "
                        "torchtitan/models/%s/__init__.py with dim=%lld, n_layers=%lld, n_heads=%lld, "
                        "q_lora_rank=%lld, kv_lora_rank=%lld, inter_dim=%lld, vocab_size=%lld.",
                 family, (long long)m->d_model, (long long)v->L, (long long)v->at->n_heads,
                 (long long)v->at->q_lora_rank, (long long)v->at->kv_lora_rank,
                 (long long)(v->dense ? v->dense->ffn_dim : 0), (long long)m->vocab);
        else
            note(notes, "No torchtitan v0.2.2 flavor has this shape: register a flavor \"mfud\" in "
                        "torchtitan/models/%s/__init__.py with dim=%lld, n_layers=%lld, n_heads=%lld, "
                        "n_kv_heads=%lld, head_dim=%lld, an FFN of %lld, vocab_size=%lld.",
                 family, (long long)m->d_model, (long long)v->L, (long long)v->at->n_heads,
                 (long long)v->at->n_kv_heads, (long long)v->at->head_dim,
                 (long long)(v->dense ? v->dense->ffn_dim : v->moe->expert_ffn_dim), (long long)m->vocab);
        if (v->moe)
            note(notes, "The flavor's MoE: %lld experts, top-%lld, expert FFN %lld, %lld shared.",
                 (long long)v->moe->n_experts, (long long)v->moe->top_k,
                 (long long)v->moe->expert_ffn_dim, (long long)v->moe->n_shared_experts);
    }
    if (m->tie_embeddings && strcmp(family, "llama3") == 0)
        note(notes, "torchtitan's llama3 does not tie the embedding and the output layer; the estimate ties them.");
    int fp8 = sys->train.dtype == MFU_DT_FP8;
    if (fp8)
        fprintf(f, "converters = [\"quantize.linear.float8\"%s]\n", v->moe ? ", \"quantize.grouped_mm.float8\"" : "");
    return fp8;
}

/* torchtitan job config: [parallelism], with the pipeline schedule and
 * split. */
static void tt_parallelism(FILE *f, json_t *notes, const mfu_system *sys, const mfu_config *c,
                           const model_view *v)
{
    int64_t dp = c->ax[MFU_AX_DP], fsdp = c->ax[MFU_AX_FSDP], tp = c->ax[MFU_AX_TP];
    int64_t pp = c->ax[MFU_AX_PP], cp = c->ax[MFU_AX_CP], ep = c->ax[MFU_AX_EP];
    fprintf(f, "\n[parallelism]\ndata_parallel_replicate_degree = %lld\ndata_parallel_shard_degree = %lld\n"
               "tensor_parallel_degree = %lld\npipeline_parallel_degree = %lld\ncontext_parallel_degree = %lld\n",
            (long long)dp, (long long)fsdp, (long long)tp, (long long)pp, (long long)cp);
    if (v->moe)
        fprintf(f, "expert_parallel_degree = %lld\nexpert_tensor_parallel_degree = %lld\n", (long long)ep,
                (long long)c->etp);
    if (c->tp_overlap && tp > 1) fprintf(f, "enable_async_tensor_parallel = true\n");
    if (pp > 1) {
        const char *sched = c->schedule == MFU_SCHED_INTERLEAVED ? "Interleaved1F1B"
                          : c->schedule == MFU_SCHED_GPIPE      ? "GPipe"
                          : c->schedule == MFU_SCHED_DUALPIPEV  ? "DualPipeV" : "1F1B";
        fprintf(f, "pipeline_parallel_schedule = \"%s\"\npipeline_parallel_microbatch_size = %lld\n", sched,
                (long long)c->mbs);
        /* pipeline_llm: 2 virtual stages per rank for multi-stage
         * schedules, 1 otherwise, split with the embedding and the output
         * weighing *_less_layers (default 1) each */
        int64_t dflt_v = c->schedule == MFU_SCHED_INTERLEAVED || c->schedule == MFU_SCHED_DUALPIPEV ? 2 : 1;
        if (c->vpp == dflt_v && c->split == MFU_SPLIT_EVEN)
            fprintf(f, "pipeline_parallel_first_stage_less_layers = 0\npipeline_parallel_last_stage_less_layers = 0\n");
        else if (!(c->vpp == dflt_v && c->split == MFU_SPLIT_ACCOUNT))
            tt_stage_modules(f, sys, c);
    }
    if (cp > 1 && fsdp == 1)
        note(notes, "torchtitan wraps the model in FSDP over the context-parallel ranks even with "
                    "data_parallel_shard_degree 1 (parallel_dims.py: fsdp is dp_shard x cp); the estimate "
                    "keeps the parameters replicated there.");
}

/* torchtitan job config: activation checkpointing, compile, FP8 and the
 * notes on what torchtitan does not do as estimated. */
static void tt_tail(FILE *f, json_t *notes, const mfu_system *sys, const mfu_config *c, const model_view *v,
                    int fp8)
{
    int64_t tp = c->ax[MFU_AX_TP], ep = c->ax[MFU_AX_EP];
    fprintf(f, "\n[activation_checkpoint]\n");
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    if (rp->kind == MFU_RCK_NONE) {
        fprintf(f, "mode = \"none\"\n");
    } else if (rp->kind == MFU_RCK_FULL) {
        fprintf(f, "mode = \"full\"\n");
        if (c->recompute_layers > 0)
            note(notes, "torchtitan recomputes every layer in full mode; the estimate recomputes %lld per stage.",
                 (long long)c->recompute_layers);
    } else {
        fprintf(f, "mode = \"selective\"\nselective_ac_option = \"op\"\n");
        note(notes, "torchtitan's op-level selective checkpointing saves every other matmul "
                    "(activation_checkpoint.py _apply_op_sac); the estimate prices it as recomputing norms and activations.");
    }
    if (c->tp_overlap && tp > 1) {
        fprintf(f, "\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n");
        note(notes, "Async tensor parallelism works only under torch.compile ([compile] enable), which "
                    "also changes kernel times the estimate does not model.");
    }
    if (fp8) {
        fprintf(f, "\n[quantize.linear.float8]\nrecipe_name = \"tensorwise\"\n");
        if (v->moe) fprintf(f, "\n[quantize.grouped_mm.float8]\nfqns = [\"experts\"]\n");
        note(notes, "FP8 is torchao's float8 training with tensorwise scaling (a prototype for grouped GEMMs).");
    }
    if (c->ep_overlap && v->moe && ep > 1)
        note(notes, "torchtitan v0.2.2 overlaps the EP all-to-all only under DualPipeV; the estimate's EP overlap is not applied.");
    if (sys->train.attn_impl == MFU_ATTN_UNFUSED)
        note(notes, "torchtitan runs attention through SDPA or FlexAttention, fused; the estimate assumes unfused attention.");
}

static json_t *torchtitan_recipe(const mfu_system *sys, const mfu_config *c, const model_view *v,
                                 const char *why_not)
{
    json_t *no = refused(why_not, v, "torchtitan v0.2.2 has no model family with");
    if (no) return no;
    if ((no = feature_refused(v, FW_R_TORCHTITAN, "torchtitan"))) return no;
    const mfu_model *m = v->m;
    char why[320];
    if (m->norm != MFU_NORM_RMS || m->position != MFU_POS_ROPE || m->bias || v->window > 0 ||
        !v->gated || v->act != MFU_ACT_SILU || v->at->qkv_bias)
        return unavailable("torchtitan v0.2.2's model families (llama3, llama4, qwen3, deepseek_v3) are "
                           "RMSNorm, RoPE, SwiGLU decoders without biases or sliding windows; this model is not one");
    int64_t dp = c->ax[MFU_AX_DP], fsdp = c->ax[MFU_AX_FSDP];
    int64_t pp = c->ax[MFU_AX_PP], cp = c->ax[MFU_AX_CP];
    /* models/llama3/infra/parallelize.py: DDP (replicas without FSDP)
     * raises unless it is the only parallelism */
    if (dp > 1 && fsdp == 1 && cp == 1 && dp != sys->devices)
        return unavailable("torchtitan v0.2.2 replicates without sharding only as pure DDP "
                           "(parallelize.py: \"DDP has not supported > 1D parallelism\")");
    if (sys->train.dtype == MFU_DT_FP16)
        return unavailable("torchtitan v0.2.2 trains in bfloat16 or float32 "
                           "(job_config.py training.mixed_precision_param)");

    const tt_flavor *fl = NULL;
    for (size_t i = 0; i < sizeof TT_FLAVORS / sizeof *TT_FLAVORS; i++)
        if (tt_matches(&TT_FLAVORS[i], v)) { fl = &TT_FLAVORS[i]; break; }
    const char *family = fl ? fl->name : v->at->kind == MFU_ATTN_MLA ? "deepseek_v3" : v->moe ? "qwen3" : "llama3";
    int pipelining = fl ? fl->pipelining : strcmp(family, "qwen3") != 0;
    if (pp > 1 && !pipelining) {
        snprintf(why, sizeof why, "torchtitan v0.2.2's %s TrainSpec has no pipelining_fn "
                                  "(train.py: \"does not support pipelining\")", family);
        return unavailable(why);
    }

    json_t *notes = json_array();
    char *toml = NULL;
    size_t toml_len = 0;
    FILE *f = open_memstream(&toml, &toml_len);
    if (!f) {
        json_decref(notes);
        return unavailable("out of memory");
    }
    note(notes, "A job config for torchtitan v0.2.2 (torchtitan/config/job_config.py): "
                "torchrun --nnodes N --nproc-per-node G -m torchtitan.train --job.config_file FILE "
                "with N x G = %lld.", (long long)sys->devices);
    fprintf(f, "# torchtitan v0.2.2 job config (torchtitan/config/job_config.py), written by mfud\n");
    fprintf(f, "[job]\ndescription = \"mfud recipe\"\n\n");
    int fp8 = tt_model(f, notes, sys, v, family, fl);

    /* batch: with pp the whole per-replica batch of a step is one
     * local batch cut into micro-batches (pipeline_parallel.py
     * pipeline_llm); without, local batches are accumulated (train.py) */
    int64_t gbs = global_batch_seqs(c);
    int64_t local = pp > 1 ? c->mbs * c->grad_accum : c->mbs;
    fprintf(f, "\n[training]\nlocal_batch_size = %lld\nglobal_batch_size = %lld\nseq_len = %lld\n",
            (long long)local, (long long)gbs, (long long)sys->train.seq);
    fprintf(f, "steps = %d\ndataset = \"c4_test\"\n", RECIPE_STEPS);
    fprintf(f, "mixed_precision_param = \"%s\"\nmixed_precision_reduce = \"float32\"\n",
            sys->train.dtype == MFU_DT_FP32 ? "float32" : "bfloat16");
    note(notes, "dataset c4_test (shipped in torchtitan's tests/assets) and %d steps make this a throughput "
                "run; point [training] at the real data.", RECIPE_STEPS);
    if (sys->train.grad_bf16)
        note(notes, "torchtitan reduces gradients in float32 only (mixed_precision_reduce); the estimate "
                    "assumes bf16 gradients.");
    if (sys->train.moments_bf16)
        note(notes, "torchtitan has no bf16 Adam moments next to fp32 master weights; the estimate assumes them.");

    tt_parallelism(f, notes, sys, c, v);
    tt_tail(f, notes, sys, c, v, fp8);
    fclose(f);
    json_t *o = json_pack("{s:s,s:o}", "toml", toml ? toml : "", "notes", notes);
    free(toml);
    return o;
}

/* ---- MaxText -----------------------------------------------------------------
 * key=value overrides of src/maxtext/configs/base.yml (main, 2026). */

typedef struct mx_model {
    const char *name;
    int64_t d, L, heads, kv;   /* kv: 0 for MLA */
    int64_t ffn;               /* dense layers' (0: none) */
    int64_t moe_ffn, experts, topk;
    int64_t vocab;             /* the yml's, maybe padded */
    int64_t window;
    int64_t layer_unit;        /* mfud layers per MaxText decoder layer (gemma2: 2) */
} mx_model;

/* src/maxtext/configs/models/<name>.yml */
static const mx_model MX_MODELS[] = {
    {"llama3-8b", 4096, 32, 32, 8, 14336, 0, 0, 0, 128256, 0, 1},
    {"llama3-70b", 8192, 80, 64, 8, 28672, 0, 0, 0, 128256, 0, 1},
    {"llama3-405b", 16384, 126, 128, 8, 53248, 0, 0, 0, 128256, 0, 1},
    {"gpt3-175b", 12288, 96, 96, 96, 49152, 0, 0, 0, 50304, 0, 1},
    {"mistral-7b", 4096, 32, 32, 8, 14336, 0, 0, 0, 32000, 0, 1},
    {"mixtral-8x7b", 4096, 32, 32, 8, 0, 14336, 8, 2, 32000, 0, 1},
    {"mixtral-8x22b", 6144, 56, 48, 8, 0, 16384, 8, 2, 32768, 0, 1},
    {"gemma-7b", 3072, 28, 16, 16, 24576, 0, 0, 0, 256128, 0, 1},
    {"gemma2-9b", 3584, 42, 16, 8, 14336, 0, 0, 0, 256128, 4096, 2},
    {"deepseek2-16b", 2048, 27, 16, 0, 10944, 1408, 64, 6, 102400, 0, 1},
    {"deepseek3-671b", 7168, 61, 128, 0, 18432, 2048, 256, 8, 129280, 0, 1},
    {"qwen3-8b", 4096, 36, 32, 8, 12288, 0, 0, 0, 151936, 0, 1},
    {"qwen3-30b-a3b", 2048, 48, 32, 4, 0, 768, 128, 8, 151936, 0, 1},
    {"qwen3-235b-a22b", 4096, 94, 64, 4, 0, 1536, 128, 8, 151936, 0, 1},
};

static int mx_matches(const mx_model *x, const model_view *v)
{
    if (x->d != v->m->d_model || x->L != v->L || x->heads != v->at->n_heads) return 0;
    if ((x->kv == 0) != (v->at->kind == MFU_ATTN_MLA)) return 0;
    if (x->kv && x->kv != v->at->n_kv_heads) return 0;
    if ((x->ffn != 0) != (v->dense != NULL) || (v->dense && v->dense->ffn_dim != x->ffn)) return 0;
    if ((x->experts != 0) != (v->moe != NULL)) return 0;
    if (v->moe && (v->moe->n_experts != x->experts || v->moe->top_k != x->topk ||
                   v->moe->expert_ffn_dim != x->moe_ffn))
        return 0;
    return 1;
}

/* A decimal that MaxText turns back into exactly `num` sequences over
 * `devices` (configs/types.py: int(num_devices * per_device_batch_size)). */
static void per_device_batch(int64_t num, int64_t devices, char *out, size_t n)
{
    double x = (double)num / (double)devices;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, x);
        double y = strtod(out, NULL);
        if ((int64_t)(y * (double)devices) == num && fabs(y - x) <= 1e-12 * x) return;
    }
    snprintf(out, n, "%.17g", nextafter(x, INFINITY));
}

/* MaxText's mesh: ICI within a slice, DCN across slices, filled from the
 * innermost axis out (mfud's placement: tp, cp, ep, fsdp, dp, pp; the
 * expert axis is the innermost part of fsdp, FW-X2). The slice is the
 * largest whole divisor of the devices within the ICI domain that the axes
 * fill exactly (0: none). */
enum { X_TP, X_CP, X_EP, X_FSDP, X_DP, X_PP, X_N };
static const char *const MX_AXIS_NAMES[X_N] = {"tensor", "context", "expert", "fsdp", "data", "pipeline"};
typedef struct mx_mesh {
    int64_t axis[X_N], ici[X_N], dcn[X_N];
    int64_t slice, domain;
} mx_mesh;

static void mx_mesh_of(const mfu_system *sys, const mfu_config *c, mx_mesh *x)
{
    int64_t D = sys->devices, ep = c->ax[MFU_AX_EP];
    int64_t axis[X_N] = {c->ax[MFU_AX_TP], c->ax[MFU_AX_CP], ep, c->ax[MFU_AX_FSDP] / ep, c->ax[MFU_AX_DP],
                         c->ax[MFU_AX_PP]};
    memcpy(x->axis, axis, sizeof axis);
    x->slice = 0;
    x->domain = sys->hw->n_tiers > 0 ? sys->hw->tiers[0].domain_size : D;
    for (int64_t s = x->domain < D ? x->domain : D; s >= 1 && !x->slice; s--) {
        if (D % s) continue;
        int64_t rem = s;
        for (int a = 0; a < X_N; a++) {
            int64_t g = axis[a], r = rem;
            while (r) { int64_t t = g % r; g = r; r = t; } /* gcd(axis, rem) */
            x->ici[a] = g;
            x->dcn[a] = axis[a] / g;
            rem /= g;
        }
        if (rem == 1) x->slice = s;
    }
}

/* MaxText overrides: the mesh's ici_* and dcn_* degrees. */
static void mx_mesh_args(json_t *argv, json_t *notes, const mx_mesh *x, int64_t D)
{
    const int64_t *axis = x->axis, *ici = x->ici, *dcn = x->dcn;
    int64_t slice = x->slice, domain = x->domain;
    const char *const *NAMES = MX_AXIS_NAMES;
    for (int a = 0; a < X_N; a++) {
        char key[64];
        snprintf(key, sizeof key, "ici_%s_parallelism", NAMES[a]);
        kv_int(argv, key, ici[a]);
    }
    for (int a = 0; a < X_N; a++) {
        char key[64];
        snprintf(key, sizeof key, "dcn_%s_parallelism", NAMES[a]);
        kv_int(argv, key, dcn[a]);
    }
    if (slice < domain && slice < D) {
        /* an axis the estimate put on ICI (its span fits the domain) may
         * cross slices here */
        int64_t span = 1;
        for (int a = 0; a < X_N; a++) {
            span *= axis[a];
            if (dcn[a] > 1 && span <= domain) {
                note(notes, "The %s axis crosses slices (DCN) in this layout; the estimate puts it on ICI.",
                     NAMES[a]);
                break;
            }
        }
    }
}

/* MaxText overrides: the model, by MaxText's name when it has the shape,
 * else as base_* keys on the nearest decoder block. */
static void mx_model_args(json_t *argv, json_t *notes, const model_view *v, const mx_model *known)
{
    const mfu_model *m = v->m;
    if (known) {
        kv_str(argv, "model_name", known->name);
        if (known->vocab != m->vocab)
            note(notes, "MaxText's %s config has a vocabulary of %lld; the estimate counts %lld.", known->name,
                 (long long)known->vocab, (long long)m->vocab);
        if (known->window != (v->windowed ? v->window : 0))
            note(notes, "MaxText's %s config has %s; the estimate assumes %s.", known->name,
                 known->window ? "a sliding window" : "no sliding window",
                 v->windowed ? "one" : "none");
    } else {
        const char *block = v->at->kind == MFU_ATTN_MLA ? "deepseek"
                          : v->moe                      ? "mixtral"
                          : m->position == MFU_POS_LEARNED ? "gpt3" : "llama2";
        kv_str(argv, "decoder_block", block);
        kv_int(argv, "base_emb_dim", m->d_model);
        kv_int(argv, "base_num_query_heads", v->at->n_heads);
        kv_int(argv, "base_num_decoder_layers", v->L);
        kv_int(argv, "base_mlp_dim", v->dense ? v->dense->ffn_dim : v->moe->expert_ffn_dim);
        kv_int(argv, "vocab_size", m->vocab);
        if (v->at->kind == MFU_ATTN_MLA) {
            kv_int(argv, "base_num_kv_heads", v->at->n_heads);
            kv_int(argv, "q_lora_rank", v->at->q_lora_rank);
            kv_int(argv, "kv_lora_rank", v->at->kv_lora_rank);
            kv_int(argv, "qk_nope_head_dim", v->at->qk_nope_head_dim);
            kv_int(argv, "qk_rope_head_dim", v->at->qk_rope_head_dim);
            kv_int(argv, "v_head_dim", v->at->v_head_dim);
        } else {
            kv_int(argv, "base_num_kv_heads", v->at->n_kv_heads);
            kv_int(argv, "head_dim", v->at->head_dim);
        }
        if (v->moe) {
            kv_int(argv, "num_experts", v->moe->n_experts);
            kv_int(argv, "num_experts_per_tok", v->moe->top_k);
            kv_int(argv, "base_moe_mlp_dim", v->moe->expert_ffn_dim);
            if (v->moe->n_shared_experts) kv_int(argv, "shared_experts", v->moe->n_shared_experts);
            if (v->lead_dense > 0) kv_int(argv, "first_num_dense_layers", v->lead_dense);
            else if (v->lead_dense < 0)
                note(notes, "MaxText places dense layers only before the MoE ones (first_num_dense_layers); "
                            "this model interleaves them.");
        }
        if (!(v->gated && v->act == MFU_ACT_SILU)) {
            const char *a = v->act == MFU_ACT_GELU ? "gelu" : v->act == MFU_ACT_RELU ? "relu" : "silu";
            char acts[64];
            snprintf(acts, sizeof acts, v->gated ? "[%s,linear]" : "[%s]", a);
            kv_str(argv, "mlp_activations", acts);
        }
        if (m->tie_embeddings) kv_str(argv, "logits_via_embedding", "true");
        if (m->position == MFU_POS_LEARNED) kv_int(argv, "trainable_position_size", m->max_positions);
        if (v->windowed)
            note(notes, "Sliding windows (%lld tokens) are set per decoder block in MaxText "
                        "(sliding_window_size with gemma2/gemma3/gpt_oss blocks); %s has none.",
                 (long long)v->window, block);
        note(notes, "No MaxText model config has this shape: the base_* keys describe it with the %s "
                    "decoder block, whose norms, position encoding and biases are that block's.", block);
    }
}

/* MaxText overrides: the remat policy (and a custom one's per-tensor
 * switches). */
static void mx_remat(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c)
{
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    const char *remat = "full";
    if (c->recompute == MFU_RC_MINIMAL) remat = "minimal_with_context";
    else if (c->recompute == MFU_RC_SAVE_DOT_EXCEPT_MLP) remat = "save_dot_with_context_except_mlp";
    else if (rp->kind == MFU_RCK_NONE) {
        remat = "minimal_with_context";
        note(notes, "MaxText has no save-everything policy (remat_policy none wraps each layer in nn.remat "
                    "with nothing saved, layers/decoders.py get_remat_policy); minimal_with_context, the closest, "
                    "still recomputes norms and activations, which the estimate does not.");
    }
    if (rp->kind == MFU_RCK_FULL && c->recompute_layers > 0)
        note(notes, "MaxText's full policy recomputes every layer; the estimate recomputes %lld per stage.",
             (long long)c->recompute_layers);
    if (c->recompute == MFU_RC_QKV_OFFLOADED) remat = "qkv_proj_offloaded";
    else if (c->recompute == MFU_RC_MINIMAL_OFFLOADED) remat = "minimal_offloaded";
    else if (c->recompute == MFU_RC_MAXTEXT) remat = "custom";
    kv_str(argv, "remat_policy", remat);
    if (c->recompute == MFU_RC_MAXTEXT) {
        /* base.yml's per-tensor switches, every name of each family */
        static const struct {
            const char *name;
            unsigned mx;
        } TENSORS[] = {{"decoder_layer_input", MFU_MX_INPUT}, {"query_proj", MFU_MX_QKV}, {"key_proj", MFU_MX_QKV},
                       {"value_proj", MFU_MX_QKV},           {"qkv_proj", MFU_MX_QKV},  {"context", MFU_MX_CONTEXT},
                       {"out_proj", MFU_MX_OUT},             {"mlpwi_0", MFU_MX_WI},    {"mlpwi_1", MFU_MX_WI},
                       {"mlpwo", MFU_MX_WO}};
        for (size_t i = 0; i < sizeof TENSORS / sizeof *TENSORS; i++)
            kv_str(argv, TENSORS[i].name, rp->mx_device & TENSORS[i].mx ? "device"
                                          : rp->mx_host & TENSORS[i].mx ? "offload" : "remat");
    }
}

/* MaxText overrides: precision, attention kernel, overlap notes and the
 * throughput-run switches. */
static void mx_tail(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                    const model_view *v)
{
    int64_t tp = c->ax[MFU_AX_TP], ep = c->ax[MFU_AX_EP];
    switch (sys->train.dtype) {
    case MFU_DT_FP32: kv_str(argv, "dtype", "float32"); break;
    case MFU_DT_FP16: kv_str(argv, "dtype", "float16"); break;
    default: kv_str(argv, "dtype", "bfloat16"); break;
    }
    if (sys->train.dtype == MFU_DT_FP8) {
        /* layers/quantizations.py: fp8_full is Qwix's FP8 rule set */
        kv_str(argv, "quantization", "fp8_full");
        kv_str(argv, "use_qwix_quantization", "true");
        note(notes, "FP8 runs through Qwix (quantization fp8_full); the estimate uses the chip's FP8 peak.");
    }
    if (sys->train.grad_bf16) kv_str(argv, "grad_dtype", "bfloat16");
    if (sys->train.moments_bf16) {
        kv_str(argv, "mu_dtype", "bfloat16");
        note(notes, "MaxText's mu_dtype sets the first Adam moment only; the second stays in weight_dtype "
                    "(float32), against the estimate's bf16.");
    }
    kv_str(argv, "attention", sys->train.attn_impl == MFU_ATTN_UNFUSED ? "dot_product" : "flash");
    if (c->sp && tp > 1)
        note(notes, "MaxText has no sequence-parallel switch; how activations shard over the tensor axis is "
                    "XLA's choice under base.yml's logical_axis_rules.");
    if (c->tp_overlap && tp > 1)
        note(notes, "TP overlap on TPU comes from XLA's collective-matmul flags (LIBTPU_INIT_ARGS), not base.yml.");
    if (c->ep_overlap && v->moe && ep > 1)
        note(notes, "MaxText overlaps expert communication only with its ring-of-experts or batch-split options; "
                    "the estimate's EP overlap is not applied.");
    kv_str(argv, "dataset_type", "synthetic");
    kv_int(argv, "steps", RECIPE_STEPS);
    kv_str(argv, "enable_checkpointing", "false");
    note(notes, "dataset_type synthetic, %d steps and no checkpoints make this a throughput run; add "
                "base_output_directory and the real dataset.", RECIPE_STEPS);
}

static json_t *maxtext_recipe(const mfu_system *sys, const mfu_config *c, const model_view *v,
                              const char *why_not)
{
    json_t *no = refused(why_not, v, "MaxText has no decoder block for a model with");
    if (no) return no;
    if ((no = feature_refused(v, FW_R_MAXTEXT, "MaxText"))) return no;
    char why[320];
    int64_t D = sys->devices;
    int64_t pp = c->ax[MFU_AX_PP];
    const mx_model *known = NULL;
    for (size_t i = 0; i < sizeof MX_MODELS / sizeof *MX_MODELS; i++)
        if (mx_matches(&MX_MODELS[i], v)) { known = &MX_MODELS[i]; break; }
    int64_t unit = known ? known->layer_unit : 1;
    int64_t vv = c->vpp < 1 ? 1 : c->vpp;
    if (pp > 1 && (v->L / unit) % (pp * vv)) {
        snprintf(why, sizeof why, "MaxText's %s config has %lld decoder layers, which %lld stages x %lld repeats "
                                  "do not divide (configs/types.py)",
                 known ? known->name : "", (long long)(v->L / unit), (long long)pp, (long long)vv);
        return unavailable(why);
    }

    mx_mesh mesh;
    mx_mesh_of(sys, c, &mesh);
    int64_t slice = mesh.slice;
    if (!slice) return unavailable("the axes do not split into whole slices of the ICI domain");

    json_t *argv = json_array(), *notes = json_array();
    note(notes, "Overrides of MaxText's src/maxtext/configs/base.yml (main, 2026): "
                "python3 -m maxtext.trainers.pre_train.train src/maxtext/configs/base.yml ARGV "
                "(older releases: python3 -m MaxText.train MaxText/configs/base.yml ARGV), on %lld chips "
                "in %lld slice%s of %lld.", (long long)D, (long long)(D / slice), D / slice > 1 ? "s" : "",
         (long long)slice);
    word(argv, "run_name=mfud");
    mx_model_args(argv, notes, v, known);
    kv_int(argv, "max_target_length", sys->train.seq);

    /* batch: per_device_batch_size counts sequences of one optimizer
     * micro-step over every chip (configs/types.py
     * calculate_global_batch_sizes); the pipeline takes the whole step's
     * batch as num_pipeline_microbatches micro-batches */
    char pdbs[40];
    int64_t gbs = global_batch_seqs(c);
    if (pp > 1) {
        per_device_batch(gbs, D, pdbs, sizeof pdbs);
        kv_str(argv, "per_device_batch_size", pdbs);
        kv_int(argv, "num_pipeline_microbatches", c->grad_accum);
        kv_int(argv, "num_layers_per_pipeline_stage", v->L / unit / (pp * vv));
        kv_int(argv, "num_pipeline_repeats", vv);
    } else {
        per_device_batch(gbs / c->grad_accum, D, pdbs, sizeof pdbs);
        kv_str(argv, "per_device_batch_size", pdbs);
        if (c->grad_accum > 1) kv_int(argv, "gradient_accumulation_steps", c->grad_accum);
    }
    mx_mesh_args(argv, notes, &mesh, D);
    if (c->zero == 1) kv_str(argv, "shard_optimizer_over_data", "true");
    if (sys->train.optimizer_offload) kv_str(argv, "optimizer_memory_host_offload", "true");
    if (sys->train.vocab_tiles > 1) {
        char t[24];
        snprintf(t, sizeof t, "%lld", (long long)sys->train.vocab_tiles);
        kv_str(argv, "num_vocab_tiling", t);
    }

    mx_remat(argv, notes, sys, c);
    mx_tail(argv, notes, sys, c, v);
    return json_pack("{s:o,s:o}", "argv", argv, "notes", notes);
}

/* ---- entry points ---------------------------------------------------------- */

json_t *api_render_recipes(const mfu_system *sys, const mfu_config *c, const mfu_eval *ev)
{
    /* the first rule each framework that does not launch c breaks
     * (docs/frameworks.md) */
    const char *why_not[MFU_FW_COUNT] = {NULL, NULL, NULL};
    unsigned fw = ev->frameworks;
    if (fw != MFU_FW_ALL) (void)mfu_config_frameworks(sys, c, why_not);
    for (int f = 0; f < MFU_FW_COUNT; f++) {
        if (fw & MFU_FW_MASK(f)) why_not[f] = NULL;
        else if (!why_not[f]) why_not[f] = "no rule of docs/frameworks.md admits it";
    }
    model_view v;
    model_view_of(sys, &v);
    return json_pack("{s:o,s:o,s:o}", "megatron", megatron_recipe(sys, c, &v, why_not[MFU_FW_MEGATRON]),
                     "torchtitan", torchtitan_recipe(sys, c, &v, why_not[MFU_FW_TORCHTITAN]), "maxtext",
                     maxtext_recipe(sys, c, &v, why_not[MFU_FW_MAXTEXT]));
}

/* One POSIX shell word: as it is when it holds only characters no shell
 * treats specially, else in single quotes ('\'' for a quote inside). */
static void shell_word(FILE *f, const char *w)
{
    static const char SAFE[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.,/:=+@%";
    if (*w && strspn(w, SAFE) == strlen(w)) {
        fputs(w, f);
        return;
    }
    fputc('\'', f);
    for (; *w; w++) {
        if (*w == '\'') fputs("'\\''", f);
        else fputc(*w, f);
    }
    fputc('\'', f);
}

json_t *api_recipe_shell_line(const json_t *recipe)
{
    const json_t *argv = json_object_get(recipe, "argv");
    if (!json_is_array(argv)) return json_null();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return json_null();
    for (size_t i = 0; i < json_array_size(argv); i++) {
        if (i) fputc(' ', f);
        shell_word(f, json_string_value(json_array_get(argv, i)));
    }
    fclose(f);
    json_t *s = json_string(buf ? buf : "");
    free(buf);
    return s;
}
