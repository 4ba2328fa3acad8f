/* server/jobs_int.h -- inside the loop (server/jobs.c, jobs_run.c,
 * jobs_store.c, commands.c): the job table, the loop's state and what the
 * four files give one another. Nothing outside them includes it.
 *
 * server/jobs_table.c  the loop's state, the job table, answers from a
 *                    job or a row (calls none of the other rooms)
 * server/jobs.c      the loop's plumbing (the command queue, readiness),
 *                    start and stop
 * server/jobs_run.c  a job on the search pool and its outcome stored,
 *                    waiters, rows re-queued
 * server/jobs_store.c  the store's duties: accesses, held outcomes, the
 *                    once-a-second flush, a shared store's leases and
 *                    takeovers, reads on HTTP threads
 * server/commands.c  what each request asks of the loop
 *
 * DESIGN
 * The loop thread owns the database connection, the job table and the
 * waiter lists; nothing else touches them. HTTP threads hand requests over
 * through a mutex-protected queue plus uv_async_send (which coalesces, so
 * each wake-up drains the whole queue). Searches run on the libuv thread
 * pool (uv_queue_work, UV_THREADPOOL_SIZE = --workers). A search is parsed
 * once, on the HTTP thread (api_prepare_search: model, hardware, options,
 * provenance, the system with its roofline); the job takes that prepared
 * object and the worker runs it (api_search_prepared) and renders the
 * result text, so the loop only writes it to the database and answers
 * waiters. A search or comparison naming a stored hardware profile
 * (hardware: {"profile": id}) is parsed on the loop instead, once the
 * loop has read the profile from the store (srv_prepare_search). A job
 * restarted from its row after a crash, a comparison, or a
 * search whose measured trace the loop resolved from the store parses the
 * stored input instead (as the client sent it, its deadline clamped to
 * --max-search-s: the normal form's model is resolved IR and would lose
 * the model's provenance). The cache key is the normalized form's.
 *
 * With a store several replicas share (PostgreSQL, docs/storage.md), a row
 * is also owned by the replica that runs it, under a lease renewed once a
 * second (jobs_store.c); a search another replica holds is answered from
 * its row and not started here.
 *
 * A job is identified by its cache key; at most one job per key is in the
 * table, so identical requests in flight share it (they become waiters or
 * get 202). Job states: queued (in the pool's queue) -> running (a worker
 * took it) -> done | failed. The row is written as queued before the job is
 * acknowledged, so a crash loses nothing: at start every queued or running
 * row is queued again.
 *
 * SHUTDOWN
 * SIGINT/SIGTERM: stop accepting (MHD_quiesce_daemon), answer waiters with
 * 202, cancel queued work (uv_cancel) and ask running searches to stop
 * (their progress callback returns nonzero). Interrupted jobs stay queued in
 * the database and run again at the next start. When no work is left, the
 * handles are closed and the loop returns; the caller closes the database.
 */
#ifndef MFU_SERVER_JOBS_INT_H
#define MFU_SERVER_JOBS_INT_H

#include "srv.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "api.h"
#include "db.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

struct job {
    char id[65];
    char *request;               /* the request the engine runs (as received) */
    struct api_prepared *prep;   /* the same, parsed on the HTTP thread (NULL: a job
                                  * restarted from its row, or a comparison) */
    int64_t created_ms;
    atomic_llong started_ms;     /* 0 until a worker takes it */
    int started_persisted;
    atomic_ullong evaluated;
    atomic_int progress_ppm;     /* fraction * 1e6 */
    atomic_int cancel;
    uv_work_t work;
    struct srv_req *waiters;
    /* outputs of the worker */
    char *result;
    char *error;
    int error_code;
    int has_best;
    double best_mfu;
    int64_t n_evaluated;
    int cancelled;
    int64_t finished_ms;
    /* a comparison's variant searches run by the worker, stored by the loop
     * as searches of their own (each is the search its key names) */
    struct sub_result *subs;
    int n_subs;
    json_t *known;               /* a comparison's variants already stored:
                                  * {key: result text}, handed to the worker */
    /* links */
    struct job *hnext;           /* hash bucket */
    struct job *next;            /* all active jobs */
};

