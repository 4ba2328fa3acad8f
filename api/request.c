/* api/request.c -- requests: resolve model and hardware (preset, hf_config,
 * IR; overrides), validate every field with its JSON pointer, normalize,
 * hash, and run the engines.
 *
 * Normal form: the request is parsed into core structs and rendered back
 * with every default filled in and every number in its canonical type, so
 * `4096` and `4096.0`, key order, defaults and aliases all give one
 * normalized document -- and one cache key. */
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

static const char *const CONVS[] = {"causal", "full", "none", NULL};
static const char *const IMPLS[] = {"flash", "unfused", NULL};
static const char *const DTYPES[] = {"bf16", "fp16", "fp8", "fp32", NULL};
const char *const api_schedule_names[] = {"1f1b", "interleaved", "zb", "gpipe", "dualpipev", NULL};
/* the recompute slots of core/system.h; "custom" is what "selective" with
 * a recompute_modules list that no named policy has becomes */
const char *const api_recompute_names[] = {"none", "selective", "minimal", "save_dot_except_mlp",
                                           "mla_up", "full", "custom", "qkv_proj_offloaded",
                                           "minimal_offloaded", "maxtext", "cpu_offload", NULL};
/* the names a request may give, and the slot each is */
static const char *const RC_INPUT[] = {"none", "selective", "minimal", "save_dot_except_mlp", "mla_up",
                                       "full", "qkv_proj_offloaded", "minimal_offloaded", "maxtext",
                                       "cpu_offload", NULL};
static const int RC_INPUT_SLOT[] = {MFU_RC_NONE, MFU_RC_SELECTIVE, MFU_RC_MINIMAL,
                                    MFU_RC_SAVE_DOT_EXCEPT_MLP, MFU_RC_MLA_UP, MFU_RC_FULL,
                                    MFU_RC_QKV_OFFLOADED, MFU_RC_MINIMAL_OFFLOADED, MFU_RC_MAXTEXT,
                                    MFU_RC_CPU_OFFLOAD};
/* "recompute": "maxtext" with "remat": {name: "remat" | "device" |
 * "offload"}, MaxText's remat_policy custom (src/maxtext/configs/base.yml
 * names; decoder_layer_input "device", the rest "remat" by default). mfud
 * keeps the names of one tensor family together (F-RC-MAXTEXT). */
static const struct {
    const char *name;
    unsigned mx;
} REMAT_NAMES[] = {{"decoder_layer_input", MFU_MX_INPUT}, {"query_proj", MFU_MX_QKV},
                   {"key_proj", MFU_MX_QKV},             {"value_proj", MFU_MX_QKV},
                   {"kv_proj", MFU_MX_QKV},              {"qkv_proj", MFU_MX_QKV},
                   {"context", MFU_MX_CONTEXT},          {"out_proj", MFU_MX_OUT},
                   {"mlpwi", MFU_MX_WI},                 {"mlpwi_0", MFU_MX_WI},
                   {"mlpwi_1", MFU_MX_WI},               {"moe_mlpwi_0", MFU_MX_WI},
                   {"moe_mlpwi_1", MFU_MX_WI},           {"mlpwo", MFU_MX_WO},
                   {"moe_mlpwo", MFU_MX_WO}};
#define N_REMAT_NAMES (sizeof REMAT_NAMES / sizeof *REMAT_NAMES)
static const char *const REMAT_STATES[] = {"remat", "device", "offload", NULL};
const char *const api_split_names[] = {"even", "account", "first_last", NULL};
static const char *const FRAMEWORKS[] = {"megatron", "torchtitan", "maxtext", "any", NULL};
static const char *const GRAD_DTYPES[] = {"fp32", "bf16", NULL};
static const char *const AXES[] = {"dp", "fsdp", "tp", "ep", "pp", "cp", NULL};
static const char *const RANKS[] = {"expected", "bound", NULL};
/* search.distinct: indexed by MFU_DISTINCT_* */
static const char *const DISTINCT[] = {"none", "layout", NULL};

/* ---- request parsing ----------------------------------------------------- */

void api_request_free(api_request *r)
{
    json_decref(r->model_ir);
    json_decref(r->model_source);
    json_decref(r->model_overridden);
    json_decref(r->hw_json);
    json_decref(r->hw_overridden);
    memset(r, 0, sizeof *r);
}

/* A recompute_modules list -> MFU_RCM_* mask (0 with an error). */
static unsigned parse_modules(json_t *arr, const char *ptr, api_status *st)
{
    if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > 16) {
        api_fail(st, 422, ptr, "must be an array of 1 to 16 module names: core_attn, layernorm, mlp, moe_act, moe, mla_up_proj, shared_experts, act");
        return 0;
    }
    unsigned mask = 0;
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        int found = -1;
        for (int k = 0; json_is_string(e) && k < MFU_RCM_COUNT; k++)
            if (!strcmp(json_string_value(e), mfu_rcm_names[k])) found = k;
        if (found < 0) {
            char q[256];
            api_fail(st, 422, jv_ptr_i(q, sizeof q, ptr, i),
                     "unknown module; modules: core_attn, layernorm, mlp, moe_act, moe, mla_up_proj, shared_experts, act");
            return 0;
        }
        mask |= 1u << found;
    }
    return mask;
}

/* The recompute slot of {"recompute": name, "recompute_modules": [...]} in
 * obj (a config or search.fix). -1 if absent (def used), -2 on error.
 * *custom receives a module set no named policy has. */
/* The "remat" object of a "maxtext" policy -> (device, host) MFU_MX_*
 * masks; -1 on error. */
static int parse_remat(json_t *rj, const char *ptr, unsigned *device, unsigned *host, api_status *st)
{
    char q[256];
    if (!json_is_object(rj)) {
        api_fail(st, 422, ptr, "must be an object {name: \"remat\" | \"device\" | \"offload\"} of MaxText checkpoint names");
        return -1;
    }
    int state[MFU_MX_COUNT], seen[MFU_MX_COUNT] = {0};
    for (int k = 0; k < MFU_MX_COUNT; k++) state[k] = (1u << k) == MFU_MX_INPUT ? 1 : 0;
    const char *key;
    json_t *val;
    json_object_foreach(rj, key, val) {
        size_t i = 0;
        while (i < N_REMAT_NAMES && strcmp(key, REMAT_NAMES[i].name)) i++;
        if (i == N_REMAT_NAMES) {
            api_fail(st, 422, jv_ptr(q, sizeof q, ptr, key),
                     "unknown name; MaxText's: decoder_layer_input, query_proj, key_proj, value_proj, kv_proj, "
                     "qkv_proj, context, out_proj, mlpwi, mlpwi_0, mlpwi_1, moe_mlpwi_0, moe_mlpwi_1, mlpwo, moe_mlpwo");
            return -1;
        }
        int v;
        if (jv_enum(rj, key, ptr, JV_REQUIRED, 0, REMAT_STATES, &v, st)) return -1;
        int k = 0;
        while ((1u << k) != REMAT_NAMES[i].mx) k++;
        if (REMAT_NAMES[i].mx == MFU_MX_INPUT && v == 0) {
            api_fail(st, 422, jv_ptr(q, sizeof q, ptr, key),
                     "the layer input is the checkpoint recompute starts from: \"device\" or \"offload\"");
            return -1;
        }
        if (seen[k] && state[k] != v) {
            api_fail(st, 422, jv_ptr(q, sizeof q, ptr, key),
                     "mfud keeps one choice for a tensor family (the q/k/v projections; the MLP input "
                     "projections; the MLP outputs): this name differs from another of its family");
            return -1;
        }
        seen[k] = 1;
        state[k] = v;
    }
    *device = *host = 0;
    for (int k = 0; k < MFU_MX_COUNT; k++) {
        if (state[k] == 1) *device |= 1u << k;
        if (state[k] == 2) *host |= 1u << k;
    }
    return 0;
}

