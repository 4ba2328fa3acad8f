/* api/engines.c -- running the engines on a request: the roofline, the
 * search on several threads with its deadline and progress, the measured
 * run's gap, and the entry points under the out-of-memory policy. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "internal.h"
#include "jsonv.h"
#include "sha256.h"
#include "request_int.h"

/* ---- engines -------------------------------------------------------------- */


static json_t *roofline_run(json_t *request, api_status *st);

json_t *api_roofline(json_t *request, api_status *st)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(roofline_run(request, st), st, before);
}

static json_t *roofline_run(json_t *request, api_status *st)
{
    api_request r;
    if (api_parse_request(request, 0, &r, st)) {
        api_request_free(&r);
        return NULL;
    }
    /* a measured run (a step time, a trace) is of a configuration: the
     * roofline has none, and said nothing of it before (issue 14 item 12) */
    if (json_object_get(request, "measured")) {
        api_fail(st, 422, "/measured",
                 "a measured run belongs to POST /search (its measured.config names the configuration that ran); the roofline has no configuration");
        api_request_free(&r);
        return NULL;
    }
    mfu_op *ops = api_malloc(sizeof(mfu_op) * MFU_MAX_OPS);
    if (!ops) {
        api_fail(st, 503, "", "out of memory");
        api_request_free(&r);
        return NULL;
    }
    /* search options do not change the roofline, and the page sends its
     * whole search request here, so they are not refused; but they are
     * checked as POST /search would, not passed over when invalid (issue
     * 14 item 12), against devices (1 when not given; api_parse_request
     * checked their range). */
    json_t *sj = json_object_get(request, "search");
    if (sj) {
        mfu_system sys;
        mfu_search_opts o;
        double deadline;
        if (rq_system_init(&sys, &r, ops, st) || rq_parse_search(sj, &sys, &o, &deadline, st)) {
            free(ops);
            api_request_free(&r);
            return NULL;
        }
    }
    mfu_roofline roof;
    int rc = mfu_roofline_compute(&r.model, &r.hw, &r.train, ops, MFU_MAX_OPS, &roof);
    if (rc != MFU_OK) {
        api_fail_core(st, rc, "/model", "cannot be modelled");
        free(ops);
        api_request_free(&r);
        return NULL;
    }
    json_t *out = json_pack("{s:o,s:o,s:o}", "model", api_render_model(&r),
                            "hardware", api_render_hardware(&r),
                            "roofline", api_render_roofline(&r, &roof, ops));
    /* never NULL without a status (fuzz, request): json_pack fails on a
     * non-finite number, which validation is meant to rule out */
    if (!out) api_fail(st, 500, "", "result has a non-finite number");
    free(ops);
    api_request_free(&r);
    return out;
}

typedef struct deadline_ctx {
    api_progress_fn fn;     /* the caller's callback (single-threaded runs only) */
    void *ctx;
    struct timespec start;
    double deadline_s;
    atomic_int hit;         /* the deadline passed */
    atomic_int cancelled;   /* the callback asked to stop */
} deadline_ctx;

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static int progress_bridge(void *p, double frac, uint64_t evaluated)
{
    deadline_ctx *d = p;
    if (atomic_load(&d->hit) || atomic_load(&d->cancelled)) return 1;
    if (since(&d->start) > d->deadline_s) {
        atomic_store(&d->hit, 1);
        return 1;
    }
    if (d->fn && d->fn(d->ctx, frac, evaluated)) {
        atomic_store(&d->cancelled, 1);
        return 1;
    }
    return 0;
}

/* A shard's progress as the whole search's (issue 14 item 10: progress
 * and evaluated went back to 0 at every shard): shard k of the fixed
 * MFU_SEARCH_SHARDS at fraction f is (k + f) / MFU_SEARCH_SHARDS, and the
 * evaluations of the thread's finished shards are added. Only a
 * single-threaded search reports (deadline_ctx.fn), so its shards run in
 * order and both only grow. */
typedef struct shard_bridge {
    deadline_ctx *d;
    int shard;
    uint64_t done;
} shard_bridge;

