/* tests/fuzz/fuzz_request.c -- libFuzzer target (a): the request parser, the
 * validator and the HF import.
 *
 * Bytes -> json_loadb (the daemon's flags) -> api_normalize, api_roofline;
 * the document is also tried as a HuggingFace config.json: api_hf_to_ir on
 * it directly and inside {"model": {"hf_config": ...}} requests.
 * Invariants: no crash or sanitizer report; every call either succeeds with
 * a result whose numbers are finite, or fails with an HTTP status and errors
 * that each carry a JSON pointer. A request with devices also goes to
 * api_search with its budget cut to 200 evaluations (fuzz_search covers the
 * core search itself on bounded inputs). */
#include <stdint.h>

#include "fuzz_util.h"

static void check_result(json_t *res, const api_status *st, const char *where)
{
    if (!res) {
        fz_check_error(st, where);
        return;
    }
    FZ_CHECK(st->status == 0, "%s: result with status %d", where, st->status);
    fz_json_finite(res, where);
}

static void try_roofline(json_t *req, const char *where)
{
    api_status st;
    api_status_init(&st);
    json_t *res = api_roofline(req, &st);
    check_result(res, &st, where);
    if (res) {
        json_t *roof = json_object_get(res, "roofline");
        double mfu = json_number_value(json_object_get(roof, "mfu"));
        double t = json_number_value(json_object_get(roof, "step_time_s"));
        FZ_CHECK(mfu >= 0 && isfinite(mfu), "%s: roofline mfu %g", where, mfu);
        FZ_CHECK(t > 0 && isfinite(t), "%s: roofline step %g", where, t);
        char *table = api_roofline_table(res);
        free(table);
    }
    json_decref(res);
}

static void try_normalize(json_t *req, const char *where)
{
    api_status st;
    api_status_init(&st);
    json_t *n = api_normalize(req, &st);
    check_result(n, &st, where);
    if (n) {
        char key[65];
        api_cache_key(n, key);
        FZ_CHECK(strlen(key) == 64, "%s: key length", where);
    }
    json_decref(n);
}

/* api_search with the budget bounded (max_evaluations <= 200, top_k <= 5,
 * deadline 2 s) so one input stays fast: the search result, the measured
 * block, CSV and table rendering. */
static void try_search(json_t *req)
{
    json_t *r = json_deep_copy(req);
    json_t *s = json_object_get(r, "search");
    if (!s) {
        s = json_object();
        json_object_set_new(r, "search", s);
    }
    if (!json_is_object(s)) { json_decref(r); return; }
    json_int_t me = json_integer_value(json_object_get(s, "max_evaluations"));
    if (me <= 0 || me > 200) json_object_set_new(s, "max_evaluations", json_integer(200));
    json_int_t k = json_integer_value(json_object_get(s, "top_k"));
    if (k <= 0 || k > 5) json_object_set_new(s, "top_k", json_integer(5));
    json_object_set_new(s, "deadline_s", json_real(2.0));
    api_status st;
    api_status_init(&st);
    json_t *res = api_search(r, &st, NULL, NULL);
    check_result(res, &st, "api_search");
    if (res) {
        json_t *stats = json_object_get(res, "search");
        json_int_t ev = json_integer_value(json_object_get(stats, "evaluated"));
        FZ_CHECK(ev <= 200, "api_search: evaluated %lld over the budget", (long long)ev);
        FZ_CHECK(json_array_size(json_object_get(res, "configs")) <= 5, "api_search: configs > top_k");
        free(api_result_csv(res));
        free(api_search_table(res));
    }
    json_decref(res);
    json_decref(r);
}

/* The document as an HF config.json: imported alone, and inside requests. */
static void try_hf(json_t *hf)
{
    api_status st;
    api_status_init(&st);
    json_t *ir = api_hf_to_ir(hf, "/model/hf_config", &st);
    check_result(ir, &st, "api_hf_to_ir");
    if (ir) {
        /* the import's IR is the IR parser's input: it must parse or fail cleanly */
        mfu_model m;
        api_status st2;
        api_status_init(&st2);
        if (api_model_from_ir(ir, "/model/hf_config", &m, &st2)) fz_check_error(&st2, "hf ir");
    }
    json_decref(ir);
    static const char *const hw[] = {"h100-sxm", "tpu-v5e"};
    for (int i = 0; i < 2; i++) {
        json_t *req = json_pack("{s:{s:O},s:{s:s},s:I,s:{s:I,s:I}}", "model", "hf_config", hf,
                                "hardware", "preset", hw[i], "devices", (json_int_t)64, "training",
                                "seq_len", (json_int_t)(i ? 4096 : 2048), "global_batch_tokens",
                                (json_int_t)(i ? 4096 * 64 : 2048 * 32));
        FZ_CHECK(req != NULL, "json_pack");
        try_roofline(req, "roofline(hf_config)");
        try_normalize(req, "normalize(hf_config)");
        json_decref(req);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t err;
    json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
    if (!j) return 0;
    try_normalize(j, "api_normalize");
    try_roofline(j, "api_roofline");
    if (json_is_object(j) && json_object_get(j, "devices")) try_search(j);
    if (json_is_object(j)) {
        json_t *hf = json_object_get(json_object_get(j, "model"), "hf_config");
        if (hf) try_hf(hf);
        else if (!json_object_get(j, "model")) try_hf(j);
    }
    json_decref(j);
    return 0;
}
