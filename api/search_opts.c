/* api/search_opts.c -- a request's "search": how many to rank and by what,
 * the budget, the axes and switches fixed or allowed, the frameworks whose
 * rules a configuration must pass, the batch range (openapi.yaml's
 * SearchOptions). */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "internal.h"
#include "jsonv.h"
#include "sha256.h"
#include "request_int.h"

/* The parts of "search" that are objects or arrays: each returns 0, 1 when
 * it recorded errors (parsing goes on), or 2 when the part is not the
 * right kind at all (parsing stops there). */

/* "fix": axes pinned to one value, and the switches that can be fixed. */
static int parse_fix(json_t *fix, const char *ptr, const mfu_system *sys, mfu_search_opts *o, api_status *st)
{
    char p[256];
    int bad = 0, v;
    const char *fp = jv_ptr(p, sizeof p, ptr, "fix");
    if (!json_is_object(fix)) {
        api_fail(st, 422, fp, "must be an object");
        return 2;
    }
    for (int a = 0; a < MFU_AX_COUNT; a++) {
        int64_t val;
        if (!json_object_get(fix, rq_axes[a])) continue;
        if (jv_int(fix, rq_axes[a], fp, JV_REQUIRED, 1, 1, API_MAX_DEVICES, &val, st)) { bad = 1; continue; }
        o->n_allowed[a] = 1;
        o->allowed[a][0] = val;
        if (a == MFU_AX_TP && val > o->max_ax[MFU_AX_TP]) o->max_ax[MFU_AX_TP] = val;
    }
    int b = 0;
    if (json_object_get(fix, "sp")) { bad |= jv_bool(fix, "sp", fp, JV_REQUIRED, 0, &b, st); o->fix_sp = b; }
    int64_t iv;
    if (json_object_get(fix, "zero")) { bad |= jv_int(fix, "zero", fp, JV_REQUIRED, 0, 0, 3, &iv, st); o->fix_zero = (int)iv; }
    if (json_object_get(fix, "etp")) { bad |= jv_int(fix, "etp", fp, JV_REQUIRED, 1, 1, API_MAX_DEVICES, &o->fix_etp, st); }
    /* a fixed vpp or mbs widens max_vpp / max_mbs as a fixed tp widens
     * max_tp: the search enumerates up to those, and a fixed value above
     * them (Megatron Bridge's Qwen3-30B-A3B on 16 H100s: pp 2 x vpp 12)
     * found nothing, "pruned for constraint" */
    if (json_object_get(fix, "vpp")) { bad |= jv_int(fix, "vpp", fp, JV_REQUIRED, 1, 1, 64, &o->fix_vpp, st);
        if (o->fix_vpp > o->max_vpp) o->max_vpp = o->fix_vpp; }
    if (json_object_get(fix, "mbs")) { bad |= jv_int(fix, "mbs", fp, JV_REQUIRED, 1, 1, 1 << 20, &o->fix_mbs, st);
        if (o->fix_mbs > o->max_mbs) o->max_mbs = o->fix_mbs; }
    if (json_object_get(fix, "schedule")) { bad |= jv_enum(fix, "schedule", fp, JV_REQUIRED, 0, api_schedule_names, &v, st); o->fix_schedule = v; }
    unsigned custom = sys->rc[MFU_RC_CUSTOM].modules;
    unsigned mx[2] = {sys->rc[MFU_RC_MAXTEXT].mx_device, sys->rc[MFU_RC_MAXTEXT].mx_host};
    int rc = rq_parse_recompute(fix, fp, MFU_RC_SELECTIVE, 0, &custom, mx, st);
    if (rc == -2) bad = 1;
    else if (rc >= 0) o->fix_recompute = rc;
    static const char *const FIXABLE[] = {"dp", "fsdp", "tp", "ep", "pp", "cp", "sp", "zero", "etp", "vpp", "mbs",
                                          "schedule", "recompute", "recompute_modules", "remat", NULL};
    if (jv_known(fix, fp, "search.fix (the fixable switches)", FIXABLE, st)) bad = 1;
    return bad ? 1 : 0;
}

