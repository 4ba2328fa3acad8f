/* api/hf.c -- HuggingFace config.json -> our model IR (docs/model-ir.md).
 *
 * The file is taken verbatim: unknown keys are ignored, a multimodal wrapper's
 * "text_config" object is read in place of the top level (keys it lacks, e.g.
 * tie_word_embeddings or vocab_size, fall back to the top level). Every field
 * that we read is validated; a bad one is a 422 whose JSON pointer names it.
 *
 * Layer rules follow the modelling code of each family (transformers
 * models/<family>/modeling_<family>.py unless noted; docs/model-ir.md
 * "HuggingFace config.json"):
 *
 *   llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2,
 *   gemma3_text (and gemma3's text_config):
 *     softmax attention (MHA/GQA/MQA). head_dim = config.head_dim when given
 *     (Qwen3: 128 with hidden 2048 and 32 heads), else hidden/heads.
 *     num_key_value_heads absent or null => = num_attention_heads.
 *   deepseek_v2, deepseek_v3: MLA (q_lora_rank null => no q low-rank path,
 *     DeepSeek-V2-Lite). config.head_dim is the RoPE dim there (transformers
 *     sets head_dim = qk_rope_head_dim) and is ignored.
 *   gla: flash-linear-attention GLAConfig / GatedLinearAttention
 *     (fla/models/gla/configuration_gla.py, fla/layers/gla.py), with optional
 *     softmax-attention layers listed in config.attn.layers.
 *   phi3: Phi3Attention (fused qkv_proj and o_proj without biases, head_dim =
 *     hidden / heads, partial_rotary_factor), sliding_window on every layer
 *     (null = none), Phi3MLP (fused gate_up_proj: a gated MLP).
 *   gpt_oss: GptOssAttention (q/k/v/o biases = attention_bias, a learned
 *     sink logit per head), layer_types sliding / full (default: even layers
 *     slide), GptOssMLP (router with bias, num_local_experts experts with
 *     biases, top num_experts_per_tok) on every layer.
 *   llama4 / llama4_text (configuration_llama4.py Llama4TextConfig,
 *     modeling_llama4.py): no_rope_layers[i] = 1 uses RoPE and chunked
 *     attention (attention_chunk_size), 0 is a NoPE layer with full
 *     attention (default: NoPE every no_rope_layer_interval = 4th layer);
 *     the L2 qk norm on the RoPE layers (use_qk_norm); MoE on moe_layers
 *     (default every interleave_moe_layer_step-th layer, from step - 1):
 *     num_local_experts of intermediate_size + one shared expert of the same
 *     width; other layers a dense MLP of intermediate_size_mlp.
 *   qwen3_next (modular_qwen3_next.py): layer_types linear_attention /
 *     full_attention (default: full every full_attention_interval = 4th);
 *     linear layers Gated DeltaNet (Qwen3NextGatedDeltaNet), full layers
 *     gated attention (q_proj doubled, sigmoid output gate, q/k RMSNorm,
 *     partial_rotary_factor 0.25); the Qwen2-MoE MoE rule with one shared
 *     expert and its sigmoid gate.
 *
 * What an importer cannot express in the IR is said in the IR's
 * "approximations" (docs/model-ir.md), never dropped silently.
 *
 * Consecutive identical layers are merged into one run {count, attention, mlp}
 * (DeepSeek-V3: 3 dense + 58 MoE = 2 runs).
 */
#include "hf_int.h"

#define HF_SUPPORTED                                                                  \
    "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v2, "      \
    "deepseek_v3, gla, gemma, gemma2, gemma3_text, phi3, gpt_oss, llama4, qwen3_next, "      \
    "gpt2, gpt_bigcode, opt, gpt_neox, bloom, falcon"



/* ---- one layer, then runs ----------------------------------------------- */



static const char *const QKN_NAMES[] = {"none", "rmsnorm", "l2"};

/* A linear attention's fields (Gated DeltaNet, GLA), in the IR's order:
 * type, n_heads, n_kv_heads, key_dim, value_dim, the kind's own integer
 * (conv_size, gate_rank), chunk_size, output_gate. */
