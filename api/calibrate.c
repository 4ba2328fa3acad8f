/* api/calibrate.c -- `mfu calibrate` / POST /calibrate: fit the named
 * efficiency parameters of one hardware description to measured runs
 * (docs/calibration.md), with leave-one-out cross-validation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "internal.h"
#include "jsonv.h"

/* The parameters, each with its physical meaning, prior spread (in fit
 * space: relative for log-space ones) and bounds; the prior value is the
 * description's own (component benchmarks, docs/hardware-presets.md). */
typedef struct cal_param {
    const char *name;
    const char *meaning;
    double prior_sd, lo, hi;
    int log_space;
} cal_param;

enum { CP_GEMM, CP_GEMM_T, CP_ATTN, CP_HBM, CP_KERNEL, CP_NET_IN, CP_NET_OUT, CP_STEP, CP_MB, CP_OVERLAP,
       CP_HOST, CP_FP8, CP_COUNT };

static const cal_param PARAMS[CP_COUNT] = {
    {"gemm_scale", "GEMM efficiency relative to the component-benchmark curve", 0.15, 0.5, 1.3, 1},
    /* down to -5 us: back-to-back GEMMs hide part of the 5 us the curve's
     * benchmark charges each (docs/hardware-presets.md, gemm note) */
    {"gemm_overhead_s", "fixed time per GEMM beyond the curve's own (negative: less)", 5e-6, -5e-6, 1e-4, 0},
    {"attention", "fused attention kernel efficiency", 0.25, 0.15, 0.95, 1},
    {"hbm", "achieved / peak HBM bandwidth of memory-bound kernels", 0.1, 0.4, 1.0, 1},
    {"kernel_overhead_s", "launch and tail per non-GEMM kernel", 5e-6, 0.0, 1e-4, 0},
    {"net_inner", "collective bandwidth efficiency of the inner tier (NVLink)", 0.2, 0.2, 1.0, 1},
    {"net_outer", "collective bandwidth efficiency of the outer tier (InfiniBand)", 0.2, 0.2, 1.0, 1},
    {"step_overhead_s", "fixed host time per step", 0.1, 0.0, 5.0, 0},
    {"microbatch_overhead_s", "host time per micro-batch and stage", 0.005, 0.0, 0.2, 0},
    {"overlap_slowdown", "compute lost per second of communication hidden under it", 0.1, 0.0, 0.6, 0},
    /* F-TIME-DISPATCH: only runs whose host falls behind the GPU (small
     * micro-batches of many-expert MoE models) can determine it */
    {"host_op_s", "host time to issue one kernel (eager framework)", 5e-6, 0.0, 1e-4, 0},
    /* F-TIME-FP8: only FP8 runs can determine it */
    {"fp8_gemm_scale", "FP8 GEMM efficiency relative to the GEMM curve at the FP8 peak", 0.15, 0.3, 1.0, 1},
};

static double *param_ref(mfu_hardware *hw, int id)
{
    mfu_efficiency *e = &hw->eff;
    switch (id) {
    case CP_GEMM: return &e->gemm_scale;
    case CP_GEMM_T: return &e->gemm_overhead_s;
    case CP_ATTN: return &e->attn_eff;
    case CP_HBM: return &e->hbm_eff;
    case CP_KERNEL: return &e->kernel_overhead_s;
    case CP_NET_IN: return &e->net_eff[0];
    case CP_NET_OUT: return &e->net_eff[hw->n_tiers - 1];
    case CP_STEP: return &e->step_overhead_s;
    case CP_MB: return &e->microbatch_overhead_s;
    case CP_HOST: return &e->host_op_s;
    case CP_FP8: return &e->fp8_gemm_scale;
    default: return &e->overlap_slowdown;
    }
}

typedef struct cal_run {
    api_request r;
    mfu_system sys;
    mfu_config c;
    double measured_s;
    const char *id;
    int layer;          /* measured.layer_time_s: one layer's forward + backward */
    int obs;            /* the index of the run's first observation */
} cal_run;

