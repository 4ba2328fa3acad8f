/* core/roofline.c -- the Roofline Bound (docs/model.md F-ROOF, F-MFU). */
#include <stddef.h>
#include <string.h>
#include "roofline.h"

double mfu_useful_flops(const mfu_model *m, const mfu_training *t)
{
    return 3.0 * t->global_batch_tokens * mfu_model_flops_per_token_fwd(m, t->seq, t->conv);
}

static void roof_shape(const mfu_training *t, mfu_shape *s)
{
    memset(s, 0, sizeof *s);
    s->mbs = t->global_batch_tokens / (double)t->seq;
    s->seq = t->seq;
    s->tp = s->cp = s->ep = s->etp = 1;
    s->dtype = t->dtype;
    s->attn_impl = t->attn_impl;
    /* the ideal's FP8 casts take their scale in one pass (F-TIME-FP8-AMAX):
     * a recipe's amax pass is a gap, as the unfused loss and gradient
     * accumulation are (roof_shape leaves those out too) */
    s->fp8_recipe = MFU_FP8_DELAYED;
    s->moe_no_copies = 1; /* nor the framework's MoE copies (F-MOE-SORT, F-MOE-FP8-PAD) */
}

/* Add ops[0..n) to out. */
static void roof_add(const mfu_hardware *hw, const mfu_training *t, const mfu_op *ops, int n,
                     mfu_roofline *out)
{
    double peak = hw->peak_flops[t->dtype];
    for (int i = 0; i < n; i++) {
        double ti = mfu_op_time(&ops[i], hw, t->dtype, NULL) * ops[i].count;
        out->step_time_s += ti;
        out->f_exec_flops += ops[i].flops * ops[i].count;
        if (mfu_op_compute_bound(&ops[i], hw, t->dtype)) {
            out->compute_bound_s += ti;
        } else {
            out->memory_bound_s += ti;
            out->memory_bound_excess_s += ti - ops[i].flops * ops[i].count / peak;
        }
    }
    out->n_ops += n;
}

static void roof_finish(const mfu_model *m, const mfu_hardware *hw, const mfu_training *t,
                        mfu_roofline *out)
{
    out->f_useful_flops = mfu_useful_flops(m, t);
    double peak = hw->peak_flops[t->dtype];
    out->mfu = out->step_time_s > 0 ? out->f_useful_flops / (peak * out->step_time_s) : 0.0;
}

int mfu_roofline_totals(const mfu_model *m, const mfu_hardware *hw, const mfu_training *t,
                        mfu_op *scratch, mfu_roofline *out)
{
    mfu_shape s;
    roof_shape(t, &s);
    memset(out, 0, sizeof *out);
    int n = mfu_ops_embed(m, &s, scratch, MFU_SCRATCH_OPS);
    if (n > MFU_SCRATCH_OPS) return MFU_ETOOMANYOPS;
    roof_add(hw, t, scratch, n, out);
    for (int r = 0; r < m->n_runs; r++) {
        n = mfu_ops_layer(m, r, &s, scratch, MFU_SCRATCH_OPS);
        if (n > MFU_SCRATCH_OPS) { memset(out, 0, sizeof *out); return MFU_ETOOMANYOPS; }
        roof_add(hw, t, scratch, n, out);
    }
    /* F-OP-MTP: each depth's layer, once (mfu_ops_model's) */
    for (int d = 0; d < m->mtp_layers && m->n_runs > 0; d++) {
        n = mfu_ops_layer(m, m->n_runs - 1, &s, scratch, MFU_SCRATCH_OPS);
        if (n > MFU_SCRATCH_OPS) { memset(out, 0, sizeof *out); return MFU_ETOOMANYOPS; }
        for (int i = 0; i < n; i++) scratch[i].count = 1.0;
        roof_add(hw, t, scratch, n, out);
    }
    n = mfu_ops_head(m, &s, scratch, MFU_SCRATCH_OPS);
    if (n > MFU_SCRATCH_OPS) { memset(out, 0, sizeof *out); return MFU_ETOOMANYOPS; }
    roof_add(hw, t, scratch, n, out);
    roof_finish(m, hw, t, out);
    return MFU_OK;
}

int mfu_roofline_compute(const mfu_model *m, const mfu_hardware *hw, const mfu_training *t,
                         mfu_op *ops, int max, mfu_roofline *out)
{
    mfu_shape s;
    roof_shape(t, &s);
    int n = mfu_ops_model(m, &s, ops, max);
    memset(out, 0, sizeof *out);
    if (n > max) return MFU_ETOOMANYOPS;
    roof_add(hw, t, ops, n, out);
    roof_finish(m, hw, t, out);
    return MFU_OK;
}
