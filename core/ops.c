/* core/ops.c -- operator inventory, forward and backward, per layer run.
 *
 * Conventions (docs/model.md F-OP):
 *   - matmul [M,K] x [K,N]: FLOPs 2MKN, bytes (MK + KN) * operand bytes +
 *     MN * activation bytes; it saves its input X ([M,K]) for the weight
 *     gradient unless another op already saved the same tensor.
 *   - backward of a matmul is two GEMMs (Narayanan et al. 2021: "backward =
 *     2x forward"): dgrad dX = dY W^T and wgrad dW = X^T dY; wgrad accumulates
 *     into fp32 main gradients (Megatron gradient-accumulation fusion), so it
 *     reads and writes K*N*4 bytes.
 *   - flash attention (Dao et al. 2022): forward 2 matmuls (S = QK^T, O = PV),
 *     backward 5 (recomputed S, dP = dO V^T, dV = P^T dO, dQ = dS K,
 *     dK = dS^T Q); executes only the causal blocks. Unfused attention
 *     materialises the s x s score matrix (Korthikanti et al. 2022 sec. 4.1).
 *   - activations are 2-byte (bf16/fp16) or 4-byte (fp32); GEMM operands use
 *     the training dtype (fp8: 1 byte), and so do the GEMM inputs kept for
 *     the weight gradient (Transformer Engine saves the FP8 cast of a
 *     Linear's input with fp8 training);
 *   - each saved tensor names the recompute modules that free it, each
 *     forward op the modules that run it again (ops.h MFU_RCM_*).
 *   - saved bytes reproduce Korthikanti et al. 2022 sec. 4.1 for the GPT block:
 *     attention 11sbh + 5as^2b, MLP 19sbh, two layernorms 4sbh.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

typedef struct builder {
    mfu_op *out;
    int n, max;
    int run;
    double count;
    double eb; /* GEMM operand bytes */
    double ab; /* activation bytes */
    unsigned fr, rr; /* recompute masks given to the next forward ops */
    unsigned mx;     /* MaxText name of the next forward ops' outputs */
} builder;

const char *const mfu_rcm_names[MFU_RCM_COUNT] = {"core_attn", "layernorm", "mlp", "moe_act",
                                                  "moe", "mla_up_proj", "shared_experts", "act"};
const char *const mfu_mx_names[MFU_MX_COUNT] = {"qkv_proj", "context", "out_proj", "mlpwi", "mlpwo",
                                                "decoder_layer_input"};

/* The MaxText name of what the next forward ops produce (0: none). */
static void mx(builder *b, unsigned cat) { b->mx = cat; }

/* The recompute masks of what is pushed next: saved tensors freed by `fr`,
 * ops run again by `rr`. */
static void rc(builder *b, unsigned fr, unsigned rr)
{
    b->fr = fr;
    b->rr = rr;
}

static mfu_op *push(builder *b, const char *name, mfu_phase ph, unsigned tags, double flops,
                    double bytes, double saved)
{
    /* count what does not fit: the caller sees n > max, never a short list */
    if (b->n >= b->max) {
        b->n++;
        return NULL;
    }
    mfu_op *o = &b->out[b->n++];
    o->name = name;
    o->phase = ph;
    o->tags = tags;
    o->run = b->run;
    o->count = b->count;
    o->flops = flops;
    o->bytes = bytes;
    o->gemm_flops = (tags & MFU_TAG_MATMUL) ? flops : 0.0;
    o->saved_bytes = ph == MFU_FWD ? saved : 0.0;
    o->rc_free = ph == MFU_FWD ? b->fr : 0u;
    o->rc_rerun = ph == MFU_FWD ? b->rr : 0u;
    o->mx = ph == MFU_FWD ? b->mx : 0u;
    o->out_bytes = 0.0;
    o->kv_len = 0.0;
    return o;
}

/* A linear layer: forward GEMM and its two backward GEMMs. `groups` GEMMs of
 * equal size share the work (MoE experts: M rows spread over local experts,
 * every local expert's weights read). `saved_elems` elements of its input
 * are kept for the weight gradient, in the GEMM operand type (fp8 training
 * keeps the FP8 cast) -- 0 when another op already keeps that tensor. */
