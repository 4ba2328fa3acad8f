/* db/ as an interface (issue 17): the same contract checked on both
 * backends -- the embedded SQLite file and PostgreSQL -- then what only a
 * store shared by several replicas has: a job one replica holds is not
 * started by another (DB_EOWNED); outcome writes fenced by the owner
 * (DB_ELOST); a replica whose lease ran out loses its jobs to the next
 * claim; concurrent claimers (SKIP LOCKED) never take one row twice;
 * replicas starting together on an empty database migrate it once; a
 * connection killed under the store comes back; a schema from a newer
 * mfud is refused.
 *
 * PostgreSQL: MFUD_TEST_PG_URL names a database to use; else a throwaway
 * cluster is started here (tests/pg.sh) and stopped at the end. Without a
 * PostgreSQL server or with an mfud built without libpq, the PostgreSQL
 * half prints SKIPPED (never a silent pass). Run from the repository root
 * (as make test does).
 *
 * (Over 600 lines: one program for the storage interface, its cases named
 * and run one by name; the contract shared by both backends would only be
 * copied by a split.)
 */
#include "check.h"
#include "db.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char sqlite_dir[256];
static char pg_url[1300]; /* "" = no PostgreSQL */
static char pg_dir[512];   /* a cluster this test started, to stop */
static char pg_host[512];  /* its socket directory, for psql */

/* The backend the contract cases run on. */
static const char *backend_url;
static char url_buf[1100];
static int n_db;

static void make_id(char out[65], int k)
{
    for (int i = 0; i < 64; i++) out[i] = "0123456789abcdef"[(k * 11 + i * 5) % 16];
    snprintf(out + 56, 9, "%08x", (unsigned)k);
}

/* A fresh store: a new SQLite file, or the PostgreSQL database emptied. */
static struct mfu_db *fresh(int64_t cap);

static struct mfu_db *open_url(const char *url, int64_t cap)
{
    char err[512] = "";
    struct mfu_db *db = NULL;
    int rc = db_open(url, cap, &db, err, sizeof err);
    if (rc != DB_OK) fprintf(stderr, "db_open: %s\n", err);
    CHECK_EQ_I(rc, DB_OK);
    return db;
}

/* One SQL statement through psql on the test's PostgreSQL database. */
static int psql(const char *sql)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "psql -X -q -A -t '%s' -c \"%s\" >/dev/null 2>&1", pg_url, sql);
    return system(cmd);
}

/* One number out of psql. */
static long long psql_i(const char *sql)
{
    char cmd[2048], out[64] = "";
    snprintf(cmd, sizeof cmd, "psql -X -q -A -t '%s' -c \"%s\"", pg_url, sql);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    if (!fgets(out, sizeof out, f)) out[0] = '\0';
    pclose(f);
    return out[0] ? atoll(out) : -1;
}

static struct mfu_db *fresh(int64_t cap)
{
    if (!strncmp(backend_url, "postgres", 8)) {
        psql("DELETE FROM results");
        return open_url(backend_url, cap);
    }
    snprintf(url_buf, sizeof url_buf, "%s/s%d.db", sqlite_dir, n_db++);
    return open_url(url_buf, cap);
}

static int put(struct mfu_db *db, const char *id, const char *req, const char *input, int64_t now)
{
    struct db_new_job j = {id, req, input, "llama3-8b", "h100-sxm", 64, now};
    return db_put_job(db, &j);
}

/* ---- the contract, on each backend ---------------------------------- */

