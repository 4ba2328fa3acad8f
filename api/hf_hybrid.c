/* api/hf_hybrid.c -- the families whose layers differ: Llama 4 (NoPE and
 * chunked layers, interleaved MoE), Qwen3-Next (Gated DeltaNet and gated
 * attention), DeepSeek V2/V3 (MLA, first dense layers), GLA (gated linear
 * attention, softmax hybrids) (api/hf.c has the sources per family;
 * api/hf_int.h). */
#include "hf_int.h"

/* A list of per-layer integers, e.g. Llama 4's no_rope_layers or moe_layers.
 * `as_mask`: the entries are 0/1 per layer (length num_hidden_layers), else
 * layer indices. Returns 1 when present and valid (out filled), 0 when
 * absent or empty, -1 on error. */
static int hf_layer_list(hf_ctx *c, const char *key, long long n_layers, int as_mask,
                         unsigned char *out)
{
    char ptr[256];
    json_t *a = hf_lookup(c, key, ptr, sizeof ptr);
    if (!a || (json_is_array(a) && json_array_size(a) == 0)) return 0;
    if (!json_is_array(a) || (as_mask && (long long)json_array_size(a) != n_layers)) {
        if (as_mask)
            hf_fail(c, ptr, "%s must be an array of 0/1 with num_hidden_layers (%lld) entries", key,
                    n_layers);
        else
            hf_fail(c, ptr, "%s must be an array of layer indices", key);
        return -1;
    }
    if (!as_mask) memset(out, 0, (size_t)n_layers);
    for (size_t j = 0; j < json_array_size(a); j++) {
        long long x;
        int ok = hf_as_int(json_array_get(a, j), &x) == 0;
        if (ok && as_mask) ok = x == 0 || x == 1;
        if (ok && !as_mask) ok = x >= 0 && x < n_layers;
        if (!ok) {
            char q[300];
            snprintf(q, sizeof q, "%s/%zu", ptr, j);
            if (as_mask) hf_fail(c, q, "%s entries must be 0 or 1", key);
            else hf_fail(c, q, "%s entries must be layer indices in [0, %lld)", key, n_layers);
            return -1;
        }
        if (as_mask) out[j] = (unsigned char)x;
        else out[x] = 1;
    }
    return 1;
}

/* Llama 4 (configuration_llama4.py Llama4TextConfig.__post_init__,
 * modeling_llama4.py Llama4TextAttention / Llama4TextDecoderLayer), on the
 * softmax-attention layers hf_softmax_attention() built:
 *   use_rope(i) = no_rope_layers[i], default int((i + 1) % interval != 0)
 *     with no_rope_layer_interval 4; layer_types default "chunked_attention"
 *     where RoPE is used, "full_attention" on the NoPE layers; chunked
 *     layers attend within attention_chunk_size (default 8192) tokens;
 *   the L2 qk norm (Llama4TextL2Norm, no weights) where use_qk_norm and RoPE;
 *   MoE on moe_layers, default range(step - 1, L, step) with
 *     interleave_moe_layer_step: num_local_experts experts of
 *     intermediate_size, top num_experts_per_tok, plus one shared expert of
 *     intermediate_size (Llama4TextMoe.shared_expert); the other layers a
 *     dense MLP of intermediate_size_mlp. */
