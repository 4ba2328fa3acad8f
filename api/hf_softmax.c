/* api/hf_softmax.c -- the softmax-attention families' attention (heads,
 * biases, partial rotary, sliding windows) and the MLPs (dense, Mixtral,
 * Qwen MoE, gpt-oss) of the HuggingFace importer (api/hf.c has the
 * sources per family; api/hf_int.h). */
#include "hf_int.h"

/* Heads, KV heads and head_dim of a softmax-attention layer. */
static int attn_heads(hf_ctx *c, hf_family fam, const hf_common *cm, long long *heads_out, long long *kv_out,
                      long long *hd_out)
{
    long long heads, kv, hd;
    char ptr[256];
    if (hf_int(c, "num_attention_heads", 1, 0, 1, API_MAX_DIM, &heads) < 0) return -1;
    if (hf_int(c, "num_key_value_heads", 0, heads, 1, API_MAX_DIM, &kv) < 0) return -1;
    if (heads % kv != 0) {
        hf_lookup(c, "num_key_value_heads", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s (%lld) must divide num_attention_heads (%lld)",
                "num_key_value_heads", kv, heads);
        return -1;
    }
    /* Config-class defaults when head_dim is absent: Qwen3Config and
     * Qwen3MoeConfig 128, GemmaConfig and Gemma2Config 256; the others
     * (modeling_llama.py: getattr(config, "head_dim", hidden // heads))
     * hidden / heads. */
    long long hd_default = 0;
    if (fam == F_QWEN3 || fam == F_QWEN3_MOE) hd_default = 128;
    if (fam == F_GEMMA || fam == F_GEMMA2 || fam == F_GEMMA3) hd_default = 256;
    /* GptOssConfig head_dim 64, Llama4TextConfig 128, Qwen3NextConfig 256 */
    if (fam == F_GPT_OSS) hd_default = 64;
    if (fam == F_LLAMA4) hd_default = 128;
    if (fam == F_QWEN3_NEXT) hd_default = 256;
    int r = hf_int(c, "head_dim", 0, hd_default, 1, API_MAX_DIM, &hd);
    if (r < 0) return -1;
    if (r == 0 && hd_default == 0) {
        if (cm->h % heads != 0) {
            hf_lookup(c, "num_attention_heads", ptr, sizeof ptr);
            hf_fail(c, ptr, "%s (%lld) must divide hidden_size (%lld) when head_dim is absent",
                    "num_attention_heads", heads, cm->h);
            return -1;
        }
        hd = cm->h / heads;
    }
    if (heads * hd > API_MAX_DIM) {
        hf_lookup(c, "head_dim", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s x num_attention_heads = %lld exceeds %lld", "head_dim", heads * hd,
                (long long)API_MAX_DIM);
        return -1;
    }
    *heads_out = heads;
    *kv_out = kv;
    *hd_out = hd;
    return 0;
}

static int attn_biases(hf_ctx *c, hf_family fam, int *qkv_bias, int *out_bias)
{
    /* Biases on q/k/v: Qwen2 / Qwen2-MoE always (modeling_qwen2.py
     * q_proj(bias=True)), Phi-3 never (qkv_proj bias=False); the others
     * follow attention_bias (default false; GptOssConfig true). The output
     * projection too where the modelling code passes attention_bias to
     * o_proj (LlamaAttention, Qwen3Attention, GemmaAttention,
     * GptOssAttention, Llama4TextAttention, Qwen3NextAttention); Qwen2,
     * Mistral and Phi-3 have none there. */
    *qkv_bias = 0;
    *out_bias = 0;
    if (fam == F_QWEN2 || fam == F_QWEN2_MOE) *qkv_bias = 1;
    else if (fam != F_PHI3 && hf_bool(c, "attention_bias", fam == F_GPT_OSS, qkv_bias) < 0) return -1;
    if (fam == F_LLAMA || fam == F_QWEN3 || fam == F_QWEN3_MOE || fam == F_GEMMA || fam == F_GEMMA2 ||
        fam == F_GEMMA3 || fam == F_GPT_OSS || fam == F_LLAMA4 || fam == F_QWEN3_NEXT)
        *out_bias = *qkv_bias;
    return 0;
}

