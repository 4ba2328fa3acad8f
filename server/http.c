/* server/http.c -- the HTTP side of mfud: libmicrohttpd callbacks, routing,
 * bounded request bodies, validation of POST bodies, and queueing every
 * answer (ETag/304, CORS, the cached or sliced body). The answer a request
 * carries is server/answer.c's, the documents a result is served as
 * server/views.c's, resuming and quiescing connections server/conn.c's.
 *
 * DESIGN
 * libmicrohttpd runs its own polling thread(s). Routes that need no shared
 * state (health, metrics, presets, the contract, routing errors, request
 * validation) are answered right here. Routes that need the job table or the
 * database are handed to the libuv loop with the connection suspended
 * (srv_jobs_submit); the loop fills r->answer and resumes the connection, and
 * the handler is called again to render and queue the response. Rendering
 * (status documents, slicing, CSV) happens here, on the HTTP threads, so the
 * single loop thread only does lookups and bookkeeping.
 */
#include "srv.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api.h"
#include "sha256.h"

static const struct srv_config *cfg;

#define ALLOW_HEADERS "Content-Type, If-None-Match, Prefer, Authorization, Accept"
/* an oversized body announced without Expect is read and dropped up to
 * this, so the client reads the 413 (issue 14 item 6) */
#define DISCARD_MAX_BYTES (256ull << 20)

/* ---- answers ----------------------------------------------------------- */





/* ---- helpers ----------------------------------------------------------- */



/* Does the If-None-Match list match etag (weak comparison, RFC 9110 13.1.2)? */
static int etag_matches(const char *inm, const char *etag)
{
    if (!inm) return 0;
    const char *e = etag;
    if (strncmp(e, "W/", 2) == 0) e += 2;
    size_t elen = strlen(e);
    const char *p = inm;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (*p == '*') return 1;
        if (strncmp(p, "W/", 2) == 0) p += 2;
        const char *q = p;
        while (*q && *q != ',') q++;
        const char *end = q;
        while (end > p && (end[-1] == ' ' || end[-1] == '\t')) end--;
        if ((size_t)(end - p) == elen && strncmp(p, e, elen) == 0) return 1;
        p = q;
    }
    return 0;
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* ---- rendering a job view ---------------------------------------------- */

/* Slicing a stored result without parsing it (issue 14 item 8): a 4 MB
 * result took 130-210 ms to load into jansson and dump again on an HTTP
 * thread for every ?top_k GET; scanning its text for the bounds of
 * configs[offset .. offset + top_k) costs one pass over the bytes (about
 * 100 times less) and builds no tree. The text is one the daemon itself
 * stored (json_dumps output, checked by its CRC-32), so it is valid JSON;
 * anything unexpected still falls back to parsing. */













static void entry_unref_cb(void *cls)
{
    srv_rcache_unref(cls);
}

/* A response whose body is part of a cached entry (no copy): the response
 * holds a reference to the entry until libmicrohttpd frees it. */
static struct MHD_Response *entry_response(struct srv_rentry *e, const char *data, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback_cls(
        len, (void *)data, entry_unref_cb, srv_rcache_ref(e));
    if (!resp) srv_rcache_unref(e);
    return resp;
}

/* The ETag of a view as r asks for it. Done results are immutable: strong
 * tags, one per representation (JSON, CSV, each slice). */
static void view_etag(const struct srv_req *r, int done, int failed, char *etag, size_t etaglen)
{
    const struct srv_view *v = &r->view;
    int sliced = done && (r->top_k >= 0 || r->res_offset > 0);
    static const char *const ART[] = {"", "-gap", "-memory", "-timeline", "-compare", "-trace"};
    if (done && r->artifact)
        snprintf(etag, etaglen, "\"%s%s-%d\"", v->id, ART[r->artifact], r->rank);
    else if (done)
        snprintf(etag, etaglen, "\"%s%s%s\"", v->id, r->want_csv ? "-csv" : "",
                 sliced ? "-s" : "");
    else if (failed)
        snprintf(etag, etaglen, "\"%s-failed\"", v->id);
    else
        snprintf(etag, etaglen, "W/\"%s-%s-%lld\"", v->id, v->status, (long long)v->evaluated);
    if (sliced) {
        /* Different slices are different representations. */
        size_t n = strlen(etag);
        snprintf(etag + n - 1, etaglen - n + 1, "-%d-%d\"", r->top_k, r->res_offset);
    }
}


/* A response that takes ownership of a malloc'd body (freed if MHD fails). */
static struct MHD_Response *owned_response(char *body, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) free(body);
    return resp;
}
/* A chart or the predicted trace, drawn from a done result's text. */
static struct MHD_Response *render_artifact(struct srv_req *r, const char *result, size_t result_len, int *code)
{
    json_t *doc = result ? json_loadb(result, result_len, 0, NULL) : NULL;
    char *body = NULL;
    const char *type = "image/svg+xml";
    switch (r->artifact) {
    case SRV_ART_GAP: body = doc ? api_svg_gap(doc, r->rank) : NULL; break;
    case SRV_ART_MEMORY: body = doc ? api_svg_memory(doc, r->rank) : NULL; break;
    case SRV_ART_TIMELINE: body = doc ? api_svg_timeline(doc, r->rank) : NULL; break;
    case SRV_ART_COMPARE: body = doc ? api_svg_compare(doc) : NULL; break;
    default: {
        json_t *t = doc ? api_trace_export_result(doc, r->rank) : NULL;
        body = t ? json_dumps(t, JSON_COMPACT) : NULL;
        json_decref(t);
        type = "application/json";
    }
    }
    json_decref(doc);
    if (!body) {
        /* the result has no such configuration (or is not that kind) */
        *code = 404;
        return NULL;
    }
    *code = 200;
    struct MHD_Response *resp = owned_response(body, strlen(body));
    if (resp) MHD_add_response_header(resp, "Content-Type", type);
    else *code = 500;
    return resp;
}

/* A done result's ranked table as CSV (the cached rendering when whole). */
static struct MHD_Response *render_csv(struct srv_req *r, struct srv_rentry *e, const char *result,
                                       size_t result_len, int sliced, int *code)
{
    char *csv = NULL;
    struct MHD_Response *resp = NULL;
    if (e) {
        size_t n = 0;
        const char *cached = srv_rentry_csv(e, &n, srv_result_csv);
        if (cached && !sliced) resp = entry_response(e, cached, n);
        else if (cached) csv = strdup(cached);
    } else if (result) {
        csv = srv_result_csv(result, result_len);
    }
    if (csv) {
        if (sliced) srv_csv_slice(csv, r->top_k, r->res_offset);
        resp = owned_response(csv, strlen(csv));
    }
    if (!resp) {
        *code = 500;
        return NULL;
    }
    *code = 200;
    MHD_add_response_header(resp, "Content-Type", "text/csv; charset=utf-8; header=present");
    return resp;
}

