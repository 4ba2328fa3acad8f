/* server/respond.c -- a job view rendered (status document, slice, CSV,
 * chart) and every answer queued with its headers: ETag and 304, CORS,
 * Cache-Control, Retry-After (server/http_int.h). */
#include "http_int.h"

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

/* A response whose body is part of a http_cached entry (no copy): the response
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

/* A done result's ranked table as CSV (the http_cached rendering when whole). */
static struct MHD_Response *render_csv(struct srv_req *r, struct srv_rentry *e, const char *result,
                                       size_t result_len, int sliced, int *code)
{
    char *csv = NULL;
    struct MHD_Response *resp = NULL;
    if (e) {
        size_t n = 0;
        const char *http_cached = srv_rentry_csv(e, &n, srv_result_csv);
        if (http_cached && !sliced) resp = entry_response(e, http_cached, n);
        else if (http_cached) csv = strdup(http_cached);
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
 * only: the http_cached document up to its result, then the slice. NULL when
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
        /* The whole http_cached document, shared. */
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

void http_add_common_headers(struct MHD_Response *resp)
{
    srv_add_cors(resp); /* the one CORS policy (rcache.c) */
}

enum MHD_Result http_queue_answer(struct srv_req *r)
{
    struct MHD_Response *resp = NULL;
    int code = r->out_code;
    char etag[160] = "";
    int retry_after = r->out_retry_after;

    if (r->answer == ANS_VIEW && r->entry && r->route == ROUTE_RESULT && !r->want_csv && !r->artifact &&
        r->top_k < 0 && r->res_offset <= 0 && strcmp(r->view.status, "done") == 0) {
        /* A http_cached result, as a whole: queue the entry's prebuilt response
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
    http_add_common_headers(resp);
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
void http_answer_typed(struct srv_req *r, int code, api_problem p, const char *title, const char *detail)
{
    api_status st;
    api_status_init(&st);
    api_fail(&st, code, "", "%s", detail);
    snprintf(st.title, sizeof st.title, "%s", title);
    snprintf(st.type, sizeof st.type, "%s", api_problem_type(p));
    srv_answer_status(r, &st);
}

enum MHD_Result http_queue_problem(struct srv_req *r, int code, const char *title,
                                     const char *detail)
{
    srv_answer_problem(r, code, title, detail);
    return http_queue_answer(r);
}

enum MHD_Result http_queue_static(struct srv_req *r, int code, const char *ctype,
                                    const char *data, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    if (ctype) MHD_add_response_header(resp, "Content-Type", ctype);
    http_add_common_headers(resp);
    r->code = code;
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)code, resp);
    MHD_destroy_response(resp);
    return ret;
}

enum MHD_Result http_queue_json(struct srv_req *r, int code, json_t *body)
{
    srv_answer_json(r, code, body);
    return http_queue_answer(r);
}
