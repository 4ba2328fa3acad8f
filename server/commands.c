/* server/commands.c -- what each request asks of the loop: search,
 * result, listing, traces, roofline and calibration (server/jobs_int.h). */
#include "jobs_int.h"
#include "sha256.h"

/* ---- commands ---------------------------------------------------------- */


/* A finished result in the memory cache: answer 200 from it (hit: count
 * the access as a cache hit). Returns 1 if it answered. */
static int answer_from_rcache(struct srv_req *r, int hit)
{
    if (!(r->entry = srv_rcache_get(r->id, hit))) return 0;
    memcpy(r->view.id, r->id, 65);
    r->view.status = "done";
    jobs_answer_view(r, 200);
    srv_http_resume(r);
    return 1;
}
/* The stored results of a comparison's variants (normalized: {"kind":
 * "compare", "variant_keys": [...]}), as {key: result text}: a variant
 * searched before is not searched again. */
static json_t *known_variants(const char *normalized)
{
    json_t *norm = json_loads(normalized, 0, NULL);
    json_t *keys = json_object_get(norm, "variant_keys"), *out = json_object();
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k) {
        const char *id = json_string_value(k);
        if (!id || strlen(id) != 64 || json_object_get(out, id)) continue;
        struct srv_rentry *e = srv_rcache_get(id, 0);
        if (e) {
            size_t len;
            const char *t = srv_rentry_result(e, &len);
            if (t) json_object_set_new(out, id, json_stringn(t, len));
            srv_rcache_unref(e);
            continue;
        }
        struct db_row row;
        int rc = db_get(jobs_app.db, id, 1, &row);
        if (rc == DB_OK && strcmp(row.status, "done") == 0 && row.result)
            json_object_set_new(out, id, json_string(row.result));
        if (rc == DB_OK || rc == DB_ECORRUPT) db_row_fini(&row); /* a corrupt row is filled too */
    }
    json_decref(norm);
    return out;
}

/* A POST whose result is done in the database: 200 with it (a hit),
 * the row rendered once into the memory cache. Takes the row. */
static void answer_done_row(struct srv_req *r, struct db_row *row)
{
    jobs_touch(r->id, 1);
    jobs_view_from_row(&r->view, row);
    db_row_fini(row);
    jobs_attach_entry(r);
    jobs_answer_view(r, 200);
    srv_http_resume(r);
}


/* ---- uploaded traces (POST /traces, issue 12) -------------------------- */

/* A stored result document by id (memory cache, else the store), or NULL.
 * Loop thread. */
static json_t *stored_doc(const char *id)
{
    json_t *doc = NULL;
    struct srv_rentry *e = srv_rcache_get(id, 0);
    if (e) {
        size_t n = 0;
        const char *t = srv_rentry_result(e, &n);
        doc = t ? json_loadb(t, n, 0, NULL) : NULL;
        srv_rcache_unref(e);
        return doc;
    }
    struct db_row row;
    int rc = db_get(jobs_app.db, id, 1, &row);
    if (rc == DB_OK && !strcmp(row.status, "done") && row.result) {
        doc = json_loads(row.result, 0, NULL);
        srv_rcache_note_access(id, 0); /* in use: last in line for eviction */
    }
    if (rc == DB_OK || rc == DB_ECORRUPT) db_row_fini(&row); /* a corrupt row is filled too */
    return doc;
}

/* The stored measurement of trace `id` (a done result that is one), or
 * NULL. Loop thread. */
static json_t *stored_trace(const char *id)
{
    json_t *doc = stored_doc(id);
    const char *fmt = json_string_value(json_object_get(doc, "format"));
    if (doc && !(json_is_array(json_object_get(doc, "steps")) && fmt && !strcmp(fmt, "chrome-trace"))) {
        json_decref(doc);
        doc = NULL;
    }
    return doc;
}

/* measured.trace given as the id of an uploaded trace: replaced by the
 * stored measurement in what the engine runs (the normal form keeps the
 * id, which names the trace's bytes). 0, or -1 with a 422 answered. */
