/* db/sqlite.c -- the embedded SQLite backend of the result and job store
 * (db.h; the interface in db_int.h). The default: a file, one process.
 * (Over 600 lines, one file on purpose: the statement table and every use
 * of it side by side, so a statement and the code that binds it are read
 * together.)
 *
 * INVARIANTS
 * - Every statement is prepared once in db_open() (SQLITE_PREPARE_PERSISTENT)
 *   and finalized in db_close(); each use binds, steps, copies the columns
 *   out and resets on a single exit path. No SQL text is built from data.
 * - db->size_bytes is the sum of the size column over done/failed rows.
 */
#include "db_int.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

enum {
    ST_GET,
    ST_GET_BODIES,
    ST_INSERT,
    ST_REQUEUE_FAILED,
    ST_SET_RUNNING,
    ST_SET_QUEUED,
    ST_FINISH,
    ST_RUNNING_TO_QUEUED,
    ST_PENDING,
    ST_TOUCH,
    ST_LIST_OFFSET,
    ST_LIST_AFTER,
    ST_EVICT_PICK,
    ST_DELETE,
    ST_SIZE,
    ST_COUNT,
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_RESET,
    ST_INPUT,
    ST_N
};

#define ROW_COLS "id, status, model, hardware, devices, best_mfu, evaluated, created_ms, " \
                 "started_ms, finished_ms, accessed_ms, hits"

static const char *const stmt_sql[ST_N] = {
    [ST_GET] = "SELECT " ROW_COLS " FROM results WHERE id = ?1",
    [ST_GET_BODIES] = "SELECT " ROW_COLS ", request, result, error, body_crc FROM results WHERE id = ?1",
    [ST_INSERT] = "INSERT OR IGNORE INTO results (id, request, input, status, model, hardware,"
                  " devices, created_ms, accessed_ms, size)"
                  " VALUES (?1, ?2, ?7, 'queued', ?3, ?4, ?5, ?6, ?6, 0)",
    [ST_REQUEUE_FAILED] = "UPDATE results SET status = 'queued', error = NULL, result = NULL, body_crc = NULL, input = ?3,"
                          " started_ms = NULL, finished_ms = NULL, size = 0, accessed_ms = ?2"
                          " WHERE id = ?1 AND status = 'failed' RETURNING 1",
    [ST_SET_RUNNING] = "UPDATE results SET status = 'running', started_ms = ?2 WHERE id = ?1",
    [ST_SET_QUEUED] = "UPDATE results SET status = 'queued', started_ms = NULL WHERE id = ?1"
                      " AND status IN ('queued', 'running')",
    [ST_FINISH] = "UPDATE results SET status = ?2, result = ?3, error = ?4, best_mfu = ?5,"
                  " evaluated = ?6, finished_ms = ?7, accessed_ms = ?7, size = ?8, body_crc = ?9 WHERE id = ?1",
    [ST_RUNNING_TO_QUEUED] = "UPDATE results SET status = 'queued', started_ms = NULL"
                             " WHERE status = 'running'",
    [ST_PENDING] = "SELECT id, coalesce(input, request) FROM results WHERE status = 'queued'"
                   " ORDER BY created_ms, id",
    [ST_TOUCH] = "UPDATE results SET hits = hits + ?2, accessed_ms = max(accessed_ms, ?3)"
                 " WHERE id = ?1",
    [ST_LIST_OFFSET] = "SELECT " ROW_COLS " FROM results ORDER BY created_ms DESC, id DESC"
                       " LIMIT ?1 OFFSET ?2",
    [ST_LIST_AFTER] = "SELECT " ROW_COLS " FROM results WHERE (created_ms, id) < (?2, ?3)"
                      " ORDER BY created_ms DESC, id DESC LIMIT ?1",
    [ST_EVICT_PICK] = "SELECT id, size FROM results WHERE status IN ('done', 'failed')"
                      " ORDER BY accessed_ms, id LIMIT 64",
    [ST_DELETE] = "DELETE FROM results WHERE id = ?1",
    [ST_SIZE] = "SELECT coalesce(sum(size), 0) FROM results WHERE status IN ('done', 'failed')",
    [ST_COUNT] = "SELECT count(*) FROM results",
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_RESET] = "UPDATE results SET status = 'queued', result = NULL, error = NULL, body_crc = NULL,"
                 " started_ms = NULL, finished_ms = NULL, size = 0 WHERE id = ?1",
    [ST_INPUT] = "SELECT coalesce(input, request) FROM results WHERE id = ?1",
};

