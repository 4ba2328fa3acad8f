/* server/jobs.c -- the libuv loop (server/jobs_int.h has the design):
 * the job table, answers, the command queue, waiters, readiness, start
 * and stop. */
#include "jobs_int.h"

#include <errno.h>

static void persist_started(void)
{
    for (struct job *j = jobs_app.active; j; j = j->next) {
        int64_t st = atomic_load(&j->started_ms);
        if (st && !j->started_persisted) {
            j->started_persisted = 1;
            int rc = db_set_running(jobs_app.db, j->id, st);
            if (rc == DB_ELOST)
                srv_log(SRV_LOG_WARN, "msg=\"lease lost before the job started\" id=%.12s", j->id);
            else if (rc != DB_OK)
                srv_log(SRV_LOG_WARN, "msg=\"db set running failed\" err=\"%s\"",
                        db_errmsg(jobs_app.db));
        }
    }
}

static void on_async(uv_async_t *a)
{
    uv_mutex_lock(&jobs_app.qlock);
    struct srv_req *r = jobs_app.qhead;
    jobs_app.qhead = jobs_app.qtail = NULL;
    uv_mutex_unlock(&jobs_app.qlock);
    while (r) {
        struct srv_req *next = r->next;
        r->next = NULL;
        jobs_run_command(r);
        r = next;
    }
    if (jobs_app.db) persist_started();
}


int srv_jobs_submit(struct srv_req *r)
{
    uv_mutex_lock(&jobs_app.qlock);
    if (jobs_app.closed) {
        uv_mutex_unlock(&jobs_app.qlock);
        return -1;
    }
    r->next = NULL;
    if (jobs_app.qtail) jobs_app.qtail->next = r;
    else jobs_app.qhead = r;
    jobs_app.qtail = r;
    uv_mutex_unlock(&jobs_app.qlock);
    uv_async_send(&jobs_app.async);
    return 0;
}

int srv_jobs_ready(char *why, size_t whylen)
{
    /* the flags that make it not ready, in the order they are reported */
    static const struct {
        atomic_int *ok;
        const char *why;
    } gates[] = {
        {&jobs_app.db_ok, "database not open"},
        {&jobs_app.pool_ok, "worker pool not running"},
        {&jobs_app.file_ok, "the database file was deleted or replaced while open: restart mfud"},
        {&jobs_app.reachable, "the database cannot be reached; reconnecting"},
        {&jobs_app.store_ok, "database writes failing; finished results held in memory until they are written"},
    };
    for (size_t i = 0; i < sizeof gates / sizeof gates[0]; i++) {
        if (!atomic_load(gates[i].ok)) {
            snprintf(why, whylen, "%s", gates[i].why);
            return 0;
        }
    }
    int n = atomic_load(&jobs_app.n_active_pub);
    if (n >= jobs_app.cfg->queue_limit) {
        snprintf(why, whylen, "job queue full (%d of %d)", n, jobs_app.cfg->queue_limit);
        return 0;
    }
    snprintf(why, whylen, "database open (%s), %d workers, %d of %d jobs queued or running",
             db_backend(jobs_app.db), jobs_app.cfg->workers, n, jobs_app.cfg->queue_limit);
    return 1;
}

void srv_jobs_set_mhd(struct MHD_Daemon *d)
{
    jobs_app.mhd = d;
}

/* ---- start and stop ---------------------------------------------------- */


static void close_cb(uv_handle_t *h)
{
}

static void maybe_finish_shutdown(void)
{
    if (!jobs_app.stopping || jobs_app.n_active > 0 || jobs_app.n_roofline > 0) return;
    if (uv_is_closing((uv_handle_t *)&jobs_app.async)) return;
    /* Refuse further submissions and answer what is still queued. */
    uv_mutex_lock(&jobs_app.qlock);
    jobs_app.closed = 1;
    struct srv_req *r = jobs_app.qhead;
    jobs_app.qhead = jobs_app.qtail = NULL;
    uv_mutex_unlock(&jobs_app.qlock);
    while (r) {
        struct srv_req *next = r->next;
        jobs_answer_overloaded(r, "the server is shutting down");
        srv_http_resume(r);
        r = next;
    }
    jobs_flush_touches();
    uv_close((uv_handle_t *)&jobs_app.async, close_cb);
    uv_close((uv_handle_t *)&jobs_app.sigint, close_cb);
    uv_close((uv_handle_t *)&jobs_app.sigterm, close_cb);
    uv_close((uv_handle_t *)&jobs_app.wait_timer, close_cb);
    uv_close((uv_handle_t *)&jobs_app.flush_timer, close_cb);
}