static int attn_rotary(hf_ctx *c, hf_family fam, long long hd, long long *rotary_dim)
{
    char ptr[256];
    /* Partial rotary (Phi3Config / Qwen3NextConfig partial_rotary_factor,
     * also inside rope_parameters in newer files): RoPE rotates
     * int(head_dim x factor) dims. Qwen3-Next's default is 0.25. */
    *rotary_dim = 0;
    if (fam == F_PHI3 || fam == F_QWEN3_NEXT) {
        double prf;
        int got = hf_num(c, "partial_rotary_factor", fam == F_QWEN3_NEXT ? 0.25 : 1.0, 1.0, &prf);
        if (got < 0) return -1;
        if (got == 0) {
            json_t *rp = hf_lookup(c, "rope_parameters", ptr, sizeof ptr);
            json_t *f = json_is_object(rp) ? json_object_get(rp, "partial_rotary_factor") : NULL;
            if (json_is_number(f) && json_number_value(f) > 0 && json_number_value(f) <= 1.0)
                prf = json_number_value(f);
        }
        *rotary_dim = (long long)((double)hd * prf);
        if (*rotary_dim < 1) *rotary_dim = 1;
        if (*rotary_dim >= hd) *rotary_dim = 0;
    }
    return 0;
}

/* Which layers slide (sl[i]) and the window. */
static int attn_windows(hf_ctx *c, hf_family fam, const hf_common *cm, unsigned char *sl, long long *window)
{
    switch (fam) {
    case F_MISTRAL:
    case F_MIXTRAL:
    case F_PHI3:
        /* modeling_mistral.py / modeling_mixtral.py: sliding_window (null =
         * none) on every layer; modular_phi3.py the same (Phi3Attention
         * passes sliding_window to every layer's attention) */
        if (hf_int(c, "sliding_window", 0, 0, 0, API_MAX_SEQ, window) < 0) return -1;
        for (long long i = 0; i < cm->n_layers; i++) sl[i] = *window > 0;
        break;
    case F_QWEN2:
    case F_QWEN2_MOE:
    case F_QWEN3:
    case F_QWEN3_MOE: {
        /* configuration_qwen2.py: sliding_window applies only when
         * use_sliding_window; layer_types, when given, names the sliding
         * layers, else layers i >= max_window_layers slide. */
        int use_sw, lt;
        long long mwl;
        if (hf_bool(c, "use_sliding_window", 0, &use_sw) < 0) return -1;
        if ((lt = hf_layer_types(c, cm->n_layers, sl)) < 0) return -1;
        if (!use_sw) {
            for (long long i = 0; i < cm->n_layers; i++) sl[i] = 0;
            break;
        }
        if (hf_int(c, "sliding_window", 0, 0, 0, API_MAX_SEQ, window) < 0) return -1;
        if (lt == 0) {
            if (hf_int(c, "max_window_layers", 0, 28, 0, API_MAX_LAYERS, &mwl) < 0) return -1;
            for (long long i = 0; i < cm->n_layers; i++) sl[i] = i >= mwl;
        }
        break;
    }
    case F_GEMMA2:
    case F_GPT_OSS: {
        /* modeling_gemma2.py: sliding window on even layers (layer_idx % 2
         * == 0), global attention on odd ones; default window 4096.
         * GptOssConfig: layer_types default "sliding_attention" if
         * (i + 1) % 2 else "full_attention" (even layers slide), window 128. */
        int lt;
        if (hf_int(c, "sliding_window", 0, fam == F_GPT_OSS ? 128 : 4096, 0, API_MAX_SEQ, window) < 0)
            return -1;
        if ((lt = hf_layer_types(c, cm->n_layers, sl)) < 0) return -1;
        if (lt == 0)
            for (long long i = 0; i < cm->n_layers; i++) sl[i] = (i % 2) == 0;
        break;
    }
    case F_GEMMA3: {
        /* Gemma3TextConfig: layer_types, else "sliding_attention" unless
         * (i + 1) % sliding_window_pattern == 0 (default 6: five local
         * layers to one global), sliding_window default 4096 */
        int lt;
        long long pat;
        if (hf_int(c, "sliding_window", 0, 4096, 0, API_MAX_SEQ, window) < 0) return -1;
        if ((lt = hf_layer_types(c, cm->n_layers, sl)) < 0) return -1;
        if (lt == 0) {
            if (hf_int(c, "sliding_window_pattern", 0, 6, 1, API_MAX_LAYERS, &pat) < 0) return -1;
            for (long long i = 0; i < cm->n_layers; i++) sl[i] = (i + 1) % pat != 0;
        }
        break;
    }
    default:
        break; /* llama, gemma: full attention everywhere */
    }
    return 0;
}

