/* api/trace.c -- read a profiler trace (Chrome trace-event JSON, plain or
 * gzipped, as PyTorch's profiler (Kineto) and JAX/XProf for Perfetto write
 * it) and measure each step (issue 12, docs/traces.md).
 *
 * Streamed: the file goes through zlib (gzread reads plain files as they
 * are) into a pull tokenizer that keeps one string at a time, and only the
 * events the measurement needs are kept, compactly (GPU kernels, copies,
 * sets; kernel launches by correlation id; step annotations). Memory grows
 * with the number of GPU events (48 bytes each), never with the file's
 * text: no document tree.
 *
 * Steps: `ProfilerStep#N` CPU annotations (or the caller's marker prefix).
 * A GPU event belongs to the step whose CPU window holds the runtime call
 * that launched it (the `correlation` id Kineto gives both); an event whose
 * launch is unknown belongs to the step whose window holds its own start.
 * Per step: the CPU step time, the GPU span (first start to last end of its
 * events), GPU busy time (the union of its intervals over every stream),
 * idle = span - busy, kernel time per category, and for each collective
 * kind the time not overlapped by any compute kernel (exposed) and the
 * overlapped share.
 *
 * Rooms: api/trace.c (entry points, predicted against measured),
 * api/trace_read.c (the tokenizer and the events kept),
 * api/trace_measure.c (per-step measurement), api/trace_cats.c (kernel
 * categories); api/trace_int.h joins them.
 */
#include "trace_int.h"

/* ---- entry points --------------------------------------------------------- */

/* The summary's per-axis communication (process groups) and achieved
 * GEMM FLOP/s (record_shapes), averaged over steps [from, n). */
static void summarize_axes_and_gemms(json_t *sum, json_t *steps, json_t *shapes, size_t from, size_t n, double k)
{
    json_t *axes = json_object();
    for (int a = 0; a < MFU_COMM_COUNT; a++) {
        double t = 0, x = 0, bw = 0;
        int seen = 0, bws = 0;
        for (size_t i = from; i < n; i++) {
            json_t *v = json_object_get(json_object_get(json_array_get(steps, i), "communication_by_axis"),
                                        mfu_comm_names[a]);
            if (!v) continue;
            seen = 1;
            t += json_number_value(json_object_get(v, "time_s"));
            x += json_number_value(json_object_get(v, "exposed_s"));
            if (json_is_number(json_object_get(v, "bus_bw_bytes_s"))) {
                bw += json_number_value(json_object_get(v, "bus_bw_bytes_s"));
                bws++;
            }
        }
        if (!seen) continue;
        json_t *o = json_pack("{s:f,s:f}", "time_s", t * k, "exposed_s", x * k);
        json_object_set_new(o, "bus_bw_bytes_s", bws ? json_real(bw / bws) : json_null());
        json_object_set_new(axes, mfu_comm_names[a], o);
    }
    json_object_set_new(sum, "communication_by_axis", axes);
    double gf = 0, gt = 0;
    for (size_t i = from; i < n; i++) {
        json_t *g = json_object_get(json_array_get(steps, i), "gemm_achieved");
        gf += json_number_value(json_object_get(g, "flops"));
        gt += json_number_value(json_object_get(g, "time_s"));
    }
    if (gt > 0)
        json_object_set_new(sum, "gemm_achieved", json_pack("{s:f,s:f,s:f,s:O}", "flops", gf * k, "time_s", gt * k,
                                                            "flop_s", gf / gt, "shapes", shapes));
}