struct sub_result {
    char id[65];
    char *normalized, *input, *result, *model, *hardware;
    int64_t devices, evaluated;
    int has_best;
    double best_mfu;
};

struct rwork {
    uv_work_t work;
    struct srv_req *r;
    json_t *res; /* POST /calibrate's result, answered on the loop (stored first) */
};

struct held {
    struct held *next;
    char id[65];
    char outcome[8];
    char *result, *error;
    int has_best;
    double best_mfu;
    int64_t evaluated, created_ms, started_ms, finished_ms;
};

#define N_BUCKETS 1024
#define MAX_TOUCH 1024

struct jobs_app {
    const struct srv_config *cfg;
    uv_loop_t *loop;
    struct mfu_db *db;
    struct MHD_Daemon *mhd;
    uv_async_t async;
    uv_signal_t sigint, sigterm;
    uv_timer_t wait_timer, flush_timer;
    uv_mutex_t qlock;
    struct srv_req *qhead, *qtail;
    int closed;                  /* under qlock: no more submissions */
    struct job *buckets[N_BUCKETS];
    struct job *active;
    int n_active;
    atomic_int n_active_pub;     /* for /readyz from other threads */
    atomic_int db_ok, pool_ok;
    int n_roofline;
    struct srv_req *waiters;     /* all waiting POST /search requests */
    int stopping;
    struct db_touch touches[MAX_TOUCH];
    char touch_ids[MAX_TOUCH][65];
    size_t n_touch;
    const char *finishing_id;    /* the row db_finish is writing */
    int finishing_evicted;       /* ... and its own eviction removed it */
    /* finished jobs whose outcome could not be written (disk full, file
     * size limit: issue 14 items 1 and 2), oldest first: kept in memory,
     * answered from here, written again every second */
    struct held *held;
    int n_held;
    atomic_int store_ok;         /* 0 while some outcome is held */
    atomic_int file_ok;          /* 0 once the database file was deleted or replaced */
    atomic_int reachable;        /* shared store: 0 while the database cannot be reached */
    uv_rwlock_t db_rw;           /* HTTP threads reading the store (db_concurrent) hold it
                                  * shared; the loop takes it to close the store */
    char store_err[160];
    void (*work_ended)(void);    /* server/jobs.c's: called when a job or a pooled
                                  * request ends (shutdown waits for the last) */
};
extern struct jobs_app jobs_app;

/* server/jobs_table.c */
unsigned jobs_bucket_of(const char *id);
struct job *jobs_find(const char *id);
void jobs_unlink(struct job *j);
void jobs_subs_free(struct job *j);
void jobs_free(struct job *j);
void jobs_view_from_job(struct srv_view *v, struct job *j);
const char *jobs_static_status(const char *s);
void jobs_view_from_row(struct srv_view *v, struct db_row *row);
void jobs_attach_entry(struct srv_req *r);
void jobs_answer_view(struct srv_req *r, int code);
void jobs_answer_overloaded(struct srv_req *r, const char *detail);
void jobs_answer_failed(struct srv_req *r, const char *error);

/* A job or a pooled request ended (the loop's hook: shutdown waits). */
void jobs_work_ended(void);

/* server/jobs_run.c */
void jobs_on_wait_timer(uv_timer_t *t);
void jobs_requeue_one(void *ctx, const char *id, const char *request);
/* A synchronous request's work (w, inside the allocation `owner`) on the
 * pool: 503 when too many are in flight, 500 if it cannot queue. */
void jobs_pool_start(struct srv_req *r, void *owner, uv_work_t *w, uv_work_cb work, uv_after_work_cb after);
/* Create and start a job. The row must already be in the database. */
struct job *jobs_start(const char *id, const char *request, int64_t created_ms, json_t *known,
                       struct api_prepared *prep);
void jobs_answer_or_wait(struct srv_req *r, struct job *j);

/* server/jobs_store.c */
void jobs_flush_touches(void);
void jobs_touch(const char *id, int hit);
struct held *jobs_held_find(const char *id);
void jobs_flush_held(void);
void jobs_on_flush_timer(uv_timer_t *t);

/* server/commands.c */
void jobs_run_command(struct srv_req *r);

#endif