static void t_round_trip(void)
{
    struct mfu_db *db = fresh(0);
    if (!db) return;
    char id[65];
    make_id(id, 1);
    CHECK_EQ_I(put(db, id, "{\"n\":1}", "{\"in\":1}", 1000), DB_OK);
    struct db_row r;
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.status, "queued");
    CHECK_STR(r.request, "{\"n\":1}");
    CHECK_STR(r.model, "llama3-8b");
    CHECK_EQ_I(r.devices, 64);
    CHECK_EQ_I(r.created_ms, 1000);
    CHECK(r.result == NULL);
    db_row_fini(&r);
    CHECK_EQ_I(db_set_running(db, id, 1500), DB_OK);
    CHECK_EQ_I(db_get(db, id, 0, &r), DB_OK);
    CHECK_STR(r.status, "running");
    CHECK_EQ_I(r.started_ms, 1500);
    db_row_fini(&r);
    CHECK_EQ_I(db_finish(db, id, "done", "{\"best\":0.5}", NULL, 1, 0.4375, 1234, 2000), DB_OK);
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.status, "done");
    CHECK_STR(r.result, "{\"best\":0.5}");
    CHECK(r.has_best_mfu && r.best_mfu == 0.4375); /* 7/16: exact in binary and decimal */
    CHECK_EQ_I(r.evaluated, 1234);
    CHECK_EQ_I(r.finished_ms, 2000);
    db_row_fini(&r);
    /* a done row is left alone by a second put */
    int prc = put(db, id, "{\"n\":1}", NULL, 3000);
    CHECK(prc == DB_OK || prc == DB_EOWNED);
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.status, "done");
    CHECK_STR(r.result, "{\"best\":0.5}");
    db_row_fini(&r);
    CHECK_EQ_I(db_count(db), 1);
    char other[65];
    make_id(other, 2);
    CHECK_EQ_I(db_get(db, other, 0, &r), DB_ENOTFOUND);
    db_close(db);
}

static void t_failed_again(void)
{
    struct mfu_db *db = fresh(0);
    if (!db) return;
    char id[65];
    make_id(id, 3);
    CHECK_EQ_I(put(db, id, "{}", NULL, 10), DB_OK);
    CHECK_EQ_I(db_finish(db, id, "failed", NULL, "{\"status\":422}", 0, 0, 0, 20), DB_OK);
    struct db_row r;
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.status, "failed");
    CHECK_STR(r.error, "{\"status\":422}");
    db_row_fini(&r);
    /* a failed search asked again runs again */
    CHECK_EQ_I(put(db, id, "{}", "{\"again\":1}", 30), DB_OK);
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.status, "queued");
    CHECK(r.error == NULL);
    db_row_fini(&r);
    db_close(db);
}

struct listed {
    int n;
    char ids[8][65];
};

static void on_list(void *ctx, const struct db_row *row)
{
    struct listed *l = ctx;
    if (l->n < 8) memcpy(l->ids[l->n], row->id, 65);
    l->n++;
}

static void t_touch_and_list(void)
{
    struct mfu_db *db = fresh(0);
    if (!db) return;
    char ids[5][65];
    for (int i = 0; i < 5; i++) {
        make_id(ids[i], 10 + i);
        CHECK_EQ_I(put(db, ids[i], "{}", NULL, 100 + i), DB_OK);
    }
    struct db_touch t[2] = {{ids[1], 3, 900}, {ids[1], 2, 800}};
    CHECK_EQ_I(db_touch_many(db, t, 2), DB_OK);
    struct db_row r;
    CHECK_EQ_I(db_get(db, ids[1], 0, &r), DB_OK);
    CHECK_EQ_I(r.hits, 5);
    CHECK_EQ_I(r.accessed_ms, 900); /* the later of the two */
    db_row_fini(&r);
    /* newest first; keyset paging continues after the last one seen */
    struct listed l = {0};
    CHECK_EQ_I(db_list(db, 2, 0, 0, NULL, on_list, &l), 2);
    CHECK_STR(l.ids[0], ids[4]);
    CHECK_STR(l.ids[1], ids[3]);
    struct listed m = {0};
    CHECK_EQ_I(db_list(db, 10, 0, 103, ids[3], on_list, &m), 3);
    CHECK_STR(m.ids[0], ids[2]);
    CHECK_STR(m.ids[2], ids[0]);
    struct listed o = {0};
    CHECK_EQ_I(db_list(db, 10, 4, 0, NULL, on_list, &o), 1);
    CHECK_STR(o.ids[0], ids[0]);
    db_close(db);
}

