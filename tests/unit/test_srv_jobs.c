/* server/: the job state machine at C level (issue 15 item 5), without
 * HTTP: the loop (server/jobs.c and its rooms) runs on its own thread on a
 * SQLite file, requests are handed to it as the HTTP threads hand them
 * (srv_jobs_submit), and each answer is caught where the loop would resume
 * the connection (srv_http_resume, wrapped at link time:
 * -Wl,--wrap=srv_http_resume). Every job is held 300 ms
 * (test_job_delay_ms) so its states can be seen.
 *
 * The machine, as server/jobs_int.h states it: a new search is acknowledged
 * 202 once its row is queued; the same search again shares the job (202,
 * the same id); a search waiting (Prefer: wait) is answered 200 when its
 * job is done; beyond --queue-limit jobs a new one is refused 503 with
 * Retry-After (not acknowledged: no row); GET /results/{id} says queued or
 * running, then done with the result; a failed job is never done; shutdown
 * puts an unfinished job's row back to queued (it runs at the next start);
 * an unknown id is 404.
 */
#include "check.h"
#include "srv.h"
#include "api.h"
#include "db.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- answers caught where the loop resumes a connection -------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

/* An answered request is marked in its own `code` (the HTTP thread's
 * field, which no HTTP thread sets here), under mu. */
void __wrap_srv_http_resume(struct srv_req *r);
void __wrap_srv_http_resume(struct srv_req *r)
{
    pthread_mutex_lock(&mu);
    r->code = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static int is_answered(struct srv_req *r)
{
    return r->code == 1;
}

/* Hand r to the loop and wait (up to 30 s) for its answer. */
static int submit_wait(struct srv_req *r)
{
    if (srv_jobs_submit(r) != 0) return 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&mu);
    int rc = 0;
    while (!is_answered(r) && rc == 0) rc = pthread_cond_timedwait(&cv, &mu, &until);
    int ok = is_answered(r);
    pthread_mutex_unlock(&mu);
    return ok;
}

/* A POST /search as handle_search (server/routes.c) makes it: parsed once,
 * keyed by its normal form. */
static struct srv_req *search_req(int devices, int async, double wait_s)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": %d,"
             " \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"search\": {\"top_k\": 2}}",
             devices);
    struct srv_req *r = calloc(1, sizeof *r);
    json_t *req = json_loads(text, 0, NULL);
    api_status st;
    api_status_init(&st);
    r->route = ROUTE_SEARCH;
    r->method = SRV_M_POST;
    r->prep = api_prepare_search(req, &st);
    CHECK(r->prep != NULL);
    json_t *norm = r->prep ? api_prepared_normal(r->prep) : NULL;
    CHECK(norm && api_cache_key(norm, r->id) == 0);
    r->normalized = norm ? json_dumps(norm, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    r->input = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
    r->model = strdup("llama3-8b");
    r->hardware = strdup("h100-sxm");
    r->devices = devices;
    r->prefer_async = async;
    r->wait_s = wait_s;
    json_decref(req);
    return r;
}

static struct srv_req *result_req(const char *id)
{
    struct srv_req *r = calloc(1, sizeof *r);
    r->route = ROUTE_RESULT;
    r->method = SRV_M_GET;
    r->top_k = -1;
    snprintf(r->id, sizeof r->id, "%s", id);
    return r;
}

/* The status an answer carries: its view's, or "done" for a cached entry. */
static const char *status_of(const struct srv_req *r)
{
    if (r->answer != ANS_VIEW) return "(not a view)";
    return r->view.status ? r->view.status : "?";
}

static void *loop_main(void *arg)
{
    (void)arg;
    srv_jobs_run();
    return NULL;
}

static char dir[256], dbpath[512];

/* A row's status in the store, read with the loop stopped. */
static void row_status(const char *id, char *out, size_t n)
{
    struct mfu_db *db = NULL;
    char err[256];
    snprintf(out, n, "(none)");
    if (db_open(dbpath, 0, &db, err, sizeof err) != DB_OK) return;
    struct db_row row;
    if (db_get(db, id, 0, &row) == DB_OK) {
        snprintf(out, n, "%s", row.status);
        db_row_fini(&row);
    }
    db_close(db);
}

/* A fresh store in a new directory under $TMPDIR, the loop started on it
 * (a queue of 2, every job held 300 ms); exits 1 if the directory cannot
 * be made. */
