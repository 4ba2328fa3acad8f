/* core/ops_int.h -- what core/ops.c and core/ops_attn.c share and nobody
 * else needs: the inventory builder and its small helpers (docs/model.md
 * F-OP), and the attention block's entry points. */
#ifndef MFU_OPS_INT_H
#define MFU_OPS_INT_H

#include <math.h>
#include <string.h>

#include "ops.h"

/* F-TIME-WAVE: expert GEMMs of one grouped GEMM that run at once */
#define MFU_GROUPED_STREAMS 4.0

typedef struct builder {
    mfu_op *out;
    int n, max;
    int run;
    double count;
    double eb; /* GEMM operand bytes */
    double ab; /* activation bytes */
    unsigned fr, rr; /* recompute masks given to the next forward ops */
    unsigned mx;     /* MaxText name of the next forward ops' outputs */
    double gacc;     /* F-TIME-WGRAD-ACC: bytes per weight element of an unfused
                      * accumulation (0: fused into the GEMM) */
    int fp8_recipe;  /* F-TIME-FP8-AMAX: MFU_FP8_* */
} builder;


/* A builder writing into out[max] for layer run `run` (-1: embedding and
 * head) of `count` layers, at shape s's operand and activation types. */
static inline builder builder_for(mfu_op *out, int max, int run, double count, const mfu_shape *s)
{
    builder b = {out, 0, max, run, count, mfu_dtype_bytes(s->dtype), s->dtype == MFU_DT_FP32 ? 4.0 : 2.0,
                 0u, 0u, 0u, s->wgrad_unfused ? s->grad_acc_bytes : 0.0, s->fp8_recipe};
    return b;
}

/* The MaxText name of what the next forward ops produce (0: none). */
static inline void mx(builder *b, unsigned cat) { b->mx = cat; }

/* The recompute masks of what is pushed next: saved tensors freed by `fr`,
 * ops run again by `rr`. */
static inline void rc(builder *b, unsigned fr, unsigned rr)
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
    o->gemm_out = 0.0;
    o->gemm_k = 0.0;
    o->saved_bytes = ph == MFU_FWD ? saved : 0.0;
    o->rc_free = ph == MFU_FWD ? b->fr : 0u;
    o->rc_rerun = ph == MFU_FWD ? b->rr : 0u;
    o->mx = ph == MFU_FWD ? b->mx : 0u;
    o->out_bytes = 0.0;
    o->kv_len = 0.0;
    o->head_dim_qk = o->head_dim_v = 0.0;
    o->kernels = 1.0;
    o->sac_saved = 0.0;
    o->sac_rerun = -1.0;
    return o;
}

/* Set the bytes of the named output (MFU_MX_*) of the last forward op
 * pushed: the tensor MaxText names, where it is not the GEMM's whole
 * [M, N] output (the attention kernel's; a row-parallel projection's after
 * its reduce-scatter). A full list (n > max) keeps nothing to set. */
static inline void named_out_bytes(builder *b, double bytes)
{
    for (int i = (b->n < b->max ? b->n : b->max) - 1; i >= 0; i--)
        if (b->out[i].phase == MFU_FWD) {
            if (b->out[i].mx) b->out[i].out_bytes = bytes;
            return;
        }
}

/* A linear layer: forward GEMM and its two backward GEMMs. `groups` GEMMs of
 * equal size share the work (MoE experts: M rows spread over local experts,
 * every local expert's weights read). `saved_elems` elements of its input
 * are kept for the weight gradient, in the GEMM operand type (fp8 training
 * keeps the FP8 cast) -- 0 when another op already keeps that tensor. */
