/* core/ops_attn.c -- the attention block's operators (docs/model.md F-OP,
 * F-OP-*): projections by kind (MHA/GQA/MQA, MLA, Gated DeltaNet, GLA),
 * the attention kernels (flash, unfused, the chunked linear kernels), the
 * output gates and the output projection. Split from core/ops.c (issue
 * 15); the builder is core/ops_int.h's. */
#include "ops_int.h"

/* Attention core on local shapes. Hq, Hkv: heads on this device; dqk, dv per
 * head; T local queries; Tkv keys/values read (all of the sequence with cp). */
/* F-OP-GDN: the chunked gated delta rule. */
static void core_gdn(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                     double Hq, double Hkv, double dqk, double dv, double T, double Tkv)
{
    double ab = b->ab;
    unsigned t = MFU_TAG_LAYER | MFU_TAG_ATTN_CORE;
    /* F-OP-GDN: the chunked gated delta rule (fla chunk_gated_delta_rule,
     * docs/model.md), Hq value heads with q and k repeated to them.
     * Forward: the block products, the triangular inverse and the state
     * passing (mfu_gdn_flops_per_token_head, all of each C x C block
     * executed) plus the L2 norms of q and k inside the kernel
     * (use_qk_l2norm_in_kernel: ~4 FLOPs per element). Bytes: q, k, v in
     * and o out, g and beta in fp32, A = (I + beta K K^T)^-1 written
     * (C per token per head), W and U written and read back, the chunk
     * states [T/C, H, dk, dv] written and read. It saves q, k, v, g,
     * beta and A (ChunkGatedDeltaRuleFunction.forward save_for_backward);
     * the backward (chunk_gated_delta_rule_bwd) recomputes W, U and the
     * states (2C(dk + dv) + 4 dk dv per token per head) and runs the
     * transposed products, counted as twice the forward, as for GLA. */
    double C = (double)(a->chunk_size < s->seq ? a->chunk_size : s->seq);
    double f_tok = mfu_gdn_flops_per_token_head(C, dqk, dv, 0) + 8.0 * dqk;
    double qkvo = ab * T * Hq * (2.0 * dqk + 2.0 * dv);
    double gb = 8.0 * T * Hq; /* g and beta, fp32 */
    double A = ab * T * Hq * C;
    double wu = 2.0 * ab * T * Hq * (dqk + dv);
    double states = 2.0 * ab * (T / C) * Hq * dqk * dv;
    double saved = ab * T * Hq * (2.0 * dqk + dv) + gb + A;
    t |= MFU_TAG_FUSED_ATTN;
    push(b, "gdn_chunk", MFU_FWD, t, Hq * T * f_tok, qkvo + gb + A + wu + states, saved);
    push(b, "gdn_chunk.bwd", MFU_BWD, t,
         Hq * T * (2.0 * f_tok + 2.0 * C * (dqk + dv) + 4.0 * dqk * dv),
         2.0 * (qkvo + gb + A + wu + states), 0);
}

/* The chunked GLA kernel. */
static void core_gla(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                     double Hq, double Hkv, double dqk, double dv, double T, double Tkv)
{
    double ab = b->ab;
    unsigned t = MFU_TAG_LAYER | MFU_TAG_ATTN_CORE;
    /* Chunked GLA kernel (Yang et al. 2024 sec. 4; fla chunk_gla): per token
     * per head 2C(dk+dv) intra-chunk + 4 dk dv inter-chunk FLOPs (see
     * core/model.c). It writes the chunk states [T/C, H, dk, dv] and the
     * backward recomputes them (+2 dk dv per token per head) and runs the
     * transposed products (2x forward). */
    double C = (double)(a->chunk_size < s->seq ? a->chunk_size : s->seq);
    double f_tok = 2.0 * C * (dqk + dv) + 4.0 * dqk * dv;
    double io = ab * T * (Hq * dqk + Hkv * dqk * 2.0 + Hkv * dv + Hq * dv);
    double states = ab * (T / C) * Hq * dqk * dv;
    double saved = ab * T * (Hq * dqk + 2.0 * Hkv * dqk + Hkv * dv) + states;
    /* a fused kernel on the matrix units, like flash attention */
    t |= MFU_TAG_FUSED_ATTN;
    push(b, "gla_chunk", MFU_FWD, t, Hq * T * f_tok, io + states, saved);
    push(b, "gla_chunk.bwd", MFU_BWD, t, Hq * T * (2.0 * f_tok + 2.0 * dqk * dv),
         2.0 * io + 2.0 * states, 0);
}

