/* server/http.c -- the HTTP side of mfud: libmicrohttpd's callbacks,
 * bounded request bodies, the checks made on a request's headers, start
 * and stop. Routing and the handlers are server/routes.c's, rendering and
 * queueing every answer (ETag/304, CORS, the cached or sliced body)
 * server/respond.c's, the request deadline server/watchdog.c's
 * (server/http_int.h joins them). The answer a request
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
 */#include "http_int.h"

const struct srv_config *http_cfg;

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
        if (*end == '\0' && n <= http_body_limit(r)) {
            r->drop_body = 1;
            return MHD_YES;
        }
    }
    return http_queue_answer(r);
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
        http_answer_typed(r, 414, API_P_INVALID_QUERY_PARAMETER, "URI Too Long", d);
        *ret = answer_after_body(r);
        return 1;
    }
    if (hc.cl_differ) {
        http_answer_typed(r, 400, API_P_BAD_FRAMING, "Bad framing",
                     "Content-Length given twice with different values");
        *ret = http_queue_answer(r);
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
        http_answer_typed(r, 501, API_P_BAD_FRAMING, "Bad framing", d);
        *ret = http_queue_answer(r);
        return 1;
    }
    return 0;
}

/* OPTIONS (CORS preflight): 204 with what the route allows. */
static enum MHD_Result answer_options(struct srv_req *r, struct MHD_Connection *c)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    http_add_common_headers(resp);
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
    if (!http_auth_ok(c)) {
        srv_answer_reset(r);
        srv_answer_problem(r, 401, "Unauthorized", "a valid bearer token is required");
        *ret = answer_after_body(r);
        return 1;
    }
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (r->route == ROUTE_TRACES ? !http_trace_media_type_ok(ct) : !http_media_type_ok(ct)) {
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
    if (*end != '\0' || n <= http_body_limit(r)) return 0;
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
    snprintf(d, sizeof d, "the body is larger than the limit of %zu bytes", http_body_limit(r));
    *ret = http_queue_problem(r, 413, "Content Too Large", d);
    return 1;
}

/* The first call for a request: its headers. */
static enum MHD_Result on_headers(struct MHD_Connection *c, const char *url, const char *method,
                                  int params_cut, void **con_cls)
{
    struct srv_req *r = calloc(1, sizeof *r);
    if (!r) return MHD_NO;
    *con_cls = r;
    http_conn_watch_set(c, 1); /* the headers are in; the body is checked below */
    r->conn = c;
    r->t_start = srv_now_mono();
    r->method = http_parse_method(method);
    r->route = http_match_route(url, r->id, &r->artifact);
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
    if (!http_route_allows(r->route, r->method)) {
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
    if (http_conn_watch_age(c, r->t_start) > http_cfg->conn_timeout_s) {
        srv_log(SRV_LOG_WARN, "msg=\"request body not received in time\" timeout_s=%d", http_cfg->conn_timeout_s);
        return MHD_NO;
    }
    if (r->too_large || r->drop_body) return MHD_YES;
    if (r->len + n > http_body_limit(r)) {
        r->too_large = 1;
        free(r->body);
        r->body = NULL;
        r->len = r->cap = 0;
        return MHD_YES;
    }
    if (r->len + n + 1 > r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 4096;
        while (ncap < r->len + n + 1) ncap *= 2;
        if (ncap > http_body_limit(r) + 1) ncap = http_body_limit(r) + 1;
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
        return http_queue_answer(r);
    }
    if (r->too_large) {
        char d[128];
        snprintf(d, sizeof d, "the body is larger than the limit of %zu bytes", http_body_limit(r));
        return http_queue_problem(r, 413, "Content Too Large", d);
    }
    return http_dispatch(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct srv_req *r = *con_cls;
    http_conn_watch_set(c, 0); /* waiting for the next request (keep-alive) */
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
    srv_req_free(r);
    *con_cls = NULL;
}

void srv_req_free(struct srv_req *r)
{
    if (!r) return;
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
    http_cfg = config;
    srv_rcache_set_cors(http_cfg->cors_origin);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    /* TURBO: opportunistic reads/writes/accepts before asking epoll (the
     * sockets are non-blocking); measurably fewer syscalls per http_cached GET. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_USE_TURBO;
    socklen_t slen;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, http_cfg->bind, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)http_cfg->port);
        slen = sizeof *s4;
    } else if (inet_pton(AF_INET6, http_cfg->bind, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)http_cfg->port);
        slen = sizeof *s6;
        flags |= MHD_USE_IPv6;
    } else {
        srv_log(SRV_LOG_ERROR, "msg=\"bad bind address\" bind=%s", http_cfg->bind);
        return NULL;
    }
    (void)slen;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)http_cfg->port, NULL, NULL, on_request, NULL,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)http_cfg->http_threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)http_cfg->max_conns,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)http_cfg->conn_timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_NOTIFY_CONNECTION, http_on_connection, NULL,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
        /* a port in use is an error unless sharing is asked for (issue 14
         * item 7: SO_REUSEPORT split a fresh result's GETs between two
         * daemons); libmicrohttpd's default is SO_REUSEADDR only */
        http_cfg->reuse_port ? MHD_OPTION_LISTENING_ADDRESS_REUSE : MHD_OPTION_END, (unsigned)1,
        MHD_OPTION_END);
    if (!d) return NULL;
    http_watchdog_start();
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    *out_port = info ? info->port : http_cfg->port;
    return d;
}


void srv_http_stop(struct MHD_Daemon *d)
{
    http_watchdog_stop();
    MHD_stop_daemon(d);
    srv_conn_close_quiesced();
}
