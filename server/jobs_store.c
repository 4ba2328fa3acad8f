/* server/jobs_store.c -- the store's duties on the loop: accesses (hit
 * counts, LRU) and held outcomes written once a second, a shared store's
 * leases and takeovers (docs/storage.md), done results read on HTTP
 * threads (server/jobs_int.h). */
#include "jobs_int.h"

/* ---- accesses (hit counts, LRU), flushed once a second ---------------- */

static void touch_at(const char *id, int64_t hits, int64_t now);

static void rcache_touch(void *ctx, const char *id, int64_t hits, int64_t accessed_ms)
{
    touch_at(id, hits, accessed_ms);
}

void jobs_flush_touches(void)
{
    if (!jobs_app.db) return;
    srv_rcache_drain_touches(rcache_touch, NULL);
    if (!jobs_app.n_touch) return;
    if (db_touch_many(jobs_app.db, jobs_app.touches, jobs_app.n_touch) != DB_OK)
        srv_log(SRV_LOG_WARN, "msg=\"jobs_touch failed\" err=\"%s\"", db_errmsg(jobs_app.db));
    jobs_app.n_touch = 0;
}

static void touch_at(const char *id, int64_t hit, int64_t now)
{
    /* Most repeated accesses are to the same few ids: merge with recent. */
    size_t lo = jobs_app.n_touch > 16 ? jobs_app.n_touch - 16 : 0;
    for (size_t i = jobs_app.n_touch; i-- > lo;) {
        if (strcmp(jobs_app.touch_ids[i], id) == 0) {
            jobs_app.touches[i].hits += hit;
            if (now > jobs_app.touches[i].accessed_ms) jobs_app.touches[i].accessed_ms = now;
            return;
        }
    }
    if (jobs_app.n_touch == MAX_TOUCH) {
        if (db_touch_many(jobs_app.db, jobs_app.touches, jobs_app.n_touch) != DB_OK)
            srv_log(SRV_LOG_WARN, "msg=\"jobs_touch failed\" err=\"%s\"", db_errmsg(jobs_app.db));
        jobs_app.n_touch = 0;
    }
    size_t i = jobs_app.n_touch++;
    memcpy(jobs_app.touch_ids[i], id, 65);
    jobs_app.touches[i].id = jobs_app.touch_ids[i];
    jobs_app.touches[i].hits = hit;
    jobs_app.touches[i].accessed_ms = now;
}

void jobs_touch(const char *id, int hit)
{
    touch_at(id, hit, srv_now_ms());
}

struct held *jobs_held_find(const char *id)
{
    for (struct held *h = jobs_app.held; h; h = h->next)
        if (!strcmp(h->id, id)) return h;
    return NULL;
}

/* Write the held outcomes again, oldest first; the store is healthy again
 * once none is left. */
void jobs_flush_held(void)
{
    while (jobs_app.held) {
        struct held *h = jobs_app.held;
        int rc = db_finish(jobs_app.db, h->id, h->outcome, h->result, h->error, h->has_best, h->best_mfu,
                           h->evaluated, h->finished_ms);
        if (rc == DB_ELOST)
            srv_log(SRV_LOG_WARN, "msg=\"held result dropped: another replica took the job over\" id=%.12s", h->id);
        else if (rc != DB_OK) {
            snprintf(jobs_app.store_err, sizeof jobs_app.store_err, "%s", db_errmsg(jobs_app.db));
            return;
        }
        else srv_log(SRV_LOG_INFO, "msg=\"held result written\" id=%.12s", h->id);
        jobs_app.held = h->next;
        jobs_app.n_held--;
        free(h->result);
        free(h->error);
        free(h);
    }
    if (!atomic_load(&jobs_app.store_ok)) srv_log(SRV_LOG_WARN, "msg=\"database writes work again\"");
    atomic_store(&jobs_app.store_ok, 1);
}


/* A store several replicas share (docs/storage.md): renew this replica's
 * leases, see whether the database is reachable (a lost connection comes
 * back here, with backoff), and take over the jobs of replicas whose
 * leases ran out, as many as there is room for. */
static void shared_store_tick(void)
{
    char why[sizeof jobs_app.store_err];
    int up = db_file_ok(jobs_app.db, why, sizeof why);
    if (up != atomic_load(&jobs_app.reachable)) {
        if (up) srv_log(SRV_LOG_WARN, "msg=\"database reachable again\"");
        else srv_log(SRV_LOG_ERROR, "msg=\"database unreachable\" detail=\"%s\"", why);
        atomic_store(&jobs_app.reachable, up);
    }
    if (!up) return;
    if (db_heartbeat(jobs_app.db) != DB_OK)
        srv_log(SRV_LOG_WARN, "msg=\"lease renewal failed\" err=\"%s\"", db_errmsg(jobs_app.db));
    int room = jobs_app.cfg->queue_limit - jobs_app.n_active;
    if (room > jobs_app.cfg->workers) room = jobs_app.cfg->workers; /* leave the rest to the others */
    if (jobs_app.stopping || !atomic_load(&jobs_app.store_ok) || room <= 0) return;
    int n = 0;
    if (db_claim(jobs_app.db, room, jobs_requeue_one, &n) > 0) {
        srv_log(SRV_LOG_INFO, "msg=\"took over jobs whose replica stopped renewing\" jobs=%d", n);
        srv_metrics_job_failover(n);
    }
}

void jobs_on_flush_timer(uv_timer_t *t)
{
    if (jobs_app.db && db_shared(jobs_app.db)) shared_store_tick();
    /* the file deleted or replaced under us: loudly, not ready, no new
     * jobs, until a restart opens the file at the path again */
    if (jobs_app.db && !db_shared(jobs_app.db) && atomic_load(&jobs_app.file_ok)) {
        char why[sizeof jobs_app.store_err];
        if (!db_file_ok(jobs_app.db, why, sizeof why)) {
            srv_log(SRV_LOG_ERROR, "msg=\"database file lost\" detail=\"%s\"", why);
            snprintf(jobs_app.store_err, sizeof jobs_app.store_err, "%s", why);
            atomic_store(&jobs_app.file_ok, 0);
        }
    }
    if (jobs_app.held) jobs_flush_held();
    jobs_flush_touches();
    if (jobs_app.db) {
        struct db_stats st;
        db_stats(jobs_app.db, &st);
        srv_metrics_db_size(db_size_bytes(jobs_app.db));
        srv_metrics_db_calls(st.queries, st.errors, st.seconds);
    }
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
    uv_rwlock_rdlock(&jobs_app.db_rw);
    if (!jobs_app.db || !db_concurrent(jobs_app.db) || !atomic_load(&jobs_app.db_ok)) {
        uv_rwlock_rdunlock(&jobs_app.db_rw);
        return 0;
    }
    struct db_row row;
    int rc = db_get(jobs_app.db, r->id, 1, &row);
    uv_rwlock_rdunlock(&jobs_app.db_rw);
    if (rc == DB_OK && !strcmp(row.status, "done") && row.result) {
        jobs_view_from_row(&r->view, &row);
        db_row_fini(&row);
        srv_rcache_note_access(r->id, 0);
        jobs_attach_entry(r);
        jobs_answer_view(r, 200);
        return 1;
    }
    if (rc == DB_OK || rc == DB_ECORRUPT) db_row_fini(&row);
    return 0;
}