/* An observation: what the fit compares. Every run has its step (or
 * layer) time; a run with a trace also its GEMM and attention time and,
 * where the trace names process groups, each axis's collective time
 * (OBS_COMM + the axis). */
enum { OBS_STEP = 0, OBS_GEMM, OBS_ATTENTION, OBS_COMM };
static const char *const OBS_NAMES[] = {"step", "gemm", "attention"};

typedef struct cal_ctx {
    cal_run *runs;
    int n;
    int prior_components; /* "prior": "components" (cal_component_request) */
    int ids[CP_COUNT], np;
    mfu_op *ops;
    int n_obs;
    int obs_run[MFU_FIT_MAX_RUNS], obs_kind[MFU_FIT_MAX_RUNS];
} cal_ctx;

/* One average layer's forward and backward (and recompute) with its
 * exposed tensor-parallel communication, per micro-batch (Korthikanti et
 * al. 2022 Table 4 measures this), under eff (NULL: the bound) and the
 * step times t of the same profile. */
static double layer_time(const cal_run *cr, const mfu_efficiency *eff, const mfu_times *t, mfu_op *ops)
{
    mfu_shape sh;
    mfu_config_shape(&cr->sys, &cr->c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&cr->sys, &sh, eff, ops, &k);
    const mfu_rc_policy *rp = &cr->sys.rc[cr->c.recompute];
    double L = (double)cr->sys.layers, m = (double)cr->c.grad_accum;
    return k.avg.fwd_s + k.avg.bwd_s + (rp->kind == MFU_RCK_NONE ? 0.0 : k.avg.rc_s[cr->c.recompute]) +
           t->comm_exposed_s[MFU_COMM_TP] / (L * m);
}

static int predict(void *p, const double *theta, double *pred)
{
    cal_ctx *x = p;
    for (int i = 0; i < x->n; i++) {
        cal_run *cr = &x->runs[i];
        for (int j = 0; j < x->np; j++) *param_ref(&cr->r.hw, x->ids[j]) = theta[j];
        mfu_eval ev;
        if (mfu_evaluate(&cr->sys, &cr->c, x->ops, &ev) != MFU_OK) return -1;
        pred[cr->obs] = ev.expected.step_time_s;
        for (int o = cr->obs + 1; o < x->n_obs && x->obs_run[o] == i; o++)
            pred[o] = x->obs_kind[o] == OBS_GEMM ? ev.expected.compute_gemm_s
                      : x->obs_kind[o] == OBS_ATTENTION ? ev.expected.compute_attention_s
                                                         : ev.expected.comm_total_s[x->obs_kind[o] - OBS_COMM];
        if (cr->layer) pred[cr->obs] = layer_time(cr, &cr->r.hw.eff, &ev.expected, x->ops);
    }
    return 0;
}

/* The mean of <group>.<key>.time_s over a trace measurement's averaged
 * steps (all but the first when there are more than two, as its summary):
 * kernels.gemm, communication_by_axis.tp, ... */
static double trace_mean(json_t *trace, const char *group, const char *key)
{
    json_t *steps = json_object_get(trace, "steps");
    size_t n = json_array_size(steps), from = n > 2 ? 1 : 0;
    double s = 0;
    for (size_t i = from; i < n; i++)
        s += json_number_value(json_object_get(json_object_get(json_object_get(json_array_get(steps, i), group),
                                                               key), "time_s"));
    return n > from ? s / (double)(n - from) : 0.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Mean |e|, max |e|, signed mean of relative errors exp(r) - 1. */
static json_t *summary(const double *r, int n)
{
    double sa = 0, mx = 0, ss = 0;
    for (int i = 0; i < n; i++) {
        double e = exp(r[i]) - 1.0;
        sa += fabs(e);
        ss += e;
        if (fabs(e) > mx) mx = fabs(e);
    }
    return json_pack("{s:f,s:f,s:f,s:i}", "mean_abs_error", n ? sa / n : 0.0, "max_abs_error", mx,
                     "signed_mean_error", n ? ss / n : 0.0, "runs", n);
}

static json_t *calibrate_run(json_t *doc, api_status *st);

json_t *api_calibrate(json_t *doc, api_status *st)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(calibrate_run(doc, st), st, before);
}

