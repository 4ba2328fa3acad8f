/* db/db.c -- the storage interface (db.h): picks the backend by the URL and
 * forwards every call to it through its table of operations (db_int.h),
 * counting calls, failures and time for /metrics.
 */
#include "db_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int db_is_pg_url(const char *path)
{
    return !strncmp(path, "postgresql://", 13) || !strncmp(path, "postgres://", 11);
}

int db_open(const char *path, int64_t cache_max_bytes, struct mfu_db **out, char *err,
            size_t errlen)
{
    return db_open_pool(path, cache_max_bytes, 1, out, err, errlen);
}

int db_open_pool(const char *path, int64_t cache_max_bytes, int threads, struct mfu_db **out, char *err,
                 size_t errlen)
{
    *out = NULL;
    if (!db_is_pg_url(path)) return db_sqlite_open(path, cache_max_bytes, out, err, errlen);
    /* A replica's name in the rows it owns: host, pid and a start time,
     * distinct across restarts of the same pid. */
    char host[64] = "?", owner[128];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(owner, sizeof owner, "%s:%ld:%lld.%09ld", host, (long)getpid(), (long long)ts.tv_sec,
             ts.tv_nsec);
    return db_pg_open(path, cache_max_bytes, threads, owner, out, err, errlen);
}

void db_close(struct mfu_db *db)
{
    if (db) db->ops->close(db);
}

const char *db_errmsg(struct mfu_db *db)
{
    return db ? db->ops->errmsg(db) : "database not open";
}

void db_redact(const char *url, char *out, size_t n)
{
    if (n == 0) return;
    snprintf(out, n, "%s", url);
    if (!db_is_pg_url(url)) return;
    /* scheme://user:password@host... */
    char *auth = strstr(out, "://");
    if (auth) {
        auth += 3;
        char *at = strchr(auth, '@'), *slash = strchr(auth, '/');
        char *colon = strchr(auth, ':');
        if (at && (!slash || at < slash) && colon && colon < at) {
            char rest[1024];
            snprintf(rest, sizeof rest, "%s", at);
            snprintf(colon, n - (size_t)(colon - out), ":***%s", rest);
        }
    }
    /* ...?password=secret&... */
    char *pw = strstr(out, "password=");
    if (pw) {
        pw += 9;
        char rest[1024];
        const char *amp = strchr(pw, '&');
        snprintf(rest, sizeof rest, "%s", amp ? amp : "");
        snprintf(pw, n - (size_t)(pw - out), "***%s", rest);
    }
}

const char *db_backend(const struct mfu_db *db)
{
    return db ? db->ops->name : "none";
}

int db_concurrent(const struct mfu_db *db)
{
    return db && db->ops->concurrent;
}

int db_shared(const struct mfu_db *db)
{
    return db && db->ops->claim != NULL;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One counted call: rc is a failure when it is an error, not an answer. */
static int counted(struct mfu_db *db, int64_t t0, int rc)
{
    atomic_fetch_add(&db->n_queries, 1);
    atomic_fetch_add(&db->query_ns, now_ns() - t0);
    if (rc < 0 && rc != DB_ENOTFOUND && rc != DB_EOWNED && rc != DB_ELOST)
        atomic_fetch_add(&db->n_errors, 1);
    return rc;
}

void db_stats(const struct mfu_db *db, struct db_stats *out)
{
    struct mfu_db *m = (struct mfu_db *)db;
    out->queries = atomic_load(&m->n_queries);
    out->errors = atomic_load(&m->n_errors);
    out->seconds = (double)atomic_load(&m->query_ns) / 1e9;
}

int db_file_ok(struct mfu_db *db, char *why, size_t whylen)
{
    return db ? db->ops->health(db, why, whylen) : 1;
}

int db_schema_version(struct mfu_db *db)
{
    return db->ops->schema_version(db);
}

int db_get(struct mfu_db *db, const char *id, int with_bodies, struct db_row *out)
{
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->get(db, id, with_bodies, out));
}

void db_row_fini(struct db_row *r)
{
    if (r) db_row_free(r);
}

int db_put_job(struct mfu_db *db, const struct db_new_job *job)
{
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->put_job(db, job));
}

int db_set_running(struct mfu_db *db, const char *id, int64_t now_ms)
{
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->set_running(db, id, now_ms));
}

int db_reset(struct mfu_db *db, const char *id, char **input)
{
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->reset(db, id, input));
}

int db_set_queued(struct mfu_db *db, const char *id)
{
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->set_queued(db, id));
}

int db_finish(struct mfu_db *db, const char *id, const char *status, const char *result,
              const char *error, int has_best_mfu, double best_mfu, int64_t evaluated,
              int64_t now_ms)
{
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->finish(db, id, status, result, error, has_best_mfu, best_mfu,
                                           evaluated, now_ms));
}

int db_requeue(struct mfu_db *db, db_pending_fn cb, void *ctx)
{
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->requeue(db, cb, ctx));
}

int db_touch_many(struct mfu_db *db, const struct db_touch *t, size_t n)
{
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->touch_many(db, t, n));
}

int db_list(struct mfu_db *db, int limit, int offset, int64_t after_created_ms,
            const char *after_id, db_list_fn cb, void *ctx)
{
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->list(db, limit, offset, after_created_ms, after_id, cb, ctx));
}

int db_evict(struct mfu_db *db)
{
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->evict(db));
}

void db_set_evict_hook(struct mfu_db *db, db_evict_fn fn, void *ctx)
{
    db->evict_hook = fn;
    db->evict_ctx = ctx;
}

int64_t db_size_bytes(struct mfu_db *db)
{
    return db->ops->size_bytes(db);
}

int64_t db_count(struct mfu_db *db)
{
    int64_t t0 = now_ns();
    int64_t n = db->ops->count(db);
    counted(db, t0, n < 0 ? DB_ERROR : DB_OK);
    return n;
}

int db_heartbeat(struct mfu_db *db)
{
    if (!db->ops->heartbeat) return DB_OK;
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->heartbeat(db));
}

int db_claim(struct mfu_db *db, int max, db_pending_fn cb, void *ctx)
{
    if (!db->ops->claim || max <= 0) return 0;
    int64_t t0 = now_ns();
    return counted(db, t0, db->ops->claim(db, max, cb, ctx));
}