static void begin_shutdown(int signum)
{
    if (jobs_app.stopping) return;
    jobs_app.stopping = 1;
    atomic_store(&jobs_app.pool_ok, 0);
    srv_log(SRV_LOG_INFO, "msg=shutdown signal=%d active=%d", signum, jobs_app.n_active);
    if (jobs_app.mhd) srv_http_quiesce(jobs_app.mhd);
    /* Waiters get 202: their jobs are in the database and run next start. */
    while (jobs_app.waiters) {
        struct srv_req *r = jobs_app.waiters;
        jobs_app.waiters = r->next;
        jobs_view_from_job(&r->view, r->job);
        r->job = NULL;
        jobs_answer_view(r, 202);
        srv_http_resume(r);
    }
    for (struct job *j = jobs_app.active; j; j = j->next) {
        atomic_store(&j->cancel, 1);
        uv_cancel((uv_req_t *)&j->work);
    }
    maybe_finish_shutdown();
}

static void on_signal(uv_signal_t *h, int signum)
{
    begin_shutdown(signum);
}

static void on_db_evict(void *ctx, const char *id)
{
    if (jobs_app.finishing_id && strcmp(jobs_app.finishing_id, id) == 0) jobs_app.finishing_evicted = 1;
    srv_rcache_remove(id);
}

void srv_process_init(const struct srv_config *cfg)
{
    /* The pool size is read by libuv when the pool first starts. */
    char nw[16];
    snprintf(nw, sizeof nw, "%d", cfg->workers);
    setenv("UV_THREADPOOL_SIZE", nw, 1);
    /* a write to a connection the peer closed is an error, not a signal */
    signal(SIGPIPE, SIG_IGN);
    /* a write past the file-size limit (ulimit -f) fails with EFBIG, as on
     * a full disk, instead of killing the daemon (issue 14 item 2) */
    signal(SIGXFSZ, SIG_IGN);
    /* jansson's allocations counted for the api's out-of-memory policy */
    api_alloc_init();
    srv_metrics_init(cfg->workers);
}

