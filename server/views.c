/* server/views.c -- the documents a result is served as: the status
 * document ({"id", "status", ..., "result"}), its slices by rank (cut
 * through a per-result index of the configurations, not a re-parse), the
 * CSV and its row slices, RFC 3339 times. Split from server/http.c (issue
 * 15): the result cache (server/rcache.c) renders a done document here
 * instead of calling up into the HTTP layer. */
#include "srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"

void srv_iso_time(char *out, size_t n, int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

int srv_set_time(json_t *o, const char *key, int64_t ms)
{
    if (ms <= 0) return json_object_set_new(o, key, json_null());
    char t[80];
    srv_iso_time(t, sizeof t, ms);
    return json_object_set_new(o, key, json_string(t));
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* The byte after the string starting at p ('"'), or NULL. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\') p++;
        else if (*p == '"') return p + 1;
    }
    return NULL;
}

/* The byte after the JSON value starting at p, or NULL. */
static const char *skip_value(const char *p, const char *end)
{
    int depth = 0;
    while (p < end) {
        char ch = *p;
        if (ch == '"') {
            if (!(p = skip_string(p, end))) return NULL;
            if (depth == 0) return p;
            continue;
        }
        if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '}' || ch == ']') {
            if (depth == 0) return p; /* a scalar ended by its container */
            if (--depth == 0) return p + 1;
        } else if (depth == 0 && (ch == ',' || ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')) {
            return p; /* a number, true, false or null ended */
        }
        p++;
    }
    return depth == 0 ? p : NULL;
}

/* Find the top-level "configs" array of the object text: its '[' and the
 * byte after its ']'. 0 when found. */
static int find_configs(const char *text, const char *end, const char **open, const char **close)
{
    const char *p = skip_ws(text, end);
    if (p >= end || *p != '{') return -1;
    for (p = skip_ws(p + 1, end); p < end && *p == '"';) {
        const char *k = p, *ke = skip_string(p, end);
        if (!ke) return -1;
        p = skip_ws(ke, end);
        if (p >= end || *p != ':') return -1;
        const char *v = skip_ws(p + 1, end), *ve = skip_value(v, end);
        if (!ve || ve == v) return -1;
        if (ke - k == 9 && !memcmp(k, "\"configs\"", 9)) {
            if (*v != '[') return -1;
            *open = v;
            *close = ve;
            return 0;
        }
        p = skip_ws(ve, end);
        if (p < end && *p == ',') p = skip_ws(p + 1, end);
    }
    return -1;
}

/* Where result.configs[i] lie in the text: {open, close, n, start_0,
 * end_0, ..., start_n-1, end_n-1}, byte offsets ('[' and the byte after
 * ']'); malloc'd, NULL when the text is not as expected. Built once per
 * cached result (srv_rentry_index), so a later slice is a copy of the
 * bytes it keeps. */
size_t *srv_configs_index(const char *text, size_t len)
{
    const char *end = text + len, *open, *close;
    if (find_configs(text, end, &open, &close) != 0) return NULL;
    size_t cap = 64, n = 0;
    size_t *ix = malloc((3 + 2 * cap) * sizeof *ix);
    if (!ix) return NULL;
    const char *p = skip_ws(open + 1, close);
    while (p < close && *p != ']') {
        const char *e = skip_value(p, close);
        if (!e || e == p) {
            free(ix);
            return NULL;
        }
        if (n == cap) {
            size_t *g = realloc(ix, (3 + 4 * cap) * sizeof *ix);
            if (!g) {
                free(ix);
                return NULL;
            }
            ix = g;
            cap *= 2;
        }
        ix[3 + 2 * n] = (size_t)(p - text);
        ix[4 + 2 * n] = (size_t)(e - text);
        n++;
        p = skip_ws(e, close);
        if (p < close && *p == ',') p = skip_ws(p + 1, close);
    }
    ix[0] = (size_t)(open - text);
    ix[1] = (size_t)(close - text);
    ix[2] = n;
    return ix;
}

/* The result text with configs cut to [offset, offset + top_k), by index. */
static char *slice_indexed(const char *text, size_t len, const size_t *ix, int top_k, int offset)
{
    size_t n = ix[2], from = offset > 0 ? (size_t)offset : 0;
    size_t count = top_k >= 0 ? (size_t)top_k : n;
    if (from > n) from = n;
    if (count > n - from) count = n - from;
    size_t head = ix[0] + 1, tail = len - (ix[1] - 1); /* through '[', from ']' */
    size_t mid = count ? ix[4 + 2 * (from + count - 1)] - ix[3 + 2 * from] : 0;
    char *out = malloc(head + mid + tail + 1);
    if (!out) return NULL;
    memcpy(out, text, head);
    if (mid) memcpy(out + head, text + ix[3 + 2 * from], mid);
    memcpy(out + head + mid, text + ix[1] - 1, tail);
    out[head + mid + tail] = '\0';
    return out;
}

