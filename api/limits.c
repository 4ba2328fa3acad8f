/* api/limits.c -- the structural limits of a request document, checked the
 * same way by the daemon and the CLI (api.h, "limits"):
 *
 *  - nesting depth: API_MAX_DEPTH containers. Checked on the raw bytes
 *    before jansson parses them (api_parse_json), so a deep document never
 *    reaches jansson's recursive descent (its own limit, 2048 levels, is a
 *    compile-time constant and answers "malformed"), and again on the parsed
 *    tree (api_check_limits) for documents built in memory;
 *  - string length: API_MAX_STRING bytes, values and object keys alike;
 *  - container size: API_MAX_ARRAY elements, API_MAX_MEMBERS members.
 *
 * Every violation is a 422 whose pointer is the offending value (or, for a
 * key, the member it names). The field-level limits (devices, layers,
 * widths, experts, ...) are checked where each field is read. */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "jsonv.h"

/* ---- the byte pre-scan ----------------------------------------------------- */

/* One open container of the scan: the segment it adds to the pointer of the
 * value being read inside it. Keys are kept short (pointers are 255 bytes). */
typedef struct scan_frame {
    char is_array;
    char in_key;      /* object: the string being read is a key */
    size_t index;     /* array: index of the current element */
    char key[40];     /* object: the current key, RFC 6901-escaped, truncated */
    size_t key_len;
} scan_frame;

static void scan_pointer(const scan_frame *f, int n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n && len + 1 < cap; i++) {
        int w = f[i].is_array ? snprintf(out + len, cap - len, "/%zu", f[i].index)
                              : snprintf(out + len, cap - len, "/%.*s", (int)f[i].key_len, f[i].key);
        if (w < 0) break;
        len += (size_t)w;
    }
}

static void key_push(scan_frame *f, char c)
{
    if (c == '~' || c == '/') {
        if (f->key_len + 2 > sizeof f->key) return;
        f->key[f->key_len++] = '~';
        f->key[f->key_len++] = c == '~' ? '0' : '1';
        return;
    }
    if (f->key_len + 1 <= sizeof f->key) f->key[f->key_len++] = c;
}

/* Scan text[0..len): the open containers are left in f[0..*depth_out).
 * -1 (st set) when nesting passes API_MAX_DEPTH. */
static int scan_bytes(const char *text, size_t len, api_status *st, scan_frame *f, int *depth_out)
{
    int depth = 0;
    int in_string = 0, escaped = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            scan_frame *top = depth ? &f[depth - 1] : NULL;
            int key = top && !top->is_array && top->in_key;
            if (escaped) {
                escaped = 0;
                if (key) key_push(top, c); /* \" \\ \/ as themselves; others approximated */
            } else if (c == '\\') {
                escaped = 1;
            } else if (c == '"') {
                in_string = 0;
                if (key) top->in_key = 0;
            } else if (key) {
                key_push(top, c);
            }
            continue;
        }
        switch (c) {
        case '"':
            in_string = 1;
            break;
        case '{':
        case '[':
            if (depth == API_MAX_DEPTH) {
                char p[256];
                scan_pointer(f, depth, p, sizeof p);
                api_fail(st, 422, p, "nested deeper than %d levels of objects and arrays (limit)",
                         API_MAX_DEPTH);
                return -1;
            }
            memset(&f[depth], 0, sizeof f[depth]);
            f[depth].is_array = c == '[';
            f[depth].in_key = c == '{';
            depth++;
            break;
        case '}':
        case ']':
            if (depth) depth--; /* unbalanced text is jansson's to report */
            break;
        case ',':
            if (depth) {
                scan_frame *top = &f[depth - 1];
                if (top->is_array) top->index++;
                else { top->in_key = 1; top->key_len = 0; }
            }
            break;
        default:
            break;
        }
    }
    *depth_out = depth;
    return 0;
}

int api_scan_depth(const char *text, size_t len, api_status *st)
{
    scan_frame f[API_MAX_DEPTH];
    int depth = 0;
    return scan_bytes(text, len, st, f, &depth);
}

