/* api/trace_measure.c -- a read trace measured step by step: each GPU
 * event's step, busy and idle time, communication exposed per kind and
 * axis, achieved GEMM FLOP/s by shape (api/trace_int.h). */
#include "trace_int.h"

/* ---- measurement ---------------------------------------------------------- */

static int cmp_launch(const void *a, const void *b)
{
    const launch *x = a, *y = b;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int cmp_step(const void *a, const void *b)
{
    const step *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

typedef struct iv { double a, b; } iv;

static int cmp_iv(const void *x, const void *y)
{
    const iv *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a ? 1 : (p->b < q->b ? -1 : p->b > q->b);
}

/* Merge sorted intervals in place; returns the count. */
static size_t merge(iv *v, size_t n)
{
    if (!n) return 0;
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].a <= v[k].b) {
            if (v[i].b > v[k].b) v[k].b = v[i].b;
        } else {
            v[++k] = v[i];
        }
    }
    return k + 1;
}

static double total(const iv *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i].b - v[i].a;
    return s;
}

/* Length of [a, b) covered by the merged set m. */
static double covered(const iv *m, size_t n, double a, double b)
{
    /* first interval ending after a */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m[mid].b <= a) lo = mid + 1;
        else hi = mid;
    }
    double s = 0;
    for (size_t i = lo; i < n && m[i].a < b; i++) {
        double x = m[i].a > a ? m[i].a : a, y = m[i].b < b ? m[i].b : b;
        if (y > x) s += y - x;
    }
    return s;
}

static int is_comm(int c) { return c >= TR_ALLREDUCE && c <= TR_OTHER_COMM; }
static int is_compute(int c) { return c <= TR_OTHER_COMPUTE; }

static int cmp_gemm(const void *a, const void *b)
{
    const gemm_op *x = a, *y = b;
    return x->ext < y->ext ? -1 : x->ext > y->ext;
}

/* The matrix-product op (with shapes) that launched kernel e, or -1: the
 * op whose External id the kernel carries (Kineto links them so), else
 * the op whose CPU window on the launching thread holds the launch (traces
 * whose kernels carry the launch's correlation id as External id). */
static long gemm_of(const store *sto, const gpu_ev *e)
{
    if (e->cat != TR_GEMM || !sto->n_gm) return -1;
    /* (an External id equal to the correlation id is the launch's own, not
     * an op's: two numberings that may collide) */
    if (e->ext >= 0 && e->ext != e->corr) {
        gemm_op key = {e->ext, 0, 0, 0, 0, 0, 0, 0};
        const gemm_op *g = bsearch(&key, sto->gm, sto->n_gm, sizeof *sto->gm, cmp_gemm);
        if (g) return (long)(g - sto->gm);
    }
    if (e->corr < 0 || !sto->n_la || !sto->gm_t) return -1;
    launch lk = {e->corr, 0, 0};
    const launch *l = bsearch(&lk, sto->la, sto->n_la, sizeof *sto->la, cmp_launch);
    if (!l) return -1;
    /* the last op on l's thread starting at or before the launch */
    size_t lo = 0, hi = sto->n_gm;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const gemm_op *g = &sto->gm[sto->gm_t[mid]];
        if (g->tid < l->tid || (g->tid == l->tid && g->ts <= l->ts)) lo = mid + 1;
        else hi = mid;
    }
    if (!lo) return -1;
    const gemm_op *g = &sto->gm[sto->gm_t[lo - 1]];
    return g->tid == l->tid && l->ts <= g->ts + g->dur ? (long)sto->gm_t[lo - 1] : -1;
}

static double gemm_flops(const gemm_op *g) { return 2.0 * g->batch * g->m * g->n * g->k; }

/* NCCL's bus-bandwidth factor of a collective over g ranks (nccl-tests
 * doc/PERFORMANCE.md): all-reduce 2 (g-1)/g, all-gather, reduce-scatter,
 * all-to-all (g-1)/g of the whole buffer, send/recv 1. */
static double bus_factor(int cat, double g)
{
    if (cat == TR_SENDRECV) return 1.0;
    if (g <= 1) return 0.0;
    return (cat == TR_ALLREDUCE ? 2.0 : 1.0) * (g - 1.0) / g;
}