struct evicted {
    int n;
    char ids[8][65];
};

static void on_evict(void *ctx, const char *id)
{
    struct evicted *e = ctx;
    if (e->n < 8) snprintf(e->ids[e->n], 65, "%s", id);
    e->n++;
}

static void t_eviction(void)
{
    /* each finished row counts strlen(result) + 256 bytes (db.h): 1256
     * here, so a cap of 3000 holds two */
    char big[1001];
    memset(big, 'x', 1000);
    big[0] = big[999] = '"';
    big[1000] = '\0';
    struct mfu_db *db = fresh(3000);
    if (!db) return;
    struct evicted ev = {0};
    db_set_evict_hook(db, on_evict, &ev);
    char a[65], b[65], c[65], pend[65];
    make_id(a, 20);
    make_id(b, 21);
    make_id(c, 22);
    make_id(pend, 23);
    CHECK_EQ_I(put(db, pend, "{}", NULL, 1), DB_OK); /* queued: never evicted */
    CHECK_EQ_I(put(db, a, "{}", NULL, 2), DB_OK);
    CHECK_EQ_I(put(db, b, "{}", NULL, 3), DB_OK);
    CHECK_EQ_I(put(db, c, "{}", NULL, 4), DB_OK);
    CHECK_EQ_I(db_finish(db, a, "done", big, NULL, 0, 0, 0, 2000), DB_OK);
    CHECK_EQ_I(db_finish(db, b, "done", big, NULL, 0, 0, 0, 2100), DB_OK);
    CHECK_EQ_I(db_size_bytes(db), 2 * 1256);
    struct db_touch t = {a, 1, 2200}; /* b is now the least recently used */
    CHECK_EQ_I(db_touch_many(db, &t, 1), DB_OK);
    CHECK_EQ_I(db_finish(db, c, "done", big, NULL, 0, 0, 0, 2300), DB_OK);
    CHECK_EQ_I(ev.n, 1);
    CHECK_STR(ev.ids[0], b);
    struct db_row r;
    CHECK_EQ_I(db_get(db, b, 0, &r), DB_ENOTFOUND);
    CHECK_EQ_I(db_get(db, pend, 0, &r), DB_OK);
    CHECK_STR(r.status, "queued");
    db_row_fini(&r);
    CHECK_EQ_I(db_count(db), 3);
    db_close(db);
    /* the size is counted again at open: a and c */
    db = open_url(strncmp(backend_url, "postgres", 8) ? url_buf : backend_url, 3000);
    if (!db) return;
    CHECK_EQ_I(db_size_bytes(db), 2 * 1256);
    db_close(db);
}

static void t_sql_strings(void)
{
    struct mfu_db *db = fresh(0);
    if (!db) return;
    char id[65];
    make_id(id, 30);
    const char *evil = "{\"x\":\"'); DROP TABLE results; -- $1 \\\\ \\u00e9\"}";
    CHECK_EQ_I(put(db, id, evil, evil, 5), DB_OK);
    CHECK_EQ_I(db_finish(db, id, "done", evil, NULL, 0, 0, 0, 6), DB_OK);
    struct db_row r;
    CHECK_EQ_I(db_get(db, id, 1, &r), DB_OK);
    CHECK_STR(r.request, evil);
    CHECK_STR(r.result, evil);
    db_row_fini(&r);
    CHECK_EQ_I(db_count(db), 1);
    db_close(db);
}

static const check_case contract[] = {
    CHECK_CASE(t_round_trip), CHECK_CASE(t_failed_again), CHECK_CASE(t_touch_and_list),
    CHECK_CASE(t_eviction), CHECK_CASE(t_sql_strings),
};

/* ---- a store several replicas share (PostgreSQL) --------------------- */

static int skip_pg(void)
{
    return pg_url[0] == '\0';
}