static void linear_attn_json(json_t *a, const char *type, const layer_spec *l, const char *own, int64_t own_v)
{
    json_object_set_new(a, "type", json_string(type));
    json_object_set_new(a, "n_heads", json_integer(l->n_heads));
    json_object_set_new(a, "n_kv_heads", json_integer(l->n_kv_heads));
    json_object_set_new(a, "key_dim", json_integer(l->key_dim));
    json_object_set_new(a, "value_dim", json_integer(l->value_dim));
    json_object_set_new(a, own, json_integer(own_v));
    json_object_set_new(a, "chunk_size", json_integer(l->chunk_size));
    json_object_set_new(a, "output_gate", json_boolean(l->output_gate));
}

static json_t *attn_json(const layer_spec *l)
{
    json_t *a = json_object();
    switch (l->attn_kind) {
    case L_MHA:
        json_object_set_new(a, "type", json_string("mha"));
        json_object_set_new(a, "n_heads", json_integer(l->n_heads));
        json_object_set_new(a, "n_kv_heads", json_integer(l->n_kv_heads));
        json_object_set_new(a, "head_dim", json_integer(l->head_dim));
        json_object_set_new(a, "window", json_integer(l->window));
        json_object_set_new(a, "qkv_bias", json_boolean(l->qkv_bias));
        json_object_set_new(a, "chunk", json_integer(l->chunk));
        if (l->rotary_dim > 0) json_object_set_new(a, "rotary_dim", json_integer(l->rotary_dim));
        json_object_set_new(a, "nope", json_boolean(l->nope));
        json_object_set_new(a, "sinks", json_boolean(l->sinks));
        json_object_set_new(a, "out_bias", json_boolean(l->out_bias));
        json_object_set_new(a, "output_gate", json_boolean(l->output_gate));
        json_object_set_new(a, "qk_norm", json_string(QKN_NAMES[l->qk_norm]));
        break;
    case L_GDN:
        linear_attn_json(a, "gdn", l, "conv_size", l->conv_size);
        break;
    case L_MLA:
        json_object_set_new(a, "type", json_string("mla"));
        json_object_set_new(a, "n_heads", json_integer(l->n_heads));
        json_object_set_new(a, "q_lora_rank", json_integer(l->q_lora_rank));
        json_object_set_new(a, "kv_lora_rank", json_integer(l->kv_lora_rank));
        json_object_set_new(a, "qk_nope_head_dim", json_integer(l->qk_nope_head_dim));
        json_object_set_new(a, "qk_rope_head_dim", json_integer(l->qk_rope_head_dim));
        json_object_set_new(a, "v_head_dim", json_integer(l->v_head_dim));
        break;
    default:
        linear_attn_json(a, "gla", l, "gate_rank", l->gate_rank);
        break;
    }
    return a;
}

static json_t *mlp_json(const layer_spec *l, const char *act)
{
    json_t *m = json_object();
    if (l->mlp_kind == L_DENSE) {
        json_object_set_new(m, "type", json_string("dense"));
        json_object_set_new(m, "ffn_dim", json_integer(l->ffn_dim));
    } else {
        json_object_set_new(m, "type", json_string("moe"));
        json_object_set_new(m, "n_experts", json_integer(l->n_experts));
        json_object_set_new(m, "top_k", json_integer(l->top_k));
        json_object_set_new(m, "expert_ffn_dim", json_integer(l->expert_ffn_dim));
        json_object_set_new(m, "n_shared_experts", json_integer(l->n_shared_experts));
        json_object_set_new(m, "shared_ffn_dim", json_integer(l->shared_ffn_dim));
        json_object_set_new(m, "capacity_factor", json_real(1.0));
        json_object_set_new(m, "route_nodes", json_integer(l->route_nodes));
        json_object_set_new(m, "bias", json_boolean(l->moe_bias));
        json_object_set_new(m, "shared_gate", json_boolean(l->shared_gate));
    }
    /* Every supported family uses a gated MLP (SwiGLU / GeGLU). */
    json_object_set_new(m, "gated", json_true());
    json_object_set_new(m, "activation", json_string(act));
    return m;
}

/* Merge consecutive identical layers into runs. NULL (error recorded) when
 * the pattern has more runs than the core holds. */
