/* server/jobs_run.c -- a job on the search pool (uv_queue_work) and its
 * outcome stored, answered and cached (server/jobs_int.h). */
#include "jobs_int.h"

/* ---- running jobs ------------------------------------------------------ */

static int progress_cb(void *ctx, double fraction, uint64_t evaluated)
{
    struct job *j = ctx;
    if (fraction < 0) fraction = 0;
    if (fraction > 1) fraction = 1;
    /* never backwards (one writer: the job's pool thread) */
    int ppm = (int)(fraction * 1e6);
    if (ppm > atomic_load(&j->progress_ppm)) atomic_store(&j->progress_ppm, ppm);
    if (evaluated > atomic_load(&j->evaluated)) atomic_store(&j->evaluated, evaluated);
    return atomic_load(&j->cancel);
}

/* Pool thread: a comparison's variant searches as text for the loop. */
static void collect_subs(struct job *j, json_t *computed)
{
    size_t n = json_object_size(computed);
    j->subs = n ? calloc(n, sizeof *j->subs) : NULL;
    if (!j->subs) return;
    const char *key;
    json_t *v;
    json_object_foreach(computed, key, v) {
        json_t *req = json_object_get(v, "request"), *res = json_object_get(v, "result");
        api_status st;
        api_status_init(&st);
        json_t *norm = api_normalize(req, &st);
        if (!norm || strlen(key) != 64) {
            json_decref(norm);
            continue;
        }
        struct sub_result *s = &j->subs[j->n_subs];
        memcpy(s->id, key, 65);
        s->normalized = json_dumps(norm, JSON_COMPACT | JSON_SORT_KEYS);
        s->input = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
        s->result = json_dumps(res, JSON_COMPACT);
        const char *mn = json_string_value(json_object_get(json_object_get(res, "model"), "name"));
        const char *hn = json_string_value(json_object_get(json_object_get(res, "hardware"), "name"));
        s->model = mn ? strdup(mn) : NULL;
        s->hardware = hn ? strdup(hn) : NULL;
        s->devices = (int64_t)json_integer_value(json_object_get(res, "devices"));
        json_t *mfu = json_object_get(json_object_get(json_array_get(json_object_get(res, "configs"), 0),
                                                      "expected"), "mfu");
        s->has_best = json_is_number(mfu);
        s->best_mfu = json_number_value(mfu);
        s->evaluated = (int64_t)json_integer_value(json_object_get(json_object_get(res, "search"), "evaluated"));
        json_decref(norm);
        if (!s->normalized || !s->input || !s->result) continue; /* freed with the job */
        j->n_subs++;
    }
}

/* Loop thread: store a comparison's variant searches as done rows (unless
 * the key is already stored or running as a job of its own). */
static void store_subs(struct job *j, int64_t now)
{
    for (int i = 0; i < j->n_subs; i++) {
        struct sub_result *s = &j->subs[i];
        if (jobs_find(s->id)) continue;
        struct db_row row;
        int rc = db_get(jobs_app.db, s->id, 0, &row);
        if (rc == DB_OK) {
            int done = strcmp(row.status, "done") == 0;
            db_row_fini(&row);
            if (done) continue;
        }
        struct db_new_job nj = {s->id, s->normalized, s->input, s->model, s->hardware, s->devices, now};
        if (db_put_job(jobs_app.db, &nj) != DB_OK ||
            db_finish(jobs_app.db, s->id, "done", s->result, NULL, s->has_best, s->best_mfu, s->evaluated,
                      now) != DB_OK)
            srv_log(SRV_LOG_ERROR, "msg=\"db store of a compare variant failed\" id=%.12s err=\"%s\"",
                    s->id, db_errmsg(jobs_app.db));
    }
    jobs_subs_free(j);
}