static void matmul3(builder *b, const char *fwd, const char *dgrad, const char *wgrad,
                    unsigned tags, double M, double K, double N, double groups, double saved_elems)
{
    double eb = b->eb, ab = b->ab;
    double saved = (eb < ab ? eb : ab) * saved_elems;
    double flops = 2.0 * M * K * N;
    double wbytes = K * N * groups;
    tags |= MFU_TAG_MATMUL;
    if (eb < ab) {
        /* FP8: the activation input is quantized before the forward GEMM and
         * the output gradient before the backward ones (read 16-bit, write
         * 8-bit, F-TIME-FP8); weights are cast once per step */
        unsigned ct = tags & ~(unsigned)(MFU_TAG_MATMUL | MFU_TAG_WGRAD);
        unsigned fr = b->fr;
        b->fr = 0u;
        push(b, "fp8_cast", MFU_FWD, ct, M * K, (ab + eb) * M * K, 0);
        b->fr = fr;
        push(b, "fp8_cast.bwd", MFU_BWD, ct, M * N, (ab + eb) * M * N, 0);
    }
    mfu_op *o = push(b, fwd, MFU_FWD, tags, flops, eb * (M * K + wbytes) + ab * M * N, saved);
    if (o) {
        o->gemm_flops = flops / groups;
        o->out_bytes = ab * M * N;
    }
    o = push(b, dgrad, MFU_BWD, tags, flops, eb * (M * N + wbytes) + ab * M * K, 0);
    if (o) o->gemm_flops = flops / groups;
    o = push(b, wgrad, MFU_BWD, tags | MFU_TAG_WGRAD, flops, eb * (M * K + M * N) + 8.0 * wbytes, 0);
    if (o) o->gemm_flops = flops / groups;
}

/* An elementwise op over n_in input and n_out output elements, with its
 * backward reading the saved inputs and dY and writing dX. */
static void elementwise(builder *b, const char *fwd, const char *bwd, unsigned tags, double n_in,
                        double n_out, double flops_per_out, double saved)
{
    double ab = b->ab;
    push(b, fwd, MFU_FWD, tags, flops_per_out * n_out, ab * (n_in + n_out), saved);
    push(b, bwd, MFU_BWD, tags, 2.0 * flops_per_out * n_out, ab * (2.0 * n_in + n_out), 0);
}

static double norm_flops_per_elem(const mfu_model *m)
{
    /* RMSNorm: square, sum, scale, weight (4); LayerNorm adds mean and bias (5). */
    return m->norm == MFU_NORM_LAYER ? 5.0 : 4.0;
}

/* Residual add of the block output, with dropout before it when the model
 * has dropout (Korthikanti: the dropout mask costs 1 byte per element). */
static void residual(builder *b, const mfu_model *m, const char *fwd, const char *bwd, double Te,
                     double h)
{
    double n = Te * h, ab = b->ab;
    double mask = m->dropout ? n : 0.0;
    push(b, fwd, MFU_FWD, MFU_TAG_LAYER | MFU_TAG_TP_REPL, (m->dropout ? 2.0 : 1.0) * n,
         ab * 3.0 * n + mask, mask);
    push(b, bwd, MFU_BWD, MFU_TAG_LAYER, (m->dropout ? 2.0 : 1.0) * n, ab * 3.0 * n + mask, 0);
}

static double act_flops(mfu_act a)
{
    /* GeLU (tanh form) ~8 FLOPs per element, SiLU x*sigmoid(x) ~4, ReLU 1. */
    return a == MFU_ACT_GELU ? 8.0 : a == MFU_ACT_SILU ? 4.0 : 1.0;
}

/* Dense MLP (or shared experts) on T tokens, widths split over tp. */
static void dense_mlp(builder *b, const mfu_mlp *p, double T, double Te, double h, double I,
                      double tp, int first_saves_input, unsigned extra, const char **names)
{
    double ab = b->ab;
    double up_n = (p->gated ? 2.0 : 1.0) * I / tp;
    unsigned t = MFU_TAG_LAYER | MFU_TAG_MLP | extra;
    /* the block (Megatron "mlp", or "shared_experts" / "moe") is one
     * recompute unit: its input (the norm output) is the checkpoint, which
     * the layernorm module frees */
    unsigned blk = extra ? MFU_RCM_SHARED | MFU_RCM_MOE : MFU_RCM_MLP;
    rc(b, MFU_RCM_LAYERNORM, blk);
    mx(b, MFU_MX_WI);
    matmul3(b, names[0], names[1], names[2], t, T, h, up_n, 1.0, first_saves_input ? Te * h : 0.0);
    mx(b, 0);
    /* activation: gated reads gate and up, writes one; saves its inputs
     * (kept when only the activation is recomputed: they are its input) */
    double n_out = T * I / tp;
    double n_in = (p->gated ? 2.0 : 1.0) * n_out;
    rc(b, blk, blk | MFU_RCM_ACT);
    elementwise(b, names[3], names[4], t, n_in, n_out,
                act_flops(p->act) + (p->gated ? 1.0 : 0.0), ab * n_in);
    /* its output is the down projection's saved input */
    rc(b, blk | MFU_RCM_ACT, blk);
    mx(b, MFU_MX_WO);
    matmul3(b, names[5], names[6], names[7], t, T, I / tp, h, 1.0, n_out);
    mx(b, 0);
}