void hf_llama4_layers(hf_ctx *c, const hf_common *cm, layer_spec *ls)
{
    long long n = cm->n_layers, interval, chunk = 8192, step, e, k, moe_ffn, dense_ffn = 0;
    int qkn;
    unsigned char *rope = api_calloc((size_t)n, 1), *moe = api_calloc((size_t)n, 1);
    unsigned char *chunked = api_calloc((size_t)n, 1);
    if (!rope || !moe || !chunked) {
        api_fail(c->st, 500, c->cfg_ptr, "out of memory");
        c->failed++;
        goto out;
    }
    int r = hf_layer_list(c, "no_rope_layers", n, 1, rope);
    if (r < 0) goto out;
    if (r == 0) {
        if (hf_int(c, "no_rope_layer_interval", 0, 4, 1, API_MAX_LAYERS, &interval) < 0) goto out;
        for (long long i = 0; i < n; i++) rope[i] = (i + 1) % interval != 0;
    }
    /* attention_chunk_size: null in the file means no chunking */
    {
        json_t *raw = json_object_get(c->cfg, "attention_chunk_size");
        if (raw && json_is_null(raw)) chunk = 0;
        else if (hf_int(c, "attention_chunk_size", 0, 8192, 0, API_MAX_SEQ, &chunk) < 0) goto out;
    }
    int lt = hf_layer_kinds(c, n, "chunked_attention", chunked);
    if (lt < 0) goto out;
    if (!lt)
        for (long long i = 0; i < n; i++) chunked[i] = rope[i];
    if (hf_bool(c, "use_qk_norm", 1, &qkn) < 0) goto out;

    if (hf_moe_counts(c, "num_local_experts", &e, &k) < 0) goto out;
    if (hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &moe_ffn) < 0) goto out;
    r = hf_layer_list(c, "moe_layers", n, 0, moe);
    if (r < 0) goto out;
    if (r == 0) {
        if (hf_int(c, "interleave_moe_layer_step", 0, 1, 1, API_MAX_LAYERS, &step) < 0) goto out;
        for (long long i = step - 1; i < n; i += step) moe[i] = 1;
    }
    int any_dense = 0;
    for (long long i = 0; i < n; i++) any_dense |= !moe[i];
    if (any_dense && hf_int(c, "intermediate_size_mlp", 1, 0, 1, API_MAX_DIM, &dense_ffn) < 0)
        goto out;
    for (long long i = 0; i < n; i++) {
        layer_spec *l = &ls[i];
        l->nope = !rope[i];
        l->chunk = chunked[i] ? chunk : 0;
        l->qk_norm = (qkn && rope[i]) ? QKN_L2 : QKN_NONE;
        if (moe[i]) {
            hf_moe_layer(l, e, k, moe_ffn);
            l->n_shared_experts = 1;
            l->shared_ffn_dim = moe_ffn;
        } else {
            l->mlp_kind = L_DENSE;
            l->ffn_dim = dense_ffn;
        }
    }
    {
        /* Llama4TextAttention: attn_temperature_tuning scales q on NoPE
         * layers; Llama4TextMoe scales the routed inputs by the sigmoid
         * router score before the experts */
        int tt = 0;
        for (long long i = 0; i < n; i++) tt |= !rope[i];
        if (tt)
            hf_approx(c, "llama4: the attention temperature tuning of the NoPE layers (a per-token "
                         "scale of q) is not counted");
        hf_approx(c, "llama4: routed inputs are scaled by the router score before the experts; "
                     "memory counted as for scores applied in the experts' activation");
        if (json_object_get(c->top, "vision_config"))
            hf_approx(c, "llama4: the vision encoder and projector (vision_config) are not modelled: "
                         "text model only");
    }
out:
    free(rope);
    free(moe);
    free(chunked);
}

/* Qwen3-Next (configuration_qwen3_next.py, modular_qwen3_next.py
 * Qwen3NextGatedDeltaNet): layer_types, default "linear_attention" if
 * (i + 1) % full_attention_interval else "full_attention" (interval 4); a
 * linear layer is Gated DeltaNet with linear_num_value_heads value heads of
 * linear_value_head_dim, linear_num_key_heads q/k heads of
 * linear_key_head_dim, a causal conv of linear_conv_kernel_dim over q, k, v,
 * and the z-gated RMSNorm; chunk 64 (fla chunk_gated_delta_rule). The full
 * layers were built by hf_softmax_attention(). */
void hf_qwen3_next_linear(hf_ctx *c, const hf_common *cm, layer_spec *ls)
{
    char ptr[256];
    long long n = cm->n_layers, interval, vh, kh, kd, vd, conv;
    unsigned char *lin = api_calloc((size_t)n, 1);
    if (!lin) {
        api_fail(c->st, 500, c->cfg_ptr, "out of memory");
        c->failed++;
        return;
    }
    int lt = hf_layer_kinds(c, n, "linear_attention", lin);
    if (lt < 0) goto out;
    if (!lt) {
        if (hf_int(c, "full_attention_interval", 0, 4, 1, API_MAX_LAYERS, &interval) < 0) goto out;
        for (long long i = 0; i < n; i++) lin[i] = (i + 1) % interval != 0;
    }
    if (hf_int(c, "linear_num_value_heads", 0, 32, 1, API_MAX_DIM, &vh) < 0 ||
        hf_int(c, "linear_num_key_heads", 0, 16, 1, API_MAX_DIM, &kh) < 0 ||
        hf_int(c, "linear_key_head_dim", 0, 128, 1, API_MAX_DIM, &kd) < 0 ||
        hf_int(c, "linear_value_head_dim", 0, 128, 1, API_MAX_DIM, &vd) < 0 ||
        hf_int(c, "linear_conv_kernel_dim", 0, 4, 1, 64, &conv) < 0)
        goto out;
    if (vh % kh) {
        hf_lookup(c, "linear_num_key_heads", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s (%lld) must divide linear_num_value_heads (%lld)",
                "linear_num_key_heads", kh, vh);
        goto out;
    }
    if (kh * kd > API_MAX_DIM || vh * vd > API_MAX_DIM) {
        hf_lookup(c, "linear_num_value_heads", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s: the linear-attention widths exceed %lld", "linear_num_value_heads",
                (long long)API_MAX_DIM);
        goto out;
    }
    for (long long i = 0; i < n; i++) {
        if (!lin[i]) continue;
        layer_spec *l = &ls[i];
        l->attn_kind = L_GDN;
        l->n_heads = vh;
        l->n_kv_heads = kh;
        l->key_dim = kh * kd;
        l->value_dim = vh * vd;
        l->conv_size = conv;
        l->chunk_size = GLA_CHUNK_SIZE;
        l->output_gate = 1;
        l->head_dim = l->window = l->qkv_bias = l->chunk = l->rotary_dim = 0;
        l->nope = l->sinks = l->out_bias = l->qk_norm = 0;
    }
    hf_approx(c, "qwen3_next: the multi-token-prediction module (mtp.* weights) is not modelled");
out:
    free(lin);
}

