/* api/measured.c -- a measured run against its prediction: measured MFU
 * and HFU, the bound -> expected -> measured gap by component, and with a
 * profiler trace, the trace against the prediction drawn as one (issue 12
 * item 3). The model of the gap lives here; api/render.c only renders. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The measured trace against the configuration's prediction (issue 12
 * item 3): the prediction drawn as a trace and read back the same way
 * (api/trace_export.c, api/trace.c), the two compared per component; the
 * gap expected -> measured named per component, what the components do
 * not account for left as unexplained. */
static json_t *measured_trace(const mfu_system *sys, json_t *cfg, double step_time_s, double sys_mfu,
                              json_t *trace)
{
    json_t *doc = json_pack("{s:[O],s:{s:s}}", "configs", cfg, "hardware", "name", sys->hw->name);
    json_t *pt = doc ? api_trace_export_result(doc, 1) : NULL;
    json_decref(doc);
    char *text = pt ? json_dumps(pt, JSON_COMPACT) : NULL;
    json_decref(pt);
    api_status st;
    api_status_init(&st);
    json_t *pred = text ? api_trace_text(text, strlen(text), NULL, &st) : NULL;
    free(text);
    json_t *diff = pred ? api_trace_compare(pred, trace) : NULL;
    json_decref(pred);
    if (!diff) return NULL;
    json_t *sum = json_object_get(trace, "summary");
    /* expected -> measured per component (seconds per step; positive:
     * the run spent more than predicted) */
    json_t *gap = json_array();
    double named = 0;
    struct { const char *name, *key; } comp[] = {
        {"gemm", "gemm_s"}, {"attention", "attention_s"}, {"other_compute", "other_compute_s"},
        {"memcpy", "memcpy_s"}, {"idle", "idle_s"}};
    for (size_t i = 0; i < sizeof comp / sizeof comp[0]; i++) {
        double d = json_number_value(json_object_get(diff, comp[i].key));
        named += d;
        json_array_append_new(gap, json_pack("{s:s,s:f,s:f}", "name", comp[i].name, "seconds", d, "mfu_points",
                                             100.0 * sys_mfu * d / step_time_s));
    }
    /* exposed communication per axis where the trace's process groups say
     * which, else per collective kind */
    json_t *by = json_object_get(diff, "exposed_by_axis_s");
    if (!json_object_size(by)) by = json_object_get(diff, "exposed_s");
    const char *k;
    json_t *v;
    json_object_foreach(by, k, v) {
        double d = json_number_value(v);
        char name[64];
        snprintf(name, sizeof name, "comm_%s", k);
        named += d;
        json_array_append_new(gap, json_pack("{s:s,s:f,s:f}", "name", name, "seconds", d, "mfu_points",
                                             100.0 * sys_mfu * d / step_time_s));
    }
    double rest = json_number_value(json_object_get(diff, "step_time_s")) - named;
    json_array_append_new(gap, json_pack("{s:s,s:f,s:f}", "name", "unexplained", "seconds", rest, "mfu_points",
                                         100.0 * sys_mfu * rest / step_time_s));
    json_t *o = json_pack("{s:I,s:f,s:o,s:o}", "steps_averaged",
                          (json_int_t)json_integer_value(json_object_get(sum, "steps_averaged")), "step_time_s",
                          json_number_value(json_object_get(sum, "step_time_s")), "difference", diff, "gap", gap);
    json_t *ga = json_object_get(sum, "gemm_achieved");
    double peak = sys->hw->peak_flops[sys->train.dtype];
    if (json_is_object(ga) && peak > 0) {
        double f = json_number_value(json_object_get(ga, "flop_s"));
        json_object_set_new(o, "gemm_achieved", json_pack("{s:f,s:f}", "flop_s", f, "fraction_of_peak", f / peak));
    }
    return o;
}

/* Measured MFU/HFU and the System -> Measured gap (docs/model.md F-GAP):
 * the expected profile explains part of it (kernel and network
 * efficiency, the bubble and optimizer, overhead); the rest is unexplained
 * (scheduling, stragglers, data loading). */