static int resolve_trace(struct srv_req *r, json_t *meas, const char *ptr)
{
    const char *id = json_string_value(json_object_get(meas, "trace"));
    if (!id) return 0;
    json_t *m = strlen(id) == 64 ? stored_trace(id) : NULL;
    if (!m) {
        api_status st;
        api_status_init(&st);
        api_fail(&st, 422, ptr, "no uploaded trace has this id (POST /traces answers it; stored traces may be evicted)");
        srv_answer_json(r, 422, api_problem_json(&st));
        return -1;
    }
    json_object_set_new(meas, "trace", m);
    return 0;
}

/* Resolve the trace ids of a search input (measured.trace) or a
 * calibration (runs[i].request.measured.trace, runs[i].measured.trace). */
static int resolve_traces(struct srv_req *r, json_t *doc)
{
    if (r->route == ROUTE_CALIBRATE) {
        json_t *runs = json_object_get(doc, "runs");
        for (size_t i = 0; i < json_array_size(runs); i++) {
            json_t *run = json_array_get(runs, i), *rq = json_object_get(run, "request");
            char ptr[96];
            snprintf(ptr, sizeof ptr, "/runs/%zu%s/measured/trace", i, rq ? "/request" : "");
            if (resolve_trace(r, json_object_get(rq ? rq : run, "measured"), ptr)) return -1;
        }
        return 0;
    }
    return resolve_trace(r, json_object_get(doc, "measured"), "/measured/trace");
}

/* ---- stored hardware profiles (POST /calibrate, GET /profiles/{id}) ---- */

#define PROFILE_FORMAT "hardware-profile"

/* h = {"profile": id, overrides...}: the stored description with the
 * overrides on top (as a preset's), a new reference; NULL with *bad = 0
 * when h names no profile, NULL with *bad = 1 when answered (a 422 at ptr,
 * or out of memory; not resumed). */