static int parse_recompute(json_t *obj, const char *ptr, int def, unsigned *custom, unsigned mx[2],
                           api_status *st)
{
    char p[256];
    json_t *name = json_object_get(obj, "recompute");
    json_t *mods = json_object_get(obj, "recompute_modules");
    json_t *remat = json_object_get(obj, "remat");
    int v = def;
    if (name) {
        int k;
        if (jv_enum(obj, "recompute", ptr, JV_REQUIRED, 0, RC_INPUT, &k, st)) return -2;
        v = RC_INPUT_SLOT[k];
    }
    if (remat && v != MFU_RC_MAXTEXT) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "remat"), "only with \"recompute\": \"maxtext\"");
        return -2;
    }
    if (name && v == MFU_RC_MAXTEXT) {
        unsigned d = MFU_MX_INPUT, h = 0;
        if (remat && parse_remat(remat, jv_ptr(p, sizeof p, ptr, "remat"), &d, &h, st)) return -2;
        if ((mx[0] | mx[1]) && (mx[0] != d || mx[1] != h)) {
            api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "remat"),
                     "a request may name one maxtext remat policy; it names two");
            return -2;
        }
        mx[0] = d;
        mx[1] = h;
    }
    if (!mods) return name ? v : -1;
    if (name && v != MFU_RC_SELECTIVE) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "recompute_modules"),
                 "only with \"recompute\": \"selective\" (Megatron --recompute-modules)");
        return -2;
    }
    unsigned m = parse_modules(mods, jv_ptr(p, sizeof p, ptr, "recompute_modules"), st);
    if (!m) return -2;
    int slot = mfu_rc_slot(MFU_RCK_SELECTIVE, m);
    if (slot == MFU_RC_CUSTOM) {
        if (*custom && *custom != m) {
            api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "recompute_modules"),
                     "a request may name one module set that no named policy has; it names two");
            return -2;
        }
        *custom = m;
    }
    return slot;
}

/* The custom recompute module set of a request (measured config, search
 * fix), known before the system is built. */
static int scan_custom_modules(json_t *req, unsigned *custom, unsigned mx[2], api_status *st)
{
    *custom = 0;
    mx[0] = mx[1] = 0;
    json_t *mc = json_object_get(json_object_get(req, "measured"), "config");
    json_t *fix = json_object_get(json_object_get(req, "search"), "fix");
    if (json_is_object(mc) && parse_recompute(mc, "/measured/config", 0, custom, mx, st) == -2) return -1;
    if (json_is_object(fix) && parse_recompute(fix, "/search/fix", 0, custom, mx, st) == -2) return -1;
    return 0;
}

/* A configuration (measured or pinned). Divisibility is checked here (an
 * illegal configuration is a 422); whether a framework launches it is
 * reported with the result, not refused. */
/* A configuration's "pipeline_split": "even", "account",
 * {"first": n, "last": n}, or the search's default for (pp, vpp). -1 when
 * refused; *bad set when first/last had errors (reported with the rest). */
static int parse_split(json_t *cj, const char *ptr, const mfu_system *sys, mfu_config *c, int *bad_out,
                       api_status *st)
{
    char p[256];
    int bad = 0;
    json_t *sj = json_object_get(cj, "pipeline_split");
    const char *sp_ptr = jv_ptr(p, sizeof p, ptr, "pipeline_split");
    if (!sj) {
        if (mfu_config_default_split(sys, c) != MFU_OK) {
            api_fail(st, 422, sp_ptr, "no split of %lld layers over pp %lld x vpp %lld; give one",
                     (long long)sys->layers, (long long)c->ax[MFU_AX_PP], (long long)c->vpp);
            return -1;
        }
    } else if (json_is_string(sj)) {
        int k = -1;
        for (int i = 0; i < 2; i++) if (!strcmp(json_string_value(sj), api_split_names[i])) k = i;
        if (k < 0) {
            api_fail(st, 422, sp_ptr, "must be \"even\", \"account\" or {\"first\": layers, \"last\": layers}");
            return -1;
        }
        c->split = (mfu_split)k;
    } else if (json_is_object(sj)) {
        c->split = MFU_SPLIT_FIRST_LAST;
        bad |= jv_int(sj, "first", sp_ptr, JV_REQUIRED, 0, 0, API_MAX_LAYERS, &c->pp_first, st);
        bad |= jv_int(sj, "last", sp_ptr, JV_REQUIRED, 0, 0, API_MAX_LAYERS, &c->pp_last, st);
        if (!bad && c->pp_first + c->pp_last > sys->layers) {
            api_fail(st, 422, sp_ptr, "first + last exceed the model's %lld layers", (long long)sys->layers);
            return -1;
        }
    } else {
        api_fail(st, 422, sp_ptr, "must be \"even\", \"account\" or {\"first\": layers, \"last\": layers}");
        return -1;
    }
    if (sj) mfu_config_fill_stages(sys, c);
    *bad_out = bad;
    return 0;
}

static int parse_config(json_t *cj, const char *ptr, const mfu_system *sys, mfu_config *c,
                        api_status *st)
{
    char p[256];
    int bad = 0, v;
    memset(c, 0, sizeof *c);
    if (!json_is_object(cj)) {
        api_fail(st, 422, ptr, "must be an object");
        return -1;
    }
    json_t *par = json_object_get(cj, "parallel");
    const char *pp = jv_ptr(p, sizeof p, ptr, "parallel");
    if (!json_is_object(par)) {
        api_fail(st, 422, pp, "required object {dp, fsdp, tp, ep, pp, cp, sp, zero, etp}");
        return -1;
    }
    for (int a = 0; a < MFU_AX_COUNT; a++)
        bad |= jv_int(par, AXES[a], pp, JV_OPTIONAL, 1, 1, API_MAX_DEVICES, &c->ax[a], st);
    int sp = 0;
    int64_t zero = 0;
    bad |= jv_bool(par, "sp", pp, JV_OPTIONAL, 0, &sp, st);
    bad |= jv_int(par, "zero", pp, JV_OPTIONAL, 0, 0, 2, &zero, st);
    bad |= jv_int(par, "etp", pp, JV_OPTIONAL, 1, 1, API_MAX_DEVICES, &c->etp, st);
    c->sp = sp;
    c->zero = (int)zero;
    bad |= jv_enum(cj, "schedule", ptr, JV_OPTIONAL, 0, api_schedule_names, &v, st);
    c->schedule = (mfu_schedule)v;
    /* DualPipeV is two stages per rank: vpp 2 unless given */
    bad |= jv_int(cj, "vpp", ptr, JV_OPTIONAL, c->schedule == MFU_SCHED_DUALPIPEV ? 2 : 1, 1, 1024,
                  &c->vpp, st);
    bad |= jv_int(cj, "mbs", ptr, JV_OPTIONAL, 1, 1, 1 << 20, &c->mbs, st);
    unsigned custom = sys->rc[MFU_RC_CUSTOM].modules;
    unsigned mx[2] = {sys->rc[MFU_RC_MAXTEXT].mx_device, sys->rc[MFU_RC_MAXTEXT].mx_host};
    int rc = parse_recompute(cj, ptr, MFU_RC_NONE, &custom, mx, st);
    if (rc == -2) bad = -1;
    c->recompute = rc < 0 ? MFU_RC_NONE : rc;
    bad |= jv_int(cj, "recompute_layers", ptr, JV_OPTIONAL, -1, -1, API_MAX_LAYERS, &c->recompute_layers, st);
    if (bad) return -1;
    int split_bad = 0;
    if (parse_split(cj, ptr, sys, c, &split_bad, st)) return -1;
    bad |= split_bad;
    int64_t D = c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
    double per = (double)c->mbs * (double)D * (double)sys->train.seq;
    int64_t ga_default = (int64_t)floor(sys->train.global_batch_tokens / per + 0.5);
    if (ga_default < 1) ga_default = 1;
    bad |= jv_int(cj, "grad_accum", ptr, JV_OPTIONAL, ga_default, 1, 1 << 24, &c->grad_accum, st);
    if (bad) return -1;
    const char *why;
    int reason;
    if (mfu_config_check(sys, c, &reason, &why) != MFU_OK) {
        api_fail(st, 422, ptr, "illegal configuration: %s", why);
        return -1;
    }
    return 0;
}

/* The parts of "search" that are objects or arrays: each returns 0, 1 when
 * it recorded errors (parsing goes on), or 2 when the part is not the
 * right kind at all (parsing stops there). */