json_t *api_render_measured(const mfu_system *sys, const mfu_config *c, const mfu_eval *ev,
                            double step_time_s, mfu_op *ops, json_t *trace)
{
    double N = (double)sys->devices, peak = sys->hw->peak_flops[sys->train.dtype];
    double mfu = ev->f_useful_flops / (N * peak * step_time_s);
    double hfu = ev->f_hw_flops / (N * peak * step_time_s);
    const mfu_times *b = &ev->bound, *e = &ev->expected;
    double exp_comm_b = 0, exp_comm_e = 0;
    for (int i = 0; i < MFU_COMM_COUNT; i++) {
        exp_comm_b += b->comm_exposed_s[i];
        exp_comm_e += e->comm_exposed_s[i];
    }
    double comps[5] = {
        (e->compute_s + e->recompute_s) - (b->compute_s + b->recompute_s),
        exp_comm_e - exp_comm_b,
        (e->bubble_s - b->bubble_s) + (e->optimizer_s - b->optimizer_s),
        e->overhead_s - b->overhead_s,
        step_time_s - e->step_time_s,
    };
    static const char *const names[5] = {"kernel_efficiency", "network_efficiency",
                                         "bubble_and_optimizer_efficiency", "overhead",
                                         "unexplained"};
    json_t *gap = json_array();
    for (int i = 0; i < 5; i++)
        json_array_append_new(gap, json_pack("{s:s,s:f,s:f}", "name", names[i], "seconds", comps[i],
                                             "mfu_points", 100.0 * b->mfu * comps[i] / step_time_s));
    json_t *cfg = api_render_config(sys, c, ev, 0, ops);
    json_t *tj = trace && cfg ? measured_trace(sys, cfg, step_time_s, b->mfu, trace) : NULL;
    json_t *o = json_pack("{s:o,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:o}", "config", cfg, "step_time_s",
                          step_time_s, "mfu", mfu, "hfu", hfu, "system_mfu", b->mfu,
                          "expected_mfu", e->mfu, "system_step_time_s", b->step_time_s,
                          "expected_step_time_s", e->step_time_s, "gap", gap);
    if (o && tj) json_object_set_new(o, "trace", tj);
    else json_decref(tj);
    return o;
}

/* ---- switches a measured configuration leaves out ---------------------- */

/* One candidate's verdict: legal, launched by an admitted framework where
 * the configuration as given is, fitting; its expected step. */
static int infer_try(const mfu_system *sys, const mfu_config *c, unsigned need_fw, mfu_op *ops, double *step_s)
{
    int reason;
    const char *why;
    if (mfu_config_check(sys, c, &reason, &why) != MFU_OK) return 0;
    if (need_fw && !(mfu_config_frameworks(sys, c, NULL) & need_fw)) return 0;
    mfu_eval ev;
    if (mfu_evaluate(sys, c, ops, &ev) != MFU_OK || !ev.feasible) return 0;
    *step_s = ev.expected.step_time_s;
    return 1;
}

/* Full recompute of the fewest layers per stage that fit (memory falls
 * with every layer recomputed: a bisection), left in c->recompute_layers
 * (-1, all, when only all do); returns that count, or 0 when even all do
 * not fit. */
static int64_t infer_rc_layers(const mfu_system *sys, mfu_config *c, unsigned need_fw, mfu_op *ops)
{
    double t;
    c->recompute = MFU_RC_FULL;
    c->recompute_layers = -1;
    if (!infer_try(sys, c, need_fw, ops, &t)) return 0;
    mfu_stages st;
    mfu_config_stages_held(sys, c, &st);
    int64_t top = st.first > st.mid ? st.first : st.mid;
    if (st.last > top) top = st.last;
    int64_t hi = top, lo = 0; /* hi fits, lo does not */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        c->recompute_layers = mid;
        if (infer_try(sys, c, need_fw, ops, &t)) hi = mid;
        else lo = mid;
    }
    c->recompute_layers = hi < top ? hi : -1;
    return hi;
}

