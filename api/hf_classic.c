/* api/hf_classic.c -- the HuggingFace importer's pre-Llama families:
 * GPT-2 (gpt2), StarCoder (gpt_bigcode), OPT (opt), GPT-NeoX (gpt_neox),
 * BLOOM (bloom) and Falcon (falcon).
 * One kind of layer each: LayerNorm, biases, a plain (not gated) MLP, the
 * families' published runs (OPT-175B, GPT-NeoX-20B, StarCoder 15.5B) being
 * what their configs describe. Fields and defaults from transformers'
 * configuration_<family>.py and modeling_<family>.py (v4.57); what the IR
 * cannot say is named in "approximations". */
#include "hf_int.h"

/* The families this file reads. */
typedef enum { C_GPT2, C_BIGCODE, C_OPT, C_NEOX, C_BLOOM, C_FALCON } classic_family;

static const struct {
    const char *name;
    classic_family fam;
} classic_families[] = {
    {"gpt2", C_GPT2}, {"gpt_bigcode", C_BIGCODE}, {"opt", C_OPT},
    {"gpt_neox", C_NEOX}, {"bloom", C_BLOOM}, {"falcon", C_FALCON},
};

int hf_classic_index(const char *model_type)
{
    for (size_t i = 0; i < sizeof classic_families / sizeof classic_families[0]; i++)
        if (!strcmp(model_type, classic_families[i].name)) return (int)i;
    return -1;
}

/* A dropout probability in [0, 1) (dflt where absent): whether dropout
 * runs (*on), or -1 on error. */
static int read_dropout(hf_ctx *c, const char *key, double dflt, int *on)
{
    char p[256];
    json_t *v = hf_lookup(c, key, p, sizeof p);
    double d = v ? json_number_value(v) : dflt;
    if (v && (!json_is_number(v) || !(d >= 0.0 && d < 1.0))) {
        hf_fail(c, p, "%s must be a probability in [0, 1)", key);
        return -1;
    }
    *on = d > 0.0;
    return 0;
}

/* A classic family's sizes, read under its own key names. */
typedef struct classic_sizes {
    long long h, layers, heads, kv_heads, ffn, vocab, maxpos, rotary_dim;
    int tie, bias, qkv_bias, dropout;
    const char *act, *position;
} classic_sizes;

/* GPT2Config / GPTBigCodeConfig: n_embd, n_layer, n_head, n_inner (null:
 * 4 n_embd), n_positions, activation_function (gelu_new /
 * gelu_pytorch_tanh); learned positions, biases everywhere, the LM head
 * tied to wte (GPT2LMHeadModel, GPTBigCodeForCausalLM _tied_weights_keys);
 * gpt_bigcode's multi_query (default true) one KV head. */
static int read_gpt2(hf_ctx *c, int bigcode, classic_sizes *z)
{
    char p[256];
    if (hf_int(c, "n_embd", 1, 0, 1, API_MAX_DIM, &z->h) < 0 ||
        hf_int(c, "n_layer", 1, 0, 1, API_MAX_LAYERS, &z->layers) < 0 ||
        hf_int(c, "n_head", 1, 0, 1, API_MAX_DIM, &z->heads) < 0 ||
        hf_int(c, "vocab_size", 1, 0, 1, API_MAX_DIM, &z->vocab) < 0 ||
        hf_int(c, "n_positions", 0, bigcode ? 2048 : 1024, 1, API_MAX_SEQ, &z->maxpos) < 0)
        return -1;
    json_t *inner = hf_lookup(c, "n_inner", p, sizeof p);
    z->ffn = 4 * z->h;
    if (inner && !json_is_null(inner) && hf_int(c, "n_inner", 1, 0, 1, API_MAX_DIM, &z->ffn) < 0) return -1;
    int mq = 0;
    if (bigcode && hf_bool(c, "multi_query", 1, &mq) < 0) return -1;
    z->kv_heads = mq ? 1 : z->heads;
    z->act = hf_activation(c, "activation_function", bigcode ? "gelu_pytorch_tanh" : "gelu_new");
    z->tie = 1;
    z->bias = z->qkv_bias = 1;
    z->position = "learned";
    /* resid_pdrop (default 0.1): dropout on each block's output */
    if (read_dropout(c, "resid_pdrop", 0.1, &z->dropout) < 0) return -1;
    return 0;
}