/* Migrations: migrations[i] takes the schema from version i to i + 1.
 * Append only; never edit a released step. */
static const char *const migrations[] = {
    "CREATE TABLE results ("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  request TEXT NOT NULL,"
    "  input TEXT,"
    "  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),"
    "  result TEXT,"
    "  error TEXT,"
    "  model TEXT,"
    "  hardware TEXT,"
    "  devices INTEGER NOT NULL DEFAULT 0,"
    "  best_mfu REAL,"
    "  evaluated INTEGER NOT NULL DEFAULT 0,"
    "  created_ms INTEGER NOT NULL,"
    "  started_ms INTEGER,"
    "  finished_ms INTEGER,"
    "  accessed_ms INTEGER NOT NULL,"
    "  hits INTEGER NOT NULL DEFAULT 0,"
    "  size INTEGER NOT NULL DEFAULT 0"
    ") WITHOUT ROWID;"
    "CREATE INDEX results_created ON results (created_ms, id);"
    "CREATE INDEX results_accessed ON results (accessed_ms) WHERE status IN ('done', 'failed');"
    "CREATE INDEX results_status ON results (status);",
    /* 2: a CRC-32 of the stored result (or error), checked on every read
     * (issue 14 item 5); NULL for rows written before */
    "ALTER TABLE results ADD COLUMN body_crc INTEGER;",
};
#define N_MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

struct sq_db {
    struct mfu_db base;   /* first: the interface (db_int.h) */
    int lock_fd;          /* <path>.lock, held exclusively while open; -1 none */
    char path[4096];      /* "" for :memory: */
    dev_t dev;            /* the file opened (db_file_ok) */
    ino_t ino;
    sqlite3 *h;
    sqlite3_stmt *st[ST_N];
    int64_t cache_max_bytes;
    int64_t size_bytes;
};

static void sq_close(struct mfu_db *base);
static int sq_evict(struct mfu_db *base);
extern const struct db_ops db_sqlite_ops;

static const char *sq_errmsg(struct mfu_db *base)
{
    struct sq_db *db = (struct sq_db *)base;
    return db && db->h ? sqlite3_errmsg(db->h) : "database not open";
}

/* mkdir -p for the parent directory of path. */
static int make_parent_dirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof buf) return -1;
    memcpy(buf, path, n + 1);
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return 0;
    *slash = '\0';
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

static int step_done(struct sq_db *db, sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    (void)db;
    return (rc == SQLITE_DONE || rc == SQLITE_ROW) ? DB_OK : DB_ERROR;
}

static int64_t query_i64(struct sq_db *db, int which)
{
    sqlite3_stmt *s = db->st[which];
    int64_t v = -1;
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    return v;
}

static int migrate(struct sq_db *db, char *err, size_t errlen)
{
    sqlite3_stmt *s = NULL;
    int version = 0;
    if (sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK) goto fail;
    if (sqlite3_step(s) == SQLITE_ROW) version = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    s = NULL;
    if (version > N_MIGRATIONS) {
        snprintf(err, errlen, "database schema version %d is newer than this mfud (%d)", version,
                 N_MIGRATIONS);
        return DB_EVERSION;
    }
    for (int v = version; v < N_MIGRATIONS; v++) {
        /* Each step and its version bump commit together. The version is a
         * compile-time integer, never data. */
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v + 1);
        if (sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) goto fail;
        if (sqlite3_exec(db->h, migrations[v], NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(db->h, bump, NULL, NULL, NULL) != SQLITE_OK) {
            snprintf(err, errlen, "migration %d: %s", v + 1, sqlite3_errmsg(db->h));
            sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
            return DB_ERROR;
        }
        if (sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) goto fail;
    }
    return DB_OK;
fail:
    snprintf(err, errlen, "migrate: %s", sqlite3_errmsg(db->h));
    return DB_ERROR;
}

