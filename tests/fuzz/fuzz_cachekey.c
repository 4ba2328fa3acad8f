/* tests/fuzz/fuzz_cachekey.c -- libFuzzer target (b): the canonical cache key.
 *
 * Equal inputs => equal key. Bytes are parsed as a request; when it
 * normalizes (key K), each of these equivalent spellings must normalize too
 * and give K:
 *   1. the document re-dumped with sorted keys / indentation and reloaded;
 *   2. every object's keys in reverse order;
 *   3. every integer written as a real (4096 -> 4096.0), where exact;
 *   4. explicit defaults added where absent (dtype, attention_impl,
 *      overlaps, mfu_convention, search top_k/rank_by/...);
 *   5. the normalized form itself (idempotence), and it with 2 and 3 applied.
 * A variant that is rejected while the original was accepted is a violation
 * too: the same request may not be valid in one spelling only. */
#include <stdint.h>

#include "fuzz_util.h"

/* A deep copy of j with every scalar replaced by leaf(scalar) (a new
 * reference), every object's keys inserted in reverse order when `rev`. */
static json_t *deep_map(json_t *j, int rev, json_t *(*leaf)(const json_t *))
{
    if (json_is_object(j)) {
        size_t n = json_object_size(j), i = 0;
        const char **keys = malloc((n ? n : 1) * sizeof *keys);
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) keys[i++] = k;
        json_t *o = json_object();
        for (i = 0; i < n; i++) {
            const char *key = keys[rev ? n - 1 - i : i];
            json_object_set_new(o, key, deep_map(json_object_get(j, key), rev, leaf));
        }
        free(keys);
        return o;
    }
    if (json_is_array(j)) {
        json_t *a = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) json_array_append_new(a, deep_map(v, rev, leaf));
        return a;
    }
    return leaf(j);
}

/* An integer as a real where the real is exact (|v| <= 2^53); any other
 * scalar as it is. */
static json_t *exact_real(const json_t *j)
{
    json_int_t v = json_integer_value(j);
    if (json_is_integer(j) && v >= -(1LL << 53) && v <= (1LL << 53)) return json_real((double)v);
    return json_deep_copy(j);
}

/* A deep copy with every object's keys inserted in reverse order. */
static json_t *reversed(json_t *j)
{
    return deep_map(j, 1, json_deep_copy);
}

/* A deep copy with integers as reals where the real is exact. */
static json_t *as_reals(json_t *j)
{
    return deep_map(j, 0, exact_real);
}

/* Documented defaults (docs/model-ir.md, openapi.yaml) added where absent. */
static json_t *with_defaults(json_t *req)
{
    json_t *r = json_deep_copy(req);
    json_t *t = json_object_get(r, "training");
    if (json_is_object(t)) {
        if (!json_object_get(t, "dtype")) json_object_set_new(t, "dtype", json_string("bf16"));
        if (!json_object_get(t, "attention_impl"))
            json_object_set_new(t, "attention_impl", json_string("flash"));
        /* (tp_overlap's default is the platform's: on for TPUs, off for
         * GPUs, docs/model.md F-COMM-TP; not spelled out here) */
        if (!json_object_get(t, "ep_overlap")) json_object_set_new(t, "ep_overlap", json_false());
    }
    if (!json_object_get(r, "mfu_convention"))
        json_object_set_new(r, "mfu_convention", json_string("causal"));
    /* a search object makes devices required: add one only where it would
     * not change that (devices present) */
    json_t *s = json_object_get(r, "search");
    if (!s && json_object_get(r, "devices")) {
        s = json_object();
        json_object_set_new(r, "search", s);
    }
    if (json_is_object(s)) {
        if (!json_object_get(s, "top_k")) json_object_set_new(s, "top_k", json_integer(10));
        if (!json_object_get(s, "rank_by")) json_object_set_new(s, "rank_by", json_string("expected"));
        if (!json_object_get(s, "max_evaluations")) json_object_set_new(s, "max_evaluations", json_integer(0));
        if (!json_object_get(s, "deadline_s")) json_object_set_new(s, "deadline_s", json_real(60.0));
        if (!json_object_get(s, "partial_recompute")) json_object_set_new(s, "partial_recompute", json_true());
    }
    return r;
}

static json_t *normalize(json_t *req, char key[65], const char *where, int must)
{
    api_status st;
    api_status_init(&st);
    json_t *n = api_normalize(req, &st);
    if (!n) {
        fz_check_error(&st, where);
        FZ_CHECK(!must, "%s: the original normalizes but this equivalent spelling fails: %s: %s",
                 where, st.n_errors ? st.errors[0].pointer : "", st.n_errors ? st.errors[0].detail : "");
        return NULL;
    }
    fz_json_finite(n, where);
    api_cache_key(n, key);
    return n;
}

static void same_key(json_t *variant, const char *k0, const char *where)
{
    char k[65];
    json_t *n = normalize(variant, k, where, 1);
    FZ_CHECK(strcmp(k, k0) == 0, "%s: key %s != %s", where, k, k0);
    json_decref(n);
}

/* same_key of a spelling made for it (the reference is taken). */
static void same_key_new(json_t *variant, const char *k0, const char *where)
{
    same_key(variant, k0, where);
    json_decref(variant);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t err;
    json_t *req = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &err);
    if (!req) return 0;
    char k0[65];
    json_t *n0 = normalize(req, k0, "original", 0);
    if (!n0) { json_decref(req); return 0; }

    /* 1. re-dumped with other flags and reloaded */
    static const size_t flags[] = {JSON_SORT_KEYS | JSON_INDENT(3), JSON_COMPACT | JSON_ENSURE_ASCII,
                                   JSON_REAL_PRECISION(17)};
    for (int i = 0; i < 3; i++) {
        char *s = json_dumps(req, flags[i]);
        FZ_CHECK(s != NULL, "dump");
        json_t *again = json_loads(s, JSON_REJECT_DUPLICATES, &err);
        free(s);
        /* a real printed with fewer than 17 digits may not round-trip: only
         * the full-precision dumps are required to reload as the same value */
        if (again && json_equal(again, req)) same_key(again, k0, "re-dumped");
        json_decref(again);
    }
    /* 2. keys reversed */
    same_key_new(reversed(req), k0, "keys reversed");
    /* 3. integers as reals */
    same_key_new(as_reals(req), k0, "integers as reals");
    /* 4. explicit defaults */
    same_key_new(with_defaults(req), k0, "explicit defaults");
    /* 5. idempotence: the normalized form normalizes to itself, in any spelling */
    same_key(n0, k0, "normalized again");
    same_key_new(reversed(n0), k0, "normalized, keys reversed");
    same_key_new(as_reals(n0), k0, "normalized, integers as reals");
    {
        char k1[65];
        json_t *n1 = normalize(n0, k1, "normalized (form)", 1);
        /* _source (provenance) says "ir" the second time: compare the rest */
        json_t *a = json_copy(n0), *b = json_copy(n1);
        json_object_del(a, "_source");
        json_object_del(b, "_source");
        FZ_CHECK(json_equal(a, b), "normalizing the normal form changed it");
        json_decref(a);
        json_decref(b);
        json_decref(n1);
    }
    json_decref(n0);
    json_decref(req);
    return 0;
}
