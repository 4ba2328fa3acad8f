/* api/prepared.c -- the normal form of a request (every default filled
 * in, every number in its canonical type, so key order, 4096 and 4096.0,
 * defaults and aliases give one document), its cache key, and the prepared
 * request a search runs from (parsed once: api_prepare_search). */
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
#include "recipe_int.h"
#include "request_int.h"

/* A configuration as the normal form writes it: only what the request can
 * say (measured.config). */
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
    rq_set_recompute(o, sys, c->recompute);
    if (c->split == MFU_SPLIT_FIRST_LAST)
        json_object_set_new(o, "pipeline_split", json_pack("{s:I,s:I}", "first", (json_int_t)c->pp_first,
                                                           "last", (json_int_t)c->pp_last));
    else
        json_object_set_new(o, "pipeline_split", json_string(api_split_names[c->split]));
    return o;
}

/* ---- normal form and key ------------------------------------------------- */


/* The system of a parsed request; a failure (an inventory beyond the
 * limits) is a 422 at /model. */
int rq_system_setup(mfu_system *sys, const api_request *r, int64_t devices, mfu_op *ops)
{
    int rc = mfu_system_init(sys, &r->model, &r->hw, &r->train, devices, r->rc_custom, ops);
    if (rc == MFU_OK && (r->rc_mx_device | r->rc_mx_host) &&
        mfu_system_set_remat_names(sys, r->rc_mx_device, r->rc_mx_host) != MFU_OK)
        rc = MFU_EINVAL; /* parse_remat admits no such names */
    /* on TPUs, MaxText's decoder layer (F-MEM-SCAN-UNIT) */
    int64_t unit = rc == MFU_OK && r->hw.platform == MFU_PLATFORM_TPU ? rcp_maxtext_layer_unit(sys) : 1;
    if (unit > 1 && mfu_system_set_scan_unit(sys, unit) != MFU_OK) rc = MFU_EINVAL;
    return rc;
}

int rq_system_init(mfu_system *sys, const api_request *r, mfu_op *ops, api_status *st)
{
    int rc = rq_system_setup(sys, r, r->devices, ops);
    if (rc == MFU_OK) return 0;
    api_fail_core(st, rc, "/model", "cannot be modelled");
    return -1;
}

/* {"recompute": name} or, for the custom slot, {"recompute": "selective",
 * "recompute_modules": [...]} into obj. */
void rq_set_recompute(json_t *obj, const mfu_system *sys, int slot)
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
int rq_parse_measured(json_t *meas, int engine, double *t, json_t **trace, api_status *st)
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

void rq_prepared_fini(struct api_prepared *p)
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
int rq_prepare(json_t *request, int need, struct api_prepared *p, api_status *st)
{
    memset(p, 0, sizeof *p);
    if (api_parse_request(request, need, &p->r, st)) return -1;
    p->ops = api_malloc(sizeof(mfu_op) * MFU_SCRATCH_OPS);
    if (!p->ops) {
        api_fail(st, 503, "", "out of memory");
        return -1;
    }
    if (rq_system_init(&p->sys, &p->r, p->ops, st)) return -1;
    return rq_parse_search(json_object_get(request, "search"), &p->sys, &p->o, &p->deadline, st);
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
        json_object_set_new(allowed, rq_axes[a], arr);
    }
    /* fixed switches only, spelled as the request spells them (fuzz,
     * cachekey: {"sp": -1, "schedule": 0, ...} for "searched" was not a
     * valid request, so the normal form did not normalize again) */
    json_t *fix = json_object();
    if (o->fix_sp >= 0) json_object_set_new(fix, "sp", json_boolean(o->fix_sp));
    if (o->fix_zero >= 0) json_object_set_new(fix, "zero", json_integer(o->fix_zero));
    if (o->fix_schedule >= 0)
        json_object_set_new(fix, "schedule", json_string(api_schedule_names[o->fix_schedule]));
    if (o->fix_recompute >= 0) rq_set_recompute(fix, sys, o->fix_recompute);
    if (o->fix_etp >= 0) json_object_set_new(fix, "etp", json_integer((json_int_t)o->fix_etp));
    if (o->fix_vpp >= 0) json_object_set_new(fix, "vpp", json_integer((json_int_t)o->fix_vpp));
    if (o->fix_mbs >= 0) json_object_set_new(fix, "mbs", json_integer((json_int_t)o->fix_mbs));
    json_t *fws = json_array();
    for (int f = 0; f < MFU_FW_COUNT; f++)
        if (o->frameworks & MFU_FW_MASK(f)) json_array_append_new(fws, json_string(rq_frameworks[f]));
    if (o->frameworks & MFU_FW_ANY) json_array_append_new(fws, json_string("any"));
    json_t *search = json_pack("{s:i,s:s,s:s,s:I,s:f,s:I,s:I,s:I,s:b,s:b,s:o,s:o,s:[I,I],s:o}", "top_k", o->top_k,
                               "rank_by", rq_ranks[o->rank_by_bound], "distinct", rq_distinct[o->distinct], "max_evaluations",
                               (json_int_t)o->max_evaluations, "deadline_s", deadline, "max_tp",
                               (json_int_t)o->max_ax[MFU_AX_TP], "max_mbs", (json_int_t)o->max_mbs,
                               "max_vpp", (json_int_t)o->max_vpp, "partial_recompute",
                               o->partial_recompute, "cpu_offload", o->cpu_offload, "allowed", allowed,
                               "fix", fix, "batch_seqs",
                               (json_int_t)o->batch_min_seqs, (json_int_t)o->batch_max_seqs,
                               "frameworks", fws);
    return search;
}