/* "fix": axes pinned to one value, and the switches that can be fixed. */
static int parse_fix(json_t *fix, const char *ptr, const mfu_system *sys, mfu_search_opts *o, api_status *st)
{
    char p[256], q[256];
    int bad = 0, v;
    const char *fp = jv_ptr(p, sizeof p, ptr, "fix");
    if (!json_is_object(fix)) {
        api_fail(st, 422, fp, "must be an object");
        return 2;
    }
    for (int a = 0; a < MFU_AX_COUNT; a++) {
        int64_t val;
        if (!json_object_get(fix, AXES[a])) continue;
        if (jv_int(fix, AXES[a], fp, JV_REQUIRED, 1, 1, API_MAX_DEVICES, &val, st)) { bad = 1; continue; }
        o->n_allowed[a] = 1;
        o->allowed[a][0] = val;
        if (a == MFU_AX_TP && val > o->max_ax[MFU_AX_TP]) o->max_ax[MFU_AX_TP] = val;
    }
    int b = 0;
    if (json_object_get(fix, "sp")) { bad |= jv_bool(fix, "sp", fp, JV_REQUIRED, 0, &b, st); o->fix_sp = b; }
    int64_t iv;
    if (json_object_get(fix, "zero")) { bad |= jv_int(fix, "zero", fp, JV_REQUIRED, 0, 0, 2, &iv, st); o->fix_zero = (int)iv; }
    if (json_object_get(fix, "etp")) { bad |= jv_int(fix, "etp", fp, JV_REQUIRED, 1, 1, API_MAX_DEVICES, &o->fix_etp, st); }
    if (json_object_get(fix, "vpp")) { bad |= jv_int(fix, "vpp", fp, JV_REQUIRED, 1, 1, 64, &o->fix_vpp, st); }
    if (json_object_get(fix, "mbs")) { bad |= jv_int(fix, "mbs", fp, JV_REQUIRED, 1, 1, 1 << 20, &o->fix_mbs, st);
        if (o->fix_mbs > o->max_mbs) o->max_mbs = o->fix_mbs; }
    if (json_object_get(fix, "schedule")) { bad |= jv_enum(fix, "schedule", fp, JV_REQUIRED, 0, api_schedule_names, &v, st); o->fix_schedule = v; }
    unsigned custom = sys->rc[MFU_RC_CUSTOM].modules;
    unsigned mx[2] = {sys->rc[MFU_RC_MAXTEXT].mx_device, sys->rc[MFU_RC_MAXTEXT].mx_host};
    int rc = parse_recompute(fix, fp, MFU_RC_SELECTIVE, &custom, mx, st);
    if (rc == -2) bad = 1;
    else if (rc >= 0) o->fix_recompute = rc;
    const char *kk;
    json_t *vv;
    json_object_foreach(fix, kk, vv) {
        int known = 0;
        for (int a = 0; AXES[a]; a++) known |= !strcmp(kk, AXES[a]);
        const char *other[] = {"sp", "zero", "etp", "vpp", "mbs", "schedule", "recompute", "recompute_modules", "remat", NULL};
        for (int a = 0; other[a]; a++) known |= !strcmp(kk, other[a]);
        if (!known) {
            api_fail(st, 422, jv_ptr(q, sizeof q, fp, kk),
                     "unknown switch; fixable: dp, fsdp, tp, ep, pp, cp, sp, zero, etp, vpp, mbs, schedule, recompute, recompute_modules, remat");
            bad = 1;
        }
    }
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
        for (int i = 0; AXES[i]; i++) if (!strcmp(kk, AXES[i])) a = i;
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
        for (int j = 0; json_is_string(e) && FRAMEWORKS[j]; j++)
            if (!strcmp(json_string_value(e), FRAMEWORKS[j])) f = j;
        if (f < 0) {
            api_fail(st, 422, jv_ptr_i(q, sizeof q, fwp, i), "unknown framework; frameworks: megatron, torchtitan, maxtext, any");
            bad = 1;
            continue;
        }
        if (f == MFU_FW_COUNT) { mask |= MFU_FW_ANY; continue; }
        if (!(plat & MFU_FW_MASK(f))) {
            api_fail(st, 422, jv_ptr_i(q, sizeof q, fwp, i), "%s does not run on %s (a %s)", FRAMEWORKS[f],
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

static int parse_search(json_t *sj, const mfu_system *sys, mfu_search_opts *o, double *deadline,
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
    bad |= jv_enum(sj, "rank_by", ptr, JV_OPTIONAL, 0, RANKS, &v, st);
    o->rank_by_bound = v;
    bad |= jv_int(sj, "max_evaluations", ptr, JV_OPTIONAL, 0, 0, (int64_t)1 << 40, &me, st);
    o->max_evaluations = (uint64_t)me;
    bad |= jv_num(sj, "deadline_s", ptr, JV_OPTIONAL, 60.0, 0.001, 3600.0, deadline, st);
    bad |= jv_int(sj, "max_tp", ptr, JV_OPTIONAL, o->max_ax[MFU_AX_TP], 1, API_MAX_DEVICES,
                  &o->max_ax[MFU_AX_TP], st);
    bad |= jv_int(sj, "max_mbs", ptr, JV_OPTIONAL, o->max_mbs, 1, 1024, &o->max_mbs, st);
    bad |= jv_int(sj, "max_vpp", ptr, JV_OPTIONAL, o->max_vpp, 1, 64, &o->max_vpp, st);
    bad |= jv_enum(sj, "distinct", ptr, JV_OPTIONAL, MFU_DISTINCT_LAYOUT, DISTINCT, &v, st);
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

/* training.tokens and the cost block: what time and cost to train are
 * computed from (api/plan.c). Limits: at most 1e16 tokens (a thousand times
 * the largest published runs), a price of at most 1e6 per device-hour,
 * 1e5 W per device, a PUE in [1, 5]. */
static int parse_cost(json_t *req, json_t *tj, api_request *r, api_status *st)
{
    int bad = jv_num(tj, "tokens", "/training", JV_OPTIONAL, 0.0, 1.0, 1e16, &r->train_tokens, st);
    r->pue = 1.0;
    r->power_per_device_w = r->hw.tdp_w;
    snprintf(r->currency, sizeof r->currency, "USD");
    json_t *cj = json_object_get(req, "cost");
    if (!cj) return bad;
    if (!json_is_object(cj)) {
        api_fail(st, 422, "/cost", "must be an object {price_per_device_hour, currency, power_per_device_w, pue}");
        return -1;
    }
    static const char *const COST_KEYS[] = {"price_per_device_hour", "currency", "power_per_device_w", "pue", NULL};
    if (jv_known(cj, "/cost", "cost", COST_KEYS, st)) bad = -1;
    bad |= jv_num(cj, "price_per_device_hour", "/cost", JV_OPTIONAL, 0.0, 0.0, 1e6, &r->price_per_device_hour, st);
    bad |= jv_num(cj, "pue", "/cost", JV_OPTIONAL, 1.0, 1.0, 5.0, &r->pue, st);
    if (json_object_get(cj, "power_per_device_w")) {
        bad |= jv_num(cj, "power_per_device_w", "/cost", JV_REQUIRED, 0.0, 1.0, 1e5, &r->power_per_device_w, st);
        r->power_given = 1;
    }
    json_t *cur = json_object_get(cj, "currency");
    if (cur) {
        const char *c = json_string_value(cur);
        size_t n = c ? strlen(c) : 0;
        int ok = n >= 1 && n <= 3;
        for (size_t i = 0; ok && i < n; i++) ok = c[i] >= 'A' && c[i] <= 'Z';
        if (!ok) {
            api_fail(st, 422, "/cost/currency", "must be an ISO 4217 code of 1 to 3 capital letters, e.g. \"USD\"");
            bad = -1;
        } else {
            snprintf(r->currency, sizeof r->currency, "%s", c);
        }
    }
    return bad;
}

/* requests parsed, all threads (api_parse_count; /metrics) */
static atomic_ulong parses;

unsigned long api_parse_count(void) { return atomic_load(&parses); }

/* The model and the hardware, resolved (presets, HF configs, overrides)
 * and read. */
static int parse_model_and_hardware(json_t *req, api_request *r, api_status *st)
{
    json_t *mj = json_object_get(req, "model");
    if (!mj) { api_fail(st, 422, "/model", "required field is missing"); return -1; }
    r->model_ir = api_resolve_model(mj, &r->model_source, &r->model_overridden, st);
    if (!r->model_ir) return -1;
    const char *mptr = json_object_get(mj, "hf_config") ? "/model/hf_config" : "/model";
    if (api_model_from_ir(r->model_ir, mptr, &r->model, st)) return -1;
    json_t *hj = json_object_get(req, "hardware");
    if (!hj) { api_fail(st, 422, "/hardware", "required field is missing"); return -1; }
    r->hw_json = api_resolve_hardware(hj, &r->hw_overridden, st);
    if (!r->hw_json) return -1;
    if (api_hardware_from_json(r->hw_json, "/hardware", &r->hw, st)) return -1;
    return 0;
}

/* "training" (and the request's mfu_convention); bad: what was already
 * wrong (devices), reported together with seq_len's problems. */
static int parse_training(json_t *req, json_t *tj, api_request *r, int bad, api_status *st)
{
    int v2;
    /* the contract's Training (openapi.yaml) */
    static const char *const TRAINING[] = {"seq_len", "global_batch_tokens", "dtype", "attention_impl",
                                           "tp_overlap", "ep_overlap", "overlap_grad_reduce", "grad_dtype",
                                           "adam_moments_dtype", "tokens", "moe_imbalance", "vocab_tiles",
                                           "optimizer_offload", NULL};
    if (jv_known(tj, "/training", "training", TRAINING, st)) return -1;
    int64_t seq;
    bad |= jv_int(tj, "seq_len", "/training", JV_REQUIRED, 0, 1, API_MAX_SEQ, &seq, st);
    if (bad) return -1;
    r->train.seq = seq;
    json_t *sj = json_object_get(req, "search");
    int batch_range = json_is_object(sj) && json_object_get(sj, "batch_seqs");
    /* with a searched batch range the roofline is taken at the largest batch */
    int64_t gbt, gbt_default = seq;
    if (batch_range) {
        json_t *hi = json_array_get(json_object_get(sj, "batch_seqs"), 1);
        double bv = json_is_number(hi) ? json_number_value(hi) : 1.0;
        if (bv >= 1 && bv <= 1e9 && bv == floor(bv)) gbt_default = (int64_t)bv * seq;
    }
    bad |= jv_int(tj, "global_batch_tokens", "/training", batch_range ? JV_OPTIONAL : JV_REQUIRED,
                  gbt_default, 1, (int64_t)1 << 40, &gbt, st);
    if (!bad && gbt % seq) {
        api_fail(st, 422, "/training/global_batch_tokens",
                 "must be a multiple of seq_len (%lld): the batch is whole sequences", (long long)seq);
        bad = -1;
    }
    r->train.global_batch_tokens = (double)gbt;
    bad |= jv_enum(tj, "dtype", "/training", JV_OPTIONAL, 0, DTYPES, &v2, st);
    r->train.dtype = (mfu_dtype)v2;
    bad |= jv_enum(tj, "attention_impl", "/training", JV_OPTIONAL, 0, IMPLS, &v2, st);
    r->train.attn_impl = (mfu_attn_impl)v2;
    int tpo = 0, epo = 0;
    bad |= jv_bool(tj, "tp_overlap", "/training", JV_OPTIONAL, 0, &tpo, st);
    bad |= jv_bool(tj, "ep_overlap", "/training", JV_OPTIONAL, 0, &epo, st);
    bad |= jv_enum(req, "mfu_convention", "", JV_OPTIONAL, 0, CONVS, &v2, st);
    r->train.conv = (mfu_convention)v2;
    if (bad) return -1;
    if (r->model.position == MFU_POS_LEARNED && r->train.seq > r->model.max_positions) {
        api_fail(st, 422, "/training/seq_len",
                 "exceeds the model's learned position table (max_positions %lld)",
                 (long long)r->model.max_positions);
        return -1;
    }
    if (r->hw.peak_flops[r->train.dtype] <= 0) {
        api_fail(st, 422, "/training/dtype", "hardware %s has no %s peak", r->hw.name,
                 DTYPES[r->train.dtype]);
        return -1;
    }
    int gd = 0, md = 0, ogr = 1;
    bad |= jv_bool(tj, "overlap_grad_reduce", "/training", JV_OPTIONAL, 1, &ogr, st);
    r->train.no_grad_overlap = !ogr;
    bad |= jv_enum(tj, "grad_dtype", "/training", JV_OPTIONAL, 0, GRAD_DTYPES, &gd, st);
    /* F-MOE-LOAD: a dropless run's busiest expert rank, tokens over the mean */
    bad |= jv_num(tj, "moe_imbalance", "/training", JV_OPTIONAL, 1.0, 1.0, 64.0, &r->train.moe_imbalance, st);
    /* MaxText's num_vocab_tiling and optimizer_memory_host_offload */
    bad |= jv_int(tj, "vocab_tiles", "/training", JV_OPTIONAL, 1, 1, 1 << 20, &r->train.vocab_tiles, st);
    int oo = 0;
    bad |= jv_bool(tj, "optimizer_offload", "/training", JV_OPTIONAL, 0, &oo, st);
    r->train.optimizer_offload = oo;
    if (!bad && oo && !(r->hw.host_bw_bytes_s > 0)) {
        api_fail(st, 422, "/training/optimizer_offload", "needs the hardware's host link (hardware.host_bw_bytes_s); %s has none",
                 r->hw.name);
        bad = -1;
    }
    bad |= jv_enum(tj, "adam_moments_dtype", "/training", JV_OPTIONAL, 0, GRAD_DTYPES, &md, st);
    if (bad) return -1;
    r->train.grad_bf16 = gd;
    r->train.moments_bf16 = md;
    r->tp_overlap = tpo;
    r->ep_overlap = epo;
    return 0;
}

int api_parse_request(json_t *req, int need_devices, api_request *r, api_status *st)
{
    atomic_fetch_add(&parses, 1);
    memset(r, 0, sizeof *r);
    if (!json_is_object(req)) {
        api_fail(st, 422, "", "the request must be a JSON object");
        return -1;
    }
    if (api_check_limits(req, st)) return -1;
    /* a normalized request carries its provenance (_source); it is not an input */
    static const char *const KNOWN[] = {"model", "hardware", "devices", "training", "mfu_convention",
                                        "search", "measured", "cost", "_source", NULL};
    if (jv_known(req, "", "a request", KNOWN, st)) return -1;
    if (parse_model_and_hardware(req, r, st)) return -1;
    int bad = jv_int(req, "devices", "", need_devices ? JV_REQUIRED : JV_OPTIONAL, 1, 1,
                     API_MAX_DEVICES, &r->devices, st);
    json_t *tj = json_object_get(req, "training");
    if (!json_is_object(tj)) {
        api_fail(st, 422, "/training", "required object {seq_len, global_batch_tokens, dtype} is missing");
        return -1;
    }
    if (parse_training(req, tj, r, bad, st)) return -1;
    if (parse_cost(req, tj, r, st)) return -1;
    unsigned mx[2];
    if (scan_custom_modules(req, &r->rc_custom, mx, st)) return -1;
    r->rc_mx_device = mx[0];
    r->rc_mx_host = mx[1];
    return 0;
}

/* ---- normal form and key ------------------------------------------------- */

static json_t *config_json_min(const mfu_system *sys, const mfu_config *c);

/* The system of a parsed request; a failure (an inventory beyond the
 * limits) is a 422 at /model. */
static int system_init(mfu_system *sys, const api_request *r, mfu_op *ops, api_status *st)
{
    int rc = mfu_system_init(sys, &r->model, &r->hw, &r->train, r->devices, r->rc_custom, ops);
    if (rc == MFU_OK && (r->rc_mx_device | r->rc_mx_host) &&
        mfu_system_set_remat_names(sys, r->rc_mx_device, r->rc_mx_host) != MFU_OK)
        rc = MFU_EINVAL; /* parse_remat admits no such names */
    if (rc == MFU_OK) return 0;
    api_fail_core(st, rc, "/model", "cannot be modelled");
    return -1;
}

/* {"recompute": name} or, for the custom slot, {"recompute": "selective",
 * "recompute_modules": [...]} into obj. */
static void set_recompute(json_t *obj, const mfu_system *sys, int slot)
{
    if (slot == MFU_RC_MAXTEXT) {
        /* the families, by one MaxText name each */
        json_object_set_new(obj, "recompute", json_string("maxtext"));
        json_object_set_new(obj, "remat", api_remat_json(&sys->rc[slot]));
        return;
    }
    if (slot != MFU_RC_CUSTOM) {
        json_object_set_new(obj, "recompute", json_string(api_recompute_names[slot]));
        return;
    }
    json_object_set_new(obj, "recompute", json_string("selective"));
    json_t *m = json_array();
    for (int k = 0; k < MFU_RCM_COUNT; k++)
        if (sys->rc[MFU_RC_CUSTOM].modules & (1u << k)) json_array_append_new(m, json_string(mfu_rcm_names[k]));
    json_object_set_new(obj, "recompute_modules", m);
}

/* measured: {config, step_time_s, trace}. `trace` is a trace measurement
 * (POST /traces, `mfu trace`: steps and a summary) or, in a request the
 * daemon has not yet resolved, the 64-hex id of an uploaded trace (kept
 * as is in the normal form: the id names the trace's bytes). With a trace,
 * step_time_s defaults to the trace's mean step time. engine: the id form
 * is refused (only the daemon resolves ids). */
static int parse_measured(json_t *meas, int engine, double *t, json_t **trace, api_status *st)
{
    if (trace) *trace = NULL;
    if (!json_is_object(meas)) {
        api_fail(st, 422, "/measured", "must be an object {config, step_time_s, trace}");
        return -1;
    }
    /* the contract's Measured (openapi.yaml) */
    static const char *const MEASURED[] = {"config", "step_time_s", "trace", "layer_time_s", NULL};
    if (jv_known(meas, "/measured", "measured", MEASURED, st)) return -1;
    json_t *tr = json_object_get(meas, "trace");
    double tt = 0;
    if (tr) {
        const char *id = json_string_value(tr);
        if (id) {
            int hex = strlen(id) == 64;
            for (const char *p = id; hex && *p; p++) hex = isxdigit((unsigned char)*p) && !isupper((unsigned char)*p);
            if (!hex) {
                api_fail(st, 422, "/measured/trace", "must be the 64-hex id of an uploaded trace (POST /traces) or a trace measurement");
                return -1;
            }
            if (engine) {
                api_fail(st, 422, "/measured/trace",
                         "is the id of an uploaded trace: only the daemon resolves it (POST /traces); the CLI reads a trace file with --trace FILE");
                return -1;
            }
        } else {
            json_t *sum = json_object_get(tr, "summary");
            json_t *stv = json_object_get(sum, "step_time_s");
            if (!json_is_object(tr) || !json_is_number(stv) || !(json_number_value(stv) > 0) ||
                !json_array_size(json_object_get(tr, "steps"))) {
                api_fail(st, 422, "/measured/trace",
                         "must be a trace measurement (what POST /traces and mfu trace answer: steps and a summary with step_time_s) or the id of an uploaded trace");
                return -1;
            }
            tt = json_number_value(stv);
        }
        if (trace) *trace = tr;
    }
    if (tr && json_is_string(tr) && !json_object_get(meas, "step_time_s")) {
        *t = 0; /* the uploaded trace's, once the daemon has resolved the id */
        return 0;
    }
    if (json_object_get(meas, "step_time_s") || !(tt > 0)) {
        if (jv_num(meas, "step_time_s", "/measured", JV_REQUIRED, 0, 1e-6, 1e7, t, st)) return -1;
    } else {
        if (tt < 1e-6 || tt > 1e7) {
            api_fail(st, 422, "/measured/trace", "the trace's step time %g s is outside 1e-6..1e7 s", tt);
            return -1;
        }
        *t = tt;
    }
    return 0;
}

static json_t *normalize_run(json_t *request, api_status *st);

json_t *api_normalize(json_t *request, api_status *st)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(normalize_run(request, st), st, before);
}

/* ---- the prepared request (issue 15 item 1: parse once) ----------------
 * A search request parsed, validated and given its system once -- model,
 * hardware, options, provenance, the roofline inside the system -- on the
 * HTTP thread: its normal form is the cache key's text, and the worker runs
 * the same object (api_search_prepared) without parsing again. */
struct api_prepared {
    api_request r;
    mfu_system sys;             /* points into r: the object does not move */
    mfu_search_opts o;
    double deadline;
    mfu_op *ops;
    json_t *request;            /* owned by api_prepare_search's object */
    json_t *normal;
};

static void prepared_fini(struct api_prepared *p)
{
    free(p->ops);
    api_request_free(&p->r);
    json_decref(p->request);
    json_decref(p->normal);
    p->ops = NULL;
    p->request = p->normal = NULL;
}

/* Parse, validate, build the system and the search options; 0 or -1 with
 * st set. prepared_fini afterwards either way. */
static int prepare(json_t *request, int need, struct api_prepared *p, api_status *st)
{
    memset(p, 0, sizeof *p);
    if (api_parse_request(request, need, &p->r, st)) return -1;
    p->ops = api_malloc(sizeof(mfu_op) * MFU_SCRATCH_OPS);
    if (!p->ops) {
        api_fail(st, 503, "", "out of memory");
        return -1;
    }
    if (system_init(&p->sys, &p->r, p->ops, st)) return -1;
    return parse_search(json_object_get(request, "search"), &p->sys, &p->o, &p->deadline, st);
}

/* The normal form of a prepared request (docs: the cache key is its hash). */
/* The normal form's "search": every option, defaults written out. */
static json_t *normal_search(const mfu_system *sys, const mfu_search_opts *o, double deadline)
{
    json_t *allowed = json_object();
    for (int a = 0; a < MFU_AX_COUNT; a++) {
        if (!o->n_allowed[a]) continue;
        json_t *arr = json_array();
        for (int i = 0; i < o->n_allowed[a]; i++) json_array_append_new(arr, json_integer(o->allowed[a][i]));
        json_object_set_new(allowed, AXES[a], arr);
    }
    /* fixed switches only, spelled as the request spells them (fuzz,
     * cachekey: {"sp": -1, "schedule": 0, ...} for "searched" was not a
     * valid request, so the normal form did not normalize again) */
    json_t *fix = json_object();
    if (o->fix_sp >= 0) json_object_set_new(fix, "sp", json_boolean(o->fix_sp));
    if (o->fix_zero >= 0) json_object_set_new(fix, "zero", json_integer(o->fix_zero));
    if (o->fix_schedule >= 0)
        json_object_set_new(fix, "schedule", json_string(api_schedule_names[o->fix_schedule]));
    if (o->fix_recompute >= 0) set_recompute(fix, sys, o->fix_recompute);
    if (o->fix_etp >= 0) json_object_set_new(fix, "etp", json_integer((json_int_t)o->fix_etp));
    if (o->fix_vpp >= 0) json_object_set_new(fix, "vpp", json_integer((json_int_t)o->fix_vpp));
    if (o->fix_mbs >= 0) json_object_set_new(fix, "mbs", json_integer((json_int_t)o->fix_mbs));
    json_t *fws = json_array();
    for (int f = 0; f < MFU_FW_COUNT; f++)
        if (o->frameworks & MFU_FW_MASK(f)) json_array_append_new(fws, json_string(FRAMEWORKS[f]));
    if (o->frameworks & MFU_FW_ANY) json_array_append_new(fws, json_string("any"));
    json_t *search = json_pack("{s:i,s:s,s:s,s:I,s:f,s:I,s:I,s:I,s:b,s:b,s:o,s:o,s:[I,I],s:o}", "top_k", o->top_k,
                               "rank_by", RANKS[o->rank_by_bound], "distinct", DISTINCT[o->distinct], "max_evaluations",
                               (json_int_t)o->max_evaluations, "deadline_s", deadline, "max_tp",
                               (json_int_t)o->max_ax[MFU_AX_TP], "max_mbs", (json_int_t)o->max_mbs,
                               "max_vpp", (json_int_t)o->max_vpp, "partial_recompute",
                               o->partial_recompute, "cpu_offload", o->cpu_offload, "allowed", allowed,
                               "fix", fix, "batch_seqs",
                               (json_int_t)o->batch_min_seqs, (json_int_t)o->batch_max_seqs,
                               "frameworks", fws);
    return search;
}

static json_t *normal_form(struct api_prepared *p, json_t *request, api_status *st)
{
    const api_request *r = &p->r;
    const mfu_system *sys = &p->sys;
    const mfu_search_opts *o = &p->o;
    double deadline = p->deadline;
    json_t *out = NULL;
    mfu_config mc;
    json_t *meas = json_object_get(request, "measured");
    json_t *mj = NULL;
    if (meas) {
        double t;
        json_t *tr;
        if (parse_measured(meas, 0, &t, &tr, st)) goto fail;
        json_t *cj = json_object_get(meas, "config");
        if (!cj) { api_fail(st, 422, "/measured/config", "required field is missing"); goto fail; }
        if (parse_config(cj, "/measured/config", sys, &mc, st)) goto fail;
        mc.tp_overlap = r->tp_overlap;
        mc.ep_overlap = r->ep_overlap;
        mj = json_pack("{s:o}", "config", config_json_min(sys, &mc));
        if (t > 0) json_object_set_new(mj, "step_time_s", json_real(t));
        if (tr) json_object_set_new(mj, "trace", json_deep_copy(tr));
    }
    json_t *search = normal_search(sys, o, deadline);
    json_t *model = api_model_to_ir(&r->model);
    out = json_pack("{s:o,s:o,s:I,s:{s:I,s:I,s:s,s:s,s:b,s:b,s:s,s:s,s:b},s:s,s:o}", "model", model,
                    "hardware", api_hardware_to_json(&r->hw), "devices", (json_int_t)r->devices,
                    "training", "seq_len", (json_int_t)r->train.seq, "global_batch_tokens",
                    api_json_count(r->train.global_batch_tokens), "dtype", DTYPES[r->train.dtype], "attention_impl",
                    IMPLS[r->train.attn_impl], "tp_overlap", r->tp_overlap, "ep_overlap",
                    r->ep_overlap, "grad_dtype", GRAD_DTYPES[r->train.grad_bf16],
                    "adam_moments_dtype", GRAD_DTYPES[r->train.moments_bf16], "overlap_grad_reduce",
                    !r->train.no_grad_overlap, "mfu_convention",
                    CONVS[r->train.conv], "search", search);
    /* only when stated: keys of requests without it stay as they were */
    if (out && r->train.moe_imbalance > 1.0)
        json_object_set_new(json_object_get(out, "training"), "moe_imbalance", json_real(r->train.moe_imbalance));
    if (out && r->train.vocab_tiles > 1)
        json_object_set_new(json_object_get(out, "training"), "vocab_tiles", json_integer(r->train.vocab_tiles));
    if (out && r->train.optimizer_offload)
        json_object_set_new(json_object_get(out, "training"), "optimizer_offload", json_true());
    if (!out) { /* as api_roofline */
        json_decref(mj);
        api_fail(st, 500, "", "normal form has a non-finite number");
        goto fail;
    }
    if (mj) json_object_set_new(out, "measured", mj);
    /* time and cost to train are part of the answer, hence of the key */
    if (r->train_tokens > 0)
        json_object_set_new(json_object_get(out, "training"), "tokens", json_real(r->train_tokens));
    if (json_object_get(request, "cost")) {
        json_t *cj = json_pack("{s:f,s:s,s:f}", "price_per_device_hour", r->price_per_device_hour,
                               "currency", r->currency, "pue", r->pue);
        if (r->power_given) json_object_set_new(cj, "power_per_device_w", json_real(r->power_per_device_w));
        json_object_set_new(out, "cost", cj);
    }
    /* provenance is kept outside the hashed part: same model, same key */
    json_object_set_new(out, "_source", json_pack("{s:O,s:O,s:O}", "model", r->model_source,
                                                  "model_overridden", r->model_overridden ? r->model_overridden : json_null(),
                                                  "hardware_overridden", r->hw_overridden ? r->hw_overridden : json_null()));
    return out;
fail:
    return NULL;
}

static json_t *normalize_run(json_t *request, api_status *st)
{
    int need = json_is_object(request) && (json_object_get(request, "search") ||
                                            json_object_get(request, "devices"));
    struct api_prepared p;
    json_t *out = prepare(request, need, &p, st) ? NULL : normal_form(&p, request, st);
    prepared_fini(&p);
    return out;
}

int api_cache_key(json_t *normalized, char out_hex[65])
{
    out_hex[0] = '\0';
    json_t *copy = json_copy(normalized);
    if (copy) json_object_del(copy, "_source");
    char *s = copy ? json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17)) : NULL;
    size_t n = s ? strlen(s) : 0;
    char *buf = s ? api_malloc(n + sizeof MFU_ENGINE_VERSION + 1) : NULL;
    if (!buf) { /* out of memory: no key (the callers refuse) */
        free(s);
        json_decref(copy);
        return -1;
    }
    memcpy(buf, s, n);
    buf[n] = '\n';
    memcpy(buf + n + 1, MFU_ENGINE_VERSION, sizeof MFU_ENGINE_VERSION);
    mfu_sha256_hex(buf, n + sizeof MFU_ENGINE_VERSION, out_hex);
    free(buf);
    free(s);
    json_decref(copy);
    return 0;
}

/* ---- engines -------------------------------------------------------------- */

static json_t *config_json_min(const mfu_system *sys, const mfu_config *c)
{
    json_t *o = json_pack("{s:{s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:i,s:I},s:s,s:I,s:I,s:I,s:I}", "parallel",
                          "dp", (json_int_t)c->ax[MFU_AX_DP], "fsdp", (json_int_t)c->ax[MFU_AX_FSDP],
                          "tp", (json_int_t)c->ax[MFU_AX_TP], "ep", (json_int_t)c->ax[MFU_AX_EP], "pp",
                          (json_int_t)c->ax[MFU_AX_PP], "cp", (json_int_t)c->ax[MFU_AX_CP], "sp", c->sp,
                          "zero", c->zero, "etp", (json_int_t)c->etp, "schedule",
                          api_schedule_names[c->schedule], "vpp", (json_int_t)c->vpp, "mbs",
                          (json_int_t)c->mbs, "grad_accum", (json_int_t)c->grad_accum,
                          "recompute_layers", (json_int_t)c->recompute_layers);
    set_recompute(o, sys, c->recompute);
    if (c->split == MFU_SPLIT_FIRST_LAST)
        json_object_set_new(o, "pipeline_split", json_pack("{s:I,s:I}", "first", (json_int_t)c->pp_first,
                                                           "last", (json_int_t)c->pp_last));
    else
        json_object_set_new(o, "pipeline_split", json_string(api_split_names[c->split]));
    return o;
}

static json_t *roofline_run(json_t *request, api_status *st);

json_t *api_roofline(json_t *request, api_status *st)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(roofline_run(request, st), st, before);
}