/* A done result's document with configurations [offset, offset + top_k)
 * only: the cached document up to its result, then the slice. NULL when
 * out of memory. */
static char *sliced_document(struct srv_req *r, struct srv_rentry *e, const char *result, size_t result_len,
                             int sliced, size_t *len)
{
    const size_t *ix = sliced && e ? srv_rentry_index(e, srv_configs_index) : NULL;
    char *sliced_text = sliced ? srv_result_slice(result, result_len, ix, r->top_k, r->res_offset) : NULL;
    if (sliced && !sliced_text) return NULL;
    const char *rt = sliced ? sliced_text : result;
    char *body;
    *len = 0;
    if (e) {
        const char *doc = srv_rentry_body(e, NULL);
        size_t pre = (size_t)(result - doc), rlen = strlen(rt);
        body = malloc(pre + rlen + 2);
        if (body) {
            memcpy(body, doc, pre);
            memcpy(body + pre, rt, rlen);
            body[pre + rlen] = '}';
            body[pre + rlen + 1] = '\0';
            *len = pre + rlen + 1;
        }
    } else {
        char *head = srv_view_head(&r->view, 1, 0);
        body = head ? srv_view_splice(head, strlen(head), rt, strlen(rt), len, NULL) : NULL;
        free(head);
    }
    free(sliced_text);
    return body;
}

static struct MHD_Response *render_view(struct srv_req *r, int *code, char *etag, size_t etaglen,
                                        int *retry_after)
{
    struct srv_view *v = &r->view;
    int done = strcmp(v->status, "done") == 0;
    int failed = strcmp(v->status, "failed") == 0;
    int sliced = done && (r->top_k >= 0 || r->res_offset > 0);
    struct srv_rentry *e = done ? r->entry : NULL;
    view_etag(r, done, failed, etag, etaglen);
    *retry_after = (done || failed) ? 0 : 1;
    /* 304 only answers conditional GET/HEAD (RFC 9110 13.1.2). */
    if ((r->method == SRV_M_GET || r->method == SRV_M_HEAD) &&
        etag_matches(r->if_none_match, etag)) {
        *code = 304;
        return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    const char *result = NULL;
    size_t result_len = 0;
    if (e) result = srv_rentry_result(e, &result_len);
    else if (done && v->result) {
        result = v->result;
        result_len = strlen(result);
    }
    if (done && r->artifact) return render_artifact(r, result, result_len, code);
    if (done && r->want_csv) return render_csv(r, e, result, result_len, sliced, code);

    *code = r->out_code ? r->out_code : 200;
    struct MHD_Response *resp = NULL;
    if (e && !sliced) {
        /* The whole cached document, shared. */
        size_t n = 0;
        const char *body = srv_rentry_body(e, &n);
        resp = entry_response(e, body, n);
    } else if (done && result) {
        size_t len = 0;
        char *body = sliced_document(r, e, result, result_len, sliced, &len);
        if (body) resp = owned_response(body, len);
    } else {
        char *head = srv_view_head(v, 0, failed);
        if (head) resp = owned_response(head, strlen(head));
    }
    if (!resp) {
        *code = 500;
        return NULL;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    return resp;
}

/* ---- queueing a response ----------------------------------------------- */

static void add_common_headers(struct MHD_Response *resp)
{
    srv_add_cors(resp); /* the one CORS policy (rcache.c) */
}

static enum MHD_Result queue_answer(struct srv_req *r)
{
    struct MHD_Response *resp = NULL;
    int code = r->out_code;
    char etag[160] = "";
    int retry_after = r->out_retry_after;

    if (r->answer == ANS_VIEW && r->entry && r->route == ROUTE_RESULT && !r->want_csv && !r->artifact &&
        r->top_k < 0 && r->res_offset <= 0 && strcmp(r->view.status, "done") == 0) {
        /* A cached result, as a whole: queue the entry's prebuilt response
         * (shared by every connection; not ours to destroy). */
        snprintf(etag, sizeof etag, "\"%s\"", r->view.id);
        int nm = (r->method == SRV_M_GET || r->method == SRV_M_HEAD) &&
                 etag_matches(r->if_none_match, etag);
        enum MHD_Result ret = MHD_NO;
        if (srv_rentry_queue(r->entry, r->conn, nm, &ret) == 0) {
            r->code = nm ? 304 : 200;
            return ret;
        }
        etag[0] = '\0';
    }
    if (r->answer == ANS_VIEW) {
        resp = render_view(r, &code, etag, sizeof etag, &retry_after);
        if (!resp && code == 404) {
            srv_answer_problem(r, 404, "Not Found",
                               "this result has no configuration of that rank to draw (or is not a search/comparison)");
            etag[0] = '\0';
            retry_after = 0;
        } else if (!resp) {
            srv_answer_problem(r, 500, "Internal Server Error", "could not render the result");
            code = 500;
            etag[0] = '\0';
            retry_after = 0;
        }
    }
    if (!resp) {
        if (!r->out_body) srv_answer_problem(r, 500, "Internal Server Error", "no answer");
        code = r->out_code;
        resp = MHD_create_response_from_buffer(r->out_len, r->out_body, MHD_RESPMEM_MUST_FREE);
        if (!resp) return MHD_NO;
        r->out_body = NULL; /* now owned by the response */
        if (r->out_ctype) MHD_add_response_header(resp, "Content-Type", r->out_ctype);
    }
    add_common_headers(resp);
    if (etag[0]) {
        MHD_add_response_header(resp, "ETag", etag);
        /* a 304 carries the Cache-Control its 200 would (RFC 9110
         * 15.4.5; they differed: issue 14 item 12) */
        MHD_add_response_header(resp, "Cache-Control",
                                (etag[0] == '"' && r->route == ROUTE_RESULT &&
                                 strcmp(r->view.status, "done") == 0)
                                    ? SRV_CACHE_IMMUTABLE
                                    : "no-cache");
    }
    if (r->answer == ANS_VIEW) {
        char loc[96];
        snprintf(loc, sizeof loc, "%s/%s", r->route == ROUTE_TRACES ? "/traces" : "/results", r->view.id);
        if (code == 202 || code == 201) MHD_add_response_header(resp, "Location", loc);
        int job_route = r->route == ROUTE_SEARCH || r->route == ROUTE_COMPARE;
        if (job_route) MHD_add_response_header(resp, "Content-Location", loc);
        if (job_route && r->prefer_async)
            MHD_add_response_header(resp, "Preference-Applied", "respond-async");
    }
    if (retry_after > 0 && (code == 202 || code == 503 || code == 200)) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", retry_after);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    if (code == 401) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"mfud\"");
    if (code == 405) {
        const char *a = (r->route == ROUTE_SEARCH || r->route == ROUTE_ROOFLINE ||
                         r->route == ROUTE_CALIBRATE || r->route == ROUTE_COMPARE || r->route == ROUTE_TRACES)
                            ? "POST, OPTIONS"
                            : "GET, HEAD, OPTIONS";
        MHD_add_response_header(resp, "Allow", a);
    }
    r->code = code;
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)code, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* A problem of type p (api/api.h) answered with code and title. */
static void answer_typed(struct srv_req *r, int code, api_problem p, const char *title, const char *detail)
{
    api_status st;
    api_status_init(&st);
    api_fail(&st, code, "", "%s", detail);
    snprintf(st.title, sizeof st.title, "%s", title);
    snprintf(st.type, sizeof st.type, "%s", api_problem_type(p));
    srv_answer_status(r, &st);
}

static enum MHD_Result queue_problem(struct srv_req *r, int code, const char *title,
                                     const char *detail)
{
    srv_answer_problem(r, code, title, detail);
    return queue_answer(r);
}

static enum MHD_Result queue_static(struct srv_req *r, int code, const char *ctype,
                                    const char *data, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    if (ctype) MHD_add_response_header(resp, "Content-Type", ctype);
    add_common_headers(resp);
    r->code = code;
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)code, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result queue_json(struct srv_req *r, int code, json_t *body)
{
    srv_answer_json(r, code, body);
    return queue_answer(r);
}

/* ---- routing ------------------------------------------------------------ */

static int is_hex64(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) return 0;
    return s[64] == '\0';
}