/* What one step's GPU events add up to (measure_step). */
typedef struct step_acc {
    double cat_t[TR_CAT_COUNT], exposed[TR_CAT_COUNT];
    long cat_n[TR_CAT_COUNT];
    double ax_t[MFU_COMM_COUNT], ax_exp[MFU_COMM_COUNT], ax_bus[MFU_COMM_COUNT], ax_bus_t[MFU_COMM_COUNT];
    long ax_n[MFU_COMM_COUNT];
    double g_flops, g_time;
    long g_kern;
} step_acc;

/* Communication not under any compute kernel (on any stream), per kind and
 * per axis its process group names; achieved GEMM FLOP/s of the kernels
 * whose op recorded its shapes (an op's FLOPs once, its kernels' time
 * summed: split-K launches two). comp: the merged compute intervals. */
static void step_comm_and_gemms(const store *sto, const step *s, const size_t *idx, size_t n, const iv *comp,
                                size_t nc, int64_t *stamp, double *op_time, step_acc *sa)
{
    for (size_t i = 0; i < n; i++) {
        const gpu_ev *e = &sto->ev[idx[i]];
        if (is_comm(e->cat)) {
            double x = e->dur - covered(comp, nc, e->ts, e->ts + e->dur);
            sa->exposed[e->cat] += x;
            if (e->axis >= 0) {
                sa->ax_t[e->axis] += e->dur;
                sa->ax_exp[e->axis] += x;
                sa->ax_n[e->axis]++;
                double f = bus_factor(e->cat, (double)e->group);
                if (e->bytes > 0 && f > 0 && e->dur > 0) {
                    sa->ax_bus[e->axis] += f * (double)e->bytes;
                    sa->ax_bus_t[e->axis] += e->dur;
                }
            }
        }
        long g = gemm_of(sto, e);
        if (g >= 0) {
            sa->g_time += e->dur;
            sa->g_kern++;
            if (op_time) op_time[g] += e->dur;
            if (stamp[g] != s->num) {
                stamp[g] = s->num;
                sa->g_flops += gemm_flops(&sto->gm[g]);
            }
        }
    }
}

/* The step's document. */
static json_t *step_json(const step *s, const step_acc *sa, size_t n, double span, double busy)
{
    json_t *kern = json_object();
    double comm_t = 0, comm_exp = 0;
    for (int c = 0; c < TR_CAT_COUNT; c++) {
        json_t *o = json_pack("{s:I,s:f}", "count", (json_int_t)sa->cat_n[c], "time_s", sa->cat_t[c] * 1e-6);
        if (is_comm(c)) {
            json_object_set_new(o, "exposed_s", json_real(sa->exposed[c] * 1e-6));
            json_object_set_new(o, "overlap", sa->cat_t[c] > 0 ? json_real(1.0 - sa->exposed[c] / sa->cat_t[c]) : json_null());
            comm_t += sa->cat_t[c];
            comm_exp += sa->exposed[c];
        }
        json_object_set_new(kern, api_trace_cat_names[c], o);
    }
    json_t *o = json_pack("{s:I,s:f,s:f,s:f,s:f,s:I,s:o}", "step", (json_int_t)s->num, "step_time_s",
                          s->dur * 1e-6, "gpu_span_s", span * 1e-6, "gpu_busy_s", busy * 1e-6,
                          "idle_s", (span - busy) * 1e-6, "gpu_events", (json_int_t)n, "kernels", kern);
    json_object_set_new(o, "communication", json_pack("{s:f,s:f,s:o}", "time_s", comm_t * 1e-6,
                                                      "exposed_s", comm_exp * 1e-6, "overlap",
                                                      comm_t > 0 ? json_real(1.0 - comm_exp / comm_t) : json_null()));
    json_t *axes = json_object();
    for (int a = 0; a < MFU_COMM_COUNT; a++) {
        if (!sa->ax_n[a]) continue;
        json_t *x = json_pack("{s:I,s:f,s:f}", "count", (json_int_t)sa->ax_n[a], "time_s", sa->ax_t[a] * 1e-6,
                              "exposed_s", sa->ax_exp[a] * 1e-6);
        json_object_set_new(x, "bus_bw_bytes_s", sa->ax_bus_t[a] > 0 ? json_real(sa->ax_bus[a] / (sa->ax_bus_t[a] * 1e-6))
                                                                  : json_null());
        json_object_set_new(axes, mfu_comm_names[a], x);
    }
    json_object_set_new(o, "communication_by_axis", axes);
    if (sa->g_kern)
        json_object_set_new(o, "gemm_achieved", json_pack("{s:I,s:f,s:f,s:f}", "kernels", (json_int_t)sa->g_kern,
                                                          "flops", sa->g_flops, "time_s", sa->g_time * 1e-6,
                                                          "flop_s", sa->g_time > 0 ? sa->g_flops / (sa->g_time * 1e-6) : 0.0));
    return o;
}

