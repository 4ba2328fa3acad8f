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
        double q = (double)(a->n_heads * a->head_dim);
        double kv = (double)(a->n_kv_heads * a->head_dim);
        return h * (q + 2.0 * kv) + q * h;
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
        if (a->qkv_bias || m->bias) p += q + 2.0 * kv;
        if (m->bias) p += h; /* output projection bias */
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
    }
    return p;
}

static double mlp_mats(const mfu_mlp *p) { return p->gated ? 3.0 : 2.0; }

double mfu_expert_params(const mfu_model *m, const mfu_mlp *p)
{
    if (p->kind != MFU_MLP_MOE) return 0.0;
    return (double)p->n_experts * mlp_mats(p) * (double)m->d_model * (double)p->expert_ffn_dim;
}

double mfu_mlp_params(const mfu_model *m, const mfu_mlp *p, int active_only)
{
    double h = (double)m->d_model;
    if (p->kind == MFU_MLP_DENSE) {
        double w = mlp_mats(p) * h * (double)p->ffn_dim;
        if (m->bias) w += (p->gated ? 2.0 : 1.0) * (double)p->ffn_dim + h;
        return w;
    }
    double router = h * (double)p->n_experts;
    double experts = active_only
                         ? (double)p->top_k * mlp_mats(p) * h * (double)p->expert_ffn_dim
                         : mfu_expert_params(m, p);
    double shared = (double)p->n_shared_experts * mlp_mats(p) * h * (double)p->shared_ffn_dim;
    return router + experts + shared;
}

void mfu_run_params(const mfu_model *m, int r, double *total, double *active)
{
    const mfu_layer_run *run = &m->runs[r];
    double common = mfu_attn_params(m, &run->attn) + 2.0 * norm_params(m, (double)m->d_model);
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

/* Attention-core forward FLOPs per token (model FLOPs under conv). */
static double attn_core_flops_per_token(const mfu_attention *a, int64_t s, mfu_convention conv)
{
    if (conv == MFU_CONV_NONE || s <= 0) return 0.0;
    switch (a->kind) {
    case MFU_ATTN_MHA: {
        double ctx = mfu_attn_pairs(s, a->window, conv) / (double)s;
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
    }
    return f;
}

double mfu_model_flops_per_token_fwd(const mfu_model *m, int64_t seq_len, mfu_convention conv)
{
    double f = 0.0;
    for (int r = 0; r < m->n_runs; r++)
        f += (double)m->runs[r].count * mfu_run_flops_per_token_fwd(m, r, seq_len, conv);
    f += 2.0 * (double)m->d_model * (double)m->vocab; /* LM head (logits) */
    return f;
}