/* The parameters a request names (default: all of them). */
static int cal_param_names(json_t *doc, cal_ctx *x, api_status *st)
{
    char p[256];
    json_t *names = json_object_get(doc, "parameters");
    if (names) {
        if (!json_is_array(names) || json_array_size(names) < 1 || json_array_size(names) > CP_COUNT) {
            api_fail(st, 422, "/parameters", "must be an array of parameter names");
            return -1;
        }
        size_t i;
        json_t *e;
        json_array_foreach(names, i, e) {
            int id = -1;
            for (int k = 0; json_is_string(e) && k < CP_COUNT; k++)
                if (!strcmp(json_string_value(e), PARAMS[k].name)) id = k;
            for (int k = 0; id >= 0 && k < x->np; k++)
                if (x->ids[k] == id) id = -2;
            if (id < 0) {
                char known[512];
                size_t n = 0;
                known[0] = '\0';
                for (int k = 0; k < CP_COUNT && n < sizeof known; k++)
                    n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", k ? ", " : "", PARAMS[k].name);
                if (id == -2) api_fail(st, 422, jv_ptr_i(p, sizeof p, "/parameters", i), "named twice");
                else api_fail(st, 422, jv_ptr_i(p, sizeof p, "/parameters", i), "unknown parameter; parameters: %s",
                              known);
                return -1;
            }
            x->ids[x->np++] = id;
        }
    } else {
        for (int k = 0; k < CP_COUNT; k++) x->ids[x->np++] = k;
    }
    return 0;
}

/* A run with a trace: its GEMM and attention kernel time and its
 * collectives per axis, observations beside the step time. */
static void cal_trace_obs(cal_ctx *x, int i, json_t *req, double *meas, int *use)
{
    /* a trace also gives the run's GEMM and attention kernel time: two
     * more observations (recomputed forwards run GEMMs the model counts
     * as recompute, so only runs without recompute) */
    if (x->runs[i].layer) return; /* one layer's time: no step to read kernels of */
    json_t *tr = json_object_get(json_object_get(req, "measured"), "trace");
    if (json_is_object(tr) && x->runs[i].sys.rc[x->runs[i].c.recompute].kind == MFU_RCK_NONE) {
        double v[2 + MFU_COMM_COUNT];
        v[0] = trace_mean(tr, "kernels", "gemm");
        v[1] = trace_mean(tr, "kernels", "attention");
        /* collective time per axis the process groups name (the link's
         * efficiency: net_inner / net_outer) */
        json_t *bx = json_object_get(json_object_get(tr, "summary"), "communication_by_axis");
        for (int a = 0; a < MFU_COMM_COUNT; a++)
            v[2 + a] = json_object_get(bx, mfu_comm_names[a]) ? trace_mean(tr, "communication_by_axis",
                                                                           mfu_comm_names[a]) : 0.0;
        for (int k = 0; k < 2 + MFU_COMM_COUNT; k++) {
            if (!(v[k] > 0)) continue;
            x->obs_run[x->n_obs] = i;
            x->obs_kind[x->n_obs] = k < 2 ? OBS_GEMM + k : OBS_COMM + (k - 2);
            meas[x->n_obs] = v[k];
            use[x->n_obs++] = 1;
        }
    }
}

/* "prior": "components": a copy of req whose preset hardware has its
 * component-benchmark profile (the preset's efficiency_components, where
 * bench/calibrate starts) as its efficiency, the run's own keys beside
 * "preset" on top (as api_resolve_hardware applies them). A preset
 * without efficiency_components (the TPUs: no fit or carry touched their
 * profile, only its interval) is its component profile already. NULL,
 * with the error at the run's pointer rp, for an inline description: it
 * is its own prior. */
