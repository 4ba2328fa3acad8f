/* server/metrics.c -- Prometheus counters, gauges and a latency histogram,
 * written by the HTTP threads, the loop and the pool workers (C11 atomics,
 * relaxed: each value is independent), rendered as text format 0.0.4.
 * Labels are bounded sets (route templates, status codes, outcomes): no ids.
 */
#include "srv.h"

#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api.h"

const char *const srv_route_names[ROUTE_COUNT] = {
    [ROUTE_SEARCH] = "/search",
    [ROUTE_RESULT] = "/results/{id}",
    [ROUTE_RESULTS] = "/results",
    [ROUTE_ROOFLINE] = "/roofline",
    [ROUTE_CALIBRATE] = "/calibrate",
    [ROUTE_COMPARE] = "/compare",
    [ROUTE_TRACES] = "/traces",
    [ROUTE_PRESET_MODELS] = "/presets/models",
    [ROUTE_PRESET_HARDWARE] = "/presets/hardware",
    [ROUTE_HEALTHZ] = "/healthz",
    [ROUTE_READYZ] = "/readyz",
    [ROUTE_METRICS] = "/metrics",
    [ROUTE_OPENAPI] = "/openapi.yaml",
    [ROUTE_PROBLEM] = "/problems/{type}",
    [ROUTE_PAGE] = "/",
    [ROUTE_OTHER] = "other",
};

static const int codes[] = {200, 201, 202, 204, 304, 400, 401, 404, 405, 406, 413, 415, 422, 500, 501, 503};
#define N_CODES ((int)(sizeof codes / sizeof codes[0]))
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                 0.1,    0.25,  0.5,    1.0,   2.5,  5.0,   10.0};
#define N_BUCKETS ((int)(sizeof buckets / sizeof buckets[0]))

static struct {
    atomic_ullong requests[ROUTE_COUNT][N_CODES + 1]; /* last: other codes */
    atomic_ullong hist[ROUTE_COUNT][N_BUCKETS + 1];   /* non-cumulative; last: +Inf */
    atomic_ullong hist_sum_us[ROUTE_COUNT];
    atomic_ullong cache_hit, cache_miss;
    atomic_ullong jobs_created, jobs_dedup;
    atomic_llong jobs_queued, jobs_running;
    atomic_ullong done, failed, cancelled;
    atomic_ullong evaluated;
    atomic_llong db_size;
    atomic_llong db_queries, db_errors, db_query_us;
    atomic_ullong failovers, lease_lost;
    _Atomic(const char *) db_backend;
    int workers;
    double start_time;
} m;

/* ---- process metrics ----------------------------------------------------
 * The standard process_* exports of the Prometheus client libraries
 * (prometheus.io/docs/instrumenting/writing_clientlibs/, "Process metrics":
 * names, help strings and units as listed there), read from /proc on Linux
 * as client_golang's process collector does: /proc/self/stat (utime,
 * stime, starttime, vsize, rss), /proc/stat (btime), /proc/self/fd, and the
 * RLIMIT_NOFILE / RLIMIT_AS soft limits. Where /proc cannot be read the
 * metric is left out ("If a language or runtime doesn't expose one of the
 * variables it'd just not export it"), except the start time, which falls
 * back to the time srv_metrics_init ran. */

struct proc_stat {
    double cpu_s, start_s, vsize, rss;
    int ok;
};

/* Fields 14, 15 (utime, stime: clock ticks), 22 (starttime: ticks after
 * boot), 23 (vsize: bytes), 24 (rss: pages) of /proc/self/stat (proc(5)). */
