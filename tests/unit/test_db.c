/* db/sqlite.c: what is the SQLite backend's own -- schema migration from an
 * empty file and re-open (user_version), a file from a newer schema
 * refused, store and load round trips, hit counting, crash recovery (queued
 * and running rows re-queued at open), keyset paging, and SQL-looking
 * strings stored verbatim (prepared statements). The contract both backends
 * keep, eviction among it, is tests/unit/test_store.c. */
#include "check.h"
#include "db.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static void path_of(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

static void make_id(char out[65], int k)
{
    for (int i = 0; i < 64; i++) out[i] = "0123456789abcdef"[(k * 7 + i * 13) % 16];
    snprintf(out + 56, 9, "%08x", (unsigned)k);
}

static struct mfu_db *open_db(const char *name, int64_t cap)
{
    char p[512], err[256] = "";
    path_of(p, sizeof p, name);
    struct mfu_db *db = NULL;
    int rc = db_open(p, cap, &db, err, sizeof err);
    if (rc != DB_OK) fprintf(stderr, "db_open %s: %s\n", p, err);
    CHECK_EQ_I(rc, DB_OK);
    return db;
}

static int put(struct mfu_db *db, const char *id, const char *req, const char *input,
               const char *model, int64_t now)
{
    struct db_new_job j = {id, req, input, model, "h100-sxm", 64, now};
    return db_put_job(db, &j);
}

static int user_version_of(const char *name)
{
    char p[512];
    path_of(p, sizeof p, name);
    sqlite3 *h = NULL;
    sqlite3_stmt *s = NULL;
    int v = -1;
    if (sqlite3_open_v2(p, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(h);
    return v;
}

static void test_migration(void)
{
    /* A path under a directory that does not exist yet: created. */
    struct mfu_db *db = open_db("sub/dir/m.db", 0);
    if (!db) return;
    CHECK_EQ_I(db_schema_version(db), DB_SCHEMA_VERSION);
    CHECK_EQ_I(db_count(db), 0);
    char id[65];
    make_id(id, 1);
    CHECK_EQ_I(put(db, id, "{}", NULL, "m", 1000), DB_OK);
    db_close(db);
    CHECK_EQ_I(user_version_of("sub/dir/m.db"), DB_SCHEMA_VERSION);
    /* Re-open: no migration runs again, the data is there. */
    db = open_db("sub/dir/m.db", 0);
    if (!db) return;
    CHECK_EQ_I(db_schema_version(db), DB_SCHEMA_VERSION);
    CHECK_EQ_I(db_count(db), 1);
    db_close(db);

    /* An empty (zero-byte) file is migrated like a new one. */
    char p[512];
    path_of(p, sizeof p, "empty.db");
    FILE *f = fopen(p, "w");
    if (f) fclose(f);
    db = open_db("empty.db", 0);
    if (db) {
        CHECK_EQ_I(db_schema_version(db), DB_SCHEMA_VERSION);
        db_close(db);
    }

    /* A file written by a newer schema is refused, untouched. */
    path_of(p, sizeof p, "newer.db");
    sqlite3 *h = NULL;
    if (sqlite3_open(p, &h) == SQLITE_OK) {
        sqlite3_exec(h, "PRAGMA user_version = 99", NULL, NULL, NULL);
        sqlite3_close(h);
    }
    char err[256] = "";
    struct mfu_db *nd = (struct mfu_db *)1;
    CHECK_EQ_I(db_open(p, 0, &nd, err, sizeof err), DB_EVERSION);
    CHECK(nd == NULL);
    CHECK(strstr(err, "newer") != NULL);
    CHECK_EQ_I(user_version_of("newer.db"), 99);
}

/* issue 14 item 5: a stored body that is not what was written (a bit
 * flipped on disk, a hand edit) fails its CRC-32 and is never given out;
 * db_reset puts the row back to queued with what its job runs. */
static void test_corrupt(void)
{
    struct mfu_db *db = open_db("crc.db", 0);
    if (!db) return;
    char id[65];
    make_id(id, 77);
    CHECK_EQ_I(put(db, id, "{\"norm\":1}", "{\"in\":1}", NULL, 100), DB_OK);
    CHECK_EQ_I(db_finish(db, id, "done", "{\"configs\":[1,2,3]}", NULL, 1, 0.5, 3, 200), DB_OK);
    struct db_row r;
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.result, "{\"configs\":[1,2,3]}");
    db_row_fini(&r);
    /* one character changed behind the store's back */
    char p[512];
    path_of(p, sizeof p, "crc.db");
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(p, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "UPDATE results SET result = '{\"configs\":[1,2,4]}'", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_ECORRUPT);
    CHECK(r.result == NULL && r.error == NULL);
    CHECK_STR(r.request, "{\"norm\":1}");
    db_row_fini(&r);
    /* without bodies nothing is checked (the listing) */
    CHECK_EQ_I(db_get(db, id, 0, &r), DB_OK);
    db_row_fini(&r);
    char *in = NULL;
    CHECK_EQ_I(db_reset(db, id, &in), DB_OK);
    CHECK_STR(in, "{\"in\":1}");
    free(in);
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.status, "queued");
    CHECK(r.result == NULL);
    db_row_fini(&r);
    db_close(db);
}

