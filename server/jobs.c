/* server/jobs.c -- the libuv loop: job table, search pool, SQLite store.
 *
 * DESIGN
 * The loop thread owns the database connection, the job table and the
 * waiter lists; nothing else touches them. HTTP threads hand requests over
 * through a mutex-protected queue plus uv_async_send (which coalesces, so
 * each wake-up drains the whole queue). Searches run on the libuv thread
 * pool (uv_queue_work, UV_THREADPOOL_SIZE = --workers). A search is parsed
 * once, on the HTTP thread (api_prepare_search: model, hardware, options,
 * provenance, the system with its roofline); the job takes that prepared
 * object and the worker runs it (api_search_prepared) and renders the
 * result text, so the loop only writes it to the database and answers
 * waiters. A job restarted from its row after a crash, a comparison, or a
 * search whose measured trace the loop resolved from the store parses the
 * stored input instead (as the client sent it, its deadline clamped to
 * --max-search-s: the normal form's model is resolved IR and would lose
 * the model's provenance). The cache key is the normalized form's.
 *
 * A job is identified by its cache key; at most one job per key is in the
 * table, so identical requests in flight share it (they become waiters or
 * get 202). Job states: queued (in the pool's queue) -> running (a worker
 * took it) -> done | failed. The row is written as queued before the job is
 * acknowledged, so a crash loses nothing: at start every queued or running
 * row is queued again.
 *
 * SHUTDOWN
 * SIGINT/SIGTERM: stop accepting (MHD_quiesce_daemon), answer waiters with
 * 202, cancel queued work (uv_cancel) and ask running searches to stop
 * (their progress callback returns nonzero). Interrupted jobs stay queued in
 * the database and run again at the next start. When no work is left, the
 * handles are closed and the loop returns; the caller closes the database.
 */
#include "srv.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "api.h"
#include "db.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

struct job {
    char id[65];
    char *request;               /* the request the engine runs (as received) */
    struct api_prepared *prep;   /* the same, parsed on the HTTP thread (NULL: a job
                                  * restarted from its row, or a comparison) */
    int64_t created_ms;
    atomic_llong started_ms;     /* 0 until a worker takes it */
    int started_persisted;
    atomic_ullong evaluated;
    atomic_int progress_ppm;     /* fraction * 1e6 */
    atomic_int cancel;
    uv_work_t work;
    struct srv_req *waiters;
    /* outputs of the worker */
    char *result;
    char *error;
    int error_code;
    int has_best;
    double best_mfu;
    int64_t n_evaluated;
    int cancelled;
    int64_t finished_ms;
    /* a comparison's variant searches run by the worker, stored by the loop
     * as searches of their own (each is the search its key names) */
    struct sub_result *subs;
    int n_subs;
    json_t *known;               /* a comparison's variants already stored:
                                  * {key: result text}, handed to the worker */
    /* links */
    struct job *hnext;           /* hash bucket */
    struct job *next;            /* all active jobs */
};

struct sub_result {
    char id[65];
    char *normalized, *input, *result, *model, *hardware;
    int64_t devices, evaluated;
    int has_best;
    double best_mfu;
};

struct rwork {
    uv_work_t work;
    struct srv_req *r;
};

#define N_BUCKETS 1024
#define MAX_TOUCH 1024

static struct {
    const struct srv_config *cfg;
    uv_loop_t *loop;
    struct mfu_db *db;
    struct MHD_Daemon *mhd;
    uv_async_t async;
    uv_signal_t sigint, sigterm;
    uv_timer_t wait_timer, flush_timer;
    uv_mutex_t qlock;
    struct srv_req *qhead, *qtail;
    int closed;                  /* under qlock: no more submissions */
    struct job *buckets[N_BUCKETS];
    struct job *active;
    int n_active;
    atomic_int n_active_pub;     /* for /readyz from other threads */
    atomic_int db_ok, pool_ok;
    int n_roofline;
    struct srv_req *waiters;     /* all waiting POST /search requests */
    int stopping;
    struct db_touch touches[MAX_TOUCH];
    char touch_ids[MAX_TOUCH][65];
    size_t n_touch;
    const char *finishing_id;    /* the row db_finish is writing */
    int finishing_evicted;       /* ... and its own eviction removed it */
    /* finished jobs whose outcome could not be written (disk full, file
     * size limit: issue 14 items 1 and 2), oldest first: kept in memory,
     * answered from here, written again every second */
    struct held *held;
    int n_held;
    atomic_int store_ok;         /* 0 while some outcome is held */
    atomic_int file_ok;          /* 0 once the database file was deleted or replaced */
    atomic_int reachable;        /* shared store: 0 while the database cannot be reached */
    uv_rwlock_t db_rw;           /* HTTP threads reading the store (db_concurrent) hold it
                                  * shared; the loop takes it to close the store */
    char store_err[160];
} app;

struct held {
    struct held *next;
    char id[65];
    char outcome[8];
    char *result, *error;
    int has_best;
    double best_mfu;
    int64_t evaluated, created_ms, started_ms, finished_ms;
};

/* ---- the job table ----------------------------------------------------- */

static unsigned bucket_of(const char *id)
{
    unsigned h = 0;
    for (int i = 0; i < 8 && id[i]; i++) h = h * 16 + (unsigned)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
    return h % N_BUCKETS;
}

static struct job *job_find(const char *id)
{
    for (struct job *j = app.buckets[bucket_of(id)]; j; j = j->hnext)
        if (strcmp(j->id, id) == 0) return j;
    return NULL;
}

static void job_unlink(struct job *j)
{
    struct job **pp = &app.buckets[bucket_of(j->id)];
    while (*pp && *pp != j) pp = &(*pp)->hnext;
    if (*pp) *pp = j->hnext;
    pp = &app.active;
    while (*pp && *pp != j) pp = &(*pp)->next;
    if (*pp) *pp = j->next;
    app.n_active--;
    atomic_store(&app.n_active_pub, app.n_active);
}

static void subs_free(struct job *j)
{
    for (int i = 0; i < j->n_subs; i++) {
        struct sub_result *s = &j->subs[i];
        free(s->normalized);
        free(s->input);
        free(s->result);
        free(s->model);
        free(s->hardware);
    }
    free(j->subs);
    j->subs = NULL;
    j->n_subs = 0;
}

static void job_free(struct job *j)
{
    if (!j) return;
    subs_free(j);
    json_decref(j->known);
    api_prepared_free(j->prep);
    free(j->request);
    free(j->result);
    free(j->error);
    free(j);
}

/* ---- accesses (hit counts, LRU), flushed once a second ---------------- */

static void touch_at(const char *id, int64_t hits, int64_t now);

static void rcache_touch(void *ctx, const char *id, int64_t hits, int64_t accessed_ms)
{
    touch_at(id, hits, accessed_ms);
}

static void flush_touches(void)
{
    if (!app.db) return;
    srv_rcache_drain_touches(rcache_touch, NULL);
    if (!app.n_touch) return;
    if (db_touch_many(app.db, app.touches, app.n_touch) != DB_OK)
        srv_log(SRV_LOG_WARN, "msg=\"touch failed\" err=\"%s\"", db_errmsg(app.db));
    app.n_touch = 0;
}