static inline void matmul3(builder *b, const char *fwd, const char *dgrad, const char *wgrad,
                    unsigned tags, double M, double K, double N, double groups, double saved_elems)
{
    double eb = (tags & MFU_TAG_HIGH_PREC) ? b->ab : b->eb, ab = b->ab;
    double saved = (eb < ab ? eb : ab) * saved_elems;
    double flops = 2.0 * M * K * N;
    double wbytes = K * N * groups;
    tags |= MFU_TAG_MATMUL;
    if (eb < ab) {
        /* FP8: the activation input is quantized before the forward GEMM and
         * the output gradient before the backward ones (read 16-bit, write
         * 8-bit, F-TIME-FP8) in both layouts: each feeds one GEMM row-wise
         * and the weight gradient column-wise (Transformer Engine's
         * cast_transpose / quantizers with rowwise and columnwise usage;
         * Hopper's FP8 GEMMs take only the TN layout), so two 8-bit copies
         * are written; weights are cast once per step. F-TIME-FP8-AMAX:
         * under per-tensor current scaling the tensor's amax is found first,
         * by a kernel that reads it once more, and the scale by another
         * (Transformer Engine pytorch/csrc/quantizer.cpp,
         * Float8CurrentScalingQuantizer::quantize_impl: compute_amax,
         * compute_scale_from_amax, quantize). A grouped GEMM's input is
         * cast per expert (extensions/cast.cpp split_quantize ->
         * multi_tensor_quantize_impl): one fused kernel for all of them
         * under delayed scaling only (nvte_multi_cast_transpose), each
         * expert's own quantize otherwise */
        unsigned ct = tags & ~(unsigned)(MFU_TAG_MATMUL | MFU_TAG_WGRAD | MFU_TAG_COLPAR);
        unsigned fr = b->fr;
        int cur = b->fp8_recipe == MFU_FP8_TENSORWISE;
        double rd = cur ? 2.0 * ab : ab;
        double kern = (cur ? 3.0 : 1.0) * (b->fp8_recipe == MFU_FP8_DELAYED ? 1.0 : groups);
        b->fr = 0u;
        mfu_op *q = push(b, "fp8_cast", MFU_FWD, ct, M * K, (rd + 2.0 * eb) * M * K, 0);
        if (q) q->kernels = kern;
        b->fr = fr;
        q = push(b, "fp8_cast.bwd", MFU_BWD, ct, M * N, (rd + 2.0 * eb) * M * N, 0);
        if (q) q->kernels = kern;
    }
    mfu_op *o = push(b, fwd, MFU_FWD, tags, flops, eb * (M * K + wbytes) + ab * M * N, saved);
    /* F-TIME-WAVE: each GEMM's output, forward [M/groups, N], data
     * gradient [M/groups, K], weight gradient [K, N]; a grouped GEMM's
     * experts share the SMs four at a time (Transformer Engine runs them
     * on its 4 compute streams: common/util/multi_stream.cpp
     * get_num_compute_streams, gemm/cublaslt_gemm.cu
     * multi_stream_cublas_gemm), so their tiles fill waves together.
     * F-TIME-GEMM-K: each one's reduction runs over K (forward), N (data
     * gradient) and one expert's tokens (weight gradient) */
    double conc = groups < MFU_GROUPED_STREAMS ? groups : MFU_GROUPED_STREAMS;
    if (o) {
        o->gemm_flops = flops / groups;
        o->gemm_out = M * N / groups * conc;
        o->gemm_k = K;
        o->out_bytes = ab * M * N;
    }
    o = push(b, dgrad, MFU_BWD, tags, flops, eb * (M * N + wbytes) + ab * M * K, 0);
    if (o) {
        o->gemm_flops = flops / groups;
        o->gemm_out = M * K / groups * conc;
        o->gemm_k = N;
    }
    /* fused, the GEMM reads and writes the fp32 sum; unfused, it writes
     * the gradient for the add below */
    o = push(b, wgrad, MFU_BWD, tags | MFU_TAG_WGRAD, flops,
             eb * (M * K + M * N) + (b->gacc > 0 ? ab : 8.0) * wbytes, 0);
    if (o) {
        o->gemm_flops = flops / groups;
        o->gemm_out = K * N * conc;
        o->gemm_k = M / groups; /* one expert's tokens */
    }
    /* F-TIME-WGRAD-ACC: without gradient-accumulation fusion the weight
     * gradient is added to the accumulated one by its own kernel each
     * micro-batch (the fused GEMM's epilogue does it in the bytes above) */
    if (b->gacc > 0)
        push(b, "wgrad_accum", MFU_BWD, (tags | MFU_TAG_WGRAD) & ~(unsigned)(MFU_TAG_MATMUL | MFU_TAG_COLPAR),
             wbytes, b->gacc * wbytes, 0);
}

/* An elementwise op over n_in input and n_out output elements, with its
 * backward reading the saved inputs and dY and writing dX. */
static inline void elementwise(builder *b, const char *fwd, const char *bwd, unsigned tags, double n_in,
                        double n_out, double flops_per_out, double saved)
{
    double ab = b->ab;
    push(b, fwd, MFU_FWD, tags, flops_per_out * n_out, ab * (n_in + n_out), saved);
    push(b, bwd, MFU_BWD, tags, 2.0 * flops_per_out * n_out, ab * (2.0 * n_in + n_out), 0);
}

static inline double norm_flops_per_elem(const mfu_model *m)
{
    /* RMSNorm: square, sum, scale, weight (4); LayerNorm adds mean and bias (5). */
    return m->norm == MFU_NORM_LAYER ? 5.0 : 4.0;
}

/* Residual add of the block output, with dropout before it when the model
 * has dropout (Korthikanti: the dropout mask costs 1 byte per element). */
static inline void residual(builder *b, const mfu_model *m, const char *fwd, const char *bwd, double Te,
                     double h)
{
    double n = Te * h, ab = b->ab;
    double mask = m->dropout ? n : 0.0;
    push(b, fwd, MFU_FWD, MFU_TAG_LAYER | MFU_TAG_TP_REPL, (m->dropout ? 2.0 : 1.0) * n,
         ab * 3.0 * n + mask, mask);
    push(b, bwd, MFU_BWD, MFU_TAG_LAYER, (m->dropout ? 2.0 : 1.0) * n, ab * 3.0 * n + mask, 0);
}

static inline double act_flops(mfu_act a)
{
    /* GeLU (tanh form) ~8 FLOPs per element, SiLU x*sigmoid(x) ~4, ReLU 1. */
    return a == MFU_ACT_GELU ? 8.0 : a == MFU_ACT_SILU ? 4.0 : 1.0;
}

/* ops_attn.c: the attention block -- projections by kind (the heads and
 * widths the kernel runs with), the kernel, the output gates and
 * projection. */
void mfu_ops_attn_projections(builder *b, const mfu_model *m, const mfu_attention *a,
                              const mfu_shape *s, double T, double Te, double h, double nf,
                              double *Hq_, double *Hkv_, double *dqk_, double *dv_);
void mfu_ops_attn_core(builder *b, const mfu_model *m, const mfu_attention *a, const mfu_shape *s,
                       double Hq, double Hkv, double dqk, double dv, double T, double Tkv);
void mfu_ops_attn_outputs(builder *b, const mfu_attention *a, double T, double h, double Hq,
                          double dv);

#endif
