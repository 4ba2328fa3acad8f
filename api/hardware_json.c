/* api/hardware_json.c -- the hardware description <-> core structs: peaks
 * per dtype, memory, links and tiers, the efficiency profile (validated
 * field by field with JSON pointers; rendered with every default, so a
 * parse -> render round trip is the normal form). Format:
 * docs/hardware-presets.md, docs/model-ir.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "jsonv.h"

static const char *const PLATFORMS[] = {"gpu", "tpu", NULL};

/* ---- hardware ---------------------------------------------------------- */

/* hardware.peak_flops: FLOP/s per dtype, bf16 required. */
static int hw_peaks(json_t *hw, const char *ptr, mfu_hardware *out, api_status *st)
{
    int bad = 0;
    char p[256], q[256];
    json_t *pf = json_object_get(hw, "peak_flops");
    jv_ptr(p, sizeof p, ptr, "peak_flops");
    if (!json_is_object(pf)) {
        api_fail(st, 422, p, "required object {bf16, fp16, fp8, fp32} of FLOP/s is missing");
        bad = -1;
    } else {
        static const char *const PEAKS[] = {"bf16", "fp16", "fp8", "fp32", NULL};
        bad |= jv_known(pf, p, "peak_flops", PEAKS, st);
        for (int d = 0; d < MFU_DT_COUNT; d++)
            bad |= jv_num(pf, api_dtype_name((mfu_dtype)d), p, d == MFU_DT_BF16, 0.0, 0.0, 1e18, &out->peak_flops[d], st);
        if (!bad && out->peak_flops[MFU_DT_BF16] <= 0) {
            api_fail(st, 422, jv_ptr(q, sizeof q, p, "bf16"), "must be positive");
            bad = -1;
        }
        /* fuzz (tests/fuzz, request): a peak of 1e-300 FLOP/s made every op
         * time infinite and the result unrepresentable in JSON. A given
         * peak is 0 (unsupported) or at least 1e6 FLOP/s, which keeps any
         * op of a model within the limits finite. */
        for (int d = 0; !bad && d < MFU_DT_COUNT; d++)
            if (out->peak_flops[d] > 0 && out->peak_flops[d] < 1e6) {
                api_fail(st, 422, jv_ptr(q, sizeof q, p, api_dtype_name((mfu_dtype)d)),
                         "must be 0 (unsupported) or at least 1e6 FLOP/s");
                bad = -1;
            }
    }
    return bad;
}

/* hardware.memory_reserve, with the GPU presets' defaults. */
static int hw_reserve(json_t *hw, const char *ptr, mfu_hardware *out, api_status *st)
{
    int bad = 0;
    char p[256];
    /* Defaults when a description gives no reserve: the GPU presets' sourced
     * values (presets/hardware/h100-sxm.json notes.memory_reserve); none on
     * TPUs, whose bytes_limit already excludes XLA's reserve. */
    int gpu = out->platform == MFU_PLATFORM_GPU;
    json_t *res = json_object_get(hw, "memory_reserve");
    jv_ptr(p, sizeof p, ptr, "memory_reserve");
    if (res && !json_is_object(res)) {
        api_fail(st, 422, p, "must be an object {context_bytes, comm_buffer_bytes, fragmentation}");
        bad = -1;
        res = NULL;
    }
    static const char *const RESERVE[] = {"context_bytes", "comm_buffer_bytes", "fragmentation", NULL};
    if (res && jv_known(res, p, "memory_reserve", RESERVE, st)) return -1;
    bad |= jv_num(res, "context_bytes", p, JV_OPTIONAL, gpu ? 0.5e9 : 0.0, 0.0, 1e12,
                  &out->reserve.context_bytes, st);
    bad |= jv_num(res, "comm_buffer_bytes", p, JV_OPTIONAL, gpu ? 0.5e9 : 0.0, 0.0, 1e12,
                  &out->reserve.comm_buffer_bytes, st);
    bad |= jv_num(res, "fragmentation", p, JV_OPTIONAL, gpu ? 0.05 : 0.0, 0.0, 0.9,
                  &out->reserve.fragmentation, st);
    return bad;
}