static int shard_bridge_fn(void *p, double frac, uint64_t evaluated)
{
    shard_bridge *b = p;
    return progress_bridge(b->d, ((double)b->shard + frac) / MFU_SEARCH_SHARDS, b->done + evaluated);
}

/* One search thread: shards first, first + step, ... of the fixed
 * MFU_SEARCH_SHARDS, each into its own slot (merged in shard order later, so
 * the answer does not depend on the thread count). */
typedef struct search_thread {
    const mfu_system *sys;
    const mfu_search_opts *o;
    deadline_ctx *d;
    int first, step;
    mfu_search_result *parts; /* MFU_SEARCH_SHARDS results, top_k entries each */
    int ok;
} search_thread;

static void *search_thread_main(void *p)
{
    search_thread *t = p;
    mfu_op *ops = api_malloc(sizeof(mfu_op) * MFU_SCRATCH_OPS);
    /* the shape cache (19 MB), kept across this thread's shards (one
     * system): emptied by clearing its index alone, so only the entries a
     * search fills are ever written. calloc zeroed the whole block, and
     * after the first search glibc serves a block this size from the heap
     * (its mmap threshold rises to a freed mapping's size), so every later
     * search paid a 19 MB memset: a tenth of a small search's time */
    void *cache = api_malloc(mfu_search_cache_bytes());
    t->ok = ops && cache;
    mfu_search_scratch sc0 = {ops, cache, NULL};
    if (t->ok) mfu_search_cache_clear(&sc0);
    shard_bridge br = {t->d, 0, 0};
    for (int k = t->first; t->ok && k < MFU_SEARCH_SHARDS; k += t->step) {
        if (atomic_load(&t->d->hit) || atomic_load(&t->d->cancelled)) break;
        /* the core asks progress_bridge only every 16384 evaluations of a
         * shard; with many small shards (a huge but mostly indivisible space)
         * the deadline is also checked between shards */
        if (since(&t->d->start) > t->d->deadline_s) {
            atomic_store(&t->d->hit, 1);
            break;
        }
        mfu_search_scratch sc = {ops, cache, NULL};
        br.shard = k;
        mfu_search_shard(t->sys, t->o, &sc, k, shard_bridge_fn, &br, &t->parts[k]);
        br.done += t->parts[k].stats.evaluated;
    }
    free(cache);
    free(ops);
    return NULL;
}

/* The configuration a search.fix pins when it fixes the layout: the dense
 * axes it leaves out are 1 and the product is the device count. Switches
 * it leaves out take their plainest value (sp with tp, no ZeRO, 1F1B or
 * interleaved when vpp > 1, mbs 1, no recompute). */
static int pinned_config(json_t *fix, const mfu_system *sys, const mfu_search_opts *o, mfu_config *c)
{
    if (!json_is_object(fix)) return 0;
    memset(c, 0, sizeof *c);
    int64_t prod = 1;
    int any = 0;
    for (int a = 0; a < MFU_AX_COUNT; a++) {
        c->ax[a] = o->n_allowed[a] == 1 ? o->allowed[a][0] : 1;
        any |= json_object_get(fix, rq_axes[a]) != NULL;
        if (a != MFU_AX_EP) prod *= c->ax[a];
    }
    if (!any || prod != sys->devices) return 0;
    c->sp = o->fix_sp >= 0 ? o->fix_sp : c->ax[MFU_AX_TP] > 1;
    c->zero = o->fix_zero >= 0 ? o->fix_zero : 0;
    c->etp = o->fix_etp > 0 ? o->fix_etp : 1;
    c->vpp = o->fix_vpp > 0 ? o->fix_vpp : o->fix_schedule == MFU_SCHED_DUALPIPEV ? 2 : 1;
    c->schedule = o->fix_schedule >= 0 ? (mfu_schedule)o->fix_schedule
                                       : rq_default_schedule(sys, c, admitted_of(o));
    c->mbs = o->fix_mbs > 0 ? o->fix_mbs : 1;
    c->recompute = o->fix_recompute >= 0 ? o->fix_recompute : MFU_RC_NONE;
    c->recompute_layers = -1;
    c->tp_overlap = o->tp_overlap;
    c->ep_overlap = o->ep_overlap;
    int64_t per = c->mbs * c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
    c->grad_accum = per > 0 && o->batch_max_seqs / per > 0 ? o->batch_max_seqs / per : 1;
    if (mfu_config_default_split(sys, c) != MFU_OK) c->split = MFU_SPLIT_EVEN;
    rq_default_sp_etp(sys, c, admitted_of(o), 1, o->fix_etp > 0);
    if (o->fix_zero < 0) rq_default_zero(sys, c, admitted_of(o));
    return 1;
}