static enum srv_route match_route(const char *url, char *id_out, int *artifact)
{
    *artifact = SRV_ART_NONE;
    static const struct {
        const char *path;
        enum srv_route route;
    } table[] = {
        {"/search", ROUTE_SEARCH},
        {"/results", ROUTE_RESULTS},
        {"/roofline", ROUTE_ROOFLINE},
        {"/calibrate", ROUTE_CALIBRATE},
        {"/compare", ROUTE_COMPARE},
        {"/traces", ROUTE_TRACES},
        {"/presets/models", ROUTE_PRESET_MODELS},
        {"/presets/hardware", ROUTE_PRESET_HARDWARE},
        {"/healthz", ROUTE_HEALTHZ},
        {"/livez", ROUTE_HEALTHZ},
        {"/readyz", ROUTE_READYZ},
        {"/metrics", ROUTE_METRICS},
        {"/openapi.yaml", ROUTE_OPENAPI},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(url, table[i].path) == 0) return table[i].route;
    if (strncmp(url, "/results/", 9) == 0 && strlen(url + 9) == 64 && is_hex64(url + 9)) {
        memcpy(id_out, url + 9, 65);
        return ROUTE_RESULT;
    }
    /* /traces/{id}: a stored trace measurement is a result like any other */
    if (strncmp(url, "/traces/", 8) == 0 && strlen(url + 8) == 64 && is_hex64(url + 8)) {
        memcpy(id_out, url + 8, 65);
        return ROUTE_RESULT;
    }
    /* /results/{id}/charts/{gap,memory,timeline,compare}.svg, /results/{id}/trace */
    if (strncmp(url, "/results/", 9) == 0 && strlen(url + 9) > 65 && url[9 + 64] == '/') {
        char id[65];
        memcpy(id, url + 9, 64);
        id[64] = '\0';
        const char *rest = url + 9 + 65;
        static const struct { const char *path; int art; } arts[] = {
            {"charts/gap.svg", SRV_ART_GAP}, {"charts/memory.svg", SRV_ART_MEMORY},
            {"charts/timeline.svg", SRV_ART_TIMELINE}, {"charts/compare.svg", SRV_ART_COMPARE},
            {"trace", SRV_ART_TRACE}};
        if (is_hex64(id))
            for (size_t i = 0; i < sizeof arts / sizeof arts[0]; i++)
                if (!strcmp(rest, arts[i].path)) {
                    memcpy(id_out, id, 65);
                    *artifact = arts[i].art;
                    return ROUTE_RESULT;
                }
    }
    /* /problems/{type}: a name of lowercase letters and '-' (a name that is
     * no problem type answers 404 in handle_problem) */
    if (strncmp(url, "/problems/", 10) == 0) {
        size_t n = strlen(url + 10);
        int ok = n >= 1 && n <= 64;
        for (size_t i = 0; ok && i < n; i++) ok = (url[10 + i] >= 'a' && url[10 + i] <= 'z') || url[10 + i] == '-';
        if (ok) {
            memcpy(id_out, url + 10, n + 1);
            return ROUTE_PROBLEM;
        }
    }
    if (srv_page_match(url, id_out)) return ROUTE_PAGE; /* GET /, /ui/{file} (server/page.c) */
    return ROUTE_OTHER;
}

static int route_allows(enum srv_route route, int method)
{
    if (method == SRV_M_OPTIONS) return 1;
    if (route == ROUTE_SEARCH || route == ROUTE_ROOFLINE || route == ROUTE_CALIBRATE ||
        route == ROUTE_COMPARE || route == ROUTE_TRACES)
        return method == SRV_M_POST;
    return method == SRV_M_GET || method == SRV_M_HEAD;
}

static int parse_method(const char *m)
{
    if (strcmp(m, "GET") == 0) return SRV_M_GET;
    if (strcmp(m, "HEAD") == 0) return SRV_M_HEAD;
    if (strcmp(m, "POST") == 0) return SRV_M_POST;
    if (strcmp(m, "OPTIONS") == 0) return SRV_M_OPTIONS;
    return SRV_M_OTHER;
}

/* JSON bodies: application/json, any +json type, or none. curl -d sends
 * application/x-www-form-urlencoded by default; we accept it too (the body is
 * still parsed as JSON) so the README's `curl -d @req.json` works. */