/* Slice result.configs to [offset, offset + top_k). ix: the text's index
 * when the cache has one. Returns a new result text or NULL (then the
 * full text is used). */
char *srv_result_slice(const char *text, size_t len, const size_t *ix, int top_k, int offset)
{
    if (ix) return slice_indexed(text, len, ix, top_k, offset);
    size_t *mine = srv_configs_index(text, len);
    if (mine) {
        char *out = slice_indexed(text, len, mine, top_k, offset);
        free(mine);
        return out;
    }
    json_t *res = json_loadb(text, len, 0, NULL);
    if (!res) return NULL;
    json_t *configs = json_object_get(res, "configs");
    if (json_is_array(configs)) {
        size_t n = json_array_size(configs);
        size_t from = offset > 0 ? (size_t)offset : 0;
        size_t count = top_k >= 0 ? (size_t)top_k : n;
        json_t *out = json_array();
        for (size_t i = from; out && i < n && i - from < count; i++)
            json_array_append(out, json_array_get(configs, i));
        if (out) json_object_set_new(res, "configs", out);
    }
    char *s = json_dumps(res, JSON_COMPACT);
    json_decref(res);
    return s;
}

/* The status document without the result: {"id",...,"finished_at"[,"error"]}. */
char *srv_view_head(const struct srv_view *v, int done, int failed)
{
    json_t *doc = json_object();
    int bad = !doc;
    bad |= json_object_set_new(doc, "id", json_string(v->id));
    bad |= json_object_set_new(doc, "status", json_string(done ? "done" : v->status));
    bad |= json_object_set_new(doc, "progress", json_real(done ? 1.0 : v->progress));
    bad |= json_object_set_new(doc, "evaluated", json_integer(v->evaluated));
    bad |= srv_set_time(doc, "created_at", v->created_ms);
    bad |= srv_set_time(doc, "started_at", v->started_ms);
    bad |= srv_set_time(doc, "finished_at", v->finished_ms);
    if (failed) {
        json_t *err = v->error ? json_loads(v->error, 0, NULL) : NULL;
        if (!err) err = json_pack("{s:s,s:s,s:i,s:s,s:[]}", "type", api_problem_type(API_P_INTERNAL), "title",
                                  "Search failed", "status", 500, "detail", "the search failed",
                                  "errors");
        bad |= json_object_set_new(doc, "error", err);
    }
    char *head = bad ? NULL : json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return head;
}

/* head + ,"result": + result + } (the head's closing brace dropped). */
char *srv_view_splice(const char *head, size_t hlen, const char *rt, size_t rlen,
                           size_t *len, size_t *result_off)
{
    char *body = malloc(hlen + rlen + 16);
    if (!body) return NULL;
    memcpy(body, head, hlen - 1);
    size_t n = hlen - 1;
    memcpy(body + n, ",\"result\":", 10);
    n += 10;
    if (result_off) *result_off = n;
    memcpy(body + n, rt, rlen);
    n += rlen;
    body[n++] = '}';
    body[n] = '\0';
    *len = n;
    return body;
}

char *srv_render_done_doc(const struct srv_view *v, const char *result, size_t *len,
                          size_t *result_off)
{
    char *head = srv_view_head(v, 1, 0);
    if (!head) return NULL;
    char *body = srv_view_splice(head, strlen(head), result, strlen(result), len, result_off);
    free(head);
    return body;
}

char *srv_result_csv(const char *result, size_t len)
{
    json_t *res = json_loadb(result, len, 0, NULL);
    char *csv = res ? api_result_csv(res) : NULL;
    json_decref(res);
    return csv;
}

/* Keep the header line and rows [offset, offset + top_k) of csv, in place. */
void srv_csv_slice(char *csv, int top_k, int offset)
{
    char *p = strchr(csv, '\n');
    if (!p) return;
    char *start = p + 1, *q = start;
    int row = 0, first = offset > 0 ? offset : 0;
    char *keep_from = NULL, *keep_to = NULL;
    while (*q) {
        char *nl = strchr(q, '\n');
        char *next = nl ? nl + 1 : q + strlen(q);
        if (row == first) keep_from = q;
        row++;
        if (top_k >= 0 && row == first + top_k) {
            keep_to = next;
            break;
        }
        q = next;
    }
    if (!keep_from) keep_from = keep_to = start;
    if (!keep_to) keep_to = start + strlen(start);
    memmove(start, keep_from, (size_t)(keep_to - keep_from));
    start[keep_to - keep_from] = '\0';
}