/* The switches a measured configuration leaves out (sp, zero, the
 * recompute policy) took their defaults in rq_parse_config: the
 * frameworks' own (Megatron-LM: no sequence parallelism, no distributed
 * optimizer, no recompute) where those are not forced. A run that ran fit
 * in memory, so where the defaults do not fit, the run must have used
 * something else: the fastest (expected step) among the variants of the
 * left-out switches that fit -- sp with tp, the distributed optimizer
 * (zero 1) over dp x cp, a recompute policy an admitted framework offers,
 * or full recompute of the fewest layers that fit -- among those an
 * admitted framework that runs the configuration as given launches, or
 * among all legal ones where none does; a search's answer names them
 * (measured.inferred). An offload to the host is never guessed. Where
 * nothing fits, the defaults stay (the answer says feasible false).
 * Returns the API_INFER_* bits of the switches changed. */
static unsigned infer_switches(const mfu_system *sys, mfu_config *c, json_t *cj, unsigned admitted, mfu_op *ops)
{
    json_t *par = json_object_get(cj, "parallel");
    int sp_given = json_object_get(par, "sp") != NULL, zero_given = json_object_get(par, "zero") != NULL;
    int rc_given = json_object_get(cj, "recompute") || json_object_get(cj, "recompute_modules") ||
                   json_object_get(cj, "recompute_layers");
    double t;
    /* the candidates must be launched by an admitted framework that runs
     * the configuration as given; where none does, the run ran on a stack
     * mfud does not model (DeepSeek's HAI-LLM, Meta's Llama 3 trainer:
     * docs/frameworks.md) and any legal variant is a candidate (fw0 0:
     * infer_try then asks for no framework) */
    unsigned fw0 = mfu_config_frameworks(sys, c, NULL) & admitted;
    if ((sp_given && zero_given && rc_given) || infer_try(sys, c, fw0, ops, &t)) return 0;
    /* a policy some framework of the candidates' offers: on a stack mfud
     * does not model, one of the platform's (not torchtitan's op-level
     * SAC on a TPU) */
    unsigned pool = fw0 ? fw0 : mfu_platform_frameworks(sys->hw);
    int n_sp = 1, n_zero = 1, sps[2] = {c->sp, !c->sp}, zeros[2] = {c->zero, 1};
    if (!sp_given && c->ax[MFU_AX_TP] > 1) n_sp = 2;
    if (!zero_given && c->zero == 0 && c->ax[MFU_AX_DP] * c->ax[MFU_AX_CP] > 1 && c->ax[MFU_AX_FSDP] == 1)
        n_zero = 2;
    mfu_config best = *c, t_c;
    double best_t = INFINITY;
    for (int i = 0; i < n_sp; i++)
        for (int j = 0; j < n_zero; j++)
            for (int rc = 0; rc < (rc_given ? 1 : MFU_RC_COUNT); rc++) {
                t_c = *c;
                t_c.sp = sps[i];
                t_c.zero = zeros[j];
                if (!rc_given) {
                    /* never an offload to the host (cpu_offload, MaxText's
                     * *_offloaded), nor a policy the request would have to
                     * name (custom modules, MaxText's remat names) */
                    if (rc == MFU_RC_CPU_OFFLOAD || rc == MFU_RC_CUSTOM || rc == MFU_RC_MAXTEXT ||
                        sys->rc[rc].mx_host || !(sys->rc[rc].frameworks & pool))
                        continue;
                    t_c.recompute = rc;
                    t_c.recompute_layers = -1;
                    if (rc == MFU_RC_FULL && infer_rc_layers(sys, &t_c, fw0, ops) == 0) continue;
                }
                if (infer_try(sys, &t_c, fw0, ops, &t) && t < best_t) {
                    best_t = t;
                    best = t_c;
                }
            }
    if (!(best_t < INFINITY)) return 0;
    unsigned bits = (best.sp != c->sp ? API_INFER_SP : 0u) | (best.zero != c->zero ? API_INFER_ZERO : 0u) |
                    (best.recompute != c->recompute || best.recompute_layers != c->recompute_layers
                         ? API_INFER_RECOMPUTE
                         : 0u);
    *c = best;
    return bits;
}

/* The interleaved schedule named without its vpp (papers say
 * "interleaved" and no count; Megatron needs one): every legal count is a
 * candidate, each with the other left-out switches inferred, and the
 * fastest that fits is taken (named "vpp" among the inferred); where none
 * fits, rq_parse_config's, the smallest legal. */