/* POST /traces: the trace as the profiler wrote it, plain JSON or gzip. */
static int trace_media_type_ok(const char *ct)
{
    if (!ct || !*ct) return 1;
    size_t n = strcspn(ct, ";");
    while (n > 0 && ct[n - 1] == ' ') n--;
    static const char *const ok[] = {"application/json", "application/gzip", "application/x-gzip",
                                     "application/octet-stream"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (n == strlen(ok[i]) && strncasecmp(ct, ok[i], n) == 0) return 1;
    return 0;
}

/* The body limit of a route: traces have their own. */
static size_t body_limit(const struct srv_req *r)
{
    return r->route == ROUTE_TRACES ? cfg->max_trace_bytes : cfg->max_body;
}

/* POST bodies are JSON, said so (issue 14 item 11): a form's types
 * (application/x-www-form-urlencoded, text/plain, multipart) are what a web
 * page may send another origin without a CORS preflight, so they are
 * refused, and so is a body without a type. */
static int media_type_ok(const char *ct)
{
    if (!ct || !*ct) return 0;
    size_t n = strcspn(ct, ";");
    while (n > 0 && ct[n - 1] == ' ') n--;
    if (n == 16 && strncasecmp(ct, "application/json", 16) == 0) return 1;
    if (n > 5 && strncasecmp(ct + n - 5, "+json", 5) == 0) return 1;
    return 0;
}

/* Prefer: respond-async, wait=N (RFC 7240). */
static void parse_prefer(struct srv_req *r, const char *h)
{
    r->wait_s = cfg->default_wait_s;
    if (!h) return;
    const char *p = h;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == ';') p++;
        if (strncasecmp(p, "respond-async", 13) == 0) r->prefer_async = 1;
        else if (strncasecmp(p, "wait=", 5) == 0) {
            char *end;
            double w = strtod(p + 5, &end);
            if (end != p + 5 && w >= 0) r->wait_s = w > cfg->max_wait_s ? cfg->max_wait_s : w;
        }
        while (*p && *p != ',' && *p != ';') p++;
    }
}

static int accepts_csv(const char *accept)
{
    if (!accept) return 0;
    for (const char *p = accept; *p; p++)
        if (strncasecmp(p, "text/csv", 8) == 0) return 1;
    return 0;
}

static enum MHD_Result bad_query(struct srv_req *r, const char *name, const char *detail)
{
    char d[300];
    snprintf(d, sizeof d, "query parameter %s: %s", name, detail);
    /* its own type: 400 otherwise means a malformed body */
    answer_typed(r, 400, API_P_INVALID_QUERY_PARAMETER, "Invalid query parameter", d);
    return queue_answer(r);
}

static int auth_ok(struct MHD_Connection *c)
{
    if (!cfg->auth_token[0]) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return 0;
    h += 7;
    size_t a = strlen(h), b = strlen(cfg->auth_token);
    unsigned diff = (unsigned)(a != b);
    for (size_t i = 0; i < a && i < b; i++) diff |= (unsigned)(h[i] ^ cfg->auth_token[i]);
    return diff == 0;
}

/* Summary name for GET /results: the preset the caller named, else the
 * "name" of the resolved description. */
static char *summary_name(json_t *norm, json_t *raw, const char *key)
{
    json_t *objs[] = {json_object_get(raw, key), json_object_get(norm, key)};
    for (int i = 0; i < 2; i++) {
        const char *s = json_string_value(json_object_get(objs[i], "preset"));
        if (!s) s = json_string_value(json_object_get(objs[i], "name"));
        if (!s) s = json_string_value(json_object_get(json_object_get(objs[i], "ir"), "name"));
        if (s) return strdup(s);
    }
    return NULL;
}

static void finish_body_parse(struct srv_req *r, json_t **out)
{
    api_status st0;
    api_status_init(&st0);
    /* depth (on the bytes, before jansson), string lengths, container sizes */
    *out = api_parse_json(r->body ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &st0);
    if (!*out) {
        srv_answer_status(r, &st0);
    } else if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        api_status st;
        api_status_init(&st);
        api_fail(&st, 422, "", "the request must be a JSON object");
        srv_answer_status(r, &st);
    }
}

static enum MHD_Result suspend_and_submit(struct srv_req *r)
{
    MHD_suspend_connection(r->conn);
    r->suspended = 1;
    if (srv_jobs_submit(r) != 0) {
        r->suspended = 0;
        MHD_resume_connection(r->conn);
        srv_answer_problem(r, 503, "Service Unavailable", "the server is shutting down");
        r->out_retry_after = 5;
    }
    return MHD_YES;
}

/* A done result in the memory cache: the answer is its entry (no loop
 * hop). hit: count it as a cache hit (a POST that was answered again). */
static int cached(struct srv_req *r, int hit)
{
    if (!(r->entry = srv_rcache_get(r->id, hit))) return 0;
    memcpy(r->view.id, r->id, 65);
    r->view.status = "done";
    r->answer = ANS_VIEW;
    r->out_code = 200;
    return 1;
}

static enum MHD_Result handle_search(struct srv_req *r)
{
    json_t *req = NULL;
    finish_body_parse(r, &req);
    if (!req) return queue_answer(r);
    api_status st;
    api_status_init(&st);
    int compare = r->route == ROUTE_COMPARE;
    /* a search is parsed once, here; the job runs the prepared object */
    json_t *norm = NULL;
    if (compare) {
        norm = api_compare_normalize(req, &st);
    } else if ((r->prep = api_prepare_search(req, &st))) {
        norm = json_incref(api_prepared_normal(r->prep));
    }
    if (!norm) {
        json_decref(req);
        if (!st.status) api_fail(&st, 422, "", "invalid request");
        srv_answer_status(r, &st);
        return queue_answer(r);
    }
    /* The server's time budget (--max-search-s): a longer deadline_s (the
     * default is 60 s) is clamped in the normal form, so the key is the one
     * of the search actually run, and in the input the job runs, so it stops
     * there with truncated: true, truncated_by: "deadline_s". */
    json_t *sopt = json_object_get(norm, "search");
    json_t *dl = json_object_get(sopt, "deadline_s");
    if (json_is_number(dl) && json_number_value(dl) > cfg->max_search_s) {
        json_object_set_new(sopt, "deadline_s", json_real(cfg->max_search_s));
        if (r->prep) api_prepared_set_deadline(r->prep, cfg->max_search_s);
        json_t *in = json_object_get(req, "search");
        if (!in) json_object_set_new(req, "search", in = json_object());
        if (json_is_object(in)) json_object_set_new(in, "deadline_s", json_real(cfg->max_search_s));
    }
    int key_rc = api_cache_key(norm, r->id);
    r->normalized = key_rc ? NULL : json_dumps(norm, JSON_COMPACT | JSON_SORT_KEYS);
    r->input = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
    /* a comparison is listed by its base's model, "compare" and its base's devices */
    json_t *sumn = compare ? json_object_get(req, "base") : norm, *sumr = compare ? sumn : req;
    r->model = summary_name(sumn, sumr, "model");
    r->hardware = compare ? strdup("compare") : summary_name(norm, req, "hardware");
    json_t *dev = json_object_get(sumn, "devices");
    r->devices = json_is_integer(dev) ? json_integer_value(dev) : (json_int_t)json_number_value(dev);
    json_decref(norm);
    json_decref(req);
    if (!r->normalized || !r->input) return queue_problem(r, 500, "Internal Server Error", "out of memory");
    parse_prefer(r, MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Prefer"));
    /* Done and in the memory cache: 200 here, no loop hop (the hit is
     * counted in /metrics now and in the database at the next flush). */
    if (cached(r, 1)) {
        srv_metrics_cache(1);
        return queue_answer(r);
    }
    return suspend_and_submit(r);
}

static enum MHD_Result handle_results_list(struct srv_req *r)
{
    struct MHD_Connection *c = r->conn;
    const char *s;
    r->limit = 20;
    if ((s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit")) &&
        parse_int(s, 1, 100, &r->limit) != 0)
        return bad_query(r, "limit", "must be an integer in 1..100");
    if ((s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "offset")) &&
        parse_int(s, 0, 1000, &r->offset) != 0)
        /* each skipped row costs the loop thread (issue 14 item 8): deep
         * pages go by cursor */
        return bad_query(r, "offset", "must be an integer in 0..1000 (page further with cursor, as next_cursor gives)");
    if ((s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "cursor"))) {
        /* cursor = <created_ms>.<id>, as returned in next_cursor */
        char *dot = strchr(s, '.');
        char *end;
        errno = 0;
        long long ms = strtoll(s, &end, 10);
        if (!dot || end != dot || errno || ms < 0 || strlen(dot + 1) != 64 || !is_hex64(dot + 1))
            return bad_query(r, "cursor", "not a cursor returned by this server");
        r->after_ms = ms;
        memcpy(r->after_id, dot + 1, 65);
        r->has_after = 1;
    }
    return suspend_and_submit(r);
}