/* Flash attention (Dao et al. 2022) over the causal blocks. */
static void core_flash(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                       double Hq, double Hkv, double dqk, double dv, double T, double Tkv)
{
    double ab = b->ab, cp = (double)s->cp;
    unsigned t = MFU_TAG_LAYER | MFU_TAG_ATTN_CORE;
    double mbs = s->mbs;
    /* attention sinks (gpt-oss): one more logit per query row and head in
     * the softmax denominator (GptOssAttention eager_attention_forward:
     * cat([scores, sinks]) then softmax, the sink column dropped); the
     * backward adds dsink = -sum_rows P_sink * rowsum(dO o O), which flash
     * attention already has (Dao 2023 alg. 2 D_i) */
    double sink_rows = (a->kind == MFU_ATTN_MHA && a->sinks) ? T * Hq : 0.0;
    /* Flash: executes the causal blocks only, limited to the window and
     * to the chunks (F-OP-CHUNK: block-diagonal, so per chunk); per
     * device 1/cp of the pairs (causal load balancing, Llama 3
     * sec. 3.3.2). */
    double pairs = mbs * mfu_attn_layer_pairs(a, s->seq, MFU_CONV_CAUSAL) / cp;
    double q = T * Hq * dqk, k = Tkv * Hkv * dqk, v = Tkv * Hkv * dv, o = T * Hq * dv;
    double lse = 4.0 * T * Hq; /* fp32 log-sum-exp per query row */
    /* saves Q, K, V (the local shard with cp) and the LSE; O is saved by out_proj */
    double saved = ab * (q + (T * Hkv * dqk) + (T * Hkv * dv)) + lse;
    /* a sink: exp and add per row forward, the dsink product backward
     * (~3 FLOPs per row each) and its H logits read */
    mfu_op *f = push(b, "attn_core", MFU_FWD, t | MFU_TAG_FUSED_ATTN,
                     2.0 * pairs * Hq * (dqk + dv) + 3.0 * sink_rows, ab * (q + k + v + o) + lse, saved);
    mfu_op *g = push(b, "attn_core.bwd", MFU_BWD, t | MFU_TAG_FUSED_ATTN,
                     2.0 * pairs * Hq * (3.0 * dqk + 2.0 * dv) + 3.0 * sink_rows,
                     ab * (2.0 * q + 2.0 * k + 2.0 * v + 2.0 * o) + lse, 0);
    /* F-TIME-ATTN-LEN: one kernel call's keys -- the sequence, or with
     * CP one ring step's chunk of it, no longer than the window or the
     * attention chunk */
    double kv = (double)s->seq / cp;
    if (a->window > 0 && (double)a->window < kv) kv = (double)a->window;
    if (a->chunk > 0 && (double)a->chunk < kv) kv = (double)a->chunk;
    if (f) f->kv_len = kv;
    if (g) g->kv_len = kv;
    /* F-TIME-MXU: the per-head products' dimensions */
    if (f) f->head_dim_qk = dqk, f->head_dim_v = dv;
    if (g) g->head_dim_qk = dqk, g->head_dim_v = dv;
}