static void read_proc_stat(struct proc_stat *p)
{
    memset(p, 0, sizeof *p);
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f) return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name (field 2) is in parentheses and may hold spaces */
    char *s = strrchr(buf, ')');
    if (!s) return;
    unsigned long utime, stime, vsize;
    unsigned long long starttime;
    long rss;
    if (sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d %llu %lu %ld",
               &utime, &stime, &starttime, &vsize, &rss) != 5)
        return;
    double tick = (double)sysconf(_SC_CLK_TCK);
    if (!(tick > 0)) return;
    long page = sysconf(_SC_PAGESIZE);
    p->cpu_s = (double)(utime + stime) / tick;
    p->vsize = (double)vsize;
    p->rss = (double)rss * (double)(page > 0 ? page : 4096);
    p->ok = 1;
    /* boot time: the btime line of /proc/stat (seconds since the epoch) */
    f = fopen("/proc/stat", "r");
    if (!f) return;
    char line[256];
    long long btime = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lld", &btime) == 1) break;
    fclose(f);
    if (btime >= 0) p->start_s = (double)btime + (double)starttime / tick;
}

static long count_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the descriptor of the listing itself */
}

void srv_metrics_init(int workers)
{
    m.workers = workers;
    struct proc_stat p;
    read_proc_stat(&p);
    if (p.start_s > 0) {
        m.start_time = p.start_s;
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        m.start_time = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    }
}

void srv_metrics_request(enum srv_route route, int code, double seconds)
{
    if ((int)route < 0 || route >= ROUTE_COUNT) route = ROUTE_OTHER;
    int ci = N_CODES;
    for (int i = 0; i < N_CODES; i++)
        if (codes[i] == code) ci = i;
    atomic_fetch_add_explicit(&m.requests[route][ci], 1, memory_order_relaxed);
    int b = N_BUCKETS;
    for (int i = 0; i < N_BUCKETS; i++)
        if (seconds <= buckets[i]) {
            b = i;
            break;
        }
    atomic_fetch_add_explicit(&m.hist[route][b], 1, memory_order_relaxed);
    if (seconds < 0) seconds = 0;
    atomic_fetch_add_explicit(&m.hist_sum_us[route], (unsigned long long)(seconds * 1e6),
                              memory_order_relaxed);
}

void srv_metrics_cache(int hit)
{
    atomic_fetch_add_explicit(hit ? &m.cache_hit : &m.cache_miss, 1, memory_order_relaxed);
}
void srv_metrics_job_created(void)
{
    atomic_fetch_add_explicit(&m.jobs_created, 1, memory_order_relaxed);
}
void srv_metrics_job_deduplicated(void)
{
    atomic_fetch_add_explicit(&m.jobs_dedup, 1, memory_order_relaxed);
}
void srv_metrics_job_queued_delta(int d)
{
    atomic_fetch_add_explicit(&m.jobs_queued, d, memory_order_relaxed);
}
void srv_metrics_job_running_delta(int d)
{
    atomic_fetch_add_explicit(&m.jobs_running, d, memory_order_relaxed);
}
void srv_metrics_job_completed(const char *outcome)
{
    atomic_ullong *c = strcmp(outcome, "done") == 0     ? &m.done
                       : strcmp(outcome, "failed") == 0 ? &m.failed
                                                        : &m.cancelled;
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}
void srv_metrics_evaluated(uint64_t n)
{
    atomic_fetch_add_explicit(&m.evaluated, n, memory_order_relaxed);
}
void srv_metrics_db_size(int64_t bytes)
{
    atomic_store_explicit(&m.db_size, bytes, memory_order_relaxed);
}

void srv_metrics_db_backend(const char *name)
{
    atomic_store(&m.db_backend, name);
}
void srv_metrics_db_calls(int64_t queries, int64_t errors, double seconds)
{
    atomic_store_explicit(&m.db_queries, queries, memory_order_relaxed);
    atomic_store_explicit(&m.db_errors, errors, memory_order_relaxed);
    atomic_store_explicit(&m.db_query_us, (long long)(seconds * 1e6), memory_order_relaxed);
}
void srv_metrics_job_failover(int n)
{
    atomic_fetch_add_explicit(&m.failovers, (unsigned long long)n, memory_order_relaxed);
}
void srv_metrics_job_lease_lost(void)
{
    atomic_fetch_add_explicit(&m.lease_lost, 1, memory_order_relaxed);
}

struct buf {
    char *p;
    size_t len, cap;
    int oom;
};