static enum MHD_Result handle_result(struct srv_req *r)
{
    struct MHD_Connection *c = r->conn;
    const char *s;
    r->top_k = -1;
    r->res_offset = 0;
    if ((s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "top_k")) &&
        parse_int(s, 0, 100000, &r->top_k) != 0)
        return bad_query(r, "top_k", "must be an integer in 0..100000");
    if ((s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "offset")) &&
        parse_int(s, 0, 100000, &r->res_offset) != 0)
        return bad_query(r, "offset", "must be an integer in 0..100000");
    s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    if (s && strcmp(s, "csv") != 0 && strcmp(s, "json") != 0)
        return bad_query(r, "format", "must be json or csv");
    r->want_csv = (s && strcmp(s, "csv") == 0) ||
                  (!s && accepts_csv(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept")));
    r->rank = 1;
    if ((s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "rank")) &&
        parse_int(s, 0, 1000, &r->rank) != 0)
        return bad_query(r, "rank", "must be an integer in 0..1000 (0: the measured configuration)");
    if (r->artifact) {
        r->want_csv = 0;
        r->top_k = -1;
        r->res_offset = 0;
    }
    /* A finished result in the memory cache: answer here, no loop hop;
     * else, on a store HTTP threads may read (PostgreSQL), from the store
     * here (docs/storage.md). */
    if (cached(r, 0) || srv_jobs_read_done(r)) return queue_answer(r);
    return suspend_and_submit(r);
}

static enum MHD_Result handle_roofline(struct srv_req *r)
{
    json_t *req = NULL;
    finish_body_parse(r, &req);
    if (!req) return queue_answer(r);
    r->roofline_req = req;
    return suspend_and_submit(r);
}

/* POST /traces (issue 12): a profiler trace, plain or gzipped, measured on
 * the pool and stored as a result (docs/traces.md). Its id names the
 * bytes and the step marker: the same upload answers the stored
 * measurement. ?marker=PREFIX: steps are the annotations starting so. */
static enum MHD_Result handle_traces(struct srv_req *r)
{
    const char *m = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "marker");
    if (m) {
        size_t n = strlen(m);
        int ok = n >= 1 && n <= 64;
        for (size_t i = 0; ok && i < n; i++) ok = m[i] >= 0x20 && m[i] < 0x7f;
        if (!ok) return bad_query(r, "marker", "must be 1..64 printable ASCII characters");
        memcpy(r->marker, m, n + 1);
    }
    if (!r->len) return queue_problem(r, 400, "Bad Request", "the body is empty: send the trace");
    /* id = SHA-256 of "trace", the marker and the bytes' SHA-256 (hex) */
    char bh[65], key[160];
    mfu_sha256_hex(r->body, r->len, bh);
    int kn = snprintf(key, sizeof key, "trace\n%s\n%s", r->marker, bh);
    mfu_sha256_hex(key, (size_t)kn, r->id);
    if (cached(r, 1)) return queue_answer(r);
    return suspend_and_submit(r);
}

/* GET /problems/{type}: the type's page, Markdown unless the client
 * accepts text/html (a browser following the type URI). */
static enum MHD_Result handle_problem(struct srv_req *r)
{
    size_t len = 0;
    const char *md = srv_problem_page(r->id, &len);
    if (!md) return queue_problem(r, 404, "Not Found", "no such problem type");
    const char *accept = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Accept");
    if (accept && strstr(accept, "text/html")) {
        size_t n = 0;
        char *html = srv_problem_html(r->id, md, len, &n);
        if (!html) return queue_problem(r, 503, "Service Unavailable", "out of memory");
        srv_answer_reset(r);
        r->answer = ANS_RAW;
        r->out_code = 200;
        r->out_body = html;
        r->out_len = n;
        r->out_ctype = "text/html; charset=utf-8";
        return queue_answer(r);
    }
    return queue_static(r, 200, "text/markdown; charset=utf-8", md, len);
}

static enum MHD_Result handle_readyz(struct srv_req *r)
{
    char why[256];
    int ok = srv_jobs_ready(why, sizeof why);
    json_t *body = json_pack("{s:s,s:s}", "status", ok ? "ok" : "unavailable", "detail", why);
    if (!ok) {
        api_status st;
        api_status_init(&st);
        api_fail(&st, 503, "", "%s", why);
        snprintf(st.title, sizeof st.title, "Not ready");
        json_decref(body);
        srv_answer_status(r, &st);
        r->out_retry_after = 1;
        return queue_answer(r);
    }
    return queue_json(r, 200, body);
}