/* Pool thread: only the job's own fields, api/ and jansson. */
static void work_cb(uv_work_t *w)
{
    struct job *j = container_of(w, struct job, work);
    srv_metrics_job_queued_delta(-1);
    srv_metrics_job_running_delta(1);
    atomic_store(&j->started_ms, srv_now_ms());
    uv_async_send(&jobs_app.async); /* the loop marks the row running */
    if (atomic_load(&j->cancel)) {
        j->cancelled = 1;
        return;
    }
    /* Test hook (MFUD_TEST_JOB_DELAY_MS): hold each job this long before the
     * search, so integration tests can fill the queue or kill the daemon
     * with jobs in flight whatever the machine's speed. */
    for (int t = 0; t < jobs_app.cfg->test_job_delay_ms && !atomic_load(&j->cancel); t += 10)
        uv_sleep(10);
    api_status st;
    api_status_init(&st);
    json_error_t jerr;
    json_t *req = j->prep ? NULL : json_loads(j->request, 0, &jerr);
    json_t *res = NULL;
    if (j->prep) res = api_search_prepared(j->prep, &st, progress_cb, j, 1); /* parsed once */
    else if (!req) api_fail(&st, 500, "", "stored request is not JSON: %s", jerr.text);
    else if (json_object_get(req, "vary")) { /* POST /compare */
        json_t *computed = json_object(), *known = json_object();
        const char *kk;
        json_t *kv;
        json_object_foreach(j->known, kk, kv) {
            json_t *doc = json_loads(json_string_value(kv), 0, NULL);
            if (doc) json_object_set_new(known, kk, doc);
        }
        res = api_compare(req, &st, progress_cb, j, 1, known, computed);
        json_decref(known);
        if (res) collect_subs(j, computed);
        json_decref(computed);
    } else res = api_search(req, &st, progress_cb, j);
    json_decref(req);
    if (atomic_load(&j->cancel)) {
        j->cancelled = 1;
        json_decref(res);
        return;
    }
    if (res) {
        json_t *best = json_array_get(json_object_get(res, "configs"), 0);
        /* the ranking's figure: expected MFU of the best configuration */
        json_t *mfu = json_object_get(json_object_get(best, "expected"), "mfu");
        if (json_is_number(mfu)) {
            j->has_best = 1;
            j->best_mfu = json_number_value(mfu);
        }
        json_t *ev = json_object_get(json_object_get(res, "search"), "evaluated");
        j->n_evaluated = json_is_integer(ev) ? (int64_t)json_integer_value(ev)
                                             : (int64_t)atomic_load(&j->evaluated);
        j->result = json_dumps(res, JSON_COMPACT);
        json_decref(res);
        if (!j->result) api_fail(&st, 500, "", "out of memory rendering the result");
    }
    if (!j->result) {
        if (!st.status) api_fail(&st, 500, "", "the search failed");
        j->error_code = st.status;
        json_t *p = api_problem_json(&st);
        j->error = p ? json_dumps(p, JSON_COMPACT) : NULL;
        json_decref(p);
    }
}


static void answer_waiters(struct job *j, int done, struct srv_rentry *e)
{
    struct srv_req **pp = &jobs_app.waiters;
    while (*pp) {
        struct srv_req *r = *pp;
        if (r->job != j) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        r->job = NULL;
        if (!done) {
            jobs_view_from_job(&r->view, j);
            jobs_answer_view(r, 202);
        } else if (j->result) {
            jobs_view_from_job(&r->view, j);
            r->view.status = "done";
            r->view.progress = 1.0;
            r->view.evaluated = j->n_evaluated;
            r->view.finished_ms = j->finished_ms;
            if (e) r->entry = srv_rcache_ref(e);
            else r->view.result = strdup(j->result);
            jobs_answer_view(r, (r->entry || r->view.result) ? 200 : 202);
        } else {
            jobs_answer_failed(r, j->error);
        }
        srv_http_resume(r);
    }
}