static json_t *read_trace(lexer *lx, const char *marker, api_status *st)
{
    store sto;
    memset(&sto, 0, sizeof sto);
    sto.rank = -1;
    sto.devices = json_array();
    int saw = 0;
    /* steps and shapes stay ours until done: packed with "O", never "o",
     * whose stealing on a failed pack depends on where it failed
     * (tests/unit/test_oom.c found a leak and a read after free here) */
    json_t *out = NULL, *steps = NULL, *shapes = NULL;
    if (trace_read_top(lx, &sto, marker, &saw)) {
        api_fail(st, 422, "", "%s", lx->err[0] ? lx->err : "the trace cannot be read");
        goto done;
    }
    if (trace_next(lx) != T_EOF) {
        api_fail(st, 422, "", "%s", lx->err[0] ? lx->err : "text after the trace's closing bracket");
        goto done;
    }
    if (!saw) {
        api_fail(st, 422, "", "unknown schema: no traceEvents array (Chrome trace-event JSON is expected)");
        goto done;
    }
    steps = trace_measure(&sto, st, &shapes);
    if (!steps) goto done;
    /* the mean over steps, the first one left out when there are several
     * (it carries warm-up) */
    size_t n = json_array_size(steps), from = n > 2 ? 1 : 0;
    double mt = 0, mb = 0, mi = 0, mc = 0, me = 0;
    for (size_t i = from; i < n; i++) {
        json_t *s = json_array_get(steps, i);
        mt += json_number_value(json_object_get(s, "step_time_s"));
        mb += json_number_value(json_object_get(s, "gpu_busy_s"));
        mi += json_number_value(json_object_get(s, "idle_s"));
        json_t *c = json_object_get(s, "communication");
        mc += json_number_value(json_object_get(c, "time_s"));
        me += json_number_value(json_object_get(c, "exposed_s"));
    }
    double k = n > from ? 1.0 / (double)(n - from) : 0.0;
    out = json_pack("{s:s,s:I,s:I,s:O,s:O,s:{s:I,s:I,s:f,s:f,s:f,s:f,s:f}}", "format", "chrome-trace",
                    "events", (json_int_t)sto.events, "gpu_events", (json_int_t)sto.n_ev, "devices",
                    sto.devices, "steps", steps, "summary", "steps", (json_int_t)n, "steps_averaged",
                    (json_int_t)(n - from), "step_time_s", mt * k, "gpu_busy_s", mb * k, "idle_s", mi * k,
                    "communication_s", mc * k, "communication_exposed_s", me * k);
    if (!out) {
        api_fail(st, 503, "", "out of memory");
        goto done;
    }
    if (sto.world_size > 0)
        json_object_set_new(out, "distributed", json_pack("{s:i,s:i,s:s}", "rank", sto.rank, "world_size",
                                                          sto.world_size, "backend", sto.backend));
    summarize_axes_and_gemms(json_object_get(out, "summary"), steps, shapes, from, n, k);
done:
    json_decref(steps);
    json_decref(shapes);
    free(sto.gm);
    free(sto.gm_t);
    free(sto.ev);
    free(sto.la);
    free(sto.st);
    free(sto.gst);
    json_decref(sto.devices);
    return out;
}

static json_t *trace_file_run(const char *path, const char *marker, api_status *st);

json_t *api_trace_file(const char *path, const char *marker, api_status *st)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(trace_file_run(path, marker, st), st, before);
}

static json_t *trace_file_run(const char *path, const char *marker, api_status *st)
{
    lexer *lx = api_calloc(1, sizeof *lx);
    if (!lx) {
        api_fail(st, 503, "", "out of memory");
        return NULL;
    }
    lx->gz = gzopen(path, "rb");
    if (!lx->gz) {
        free(lx);
        api_fail(st, 400, "", "cannot open the trace file");
        return NULL;
    }
    gzbuffer(lx->gz, 1 << 17);
    json_t *out = read_trace(lx, marker && *marker ? marker : "ProfilerStep#", st);
    gzclose(lx->gz);
    free(lx->s);
    free(lx);
    return out;
}

static json_t *trace_text_run(const char *text, size_t len, const char *marker, api_status *st);

json_t *api_trace_text(const char *text, size_t len, const char *marker, api_status *st)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(trace_text_run(text, len, marker, st), st, before);
}

