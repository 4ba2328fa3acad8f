/* api/model_json.c -- model IR and hardware description <-> core structs.
 *
 * Parsing validates every field (type, range, divisibility) and reports each
 * problem with the JSON pointer of the field. Rendering writes every field,
 * defaults included, so a parse -> render round trip is the normal form the
 * cache key hashes. Format: docs/model-ir.md. */
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
static const char *const PLATFORMS[] = {"gpu", "tpu", NULL};

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

/* Gated linear attention. */
static int attn_gla(json_t *a, const char *ptr, mfu_attention *out, api_status *st)
{
    int bad = 0;
    char p[256];
    int og = 1;
    bad |= jv_int(a, "n_kv_heads", ptr, JV_OPTIONAL, out->n_heads, 1, API_MAX_DIM,
                  &out->n_kv_heads, st);
    bad |= jv_int(a, "key_dim", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &out->key_dim, st);
    bad |= jv_int(a, "value_dim", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &out->value_dim, st);
    /* fla GatedLinearAttention: gate_low_rank_dim = 16, chunk size 64 */
    bad |= jv_int(a, "gate_rank", ptr, JV_OPTIONAL, 16, 1, API_MAX_DIM, &out->gate_rank, st);
    bad |= jv_int(a, "chunk_size", ptr, JV_OPTIONAL, 64, 1, 65536, &out->chunk_size, st);
    bad |= jv_bool(a, "output_gate", ptr, JV_OPTIONAL, 1, &og, st);
    out->output_gate = og;
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
    int og = 1;
    bad |= jv_int(a, "n_kv_heads", ptr, JV_OPTIONAL, out->n_heads, 1, API_MAX_DIM,
                  &out->n_kv_heads, st);
    bad |= jv_int(a, "key_dim", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &out->key_dim, st);
    bad |= jv_int(a, "value_dim", ptr, JV_REQUIRED, 0, 1, API_MAX_DIM, &out->value_dim, st);
    bad |= jv_int(a, "conv_size", ptr, JV_OPTIONAL, 4, 0, 64, &out->conv_size, st);
    bad |= jv_int(a, "chunk_size", ptr, JV_OPTIONAL, 64, 1, 65536, &out->chunk_size, st);
    bad |= jv_bool(a, "output_gate", ptr, JV_OPTIONAL, 1, &og, st);
    out->output_gate = og;
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
    int bad = 0, tie = 0, norm = 0, pos = 0, bias = 0, dropout = 0;
    char p[256], q[256];
    memset(m, 0, sizeof *m);
    if (!json_is_object(ir)) {
        api_fail(st, 422, ptr, "model must be an object");
        return -1;
    }
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
        int b2 = jv_int(run, "count", q, JV_OPTIONAL, 1, 1, API_MAX_LAYERS, &lr->count, st);
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
    json_t *ap = json_array();
    for (int i = 0; i < m->n_approx; i++) json_array_append_new(ap, json_string(m->approx[i]));
    if (out) json_object_set_new(out, "approximations", ap);
    else json_decref(ap);
    return out;
}

/* ---- hardware ---------------------------------------------------------- */