/* A new row of rt.db: not there, then queued with what was put; a
 * second put leaves it alone. */
static void check_new_row(struct mfu_db *db, const char *id)
{
    struct db_row r;
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_ENOTFOUND);
    CHECK_EQ_I(put(db, id, "{\"n\":1}", "{\"in\":1}", "llama3-8b", 1000), DB_OK);
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.id, id);
    CHECK_STR(r.status, "queued");
    CHECK_STR(r.request, "{\"n\":1}");
    CHECK(r.result == NULL && r.error == NULL);
    CHECK_STR(r.model, "llama3-8b");
    CHECK_STR(r.hardware, "h100-sxm");
    CHECK_EQ_I(r.devices, 64);
    CHECK_EQ_I(r.created_ms, 1000);
    CHECK_EQ_I(r.started_ms, 0);
    CHECK_EQ_I(r.hits, 0);
    CHECK(!r.has_best_mfu);
    db_row_fini(&r);
    /* Inserting again leaves the queued row alone. */
    CHECK_EQ_I(put(db, id, "{\"other\":1}", NULL, "x", 5000), DB_OK);
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.request, "{\"n\":1}");
    CHECK_EQ_I(r.created_ms, 1000);
    db_row_fini(&r);
}

/* id2's row of rt.db: finished as failed, then queued again (no error,
 * no result) by a new put. */
static void check_failed_row(struct mfu_db *db, const char *id2)
{
    struct db_row r;
    CHECK_EQ_I(put(db, id2, "{}", NULL, NULL, 1100), DB_OK);
    CHECK_EQ_I(db_finish(db, id2, "failed", NULL, "{\"status\":500}", 0, 0, 0, 1200), DB_OK);
    CHECK_EQ_I(db_get(db, id2, 1, &r), DB_OK);
    CHECK_STR(r.status, "failed");
    CHECK_STR(r.error, "{\"status\":500}");
    CHECK(!r.has_best_mfu);
    db_row_fini(&r);
    CHECK_EQ_I(put(db, id2, "{}", "{\"again\":1}", NULL, 1300), DB_OK);
    CHECK_EQ_I(db_get(db, id2, 1, &r), DB_OK);
    CHECK_STR(r.status, "queued");
    CHECK(r.error == NULL && r.result == NULL);
    CHECK_EQ_I(r.finished_ms, 0);
    db_row_fini(&r);
}