static json_t *cal_component_request(json_t *req, const char *rp, api_status *st)
{
    json_t *hw = json_object_get(req, "hardware");
    json_t *name = json_object_get(hw, "preset");
    json_t *pre = json_is_string(name) ? api_preset_hardware(json_string_value(name)) : NULL;
    if (!pre) {
        api_fail(st, 422, rp, "prior \"components\" needs a hardware preset (an inline description is its own prior)");
        return NULL;
    }
    json_t *out = json_deep_copy(req);
    json_t *h = json_deep_copy(json_object_get(pre, "hardware"));
    json_t *comp = json_object_get(pre, "efficiency_components");
    if (comp) json_object_set_new(h, "efficiency", json_deep_copy(comp));
    const char *k;
    json_t *v;
    json_object_foreach(hw, k, v) if (strcmp(k, "preset")) json_object_set(h, k, v);
    json_object_set_new(out, "hardware", h);
    return out;
}

/* A field of obj that is not in known but an edit or two from one of them:
 * a 422 at it with the name it meant (the other unknown fields are the
 * caller's annotations: "about", a run's "family", "source"). */
static int cal_typos(json_t *obj, const char *ptr, const char *what, const char *const *known, api_status *st)
{
    const char *k;
    json_t *v;
    int bad = 0;
    json_object_foreach(obj, k, v) {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++) ok = !strcmp(k, known[i]);
        const char *near = ok ? NULL : jv_nearest(k, known);
        if (!near) continue;
        char p[256];
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, k),
                 "unknown field; did you mean \"%s\"? (the other fields of %s it does not read are annotations)",
                 near, what);
        bad = -1;
    }
    return bad;
}

/* cal_load_run's rest, with the request as it is fitted. */
static int cal_load_parsed(cal_ctx *x, json_t *run, json_t *req, int i, const char *rp, double *meas, int *use,
                           api_status *s1, api_status *st)
{
    int bad_run = api_request_measured(req, &x->runs[i].r, &x->runs[i].sys, &x->runs[i].c, &x->runs[i].measured_s, x->ops, s1);
    if (bad_run) {
        /* the run's errors, under its pointer */
        for (int k = 0; k < s1->n_errors; k++) {
            char ep[256];
            snprintf(ep, sizeof ep, "%s%s%s", rp, json_object_get(run, "request") ? "/request" : "",
                     s1->errors[k].pointer);
            api_fail(st, s1->status, ep, "%s", s1->errors[k].detail);
        }
        if (!st->status) api_fail(st, s1->status ? s1->status : 422, rp, "invalid run");
        api_request_free(&x->runs[i].r);
        return -1;
    }
    x->n = i + 1;
    json_t *id = json_object_get(run, "id");
    x->runs[i].id = json_is_string(id) ? json_string_value(id) : NULL;
    if (x->n_obs + 3 + MFU_COMM_COUNT > MFU_FIT_MAX_RUNS) {
        api_fail(st, 422, rp, "too many observations: at most %d in one calibration (a run with a trace adds up to %d)",
                 MFU_FIT_MAX_RUNS, 2 + MFU_COMM_COUNT);
        return -1;
    }
    x->runs[i].obs = x->n_obs;
    x->obs_run[x->n_obs] = i;
    x->obs_kind[x->n_obs] = OBS_STEP;
    meas[x->n_obs] = x->runs[i].measured_s;
    use[x->n_obs++] = 1;
    cal_trace_obs(x, i, req, meas, use);
    if (i > 0 && strcmp(x->runs[i].r.hw.name, x->runs[0].r.hw.name)) {
        api_fail(st, 422, rp, "hardware %s differs from the first run's %s: calibrate one hardware at a time",
                 x->runs[i].r.hw.name, x->runs[0].r.hw.name);
        return -1;
    }
    /* a description without a profile starts from the ideal one */
    x->runs[i].r.hw.has_profile = 1;
    return 0;
}