static void after_work_cb(uv_work_t *w, int status)
{
    struct job *j = container_of(w, struct job, work);
    int64_t now = srv_now_ms();
    if (status == UV_ECANCELED || j->cancelled) {
        if (status == UV_ECANCELED) srv_metrics_job_queued_delta(-1);
        else srv_metrics_job_running_delta(-1);
        srv_metrics_job_completed("cancelled");
        if (jobs_app.db) db_set_queued(jobs_app.db, j->id);
        srv_log(SRV_LOG_INFO, "msg=job_interrupted id=%.12s", j->id);
        answer_waiters(j, 0, NULL);
    } else {
        srv_metrics_job_running_delta(-1);
        const char *outcome = j->result ? "done" : "failed";
        srv_metrics_job_completed(outcome);
        srv_metrics_evaluated((uint64_t)j->n_evaluated);
        jobs_app.finishing_id = j->id;
        jobs_app.finishing_evicted = 0;
        int frc = db_finish(jobs_app.db, j->id, outcome, j->result, j->error, j->has_best,
                            j->best_mfu, j->n_evaluated, now);
        jobs_app.finishing_id = NULL;
        if (frc == DB_ELOST) {
            /* this replica was cut off long enough for another to take
             * the job over: that one stores the outcome (the same, the
             * search being deterministic); ours answers our waiters only */
            srv_log(SRV_LOG_WARN, "msg=\"lease lost; another replica stores this job\" id=%.12s", j->id);
            srv_metrics_job_lease_lost();
        } else if (frc != DB_OK) {
            /* held in memory, answered from there and written again every
             * second; meanwhile not ready, and no new jobs (503) */
            srv_log(SRV_LOG_ERROR, "msg=\"db finish failed; result held in memory\" id=%.12s err=\"%s\"", j->id,
                    db_errmsg(jobs_app.db));
            struct held *h = calloc(1, sizeof *h);
            if (h) {
                memcpy(h->id, j->id, 65);
                snprintf(h->outcome, sizeof h->outcome, "%s", outcome);
                h->result = j->result ? strdup(j->result) : NULL;
                h->error = j->error ? strdup(j->error) : NULL;
                h->has_best = j->has_best;
                h->best_mfu = j->best_mfu;
                h->evaluated = j->n_evaluated;
                h->created_ms = j->created_ms;
                h->started_ms = atomic_load(&j->started_ms);
                h->finished_ms = now;
                struct held **t = &jobs_app.held;
                while (*t) t = &(*t)->next;
                *t = h;
                jobs_app.n_held++;
            }
            snprintf(jobs_app.store_err, sizeof jobs_app.store_err, "%s", db_errmsg(jobs_app.db));
            atomic_store(&jobs_app.store_ok, 0);
        }
        j->finished_ms = now;
        if (j->result) store_subs(j, now);
        struct srv_rentry *e = NULL;
        if (j->result) {
            /* Render once for the waiters and later readers; kept in memory
             * only if the row is durable (stored and not evicted at once). */
            struct srv_view v;
            jobs_view_from_job(&v, j);
            v.status = "done";
            v.evaluated = j->n_evaluated;
            v.finished_ms = now;
            e = srv_rcache_put(&v, j->result);
            if (e && frc == DB_OK && jobs_app.finishing_evicted) srv_rcache_remove(j->id);
            if (e && frc == DB_ELOST) srv_rcache_remove(j->id); /* not ours to keep */
        }
        srv_log(SRV_LOG_INFO, "msg=job_end id=%.12s outcome=%s evaluated=%lld ms=%lld", j->id,
                outcome, (long long)j->n_evaluated,
                (long long)(now - atomic_load(&j->started_ms)));
        answer_waiters(j, 1, e);
        srv_rcache_unref(e);
    }
    jobs_unlink(j);
    jobs_free(j);
    jobs_work_ended();
}

