/* api/model_json.c -- the model IR <-> core structs.
 *
 * Parsing validates every field (type, range, divisibility) and reports each
 * problem with the JSON pointer of the field. Rendering writes every field,
 * defaults included, so a parse -> render round trip is the normal form the
 * cache key hashes. Format: docs/model-ir.md. The hardware description is
 * api/hardware_json.c's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "jsonv.h"

static const char *const ATTN_KINDS[] = {"mha", "mla", "gla", "gdn", NULL};
static const char *const QK_NORMS[] = {"none", "rmsnorm", "l2", NULL};
static const char *const MLP_KINDS[] = {"dense", "moe", NULL};
static const char *const ACTS[] = {"silu", "gelu", "relu", NULL};
static const char *const NORMS[] = {"rmsnorm", "layernorm", NULL};
static const char *const POS[] = {"rope", "learned", "none", NULL};
static const char *const DTYPES[] = {"bf16", "fp16", "fp8", "fp32", NULL};

const char *api_dtype_name(mfu_dtype d) { return DTYPES[d]; }

/* Softmax attention (MHA/GQA/MQA) and its variants. */
static int attn_mha(json_t *a, const char *ptr, const mfu_model *m, mfu_attention *out, api_status *st)
{
    int bad = 0;
    char p[256];
    int qb = 0;
    bad |= jv_int(a, "n_kv_heads", ptr, JV_OPTIONAL, out->n_heads, 1, API_MAX_DIM,
                  &out->n_kv_heads, st);
    bad |= jv_int(a, "head_dim", ptr, JV_OPTIONAL,
                  m->d_model % out->n_heads == 0 ? m->d_model / out->n_heads : 0, 1,
                  API_MAX_DIM, &out->head_dim, st);
    bad |= jv_int(a, "window", ptr, JV_OPTIONAL, 0, 0, API_MAX_SEQ, &out->window, st);
    bad |= jv_bool(a, "qkv_bias", ptr, JV_OPTIONAL, 0, &qb, st);
    out->qkv_bias = qb;
    {
        /* the newer families (docs/model-ir.md): chunked attention,
         * NoPE layers, partial rotary, sinks, output bias and gate,
         * q/k norms */
        int nope = 0, sinks = 0, ob = 0, og = 0, qkn = 0;
        bad |= jv_int(a, "chunk", ptr, JV_OPTIONAL, 0, 0, API_MAX_SEQ, &out->chunk, st);
        bad |= jv_bool(a, "nope", ptr, JV_OPTIONAL, 0, &nope, st);
        bad |= jv_bool(a, "sinks", ptr, JV_OPTIONAL, 0, &sinks, st);
        bad |= jv_bool(a, "out_bias", ptr, JV_OPTIONAL, 0, &ob, st);
        bad |= jv_bool(a, "output_gate", ptr, JV_OPTIONAL, 0, &og, st);
        bad |= jv_enum(a, "qk_norm", ptr, JV_OPTIONAL, 0, QK_NORMS, &qkn, st);
        out->nope = nope;
        out->sinks = sinks;
        out->out_bias = ob;
        out->output_gate = og;
        out->qk_norm = (mfu_qk_norm)qkn;
        if (!bad && out->head_dim > 0)
            bad |= jv_int(a, "rotary_dim", ptr, JV_OPTIONAL, out->head_dim, 1, out->head_dim,
                          &out->rotary_dim, st);
    }
    if (!bad && out->n_heads % out->n_kv_heads != 0) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "n_kv_heads"),
                 "must divide n_heads (%lld), got %lld", (long long)out->n_heads,
                 (long long)out->n_kv_heads);
        bad = -1;
    }
    if (!bad && out->head_dim == 0) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "head_dim"),
                 "required when n_heads (%lld) does not divide d_model (%lld)",
                 (long long)out->n_heads, (long long)m->d_model);
        bad = -1;
    }
    return bad;
}

/* Multi-head latent attention (DeepSeek-V2/V3). */
static int attn_mla(json_t *a, const char *ptr, mfu_attention *out, api_status *st)
{
    int bad = 0;
    bad |= jv_int(a, "q_lora_rank", ptr, JV_OPTIONAL, 0, 0, API_MAX_DIM, &out->q_lora_rank, st);
    bad |= jv_int(a, "kv_lora_rank", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &out->kv_lora_rank, st);
    bad |= jv_int(a, "qk_nope_head_dim", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM,
                  &out->qk_nope_head_dim, st);
    bad |= jv_int(a, "qk_rope_head_dim", ptr, JV_REQUIRED, 0, 0, API_MAX_DIM,
                  &out->qk_rope_head_dim, st);
    bad |= jv_int(a, "v_head_dim", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &out->v_head_dim, st);
    out->n_kv_heads = out->n_heads;
    return bad;
}