/* The sizes OPT and GPT-NeoX name as Llama does (hidden_size,
 * num_hidden_layers, num_attention_heads, vocab_size,
 * max_position_embeddings, default 2,048), the MLP's width under ffn_key
 * (NULL: none). */
static int read_llama_keys(hf_ctx *c, const char *ffn_key, classic_sizes *z)
{
    if (hf_int(c, "hidden_size", 1, 0, 1, API_MAX_DIM, &z->h) < 0 ||
        hf_int(c, "num_hidden_layers", 1, 0, 1, API_MAX_LAYERS, &z->layers) < 0 ||
        hf_int(c, "num_attention_heads", 1, 0, 1, API_MAX_DIM, &z->heads) < 0 ||
        (ffn_key && hf_int(c, ffn_key, 1, 0, 1, API_MAX_DIM, &z->ffn) < 0) ||
        hf_int(c, "vocab_size", 1, 0, 1, API_MAX_DIM, &z->vocab) < 0 ||
        hf_int(c, "max_position_embeddings", 0, 2048, 1, API_MAX_SEQ, &z->maxpos) < 0)
        return -1;
    return 0;
}

/* OPTConfig: hidden_size, num_hidden_layers, num_attention_heads, ffn_dim,
 * max_position_embeddings (2048), activation_function (relu), enable_bias
 * (true), tie_word_embeddings (true). OPT-350m's projection of the
 * embeddings (word_embed_proj_dim != hidden_size) and post-LN layers
 * (do_layer_norm_before false) are refused: no published run used them. */
static int read_opt(hf_ctx *c, classic_sizes *z)
{
    char p[256];
    long long proj = 0;
    int pre = 1;
    if (read_llama_keys(c, "ffn_dim", z) < 0 || hf_int(c, "word_embed_proj_dim", 0, z->h, 1, API_MAX_DIM, &proj) < 0 ||
        hf_bool(c, "enable_bias", 1, &z->bias) < 0 || hf_bool(c, "do_layer_norm_before", 1, &pre) < 0 ||
        hf_bool(c, "tie_word_embeddings", 1, &z->tie) < 0)
        return -1;
    if (proj != z->h) {
        hf_lookup(c, "word_embed_proj_dim", p, sizeof p);
        hf_fail(c, p, "word_embed_proj_dim (%lld) must equal hidden_size (%lld): the embeddings' projection "
                      "(OPT-350m) is not modelled", proj, z->h);
        return -1;
    }
    if (!pre) {
        hf_lookup(c, "do_layer_norm_before", p, sizeof p);
        hf_fail(c, p, "do_layer_norm_before false (post-LN, OPT-350m) is not modelled");
        return -1;
    }
    /* OPTConfig dropout (0.1): on each block's output */
    if (read_dropout(c, "dropout", 0.1, &z->dropout) < 0) return -1;
    z->kv_heads = z->heads;
    z->act = hf_activation(c, "activation_function", "relu");
    z->qkv_bias = z->bias;
    z->position = "learned";
    /* OPTLearnedPositionalEmbedding keeps 2 rows beyond the positions (its
     * offset): 2 h parameters the IR's table of max_positions leaves out */
    hf_approx(c, "opt: the learned position table's 2 offset rows (OPTLearnedPositionalEmbedding) are not counted");
    return 0;
}

/* GPTNeoXConfig: hidden_size, num_hidden_layers, num_attention_heads,
 * intermediate_size, hidden_act (gelu), rotary_pct (0.25) of each head
 * rotated, attention_bias (true), tie_word_embeddings (false),
 * use_parallel_residual (true): attention and MLP read the same input and
 * their outputs are added together, which the IR's sequential layer
 * cannot say (the same ops and bytes, the TP all-reduces of the two
 * blocks not fused into one). */
