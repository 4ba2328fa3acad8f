/* api/compare.c -- what-if comparisons (issue 11 item 4, docs/planning.md):
 * one base search request and lists to vary; every combination is a search
 * of its own (cached like any search: its key is the search's), and the
 * answer is one table of the best configuration per variant with its
 * throughput, memory headroom and, given training.tokens (and cost), the
 * time, device-hours, cost and energy to train.
 *
 *   {"base": <a search request>,
 *    "vary": {"hardware": [<hardware>...], "devices": [N...],
 *             "seq_len": [S...], "global_batch_tokens": [B...], "fp8": [bool...]}}
 *
 * Variants are the product of the lists in that order (hardware outermost).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "jsonv.h"

static const char *const VARY_KEYS[] = {"hardware", "devices", "seq_len", "global_batch_tokens",
                                        "fp8", NULL};
enum { V_HW = 0, V_DEV, V_SEQ, V_GBT, V_FP8, V_COUNT };

/* One variant: its request, where it came from, its key and its answer. */
typedef struct variant {
    json_t *request;    /* the base with the variations applied */
    size_t idx[V_COUNT];/* index into each list (0 for lists not given) */
    char key[65];
    json_t *result;     /* search result (new reference) or NULL */
    api_status st;
    int computed;       /* searched here (not given by the caller) */
} variant;

static void set_path(json_t *o, const char *outer, const char *key, json_t *v)
{
    if (outer) {
        json_t *in = json_object_get(o, outer);
        if (!json_is_object(in)) {
            in = json_object();
            json_object_set_new(o, outer, in);
        }
        json_object_set_new(in, key, v);
    } else {
        json_object_set_new(o, key, v);
    }
}

/* The lists of `vary`, validated (each an array of 1..API_MAX_COMPARE_LIST;
 * values are checked when each variant is normalized). */
static int parse_vary(json_t *vary, json_t *lists[V_COUNT], size_t *n_variants, api_status *st)
{
    char p[128];
    if (!json_is_object(vary) || json_object_size(vary) == 0) {
        api_fail(st, 422, "/vary", "must be an object with at least one of hardware, devices, seq_len, global_batch_tokens, fp8");
        return -1;
    }
    const char *k;
    json_t *v;
    int bad = 0;
    json_object_foreach(vary, k, v) {
        int known = 0;
        for (int i = 0; VARY_KEYS[i]; i++) known |= !strcmp(k, VARY_KEYS[i]);
        if (!known) {
            api_fail(st, 422, jv_ptr(p, sizeof p, "/vary", k),
                     "unknown field; vary has hardware, devices, seq_len, global_batch_tokens, fp8");
            bad = -1;
        }
    }
    size_t n = 1;
    for (int i = 0; i < V_COUNT; i++) {
        lists[i] = json_object_get(vary, VARY_KEYS[i]);
        if (!lists[i]) continue;
        jv_ptr(p, sizeof p, "/vary", VARY_KEYS[i]);
        if (!json_is_array(lists[i]) || json_array_size(lists[i]) == 0 ||
            json_array_size(lists[i]) > API_MAX_COMPARE_LIST) {
            api_fail(st, 422, p, "must be an array of 1 to %d values", API_MAX_COMPARE_LIST);
            bad = -1;
            continue;
        }
        if (i == V_FP8) {
            size_t j;
            json_t *e;
            json_array_foreach(lists[i], j, e)
                if (!json_is_boolean(e)) {
                    char q[160];
                    api_fail(st, 422, jv_ptr_i(q, sizeof q, p, j), "must be true or false");
                    bad = -1;
                }
        }
        n *= json_array_size(lists[i]);
    }
    if (!bad && n > API_MAX_COMPARE_VARIANTS) {
        api_fail(st, 422, "/vary", "%zu variants (the product of the lists); at most %d", n,
                 API_MAX_COMPARE_VARIANTS);
        bad = -1;
    }
    *n_variants = n;
    return bad;
}

/* Build every variant's request and key; a variant that is not a valid
 * request fails the whole comparison, pointing at what was varied. */