/* The fields the linear attentions share, in their order: n_kv_heads,
 * key_dim, value_dim, the kind's own integer (GLA's gate_rank, Gated
 * DeltaNet's conv_size), chunk_size, output_gate. */
static int linear_attn_fields(json_t *a, const char *ptr, const char *own, int64_t own_def, int64_t own_lo,
                              int64_t own_hi, int64_t *own_out, mfu_attention *out, api_status *st)
{
    int bad = 0, og = 1;
    bad |= jv_int(a, "n_kv_heads", ptr, JV_OPTIONAL, out->n_heads, 1, API_MAX_DIM, &out->n_kv_heads, st);
    bad |= jv_int(a, "key_dim", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &out->key_dim, st);
    bad |= jv_int(a, "value_dim", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &out->value_dim, st);
    bad |= jv_int(a, own, ptr, JV_OPTIONAL, own_def, own_lo, own_hi, own_out, st);
    bad |= jv_int(a, "chunk_size", ptr, JV_OPTIONAL, 64, 1, 65536, &out->chunk_size, st);
    bad |= jv_bool(a, "output_gate", ptr, JV_OPTIONAL, 1, &og, st);
    out->output_gate = og;
    return bad;
}

/* Gated linear attention. */
static int attn_gla(json_t *a, const char *ptr, mfu_attention *out, api_status *st)
{
    int bad = 0;
    char p[256];
    /* fla GatedLinearAttention: gate_low_rank_dim = 16, chunk size 64 */
    bad |= linear_attn_fields(a, ptr, "gate_rank", 16, 1, API_MAX_DIM, &out->gate_rank, out, st);
    if (!bad && out->n_heads % out->n_kv_heads != 0) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "n_kv_heads"), "must divide n_heads (%lld)",
                 (long long)out->n_heads);
        bad = -1;
    }
    if (!bad && (out->key_dim % out->n_heads || out->value_dim % out->n_heads)) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "key_dim"),
                 "key_dim and value_dim must be multiples of n_heads (%lld)",
                 (long long)out->n_heads);
        bad = -1;
    }
    return bad;
}

/* Gated DeltaNet. */
static int attn_gdn(json_t *a, const char *ptr, mfu_attention *out, api_status *st)
{
    int bad = 0;
    char p[256];
    /* Gated DeltaNet (Qwen3-Next linear_attention layers): n_heads value
     * heads, n_kv_heads query/key heads, key_dim over the q/k heads,
     * value_dim over the value heads; conv_size 4 and chunk 64 (HF
     * Qwen3NextConfig linear_conv_kernel_dim, fla chunk_size) */
    bad |= linear_attn_fields(a, ptr, "conv_size", 4, 0, 64, &out->conv_size, out, st);
    if (!bad && out->n_heads % out->n_kv_heads != 0) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "n_kv_heads"),
                 "must divide n_heads (%lld): value heads share a query/key head",
                 (long long)out->n_heads);
        bad = -1;
    }
    if (!bad && out->key_dim % out->n_kv_heads) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "key_dim"),
                 "must be a multiple of n_kv_heads (%lld)", (long long)out->n_kv_heads);
        bad = -1;
    }
    if (!bad && out->value_dim % out->n_heads) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "value_dim"),
                 "must be a multiple of n_heads (%lld)", (long long)out->n_heads);
        bad = -1;
    }
    return bad;
}

/* The fields of each object of the IR (openapi.yaml ModelIR, whose objects
 * say additionalProperties false; docs/model-ir.md). A field not among
 * them was passed over in silence: "n_kv_hedas" described MHA where GQA
 * was meant. */
static const char *const IR_KEYS[] = {"name", "d_model", "vocab", "tie_embeddings", "norm", "position",
                                      "max_positions", "bias", "dropout", "post_norms", "logit_softcap", "mtp_layers",
                                      "approximations", "layers", NULL};
