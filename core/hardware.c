/* core/hardware.c -- ridge point, efficiency curve lookup, tier selection. */
#include "hardware.h"

#include <math.h>

double mfu_ridge_point(const mfu_hardware *hw, mfu_dtype dt)
{
    return hw->peak_flops[dt] / hw->hbm_bw_bytes_s;
}

void mfu_efficiency_ideal(mfu_efficiency *e)
{
    e->n_gemm = 0;
    e->attn_eff = 1.0;
    e->attn_half_tokens = 0.0;
    e->gemm_wave_elems = 0.0;
    e->gemm_half_k = 0.0;
    e->fp8_gemm_half_k = 0.0;
    e->hbm_eff = 1.0;
    for (int i = 0; i < MFU_MAX_TIERS; i++) {
        e->net_eff[i] = 1.0;
        e->net_half_bytes[i] = 0.0;
    }
    e->step_overhead_s = 0.0;
    e->overlap_slowdown = 0.0;
    e->gemm_scale = 1.0;
    e->fp8_gemm_scale = 1.0;
    e->fp8_bwd_gemm_scale = 1.0;
    e->kernel_overhead_s = 0.0;
    e->gemm_overhead_s = 0.0;
    e->microbatch_overhead_s = 0.0;
    e->host_op_s = 0.0;
    e->uncertainty = 0.0;
}

void mfu_efficiency_set_gemm(mfu_efficiency *e, int i, double flops, double eff)
{
    e->gemm_flops[i] = flops;
    e->gemm_eff[i] = eff;
    e->gemm_ln_flops[i] = log(flops);
}

static double gemm_curve(const mfu_efficiency *e, double flops)
{
    int n = e->n_gemm;
    if (n <= 0) return 1.0;
    if (flops <= e->gemm_flops[0]) return e->gemm_eff[0];
    if (flops >= e->gemm_flops[n - 1]) return e->gemm_eff[n - 1];
    for (int i = 1; i < n; i++) {
        if (flops <= e->gemm_flops[i]) {
            double x0 = e->gemm_ln_flops[i - 1], x1 = e->gemm_ln_flops[i];
            double t = (log(flops) - x0) / (x1 - x0);
            return e->gemm_eff[i - 1] + t * (e->gemm_eff[i] - e->gemm_eff[i - 1]);
        }
    }
    return e->gemm_eff[n - 1];
}

double mfu_gemm_eff(const mfu_efficiency *e, double flops)
{
    double v = gemm_curve(e, flops) * (e->gemm_scale > 0 ? e->gemm_scale : 1.0);
    return v > 1.0 ? 1.0 : v;
}

int mfu_tier_for_span(const mfu_hardware *hw, int64_t span)
{
    for (int i = 0; i < hw->n_tiers; i++)
        if (span <= hw->tiers[i].domain_size) return i;
    return hw->n_tiers - 1;
}
