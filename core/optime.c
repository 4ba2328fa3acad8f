/* core/optime.c -- the time of one operator (docs/model.md F-ROOF,
 * F-TIME-OP, F-TIME-FP8, F-TIME-ATTN-LEN, F-TIME-WAVE, F-TIME-GEMM-K,
 * F-TIME-KERNEL, F-TIME-DISPATCH):
 * its roofs, the efficiency profile's GEMM curve, attention and HBM
 * fractions and fixed costs, and the host ops it issues. Split from
 * core/ops.c (issue 15), which builds the inventory. */
#include "ops.h"

#include <math.h>
#include <string.h>

/* Compute roof of an op: matmuls and fused attention run on the matrix
 * units at the dtype's peak; elementwise work (norms, activations, softmax,
 * RoPE, loss) runs on the vector units, whose peak is the chip's fp32
 * (non-tensor) figure where the preset gives one (A100 19.5 TFLOP/s, H100
 * 66.9: NVIDIA datasheets), else the dtype's peak. */
static double op_peak(const mfu_op *op, const mfu_hardware *hw, mfu_dtype dt)
{
    /* attention kernels stay in 16-bit with FP8 GEMMs (Transformer Engine
     * runs DotProductAttention in bf16 unless fp8_dpa; F-TIME-FP8), and so
     * do the GEMMs no framework quantizes by default (MFU_TAG_HIGH_PREC) */
    if ((op->tags & (MFU_TAG_FUSED_ATTN | MFU_TAG_HIGH_PREC)) && dt == MFU_DT_FP8 && hw->peak_flops[MFU_DT_BF16] > 0)
        return hw->peak_flops[MFU_DT_BF16];
    if (op->tags & (MFU_TAG_MATMUL | MFU_TAG_FUSED_ATTN)) return hw->peak_flops[dt];
    double v = hw->peak_flops[MFU_DT_FP32];
    return v > 0 && v < hw->peak_flops[dt] ? v : hw->peak_flops[dt];
}

/* F-TIME-MXU: the fraction of a square systolic matrix unit of side D
 * that a product whose head dimension is d keeps busy: d over d rounded up
 * to a multiple of D (XLA pads the operand). */
static double mxu_fill(double d, double D)
{
    if (d <= 0 || D <= 0) return 1.0;
    double padded = ceil(d / D) * D;
    return d / padded;
}

/* A fused attention kernel's products on a TPU's MXU: forward QK^T
 * (contracts d_qk) and PV (yields d_v), backward QK^T again, dQ and dK
 * (yield d_qk), dP (contracts d_v) and dV (yields d_v). Their FLOPs are
 * in proportion to those dimensions, so the kernel's time grows by the
 * FLOP-weighted mean of 1 / fill. */