static json_t *measure_step(const store *sto, const step *s, const size_t *idx, size_t n, iv *scratch,
                            iv *comp, int64_t *stamp, double *op_time)
{
    double t0 = INFINITY, t1 = -INFINITY;
    step_acc acc;
    memset(&acc, 0, sizeof acc);
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        const gpu_ev *e = &sto->ev[idx[i]];
        if (e->ts < t0) t0 = e->ts;
        if (e->ts + e->dur > t1) t1 = e->ts + e->dur;
        acc.cat_t[e->cat] += e->dur;
        acc.cat_n[e->cat]++;
        scratch[i] = (iv){e->ts, e->ts + e->dur};
        if (is_compute(e->cat)) comp[nc++] = (iv){e->ts, e->ts + e->dur};
    }
    if (n) qsort(scratch, n, sizeof *scratch, cmp_iv);
    double busy = total(scratch, merge(scratch, n));
    if (nc) qsort(comp, nc, sizeof *comp, cmp_iv);
    nc = merge(comp, nc);
    step_comm_and_gemms(sto, s, idx, n, comp, nc, stamp, op_time, &acc);
    double span = n ? t1 - t0 : 0.0;
    return step_json(s, &acc, n, span, busy);
}

/* qsort has no context argument: the array the indexes point into, set
 * just before the sort (one trace is measured per call, on one thread;
 * a file-scope pointer, not shared state between requests) */
static _Thread_local const gemm_op *gm_sort_base;

static int cmp_gm_time(const void *a, const void *b)
{
    const gemm_op *x = &gm_sort_base[*(const size_t *)a], *y = &gm_sort_base[*(const size_t *)b];
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_shape(const void *a, const void *b)
{
    const gemm_op *x = a, *y = b;
    double d[4] = {x->m - y->m, x->n - y->n, x->k - y->k, x->batch - y->batch};
    for (int i = 0; i < 4; i++)
        if (d[i]) return d[i] < 0 ? -1 : 1;
    return 0;
}

typedef struct shape_acc { gemm_op g; double time, calls; } shape_acc;

static int cmp_acc_time(const void *a, const void *b)
{
    const shape_acc *x = a, *y = b;
    return x->time > y->time ? -1 : x->time < y->time;
}

/* The GEMM shapes of the averaged steps (record_shapes): calls, time,
 * achieved FLOP/s, the 20 that took longest. */
static json_t *shape_table(const store *sto, const double *op_time)
{
    size_t n = 0;
    for (size_t i = 0; i < sto->n_gm; i++) n += op_time[i] > 0;
    if (!n) return json_array();
    shape_acc *v = api_malloc(sizeof *v * n);
    if (!v) return json_array();
    size_t k = 0;
    for (size_t i = 0; i < sto->n_gm; i++)
        if (op_time[i] > 0) v[k++] = (shape_acc){sto->gm[i], op_time[i], 1};
    qsort(v, n, sizeof *v, cmp_shape);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !cmp_shape(&v[m - 1].g, &v[i].g)) {
            v[m - 1].time += v[i].time;
            v[m - 1].calls += 1;
        } else {
            v[m++] = v[i];
        }
    }
    qsort(v, m, sizeof *v, cmp_acc_time);
    json_t *a = json_array();
    for (size_t i = 0; i < m && i < 20; i++) {
        double f = gemm_flops(&v[i].g) * v[i].calls, t = v[i].time * 1e-6;
        json_array_append_new(a, json_pack("{s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f}", "m", (json_int_t)v[i].g.m, "n",
                                           (json_int_t)v[i].g.n, "k", (json_int_t)v[i].g.k, "batch",
                                           (json_int_t)v[i].g.batch, "calls", (json_int_t)v[i].calls, "time_s", t,
                                           "flops", f, "flop_s", t > 0 ? f / t : 0.0));
    }
    free(v);
    return a;
}