/* Run i: parsed (its errors under its own pointer), its observations. */
static int cal_load_run(cal_ctx *x, json_t *run, int i, double *meas, int *use, api_status *st)
{
    json_t *req = json_object_get(run, "request") ? json_object_get(run, "request") : run;
    char rp[64];
    jv_ptr_i(rp, sizeof rp, "/runs", (size_t)i);
    static const char *const WRAP[] = {"id", "request", NULL};
    if (req != run && cal_typos(run, rp, "a run {id, request}", WRAP, st)) return -1;
    api_status s1;
    api_status_init(&s1);
    json_t *owned = NULL; /* a modified copy of req, kept until the end */
    if (x->prior_components) {
        char hp[96];
        snprintf(hp, sizeof hp, "%s%s/hardware", rp, json_object_get(run, "request") ? "/request" : "");
        if (!(owned = cal_component_request(req, hp, st))) return -1;
        req = owned;
    }
    /* measured.layer_time_s (a layer's measurement) instead of step_time_s */
    json_t *lt = json_object_get(json_object_get(req, "measured"), "layer_time_s");
    if (lt) {
        if (!owned) req = owned = json_deep_copy(req);
        json_t *mm = json_object_get(owned, "measured");
        json_object_set(mm, "step_time_s", lt);
        json_object_del(mm, "layer_time_s");
        /* a layer's time is one micro-batch's, so its micro-batch is the
         * measurement's own: 1 unless given, never the fastest fitting one
         * a step's run that gives none is inferred at (api_infer_measured) */
        json_t *mc = json_object_get(mm, "config");
        if (json_is_object(mc) && !json_object_get(mc, "mbs") && !json_object_get(mc, "grad_accum"))
            json_object_set_new(mc, "mbs", json_integer(1));
        x->runs[i].layer = 1;
    }
    int rc = cal_load_parsed(x, run, req, i, rp, meas, use, &s1, st);
    json_decref(owned);
    return rc;
}

/* The fitted parameters, each with its meaning, prior, value, spread and
 * bounds. */
static json_t *cal_params_json(const cal_ctx *x, const double *prior, const mfu_fit_result *fit)
{
    json_t *params = json_array();
    for (int j = 0; j < x->np; j++) {
        const cal_param *q = &PARAMS[x->ids[j]];
        json_array_append_new(params, json_pack("{s:s,s:s,s:f,s:f,s:f,s:s,s:b,s:[f,f]}", "name", q->name,
                                                "meaning", q->meaning, "prior", prior[j], "value",
                                                fit->theta[j], "sd", fit->sd[j], "sd_space",
                                                q->log_space ? "relative" : "absolute", "determined",
                                                fit->determined[j], "bounds", q->lo, q->hi));
    }
    return params;
}

/* Per run: measured and predicted step time before and after the fit (and
 * left out), and its trace's components fitted too. */
static json_t *cal_runs_json(const cal_ctx *x, const double *meas, const double *before, const double *step_before,
                             const double *fitted, const double *loo, int have_loo, const mfu_fit_result *fit)
{
    const cal_run *cr = x->runs;
    int n = x->n, no = x->n_obs;
    json_t *rj = json_array();
    for (int i = 0; i < n; i++) {
        double m0 = meas[cr[i].obs];
        json_t *o = json_pack("{s:s?,s:f,s:f,s:f,s:f}", "id", cr[i].id, "measured_step_time_s", m0,
                              "predicted_before_s", m0 * exp(step_before[i]), "predicted_s",
                              m0 * exp(fitted[i]), "error", expm1(fitted[i]));
        if (have_loo) json_object_set_new(o, "loo_error", json_real(expm1(loo[i])));
        /* the System Bound of the same measure (the layer's for a layer
         * time): no profile, so the fit cannot move it; a bound above the
         * measurement says the model, not the profile, is wrong */
        mfu_eval ev;
        if (mfu_evaluate(&cr[i].sys, &cr[i].c, x->ops, &ev) == MFU_OK)
            json_object_set_new(o, "bound_s", json_real(cr[i].layer ? layer_time(&cr[i], NULL, &ev.bound, x->ops)
                                                                    : ev.bound.step_time_s));
        /* the trace's components, fitted too */
        json_t *comp = NULL;
        for (int k = cr[i].obs + 1; k < no && x->obs_run[k] == i; k++) {
            if (!comp) comp = json_object();
            char cn[32];
            int kind = x->obs_kind[k];
            if (kind < OBS_COMM) snprintf(cn, sizeof cn, "%s", OBS_NAMES[kind]);
            else snprintf(cn, sizeof cn, "comm_%s", mfu_comm_names[kind - OBS_COMM]);
            json_object_set_new(comp, cn,
                                json_pack("{s:f,s:f,s:f,s:f}", "measured_s", meas[k], "predicted_before_s",
                                          meas[k] * exp(before[k]), "predicted_s", meas[k] * exp(fit->resid[k]),
                                          "error", expm1(fit->resid[k])));
        }
        if (comp) json_object_set_new(o, "trace_components", comp);
        json_array_append_new(rj, o);
    }
    return rj;
}