json_t *rq_normal_form(struct api_prepared *p, json_t *request, api_status *st)
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
        if (rq_parse_measured(meas, 0, &t, &tr, st)) goto fail;
        json_t *cj = json_object_get(meas, "config");
        if (!cj) { api_fail(st, 422, "/measured/config", "required field is missing"); goto fail; }
        if (rq_parse_config(cj, "/measured/config", sys, &mc, admitted_of(o), st)) goto fail;
        mc.tp_overlap = r->tp_overlap;
        mc.ep_overlap = r->ep_overlap;
        json_t *mcj = config_json_min(sys, &mc);
        /* the switches a run may leave out to have them inferred (sp,
         * zero, the recompute policy, mbs with grad_accum, and vpp with the
         * interleaved schedule named: api_infer_measured, which changes
         * nothing else) stay left
         * out, the split too where vpp is inferred (it follows vpp):
         * giving them is another request, whose answer names no inference
         * (measured.inferred); the normal form, posted, answers the same,
         * so it needs no inference here */
        json_t *par = json_object_get(cj, "parallel"), *mpar = json_object_get(mcj, "parallel");
        if (!json_object_get(par, "sp")) json_object_del(mpar, "sp");
        if (!json_object_get(par, "zero")) json_object_del(mpar, "zero");
        if (!json_object_get(cj, "mbs") && !json_object_get(cj, "grad_accum")) {
            json_object_del(mcj, "mbs");
            json_object_del(mcj, "grad_accum");
        }
        if (mc.schedule == MFU_SCHED_INTERLEAVED && json_object_get(cj, "schedule") && !json_object_get(cj, "vpp")) {
            json_object_del(mcj, "vpp");
            if (!json_object_get(cj, "pipeline_split")) json_object_del(mcj, "pipeline_split");
        }
        if (!json_object_get(cj, "recompute") && !json_object_get(cj, "recompute_modules") &&
            !json_object_get(cj, "recompute_layers")) {
            static const char *const rc_keys[] = {"recompute", "recompute_modules", "remat", "recompute_layers"};
            for (int i = 0; i < 4; i++) json_object_del(mcj, rc_keys[i]);
        }
        mj = json_pack("{s:o}", "config", mcj);
        if (t > 0) json_object_set_new(mj, "step_time_s", json_real(t));
        if (tr) json_object_set_new(mj, "trace", json_deep_copy(tr));
    }
    json_t *search = normal_search(sys, o, deadline);
    json_t *model = api_model_to_ir(&r->model);
    out = json_pack("{s:o,s:o,s:I,s:{s:I,s:I,s:s,s:s,s:b,s:b,s:s,s:s,s:b},s:s,s:o}", "model", model,
                    "hardware", api_hardware_to_json(&r->hw), "devices", (json_int_t)r->devices,
                    "training", "seq_len", (json_int_t)r->train.seq, "global_batch_tokens",
                    api_json_count(r->train.global_batch_tokens), "dtype", rq_dtypes[r->train.dtype], "attention_impl",
                    rq_impls[r->train.attn_impl], "tp_overlap", r->tp_overlap, "ep_overlap",
                    r->ep_overlap, "grad_dtype", rq_grad_dtypes[r->train.grad_bf16],
                    "adam_moments_dtype", rq_grad_dtypes[r->train.moments_bf16], "overlap_grad_reduce",
                    !r->train.no_grad_overlap, "mfu_convention",
                    rq_convs[r->train.conv], "search", search);
    /* only when stated: keys of requests without it stay as they were */
    if (out && r->train.moe_imbalance > 1.0)
        json_object_set_new(json_object_get(out, "training"), "moe_imbalance", json_real(r->train.moe_imbalance));
    if (out && r->train.pp_no_overlap_p2p)
        json_object_set_new(json_object_get(out, "training"), "pp_overlap_p2p", json_false());
    if (out && r->train.pp_scatter_gather)
        json_object_set_new(json_object_get(out, "training"), "pp_scatter_gather", json_true());
    if (out && r->train.tp_sync_bwd)
        json_object_set_new(json_object_get(out, "training"), "tp_async_allreduce", json_false());
    if (out && r->train.wgrad_acc_unfused)
        json_object_set_new(json_object_get(out, "training"), "grad_accum_fusion", json_false());
    if (out && r->train.ce_unfused && !r->train.ce_eager)
        json_object_set_new(json_object_get(out, "training"), "cross_entropy_fusion", json_false());
    if (out && r->train.ce_eager)
        json_object_set_new(json_object_get(out, "training"), "eager_loss", json_true());
    /* the recipe changes nothing outside FP8: keyed only there */
    if (out && r->train.dtype == MFU_DT_FP8 && r->train.fp8_recipe != MFU_FP8_TENSORWISE)
        json_object_set_new(json_object_get(out, "training"), "fp8_recipe",
                            json_string(rq_fp8_recipes[r->train.fp8_recipe]));
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
    json_t *out = rq_prepare(request, need, &p, st) ? NULL : rq_normal_form(&p, request, st);
    rq_prepared_fini(&p);
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