static const char *MLP_NAMES[] = {"mlp_up", "mlp_up.dgrad", "mlp_up.wgrad", "mlp_act",
                                  "mlp_act.bwd", "mlp_down", "mlp_down.dgrad", "mlp_down.wgrad"};
static const char *SHARED_NAMES[] = {"shared_up", "shared_up.dgrad", "shared_up.wgrad",
                                     "shared_act", "shared_act.bwd", "shared_down",
                                     "shared_down.dgrad", "shared_down.wgrad"};
static const char *EXPERT_NAMES[] = {"expert_up", "expert_up.dgrad", "expert_up.wgrad",
                                     "expert_act", "expert_act.bwd", "expert_down",
                                     "expert_down.dgrad", "expert_down.wgrad"};

/* Attention core on local shapes. Hq, Hkv: heads on this device; dqk, dv per
 * head; T local queries; Tkv keys/values read (all of the sequence with cp). */
/* F-OP-GDN: the chunked gated delta rule. */
static void core_gdn(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                     double Hq, double Hkv, double dqk, double dv, double T, double Tkv)
{
    double ab = b->ab, cp = (double)s->cp;
    unsigned t = MFU_TAG_LAYER | MFU_TAG_ATTN_CORE;
    unsigned qkv_free = a->kind == MFU_ATTN_MLA ? MFU_RCM_MLA_UP : 0u;
    (void)cp;
    (void)qkv_free;
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
    double ab = b->ab, cp = (double)s->cp;
    unsigned t = MFU_TAG_LAYER | MFU_TAG_ATTN_CORE;
    unsigned qkv_free = a->kind == MFU_ATTN_MLA ? MFU_RCM_MLA_UP : 0u;
    (void)cp;
    (void)qkv_free;
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
    unsigned qkv_free = a->kind == MFU_ATTN_MLA ? MFU_RCM_MLA_UP : 0u;
    (void)cp;
    (void)qkv_free;
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
}

/* Unfused attention: the scores materialised (Korthikanti sec. 4.1). */
static void core_unfused(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                         double Hq, double Hkv, double dqk, double dv, double T, double Tkv)
{
    double ab = b->ab, cp = (double)s->cp;
    unsigned t = MFU_TAG_LAYER | MFU_TAG_ATTN_CORE;
    unsigned qkv_free = a->kind == MFU_ATTN_MLA ? MFU_RCM_MLA_UP : 0u;
    (void)cp;
    (void)qkv_free;
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
    push(b, "attn_scores", MFU_FWD, tm, fs, ab * (q + k + S), ab * (q + T * Hkv * dqk));
    push(b, "attn_scores.bwd", MFU_BWD, tm, 2.0 * fs, ab * (2.0 * q + 2.0 * k + S), 0);
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
    push(b, "attn_av", MFU_FWD, tm, fv, ab * (S + v + o), ab * T * Hkv * dv);
    push(b, "attn_av.bwd", MFU_BWD, tm, 2.0 * fv, ab * (S + v + 2.0 * o + S + v), 0);
}

