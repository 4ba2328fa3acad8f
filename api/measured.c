/* api/measured.c -- a measured run against its prediction: measured MFU
 * and HFU, the bound -> expected -> measured gap by component, and with a
 * profiler trace, the trace against the prediction drawn as one (issue 12
 * item 3). The model of the gap lives here; api/render.c only renders. */
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
