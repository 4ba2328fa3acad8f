/* core/model.c -- parameter and forward-FLOP counts of the model IR.
 *
 * Counting rules (FLOPs = 2 x multiply-accumulates, Narayanan et al. 2021
 * appendix: "a matmul A(m x k) . X(k x n) costs 2mkn FLOPs"):
 *   - a linear layer of W in x out costs 2*in*out FLOPs per token;
 *   - attention core (scores QK^T and attention over values) costs
 *     2*d_qk + 2*d_v FLOPs per head per attended (query, key) pair;
 *   - elementwise work (norms, activations, RoPE) is not model FLOPs (the
 *     papers' formulas omit it; it appears as memory-bound ops in the roofline).
 */
#include "model.h"

#include <math.h>

int64_t mfu_model_layers(const mfu_model *m)
{
    int64_t n = 0;
    for (int r = 0; r < m->n_runs; r++) n += m->runs[r].count;
    return n;
}

static double norm_params(const mfu_model *m, double width)
{
    /* LayerNorm has a scale and a bias, RMSNorm a scale only. */
    return m->norm == MFU_NORM_LAYER ? 2.0 * width : width;
}

/* Weight-matrix parameters of the attention block (what costs FLOPs). */
static double attn_matrix_params(const mfu_model *m, const mfu_attention *a)
{
    double h = (double)m->d_model;
    switch (a->kind) {
    case MFU_ATTN_MHA: {
        /* q_proj doubles with an output gate (Qwen3-Next Qwen3NextAttention:
         * q_proj hidden -> heads x head_dim x 2, half of it the gate) */
        double q = (double)(a->n_heads * a->head_dim);
        double kv = (double)(a->n_kv_heads * a->head_dim);
        return h * ((a->output_gate ? 2.0 : 1.0) * q + 2.0 * kv) + q * h;
    }
    case MFU_ATTN_MLA: {
        /* DeepSeek-V2 paper sec. 2.1.2 / HF modeling_deepseek: q_a, q_b (or q),
         * kv_a_proj_with_mqa, kv_b_proj, o_proj. */
        double nh = (double)a->n_heads;
        double dqk = (double)(a->qk_nope_head_dim + a->qk_rope_head_dim);
        double q = a->q_lora_rank > 0
                       ? h * (double)a->q_lora_rank + (double)a->q_lora_rank * nh * dqk
                       : h * nh * dqk;
        double kv_a = h * (double)(a->kv_lora_rank + a->qk_rope_head_dim);
        double kv_b = (double)a->kv_lora_rank * nh * (double)(a->qk_nope_head_dim + a->v_head_dim);
        double o = nh * (double)a->v_head_dim * h;
        return q + kv_a + kv_b + o;
    }
    case MFU_ATTN_GLA: {
        /* fla GatedLinearAttention: q (h x key_dim), k (h x key_dim/g), v (h x value_dim/g),
         * optional g (h x value_dim), gk low rank (h x r + r x key_dim/g), o (value_dim x h). */
        double g = (double)(a->n_heads / (a->n_kv_heads > 0 ? a->n_kv_heads : a->n_heads));
        double kd = (double)a->key_dim, vd = (double)a->value_dim;
        double p = h * kd + h * kd / g + h * vd / g + vd * h;
        if (a->output_gate) p += h * vd;
        p += h * (double)a->gate_rank + (double)a->gate_rank * kd / g;
        return p;
    }
    case MFU_ATTN_GDN: {
        /* Gated DeltaNet (Yang et al. 2024, arXiv:2412.06464 sec. 3; HF
         * modeling_qwen3_next.py Qwen3NextGatedDeltaNet): in_proj_qkvz
         * h x (2 key_dim + 2 value_dim) (z only with the output gate),
         * in_proj_ba h x 2 n_heads (beta and the decay input a), the
         * depthwise causal conv over q, k, v (conv_size weights per channel,
         * no bias: one multiply-add per weight per token, like a matrix
         * weight), out_proj value_dim x h. */
        double kd = (double)a->key_dim, vd = (double)a->value_dim, H = (double)a->n_heads;
        double p = h * (2.0 * kd + vd) + h * 2.0 * H + vd * h;
        if (a->output_gate) p += h * vd;
        p += (2.0 * kd + vd) * (double)a->conv_size;
        return p;
    }
    }
    return 0.0;
}