/* "allowed": axis -> the values it may take. */
static int parse_allowed(json_t *al, const char *ptr, mfu_search_opts *o, api_status *st)
{
    char p[256], q[256];
    int bad = 0;
    const char *ap = jv_ptr(p, sizeof p, ptr, "allowed");
    if (!json_is_object(al)) {
        api_fail(st, 422, ap, "must be an object of axis -> [values]");
        return 2;
    }
    const char *kk;
    json_t *vv;
    json_object_foreach(al, kk, vv) {
        int a = -1;
        for (int i = 0; rq_axes[i]; i++) if (!strcmp(kk, rq_axes[i])) a = i;
        const char *axp = jv_ptr(q, sizeof q, ap, kk);
        if (a < 0) { api_fail(st, 422, axp, "unknown axis; axes: dp, fsdp, tp, ep, pp, cp"); bad = 1; continue; }
        if (!json_is_array(vv) || json_array_size(vv) == 0 || json_array_size(vv) > MFU_MAX_ALLOWED) {
            api_fail(st, 422, axp, "must be an array of 1 to %d integers", MFU_MAX_ALLOWED);
            bad = 1;
            continue;
        }
        size_t i;
        json_t *e;
        o->n_allowed[a] = 0;
        json_array_foreach(vv, i, e) {
            double d = json_number_value(e);
            if (!json_is_number(e) || d != floor(d) || d < 1 || d > API_MAX_DEVICES) {
                char r[256];
                api_fail(st, 422, jv_ptr_i(r, sizeof r, axp, i), "must be an integer in [1, %d]", API_MAX_DEVICES);
                bad = 1;
                continue;
            }
            o->allowed[a][o->n_allowed[a]++] = (int64_t)d;
            if (a == MFU_AX_TP && (int64_t)d > o->max_ax[MFU_AX_TP]) o->max_ax[MFU_AX_TP] = (int64_t)d;
        }
    }
    return bad ? 1 : 0;
}

/* "frameworks": the frameworks whose rules a configuration must pass. */
static int parse_frameworks(json_t *fw, const char *ptr, const mfu_system *sys, mfu_search_opts *o,
                            api_status *st)
{
    char p[256], q[256];
    int bad = 0;
    const char *fwp = jv_ptr(p, sizeof p, ptr, "frameworks");
    if (!json_is_array(fw) || json_array_size(fw) == 0 || json_array_size(fw) > 8) {
        api_fail(st, 422, fwp, "must be an array of 1 to 8 names: megatron, torchtitan, maxtext, any");
        return 2;
    }
    unsigned mask = 0, plat = mfu_platform_frameworks(sys->hw);
    size_t i;
    json_t *e;
    json_array_foreach(fw, i, e) {
        int f = -1;
        for (int j = 0; json_is_string(e) && rq_frameworks[j]; j++)
            if (!strcmp(json_string_value(e), rq_frameworks[j])) f = j;
        if (f < 0) {
            api_fail(st, 422, jv_ptr_i(q, sizeof q, fwp, i), "unknown framework; frameworks: megatron, torchtitan, maxtext, any");
            bad = 1;
            continue;
        }
        if (f == MFU_FW_COUNT) { mask |= MFU_FW_ANY; continue; }
        if (!(plat & MFU_FW_MASK(f))) {
            api_fail(st, 422, jv_ptr_i(q, sizeof q, fwp, i), "%s does not run on %s (a %s)", rq_frameworks[f],
                     sys->hw->name, sys->hw->platform == MFU_PLATFORM_TPU ? "TPU" : "GPU");
            bad = 1;
            continue;
        }
        mask |= MFU_FW_MASK(f);
    }
    /* "any" alone: every framework of the platform, and configurations none launches */
    if (mask == MFU_FW_ANY) mask |= plat;
    o->frameworks = mask;
    return bad ? 1 : 0;
}