/* hardware.tiers, innermost first: -1 when the list itself is unusable
 * (the caller stops), else 0 with *bad set by a tier's fields. */
static int hw_tiers(json_t *hw, const char *ptr, mfu_hardware *out, int *bad, api_status *st)
{
    char p[256], q[256];
    json_t *tiers = json_object_get(hw, "tiers");
    jv_ptr(p, sizeof p, ptr, "tiers");
    if (!json_is_array(tiers) || json_array_size(tiers) == 0 ||
        json_array_size(tiers) > MFU_MAX_TIERS) {
        api_fail(st, 422, p, "must be an array of 1 to %d network tiers, innermost first",
                 MFU_MAX_TIERS);
        return -1;
    }
    size_t i;
    json_t *t;
    int64_t prev = 0;
    json_array_foreach(tiers, i, t) {
        mfu_net_tier *nt = &out->tiers[i];
        jv_ptr_i(q, sizeof q, p, i);
        static const char *const TIER[] = {"name", "domain_size", "bw_bytes_s", "latency_s", NULL};
        if (json_is_object(t) && jv_known(t, q, "a network tier", TIER, st)) return -1;
        json_t *tn = json_object_get(t, "name");
        if (tn && (!json_is_string(tn) || strlen(json_string_value(tn)) >= sizeof nt->name)) {
            char r[256];
            api_fail(st, 422, jv_ptr(r, sizeof r, q, "name"), "must be a string of at most %d bytes",
                     (int)sizeof nt->name - 1);
            return -1;
        }
        snprintf(nt->name, sizeof nt->name, "%s", json_is_string(tn) ? json_string_value(tn) : "tier");
        int b2 = jv_int(t, "domain_size", q, JV_REQUIRED, 0, 1, API_MAX_DEVICES, &nt->domain_size, st);
        b2 |= jv_num(t, "bw_bytes_s", q, JV_REQUIRED, 0, 1e3, 1e15, &nt->bw_bytes_s, st);
        b2 |= jv_num(t, "latency_s", q, JV_OPTIONAL, 0.0, 0.0, 1.0, &nt->latency_s, st);
        if (!b2 && nt->domain_size <= prev) {
            char r[256];
            api_fail(st, 422, jv_ptr(r, sizeof r, q, "domain_size"),
                     "tiers go innermost first: domain_size must grow (previous %lld)",
                     (long long)prev);
            b2 = -1;
        }
        prev = nt->domain_size;
        *bad |= b2;
    }
    out->n_tiers = (int)json_array_size(tiers);
    return 0;
}

/* One number per network tier in [lo, hi] (efficiency.net, .net_half_bytes). */
static int per_tier(json_t *arr, const char *q, int n_tiers, double lo, double hi, const char *what,
                    const char *range, double *dst, api_status *st)
{
    if (!json_is_array(arr) || (int)json_array_size(arr) != n_tiers) {
        api_fail(st, 422, q, "must be an array with one %s per tier (%d)", what, n_tiers);
        return -1;
    }
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        double v = json_number_value(e);
        if (!json_is_number(e) || !(v >= lo) || v > hi) {
            char r[256];
            api_fail(st, 422, jv_ptr_i(r, sizeof r, q, i), "must be in %s", range);
            return -1;
        }
        dst[i] = v;
    }
    return 0;
}

/* hardware.efficiency (the expected profile): -1 on a malformed curve or
 * per-tier list, else 0 with *bad set by a field. */