/* The JSON pointer of the number that ends at (or just before) byte pos:
 * jansson stops at a number it cannot hold (beyond int64, or beyond a
 * double) and says only where. The text before it parsed, so the scan's
 * open containers name the value. */
static void number_pointer(const char *text, size_t len, size_t pos, char *out, size_t cap)
{
    size_t i = pos < len ? pos : len;
    while (i > 0 && !strchr("0123456789.eE+-", text[i - 1])) i--;
    while (i > 0 && strchr("0123456789.eE+-", text[i - 1])) i--;
    scan_frame f[API_MAX_DEPTH];
    int depth = 0;
    api_status tmp;
    api_status_init(&tmp);
    out[0] = '\0';
    if (scan_bytes(text, i, &tmp, f, &depth) == 0) scan_pointer(f, depth, out, cap);
}

/* ---- the tree walk ---------------------------------------------------------- */

static int walk(json_t *v, const char *ptr, int depth, api_status *st)
{
    char p[256];
    if ((json_is_object(v) || json_is_array(v)) && depth > API_MAX_DEPTH) {
        api_fail(st, 422, ptr, "nested deeper than %d levels of objects and arrays (limit)", API_MAX_DEPTH);
        return -1;
    }
    switch (json_typeof(v)) {
    case JSON_STRING:
        if (json_string_length(v) > API_MAX_STRING) {
            api_fail(st, 422, ptr, "string of %zu bytes is longer than the limit of %d",
                     json_string_length(v), API_MAX_STRING);
            return -1;
        }
        return 0;
    case JSON_OBJECT: {
        if (json_object_size(v) > API_MAX_MEMBERS) {
            api_fail(st, 422, ptr, "object of %zu members is larger than the limit of %d",
                     json_object_size(v), API_MAX_MEMBERS);
            return -1;
        }
        const char *k;
        size_t klen;
        json_t *m;
        json_object_keylen_foreach(v, k, klen, m) {
            jv_ptr(p, sizeof p, ptr, k);
            if (klen > API_MAX_STRING) {
                api_fail(st, 422, p, "key of %zu bytes is longer than the limit of %d", klen,
                         API_MAX_STRING);
                return -1;
            }
            if (walk(m, p, depth + 1, st)) return -1;
        }
        return 0;
    }
    case JSON_ARRAY: {
        if (json_array_size(v) > API_MAX_ARRAY) {
            api_fail(st, 422, ptr, "array of %zu elements is larger than the limit of %d",
                     json_array_size(v), API_MAX_ARRAY);
            return -1;
        }
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (walk(e, jv_ptr_i(p, sizeof p, ptr, i), depth + 1, st)) return -1;
        }
        return 0;
    }
    default:
        return 0;
    }
}

int api_check_limits(json_t *doc, api_status *st)
{
    return doc ? walk(doc, "", 1, st) : 0;
}

json_t *api_parse_json(const char *text, size_t len, size_t flags, api_status *st)
{
    if (api_scan_depth(text ? text : "", text ? len : 0, st)) return NULL;
    json_error_t err;
    json_t *doc = json_loadb(text ? text : "", text ? len : 0, flags, &err);
    if (!doc && (strstr(err.text, "too big") || strstr(err.text, "overflow"))) {
        /* valid JSON (RFC 8259 sets no range), a number no field takes:
         * 422 at its pointer (issue 14 item 12) */
        char p[256];
        number_pointer(text ? text : "", text ? len : 0, (size_t)err.position, p, sizeof p);
        api_fail(st, 422, p, "number out of range (%s): beyond every field's limit", err.text);
        return NULL;
    }
    if (!doc) {
        api_fail(st, 400, "", "malformed JSON at line %d, column %d: %s", err.line, err.column,
                 err.text);
        snprintf(st->title, sizeof st->title, "Malformed JSON");
        return NULL;
    }
    if (api_check_limits(doc, st)) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}