/* Create and start a job. The row must already be in the database. */
struct job *jobs_start(const char *id, const char *request, int64_t created_ms, json_t *known,
                             struct api_prepared *prep)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j) {
        json_decref(known);
        api_prepared_free(prep);
        return NULL;
    }
    j->known = known;
    j->prep = prep;
    memcpy(j->id, id, 65);
    j->request = strdup(request);
    j->created_ms = created_ms;
    if (!j->request) {
        free(j);
        return NULL;
    }
    if (uv_queue_work(jobs_app.loop, &j->work, work_cb, after_work_cb) != 0) {
        jobs_free(j);
        return NULL;
    }
    unsigned b = jobs_bucket_of(id);
    j->hnext = jobs_app.buckets[b];
    jobs_app.buckets[b] = j;
    j->next = jobs_app.active;
    jobs_app.active = j;
    jobs_app.n_active++;
    atomic_store(&jobs_app.n_active_pub, jobs_app.n_active);
    srv_metrics_job_created();
    srv_metrics_job_queued_delta(1);
    srv_log(SRV_LOG_INFO, "msg=job_queued id=%.12s active=%d", id, jobs_app.n_active);
    return j;
}


static void add_waiter(struct srv_req *r, struct job *j)
{
    r->job = j;
    r->deadline = srv_now_mono() + r->wait_s;
    r->next = jobs_app.waiters;
    jobs_app.waiters = r;
    if (!uv_is_active((uv_handle_t *)&jobs_app.wait_timer))
        uv_timer_start(&jobs_app.wait_timer, jobs_on_wait_timer, 20, 20);
}

/* 202 at once (Prefer: respond-async, or no wait), else wait on the job. */
void jobs_answer_or_wait(struct srv_req *r, struct job *j)
{
    if (r->prefer_async || r->wait_s <= 0) {
        jobs_view_from_job(&r->view, j);
        jobs_answer_view(r, 202);
        srv_http_resume(r);
    } else {
        add_waiter(r, j);
    }
}

/* Waiters whose wait ran out: 202 with the job as it stands. */
void jobs_on_wait_timer(uv_timer_t *t)
{
    double now = srv_now_mono();
    struct srv_req **pp = &jobs_app.waiters;
    while (*pp) {
        struct srv_req *r = *pp;
        if (r->deadline > now) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        jobs_view_from_job(&r->view, r->job);
        r->job = NULL;
        jobs_answer_view(r, 202);
        srv_http_resume(r);
    }
    if (!jobs_app.waiters) uv_timer_stop(t);
}

/* A row to run (crash recovery, a takeover): its job started here. */
void jobs_requeue_one(void *ctx, const char *id, const char *request)
{
    struct db_row row;
    int64_t created = srv_now_ms();
    if (db_get(jobs_app.db, id, 0, &row) == DB_OK) {
        created = row.created_ms;
        db_row_fini(&row);
    }
    if (jobs_find(id)) return;
    if (!jobs_start(id, request, created, NULL, NULL))
        srv_log(SRV_LOG_ERROR, "msg=\"could not re-queue\" id=%.12s", id);
    else (*(int *)ctx)++;
}

/* ---- synchronous requests on the pool (/roofline, /calibrate, /traces) -- */

/* Run a synchronous request's work (w, inside the allocation `owner`) on
 * the pool: /roofline, /calibrate, /traces. Answers 503 when too many are
 * in flight (or owner is NULL: out of memory), 500 if it cannot queue. */
void jobs_pool_start(struct srv_req *r, void *owner, uv_work_t *w, uv_work_cb work, uv_after_work_cb after)
{
    if (!owner || jobs_app.n_roofline >= jobs_app.cfg->queue_limit) {
        free(owner);
        jobs_answer_overloaded(r, "too many synchronous requests in flight");
        srv_http_resume(r);
        return;
    }
    if (uv_queue_work(jobs_app.loop, w, work, after) != 0) {
        free(owner);
        srv_answer_problem(r, 500, "Internal Server Error", "could not queue work");
        srv_http_resume(r);
        return;
    }
    jobs_app.n_roofline++;
}
