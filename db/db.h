/* db/db.h -- the result and job store behind mfud: one interface, two
 * backends, chosen by the URL given to db_open (db_int.h, docs/storage.md):
 * a file path (or :memory:) is the embedded SQLite store (db/sqlite.c, the
 * default: one process per file); postgresql://... (or postgres://...) is a
 * PostgreSQL database several mfud replicas share (db/pg.c, libpq).
 *
 * DESIGN
 * One row per search id (the cache key): the normalized request, the job
 * status (queued|running|done|failed), the rendered result or problem JSON,
 * timestamps (milliseconds since the Unix epoch), a hit count and the last
 * access time. The file is opened in WAL mode with a busy timeout; every
 * statement is prepared once at open and reused (prepared statements only,
 * no SQL text is ever built from data). The schema is versioned with
 * PRAGMA user_version and upgraded by an ordered list of migrations.
 *
 * Eviction is size-bounded LRU: the store keeps the total size of finished
 * rows; when it passes the cap, the rows accessed least recently are deleted.
 * Queued and running rows are never evicted (nothing acknowledged is lost).
 *
 * THREAD SAFETY
 * A struct mfu_db is used by one thread at a time (mfud: the loop thread),
 * except that where db_concurrent() says so, db_get may also be called from
 * other threads (mfud: HTTP threads reading done results).
 *
 * ERRORS
 * Functions return DB_OK (0) or a negative DB_E* code; db_errmsg() gives
 * the last SQLite message (valid until the next call).
 */
#ifndef MFU_DB_H
#define MFU_DB_H

#include <stddef.h>
#include <stdint.h>

#define DB_OK        0
#define DB_ERROR     (-1) /* SQLite failed: see db_errmsg() */
#define DB_ENOTFOUND (-2)
#define DB_ENOMEM    (-3)
#define DB_EVERSION  (-4) /* file written by a newer schema */
#define DB_EBUSY     (-5) /* another process has the database open (its <path>.lock) */
#define DB_ECORRUPT  (-6) /* db_get: the stored body fails its checksum (bodies not given) */
#define DB_EOWNED    (-7) /* db_put_job: the row is another replica's live job, or done */
#define DB_ELOST     (-8) /* set_running/finish: this replica's lease on the row was lost
                           * (another replica took the job over); nothing written */
#define DB_EUNSUPPORTED (-9) /* db_open: a backend this build lacks (no libpq) */
#define DB_EUNREACHABLE (-10) /* db_open: the PostgreSQL server refused or did not answer
                               * the connection (it may be starting: try again later) */

/* Current schema version (PRAGMA user_version after migrations). */
#define DB_SCHEMA_VERSION 2

struct mfu_db;

/* A job to run: its id and the request it runs (db_requeue, db_claim). */
typedef void (*db_pending_fn)(void *ctx, const char *id, const char *request);

/* One row. Strings are malloc'd copies owned by the row (db_row_fini). */
struct db_row {
    char id[65];
    char status[8];       /* queued | running | done | failed */
    char *request;        /* normalized request JSON, or NULL if not asked for */
    char *result;         /* result JSON (done), or NULL */
    char *error;          /* problem JSON (failed), or NULL */
    char *model;          /* summary: model name, may be NULL */
    char *hardware;       /* summary: hardware name, may be NULL */
    int64_t devices;
    double best_mfu;      /* valid if has_best_mfu */
    int has_best_mfu;
    int64_t evaluated;    /* configurations evaluated */
    int64_t created_ms, started_ms, finished_ms, accessed_ms; /* 0 = unset */
    int64_t hits;
};

/* Summary fields written when a job is created. */
struct db_new_job {
    const char *id;       /* 64 hex chars */
    const char *request;  /* normalized request JSON (what the id hashes) */
    const char *input;    /* the request as received (what the engine runs), may be NULL */
    const char *model;    /* may be NULL */
    const char *hardware; /* may be NULL */
    int64_t devices;
    int64_t now_ms;
};

/* Open (creating the file and its parent directory if needed) and migrate.
 * path: a file path, ":memory:", or a postgresql:// URL.
 * SQLite: one process at a time: DB_EBUSY while another holds <path>.lock.
 * PostgreSQL: any number of replicas; the schema migrates once under an
 * advisory lock while they start together.
 * cache_max_bytes: size cap for finished rows (0 = unbounded).
 * On failure *out is NULL and err holds a message. */
int db_open(const char *path, int64_t cache_max_bytes, struct mfu_db **out, char *err,
            size_t errlen);
/* The same, for a store `threads` threads may call (db_concurrent): the
 * PostgreSQL backend keeps a pool of that many connections, one per
 * calling thread. SQLite ignores it (one thread at a time). */
int db_open_pool(const char *path, int64_t cache_max_bytes, int threads, struct mfu_db **out, char *err,
                 size_t errlen);
