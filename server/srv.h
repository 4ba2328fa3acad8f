/* server/srv.h -- shared types of the mfud daemon: configuration, the
 * per-request state that travels between the HTTP threads and the loop, and
 * the entry points of each server module.
 *
 * OWNERSHIP
 * A struct srv_req is created by the HTTP thread on the first handler call
 * and freed only in the completion callback. While its connection is
 * suspended, the loop thread (and at most one pool worker it hands the
 * request to) owns it; MHD_resume_connection() hands it back. After the
 * resume call, the loop never touches the request again.
 */
#ifndef MFU_SERVER_SRV_H
#define MFU_SERVER_SRV_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

/* ---- configuration ----------------------------------------------------- */

struct srv_config {
    int port;                  /* 0 = ephemeral */
    char bind[64];             /* IPv4 or IPv6 literal */
    char db_path[1024];
    int workers;               /* libuv pool threads running searches */
    int http_threads;          /* libmicrohttpd threads */
    size_t max_body;           /* bytes */
    size_t max_trace_bytes;    /* POST /traces body, bytes */
    int queue_limit;           /* jobs queued or running */
    int64_t cache_max;         /* bytes of stored results */
    int max_conns;             /* concurrent connections */
    int conn_timeout_s;        /* idle connection timeout (slowloris) */
    double default_wait_s;     /* POST /search waits this long before 202 */
    double db_wait_s;          /* at start, keep trying an unreachable PostgreSQL this long */
    double max_wait_s;         /* cap on Prefer: wait=N */
    double max_search_s;       /* cap on a request's search.deadline_s */
    int log_level;             /* SRV_LOG_* */
    char auth_token[256];      /* "" = no auth; else Bearer token for POST routes */
    int reuse_port;            /* 1: SO_REUSEPORT (several processes on one port) */
    char cors_origin[256];     /* "" = no CORS headers; else Access-Control-Allow-Origin */
    int test_job_delay_ms;     /* tests only: hold each job before searching */
    int64_t mem_cache;         /* bytes of finished results kept rendered in memory */
};

/* ---- logging (server/log.c) -------------------------------------------- */

