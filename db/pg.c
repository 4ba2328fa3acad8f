/* db/pg.c -- the PostgreSQL backend of the result and job store (db.h; the
 * interface in db_int.h; docs/storage.md), for several mfud replicas on one
 * database.
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
#include <stdlib.h>
#include <string.h>

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

#include <libpq-fe.h>
#include <pthread.h>
#include <time.h>

/* The database's clock, in milliseconds since the Unix epoch. */
#define NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"
#define LEASE_SQL "10000" /* DB_LEASE_MS, as SQL text */
_Static_assert(DB_LEASE_MS == 10000, "LEASE_SQL must say DB_LEASE_MS");

#define ROW_COLS "id, status, model, hardware, devices, best_mfu, evaluated, created_ms, " \
                 "started_ms, finished_ms, accessed_ms, hits"

/* Migrations: migrations[i] takes the schema from version i to i + 1.
 * Append only; never edit a released step. */
static const char *const migrations[] = {
    "CREATE TABLE results ("
    "  id TEXT PRIMARY KEY,"
    "  request TEXT NOT NULL,"
    "  input TEXT,"
    "  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),"
    "  result TEXT,"
    "  error TEXT,"
    "  model TEXT,"
    "  hardware TEXT,"
    "  devices BIGINT NOT NULL DEFAULT 0,"
    "  best_mfu DOUBLE PRECISION,"
    "  evaluated BIGINT NOT NULL DEFAULT 0,"
    "  created_ms BIGINT NOT NULL,"
    "  started_ms BIGINT,"
    "  finished_ms BIGINT,"
    "  accessed_ms BIGINT NOT NULL,"
    "  hits BIGINT NOT NULL DEFAULT 0,"
    "  size BIGINT NOT NULL DEFAULT 0,"
    "  body_crc BIGINT,"
    "  owner TEXT,"
    "  lease_ms BIGINT NOT NULL DEFAULT 0,"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  runs INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE INDEX results_created ON results (created_ms, id);"
    "CREATE INDEX results_accessed ON results (accessed_ms) WHERE status IN ('done', 'failed');"
    "CREATE INDEX results_pending ON results (lease_ms) WHERE status IN ('queued', 'running');"
    "CREATE INDEX results_owner ON results (owner) WHERE status IN ('queued', 'running');",
};
#define N_MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))
/* pg_advisory_xact_lock's key for migrations: "mfud" in ASCII. */
#define MIGRATE_LOCK "1835431268"

#define MAX_PREPARED 32

/* One connection of the pool, bound to the thread that first used it. */
struct pg_conn {
    pthread_t thread;
    PGconn *c;
    double backoff_s, next_try_s; /* reconnect: wait, and when next (monotonic) */
    /* statements prepared on this connection, by their SQL text's address
     * (each is a string literal of this file): parsed and planned once per
     * connection, not per call */
    const char *prepared[MAX_PREPARED];
    int n_prepared;
};

struct pg_db {
    struct mfu_db base; /* first: the interface (db_int.h) */
    char url[1024];
    char owner[128];
    int64_t cache_max_bytes;
    int64_t size_bytes; /* the loop's */
    int beats;
    /* the pool: one connection per thread that calls the store, made on its
     * first call, at most pool_max (the threads that may call: db_open_pool) */
    pthread_mutex_t lock;
    int pool_max, n_conns;
    struct pg_conn *conns;
};

/* The calling thread's last error (db_errmsg is asked on the thread whose
 * call failed). */
static _Thread_local char tl_err[256];

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void set_err(const char *what, const char *msg)
{
    snprintf(tl_err, sizeof tl_err, "%s%s%s", what, what[0] ? ": " : "", msg ? msg : "");
    size_t n = strlen(tl_err);
    while (n && (tl_err[n - 1] == '\n' || tl_err[n - 1] == ' ')) tl_err[--n] = '\0';
}

/* The calling thread's connection: found, or made now (NULL when the pool
 * is full or out of memory). */
static struct pg_conn *conn_of(struct pg_db *db)
{
    pthread_t self = pthread_self();
    pthread_mutex_lock(&db->lock);
    struct pg_conn *pc = NULL;
    for (int i = 0; i < db->n_conns && !pc; i++)
        if (pthread_equal(db->conns[i].thread, self)) pc = &db->conns[i];
    if (!pc && db->n_conns < db->pool_max) {
        pc = &db->conns[db->n_conns++];
        memset(pc, 0, sizeof *pc);
        pc->thread = self;
        pc->c = PQconnectdb(db->url); /* a failure is retried by ensure() */
    }
    pthread_mutex_unlock(&db->lock);
    if (!pc) set_err("", "the connection pool is full (more threads call the store than it was sized for)");
    return pc;
}

