/* db/db_int.h -- the storage interface's inside: what a backend provides.
 *
 * db/db.c holds the public functions of db.h; each forwards to the backend
 * the URL chose (db/sqlite.c, db/pg.c) through a table of operations, and
 * counts the calls, their failures and their time for /metrics. A backend's
 * handle starts with a struct mfu_db (the interface's part) and casts.
 */
#ifndef MFU_DB_INT_H
#define MFU_DB_INT_H

#include "db.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct db_ops {
    const char *name; /* "sqlite" | "postgresql": the metrics' backend label */
    void (*close)(struct mfu_db *db);
    const char *(*errmsg)(struct mfu_db *db);
    int (*health)(struct mfu_db *db, char *why, size_t whylen);
    int (*schema_version)(struct mfu_db *db);
    int (*get)(struct mfu_db *db, const char *id, int with_bodies, struct db_row *out);
    int (*put_job)(struct mfu_db *db, const struct db_new_job *job);
    int (*set_running)(struct mfu_db *db, const char *id, int64_t now_ms);
    int (*reset)(struct mfu_db *db, const char *id, char **input);
    int (*set_queued)(struct mfu_db *db, const char *id);
    int (*finish)(struct mfu_db *db, const char *id, const char *status, const char *result,
                  const char *error, int has_best_mfu, double best_mfu, int64_t evaluated,
                  int64_t now_ms);
    int (*requeue)(struct mfu_db *db, db_pending_fn cb, void *ctx);
    int (*touch_many)(struct mfu_db *db, const struct db_touch *t, size_t n);
    int (*list)(struct mfu_db *db, int limit, int offset, int64_t after_created_ms,
                const char *after_id, db_list_fn cb, void *ctx);
    int (*evict)(struct mfu_db *db);
    int64_t (*size_bytes)(struct mfu_db *db);
    int64_t (*count)(struct mfu_db *db);
    /* Shared stores only (NULL for a store one process owns): renew this
     * replica's leases; claim jobs whose owner's lease ran out. */
    int (*heartbeat)(struct mfu_db *db);
    int (*claim)(struct mfu_db *db, int max, db_pending_fn cb, void *ctx);
    int concurrent; /* 1: any thread may call get (db_concurrent) */
};

struct mfu_db {
    const struct db_ops *ops;
    db_evict_fn evict_hook;
    void *evict_ctx;
    atomic_llong n_queries, n_errors, query_ns;
};

int db_sqlite_open(const char *path, int64_t cache_max_bytes, struct mfu_db **out, char *err,
                   size_t errlen);
/* db/pg.c: a PostgreSQL URL (postgresql://... or postgres://...). Without
 * libpq at build time it answers DB_EUNSUPPORTED and says so in err. */
int db_pg_open(const char *url, int64_t cache_max_bytes, int pool_conns, const char *owner,
               struct mfu_db **out, char *err, size_t errlen);

/* CRC-32 (zlib) of a row's body: its result, else its error. Inline, so
 * both backends have it without calling back up into db.c. */
static inline uint32_t db_body_crc(const char *result, const char *error)
{
    const char *b = result ? result : error ? error : "";
    return (uint32_t)crc32(0L, (const Bytef *)b, (uInt)strlen(b));
}

/* A row's strings freed (db_row_fini's work, for the backends). */
static inline void db_row_free(struct db_row *r)
{
    free(r->request);
    free(r->result);
    free(r->error);
    free(r->model);
    free(r->hardware);
    r->request = r->result = r->error = r->model = r->hardware = NULL;
}

#endif