double mfu_attn_params(const mfu_model *m, const mfu_attention *a)
{
    double p = attn_matrix_params(m, a);
    double h = (double)m->d_model;
    switch (a->kind) {
    case MFU_ATTN_MHA: {
        double q = (double)(a->n_heads * a->head_dim);
        double kv = (double)(a->n_kv_heads * a->head_dim);
        if (a->qkv_bias || m->bias) p += (a->output_gate ? 2.0 : 1.0) * q + 2.0 * kv;
        if (m->bias || a->out_bias) p += h; /* output projection bias */
        /* gpt-oss GptOssAttention.sinks: one learned logit per head */
        if (a->sinks) p += (double)a->n_heads;
        /* Qwen3 q_norm / k_norm: RMSNorm weights over head_dim each; the
         * Llama 4 L2 norm has none */
        if (a->qk_norm == MFU_QKN_RMS) p += 2.0 * (double)a->head_dim;
        break;
    }
    case MFU_ATTN_MLA:
        /* RMSNorms on the q and kv latents. */
        if (a->q_lora_rank > 0) p += (double)a->q_lora_rank;
        p += (double)a->kv_lora_rank;
        break;
    case MFU_ATTN_GLA:
        /* fla FusedRMSNormGated over head_v_dim. */
        p += (double)(a->value_dim / (a->n_heads > 0 ? a->n_heads : 1));
        break;
    case MFU_ATTN_GDN:
        /* A_log and dt_bias per value head; the gated RMSNorm over
         * head_v_dim (Qwen3NextGatedDeltaNet) */
        p += 2.0 * (double)a->n_heads;
        if (a->output_gate) p += (double)(a->value_dim / (a->n_heads > 0 ? a->n_heads : 1));
        break;
    }
    return p;
}

static double mlp_mats(const mfu_mlp *p) { return p->gated ? 3.0 : 2.0; }

/* One routed expert: its matrices and, with biases (gpt-oss GptOssExperts:
 * gate_up_proj_bias 2I, down_proj_bias h), its bias vectors. */
static double expert_params(const mfu_model *m, const mfu_mlp *p)
{
    double h = (double)m->d_model, I = (double)p->expert_ffn_dim;
    double w = mlp_mats(p) * h * I;
    if (p->bias) w += (p->gated ? 2.0 : 1.0) * I + h;
    return w;
}

double mfu_expert_params(const mfu_model *m, const mfu_mlp *p)
{
    if (p->kind != MFU_MLP_MOE) return 0.0;
    return (double)p->n_experts * expert_params(m, p);
}

double mfu_mlp_params(const mfu_model *m, const mfu_mlp *p, int active_only)
{
    double h = (double)m->d_model;
    if (p->kind == MFU_MLP_DENSE) {
        double w = mlp_mats(p) * h * (double)p->ffn_dim;
        if (m->bias) w += (p->gated ? 2.0 : 1.0) * (double)p->ffn_dim + h;
        return w;
    }
    double router = h * (double)p->n_experts + (p->bias ? (double)p->n_experts : 0.0);
    double experts = active_only ? (double)p->top_k * expert_params(m, p) : mfu_expert_params(m, p);
    double shared = (double)p->n_shared_experts * mlp_mats(p) * h * (double)p->shared_ffn_dim;
    /* Qwen2MoeSparseMoeBlock.shared_expert_gate: Linear(h, 1, bias=False) */
    if (p->shared_gate && p->n_shared_experts > 0) shared += h;
    return router + experts + shared;
}

void mfu_run_params(const mfu_model *m, int r, double *total, double *active)
{
    const mfu_layer_run *run = &m->runs[r];
    /* two norms a layer, four with post-norms (F-OP-POSTNORM) */
    double norms = m->post_norms ? 4.0 : 2.0;
    double common = mfu_attn_params(m, &run->attn) + norms * norm_params(m, (double)m->d_model);
    if (total) *total = common + mfu_mlp_params(m, &run->mlp, 0);
    if (active) *active = common + mfu_mlp_params(m, &run->mlp, 1);
}