static int expand(json_t *base, json_t *lists[V_COUNT], variant *vs, size_t n, api_status *st)
{
    for (size_t i = 0; i < n; i++) {
        variant *v = &vs[i];
        size_t rest = i;
        for (int a = V_COUNT - 1; a >= 0; a--) {
            size_t len = lists[a] ? json_array_size(lists[a]) : 1;
            v->idx[a] = rest % len;
            rest /= len;
        }
        v->request = json_deep_copy(base);
        if (!v->request) {
            api_fail(st, 503, "", "out of memory");
            return -1;
        }
        json_t *e;
        if (lists[V_HW]) json_object_set(v->request, "hardware", json_array_get(lists[V_HW], v->idx[V_HW]));
        if (lists[V_DEV]) json_object_set(v->request, "devices", json_array_get(lists[V_DEV], v->idx[V_DEV]));
        if (lists[V_SEQ] && (e = json_array_get(lists[V_SEQ], v->idx[V_SEQ])))
            set_path(v->request, "training", "seq_len", json_incref(e));
        if (lists[V_GBT] && (e = json_array_get(lists[V_GBT], v->idx[V_GBT])))
            set_path(v->request, "training", "global_batch_tokens", json_incref(e));
        if (lists[V_FP8])
            set_path(v->request, "training", "dtype",
                     json_string(json_is_true(json_array_get(lists[V_FP8], v->idx[V_FP8])) ? "fp8" : "bf16"));
        api_status vst;
        api_status_init(&vst);
        json_t *norm = api_normalize(v->request, &vst);
        if (!norm) {
            /* name the variant: the first varied list whose value is at fault,
             * else the base */
            const char *what = vst.n_errors ? vst.errors[0].pointer : "";
            char ptr[160] = "/base";
            for (int a = 0; a < V_COUNT; a++) {
                if (!lists[a]) continue;
                const char *tail = a == V_HW ? "/hardware" : a == V_DEV ? "/devices" :
                                   a == V_SEQ ? "/training/seq_len" :
                                   a == V_GBT ? "/training/global_batch_tokens" : "/training/dtype";
                if (!strncmp(what, tail, strlen(tail))) {
                    char q[128];
                    jv_ptr_i(ptr, sizeof ptr, jv_ptr(q, sizeof q, "/vary", VARY_KEYS[a]), v->idx[a]);
                    break;
                }
            }
            api_fail(st, vst.status ? vst.status : 422, ptr, "variant %zu: %s (at %s)", i + 1,
                     vst.n_errors ? vst.errors[0].detail : "invalid", what[0] ? what : "/");
            return -1;
        }
        int krc = api_cache_key(norm, v->key);
        json_decref(norm);
        if (krc) {
            api_fail(st, 503, "", "out of memory keying variant %zu", i + 1);
            return -1;
        }
    }
    return 0;
}

typedef struct pool {
    variant *vs;
    size_t n;
    atomic_size_t next, done;
    api_progress_fn fn;
    void *ctx;
    atomic_int stop;
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n || atomic_load(&p->stop)) break;
        variant *v = &p->vs[i];
        if (!v->result) {
            api_status_init(&v->st);
            v->result = api_search(v->request, &v->st, NULL, NULL);
            v->computed = v->result != NULL;
        }
        atomic_fetch_add(&p->done, 1);
    }
    return NULL;
}