static const char *const RUN_KEYS[] = {"count", "attention", "mlp", NULL};
static const char *const ATTN_KEYS[][14] = {
    /* MFU_ATTN_MHA */
    {"type", "n_heads", "n_kv_heads", "head_dim", "window", "qkv_bias", "chunk", "rotary_dim", "nope",
     "sinks", "out_bias", "output_gate", "qk_norm", NULL},
    /* MFU_ATTN_MLA */
    {"type", "n_heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
     "v_head_dim", NULL},
    /* MFU_ATTN_GLA */
    {"type", "n_heads", "n_kv_heads", "key_dim", "value_dim", "gate_rank", "chunk_size", "output_gate",
     NULL},
    /* MFU_ATTN_GDN */
    {"type", "n_heads", "n_kv_heads", "key_dim", "value_dim", "conv_size", "chunk_size", "output_gate",
     NULL}};
static const char *const MLP_KEYS[][13] = {
    /* MFU_MLP_DENSE */
    {"type", "ffn_dim", "gated", "activation", NULL},
    /* MFU_MLP_MOE */
    {"type", "n_experts", "top_k", "expert_ffn_dim", "n_shared_experts", "shared_ffn_dim", "gated",
     "activation", "capacity_factor", "route_nodes", "bias", "shared_gate", NULL}};

static int parse_attention(json_t *a, const char *ptr, const mfu_model *m, mfu_attention *out,
                           api_status *st)
{
    int bad = 0, kind = 0;
    memset(out, 0, sizeof *out);
    if (!json_is_object(a)) {
        api_fail(st, 422, ptr, "must be an object");
        return -1;
    }
    bad |= jv_enum(a, "type", ptr, JV_OPTIONAL, 0, ATTN_KINDS, &kind, st);
    out->kind = (mfu_attn_kind)kind;
    char what[48];
    snprintf(what, sizeof what, "attention of type %s", ATTN_KINDS[kind]);
    if (!bad) bad |= jv_known(a, ptr, what, ATTN_KEYS[kind], st);
    bad |= jv_int(a, "n_heads", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &out->n_heads, st);
    if (bad) return -1;
    switch (out->kind) {
    case MFU_ATTN_MHA: bad = attn_mha(a, ptr, m, out, st); break;
    case MFU_ATTN_MLA: bad = attn_mla(a, ptr, out, st); break;
    case MFU_ATTN_GLA: bad = attn_gla(a, ptr, out, st); break;
    case MFU_ATTN_GDN: bad = attn_gdn(a, ptr, out, st); break;
    }
    return bad ? -1 : 0;
}

static int parse_mlp(json_t *o, const char *ptr, mfu_mlp *out, api_status *st)
{
    int bad = 0, kind = 0, act = 0, gated = 1;
    memset(out, 0, sizeof *out);
    if (!json_is_object(o)) {
        api_fail(st, 422, ptr, "must be an object");
        return -1;
    }
    bad |= jv_enum(o, "type", ptr, JV_OPTIONAL, 0, MLP_KINDS, &kind, st);
    char what[48];
    snprintf(what, sizeof what, "an mlp of type %s", MLP_KINDS[kind]);
    if (!bad) bad |= jv_known(o, ptr, what, MLP_KEYS[kind], st);
    bad |= jv_bool(o, "gated", ptr, JV_OPTIONAL, 1, &gated, st);
    bad |= jv_enum(o, "activation", ptr, JV_OPTIONAL, 0, ACTS, &act, st);
    out->kind = (mfu_mlp_kind)kind;
    out->gated = gated;
    out->act = (mfu_act)act;
    out->capacity_factor = 1.0;
    if (out->kind == MFU_MLP_DENSE) {
        bad |= jv_int(o, "ffn_dim", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &out->ffn_dim, st);
    } else {
        bad |= jv_int(o, "n_experts", ptr, JV_REQUIRED, 0, 1, API_MAX_EXPERTS, &out->n_experts, st);
        bad |= jv_int(o, "top_k", ptr, JV_REQUIRED, 0, 1, API_MAX_EXPERTS, &out->top_k, st);
        bad |= jv_int(o, "expert_ffn_dim", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM,
                      &out->expert_ffn_dim, st);
        bad |= jv_int(o, "n_shared_experts", ptr, JV_OPTIONAL, 0, 0, API_MAX_EXPERTS,
                      &out->n_shared_experts, st);
        bad |= jv_int(o, "shared_ffn_dim", ptr, JV_OPTIONAL, out->expert_ffn_dim, 0, API_MAX_DIM,
                      &out->shared_ffn_dim, st);
        bad |= jv_num(o, "capacity_factor", ptr, JV_OPTIONAL, 1.0, 1.0, 64.0,
                      &out->capacity_factor, st);
        bad |= jv_int(o, "route_nodes", ptr, JV_OPTIONAL, 0, 0, API_MAX_EXPERTS, &out->route_nodes, st);
        int mb = 0, sg = 0;
        bad |= jv_bool(o, "bias", ptr, JV_OPTIONAL, 0, &mb, st);
        bad |= jv_bool(o, "shared_gate", ptr, JV_OPTIONAL, 0, &sg, st);
        out->bias = mb;
        out->shared_gate = sg;
        char p[256];
        if (!bad && out->top_k > out->n_experts) {
            api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "top_k"),
                     "must not exceed n_experts (%lld)", (long long)out->n_experts);
            bad = -1;
        }
    }
    return bad ? -1 : 0;
}