static json_t *roofline_run(json_t *request, api_status *st)
{
    api_request r;
    if (api_parse_request(request, 0, &r, st)) {
        api_request_free(&r);
        return NULL;
    }
    /* a measured run (a step time, a trace) is of a configuration: the
     * roofline has none, and said nothing of it before (issue 14 item 12) */
    if (json_object_get(request, "measured")) {
        api_fail(st, 422, "/measured",
                 "a measured run belongs to POST /search (its measured.config names the configuration that ran); the roofline has no configuration");
        api_request_free(&r);
        return NULL;
    }
    mfu_op *ops = api_malloc(sizeof(mfu_op) * MFU_MAX_OPS);
    if (!ops) {
        api_fail(st, 503, "", "out of memory");
        api_request_free(&r);
        return NULL;
    }
    /* search options do not change the roofline, and the page sends its
     * whole search request here, so they are not refused; but they are
     * checked as POST /search would, not passed over when invalid (issue
     * 14 item 12), against devices (1 when not given; api_parse_request
     * checked their range). */
    json_t *sj = json_object_get(request, "search");
    if (sj) {
        mfu_system sys;
        mfu_search_opts o;
        double deadline;
        if (system_init(&sys, &r, ops, st) || parse_search(sj, &sys, &o, &deadline, st)) {
            free(ops);
            api_request_free(&r);
            return NULL;
        }
    }
    mfu_roofline roof;
    int rc = mfu_roofline_compute(&r.model, &r.hw, &r.train, ops, MFU_MAX_OPS, &roof);
    if (rc != MFU_OK) {
        api_fail_core(st, rc, "/model", "cannot be modelled");
        free(ops);
        api_request_free(&r);
        return NULL;
    }
    json_t *out = json_pack("{s:o,s:o,s:o}", "model", api_render_model(&r),
                            "hardware", api_render_hardware(&r),
                            "roofline", api_render_roofline(&r, &roof, ops));
    /* never NULL without a status (fuzz, request): json_pack fails on a
     * non-finite number, which validation is meant to rule out */
    if (!out) api_fail(st, 500, "", "result has a non-finite number");
    free(ops);
    api_request_free(&r);
    return out;
}

