/* db/pg.c -- the PostgreSQL backend of the result and job store (db.h; the
 * interface in db_int.h; docs/storage.md), for several mfud replicas on one
 * database: the rows and the jobs. Its connections are db/pg_conn.c's.
 *
 * DESIGN
 * The table is the SQLite store's (db/sqlite.c) plus what sharing needs:
 * owner (the replica running or queueing the row's job), lease_ms (until
 * when that claim holds, on the database's clock, so replicas' clocks never
 * matter), attempts (claims of the row) and runs (outcomes stored: more
 * than one would mean a job ran twice to completion).
 * - A replica that accepts a search inserts the row owned by itself with a
 *   lease (INSERT ... ON CONFLICT DO NOTHING: the id is the cache key, so of
 *   two replicas inserting the same search, one wins and the other answers
 *   from the row). It renews the leases of all its rows every second.
 * - A replica that stops renewing (kill -9, cut off) loses its rows when the
 *   lease runs out: every replica claims such rows once a second, through
 *   SELECT ... FOR UPDATE SKIP LOCKED, so two claimers never take one row.
 * - Writes of a job's progress and outcome are fenced by the owner: a
 *   replica whose row was taken over writes nothing (DB_ELOST), so a job's
 *   outcome is stored once.
 * - The schema is versioned in mfud_schema and migrated inside one
 *   transaction holding an advisory lock: replicas starting together
 *   migrate once, the others wait and find it done.
 * - Connections: a pool, one connection per thread that calls the store
 *   (made on its first call; at most the size db_open_pool was given), so
 *   the loop thread and the HTTP threads reading results (db_concurrent)
 *   never wait for one another. A lost connection is re-established with
 *   backoff (0.2 s doubling to 5 s) on its thread's next call; calls fail
 *   fast meanwhile.
 * - SQL is constant text with $n parameters (PQexecParams): no SQL is ever
 *   built from data.
 */
#include "db_int.h"

#include <stdio.h>

#ifndef MFU_HAVE_LIBPQ

int db_pg_open(const char *url, int64_t cache_max_bytes, int pool_conns, const char *owner,
               struct mfu_db **out, char *err, size_t errlen)
{
    (void)url;
    (void)cache_max_bytes;
    (void)pool_conns;
    (void)owner;
    *out = NULL;
    snprintf(err, errlen, "this mfud was built without PostgreSQL support (install libpq-dev and "
                          "rebuild); use a SQLite file path instead");
    return DB_EUNSUPPORTED;
}

#else

#include "pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROW_COLS "id, status, model, hardware, devices, best_mfu, evaluated, created_ms, " \
                 "started_ms, finished_ms, accessed_ms, hits"
static char *dup_val(PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col)) return NULL;
    return strdup(PQgetvalue(r, row, col));
}

static int64_t i64_val(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static void read_row(PGresult *r, int i, struct db_row *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->id, sizeof out->id, "%s", PQgetvalue(r, i, 0));
    snprintf(out->status, sizeof out->status, "%s", PQgetvalue(r, i, 1));
    out->model = dup_val(r, i, 2);
    out->hardware = dup_val(r, i, 3);
    out->devices = i64_val(r, i, 4);
    out->has_best_mfu = !PQgetisnull(r, i, 5);
    out->best_mfu = out->has_best_mfu ? strtod(PQgetvalue(r, i, 5), NULL) : 0.0;
    out->evaluated = i64_val(r, i, 6);
    out->created_ms = i64_val(r, i, 7);
    out->started_ms = i64_val(r, i, 8);
    out->finished_ms = i64_val(r, i, 9);
    out->accessed_ms = i64_val(r, i, 10);
    out->hits = i64_val(r, i, 11);
}

static int pg_get(struct mfu_db *base, const char *id, int with_bodies, struct db_row *out)
{
    struct pg_db *db = (struct pg_db *)base;
    memset(out, 0, sizeof *out);
    const char *p[1] = {id};
    PGresult *r = pg_exec(db,
                       with_bodies ? "SELECT " ROW_COLS ", request, result, error, body_crc FROM results WHERE id = $1"
                                   : "SELECT " ROW_COLS " FROM results WHERE id = $1",
                       1, p);
    if (!r) return DB_ERROR;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return DB_ENOTFOUND;
    }
    read_row(r, 0, out);
    int rc = DB_OK;
    if (with_bodies) {
        out->request = dup_val(r, 0, 12);
        out->result = dup_val(r, 0, 13);
        out->error = dup_val(r, 0, 14);
        if (!PQgetisnull(r, 0, 15) &&
            (uint32_t)strtoll(PQgetvalue(r, 0, 15), NULL, 10) != db_body_crc(out->result, out->error)) {
            free(out->result);
            free(out->error);
            out->result = out->error = NULL;
            rc = DB_ECORRUPT;
        }
    }
    PQclear(r);
    return rc;
}