static void test_round_trip(void)
{
    struct mfu_db *db = open_db("rt.db", 0);
    if (!db) return;
    char id[65];
    make_id(id, 2);
    check_new_row(db, id);

    struct db_row r;
    CHECK_EQ_I(db_set_running(db, id, 1500), DB_OK);
    CHECK_EQ_I(db_get(db, id, 0, &r), DB_OK);
    CHECK_STR(r.status, "running");
    CHECK_EQ_I(r.started_ms, 1500);
    CHECK(r.request == NULL); /* bodies not asked for */
    db_row_fini(&r);

    const char *result = "{\"configs\":[{\"mfu\":0.5}],\"search\":{\"evaluated\":42}}";
    CHECK_EQ_I(db_finish(db, id, "done", result, NULL, 1, 0.5, 42, 2000), DB_OK);
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.status, "done");
    CHECK_STR(r.result, result);
    CHECK(r.error == NULL);
    CHECK(r.has_best_mfu);
    CHECK_NEAR(r.best_mfu, 0.5, 1e-15);
    CHECK_EQ_I(r.evaluated, 42);
    CHECK_EQ_I(r.finished_ms, 2000);
    CHECK_EQ_I(r.accessed_ms, 2000);
    db_row_fini(&r);
    CHECK(db_size_bytes(db) >= (int64_t)strlen(result));
    /* A done row is not reset by a new put. */
    CHECK_EQ_I(put(db, id, "{}", NULL, NULL, 9000), DB_OK);
    CHECK_EQ_I(db_get(db, id, 0, &r), DB_OK);
    CHECK_STR(r.status, "done");
    db_row_fini(&r);

    /* A failed row is reset to queued by a new put (the job runs again). */
    char id2[65];
    make_id(id2, 3);
    check_failed_row(db, id2);

    /* Back to queued (shutdown), only from queued/running. */
    CHECK_EQ_I(db_set_running(db, id2, 1400), DB_OK);
    CHECK_EQ_I(db_set_queued(db, id2), DB_OK);
    CHECK_EQ_I(db_get(db, id2, 0, &r), DB_OK);
    CHECK_STR(r.status, "queued");
    CHECK_EQ_I(r.started_ms, 0);
    db_row_fini(&r);
    CHECK_EQ_I(db_set_queued(db, id), DB_OK);
    CHECK_EQ_I(db_get(db, id, 0, &r), DB_OK);
    CHECK_STR(r.status, "done");
    db_row_fini(&r);
    db_close(db);

    /* Everything survives a close and re-open. */
    db = open_db("rt.db", 0);
    if (!db) return;
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.result, result);
    db_row_fini(&r);
    db_close(db);
}

static void test_hits(void)
{
    struct mfu_db *db = open_db("hits.db", 0);
    if (!db) return;
    char a[65], b[65], missing[65];
    make_id(a, 10);
    make_id(b, 11);
    make_id(missing, 12);
    CHECK_EQ_I(put(db, a, "{}", NULL, NULL, 1000), DB_OK);
    CHECK_EQ_I(put(db, b, "{}", NULL, NULL, 1000), DB_OK);
    CHECK_EQ_I(db_finish(db, a, "done", "{}", NULL, 0, 0, 0, 2000), DB_OK);
    struct db_touch t[] = {{a, 3, 3000}, {b, 0, 2500}, {a, 2, 2800}, {missing, 5, 9000}};
    CHECK_EQ_I(db_touch_many(db, t, 4), DB_OK);
    CHECK_EQ_I(db_touch_many(db, t, 0), DB_OK);
    struct db_row r;
    CHECK_EQ_I(db_get(db, a, 0, &r), DB_OK);
    CHECK_EQ_I(r.hits, 5);
    CHECK_EQ_I(r.accessed_ms, 3000); /* max, not the last written */
    db_row_fini(&r);
    CHECK_EQ_I(db_get(db, b, 0, &r), DB_OK);
    CHECK_EQ_I(r.hits, 0);
    CHECK_EQ_I(r.accessed_ms, 2500);
    db_row_fini(&r);
    CHECK_EQ_I(db_get(db, missing, 0, &r), DB_ENOTFOUND);
    CHECK_EQ_I(db_count(db), 2);
    db_close(db);
}