/* The connection is up, or comes back now, or the call fails fast (the
 * backoff's wait not over). */
static int ensure(struct pg_conn *pc)
{
    if (!pc->c) {
        set_err("", "out of memory");
        return 0;
    }
    if (PQstatus(pc->c) == CONNECTION_OK) return 1;
    double now = mono_s();
    if (now < pc->next_try_s) {
        set_err("", "the database connection is down; reconnecting");
        return 0;
    }
    PQreset(pc->c);
    if (PQstatus(pc->c) == CONNECTION_OK) {
        pc->n_prepared = 0; /* a new session: nothing prepared on it */
        pc->backoff_s = 0;
        return 1;
    }
    set_err("reconnect", PQerrorMessage(pc->c));
    pc->backoff_s = pc->backoff_s <= 0 ? 0.2 : pc->backoff_s * 2;
    if (pc->backoff_s > 5.0) pc->backoff_s = 5.0;
    pc->next_try_s = now + pc->backoff_s;
    return 0;
}

/* Run one statement on the calling thread's connection; NULL on failure
 * (tl_err says why). The caller PQclear()s what it gets. */
static PGresult *exec(struct pg_db *db, const char *sql, int n, const char *const *params)
{
    struct pg_conn *pc = conn_of(db);
    if (!pc || !ensure(pc)) return NULL;
    /* with parameters: a prepared statement (named by its slot); without,
     * PQexec, which also takes a migration's several statements */
    PGresult *r = NULL;
    if (n) {
        int k = 0;
        while (k < pc->n_prepared && pc->prepared[k] != sql) k++;
        char name[16];
        snprintf(name, sizeof name, "mfud%d", k);
        if (k == pc->n_prepared && k < MAX_PREPARED) {
            PGresult *p = PQprepare(pc->c, name, sql, n, NULL);
            if (p && PQresultStatus(p) == PGRES_COMMAND_OK) pc->prepared[pc->n_prepared++] = sql;
            PQclear(p);
        }
        r = k < pc->n_prepared ? PQexecPrepared(pc->c, name, n, params, NULL, NULL, 0)
                               : PQexecParams(pc->c, sql, n, NULL, params, NULL, NULL, 0);
    } else {
        r = PQexec(pc->c, sql);
    }
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    set_err("", r ? PQresultErrorMessage(r) : PQerrorMessage(pc->c));
    PQclear(r);
    /* a dropped connection: try again at once on the next call */
    if (PQstatus(pc->c) != CONNECTION_OK) pc->next_try_s = 0;
    return NULL;
}

static int exec_ok(struct pg_db *db, const char *sql, int n, const char *const *params)
{
    PGresult *r = exec(db, sql, n, params);
    if (!r) return DB_ERROR;
    PQclear(r);
    return DB_OK;
}

/* Rows the statement changed (UPDATE/DELETE), or <0. */
static int exec_changed(struct pg_db *db, const char *sql, int n, const char *const *params)
{
    PGresult *r = exec(db, sql, n, params);
    if (!r) return DB_ERROR;
    int c = atoi(PQcmdTuples(r));
    PQclear(r);
    return c;
}