static json_t *layers_json(hf_ctx *c, const layer_spec *ls, long long n, const char *act)
{
    json_t *runs = json_array();
    long long i = 0;
    while (i < n) {
        long long j = i + 1;
        while (j < n && memcmp(&ls[j], &ls[i], sizeof *ls) == 0) j++;
        if (json_array_size(runs) >= MFU_MAX_RUNS) {
            char ptr[256];
            hf_lookup(c, "num_hidden_layers", ptr, sizeof ptr);
            hf_fail(c, ptr, "%s: the layer pattern has more than %lld runs of identical layers",
                    "num_hidden_layers", (long long)MFU_MAX_RUNS);
            json_decref(runs);
            return NULL;
        }
        json_t *run = json_object();
        json_object_set_new(run, "count", json_integer(j - i));
        json_object_set_new(run, "attention", attn_json(&ls[i]));
        json_object_set_new(run, "mlp", mlp_json(&ls[i], act));
        json_array_append_new(runs, run);
        i = j;
    }
    return runs;
}

/* ---- the families -------------------------------------------------------- */



static const struct {
    const char *name;
    hf_family fam;
} hf_families[] = {
    {"llama", F_LLAMA},       {"mistral", F_MISTRAL},         {"mixtral", F_MIXTRAL},
    {"qwen2", F_QWEN2},       {"qwen2_moe", F_QWEN2_MOE},     {"qwen3", F_QWEN3},
    {"qwen3_moe", F_QWEN3_MOE}, {"deepseek_v2", F_DEEPSEEK_V2}, {"deepseek_v3", F_DEEPSEEK_V3},
    {"gla", F_GLA},           {"gemma", F_GEMMA},             {"gemma2", F_GEMMA2},
    {"phi3", F_PHI3},         {"gpt_oss", F_GPT_OSS},         {"llama4", F_LLAMA4},
    {"llama4_text", F_LLAMA4}, {"qwen3_next", F_QWEN3_NEXT}, {"gemma3_text", F_GEMMA3},
    {"gemma3", F_GEMMA3},
};



/* ---- entry point --------------------------------------------------------- */

/* The config's family by model_type (the text config's own, else the
 * wrapper's); -1 when absent or not supported (st says so). */
static int hf_family_index(hf_ctx *c, const char **mts_out, api_status *st)
{
    char mptr[256];
    json_t *mt = hf_lookup(c, "model_type", mptr, sizeof mptr);
    const char *mts = json_string_value(mt);
    int fi = -1;
    for (size_t i = 0; mts && i < sizeof hf_families / sizeof hf_families[0]; i++)
        if (!strcmp(mts, hf_families[i].name)) fi = (int)i;
    if (fi < 0) {
        if (!mt) api_fail(st, 422, mptr, "model_type is required; supported: " HF_SUPPORTED);
        else if (!mts) api_fail(st, 422, mptr, "model_type must be a string; supported: " HF_SUPPORTED);
        else
            api_fail(st, 422, mptr, "unsupported model_type \"%.64s\"; supported: " HF_SUPPORTED,
                     mts);
        return -1;
    }
    *mts_out = mts;
    return fi;
}

/* Every layer of a family into ls; the MLP's activation. */
static const char *hf_layers(hf_ctx *c, hf_family fam, const hf_common *cm, layer_spec *ls, int *any_softmax)
{
    const char *act = "silu";
    *any_softmax = 1;
    switch (fam) {
    case F_DEEPSEEK_V2:
    case F_DEEPSEEK_V3:
        hf_deepseek_layers(c, fam, cm, ls);
        act = hf_activation(c, "hidden_act", "silu");
        break;
    case F_GLA:
        hf_gla_layers(c, cm, ls, any_softmax);
        act = hf_activation(c, "hidden_act", "swish");
        break;
    default:
        hf_softmax_attention(c, fam, cm, ls);
        if (c->failed) break;
        if (fam == F_MIXTRAL) hf_mixtral_mlp(c, cm->n_layers, ls);
        else if (fam == F_GPT_OSS) hf_gpt_oss_mlp(c, cm->n_layers, ls);
        else if (fam == F_LLAMA4) hf_llama4_layers(c, cm, ls);
        else if (fam == F_QWEN2_MOE || fam == F_QWEN3_MOE || fam == F_QWEN3_NEXT)
            hf_qwen_moe_mlp(c, fam, cm->n_layers, ls);
        else hf_dense_mlp(c, cm->n_layers, ls);
        if (!c->failed && fam == F_QWEN3_NEXT) hf_qwen3_next_linear(c, cm, ls);
        if (fam == F_GEMMA2)
            /* Gemma2Attention soft-caps the scores (attn_logit_softcapping)
             * inside the attention kernel (FlashAttention's softcap, splash
             * attention's attn_logits_soft_cap): a tanh per score, whose
             * cost in the kernel no benchmark here measures. The post-norms
             * and the logits' soft-cap are modelled (api_hf_to_ir) */
            hf_approx(c, "gemma2: the tanh soft-cap of the attention scores (inside the fused attention kernel) is "
                         "not modelled");
        if (fam == F_GEMMA3 && c->top != c->cfg)
            /* Gemma3ForConditionalGeneration: a SigLIP vision tower and its
             * projector beside the language model (configuration_gemma3.py
             * vision_config): the text model is what trains here */
            hf_approx(c, "gemma3: the vision tower (vision_config) is not modelled; the language model is");
        if (fam == F_GEMMA || fam == F_GEMMA2 || fam == F_GEMMA3) {
            /* GemmaMLP: gate/up/down with hidden_activation, falling back
             * to hidden_act (configuration_gemma.py). GeGLU. */
            char p[256];
            act = hf_lookup(c, "hidden_activation", p, sizeof p)
                      ? hf_activation(c, "hidden_activation", "gelu_pytorch_tanh")
                      : hf_activation(c, "hidden_act", "gelu_pytorch_tanh");
        } else {
            act = hf_activation(c, "hidden_act", "silu");
        }
        break;
    }
    return act;
}

