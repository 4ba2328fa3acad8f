/* db/pg_conn.c -- the PostgreSQL backend's connections (docs/storage.md):
 * the pool (one connection per calling thread), reconnection with backoff,
 * prepared statements, the schema's migrations, open and close. The rows
 * and jobs are db/pg.c's.
 */
#include "db_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MFU_HAVE_LIBPQ

#include "pg_int.h"

#include <time.h>

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

/* A connection to url. A host that drops packets holds a connect attempt
 * for the kernel's TCP timeout (minutes); libpq's connect_timeout bounds
 * it at 10 s unless the URL sets its own (the dbname keyword takes the
 * whole URL, expanded, and the keywords after it apply on top:
 * PQconnectdbParams with expand_dbname). */
static PGconn *connect_url(const char *url)
{
    if (strstr(url, "connect_timeout")) return PQconnectdb(url);
    const char *const keys[] = {"dbname", "connect_timeout", NULL};
    const char *const vals[] = {url, "10", NULL};
    return PQconnectdbParams(keys, vals, 1);
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
        pc->c = connect_url(db->url); /* a failure is retried by ensure() */
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
PGresult *pg_exec(struct pg_db *db, const char *sql, int n, const char *const *params)
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

int pg_exec_ok(struct pg_db *db, const char *sql, int n, const char *const *params)
{
    PGresult *r = pg_exec(db, sql, n, params);
    if (!r) return DB_ERROR;
    PQclear(r);
    return DB_OK;
}

/* Rows the statement changed (UPDATE/DELETE), or <0. */
int pg_exec_changed(struct pg_db *db, const char *sql, int n, const char *const *params)
{
    PGresult *r = pg_exec(db, sql, n, params);
    if (!r) return DB_ERROR;
    int c = atoi(PQcmdTuples(r));
    PQclear(r);
    return c;
}

int64_t pg_query_i64(struct pg_db *db, const char *sql, int n, const char *const *params)
{
    PGresult *r = pg_exec(db, sql, n, params);
    int64_t v = -1;
    if (r && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

void pg_i64s(char *buf, size_t n, int64_t v)
{
    snprintf(buf, n, "%lld", (long long)v);
}

const char *pg_errmsg(struct mfu_db *base)
{
    (void)base;
    return tl_err[0] ? tl_err : "no error";
}

static int migrate(struct pg_db *db, char *err, size_t errlen)
{
    if (pg_exec_ok(db, "BEGIN", 0, NULL) != DB_OK) goto fail;
    if (pg_exec_ok(db, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ")", 0, NULL) != DB_OK ||
        pg_exec_ok(db, "CREATE TABLE IF NOT EXISTS mfud_schema (version INTEGER NOT NULL)", 0, NULL) !=
            DB_OK)
        goto rollback;
    int64_t version = pg_query_i64(db, "SELECT coalesce(max(version), 0) FROM mfud_schema", 0, NULL);
    if (version < 0) goto rollback;
    if (version > N_MIGRATIONS) {
        pg_exec_ok(db, "ROLLBACK", 0, NULL);
        snprintf(err, errlen, "database schema version %lld is newer than this mfud (%d)",
                 (long long)version, N_MIGRATIONS);
        return DB_EVERSION;
    }
    for (int v = (int)version; v < N_MIGRATIONS; v++)
        if (pg_exec_ok(db, migrations[v], 0, NULL) != DB_OK) goto rollback;
    if (version < N_MIGRATIONS) {
        char nv[16];
        pg_i64s(nv, sizeof nv, N_MIGRATIONS);
        const char *p[1] = {nv};
        if (pg_exec_ok(db, "DELETE FROM mfud_schema", 0, NULL) != DB_OK ||
            pg_exec_ok(db, "INSERT INTO mfud_schema (version) VALUES ($1::integer)", 1, p) != DB_OK)
            goto rollback;
    }
    if (pg_exec_ok(db, "COMMIT", 0, NULL) != DB_OK) goto fail;
    return DB_OK;
rollback:
    snprintf(err, errlen, "migrate: %s", tl_err);
    pg_exec_ok(db, "ROLLBACK", 0, NULL);
    return DB_ERROR;
fail:
    snprintf(err, errlen, "migrate: %s", tl_err);
    return DB_ERROR;
}

void pg_close(struct mfu_db *base)
{
    struct pg_db *db = (struct pg_db *)base;
    if (!db) return;
    for (int i = 0; i < db->n_conns; i++)
        if (db->conns[i].c) PQfinish(db->conns[i].c);
    free(db->conns);
    pthread_mutex_destroy(&db->lock);
    free(db);
}

int pg_health(struct mfu_db *base, char *why, size_t whylen)
{
    struct pg_db *db = (struct pg_db *)base;
    struct pg_conn *pc = conn_of(db);
    if (pc && ensure(pc)) return 1;
    snprintf(why, whylen, "PostgreSQL unreachable: %s", tl_err);
    return 0;
}

int pg_schema_version(struct mfu_db *base)
{
    struct pg_db *db = (struct pg_db *)base;
    return (int)pg_query_i64(db, "SELECT coalesce(max(version), 0) FROM mfud_schema", 0, NULL);
}

int pg_open(const struct db_ops *ops, const char *url, int64_t cache_max_bytes, int pool_conns,
            const char *owner, struct mfu_db **out, char *err, size_t errlen)
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
    db->base.ops = ops;
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
        int unreachable = pc && pc->c;
        pg_close(&db->base);
        return unreachable ? DB_EUNREACHABLE : DB_ENOMEM;
    }
    /* the notices of CREATE ... IF NOT EXISTS are not errors: quiet */
    pg_exec_ok(db, "SET client_min_messages = warning", 0, NULL);
    int rc = migrate(db, err, errlen);
    if (rc != DB_OK) {
        pg_close(&db->base);
        return rc;
    }
    int64_t s = pg_query_i64(db, "SELECT coalesce(sum(size), 0) FROM results WHERE status IN ('done', 'failed')", 0,
                          NULL);
    db->size_bytes = s > 0 ? s : 0;
    *out = &db->base;
    return DB_OK;
}
#endif /* MFU_HAVE_LIBPQ */