typedef struct deadline_ctx {
    api_progress_fn fn;     /* the caller's callback (single-threaded runs only) */
    void *ctx;
    struct timespec start;
    double deadline_s;
    atomic_int hit;         /* the deadline passed */
    atomic_int cancelled;   /* the callback asked to stop */
} deadline_ctx;

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static int progress_bridge(void *p, double frac, uint64_t evaluated)
{
    deadline_ctx *d = p;
    if (atomic_load(&d->hit) || atomic_load(&d->cancelled)) return 1;
    if (since(&d->start) > d->deadline_s) {
        atomic_store(&d->hit, 1);
        return 1;
    }
    if (d->fn && d->fn(d->ctx, frac, evaluated)) {
        atomic_store(&d->cancelled, 1);
        return 1;
    }
    return 0;
}

/* A shard's progress as the whole search's (issue 14 item 10: progress
 * and evaluated went back to 0 at every shard): shard k of the fixed
 * MFU_SEARCH_SHARDS at fraction f is (k + f) / MFU_SEARCH_SHARDS, and the
 * evaluations of the thread's finished shards are added. Only a
 * single-threaded search reports (deadline_ctx.fn), so its shards run in
 * order and both only grow. */
typedef struct shard_bridge {
    deadline_ctx *d;
    int shard;
    uint64_t done;
} shard_bridge;