/* The model description (docs/model-ir.md) of an imported config. */
static json_t *hf_ir_json(hf_ctx *c, json_t *hf, const char *mts, const hf_common *cm, long long maxpos, int tie,
                          int any_softmax, json_t *layers)
{
    /* Name: _name_or_path when the file carries one, else the model_type. */
    char name[MFU_NAME_LEN];
    const char *np = json_string_value(json_object_get(hf, "_name_or_path"));
    snprintf(name, sizeof name, "%s", (np && *np) ? np : mts);
    json_t *jname = json_string(name); /* NULL if truncation split a UTF-8 char */
    if (!jname) jname = json_string(mts);

    json_t *ir = json_object();
    json_object_set_new(ir, "name", jname);
    json_object_set_new(ir, "d_model", json_integer(cm->h));
    json_object_set_new(ir, "vocab", json_integer(cm->vocab));
    json_object_set_new(ir, "tie_embeddings", json_boolean(tie));
    json_object_set_new(ir, "norm", json_string("rmsnorm")); /* all families: RMSNorm */
    json_object_set_new(ir, "position", json_string(any_softmax ? "rope" : "none"));
    if (maxpos > 0) json_object_set_new(ir, "max_positions", json_integer(maxpos));
    json_object_set_new(ir, "bias", json_false());
    json_object_set_new(ir, "dropout", json_false());
    json_object_set_new(ir, "layers", layers);
    if (c->approx) json_object_set_new(ir, "approximations", c->approx);
    return ir;
}