static enum MHD_Result dispatch(struct srv_req *r)
{
    switch (r->route) {
    case ROUTE_SEARCH: return handle_search(r);
    case ROUTE_COMPARE: return handle_search(r); /* a comparison is a job like a search */
    case ROUTE_ROOFLINE: srv_roofline_accept(r); return handle_roofline(r);
    case ROUTE_CALIBRATE: return handle_roofline(r); /* the same: parse, then the pool */
    case ROUTE_TRACES: return handle_traces(r);
    case ROUTE_RESULTS: return handle_results_list(r);
    case ROUTE_RESULT: return handle_result(r);
    case ROUTE_PRESET_MODELS: {
        json_t *l = api_presets_models();
        return l ? queue_json(r, 200, l) : queue_problem(r, 500, "Internal Server Error", "presets");
    }
    case ROUTE_PRESET_HARDWARE: {
        json_t *l = api_presets_hardware();
        return l ? queue_json(r, 200, l) : queue_problem(r, 500, "Internal Server Error", "presets");
    }
    case ROUTE_HEALTHZ:
        return queue_static(r, 200, "application/json", "{\"status\":\"ok\"}", 15);
    case ROUTE_READYZ: return handle_readyz(r);
    case ROUTE_METRICS: {
        size_t n = 0;
        char *text = srv_metrics_render(&n);
        if (!text) return queue_problem(r, 500, "Internal Server Error", "metrics");
        srv_answer_reset(r);
        r->answer = ANS_RAW;
        r->out_code = 200;
        r->out_body = text;
        r->out_len = n;
        r->out_ctype = "text/plain; version=0.0.4; charset=utf-8";
        return queue_answer(r);
    }
    case ROUTE_OPENAPI:
        return queue_static(r, 200, "application/yaml", mfud_openapi_yaml,
                            (size_t)(mfud_openapi_yaml_end - mfud_openapi_yaml));
    case ROUTE_PROBLEM: return handle_problem(r);
    case ROUTE_PAGE: return srv_page_answer(r);
    default: break;
    }
    return queue_problem(r, 404, "Not Found", "no such route");
}

/* ---- the request deadline (slowloris) ------------------------------------
 * libmicrohttpd's connection timeout is an idle timeout: a client sending a
 * header byte every second never trips it and keeps its connection slot
 * forever. So each connection is also watched: from its start, or from the
 * end of its previous response, a whole request (headers and body) must
 * arrive within --conn-timeout seconds. A watchdog thread shuts down the
 * socket of a connection waiting too long for its headers (libmicrohttpd then
 * sees EOF and closes it on its own thread; the CLOSED notification, which
 * comes before the descriptor is closed, unlinks it under the same mutex, so
 * the watchdog never touches a descriptor that was reused); the body is
 * checked as it arrives (on_request). Requests being answered, suspended
 * searches included, are not watched. */

struct conn_watch {
    struct conn_watch *prev, *next;
    int fd;
    int busy;      /* a request's headers arrived; until its response ends */
    int shut;
    double since;  /* monotonic: connection start or end of the last response */
};

static pthread_mutex_t cw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cw_cond = PTHREAD_COND_INITIALIZER;
static struct conn_watch cw_head = {&cw_head, &cw_head, -1, 0, 0, 0};
static pthread_t cw_thread;
static int cw_started, cw_stop;

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct conn_watch *w = calloc(1, sizeof *w);
        *socket_context = w;
        if (!w) return;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        w->fd = ci ? ci->connect_fd : -1;
        w->since = srv_now_mono();
        pthread_mutex_lock(&cw_mu);
        w->next = &cw_head;
        w->prev = cw_head.prev;
        cw_head.prev->next = w;
        cw_head.prev = w;
        pthread_mutex_unlock(&cw_mu);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct conn_watch *w = *socket_context;
        *socket_context = NULL;
        if (!w) return;
        pthread_mutex_lock(&cw_mu);
        w->prev->next = w->next;
        w->next->prev = w->prev;
        pthread_mutex_unlock(&cw_mu);
        free(w);
    }
}

static struct conn_watch *conn_watch_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void conn_watch_set(struct MHD_Connection *c, int busy)
{
    struct conn_watch *w = conn_watch_of(c);
    if (!w) return;
    pthread_mutex_lock(&cw_mu);
    w->busy = busy;
    if (!busy) w->since = srv_now_mono();
    pthread_mutex_unlock(&cw_mu);
}

/* Seconds since the connection's current request began to arrive. */
static double conn_watch_age(struct MHD_Connection *c, double fallback)
{
    struct conn_watch *w = conn_watch_of(c);
    if (!w) return srv_now_mono() - fallback;
    pthread_mutex_lock(&cw_mu);
    double age = srv_now_mono() - w->since;
    pthread_mutex_unlock(&cw_mu);
    return age;
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&cw_mu);
    while (!cw_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&cw_cond, &cw_mu, &ts);
        if (cw_stop) break;
        double now = srv_now_mono();
        int n = 0;
        for (struct conn_watch *w = cw_head.next; w != &cw_head; w = w->next) {
            if (w->busy || w->shut || w->fd < 0 || now - w->since <= cfg->conn_timeout_s) continue;
            shutdown(w->fd, SHUT_RDWR);
            w->shut = 1;
            n++;
        }
        if (n) srv_log(SRV_LOG_WARN, "msg=\"request not received in time\" closed=%d timeout_s=%d",
                       n, cfg->conn_timeout_s);
    }
    pthread_mutex_unlock(&cw_mu);
    return NULL;
}

/* ---- libmicrohttpd callbacks ------------------------------------------- */

/* Percent-decoding of paths and query values, in place, except %00: a NUL
 * would cut the string, so "/metrics%00x" was served as /metrics (issue
 * 14 item 9). It stays "%00" and matches no route. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    char *w = s;
    for (const char *p = s; *p; p++) {
        if (p[0] == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
            int hi = isdigit((unsigned char)p[1]) ? p[1] - '0' : (tolower((unsigned char)p[1]) - 'a' + 10);
            int lo = isdigit((unsigned char)p[2]) ? p[2] - '0' : (tolower((unsigned char)p[2]) - 'a' + 10);
            int v = hi * 16 + lo;
            if (v != 0) {
                *w++ = (char)v;
                p += 2;
                continue;
            }
        }
        *w++ = *p;
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* At most this many query parameters (mfud's routes take four). Beyond
 * them the query is cut off before libmicrohttpd parses it: 0.9.75 keeps
 * every parameter as a header record in the connection's 32 KiB pool, and
 * at about 460 the pool is full and the connection stalls for the whole
 * connection timeout without an answer (issue 14 item 9). The request is
 * then answered 414 by on_request. */
#define QUERY_PARAMS_MAX 64

static char too_many_params; /* its address marks such a request */