/* Unfused attention: the scores materialised (Korthikanti sec. 4.1). */
static void core_unfused(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                         double Hq, double Hkv, double dqk, double dv, double T, double Tkv)
{
    double ab = b->ab, cp = (double)s->cp;
    unsigned t = MFU_TAG_LAYER | MFU_TAG_ATTN_CORE;
    unsigned qkv_free = a->kind == MFU_ATTN_MLA ? MFU_RCM_MLA_UP : 0u;
    double mbs = s->mbs;
    /* attention sinks (gpt-oss): one more logit per query row and head in
     * the softmax denominator (GptOssAttention eager_attention_forward:
     * cat([scores, sinks]) then softmax, the sink column dropped); the
     * backward adds dsink = -sum_rows P_sink * rowsum(dO o O), which flash
     * attention already has (Dao 2023 alg. 2 D_i) */
    double sink_rows = (a->kind == MFU_ATTN_MHA && a->sinks) ? T * Hq : 0.0;
    /* Unfused (Korthikanti sec. 4.1): S = QK^T [b, a, s, s] materialised; the
     * full square is computed, the causal mask applied afterwards. */
    double S = mbs * Hq * (double)s->seq * (double)s->seq / cp; /* score elements */
    double q = T * Hq * dqk, k = Tkv * Hkv * dqk, v = Tkv * Hkv * dv, o = T * Hq * dv;
    unsigned tm = t | MFU_TAG_MATMUL;
    double fs = 2.0 * S * dqk, fv = 2.0 * S * dv;
    /* scores: saves Q and K (Korthikanti: 4sbh) */
    /* batched over heads: one call's output is every head's (F-TIME-WAVE) */
    /* F-TIME-GEMM-K: the reductions run over the head dimension (QK^T,
     * dP = dO V^T) or the keys / queries (PV, dQ = dS K, dK = dS^T Q, dV =
     * P^T dO); a backward op of two equal-FLOP GEMMs takes the harmonic
     * mean of their lengths, each capped at the curve's reference first
     * (its time is the sum of both, and no GEMM gains above it) */
    double sq = (double)s->seq / cp, sk = (double)s->seq;
    mfu_op *g = push(b, "attn_scores", MFU_FWD, tm, fs, ab * (q + k + S), ab * (q + T * Hkv * dqk));
    if (g) {
        g->gemm_out = S;
        g->gemm_k = dqk;
    }
    g = push(b, "attn_scores.bwd", MFU_BWD, tm, 2.0 * fs, ab * (2.0 * q + 2.0 * k + S), 0);
    if (g) {
        g->gemm_out = q + k;
        g->gemm_k = 2.0 / (1.0 / fmin(sk, MFU_GEMM_REF_K) + 1.0 / fmin(sq, MFU_GEMM_REF_K));
    }
    /* softmax: saves its output (2as^2b) -- what core_attn recompute frees */
    rc(b, MFU_RCM_CORE_ATTN, MFU_RCM_CORE_ATTN);
    /* with sinks the softmax runs over one more column per row; the sink
     * column's probabilities are kept for dsink */
    double Ss = S + sink_rows;
    push(b, "attn_softmax", MFU_FWD, t | MFU_TAG_SCORES, 5.0 * Ss, ab * 2.0 * Ss, ab * Ss);
    push(b, "attn_softmax.bwd", MFU_BWD, t | MFU_TAG_SCORES, 4.0 * Ss, ab * 3.0 * Ss, 0);
    if (m->dropout) {
        /* attention dropout: mask (as^2b, 1 byte) + its output (2as^2b, kept by PV) */
        push(b, "attn_dropout", MFU_FWD, t | MFU_TAG_SCORES, S, ab * 2.0 * S + S, S + ab * S);
        push(b, "attn_dropout.bwd", MFU_BWD, t | MFU_TAG_SCORES, S, ab * 2.0 * S + S, 0);
    }
    /* PV: saves V (2sbh); P is the softmax (or dropout) output saved above. */
    rc(b, qkv_free, MFU_RCM_CORE_ATTN);
    g = push(b, "attn_av", MFU_FWD, tm, fv, ab * (S + v + o), ab * T * Hkv * dv);
    if (g) {
        g->gemm_out = o;
        g->gemm_k = sk;
    }
    g = push(b, "attn_av.bwd", MFU_BWD, tm, 2.0 * fv, ab * (S + v + 2.0 * o + S + v), 0);
    if (g) {
        g->gemm_out = S + v;
        g->gemm_k = 2.0 / (1.0 / fmin(dv, MFU_GEMM_REF_K) + 1.0 / fmin(sq, MFU_GEMM_REF_K));
    }
}