static int read_neox(hf_ctx *c, classic_sizes *z)
{
    double pct = 0.25;
    int par = 1;
    if (read_llama_keys(c, "intermediate_size", z) < 0 || hf_num(c, "rotary_pct", 0.25, 1.0, &pct) < 0 || hf_bool(c, "attention_bias", 1, &z->qkv_bias) < 0 ||
        hf_bool(c, "tie_word_embeddings", 0, &z->tie) < 0 || hf_bool(c, "use_parallel_residual", 1, &par) < 0)
        return -1;
    /* GPTNeoXConfig hidden_dropout (default 0) */
    if (read_dropout(c, "hidden_dropout", 0.0, &z->dropout) < 0) return -1;
    z->kv_heads = z->heads;
    z->act = hf_activation(c, "hidden_act", "gelu");
    z->bias = 1; /* GPTNeoXMLP's dense_h_to_4h / dense_4h_to_h have biases */
    z->position = "rope";
    long long hd = z->heads > 0 ? z->h / z->heads : 0;
    z->rotary_dim = (long long)((double)hd * pct); /* modeling_gpt_neox: int(head_size * rotary_pct) */
    if (z->rotary_dim < 1) z->rotary_dim = 1;
    if (par)
        hf_approx(c, "gpt_neox: the parallel residual (attention and MLP from one input, use_parallel_residual) "
                     "is modelled as sequential blocks");
    return 0;
}

/* BloomConfig: hidden_size (n_embed), n_layer, n_head, vocab_size; a 4h
 * GeLU MLP, biases, tied embeddings (BloomForCausalLM), hidden_dropout
 * (0). No position table: ALiBi adds a per-head linear bias to the scores
 * inside the attention kernel (one add a score, named as not counted), and
 * the embeddings' own LayerNorm (word_embeddings_layernorm, 2 h
 * parameters) is named as not counted either. */
static int read_bloom(hf_ctx *c, classic_sizes *z)
{
    char p[256];
    const char *hk = hf_lookup(c, "hidden_size", p, sizeof p) ? "hidden_size" : "n_embed";
    if (hf_int(c, hk, 1, 0, 1, API_MAX_DIM, &z->h) < 0 ||
        hf_int(c, "n_layer", 1, 0, 1, API_MAX_LAYERS, &z->layers) < 0 ||
        hf_int(c, "n_head", 1, 0, 1, API_MAX_DIM, &z->heads) < 0 ||
        hf_int(c, "vocab_size", 1, 0, 1, API_MAX_DIM, &z->vocab) < 0 ||
        read_dropout(c, "hidden_dropout", 0.0, &z->dropout) < 0)
        return -1;
    z->kv_heads = z->heads;
    z->ffn = 4 * z->h;
    z->act = "gelu";
    z->tie = 1;
    z->bias = z->qkv_bias = 1;
    z->position = "none";
    hf_approx(c, "bloom: ALiBi's bias on the attention scores (inside the kernel) is not counted");
    hf_approx(c, "bloom: the embeddings' LayerNorm (word_embeddings_layernorm) is not counted");
    return 0;
}

/* FalconConfig: hidden_size, num_hidden_layers, num_attention_heads,
 * num_kv_heads (with new_decoder_architecture; else multi_query: one KV
 * head, default true), ffn_hidden_size (null: 4 h), bias (false), alibi
 * (false: RoPE over the whole head), parallel_attn (true: attention and
 * MLP from one input, named as modelled sequentially; the older layout,
 * new_decoder_architecture false, has one LayerNorm where the IR counts
 * two), tie_word_embeddings (true), hidden_dropout (0). */