int api_request_measured(json_t *request, api_request *r, mfu_system *sys, mfu_config *c,
                         double *step_time_s, mfu_op *ops, api_status *st)
{
    if (api_parse_request(request, 1, r, st)) return -1;
    if (rq_system_init(sys, r, ops, st)) return -1;
    json_t *meas = json_object_get(request, "measured");
    if (!json_is_object(meas)) {
        api_fail(st, 422, "/measured", "required object {config, step_time_s} is missing");
        return -1;
    }
    if (rq_parse_measured(meas, 1, step_time_s, NULL, st)) return -1;
    if (rq_parse_config(json_object_get(meas, "config"), "/measured/config", sys, c, MFU_FW_ALL, st)) return -1;
    c->tp_overlap = r->tp_overlap;
    c->ep_overlap = r->ep_overlap;
    (void)api_infer_measured(sys, c, json_object_get(meas, "config"), MFU_FW_ALL, ops);
    return 0;
}

json_t *api_search(json_t *request, api_status *st, api_progress_fn fn, void *ctx)
{
    return api_search_mt(request, st, fn, ctx, 1);
}

static json_t *search_mt_run(json_t *request, api_status *st, api_progress_fn fn, void *ctx, int threads);

json_t *api_search_mt(json_t *request, api_status *st, api_progress_fn fn, void *ctx, int threads)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(search_mt_run(request, st, fn, ctx, threads), st, before);
}

/* Run a prepared search and render its answer. */
/* The search on `threads` threads (thread 0 is the caller's), each into its
 * shards' slots of parts. 0, or -1 when a thread ran out of memory. */
static int run_threads(const mfu_system *sys, const mfu_search_opts *o, deadline_ctx *d, int threads,
                       mfu_search_result *parts)
{
    search_thread th[MFU_SEARCH_SHARDS];
    pthread_t tid[MFU_SEARCH_SHARDS];
    int started[MFU_SEARCH_SHARDS] = {0};
    for (int t = 0; t < threads; t++) {
        th[t] = (search_thread){sys, o, d, t, threads, parts, 0};
        /* thread 0 runs on the calling thread */
        if (t > 0) started[t] = pthread_create(&tid[t], NULL, search_thread_main, &th[t]) == 0;
    }
    search_thread_main(&th[0]);
    int lost = !th[0].ok;
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else search_thread_main(&th[t]); /* no thread: run its shards here */
        lost |= !th[t].ok;
    }
    return lost ? -1 : 0;
}

/* "search": what was searched, how far, and why it stopped. */
static json_t *render_search_stats(const mfu_search_result *res, const mfu_search_opts *o, deadline_ctx *d,
                                   double elapsed, int n_ties)
{
    json_t *pruned = json_object();
    for (int i = 0; i < MFU_PRUNE_COUNT; i++)
        json_object_set_new(pruned, mfu_prune_names[i], json_integer((json_int_t)res->stats.pruned[i]));
    /* shape inventories built depend on the thread count: not reported, so
     * the answer stays the same for any */
    json_t *stats = json_pack("{s:I,s:I,s:I,s:I,s:o,s:f,s:b,s:s,s:s}", "space_size",
                              (json_int_t)res->stats.space_size, "evaluated", (json_int_t)res->stats.evaluated,
                              "fully_evaluated", (json_int_t)res->stats.fully_evaluated, "feasible",
                              (json_int_t)res->stats.feasible, "pruned", pruned, "elapsed_s", elapsed,
                              "truncated", res->stats.truncated, "truncated_by",
                              !res->stats.truncated ? "" : atomic_load(&d->hit) ? "deadline_s" :
                              atomic_load(&d->cancelled) ? "cancelled" : "max_evaluations",
                              "rank_by", rq_ranks[o->rank_by_bound]);
    json_object_set_new(stats, "ties_with_best", json_integer(n_ties));
    json_object_set_new(stats, "distinct", json_string(rq_distinct[o->distinct]));
    return stats;
}

