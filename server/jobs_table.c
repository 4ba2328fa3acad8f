/* server/jobs_table.c -- the loop's state, the job table and the answers
 * built from a job or a row: the room the others stand on, calling none of
 * them (server/jobs_int.h). */
#include "jobs_int.h"

struct jobs_app jobs_app;

/* ---- the job table ----------------------------------------------------- */

unsigned jobs_bucket_of(const char *id)
{
    unsigned h = 0;
    for (int i = 0; i < 8 && id[i]; i++) h = h * 16 + (unsigned)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
    return h % N_BUCKETS;
}

struct job *jobs_find(const char *id)
{
    for (struct job *j = jobs_app.buckets[jobs_bucket_of(id)]; j; j = j->hnext)
        if (strcmp(j->id, id) == 0) return j;
    return NULL;
}

void jobs_unlink(struct job *j)
{
    struct job **pp = &jobs_app.buckets[jobs_bucket_of(j->id)];
    while (*pp && *pp != j) pp = &(*pp)->hnext;
    if (*pp) *pp = j->hnext;
    pp = &jobs_app.active;
    while (*pp && *pp != j) pp = &(*pp)->next;
    if (*pp) *pp = j->next;
    jobs_app.n_active--;
    atomic_store(&jobs_app.n_active_pub, jobs_app.n_active);
}

void jobs_subs_free(struct job *j)
{
    for (int i = 0; i < j->n_subs; i++) {
        struct sub_result *s = &j->subs[i];
        free(s->normalized);
        free(s->input);
        free(s->result);
        free(s->model);
        free(s->hardware);
    }
    free(j->subs);
    j->subs = NULL;
    j->n_subs = 0;
}

void jobs_free(struct job *j)
{
    if (!j) return;
    jobs_subs_free(j);
    json_decref(j->known);
    api_prepared_free(j->prep);
    free(j->request);
    free(j->result);
    free(j->error);
    free(j);
}

/* ---- answers ----------------------------------------------------------- */

void jobs_view_from_job(struct srv_view *v, struct job *j)
{
    memset(v, 0, sizeof *v);
    memcpy(v->id, j->id, 65);
    int64_t started = atomic_load(&j->started_ms);
    v->status = started ? "running" : "queued";
    v->progress = atomic_load(&j->progress_ppm) / 1e6;
    v->evaluated = (int64_t)atomic_load(&j->evaluated);
    v->created_ms = j->created_ms;
    v->started_ms = started;
}

const char *jobs_static_status(const char *s)
{
    if (strcmp(s, "done") == 0) return "done";
    if (strcmp(s, "failed") == 0) return "failed";
    if (strcmp(s, "running") == 0) return "running";
    return "queued";
}

/* Takes the row's result and error strings. */
void jobs_view_from_row(struct srv_view *v, struct db_row *row)
{
    memset(v, 0, sizeof *v);
    memcpy(v->id, row->id, 65);
    v->status = jobs_static_status(row->status);
    v->progress = strcmp(v->status, "done") == 0 ? 1.0 : 0.0;
    v->evaluated = row->evaluated;
    v->created_ms = row->created_ms;
    v->started_ms = row->started_ms;
    v->finished_ms = row->finished_ms;
    v->result = row->result;
    v->error = row->error;
    row->result = row->error = NULL;
}

/* A done view read from the database: render it once into the memory
 * cache and answer from the entry (the view's own copy is dropped). */
void jobs_attach_entry(struct srv_req *r)
{
    if (strcmp(r->view.status, "done") != 0 || !r->view.result) return;
    struct srv_rentry *e = srv_rcache_put(&r->view, r->view.result);
    if (!e) return;
    r->entry = e;
    free(r->view.result);
    r->view.result = NULL;
}

void jobs_answer_view(struct srv_req *r, int code)
{
    r->answer = ANS_VIEW;
    r->out_code = code;
    r->out_retry_after = code == 202 ? 1 : 0;
}

void jobs_answer_overloaded(struct srv_req *r, const char *detail)
{
    srv_answer_problem(r, 503, "Service Unavailable", detail);
    r->out_retry_after = 5;
}

/* A POST /search whose job failed: the stored problem, with its status. */
void jobs_answer_failed(struct srv_req *r, const char *error)
{
    json_t *p = error ? json_loads(error, 0, NULL) : NULL;
    int code = p ? (int)json_integer_value(json_object_get(p, "status")) : 500;
    if (code < 400 || code > 599) code = 500;
    if (!p) {
        srv_answer_problem(r, 500, "Search failed", "the search failed");
        return;
    }
    srv_answer_json(r, code, p);
}

/* A job or a pooled request ended: the loop's hook (shutdown waits for
 * the last one), set by server/jobs.c. */
void jobs_work_ended(void)
{
    if (jobs_app.work_ended) jobs_app.work_ended();
}