/* One row of the table: what was varied and the best configuration. */
static json_t *row(const variant *v, json_t *lists[V_COUNT])
{
    json_t *res = v->result;
    json_t *hw = json_object_get(res, "hardware");
    json_t *o = json_pack("{s:s,s:O,s:O,s:O,s:o}", "search_id", v->key, "hardware",
                          json_object_get(hw, "name"), "devices", json_object_get(res, "devices"),
                          "seq_len", json_object_get(json_object_get(res, "roofline"), "seq_len"),
                          "global_batch_tokens", json_integer((json_int_t)json_number_value(
                              json_object_get(json_object_get(res, "roofline"), "global_batch_tokens"))));
    json_t *vary = json_object();
    for (int a = 0; a < V_COUNT; a++) {
        if (!lists[a]) continue;
        json_t *val = json_array_get(lists[a], v->idx[a]);
        /* devices, seq_len, global_batch_tokens: validated whole numbers,
         * echoed as JSON integers even when the request wrote 512.0 */
        if ((a == V_DEV || a == V_SEQ || a == V_GBT) && json_is_number(val))
            json_object_set_new(vary, VARY_KEYS[a], json_integer(api_json_count(json_number_value(val))));
        else
            json_object_set(vary, VARY_KEYS[a], val);
    }
    json_object_set_new(o, "vary", vary);
    /* answered from a stored search (the caller's `known`) */
    json_object_set_new(o, "cached", json_boolean(!v->computed));
    json_t *req_train = json_object_get(v->request, "training");
    json_t *dt = json_object_get(req_train, "dtype");
    json_object_set_new(o, "dtype", json_string(json_is_string(dt) ? json_string_value(dt) : "bf16"));
    json_t *best = json_array_get(json_object_get(res, "configs"), 0);
    json_object_set_new(o, "fits", json_boolean(best != NULL));
    if (!best) {
        json_t *nf = json_object_get(res, "no_fit");
        json_object_set(o, "no_fit", nf ? nf : json_null());
        return o;
    }
    json_t *ex = json_object_get(best, "expected");
    double tps = json_number_value(json_object_get(ex, "tokens_per_s"));
    double n = json_number_value(json_object_get(res, "devices"));
    json_t *b = json_pack("{s:O,s:O,s:O,s:O,s:O,s:O}", "parallel", json_object_get(best, "parallel"),
                          "schedule", json_object_get(best, "schedule"), "vpp",
                          json_object_get(best, "vpp"), "mbs", json_object_get(best, "mbs"),
                          "recompute", json_object_get(best, "recompute"), "frameworks",
                          json_object_get(best, "frameworks"));
    json_object_set_new(o, "best", b);
    json_object_set(o, "step_time_s", json_object_get(ex, "step_time_s"));
    json_object_set(o, "step_time_low_s", json_object_get(ex, "step_time_low_s"));
    json_object_set(o, "step_time_high_s", json_object_get(ex, "step_time_high_s"));
    json_object_set_new(o, "tokens_per_s", json_real(tps));
    json_object_set_new(o, "tokens_per_s_per_device", json_real(n > 0 ? tps / n : 0));
    json_object_set(o, "mfu", json_object_get(ex, "mfu"));
    json_object_set(o, "memory_headroom_bytes",
                    json_object_get(json_object_get(best, "memory"), "headroom_bytes"));
    json_t *ttt = json_object_get(best, "time_to_train");
    if (ttt) json_object_set(o, "time_to_train", ttt);
    return o;
}

static json_t *compare_run(json_t *doc, api_status *st, api_progress_fn fn, void *ctx, int threads,
                           json_t *known, json_t *computed);

json_t *api_compare(json_t *doc, api_status *st, api_progress_fn fn, void *ctx, int threads,
                    json_t *known, json_t *computed)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(compare_run(doc, st, fn, ctx, threads, known, computed), st, before);
}

/* Search every variant not already known, on `threads` threads (the
 * calling one among them, reporting progress between variants). 1 when
 * the callback asked to stop. */
static int run_variants(variant *vs, size_t n, api_progress_fn fn, void *ctx, int threads)
{
    pool p = {vs, n, 0, 0, fn, ctx, 0};
    if (threads < 1) threads = 1;
    if ((size_t)threads > n) threads = (int)n;
    pthread_t tid[64];
    int started = 0;
    for (int t = 1; t < threads && t < 64; t++)
        if (pthread_create(&tid[started], NULL, worker, &p) == 0) started++;
    /* the calling thread works too, and reports progress between variants */
    for (;;) {
        size_t i = atomic_fetch_add(&p.next, 1);
        if (i >= n) break;
        variant *v = &vs[i];
        if (!v->result) {
            api_status_init(&v->st);
            v->result = api_search(v->request, &v->st, NULL, NULL);
            v->computed = v->result != NULL;
        }
        size_t d = atomic_fetch_add(&p.done, 1) + 1;
        if (fn && fn(ctx, (double)d / (double)n, d)) {
            atomic_store(&p.stop, 1);
            break;
        }
    }
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    return atomic_load(&p.stop) ? 1 : 0;
}

/* The table: one row per variant, the fastest and the cheapest (0-based,
 * -1 none); the searches computed here into `computed`. NULL when a
 * variant failed (st says which). */