void mfu_ops_attn_core(builder *b, const mfu_model *m, const mfu_attention *a,
                       const mfu_shape *s, double Hq, double Hkv, double dqk, double dv, double T,
                      double Tkv)
{
    /* Q, K, V are the checkpoint of a core_attn recompute (kept); with MLA
     * they are outputs of the up-projections, freed by mla_up_proj */
    unsigned qkv_free = a->kind == MFU_ATTN_MLA ? MFU_RCM_MLA_UP : 0u;
    rc(b, qkv_free, MFU_RCM_CORE_ATTN);
    if (a->kind == MFU_ATTN_GDN) core_gdn(b, m, a, s, Hq, Hkv, dqk, dv, T, Tkv);
    else if (a->kind == MFU_ATTN_GLA) core_gla(b, m, a, s, Hq, Hkv, dqk, dv, T, Tkv);
    else if (s->attn_impl == MFU_ATTN_FLASH) core_flash(b, m, a, s, Hq, Hkv, dqk, dv, T, Tkv);
    else core_unfused(b, m, a, s, Hq, Hkv, dqk, dv, T, Tkv);
}

/* MHA/GQA/MQA: one QKV GEMM, then q/k norms and RoPE.
 * Sets the kernel's heads and widths. */
static void proj_mha(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                     double T, double Te, double h, double nf, double Hq, double *Hkv_, double *dqk_,
                     double *dv_)
{
    double ab = b->ab, tp = (double)s->tp;
    unsigned L = MFU_TAG_LAYER;
    double Hkv, dqk, dv;
    double kvh = (double)a->n_kv_heads;
    Hkv = kvh >= tp ? kvh / tp : 1.0; /* MQA/GQA with kv heads < tp: replicated */
    dqk = dv = (double)a->head_dim;
    /* with an output gate q_proj also produces the gate, Hq x head_dim
     * (Qwen3NextAttention) */
    double qw = (a->output_gate ? 2.0 : 1.0) * Hq;
    matmul3(b, "qkv_proj", "qkv_proj.dgrad", "qkv_proj.wgrad", L | MFU_TAG_COLPAR, T, h, (qw + 2.0 * Hkv) * dqk,
            1.0, Te * h);
    mx(b, 0); /* MaxText names the projections' outputs, before q/k norms and RoPE */
    rc(b, 0, 0);
    double nqk = T * (Hq + Hkv) * dqk;
    if (a->qk_norm != MFU_QKN_NONE)
        /* F-OP-QKNORM: a norm per head over q and k (Qwen3 q_norm/k_norm
         * RMSNorm, Llama 4 L2Norm); keeps its input for the backward */
        elementwise(b, "qk_norm", "qk_norm.bwd", L, nqk, nqk, nf, ab * nqk);
    if (m->position == MFU_POS_ROPE && !a->nope) {
        /* partial rotary: only rotary_dim of each head rotates
         * (Phi3/Qwen3-Next apply_rotary_pos_emb, q_rot / q_pass) */
        double rot = a->rotary_dim > 0 && (double)a->rotary_dim < dqk ? (double)a->rotary_dim : dqk;
        double nr = T * (Hq + Hkv) * rot;
        elementwise(b, "rope", "rope.bwd", L, nr, nr, 3.0, 0);
    }
    *Hkv_ = Hkv;
    *dqk_ = dqk;
    *dv_ = dv;
}

/* MLA (DeepSeek-V2 sec. 2.1.2-2.1.3): the low-rank chain and RoPE.
 * Sets the kernel's heads and widths. */