/* One process per database file (issue 14 item 4: a second daemon ran
 * every pending job again and reset the first's running rows): an
 * exclusive advisory lock on <path>.lock, held until db_close or the
 * process ends (a kill -9 releases it with the descriptor). The file
 * keeps the holder's pid for the message. */
static int take_lock(struct sq_db *db, const char *path, char *err, size_t errlen)
{
    char lp[4096];
    snprintf(lp, sizeof lp, "%s.lock", path);
    db->lock_fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (db->lock_fd < 0) {
        snprintf(err, errlen, "cannot open the lock file %s: %s", lp, strerror(errno));
        return DB_ERROR;
    }
    if (flock(db->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        char who[32] = "";
        ssize_t n = pread(db->lock_fd, who, sizeof who - 1, 0);
        who[n > 0 ? n : 0] = '\0';
        who[strcspn(who, "\n")] = '\0';
        snprintf(err, errlen, "the database %s is in use by another process%s%s (its lock %s is held); "
                 "one mfud per database file", path, who[0] ? " pid " : "", who, lp);
        return DB_EBUSY;
    }
    char pid[32];
    int pn = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(db->lock_fd, 0) != 0 || pwrite(db->lock_fd, pid, (size_t)pn, 0) != pn) {
        /* the pid is only for the message */
    }
    return DB_OK;
}

int db_sqlite_open(const char *path, int64_t cache_max_bytes, struct mfu_db **out, char *err,
                   size_t errlen)
{
    *out = NULL;
    struct sq_db *db = calloc(1, sizeof *db);
    if (!db) {
        snprintf(err, errlen, "out of memory");
        return DB_ENOMEM;
    }
    db->base.ops = &db_sqlite_ops;
    db->cache_max_bytes = cache_max_bytes;
    db->lock_fd = -1;
    int rc = DB_ERROR;
    if (strcmp(path, ":memory:") != 0 && make_parent_dirs(path) != 0) {
        snprintf(err, errlen, "cannot create the directory of %s: %s", path, strerror(errno));
        goto fail;
    }
    if (strcmp(path, ":memory:") != 0 && (rc = take_lock(db, path, err, errlen)) != DB_OK) goto fail;
    rc = DB_ERROR;
    if (sqlite3_open_v2(path, &db->h,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "open %s: %s", path, db->h ? sqlite3_errmsg(db->h) : "no memory");
        goto fail;
    }
    sqlite3_busy_timeout(db->h, 5000);
    sqlite3_extended_result_codes(db->h, 1);
    /* WAL: readers never block the writer; synchronous=NORMAL in WAL mode is
     * durable against process crashes (kill -9), which is what we promise. */
    if (sqlite3_exec(db->h, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                            " PRAGMA foreign_keys = ON;",
                     NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "pragmas: %s", sqlite3_errmsg(db->h));
        goto fail;
    }
    struct stat sb;
    if (strcmp(path, ":memory:") != 0 && stat(path, &sb) == 0) {
        snprintf(db->path, sizeof db->path, "%s", path);
        db->dev = sb.st_dev;
        db->ino = sb.st_ino;
    }
    rc = migrate(db, err, errlen);
    if (rc != DB_OK) goto fail;
    rc = DB_ERROR;
    for (int i = 0; i < ST_N; i++) {
        if (sqlite3_prepare_v3(db->h, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &db->st[i],
                               NULL) != SQLITE_OK) {
            snprintf(err, errlen, "prepare %d: %s", i, sqlite3_errmsg(db->h));
            goto fail;
        }
    }
    db->size_bytes = query_i64(db, ST_SIZE);
    if (db->size_bytes < 0) db->size_bytes = 0;
    *out = &db->base;
    return DB_OK;
fail:
    sq_close(&db->base);
    return rc;
}