/* The measured configuration's gap, a fully pinned plan that gives
 * nothing, or the closest miss when nothing fits. */
static void add_search_notes(json_t *out, struct api_prepared *p, json_t *request, json_t *meas, const mfu_config *mc,
                             double meas_t, json_t *meas_trace, const mfu_search_result *res, deadline_ctx *d,
                             api_status *st)
{
    api_request *r = &p->r;
    mfu_system *sys = &p->sys;
    mfu_search_opts *o = &p->o;
    if (meas) {
        mfu_eval ev;
        if (mfu_evaluate(sys, mc, p->ops, &ev) == MFU_OK)
            json_object_set_new(out, "measured", api_render_measured(sys, mc, &ev, meas_t, p->ops, meas_trace));
        else
            api_fail(st, 500, "/measured/config", "could not be evaluated");
    }
    /* a plan pinned on every axis that gives nothing answers why, with
     * that configuration evaluated (issue 9 item 11) */
    mfu_config pc;
    if (res->n == 0 && pinned_config(json_object_get(json_object_get(request, "search"), "fix"), sys, o, &pc))
        json_object_set_new(out, "pinned", api_render_pinned(sys, o, &pc, p->ops));
    /* nothing fits: the closest miss and the fewest devices that fit
     * (issue 11 item 3), within what is left of the deadline (at least 1 s) */
    if (res->n == 0 && !res->stats.truncated) {
        double left = p->deadline - since(&d->start);
        json_object_set_new(out, "no_fit", api_plan_no_fit(r, sys, o, &res->stats, p->ops, left > 1.0 ? left : 1.0));
    }
}