static void put(struct buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
#include <stdarg.h>
static void put(struct buf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t ncap = b->cap * 2 + (size_t)n;
        char *np = realloc(b->p, ncap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
}

#define LD(x) ((unsigned long long)atomic_load_explicit(&(x), memory_order_relaxed))
#define LDS(x) ((long long)atomic_load_explicit(&(x), memory_order_relaxed))

/* The store's metrics, labelled by backend (docs/storage.md). */
static void render_db(struct buf *b)
{
    const char *be = atomic_load(&m.db_backend);
    if (!be) be = "none";
    put(b, "# HELP mfud_db_queries_total Calls to the result and job store.\n"
           "# TYPE mfud_db_queries_total counter\nmfud_db_queries_total{backend=\"%s\"} %lld\n", be,
        LDS(m.db_queries));
    put(b, "# HELP mfud_db_errors_total Calls to the store that failed.\n"
           "# TYPE mfud_db_errors_total counter\nmfud_db_errors_total{backend=\"%s\"} %lld\n", be,
        LDS(m.db_errors));
    put(b, "# HELP mfud_db_query_seconds_total Time spent in calls to the store.\n"
           "# TYPE mfud_db_query_seconds_total counter\nmfud_db_query_seconds_total{backend=\"%s\"} %.6f\n", be,
        (double)LDS(m.db_query_us) / 1e6);
    put(b, "# HELP mfud_jobs_failovers_total Jobs taken over from a replica whose lease ran out.\n"
           "# TYPE mfud_jobs_failovers_total counter\nmfud_jobs_failovers_total %llu\n", LD(m.failovers));
    put(b, "# HELP mfud_jobs_lease_lost_total Finished jobs whose outcome another replica stores "
           "(this one's lease was lost).\n# TYPE mfud_jobs_lease_lost_total counter\n"
           "mfud_jobs_lease_lost_total %llu\n", LD(m.lease_lost));
}

/* The process_* metrics (see "process metrics" above). */
static void render_process(struct buf *b)
{
    struct proc_stat ps;
    read_proc_stat(&ps);
    if (ps.ok) {
        put(b, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
                "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n",
            ps.cpu_s);
        put(b, "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %.0f\n",
            ps.vsize);
        put(b, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %.0f\n",
            ps.rss);
    }
    long fds = count_open_fds();
    if (fds >= 0)
        put(b, "# HELP process_open_fds Number of open file descriptors.\n"
                "# TYPE process_open_fds gauge\nprocess_open_fds %ld\n", fds);
    struct rlimit rl;
    /* an unlimited soft limit is reported as 2^64 - 1, as client_golang does */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        put(b, "# HELP process_max_fds Maximum number of open file descriptors.\n"
                "# TYPE process_max_fds gauge\nprocess_max_fds %.17g\n",
            rl.rlim_cur == RLIM_INFINITY ? 18446744073709551615.0 : (double)rl.rlim_cur);
    if (getrlimit(RLIMIT_AS, &rl) == 0)
        put(b, "# HELP process_virtual_memory_max_bytes Maximum amount of virtual memory available in bytes.\n"
                "# TYPE process_virtual_memory_max_bytes gauge\nprocess_virtual_memory_max_bytes %.17g\n",
            rl.rlim_cur == RLIM_INFINITY ? 18446744073709551615.0 : (double)rl.rlim_cur);
    put(b, "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
            "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.2f\n",
        m.start_time);
}

/* Requests by route and code, and their durations. */
static void render_http(struct buf *b)
{
    put(b, "# HELP mfud_http_requests_total HTTP requests answered, by route and status code.\n"
            "# TYPE mfud_http_requests_total counter\n");
    for (int r = 0; r < ROUTE_COUNT; r++)
        for (int c = 0; c <= N_CODES; c++) {
            unsigned long long v = LD(m.requests[r][c]);
            if (!v) continue;
            if (c < N_CODES)
                put(b, "mfud_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
                    srv_route_names[r], codes[c], v);
            else
                put(b, "mfud_http_requests_total{route=\"%s\",code=\"other\"} %llu\n",
                    srv_route_names[r], v);
        }
    put(b, "# HELP mfud_http_request_duration_seconds Time from request start to response.\n"
            "# TYPE mfud_http_request_duration_seconds histogram\n");
    for (int r = 0; r < ROUTE_COUNT; r++) {
        unsigned long long cum = 0;
        for (int i = 0; i <= N_BUCKETS; i++) cum += LD(m.hist[r][i]);
        if (!cum) continue;
        cum = 0;
        for (int i = 0; i < N_BUCKETS; i++) {
            cum += LD(m.hist[r][i]);
            put(b, "mfud_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                srv_route_names[r], buckets[i], cum);
        }
        cum += LD(m.hist[r][N_BUCKETS]);
        put(b, "mfud_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n",
            srv_route_names[r], cum);
        put(b, "mfud_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n", srv_route_names[r],
            (double)LD(m.hist_sum_us[r]) * 1e-6);
        put(b, "mfud_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
            srv_route_names[r], cum);
    }
}

/* The result cache, parses, jobs and workers. */
static void render_jobs(struct buf *b)
{
    put(b, "# HELP mfud_cache_lookups_total POST /search lookups in the result cache.\n"
            "# TYPE mfud_cache_lookups_total counter\n"
            "mfud_cache_lookups_total{result=\"hit\"} %llu\n"
            "mfud_cache_lookups_total{result=\"miss\"} %llu\n",
        LD(m.cache_hit), LD(m.cache_miss));
    put(b, "# HELP mfud_request_parses_total Requests parsed and validated (a search once, on the HTTP thread).\n"
            "# TYPE mfud_request_parses_total counter\nmfud_request_parses_total %lu\n",
        api_parse_count());
    put(b, "# HELP mfud_jobs_created_total Search jobs created (new or re-queued at start).\n"
            "# TYPE mfud_jobs_created_total counter\nmfud_jobs_created_total %llu\n",
        LD(m.jobs_created));
    put(b, "# HELP mfud_jobs_deduplicated_total Requests joined to an identical job in flight.\n"
            "# TYPE mfud_jobs_deduplicated_total counter\nmfud_jobs_deduplicated_total %llu\n",
        LD(m.jobs_dedup));
    put(b, "# HELP mfud_jobs_queued Jobs waiting for a worker.\n# TYPE mfud_jobs_queued gauge\n"
            "mfud_jobs_queued %lld\n", LDS(m.jobs_queued));
    put(b, "# HELP mfud_jobs_running Jobs running on a worker.\n# TYPE mfud_jobs_running gauge\n"
            "mfud_jobs_running %lld\n", LDS(m.jobs_running));
    put(b, "# HELP mfud_jobs_completed_total Jobs finished, by outcome.\n"
            "# TYPE mfud_jobs_completed_total counter\n"
            "mfud_jobs_completed_total{outcome=\"done\"} %llu\n"
            "mfud_jobs_completed_total{outcome=\"failed\"} %llu\n"
            "mfud_jobs_completed_total{outcome=\"cancelled\"} %llu\n",
        LD(m.done), LD(m.failed), LD(m.cancelled));
    put(b, "# HELP mfud_search_configurations_evaluated_total Configurations evaluated by "
            "finished searches.\n# TYPE mfud_search_configurations_evaluated_total counter\n"
            "mfud_search_configurations_evaluated_total %llu\n", LD(m.evaluated));
    put(b, "# HELP mfud_worker_threads Size of the search worker pool.\n"
            "# TYPE mfud_worker_threads gauge\nmfud_worker_threads %d\n", m.workers);
    put(b, "# HELP mfud_db_results_bytes Stored size of finished results.\n"
            "# TYPE mfud_db_results_bytes gauge\nmfud_db_results_bytes %lld\n", LDS(m.db_size));
}

char *srv_metrics_render(size_t *out_len)
{
    struct buf b = {malloc(16384), 0, 16384, 0};
    if (!b.p) return NULL;
    put(&b, "# HELP mfud_build_info Build metadata.\n# TYPE mfud_build_info gauge\n"
            "mfud_build_info{engine_version=\"%s\"} 1\n", MFU_ENGINE_VERSION);
    render_process(&b);
    render_http(&b);
    render_jobs(&b);
    render_db(&b);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *out_len = b.len;
    return b.p;
}