static int pg_put_job(struct mfu_db *base, const struct db_new_job *j)
{
    struct pg_db *db = (struct pg_db *)base;
    char dev[24], now[24];
    pg_i64s(dev, sizeof dev, j->devices);
    pg_i64s(now, sizeof now, j->now_ms);
    const char *ins[8] = {j->id, j->request, j->input, j->model, j->hardware, dev, now, db->owner};
    int c = pg_exec_changed(db,
                         "INSERT INTO results (id, request, input, status, model, hardware, devices,"
                         " created_ms, accessed_ms, owner, lease_ms, attempts)"
                         " VALUES ($1, $2, $3, 'queued', $4, $5, $6::bigint, $7::bigint, $7::bigint, $8, "
                         NOW_MS " + " LEASE_SQL ", 1) ON CONFLICT (id) DO NOTHING",
                         8, ins);
    if (c < 0) return DB_ERROR;
    if (c > 0) return DB_OK;
    /* there already: take it over when it failed, or when its owner's lease
     * ran out (or it is this replica's own) */
    const char *take[4] = {j->id, now, j->input, db->owner};
    c = pg_exec_changed(db,
                     "UPDATE results SET status = 'queued', error = NULL, result = NULL, body_crc = NULL,"
                     " input = $3, started_ms = NULL, finished_ms = NULL, size = 0, accessed_ms = $2::bigint,"
                     " owner = $4, lease_ms = " NOW_MS " + " LEASE_SQL ", attempts = attempts + 1"
                     " WHERE id = $1 AND (status = 'failed' OR (status IN ('queued', 'running')"
                     " AND (lease_ms < " NOW_MS " OR owner = $4)))",
                     4, take);
    if (c < 0) return DB_ERROR;
    return c > 0 ? DB_OK : DB_EOWNED;
}

static int pg_set_running(struct mfu_db *base, const char *id, int64_t now_ms)
{
    struct pg_db *db = (struct pg_db *)base;
    char now[24];
    pg_i64s(now, sizeof now, now_ms);
    const char *p[3] = {id, now, db->owner};
    int c = pg_exec_changed(db,
                         "UPDATE results SET status = 'running', started_ms = $2::bigint,"
                         " lease_ms = " NOW_MS " + " LEASE_SQL
                         " WHERE id = $1 AND owner = $3 AND status IN ('queued', 'running')",
                         3, p);
    return c < 0 ? DB_ERROR : c ? DB_OK : DB_ELOST;
}

static int pg_set_queued(struct mfu_db *base, const char *id)
{
    struct pg_db *db = (struct pg_db *)base;
    /* shutdown: back to queued with the lease given up, so another replica
     * claims it at its next look rather than after the lease */
    const char *p[2] = {id, db->owner};
    int c = pg_exec_changed(db,
                         "UPDATE results SET status = 'queued', started_ms = NULL, lease_ms = 0"
                         " WHERE id = $1 AND owner = $2 AND status IN ('queued', 'running')",
                         2, p);
    return c < 0 ? DB_ERROR : DB_OK;
}

static int pg_reset(struct mfu_db *base, const char *id, char **input)
{
    struct pg_db *db = (struct pg_db *)base;
    *input = NULL;
    const char *p[2] = {id, db->owner};
    PGresult *r = pg_exec(db,
                       "UPDATE results SET status = 'queued', result = NULL, error = NULL, body_crc = NULL,"
                       " started_ms = NULL, finished_ms = NULL, size = 0, owner = $2,"
                       " lease_ms = " NOW_MS " + " LEASE_SQL ", attempts = attempts + 1"
                       " WHERE id = $1 RETURNING coalesce(input, request)",
                       2, p);
    if (!r) return DB_ERROR;
    int rc = DB_ENOTFOUND;
    if (PQntuples(r) > 0) {
        *input = dup_val(r, 0, 0);
        rc = *input ? DB_OK : DB_ENOMEM;
    }
    PQclear(r);
    return rc;
}

static int pg_evict(struct mfu_db *base);