static json_t *search_from(struct api_prepared *p, json_t *request, api_status *st, api_progress_fn fn,
                           void *ctx, int threads)
{
    api_request *r = &p->r;
    mfu_system *sys = &p->sys;
    mfu_search_opts *o = &p->o;
    mfu_op *ops = p->ops;
    json_t *out = NULL;
    mfu_ranked *top = NULL, *parts_top = NULL;
    o->tp_overlap = r->tp_overlap;
    o->ep_overlap = r->ep_overlap;
    mfu_config mc;
    unsigned inferred = 0;
    json_t *meas = json_object_get(request, "measured");
    double meas_t = 0;
    json_t *meas_trace = NULL;
    if (meas) {
        if (rq_parse_measured(meas, 1, &meas_t, &meas_trace, st)) goto fail;
        if (rq_parse_config(json_object_get(meas, "config"), "/measured/config", sys, &mc, admitted_of(o), st))
            goto fail;
        mc.tp_overlap = r->tp_overlap;
        mc.ep_overlap = r->ep_overlap;
        inferred = api_infer_measured(sys, &mc, json_object_get(meas, "config"), admitted_of(o), ops);
    }
    if (threads < 1) threads = 1;
    if (threads > MFU_SEARCH_SHARDS) threads = MFU_SEARCH_SHARDS;
    top = api_malloc(sizeof *top * (size_t)o->top_k);
    parts_top = api_malloc(sizeof *parts_top * (size_t)o->top_k * MFU_SEARCH_SHARDS);
    if (!top || !parts_top) { api_fail(st, 503, "", "out of memory for the ranking"); goto fail; }
    mfu_search_result res = {0, top, {0}};
    mfu_search_result parts[MFU_SEARCH_SHARDS];
    for (int k = 0; k < MFU_SEARCH_SHARDS; k++) {
        memset(&parts[k], 0, sizeof parts[k]);
        parts[k].top = parts_top + (size_t)k * (size_t)o->top_k;
    }
    deadline_ctx d = {threads == 1 ? fn : NULL, ctx, {0, 0}, p->deadline, 0, 0};
    clock_gettime(CLOCK_MONOTONIC, &d.start);
    if (run_threads(sys, o, &d, threads, parts)) { api_fail(st, 503, "", "out of memory for the search"); goto fail; }
    for (int k = 0; k < MFU_SEARCH_SHARDS; k++) mfu_search_merge(o, &parts[k], &res);
    if (atomic_load(&d.hit) || atomic_load(&d.cancelled)) res.stats.truncated = 1;
    double elapsed = since(&d.start);
    const mfu_roofline roof = sys->roof; /* the system's: one roofline per search */
    json_t *configs = json_array();
    double u = r->hw.has_profile ? r->hw.eff.uncertainty : 0.0;
    for (int i = 0; i < res.n; i++) {
        json_t *cj = api_render_config(sys, &top[i].config, &top[i].eval, i + 1,
                                       i < API_STAGES_RANKS ? ops : NULL);
        json_t *cost = api_plan_cost(r, &top[i].eval, u);
        if (cost) json_object_set_new(cj, "time_to_train", cost);
        json_array_append_new(configs, cj);
    }
    /* ties (F-TIME-INTERVAL): configurations whose expected intervals
     * overlap cannot be told apart; tiers name them */
    json_t *ties = api_plan_ranking(configs, top, res.n, u, o->distinct == MFU_DISTINCT_LAYOUT);
    int n_ties = 0;
    for (size_t i = 0; i < json_array_size(configs); i++)
        n_ties += json_is_true(json_object_get(json_array_get(configs, i), "tie_with_best"));
    json_t *stats = render_search_stats(&res, o, &d, elapsed, n_ties);
    json_t *roof_j = api_render_roofline(r, &roof, NULL);
    out = json_pack("{s:o,s:o,s:I,s:o,s:o,s:o,s:o}", "model", api_render_model(r), "hardware",
                    api_render_hardware(r), "devices", (json_int_t)r->devices, "roofline", roof_j,
                    "configs", configs, "ties", ties, "search", stats);
    if (!out) api_fail(st, 500, "", "result has a non-finite number"); /* as api_roofline */
    else add_search_notes(out, p, request, meas, &mc, meas_t, meas_trace, &res, &d, st);
    json_t *mo = out ? json_object_get(out, "measured") : NULL;
    if (mo && inferred) json_object_set_new(mo, "inferred", api_inferred_json(inferred));
fail:
    free(top);
    free(parts_top);
    return out;
}

static json_t *search_mt_run(json_t *request, api_status *st, api_progress_fn fn, void *ctx, int threads)
{
    struct api_prepared p;
    json_t *out = rq_prepare(request, 1, &p, st) ? NULL : search_from(&p, request, st, fn, ctx, threads);
    rq_prepared_fini(&p);
    return out;
}

static struct api_prepared *prepare_search_run(json_t *request, api_status *st)
{
    struct api_prepared *p = api_malloc(sizeof *p);
    if (!p) {
        api_fail(st, 503, "", "out of memory");
        return NULL;
    }
    if (rq_prepare(request, 1, p, st) || !(p->normal = rq_normal_form(p, request, st))) {
        rq_prepared_fini(p);
        free(p);
        return NULL;
    }
    p->request = json_incref(request);
    return p;
}

api_prepared *api_prepare_search(json_t *request, api_status *st)
{
    unsigned long before = api_oom_events();
    struct api_prepared *p = prepare_search_run(request, st);
    if (api_oom_events() != before || (!p && !st->status)) {
        api_prepared_free(p);
        api_oom_policy(NULL, st, before);
        return NULL;
    }
    return p;
}

json_t *api_prepared_normal(api_prepared *p) { return p->normal; }

void api_prepared_set_deadline(api_prepared *p, double deadline_s) { p->deadline = deadline_s; }

json_t *api_search_prepared(api_prepared *p, api_status *st, api_progress_fn fn, void *ctx, int threads)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(search_from(p, p->request, st, fn, ctx, threads), st, before);
}

void api_prepared_free(api_prepared *p)
{
    if (!p) return;
    rq_prepared_fini(p);
    free(p);
}