static void attn_core(builder *b, const mfu_model *m, const mfu_attention *a,
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
    matmul3(b, "qkv_proj", "qkv_proj.dgrad", "qkv_proj.wgrad", L, T, h, (qw + 2.0 * Hkv) * dqk,
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
        matmul3(b, "q_up", "q_up.dgrad", "q_up.wgrad", L, T, rq, Hq * dqk, 1.0, T * rq);
    } else {
        matmul3(b, "q_proj", "q_proj.dgrad", "q_proj.wgrad", L, T, h, Hq * dqk, 1.0, Te * h);
    }
    /* kv_down reads the same norm output q_down/q_proj saved: nothing new saved. */
    rc(b, 0, 0);
    matmul3(b, "kv_down", "kv_down.dgrad", "kv_down.wgrad", L, T, h, rkv + dr, 1.0, 0.0);
    elementwise(b, "kv_norm", "kv_norm.bwd", L, T * rkv, T * rkv, nf, ab * T * rkv);
    rc(b, 0, MFU_RCM_MLA_UP);
    matmul3(b, "kv_up", "kv_up.dgrad", "kv_up.wgrad", L, T, rkv, Hq * (dn + dv), 1.0, T * rkv);
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
    matmul3(b, "qkvz_proj", "qkvz_proj.dgrad", "qkvz_proj.wgrad", L, T, h,
            2.0 * Hkv * dqk + zq * Hq * dv, 1.0, Te * h);
    rc(b, 0, 0);
    /* in_proj_ba reads the same norm output: nothing new saved */
    matmul3(b, "ba_proj", "ba_proj.dgrad", "ba_proj.wgrad", L, T, h, 2.0 * Hq, 1.0, 0.0);
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
    matmul3(b, "qkvg_proj", "qkvg_proj.dgrad", "qkvg_proj.wgrad", L, T, h, n, 1.0, Te * h);
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
static void attn_projections(builder *b, const mfu_model *m, const mfu_attention *a,
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
static void attn_outputs(builder *b, const mfu_attention *a, double T, double h, double Hq,
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

/* The routed-expert MLP (F-MOE-LOAD for its slots) and its shared experts. */
static void moe_block(builder *b, const mfu_mlp *p, const mfu_shape *s, double T, double Te,
                      double h)
{
    double ab = b->ab, tp = (double)s->tp;
    unsigned L = MFU_TAG_LAYER;
    unsigned t = L | MFU_TAG_MLP;
    double E = (double)p->n_experts, k = (double)p->top_k;
    double ep = (double)s->ep, etp = (double)s->etp;
    /* Router on the local (sequence-parallel) tokens: GEMM h x E, fp32
     * probabilities, top-k. Saves its input (the norm output) once. */
    /* Megatron "moe" recomputes the whole layer (router, dispatch,
     * experts, combine, shared experts) from the norm output */
    rc(b, MFU_RCM_LAYERNORM, MFU_RCM_MOE);
    /* MaxText: routing and dispatch are rerun when the expert inputs
     * (moe_mlpwi_*) are not kept; their outputs are not named */
    mx(b, MFU_MX_WI);
    matmul3(b, "router", "router.dgrad", "router.wgrad", t, Te, h, E, 1.0, Te * h);
    for (int i = (b->n < b->max ? b->n : b->max) - 1; i >= 0; i--)
        if (b->out[i].phase == MFU_FWD) {
            b->out[i].out_bytes = 0.0;
            break;
        }
    rc(b, MFU_RCM_MOE, MFU_RCM_MOE);
    push(b, "router_topk", MFU_FWD, t, 4.0 * Te * E, 4.0 * Te * E * 2.0, 4.0 * Te * E);
    push(b, "router_topk.bwd", MFU_BWD, t, 4.0 * Te * E, 4.0 * Te * E * 2.0, 0);
    /* Token slots per device: every token goes to k experts, padded by the
     * capacity factor; spread evenly over the ep group; with etp = tp the
     * tp ranks share slots and split expert widths, with etp = 1 the
     * tokens are split over tp instead (Megatron-Core MoE). */
    double Ts = T * k * mfu_moe_load(p, s->moe_load) * etp / tp;
    double local = E / ep;
    double slots = Ts * h;
    push(b, "moe_dispatch", MFU_FWD, t | MFU_TAG_EXPERT, 0, ab * (Te * h + slots), 0);
    push(b, "moe_dispatch.bwd", MFU_BWD, t | MFU_TAG_EXPERT, 0, ab * (Te * h + slots), 0);
    double I = (double)p->expert_ffn_dim;
    double up_n = (p->gated ? 2.0 : 1.0) * I / etp;
    unsigned te = t | MFU_TAG_EXPERT;
    matmul3(b, EXPERT_NAMES[0], EXPERT_NAMES[1], EXPERT_NAMES[2], te, Ts, h, up_n, local,
            slots);
    double n_out = Ts * I / etp;
    double n_in = (p->gated ? 2.0 : 1.0) * n_out;
    /* moe_act recomputes the activation from its kept input, freeing its
     * output (the down projection's saved input). The routing
     * probabilities are applied here, in the activation (Megatron-Core
     * TEGroupedMLP's weighted SwiGLU, weighted_bias_swiglu_impl with
     * permuted_probs; by linearity the same as weighting the expert
     * outputs): it also keeps each slot's probability (fp32), and the
     * combine below is a plain unpermute that keeps nothing. */
    mx(b, 0);
    rc(b, MFU_RCM_MOE, MFU_RCM_MOE | MFU_RCM_MOE_ACT | MFU_RCM_ACT);
    elementwise(b, EXPERT_NAMES[3], EXPERT_NAMES[4], te, n_in, n_out,
                act_flops(p->act) + (p->gated ? 1.0 : 0.0) + 1.0, ab * n_in + 4.0 * Ts);
    rc(b, MFU_RCM_MOE | MFU_RCM_MOE_ACT | MFU_RCM_ACT, MFU_RCM_MOE);
    mx(b, MFU_MX_WO);
    matmul3(b, EXPERT_NAMES[5], EXPERT_NAMES[6], EXPERT_NAMES[7], te, Ts, I / etp, h, local,
            n_out);
    rc(b, MFU_RCM_MOE, MFU_RCM_MOE);
    /* combine: the k (already weighted) expert outputs summed back into
     * token order; its backward gathers the output gradient to the slots */
    push(b, "moe_combine", MFU_FWD, te, slots, ab * (slots + Te * h), 0);
    push(b, "moe_combine.bwd", MFU_BWD, te, 0, ab * (slots + Te * h), 0);
    mx(b, 0);
    if (p->n_shared_experts > 0) {
        double Is = (double)(p->n_shared_experts * p->shared_ffn_dim);
        dense_mlp(b, p, T, Te, h, Is, tp, 0, MFU_TAG_SHARED, SHARED_NAMES);
        if (p->shared_gate) {
            /* F-OP-SHGATE: shared_expert_gate, Linear(h, 1) on the norm
             * output (kept already), then sigmoid(g) * shared output on
             * the reduced h-wide result (Qwen2MoeSparseMoeBlock.forward);
             * the multiply keeps both inputs. Part of the shared-expert
             * recompute unit. */
            unsigned sh = MFU_RCM_SHARED | MFU_RCM_MOE;
            rc(b, 0, sh);
            matmul3(b, "shared_gate", "shared_gate.dgrad", "shared_gate.wgrad",
                    t | MFU_TAG_SHARED, Te, h, 1.0, 1.0, 0.0);
            rc(b, sh, sh);
            elementwise(b, "shared_gate_mul", "shared_gate_mul.bwd", t | MFU_TAG_SHARED,
                        Te * h + Te, Te * h, 1.0 + 4.0 / h, ab * (Te * h + Te));
        }
    }
}

int mfu_ops_layer(const mfu_model *m, int r, const mfu_shape *s, mfu_op *out, int max)
{
    const mfu_layer_run *run = &m->runs[r];
    const mfu_attention *a = &run->attn;
    const mfu_mlp *p = &run->mlp;
    builder b = {out, 0, max, r, (double)run->count, mfu_dtype_bytes(s->dtype),
                 s->dtype == MFU_DT_FP32 ? 4.0 : 2.0, 0u, 0u, 0u};
    double ab = b.ab;
    double h = (double)m->d_model;
    double tp = (double)s->tp, cp = (double)s->cp;
    double T = s->mbs * (double)s->seq / cp; /* local tokens (queries) */
    double Tkv = T * cp;                     /* keys/values read by the core */
    double Te = s->sp ? T / tp : T;          /* tokens of norms / residuals */
    unsigned L = MFU_TAG_LAYER;
    double nf = norm_flops_per_elem(m);

    /* ---- attention block ---- */
    /* the norm keeps its input (the residual stream: only full recompute
     * frees it); its output, kept by the next GEMM, is what the layernorm
     * module frees (Megatron: output-discarding checkpoint) */
    rc(&b, 0, MFU_RCM_LAYERNORM);
    elementwise(&b, "attn_norm", "attn_norm.bwd", L | MFU_TAG_TP_REPL, Te * h, Te * h, nf,
                ab * Te * h);
    rc(&b, MFU_RCM_LAYERNORM, 0);
    /* the projections under MaxText's query/key/value/kv/qkv_proj names
     * (MLA's latent norms and RoPE between its projections among them) */
    mx(&b, MFU_MX_QKV);
    double Hq, Hkv, dqk, dv;
    attn_projections(&b, m, a, s, T, Te, h, nf, &Hq, &Hkv, &dqk, &dv);
    mx(&b, MFU_MX_CONTEXT);
    attn_core(&b, m, a, s, Hq, Hkv, dqk, dv, T, Tkv);
    /* "context": the kernel's output, on its last forward op */
    for (int i = (b.n < b.max ? b.n : b.max) - 1; i >= 0; i--)
        if (b.out[i].phase == MFU_FWD) {
            if (b.out[i].mx == MFU_MX_CONTEXT) b.out[i].out_bytes = ab * T * Hq * dv;
            break;
        }
    attn_outputs(&b, a, T, h, Hq, dv);
    residual(&b, m, "attn_residual", "attn_residual.bwd", Te, h);

    /* ---- MLP block ---- */
    rc(&b, 0, MFU_RCM_LAYERNORM);
    elementwise(&b, "mlp_norm", "mlp_norm.bwd", L | MFU_TAG_TP_REPL | MFU_TAG_MLP, Te * h, Te * h,
                nf, ab * Te * h);
    if (p->kind == MFU_MLP_DENSE) {
        dense_mlp(&b, p, T, Te, h, (double)p->ffn_dim, tp, 1, 0, MLP_NAMES);
    } else {
        moe_block(&b, p, s, T, Te, h);
    }
    rc(&b, 0, 0);
    residual(&b, m, "mlp_residual", "mlp_residual.bwd", Te, h);
    return b.n;
}

int mfu_ops_embed(const mfu_model *m, const mfu_shape *s, mfu_op *out, int max)
{
    builder b = {out, 0, max, -1, 1.0, mfu_dtype_bytes(s->dtype),
                 s->dtype == MFU_DT_FP32 ? 4.0 : 2.0, 0u, 0u, 0u};
    double h = (double)m->d_model, ab = b.ab;
    double T = s->mbs * (double)s->seq / (double)s->cp;
    double Te = s->sp ? T / (double)s->tp : T;
    /* Lookup: gather T rows, write the embeddings (vocab-parallel over tp). */
    push(&b, "embedding", MFU_FWD, 0, 0, ab * (T * h + Te * h), 0);
    /* Backward: scatter-add dY rows into the fp32 gradient table (read and
     * write the touched rows, 8 bytes per element). */
    push(&b, "embedding.bwd", MFU_BWD, 0, T * h, ab * T * h + 8.0 * T * h, 0);
    if (m->position == MFU_POS_LEARNED) {
        push(&b, "pos_embedding", MFU_FWD, 0, Te * h, ab * 3.0 * Te * h, 0);
        push(&b, "pos_embedding.bwd", MFU_BWD, 0, Te * h, ab * Te * h + 8.0 * Te * h, 0);
    }
    if (m->dropout) {
        /* embedding dropout mask (Korthikanti sec. 4.3: sbhp/t on the first stage) */
        push(&b, "embedding_dropout", MFU_FWD, 0, Te * h, ab * 2.0 * Te * h + Te * h, Te * h);
        push(&b, "embedding_dropout.bwd", MFU_BWD, 0, Te * h, ab * 2.0 * Te * h + Te * h, 0);
    }
    return b.n;
}

int mfu_ops_head(const mfu_model *m, const mfu_shape *s, mfu_op *out, int max)
{
    builder b = {out, 0, max, -1, 1.0, mfu_dtype_bytes(s->dtype),
                 s->dtype == MFU_DT_FP32 ? 4.0 : 2.0, 0u, 0u, 0u};
    double h = (double)m->d_model, ab = b.ab;
    double tp = (double)s->tp;
    double T = s->mbs * (double)s->seq / (double)s->cp;
    double Te = s->sp ? T / tp : T;
    double V = (double)m->vocab;
    elementwise(&b, "final_norm", "final_norm.bwd", MFU_TAG_TP_REPL, Te * h, Te * h,
                norm_flops_per_elem(m), ab * Te * h);
    matmul3(&b, "lm_head", "lm_head.dgrad", "lm_head.wgrad", 0, T, h, V / tp, 1.0, Te * h);
    /* Cross-entropy over the (vocab-parallel) logits in fp32 (Megatron
     * vocab_parallel_cross_entropy): reads the bf16 logits, keeps the fp32
     * softmax for the backward (Korthikanti sec. 4.3: 4sbv/t bytes). */
    double n = T * V / tp;
    push(&b, "loss", MFU_FWD, 0, 5.0 * n, ab * n + 4.0 * n, 4.0 * n);
    push(&b, "loss.bwd", MFU_BWD, 0, 2.0 * n, 4.0 * n + ab * n, 0);
    return b.n;
}

int mfu_ops_model(const mfu_model *m, const mfu_shape *s, mfu_op *out, int max)
{
    int n = mfu_ops_embed(m, s, out, max);
    for (int r = 0; r < m->n_runs; r++) {
        int k = n < max ? n : max;
        n += mfu_ops_layer(m, r, s, out + k, max - k);
    }
    int k = n < max ? n : max;
    n += mfu_ops_head(m, s, out + k, max - k);
    return n;
}

/* Compute roof of an op: matmuls and fused attention run on the matrix
 * units at the dtype's peak; elementwise work (norms, activations, softmax,
 * RoPE, loss) runs on the vector units, whose peak is the chip's fp32
 * (non-tensor) figure where the preset gives one (A100 19.5 TFLOP/s, H100
 * 66.9: NVIDIA datasheets), else the dtype's peak. */
static double op_peak(const mfu_op *op, const mfu_hardware *hw, mfu_dtype dt)
{
    /* attention kernels stay in 16-bit with FP8 GEMMs (Transformer Engine
     * runs DotProductAttention in bf16 unless fp8_dpa; F-TIME-FP8) */
    if ((op->tags & MFU_TAG_FUSED_ATTN) && dt == MFU_DT_FP8 && hw->peak_flops[MFU_DT_BF16] > 0)
        return hw->peak_flops[MFU_DT_BF16];
    if (op->tags & (MFU_TAG_MATMUL | MFU_TAG_FUSED_ATTN)) return hw->peak_flops[dt];
    double v = hw->peak_flops[MFU_DT_FP32];
    return v > 0 && v < hw->peak_flops[dt] ? v : hw->peak_flops[dt];
}

double mfu_op_time(const mfu_op *op, const mfu_hardware *hw, mfu_dtype dt,
                   const mfu_efficiency *eff)
{
    double e = 1.0, be = 1.0, fixed = 0.0;
    if (eff) {
        if (op->tags & MFU_TAG_FUSED_ATTN) {
            e = eff->attn_eff;
            if (eff->attn_half_tokens > 0 && op->kv_len > 0 && op->kv_len < MFU_ATTN_REF_TOKENS) {
                /* F-TIME-ATTN-LEN: shorter key runs per call, lower
                 * efficiency; longer ones are not credited beyond the
                 * stated figure (a named assumption: the presets quote
                 * "typical lengths", and the model errs optimistic) */
                double hl = eff->attn_half_tokens;
                e *= op->kv_len / (op->kv_len + hl) * (MFU_ATTN_REF_TOKENS + hl) / MFU_ATTN_REF_TOKENS;
            }
            fixed = eff->kernel_overhead_s;
        } else if (op->tags & MFU_TAG_MATMUL) {
            if (dt == MFU_DT_FP8 && hw->peak_flops[MFU_DT_BF16] > 0) {
                /* the curve's fixed cost per GEMM weighs twice as much at
                 * twice the peak: FP8 at F FLOPs runs as BF16 at F * P16/P8
                 * (F-TIME-FP8) */
                double f16 = op->gemm_flops * hw->peak_flops[MFU_DT_BF16] / hw->peak_flops[MFU_DT_FP8];
                e = mfu_gemm_eff(eff, f16) * (eff->fp8_gemm_scale > 0 ? eff->fp8_gemm_scale : 1.0);
            } else {
                e = mfu_gemm_eff(eff, op->gemm_flops);
            }
            /* per GEMM call: a grouped expert GEMM is one kernel per local expert */
            fixed = eff->gemm_overhead_s * (op->gemm_flops > 0 ? op->flops / op->gemm_flops : 1.0);
        } else {
            fixed = eff->kernel_overhead_s; /* F-TIME-KERNEL: launch and tail */
        }
        be = eff->hbm_eff;
    }
    double peak = op_peak(op, hw, dt);
    double tc = op->flops / (peak * e);
    double tm = op->bytes / (hw->hbm_bw_bytes_s * be);
    double t = (tc > tm ? tc : tm) + fixed;
    if (eff) {
        /* a calibrated fixed cost may be negative (gemm_overhead_s: the
         * curve's own fixed cost overstated), but no kernel runs faster
         * than its roofline: the expected time never falls below the
         * bound's (the fuzzer found a tiny GEMM at 0 s) */
        double ic = op->flops / peak, im = op->bytes / hw->hbm_bw_bytes_s;
        double ideal = ic > im ? ic : im;
        if (t < ideal) t = ideal;
    }
    return t > 0 ? t : 0.0;
}

int mfu_op_compute_bound(const mfu_op *op, const mfu_hardware *hw, mfu_dtype dt)
{
    return op->flops / op_peak(op, hw, dt) >= op->bytes / hw->hbm_bw_bytes_s;
}

double mfu_matmul_intensity(double M, double N, double K, double elem_bytes)
{
    return 2.0 * M * N * K / (elem_bytes * (M * N + N * K + M * K));
}

double mfu_attention_intensity(double T, double S, double H, double H_kv)
{
    return 2.0 * T / (T / S + H_kv / H);
}

/* F-TIME-DISPATCH counts, read from Megatron-Core core_v0.14.0 and
 * Transformer Engine v2.7 for the MoE layer Megatron launches by default
 * (alltoall dispatcher, TopKRouter with aux loss, TEGroupedMLP, no permute
 * or router fusion; docs/model.md F-TIME-DISPATCH has the table):
 *  - one host op per expert GEMM: TE's grouped GEMM
 *    (cpp_extensions/gemm.py general_grouped_gemm ->
 *    common/gemm/cublaslt_gemm.cu) builds the cuBLASLt descriptors and
 *    queries the heuristic for every expert's GEMM;
 *  - FP8 (Transformer Engine current scaling): amax, scale and cast of
 *    each GEMM's input in the forward and of its output gradient before
 *    the data-gradient GEMM, per expert (split_quantize); the weight
 *    gradient GEMM reuses them;
 *  - an MoE layer's forward issues about 61 (56-66) ops besides its
 *    expert GEMMs: router softmax/top-k/maps (10-12), aux-loss scores
 *    (7-8) and loss (7), dispatcher metadata with its all-gather (7),
 *    the device-to-host copies (5), permute (10-14) -- all before the
 *    sync in MoEAlltoAllTokenDispatcher.token_dispatch -- then chunk
 *    sorts, the all-to-alls, SwiGLU and unpermute (about 10); its
 *    backward about 36 (29-43). The inventory holds 5 of the forward's
 *    (router GEMM, top-k before the sync; dispatch, activation, combine
 *    after) and 6 of the backward's. */
#define MFU_HOST_GEMM_CALL 1.0
#define MFU_HOST_FP8_QUANT 3.0
#define MFU_HOST_MOE_FWD_PRE 49.0  /* about 51 before the sync, 2 in the inventory */
#define MFU_HOST_MOE_FWD_POST 8.0  /* about 11 after it, 3 in the inventory */
#define MFU_HOST_MOE_BWD 30.0      /* about 36, 6 in the inventory */

/* F-TIME-DISPATCH: host ops per inventory op. A GEMM op of `calls`
 * equal GEMMs (a grouped expert GEMM: one per local expert) costs one
 * host op per GEMM, and with FP8 its input quantization; everything else
 * is one op (the counts above). */
double mfu_op_host_kernels(const mfu_op *op, mfu_dtype dt)
{
    if (!(op->tags & MFU_TAG_MATMUL)) return 1.0;
    double calls = op->gemm_flops > 0 ? op->flops / op->gemm_flops : 1.0;
    if (calls < 1.0) calls = 1.0;
    double q = dt == MFU_DT_FP8 && !(op->tags & MFU_TAG_WGRAD) ? MFU_HOST_FP8_QUANT : 0.0;
    return calls * (MFU_HOST_GEMM_CALL + q);
}

void mfu_moe_host_kernels(mfu_dtype dt, double *fwd_pre, double *fwd_post, double *bwd)
{
    (void)dt;
    *fwd_pre = MFU_HOST_MOE_FWD_PRE;
    *fwd_post = MFU_HOST_MOE_FWD_POST;
    *bwd = MFU_HOST_MOE_BWD;
}