/* hardware.peak_flops: FLOP/s per dtype, bf16 required. */
static int hw_peaks(json_t *hw, const char *ptr, mfu_hardware *out, api_status *st)
{
    int bad = 0;
    char p[256], q[256];
    json_t *pf = json_object_get(hw, "peak_flops");
    jv_ptr(p, sizeof p, ptr, "peak_flops");
    if (!json_is_object(pf)) {
        api_fail(st, 422, p, "required object {bf16, fp16, fp8, fp32} of FLOP/s is missing");
        bad = -1;
    } else {
        for (int d = 0; d < MFU_DT_COUNT; d++)
            bad |= jv_num(pf, DTYPES[d], p, d == MFU_DT_BF16, 0.0, 0.0, 1e18, &out->peak_flops[d], st);
        if (!bad && out->peak_flops[MFU_DT_BF16] <= 0) {
            api_fail(st, 422, jv_ptr(q, sizeof q, p, "bf16"), "must be positive");
            bad = -1;
        }
        /* fuzz (tests/fuzz, request): a peak of 1e-300 FLOP/s made every op
         * time infinite and the result unrepresentable in JSON. A given
         * peak is 0 (unsupported) or at least 1e6 FLOP/s, which keeps any
         * op of a model within the limits finite. */
        for (int d = 0; !bad && d < MFU_DT_COUNT; d++)
            if (out->peak_flops[d] > 0 && out->peak_flops[d] < 1e6) {
                api_fail(st, 422, jv_ptr(q, sizeof q, p, DTYPES[d]),
                         "must be 0 (unsupported) or at least 1e6 FLOP/s");
                bad = -1;
            }
    }
    return bad;
}

/* hardware.memory_reserve, with the GPU presets' defaults. */
static int hw_reserve(json_t *hw, const char *ptr, mfu_hardware *out, api_status *st)
{
    int bad = 0;
    char p[256];
    /* Defaults when a description gives no reserve: the GPU presets' sourced
     * values (presets/hardware/h100-sxm.json notes.memory_reserve); none on
     * TPUs, whose bytes_limit already excludes XLA's reserve. */
    int gpu = out->platform == MFU_PLATFORM_GPU;
    json_t *res = json_object_get(hw, "memory_reserve");
    jv_ptr(p, sizeof p, ptr, "memory_reserve");
    if (res && !json_is_object(res)) {
        api_fail(st, 422, p, "must be an object {context_bytes, comm_buffer_bytes, fragmentation}");
        bad = -1;
        res = NULL;
    }
    bad |= jv_num(res, "context_bytes", p, JV_OPTIONAL, gpu ? 0.5e9 : 0.0, 0.0, 1e12,
                  &out->reserve.context_bytes, st);
    bad |= jv_num(res, "comm_buffer_bytes", p, JV_OPTIONAL, gpu ? 0.5e9 : 0.0, 0.0, 1e12,
                  &out->reserve.comm_buffer_bytes, st);
    bad |= jv_num(res, "fragmentation", p, JV_OPTIONAL, gpu ? 0.05 : 0.0, 0.0, 0.9,
                  &out->reserve.fragmentation, st);
    return bad;
}

/* hardware.tiers, innermost first: -1 when the list itself is unusable
 * (the caller stops), else 0 with *bad set by a tier's fields. */
static int hw_tiers(json_t *hw, const char *ptr, mfu_hardware *out, int *bad, api_status *st)
{
    char p[256], q[256];
    json_t *tiers = json_object_get(hw, "tiers");
    jv_ptr(p, sizeof p, ptr, "tiers");
    if (!json_is_array(tiers) || json_array_size(tiers) == 0 ||
        json_array_size(tiers) > MFU_MAX_TIERS) {
        api_fail(st, 422, p, "must be an array of 1 to %d network tiers, innermost first",
                 MFU_MAX_TIERS);
        return -1;
    }
    size_t i;
    json_t *t;
    int64_t prev = 0;
    json_array_foreach(tiers, i, t) {
        mfu_net_tier *nt = &out->tiers[i];
        jv_ptr_i(q, sizeof q, p, i);
        json_t *tn = json_object_get(t, "name");
        if (tn && (!json_is_string(tn) || strlen(json_string_value(tn)) >= sizeof nt->name)) {
            char r[256];
            api_fail(st, 422, jv_ptr(r, sizeof r, q, "name"), "must be a string of at most %d bytes",
                     (int)sizeof nt->name - 1);
            return -1;
        }
        snprintf(nt->name, sizeof nt->name, "%s", json_is_string(tn) ? json_string_value(tn) : "tier");
        int b2 = jv_int(t, "domain_size", q, JV_REQUIRED, 0, 1, API_MAX_DEVICES, &nt->domain_size, st);
        b2 |= jv_num(t, "bw_bytes_s", q, JV_REQUIRED, 0, 1e3, 1e15, &nt->bw_bytes_s, st);
        b2 |= jv_num(t, "latency_s", q, JV_OPTIONAL, 0.0, 0.0, 1.0, &nt->latency_s, st);
        if (!b2 && nt->domain_size <= prev) {
            char r[256];
            api_fail(st, 422, jv_ptr(r, sizeof r, q, "domain_size"),
                     "tiers go innermost first: domain_size must grow (previous %lld)",
                     (long long)prev);
            b2 = -1;
        }
        prev = nt->domain_size;
        *bad |= b2;
    }
    out->n_tiers = (int)json_array_size(tiers);
    return 0;
}