static void touch_at(const char *id, int64_t hit, int64_t now)
{
    /* Most repeated accesses are to the same few ids: merge with recent. */
    size_t lo = app.n_touch > 16 ? app.n_touch - 16 : 0;
    for (size_t i = app.n_touch; i-- > lo;) {
        if (strcmp(app.touch_ids[i], id) == 0) {
            app.touches[i].hits += hit;
            if (now > app.touches[i].accessed_ms) app.touches[i].accessed_ms = now;
            return;
        }
    }
    if (app.n_touch == MAX_TOUCH) {
        if (db_touch_many(app.db, app.touches, app.n_touch) != DB_OK)
            srv_log(SRV_LOG_WARN, "msg=\"touch failed\" err=\"%s\"", db_errmsg(app.db));
        app.n_touch = 0;
    }
    size_t i = app.n_touch++;
    memcpy(app.touch_ids[i], id, 65);
    app.touches[i].id = app.touch_ids[i];
    app.touches[i].hits = hit;
    app.touches[i].accessed_ms = now;
}

static void touch(const char *id, int hit)
{
    touch_at(id, hit, srv_now_ms());
}

static struct held *held_find(const char *id)
{
    for (struct held *h = app.held; h; h = h->next)
        if (!strcmp(h->id, id)) return h;
    return NULL;
}

/* Write the held outcomes again, oldest first; the store is healthy again
 * once none is left. */
static void flush_held(void)
{
    while (app.held) {
        struct held *h = app.held;
        int rc = db_finish(app.db, h->id, h->outcome, h->result, h->error, h->has_best, h->best_mfu,
                           h->evaluated, h->finished_ms);
        if (rc == DB_ELOST)
            srv_log(SRV_LOG_WARN, "msg=\"held result dropped: another replica took the job over\" id=%.12s", h->id);
        else if (rc != DB_OK) {
            snprintf(app.store_err, sizeof app.store_err, "%s", db_errmsg(app.db));
            return;
        }
        else srv_log(SRV_LOG_INFO, "msg=\"held result written\" id=%.12s", h->id);
        app.held = h->next;
        app.n_held--;
        free(h->result);
        free(h->error);
        free(h);
    }
    if (!atomic_load(&app.store_ok)) srv_log(SRV_LOG_WARN, "msg=\"database writes work again\"");
    atomic_store(&app.store_ok, 1);
}

static void requeue_one(void *ctx, const char *id, const char *request);

/* A store several replicas share (docs/storage.md): renew this replica's
 * leases, see whether the database is reachable (a lost connection comes
 * back here, with backoff), and take over the jobs of replicas whose
 * leases ran out, as many as there is room for. */
static void shared_store_tick(void)
{
    char why[sizeof app.store_err];
    int up = db_file_ok(app.db, why, sizeof why);
    if (up != atomic_load(&app.reachable)) {
        if (up) srv_log(SRV_LOG_WARN, "msg=\"database reachable again\"");
        else srv_log(SRV_LOG_ERROR, "msg=\"database unreachable\" detail=\"%s\"", why);
        atomic_store(&app.reachable, up);
    }
    if (!up) return;
    if (db_heartbeat(app.db) != DB_OK)
        srv_log(SRV_LOG_WARN, "msg=\"lease renewal failed\" err=\"%s\"", db_errmsg(app.db));
    int room = app.cfg->queue_limit - app.n_active;
    if (room > app.cfg->workers) room = app.cfg->workers; /* leave the rest to the others */
    if (app.stopping || !atomic_load(&app.store_ok) || room <= 0) return;
    int n = 0;
    if (db_claim(app.db, room, requeue_one, &n) > 0) {
        srv_log(SRV_LOG_INFO, "msg=\"took over jobs whose replica stopped renewing\" jobs=%d", n);
        srv_metrics_job_failover(n);
    }
}

static void on_flush_timer(uv_timer_t *t)
{
    if (app.db && db_shared(app.db)) shared_store_tick();
    /* the file deleted or replaced under us: loudly, not ready, no new
     * jobs, until a restart opens the file at the path again */
    if (app.db && !db_shared(app.db) && atomic_load(&app.file_ok)) {
        char why[sizeof app.store_err];
        if (!db_file_ok(app.db, why, sizeof why)) {
            srv_log(SRV_LOG_ERROR, "msg=\"database file lost\" detail=\"%s\"", why);
            snprintf(app.store_err, sizeof app.store_err, "%s", why);
            atomic_store(&app.file_ok, 0);
        }
    }
    if (app.held) flush_held();
    flush_touches();
    if (app.db) {
        struct db_stats st;
        db_stats(app.db, &st);
        srv_metrics_db_size(db_size_bytes(app.db));
        srv_metrics_db_calls(st.queries, st.errors, st.seconds);
    }
}

/* ---- answers ----------------------------------------------------------- */

static void view_from_job(struct srv_view *v, struct job *j)
{
    memset(v, 0, sizeof *v);
    memcpy(v->id, j->id, 65);
    int64_t started = atomic_load(&j->started_ms);
    v->status = started ? "running" : "queued";
    v->progress = atomic_load(&j->progress_ppm) / 1e6;
    v->evaluated = (int64_t)atomic_load(&j->evaluated);
    v->created_ms = j->created_ms;
    v->started_ms = started;
}

static const char *static_status(const char *s)
{
    if (strcmp(s, "done") == 0) return "done";
    if (strcmp(s, "failed") == 0) return "failed";
    if (strcmp(s, "running") == 0) return "running";
    return "queued";
}

/* Takes the row's result and error strings. */
static void view_from_row(struct srv_view *v, struct db_row *row)
{
    memset(v, 0, sizeof *v);
    memcpy(v->id, row->id, 65);
    v->status = static_status(row->status);
    v->progress = strcmp(v->status, "done") == 0 ? 1.0 : 0.0;
    v->evaluated = row->evaluated;
    v->created_ms = row->created_ms;
    v->started_ms = row->started_ms;
    v->finished_ms = row->finished_ms;
    v->result = row->result;
    v->error = row->error;
    row->result = row->error = NULL;
}

/* A done view read from the database: render it once into the memory
 * cache and answer from the entry (the view's own copy is dropped). */
static void attach_entry(struct srv_req *r)
{
    if (strcmp(r->view.status, "done") != 0 || !r->view.result) return;
    struct srv_rentry *e = srv_rcache_put(&r->view, r->view.result);
    if (!e) return;
    r->entry = e;
    free(r->view.result);
    r->view.result = NULL;
}

static void answer_view(struct srv_req *r, int code)
{
    r->answer = ANS_VIEW;
    r->out_code = code;
    r->out_retry_after = code == 202 ? 1 : 0;
}

static void answer_overloaded(struct srv_req *r, const char *detail)
{
    srv_answer_problem(r, 503, "Service Unavailable", detail);
    r->out_retry_after = 5;
}

/* A POST /search whose job failed: the stored problem, with its status. */
static void answer_failed(struct srv_req *r, const char *error)
{
    json_t *p = error ? json_loads(error, 0, NULL) : NULL;
    int code = p ? (int)json_integer_value(json_object_get(p, "status")) : 500;
    if (code < 400 || code > 599) code = 500;
    if (!p) {
        srv_answer_problem(r, 500, "Search failed", "the search failed");
        return;
    }
    srv_answer_json(r, code, p);
}

/* A done result read on the calling HTTP thread, where the store allows it
 * (db_concurrent: PostgreSQL's pool), so reads of stored results do not
 * queue behind the loop. Anything else -- not found, not done, a corrupt
 * body, an error, a store one thread owns -- returns 0: the loop answers.
 * The row goes into the memory cache like the loop's reads. (A row the
 * loop evicts meanwhile may be cached after its eviction: harmless, a
 * result never changes; other replicas' evictions are not seen either.) */