static int hw_efficiency(json_t *eff, const char *p, mfu_hardware *out, int *bad, api_status *st)
{
    char q[256];
    size_t i;
    out->has_profile = 1;
    /* the contract's EfficiencyProfile (additionalProperties false): a
     * misspelt "gemm_scal" from a hand-edited profile was passed over */
    static const char *const EFF[] = {"gemm", "attention", "attention_half_tokens", "gemm_wave_elems",
                                      "gemm_half_k", "fp8_gemm_half_k", "hbm", "net", "net_half_bytes",
                                      "step_overhead_s", "overlap_slowdown", "gemm_scale", "fp8_gemm_scale",
                                      "fp8_bwd_gemm_scale", "host_op_s", "kernel_overhead_s", "gemm_overhead_s",
                                      "microbatch_overhead_s", "uncertainty", NULL};
    if (jv_known(eff, p, "efficiency", EFF, st)) *bad = -1;
    json_t *g = json_object_get(eff, "gemm");
    if (g) {
        jv_ptr(q, sizeof q, p, "gemm");
        if (!json_is_array(g) || json_array_size(g) > MFU_MAX_EFF_POINTS) {
            api_fail(st, 422, q, "must be an array of at most %d [flops, efficiency] pairs",
                     MFU_MAX_EFF_POINTS);
            return -1;
        }
        json_t *pt;
        json_array_foreach(g, i, pt) {
            double f = json_number_value(json_array_get(pt, 0));
            double e = json_number_value(json_array_get(pt, 1));
            /* efficiency >= 0.001 (the smallest GEMMs of the presets
             * run at ~0.01): a tiny one (fuzz: 1e-300) made expected
             * times infinite */
            if (!json_is_array(pt) || json_array_size(pt) != 2 || !(f > 0) || !(e >= 0.001) || e > 1 ||
                (i > 0 && f <= out->eff.gemm_flops[i - 1])) {
                char r[256];
                api_fail(st, 422, jv_ptr_i(r, sizeof r, q, i),
                         "must be [flops > previous, 0.001 <= efficiency <= 1]");
                return -1;
            }
            mfu_efficiency_set_gemm(&out->eff, (int)i, f, e);
        }
        out->eff.n_gemm = (int)json_array_size(g);
    }
    *bad |= jv_num(eff, "attention", p, JV_OPTIONAL, 1.0, 0.01, 1.0, &out->eff.attn_eff, st);
    *bad |= jv_num(eff, "attention_half_tokens", p, JV_OPTIONAL, 0.0, 0.0, 1e6,
                  &out->eff.attn_half_tokens, st);
    *bad |= jv_num(eff, "gemm_wave_elems", p, JV_OPTIONAL, 0.0, 0.0, 1e12,
                  &out->eff.gemm_wave_elems, st);
    *bad |= jv_num(eff, "gemm_half_k", p, JV_OPTIONAL, 0.0, 0.0, 1e6, &out->eff.gemm_half_k, st);
    *bad |= jv_num(eff, "fp8_gemm_half_k", p, JV_OPTIONAL, 0.0, 0.0, 1e6,
                  &out->eff.fp8_gemm_half_k, st);
    *bad |= jv_num(eff, "hbm", p, JV_OPTIONAL, 1.0, 0.01, 1.0, &out->eff.hbm_eff, st);
    *bad |= jv_num(eff, "step_overhead_s", p, JV_OPTIONAL, 0.0, 0.0, 1e3,
                  &out->eff.step_overhead_s, st);
    *bad |= jv_num(eff, "overlap_slowdown", p, JV_OPTIONAL, 0.0, 0.0, 0.9,
                  &out->eff.overlap_slowdown, st);
    *bad |= jv_num(eff, "gemm_scale", p, JV_OPTIONAL, 1.0, 0.05, 2.0, &out->eff.gemm_scale, st);
    *bad |= jv_num(eff, "fp8_gemm_scale", p, JV_OPTIONAL, 1.0, 0.05, 1.0, &out->eff.fp8_gemm_scale, st);
    *bad |= jv_num(eff, "fp8_bwd_gemm_scale", p, JV_OPTIONAL, 1.0, 0.05, 1.0,
                  &out->eff.fp8_bwd_gemm_scale, st);
    *bad |= jv_num(eff, "kernel_overhead_s", p, JV_OPTIONAL, 0.0, 0.0, 1e-2,
                  &out->eff.kernel_overhead_s, st);
    *bad |= jv_num(eff, "gemm_overhead_s", p, JV_OPTIONAL, 0.0, -5e-6, 1e-2, &out->eff.gemm_overhead_s, st);
    *bad |= jv_num(eff, "microbatch_overhead_s", p, JV_OPTIONAL, 0.0, 0.0, 10.0,
                  &out->eff.microbatch_overhead_s, st);
    *bad |= jv_num(eff, "host_op_s", p, JV_OPTIONAL, 0.0, 0.0, 1e-3, &out->eff.host_op_s, st);
    *bad |= jv_num(eff, "uncertainty", p, JV_OPTIONAL, 0.0, 0.0, 1.0, &out->eff.uncertainty, st);
    json_t *half = json_object_get(eff, "net_half_bytes");
    if (half && per_tier(half, jv_ptr(q, sizeof q, p, "net_half_bytes"), out->n_tiers, 0.0, 1e12, "size in bytes",
                         "[0, 1e12] bytes", out->eff.net_half_bytes, st))
        return -1;
    json_t *net = json_object_get(eff, "net");
    /* >= 0.01: as the gemm curve's efficiencies */
    if (net && per_tier(net, jv_ptr(q, sizeof q, p, "net"), out->n_tiers, 0.01, 1.0, "efficiency", "[0.01, 1]",
                        out->eff.net_eff, st))
        return -1;
    return 0;
}