static double mono_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Open the store. A shared PostgreSQL store whose server refuses or does
 * not answer the connection (DB_EUNREACHABLE) is tried again, the pause
 * doubling from 0.2 s to 5 s, until cfg->db_wait_s after the first try
 * (each attempt bounded by libpq's connect_timeout, db/pg_conn.c):
 * replicas started with the database (an orchestrator brings both up at
 * once) wait for it instead of exiting; once running, pg_conn.c
 * reconnects on its own. Anything waiting cannot fix fails at once: a
 * build without libpq, a schema newer than this mfud, a failed
 * migration, a SQLite file that cannot be opened. */
static int open_store(const struct srv_config *cfg)
{
    char err[512], shown[sizeof cfg->db_path];
    db_redact(cfg->db_path, shown, sizeof shown);
    double t0 = mono_now_s(), pause_s = 0.2;
    for (;;) {
        int rc = db_open_pool(cfg->db_path, cfg->cache_max, 1 + cfg->http_threads, &jobs_app.db, err, sizeof err);
        if (rc == DB_OK) return 0;
        double left_s = cfg->db_wait_s - (mono_now_s() - t0);
        if (rc != DB_EUNREACHABLE || left_s <= 0.0) break;
        double d = pause_s < left_s ? pause_s : left_s;
        srv_log(SRV_LOG_WARN, "msg=\"database not reachable, retrying\" path=\"%s\" err=\"%s\" retry_in_s=%.1f waited_s=%.1f",
                shown, err, d, mono_now_s() - t0);
        struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        pause_s = pause_s * 2.0 < 5.0 ? pause_s * 2.0 : 5.0;
    }
    srv_log(SRV_LOG_ERROR, "msg=\"cannot open the database\" path=\"%s\" err=\"%s\" waited_s=%.1f", shown, err,
            mono_now_s() - t0);
    return -1;
}

int srv_jobs_init(const struct srv_config *cfg)
{
    jobs_app.cfg = cfg;
    jobs_app.loop = uv_default_loop();
    /* the store's callers: the loop, and the HTTP threads reading done
     * results where the store allows it (srv_jobs_read_done); workers never
     * call it (their outcomes are stored by the loop) */
    if (uv_rwlock_init(&jobs_app.db_rw) != 0 || open_store(cfg) != 0) return -1;
    atomic_store(&jobs_app.db_ok, 1);
    jobs_app.work_ended = maybe_finish_shutdown;
    atomic_store(&jobs_app.store_ok, 1);
    atomic_store(&jobs_app.file_ok, 1);
    atomic_store(&jobs_app.reachable, 1);
    srv_rcache_init(cfg->mem_cache > 0 ? (size_t)cfg->mem_cache : 0);
    db_set_evict_hook(jobs_app.db, on_db_evict, NULL);
    srv_metrics_db_size(db_size_bytes(jobs_app.db));
    srv_metrics_db_backend(db_backend(jobs_app.db));
    if (uv_mutex_init(&jobs_app.qlock) != 0 || uv_async_init(jobs_app.loop, &jobs_app.async, on_async) != 0)
        return -1;
    uv_signal_init(jobs_app.loop, &jobs_app.sigint);
    uv_signal_init(jobs_app.loop, &jobs_app.sigterm);
    uv_signal_start(&jobs_app.sigint, on_signal, SIGINT);
    uv_signal_start(&jobs_app.sigterm, on_signal, SIGTERM);
    uv_timer_init(jobs_app.loop, &jobs_app.wait_timer);
    uv_timer_init(jobs_app.loop, &jobs_app.flush_timer);
    uv_timer_start(&jobs_app.flush_timer, jobs_on_flush_timer, 1000, 1000);
    int n = 0;
    int rc = db_requeue(jobs_app.db, jobs_requeue_one, &n);
    if (rc < 0) {
        srv_log(SRV_LOG_ERROR, "msg=\"re-queue failed\" err=\"%s\"", db_errmsg(jobs_app.db));
        return -1;
    }
    if (rc > 0) srv_log(SRV_LOG_INFO, "msg=requeued jobs=%d", n);
    atomic_store(&jobs_app.pool_ok, 1);
    return 0;
}

void srv_jobs_run(void)
{
    uv_run(jobs_app.loop, UV_RUN_DEFAULT);
    /* held results: one last try; if the database still cannot take them,
     * their rows stay running and the jobs run again at the next start */
    if (jobs_app.held) jobs_flush_held();
    while (jobs_app.held) {
        struct held *h = jobs_app.held;
        srv_log(SRV_LOG_WARN, "msg=\"held result not written; its job runs again at the next start\" id=%.12s", h->id);
        jobs_app.held = h->next;
        free(h->result);
        free(h->error);
        free(h);
    }
    atomic_store(&jobs_app.db_ok, 0);
    uv_loop_close(jobs_app.loop);
    uv_rwlock_wrlock(&jobs_app.db_rw);
    db_close(jobs_app.db);
    jobs_app.db = NULL;
    uv_rwlock_wrunlock(&jobs_app.db_rw);
    srv_log(SRV_LOG_INFO, "msg=stopped");
}

void srv_jobs_fini(void)
{
    /* after the HTTP threads are gone: until then a request may still take
     * the command queue's lock to find the loop closed (srv_jobs_submit's
     * 503); destroying it in srv_jobs_run raced with them (TSan, load.sh:
     * SIGTERM under load) */
    uv_mutex_destroy(&jobs_app.qlock);
}