struct pending {
    int n;
    char ids[8][65];
    char reqs[8][64];
};

static void on_pending(void *ctx, const char *id, const char *request)
{
    struct pending *p = ctx;
    if (p->n < 8) {
        snprintf(p->ids[p->n], 65, "%s", id);
        snprintf(p->reqs[p->n], 64, "%s", request);
    }
    p->n++;
}

static void test_requeue(void)
{
    char q[65], run[65], done[65], failed[65];
    make_id(q, 20);
    make_id(run, 21);
    make_id(done, 22);
    make_id(failed, 23);
    /* A child process writes and "crashes": it exits without db_close,
     * as after kill -9 (WAL keeps what was committed; its lock goes with
     * it). Its checks report through the exit status. */
    fflush(NULL);
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        close(fds[0]);
        struct mfu_db *db = open_db("rq.db", 0);
        int ok = db && put(db, run, "{\"norm\":\"run\"}", "{\"in\":\"run\"}", NULL, 1000) == DB_OK &&
                 put(db, q, "{\"norm\":\"q\"}", NULL, NULL, 2000) == DB_OK &&
                 put(db, done, "{}", NULL, NULL, 500) == DB_OK && put(db, failed, "{}", NULL, NULL, 600) == DB_OK &&
                 db_set_running(db, run, 1100) == DB_OK &&
                 db_finish(db, done, "done", "{}", NULL, 0, 0, 0, 700) == DB_OK &&
                 db_finish(db, failed, "failed", NULL, "{}", 0, 0, 0, 700) == DB_OK;
        /* while it runs, a second open of the same file is refused */
        char p[512], err[256] = "";
        path_of(p, sizeof p, "rq.db");
        struct mfu_db *second = NULL;
        ok = ok && db_open(p, 0, &second, err, sizeof err) == DB_EBUSY && second == NULL &&
             strstr(err, "in use") != NULL;
        /* the verdict through the pipe, then die as kill -9 kills (no
         * cleanup, no leak report under valgrind) */
        char v = ok ? '1' : '0';
        if (write(fds[1], &v, 1) != 1) _exit(2);
        raise(SIGKILL);
        _exit(3);
    }
    close(fds[1]);
    char verdict = 0;
    CHECK(read(fds[0], &verdict, 1) == 1);
    close(fds[0]);
    CHECK(verdict == '1');
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    struct mfu_db *db = open_db("rq.db", 0);
    if (!db) return;
    struct pending p = {0};
    CHECK_EQ_I(db_requeue(db, on_pending, &p), 2);
    CHECK_EQ_I(p.n, 2);
    /* Oldest first; the input request when stored, else the normalized. */
    CHECK_STR(p.ids[0], run);
    CHECK_STR(p.reqs[0], "{\"in\":\"run\"}");
    CHECK_STR(p.ids[1], q);
    CHECK_STR(p.reqs[1], "{\"norm\":\"q\"}");
    struct db_row r;
    CHECK_EQ_I(db_get(db, run, 0, &r), DB_OK);
    CHECK_STR(r.status, "queued");
    CHECK_EQ_I(r.started_ms, 0);
    db_row_fini(&r);
    CHECK_EQ_I(db_get(db, done, 0, &r), DB_OK);
    CHECK_STR(r.status, "done");
    db_row_fini(&r);
    CHECK_EQ_I(db_get(db, failed, 0, &r), DB_OK);
    CHECK_STR(r.status, "failed");
    db_row_fini(&r);
    db_close(db);
    /* closed: the file is free again */
    db = open_db("rq.db", 0);
    db_close(db);
}

struct listed {
    int n;
    char ids[8][65];
    int64_t created[8];
};

static void on_list(void *ctx, const struct db_row *row)
{
    struct listed *l = ctx;
    if (l->n < 8) {
        snprintf(l->ids[l->n], 65, "%s", row->id);
        l->created[l->n] = row->created_ms;
    }
    l->n++;
}