int srv_jobs_read_done(struct srv_req *r)
{
    uv_rwlock_rdlock(&app.db_rw);
    if (!app.db || !db_concurrent(app.db) || !atomic_load(&app.db_ok)) {
        uv_rwlock_rdunlock(&app.db_rw);
        return 0;
    }
    struct db_row row;
    int rc = db_get(app.db, r->id, 1, &row);
    uv_rwlock_rdunlock(&app.db_rw);
    if (rc == DB_OK && !strcmp(row.status, "done") && row.result) {
        view_from_row(&r->view, &row);
        db_row_fini(&row);
        srv_rcache_note_access(r->id, 0);
        attach_entry(r);
        answer_view(r, 200);
        return 1;
    }
    if (rc == DB_OK || rc == DB_ECORRUPT) db_row_fini(&row);
    return 0;
}

/* ---- running jobs ------------------------------------------------------ */

static int progress_cb(void *ctx, double fraction, uint64_t evaluated)
{
    struct job *j = ctx;
    if (fraction < 0) fraction = 0;
    if (fraction > 1) fraction = 1;
    /* never backwards (one writer: the job's pool thread) */
    int ppm = (int)(fraction * 1e6);
    if (ppm > atomic_load(&j->progress_ppm)) atomic_store(&j->progress_ppm, ppm);
    if (evaluated > atomic_load(&j->evaluated)) atomic_store(&j->evaluated, evaluated);
    return atomic_load(&j->cancel);
}

/* Pool thread: a comparison's variant searches as text for the loop. */
static void collect_subs(struct job *j, json_t *computed)
{
    size_t n = json_object_size(computed);
    j->subs = n ? calloc(n, sizeof *j->subs) : NULL;
    if (!j->subs) return;
    const char *key;
    json_t *v;
    json_object_foreach(computed, key, v) {
        json_t *req = json_object_get(v, "request"), *res = json_object_get(v, "result");
        api_status st;
        api_status_init(&st);
        json_t *norm = api_normalize(req, &st);
        if (!norm || strlen(key) != 64) {
            json_decref(norm);
            continue;
        }
        struct sub_result *s = &j->subs[j->n_subs];
        memcpy(s->id, key, 65);
        s->normalized = json_dumps(norm, JSON_COMPACT | JSON_SORT_KEYS);
        s->input = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
        s->result = json_dumps(res, JSON_COMPACT);
        const char *mn = json_string_value(json_object_get(json_object_get(res, "model"), "name"));
        const char *hn = json_string_value(json_object_get(json_object_get(res, "hardware"), "name"));
        s->model = mn ? strdup(mn) : NULL;
        s->hardware = hn ? strdup(hn) : NULL;
        s->devices = (int64_t)json_integer_value(json_object_get(res, "devices"));
        json_t *mfu = json_object_get(json_object_get(json_array_get(json_object_get(res, "configs"), 0),
                                                      "expected"), "mfu");
        s->has_best = json_is_number(mfu);
        s->best_mfu = json_number_value(mfu);
        s->evaluated = (int64_t)json_integer_value(json_object_get(json_object_get(res, "search"), "evaluated"));
        json_decref(norm);
        if (!s->normalized || !s->input || !s->result) continue; /* freed with the job */
        j->n_subs++;
    }
}

/* Loop thread: store a comparison's variant searches as done rows (unless
 * the key is already stored or running as a job of its own). */
static void store_subs(struct job *j, int64_t now)
{
    for (int i = 0; i < j->n_subs; i++) {
        struct sub_result *s = &j->subs[i];
        if (job_find(s->id)) continue;
        struct db_row row;
        int rc = db_get(app.db, s->id, 0, &row);
        if (rc == DB_OK) {
            int done = strcmp(row.status, "done") == 0;
            db_row_fini(&row);
            if (done) continue;
        }
        struct db_new_job nj = {s->id, s->normalized, s->input, s->model, s->hardware, s->devices, now};
        if (db_put_job(app.db, &nj) != DB_OK ||
            db_finish(app.db, s->id, "done", s->result, NULL, s->has_best, s->best_mfu, s->evaluated,
                      now) != DB_OK)
            srv_log(SRV_LOG_ERROR, "msg=\"db store of a compare variant failed\" id=%.12s err=\"%s\"",
                    s->id, db_errmsg(app.db));
    }
    subs_free(j);
}

/* Pool thread: only the job's own fields, api/ and jansson. */
static void work_cb(uv_work_t *w)
{
    struct job *j = container_of(w, struct job, work);
    srv_metrics_job_queued_delta(-1);
    srv_metrics_job_running_delta(1);
    atomic_store(&j->started_ms, srv_now_ms());
    uv_async_send(&app.async); /* the loop marks the row running */
    if (atomic_load(&j->cancel)) {
        j->cancelled = 1;
        return;
    }
    /* Test hook (MFUD_TEST_JOB_DELAY_MS): hold each job this long before the
     * search, so integration tests can fill the queue or kill the daemon
     * with jobs in flight whatever the machine's speed. */
    for (int t = 0; t < app.cfg->test_job_delay_ms && !atomic_load(&j->cancel); t += 10)
        uv_sleep(10);
    api_status st;
    api_status_init(&st);
    json_error_t jerr;
    json_t *req = j->prep ? NULL : json_loads(j->request, 0, &jerr);
    json_t *res = NULL;
    if (j->prep) res = api_search_prepared(j->prep, &st, progress_cb, j, 1); /* parsed once */
    else if (!req) api_fail(&st, 500, "", "stored request is not JSON: %s", jerr.text);
    else if (json_object_get(req, "vary")) { /* POST /compare */
        json_t *computed = json_object(), *known = json_object();
        const char *kk;
        json_t *kv;
        json_object_foreach(j->known, kk, kv) {
            json_t *doc = json_loads(json_string_value(kv), 0, NULL);
            if (doc) json_object_set_new(known, kk, doc);
        }
        res = api_compare(req, &st, progress_cb, j, 1, known, computed);
        json_decref(known);
        if (res) collect_subs(j, computed);
        json_decref(computed);
    } else res = api_search(req, &st, progress_cb, j);
    json_decref(req);
    if (atomic_load(&j->cancel)) {
        j->cancelled = 1;
        json_decref(res);
        return;
    }
    if (res) {
        json_t *best = json_array_get(json_object_get(res, "configs"), 0);
        /* the ranking's figure: expected MFU of the best configuration */
        json_t *mfu = json_object_get(json_object_get(best, "expected"), "mfu");
        if (json_is_number(mfu)) {
            j->has_best = 1;
            j->best_mfu = json_number_value(mfu);
        }
        json_t *ev = json_object_get(json_object_get(res, "search"), "evaluated");
        j->n_evaluated = json_is_integer(ev) ? (int64_t)json_integer_value(ev)
                                             : (int64_t)atomic_load(&j->evaluated);
        j->result = json_dumps(res, JSON_COMPACT);
        json_decref(res);
        if (!j->result) api_fail(&st, 500, "", "out of memory rendering the result");
    }
    if (!j->result) {
        if (!st.status) api_fail(&st, 500, "", "the search failed");
        j->error_code = st.status;
        json_t *p = api_problem_json(&st);
        j->error = p ? json_dumps(p, JSON_COMPACT) : NULL;
        json_decref(p);
    }
}

static void maybe_finish_shutdown(void);