static unsigned infer_vpp(const mfu_system *sys, mfu_config *c, json_t *cj, unsigned admitted, mfu_op *ops)
{
    if (c->schedule != MFU_SCHED_INTERLEAVED || !json_object_get(cj, "schedule") || json_object_get(cj, "vpp"))
        return infer_switches(sys, c, cj, admitted, ops);
    mfu_config best = *c;
    unsigned best_bits = 0;
    double best_t = INFINITY, t;
    int64_t per_rank = sys->layers / c->ax[MFU_AX_PP];
    int own_split = json_object_get(cj, "pipeline_split") != NULL;
    for (int64_t v = 2; v <= per_rank + 2; v++) {
        mfu_config t_c = *c;
        int reason;
        const char *why;
        t_c.vpp = v;
        /* the split follows the count where the run gives none */
        if (!own_split && mfu_config_default_split(sys, &t_c) != MFU_OK) continue;
        if (mfu_config_check(sys, &t_c, &reason, &why) != MFU_OK) continue;
        unsigned bits = infer_switches(sys, &t_c, cj, admitted, ops);
        if (infer_try(sys, &t_c, 0u, ops, &t) && t < best_t) {
            best_t = t;
            best = t_c;
            best_bits = bits;
        }
    }
    if (!(best_t < INFINITY)) return infer_switches(sys, c, cj, admitted, ops);
    *c = best;
    return best_bits | API_INFER_VPP;
}

/* The micro-batch left out, mbs and grad_accum both (rq_parse_config
 * took mbs 1, grad_accum the replica's sequences a step). No framework has
 * a default to take instead: Megatron-LM asserts --micro-batch-size is
 * given (megatron/training/arguments.py), and torchtitan runs a rank's
 * whole local_batch_size at once unless a global batch asks it to
 * accumulate. Papers often leave it out (OPT-175B, FSDP over 992 A100s:
 * 992 sequences a step, one micro-batch of 8 a rank; at mbs 1 the
 * parameters would be gathered eight times a step). So every divisor of
 * the replica's sequences a step up to API_INFER_MAX_MBS is a candidate,
 * each with the other left-out switches inferred, launched by an admitted
 * framework that runs the configuration as given (any, where none does),
 * and the fastest that fits is taken ("mbs" among the inferred where it is
 * not 1); where none fits, mbs 1 and the other switches' inference. */
#define API_INFER_MAX_MBS 64

unsigned api_infer_measured(const mfu_system *sys, mfu_config *c, json_t *cj, unsigned admitted, mfu_op *ops)
{
    if (json_object_get(cj, "mbs") || json_object_get(cj, "grad_accum") || c->mbs != 1)
        return infer_vpp(sys, c, cj, admitted, ops);
    unsigned fw0 = mfu_config_frameworks(sys, c, NULL) & admitted;
    int64_t n = c->grad_accum; /* sequences a replica runs a step */
    mfu_config best = *c;
    unsigned best_bits = 0;
    double best_t = INFINITY, t;
    for (int64_t m = 1; m <= n && m <= API_INFER_MAX_MBS; m++) {
        if (n % m) continue;
        mfu_config t_c = *c;
        t_c.mbs = m;
        t_c.grad_accum = n / m;
        unsigned bits = infer_vpp(sys, &t_c, cj, admitted, ops);
        if (infer_try(sys, &t_c, fw0, ops, &t) && t < best_t) {
            best_t = t;
            best = t_c;
            best_bits = bits;
        }
    }
    if (!(best_t < INFINITY)) return infer_vpp(sys, c, cj, admitted, ops);
    *c = best;
    return best_bits | (best.mbs != 1 ? API_INFER_MBS : 0u);
}

json_t *api_inferred_json(unsigned bits)
{
    json_t *a = json_array();
    if (bits & API_INFER_SP) json_array_append_new(a, json_string("sp"));
    if (bits & API_INFER_ZERO) json_array_append_new(a, json_string("zero"));
    if (bits & API_INFER_RECOMPUTE) json_array_append_new(a, json_string("recompute"));
    if (bits & API_INFER_VPP) json_array_append_new(a, json_string("vpp"));
    if (bits & API_INFER_MBS) json_array_append_new(a, json_string("mbs"));
    return a;
}
