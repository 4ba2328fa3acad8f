/* bench/search.c -- speed of the configuration search. Prints figures; no
 * assertions (timing belongs here, not in unit tests).
 *
 * Cases (issue "Analysis core II"):
 *  1. GPT-3 175B on 1,024 A100-80GB, global batch searched over 1..1,536
 *     sequences of 2,048 tokens (Calculon's GPT-3 space, SC'23).
 *  2. Llama-3 405B on 16,384 H100, seq 8,192, 16M tokens per batch.
 *  3. DeepSeek-V3 on 2,048 H800, seq 4,096, 15.7M tokens per batch.
 * Each is run `reps` times; the best wall time is reported.
 * usage: search [reps] [threads] [label substring: run only those cases] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *only; /* argv[3]: run only the cases whose label has it */

static void run(const char *label, const char *req_text, int reps, int threads)
{
    if (only && !strstr(label, only)) return;
    json_error_t e;
    json_t *req = json_loads(req_text, 0, &e);
    if (!req) { fprintf(stderr, "bad request JSON: %s\n", e.text); exit(1); }
    double best = 1e30;
    json_t *last = NULL;
    for (int i = 0; i < reps; i++) {
        api_status st;
        api_status_init(&st);
        double t0 = now();
        json_t *res = api_search_mt(req, &st, NULL, NULL, threads);
        double dt = now() - t0;
        if (!res) { fprintf(stderr, "%s: %s\n", label, st.n_errors ? st.errors[0].detail : "failed"); exit(1); }
        if (dt < best) best = dt;
        json_decref(last);
        last = res;
    }
    json_t *s = json_object_get(last, "search");
    double space = json_number_value(json_object_get(s, "space_size"));
    double ev = json_number_value(json_object_get(s, "evaluated"));
    double full = json_number_value(json_object_get(s, "fully_evaluated"));
    json_t *top = json_array_get(json_object_get(last, "configs"), 0);
    json_t *par = json_object_get(top, "parallel");
    printf("%s (%d thread%s)\n", label, threads, threads > 1 ? "s" : "");
    printf("  space %.0f points, evaluated %.0f (full System Bound %.0f), truncated %s\n", space, ev,
           full, json_is_true(json_object_get(s, "truncated")) ? "yes" : "no");
    printf("  wall %.3f s (best of %d) = %.2f M points/s, %.2f M evaluated/s\n", best, reps,
           space / best / 1e6, ev / best / 1e6);
    printf("  best: dp %lld fsdp %lld tp %lld ep %lld pp %lld cp %lld, %s vpp %lld, mbs %lld x %lld, %s: "
           "expected MFU %.1f %%, bound %.1f %%, roofline %.1f %%\n",
           (long long)json_integer_value(json_object_get(par, "dp")),
           (long long)json_integer_value(json_object_get(par, "fsdp")),
           (long long)json_integer_value(json_object_get(par, "tp")),
           (long long)json_integer_value(json_object_get(par, "ep")),
           (long long)json_integer_value(json_object_get(par, "pp")),
           (long long)json_integer_value(json_object_get(par, "cp")),
           json_string_value(json_object_get(top, "schedule")),
           (long long)json_integer_value(json_object_get(top, "vpp")),
           (long long)json_integer_value(json_object_get(top, "mbs")),
           (long long)json_integer_value(json_object_get(top, "grad_accum")),
           json_string_value(json_object_get(top, "recompute")),
           100 * json_number_value(json_object_get(json_object_get(top, "expected"), "mfu")),
           100 * json_number_value(json_object_get(json_object_get(top, "bound"), "mfu")),
           100 * json_number_value(json_object_get(json_object_get(last, "roofline"), "mfu")));
    json_decref(last);
    json_decref(req);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    if (reps < 1) reps = 1;
    /* threads: argv[2], else the online CPUs; each case runs on 1 thread and
     * on that many (the answers are identical, core/search.h) */
    long nt = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
    int threads = nt < 1 ? 1 : nt > 64 ? 64 : (int)nt;
    only = argc > 3 ? argv[3] : NULL;
    for (int pass = 0; pass < (threads > 1 ? 2 : 1); pass++) {
    int th = pass ? threads : 1;
    run("GPT-3 175B, 1024 x A100-80GB, batch 1..1536 x 2048 tokens",
        "{\"model\": {\"preset\": \"gpt3-175b\"}, \"hardware\": {\"preset\": \"a100-80gb\"},"
        " \"devices\": 1024, \"training\": {\"seq_len\": 2048},"
        " \"search\": {\"batch_seqs\": [1, 1536], \"max_mbs\": 16, \"deadline_s\": 600}}",
        reps, th);
    run("Llama-3 405B, 16384 x H100, seq 8192, 16M tokens",
        "{\"model\": {\"preset\": \"llama3-405b\"}, \"hardware\": {\"preset\": \"h100-sxm\"},"
        " \"devices\": 16384, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 16777216},"
        " \"search\": {\"deadline_s\": 600}}",
        reps, th);
    run("DeepSeek-V3, 2048 x H800, seq 4096, 3840 sequences",
        "{\"model\": {\"preset\": \"deepseek-v3\"}, \"hardware\": {\"preset\": \"h800\"},"
        " \"devices\": 2048, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 15728640},"
        " \"search\": {\"deadline_s\": 600}}",
        reps, th);
    }
    return 0;
}
