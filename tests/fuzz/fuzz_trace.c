/* tests/fuzz/fuzz_trace.c -- libFuzzer target (d): the profiler-trace reader
 * (api/trace.c), which POST /traces exposes to any client's bytes.
 *
 * Any bytes, plain or gzip: the reader answers a measurement or a 4xx/5xx
 * problem, never a crash, a hang or a leak. A measurement holds: every
 * number finite; per step busy <= span (+ rounding) and idle = span -
 * busy; exposed communication within 0..time per kind and per axis;
 * achieved GEMM FLOP/s = flops / time; the summary's steps count the
 * steps. Seeds: mi250-toy.json(.gz) are copies of
 * tests/data/traces/kineto-rocm-mi250-toy.json.gz (MIT; notice in
 * tests/data/traces/README.md); hand-pg-shapes.json is test_trace.c's hand
 * trace; pred-* are mfud's own exported prediction, cut. */
#include <stdint.h>

#include "fuzz_util.h"

static double num(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    api_status st;
    api_status_init(&st);
    json_t *m = api_trace_text((const char *)data, size, NULL, &st);
    if (!m) {
        FZ_CHECK(st.status >= 400 && st.status <= 599, "refused without a problem status (%d)", st.status);
        return 0;
    }
    fz_json_finite(m, "trace measurement");
    json_t *steps = json_object_get(m, "steps");
    FZ_CHECK(json_is_array(steps) && json_array_size(steps) > 0, "a measurement without steps");
    size_t i;
    json_t *s;
    json_array_foreach(steps, i, s) {
        double span = num(s, "gpu_span_s"), busy = num(s, "gpu_busy_s");
        FZ_CHECK(busy <= span * (1 + 1e-9) + 1e-12, "busy %g > span %g", busy, span);
        FZ_CHECK(fabs(num(s, "idle_s") - (span - busy)) <= 1e-9 * (1 + span), "idle != span - busy");
        json_t *k = json_object_get(s, "kernels");
        const char *name;
        json_t *v;
        json_object_foreach(k, name, v) {
            if (!json_object_get(v, "exposed_s")) continue;
            double t = num(v, "time_s"), x = num(v, "exposed_s");
            FZ_CHECK(x >= -1e-12 && x <= t * (1 + 1e-9) + 1e-12, "%s exposed %g of %g", name, x, t);
        }
        json_object_foreach(json_object_get(s, "communication_by_axis"), name, v) {
            double t = num(v, "time_s"), x = num(v, "exposed_s");
            FZ_CHECK(x >= -1e-12 && x <= t * (1 + 1e-9) + 1e-12, "axis %s exposed %g of %g", name, x, t);
        }
        json_t *g = json_object_get(s, "gemm_achieved");
        if (g && num(g, "time_s") > 0)
            FZ_CHECK(fabs(num(g, "flop_s") - num(g, "flops") / num(g, "time_s")) <=
                         1e-9 * (1 + num(g, "flop_s")), "GEMM FLOP/s != flops / time");
    }
    FZ_CHECK(num(json_object_get(m, "summary"), "steps") == (double)json_array_size(steps), "summary steps");
    json_decref(m);
    return 0;
}
