/* Allocation failure over the request path (issue 15, item 3): every
 * allocation the api makes for a request -- its own (malloc, calloc,
 * realloc, strdup, redirected here by the linker's --wrap, see the
 * Makefile) and jansson's (json_set_alloc_funcs) -- is failed in turn, one
 * at a time, the way SQLite's test harness walks its malloc failures. Each
 * run must end in an answer or in a problem with a status, never a crash
 * or a success that lost part of its answer silently; under the sanitizer
 * builds (make asan) a leak on a failure path fails the test too.
 *
 * The walk: run the request with allocation number k failed, for k = 0,
 * 1, 2, ... until a run makes fewer than k + 1 allocations (nothing left to
 * fail). The requests are small so the walk stays short. OOM_DEBUG=1
 * prints each run's outcome, OOM_TRACE=1 the failed allocation's stack. */
#include <execinfo.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "check.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t k);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t k);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

static long fail_at = -1; /* the allocation to fail (-1: none) */
static long made;         /* allocations counted since the run began */
static int failed;        /* whether this run's failure happened */

static int fail_now(void)
{
    if (fail_at < 0) return 0;
    if (made++ == fail_at) {
        failed = 1;
        if (getenv("OOM_TRACE")) {
            void *bt[12];
            int n = backtrace(bt, 12);
            backtrace_symbols_fd(bt, n, 2);
        }
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t k) { return fail_now() ? NULL : __real_calloc(n, k); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }

typedef json_t *(*api_fn)(json_t *, api_status *);
static json_t *search_fn(json_t *r, api_status *st) { return api_search(r, st, NULL, NULL); }
/* a profiler trace (POST /traces): the small ROCm trace in tests/data */
static json_t *trace_fn(json_t *r, api_status *st)
{
    (void)r;
    return api_trace_file("tests/data/traces/kineto-rocm-mi250-toy.json.gz", NULL, st);
}

/* the daemon's path: prepared on one thread, searched on another */
static json_t *prepared_fn(json_t *r, api_status *st)
{
    api_prepared *p = api_prepare_search(r, st);
    if (!p) return NULL;
    json_t *res = api_search_prepared(p, st, NULL, NULL, 1);
    api_prepared_free(p);
    return res;
}

/* Walk one request through fn with each allocation failed in turn; the
 * number of runs (allocations walked). */
static long walk(const char *name, api_fn fn, const char *request)
{
    long k;
    int bad = 0;
    /* MFU_TEST_QUICK (memcheck in tests/ci/valgrind.sh, TSan in
     * mk/sanitize.mk): every 8th allocation. The full walk runs in the
     * plain suite and under ASan, whose LeakSanitizer checks every failure
     * path's leaks; memcheck ran it in 73 s of CI's 20 minutes, TSan has
     * no thread here to watch. */
    long stride = getenv("MFU_TEST_QUICK") ? 8 : 1;
    for (k = 0;; k += stride) {
        json_error_t je;
        json_t *req = json_loads(request, 0, &je); /* before the count starts */
        if (!req) {
            fprintf(stderr, "%s: request is not JSON: %s\n", name, je.text);
            CHECK(req != NULL);
            return k;
        }
        api_status st;
        api_status_init(&st);
        made = 0;
        failed = 0;
        fail_at = k;
        json_t *res = fn(req, &st);
        fail_at = -1;
        /* an answer, or the policy's 503; never a client error (4xx)
         * made up by a failed allocation, never silence */
        int ok = failed ? (res == NULL && st.status == 503 && st.n_errors >= 1)
                        : (res != NULL || (st.status >= 400 && st.n_errors >= 1));
        if (!ok && bad < 5) {
            fprintf(stderr, "%s: allocation %ld failed: no answer and no problem (status %d)\n", name, k,
                    st.status);
            bad++;
        }
        CHECK(ok);
        json_decref(res);
        json_decref(req);
        if (getenv("OOM_DEBUG")) fprintf(stderr, "%s k=%ld made=%ld res=%p status=%d %s\n", name, k, made, (void *)res, st.status, st.n_errors ? st.errors[0].detail : "");
        if (!failed) break; /* the run made fewer than k + 1 allocations */
    }
    printf("%s: %ld allocation failures walked\n", name, k);
    return k;
}

int main(void)
{
    /* jansson allocates through the api's counter (api/oom.c), whose
     * malloc is the wrapped one here */
    api_alloc_init();
    /* the request path's three entries, each on a small request */
    const char *small = "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                        "\"devices\": 8, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 262144}, "
                        "\"search\": {\"top_k\": 2, \"fix\": {\"tp\": 8, \"pp\": 1, \"cp\": 1, \"mbs\": 1}}}";
    long n = walk("normalize", api_normalize, small);
    CHECK(n > 10); /* the walk really failed allocations */
    n = walk("roofline", api_roofline, small);
    CHECK(n > 10);
    n = walk("search", search_fn, small);
    CHECK(n > 10);
    n = walk("prepared search", prepared_fn, small);
    CHECK(n > 10);
    n = walk("trace", trace_fn, "{}");
    CHECK(n > 10);
    /* a model given as a HuggingFace config.json: the importer's path */
    const char *hf = "{\"model\": {\"hf_config\": {\"model_type\": \"llama\", \"architectures\": [\"LlamaForCausalLM\"], "
                     "\"hidden_size\": 1024, \"intermediate_size\": 4096, \"num_attention_heads\": 8, "
                     "\"num_key_value_heads\": 8, \"num_hidden_layers\": 4, \"vocab_size\": 32000, "
                     "\"max_position_embeddings\": 4096, \"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": false}}, "
                     "\"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": 8, "
                     "\"training\": {\"seq_len\": 2048, \"global_batch_tokens\": 65536}}";
    n = walk("hf normalize", api_normalize, hf);
    CHECK(n > 10);
    return check_done();
}