/* ---- approximations ----------------------------------------------------- */

/* Add one note unless the model has it already (so that a parse of a
 * rendered IR, which lists the derived notes too, gives the same list). */
static void add_approx(mfu_model *m, const char *text)
{
    for (int i = 0; i < m->n_approx; i++)
        if (strcmp(m->approx[i], text) == 0) return;
    if (m->n_approx >= MFU_MAX_APPROX) return;
    snprintf(m->approx[m->n_approx++], MFU_APPROX_LEN, "%s", text);
}

/* "approximations": what the description approximates, in words (the HF
 * importer writes them; an IR may carry its own). At most MFU_MAX_APPROX
 * strings of fewer than MFU_APPROX_LEN bytes. */
static int parse_approximations(json_t *a, const char *ptr, mfu_model *m, api_status *st)
{
    char p[256], q[256];
    if (!a) return 0;
    jv_ptr(p, sizeof p, ptr, "approximations");
    if (!json_is_array(a) || json_array_size(a) > MFU_MAX_APPROX) {
        api_fail(st, 422, p, "must be an array of at most %d strings", MFU_MAX_APPROX);
        return -1;
    }
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        if (!json_is_string(v) || strlen(json_string_value(v)) >= MFU_APPROX_LEN) {
            api_fail(st, 422, jv_ptr_i(q, sizeof q, p, i), "must be a string of at most %d bytes",
                     MFU_APPROX_LEN - 1);
            return -1;
        }
        add_approx(m, json_string_value(v));
    }
    return 0;
}

/* What the core's operator inventory approximates for this model's
 * features, whichever way the model was described (docs/model.md). */
static void derived_approximations(mfu_model *m)
{
    int local = 0, gdn = 0;
    for (int r = 0; r < m->n_runs; r++) {
        const mfu_attention *a = &m->runs[r].attn;
        if (a->kind == MFU_ATTN_MHA && (a->window > 0 || a->chunk > 0)) local = 1;
        if (a->kind == MFU_ATTN_GDN) gdn = 1;
    }
    if (local)
        add_approx(m, "sliding-window/chunked attention: context-parallel K/V exchange counted as "
                      "for full attention (a ring over every cp rank)");
    if (gdn)
        add_approx(m, "gdn: chunk-kernel backward counted as twice the forward plus recomputed "
                      "W, U and states (F-OP-GDN), not kernel by kernel");
}