/* One number per network tier in [lo, hi] (efficiency.net, .net_half_bytes). */
static int per_tier(json_t *arr, const char *q, int n_tiers, double lo, double hi, const char *what,
                    const char *range, double *dst, api_status *st)
{
    if (!json_is_array(arr) || (int)json_array_size(arr) != n_tiers) {
        api_fail(st, 422, q, "must be an array with one %s per tier (%d)", what, n_tiers);
        return -1;
    }
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        double v = json_number_value(e);
        if (!json_is_number(e) || !(v >= lo) || v > hi) {
            char r[256];
            api_fail(st, 422, jv_ptr_i(r, sizeof r, q, i), "must be in %s", range);
            return -1;
        }
        dst[i] = v;
    }
    return 0;
}

/* hardware.efficiency (the expected profile): -1 on a malformed curve or
 * per-tier list, else 0 with *bad set by a field. */
static int hw_efficiency(json_t *eff, const char *p, mfu_hardware *out, int *bad, api_status *st)
{
    char q[256];
    size_t i;
    out->has_profile = 1;
    json_t *g = json_object_get(eff, "gemm");
    if (g) {
        jv_ptr(q, sizeof q, p, "gemm");
        if (!json_is_array(g) || json_array_size(g) > MFU_MAX_EFF_POINTS) {
            api_fail(st, 422, q, "must be an array of at most %d [flops, efficiency] pairs",
                     MFU_MAX_EFF_POINTS);
            return -1;
        }
        json_t *pt;
        json_array_foreach(g, i, pt) {
            double f = json_number_value(json_array_get(pt, 0));
            double e = json_number_value(json_array_get(pt, 1));
            /* efficiency >= 0.001 (the smallest GEMMs of the presets
             * run at ~0.01): a tiny one (fuzz: 1e-300) made expected
             * times infinite */
            if (!json_is_array(pt) || json_array_size(pt) != 2 || !(f > 0) || !(e >= 0.001) || e > 1 ||
                (i > 0 && f <= out->eff.gemm_flops[i - 1])) {
                char r[256];
                api_fail(st, 422, jv_ptr_i(r, sizeof r, q, i),
                         "must be [flops > previous, 0.001 <= efficiency <= 1]");
                return -1;
            }
            out->eff.gemm_flops[i] = f;
            out->eff.gemm_eff[i] = e;
        }
        out->eff.n_gemm = (int)json_array_size(g);
    }
    *bad |= jv_num(eff, "attention", p, JV_OPTIONAL, 1.0, 0.01, 1.0, &out->eff.attn_eff, st);
    *bad |= jv_num(eff, "attention_half_tokens", p, JV_OPTIONAL, 0.0, 0.0, 1e6,
                  &out->eff.attn_half_tokens, st);
    *bad |= jv_num(eff, "hbm", p, JV_OPTIONAL, 1.0, 0.01, 1.0, &out->eff.hbm_eff, st);
    *bad |= jv_num(eff, "step_overhead_s", p, JV_OPTIONAL, 0.0, 0.0, 1e3,
                  &out->eff.step_overhead_s, st);
    *bad |= jv_num(eff, "overlap_slowdown", p, JV_OPTIONAL, 0.0, 0.0, 0.9,
                  &out->eff.overlap_slowdown, st);
    *bad |= jv_num(eff, "gemm_scale", p, JV_OPTIONAL, 1.0, 0.05, 2.0, &out->eff.gemm_scale, st);
    *bad |= jv_num(eff, "fp8_gemm_scale", p, JV_OPTIONAL, 1.0, 0.05, 1.0, &out->eff.fp8_gemm_scale, st);
    *bad |= jv_num(eff, "kernel_overhead_s", p, JV_OPTIONAL, 0.0, 0.0, 1e-2,
                  &out->eff.kernel_overhead_s, st);
    *bad |= jv_num(eff, "gemm_overhead_s", p, JV_OPTIONAL, 0.0, -5e-6, 1e-2, &out->eff.gemm_overhead_s, st);
    *bad |= jv_num(eff, "microbatch_overhead_s", p, JV_OPTIONAL, 0.0, 0.0, 10.0,
                  &out->eff.microbatch_overhead_s, st);
    *bad |= jv_num(eff, "host_op_s", p, JV_OPTIONAL, 0.0, 0.0, 1e-3, &out->eff.host_op_s, st);
    *bad |= jv_num(eff, "uncertainty", p, JV_OPTIONAL, 0.0, 0.0, 1.0, &out->eff.uncertainty, st);
    json_t *half = json_object_get(eff, "net_half_bytes");
    if (half && per_tier(half, jv_ptr(q, sizeof q, p, "net_half_bytes"), out->n_tiers, 0.0, 1e12, "size in bytes",
                         "[0, 1e12] bytes", out->eff.net_half_bytes, st))
        return -1;
    json_t *net = json_object_get(eff, "net");
    /* >= 0.01: as the gemm curve's efficiencies */
    if (net && per_tier(net, jv_ptr(q, sizeof q, p, "net"), out->n_tiers, 0.01, 1.0, "efficiency", "[0.01, 1]",
                        out->eff.net_eff, st))
        return -1;
    return 0;
}

