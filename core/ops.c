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
#include "ops_int.h"

const char *const mfu_rcm_names[MFU_RCM_COUNT] = {"core_attn", "layernorm", "mlp", "moe_act",
                                                  "moe", "mla_up_proj", "shared_experts", "act",
                                                  "expert_gemm"};
const char *const mfu_mx_names[MFU_MX_COUNT] = {"qkv_proj", "context", "out_proj", "mlpwi", "mlpwo",
                                                "decoder_layer_input"};

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
    matmul3(b, names[0], names[1], names[2], t | MFU_TAG_COLPAR, T, h, up_n, 1.0, first_saves_input ? Te * h : 0.0);
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
    /* "mlpwo": reduce-scattered over tp as out_proj's */
    named_out_bytes(b, b->ab * Te * h);
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


/* The shared experts beside the routed ones (and Qwen's gate on them). */
static void shared_experts(builder *b, const mfu_mlp *p, double T, double Te, double h, double tp,
                           unsigned t)
{
    double ab = b->ab;
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

/* The routed experts' grouped up projection, activation and down
 * projection over Ts slots on `local` experts (F-MOE-FP8-PAD's copies
 * around them in FP8), tags te. */
static void expert_mlp(builder *b, const mfu_mlp *p, const mfu_shape *s, double Ts, double local, double h,
                       unsigned te)
{
    double ab = b->ab, etp = (double)s->etp, slots = Ts * h;
    double I = (double)p->expert_ffn_dim;
    double up_n = (p->gated ? 2.0 : 1.0) * I / etp;
    /* F-MOE-FP8-PAD: in FP8 the grouped GEMM wants each expert's rows a
     * multiple of 16 (32 MXFP8): Megatron-Core's TEGroupedMLP pads its
     * input and the probabilities (Transformer Engine Fp8Padding,
     * fused_multi_row_padding) and unpads its output (Fp8Unpadding), a
     * copy each unless every expert's count is already aligned, which
     * random routing almost never gives (--moe-router-padding-for-fp8,
     * off by default, aligns them in the router instead): core_v0.15.0
     * moe/experts.py TEGroupedMLP.forward; TE module/fp8_padding.py */
    int pad = b->eb < ab && !s->moe_no_copies;
    if (pad) {
        push(b, "expert_fp8_pad", MFU_FWD, te, 0, 2.0 * ab * (slots + Ts), 0);
        push(b, "expert_fp8_pad.bwd", MFU_BWD, te, 0, 2.0 * ab * (slots + Ts), 0);
    }
    /* the up projection keeps its input (the dispatched slots) unless the
     * whole layer reruns; expert_gemm reruns it from them */
    rc(b, MFU_RCM_MOE, MFU_RCM_MOE | MFU_RCM_EXPERT_GEMM);
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
    rc(b, MFU_RCM_MOE | MFU_RCM_EXPERT_GEMM, MFU_RCM_MOE | MFU_RCM_MOE_ACT | MFU_RCM_ACT | MFU_RCM_EXPERT_GEMM);
    elementwise(b, EXPERT_NAMES[3], EXPERT_NAMES[4], te, n_in, n_out,
                act_flops(p->act) + (p->gated ? 1.0 : 0.0) + 1.0, ab * n_in + 4.0 * Ts);
    rc(b, MFU_RCM_MOE | MFU_RCM_MOE_ACT | MFU_RCM_ACT | MFU_RCM_EXPERT_GEMM, MFU_RCM_MOE | MFU_RCM_EXPERT_GEMM);
    mx(b, MFU_MX_WO);
    matmul3(b, EXPERT_NAMES[5], EXPERT_NAMES[6], EXPERT_NAMES[7], te, Ts, I / etp, h, local,
            n_out);
    rc(b, MFU_RCM_MOE, MFU_RCM_MOE);
    if (pad) {
        push(b, "expert_fp8_unpad", MFU_FWD, te, 0, 2.0 * ab * slots, 0);
        push(b, "expert_fp8_unpad.bwd", MFU_BWD, te, 0, 2.0 * ab * slots, 0);
    }
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
    /* 16-bit under FP8 training (F-TIME-FP8): Megatron's TopKRouter.gating
     * is a plain torch linear (megatron/core/transformer/moe/router.py),
     * torchtitan's float8 recipe filters "router.gate"
     * (torchtitan/components/quantization/float8.md) */
    matmul3(b, "router", "router.dgrad", "router.wgrad", t | MFU_TAG_HIGH_PREC, Te, h, E, 1.0, Te * h);
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
    /* F-MOE-SORT: with more than one local expert the received slots are
     * sorted by local expert after the all-to-all and back before it
     * ("Permutation 2" / "Unpermutation 2", sort_chunks_by_idxs; a
     * transpose copy when padded to capacity: Megatron-Core core_v0.15.0
     * moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher.
     * dispatch_postprocess / combine_preprocess): each a copy of the slots
     * (read and write; the probabilities, in the router's dtype -- the
     * activations' unless --moe-router-dtype -- with the first), again in
     * the backward */
    if (local > 1.0 && !s->moe_no_copies) {
        push(b, "moe_sort", MFU_FWD, t | MFU_TAG_EXPERT, 0, 2.0 * ab * (slots + Ts), 0);
        push(b, "moe_sort.bwd", MFU_BWD, t | MFU_TAG_EXPERT, 0, 2.0 * ab * (slots + Ts), 0);
    }
    unsigned te = t | MFU_TAG_EXPERT;
    expert_mlp(b, p, s, Ts, local, h, te);
    /* combine: the k (already weighted) expert outputs summed back into
     * token order; its backward gathers the output gradient to the slots */
    if (local > 1.0 && !s->moe_no_copies) {
        push(b, "moe_unsort", MFU_FWD, te, 0, 2.0 * ab * slots, 0);
        push(b, "moe_unsort.bwd", MFU_BWD, te, 0, 2.0 * ab * slots, 0);
    }
    push(b, "moe_combine", MFU_FWD, te, slots, ab * (slots + Te * h), 0);
    push(b, "moe_combine.bwd", MFU_BWD, te, 0, ab * (slots + Te * h), 0);
    mx(b, 0);
    if (p->n_shared_experts > 0) shared_experts(b, p, T, Te, h, tp, t);
}

/* F-RC-OP-SAC: torchtitan's op-level SAC on a layer of its family
 * (distributed/activation_checkpoint.py _apply_op_sac, v0.2.2): the
 * outputs of ops on the model's save list are kept -- aten.mm but every
 * second one a layer runs (its mm counter restarts with each layer's
 * checkpoint), the attention kernel (out and log-sum-exp) -- and every
 * other op runs again. A llama3/qwen3 layer calls mm as wq, wk, wv, wo, w1,
 * w3, w2 (models/llama3/model/model.py Attention, FeedForward): wq, wv,
 * w1 and w2 kept, wk, wo and w3 rerun; the norms, RoPE, the activation,
 * its product and the residual adds rerun; the layer's input stays (the
 * checkpoint's). An MoE layer calls wq, wk, wv, wo first too; its MoE
 * block (the router's mm, grouped GEMMs off the list, shared experts'
 * mms of shifted parity) is left to the policy's modules (dense_mlp 0).
 * Set on the layer's forward ops: Hq, Hkv heads of width d and the MLP's
 * width I on this device. */
static void tt_op_sac(builder *b, double T, double Te, double h, double Hq, double Hkv, double d,
                      double I, int dense_mlp, int tp_rs)
{
    double ab = b->ab, hq = Hq * d, hkv = Hkv * d;
    /* with TP (always sequence parallel in torchtitan, FW-T2) the
     * row-parallel outputs' reduce-scatters are on the save list too
     * (_c10d_functional.reduce_scatter_tensor): their sequence-split
     * outputs stay, the input all-gathers rerun (F-RC-OP-SAC) */
    double rs = tp_rs ? ab * Te * h : 0.0;
    int in_mlp = 0;
    for (int i = 0; i < b->n && i < b->max; i++) {
        mfu_op *o = &b->out[i];
        if (o->phase != MFU_FWD) continue;
        double kept = 0.0, rerun = 1.0;
        const char *n = o->name;
        if (!strcmp(n, "mlp_residual")) in_mlp = 0;
        else if (in_mlp && !dense_mlp) continue;
        if (!strcmp(n, "mlp_norm")) {
            in_mlp = 1;
        } else if (!strcmp(n, "attn_norm")) {
            kept = ab * Te * h;                    /* the checkpoint's input */
        } else if (!strcmp(n, "qkv_proj")) {
            kept = ab * T * (hq + hkv);            /* wq's and wv's outputs */
            rerun = hkv / (hq + 2.0 * hkv);        /* wk */
        } else if (!strcmp(n, "attn_core")) {
            kept = 4.0 * T * Hq;                   /* the fp32 log-sum-exp */
            rerun = 0.0;
        } else if (!strcmp(n, "out_proj")) {
            kept = o->saved_bytes + rs;            /* the kernel's output, wo's input */
        } else if (!strcmp(n, "mlp_up")) {
            rerun = 0.5;                           /* w3 */
        } else if (!strcmp(n, "mlp_act")) {
            kept = ab * T * I;                     /* w1's output */
        } else if (!strcmp(n, "mlp_down")) {
            kept = ab * T * h + rs;                /* w2's output */
            rerun = 0.0;
        }
        o->sac_saved = kept;
        o->sac_rerun = rerun;
    }
}

/* F-OP-POSTNORM: a post-norm (Gemma 2's post_attention_layernorm and
 * post_feedforward_layernorm, modeling_gemma2.py Gemma2DecoderLayer:
 * residual + norm(block(x))) over the block's output, n elements on the
 * residual stream's tokens (split over tp with sp, as the residual): read,
 * write, and its input kept for the backward -- the block's output, which
 * no other op keeps (the projection before it keeps its own input). No
 * recompute module frees it (Megatron's "layernorm" is the pre-norms');
 * under a MaxText name policy it is the out_proj / mlpwo output the
 * policy names, counted there and not here (no name on this op). */
static void post_norm(builder *b, const mfu_model *m, const char *fwd, const char *bwd, double n,
                      unsigned tags)
{
    if (!m->post_norms) return;
    mx(b, 0);
    rc(b, 0, 0);
    elementwise(b, fwd, bwd, MFU_TAG_LAYER | MFU_TAG_TP_REPL | tags, n, n, norm_flops_per_elem(m), b->ab * n);
}

int mfu_ops_layer(const mfu_model *m, int r, const mfu_shape *s, mfu_op *out, int max)
{
    return mfu_ops_layer_at(m, r, s, out, max, NULL);
}

int mfu_ops_layer_at(const mfu_model *m, int r, const mfu_shape *s, mfu_op *out, int max, int *mlp_from)
{
    const mfu_layer_run *run = &m->runs[r];
    const mfu_attention *a = &run->attn;
    const mfu_mlp *p = &run->mlp;
    builder b = builder_for(out, max, r, (double)run->count, s);
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
    mfu_ops_attn_projections(&b, m, a, s, T, Te, h, nf, &Hq, &Hkv, &dqk, &dv);
    mx(&b, MFU_MX_CONTEXT);
    mfu_ops_attn_core(&b, m, a, s, Hq, Hkv, dqk, dv, T, Tkv);
    /* "context": the kernel's output, on its last forward op */
    named_out_bytes(&b, ab * T * Hq * dv);
    mfu_ops_attn_outputs(&b, a, T, h, Hq, dv);
    /* "out_proj": the row-parallel projection's output as the layer keeps
     * it, reduce-scattered over tp with sequence parallelism (Te tokens;
     * MaxText's out_sharding over the activation embedding, FW-X7) */
    named_out_bytes(&b, ab * Te * h);
    post_norm(&b, m, "attn_post_norm", "attn_post_norm.bwd", Te * h, 0u);
    residual(&b, m, "attn_residual", "attn_residual.bwd", Te, h);

    /* ---- MLP block ---- */
    if (mlp_from) *mlp_from = b.n;
    rc(&b, 0, MFU_RCM_LAYERNORM);
    elementwise(&b, "mlp_norm", "mlp_norm.bwd", L | MFU_TAG_TP_REPL | MFU_TAG_MLP, Te * h, Te * h,
                nf, ab * Te * h);
    if (p->kind == MFU_MLP_DENSE) {
        dense_mlp(&b, p, T, Te, h, (double)p->ffn_dim, tp, 1, 0, MLP_NAMES);
    } else {
        moe_block(&b, p, s, T, Te, h);
    }
    rc(&b, 0, 0);
    post_norm(&b, m, "mlp_post_norm", "mlp_post_norm.bwd", Te * h, MFU_TAG_MLP);
    residual(&b, m, "mlp_residual", "mlp_residual.bwd", Te, h);
    /* torchtitan's family of layers, its flash kernels (FW-T12) */
    if (a->kind == MFU_ATTN_MHA && !a->output_gate && !a->sinks && s->attn_impl == MFU_ATTN_FLASH &&
        !m->dropout && dqk == dv)
        tt_op_sac(&b, T, Te, h, Hq, Hkv, dqk, (double)p->ffn_dim / tp, p->kind == MFU_MLP_DENSE && p->gated,
                  tp > 1 && s->sp);
    return b.n;
}

int mfu_ops_embed(const mfu_model *m, const mfu_shape *s, mfu_op *out, int max)
{
    builder b = builder_for(out, max, -1, 1.0, s);
    double h = (double)m->d_model, ab = b.ab;
    double T = s->mbs * (double)s->seq / (double)s->cp;
    double Te = s->sp ? T / (double)s->tp : T;
    /* Lookup: gather T rows, write the embeddings (vocab-parallel over tp). */
    push(&b, "embedding", MFU_FWD, 0, 0, ab * (T * h + Te * h), 0);
    /* Backward: scatter-add dY rows into the fp32 gradient table (read and
     * write the touched rows, 8 bytes per element). */
    push(&b, "embedding.bwd", MFU_BWD, 0, T * h, ab * T * h + 8.0 * T * h, 0);
    /* F-TIME-WGRAD-ACC: the table's (dense) gradient is added to the
     * accumulated one by its own kernel each micro-batch, fused GEMMs or
     * not: gradient-accumulation fusion covers linear layers only
     * (Megatron-Core's DDP hook: main_grad.add_(grad) for the rest) */
    if (s->grad_acc_bytes > 0) {
        double w = (double)m->vocab / (double)s->tp * h;
        push(&b, "embedding.grad_accum", MFU_BWD, MFU_TAG_WGRAD, w, s->grad_acc_bytes * w, 0);
    }
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

/* The names of one head's ops: the model's, and each MTP depth's. */
enum { HN_NORM, HN_NORM_B, HN_LM, HN_LM_D, HN_LM_W, HN_CAP, HN_CAP_B, HN_LOSS, HN_LOSS_B, HN_MAX, HN_SUB,
       HN_EXP, HN_SUM, HN_DIV, HN_SCALE, HN_COUNT };
static const char *const HEAD_NAMES[HN_COUNT] = {
    "final_norm", "final_norm.bwd", "lm_head", "lm_head.dgrad", "lm_head.wgrad", "logit_softcap",
    "logit_softcap.bwd", "loss", "loss.bwd", "loss.max", "loss.sub", "loss.exp", "loss.sum", "loss.div",
    "loss.bwd_scale"};
static const char *const MTP_HEAD_NAMES[HN_COUNT] = {
    "mtp_final_norm", "mtp_final_norm.bwd", "mtp_lm_head", "mtp_lm_head.dgrad", "mtp_lm_head.wgrad",
    "mtp_logit_softcap", "mtp_logit_softcap.bwd", "mtp_loss", "mtp_loss.bwd", "mtp_loss.max", "mtp_loss.sub",
    "mtp_loss.exp", "mtp_loss.sum", "mtp_loss.div", "mtp_loss.bwd_scale"};

/* The final norm, LM head and loss over T tokens (Te with sp). */
static void head_loss(builder *b, const mfu_model *m, const mfu_shape *s, double T, double Te,
                      const char *const *nm)
{
    double h = (double)m->d_model, ab = b->ab;
    double tp = (double)s->tp;
    double V = (double)m->vocab;
    elementwise(b, nm[HN_NORM], nm[HN_NORM_B], MFU_TAG_TP_REPL, Te * h, Te * h, norm_flops_per_elem(m),
                ab * Te * h);
    /* 16-bit under FP8 training (F-TIME-FP8): Megatron's output layer is a
     * tensor_parallel.ColumnParallelLinear, not a Transformer Engine module,
     * unless MXFP8 for it is asked for (megatron/core/models/gpt/
     * gpt_model.py); torchtitan's float8 recipe filters "output"
     * (torchtitan/components/quantization/float8.md) */
    matmul3(b, nm[HN_LM], nm[HN_LM_D], nm[HN_LM_W], MFU_TAG_HIGH_PREC, T, h, V / tp, 1.0, Te * h);
    /* Cross-entropy over the (vocab-parallel) logits in fp32 (Megatron
     * vocab_parallel_cross_entropy): reads the bf16 logits, keeps the fp32
     * softmax for the backward (Korthikanti sec. 4.3: 4sbv/t bytes). */
    double n = T * V / tp;
    if (m->logit_softcap) {
        /* F-OP-SOFTCAP: cap * tanh(logits / cap) (Gemma2ForCausalLM,
         * final_logit_softcapping): a pass over the 16-bit logits, read and
         * write, a divide, tanh and multiply a logit (3 FLOPs counted), its
         * output kept for the backward (d tanh = 1 - tanh^2), and in the
         * backward a pass reading it and the gradient and writing one. XLA
         * fuses both into the loss's own passes (F-MEM-LOGITS-XLA): the
         * FLOPs stay, the passes and the kept output do not */
        int x = s->xla_loss;
        push(b, nm[HN_CAP], MFU_FWD, 0, 3.0 * n, x ? 0.0 : 2.0 * ab * n, x ? 0.0 : ab * n);
        push(b, nm[HN_CAP_B], MFU_BWD, 0, 3.0 * n, x ? 0.0 : 3.0 * ab * n, 0);
    }
    /* F-MEM-LOGITS-XLA: MaxText's loss (max_utils.cross_entropy_with_logits,
     * a custom VJP over the logits cast to fp32, cast_logits_to_fp32) keeps
     * the fp32 logits and exp(logits - max) as residuals, both elementwise
     * in the LM head's 16-bit output: XLA fuses them into their consumers
     * (and under its memory limit rematerializes them, HloRematerialization)
     * rather than storing them in fp32. What must exist is the head's
     * output: it stays, 16-bit, in place of the softmax */
    push(b, nm[HN_LOSS], MFU_FWD, 0, 5.0 * n, ab * n + 4.0 * n, s->xla_loss ? ab * n : 4.0 * n);
    push(b, nm[HN_LOSS_B], MFU_BWD, 0, 2.0 * n, 4.0 * n + ab * n, 0);
    if (s->ce_unfused) {
        /* F-TIME-CE-UNFUSED: Megatron's vocab_parallel_cross_entropy
         * without --cross-entropy-loss-fusion (the only kind before 2024-06)
         * makes a pass over the fp32 logits per PyTorch op; "loss" above is
         * the upcast and the softmax it keeps, these the rest: the max over
         * the vocabulary (read), the in-place subtraction, exp and division
         * (read and write), the sum of exponentials (read); in the backward
         * the gradient's in-place scaling by the output gradient (read and
         * write), the downcast being "loss.bwd" (megatron/mpu/
         * cross_entropy.py of v2.5, megatron/core/tensor_parallel/
         * cross_entropy.py today) */
        push(b, nm[HN_MAX], MFU_FWD, 0, n, 4.0 * n, 0);
        push(b, nm[HN_SUB], MFU_FWD, 0, n, 8.0 * n, 0);
        push(b, nm[HN_EXP], MFU_FWD, 0, n, 8.0 * n, 0);
        push(b, nm[HN_SUM], MFU_FWD, 0, n, 4.0 * n, 0);
        push(b, nm[HN_DIV], MFU_FWD, 0, n, 8.0 * n, 0);
        push(b, nm[HN_SCALE], MFU_BWD, 0, n, 8.0 * n, 0);
    }
}

int mfu_ops_head(const mfu_model *m, const mfu_shape *s, mfu_op *out, int max)
{
    builder b = builder_for(out, max, -1, 1.0, s);
    double h = (double)m->d_model, ab = b.ab;
    double tp = (double)s->tp;
    double T = s->mbs * (double)s->seq / (double)s->cp;
    double Te = s->sp ? T / tp : T;
    head_loss(&b, m, s, T, Te, HEAD_NAMES);
    /* F-OP-MTP: each multi-token prediction depth (Megatron-Core
     * multi_token_prediction.py MultiTokenPredictionLayer; DeepSeek-V3
     * report 2.2): RMSNorms of the shifted tokens' embedding (enorm) and of
     * the previous depth's hidden state (hnorm), their concatenation
     * projected 2h -> h (eh_proj, column-parallel), a transformer layer (the
     * last layer's kind: mfu_stage_mtp adds it to the stage that holds the
     * head, where its recompute and communication are the layers'), then
     * its own final norm, the shared LM head and a loss */
    for (int d = 0; d < m->mtp_layers; d++) {
        elementwise(&b, "mtp_norms", "mtp_norms.bwd", MFU_TAG_TP_REPL, 2.0 * Te * h, 2.0 * Te * h,
                    norm_flops_per_elem(m), ab * 2.0 * Te * h);
        matmul3(&b, "mtp_proj", "mtp_proj.dgrad", "mtp_proj.wgrad", 0u, T, 2.0 * h, h / tp, 1.0, 2.0 * Te * h);
        head_loss(&b, m, s, T, Te, MTP_HEAD_NAMES);
    }
    return b.n;
}

int mfu_ops_model(const mfu_model *m, const mfu_shape *s, mfu_op *out, int max)
{
    int n = mfu_ops_embed(m, s, out, max);
    for (int r = 0; r < m->n_runs; r++) {
        int k = n < max ? n : max;
        n += mfu_ops_layer(m, r, s, out + k, max - k);
    }
    /* F-OP-MTP: each depth's transformer layer, the last layer's kind */
    for (int d = 0; d < m->mtp_layers && m->n_runs > 0; d++) {
        int k = n < max ? n : max;
        n += mfu_ops_layer(m, m->n_runs - 1, s, out + k, max - k);
        for (int i = k; i < (n < max ? n : max); i++) out[i].count = 1.0; /* once, not the run's count */
    }
    int k = n < max ? n : max;
    n += mfu_ops_head(m, s, out + k, max - k);
    return n;
}