void mfu_model_params(const mfu_model *m, mfu_params *out)
{
    double h = (double)m->d_model, v = (double)m->vocab;
    double total = 0.0, active = 0.0;
    for (int r = 0; r < m->n_runs; r++) {
        double t, a;
        mfu_run_params(m, r, &t, &a);
        total += t * (double)m->runs[r].count;
        active += a * (double)m->runs[r].count;
    }
    out->embedding = v * h;
    if (m->position == MFU_POS_LEARNED) out->embedding += (double)m->max_positions * h;
    out->head = m->tie_embeddings ? 0.0 : v * h;
    double fin = norm_params(m, h);
    out->total = total + out->embedding + out->head + fin;
    out->active = active + out->embedding + out->head + fin;
}

double mfu_attn_pairs(int64_t s, int64_t window, mfu_convention conv)
{
    double S = (double)s;
    double w = (window > 0 && window < s) ? (double)window : S;
    if (conv == MFU_CONV_NONE) return 0.0;
    if (conv == MFU_CONV_FULL) return S * w;
    /* causal: query i (1-based) sees min(i, w) keys. */
    return w * (w + 1.0) / 2.0 + (S - w) * w;
}

/* F-OP-CHUNK: chunked attention (Llama 4 attention_chunk_size; transformers
 * masking_utils chunked_overlay: query i sees key j iff j <= i and
 * j // chunk == i // chunk) is block-diagonal: floor(s / c) whole chunks of
 * c tokens and a remainder of s mod c, each attended on its own. */
double mfu_attn_pairs_chunked(int64_t s, int64_t window, int64_t chunk, mfu_convention conv)
{
    if (chunk <= 0 || chunk >= s) return mfu_attn_pairs(s, window, conv);
    int64_t n = s / chunk, r = s % chunk;
    double p = (double)n * mfu_attn_pairs(chunk, window, conv);
    if (r > 0) p += mfu_attn_pairs(r, window, conv);
    return p;
}

double mfu_attn_layer_pairs(const mfu_attention *a, int64_t s, mfu_convention conv)
{
    if (a->kind != MFU_ATTN_MHA) return mfu_attn_pairs(s, 0, conv);
    return mfu_attn_pairs_chunked(s, a->window, a->chunk, conv);
}

/* F-OP-GDN: FLOPs per token per head of the chunked gated delta rule (fla
 * chunk_gated_delta_rule_fwd: chunk_scaled_dot_kkt A = beta K K^T, solve_tril
 * (I + A)^-1, recompute_w_u W = A beta K, U = A beta V, chunk_fwd_h
 * V' = U - W S and S += K^T V', chunk_fwd_o O = Q S + (Q K^T) V'; Yang et al.
 * 2024 "Gated Delta Networks", arXiv:2412.06464 sec. 3.3, with the WY form
 * of "Parallelizing Linear Transformers with the Delta Rule", arXiv:2406.06484
 * sec. 3). Per chunk of C tokens: the four C x C x d_k / d_v block products
 * (K K^T, W, Q K^T: 2C^2 d_k each; U, (QK^T)V': 2C^2 d_v each), the
 * triangular inverse (C^3/3, Golub & Van Loan sec. 3.1), and the state
 * products V' and O (2C d_k d_v each) and the update (2C d_k d_v). `useful`
 * keeps only the lower triangles of the block products (the causal pairs,
 * as for GLA). */
double mfu_gdn_flops_per_token_head(double C, double dk, double dv, int useful)
{
    double intra = 6.0 * C * dk + 4.0 * C * dv;
    if (useful) intra *= 0.5;
    return intra + C * C / 3.0 + 6.0 * dk * dv;
}