static json_t *trace_text_run(const char *text, size_t len, const char *marker, api_status *st)
{
    lexer *lx = api_calloc(1, sizeof *lx);
    if (!lx) {
        api_fail(st, 503, "", "out of memory");
        return NULL;
    }
    lx->mem = (const unsigned char *)text;
    lx->mem_len = len;
    z_stream z;
    memset(&z, 0, sizeof z);
    /* gzip (an upload of a .json.gz): the magic bytes 1f 8b */
    if (len >= 2 && (unsigned char)text[0] == 0x1f && (unsigned char)text[1] == 0x8b) {
        if (inflateInit2(&z, 15 + 16) != Z_OK) {
            free(lx);
            api_fail(st, 503, "", "out of memory");
            return NULL;
        }
        lx->zs = &z;
    }
    json_t *out = read_trace(lx, marker && *marker ? marker : "ProfilerStep#", st);
    if (lx->zs) inflateEnd(&z);
    free(lx->s);
    free(lx);
    return out;
}

/* ---- predicted against measured ------------------------------------------- */

/* The mean of a step field over the steps the summary averages. */
static double step_mean(json_t *m, const char *a, const char *b, const char *c)
{
    json_t *steps = json_object_get(m, "steps");
    size_t n = json_array_size(steps), from = n > 2 ? 1 : 0;
    double s = 0;
    for (size_t i = from; i < n; i++) {
        json_t *v = json_object_get(json_array_get(steps, i), a);
        if (b) v = json_object_get(v, b);
        if (c) v = json_object_get(v, c);
        s += json_number_value(v);
    }
    return n > from ? s / (double)(n - from) : 0.0;
}

json_t *api_trace_compare(json_t *predicted, json_t *measured)
{
    if (!json_array_size(json_object_get(predicted, "steps")) ||
        !json_array_size(json_object_get(measured, "steps")))
        return NULL;
    /* measured minus predicted, per component (seconds per step) */
    struct { const char *name, *a, *b, *c; } comp[] = {
        {"step_time_s", "step_time_s", NULL, NULL},
        {"gemm_s", "kernels", "gemm", "time_s"},
        {"attention_s", "kernels", "attention", "time_s"},
        {"other_compute_s", "kernels", "other_compute", "time_s"},
        {"memcpy_s", "kernels", "memcpy", "time_s"},
        {"idle_s", "idle_s", NULL, NULL},
    };
    json_t *o = json_object();
    const char *largest = NULL;
    double big = 0;
    for (size_t i = 0; i < sizeof comp / sizeof comp[0]; i++) {
        double d = step_mean(measured, comp[i].a, comp[i].b, comp[i].c) -
                   step_mean(predicted, comp[i].a, comp[i].b, comp[i].c);
        json_object_set_new(o, comp[i].name, json_real(d));
        if (i > 0 && fabs(d) > big) {
            big = fabs(d);
            largest = comp[i].b ? comp[i].b : "idle";
        }
    }
    json_t *exp_ = json_object();
    for (int c = TR_ALLREDUCE; c <= TR_OTHER_COMM; c++) {
        double d = step_mean(measured, "kernels", api_trace_cat_names[c], "exposed_s") -
                   step_mean(predicted, "kernels", api_trace_cat_names[c], "exposed_s");
        json_object_set_new(exp_, api_trace_cat_names[c], json_real(d));
        if (fabs(d) > big) {
            big = fabs(d);
            largest = api_trace_cat_names[c];
        }
    }
    json_object_set_new(o, "exposed_s", exp_);
    /* per parallel axis, where the measured trace's process groups name
     * them (and the prediction, read back, always does) */
    json_t *mx = json_object_get(json_object_get(measured, "summary"), "communication_by_axis");
    if (json_object_size(mx)) {
        json_t *ax = json_object();
        for (int a = 0; a < MFU_COMM_COUNT; a++) {
            if (!json_object_get(mx, mfu_comm_names[a])) continue;
            double d = step_mean(measured, "communication_by_axis", mfu_comm_names[a], "exposed_s") -
                       step_mean(predicted, "communication_by_axis", mfu_comm_names[a], "exposed_s");
            json_object_set_new(ax, mfu_comm_names[a], json_real(d));
        }
        json_object_set_new(o, "exposed_by_axis_s", ax);
    }
    json_object_set_new(o, "largest", largest ? json_string(largest) : json_null());
    return o;
}