/* Finalize statements, checkpoint the WAL and close. NULL is a no-op. */
void db_close(struct mfu_db *db);
/* 1 if path is a postgresql:// (or postgres://) URL, the shared store. */
int db_is_pg_url(const char *path);
const char *db_errmsg(struct mfu_db *db);
/* Is the store usable? SQLite: is the file at the path still the one
 * opened (0, and why, when it was deleted or replaced while open: the
 * handle writes to a file nobody will read again; issue 14 item 3; 1 for
 * :memory:): that never heals. PostgreSQL: is the connection up (a lost one
 * is re-established with backoff here): 0 while the server is unreachable. */
int db_file_ok(struct mfu_db *db, char *why, size_t whylen);
/* The path or URL with any password replaced by *** (for logs). */
void db_redact(const char *url, char *out, size_t n);
/* "sqlite" or "postgresql". */
const char *db_backend(const struct mfu_db *db);
/* 1 when db_get may be called from any thread while the owning thread
 * uses the store (PostgreSQL, its pool); 0: one thread only (SQLite). */
int db_concurrent(const struct mfu_db *db);
/* 1 when several processes share the store (leases matter), else 0. */
int db_shared(const struct mfu_db *db);
/* Shared stores: renew the leases of this replica's queued and running
 * rows (call every second or so; a replica that stops renewing loses its
 * jobs to the others after DB_LEASE_MS). DB_OK and nothing done otherwise. */
int db_heartbeat(struct mfu_db *db);
/* Shared stores: claim up to max rows, queued or running, whose owner's
 * lease ran out (a replica killed or cut off), locking with SKIP LOCKED so
 * replicas claiming together never take the same row; cb gets each one's
 * id and input (as db_requeue). Returns the count or <0. 0 otherwise. */
int db_claim(struct mfu_db *db, int max, db_pending_fn cb, void *ctx);
/* The store's calls so far: count, failures (not-found and the lease codes
 * are answers, not failures) and time spent. Any thread. */
struct db_stats {
    int64_t queries, errors;
    double seconds;
};
void db_stats(const struct mfu_db *db, struct db_stats *out);
/* How long a replica's lease on its jobs lasts without a heartbeat. */
#define DB_LEASE_MS 10000
int db_schema_version(struct mfu_db *db);

/* Fetch a row. with_bodies: also copy request, result and error, checked
 * against the CRC-32 written with them: DB_ECORRUPT (the row's fields and
 * request given, no result or error) when they differ. DB_ENOTFOUND if
 * absent. */
int db_get(struct mfu_db *db, const char *id, int with_bodies, struct db_row *out);
void db_row_fini(struct db_row *row);

/* Insert a new queued job, or reset an existing failed row to queued.
 * An existing queued/running/done row is left alone. DB_OK: the caller
 * runs the job. Shared stores: a queued or running row whose lease ran out
 * is taken over (DB_OK); one another replica holds, or a done row, is
 * DB_EOWNED (the caller answers from the row, and runs nothing). */
int db_put_job(struct mfu_db *db, const struct db_new_job *job);
int db_set_running(struct mfu_db *db, const char *id, int64_t now_ms);
/* A corrupted row back to queued (its body dropped); *input: what the job
 * runs (the input request, else the normalized one), malloc'd. */
int db_reset(struct mfu_db *db, const char *id, char **input);
/* Back to queued (a job interrupted by shutdown). */
int db_set_queued(struct mfu_db *db, const char *id);
/* Store the outcome: status "done" with result, or "failed" with error.
 * May evict other rows to stay under the cap. */
int db_finish(struct mfu_db *db, const char *id, const char *status, const char *result,
              const char *error, int has_best_mfu, double best_mfu, int64_t evaluated,
              int64_t now_ms);

/* Crash recovery: every running row becomes queued; then cb is called for
 * each queued row, oldest first (id, and the input request JSON, or the
 * normalized one when no input was stored). Returns the count or <0.
 * Shared stores: only rows whose owner's lease ran out (db_claim). */
int db_requeue(struct mfu_db *db, db_pending_fn cb, void *ctx);

/* Record accesses in one transaction: hits += n, accessed = max(accessed, now). */
struct db_touch {
    const char *id;
    int64_t hits;
    int64_t accessed_ms;
};
int db_touch_many(struct mfu_db *db, const struct db_touch *t, size_t n);

/* Recent rows, newest first (created_ms desc, id desc). Keyset paging:
 * if after_id is non-NULL, start after (after_created_ms, after_id); else
 * skip `offset` rows. Calls cb for each row (bodies not loaded). Returns the
 * number of rows or <0. */
typedef void (*db_list_fn)(void *ctx, const struct db_row *row);
int db_list(struct mfu_db *db, int limit, int offset, int64_t after_created_ms,
            const char *after_id, db_list_fn cb, void *ctx);

/* Evict least recently accessed finished rows until the total size of
 * finished rows is at most the cap. Returns the number of rows deleted. */
int db_evict(struct mfu_db *db);
/* Called with the id of every row db_evict deletes (e.g. to drop copies
 * cached elsewhere). NULL to unset. */
typedef void (*db_evict_fn)(void *ctx, const char *id);
void db_set_evict_hook(struct mfu_db *db, db_evict_fn fn, void *ctx);
/* Total stored size of finished rows and count of all rows. */
int64_t db_size_bytes(struct mfu_db *db);
int64_t db_count(struct mfu_db *db);

#endif
