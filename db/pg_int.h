/* db/pg_int.h -- inside the PostgreSQL backend (docs/storage.md): its
 * handle, its pool of connections and the statement helpers db/pg_conn.c
 * gives db/pg.c. Included only where libpq is (MFU_HAVE_LIBPQ).
 */
#ifndef MFU_DB_PG_INT_H
#define MFU_DB_PG_INT_H

#include "db_int.h"

#include <libpq-fe.h>
#include <pthread.h>

/* The database's clock, in milliseconds since the Unix epoch. */
#define NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"
#define LEASE_SQL "10000" /* DB_LEASE_MS, as SQL text */
_Static_assert(DB_LEASE_MS == 10000, "LEASE_SQL must say DB_LEASE_MS");
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
/* Run one statement on the calling thread's connection (a prepared
 * statement when it has parameters); NULL on failure, db_errmsg says why.
 * The caller PQclear()s what it gets. */
PGresult *pg_exec(struct pg_db *db, const char *sql, int n, const char *const *params);
int pg_exec_ok(struct pg_db *db, const char *sql, int n, const char *const *params);
/* Rows the statement changed (UPDATE/DELETE), or <0. */
int pg_exec_changed(struct pg_db *db, const char *sql, int n, const char *const *params);
/* The first column of the first row as an integer, or -1. */
int64_t pg_query_i64(struct pg_db *db, const char *sql, int n, const char *const *params);
void pg_i64s(char *buf, size_t n, int64_t v);

/* The operations of db/pg_conn.c in the table (db/pg.c: pg_ops). */
const char *pg_errmsg(struct mfu_db *base);
void pg_close(struct mfu_db *base);
int pg_health(struct mfu_db *base, char *why, size_t whylen);
int pg_schema_version(struct mfu_db *base);
/* Open with the operations table db/pg.c gives (db_pg_open). */
int pg_open(const struct db_ops *ops, const char *url, int64_t cache_max_bytes, int pool_conns,
            const char *owner, struct mfu_db **out, char *err, size_t errlen);

#endif