static void start_loop(pthread_t *loop)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/mfu_test_srv_jobs_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) exit(1);
    snprintf(dbpath, sizeof dbpath, "%s/jobs.db", dir);
    srv_log_level = SRV_LOG_ERROR;
    static struct srv_config cfg;
    cfg.workers = 2;
    cfg.http_threads = 1;
    cfg.queue_limit = 2;
    cfg.cache_max = 0;
    cfg.mem_cache = 1 << 20;
    cfg.default_wait_s = 0;
    cfg.max_wait_s = 60;
    cfg.max_search_s = 60;
    cfg.test_job_delay_ms = 300;
    snprintf(cfg.db_path, sizeof cfg.db_path, "%s", dbpath);
    srv_process_init(&cfg);
    CHECK_EQ_I(srv_jobs_init(&cfg), 0);
    CHECK_EQ_I(pthread_create(loop, NULL, loop_main, NULL), 0);
}

/* GET /results/{id} every 50 ms (up to 400 times) until done: each
 * answer 200, queued or running until then. 1 once done. */
/* Polls GET /results/{id} until done. Every answer must be a 200 with a
 * status of queued, running or done; how many polls that takes depends on
 * timing, so the answers are checked together (one check each for
 * "answered", "200" and "a known status"), and the count of checks stays
 * the same from run to run. */
static int poll_done(const char *id)
{
    int done = 0, unanswered = 0, not_200 = 0, odd_status = 0;
    for (int i = 0; i < 400 && !done; i++) {
        struct srv_req *g = result_req(id);
        if (!submit_wait(g)) {
            unanswered++;
            break; /* the loop still holds it: not freed */
        }
        if (g->out_code != 200) not_200++;
        done = !strcmp(status_of(g), "done");
        if (!done && strcmp(status_of(g), "queued") && strcmp(status_of(g), "running")) odd_status++;
        srv_req_free(g);
        if (!done) usleep(50000);
    }
    CHECK_EQ_I(unanswered, 0);
    CHECK_EQ_I(not_200, 0);
    CHECK_EQ_I(odd_status, 0);
    return done;
}

static void t_job_machine(void)
{
    pthread_t loop;
    start_loop(&loop);

    /* queued -> 202, with the row written before the answer */
    struct srv_req *a = search_req(8, 1, 0);
    CHECK(submit_wait(a));
    CHECK_EQ_I(a->out_code, 202);
    CHECK(!strcmp(status_of(a), "queued") || !strcmp(status_of(a), "running"));
    CHECK_EQ_I(a->out_retry_after, 1);
    /* the same search again: the same job, 202 */
    struct srv_req *a2 = search_req(8, 1, 0);
    CHECK_STR(a2->id, a->id);
    CHECK(submit_wait(a2));
    CHECK_EQ_I(a2->out_code, 202);
    /* a second distinct search fills the queue (limit 2); a third is
     * refused, 503 with Retry-After, and leaves no row */
    struct srv_req *b = search_req(16, 1, 0);
    CHECK(submit_wait(b));
    CHECK_EQ_I(b->out_code, 202);
    struct srv_req *c = search_req(32, 1, 0);
    CHECK(submit_wait(c));
    CHECK_EQ_I(c->out_code, 503);
    CHECK_EQ_I(c->out_retry_after, 5);
    char readiness[256];
    CHECK_EQ_I(srv_jobs_ready(readiness, sizeof readiness), 0);
    CHECK(strstr(readiness, "queue full") != NULL);
    /* waiting on a's job: answered 200 when it is done */
    struct srv_req *aw = search_req(8, 0, 30);
    CHECK(submit_wait(aw));
    CHECK_EQ_I(aw->out_code, 200);
    CHECK_STR(status_of(aw), "done");
    CHECK(aw->entry != NULL || aw->view.result != NULL);
    /* GET /results/{b}: running or queued, then done */
    int done = poll_done(b->id);
    CHECK(done);
    /* an unknown id */
    struct srv_req *u = result_req("0000000000000000000000000000000000000000000000000000000000000000");
    CHECK(submit_wait(u));
    CHECK_EQ_I(u->out_code, 404);
    /* shutdown with a job in flight: its row goes back to queued */
    CHECK_EQ_I(srv_jobs_ready(readiness, sizeof readiness), 1);
    struct srv_req *d = search_req(64, 1, 0);
    CHECK(submit_wait(d));
    CHECK_EQ_I(d->out_code, 202);
    raise(SIGTERM);
    pthread_join(loop, NULL);
    char st[16];
    row_status(d->id, st, sizeof st);
    CHECK_STR(st, "queued");
    row_status(a->id, st, sizeof st);
    CHECK_STR(st, "done");
    row_status(c->id, st, sizeof st);
    CHECK_STR(st, "(none)");
    struct srv_req *all[] = {a, a2, b, c, aw, u, d};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) srv_req_free(all[i]);
    srv_rcache_clear();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static const check_case cases[] = {
    CHECK_CASE(t_job_machine),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