/* "batch_seqs": [min, max] global batch in sequences. */
static int parse_batch_seqs(json_t *bs, const char *ptr, mfu_search_opts *o, api_status *st)
{
    char p[256];
    const char *bp = jv_ptr(p, sizeof p, ptr, "batch_seqs");
    double lo = json_number_value(json_array_get(bs, 0)), hi = json_number_value(json_array_get(bs, 1));
    if (!json_is_array(bs) || json_array_size(bs) != 2 || lo != floor(lo) || hi != floor(hi) ||
        lo < 1 || hi < lo || hi > 1e9) {
        api_fail(st, 422, bp, "must be [min, max] global batch in sequences, 1 <= min <= max");
        return 2;
    }
    o->batch_min_seqs = (int64_t)lo;
    o->batch_max_seqs = (int64_t)hi;
    return 0;
}

int rq_parse_search(json_t *sj, const mfu_system *sys, mfu_search_opts *o, double *deadline,
                        api_status *st)
{
    const char *ptr = "/search";
    int bad = 0, v;
    mfu_search_defaults(sys, o);
    o->distinct = MFU_DISTINCT_LAYOUT; /* the API's default: one row per layout family */
    *deadline = 60.0;
    if (!sj) return 0;
    if (!json_is_object(sj)) {
        api_fail(st, 422, ptr, "must be an object");
        return -1;
    }
    /* the contract's SearchOptions (openapi.yaml) */
    static const char *const OPTIONS[] = {"top_k", "rank_by", "max_evaluations", "deadline_s", "batch_seqs",
                                          "max_tp", "max_mbs", "max_vpp", "partial_recompute", "cpu_offload",
                                          "allowed", "fix", "frameworks", "distinct", NULL};
    if (jv_known(sj, ptr, "search", OPTIONS, st)) return -1;
    int64_t k = 10, me = 0;
    bad |= jv_int(sj, "top_k", ptr, JV_OPTIONAL, 10, 1, MFU_MAX_TOP_K, &k, st);
    o->top_k = (int)k;
    bad |= jv_enum(sj, "rank_by", ptr, JV_OPTIONAL, 0, rq_ranks, &v, st);
    o->rank_by_bound = v;
    bad |= jv_int(sj, "max_evaluations", ptr, JV_OPTIONAL, 0, 0, (int64_t)1 << 40, &me, st);
    o->max_evaluations = (uint64_t)me;
    bad |= jv_num(sj, "deadline_s", ptr, JV_OPTIONAL, 60.0, 0.001, 3600.0, deadline, st);
    bad |= jv_int(sj, "max_tp", ptr, JV_OPTIONAL, o->max_ax[MFU_AX_TP], 1, API_MAX_DEVICES,
                  &o->max_ax[MFU_AX_TP], st);
    bad |= jv_int(sj, "max_mbs", ptr, JV_OPTIONAL, o->max_mbs, 1, 1024, &o->max_mbs, st);
    bad |= jv_int(sj, "max_vpp", ptr, JV_OPTIONAL, o->max_vpp, 1, 64, &o->max_vpp, st);
    bad |= jv_enum(sj, "distinct", ptr, JV_OPTIONAL, MFU_DISTINCT_LAYOUT, rq_distinct, &v, st);
    o->distinct = v;
    int pr = 1;
    bad |= jv_bool(sj, "partial_recompute", ptr, JV_OPTIONAL, 1, &pr, st);
    o->partial_recompute = pr;
    int co = 0;
    bad |= jv_bool(sj, "cpu_offload", ptr, JV_OPTIONAL, 0, &co, st);
    o->cpu_offload = co;
    json_t *fix = json_object_get(sj, "fix"), *al = json_object_get(sj, "allowed");
    json_t *fw = json_object_get(sj, "frameworks"), *bs = json_object_get(sj, "batch_seqs");
    int r = fix ? parse_fix(fix, ptr, sys, o, st) : 0;
    if (r == 2) return -1;
    bad |= r;
    r = al ? parse_allowed(al, ptr, o, st) : 0;
    if (r == 2) return -1;
    bad |= r;
    r = fw ? parse_frameworks(fw, ptr, sys, o, st) : 0;
    if (r == 2) return -1;
    bad |= r;
    r = bs ? parse_batch_seqs(bs, ptr, o, st) : 0;
    if (r == 2) return -1;
    bad |= r;
    return bad ? -1 : 0;
}
