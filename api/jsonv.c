/* api/jsonv.c -- the typed field readers of api/jsonv.h: a value or its
 * default, else a 422 with the field's JSON pointer. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "jsonv.h"

int jv_known(json_t *obj, const char *ptr, const char *what, const char *const *known,
             api_status *st)
{
    return jv_known_also(obj, ptr, what, known, NULL, st);
}

/* Levenshtein distance of a and b (insertions, deletions, substitutions of
 * bytes), or 99 for names longer than 63 bytes. */
static int edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63) return 99;
    int row[64];
    for (size_t j = 0; j <= m; j++) row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[m];
}

const char *jv_nearest(const char *key, const char *const *known)
{
    /* one edit for short names, two from 5 bytes on. Of the nearest, one
     * that holds the key or is held in it ("vp": vpp, not dp or pp); where
     * that leaves more than one, or none among several, no guess */
    int limit = strlen(key) < 5 ? 1 : 2, best = limit + 1, n = 0, n_in = 0;
    const char *near = NULL, *near_in = NULL;
    for (int i = 0; known[i]; i++) {
        if (known[i][0] == '_') continue; /* internal: not offered */
        int d = edit_distance(key, known[i]);
        if (d > best) continue;
        if (d < best) best = d, n = 0, n_in = 0;
        n++;
        near = known[i];
        if (strstr(known[i], key) || strstr(key, known[i])) n_in++, near_in = known[i];
    }
    if (n == 1) return near;
    return n_in == 1 ? near_in : NULL;
}

int jv_known_also(json_t *obj, const char *ptr, const char *what, const char *const *known,
                  const char *const *also, api_status *st)
{
    char list[512] = "";
    size_t len = 0;
    for (int i = 0; known[i]; i++) {
        if (known[i][0] == '_') continue; /* internal: not offered */
        int w = snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", known[i]);
        if (w < 0 || (size_t)w >= sizeof list - len) break;
        len += (size_t)w;
    }
    int bad = 0;
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++) ok = !strcmp(k, known[i]);
        for (int i = 0; also && also[i] && !ok; i++) ok = !strcmp(k, also[i]);
        if (ok) continue;
        char p[256];
        const char *near = jv_nearest(k, known);
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, k), "unknown field; %s has %s%s%s%s", what, list,
                 near ? "; did you mean \"" : "", near ? near : "", near ? "\"?" : "");
        bad = -1;
    }
    return bad;
}

const char *jv_ptr(char *buf, size_t n, const char *ptr, const char *key)
{
    size_t len = (size_t)snprintf(buf, n, "%s/", ptr ? ptr : "");
    for (const char *k = key; *k && len + 3 < n; k++) {
        if (*k == '~') { buf[len++] = '~'; buf[len++] = '0'; }
        else if (*k == '/') { buf[len++] = '~'; buf[len++] = '1'; }
        else buf[len++] = *k;
    }
    buf[len < n ? len : n - 1] = '\0';
    return buf;
}

const char *jv_ptr_i(char *buf, size_t n, const char *ptr, size_t index)
{
    snprintf(buf, n, "%s/%zu", ptr ? ptr : "", index);
    return buf;
}

/* obj[key] (obj an object, the value not null) into *v: 1. Else 0 when
 * the field may be absent (the reader takes its default), -1 with a 422
 * ("required <kind>field is missing") when it may not. */
static int jv_field(json_t *obj, const char *key, const char *ptr, int required, const char *kind,
                    json_t **v, api_status *st)
{
    *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    if (*v && !json_is_null(*v)) return 1;
    if (!required) return 0;
    char p[256];
    api_fail(st, 422, jv_ptr(p, sizeof p, ptr, key), "required %sfield is missing", kind);
    return -1;
}

int jv_int(json_t *obj, const char *key, const char *ptr, int required, int64_t def,
           int64_t min, int64_t max, int64_t *out, api_status *st)
{
    char p[256];
    json_t *v;
    int has = jv_field(obj, key, ptr, required, "integer ", &v, st);
    if (has == 0) *out = def;
    if (has <= 0) return has;
    double d;
    if (json_is_integer(v)) d = (double)json_integer_value(v);
    else if (json_is_real(v)) d = json_real_value(v);
    else {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, key), "must be an integer");
        return -1;
    }
    if (!isfinite(d) || d != floor(d)) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, key), "must be an integer, got %g", d);
        return -1;
    }
    if (d < (double)min || d > (double)max) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, key), "must be in [%lld, %lld], got %.17g",
                 (long long)min, (long long)max, d);
        return -1;
    }
    *out = json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)d;
    return 0;
}

int jv_num(json_t *obj, const char *key, const char *ptr, int required, double def, double min,
           double max, double *out, api_status *st)
{
    char p[256];
    json_t *v;
    int has = jv_field(obj, key, ptr, required, "number ", &v, st);
    if (has == 0) *out = def;
    if (has <= 0) return has;
    if (!json_is_number(v)) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, key), "must be a number");
        return -1;
    }
    double d = json_number_value(v);
    if (!isfinite(d) || d < min || d > max) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, key), "must be in [%g, %g], got %g", min, max,
                 d);
        return -1;
    }
    *out = d;
    return 0;
}

int jv_bool(json_t *obj, const char *key, const char *ptr, int required, int def, int *out,
            api_status *st)
{
    char p[256];
    json_t *v;
    int has = jv_field(obj, key, ptr, required, "boolean ", &v, st);
    if (has == 0) *out = def;
    if (has <= 0) return has;
    if (!json_is_boolean(v)) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, key), "must be true or false");
        return -1;
    }
    *out = json_is_true(v);
    return 0;
}

int jv_enum(json_t *obj, const char *key, const char *ptr, int required, int def,
            const char *const *choices, int *out, api_status *st)
{
    char p[256];
    json_t *v;
    int has = jv_field(obj, key, ptr, required, "", &v, st);
    if (has == 0) *out = def;
    if (has <= 0) return has;
    if (json_is_string(v)) {
        for (int i = 0; choices[i]; i++)
            if (strcmp(json_string_value(v), choices[i]) == 0) {
                *out = i;
                return 0;
            }
    }
    char list[256] = "";
    for (int i = 0; choices[i]; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, choices[i], sizeof list - strlen(list) - 1);
    }
    api_fail(st, 422, jv_ptr(p, sizeof p, ptr, key), "must be one of: %s", list);
    return -1;
}