static void sq_close(struct mfu_db *base)
{
    struct sq_db *db = (struct sq_db *)base;
    if (!db) return;
    for (int i = 0; i < ST_N; i++) sqlite3_finalize(db->st[i]);
    if (db->h) {
        sqlite3_wal_checkpoint_v2(db->h, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        sqlite3_close(db->h);
    }
    if (db->lock_fd >= 0) close(db->lock_fd);
    free(db);
}

static int sq_file_ok(struct mfu_db *base, char *why, size_t whylen)
{
    struct sq_db *db = (struct sq_db *)base;
    if (!db || !db->path[0]) return 1;
    struct stat sb;
    if (stat(db->path, &sb) != 0) {
        snprintf(why, whylen, "the database file %s is gone (%s): what is written now is lost at exit", db->path,
                 strerror(errno));
        return 0;
    }
    if (sb.st_dev != db->dev || sb.st_ino != db->ino) {
        snprintf(why, whylen, "the database file %s was replaced by another file: what is written now is lost at exit",
                 db->path);
        return 0;
    }
    return 1;
}

static int sq_schema_version(struct mfu_db *base)
{
    struct sq_db *db = (struct sq_db *)base;
    sqlite3_stmt *s = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
}

static char *col_dup(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    if (!t) return NULL;
    int n = sqlite3_column_bytes(s, i);
    char *c = malloc((size_t)n + 1);
    if (!c) return NULL;
    memcpy(c, t, (size_t)n);
    c[n] = '\0';
    return c;
}

static void read_row(sqlite3_stmt *s, struct db_row *r)
{
    const unsigned char *t;
    memset(r, 0, sizeof *r);
    t = sqlite3_column_text(s, 0);
    snprintf(r->id, sizeof r->id, "%s", t ? (const char *)t : "");
    t = sqlite3_column_text(s, 1);
    snprintf(r->status, sizeof r->status, "%s", t ? (const char *)t : "");
    r->model = col_dup(s, 2);
    r->hardware = col_dup(s, 3);
    r->devices = sqlite3_column_int64(s, 4);
    r->has_best_mfu = sqlite3_column_type(s, 5) != SQLITE_NULL;
    r->best_mfu = r->has_best_mfu ? sqlite3_column_double(s, 5) : 0.0;
    r->evaluated = sqlite3_column_int64(s, 6);
    r->created_ms = sqlite3_column_int64(s, 7);
    r->started_ms = sqlite3_column_int64(s, 8);
    r->finished_ms = sqlite3_column_int64(s, 9);
    r->accessed_ms = sqlite3_column_int64(s, 10);
    r->hits = sqlite3_column_int64(s, 11);
}

static int sq_get(struct mfu_db *base, const char *id, int with_bodies, struct db_row *out)
{
    struct sq_db *db = (struct sq_db *)base;
    sqlite3_stmt *s = db->st[with_bodies ? ST_GET_BODIES : ST_GET];
    int rc;
    memset(out, 0, sizeof *out);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        read_row(s, out);
        rc = DB_OK;
        if (with_bodies) {
            out->request = col_dup(s, 12);
            out->result = col_dup(s, 13);
            out->error = col_dup(s, 14);
            /* a body that is not what was written is never served */
            if (sqlite3_column_type(s, 15) != SQLITE_NULL &&
                (uint32_t)sqlite3_column_int64(s, 15) != db_body_crc(out->result, out->error)) {
                free(out->result);
                free(out->error);
                out->result = out->error = NULL;
                rc = DB_ECORRUPT;
            }
        }
    } else {
        rc = src == SQLITE_DONE ? DB_ENOTFOUND : DB_ERROR;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

static int sq_reset(struct mfu_db *base, const char *id, char **input)
{
    struct sq_db *db = (struct sq_db *)base;
    *input = NULL;
    sqlite3_stmt *s = db->st[ST_RESET];
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    if (step_done(db, s) != DB_OK) return DB_ERROR;
    s = db->st[ST_INPUT];
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = DB_ENOTFOUND;
    if (sqlite3_step(s) == SQLITE_ROW) {
        *input = col_dup(s, 0);
        rc = *input ? DB_OK : DB_ENOMEM;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *t)
{
    if (t) sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
    else sqlite3_bind_null(s, i);
}

static int sq_put_job(struct mfu_db *base, const struct db_new_job *j)
{
    struct sq_db *db = (struct sq_db *)base;
    sqlite3_stmt *s = db->st[ST_REQUEUE_FAILED];
    sqlite3_bind_text(s, 1, j->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, j->now_ms);
    bind_text_or_null(s, 3, j->input);
    int src = sqlite3_step(s);
    int requeued = src == SQLITE_ROW;
    /* Drain RETURNING before reset so the update completes. */
    while (src == SQLITE_ROW) src = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (src != SQLITE_DONE) return DB_ERROR;
    if (requeued) {
        db->size_bytes = query_i64(db, ST_SIZE);
        return DB_OK;
    }
    s = db->st[ST_INSERT];
    sqlite3_bind_text(s, 1, j->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, j->request, -1, SQLITE_STATIC);
    bind_text_or_null(s, 3, j->model);
    bind_text_or_null(s, 4, j->hardware);
    sqlite3_bind_int64(s, 5, j->devices);
    sqlite3_bind_int64(s, 6, j->now_ms);
    bind_text_or_null(s, 7, j->input);
    return step_done(db, s);
}

static int sq_set_running(struct mfu_db *base, const char *id, int64_t now_ms)
{
    struct sq_db *db = (struct sq_db *)base;
    sqlite3_stmt *s = db->st[ST_SET_RUNNING];
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, now_ms);
    return step_done(db, s);
}

static int sq_set_queued(struct mfu_db *base, const char *id)
{
    struct sq_db *db = (struct sq_db *)base;
    sqlite3_stmt *s = db->st[ST_SET_QUEUED];
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    return step_done(db, s);
}

static int sq_finish(struct mfu_db *base, const char *id, const char *status, const char *result,
              const char *error, int has_best_mfu, double best_mfu, int64_t evaluated,
              int64_t now_ms)
{
    struct sq_db *db = (struct sq_db *)base;
    sqlite3_stmt *s = db->st[ST_FINISH];
    int64_t size = (int64_t)(result ? strlen(result) : 0) + (int64_t)(error ? strlen(error) : 0) +
                   256; /* row overhead, roughly */
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, status, -1, SQLITE_STATIC);
    bind_text_or_null(s, 3, result);
    bind_text_or_null(s, 4, error);
    if (has_best_mfu) sqlite3_bind_double(s, 5, best_mfu);
    else sqlite3_bind_null(s, 5);
    sqlite3_bind_int64(s, 6, evaluated);
    sqlite3_bind_int64(s, 7, now_ms);
    sqlite3_bind_int64(s, 8, size);
    sqlite3_bind_int64(s, 9, (int64_t)db_body_crc(result, error));
    int rc = step_done(db, s);
    if (rc != DB_OK) return rc;
    if (sqlite3_changes(db->h) > 0) db->size_bytes += size;
    if (db->cache_max_bytes > 0 && db->size_bytes > db->cache_max_bytes) sq_evict(&db->base);
    return DB_OK;
}

static int sq_requeue(struct mfu_db *base, db_pending_fn cb, void *ctx)
{
    struct sq_db *db = (struct sq_db *)base;
    if (step_done(db, db->st[ST_RUNNING_TO_QUEUED]) != DB_OK) return DB_ERROR;
    sqlite3_stmt *s = db->st[ST_PENDING];
    int n = 0, src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        const char *req = (const char *)sqlite3_column_text(s, 1);
        if (id && req) {
            cb(ctx, id, req);
            n++;
        }
    }
    sqlite3_reset(s);
    return src == SQLITE_DONE ? n : DB_ERROR;
}