/* MHD_OPTION_URI_LOG_CALLBACK: called with the request line's target
 * before its query is parsed; what it returns is the request's first
 * *con_cls. The target lies in the connection's own read buffer, which
 * libmicrohttpd has already cut into strings. 0.9.75 has already noted
 * where the query starts (the byte after '?') and parses it right after
 * this call, so ending the string at that byte leaves nothing to parse.
 * Writing through the const pointer is outside the documented contract:
 * reliability2.sh checks the effect on the version CI runs (Debian 12). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    char *q = strchr(uri, '?');
    if (!q) return NULL;
    int n = 1;
    for (const char *p = q; *p; p++)
        if (*p == '&' || *p == ';') n++;
    if (n <= QUERY_PARAMS_MAX) return NULL;
    q[1] = '\0';
    return &too_many_params;
}

/* Header values a request may carry once: a second Content-Length that
 * differs from the first is a request smuggling attempt (RFC 9112
 * 6.3: invalid, 400). */
struct hdr_count { int n_cl, cl_differ; const char *cl; };

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    struct hdr_count *h = cls;
    if (key && !strcasecmp(key, "Content-Length")) {
        if (h->n_cl++ && (!value || !h->cl || strcmp(value, h->cl))) h->cl_differ = 1;
        h->cl = value;
    }
    return MHD_YES;
}

/* An answer decided from the headers alone (404, 405, 401, 415, 414).
 * Queued at once, libmicrohttpd closes the connection after it (the body,
 * if any, is unread), so a keep-alive client paid a new connection for
 * each such answer (issue 14 item 12). It waits for the end of the
 * request instead: a request without a body gets it on the next call, a
 * body within the limit is read and dropped first. A larger body, a
 * chunked one, or one the client holds back (Expect: 100-continue) gets
 * it at once, and the connection closes. */
static enum MHD_Result answer_after_body(struct srv_req *r)
{
    struct MHD_Connection *c = r->conn;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    const char *ex = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
    if (!te && (!cl || !strcmp(cl, "0"))) {
        r->drop_body = 1;
        return MHD_YES;
    }
    if (!te && !ex && cl) {
        char *end;
        unsigned long long n = strtoull(cl, &end, 10);
        if (*end == '\0' && n <= body_limit(r)) {
            r->drop_body = 1;
            return MHD_YES;
        }
    }
    return queue_answer(r);
}

/* Framing the server does not take, answered at once, not after the
 * connection timeout (issue 14 item 9). 1 when answered (*ret set). */
static int refuse_framing(struct srv_req *r, struct MHD_Connection *c, int params_cut, enum MHD_Result *ret)
{
    struct hdr_count hc = {0, 0, NULL};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &hc);
    char d[128];
    if (params_cut) {
        snprintf(d, sizeof d, "more than %d query parameters", QUERY_PARAMS_MAX);
        answer_typed(r, 414, API_P_INVALID_QUERY_PARAMETER, "URI Too Long", d);
        *ret = answer_after_body(r);
        return 1;
    }
    if (hc.cl_differ) {
        answer_typed(r, 400, API_P_BAD_FRAMING, "Bad framing",
                     "Content-Length given twice with different values");
        *ret = queue_answer(r);
        return 1;
    }
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    if (te && strcasecmp(te, "chunked") != 0) {
        /* the header echoed as printable ASCII: its bytes may be any
         * (a cut or invalid UTF-8 made the answer unrenderable, a 500;
         * found by fuzz target http) */
        char shown[41];
        size_t k = 0;
        for (; te[k] && k < sizeof shown - 1; k++)
            shown[k] = te[k] >= 0x20 && te[k] < 0x7f ? te[k] : '?';
        shown[k] = '\0';
        snprintf(d, sizeof d, "Transfer-Encoding %s is not supported (only chunked)", shown);
        answer_typed(r, 501, API_P_BAD_FRAMING, "Bad framing", d);
        *ret = queue_answer(r);
        return 1;
    }
    return 0;
}