/* Leave one run out: all its observations. loo[k]: run k's step residual
 * from the fit without it. -1 when a fit fails (st says which). */
static int cal_leave_one_out(cal_ctx *x, const mfu_fit_param *fp, const double *meas, int *use,
                             const mfu_fit_result *fit, const mfu_fit_opts *fo, double *loo, api_status *st)
{
    const cal_run *cr = x->runs;
    int n = x->n, no = x->n_obs;
    for (int k = 0; k < n; k++) {
        mfu_fit_result f1;
        for (int o = 0; o < no; o++) use[o] = x->obs_run[o] != k;
        if (mfu_fit(fp, x->np, meas, no, use, fit->theta, predict, x, fo, &f1) != MFU_OK) {
            api_fail(st, 422, "/runs", "the leave-one-out fit without run %d failed", k);
            return -1;
        }
        loo[k] = f1.resid[cr[k].obs];
    }
    return 0;
}

/* Each named parameter's prior (the first run's hardware) and its fit
 * settings (spread, bounds, log space). */
static void cal_fit_params(const cal_ctx *x, mfu_fit_param *fp, double *prior)
{
    for (int j = 0; j < x->np; j++) {
        const cal_param *q = &PARAMS[x->ids[j]];
        prior[j] = *param_ref(&x->runs[0].r.hw, x->ids[j]);
        /* a time prior of zero still needs a scale to move from */
        fp[j] = (mfu_fit_param){prior[j], q->prior_sd, q->lo, q->hi, q->log_space};
        if (q->log_space && !(prior[j] > 0)) fp[j].prior = q->lo;
    }
}

/* The answer: the calibrated hardware, the parameters, the runs, the
 * summary (before, fitted, left out, the interval) and the fit's settings. */
static json_t *cal_answer(const cal_ctx *x, const mfu_hardware *hw, json_t *params, json_t *rj,
                          const double *step_before, const double *fitted, const double *loo, int have_loo,
                          double unc, const mfu_fit_result *fit, const mfu_fit_opts *fo)
{
    int n = x->n;
    json_t *sum = json_pack("{s:o,s:o}", "before", summary(step_before, n), "fitted", summary(fitted, n));
    if (have_loo) json_object_set_new(sum, "leave_one_out", summary(loo, n));
    json_object_set_new(sum, "interval_rel", json_real(unc));
    json_t *undetermined = json_array();
    for (int j = 0; j < x->np; j++)
        if (!fit->determined[j]) json_array_append_new(undetermined, json_string(PARAMS[x->ids[j]].name));
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:{s:f,s:f,s:i}}", "hardware", api_hardware_to_json(hw),
                    "parameters", params, "undetermined", undetermined, "runs", rj, "summary", sum,
                    "fit", "noise", fo->noise, "huber_k", fo->huber_k, "iterations", fit->iterations);
}