static int shard_bridge_fn(void *p, double frac, uint64_t evaluated)
{
    shard_bridge *b = p;
    return progress_bridge(b->d, ((double)b->shard + frac) / MFU_SEARCH_SHARDS, b->done + evaluated);
}

/* One search thread: shards first, first + step, ... of the fixed
 * MFU_SEARCH_SHARDS, each into its own slot (merged in shard order later, so
 * the answer does not depend on the thread count). */
typedef struct search_thread {
    const mfu_system *sys;
    const mfu_search_opts *o;
    deadline_ctx *d;
    int first, step;
    mfu_search_result *parts; /* MFU_SEARCH_SHARDS results, top_k entries each */
    int ok;
} search_thread;

static void *search_thread_main(void *p)
{
    search_thread *t = p;
    mfu_op *ops = api_malloc(sizeof(mfu_op) * MFU_SCRATCH_OPS);
    /* zeroed (an empty cache) by calloc, whose large blocks come as fresh
     * pages: only the entries a search fills are ever touched; kept across
     * this thread's shards (one system) */
    void *cache = api_calloc(1, mfu_search_cache_bytes());
    t->ok = ops && cache;
    shard_bridge br = {t->d, 0, 0};
    for (int k = t->first; t->ok && k < MFU_SEARCH_SHARDS; k += t->step) {
        if (atomic_load(&t->d->hit) || atomic_load(&t->d->cancelled)) break;
        /* the core asks progress_bridge only every 16384 evaluations of a
         * shard; with many small shards (a huge but mostly indivisible space)
         * the deadline is also checked between shards */
        if (since(&t->d->start) > t->d->deadline_s) {
            atomic_store(&t->d->hit, 1);
            break;
        }
        mfu_search_scratch sc = {ops, cache, NULL};
        br.shard = k;
        mfu_search_shard(t->sys, t->o, &sc, k, shard_bridge_fn, &br, &t->parts[k]);
        br.done += t->parts[k].stats.evaluated;
    }
    free(cache);
    free(ops);
    return NULL;
}