static void t_pg_owned_and_fenced(void)
{
    if (skip_pg()) return;
    backend_url = pg_url;
    struct mfu_db *a = fresh(0), *b = open_url(pg_url, 0);
    if (!a || !b) return;
    CHECK_STR(db_backend(a), "postgresql");
    CHECK_EQ_I(db_shared(a), 1);
    char id[65];
    make_id(id, 40);
    CHECK_EQ_I(put(a, id, "{}", NULL, 1), DB_OK);
    /* the same search at another replica: not started there */
    CHECK_EQ_I(put(b, id, "{}", NULL, 2), DB_EOWNED);
    /* and whatever it writes is refused */
    CHECK_EQ_I(db_set_running(b, id, 3), DB_ELOST);
    CHECK_EQ_I(db_finish(b, id, "done", "\"b\"", NULL, 0, 0, 0, 4), DB_ELOST);
    CHECK_EQ_I(db_finish(a, id, "done", "\"a\"", NULL, 0, 0, 0, 5), DB_OK);
    struct db_row r;
    CHECK_EQ_I(db_get(b, id, 1, &r), DB_OK);
    CHECK_STR(r.result, "\"a\"");
    db_row_fini(&r);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT runs FROM results WHERE id = '%s'", id);
    CHECK_EQ_I(psql_i(sql), 1);
    /* done: a finish after it (a late replica) changes nothing */
    CHECK_EQ_I(db_finish(a, id, "done", "\"late\"", NULL, 0, 0, 0, 6), DB_ELOST);
    CHECK_EQ_I(psql_i(sql), 1);
    db_close(a);
    db_close(b);
}

static int n_claimed;
static char claimed_id[65];
static void on_claim(void *ctx, const char *id, const char *request)
{
    n_claimed++;
    snprintf(claimed_id, sizeof claimed_id, "%s", id);
    CHECK_STR(request, (const char *)ctx);
}

static void t_pg_lease_expiry(void)
{
    if (skip_pg()) return;
    backend_url = pg_url;
    struct mfu_db *a = fresh(0), *b = open_url(pg_url, 0);
    if (!a || !b) return;
    char id[65];
    make_id(id, 41);
    CHECK_EQ_I(put(a, id, "{\"norm\":1}", "{\"input\":1}", 1), DB_OK);
    /* a live lease is not claimed */
    n_claimed = 0;
    CHECK_EQ_I(db_claim(b, 10, on_claim, "{\"input\":1}"), 0);
    /* the heartbeat renews it: the lease ends DB_LEASE_MS from now */
    CHECK_EQ_I(db_heartbeat(a), DB_OK);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT (lease_ms - (extract(epoch from clock_timestamp()) * 1000)::bigint) / 1000 FROM results "
             "WHERE id = '%s'",
             id);
    long long left_s = psql_i(sql);
    CHECK(left_s >= 8 && left_s <= 10);
    /* a stops renewing (killed): its lease runs out, as if DB_LEASE_MS passed */
    snprintf(sql, sizeof sql, "UPDATE results SET lease_ms = 0 WHERE id = '%s'", id);
    CHECK_EQ_I(psql(sql), 0);
    CHECK_EQ_I(db_claim(b, 10, on_claim, "{\"input\":1}"), 1);
    CHECK_EQ_I(n_claimed, 1);
    CHECK_STR(claimed_id, id);
    /* a comes back: its writes are refused, its heartbeat keeps nothing */
    CHECK_EQ_I(db_heartbeat(a), DB_OK);
    CHECK_EQ_I(db_finish(a, id, "done", "\"a\"", NULL, 0, 0, 0, 9), DB_ELOST);
    CHECK_EQ_I(db_finish(b, id, "done", "\"b\"", NULL, 0, 0, 0, 9), DB_OK);
    snprintf(sql, sizeof sql, "SELECT attempts * 10 + runs FROM results WHERE id = '%s'", id);
    CHECK_EQ_I(psql_i(sql), 21); /* claimed twice, stored once */
    /* a shut down cleanly gives its lease up at once (db_set_queued) */
    char id2[65];
    make_id(id2, 42);
    CHECK_EQ_I(put(a, id2, "{}", NULL, 1), DB_OK);
    CHECK_EQ_I(db_set_queued(a, id2), DB_OK);
    n_claimed = 0;
    CHECK_EQ_I(db_claim(b, 10, on_claim, "{}"), 1);
    CHECK_STR(claimed_id, id2);
    db_close(a);
    db_close(b);
}