/* DeepSeek-V2/V3 (hub modeling_deepseek.py DeepseekV2DecoderLayer): MLA in
 * every layer; layer i is MoE iff n_routed_experts is not null and
 * i >= first_k_dense_replace and i % moe_layer_freq == 0, else a dense MLP of
 * intermediate_size. Shared experts: the code builds one MLP of width
 * n_shared_experts x moe_intermediate_size; we keep n_shared_experts experts
 * of moe_intermediate_size each (same parameters and FLOPs).
 * num_nextn_predict_layers (V3's multi-token-prediction module, used in
 * training but not part of the 671B main model) is the IR's mtp_layers
 * (api/hf.c, F-OP-MTP). */
void hf_deepseek_layers(hf_ctx *c, hf_family fam, const hf_common *cm, layer_spec *ls)
{
    char ptr[256];
    long long heads, q_rank, kv_rank, nope, rope, vhd;
    if (hf_int(c, "num_attention_heads", 1, 0, 1, API_MAX_DIM, &heads) < 0) return;
    /* q_lora_rank must be present; null means no q low-rank path (V2-Lite). */
    if (!json_object_get(c->cfg, "q_lora_rank")) {
        snprintf(ptr, sizeof ptr, "%.200s/q_lora_rank", c->cfg_ptr);
        hf_fail(c, ptr, "%s is required (null for no low-rank query path)", "q_lora_rank");
        return;
    }
    if (hf_int(c, "q_lora_rank", 0, 0, 1, API_MAX_DIM, &q_rank) < 0) return;
    if (hf_int(c, "kv_lora_rank", 1, 0, 1, API_MAX_DIM, &kv_rank) < 0) return;
    if (hf_int(c, "qk_nope_head_dim", 1, 0, 1, API_MAX_DIM, &nope) < 0) return;
    if (hf_int(c, "qk_rope_head_dim", 1, 0, 0, API_MAX_DIM, &rope) < 0) return;
    if (hf_int(c, "v_head_dim", 1, 0, 1, API_MAX_DIM, &vhd) < 0) return;
    if (nope + rope < 1) {
        hf_lookup(c, "qk_nope_head_dim", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s + qk_rope_head_dim must be positive", "qk_nope_head_dim");
        return;
    }
    /* config.head_dim is qk_rope_head_dim here: deliberately not read. */

    long long e = 0, k = 0, moe_ffn = 0, n_shared = 0, fkd, freq, dense_ffn = 0;
    char eptr[256];
    int has_moe = hf_lookup(c, "n_routed_experts", eptr, sizeof eptr) != NULL;
    if (has_moe) {
        if (hf_moe_counts(c, "n_routed_experts", &e, &k) < 0) return;
        if (hf_int(c, "moe_intermediate_size", 1, 0, 1, API_MAX_DIM, &moe_ffn) < 0) return;
        if (hf_int(c, "n_shared_experts", 0, 0, 0, API_MAX_EXPERTS, &n_shared) < 0) return;
    }
    /* Absent: the config classes' defaults (DeepseekV3Config 3, V2 0). */
    if (hf_int(c, "first_k_dense_replace", 0, fam == F_DEEPSEEK_V3 ? 3 : 0, 0, API_MAX_LAYERS,
               &fkd) < 0)
        return;
    if (hf_int(c, "moe_layer_freq", 0, 1, 1, API_MAX_LAYERS, &freq) < 0) return;
    /* Device/node-limited routing (DeepSeek-V2 sec. 2.1.3, V3 sec. 2.1.2):
     * topk_method "group_limited_greedy" (V2) or "noaux_tc" (V3) picks experts
     * from topk_group of n_group groups; deployed one group per node, a
     * token's experts then span at most topk_group nodes. "greedy" (V2-Lite)
     * routes freely. */
    long long route_nodes = 0;
    json_t *tm = has_moe ? json_object_get(c->cfg, "topk_method") : NULL;
    if (json_is_string(tm) && (strcmp(json_string_value(tm), "group_limited_greedy") == 0 ||
                               strcmp(json_string_value(tm), "noaux_tc") == 0)) {
        if (hf_int(c, "topk_group", 0, 0, 0, API_MAX_EXPERTS, &route_nodes) < 0) return;
    }
    int any_dense = 0;
    for (long long i = 0; i < cm->n_layers; i++) {
        int moe = has_moe && i >= fkd && i % freq == 0;
        ls[i].mlp_kind = moe ? L_MOE : L_DENSE;
        any_dense |= !moe;
    }
    if (any_dense && hf_int(c, "intermediate_size", 1, 0, 1, API_MAX_DIM, &dense_ffn) < 0) return;
    for (long long i = 0; i < cm->n_layers; i++) {
        ls[i].attn_kind = L_MLA;
        ls[i].n_heads = heads;
        ls[i].q_lora_rank = q_rank;
        ls[i].kv_lora_rank = kv_rank;
        ls[i].qk_nope_head_dim = nope;
        ls[i].qk_rope_head_dim = rope;
        ls[i].v_head_dim = vhd;
        if (ls[i].mlp_kind == L_DENSE) {
            ls[i].ffn_dim = dense_ffn;
        } else {
            hf_moe_layer(&ls[i], e, k, moe_ffn);
            ls[i].n_shared_experts = n_shared;
            ls[i].shared_ffn_dim = moe_ffn;
            ls[i].route_nodes = route_nodes;
        }
    }
}

/* GLA (fla/models/gla/configuration_gla.py, fla/layers/gla.py):
 *   key_dim = int(hidden * expand_k), value_dim = int(hidden * expand_v),
 *   both divisible by num_heads; num_kv_heads (null = num_heads) divides
 *   num_heads; GatedMLP (fla/modules/mlp.py): intermediate_size null =>
 *   I = int(hidden * hidden_ratio * 2 / 3) rounded up to a multiple of 256.
 *   config.attn = {layers, num_heads, num_kv_heads, qkv_bias, window_size}
 *   makes the listed layers softmax attention (fla/layers/attn.py: head_dim
 *   = hidden / num_heads). */
/* A hybrid's softmax-attention layers (flash-linear-attention's GLAConfig.attn: layers,
 * num_heads, num_kv_heads, qkv_bias, window_size) over the GLA ones. */
static void gla_hybrid(hf_ctx *c, const hf_common *cm, layer_spec *ls, int *any_softmax)
{
    char ptr[256];
    json_t *attn = hf_lookup(c, "attn", ptr, sizeof ptr);
    if (!attn) return;
    if (!json_is_object(attn)) {
        hf_fail(c, ptr, "%s must be an object {layers, num_heads, ...} or null", "attn");
        return;
    }
    hf_ctx sub = *c; /* read the attn object's fields with the same helpers */
    sub.cfg = sub.top = attn;
    snprintf(sub.cfg_ptr, sizeof sub.cfg_ptr, "%.200s", ptr);
    snprintf(sub.top_ptr, sizeof sub.top_ptr, "%.200s", ptr);
    sub.failed = 0;
    long long ah, akv, win;
    int bias;
    char p[256];
    json_t *layers = hf_lookup(&sub, "layers", p, sizeof p);
    if (!json_is_array(layers)) {
        hf_fail(c, p, "%s must be an array of layer indices", "attn.layers");
        return;
    }
    if (hf_int(&sub, "num_heads", 1, 0, 1, API_MAX_DIM, &ah) < 0 ||
        hf_int(&sub, "num_kv_heads", 0, ah, 1, API_MAX_DIM, &akv) < 0 ||
        hf_bool(&sub, "qkv_bias", 0, &bias) < 0 ||
        hf_int(&sub, "window_size", 0, 0, 0, API_MAX_SEQ, &win) < 0) {
        c->failed += sub.failed;
        return;
    }
    if (cm->h % ah != 0) {
        hf_lookup(&sub, "num_heads", p, sizeof p);
        hf_fail(c, p, "%s (%lld) must divide hidden_size (%lld)", "attn.num_heads", ah, cm->h);
        return;
    }
    if (ah % akv != 0) {
        hf_lookup(&sub, "num_kv_heads", p, sizeof p);
        hf_fail(c, p, "%s (%lld) must divide attn.num_heads (%lld)", "attn.num_kv_heads", akv, ah);
        return;
    }
    for (size_t j = 0; j < json_array_size(layers); j++) {
        long long idx;
        if (hf_as_int(json_array_get(layers, j), &idx) != 0 || idx < 0 || idx >= cm->n_layers) {
            char q[300];
            snprintf(q, sizeof q, "%s/layers/%zu", ptr, j);
            hf_fail(c, q, "%s entries must be layer indices in [0, %lld)", "attn.layers",
                    cm->n_layers);
            return;
        }
        layer_spec *l = &ls[idx];
        l->attn_kind = L_MHA;
        l->n_heads = ah;
        l->n_kv_heads = akv;
        l->head_dim = cm->h / ah;
        l->window = win;
        l->qkv_bias = bias;
        l->key_dim = l->value_dim = l->gate_rank = l->chunk_size = l->output_gate = 0;
        *any_softmax = 1;
    }
}

void hf_gla_layers(hf_ctx *c, const hf_common *cm, layer_spec *ls, int *any_softmax)
{
    char ptr[256];
    long long heads, kv, ffn, gate_rank;
    double ek, ev, ratio;
    int out_gate;
    *any_softmax = 0;
    if (hf_int(c, "num_heads", 1, 0, 1, API_MAX_DIM, &heads) < 0) return;
    if (hf_int(c, "num_kv_heads", 0, heads, 1, API_MAX_DIM, &kv) < 0) return;
    if (heads % kv != 0) {
        hf_lookup(c, "num_kv_heads", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s (%lld) must divide num_heads (%lld)", "num_kv_heads", kv, heads);
        return;
    }
    if (hf_num(c, "expand_k", 0.5, 64.0, &ek) < 0) return;
    if (hf_num(c, "expand_v", 1.0, 64.0, &ev) < 0) return;
    long long key_dim = (long long)((double)cm->h * ek);
    long long value_dim = (long long)((double)cm->h * ev);
    if (key_dim < heads || key_dim % heads != 0 || key_dim > API_MAX_DIM) {
        hf_lookup(c, "expand_k", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s: key_dim = int(hidden_size * expand_k) = %lld must be a positive "
                        "multiple of num_heads (%lld)", "expand_k", key_dim, heads);
        return;
    }
    if (value_dim < heads || value_dim % heads != 0 || value_dim > API_MAX_DIM) {
        hf_lookup(c, "expand_v", ptr, sizeof ptr);
        hf_fail(c, ptr, "%s: value_dim = int(hidden_size * expand_v) = %lld must be a positive "
                        "multiple of num_heads (%lld)", "expand_v", value_dim, heads);
        return;
    }
    if (hf_bool(c, "use_output_gate", 1, &out_gate) < 0) return;
    if (hf_int(c, "gate_low_rank_dim", 0, GLA_GATE_LOW_RANK_DIM, 1, API_MAX_DIM, &gate_rank) < 0)
        return;
    int r = hf_int(c, "intermediate_size", 0, 0, 1, API_MAX_DIM, &ffn);
    if (r < 0) return;
    if (r == 0) {
        if (hf_num(c, "hidden_ratio", 4.0, 64.0, &ratio) < 0) return;
        ffn = (long long)((double)cm->h * ratio * 2.0 / 3.0);
        ffn = 256 * ((ffn + 255) / 256);
        if (ffn < 1 || ffn > API_MAX_DIM) {
            hf_lookup(c, "hidden_ratio", ptr, sizeof ptr);
            hf_fail(c, ptr, "%s gives an MLP width of %lld, out of range", "hidden_ratio", ffn);
            return;
        }
    }
    for (long long i = 0; i < cm->n_layers; i++) {
        ls[i].attn_kind = L_GLA;
        ls[i].n_heads = heads;
        ls[i].n_kv_heads = kv;
        ls[i].key_dim = key_dim;
        ls[i].value_dim = value_dim;
        ls[i].gate_rank = gate_rank;
        ls[i].chunk_size = GLA_CHUNK_SIZE;
        ls[i].output_gate = out_gate;
        ls[i].mlp_kind = L_DENSE;
        ls[i].ffn_dim = ffn;
    }
    gla_hybrid(c, cm, ls, any_softmax);
}