/* The configuration a search.fix pins when it fixes the layout: the dense
 * axes it leaves out are 1 and the product is the device count. Switches
 * it leaves out take their plainest value (sp with tp, no ZeRO, 1F1B or
 * interleaved when vpp > 1, mbs 1, no recompute). */
static int pinned_config(json_t *fix, const mfu_system *sys, const mfu_search_opts *o, mfu_config *c)
{
    if (!json_is_object(fix)) return 0;
    memset(c, 0, sizeof *c);
    int64_t prod = 1;
    int any = 0;
    for (int a = 0; a < MFU_AX_COUNT; a++) {
        c->ax[a] = o->n_allowed[a] == 1 ? o->allowed[a][0] : 1;
        any |= json_object_get(fix, AXES[a]) != NULL;
        if (a != MFU_AX_EP) prod *= c->ax[a];
    }
    if (!any || prod != sys->devices) return 0;
    c->sp = o->fix_sp >= 0 ? o->fix_sp : c->ax[MFU_AX_TP] > 1;
    c->zero = o->fix_zero >= 0 ? o->fix_zero : 0;
    c->etp = o->fix_etp > 0 ? o->fix_etp : 1;
    c->vpp = o->fix_vpp > 0 ? o->fix_vpp : o->fix_schedule == MFU_SCHED_DUALPIPEV ? 2 : 1;
    c->schedule = o->fix_schedule >= 0 ? (mfu_schedule)o->fix_schedule
                  : c->vpp > 1 ? MFU_SCHED_INTERLEAVED : MFU_SCHED_1F1B;
    c->mbs = o->fix_mbs > 0 ? o->fix_mbs : 1;
    c->recompute = o->fix_recompute >= 0 ? o->fix_recompute : MFU_RC_NONE;
    c->recompute_layers = -1;
    c->tp_overlap = o->tp_overlap;
    c->ep_overlap = o->ep_overlap;
    int64_t per = c->mbs * c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
    c->grad_accum = per > 0 && o->batch_max_seqs / per > 0 ? o->batch_max_seqs / per : 1;
    if (mfu_config_default_split(sys, c) != MFU_OK) c->split = MFU_SPLIT_EVEN;
    return 1;
}

int api_request_measured(json_t *request, api_request *r, mfu_system *sys, mfu_config *c,
                         double *step_time_s, mfu_op *ops, api_status *st)
{
    if (api_parse_request(request, 1, r, st)) return -1;
    if (system_init(sys, r, ops, st)) return -1;
    json_t *meas = json_object_get(request, "measured");
    if (!json_is_object(meas)) {
        api_fail(st, 422, "/measured", "required object {config, step_time_s} is missing");
        return -1;
    }
    if (parse_measured(meas, 1, step_time_s, NULL, st)) return -1;
    if (parse_config(json_object_get(meas, "config"), "/measured/config", sys, c, st)) return -1;
    c->tp_overlap = r->tp_overlap;
    c->ep_overlap = r->ep_overlap;
    return 0;
}

json_t *api_search(json_t *request, api_status *st, api_progress_fn fn, void *ctx)
{
    return api_search_mt(request, st, fn, ctx, 1);
}

static json_t *search_mt_run(json_t *request, api_status *st, api_progress_fn fn, void *ctx, int threads);

json_t *api_search_mt(json_t *request, api_status *st, api_progress_fn fn, void *ctx, int threads)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(search_mt_run(request, st, fn, ctx, threads), st, before);
}

/* Run a prepared search and render its answer. */
/* The search on `threads` threads (thread 0 is the caller's), each into its
 * shards' slots of parts. 0, or -1 when a thread ran out of memory. */
static int run_threads(const mfu_system *sys, const mfu_search_opts *o, deadline_ctx *d, int threads,
                       mfu_search_result *parts)
{
    search_thread th[MFU_SEARCH_SHARDS];
    pthread_t tid[MFU_SEARCH_SHARDS];
    int started[MFU_SEARCH_SHARDS] = {0};
    for (int t = 0; t < threads; t++) {
        th[t] = (search_thread){sys, o, d, t, threads, parts, 0};
        /* thread 0 runs on the calling thread */
        if (t > 0) started[t] = pthread_create(&tid[t], NULL, search_thread_main, &th[t]) == 0;
    }
    search_thread_main(&th[0]);
    int lost = !th[0].ok;
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else search_thread_main(&th[t]); /* no thread: run its shards here */
        lost |= !th[t].ok;
    }
    return lost ? -1 : 0;
}