static int read_falcon(hf_ctx *c, classic_sizes *z)
{
    char p[256];
    int newarch = 0, mq = 1, alibi = 0, par = 1;
    json_t *ffn = hf_lookup(c, "ffn_hidden_size", p, sizeof p);
    if (read_llama_keys(c, NULL, z) < 0 || hf_bool(c, "new_decoder_architecture", 0, &newarch) < 0 ||
        hf_bool(c, "multi_query", 1, &mq) < 0 || hf_bool(c, "bias", 0, &z->bias) < 0 ||
        hf_bool(c, "alibi", 0, &alibi) < 0 || hf_bool(c, "parallel_attn", 1, &par) < 0 ||
        hf_bool(c, "tie_word_embeddings", 1, &z->tie) < 0 || read_dropout(c, "hidden_dropout", 0.0, &z->dropout) < 0)
        return -1;
    z->ffn = 4 * z->h;
    if (ffn && !json_is_null(ffn) && hf_int(c, "ffn_hidden_size", 1, 0, 1, API_MAX_DIM, &z->ffn) < 0) return -1;
    z->kv_heads = mq ? 1 : z->heads;
    if (newarch && hf_int(c, "num_kv_heads", 0, z->heads, 1, API_MAX_DIM, &z->kv_heads) < 0) return -1;
    if (z->kv_heads > z->heads || z->heads % z->kv_heads) {
        hf_lookup(c, newarch ? "num_kv_heads" : "multi_query", p, sizeof p);
        hf_fail(c, p, "the KV heads (%lld) must divide the heads (%lld)", z->kv_heads, z->heads);
        return -1;
    }
    z->act = hf_activation(c, "activation", "gelu");
    z->qkv_bias = z->bias;
    z->position = alibi ? "none" : "rope";
    if (alibi) hf_approx(c, "falcon: ALiBi's bias on the attention scores (inside the kernel) is not counted");
    if (par)
        hf_approx(c, "falcon: the parallel attention and MLP (parallel_attn) is modelled as sequential blocks");
    if (par && !newarch)
        hf_approx(c, "falcon: the one LayerNorm a layer of the older layout (new_decoder_architecture false) is "
                     "counted as two");
    return 0;
}

/* The model description of a classic family's config. */
json_t *hf_classic_ir(hf_ctx *c, json_t *hf, const char *mts, int idx)
{
    classic_sizes z;
    memset(&z, 0, sizeof z);
    classic_family fam = classic_families[idx].fam;
    int rc = fam == C_OPT      ? read_opt(c, &z)
             : fam == C_NEOX   ? read_neox(c, &z)
             : fam == C_BLOOM  ? read_bloom(c, &z)
             : fam == C_FALCON ? read_falcon(c, &z)
                               : read_gpt2(c, fam == C_BIGCODE, &z);
    if (rc < 0 || c->failed) return NULL;
    char p[256];
    if (z.h % z.heads) {
        hf_lookup(c, fam == C_OPT || fam == C_NEOX || fam == C_FALCON ? "num_attention_heads" : "n_head", p, sizeof p);
        hf_fail(c, p, "the heads (%lld) must divide the hidden size (%lld)", z.heads, z.h);
        return NULL;
    }
    json_t *attn = json_pack("{s:s,s:I,s:I,s:I,s:i,s:b}", "type", "mha", "n_heads", (json_int_t)z.heads,
                             "n_kv_heads", (json_int_t)z.kv_heads, "head_dim", (json_int_t)(z.h / z.heads),
                             "window", 0, "qkv_bias", z.qkv_bias);
    if (attn && z.rotary_dim > 0 && z.rotary_dim < z.h / z.heads)
        json_object_set_new(attn, "rotary_dim", json_integer(z.rotary_dim));
    json_t *mlp = json_pack("{s:s,s:I,s:b,s:s}", "type", "dense", "ffn_dim", (json_int_t)z.ffn, "gated", 0,
                            "activation", z.act);
    /* Name: _name_or_path when the file carries one, else the model_type. */
    char name[MFU_NAME_LEN];
    const char *np = json_string_value(json_object_get(hf, "_name_or_path"));
    snprintf(name, sizeof name, "%s", (np && *np) ? np : mts);
    json_t *jname = json_string(name);
    if (!jname) jname = json_string(mts);
    json_t *ir = json_pack("{s:o,s:I,s:I,s:b,s:s,s:s,s:b,s:b,s:[{s:I,s:o,s:o}]}", "name", jname, "d_model",
                           (json_int_t)z.h, "vocab", (json_int_t)z.vocab, "tie_embeddings", z.tie, "norm",
                           "layernorm", "position", z.position, "bias", z.bias, "dropout", z.dropout, "layers",
                           "count", (json_int_t)z.layers, "attention", attn, "mlp", mlp);
    /* the learned table's rows; informative where positions are RoPE */
    if (ir && z.maxpos > 0) json_object_set_new(ir, "max_positions", json_integer(z.maxpos));
    if (ir && c->approx) json_object_set(ir, "approximations", c->approx);
    return ir;
}