static json_t *variant_rows(variant *vs, size_t n, json_t **lists, json_t *computed, int *fastest_out,
                            int *cheapest_out, api_status *st)
{
    json_t *rows = json_array();
    int fastest = -1, cheapest = -1;
    double best_tps = 0, best_cost = 0;
    for (size_t i = 0; i < n; i++) {
        if (!vs[i].result) {
            const api_status *e = &vs[i].st;
            api_fail(st, e->status ? e->status : 500, e->n_errors ? e->errors[0].pointer : "",
                     "variant %zu: %s", i + 1, e->n_errors ? e->errors[0].detail : "the search failed");
            json_decref(rows);
            return NULL;
        }
        json_t *r = row(&vs[i], lists);
        double tps = json_number_value(json_object_get(r, "tokens_per_s"));
        if (tps > best_tps) { best_tps = tps; fastest = (int)i; }
        json_t *cost = json_object_get(json_object_get(r, "time_to_train"), "cost");
        if (json_is_number(cost) && (cheapest < 0 || json_number_value(cost) < best_cost)) {
            best_cost = json_number_value(cost);
            cheapest = (int)i;
        }
        json_array_append_new(rows, r);
        if (computed && vs[i].computed)
            json_object_set_new(computed, vs[i].key,
                                json_pack("{s:O,s:O}", "request", vs[i].request, "result", vs[i].result));
    }
    *fastest_out = fastest;
    *cheapest_out = cheapest;
    return rows;
}

static json_t *compare_run(json_t *doc, api_status *st, api_progress_fn fn, void *ctx, int threads,
                           json_t *known, json_t *computed)
{
    if (!json_is_object(doc)) {
        api_fail(st, 422, "", "a comparison is an object {base, vary}");
        return NULL;
    }
    if (api_check_limits(doc, st)) return NULL;
    const char *k;
    json_t *x;
    json_object_foreach(doc, k, x)
        if (strcmp(k, "base") && strcmp(k, "vary")) {
            char p[128];
            api_fail(st, 422, jv_ptr(p, sizeof p, "", k), "unknown field; a comparison has base, vary");
        }
    if (st->status) return NULL;
    json_t *base = json_object_get(doc, "base");
    if (!json_is_object(base)) {
        api_fail(st, 422, "/base", "required: the search request the variants start from");
        return NULL;
    }
    json_t *lists[V_COUNT];
    size_t n = 0;
    if (parse_vary(json_object_get(doc, "vary"), lists, &n, st)) return NULL;
    variant *vs = api_calloc(n, sizeof *vs);
    json_t *out = NULL;
    if (!vs) {
        api_fail(st, 503, "", "out of memory");
        return NULL;
    }
    if (expand(base, lists, vs, n, st)) goto done;
    for (size_t i = 0; i < n; i++) {
        json_t *r = known ? json_object_get(known, vs[i].key) : NULL;
        if (r) vs[i].result = json_incref(r);
    }
    if (run_variants(vs, n, fn, ctx, threads)) {
        api_fail(st, 503, "", "the comparison was cancelled");
        goto done;
    }
    int fastest, cheapest;
    json_t *rows = variant_rows(vs, n, lists, computed, &fastest, &cheapest, st);
    if (!rows) goto done;
    out = json_pack("{s:I,s:o}", "n_variants", (json_int_t)n, "variants", rows);
    json_object_set_new(out, "fastest", fastest >= 0 ? json_integer(fastest + 1) : json_null());
    json_object_set_new(out, "cheapest", cheapest >= 0 ? json_integer(cheapest + 1) : json_null());
    json_object_set_new(out, "kind", json_string("compare"));
done:
    for (size_t i = 0; i < n; i++) {
        json_decref(vs[i].request);
        json_decref(vs[i].result);
    }
    free(vs);
    return out;
}

static json_t *compare_normalize_run(json_t *doc, api_status *st);

json_t *api_compare_normalize(json_t *doc, api_status *st)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(compare_normalize_run(doc, st), st, before);
}