static int sq_touch_many(struct mfu_db *base, const struct db_touch *t, size_t n)
{
    struct sq_db *db = (struct sq_db *)base;
    if (n == 0) return DB_OK;
    if (step_done(db, db->st[ST_BEGIN]) != DB_OK) return DB_ERROR;
    sqlite3_stmt *s = db->st[ST_TOUCH];
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_text(s, 1, t[i].id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, t[i].hits);
        sqlite3_bind_int64(s, 3, t[i].accessed_ms);
        if (step_done(db, s) != DB_OK) {
            step_done(db, db->st[ST_ROLLBACK]);
            return DB_ERROR;
        }
    }
    return step_done(db, db->st[ST_COMMIT]);
}

static int sq_list(struct mfu_db *base, int limit, int offset, int64_t after_created_ms,
            const char *after_id, db_list_fn cb, void *ctx)
{
    struct sq_db *db = (struct sq_db *)base;
    sqlite3_stmt *s;
    if (after_id) {
        s = db->st[ST_LIST_AFTER];
        sqlite3_bind_int(s, 1, limit);
        sqlite3_bind_int64(s, 2, after_created_ms);
        sqlite3_bind_text(s, 3, after_id, -1, SQLITE_STATIC);
    } else {
        s = db->st[ST_LIST_OFFSET];
        sqlite3_bind_int(s, 1, limit);
        sqlite3_bind_int(s, 2, offset);
    }
    int n = 0, src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        struct db_row r;
        read_row(s, &r);
        cb(ctx, &r);
        db_row_free(&r);
        n++;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return src == SQLITE_DONE ? n : DB_ERROR;
}