/* Softmax-attention families: attention of layer i into ls[i]. */
void hf_softmax_attention(hf_ctx *c, hf_family fam, const hf_common *cm, layer_spec *ls)
{
    long long heads, kv, hd, window = 0, rotary_dim;
    int qkv_bias, out_bias;
    if (attn_heads(c, fam, cm, &heads, &kv, &hd) || attn_biases(c, fam, &qkv_bias, &out_bias) ||
        attn_rotary(c, fam, hd, &rotary_dim))
        return;
    /* Sliding windows. */
    unsigned char *sl = api_calloc((size_t)cm->n_layers, 1);
    if (!sl) {
        api_fail(c->st, 500, c->cfg_ptr, "out of memory");
        c->failed++;
        return;
    }
    if (attn_windows(c, fam, cm, sl, &window) == 0) {
        for (long long i = 0; i < cm->n_layers; i++) {
            ls[i].attn_kind = L_MHA;
            ls[i].n_heads = heads;
            ls[i].n_kv_heads = kv;
            ls[i].head_dim = hd;
            ls[i].window = (sl[i] && window > 0) ? window : 0;
            ls[i].qkv_bias = qkv_bias;
            ls[i].out_bias = out_bias;
            ls[i].rotary_dim = rotary_dim;
            /* Qwen3Attention / Qwen3MoeAttention / Qwen3NextAttention: q_norm and
             * k_norm, RMSNorm over head_dim */
            if (fam == F_QWEN3 || fam == F_QWEN3_MOE || fam == F_QWEN3_NEXT) ls[i].qk_norm = QKN_RMS;
            /* Gemma3Attention: q_norm and k_norm (Gemma3RMSNorm over head_dim) */
            if (fam == F_GEMMA3) ls[i].qk_norm = QKN_RMS;
            /* GptOssAttention.sinks */
            if (fam == F_GPT_OSS) ls[i].sinks = 1;
            /* Qwen3NextAttention: q_proj doubled, output * sigmoid(gate) */
            if (fam == F_QWEN3_NEXT) ls[i].output_gate = 1;
        }
    }
    free(sl);
}

void hf_dense_mlp(hf_ctx *c, long long n_layers, layer_spec *ls)
{
    long long ffn;
    if (hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &ffn) < 0) return;
    for (long long i = 0; i < n_layers; i++) {
        ls[i].mlp_kind = L_DENSE;
        ls[i].ffn_dim = ffn;
    }
}

/* Routed experts and top-k, checked together. */
int hf_moe_counts(hf_ctx *c, const char *experts_key, long long *e, long long *k)
{
    char ptr[256];
    if (hf_int(c, experts_key, 1, 0, 1, API_MAX_EXPERTS, e) < 0) return -1;
    if (hf_int(c, "num_experts_per_tok", 1, 0, 1, API_MAX_EXPERTS, k) < 0) return -1;
    if (*k > *e) {
        hf_lookup(c, "num_experts_per_tok", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s (%lld) exceeds the number of experts (%lld)", "num_experts_per_tok",
                *k, *e);
        return -1;
    }
    return 0;
}

/* Layer l's MLP an MoE of e routed experts of width ffn, top k (shared
 * experts, biases and gates are the family's). */
void hf_moe_layer(layer_spec *l, long long e, long long k, long long ffn)
{
    l->mlp_kind = L_MOE;
    l->n_experts = e;
    l->top_k = k;
    l->expert_ffn_dim = ffn;
}

/* Every layer MoE: num_local_experts experts of intermediate_size, top
 * num_experts_per_tok; `bias`: the experts and the router have biases. -1
 * on error. */
static int moe_every_layer(hf_ctx *c, long long n_layers, layer_spec *ls, int bias)
{
    long long e, k, ffn;
    if (hf_moe_counts(c, "num_local_experts", &e, &k) < 0) return -1;
    if (hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &ffn) < 0) return -1;
    for (long long i = 0; i < n_layers; i++) {
        hf_moe_layer(&ls[i], e, k, ffn);
        ls[i].moe_bias = bias;
    }
    return 0;
}

/* Mixtral (modeling_mixtral.py MixtralSparseMoeBlock): every layer is MoE,
 * num_local_experts experts of intermediate_size each. */