/* Each GPU event's step (owner[i]; n_st: none), and the count per step:
 * the last step starting at or before the event's launch (its own start
 * when no launch is recorded) whose window holds it. */
static void assign_steps(const store *sto, size_t *owner, size_t *count)
{
    for (size_t i = 0; i < sto->n_ev; i++) {
        const gpu_ev *e = &sto->ev[i];
        double at = e->ts;
        if (e->corr >= 0 && sto->n_la) {
            launch key = {e->corr, 0, 0};
            const launch *l = bsearch(&key, sto->la, sto->n_la, sizeof *sto->la, cmp_launch);
            if (l) at = l->ts;
        }
        size_t lo = 0, hi = sto->n_st;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (sto->st[mid].ts <= at) lo = mid + 1;
            else hi = mid;
        }
        size_t s = sto->n_st; /* none */
        if (lo > 0 && at <= sto->st[lo - 1].ts + sto->st[lo - 1].dur) s = lo - 1;
        owner[i] = s;
        count[s]++;
    }
}

json_t *trace_measure(store *sto, api_status *st, json_t **shapes)
{
    if (sto->n_st == 0) {
        api_fail(st, 422, "", "no step markers in the trace (ProfilerStep#N annotations, or the given marker)");
        return NULL;
    }
    /* (qsort and bsearch want a non-null base even for no elements) */
    if (sto->n_la) qsort(sto->la, sto->n_la, sizeof *sto->la, cmp_launch);
    if (sto->n_gm) {
        qsort(sto->gm, sto->n_gm, sizeof *sto->gm, cmp_gemm);
        sto->gm_t = api_malloc(sizeof *sto->gm_t * sto->n_gm);
        if (sto->gm_t) {
            for (size_t i = 0; i < sto->n_gm; i++) sto->gm_t[i] = i;
            gm_sort_base = sto->gm;
            qsort(sto->gm_t, sto->n_gm, sizeof *sto->gm_t, cmp_gm_time);
        }
    }
    qsort(sto->st, sto->n_st, sizeof *sto->st, cmp_step);
    size_t *owner = api_malloc(sizeof *owner * (sto->n_ev ? sto->n_ev : 1));
    size_t *count = api_calloc(sto->n_st + 1, sizeof *count);
    if (!owner || !count) {
        free(owner);
        free(count);
        api_fail(st, 503, "", "out of memory measuring the trace");
        return NULL;
    }
    assign_steps(sto, owner, count);
    /* bucket the events by step */
    size_t *start = api_calloc(sto->n_st + 2, sizeof *start);
    size_t *order = api_malloc(sizeof *order * (sto->n_ev ? sto->n_ev : 1));
    iv *scratch = api_malloc(sizeof *scratch * (sto->n_ev ? sto->n_ev : 1));
    iv *comp = api_malloc(sizeof *comp * (sto->n_ev ? sto->n_ev : 1));
    int64_t *stamp = api_malloc(sizeof *stamp * (sto->n_gm ? sto->n_gm : 1));
    double *op_time = api_calloc(sto->n_gm ? sto->n_gm : 1, sizeof *op_time);
    json_t *steps = NULL;
    if (!start || !order || !scratch || !comp || !stamp || !op_time) {
        api_fail(st, 503, "", "out of memory measuring the trace");
        goto done;
    }
    for (size_t s = 0; s <= sto->n_st; s++) start[s + 1] = start[s] + count[s];
    for (size_t i = 0; i < sto->n_ev; i++) order[start[owner[i]]++] = i;
    for (size_t s = sto->n_st + 1; s > 0; s--) start[s] = start[s - 1];
    start[0] = 0;
    for (size_t i = 0; i < sto->n_gm; i++) stamp[i] = INT64_MIN;
    steps = json_array();
    /* the summary's steps: all but the first when there are more than two */
    size_t from = sto->n_st > 2 ? 1 : 0;
    for (size_t s = 0; s < sto->n_st; s++)
        json_array_append_new(steps, measure_step(sto, &sto->st[s], order + start[s], count[s], scratch, comp,
                                                  stamp, s >= from ? op_time : NULL));
    if (shapes) *shapes = shape_table(sto, op_time);
done:
    free(stamp);
    free(op_time);
    free(owner);
    free(count);
    free(start);
    free(order);
    free(scratch);
    free(comp);
    return steps;
}