static void test_list(void)
{
    struct mfu_db *db = open_db("list.db", 0);
    if (!db) return;
    char ids[5][65];
    for (int i = 0; i < 5; i++) {
        make_id(ids[i], 40 + i);
        CHECK_EQ_I(put(db, ids[i], "{}", NULL, NULL, 1000 + 10 * i), DB_OK);
    }
    struct listed l = {0};
    CHECK_EQ_I(db_list(db, 2, 0, 0, NULL, on_list, &l), 2);
    CHECK_STR(l.ids[0], ids[4]); /* newest first */
    CHECK_STR(l.ids[1], ids[3]);
    struct listed l2 = {0};
    CHECK_EQ_I(db_list(db, 10, 0, l.created[1], l.ids[1], on_list, &l2), 3);
    CHECK_STR(l2.ids[0], ids[2]);
    CHECK_STR(l2.ids[2], ids[0]);
    struct listed l3 = {0};
    CHECK_EQ_I(db_list(db, 10, 4, 0, NULL, on_list, &l3), 1);
    CHECK_STR(l3.ids[0], ids[0]);
    db_close(db);
}

static void test_sql_strings(void)
{
    static const char *const nasty[] = {
        "'); DROP TABLE results; --",
        "x' OR '1'='1",
        "\" OR \"\"=\"",
        "Robert'); DELETE FROM results WHERE ('1'='1",
        "%s%n%x%p",
        "; PRAGMA user_version = 42; --",
        "line\nbreak\ttab \\ back",
        "\xe2\x80\x94 unicode \xf0\x9f\x98\x80",
    };
    const int n = (int)(sizeof nasty / sizeof nasty[0]);
    struct mfu_db *db = open_db("sql.db", 0);
    if (!db) return;
    for (int i = 0; i < n; i++) {
        char id[65];
        make_id(id, 50 + i);
        struct db_new_job j = {id, nasty[i], nasty[(i + 1) % n], nasty[i], nasty[(i + 2) % n], i,
                               1000 + i};
        CHECK_EQ_I(db_put_job(db, &j), DB_OK);
        CHECK_EQ_I(db_finish(db, id, "done", nasty[(i + 3) % n], NULL, 0, 0, 0, 2000 + i), DB_OK);
    }
    CHECK_EQ_I(db_count(db), n);
    for (int i = 0; i < n; i++) {
        char id[65];
        make_id(id, 50 + i);
        struct db_row r;
        CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
        CHECK_STR(r.request, nasty[i]);
        CHECK_STR(r.model, nasty[i]);
        CHECK_STR(r.hardware, nasty[(i + 2) % n]);
        CHECK_STR(r.result, nasty[(i + 3) % n]);
        db_row_fini(&r);
    }
    /* Injection through the key does not match anything. */
    struct db_row r;
    CHECK_EQ_I(db_get(db, "x' OR '1'='1", 0, &r), DB_ENOTFOUND);
    CHECK_EQ_I(db_get(db, "' OR 1=1 --", 1, &r), DB_ENOTFOUND);
    struct db_touch t = {"' OR 1=1 --", 100, 99999};
    CHECK_EQ_I(db_touch_many(db, &t, 1), DB_OK);
    char id0[65];
    make_id(id0, 50);
    CHECK_EQ_I(db_get(db, id0, 0, &r), DB_OK);
    CHECK_EQ_I(r.hits, 0);
    db_row_fini(&r);
    CHECK_EQ_I(db_schema_version(db), DB_SCHEMA_VERSION);
    CHECK_EQ_I(db_count(db), n);
    db_close(db);
}

static const check_case cases[] = {
    CHECK_CASE(test_migration),
    CHECK_CASE(test_round_trip),
    CHECK_CASE(test_corrupt),
    CHECK_CASE(test_hits),
    CHECK_CASE(test_requeue),
    CHECK_CASE(test_list),
    CHECK_CASE(test_sql_strings),
};

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/mfu_test_db_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    int rc = check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