static json_t *compare_normalize_run(json_t *doc, api_status *st)
{
    if (!json_is_object(doc) || !json_is_object(json_object_get(doc, "base"))) {
        api_fail(st, 422, json_is_object(doc) ? "/base" : "",
                 "a comparison is an object {base, vary}; base: the search request the variants start from");
        return NULL;
    }
    if (api_check_limits(doc, st)) return NULL;
    json_t *lists[V_COUNT];
    size_t n = 0;
    if (parse_vary(json_object_get(doc, "vary"), lists, &n, st)) return NULL;
    variant *vs = api_calloc(n, sizeof *vs);
    if (!vs) {
        api_fail(st, 503, "", "out of memory");
        return NULL;
    }
    json_t *out = NULL;
    if (!expand(doc ? json_object_get(doc, "base") : NULL, lists, vs, n, st)) {
        json_t *keys = json_array();
        for (size_t i = 0; i < n; i++) json_array_append_new(keys, json_string(vs[i].key));
        out = json_pack("{s:s,s:o}", "kind", "compare", "variant_keys", keys);
    }
    for (size_t i = 0; i < n; i++) json_decref(vs[i].request);
    free(vs);
    return out;
}

char *api_compare_table(json_t *result)
{
    size_t cap = 8192, len = 0;
    char *b = api_malloc(cap);
    if (!b) return NULL;
#define OUT(...) do { \
        int k_ = snprintf(b + len, cap - len, __VA_ARGS__); \
        if (k_ < 0) break; \
        if ((size_t)k_ >= cap - len) { \
            size_t nc = (cap + (size_t)k_) * 2; char *nb = api_realloc(b, nc); \
            if (!nb) { free(b); return NULL; } \
            b = nb; cap = nc; \
            k_ = snprintf(b + len, cap - len, __VA_ARGS__); \
        } \
        len += (size_t)k_; \
    } while (0)
    OUT("%3s %-12s %7s %6s %10s %-4s %-24s %9s %11s %9s %6s %8s %9s %11s %12s %9s\n", "#",
        "hardware", "devices", "seq", "batch_tok", "dt", "best (dp.fsdp.tp.ep.pp.cp)", "step_s",
        "tokens/s", "tok/s/dev", "mfu%", "free_GB", "days", "device_h", "cost", "MWh");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(result, "variants"), i, r) {
        const char *hw = json_string_value(json_object_get(r, "hardware"));
        char layout[64] = "does not fit";
        json_t *p = json_object_get(json_object_get(r, "best"), "parallel");
        if (p)
            snprintf(layout, sizeof layout, "%lld.%lld.%lld.%lld.%lld.%lld",
                     (long long)json_integer_value(json_object_get(p, "dp")),
                     (long long)json_integer_value(json_object_get(p, "fsdp")),
                     (long long)json_integer_value(json_object_get(p, "tp")),
                     (long long)json_integer_value(json_object_get(p, "ep")),
                     (long long)json_integer_value(json_object_get(p, "pp")),
                     (long long)json_integer_value(json_object_get(p, "cp")));
        json_t *t = json_object_get(r, "time_to_train");
        double cost = json_number_value(json_object_get(t, "cost"));
        double mwh = json_number_value(json_object_get(t, "energy_mwh"));
        OUT("%3zu %-12.12s %7lld %6lld %10lld %-4s %-24s %9.3f %11.0f %9.1f %6.2f %8.1f %9.1f %11.0f %12.0f %9.1f\n",
            i + 1, hw ? hw : "?", (long long)json_integer_value(json_object_get(r, "devices")),
            (long long)json_integer_value(json_object_get(r, "seq_len")),
            (long long)json_number_value(json_object_get(r, "global_batch_tokens")),
            json_string_value(json_object_get(r, "dtype")), layout,
            json_number_value(json_object_get(r, "step_time_s")),
            json_number_value(json_object_get(r, "tokens_per_s")),
            json_number_value(json_object_get(r, "tokens_per_s_per_device")),
            100.0 * json_number_value(json_object_get(r, "mfu")),
            json_number_value(json_object_get(r, "memory_headroom_bytes")) / 1e9,
            json_number_value(json_object_get(t, "wall_clock_days")),
            json_number_value(json_object_get(t, "device_hours")), cost, mwh);
    }
    json_t *f = json_object_get(result, "fastest"), *c = json_object_get(result, "cheapest");
    if (json_is_integer(f)) OUT("\nfastest: #%lld", (long long)json_integer_value(f));
    if (json_is_integer(c)) OUT("   cheapest: #%lld", (long long)json_integer_value(c));
    OUT("\n");
#undef OUT
    return b;
}