/* The document's options into x and *cv: its runs, or NULL (a 422 said). */
static json_t *cal_parse_doc(json_t *doc, cal_ctx *x, int *cv, api_status *st)
{
    if (!json_is_object(doc)) {
        api_fail(st, 422, "", "must be an object {runs, parameters, cross_validate, prior}");
        return NULL;
    }
    if (api_check_limits(doc, st)) return NULL;
    /* the contract's CalibrateRequest keeps other fields as annotations
     * (examples/calibration.json's "about"), but one an edit or two from a
     * field it reads is a typo, which was passed over ("cros_validate") */
    static const char *const KEYS[] = {"runs", "parameters", "cross_validate", "prior", NULL};
    if (cal_typos(doc, "", "a calibration", KEYS, st)) return NULL;
    json_t *runs = json_object_get(doc, "runs");
    if (!json_is_array(runs) || json_array_size(runs) < 1 || json_array_size(runs) > API_MAX_CAL_RUNS) {
        api_fail(st, 422, "/runs", "must be an array of 1 to %d measured runs", API_MAX_CAL_RUNS);
        return NULL;
    }
    if (jv_bool(doc, "cross_validate", "", JV_OPTIONAL, 1, cv, st)) return NULL;
    /* the priors: the hardware description as given (a preset's shipped
     * profile, for A100 and H100 their training-set fit) or a preset's
     * component-benchmark profile, as bench/calibrate fits from */
    static const char *const PRIORS[] = {"preset", "components", NULL};
    int pr = 0;
    if (jv_enum(doc, "prior", "", JV_OPTIONAL, 0, PRIORS, &pr, st)) return NULL;
    x->prior_components = pr == 1;
    if (cal_param_names(doc, x, st)) return NULL;
    return runs;
}

/* The interval: the 90th percentile of the n runs' cross-validated (else
 * fitted) relative errors. */
static double cal_uncertainty(int n, int have_loo, const double *loo, const double *fitted)
{
    double sorted[MFU_FIT_MAX_RUNS];
    for (int i = 0; i < n; i++) sorted[i] = fabs(expm1(have_loo ? loo[i] : fitted[i]));
    qsort(sorted, (size_t)n, sizeof sorted[0], cmp_double);
    return sorted[(int)ceil(0.9 * n) - 1];
}

static json_t *calibrate_run(json_t *doc, api_status *st)
{
    int cv = 1;
    cal_ctx x;
    memset(&x, 0, sizeof x);
    json_t *runs = cal_parse_doc(doc, &x, &cv, st);
    if (!runs) return NULL;
    int n = (int)json_array_size(runs);
    cal_run *cr = api_calloc((size_t)n, sizeof *cr);
    x.ops = api_malloc(sizeof(mfu_op) * MFU_SCRATCH_OPS);
    json_t *out = NULL;
    double *meas = api_calloc(MFU_FIT_MAX_RUNS, sizeof *meas);
    int *use = api_calloc(MFU_FIT_MAX_RUNS, sizeof *use);
    if (!cr || !x.ops || !meas || !use) {
        api_fail(st, 503, "", "out of memory");
        goto done;
    }
    x.runs = cr;
    for (int i = 0; i < n; i++)
        if (cal_load_run(&x, json_array_get(runs, (size_t)i), i, meas, use, st)) goto done;
    mfu_fit_param fp[CP_COUNT];
    double prior[CP_COUNT];
    cal_fit_params(&x, fp, prior);
    mfu_fit_opts fo = {0.02, 1.5, 60};
    int no = x.n_obs;
    double before[MFU_FIT_MAX_RUNS];
    if (predict(&x, prior, before)) {
        api_fail(st, 422, "/runs", "a run could not be evaluated");
        goto done;
    }
    for (int i = 0; i < no; i++) before[i] = log(before[i] / meas[i]);
    mfu_fit_result fit;
    if (mfu_fit(fp, x.np, meas, no, use, NULL, predict, &x, &fo, &fit) != MFU_OK) {
        api_fail(st, 422, "/runs", "the fit failed (a run could not be evaluated)");
        goto done;
    }
    /* leave one run out: all its observations */
    double loo[MFU_FIT_MAX_RUNS];
    int have_loo = cv && n >= 3;
    if (have_loo && cal_leave_one_out(&x, fp, meas, use, &fit, &fo, loo, st)) goto done;
    for (int o = 0; o < no; o++) use[o] = 1;
    /* the step residuals, run by run */
    double step_before[MFU_FIT_MAX_RUNS], fitted[MFU_FIT_MAX_RUNS];
    for (int i = 0; i < n; i++) {
        step_before[i] = before[cr[i].obs];
        fitted[i] = fit.resid[cr[i].obs];
    }
    double unc = cal_uncertainty(n, have_loo, loo, fitted);
    /* the calibrated description */
    mfu_hardware hw = cr[0].r.hw;
    for (int j = 0; j < x.np; j++) *param_ref(&hw, x.ids[j]) = fit.theta[j];
    hw.eff.uncertainty = unc;
    json_t *params = cal_params_json(&x, prior, &fit);
    json_t *rj = cal_runs_json(&x, meas, before, step_before, fitted, loo, have_loo, &fit);
    out = cal_answer(&x, &hw, params, rj, step_before, fitted, loo, have_loo, unc, &fit, &fo);
    if (!out) api_fail(st, 500, "", "result has a non-finite number");
done:
    for (int i = 0; i < x.n; i++) api_request_free(&cr[i].r);
    free(cr);
    free(x.ops);
    free(meas);
    free(use);
    return out;
}