json_t *api_hf_to_ir(json_t *hf, const char *ptr, api_status *st)
{
    hf_ctx c;
    memset(&c, 0, sizeof c);
    c.st = st;
    if (!ptr) ptr = "";
    if (!json_is_object(hf)) {
        api_fail(st, 422, ptr, "hf_config must be a JSON object (a config.json)");
        return NULL;
    }
    c.top = c.cfg = hf;
    snprintf(c.top_ptr, sizeof c.top_ptr, "%.200s", ptr);
    snprintf(c.cfg_ptr, sizeof c.cfg_ptr, "%.200s", ptr);

    /* Multimodal wrappers (Llava, Mistral3, ...) nest the language model. */
    json_t *tc = json_object_get(hf, "text_config");
    if (tc && !json_is_null(tc)) {
        if (!json_is_object(tc)) {
            char p[256];
            snprintf(p, sizeof p, "%.200s/text_config", ptr);
            api_fail(st, 422, p, "text_config must be an object");
            return NULL;
        }
        c.cfg = tc;
        snprintf(c.cfg_ptr, sizeof c.cfg_ptr, "%.190s/text_config", ptr);
    }

    /* the pre-Llama families (api/hf_classic.c) */
    {
        char p[256];
        const char *t = json_string_value(hf_lookup(&c, "model_type", p, sizeof p));
        int ci = t ? hf_classic_index(t) : -1;
        if (ci >= 0) {
            json_t *ir = hf_classic_ir(&c, hf, t, ci);
            json_decref(c.approx);
            return c.failed ? (json_decref(ir), NULL) : ir;
        }
    }
    const char *mts = NULL;
    int fi = hf_family_index(&c, &mts, st);
    if (fi < 0) return NULL;
    hf_family fam = hf_families[fi].fam;

    hf_common cm;
    long long maxpos = 0;
    if (hf_int(&c, "hidden_size", 1, 0, 1, API_MAX_DIM, &cm.h) < 0 ||
        hf_int(&c, "num_hidden_layers", 1, 0, 1, API_MAX_LAYERS, &cm.n_layers) < 0 ||
        hf_int(&c, "vocab_size", fam != F_GEMMA3, fam == F_GEMMA3 ? 262208 : 0, 1, API_MAX_DIM, &cm.vocab) < 0)
        return NULL;
    /* (Gemma3TextConfig's vocab_size default 262,208: google/gemma-3-12b-it's
     * sparse text_config leaves it out) */
    /* max_position_embeddings: informative only (RoPE has no table). */
    {
        char p[256];
        json_t *v = hf_lookup(&c, "max_position_embeddings", p, sizeof p);
        long long x;
        if (v && hf_as_int(v, &x) == 0 && x >= 1 && x <= API_MAX_SEQ) maxpos = x;
    }

    /* tie_word_embeddings: PretrainedConfig default true, but every family
     * here overrides the default: false except Gemma/Gemma2 (true). */
    int tie;
    if (hf_bool(&c, "tie_word_embeddings", fam == F_GEMMA || fam == F_GEMMA2 || fam == F_GEMMA3, &tie) < 0)
        return NULL;

    layer_spec *ls = api_calloc((size_t)cm.n_layers, sizeof *ls);
    if (!ls) {
        api_fail(st, 500, c.cfg_ptr, "out of memory");
        return NULL;
    }
    int any_softmax = 1;
    const char *act = hf_layers(&c, fam, &cm, ls, &any_softmax);
    if (c.failed) {
        free(ls);
        json_decref(c.approx);
        return NULL;
    }
    json_t *layers = layers_json(&c, ls, cm.n_layers, act);
    free(ls);
    if (!layers) {
        json_decref(c.approx);
        return NULL;
    }

    json_t *ir = hf_ir_json(&c, hf, mts, &cm, maxpos, tie, any_softmax, layers);
    if (ir && (fam == F_GEMMA2 || fam == F_GEMMA3)) {
        /* modeling_gemma2.py Gemma2DecoderLayer (and Gemma3DecoderLayer):
         * post_attention_layernorm and post_feedforward_layernorm on each
         * block's output (F-OP-POSTNORM); Gemma2ForCausalLM soft-caps the
         * logits when final_logit_softcapping is set (configuration_gemma2.py
         * default 30.0, Gemma3TextConfig's None; null turns it off;
         * F-OP-SOFTCAP) */
        const char *key = "final_logit_softcapping";
        json_t *cap = json_object_get(c.cfg, key);
        if (!cap && c.top != c.cfg) cap = json_object_get(c.top, key);
        if (cap && !json_is_null(cap) && !json_is_number(cap)) {
            char p[256];
            hf_lookup(&c, key, p, sizeof p);
            hf_fail(&c, p, "%s must be a number or null", key);
            json_decref(ir);
            return NULL;
        }
        json_object_set_new(ir, "post_norms", json_true());
        if ((!cap && fam == F_GEMMA2) || (json_is_number(cap) && json_number_value(cap) > 0))
            json_object_set_new(ir, "logit_softcap", json_true());
    }
    if (ir && fam == F_DEEPSEEK_V3) {
        /* num_nextn_predict_layers: the MTP depths the checkpoint carries
         * (its model.layers.61.* weights; DeepSeek-V3 report 2.2: depth 1
         * in training), trained with the model (F-OP-MTP) */
        long long mtp = 0;
        if (hf_int(&c, "num_nextn_predict_layers", 0, 0, 0, API_MAX_MTP_LAYERS, &mtp) < 0) {
            json_decref(ir);
            return NULL;
        }
        if (mtp > 0) json_object_set_new(ir, "mtp_layers", json_integer(mtp));
    }
    return ir;
}