static json_t *profile_resolved(struct srv_req *r, json_t *h, const char *ptr, int *bad)
{
    *bad = 0;
    json_t *pid = json_object_get(h, "profile");
    if (!pid) return NULL;
    *bad = 1;
    if (json_object_get(h, "preset")) {
        api_status st;
        api_status_init(&st);
        api_fail(&st, 422, ptr, "name a stored profile or a preset, not both");
        srv_answer_json(r, 422, api_problem_json(&st));
        return NULL;
    }
    const char *id = json_string_value(pid);
    json_t *doc = id && strlen(id) == 64 && strspn(id, "0123456789abcdef") == 64 ? stored_doc(id) : NULL;
    json_t *stored = json_object_get(doc, "hardware");
    const char *fmt = json_string_value(json_object_get(doc, "format"));
    if (!json_is_object(stored) || !fmt || strcmp(fmt, PROFILE_FORMAT)) {
        json_decref(doc);
        api_status st;
        api_status_init(&st);
        api_fail(&st, 422, ptr, "no stored hardware profile has this id (POST /calibrate answers profile.id; "
                                "stored results may be evicted: calibrate again, or send the description)");
        srv_answer_json(r, 422, api_problem_json(&st));
        return NULL;
    }
    json_t *out = json_deep_copy(stored);
    json_decref(doc);
    if (!out) {
        srv_answer_problem(r, 503, "Service Unavailable", "out of memory");
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(h, k, v) if (strcmp(k, "profile")) json_object_set(out, k, v);
    *bad = 0;
    return out;
}

/* holder.hardware naming a stored profile: replaced by its description
 * (ptr: the pointer of holder's /hardware). 0, or -1 answered. */
static int resolve_profile(struct srv_req *r, json_t *holder, const char *ptr)
{
    char p[128];
    snprintf(p, sizeof p, "%s/profile", ptr);
    int bad;
    json_t *out = profile_resolved(r, json_object_get(holder, "hardware"), p, &bad);
    if (out) json_object_set_new(holder, "hardware", out);
    return bad ? -1 : 0;
}

/* A comparison's hardware: its base's and every vary.hardware entry's. */
static int compare_profiles(struct srv_req *r, json_t *in)
{
    if (resolve_profile(r, json_object_get(in, "base"), "/base/hardware")) return -1;
    json_t *hs = json_object_get(json_object_get(in, "vary"), "hardware");
    for (size_t i = 0; i < json_array_size(hs); i++) {
        char p[64];
        snprintf(p, sizeof p, "/vary/hardware/%zu/profile", i);
        int bad;
        json_t *out = profile_resolved(r, json_array_get(hs, i), p, &bad);
        if (bad) return -1;
        if (out) json_array_set_new(hs, i, out);
    }
    return 0;
}

/* A search or comparison naming a stored profile (routes.c left it
 * unprepared): the description in its place, then prepared here as
 * routes.c prepares the others. 1 when answered. */
static int search_resolve_profile(struct srv_req *r)
{
    int compare = r->route == ROUTE_COMPARE;
    json_t *in = json_loads(r->input, 0, NULL);
    if (!in) {
        srv_answer_problem(r, 503, "Service Unavailable", "out of memory");
        srv_http_resume(r);
        return 1;
    }
    if (compare ? compare_profiles(r, in) : resolve_profile(r, in, "/hardware")) {
        json_decref(in);
        srv_http_resume(r);
        return 1;
    }
    api_status st;
    api_status_init(&st);
    int rc = srv_prepare_search(r, in, &st);
    json_decref(in);
    r->profile_pending = 0;
    if (rc) {
        srv_answer_status(r, &st);
        srv_http_resume(r);
        return 1;
    }
    return 0;
}

/* POST /calibrate's fitted description, stored as a result any request
 * can name ({"hardware": {"profile": id}}): the id is the SHA-256 of
 * "profile" and the description's canonical JSON, so the same fit is one
 * profile. The answer gains profile {id, href}; nothing is promised that
 * is not stored (a store that fails leaves the answer without it). Loop. */
static void store_profile(json_t *res)
{
    json_t *hw = json_object_get(res, "hardware");
    char *canon = json_is_object(hw) ? json_dumps(hw, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    size_t n = canon ? strlen(canon) : 0;
    char *key = canon ? malloc(n + 9) : NULL;
    char id[65];
    if (!key) {
        free(canon);
        return;
    }
    memcpy(key, "profile\n", 8);
    memcpy(key + 8, canon, n + 1);
    mfu_sha256_hex(key, n + 8, id);
    free(key);
    json_t *doc = json_pack("{s:s,s:O,s:O,s:O}", "format", PROFILE_FORMAT, "hardware", hw, "summary",
                            json_object_get(res, "summary"), "parameters", json_object_get(res, "parameters"));
    json_t *cur = doc ? stored_doc(id) : NULL;
    int ok = cur != NULL; /* stored before: the same description */
    json_decref(cur);
    char *text = doc && !ok ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (text) {
        int64_t now = srv_now_ms();
        json_t *nd = json_pack("{s:{s:s}}", "profile", "hardware", id);
        char *norm = nd ? json_dumps(nd, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(nd);
        struct db_new_job nj = {id, norm ? norm : "{}", NULL,
                                json_string_value(json_object_get(hw, "name")), "profile", 0, now};
        int prc = db_put_job(jobs_app.db, &nj);
        if (prc == DB_OK) {
            ok = db_finish(jobs_app.db, id, "done", text, NULL, 0, 0.0, 0, now) == DB_OK;
        } else if (prc == DB_EOWNED) {
            /* another replica stored the same fit just now (or holds it) */
            json_t *again = stored_doc(id);
            ok = again != NULL;
            json_decref(again);
        }
        if (!ok) srv_log(SRV_LOG_ERROR, "msg=\"db store profile failed\" err=\"%s\"", db_errmsg(jobs_app.db));
        free(norm);
    }
    free(text);
    json_decref(doc);
    free(canon);
    if (ok) {
        char href[80];
        snprintf(href, sizeof href, "/profiles/%s", id);
        json_object_set_new(res, "profile", json_pack("{s:s,s:s}", "id", id, "href", href));
    }
}

struct twork {
    uv_work_t work;
    struct srv_req *r;
    char *result;       /* the measurement JSON, or NULL */
    json_t *problem;    /* or why not */
};

static void trace_work(uv_work_t *w)
{
    struct twork *tw = container_of(w, struct twork, work);
    struct srv_req *r = tw->r;
    api_status st;
    api_status_init(&st);
    json_t *m = api_trace_text(r->body, r->len, r->marker, &st);
    if (m) {
        tw->result = json_dumps(m, JSON_COMPACT);
        json_decref(m);
        if (!tw->result) api_fail(&st, 503, "", "out of memory");
    }
    if (!tw->result) {
        if (!st.status) api_fail(&st, 422, "", "the trace cannot be read");
        tw->problem = api_problem_json(&st);
    }
}

/* Loop thread: store the measurement, then answer 201 (nothing is
 * acknowledged before it is in the database). */
static void trace_after(uv_work_t *w, int status)
{
    struct twork *tw = container_of(w, struct twork, work);
    struct srv_req *r = tw->r;
    if (status == UV_ECANCELED) {
        jobs_answer_overloaded(r, "the server is shutting down");
    } else if (!tw->result) {
        json_t *p = tw->problem;
        int code = (int)json_integer_value(json_object_get(p, "status"));
        tw->problem = NULL;
        srv_answer_json(r, code >= 400 && code <= 599 ? code : 422, p);
    } else {
        int64_t now = srv_now_ms();
        json_t *m = json_loads(tw->result, 0, NULL);
        json_t *dev = json_array_get(json_object_get(m, "devices"), 0);
        json_t *nd = json_pack("{s:{s:I,s:s}}", "trace", "bytes", (json_int_t)r->len, "marker",
                               r->marker[0] ? r->marker : "ProfilerStep#");
        char *norm = nd ? json_dumps(nd, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(nd);
        struct db_new_job nj = {r->id, norm ? norm : "{}", NULL, json_is_string(dev) ? json_string_value(dev) : NULL,
                                "trace", 1, now};
        int ok = db_put_job(jobs_app.db, &nj) == DB_OK &&
                 db_finish(jobs_app.db, r->id, "done", tw->result, NULL, 0, 0.0, 0, now) == DB_OK;
        free(norm);
        json_decref(m);
        if (!ok) {
            srv_log(SRV_LOG_ERROR, "msg=\"db store trace failed\" err=\"%s\"", db_errmsg(jobs_app.db));
            jobs_answer_overloaded(r, "the trace could not be stored; retry later");
        } else {
            memset(&r->view, 0, sizeof r->view);
            memcpy(r->view.id, r->id, 65);
            r->view.status = "done";
            r->view.progress = 1.0;
            r->view.created_ms = r->view.started_ms = r->view.finished_ms = now;
            r->view.result = tw->result;
            tw->result = NULL;
            jobs_attach_entry(r);
            jobs_answer_view(r, 201);
        }
    }
    srv_http_resume(r);
    free(tw->result);
    json_decref(tw->problem);
    free(tw);
    jobs_app.n_roofline--;
    jobs_work_ended();
}

static void cmd_traces(struct srv_req *r)
{
    if (answer_from_rcache(r, 1)) return;
    struct db_row row;
    int rc = db_get(jobs_app.db, r->id, 1, &row);
    if (rc == DB_OK && !strcmp(row.status, "done")) {
        answer_done_row(r, &row);
        return;
    }
    if (rc == DB_OK || rc == DB_ECORRUPT) db_row_fini(&row); /* corrupt: measured again below */
    struct twork *tw = calloc(1, sizeof *tw);
    if (tw) tw->r = r;
    jobs_pool_start(r, tw, tw ? &tw->work : NULL, trace_work, trace_after);
}

static void cmd_result(struct srv_req *r);

/* A stored body that failed its checksum (issue 14 item 5): never served.
 * A search or comparison runs again from its stored input (answered like a
 * new job: 202, or waited on); an uploaded trace, which cannot be measured
 * again without its bytes, becomes a failed row saying so. Takes the row. */
static void recover_corrupt(struct srv_req *r, struct db_row *row, int may_wait)
{
    srv_log(SRV_LOG_ERROR, "msg=\"stored result failed its checksum; not served\" id=%.12s", r->id);
    /* an uploaded trace or a stored profile: nothing to run again */
    int profile = row->request && !strncmp(row->request, "{\"profile\"", 10);
    int trace = profile || (row->request && !strncmp(row->request, "{\"trace\"", 8));
    int64_t created = row->created_ms;
    db_row_fini(row);
    if (trace) {
        const char *why = profile ? "the stored hardware profile was corrupted; calibrate again (POST /calibrate)"
                                  : "the stored trace measurement was corrupted; upload the trace again";
        api_status st;
        api_status_init(&st);
        api_fail(&st, 500, "", "%s", why);
        json_t *p = api_problem_json(&st);
        char *e = p ? json_dumps(p, JSON_COMPACT) : NULL;
        json_decref(p);
        if (e) db_finish(jobs_app.db, r->id, "failed", NULL, e, 0, 0.0, 0, srv_now_ms());
        free(e);
        srv_answer_problem(r, 500, "Internal Server Error", why);
        srv_http_resume(r);
        return;
    }
    char *input = NULL;
    struct job *j = NULL;
    if (db_reset(jobs_app.db, r->id, &input) == DB_OK) j = jobs_start(r->id, input, created, NULL, NULL);
    free(input);
    if (!j) {
        srv_answer_problem(r, 500, "Internal Server Error", "a corrupted stored result could not be recomputed");
        srv_http_resume(r);
        return;
    }
    if (!may_wait) r->prefer_async = 1;
    jobs_answer_or_wait(r, j);
}

/* A search another replica holds: its row as it stands now, 200 when
 * done, else 202 (the client polls /results/{id}, answered by any
 * replica). */
static void answer_owned_elsewhere(struct srv_req *r)
{
    struct db_row row;
    int rc = db_get(jobs_app.db, r->id, 1, &row);
    srv_metrics_job_deduplicated();
    if (rc == DB_OK && !strcmp(row.status, "done")) {
        answer_done_row(r, &row);
        return;
    }
    if (rc == DB_OK && !strcmp(row.status, "failed")) {
        jobs_answer_failed(r, row.error);
        db_row_fini(&row);
    } else if (rc == DB_OK) {
        jobs_view_from_row(&r->view, &row);
        db_row_fini(&row);
        jobs_answer_view(r, 202);
    } else {
        if (rc == DB_ECORRUPT) db_row_fini(&row);
        jobs_answer_overloaded(r, "the database cannot be read; retry later");
    }
    srv_http_resume(r);
}

/* A search this replica knows: running here, done in the memory cache or
 * the store, corrupt, or a store that cannot be read. 1 when answered;
 * else *created is the row's creation time (now when there is none) and
 * *rc db_get's answer. */
static int search_known(struct srv_req *r, int64_t *created, int *rc)
{
    struct job *j = jobs_find(r->id);
    if (j) {
        srv_metrics_cache(0);
        srv_metrics_job_deduplicated();
        jobs_answer_or_wait(r, j);
        return 1;
    }
    if (answer_from_rcache(r, 1)) {
        srv_metrics_cache(1);
        return 1;
    }
    struct db_row row;
    *rc = db_get(jobs_app.db, r->id, 1, &row);
    if (*rc == DB_OK && strcmp(row.status, "done") == 0) {
        srv_metrics_cache(1);
        answer_done_row(r, &row);
        return 1;
    }
    if (*rc == DB_ECORRUPT) {
        recover_corrupt(r, &row, 1);
        return 1;
    }
    *created = *rc == DB_OK ? row.created_ms : srv_now_ms();
    if (*rc == DB_OK) db_row_fini(&row);
    if (*rc != DB_OK && *rc != DB_ENOTFOUND) {
        /* not acknowledged: the client retries (a database restarting) */
        srv_log(SRV_LOG_ERROR, "msg=\"db get failed\" err=\"%s\"", db_errmsg(jobs_app.db));
        jobs_answer_overloaded(r, "the database cannot be read; retry later");
        srv_http_resume(r);
        return 1;
    }
    return 0;
}

/* A new job refused (not acknowledged: 503), or a held outcome answered.
 * 1 when answered. */
static int search_refused(struct srv_req *r)
{
    if (!atomic_load(&jobs_app.file_ok)) {
        jobs_answer_overloaded(r, "the database file was deleted or replaced while open; restart mfud");
        srv_http_resume(r);
        return 1;
    }
    if (jobs_held_find(r->id)) {
        /* finished and held: its answer, not a second run */
        r->route = ROUTE_RESULT;
        cmd_result(r);
        return 1;
    }
    if (!atomic_load(&jobs_app.store_ok)) {
        jobs_answer_overloaded(r, "the database cannot be written (disk full?); results are held in memory; retry later");
        srv_http_resume(r);
        return 1;
    }
    if (jobs_app.n_active >= jobs_app.cfg->queue_limit) {
        jobs_answer_overloaded(r, "the job queue is full; retry later");
        srv_http_resume(r);
        return 1;
    }
    return 0;
}

/* measured.trace by id: the stored measurement goes into the input. 1
 * when answered (an unknown trace). */
static int search_with_traces(struct srv_req *r)
{
    if (r->route != ROUTE_SEARCH || !strstr(r->input, "\"trace\"")) return 0;
    json_t *in = json_loads(r->input, 0, NULL);
    int bad = in ? resolve_traces(r, in) : 0;
    char *s = in && !bad ? json_dumps(in, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(in);
    if (bad) {
        srv_http_resume(r);
        return 1;
    }
    if (s) {
        free(r->input);
        r->input = s;
        /* the stored measurement changed the input: the job parses it */
        api_prepared_free(r->prep);
        r->prep = NULL;
    }
    return 0;
}

static void cmd_search(struct srv_req *r)
{
    int64_t created = 0;
    int rc = DB_ENOTFOUND;
    if (r->profile_pending && search_resolve_profile(r)) return;
    if (search_known(r, &created, &rc)) return;
    srv_metrics_cache(0);
    if (search_refused(r) || search_with_traces(r)) return;
    struct db_new_job nj = {r->id, r->normalized, r->input, r->model, r->hardware, r->devices,
                            srv_now_ms()};
    int prc = db_put_job(jobs_app.db, &nj);
    if (prc == DB_EOWNED) {
        /* another replica runs it (or has just finished it): answered
         * from its row, run nowhere else (docs/storage.md) */
        answer_owned_elsewhere(r);
        return;
    }
    if (prc != DB_OK) {
        /* not acknowledged: the client may retry (a full disk may free) */
        srv_log(SRV_LOG_ERROR, "msg=\"db put failed\" err=\"%s\"", db_errmsg(jobs_app.db));
        jobs_answer_overloaded(r, db_shared(jobs_app.db) ? "the database cannot be written; retry later"
                                                : "the database cannot be written (disk full?); retry later");
        srv_http_resume(r);
        return;
    }
    if (rc == DB_ENOTFOUND) created = nj.now_ms;
    struct api_prepared *prep = r->prep; /* the job takes it */
    r->prep = NULL;
    struct job *j = jobs_start(r->id, r->input, created,
                              r->route == ROUTE_COMPARE ? known_variants(r->normalized) : NULL, prep);
    if (!j) {
        srv_answer_problem(r, 500, "Internal Server Error", "could not start the job");
        srv_http_resume(r);
        return;
    }
    jobs_answer_or_wait(r, j);
}

static void cmd_result(struct srv_req *r)
{
    struct job *j = jobs_find(r->id);
    if (j) {
        jobs_view_from_job(&r->view, j);
        jobs_answer_view(r, 200);
        srv_http_resume(r);
        return;
    }
    struct held *h = jobs_held_find(r->id);
    struct srv_rentry *cached = h ? srv_rcache_get(r->id, 0) : NULL;
    if (cached) srv_rcache_unref(cached); /* only whether it is there */
    if (h && !cached) {
        /* finished, not yet written: the held copy */
        memset(&r->view, 0, sizeof r->view);
        memcpy(r->view.id, h->id, 65);
        r->view.status = strcmp(h->outcome, "done") ? "failed" : "done";
        r->view.progress = 1.0;
        r->view.evaluated = h->evaluated;
        r->view.created_ms = h->created_ms;
        r->view.started_ms = h->started_ms;
        r->view.finished_ms = h->finished_ms;
        r->view.result = h->result ? strdup(h->result) : NULL;
        r->view.error = h->error ? strdup(h->error) : NULL;
        jobs_answer_view(r, 200);
        srv_http_resume(r);
        return;
    }
    /* Cached since the HTTP thread looked (or it raced the insertion). */
    if (answer_from_rcache(r, 0)) return;
    struct db_row row;
    int rc = db_get(jobs_app.db, r->id, 1, &row);
    if (rc == DB_ECORRUPT) {
        recover_corrupt(r, &row, 0);
        return;
    }
    if (rc == DB_ENOTFOUND) {
        srv_answer_problem(r, 404, "Not Found", "no result with this id");
    } else if (rc != DB_OK) {
        jobs_answer_overloaded(r, "the database cannot be read; retry later");
    } else {
        jobs_touch(r->id, 0);
        jobs_view_from_row(&r->view, &row);
        db_row_fini(&row);
        jobs_attach_entry(r);
        jobs_answer_view(r, 200);
    }
    srv_http_resume(r);
}

struct list_ctx {
    json_t *items;
    int n;
    int64_t last_ms;
    char last_id[65];
};

static void list_row(void *ctx, const struct db_row *row)
{
    struct list_ctx *lc = ctx;
    char t[80];
    json_t *it = json_object();
    if (!it) return;
    json_object_set_new(it, "id", json_string(row->id));
    const char *status = jobs_static_status(row->status);
    struct job *j = jobs_find(row->id);
    if (j && atomic_load(&j->started_ms)) status = "running";
    json_object_set_new(it, "status", json_string(status));
    json_object_set_new(it, "model", row->model ? json_string(row->model) : json_null());
    json_object_set_new(it, "hardware", row->hardware ? json_string(row->hardware) : json_null());
    json_object_set_new(it, "devices", json_integer(row->devices));
    json_object_set_new(it, "best_mfu", row->has_best_mfu ? json_real(row->best_mfu) : json_null());
    json_object_set_new(it, "evaluated", json_integer(row->evaluated));
    json_object_set_new(it, "hits", json_integer(row->hits));
    srv_iso_time(t, sizeof t, row->created_ms);
    json_object_set_new(it, "created_at", json_string(t));
    if (row->finished_ms > 0) {
        srv_iso_time(t, sizeof t, row->finished_ms);
        json_object_set_new(it, "finished_at", json_string(t));
    } else {
        json_object_set_new(it, "finished_at", json_null());
    }
    char href[80];
    snprintf(href, sizeof href, "/results/%s", row->id);
    json_object_set_new(it, "href", json_string(href));
    json_array_append_new(lc->items, it);
    lc->n++;
    lc->last_ms = row->created_ms;
    memcpy(lc->last_id, row->id, 65);
}

static void cmd_results(struct srv_req *r)
{
    struct list_ctx lc = {json_array(), 0, 0, ""};
    int n = lc.items ? db_list(jobs_app.db, r->limit, r->offset, r->after_ms,
                               r->has_after ? r->after_id : NULL, list_row, &lc)
                     : -1;
    if (n < 0) {
        json_decref(lc.items);
        srv_answer_problem(r, 500, "Internal Server Error", "database error");
        srv_http_resume(r);
        return;
    }
    json_t *body = json_object();
    json_object_set_new(body, "items", lc.items);
    json_object_set_new(body, "limit", json_integer(r->limit));
    if (lc.n == r->limit) {
        char cur[96];
        snprintf(cur, sizeof cur, "%lld.%s", (long long)lc.last_ms, lc.last_id);
        json_object_set_new(body, "next_cursor", json_string(cur));
        char next[160];
        snprintf(next, sizeof next, "/results?limit=%d&cursor=%s", r->limit, cur);
        json_object_set_new(body, "next", json_string(next));
    }
    srv_answer_json(r, 200, body);
    srv_http_resume(r);
}


/* A calibration's runs may name a stored profile each
 * (runs[i].request.hardware or runs[i].hardware). 0, or -1 answered. */
static int calibrate_profiles(struct srv_req *r)
{
    json_t *runs = json_object_get(r->roofline_req, "runs");
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *run = json_array_get(runs, i), *rq = json_object_get(run, "request");
        char ptr[96];
        snprintf(ptr, sizeof ptr, "/runs/%zu%s/hardware", i, rq ? "/request" : "");
        if (resolve_profile(r, rq ? rq : run, ptr)) return -1;
    }
    return 0;
}

static void roofline_work(uv_work_t *w)
{
    struct rwork *rw = container_of(w, struct rwork, work);
    struct srv_req *r = rw->r;
    api_status st;
    api_status_init(&st);
    json_t *res = r->route == ROUTE_CALIBRATE ? api_calibrate(r->roofline_req, &st)
                                                : api_roofline(r->roofline_req, &st);
    if (res && r->route == ROUTE_CALIBRATE) {
        rw->res = res; /* stored as a profile, then answered, on the loop */
    } else if (res && srv_roofline_svg_answer(r, res)) {
        /* answered as SVG (Accept: image/svg+xml, server/page.c) */
    } else if (res) {
        srv_answer_json(r, 200, res);
    } else {
        if (!st.status) api_fail(&st, 500, "", "%s failed", srv_route_names[r->route]);
        srv_answer_json(r, st.status, api_problem_json(&st));
    }
}

static void roofline_after(uv_work_t *w, int status)
{
    struct rwork *rw = container_of(w, struct rwork, work);
    if (status == UV_ECANCELED) {
        jobs_answer_overloaded(rw->r, "the server is shutting down");
        json_decref(rw->res);
    } else if (rw->res) {
        store_profile(rw->res);
        srv_answer_json(rw->r, 200, rw->res);
    }
    srv_http_resume(rw->r);
    free(rw);
    jobs_app.n_roofline--;
    jobs_work_ended();
}

static void cmd_roofline(struct srv_req *r)
{
    if ((r->route == ROUTE_CALIBRATE && (resolve_traces(r, r->roofline_req) || calibrate_profiles(r))) ||
        (r->route == ROUTE_ROOFLINE && resolve_profile(r, r->roofline_req, "/hardware"))) {
        srv_http_resume(r);
        return;
    }
    struct rwork *rw = calloc(1, sizeof *rw);
    if (rw) rw->r = r;
    jobs_pool_start(r, rw, rw ? &rw->work : NULL, roofline_work, roofline_after);
}

void jobs_run_command(struct srv_req *r)
{
    if (jobs_app.stopping) {
        jobs_answer_overloaded(r, "the server is shutting down");
        srv_http_resume(r);
        return;
    }
    switch (r->route) {
    case ROUTE_SEARCH: cmd_search(r); break;
    case ROUTE_COMPARE: cmd_search(r); break; /* the job runs api_compare (work_cb) */
    case ROUTE_RESULT: cmd_result(r); break;
    case ROUTE_RESULTS: cmd_results(r); break;
    case ROUTE_ROOFLINE: cmd_roofline(r); break;
    case ROUTE_CALIBRATE: cmd_roofline(r); break; /* api_calibrate on the pool */
    case ROUTE_TRACES: cmd_traces(r); break;
    default:
        srv_answer_problem(r, 500, "Internal Server Error", "unexpected route");
        srv_http_resume(r);
    }
}