static void answer_waiters(struct job *j, int done, struct srv_rentry *e)
{
    struct srv_req **pp = &app.waiters;
    while (*pp) {
        struct srv_req *r = *pp;
        if (r->job != j) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        r->job = NULL;
        if (!done) {
            view_from_job(&r->view, j);
            answer_view(r, 202);
        } else if (j->result) {
            view_from_job(&r->view, j);
            r->view.status = "done";
            r->view.progress = 1.0;
            r->view.evaluated = j->n_evaluated;
            r->view.finished_ms = j->finished_ms;
            if (e) r->entry = srv_rcache_ref(e);
            else r->view.result = strdup(j->result);
            answer_view(r, (r->entry || r->view.result) ? 200 : 202);
        } else {
            answer_failed(r, j->error);
        }
        srv_http_resume(r);
    }
}

static void after_work_cb(uv_work_t *w, int status)
{
    struct job *j = container_of(w, struct job, work);
    int64_t now = srv_now_ms();
    if (status == UV_ECANCELED || j->cancelled) {
        if (status == UV_ECANCELED) srv_metrics_job_queued_delta(-1);
        else srv_metrics_job_running_delta(-1);
        srv_metrics_job_completed("cancelled");
        if (app.db) db_set_queued(app.db, j->id);
        srv_log(SRV_LOG_INFO, "msg=job_interrupted id=%.12s", j->id);
        answer_waiters(j, 0, NULL);
    } else {
        srv_metrics_job_running_delta(-1);
        const char *outcome = j->result ? "done" : "failed";
        srv_metrics_job_completed(outcome);
        srv_metrics_evaluated((uint64_t)j->n_evaluated);
        app.finishing_id = j->id;
        app.finishing_evicted = 0;
        int frc = db_finish(app.db, j->id, outcome, j->result, j->error, j->has_best,
                            j->best_mfu, j->n_evaluated, now);
        app.finishing_id = NULL;
        if (frc == DB_ELOST) {
            /* this replica was cut off long enough for another to take
             * the job over: that one stores the outcome (the same, the
             * search being deterministic); ours answers our waiters only */
            srv_log(SRV_LOG_WARN, "msg=\"lease lost; another replica stores this job\" id=%.12s", j->id);
            srv_metrics_job_lease_lost();
        } else if (frc != DB_OK) {
            /* held in memory, answered from there and written again every
             * second; meanwhile not ready, and no new jobs (503) */
            srv_log(SRV_LOG_ERROR, "msg=\"db finish failed; result held in memory\" id=%.12s err=\"%s\"", j->id,
                    db_errmsg(app.db));
            struct held *h = calloc(1, sizeof *h);
            if (h) {
                memcpy(h->id, j->id, 65);
                snprintf(h->outcome, sizeof h->outcome, "%s", outcome);
                h->result = j->result ? strdup(j->result) : NULL;
                h->error = j->error ? strdup(j->error) : NULL;
                h->has_best = j->has_best;
                h->best_mfu = j->best_mfu;
                h->evaluated = j->n_evaluated;
                h->created_ms = j->created_ms;
                h->started_ms = atomic_load(&j->started_ms);
                h->finished_ms = now;
                struct held **t = &app.held;
                while (*t) t = &(*t)->next;
                *t = h;
                app.n_held++;
            }
            snprintf(app.store_err, sizeof app.store_err, "%s", db_errmsg(app.db));
            atomic_store(&app.store_ok, 0);
        }
        j->finished_ms = now;
        if (j->result) store_subs(j, now);
        struct srv_rentry *e = NULL;
        if (j->result) {
            /* Render once for the waiters and later readers; kept in memory
             * only if the row is durable (stored and not evicted at once). */
            struct srv_view v;
            view_from_job(&v, j);
            v.status = "done";
            v.evaluated = j->n_evaluated;
            v.finished_ms = now;
            e = srv_rcache_put(&v, j->result);
            if (e && frc == DB_OK && app.finishing_evicted) srv_rcache_remove(j->id);
            if (e && frc == DB_ELOST) srv_rcache_remove(j->id); /* not ours to keep */
        }
        srv_log(SRV_LOG_INFO, "msg=job_end id=%.12s outcome=%s evaluated=%lld ms=%lld", j->id,
                outcome, (long long)j->n_evaluated,
                (long long)(now - atomic_load(&j->started_ms)));
        answer_waiters(j, 1, e);
        srv_rcache_unref(e);
    }
    job_unlink(j);
    job_free(j);
    maybe_finish_shutdown();
}

/* Create and start a job. The row must already be in the database. */
static struct job *job_start(const char *id, const char *request, int64_t created_ms, json_t *known,
                             struct api_prepared *prep)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j) {
        json_decref(known);
        api_prepared_free(prep);
        return NULL;
    }
    j->known = known;
    j->prep = prep;
    memcpy(j->id, id, 65);
    j->request = strdup(request);
    j->created_ms = created_ms;
    if (!j->request) {
        free(j);
        return NULL;
    }
    if (uv_queue_work(app.loop, &j->work, work_cb, after_work_cb) != 0) {
        job_free(j);
        return NULL;
    }
    unsigned b = bucket_of(id);
    j->hnext = app.buckets[b];
    app.buckets[b] = j;
    j->next = app.active;
    app.active = j;
    app.n_active++;
    atomic_store(&app.n_active_pub, app.n_active);
    srv_metrics_job_created();
    srv_metrics_job_queued_delta(1);
    srv_log(SRV_LOG_INFO, "msg=job_queued id=%.12s active=%d", id, app.n_active);
    return j;
}

static void on_wait_timer(uv_timer_t *t);

static void add_waiter(struct srv_req *r, struct job *j)
{
    r->job = j;
    r->deadline = srv_now_mono() + r->wait_s;
    r->next = app.waiters;
    app.waiters = r;
    if (!uv_is_active((uv_handle_t *)&app.wait_timer))
        uv_timer_start(&app.wait_timer, on_wait_timer, 20, 20);
}

/* ---- commands ---------------------------------------------------------- */


/* A finished result in the memory cache: answer 200 from it (hit: count
 * the access as a cache hit). Returns 1 if it answered. */
static int answer_from_rcache(struct srv_req *r, int hit)
{
    if (!(r->entry = srv_rcache_get(r->id, hit))) return 0;
    memcpy(r->view.id, r->id, 65);
    r->view.status = "done";
    answer_view(r, 200);
    srv_http_resume(r);
    return 1;
}
/* The stored results of a comparison's variants (normalized: {"kind":
 * "compare", "variant_keys": [...]}), as {key: result text}: a variant
 * searched before is not searched again. */
static json_t *known_variants(const char *normalized)
{
    json_t *norm = json_loads(normalized, 0, NULL);
    json_t *keys = json_object_get(norm, "variant_keys"), *out = json_object();
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k) {
        const char *id = json_string_value(k);
        if (!id || strlen(id) != 64 || json_object_get(out, id)) continue;
        struct srv_rentry *e = srv_rcache_get(id, 0);
        if (e) {
            size_t len;
            const char *t = srv_rentry_result(e, &len);
            if (t) json_object_set_new(out, id, json_stringn(t, len));
            srv_rcache_unref(e);
            continue;
        }
        struct db_row row;
        if (db_get(app.db, id, 1, &row) == DB_OK) {
            if (strcmp(row.status, "done") == 0 && row.result)
                json_object_set_new(out, id, json_string(row.result));
            db_row_fini(&row);
        }
    }
    json_decref(norm);
    return out;
}

/* A POST whose result is done in the database: 200 with it (a hit),
 * the row rendered once into the memory cache. Takes the row. */
