/* server/routes.c -- routing (path and method to a route) and the handler
 * of each route: answered here, or handed to the loop (server/http_int.h). */
#include "http_int.h"

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

/* ---- routing ------------------------------------------------------------ */

static int is_hex64(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) return 0;
    return s[64] == '\0';
}

enum srv_route http_match_route(const char *url, char *id_out, int *artifact)
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
    /* /traces/{id}: a stored trace measurement is a result like any other;
     * so is /profiles/{id}, a calibrated hardware profile */
    if (strncmp(url, "/traces/", 8) == 0 && strlen(url + 8) == 64 && is_hex64(url + 8)) {
        memcpy(id_out, url + 8, 65);
        return ROUTE_RESULT;
    }
    if (strncmp(url, "/profiles/", 10) == 0 && strlen(url + 10) == 64 && is_hex64(url + 10)) {
        memcpy(id_out, url + 10, 65);
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

int http_route_allows(enum srv_route route, int method)
{
    if (method == SRV_M_OPTIONS) return 1;
    if (route == ROUTE_SEARCH || route == ROUTE_ROOFLINE || route == ROUTE_CALIBRATE ||
        route == ROUTE_COMPARE || route == ROUTE_TRACES)
        return method == SRV_M_POST;
    return method == SRV_M_GET || method == SRV_M_HEAD;
}

int http_parse_method(const char *m)
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
int http_trace_media_type_ok(const char *ct)
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
size_t http_body_limit(const struct srv_req *r)
{
    return r->route == ROUTE_TRACES ? http_cfg->max_trace_bytes : http_cfg->max_body;
}

/* POST bodies are JSON, said so (issue 14 item 11): a form's types
 * (application/x-www-form-urlencoded, text/plain, multipart) are what a web
 * page may send another origin without a CORS preflight, so they are
 * refused, and so is a body without a type. */
int http_media_type_ok(const char *ct)
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
    r->wait_s = http_cfg->default_wait_s;
    if (!h) return;
    const char *p = h;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == ';') p++;
        if (strncasecmp(p, "respond-async", 13) == 0) r->prefer_async = 1;
        else if (strncasecmp(p, "wait=", 5) == 0) {
            char *end;
            double w = strtod(p + 5, &end);
            if (end != p + 5 && w >= 0) r->wait_s = w > http_cfg->max_wait_s ? http_cfg->max_wait_s : w;
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
    http_answer_typed(r, 400, API_P_INVALID_QUERY_PARAMETER, "Invalid query parameter", d);
    return http_queue_answer(r);
}

/* Query parameter `name`, when given, an integer in lo..hi into *out: 0.
 * Else -1 with a 400 queued ("must be an integer in lo..hi", then `more`
 * where not NULL) and its result in *res. */
static int query_int(struct srv_req *r, const char *name, long lo, long hi, const char *more, int *out,
                     enum MHD_Result *res)
{
    const char *s = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
    if (!s || parse_int(s, lo, hi, out) == 0) return 0;
    char d[200];
    snprintf(d, sizeof d, "must be an integer in %ld..%ld%s%s", lo, hi, more ? " " : "", more ? more : "");
    *res = bad_query(r, name, d);
    return -1;
}