int api_hardware_from_json(json_t *hw, const char *ptr, mfu_hardware *out, api_status *st)
{
    int bad = 0;
    char p[256];
    memset(out, 0, sizeof *out);
    if (!json_is_object(hw)) {
        api_fail(st, 422, ptr, "hardware must be an object");
        return -1;
    }
    json_t *name = json_object_get(hw, "name");
    if (name && (!json_is_string(name) || strlen(json_string_value(name)) >= sizeof out->name)) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "name"), "must be a string of at most %d bytes",
                 (int)sizeof out->name - 1);
        return -1;
    }
    snprintf(out->name, sizeof out->name, "%s", json_is_string(name) ? json_string_value(name) : "custom");
    bad |= hw_peaks(hw, ptr, out, st);
    bad |= jv_num(hw, "hbm_bytes", ptr, JV_REQUIRED, 0, 1e6, 1e15, &out->hbm_bytes, st);
    bad |= jv_num(hw, "hbm_bw_bytes_s", ptr, JV_REQUIRED, 0, 1e6, 1e15, &out->hbm_bw_bytes_s, st);
    bad |= jv_num(hw, "tdp_w", ptr, JV_OPTIONAL, 0.0, 0.0, 1e5, &out->tdp_w, st);
    /* the host link offloaded activations cross (0: unknown, no offload) */
    bad |= jv_num(hw, "host_bw_bytes_s", ptr, JV_OPTIONAL, 0.0, 0.0, 1e13, &out->host_bw_bytes_s, st);
    int plat = 0;
    bad |= jv_enum(hw, "platform", ptr, JV_OPTIONAL, 0, PLATFORMS, &plat, st);
    out->platform = (mfu_platform)plat;
    bad |= hw_reserve(hw, ptr, out, st);
    if (hw_tiers(hw, ptr, out, &bad, st)) return -1;
    mfu_efficiency_ideal(&out->eff);
    json_t *eff = json_object_get(hw, "efficiency");
    if (eff && !json_is_null(eff)) {
        jv_ptr(p, sizeof p, ptr, "efficiency");
        if (!json_is_object(eff)) {
            api_fail(st, 422, p, "must be an object");
            return -1;
        }
        if (hw_efficiency(eff, p, out, &bad, st)) return -1;
    }
    return bad ? -1 : 0;
}