static void answer_done_row(struct srv_req *r, struct db_row *row)
{
    touch(r->id, 1);
    view_from_row(&r->view, row);
    db_row_fini(row);
    attach_entry(r);
    answer_view(r, 200);
    srv_http_resume(r);
}

/* Run a synchronous request's work (w, inside the allocation `owner`) on
 * the pool: /roofline, /calibrate, /traces. Answers 503 when too many are
 * in flight (or owner is NULL: out of memory), 500 if it cannot queue. */
static void pool_start(struct srv_req *r, void *owner, uv_work_t *w, uv_work_cb work, uv_after_work_cb after)
{
    if (!owner || app.n_roofline >= app.cfg->queue_limit) {
        free(owner);
        answer_overloaded(r, "too many synchronous requests in flight");
        srv_http_resume(r);
        return;
    }
    if (uv_queue_work(app.loop, w, work, after) != 0) {
        free(owner);
        srv_answer_problem(r, 500, "Internal Server Error", "could not queue work");
        srv_http_resume(r);
        return;
    }
    app.n_roofline++;
}

/* ---- uploaded traces (POST /traces, issue 12) -------------------------- */

/* The stored measurement of trace `id` (a done result that is one), or
 * NULL. Loop thread. */
static json_t *stored_trace(const char *id)
{
    json_t *doc = NULL;
    struct srv_rentry *e = srv_rcache_get(id, 0);
    if (e) {
        size_t n = 0;
        const char *t = srv_rentry_result(e, &n);
        doc = t ? json_loadb(t, n, 0, NULL) : NULL;
    } else {
        struct db_row row;
        if (db_get(app.db, id, 1, &row) == DB_OK) {
            if (!strcmp(row.status, "done") && row.result) doc = json_loads(row.result, 0, NULL);
            db_row_fini(&row);
        }
    }
    if (doc && !(json_is_array(json_object_get(doc, "steps")) &&
                 !strcmp(json_string_value(json_object_get(doc, "format")) ? json_string_value(json_object_get(doc, "format")) : "", "chrome-trace"))) {
        json_decref(doc);
        doc = NULL;
    }
    return doc;
}

/* measured.trace given as the id of an uploaded trace: replaced by the
 * stored measurement in what the engine runs (the normal form keeps the
 * id, which names the trace's bytes). 0, or -1 with a 422 answered. */
static int resolve_trace(struct srv_req *r, json_t *meas, const char *ptr)
{
    const char *id = json_string_value(json_object_get(meas, "trace"));
    if (!id) return 0;
    json_t *m = strlen(id) == 64 ? stored_trace(id) : NULL;
    if (!m) {
        api_status st;
        api_status_init(&st);
        api_fail(&st, 422, ptr, "no uploaded trace has this id (POST /traces answers it; stored traces may be evicted)");
        srv_answer_json(r, 422, api_problem_json(&st));
        return -1;
    }
    json_object_set_new(meas, "trace", m);
    return 0;
}

/* Resolve the trace ids of a search input (measured.trace) or a
 * calibration (runs[i].request.measured.trace, runs[i].measured.trace). */
static int resolve_traces(struct srv_req *r, json_t *doc)
{
    if (r->route == ROUTE_CALIBRATE) {
        json_t *runs = json_object_get(doc, "runs");
        for (size_t i = 0; i < json_array_size(runs); i++) {
            json_t *run = json_array_get(runs, i), *rq = json_object_get(run, "request");
            char ptr[96];
            snprintf(ptr, sizeof ptr, "/runs/%zu%s/measured/trace", i, rq ? "/request" : "");
            if (resolve_trace(r, json_object_get(rq ? rq : run, "measured"), ptr)) return -1;
        }
        return 0;
    }
    return resolve_trace(r, json_object_get(doc, "measured"), "/measured/trace");
}

struct twork {
    uv_work_t work;
    struct srv_req *r;
    char *result;       /* the measurement JSON, or NULL */
    json_t *problem;    /* or why not */
};

static void trace_work(uv_work_t *w)
{
    struct twork *tw = container_of(w, struct twork, work);
    struct srv_req *r = tw->r;
    api_status st;
    api_status_init(&st);
    json_t *m = api_trace_text(r->body, r->len, r->marker, &st);
    if (m) {
        tw->result = json_dumps(m, JSON_COMPACT);
        json_decref(m);
        if (!tw->result) api_fail(&st, 503, "", "out of memory");
    }
    if (!tw->result) {
        if (!st.status) api_fail(&st, 422, "", "the trace cannot be read");
        tw->problem = api_problem_json(&st);
    }
}

/* Loop thread: store the measurement, then answer 201 (nothing is
 * acknowledged before it is in the database). */