void hf_mixtral_mlp(hf_ctx *c, long long n_layers, layer_spec *ls)
{
    moe_every_layer(c, n_layers, ls, 0);
}

/* Qwen2-MoE / Qwen3-MoE / Qwen3-Next (modeling_qwen2_moe.py
 * Qwen2MoeDecoderLayer): layer i is MoE iff i not in mlp_only_layers and
 * num_experts > 0 and (i + 1) % decoder_sparse_step == 0; else a dense MLP of
 * intermediate_size. Qwen2-MoE and Qwen3-Next add one shared expert of
 * shared_expert_intermediate_size, scaled by its sigmoid shared_expert_gate
 * (Linear(hidden, 1): Qwen2MoeSparseMoeBlock). */
void hf_qwen_moe_mlp(hf_ctx *c, hf_family fam, long long n_layers, layer_spec *ls)
{
    char ptr[256];
    long long e, k = 0, moe_ffn = 0, step, dense_ffn = 0, shared = 0;
    if (hf_int(c, "num_experts", 1, 0, 0, API_MAX_EXPERTS, &e) < 0) return;
    if (e > 0) {
        if (hf_moe_counts(c, "num_experts", &e, &k) < 0) return;
        if (hf_int(c, "moe_intermediate_size", 1, 0, 1, API_MAX_DIM, &moe_ffn) < 0) return;
        if ((fam == F_QWEN2_MOE || fam == F_QWEN3_NEXT) &&
            hf_int(c, "shared_expert_intermediate_size", 1, 0, 0, API_MAX_DIM, &shared) < 0)
            return;
    }
    if (hf_int(c, "decoder_sparse_step", 0, 1, 1, API_MAX_LAYERS, &step) < 0) return;

    unsigned char *dense = api_calloc((size_t)n_layers, 1);
    if (!dense) {
        api_fail(c->st, 500, c->cfg_ptr, "out of memory");
        c->failed++;
        return;
    }
    json_t *mol = hf_lookup(c, "mlp_only_layers", ptr, sizeof ptr);
    if (mol && !json_is_array(mol)) {
        hf_fail(c, ptr, "%s must be an array of layer indices", "mlp_only_layers");
        goto out;
    }
    for (size_t j = 0; mol && j < json_array_size(mol); j++) {
        long long idx;
        if (hf_as_int(json_array_get(mol, j), &idx) != 0 || idx < 0 || idx >= n_layers) {
            char p[300];
            snprintf(p, sizeof p, "%s/%zu", ptr, j);
            hf_fail(c, p, "%s entries must be layer indices in [0, %lld)", "mlp_only_layers",
                    n_layers);
            goto out;
        }
        dense[idx] = 1;
    }
    int any_dense = 0;
    for (long long i = 0; i < n_layers; i++) {
        if (e == 0 || (i + 1) % step != 0) dense[i] = 1;
        any_dense |= dense[i];
    }
    if (any_dense && hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &dense_ffn) < 0)
        goto out;
    for (long long i = 0; i < n_layers; i++) {
        if (dense[i]) {
            ls[i].mlp_kind = L_DENSE;
            ls[i].ffn_dim = dense_ffn;
        } else {
            hf_moe_layer(&ls[i], e, k, moe_ffn);
            ls[i].n_shared_experts = shared > 0 ? 1 : 0;
            ls[i].shared_ffn_dim = shared > 0 ? shared : moe_ffn;
            ls[i].shared_gate = shared > 0;
        }
    }
out:
    free(dense);
}

/* gpt-oss (modular_gpt_oss.py GptOssMLP): every layer MoE, num_local_experts
 * experts of intermediate_size with biases (gate_up_proj_bias,
 * down_proj_bias), a router with a bias, top num_experts_per_tok. */
void hf_gpt_oss_mlp(hf_ctx *c, long long n_layers, layer_spec *ls)
{
    if (moe_every_layer(c, n_layers, ls, 1) < 0) return;
    /* GptOssExperts._apply_gate: gate.clamp(max=7), up.clamp(-7, 7),
     * (up + 1) * gate * sigmoid(1.702 gate) */
    hf_approx(c, "gpt_oss: the experts' clamped SwiGLU ((up + 1) * gate * sigmoid(1.702 gate), "
                 "limit 7) is counted as a SwiGLU (a few elementwise FLOPs per element less)");
}