int api_hardware_from_json(json_t *hw, const char *ptr, mfu_hardware *out, api_status *st)
{
    int bad = 0;
    char p[256];
    memset(out, 0, sizeof *out);
    if (!json_is_object(hw)) {
        api_fail(st, 422, ptr, "hardware must be an object");
        return -1;
    }
    json_t *name = json_object_get(hw, "name");
    if (name && (!json_is_string(name) || strlen(json_string_value(name)) >= sizeof out->name)) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "name"), "must be a string of at most %d bytes",
                 (int)sizeof out->name - 1);
        return -1;
    }
    snprintf(out->name, sizeof out->name, "%s", json_is_string(name) ? json_string_value(name) : "custom");
    bad |= hw_peaks(hw, ptr, out, st);
    bad |= jv_num(hw, "hbm_bytes", ptr, JV_REQUIRED, 0, 1e6, 1e15, &out->hbm_bytes, st);
    bad |= jv_num(hw, "hbm_bw_bytes_s", ptr, JV_REQUIRED, 0, 1e6, 1e15, &out->hbm_bw_bytes_s, st);
    bad |= jv_num(hw, "tdp_w", ptr, JV_OPTIONAL, 0.0, 0.0, 1e5, &out->tdp_w, st);
    bad |= jv_num(hw, "matrix_unit_dim", ptr, JV_OPTIONAL, 0.0, 0.0, 4096.0, &out->mxu_dim, st);
    /* the host link offloaded activations cross (0: unknown, no offload) */
    bad |= jv_num(hw, "host_bw_bytes_s", ptr, JV_OPTIONAL, 0.0, 0.0, 1e13, &out->host_bw_bytes_s, st);
    int plat = 0;
    bad |= jv_enum(hw, "platform", ptr, JV_OPTIONAL, 0, PLATFORMS, &plat, st);
    out->platform = (mfu_platform)plat;
    bad |= hw_reserve(hw, ptr, out, st);
    if (hw_tiers(hw, ptr, out, &bad, st)) return -1;
    mfu_efficiency_ideal(&out->eff);
    json_t *eff = json_object_get(hw, "efficiency");
    if (eff && !json_is_null(eff)) {
        jv_ptr(p, sizeof p, ptr, "efficiency");
        if (!json_is_object(eff)) {
            api_fail(st, 422, p, "must be an object");
            return -1;
        }
        if (hw_efficiency(eff, p, out, &bad, st)) return -1;
    }
    return bad ? -1 : 0;
}