/* Attention-core forward FLOPs per token (model FLOPs under conv). */
static double attn_core_flops_per_token(const mfu_attention *a, int64_t s, mfu_convention conv)
{
    if (conv == MFU_CONV_NONE || s <= 0) return 0.0;
    switch (a->kind) {
    case MFU_ATTN_MHA: {
        double ctx = mfu_attn_layer_pairs(a, s, conv) / (double)s;
        return 2.0 * (double)a->n_heads * (2.0 * (double)a->head_dim) * ctx;
    }
    case MFU_ATTN_MLA: {
        double ctx = mfu_attn_pairs(s, 0, conv) / (double)s;
        double dqk = (double)(a->qk_nope_head_dim + a->qk_rope_head_dim);
        return 2.0 * (double)a->n_heads * (dqk + (double)a->v_head_dim) * ctx;
    }
    case MFU_ATTN_GLA: {
        /* Chunked GLA (Yang et al. 2024, "Gated Linear Attention Transformers with
         * Hardware-Efficient Training", sec. 4): per head, per token,
         *   intra-chunk  Q K^T (C keys, d_k)  + A V (C values, d_v): 2C(d_k + d_v),
         *                only the causal half useful: C(d_k + d_v);
         *   inter-chunk  q S (d_k x d_v)  + state update K^T V: 4 d_k d_v.
         * Linear in s: the state replaces the s^2 term. C is capped at s. */
        double H = (double)a->n_heads;
        double dk = (double)a->key_dim / H, dv = (double)a->value_dim / H;
        double C = (double)(a->chunk_size < s ? a->chunk_size : s);
        double intra = 2.0 * C * (dk + dv);
        if (conv == MFU_CONV_CAUSAL) intra *= 0.5;
        return H * (intra + 4.0 * dk * dv);
    }
    case MFU_ATTN_GDN: {
        /* F-OP-GDN with the kernel's heads (n_heads value heads; q and k
         * repeated to them, modeling_qwen3_next.py repeat_interleave) */
        double H = (double)a->n_heads;
        double kvh = (double)(a->n_kv_heads > 0 ? a->n_kv_heads : a->n_heads);
        double dk = (double)a->key_dim / kvh, dv = (double)a->value_dim / H;
        double C = (double)(a->chunk_size < s ? a->chunk_size : s);
        return H * mfu_gdn_flops_per_token_head(C, dk, dv, conv == MFU_CONV_CAUSAL);
    }
    }
    return 0.0;
}

double mfu_run_flops_per_token_fwd(const mfu_model *m, int r, int64_t seq_len, mfu_convention conv)
{
    const mfu_layer_run *run = &m->runs[r];
    double h = (double)m->d_model;
    double f = 2.0 * attn_matrix_params(m, &run->attn);
    f += attn_core_flops_per_token(&run->attn, seq_len, conv);
    const mfu_mlp *p = &run->mlp;
    if (p->kind == MFU_MLP_DENSE) {
        f += 2.0 * mlp_mats(p) * h * (double)p->ffn_dim;
    } else {
        f += 2.0 * h * (double)p->n_experts; /* router */
        f += 2.0 * (double)p->top_k * mlp_mats(p) * h * (double)p->expert_ffn_dim;
        f += 2.0 * (double)p->n_shared_experts * mlp_mats(p) * h * (double)p->shared_ffn_dim;
        if (p->shared_gate && p->n_shared_experts > 0) f += 2.0 * h; /* shared_expert_gate */
    }
    return f;
}

double mfu_model_flops_per_token_fwd(const mfu_model *m, int64_t seq_len, mfu_convention conv)
{
    double f = 0.0, h = (double)m->d_model;
    for (int r = 0; r < m->n_runs; r++)
        f += (double)m->runs[r].count * mfu_run_flops_per_token_fwd(m, r, seq_len, conv);
    f += 2.0 * h * (double)m->vocab; /* LM head (logits) */
    /* F-OP-MTP: each depth a copy of the last layer, its projection of
     * [norm(embedding); norm(hidden)] (2h -> h) and its own logits, as
     * Megatron counts them (training.py num_floating_point_operations:
     * the last layer's kind times mtp_num_layers, "MTP eh proj" 2h x h,
     * logits x (mtp_num_layers + 1)) */
    if (m->mtp_layers > 0 && m->n_runs > 0)
        f += (double)m->mtp_layers * (mfu_run_flops_per_token_fwd(m, m->n_runs - 1, seq_len, conv) +
                                      2.0 * 2.0 * h * h + 2.0 * h * (double)m->vocab);
    return f;
}