int api_model_from_ir(json_t *ir, const char *ptr, mfu_model *m, api_status *st)
{
    int bad = 0, tie = 0, norm = 0, pos = 0, bias = 0, dropout = 0, post_norms = 0, softcap = 0;
    char p[256], q[256];
    memset(m, 0, sizeof *m);
    if (!json_is_object(ir)) {
        api_fail(st, 422, ptr, "model must be an object");
        return -1;
    }
    if (jv_known(ir, ptr, "the model IR", IR_KEYS, st)) return -1;
    json_t *name = json_object_get(ir, "name");
    if (name && !json_is_string(name)) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "name"), "must be a string");
        bad = -1;
    }
    if (json_is_string(name) && strlen(json_string_value(name)) >= sizeof m->name) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "name"), "at most %d bytes",
                 (int)sizeof m->name - 1);
        bad = -1;
    }
    snprintf(m->name, sizeof m->name, "%s", json_is_string(name) ? json_string_value(name) : "custom");
    bad |= jv_int(ir, "d_model", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &m->d_model, st);
    bad |= jv_int(ir, "vocab", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &m->vocab, st);
    bad |= jv_bool(ir, "tie_embeddings", ptr, JV_OPTIONAL, 0, &tie, st);
    bad |= jv_enum(ir, "norm", ptr, JV_OPTIONAL, 0, NORMS, &norm, st);
    bad |= jv_enum(ir, "position", ptr, JV_OPTIONAL, 0, POS, &pos, st);
    bad |= jv_bool(ir, "bias", ptr, JV_OPTIONAL, 0, &bias, st);
    bad |= jv_bool(ir, "dropout", ptr, JV_OPTIONAL, 0, &dropout, st);
    bad |= jv_bool(ir, "post_norms", ptr, JV_OPTIONAL, 0, &post_norms, st);
    bad |= jv_bool(ir, "logit_softcap", ptr, JV_OPTIONAL, 0, &softcap, st);
    m->post_norms = post_norms;
    m->logit_softcap = softcap;
    int64_t mtp = 0;
    bad |= jv_int(ir, "mtp_layers", ptr, JV_OPTIONAL, 0, 0, API_MAX_MTP_LAYERS, &mtp, st);
    m->mtp_layers = (int)mtp;
    m->tie_embeddings = tie;
    m->norm = (mfu_norm)norm;
    m->position = (mfu_pos)pos;
    m->bias = bias;
    m->dropout = dropout;
    bad |= jv_int(ir, "max_positions", ptr, m->position == MFU_POS_LEARNED, 0, 0, API_MAX_SEQ,
                  &m->max_positions, st);
    json_t *layers = json_object_get(ir, "layers");
    jv_ptr(p, sizeof p, ptr, "layers");
    if (!json_is_array(layers) || json_array_size(layers) == 0) {
        api_fail(st, 422, p, "must be a non-empty array of layer runs");
        return -1;
    }
    if (json_array_size(layers) > MFU_MAX_RUNS) {
        api_fail(st, 422, p, "at most %d layer runs (merge identical consecutive layers)",
                 MFU_MAX_RUNS);
        return -1;
    }
    if (bad) return -1;
    int64_t total = 0;
    size_t i;
    json_t *run;
    json_array_foreach(layers, i, run) {
        mfu_layer_run *lr = &m->runs[m->n_runs];
        jv_ptr_i(q, sizeof q, p, i);
        if (!json_is_object(run)) {
            api_fail(st, 422, q, "must be an object {count, attention, mlp}");
            bad = -1;
            continue;
        }
        char pa[256], pm[256];
        int b2 = jv_known(run, q, "a layer run", RUN_KEYS, st);
        b2 |= jv_int(run, "count", q, JV_OPTIONAL, 1, 1, API_MAX_LAYERS, &lr->count, st);
        b2 |= parse_attention(json_object_get(run, "attention"), jv_ptr(pa, sizeof pa, q, "attention"),
                              m, &lr->attn, st);
        b2 |= parse_mlp(json_object_get(run, "mlp"), jv_ptr(pm, sizeof pm, q, "mlp"), &lr->mlp, st);
        if (b2) {
            bad = -1;
            continue;
        }
        total += lr->count;
        m->n_runs++;
    }
    if (!bad && total > API_MAX_LAYERS) {
        api_fail(st, 422, p, "at most %d layers in all, got %lld", API_MAX_LAYERS, (long long)total);
        bad = -1;
    }
    if (!bad) bad = parse_approximations(json_object_get(ir, "approximations"), ptr, m, st);
    if (!bad) derived_approximations(m);
    return bad ? -1 : 0;
}