json_t *api_hardware_to_json(const mfu_hardware *hw)
{
    json_t *pf = json_object();
    for (int d = 0; d < MFU_DT_COUNT; d++)
        if (hw->peak_flops[d] > 0) json_object_set_new(pf, DTYPES[d], json_real(hw->peak_flops[d]));
    json_t *tiers = json_array();
    for (int i = 0; i < hw->n_tiers; i++)
        json_array_append_new(tiers, json_pack("{s:s,s:I,s:f,s:f}", "name", hw->tiers[i].name,
                                               "domain_size", (json_int_t)hw->tiers[i].domain_size,
                                               "bw_bytes_s", hw->tiers[i].bw_bytes_s, "latency_s",
                                               hw->tiers[i].latency_s));
    json_t *o = json_pack("{s:s,s:s,s:o,s:f,s:{s:f,s:f,s:f},s:f,s:o}", "name", hw->name, "platform",
                          PLATFORMS[hw->platform], "peak_flops", pf, "hbm_bytes", hw->hbm_bytes,
                          "memory_reserve", "context_bytes", hw->reserve.context_bytes,
                          "comm_buffer_bytes", hw->reserve.comm_buffer_bytes, "fragmentation",
                          hw->reserve.fragmentation, "hbm_bw_bytes_s", hw->hbm_bw_bytes_s, "tiers",
                          tiers);
    if (hw->tdp_w > 0) json_object_set_new(o, "tdp_w", json_real(hw->tdp_w));
    if (hw->host_bw_bytes_s > 0) json_object_set_new(o, "host_bw_bytes_s", json_real(hw->host_bw_bytes_s));
    if (hw->has_profile) {
        const mfu_efficiency *e = &hw->eff;
        json_t *g = json_array(), *net = json_array(), *half = json_array();
        for (int i = 0; i < e->n_gemm; i++)
            json_array_append_new(g, json_pack("[f,f]", e->gemm_flops[i], e->gemm_eff[i]));
        for (int i = 0; i < hw->n_tiers; i++) {
            json_array_append_new(net, json_real(e->net_eff[i]));
            json_array_append_new(half, json_real(e->net_half_bytes[i]));
        }
        json_t *ej = json_pack("{s:o,s:f,s:f,s:o,s:o,s:f,s:f}", "gemm", g, "attention", e->attn_eff,
                               "hbm", e->hbm_eff, "net", net, "net_half_bytes", half,
                               "step_overhead_s", e->step_overhead_s, "overlap_slowdown",
                               e->overlap_slowdown);
        json_object_set_new(ej, "gemm_scale", json_real(e->gemm_scale));
        json_object_set_new(ej, "fp8_gemm_scale", json_real(e->fp8_gemm_scale));
        json_object_set_new(ej, "kernel_overhead_s", json_real(e->kernel_overhead_s));
        json_object_set_new(ej, "gemm_overhead_s", json_real(e->gemm_overhead_s));
        json_object_set_new(ej, "microbatch_overhead_s", json_real(e->microbatch_overhead_s));
        json_object_set_new(ej, "host_op_s", json_real(e->host_op_s));
        json_object_set_new(ej, "uncertainty", json_real(e->uncertainty));
        if (e->attn_half_tokens > 0)
            json_object_set_new(ej, "attention_half_tokens", json_real(e->attn_half_tokens));
        json_object_set_new(o, "efficiency", ej);
    }
    return o;
}