char *api_calibrate_table(json_t *res)
{
    size_t cap = 1 << 16, n = 0;
    char *b = api_malloc(cap);
    if (!b) return NULL;
#define P(...) do { int k_ = snprintf(b + n, cap - n, __VA_ARGS__); \
                    if (k_ > 0 && (size_t)k_ < cap - n) n += (size_t)k_; } while (0)
    P("%-22s %12s %12s %10s %s\n", "parameter", "prior", "fitted", "sd", "determined");
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(res, "parameters"), i, e)
        P("%-22s %12.6g %12.6g %10.3g %s\n", json_string_value(json_object_get(e, "name")),
          json_number_value(json_object_get(e, "prior")), json_number_value(json_object_get(e, "value")),
          json_number_value(json_object_get(e, "sd")),
          json_is_true(json_object_get(e, "determined")) ? "yes" : "no (prior kept)");
    P("\n%-46s %10s %10s %10s %8s %8s\n", "run", "measured_s", "before_s", "fitted_s", "error", "loo");
    json_array_foreach(json_object_get(res, "runs"), i, e) {
        json_t *id = json_object_get(e, "id"), *loo = json_object_get(e, "loo_error");
        P("%-46.46s %10.4g %10.4g %10.4g %+7.1f%% ", json_is_string(id) ? json_string_value(id) : "-",
          json_number_value(json_object_get(e, "measured_step_time_s")),
          json_number_value(json_object_get(e, "predicted_before_s")),
          json_number_value(json_object_get(e, "predicted_s")),
          100 * json_number_value(json_object_get(e, "error")));
        if (loo) P("%+7.1f%%\n", 100 * json_number_value(loo));
        else P("%8s\n", "-");
    }
    json_t *s = json_object_get(res, "summary");
    const char *rows[] = {"before", "fitted", "leave_one_out"};
    P("\n%-14s %10s %10s %10s\n", "", "mean |err|", "max |err|", "signed");
    for (int k = 0; k < 3; k++) {
        json_t *r = json_object_get(s, rows[k]);
        if (!r) continue;
        P("%-14s %9.1f%% %9.1f%% %+9.1f%%\n", rows[k], 100 * json_number_value(json_object_get(r, "mean_abs_error")),
          100 * json_number_value(json_object_get(r, "max_abs_error")),
          100 * json_number_value(json_object_get(r, "signed_mean_error")));
    }
    P("interval: +-%.1f%%\n", 100 * json_number_value(json_object_get(s, "interval_rel")));
#undef P
    return b;
}