static double mxu_attention_factor(const mfu_op *op, const mfu_hardware *hw)
{
    if (hw->mxu_dim <= 0 || op->head_dim_qk <= 0) return 1.0;
    double dq = op->head_dim_qk, dv = op->head_dim_v > 0 ? op->head_dim_v : op->head_dim_qk;
    double wq = op->phase == MFU_BWD ? 3.0 : 1.0, wv = op->phase == MFU_BWD ? 2.0 : 1.0;
    return (wq * dq + wv * dv) / (wq * dq / mxu_fill(dq, hw->mxu_dim) + wv * dv / mxu_fill(dv, hw->mxu_dim));
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
            e *= mxu_attention_factor(op, hw); /* F-TIME-MXU */
            fixed = eff->kernel_overhead_s;
        } else if (op->tags & MFU_TAG_MATMUL) {
            if (dt == MFU_DT_FP8 && !(op->tags & MFU_TAG_HIGH_PREC) && hw->peak_flops[MFU_DT_BF16] > 0) {
                /* the curve's fixed cost per GEMM weighs twice as much at
                 * twice the peak: FP8 at F FLOPs runs as BF16 at F * P16/P8
                 * (F-TIME-FP8) */
                double f16 = op->gemm_flops * hw->peak_flops[MFU_DT_BF16] / hw->peak_flops[MFU_DT_FP8];
                e = mfu_gemm_eff(eff, f16) * (eff->fp8_gemm_scale > 0 ? eff->fp8_gemm_scale : 1.0);
                /* F-TIME-FP8-ACC: the backward's GEMMs accumulate in split
                 * (promoted) mode on Hopper */
                if (op->phase == MFU_BWD && eff->fp8_bwd_gemm_scale > 0) e *= eff->fp8_bwd_gemm_scale;
            } else {
                e = mfu_gemm_eff(eff, op->gemm_flops);
            }
            /* F-TIME-GEMM-K: a short reduction leaves each output tile's
             * fixed prologue and epilogue less main loop to hide behind
             * (K-sweeps at fixed M, N: bench/gemm_k); no credit above the
             * curve's reference length */
            double kh = (dt == MFU_DT_FP8 && !(op->tags & MFU_TAG_HIGH_PREC)) ? eff->fp8_gemm_half_k : eff->gemm_half_k;
            if (kh > 0 && op->gemm_k > 0 && op->gemm_k < MFU_GEMM_REF_K)
                e *= op->gemm_k / (op->gemm_k + kh) * (MFU_GEMM_REF_K + kh) / MFU_GEMM_REF_K;
            if (eff->gemm_wave_elems > 0 && op->gemm_out > 0) {
                /* F-TIME-WAVE: the last wave of output tiles leaves part of
                 * the SMs idle, half a wave on average; an output of less
                 * than one wave gets smaller tiles or split K from the
                 * library, so that it fills at least one */
                double w = fmax(op->gemm_out / eff->gemm_wave_elems, 1.0);
                e *= w / (w + 0.5);
            }
            /* per GEMM call: a grouped expert GEMM is one kernel per local expert */
            fixed = eff->gemm_overhead_s * (op->gemm_flops > 0 ? op->flops / op->gemm_flops : 1.0);
        } else {
            /* F-TIME-KERNEL: launch and tail of each of the op's kernels */
            fixed = eff->kernel_overhead_s * (op->kernels > 1.0 ? op->kernels : 1.0);
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
 *  - FP8: the casts of each GEMM's input in the forward and of its output
 *    gradient before the data-gradient GEMM (the weight gradient GEMM
 *    reuses them) are inventory ops whose kernel count is their host op
 *    count (F-TIME-FP8-AMAX: amax, scale and cast under current scaling,
 *    per expert of a grouped GEMM -- split_quantize -- unless delayed
 *    scaling fuses them into one);
 *  - an MoE layer's forward issues about 61 (56-66) ops besides its
 *    expert GEMMs: router softmax/top-k/maps (10-12), aux-loss scores
 *    (7-8) and loss (7), dispatcher metadata with its all-gather (7),
 *    the device-to-host copies (5), permute (10-14) -- all before the
 *    sync in MoEAlltoAllTokenDispatcher.token_dispatch -- then chunk
 *    sorts, the all-to-alls, SwiGLU and unpermute (about 10); its
 *    backward about 36 (29-43). The inventory holds 5 of the forward's
 *    (router GEMM, top-k before the sync; dispatch, activation, combine
 *    after) and 6 of the backward's, 7 and 8 with the chunk sorts of more
 *    than one local expert (F-MOE-SORT), two more each way in FP8 (the
 *    pad and unpad, F-MOE-FP8-PAD: TE's own ops, beyond these counts). */
#define MFU_HOST_GEMM_CALL 1.0
#define MFU_HOST_MOE_FWD_PRE 49.0  /* about 51 before the sync, 2 in the inventory */
#define MFU_HOST_MOE_FWD_POST 6.0  /* about 11 after it, 5 in the inventory (with the
                                    * chunk sorts, F-MOE-SORT, of more than one local expert) */
#define MFU_HOST_MOE_BWD 28.0      /* about 36, 8 in the inventory (the sorts' too) */

/* F-TIME-DISPATCH: host ops per inventory op. A GEMM op of `calls`
 * equal GEMMs (a grouped expert GEMM: one per local expert) costs one
 * host op per GEMM; every other op one per kernel it launches (an FP8
 * cast its amax, scale and cast kernels, per expert: the counts above). */
double mfu_op_host_kernels(const mfu_op *op, mfu_dtype dt)
{
    (void)dt;
    if (!(op->tags & MFU_TAG_MATMUL)) return op->kernels > 1.0 ? op->kernels : 1.0;
    double calls = op->gemm_flops > 0 ? op->flops / op->gemm_flops : 1.0;
    return (calls < 1.0 ? 1.0 : calls) * MFU_HOST_GEMM_CALL;
}

void mfu_moe_host_kernels(mfu_dtype dt, double *fwd_pre, double *fwd_post, double *bwd)
{
    (void)dt;
    *fwd_pre = MFU_HOST_MOE_FWD_PRE;
    *fwd_post = MFU_HOST_MOE_FWD_POST;
    *bwd = MFU_HOST_MOE_BWD;
}