static void trace_after(uv_work_t *w, int status)
{
    struct twork *tw = container_of(w, struct twork, work);
    struct srv_req *r = tw->r;
    if (status == UV_ECANCELED) {
        answer_overloaded(r, "the server is shutting down");
    } else if (!tw->result) {
        json_t *p = tw->problem;
        int code = (int)json_integer_value(json_object_get(p, "status"));
        tw->problem = NULL;
        srv_answer_json(r, code >= 400 && code <= 599 ? code : 422, p);
    } else {
        int64_t now = srv_now_ms();
        json_t *m = json_loads(tw->result, 0, NULL);
        json_t *dev = json_array_get(json_object_get(m, "devices"), 0);
        json_t *nd = json_pack("{s:{s:I,s:s}}", "trace", "bytes", (json_int_t)r->len, "marker",
                               r->marker[0] ? r->marker : "ProfilerStep#");
        char *norm = nd ? json_dumps(nd, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(nd);
        struct db_new_job nj = {r->id, norm ? norm : "{}", NULL, json_is_string(dev) ? json_string_value(dev) : NULL,
                                "trace", 1, now};
        int ok = db_put_job(app.db, &nj) == DB_OK &&
                 db_finish(app.db, r->id, "done", tw->result, NULL, 0, 0.0, 0, now) == DB_OK;
        free(norm);
        json_decref(m);
        if (!ok) {
            srv_log(SRV_LOG_ERROR, "msg=\"db store trace failed\" err=\"%s\"", db_errmsg(app.db));
            answer_overloaded(r, "the trace could not be stored; retry later");
        } else {
            memset(&r->view, 0, sizeof r->view);
            memcpy(r->view.id, r->id, 65);
            r->view.status = "done";
            r->view.progress = 1.0;
            r->view.created_ms = r->view.started_ms = r->view.finished_ms = now;
            r->view.result = tw->result;
            tw->result = NULL;
            attach_entry(r);
            answer_view(r, 201);
        }
    }
    srv_http_resume(r);
    free(tw->result);
    json_decref(tw->problem);
    free(tw);
    app.n_roofline--;
    maybe_finish_shutdown();
}

static void cmd_traces(struct srv_req *r)
{
    if (answer_from_rcache(r, 1)) return;
    struct db_row row;
    if (db_get(app.db, r->id, 1, &row) == DB_OK) {
        if (!strcmp(row.status, "done")) {
            answer_done_row(r, &row);
            return;
        }
        db_row_fini(&row);
    }
    struct twork *tw = calloc(1, sizeof *tw);
    if (tw) tw->r = r;
    pool_start(r, tw, tw ? &tw->work : NULL, trace_work, trace_after);
}

static void cmd_result(struct srv_req *r);

/* A stored body that failed its checksum (issue 14 item 5): never served.
 * A search or comparison runs again from its stored input (answered like a
 * new job: 202, or waited on); an uploaded trace, which cannot be measured
 * again without its bytes, becomes a failed row saying so. Takes the row. */
static void recover_corrupt(struct srv_req *r, struct db_row *row, int may_wait)
{
    srv_log(SRV_LOG_ERROR, "msg=\"stored result failed its checksum; not served\" id=%.12s", r->id);
    int trace = row->request && !strncmp(row->request, "{\"trace\"", 8);
    int64_t created = row->created_ms;
    db_row_fini(row);
    if (trace) {
        api_status st;
        api_status_init(&st);
        api_fail(&st, 500, "", "the stored trace measurement was corrupted; upload the trace again");
        json_t *p = api_problem_json(&st);
        char *e = p ? json_dumps(p, JSON_COMPACT) : NULL;
        json_decref(p);
        if (e) db_finish(app.db, r->id, "failed", NULL, e, 0, 0.0, 0, srv_now_ms());
        free(e);
        srv_answer_problem(r, 500, "Internal Server Error",
                           "the stored trace measurement was corrupted; upload the trace again");
        srv_http_resume(r);
        return;
    }
    char *input = NULL;
    struct job *j = NULL;
    if (db_reset(app.db, r->id, &input) == DB_OK) j = job_start(r->id, input, created, NULL, NULL);
    free(input);
    if (!j) {
        srv_answer_problem(r, 500, "Internal Server Error", "a corrupted stored result could not be recomputed");
        srv_http_resume(r);
        return;
    }
    if (!may_wait || r->prefer_async || r->wait_s <= 0) {
        view_from_job(&r->view, j);
        answer_view(r, 202);
        srv_http_resume(r);
    } else {
        add_waiter(r, j);
    }
}

/* A search another replica holds: its row as it stands now, 200 when
 * done, else 202 (the client polls /results/{id}, answered by any
 * replica). */
static void answer_owned_elsewhere(struct srv_req *r)
{
    struct db_row row;
    int rc = db_get(app.db, r->id, 1, &row);
    srv_metrics_job_deduplicated();
    if (rc == DB_OK && !strcmp(row.status, "done")) {
        answer_done_row(r, &row);
        return;
    }
    if (rc == DB_OK && !strcmp(row.status, "failed")) {
        answer_failed(r, row.error);
        db_row_fini(&row);
    } else if (rc == DB_OK) {
        view_from_row(&r->view, &row);
        db_row_fini(&row);
        answer_view(r, 202);
    } else {
        if (rc == DB_ECORRUPT) db_row_fini(&row);
        answer_overloaded(r, "the database cannot be read; retry later");
    }
    srv_http_resume(r);
}

static void cmd_search(struct srv_req *r)
{
    struct job *j = job_find(r->id);
    if (j) {
        srv_metrics_cache(0);
        srv_metrics_job_deduplicated();
        if (r->prefer_async || r->wait_s <= 0) {
            view_from_job(&r->view, j);
            answer_view(r, 202);
            srv_http_resume(r);
        } else {
            add_waiter(r, j);
        }
        return;
    }
    if (answer_from_rcache(r, 1)) {
        srv_metrics_cache(1);
        return;
    }
    struct db_row row;
    int rc = db_get(app.db, r->id, 1, &row);
    if (rc == DB_OK && strcmp(row.status, "done") == 0) {
        srv_metrics_cache(1);
        answer_done_row(r, &row);
        return;
    }
    if (rc == DB_ECORRUPT) {
        recover_corrupt(r, &row, 1);
        return;
    }
    int64_t created = rc == DB_OK ? row.created_ms : srv_now_ms();
    if (rc == DB_OK) db_row_fini(&row);
    if (rc != DB_OK && rc != DB_ENOTFOUND) {
        /* not acknowledged: the client retries (a database restarting) */
        srv_log(SRV_LOG_ERROR, "msg=\"db get failed\" err=\"%s\"", db_errmsg(app.db));
        answer_overloaded(r, "the database cannot be read; retry later");
        srv_http_resume(r);
        return;
    }
    srv_metrics_cache(0);
    if (!atomic_load(&app.file_ok)) {
        answer_overloaded(r, "the database file was deleted or replaced while open; restart mfud");
        srv_http_resume(r);
        return;
    }
    if (!atomic_load(&app.store_ok) || held_find(r->id)) {
        if (held_find(r->id)) {
            /* finished and held: its answer, not a second run */
            r->route = ROUTE_RESULT;
            cmd_result(r);
            return;
        }
        answer_overloaded(r, "the database cannot be written (disk full?); results are held in memory; retry later");
        srv_http_resume(r);
        return;
    }
    if (app.n_active >= app.cfg->queue_limit) {
        answer_overloaded(r, "the job queue is full; retry later");
        srv_http_resume(r);
        return;
    }
    /* measured.trace by id: the stored measurement goes into the input */
    if (r->route == ROUTE_SEARCH && strstr(r->input, "\"trace\"")) {
        json_t *in = json_loads(r->input, 0, NULL);
        int bad = in ? resolve_traces(r, in) : 0;
        char *s = in && !bad ? json_dumps(in, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(in);
        if (bad) {
            srv_http_resume(r);
            return;
        }
        if (s) {
            free(r->input);
            r->input = s;
            /* the stored measurement changed the input: the job parses it */
            api_prepared_free(r->prep);
            r->prep = NULL;
        }
    }
    struct db_new_job nj = {r->id, r->normalized, r->input, r->model, r->hardware, r->devices,
                            srv_now_ms()};
    int prc = db_put_job(app.db, &nj);
    if (prc == DB_EOWNED) {
        /* another replica runs it (or has just finished it): answered
         * from its row, run nowhere else (docs/storage.md) */
        answer_owned_elsewhere(r);
        return;
    }
    if (prc != DB_OK) {
        /* not acknowledged: the client may retry (a full disk may free) */
        srv_log(SRV_LOG_ERROR, "msg=\"db put failed\" err=\"%s\"", db_errmsg(app.db));
        answer_overloaded(r, db_shared(app.db) ? "the database cannot be written; retry later"
                                                : "the database cannot be written (disk full?); retry later");
        srv_http_resume(r);
        return;
    }
    if (rc == DB_ENOTFOUND) created = nj.now_ms;
    struct api_prepared *prep = r->prep; /* the job takes it */
    r->prep = NULL;
    j = job_start(r->id, r->input, created,
                  r->route == ROUTE_COMPARE ? known_variants(r->normalized) : NULL, prep);
    if (!j) {
        srv_answer_problem(r, 500, "Internal Server Error", "could not start the job");
        srv_http_resume(r);
        return;
    }
    if (r->prefer_async || r->wait_s <= 0) {
        view_from_job(&r->view, j);
        answer_view(r, 202);
        srv_http_resume(r);
    } else {
        add_waiter(r, j);
    }
}

static void cmd_result(struct srv_req *r)
{
    struct job *j = job_find(r->id);
    if (j) {
        view_from_job(&r->view, j);
        answer_view(r, 200);
        srv_http_resume(r);
        return;
    }
    struct held *h = held_find(r->id);
    if (h && !srv_rcache_get(r->id, 0)) {
        /* finished, not yet written: the held copy */
        memset(&r->view, 0, sizeof r->view);
        memcpy(r->view.id, h->id, 65);
        r->view.status = strcmp(h->outcome, "done") ? "failed" : "done";
        r->view.progress = 1.0;
        r->view.evaluated = h->evaluated;
        r->view.created_ms = h->created_ms;
        r->view.started_ms = h->started_ms;
        r->view.finished_ms = h->finished_ms;
        r->view.result = h->result ? strdup(h->result) : NULL;
        r->view.error = h->error ? strdup(h->error) : NULL;
        answer_view(r, 200);
        srv_http_resume(r);
        return;
    }
    /* Cached since the HTTP thread looked (or it raced the insertion). */
    if (answer_from_rcache(r, 0)) return;
    struct db_row row;
    int rc = db_get(app.db, r->id, 1, &row);
    if (rc == DB_ECORRUPT) {
        recover_corrupt(r, &row, 0);
        return;
    }
    if (rc == DB_ENOTFOUND) {
        srv_answer_problem(r, 404, "Not Found", "no result with this id");
    } else if (rc != DB_OK) {
        answer_overloaded(r, "the database cannot be read; retry later");
    } else {
        touch(r->id, 0);
        view_from_row(&r->view, &row);
        db_row_fini(&row);
        attach_entry(r);
        answer_view(r, 200);
    }
    srv_http_resume(r);
}

struct list_ctx {
    json_t *items;
    int n;
    int64_t last_ms;
    char last_id[65];
};

static void list_row(void *ctx, const struct db_row *row)
{
    struct list_ctx *lc = ctx;
    char t[80];
    json_t *it = json_object();
    if (!it) return;
    json_object_set_new(it, "id", json_string(row->id));
    const char *status = static_status(row->status);
    struct job *j = job_find(row->id);
    if (j && atomic_load(&j->started_ms)) status = "running";
    json_object_set_new(it, "status", json_string(status));
    json_object_set_new(it, "model", row->model ? json_string(row->model) : json_null());
    json_object_set_new(it, "hardware", row->hardware ? json_string(row->hardware) : json_null());
    json_object_set_new(it, "devices", json_integer(row->devices));
    json_object_set_new(it, "best_mfu", row->has_best_mfu ? json_real(row->best_mfu) : json_null());
    json_object_set_new(it, "evaluated", json_integer(row->evaluated));
    json_object_set_new(it, "hits", json_integer(row->hits));
    srv_iso_time(t, sizeof t, row->created_ms);
    json_object_set_new(it, "created_at", json_string(t));
    if (row->finished_ms > 0) {
        srv_iso_time(t, sizeof t, row->finished_ms);
        json_object_set_new(it, "finished_at", json_string(t));
    } else {
        json_object_set_new(it, "finished_at", json_null());
    }
    char href[80];
    snprintf(href, sizeof href, "/results/%s", row->id);
    json_object_set_new(it, "href", json_string(href));
    json_array_append_new(lc->items, it);
    lc->n++;
    lc->last_ms = row->created_ms;
    memcpy(lc->last_id, row->id, 65);
}

static void cmd_results(struct srv_req *r)
{
    struct list_ctx lc = {json_array(), 0, 0, ""};
    int n = lc.items ? db_list(app.db, r->limit, r->offset, r->after_ms,
                               r->has_after ? r->after_id : NULL, list_row, &lc)
                     : -1;
    if (n < 0) {
        json_decref(lc.items);
        srv_answer_problem(r, 500, "Internal Server Error", "database error");
        srv_http_resume(r);
        return;
    }
    json_t *body = json_object();
    json_object_set_new(body, "items", lc.items);
    json_object_set_new(body, "limit", json_integer(r->limit));
    if (lc.n == r->limit) {
        char cur[96];
        snprintf(cur, sizeof cur, "%lld.%s", (long long)lc.last_ms, lc.last_id);
        json_object_set_new(body, "next_cursor", json_string(cur));
        char next[160];
        snprintf(next, sizeof next, "/results?limit=%d&cursor=%s", r->limit, cur);
        json_object_set_new(body, "next", json_string(next));
    }
    srv_answer_json(r, 200, body);
    srv_http_resume(r);
}

static void roofline_work(uv_work_t *w)
{
    struct rwork *rw = container_of(w, struct rwork, work);
    struct srv_req *r = rw->r;
    api_status st;
    api_status_init(&st);
    json_t *res = r->route == ROUTE_CALIBRATE ? api_calibrate(r->roofline_req, &st)
                                                : api_roofline(r->roofline_req, &st);
    if (res && srv_roofline_svg_answer(r, res)) {
        /* answered as SVG (Accept: image/svg+xml, server/page.c) */
    } else if (res) {
        srv_answer_json(r, 200, res);
    } else {
        if (!st.status) api_fail(&st, 500, "", "%s failed", srv_route_names[r->route]);
        srv_answer_json(r, st.status, api_problem_json(&st));
    }
}

static void roofline_after(uv_work_t *w, int status)
{
    struct rwork *rw = container_of(w, struct rwork, work);
    if (status == UV_ECANCELED) answer_overloaded(rw->r, "the server is shutting down");
    srv_http_resume(rw->r);
    free(rw);
    app.n_roofline--;
    maybe_finish_shutdown();
}

static void cmd_roofline(struct srv_req *r)
{
    if (r->route == ROUTE_CALIBRATE && resolve_traces(r, r->roofline_req)) {
        srv_http_resume(r);
        return;
    }
    struct rwork *rw = calloc(1, sizeof *rw);
    if (rw) rw->r = r;
    pool_start(r, rw, rw ? &rw->work : NULL, roofline_work, roofline_after);
}

static void run_command(struct srv_req *r)
{
    if (app.stopping) {
        answer_overloaded(r, "the server is shutting down");
        srv_http_resume(r);
        return;
    }
    switch (r->route) {
    case ROUTE_SEARCH: cmd_search(r); break;
    case ROUTE_COMPARE: cmd_search(r); break; /* the job runs api_compare (work_cb) */
    case ROUTE_RESULT: cmd_result(r); break;
    case ROUTE_RESULTS: cmd_results(r); break;
    case ROUTE_ROOFLINE: cmd_roofline(r); break;
    case ROUTE_CALIBRATE: cmd_roofline(r); break; /* api_calibrate on the pool */
    case ROUTE_TRACES: cmd_traces(r); break;
    default:
        srv_answer_problem(r, 500, "Internal Server Error", "unexpected route");
        srv_http_resume(r);
    }
}

static void persist_started(void)
{
    for (struct job *j = app.active; j; j = j->next) {
        int64_t st = atomic_load(&j->started_ms);
        if (st && !j->started_persisted) {
            j->started_persisted = 1;
            int rc = db_set_running(app.db, j->id, st);
            if (rc == DB_ELOST)
                srv_log(SRV_LOG_WARN, "msg=\"lease lost before the job started\" id=%.12s", j->id);
            else if (rc != DB_OK)
                srv_log(SRV_LOG_WARN, "msg=\"db set running failed\" err=\"%s\"",
                        db_errmsg(app.db));
        }
    }
}

static void on_async(uv_async_t *a)
{
    uv_mutex_lock(&app.qlock);
    struct srv_req *r = app.qhead;
    app.qhead = app.qtail = NULL;
    uv_mutex_unlock(&app.qlock);
    while (r) {
        struct srv_req *next = r->next;
        r->next = NULL;
        run_command(r);
        r = next;
    }
    if (app.db) persist_started();
}

static void on_wait_timer(uv_timer_t *t)
{
    double now = srv_now_mono();
    struct srv_req **pp = &app.waiters;
    while (*pp) {
        struct srv_req *r = *pp;
        if (r->deadline > now) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        view_from_job(&r->view, r->job);
        r->job = NULL;
        answer_view(r, 202);
        srv_http_resume(r);
    }
    if (!app.waiters) uv_timer_stop(t);
}

int srv_jobs_submit(struct srv_req *r)
{
    uv_mutex_lock(&app.qlock);
    if (app.closed) {
        uv_mutex_unlock(&app.qlock);
        return -1;
    }
    r->next = NULL;
    if (app.qtail) app.qtail->next = r;
    else app.qhead = r;
    app.qtail = r;
    uv_mutex_unlock(&app.qlock);
    uv_async_send(&app.async);
    return 0;
}

int srv_jobs_ready(char *why, size_t whylen)
{
    if (!atomic_load(&app.db_ok)) {
        snprintf(why, whylen, "database not open");
        return 0;
    }
    if (!atomic_load(&app.pool_ok)) {
        snprintf(why, whylen, "worker pool not running");
        return 0;
    }
    if (!atomic_load(&app.file_ok)) {
        snprintf(why, whylen, "the database file was deleted or replaced while open: restart mfud");
        return 0;
    }
    if (!atomic_load(&app.reachable)) {
        snprintf(why, whylen, "the database cannot be reached; reconnecting");
        return 0;
    }
    if (!atomic_load(&app.store_ok)) {
        snprintf(why, whylen, "database writes failing; finished results held in memory until they are written");
        return 0;
    }
    int n = atomic_load(&app.n_active_pub);
    if (n >= app.cfg->queue_limit) {
        snprintf(why, whylen, "job queue full (%d of %d)", n, app.cfg->queue_limit);
        return 0;
    }
    snprintf(why, whylen, "database open (%s), %d workers, %d of %d jobs queued or running",
             db_backend(app.db), app.cfg->workers, n, app.cfg->queue_limit);
    return 1;
}

void srv_jobs_set_mhd(struct MHD_Daemon *d)
{
    app.mhd = d;
}

/* ---- start and stop ---------------------------------------------------- */

static void requeue_one(void *ctx, const char *id, const char *request)
{
    struct db_row row;
    int64_t created = srv_now_ms();
    if (db_get(app.db, id, 0, &row) == DB_OK) {
        created = row.created_ms;
        db_row_fini(&row);
    }
    if (job_find(id)) return;
    if (!job_start(id, request, created, NULL, NULL))
        srv_log(SRV_LOG_ERROR, "msg=\"could not re-queue\" id=%.12s", id);
    else (*(int *)ctx)++;
}

static void close_cb(uv_handle_t *h)
{
}

static void maybe_finish_shutdown(void)
{
    if (!app.stopping || app.n_active > 0 || app.n_roofline > 0) return;
    if (uv_is_closing((uv_handle_t *)&app.async)) return;
    /* Refuse further submissions and answer what is still queued. */
    uv_mutex_lock(&app.qlock);
    app.closed = 1;
    struct srv_req *r = app.qhead;
    app.qhead = app.qtail = NULL;
    uv_mutex_unlock(&app.qlock);
    while (r) {
        struct srv_req *next = r->next;
        answer_overloaded(r, "the server is shutting down");
        srv_http_resume(r);
        r = next;
    }
    flush_touches();
    uv_close((uv_handle_t *)&app.async, close_cb);
    uv_close((uv_handle_t *)&app.sigint, close_cb);
    uv_close((uv_handle_t *)&app.sigterm, close_cb);
    uv_close((uv_handle_t *)&app.wait_timer, close_cb);
    uv_close((uv_handle_t *)&app.flush_timer, close_cb);
}

static void begin_shutdown(int signum)
{
    if (app.stopping) return;
    app.stopping = 1;
    atomic_store(&app.pool_ok, 0);
    srv_log(SRV_LOG_INFO, "msg=shutdown signal=%d active=%d", signum, app.n_active);
    if (app.mhd) srv_http_quiesce(app.mhd);
    /* Waiters get 202: their jobs are in the database and run next start. */
    while (app.waiters) {
        struct srv_req *r = app.waiters;
        app.waiters = r->next;
        view_from_job(&r->view, r->job);
        r->job = NULL;
        answer_view(r, 202);
        srv_http_resume(r);
    }
    for (struct job *j = app.active; j; j = j->next) {
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
    if (app.finishing_id && strcmp(app.finishing_id, id) == 0) app.finishing_evicted = 1;
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

int srv_jobs_init(const struct srv_config *cfg)
{
    app.cfg = cfg;
    app.loop = uv_default_loop();
    char err[512];
    /* the store's callers: the loop, and the HTTP threads reading done
     * results where the store allows it (srv_jobs_read_done); workers never
     * call it (their outcomes are stored by the loop) */
    if (uv_rwlock_init(&app.db_rw) != 0 ||
        db_open_pool(cfg->db_path, cfg->cache_max, 1 + cfg->http_threads, &app.db, err, sizeof err) != DB_OK) {
        char shown[sizeof cfg->db_path];
        db_redact(cfg->db_path, shown, sizeof shown);
        srv_log(SRV_LOG_ERROR, "msg=\"cannot open the database\" path=\"%s\" err=\"%s\"", shown, err);
        return -1;
    }
    atomic_store(&app.db_ok, 1);
    atomic_store(&app.store_ok, 1);
    atomic_store(&app.file_ok, 1);
    atomic_store(&app.reachable, 1);
    srv_rcache_init(cfg->mem_cache > 0 ? (size_t)cfg->mem_cache : 0);
    db_set_evict_hook(app.db, on_db_evict, NULL);
    srv_metrics_db_size(db_size_bytes(app.db));
    srv_metrics_db_backend(db_backend(app.db));
    if (uv_mutex_init(&app.qlock) != 0 || uv_async_init(app.loop, &app.async, on_async) != 0)
        return -1;
    uv_signal_init(app.loop, &app.sigint);
    uv_signal_init(app.loop, &app.sigterm);
    uv_signal_start(&app.sigint, on_signal, SIGINT);
    uv_signal_start(&app.sigterm, on_signal, SIGTERM);
    uv_timer_init(app.loop, &app.wait_timer);
    uv_timer_init(app.loop, &app.flush_timer);
    uv_timer_start(&app.flush_timer, on_flush_timer, 1000, 1000);
    int n = 0;
    int rc = db_requeue(app.db, requeue_one, &n);
    if (rc < 0) {
        srv_log(SRV_LOG_ERROR, "msg=\"re-queue failed\" err=\"%s\"", db_errmsg(app.db));
        return -1;
    }
    if (rc > 0) srv_log(SRV_LOG_INFO, "msg=requeued jobs=%d", n);
    atomic_store(&app.pool_ok, 1);
    return 0;
}

void srv_jobs_run(void)
{
    uv_run(app.loop, UV_RUN_DEFAULT);
    /* held results: one last try; if the database still cannot take them,
     * their rows stay running and the jobs run again at the next start */
    if (app.held) flush_held();
    while (app.held) {
        struct held *h = app.held;
        srv_log(SRV_LOG_WARN, "msg=\"held result not written; its job runs again at the next start\" id=%.12s", h->id);
        app.held = h->next;
        free(h->result);
        free(h->error);
        free(h);
    }
    atomic_store(&app.db_ok, 0);
    uv_loop_close(app.loop);
    uv_rwlock_wrlock(&app.db_rw);
    db_close(app.db);
    app.db = NULL;
    uv_rwlock_wrunlock(&app.db_rw);
    uv_mutex_destroy(&app.qlock);
    srv_log(SRV_LOG_INFO, "msg=stopped");
}