json_t *api_model_to_ir(const mfu_model *m)
{
    json_t *layers = json_array();
    for (int r = 0; r < m->n_runs; r++) {
        const mfu_layer_run *lr = &m->runs[r];
        const mfu_attention *a = &lr->attn;
        const mfu_mlp *p = &lr->mlp;
        json_t *aj;
        switch (a->kind) {
        case MFU_ATTN_MHA:
            aj = json_pack("{s:s,s:I,s:I,s:I,s:I,s:b}", "type", "mha", "n_heads", (json_int_t)a->n_heads,
                           "n_kv_heads", (json_int_t)a->n_kv_heads, "head_dim", (json_int_t)a->head_dim,
                           "window", (json_int_t)a->window, "qkv_bias", a->qkv_bias);
            json_object_set_new(aj, "chunk", json_integer(a->chunk));
            json_object_set_new(aj, "rotary_dim",
                                json_integer(a->rotary_dim > 0 ? a->rotary_dim : a->head_dim));
            json_object_set_new(aj, "nope", json_boolean(a->nope));
            json_object_set_new(aj, "sinks", json_boolean(a->sinks));
            json_object_set_new(aj, "out_bias", json_boolean(a->out_bias));
            json_object_set_new(aj, "output_gate", json_boolean(a->output_gate));
            json_object_set_new(aj, "qk_norm", json_string(QK_NORMS[a->qk_norm]));
            break;
        case MFU_ATTN_GDN:
            aj = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "type", "gdn", "n_heads",
                           (json_int_t)a->n_heads, "n_kv_heads", (json_int_t)a->n_kv_heads, "key_dim",
                           (json_int_t)a->key_dim, "value_dim", (json_int_t)a->value_dim, "conv_size",
                           (json_int_t)a->conv_size, "chunk_size", (json_int_t)a->chunk_size,
                           "output_gate", a->output_gate);
            break;
        case MFU_ATTN_MLA:
            aj = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "type", "mla", "n_heads",
                           (json_int_t)a->n_heads, "q_lora_rank", (json_int_t)a->q_lora_rank,
                           "kv_lora_rank", (json_int_t)a->kv_lora_rank, "qk_nope_head_dim",
                           (json_int_t)a->qk_nope_head_dim, "qk_rope_head_dim",
                           (json_int_t)a->qk_rope_head_dim, "v_head_dim", (json_int_t)a->v_head_dim);
            break;
        default:
            aj = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "type", "gla", "n_heads",
                           (json_int_t)a->n_heads, "n_kv_heads", (json_int_t)a->n_kv_heads, "key_dim",
                           (json_int_t)a->key_dim, "value_dim", (json_int_t)a->value_dim, "gate_rank",
                           (json_int_t)a->gate_rank, "chunk_size", (json_int_t)a->chunk_size,
                           "output_gate", a->output_gate);
            break;
        }
        json_t *mj;
        if (p->kind == MFU_MLP_DENSE)
            mj = json_pack("{s:s,s:I,s:b,s:s}", "type", "dense", "ffn_dim", (json_int_t)p->ffn_dim,
                           "gated", p->gated, "activation", ACTS[p->act]);
        else
            mj = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:b,s:s,s:f,s:I}", "type", "moe", "n_experts",
                           (json_int_t)p->n_experts, "top_k", (json_int_t)p->top_k, "expert_ffn_dim",
                           (json_int_t)p->expert_ffn_dim, "n_shared_experts",
                           (json_int_t)p->n_shared_experts, "shared_ffn_dim",
                           (json_int_t)p->shared_ffn_dim, "gated", p->gated, "activation",
                           ACTS[p->act], "capacity_factor", p->capacity_factor, "route_nodes",
                           (json_int_t)p->route_nodes);
        if (p->kind == MFU_MLP_MOE) {
            json_object_set_new(mj, "bias", json_boolean(p->bias));
            json_object_set_new(mj, "shared_gate", json_boolean(p->shared_gate));
        }
        json_array_append_new(layers, json_pack("{s:I,s:o,s:o}", "count", (json_int_t)lr->count,
                                                "attention", aj, "mlp", mj));
    }
    json_t *out = json_pack("{s:s,s:I,s:I,s:b,s:s,s:s,s:I,s:b,s:b,s:o}", "name", m->name, "d_model",
                            (json_int_t)m->d_model, "vocab", (json_int_t)m->vocab, "tie_embeddings",
                            m->tie_embeddings, "norm", NORMS[m->norm], "position", POS[m->position],
                            "max_positions", (json_int_t)m->max_positions, "bias", m->bias, "dropout",
                            m->dropout, "layers", layers);
    /* only when set: the IR (and the cache key) of every other model stays
     * as it was */
    if (out && m->post_norms) json_object_set_new(out, "post_norms", json_true());
    if (out && m->logit_softcap) json_object_set_new(out, "logit_softcap", json_true());
    if (out && m->mtp_layers > 0) json_object_set_new(out, "mtp_layers", json_integer(m->mtp_layers));
    json_t *ap = json_array();
    for (int i = 0; i < m->n_approx; i++) json_array_append_new(ap, json_string(m->approx[i]));
    if (out) json_object_set_new(out, "approximations", ap);
    else json_decref(ap);
    return out;
}