/* OPTIONS (CORS preflight): 204 with what the route allows. */
static enum MHD_Result answer_options(struct srv_req *r, struct MHD_Connection *c)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    add_common_headers(resp);
    int post = r->route == ROUTE_SEARCH || r->route == ROUTE_ROOFLINE || r->route == ROUTE_CALIBRATE ||
               r->route == ROUTE_COMPARE || r->route == ROUTE_TRACES;
    MHD_add_response_header(resp, "Allow", post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS");
    MHD_add_response_header(resp, "Access-Control-Allow-Methods", post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS");
    MHD_add_response_header(resp, "Access-Control-Allow-Headers", ALLOW_HEADERS);
    MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    r->code = 204;
    enum MHD_Result ret = MHD_queue_response(c, 204, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* A POST's headers: the token, the media type, a declared length over the
 * limit. 1 when answered (*ret set). */
static int refuse_post(struct srv_req *r, struct MHD_Connection *c, enum MHD_Result *ret)
{
    if (!auth_ok(c)) {
        srv_answer_reset(r);
        srv_answer_problem(r, 401, "Unauthorized", "a valid bearer token is required");
        *ret = answer_after_body(r);
        return 1;
    }
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (r->route == ROUTE_TRACES ? !trace_media_type_ok(ct) : !media_type_ok(ct)) {
        api_status st;
        api_status_init(&st);
        api_fail(&st, 415, "", r->route == ROUTE_TRACES
                                   ? "Content-Type must be application/json, application/gzip or application/octet-stream"
                                   : "Content-Type must be application/json");
        snprintf(st.title, sizeof st.title, "Unsupported Media Type");
        srv_answer_status(r, &st);
        *ret = answer_after_body(r);
        return 1;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (!cl) return 0;
    char *end;
    unsigned long long n = strtoull(cl, &end, 10);
    if (*end != '\0' || n <= body_limit(r)) return 0;
    /* A client that sent no "Expect: 100-continue" is already sending the
     * body: answering now and closing would reset its connection before it
     * reads the 413 (issue 14 item 6). Up to a bound the body is read and
     * dropped, then the 413 goes out (nginx's lingering close does the
     * same); beyond it, at once. */
    const char *ex = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
    if (!ex && n <= DISCARD_MAX_BYTES) {
        r->too_large = 1;
        *ret = MHD_YES;
        return 1;
    }
    char d[128];
    snprintf(d, sizeof d, "the body is larger than the limit of %zu bytes", body_limit(r));
    *ret = queue_problem(r, 413, "Content Too Large", d);
    return 1;
}

/* The first call for a request: its headers. */
static enum MHD_Result on_headers(struct MHD_Connection *c, const char *url, const char *method,
                                  int params_cut, void **con_cls)
{
    struct srv_req *r = calloc(1, sizeof *r);
    if (!r) return MHD_NO;
    *con_cls = r;
    conn_watch_set(c, 1); /* the headers are in; the body is checked below */
    r->conn = c;
    r->t_start = srv_now_mono();
    r->method = parse_method(method);
    r->route = match_route(url, r->id, &r->artifact);
    r->top_k = -1;
    const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
    if (inm) r->if_none_match = strdup(inm);
    srv_log(SRV_LOG_DEBUG, "msg=request method=%s path=\"%.200s\"", method, url);
    enum MHD_Result ret = MHD_YES;
    if (refuse_framing(r, c, params_cut, &ret)) return ret;
    if (r->route == ROUTE_OTHER) {
        srv_answer_problem(r, 404, "Not Found", "no such route");
        return answer_after_body(r);
    }
    if (!route_allows(r->route, r->method)) {
        srv_answer_problem(r, 405, "Method Not Allowed", "method not allowed on this route");
        return answer_after_body(r);
    }
    if (r->method == SRV_M_OPTIONS) return answer_options(r, c);
    if (r->method == SRV_M_POST && refuse_post(r, c, &ret)) return ret;
    return MHD_YES;
}

/* A piece of the body: kept (bounded by the route's limit), or dropped. */
static enum MHD_Result on_body(struct srv_req *r, struct MHD_Connection *c, const char *upload_data,
                               size_t *upload_data_size)
{
    size_t n = *upload_data_size;
    *upload_data_size = 0;
    /* a body trickled in slower than the request deadline (slowloris) */
    if (conn_watch_age(c, r->t_start) > cfg->conn_timeout_s) {
        srv_log(SRV_LOG_WARN, "msg=\"request body not received in time\" timeout_s=%d", cfg->conn_timeout_s);
        return MHD_NO;
    }
    if (r->too_large || r->drop_body) return MHD_YES;
    if (r->len + n > body_limit(r)) {
        r->too_large = 1;
        free(r->body);
        r->body = NULL;
        r->len = r->cap = 0;
        return MHD_YES;
    }
    if (r->len + n + 1 > r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 4096;
        while (ncap < r->len + n + 1) ncap *= 2;
        if (ncap > body_limit(r) + 1) ncap = body_limit(r) + 1;
        char *nb = realloc(r->body, ncap);
        if (!nb) return MHD_NO;
        r->body = nb;
        r->cap = ncap;
    }
    memcpy(r->body + r->len, upload_data, n);
    r->len += n;
    r->body[r->len] = '\0';
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct srv_req *r = *con_cls;
    if (r == (void *)&too_many_params) return on_headers(c, url, method, 1, con_cls);
    if (!r) return on_headers(c, url, method, 0, con_cls);
    if (*upload_data_size > 0) return on_body(r, c, upload_data, upload_data_size);
    if (r->answer != ANS_NONE) {
        /* Resumed by the loop, or an answer prepared before suspending. */
        return queue_answer(r);
    }
    if (r->too_large) {
        char d[128];
        snprintf(d, sizeof d, "the body is larger than the limit of %zu bytes", body_limit(r));
        return queue_problem(r, 413, "Content Too Large", d);
    }
    return dispatch(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct srv_req *r = *con_cls;
    conn_watch_set(c, 0); /* waiting for the next request (keep-alive) */
    /* on_uri's mark, left when the request ended before its headers did
     * (on_request never ran): nothing to free (found by fuzz target http) */
    if (r == (void *)&too_many_params) r = *con_cls = NULL;
    if (!r) return;
    double dt = srv_now_mono() - r->t_start;
    if (r->code) srv_metrics_request(r->route, r->code, dt);
    if (r->code >= 500 || toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        srv_log(SRV_LOG_WARN, "msg=request_end route=%s code=%d ms=%.3f termination=%d",
                srv_route_names[r->route], r->code, dt * 1e3, (int)toe);
    else
        srv_log(SRV_LOG_DEBUG, "msg=request_end route=%s code=%d ms=%.3f",
                srv_route_names[r->route], r->code, dt * 1e3);
    free(r->body);
    free(r->normalized);
    free(r->input);
    free(r->model);
    free(r->hardware);
    free(r->if_none_match);
    json_decref(r->roofline_req);
    api_prepared_free(r->prep);
    srv_answer_reset(r);
    free(r);
    *con_cls = NULL;
}


/* libmicrohttpd's own messages: fmt is MHD's format string, not request data */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 0)))
#endif
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = '\0';
    srv_log(SRV_LOG_WARN, "msg=mhd detail=\"%s\"", buf);
}

struct MHD_Daemon *srv_http_start(const struct srv_config *config, int *out_port)
{
    cfg = config;
    srv_rcache_set_cors(cfg->cors_origin);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    /* TURBO: opportunistic reads/writes/accepts before asking epoll (the
     * sockets are non-blocking); measurably fewer syscalls per cached GET. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_USE_TURBO;
    socklen_t slen;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, cfg->bind, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)cfg->port);
        slen = sizeof *s4;
    } else if (inet_pton(AF_INET6, cfg->bind, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)cfg->port);
        slen = sizeof *s6;
        flags |= MHD_USE_IPv6;
    } else {
        srv_log(SRV_LOG_ERROR, "msg=\"bad bind address\" bind=%s", cfg->bind);
        return NULL;
    }
    (void)slen;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, on_request, NULL,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->http_threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_conns,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->conn_timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
        /* a port in use is an error unless sharing is asked for (issue 14
         * item 7: SO_REUSEPORT split a fresh result's GETs between two
         * daemons); libmicrohttpd's default is SO_REUSEADDR only */
        cfg->reuse_port ? MHD_OPTION_LISTENING_ADDRESS_REUSE : MHD_OPTION_END, (unsigned)1,
        MHD_OPTION_END);
    if (!d) return NULL;
    cw_stop = 0;
    cw_started = pthread_create(&cw_thread, NULL, watchdog_main, NULL) == 0;
    if (!cw_started) srv_log(SRV_LOG_WARN, "msg=\"no request-deadline watchdog thread\"");
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    *out_port = info ? info->port : cfg->port;
    return d;
}


void srv_http_stop(struct MHD_Daemon *d)
{
    if (cw_started) {
        pthread_mutex_lock(&cw_mu);
        cw_stop = 1;
        pthread_cond_signal(&cw_cond);
        pthread_mutex_unlock(&cw_mu);
        pthread_join(cw_thread, NULL);
        cw_started = 0;
    }
    MHD_stop_daemon(d);
    srv_conn_close_quiesced();
}