enum { SRV_LOG_DEBUG = 0, SRV_LOG_INFO, SRV_LOG_WARN, SRV_LOG_ERROR };
extern int srv_log_level;
int srv_log_level_parse(const char *s);
/* One line to stderr: ts=... level=... then the message (key=value pairs). */
void srv_log_line(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
#define srv_log(level, ...)                                                                   \
    do {                                                                                      \
        if ((level) >= srv_log_level) srv_log_line((level), __VA_ARGS__);                    \
    } while (0)

/* ---- routes ------------------------------------------------------------ */

enum srv_route {
    ROUTE_SEARCH = 0,
    ROUTE_RESULT,    /* /results/{id} */
    ROUTE_RESULTS,
    ROUTE_ROOFLINE,
    ROUTE_CALIBRATE, /* POST /calibrate: runs on the pool like /roofline */
    ROUTE_COMPARE,   /* POST /compare: a job like /search (results at /results/{id}) */
    ROUTE_TRACES,    /* POST /traces: a profiler trace measured and stored (GET /traces/{id}) */
    ROUTE_PRESET_MODELS,
    ROUTE_PRESET_HARDWARE,
    ROUTE_HEALTHZ,
    ROUTE_READYZ,
    ROUTE_METRICS,
    ROUTE_OPENAPI,
    ROUTE_PROBLEM,   /* /problems/{type}: the page of a problem type */
    ROUTE_PAGE,      /* GET / and /ui/{file}: the page (server/page.c) */
    ROUTE_OTHER,     /* unknown paths */
    ROUTE_COUNT
};
extern const char *const srv_route_names[ROUTE_COUNT];

/* ---- the request state ------------------------------------------------- */

/* What the loop hands back for a job: rendered by the HTTP thread. */
struct srv_view {
    char id[65];
    const char *status;        /* queued | running | done | failed (static) */
    double progress;           /* 0..1 */
    int64_t evaluated;
    int64_t created_ms, started_ms, finished_ms; /* 0 = unset */
    char *result;              /* owned: result JSON text (done) */
    char *error;               /* owned: problem JSON text (failed) */
};

enum srv_answer { ANS_NONE = 0, ANS_RAW, ANS_VIEW };
/* What GET /results/{id}/... renders from a done result instead of the
 * status document (docs/charts.md, docs/traces.md). */
enum { SRV_ART_NONE = 0, SRV_ART_GAP, SRV_ART_MEMORY, SRV_ART_TIMELINE, SRV_ART_COMPARE, SRV_ART_TRACE,
       SRV_ART_ROOFLINE /* POST /roofline answered as SVG (server/page.c) */ };
struct srv_rentry;

struct srv_req {
    struct MHD_Connection *conn;
    enum srv_route route;
    int method;                /* SRV_M_* */
    double t_start;            /* monotonic seconds */
    int code;                  /* final HTTP status, for metrics and logs */

    /* body, bounded by max_body */
    char *body;
    size_t len, cap;
    int too_large;
    int drop_body;             /* answered from the headers: the body is read and dropped */
    int suspended;

    /* inputs the loop needs */
    char id[65];
    char *normalized;          /* owned: canonical JSON text (POST /search) */
    char *input;               /* owned: the request as received, compact */
    char *model, *hardware;    /* owned: summary names, may be NULL */
    int64_t devices;
    json_t *roofline_req;      /* owned: POST /roofline or /calibrate body */
    struct api_prepared *prep; /* owned: POST /search parsed once (api_prepare_search),
                                * handed to the job that runs it */
    int profile_pending;       /* POST /search or /compare naming a stored hardware
                                * profile: input holds the request, not yet prepared */
    int prefer_async;
    double wait_s;             /* how long POST /search may wait */
    int limit, offset;         /* GET /results */
    int64_t after_ms;
    char after_id[65];
    int has_after;

    /* rendering options (HTTP thread) */
    int want_csv;
    int artifact;              /* SRV_ART_*: a chart or the predicted trace of a done result */
    char marker[65];           /* POST /traces: the step annotation prefix ("" = ProfilerStep#) */
    int rank;                  /* its configuration (1-based; 0 = measured) */
    int top_k, res_offset;     /* -1 = not given */
    char *if_none_match;       /* owned */

    /* the answer, filled by the loop or a worker before resuming */
    enum srv_answer answer;
    int out_code;
    char *out_body;            /* owned */
    size_t out_len;
    const char *out_ctype;     /* static */
    int out_retry_after;       /* seconds; 0 = none */
    int cache_hit;
    struct srv_view view;
    struct srv_rentry *entry;  /* done: the cached rendering (a reference), or NULL */

    /* loop-side links */
    struct srv_req *next;      /* command queue / waiter list */
    double deadline;           /* waiter deadline (monotonic s) */
    void *job;                 /* the job a waiter waits on */
};

enum { SRV_M_GET = 1, SRV_M_HEAD, SRV_M_POST, SRV_M_OPTIONS, SRV_M_OTHER };

double srv_now_mono(void);
/* RFC 3339 UTC with milliseconds. */
void srv_iso_time(char *out, size_t n, int64_t ms);
int64_t srv_now_ms(void);

/* ---- http (server/http.c; routes.c, respond.c, watchdog.c) ------------ */

struct MHD_Daemon *srv_http_start(const struct srv_config *cfg, int *out_port);
/* Stop the request-deadline watchdog, then the daemon. */
void srv_http_stop(struct MHD_Daemon *d);

/* ---- connections (server/conn.c) ---------------------------------------- */

/* Stop accepting new connections (SIGTERM); the listening socket is closed
 * only in srv_http_stop, once MHD's threads no longer poll it. */
void srv_http_quiesce(struct MHD_Daemon *d);
/* srv_http_stop's part: close what srv_http_quiesce kept. */
void srv_conn_close_quiesced(void);
/* The answer is ready: resume the connection (any thread). */
void srv_http_resume(struct srv_req *r);

/* ---- answers (server/answer.c) ------------------------------------------ */

/* Fill a problem+json answer in r (does not resume). */
void srv_answer_problem(struct srv_req *r, int code, const char *title, const char *detail);
/* Take over a body (malloc'd, len bytes, NULL: none) as the answer: code
 * with Content-Type ctype (a string that outlives the answer). */
void srv_answer_raw(struct srv_req *r, int code, const char *ctype, char *body, size_t len);
/* Take over a JSON body (new reference stolen) as the answer. */
void srv_answer_json(struct srv_req *r, int code, json_t *body);
/* The answer of an api_status (its problem document). */
struct api_status;
void srv_answer_status(struct srv_req *r, const struct api_status *st);
/* Parse and normalize a POST /search or /compare body (server/routes.c):
 * r's prepared search, normal form, key (id), input and summary names. 0,
 * or -1 with the problem in st. Any thread; req stays the caller's. */
int srv_prepare_search(struct srv_req *r, json_t *req, struct api_status *st);
/* Drop whatever answer r holds. */
void srv_answer_reset(struct srv_req *r);
/* Free r and all it owns, its answer too (NULL: nothing; server/http.c). */
void srv_req_free(struct srv_req *r);

#define SRV_EXPOSE_HEADERS "ETag, Location, Retry-After, Preference-Applied, Content-Location"
/* A done result never changes (its id is its input's hash): its 200 and
 * its 304 both say so (RFC 9110 15.4.5). */
#define SRV_CACHE_IMMUTABLE "public, max-age=31536000, immutable"

/* ---- result documents (server/views.c) ---------------------------------- */

/* The full status document of a done job: {"id",...,"result":<result>}.
 * *result_off is where the result text starts in it. malloc'd. */
char *srv_render_done_doc(const struct srv_view *v, const char *result, size_t *len,
                          size_t *result_off);
/* The status document without the result: {"id",...,"finished_at"[,"error"]}. */
char *srv_view_head(const struct srv_view *v, int done, int failed);
/* head + ,"result": + result + } (the head's closing brace dropped). */
char *srv_view_splice(const char *head, size_t hlen, const char *rt, size_t rlen, size_t *len,
                      size_t *result_off);
/* Where each configuration of a result's "configs" starts and ends. */
size_t *srv_configs_index(const char *text, size_t len);
/* The result with configs [offset, offset + top_k) only, through the index. */
char *srv_result_slice(const char *text, size_t len, const size_t *ix, int top_k, int offset);
/* The result as CSV; keep the header and rows [offset, offset + top_k). */
char *srv_result_csv(const char *result, size_t len);
void srv_csv_slice(char *csv, int top_k, int offset);
/* key: an RFC 3339 time, or null for ms <= 0 (jansson's 0 / -1) */
int srv_set_time(json_t *o, const char *key, int64_t ms);

/* ---- the in-memory cache of finished results (server/rcache.c) ---------- */

struct srv_rentry;
void srv_rcache_init(size_t max_bytes);
/* The Access-Control-Allow-Origin of prebuilt responses ("" none). */
void srv_rcache_set_cors(const char *origin);
/* The CORS headers (none unless --cors-origin named an origin). */
void srv_add_cors(struct MHD_Response *resp);
/* A reference to the cached entry for id, or NULL. Records an access (and a
 * cache hit when hit is nonzero) for the database's hit count and LRU. Any
 * thread. */
struct srv_rentry *srv_rcache_get(const char *id, int hit);
/* Render and insert a done job (v: id and timestamps; result: its text).
 * Returns a reference (possibly to an entry that did not fit the budget:
 * then it has no prebuilt responses), or NULL when out of memory. Loop. */
struct srv_rentry *srv_rcache_put(const struct srv_view *v, const char *result);
void srv_rcache_remove(const char *id);
/* Record an access to id (not necessarily cached) for the database's hit
 * count and LRU, drained with the others. Any thread. */
void srv_rcache_note_access(const char *id, int hit);
void srv_rcache_clear(void);
struct srv_rentry *srv_rcache_ref(struct srv_rentry *e);
void srv_rcache_unref(struct srv_rentry *e);
/* The loop writes pending accesses to the database: cb per id. */
size_t srv_rcache_drain_touches(void (*cb)(void *ctx, const char *id, int64_t hits,
                                           int64_t accessed_ms),
                                void *ctx);
void srv_rcache_stats(size_t *entries, size_t *bytes);
/* Queue the prebuilt, shared response (200 with the document, or the empty
 * 304 with the same ETag) on c; *ret is MHD_queue_response's answer.
 * Returns -1 (nothing queued) when the entry has no prebuilt responses
 * (not cached, or removed meanwhile): render the answer instead. */
int srv_rentry_queue(struct srv_rentry *e, struct MHD_Connection *c, int not_modified,
                     enum MHD_Result *ret);
const char *srv_rentry_body(const struct srv_rentry *e, size_t *len);
const char *srv_rentry_result(const struct srv_rentry *e, size_t *len);
/* The ranked table as CSV, rendered once by render() and kept. */
const char *srv_rentry_csv(struct srv_rentry *e, size_t *len,
                           char *(*render)(const char *result, size_t result_len));
/* An index of the result's text built once by build() and kept (http.c:
 * where each ranked configuration lies, so a slice is a copy). */
const size_t *srv_rentry_index(struct srv_rentry *e, size_t *(*build)(const char *result, size_t result_len));

/* ---- jobs and the loop (server/jobs.c and its rooms: jobs_int.h) ------ */

/* Open the DB, re-queue interrupted jobs, set up the loop handles. */
/* The process around the daemon, before srv_jobs_init: libuv's pool size,
 * SIGPIPE and SIGXFSZ ignored, the metrics. */
void srv_process_init(const struct srv_config *cfg);
int srv_jobs_init(const struct srv_config *cfg);
/* Run the loop on the calling thread until shutdown; then close the DB. */
void srv_jobs_run(void);
/* After srv_http_stop: what the HTTP threads shared with the loop. */
void srv_jobs_fini(void);
/* From any thread: hand r to the loop. Returns 0, or -1 when the loop is
 * closed (the caller answers 503 itself). The connection must already be
 * suspended. */
int srv_jobs_submit(struct srv_req *r);
/* HTTP thread, GET /results/{id} not in the memory cache: answer a done
 * result read from the store here when the store allows other threads
 * (PostgreSQL); 1 when r holds the answer, 0 when the loop must answer. */
int srv_jobs_read_done(struct srv_req *r);
/* Readiness, from any thread. */
int srv_jobs_ready(char *why, size_t whylen);
void srv_jobs_set_mhd(struct MHD_Daemon *d);

/* ---- metrics (server/metrics.c) ---------------------------------------- */

void srv_metrics_init(int workers);
void srv_metrics_request(enum srv_route route, int code, double seconds);
void srv_metrics_cache(int hit);
void srv_metrics_job_created(void);
void srv_metrics_job_deduplicated(void);
void srv_metrics_job_queued_delta(int d);
void srv_metrics_job_running_delta(int d);
void srv_metrics_job_completed(const char *outcome); /* done | failed | cancelled */
void srv_metrics_evaluated(uint64_t n);
void srv_metrics_db_size(int64_t bytes);
/* The store's backend (a static name), and its calls so far (the loop
 * copies db_stats here once a second). */
void srv_metrics_db_backend(const char *name);
void srv_metrics_db_calls(int64_t queries, int64_t errors, double seconds);
/* Shared stores: jobs taken over from a replica whose lease ran out; jobs
 * whose outcome this replica could not store (its lease lost). */
void srv_metrics_job_failover(int n);
void srv_metrics_job_lease_lost(void);
/* Prometheus text (malloc'd). */
char *srv_metrics_render(size_t *out_len);

/* ---- the embedded contract (server/openapi_blob.c) --------------------- */

extern const char mfud_openapi_yaml[];
extern const char mfud_openapi_yaml_end[];

/* ---- problem type pages (server/problems.c) ------------------------------ */

/* The Markdown page of problem type name ("invalid-request"), or NULL. */
const char *srv_problem_page(const char *name, size_t *len);
/* The page as HTML (malloc'd). */
char *srv_problem_html(const char *name, const char *md, size_t len, size_t *out_len);

/* ---- the page (server/page.c) ------------------------------------------- */

/* Is url "/" or one of the page's files under /ui/? Its name (""
 * for the page) goes to id_out (65 bytes). */
int srv_page_match(const char *url, char *id_out);
/* Queue the file r->id names (ETag, 304 on If-None-Match). */
enum MHD_Result srv_page_answer(struct srv_req *r);
/* POST /roofline: remember whether the client wants the answer as SVG
 * (Accept lists image/svg+xml and not application/json). HTTP thread. */
void srv_roofline_accept(struct srv_req *r);
/* When it does: answer the roofline result (reference stolen) as its SVG
 * chart and return 1; else touch nothing and return 0. Worker thread. */
int srv_roofline_svg_answer(struct srv_req *r, json_t *result);

#endif
