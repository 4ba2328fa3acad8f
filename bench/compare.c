/* bench/compare.c -- speed of a what-if comparison (issue 11 "done when":
 * 6 hardware presets x 4 device counts for Llama-3-70B in under 2 s on a
 * 2-core machine, cold). Prints figures; no assertions.
 *
 * Cold: the first comparison of the process (presets parsed, nothing
 * cached; the daemon's stored searches are not used here). Then the best
 * of `reps` more, on 1 thread and on the online CPUs (or argv[2]). The
 * figure that matters is the cold wall time against the 2 s target,
 * printed as a ratio. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "api.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *const REQ =
    "{\"base\": {\"model\": {\"preset\": \"llama3-70b\"}, \"hardware\": {\"preset\": \"h100-sxm\"},"
    " \"devices\": 1024, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 16777216,"
    " \"tokens\": 15e12}, \"cost\": {\"price_per_device_hour\": 2.0}},"
    " \"vary\": {\"hardware\": [{\"preset\": \"a100-80gb\"}, {\"preset\": \"h100-sxm\"},"
    " {\"preset\": \"h200\"}, {\"preset\": \"b200\"}, {\"preset\": \"gb200-nvl72\"},"
    " {\"preset\": \"mi300x\"}], \"devices\": [256, 512, 1024, 2048]}}";

static double once(json_t *req, int threads, json_t **out)
{
    api_status st;
    api_status_init(&st);
    double t0 = now();
    json_t *res = api_compare(req, &st, NULL, NULL, threads, NULL, NULL);
    double dt = now() - t0;
    if (!res) {
        fprintf(stderr, "compare failed: %s %s\n", st.n_errors ? st.errors[0].pointer : "",
                st.n_errors ? st.errors[0].detail : "");
        exit(1);
    }
    if (out) *out = res;
    else json_decref(res);
    return dt;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    if (reps < 1) reps = 1;
    long nt = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
    int threads = nt < 1 ? 1 : nt > 64 ? 64 : (int)nt;
    json_error_t e;
    json_t *req = json_loads(REQ, 0, &e);
    if (!req) {
        fprintf(stderr, "bad request JSON: %s\n", e.text);
        return 1;
    }
    json_t *res = NULL;
    double cold = once(req, threads, &res);
    printf("Llama-3-70B, 6 hardware presets x 4 device counts = %lld searches\n",
           (long long)json_integer_value(json_object_get(res, "n_variants")));
    printf("  cold, %d thread%s: %.3f s = %.2f of the 2 s target\n", threads, threads > 1 ? "s" : "",
           cold, cold / 2.0);
    for (int pass = 0; pass < (threads > 1 ? 2 : 1); pass++) {
        int th = pass ? threads : 1;
        double best = 1e30;
        for (int i = 0; i < reps; i++) {
            double dt = once(req, th, NULL);
            if (dt < best) best = dt;
        }
        printf("  warm, %d thread%s: %.3f s (best of %d), %.1f searches/s\n", th, th > 1 ? "s" : "",
               best, reps, 24.0 / best);
    }
    json_t *f = json_object_get(res, "fastest");
    json_t *row = json_array_get(json_object_get(res, "variants"), (size_t)json_integer_value(f) - 1);
    printf("  fastest: %s x %lld, %.0f tokens/s\n", json_string_value(json_object_get(row, "hardware")),
           (long long)json_integer_value(json_object_get(row, "devices")),
           json_number_value(json_object_get(row, "tokens_per_s")));
    json_decref(res);
    json_decref(req);
    return 0;
}