static int pg_finish(struct mfu_db *base, const char *id, const char *status, const char *result,
                     const char *error, int has_best_mfu, double best_mfu, int64_t evaluated,
                     int64_t now_ms)
{
    struct pg_db *db = (struct pg_db *)base;
    int64_t size = (int64_t)(result ? strlen(result) : 0) + (int64_t)(error ? strlen(error) : 0) + 256;
    char best[40], ev[24], now[24], sz[24], crc[24];
    snprintf(best, sizeof best, "%.17g", best_mfu);
    pg_i64s(ev, sizeof ev, evaluated);
    pg_i64s(now, sizeof now, now_ms);
    pg_i64s(sz, sizeof sz, size);
    pg_i64s(crc, sizeof crc, (int64_t)db_body_crc(result, error));
    const char *p[10] = {id, status, result, error, has_best_mfu ? best : NULL, ev, now, sz, crc, db->owner};
    int c = pg_exec_changed(db,
                         "UPDATE results SET status = $2, result = $3, error = $4, best_mfu = $5::float8,"
                         " evaluated = $6::bigint, finished_ms = $7::bigint, accessed_ms = $7::bigint,"
                         " size = $8::bigint, body_crc = $9::bigint, owner = NULL, lease_ms = 0, runs = runs + 1"
                         " WHERE id = $1 AND owner = $10 AND status IN ('queued', 'running')",
                         10, p);
    if (c < 0) return DB_ERROR;
    if (c == 0) return DB_ELOST;
    db->size_bytes += size;
    if (db->cache_max_bytes > 0 && db->size_bytes > db->cache_max_bytes) pg_evict(base);
    return DB_OK;
}