static void proj_mla(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                     double T, double Te, double h, double nf, double Hq, double *Hkv_, double *dqk_,
                     double *dv_)
{
    double ab = b->ab;
    unsigned L = MFU_TAG_LAYER;
    double Hkv, dqk, dv;
    double rq = (double)a->q_lora_rank, rkv = (double)a->kv_lora_rank;
    double dn = (double)a->qk_nope_head_dim, dr = (double)a->qk_rope_head_dim;
    Hkv = Hq;
    dqk = dn + dr;
    dv = (double)a->v_head_dim;
    /* DeepSeek-V2 sec. 2.1.2-2.1.3: down-projections are not split over tp. */
    /* Megatron mla_up_proj recomputes the up-projections and RoPE; their
     * inputs (the normed latents) are its checkpoint */
    if (rq > 0) {
        matmul3(b, "q_down", "q_down.dgrad", "q_down.wgrad", L, T, h, rq, 1.0, Te * h);
        rc(b, 0, 0);
        elementwise(b, "q_norm", "q_norm.bwd", L, T * rq, T * rq, nf, ab * T * rq);
        rc(b, 0, MFU_RCM_MLA_UP);
        matmul3(b, "q_up", "q_up.dgrad", "q_up.wgrad", L | MFU_TAG_COLPAR, T, rq, Hq * dqk, 1.0, T * rq);
    } else {
        matmul3(b, "q_proj", "q_proj.dgrad", "q_proj.wgrad", L | MFU_TAG_COLPAR, T, h, Hq * dqk, 1.0, Te * h);
    }
    /* kv_down reads the same norm output q_down/q_proj saved: nothing new saved. */
    rc(b, 0, 0);
    matmul3(b, "kv_down", "kv_down.dgrad", "kv_down.wgrad", L, T, h, rkv + dr, 1.0, 0.0);
    elementwise(b, "kv_norm", "kv_norm.bwd", L, T * rkv, T * rkv, nf, ab * T * rkv);
    rc(b, 0, MFU_RCM_MLA_UP);
    matmul3(b, "kv_up", "kv_up.dgrad", "kv_up.wgrad", L | MFU_TAG_COLPAR, T, rkv, Hq * (dn + dv), 1.0, T * rkv);
    elementwise(b, "rope", "rope.bwd", L, T * (Hq + 1.0) * dr, T * (Hq + 1.0) * dr, 3.0, 0);
    *Hkv_ = Hkv;
    *dqk_ = dqk;
    *dv_ = dv;
}

/* Gated DeltaNet (Qwen3NextGatedDeltaNet): projections, conv, gates.
 * Sets the kernel's heads and widths. */
static void proj_gdn(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                     double T, double Te, double h, double nf, double Hq, double *Hkv_, double *dqk_,
                     double *dv_)
{
    double ab = b->ab, tp = (double)s->tp;
    unsigned L = MFU_TAG_LAYER;
    double Hkv, dqk, dv;
    /* Gated DeltaNet (Qwen3NextGatedDeltaNet): Hq value heads on this
     * device, the q/k heads split too (replicated when fewer than tp) */
    double H = (double)a->n_heads;
    double qkh = (double)(a->n_kv_heads > 0 ? a->n_kv_heads : a->n_heads);
    Hkv = qkh >= tp ? qkh / tp : 1.0;
    dqk = (double)a->key_dim / qkh;
    dv = (double)a->value_dim / H;
    double zq = a->output_gate ? 2.0 : 1.0;
    matmul3(b, "qkvz_proj", "qkvz_proj.dgrad", "qkvz_proj.wgrad", L | MFU_TAG_COLPAR, T, h,
            2.0 * Hkv * dqk + zq * Hq * dv, 1.0, Te * h);
    rc(b, 0, 0);
    /* in_proj_ba reads the same norm output: nothing new saved */
    matmul3(b, "ba_proj", "ba_proj.dgrad", "ba_proj.wgrad", L | MFU_TAG_COLPAR, T, h, 2.0 * Hq, 1.0, 0.0);
    mx(b, 0);
    double nc = T * (2.0 * Hkv * dqk + Hq * dv);
    if (a->conv_size > 0)
        /* F-OP-CONV: depthwise causal conv1d (conv_size taps: a
         * multiply-add each) + SiLU (~4) per channel and token
         * (causal_conv1d_fn); keeps its input */
        elementwise(b, "gdn_conv", "gdn_conv.bwd", L, nc, nc, 2.0 * (double)a->conv_size + 4.0,
                    ab * nc);
    /* the gates: beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias)
     * per value head and token (~10 FLOPs each), written in fp32 */
    elementwise(b, "gdn_gates", "gdn_gates.bwd", L, 2.0 * T * Hq, 2.0 * T * Hq, 10.0,
                ab * 2.0 * T * Hq);
    *Hkv_ = Hkv;
    *dqk_ = dqk;
    *dv_ = dv;
}

/* GLA: the projections and the low-rank gate.
 * Sets the kernel's heads and widths. */