json_t *api_hardware_to_json(const mfu_hardware *hw)
{
    json_t *pf = json_object();
    for (int d = 0; d < MFU_DT_COUNT; d++)
        if (hw->peak_flops[d] > 0) json_object_set_new(pf, api_dtype_name((mfu_dtype)d), json_real(hw->peak_flops[d]));
    json_t *tiers = json_array();
    for (int i = 0; i < hw->n_tiers; i++)
        json_array_append_new(tiers, json_pack("{s:s,s:I,s:f,s:f}", "name", hw->tiers[i].name,
                                               "domain_size", (json_int_t)hw->tiers[i].domain_size,
                                               "bw_bytes_s", hw->tiers[i].bw_bytes_s, "latency_s",
                                               hw->tiers[i].latency_s));
    json_t *o = json_pack("{s:s,s:s,s:o,s:f,s:{s:f,s:f,s:f},s:f,s:o}", "name", hw->name, "platform",
                          PLATFORMS[hw->platform], "peak_flops", pf, "hbm_bytes", hw->hbm_bytes,
                          "memory_reserve", "context_bytes", hw->reserve.context_bytes,
                          "comm_buffer_bytes", hw->reserve.comm_buffer_bytes, "fragmentation",
                          hw->reserve.fragmentation, "hbm_bw_bytes_s", hw->hbm_bw_bytes_s, "tiers",
                          tiers);
    if (hw->tdp_w > 0) json_object_set_new(o, "tdp_w", json_real(hw->tdp_w));
    if (hw->mxu_dim > 0) json_object_set_new(o, "matrix_unit_dim", json_real(hw->mxu_dim));
    if (hw->host_bw_bytes_s > 0) json_object_set_new(o, "host_bw_bytes_s", json_real(hw->host_bw_bytes_s));
    if (hw->has_profile) {
        const mfu_efficiency *e = &hw->eff;
        json_t *g = json_array(), *net = json_array(), *half = json_array();
        for (int i = 0; i < e->n_gemm; i++)
            json_array_append_new(g, json_pack("[f,f]", e->gemm_flops[i], e->gemm_eff[i]));
        for (int i = 0; i < hw->n_tiers; i++) {
            json_array_append_new(net, json_real(e->net_eff[i]));
            json_array_append_new(half, json_real(e->net_half_bytes[i]));
        }
        json_t *ej = json_pack("{s:o,s:f,s:f,s:o,s:o,s:f,s:f}", "gemm", g, "attention", e->attn_eff,
                               "hbm", e->hbm_eff, "net", net, "net_half_bytes", half,
                               "step_overhead_s", e->step_overhead_s, "overlap_slowdown",
                               e->overlap_slowdown);
        json_object_set_new(ej, "gemm_scale", json_real(e->gemm_scale));
        json_object_set_new(ej, "fp8_gemm_scale", json_real(e->fp8_gemm_scale));
        json_object_set_new(ej, "fp8_bwd_gemm_scale", json_real(e->fp8_bwd_gemm_scale));
        json_object_set_new(ej, "kernel_overhead_s", json_real(e->kernel_overhead_s));
        json_object_set_new(ej, "gemm_overhead_s", json_real(e->gemm_overhead_s));
        json_object_set_new(ej, "microbatch_overhead_s", json_real(e->microbatch_overhead_s));
        json_object_set_new(ej, "host_op_s", json_real(e->host_op_s));
        json_object_set_new(ej, "uncertainty", json_real(e->uncertainty));
        if (e->attn_half_tokens > 0)
            json_object_set_new(ej, "attention_half_tokens", json_real(e->attn_half_tokens));
        if (e->gemm_wave_elems > 0)
            json_object_set_new(ej, "gemm_wave_elems", json_real(e->gemm_wave_elems));
        if (e->gemm_half_k > 0) json_object_set_new(ej, "gemm_half_k", json_real(e->gemm_half_k));
        if (e->fp8_gemm_half_k > 0)
            json_object_set_new(ej, "fp8_gemm_half_k", json_real(e->fp8_gemm_half_k));
        json_object_set_new(o, "efficiency", ej);
    }
    return o;
}