int http_auth_ok(struct MHD_Connection *c)
{
    if (!http_cfg->auth_token[0]) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return 0;
    h += 7;
    size_t a = strlen(h), b = strlen(http_cfg->auth_token);
    unsigned diff = (unsigned)(a != b);
    for (size_t i = 0; i < a && i < b; i++) diff |= (unsigned)(h[i] ^ http_cfg->auth_token[i]);
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
int http_cached(struct srv_req *r, int hit)
{
    if (!(r->entry = srv_rcache_get(r->id, hit))) return 0;
    memcpy(r->view.id, r->id, 65);
    r->view.status = "done";
    r->answer = ANS_VIEW;
    r->out_code = 200;
    return 1;
}

/* hardware {"profile": id}, a stored calibrated profile (POST /calibrate):
 * in a search, or in a comparison's base or vary.hardware */
static int names_profile(json_t *req, int compare)
{
    json_t *h = json_object_get(compare ? json_object_get(req, "base") : req, "hardware");
    if (json_object_get(h, "profile")) return 1;
    json_t *hs = compare ? json_object_get(json_object_get(req, "vary"), "hardware") : NULL;
    for (size_t i = 0; i < json_array_size(hs); i++)
        if (json_object_get(json_array_get(hs, i), "profile")) return 1;
    return 0;
}

int srv_prepare_search(struct srv_req *r, json_t *req, api_status *st)
{
    int compare = r->route == ROUTE_COMPARE;
    /* a search is parsed once, here; the job runs the prepared object */
    json_t *norm = NULL;
    if (compare) {
        norm = api_compare_normalize(req, st);
    } else if ((r->prep = api_prepare_search(req, st))) {
        norm = json_incref(api_prepared_normal(r->prep));
    }
    if (!norm) {
        if (!st->status) api_fail(st, 422, "", "invalid request");
        return -1;
    }
    /* The server's time budget (--max-search-s): a longer deadline_s (the
     * default is 60 s) is clamped in the normal form, so the key is the one
     * of the search actually run, and in the input the job runs, so it stops
     * there with truncated: true, truncated_by: "deadline_s". */
    json_t *sopt = json_object_get(norm, "search");
    json_t *dl = json_object_get(sopt, "deadline_s");
    if (json_is_number(dl) && json_number_value(dl) > http_cfg->max_search_s) {
        json_object_set_new(sopt, "deadline_s", json_real(http_cfg->max_search_s));
        if (r->prep) api_prepared_set_deadline(r->prep, http_cfg->max_search_s);
        json_t *in = json_object_get(req, "search");
        if (!in) json_object_set_new(req, "search", in = json_object());
        if (json_is_object(in)) json_object_set_new(in, "deadline_s", json_real(http_cfg->max_search_s));
    }
    int key_rc = api_cache_key(norm, r->id);
    free(r->normalized);
    free(r->input);
    r->normalized = key_rc ? NULL : json_dumps(norm, JSON_COMPACT | JSON_SORT_KEYS);
    r->input = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
    /* a comparison is listed by its base's model, "compare" and its base's devices */
    json_t *sumn = compare ? json_object_get(req, "base") : norm, *sumr = compare ? sumn : req;
    r->model = summary_name(sumn, sumr, "model");
    r->hardware = compare ? strdup("compare") : summary_name(norm, req, "hardware");
    json_t *dev = json_object_get(sumn, "devices");
    r->devices = json_is_integer(dev) ? json_integer_value(dev) : (json_int_t)json_number_value(dev);
    json_decref(norm);
    if (!r->normalized || !r->input) {
        api_fail(st, 500, "", "out of memory");
        return -1;
    }
    return 0;
}

static enum MHD_Result handle_search(struct srv_req *r)
{
    json_t *req = NULL;
    finish_body_parse(r, &req);
    if (!req) return http_queue_answer(r);
    api_status st;
    api_status_init(&st);
    parse_prefer(r, MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Prefer"));
    if (names_profile(req, r->route == ROUTE_COMPARE)) {
        /* the profile is read from the store on the loop thread, which
         * then prepares the search (server/commands.c) */
        r->input = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
        r->profile_pending = 1;
        json_decref(req);
        if (!r->input) return http_queue_problem(r, 500, "Internal Server Error", "out of memory");
        return suspend_and_submit(r);
    }
    int rc = srv_prepare_search(r, req, &st);
    json_decref(req);
    if (rc) {
        srv_answer_status(r, &st);
        return http_queue_answer(r);
    }
    /* Done and in the memory cache: 200 here, no loop hop (the hit is
     * counted in /metrics now and in the database at the next flush). */
    if (http_cached(r, 1)) {
        srv_metrics_cache(1);
        return http_queue_answer(r);
    }
    return suspend_and_submit(r);
}

static enum MHD_Result handle_results_list(struct srv_req *r)
{
    struct MHD_Connection *c = r->conn;
    const char *s;
    enum MHD_Result res;
    r->limit = 20;
    if (query_int(r, "limit", 1, 100, NULL, &r->limit, &res) ||
        /* each skipped row costs the loop thread (issue 14 item 8): deep
         * pages go by cursor */
        query_int(r, "offset", 0, 1000, "(page further with cursor, as next_cursor gives)", &r->offset, &res))
        return res;
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
    enum MHD_Result res;
    r->top_k = -1;
    r->res_offset = 0;
    if (query_int(r, "top_k", 0, 100000, NULL, &r->top_k, &res) ||
        query_int(r, "offset", 0, 100000, NULL, &r->res_offset, &res))
        return res;
    s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    if (s && strcmp(s, "csv") != 0 && strcmp(s, "json") != 0)
        return bad_query(r, "format", "must be json or csv");
    r->want_csv = (s && strcmp(s, "csv") == 0) ||
                  (!s && accepts_csv(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept")));
    r->rank = 1;
    if (query_int(r, "rank", 0, 1000, "(0: the measured configuration)", &r->rank, &res)) return res;
    if (r->artifact) {
        r->want_csv = 0;
        r->top_k = -1;
        r->res_offset = 0;
    }
    /* A finished result in the memory cache: answer here, no loop hop;
     * else, on a store HTTP threads may read (PostgreSQL), from the store
     * here (docs/storage.md). */
    if (http_cached(r, 0) || srv_jobs_read_done(r)) return http_queue_answer(r);
    return suspend_and_submit(r);
}

static enum MHD_Result handle_roofline(struct srv_req *r)
{
    json_t *req = NULL;
    finish_body_parse(r, &req);
    if (!req) return http_queue_answer(r);
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
    if (!r->len) return http_queue_problem(r, 400, "Bad Request", "the body is empty: send the trace");
    /* id = SHA-256 of "trace", the marker and the bytes' SHA-256 (hex) */
    char bh[65], key[160];
    mfu_sha256_hex(r->body, r->len, bh);
    int kn = snprintf(key, sizeof key, "trace\n%s\n%s", r->marker, bh);
    mfu_sha256_hex(key, (size_t)kn, r->id);
    if (http_cached(r, 1)) return http_queue_answer(r);
    return suspend_and_submit(r);
}

/* GET /problems/{type}: the type's page, Markdown unless the client
 * accepts text/html (a browser following the type URI). */
static enum MHD_Result handle_problem(struct srv_req *r)
{
    size_t len = 0;
    const char *md = srv_problem_page(r->id, &len);
    if (!md) return http_queue_problem(r, 404, "Not Found", "no such problem type");
    const char *accept = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Accept");
    if (accept && strstr(accept, "text/html")) {
        size_t n = 0;
        char *html = srv_problem_html(r->id, md, len, &n);
        if (!html) return http_queue_problem(r, 503, "Service Unavailable", "out of memory");
        srv_answer_raw(r, 200, "text/html; charset=utf-8", html, n);
        return http_queue_answer(r);
    }
    return http_queue_static(r, 200, "text/markdown; charset=utf-8", md, len);
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
        return http_queue_answer(r);
    }
    return http_queue_json(r, 200, body);
}

enum MHD_Result http_dispatch(struct srv_req *r)
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
        return l ? http_queue_json(r, 200, l) : http_queue_problem(r, 500, "Internal Server Error", "presets");
    }
    case ROUTE_PRESET_HARDWARE: {
        json_t *l = api_presets_hardware();
        return l ? http_queue_json(r, 200, l) : http_queue_problem(r, 500, "Internal Server Error", "presets");
    }
    case ROUTE_HEALTHZ:
        return http_queue_static(r, 200, "application/json", "{\"status\":\"ok\"}", 15);
    case ROUTE_READYZ: return handle_readyz(r);
    case ROUTE_METRICS: {
        size_t n = 0;
        char *text = srv_metrics_render(&n);
        if (!text) return http_queue_problem(r, 500, "Internal Server Error", "metrics");
        srv_answer_raw(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, n);
        return http_queue_answer(r);
    }
    case ROUTE_OPENAPI:
        return http_queue_static(r, 200, "application/yaml", mfud_openapi_yaml,
                            (size_t)(mfud_openapi_yaml_end - mfud_openapi_yaml));
    case ROUTE_PROBLEM: return handle_problem(r);
    case ROUTE_PAGE: return srv_page_answer(r);
    default: break;
    }
    return http_queue_problem(r, 404, "Not Found", "no such route");
}