static void proj_gla(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                     double T, double Te, double h, double nf, double Hq, double *Hkv_, double *dqk_,
                     double *dv_)
{
    double tp = (double)s->tp;
    unsigned L = MFU_TAG_LAYER;
    double Hkv, dqk, dv;
    double H = (double)a->n_heads;
    double kvh = (double)(a->n_kv_heads > 0 ? a->n_kv_heads : a->n_heads);
    double g = H / kvh;
    Hkv = kvh >= tp ? kvh / tp : 1.0;
    dqk = (double)a->key_dim / H;
    dv = (double)a->value_dim / H;
    double kd = (double)a->key_dim, vd = (double)a->value_dim;
    double n = (kd + kd / g + vd / g + (a->output_gate ? vd : 0.0)) / tp;
    matmul3(b, "qkvg_proj", "qkvg_proj.dgrad", "qkvg_proj.wgrad", L | MFU_TAG_COLPAR, T, h, n, 1.0, Te * h);
    rc(b, 0, 0);
    double gr = (double)a->gate_rank;
    matmul3(b, "gk_down", "gk_down.dgrad", "gk_down.wgrad", L, T, h, gr, 1.0, 0.0);
    matmul3(b, "gk_up", "gk_up.dgrad", "gk_up.wgrad", L, T, gr, kd / g / tp, 1.0, T * gr);
    *Hkv_ = Hkv;
    *dqk_ = dqk;
    *dv_ = dv;
}

/* The attention block's projections by kind, and the heads and head widths
 * the kernel runs with. */
void mfu_ops_attn_projections(builder *b, const mfu_model *m, const mfu_attention *a,
                              const mfu_shape *s, double T, double Te, double h, double nf,
                             double *Hq_, double *Hkv_, double *dqk_, double *dv_)
{
    double tp = (double)s->tp;
    double Hq = (double)a->n_heads / tp;
    double Hkv, dqk, dv;
    switch (a->kind) {
    case MFU_ATTN_MHA: proj_mha(b, m, a, s, T, Te, h, nf, Hq, &Hkv, &dqk, &dv); break;
    case MFU_ATTN_MLA: proj_mla(b, m, a, s, T, Te, h, nf, Hq, &Hkv, &dqk, &dv); break;
    case MFU_ATTN_GDN: proj_gdn(b, m, a, s, T, Te, h, nf, Hq, &Hkv, &dqk, &dv); break;
    case MFU_ATTN_GLA:
    default: proj_gla(b, m, a, s, T, Te, h, nf, Hq, &Hkv, &dqk, &dv); break;
    }
    *Hq_ = Hq;
    *Hkv_ = Hkv;
    *dqk_ = dqk;
    *dv_ = dv;
}

/* After the attention kernel: the output gates of the kinds that have one,
 * and the output projection. */
void mfu_ops_attn_outputs(builder *b, const mfu_attention *a, double T, double h, double Hq,
                          double dv)
{
    double ab = b->ab;
    unsigned L = MFU_TAG_LAYER;
    mx(b, 0);
    rc(b, 0, 0);
    if (a->kind == MFU_ATTN_GLA && a->output_gate) {
        /* fused RMSNorm * swish(g) on the output */
        double n = T * Hq * dv;
        elementwise(b, "gla_out_gate", "gla_out_gate.bwd", L, 2.0 * n, n, 8.0, ab * 2.0 * n);
    }
    if (a->kind == MFU_ATTN_GDN && a->output_gate) {
        /* the gated RMSNorm: RMSNorm(o) * silu(z) over head_v_dim
         * (Qwen3NextRMSNormGated / fla FusedRMSNormGated), as GLA's */
        double n = T * Hq * dv;
        elementwise(b, "gdn_out_norm", "gdn_out_norm.bwd", L, 2.0 * n, n, 8.0, ab * 2.0 * n);
    }
    if (a->kind == MFU_ATTN_MHA && a->output_gate) {
        /* F-OP-OUTGATE: o * sigmoid(gate) (Qwen3NextAttention, "Gated
         * Attention", Qiu et al. 2025, arXiv:2505.06708): sigmoid ~4 and a
         * multiply per element; keeps o (the kernel's output, needed by
         * its backward too) and the gate */
        double n = T * Hq * dv;
        elementwise(b, "attn_out_gate", "attn_out_gate.bwd", L, 2.0 * n, n, 5.0, ab * 2.0 * n);
    }
    mx(b, MFU_MX_OUT);
    matmul3(b, "out_proj", "out_proj.dgrad", "out_proj.wgrad", L, T, Hq * dv, h, 1.0, T * Hq * dv);
    mx(b, 0);
}