static int64_t query_i64(struct pg_db *db, const char *sql, int n, const char *const *params)
{
    PGresult *r = exec(db, sql, n, params);
    int64_t v = -1;
    if (r && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

static void i64s(char *buf, size_t n, int64_t v)
{
    snprintf(buf, n, "%lld", (long long)v);
}

static const char *pg_errmsg(struct mfu_db *base)
{
    (void)base;
    return tl_err[0] ? tl_err : "no error";
}

static int migrate(struct pg_db *db, char *err, size_t errlen)
{
    if (exec_ok(db, "BEGIN", 0, NULL) != DB_OK) goto fail;
    if (exec_ok(db, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ")", 0, NULL) != DB_OK ||
        exec_ok(db, "CREATE TABLE IF NOT EXISTS mfud_schema (version INTEGER NOT NULL)", 0, NULL) !=
            DB_OK)
        goto rollback;
    int64_t version = query_i64(db, "SELECT coalesce(max(version), 0) FROM mfud_schema", 0, NULL);
    if (version < 0) goto rollback;
    if (version > N_MIGRATIONS) {
        exec_ok(db, "ROLLBACK", 0, NULL);
        snprintf(err, errlen, "database schema version %lld is newer than this mfud (%d)",
                 (long long)version, N_MIGRATIONS);
        return DB_EVERSION;
    }
    for (int v = (int)version; v < N_MIGRATIONS; v++)
        if (exec_ok(db, migrations[v], 0, NULL) != DB_OK) goto rollback;
    if (version < N_MIGRATIONS) {
        char nv[16];
        i64s(nv, sizeof nv, N_MIGRATIONS);
        const char *p[1] = {nv};
        if (exec_ok(db, "DELETE FROM mfud_schema", 0, NULL) != DB_OK ||
            exec_ok(db, "INSERT INTO mfud_schema (version) VALUES ($1::integer)", 1, p) != DB_OK)
            goto rollback;
    }
    if (exec_ok(db, "COMMIT", 0, NULL) != DB_OK) goto fail;
    return DB_OK;
rollback:
    snprintf(err, errlen, "migrate: %s", tl_err);
    exec_ok(db, "ROLLBACK", 0, NULL);
    return DB_ERROR;
fail:
    snprintf(err, errlen, "migrate: %s", tl_err);
    return DB_ERROR;
}

static void pg_close(struct mfu_db *base)
{
    struct pg_db *db = (struct pg_db *)base;
    if (!db) return;
    for (int i = 0; i < db->n_conns; i++)
        if (db->conns[i].c) PQfinish(db->conns[i].c);
    free(db->conns);
    pthread_mutex_destroy(&db->lock);
    free(db);
}

static int pg_health(struct mfu_db *base, char *why, size_t whylen)
{
    struct pg_db *db = (struct pg_db *)base;
    struct pg_conn *pc = conn_of(db);
    if (pc && ensure(pc)) return 1;
    snprintf(why, whylen, "PostgreSQL unreachable: %s", tl_err);
    return 0;
}

static int pg_schema_version(struct mfu_db *base)
{
    struct pg_db *db = (struct pg_db *)base;
    return (int)query_i64(db, "SELECT coalesce(max(version), 0) FROM mfud_schema", 0, NULL);
}

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
    PGresult *r = exec(db,
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
    i64s(dev, sizeof dev, j->devices);
    i64s(now, sizeof now, j->now_ms);
    const char *ins[8] = {j->id, j->request, j->input, j->model, j->hardware, dev, now, db->owner};
    int c = exec_changed(db,
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
    c = exec_changed(db,
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
    i64s(now, sizeof now, now_ms);
    const char *p[3] = {id, now, db->owner};
    int c = exec_changed(db,
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
    int c = exec_changed(db,
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
    PGresult *r = exec(db,
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
    i64s(ev, sizeof ev, evaluated);
    i64s(now, sizeof now, now_ms);
    i64s(sz, sizeof sz, size);
    i64s(crc, sizeof crc, (int64_t)db_body_crc(result, error));
    const char *p[10] = {id, status, result, error, has_best_mfu ? best : NULL, ev, now, sz, crc, db->owner};
    int c = exec_changed(db,
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
    i64s(n, sizeof n, max);
    const char *p[2] = {db->owner, n};
    PGresult *r = exec(db,
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
    int c = exec_changed(db,
                         "UPDATE results SET lease_ms = " NOW_MS " + " LEASE_SQL
                         " WHERE owner = $1 AND status IN ('queued', 'running')",
                         1, p);
    if (c < 0) return DB_ERROR;
    /* other replicas store and evict too: recount the size now and then */
    if (db->beats++ % 10 == 0) {
        int64_t s = query_i64(db, "SELECT coalesce(sum(size), 0) FROM results WHERE status IN ('done', 'failed')",
                              0, NULL);
        if (s >= 0) db->size_bytes = s;
    }
    return DB_OK;
}

static int pg_touch_many(struct mfu_db *base, const struct db_touch *t, size_t n)
{
    struct pg_db *db = (struct pg_db *)base;
    if (n == 0) return DB_OK;
    if (exec_ok(db, "BEGIN", 0, NULL) != DB_OK) return DB_ERROR;
    for (size_t i = 0; i < n; i++) {
        char hits[24], acc[24];
        i64s(hits, sizeof hits, t[i].hits);
        i64s(acc, sizeof acc, t[i].accessed_ms);
        const char *p[3] = {t[i].id, hits, acc};
        if (exec_ok(db,
                    "UPDATE results SET hits = hits + $2::bigint,"
                    " accessed_ms = greatest(accessed_ms, $3::bigint) WHERE id = $1",
                    3, p) != DB_OK) {
            exec_ok(db, "ROLLBACK", 0, NULL);
            return DB_ERROR;
        }
    }
    return exec_ok(db, "COMMIT", 0, NULL);
}

static int pg_list(struct mfu_db *base, int limit, int offset, int64_t after_created_ms,
                   const char *after_id, db_list_fn cb, void *ctx)
{
    struct pg_db *db = (struct pg_db *)base;
    char lim[16], off[16], aft[24];
    i64s(lim, sizeof lim, limit);
    i64s(off, sizeof off, offset);
    i64s(aft, sizeof aft, after_created_ms);
    PGresult *r;
    if (after_id) {
        const char *p[3] = {lim, aft, after_id};
        r = exec(db,
                 "SELECT " ROW_COLS " FROM results WHERE (created_ms, id) < ($2::bigint, $3)"
                 " ORDER BY created_ms DESC, id DESC LIMIT $1::integer",
                 3, p);
    } else {
        const char *p[2] = {lim, off};
        r = exec(db,
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
        db_row_fini(&row);
    }
    PQclear(r);
    return k;
}

static int pg_evict(struct mfu_db *base)
{
    struct pg_db *db = (struct pg_db *)base;
    int deleted = 0;
    int64_t s = query_i64(db, "SELECT coalesce(sum(size), 0) FROM results WHERE status IN ('done', 'failed')", 0,
                          NULL);
    if (s < 0) return DB_ERROR;
    db->size_bytes = s;
    while (db->cache_max_bytes > 0 && db->size_bytes > db->cache_max_bytes) {
        PGresult *r = exec(db,
                           "SELECT id FROM results WHERE status IN ('done', 'failed')"
                           " ORDER BY accessed_ms, id LIMIT 64",
                           0, NULL);
        if (!r) return DB_ERROR;
        int k = PQntuples(r);
        for (int i = 0; i < k && db->size_bytes > db->cache_max_bytes; i++) {
            const char *p[1] = {PQgetvalue(r, i, 0)};
            /* another replica may evict the same row: only a row this one
             * deleted counts */
            int64_t sz = query_i64(db,
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
    return query_i64((struct pg_db *)base, "SELECT count(*) FROM results", 0, NULL);
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
    *out = NULL;
    if (strlen(url) >= sizeof ((struct pg_db *)0)->url) {
        snprintf(err, errlen, "the PostgreSQL URL is longer than %zu bytes", sizeof ((struct pg_db *)0)->url - 1);
        return DB_ERROR;
    }
    struct pg_db *db = calloc(1, sizeof *db);
    if (!db || pthread_mutex_init(&db->lock, NULL) != 0) {
        free(db);
        snprintf(err, errlen, "out of memory");
        return DB_ENOMEM;
    }
    db->base.ops = &pg_ops;
    db->cache_max_bytes = cache_max_bytes;
    snprintf(db->owner, sizeof db->owner, "%s", owner);
    snprintf(db->url, sizeof db->url, "%s", url);
    db->pool_max = pool_conns > 0 ? pool_conns : 1;
    db->conns = calloc((size_t)db->pool_max, sizeof *db->conns);
    if (!db->conns) {
        pg_close(&db->base);
        snprintf(err, errlen, "out of memory");
        return DB_ENOMEM;
    }
    /* the opening thread's connection, made now: a server not there is an
     * error at open, not at the first call */
    struct pg_conn *pc = conn_of(db);
    if (!pc || !pc->c || PQstatus(pc->c) != CONNECTION_OK) {
        set_err("", pc && pc->c ? PQerrorMessage(pc->c) : "out of memory");
        snprintf(err, errlen, "connect to PostgreSQL: %s", tl_err);
        pg_close(&db->base);
        return DB_ERROR;
    }
    /* the notices of CREATE ... IF NOT EXISTS are not errors: quiet */
    exec_ok(db, "SET client_min_messages = warning", 0, NULL);
    int rc = migrate(db, err, errlen);
    if (rc != DB_OK) {
        pg_close(&db->base);
        return rc;
    }
    int64_t s = query_i64(db, "SELECT coalesce(sum(size), 0) FROM results WHERE status IN ('done', 'failed')", 0,
                          NULL);
    db->size_bytes = s > 0 ? s : 0;
    *out = &db->base;
    return DB_OK;
}

#endif /* MFU_HAVE_LIBPQ */