/* Four processes claim 40 expired rows at once: each row taken once. */
static void t_pg_claim_skip_locked(void)
{
    if (skip_pg()) return;
    backend_url = pg_url;
    struct mfu_db *a = fresh(0);
    if (!a) return;
    enum { N = 40, P = 4 };
    for (int i = 0; i < N; i++) {
        char id[65];
        make_id(id, 100 + i);
        CHECK_EQ_I(put(a, id, "{}", NULL, i), DB_OK);
    }
    db_close(a);
    CHECK_EQ_I(psql("UPDATE results SET lease_ms = 0"), 0);
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_t kids[P];
    for (int p = 0; p < P; p++) {
        kids[p] = fork();
        if (kids[p] == 0) {
            close(fds[0]);
            struct mfu_db *c = NULL;
            char err[256];
            if (db_open(pg_url, 0, &c, err, sizeof err) != DB_OK) _exit(2);
            /* a few small claims each, interleaving with the others */
            for (int round = 0; round < 20; round++) {
                n_claimed = 0;
                int k = db_claim(c, 3, on_claim, "{}");
                if (k < 0) _exit(3);
                if (k > 0 && write(fds[1], &k, sizeof k) != (ssize_t)sizeof k) _exit(4);
                if (k == 0) break;
            }
            db_close(c);
            _exit(0);
        }
    }
    close(fds[1]);
    int total = 0, k;
    while (read(fds[0], &k, sizeof k) == (ssize_t)sizeof k) total += k;
    close(fds[0]);
    for (int p = 0; p < P; p++) {
        int st = 0;
        waitpid(kids[p], &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK_EQ_I(total, N);
    CHECK_EQ_I(psql_i("SELECT count(*) FROM results WHERE attempts = 2"), N);
    CHECK_EQ_I(psql_i("SELECT count(DISTINCT owner) FROM results") >= 1, 1);
}

/* Six replicas start at once on an empty database: one migrates. */
static void t_pg_concurrent_migration(void)
{
    if (skip_pg()) return;
    psql("DROP DATABASE IF EXISTS mfud_migrate");
    CHECK_EQ_I(psql("CREATE DATABASE mfud_migrate"), 0);
    char url[1200];
    snprintf(url, sizeof url, "postgresql:///mfud_migrate?host=%s&user=mfud", pg_host);
    enum { P = 6 };
    pid_t kids[P];
    for (int p = 0; p < P; p++) {
        kids[p] = fork();
        if (kids[p] == 0) {
            struct mfu_db *c = NULL;
            char err[256];
            int rc = db_open(url, 0, &c, err, sizeof err);
            if (rc != DB_OK) fprintf(stderr, "replica %d: %s\n", p, err);
            int v = c ? db_schema_version(c) : -1;
            db_close(c);
            _exit(rc == DB_OK && v == 1 ? 0 : 1);
        }
    }
    for (int p = 0; p < P; p++) {
        int st = 0;
        waitpid(kids[p], &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    /* a schema from a newer mfud is refused, not "migrated" */
    struct mfu_db *c = open_url(url, 0);
    db_close(c);
    char saved[sizeof pg_url];
    memcpy(saved, pg_url, sizeof saved);
    snprintf(pg_url, sizeof pg_url, "%s", url);
    CHECK_EQ_I(psql_i("SELECT count(*) FROM mfud_schema"), 1);
    CHECK_EQ_I(psql("UPDATE mfud_schema SET version = 99"), 0);
    memcpy(pg_url, saved, sizeof saved);
    char err[256];
    CHECK_EQ_I(db_open(url, 0, &c, err, sizeof err), DB_EVERSION);
    CHECK(c == NULL);
    CHECK(strstr(err, "newer") != NULL);
    psql("DROP DATABASE IF EXISTS mfud_migrate");
}

/* The server ends the connection (a restart, an administrator): the next
 * calls reconnect. */
static void t_pg_reconnect(void)
{
    if (skip_pg()) return;
    backend_url = pg_url;
    struct mfu_db *a = fresh(0);
    if (!a) return;
    char id[65];
    make_id(id, 50);
    CHECK_EQ_I(put(a, id, "{}", NULL, 1), DB_OK);
    CHECK_EQ_I(psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                    "AND datname = current_database() AND backend_type = 'client backend'"),
               0);
    struct db_row r;
    int rc = DB_ERROR;
    for (int i = 0; i < 3 && rc != DB_OK; i++) {
        rc = db_get(a, id, 0, &r);
        if (rc == DB_OK) db_row_fini(&r);
    }
    CHECK_EQ_I(rc, DB_OK);
    char why[256];
    CHECK_EQ_I(db_file_ok(a, why, sizeof why), 1);
    struct db_stats st;
    db_stats(a, &st);
    CHECK(st.queries >= 2);
    CHECK(st.errors <= 1); /* the one call that met the dead connection */
    db_close(a);
}

/* A server that is not there: open fails with a message, never a crash. */
static void t_pg_unreachable(void)
{
    if (skip_pg()) return;
    struct mfu_db *c = NULL;
    char err[512] = "";
    CHECK(db_open("postgresql:///nothing?host=/nonexistent-mfud&connect_timeout=2", 0, &c, err, sizeof err) != DB_OK);
    CHECK(c == NULL);
    CHECK(strstr(err, "PostgreSQL") != NULL);
    char shown[256];
    db_redact("postgresql://u:secret@h/db?password=other&x=1", shown, sizeof shown);
    CHECK_STR(shown, "postgresql://u:***@h/db?password=***&x=1");
}

/* The pool: threads reading at once, each on its own connection; one
 * thread more than the pool was sized for fails cleanly. */
struct reader {
    struct mfu_db *db;
    const char *id;
    int ok, failed;
};

static void *read_many(void *arg)
{
    struct reader *rd = arg;
    for (int i = 0; i < 50; i++) {
        struct db_row r;
        int rc = db_get(rd->db, rd->id, 1, &r);
        if (rc == DB_OK) {
            rd->ok += r.result && !strcmp(r.result, "\"pooled\"");
            db_row_fini(&r);
        } else {
            rd->failed++;
        }
    }
    return NULL;
}

static void t_pg_pool(void)
{
    if (skip_pg()) return;
    backend_url = pg_url;
    psql("DELETE FROM results");
    struct mfu_db *db = NULL;
    char err[256];
    /* the opening thread and four readers */
    CHECK_EQ_I(db_open_pool(pg_url, 0, 5, &db, err, sizeof err), DB_OK);
    if (!db) return;
    CHECK_EQ_I(db_concurrent(db), 1);
    char id[65];
    make_id(id, 60);
    CHECK_EQ_I(put(db, id, "{}", NULL, 1), DB_OK);
    CHECK_EQ_I(db_finish(db, id, "done", "\"pooled\"", NULL, 0, 0, 0, 2), DB_OK);
    enum { T = 5 };
    pthread_t th[T];
    struct reader rd[T];
    for (int i = 0; i < T; i++) {
        rd[i] = (struct reader){db, id, 0, 0};
        CHECK_EQ_I(pthread_create(&th[i], NULL, read_many, &rd[i]), 0);
    }
    int ok = 0, failed = 0, all_failed = 0;
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        ok += rd[i].ok;
        failed += rd[i].failed;
        all_failed += rd[i].failed == 50;
    }
    /* four threads got connections and read every time; the fifth found
     * the pool full and failed every call, without a crash */
    CHECK_EQ_I(ok, 4 * 50);
    CHECK_EQ_I(all_failed, 1);
    CHECK_EQ_I(failed, 50);
    CHECK_EQ_I(psql_i("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                      "AND datname = current_database() AND application_name <> 'psql'"),
               5);
    db_close(db);
    /* SQLite: one thread only */
    snprintf(url_buf, sizeof url_buf, "%s/pool.db", sqlite_dir);
    db = open_url(url_buf, 0);
    CHECK_EQ_I(db_concurrent(db), 0);
    CHECK_EQ_I(db_shared(db), 0);
    CHECK_STR(db_backend(db), "sqlite");
    db_close(db);
}

static const check_case shared[] = {
    CHECK_CASE(t_pg_pool),
    CHECK_CASE(t_pg_owned_and_fenced), CHECK_CASE(t_pg_lease_expiry), CHECK_CASE(t_pg_claim_skip_locked),
    CHECK_CASE(t_pg_concurrent_migration), CHECK_CASE(t_pg_reconnect), CHECK_CASE(t_pg_unreachable),
};

/* ---- PostgreSQL for the test ------------------------------------------ */

static void pg_setup(void)
{
    const char *u = getenv("MFUD_TEST_PG_URL");
    if (u && *u) {
        snprintf(pg_url, sizeof pg_url, "%s", u);
        const char *h = strstr(u, "host=");
        snprintf(pg_host, sizeof pg_host, "%.*s", h ? (int)strcspn(h + 5, "&") : 0, h ? h + 5 : "");
        return;
    }
    FILE *f = popen(". tests/pg.sh && pg_find && pg_start && echo \"$PG_DIR\"", "r");
    char dir[512] = "";
    if (f) {
        if (!fgets(dir, sizeof dir, f)) dir[0] = '\0';
        pclose(f);
    }
    dir[strcspn(dir, "\n")] = '\0';
    if (!dir[0]) {
        printf("SKIPPED: test_store PostgreSQL half (no PostgreSQL server to start: Debian's postgresql)\n");
        return;
    }
    snprintf(pg_dir, sizeof pg_dir, "%s", dir);
    snprintf(pg_host, sizeof pg_host, "%s", dir);
    snprintf(pg_url, sizeof pg_url, "postgresql:///postgres?host=%s&user=mfud", dir);
    /* a build without libpq cannot use it: say so */
    struct mfu_db *c = NULL;
    char err[512];
    if (db_open(pg_url, 0, &c, err, sizeof err) == DB_EUNSUPPORTED) {
        printf("SKIPPED: test_store PostgreSQL half (%s)\n", err);
        pg_url[0] = '\0';
    }
    db_close(c);
}

static void pg_teardown(void)
{
    if (!pg_dir[0]) return;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, ". tests/pg.sh && pg_find && PG_DIR='%s' && pg_stop", pg_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not stop the cluster in %s\n", pg_dir);
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(sqlite_dir, sizeof sqlite_dir, "%s/mfu_test_store_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(sqlite_dir)) {
        perror("mkdtemp");
        return 1;
    }
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < sizeof contract / sizeof contract[0]; i++) printf("%s\n", contract[i].name);
        for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) printf("%s\n", shared[i].name);
        return 0;
    }
    pg_setup();
    /* the contract on SQLite, then on PostgreSQL, then the shared-store
     * cases (named cases run alone: `test_store t_pg_reconnect`) */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && skip_pg()) break;
        backend_url = pass == 0 ? "sqlite" : pg_url;
        for (size_t i = 0; i < sizeof contract / sizeof contract[0]; i++) {
            int named = argc < 2;
            for (int a = 1; a < argc; a++) named |= !strcmp(argv[a], contract[i].name);
            if (named) contract[i].fn();
        }
    }
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
        int named = argc < 2;
        for (int a = 1; a < argc; a++) named |= !strcmp(argv[a], shared[i].name);
        if (named) shared[i].fn();
    }
    pg_teardown();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sqlite_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", sqlite_dir);
    return check_done();
}