/* "search": what was searched, how far, and why it stopped. */
static json_t *render_search_stats(const mfu_search_result *res, const mfu_search_opts *o, deadline_ctx *d,
                                   double elapsed, int n_ties)
{
    json_t *pruned = json_object();
    for (int i = 0; i < MFU_PRUNE_COUNT; i++)
        json_object_set_new(pruned, mfu_prune_names[i], json_integer((json_int_t)res->stats.pruned[i]));
    /* shape inventories built depend on the thread count: not reported, so
     * the answer stays the same for any */
    json_t *stats = json_pack("{s:I,s:I,s:I,s:I,s:o,s:f,s:b,s:s,s:s}", "space_size",
                              (json_int_t)res->stats.space_size, "evaluated", (json_int_t)res->stats.evaluated,
                              "fully_evaluated", (json_int_t)res->stats.fully_evaluated, "feasible",
                              (json_int_t)res->stats.feasible, "pruned", pruned, "elapsed_s", elapsed,
                              "truncated", res->stats.truncated, "truncated_by",
                              !res->stats.truncated ? "" : atomic_load(&d->hit) ? "deadline_s" :
                              atomic_load(&d->cancelled) ? "cancelled" : "max_evaluations",
                              "rank_by", RANKS[o->rank_by_bound]);
    json_object_set_new(stats, "ties_with_best", json_integer(n_ties));
    json_object_set_new(stats, "distinct", json_string(DISTINCT[o->distinct]));
    return stats;
}

/* The measured configuration's gap, a fully pinned plan that gives
 * nothing, or the closest miss when nothing fits. */
static void add_search_notes(json_t *out, struct api_prepared *p, json_t *request, json_t *meas, const mfu_config *mc,
                             double meas_t, json_t *meas_trace, const mfu_search_result *res, deadline_ctx *d,
                             api_status *st)
{
    api_request *r = &p->r;
    mfu_system *sys = &p->sys;
    mfu_search_opts *o = &p->o;
    if (meas) {
        mfu_eval ev;
        if (mfu_evaluate(sys, mc, p->ops, &ev) == MFU_OK)
            json_object_set_new(out, "measured", api_render_measured(sys, mc, &ev, meas_t, p->ops, meas_trace));
        else
            api_fail(st, 500, "/measured/config", "could not be evaluated");
    }
    /* a plan pinned on every axis that gives nothing answers why, with
     * that configuration evaluated (issue 9 item 11) */
    mfu_config pc;
    if (res->n == 0 && pinned_config(json_object_get(json_object_get(request, "search"), "fix"), sys, o, &pc))
        json_object_set_new(out, "pinned", api_render_pinned(sys, o, &pc, p->ops));
    /* nothing fits: the closest miss and the fewest devices that fit
     * (issue 11 item 3), within what is left of the deadline (at least 1 s) */
    if (res->n == 0 && !res->stats.truncated) {
        double left = p->deadline - since(&d->start);
        json_object_set_new(out, "no_fit", api_plan_no_fit(r, sys, o, &res->stats, p->ops, left > 1.0 ? left : 1.0));
    }
}

static json_t *search_from(struct api_prepared *p, json_t *request, api_status *st, api_progress_fn fn,
                           void *ctx, int threads)
{
    api_request *r = &p->r;
    mfu_system *sys = &p->sys;
    mfu_search_opts *o = &p->o;
    mfu_op *ops = p->ops;
    json_t *out = NULL;
    mfu_ranked *top = NULL, *parts_top = NULL;
    o->tp_overlap = r->tp_overlap;
    o->ep_overlap = r->ep_overlap;
    mfu_config mc;
    json_t *meas = json_object_get(request, "measured");
    double meas_t = 0;
    json_t *meas_trace = NULL;
    if (meas) {
        if (parse_measured(meas, 1, &meas_t, &meas_trace, st)) goto fail;
        if (parse_config(json_object_get(meas, "config"), "/measured/config", sys, &mc, st)) goto fail;
        mc.tp_overlap = r->tp_overlap;
        mc.ep_overlap = r->ep_overlap;
    }
    if (threads < 1) threads = 1;
    if (threads > MFU_SEARCH_SHARDS) threads = MFU_SEARCH_SHARDS;
    top = api_malloc(sizeof *top * (size_t)o->top_k);
    parts_top = api_malloc(sizeof *parts_top * (size_t)o->top_k * MFU_SEARCH_SHARDS);
    if (!top || !parts_top) { api_fail(st, 503, "", "out of memory for the ranking"); goto fail; }
    mfu_search_result res = {0, top, {0}};
    mfu_search_result parts[MFU_SEARCH_SHARDS];
    for (int k = 0; k < MFU_SEARCH_SHARDS; k++) {
        memset(&parts[k], 0, sizeof parts[k]);
        parts[k].top = parts_top + (size_t)k * (size_t)o->top_k;
    }
    deadline_ctx d = {threads == 1 ? fn : NULL, ctx, {0, 0}, p->deadline, 0, 0};
    clock_gettime(CLOCK_MONOTONIC, &d.start);
    if (run_threads(sys, o, &d, threads, parts)) { api_fail(st, 503, "", "out of memory for the search"); goto fail; }
    for (int k = 0; k < MFU_SEARCH_SHARDS; k++) mfu_search_merge(o, &parts[k], &res);
    if (atomic_load(&d.hit) || atomic_load(&d.cancelled)) res.stats.truncated = 1;
    double elapsed = since(&d.start);
    const mfu_roofline roof = sys->roof; /* the system's: one roofline per search */
    json_t *configs = json_array();
    double u = r->hw.has_profile ? r->hw.eff.uncertainty : 0.0;
    for (int i = 0; i < res.n; i++) {
        json_t *cj = api_render_config(sys, &top[i].config, &top[i].eval, i + 1,
                                       i < API_STAGES_RANKS ? ops : NULL);
        json_t *cost = api_plan_cost(r, &top[i].eval, u);
        if (cost) json_object_set_new(cj, "time_to_train", cost);
        json_array_append_new(configs, cj);
    }
    /* ties (F-TIME-INTERVAL): configurations whose expected intervals
     * overlap cannot be told apart; tiers name them */
    json_t *ties = api_plan_ranking(configs, top, res.n, u, o->distinct == MFU_DISTINCT_LAYOUT);
    int n_ties = 0;
    for (size_t i = 0; i < json_array_size(configs); i++)
        n_ties += json_is_true(json_object_get(json_array_get(configs, i), "tie_with_best"));
    json_t *stats = render_search_stats(&res, o, &d, elapsed, n_ties);
    json_t *roof_j = api_render_roofline(r, &roof, NULL);
    out = json_pack("{s:o,s:o,s:I,s:o,s:o,s:o,s:o}", "model", api_render_model(r), "hardware",
                    api_render_hardware(r), "devices", (json_int_t)r->devices, "roofline", roof_j,
                    "configs", configs, "ties", ties, "search", stats);
    if (!out) api_fail(st, 500, "", "result has a non-finite number"); /* as api_roofline */
    else add_search_notes(out, p, request, meas, &mc, meas_t, meas_trace, &res, &d, st);
fail:
    free(top);
    free(parts_top);
    return out;
}

static json_t *search_mt_run(json_t *request, api_status *st, api_progress_fn fn, void *ctx, int threads)
{
    struct api_prepared p;
    json_t *out = prepare(request, 1, &p, st) ? NULL : search_from(&p, request, st, fn, ctx, threads);
    prepared_fini(&p);
    return out;
}

static struct api_prepared *prepare_search_run(json_t *request, api_status *st)
{
    struct api_prepared *p = api_malloc(sizeof *p);
    if (!p) {
        api_fail(st, 503, "", "out of memory");
        return NULL;
    }
    if (prepare(request, 1, p, st) || !(p->normal = normal_form(p, request, st))) {
        prepared_fini(p);
        free(p);
        return NULL;
    }
    p->request = json_incref(request);
    return p;
}

api_prepared *api_prepare_search(json_t *request, api_status *st)
{
    unsigned long before = api_oom_events();
    struct api_prepared *p = prepare_search_run(request, st);
    if (api_oom_events() != before || (!p && !st->status)) {
        api_prepared_free(p);
        api_oom_policy(NULL, st, before);
        return NULL;
    }
    return p;
}

json_t *api_prepared_normal(api_prepared *p) { return p->normal; }

void api_prepared_set_deadline(api_prepared *p, double deadline_s) { p->deadline = deadline_s; }

json_t *api_search_prepared(api_prepared *p, api_status *st, api_progress_fn fn, void *ctx, int threads)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(search_from(p, p->request, st, fn, ctx, threads), st, before);
}

void api_prepared_free(api_prepared *p)
{
    if (!p) return;
    prepared_fini(p);
    free(p);
}