static int pg_claim(struct mfu_db *base, int max, db_pending_fn cb, void *ctx)
{
    struct pg_db *db = (struct pg_db *)base;
    char n[16];
    pg_i64s(n, sizeof n, max);
    const char *p[2] = {db->owner, n};
    PGresult *r = pg_exec(db,
                       "UPDATE results SET owner = $1, lease_ms = " NOW_MS " + " LEASE_SQL ","
                       " status = 'queued', started_ms = NULL, attempts = attempts + 1"
                       " WHERE id IN (SELECT id FROM results WHERE status IN ('queued', 'running')"
                       " AND lease_ms < " NOW_MS " ORDER BY created_ms, id LIMIT $2::integer"
                       " FOR UPDATE SKIP LOCKED)"
                       " RETURNING id, coalesce(input, request), created_ms",
                       2, p);
    if (!r) return DB_ERROR;
    int k = PQntuples(r);
    for (int i = 0; i < k; i++) cb(ctx, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
    PQclear(r);
    return k;
}

static int pg_requeue(struct mfu_db *base, db_pending_fn cb, void *ctx)
{
    /* A replica never resets another's running rows: at start it takes
     * only what no live replica holds, like any later claim. */
    int total = 0;
    for (;;) {
        int k = pg_claim(base, 256, cb, ctx);
        if (k < 0) return k;
        total += k;
        if (k < 256) return total;
    }
}

static int pg_heartbeat(struct mfu_db *base)
{
    struct pg_db *db = (struct pg_db *)base;
    const char *p[1] = {db->owner};
    int c = pg_exec_changed(db,
                         "UPDATE results SET lease_ms = " NOW_MS " + " LEASE_SQL
                         " WHERE owner = $1 AND status IN ('queued', 'running')",
                         1, p);
    if (c < 0) return DB_ERROR;
    /* other replicas store and evict too: recount the size now and then */
    if (db->beats++ % 10 == 0) {
        int64_t s = pg_query_i64(db, "SELECT coalesce(sum(size), 0) FROM results WHERE status IN ('done', 'failed')",
                              0, NULL);
        if (s >= 0) db->size_bytes = s;
    }
    return DB_OK;
}

static int pg_touch_many(struct mfu_db *base, const struct db_touch *t, size_t n)
{
    struct pg_db *db = (struct pg_db *)base;
    if (n == 0) return DB_OK;
    if (pg_exec_ok(db, "BEGIN", 0, NULL) != DB_OK) return DB_ERROR;
    for (size_t i = 0; i < n; i++) {
        char hits[24], acc[24];
        pg_i64s(hits, sizeof hits, t[i].hits);
        pg_i64s(acc, sizeof acc, t[i].accessed_ms);
        const char *p[3] = {t[i].id, hits, acc};
        if (pg_exec_ok(db,
                    "UPDATE results SET hits = hits + $2::bigint,"
                    " accessed_ms = greatest(accessed_ms, $3::bigint) WHERE id = $1",
                    3, p) != DB_OK) {
            pg_exec_ok(db, "ROLLBACK", 0, NULL);
            return DB_ERROR;
        }
    }
    return pg_exec_ok(db, "COMMIT", 0, NULL);
}

static int pg_list(struct mfu_db *base, int limit, int offset, int64_t after_created_ms,
                   const char *after_id, db_list_fn cb, void *ctx)
{
    struct pg_db *db = (struct pg_db *)base;
    char lim[16], off[16], aft[24];
    pg_i64s(lim, sizeof lim, limit);
    pg_i64s(off, sizeof off, offset);
    pg_i64s(aft, sizeof aft, after_created_ms);
    PGresult *r;
    if (after_id) {
        const char *p[3] = {lim, aft, after_id};
        r = pg_exec(db,
                 "SELECT " ROW_COLS " FROM results WHERE (created_ms, id) < ($2::bigint, $3)"
                 " ORDER BY created_ms DESC, id DESC LIMIT $1::integer",
                 3, p);
    } else {
        const char *p[2] = {lim, off};
        r = pg_exec(db,
                 "SELECT " ROW_COLS " FROM results ORDER BY created_ms DESC, id DESC"
                 " LIMIT $1::integer OFFSET $2::integer",
                 2, p);
    }
    if (!r) return DB_ERROR;
    int k = PQntuples(r);
    for (int i = 0; i < k; i++) {
        struct db_row row;
        read_row(r, i, &row);
        cb(ctx, &row);
        db_row_free(&row);
    }
    PQclear(r);
    return k;
}

static int pg_evict(struct mfu_db *base)
{
    struct pg_db *db = (struct pg_db *)base;
    int deleted = 0;
    int64_t s = pg_query_i64(db, "SELECT coalesce(sum(size), 0) FROM results WHERE status IN ('done', 'failed')", 0,
                          NULL);
    if (s < 0) return DB_ERROR;
    db->size_bytes = s;
    while (db->cache_max_bytes > 0 && db->size_bytes > db->cache_max_bytes) {
        PGresult *r = pg_exec(db,
                           "SELECT id FROM results WHERE status IN ('done', 'failed')"
                           " ORDER BY accessed_ms, id LIMIT 64",
                           0, NULL);
        if (!r) return DB_ERROR;
        int k = PQntuples(r);
        for (int i = 0; i < k && db->size_bytes > db->cache_max_bytes; i++) {
            const char *p[1] = {PQgetvalue(r, i, 0)};
            /* another replica may evict the same row: only a row this one
             * deleted counts */
            int64_t sz = pg_query_i64(db,
                                   "DELETE FROM results WHERE id = $1 AND status IN ('done', 'failed')"
                                   " RETURNING size",
                                   1, p);
            if (sz < 0) continue;
            db->size_bytes -= sz;
            deleted++;
            if (db->base.evict_hook) db->base.evict_hook(db->base.evict_ctx, p[0]);
        }
        PQclear(r);
        if (k == 0) break;
    }
    return deleted;
}

static int64_t pg_size_bytes(struct mfu_db *base)
{
    return ((struct pg_db *)base)->size_bytes;
}

static int64_t pg_count(struct mfu_db *base)
{
    return pg_query_i64((struct pg_db *)base, "SELECT count(*) FROM results", 0, NULL);
}

static const struct db_ops pg_ops = {
    .name = "postgresql",
    .close = pg_close,
    .errmsg = pg_errmsg,
    .health = pg_health,
    .schema_version = pg_schema_version,
    .get = pg_get,
    .put_job = pg_put_job,
    .set_running = pg_set_running,
    .reset = pg_reset,
    .set_queued = pg_set_queued,
    .finish = pg_finish,
    .requeue = pg_requeue,
    .touch_many = pg_touch_many,
    .list = pg_list,
    .evict = pg_evict,
    .size_bytes = pg_size_bytes,
    .count = pg_count,
    .heartbeat = pg_heartbeat,
    .claim = pg_claim,
    .concurrent = 1,
};

int db_pg_open(const char *url, int64_t cache_max_bytes, int pool_conns, const char *owner,
               struct mfu_db **out, char *err, size_t errlen)
{
    return pg_open(&pg_ops, url, cache_max_bytes, pool_conns, owner, out, err, errlen);
}

#endif /* MFU_HAVE_LIBPQ */