static int sq_evict(struct mfu_db *base)
{
    struct sq_db *db = (struct sq_db *)base;
    int deleted = 0;
    while (db->cache_max_bytes > 0 && db->size_bytes > db->cache_max_bytes) {
        /* Pick a batch of the least recently accessed rows, then delete them
         * one by one until under the cap. */
        char ids[64][65];
        int64_t sizes[64];
        int n = 0;
        sqlite3_stmt *s = db->st[ST_EVICT_PICK];
        while (n < 64 && sqlite3_step(s) == SQLITE_ROW) {
            const char *id = (const char *)sqlite3_column_text(s, 0);
            snprintf(ids[n], sizeof ids[n], "%s", id ? id : "");
            sizes[n] = sqlite3_column_int64(s, 1);
            n++;
        }
        sqlite3_reset(s);
        if (n == 0) break;
        if (step_done(db, db->st[ST_BEGIN]) != DB_OK) return DB_ERROR;
        for (int i = 0; i < n && db->size_bytes > db->cache_max_bytes; i++) {
            sqlite3_stmt *d = db->st[ST_DELETE];
            sqlite3_bind_text(d, 1, ids[i], -1, SQLITE_STATIC);
            if (step_done(db, d) != DB_OK) {
                step_done(db, db->st[ST_ROLLBACK]);
                int64_t size = query_i64(db, ST_SIZE);
                if (size >= 0) db->size_bytes = size;
                return DB_ERROR;
            }
            db->size_bytes -= sizes[i];
            deleted++;
            if (db->base.evict_hook) db->base.evict_hook(db->base.evict_ctx, ids[i]);
        }
        if (step_done(db, db->st[ST_COMMIT]) != DB_OK) {
            /* Nothing was deleted after all: recount. (Copies dropped by
             * the hook are only caches; they are rebuilt on demand.) */
            step_done(db, db->st[ST_ROLLBACK]);
            int64_t size = query_i64(db, ST_SIZE);
            if (size >= 0) db->size_bytes = size;
            return DB_ERROR;
        }
    }
    return deleted;
}

static int64_t sq_size_bytes(struct mfu_db *base)
{
    struct sq_db *db = (struct sq_db *)base;
    return db->size_bytes;
}

static int64_t sq_count(struct mfu_db *base)
{
    struct sq_db *db = (struct sq_db *)base;
    return query_i64(db, ST_COUNT);
}

const struct db_ops db_sqlite_ops = {
    .name = "sqlite",
    .close = sq_close,
    .errmsg = sq_errmsg,
    .health = sq_file_ok,
    .schema_version = sq_schema_version,
    .get = sq_get,
    .put_job = sq_put_job,
    .set_running = sq_set_running,
    .reset = sq_reset,
    .set_queued = sq_set_queued,
    .finish = sq_finish,
    .requeue = sq_requeue,
    .touch_many = sq_touch_many,
    .list = sq_list,
    .evict = sq_evict,
    .size_bytes = sq_size_bytes,
    .count = sq_count,
    .heartbeat = NULL, /* one process per file (its lock): nothing to share */
    .claim = NULL,
};
