/* tests/fuzz/fuzz_util.h -- shared checks for the fuzz targets.
 * A violated invariant prints what and where, then abort()s: libFuzzer saves
 * the input as a crash, and the gcc replay (replay.c) dies with SIGABRT. */
#ifndef MFU_FUZZ_UTIL_H
#define MFU_FUZZ_UTIL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* The libFuzzer entry point each fuzz_*.c defines (replay.c calls it too). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond, ...)                                                     \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            abort();                                                            \
        }                                                                       \
    } while (0)

/* Every number in a JSON tree is finite (jansson refuses NaN/Inf reals, so
 * this mostly guards against a caller smuggling them in some other way). */
static inline void fz_json_finite(const json_t *j, const char *where)
{
    if (json_is_real(j)) {
        FZ_CHECK(isfinite(json_real_value(j)), "%s: non-finite real", where);
    } else if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) fz_json_finite(v, where);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) fz_json_finite(v, where);
    }
}

/* A failure must say why: an HTTP status, at least one error, and each
 * error's pointer an RFC 6901 pointer ("" or starting with '/') with a
 * non-empty detail; the problem document renders. */
static inline void fz_check_error(const api_status *st, const char *where)
{
    FZ_CHECK(st->status >= 400 && st->status <= 599, "%s: failed with status %d", where, st->status);
    FZ_CHECK(st->n_errors >= 1 && st->n_errors <= API_MAX_ERRORS, "%s: %d errors", where, st->n_errors);
    for (int i = 0; i < st->n_errors; i++) {
        const api_error *e = &st->errors[i];
        FZ_CHECK(memchr(e->pointer, 0, sizeof e->pointer) && memchr(e->detail, 0, sizeof e->detail),
                 "%s: unterminated error text", where);
        FZ_CHECK(e->pointer[0] == 0 || e->pointer[0] == '/', "%s: pointer '%s'", where, e->pointer);
        FZ_CHECK(e->detail[0] != 0, "%s: empty detail at '%s'", where, e->pointer);
    }
    json_t *p = api_problem_json(st);
    FZ_CHECK(p != NULL, "%s: no problem document", where);
    char *s = json_dumps(p, JSON_COMPACT);
    FZ_CHECK(s != NULL, "%s: problem document does not serialize", where);
    free(s);
    json_decref(p);
}

#endif
