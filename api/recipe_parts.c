/* api/recipe_parts.c -- what every framework's recipe is built from: the
 * argv builders, the model view a framework is checked against, the
 * refusals with their reasons (api/recipe.c has the conventions and the
 * sources; api/recipe_int.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe_int.h"

unsigned api_rc_effective_modules(const mfu_system *sys, unsigned modules)
{
    return sys->has_dense_mlp ? modules : modules & ~(unsigned)MFU_RCM_ACT;
}

/* ---- small builders ------------------------------------------------------ */

void rcp_note(json_t *notes, const char *fmt, ...)
{
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_array_append_new(notes, json_string(text));
}

json_t *rcp_unavailable(const char *why)
{
    return json_pack("{s:s}", "unavailable", why);
}

void rcp_word(json_t *argv, const char *w) { json_array_append_new(argv, json_string(w)); }

void rcp_opt_int(json_t *argv, const char *name, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    rcp_word(argv, name);
    rcp_word(argv, num);
}

void rcp_opt_str(json_t *argv, const char *name, const char *v)
{
    rcp_word(argv, name);
    rcp_word(argv, v);
}

/* MaxText's key=value words */
void rcp_kv_int(json_t *argv, const char *key, int64_t v)
{
    char w[160];
    snprintf(w, sizeof w, "%s=%lld", key, (long long)v);
    rcp_word(argv, w);
}

void rcp_kv_str(json_t *argv, const char *key, const char *v)
{
    char w[256];
    snprintf(w, sizeof w, "%s=%s", key, v);
    rcp_word(argv, w);
}

/* ---- the model as the recipes need it ------------------------------------ */


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

void rcp_model_view_of(const mfu_system *sys, model_view *v)
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





/* Features of the newer HF families (docs/model-ir.md) that mfud's recipe
 * for a framework does not render: NULL if none. Megatron-LM renders sinks
 * (--softmax-type learnable), NoPE layers (--no-rope-freq), q/k norms
 * (--qk-layernorm, --qk-l2-norm) and partial rotary (--rotary-percent);
 * torchtitan and MaxText their families' q/k norms. Everything else is
 * refused with the feature named, not rendered wrong. */
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

json_t *rcp_feature_refused(const model_view *v, int fw, const char *framework)
{
    const char *gap = feature_gap(v, fw);
    if (!gap) return NULL;
    char why[320];
    snprintf(why, sizeof why, "mfud does not render a %s recipe for a model with %s", framework, gap);
    return rcp_unavailable(why);
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
json_t *rcp_refused(const char *why_not, const model_view *v, const char *says)
{
    if (why_not) return rcp_unavailable(why_not);
    const char *gap = common_model_gap(v);
    if (!gap) return NULL;
    char why[320];
    snprintf(why, sizeof why, "%s %s", says, gap);
    return rcp_unavailable(why);
}

int64_t rcp_global_batch_seqs(const mfu_config *c)
{
    return c->mbs * c->grad_accum * c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
}

/* ---- entry points ---------------------------------------------------------- */
