/* core/calibrate.c -- the robust regularised least-squares fit of
 * core/calibrate.h (docs/calibration.md). */
#include "calibrate.h"

#include <math.h>
#include <string.h>

#define MAXR (MFU_FIT_MAX_RUNS + MFU_FIT_MAX_PARAMS)

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static double to_u(const mfu_fit_param *p, double v) { return p->log_space ? log(v) : v; }

static double to_v(const mfu_fit_param *p, double u)
{
    return clampd(p->log_space ? exp(u) : u, p->lo, p->hi);
}

/* u kept inside the bounds (so a step past one stops at it) */
static double clamp_u(const mfu_fit_param *p, double u) { return to_u(p, to_v(p, u)); }

typedef struct fitctx {
    const mfu_fit_param *p;
    int np, nr;
    const double *meas;
    const int *use;
    mfu_predict_fn fn;
    void *ctx;
    const mfu_fit_opts *o;
    double u0[MFU_FIT_MAX_PARAMS];
} fitctx;

/* Run residuals (log ratio in noise units) at u; -1 if a prediction failed. */
static int run_resid(const fitctx *f, const double *u, double *r)
{
    double theta[MFU_FIT_MAX_PARAMS], pred[MFU_FIT_MAX_RUNS];
    for (int j = 0; j < f->np; j++) theta[j] = to_v(&f->p[j], u[j]);
    if (f->fn(f->ctx, theta, pred)) return -1;
    for (int i = 0; i < f->nr; i++) {
        if (!(pred[i] > 0) || !isfinite(pred[i])) return -1;
        r[i] = log(pred[i] / f->meas[i]) / f->o->noise;
    }
    return 0;
}

/* The weighted residual vector (runs with their Huber IRLS weights w, then
 * the priors) and the robust loss. */
static double assemble(const fitctx *f, const double *u, const double *rr, const double *w,
                       double *R, int *m)
{
    double loss = 0.0, k = f->o->huber_k;
    int n = 0;
    for (int i = 0; i < f->nr; i++) {
        if (f->use && !f->use[i]) continue;
        double a = fabs(rr[i]);
        loss += a <= k ? 0.5 * a * a : k * a - 0.5 * k * k;
        R[n++] = w[i] * rr[i];
    }
    for (int j = 0; j < f->np; j++) {
        double z = (u[j] - f->u0[j]) / f->p[j].prior_sd;
        loss += 0.5 * z * z;
        R[n++] = z;
    }
    *m = n;
    return loss;
}

static void huber_weights(const fitctx *f, const double *rr, double *w)
{
    for (int i = 0; i < f->nr; i++) {
        double a = fabs(rr[i]);
        w[i] = a <= f->o->huber_k ? 1.0 : sqrt(f->o->huber_k / a);
    }
}

/* Solve A x = b (n x n, row-major) by Gaussian elimination with partial
 * pivoting; -1 if singular. */
static int solve(int n, double *A, double *b, double *x)
{
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(A[r * n + c]) > fabs(A[piv * n + c])) piv = r;
        if (fabs(A[piv * n + c]) < 1e-300) return -1;
        if (piv != c) {
            for (int k = 0; k < n; k++) {
                double t = A[c * n + k];
                A[c * n + k] = A[piv * n + k];
                A[piv * n + k] = t;
            }
            double t = b[c];
            b[c] = b[piv];
            b[piv] = t;
        }
        for (int r = c + 1; r < n; r++) {
            double f = A[r * n + c] / A[c * n + c];
            for (int k = c; k < n; k++) A[r * n + k] -= f * A[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double s = b[r];
        for (int k = r + 1; k < n; k++) s -= A[r * n + k] * x[k];
        x[r] = s / A[r * n + r];
    }
    return 0;
}

/* The Jacobian of the weighted residuals R (m of them) at u, by forward
 * differences; with step_down a parameter at its upper bound steps down
 * (the LM iterations), else the step is taken as is (the posterior). */
static int jacobian(const fitctx *f, const double *u, const double *w, const double *R, int m,
                    int step_down, double *J)
{
    const mfu_fit_param *p = f->p;
    int np = f->np;
    for (int j = 0; j < np; j++) {
        double uj[MFU_FIT_MAX_PARAMS], rj[MFU_FIT_MAX_RUNS], Rj[MAXR];
        memcpy(uj, u, sizeof uj);
        double h = p[j].log_space ? 1e-4 : fmax(1e-6 * fabs(u[j]), 1e-4 * p[j].prior_sd);
        uj[j] += h;
        double hu = h;
        if (step_down) {
            hu = uj[j] - u[j];
            if (clamp_u(&p[j], uj[j]) != uj[j]) { /* at the upper bound: step down */
                uj[j] = u[j] - h;
                hu = -h;
            }
        }
        if (run_resid(f, uj, rj)) return -1;
        int mj;
        assemble(f, uj, rj, w, Rj, &mj);
        for (int i = 0; i < m; i++) J[i * np + j] = (Rj[i] - R[i]) / hu;
    }
    return 0;
}

/* The normal equations: A = J^T J and, when g is given, g = J^T R. */
static void normal_eq(const double *J, const double *R, int m, int np, double *A, double *g)
{
    for (int a = 0; a < np; a++) {
        if (g) {
            g[a] = 0.0;
            for (int i = 0; i < m; i++) g[a] += J[i * np + a] * R[i];
        }
        for (int b = 0; b < np; b++) {
            double s = 0.0;
            for (int i = 0; i < m; i++) s += J[i * np + a] * J[i * np + b];
            A[a * np + b] = s;
        }
    }
}

int mfu_fit(const mfu_fit_param *p, int np, const double *measured_s, int nr, const int *use,
            const double *start, mfu_predict_fn fn, void *ctx, const mfu_fit_opts *o,
            mfu_fit_result *out)
{
    if (np < 1 || np > MFU_FIT_MAX_PARAMS || nr < 1 || nr > MFU_FIT_MAX_RUNS || !(o->noise > 0))
        return MFU_EINVAL;
    for (int i = 0; i < nr; i++)
        if (!(measured_s[i] > 0)) return MFU_EINVAL;
    memset(out, 0, sizeof *out);
    fitctx f = {p, np, nr, measured_s, use, fn, ctx, o, {0}};
    double u[MFU_FIT_MAX_PARAMS], rr[MFU_FIT_MAX_RUNS], w[MFU_FIT_MAX_RUNS], R[MAXR];
    static const int MAXM = MAXR;
    for (int j = 0; j < np; j++) {
        f.u0[j] = to_u(&p[j], clampd(p[j].prior, p[j].lo, p[j].hi));
        u[j] = start ? to_u(&p[j], clampd(start[j], p[j].lo, p[j].hi)) : f.u0[j];
    }
    if (run_resid(&f, u, rr)) return MFU_EINVAL;
    huber_weights(&f, rr, w);
    int m;
    double loss = assemble(&f, u, rr, w, R, &m);
    double lambda = 1e-3;
    double J[MAXR * MFU_FIT_MAX_PARAMS];
    (void)MAXM;
    int it;
    for (it = 0; it < o->max_iter; it++) {
        /* Jacobian of the weighted residuals (weights held fixed) */
        if (jacobian(&f, u, w, R, m, 1, J)) return MFU_EINVAL;
        double A[MFU_FIT_MAX_PARAMS * MFU_FIT_MAX_PARAMS], g[MFU_FIT_MAX_PARAMS];
        normal_eq(J, R, m, np, A, g);
        int accepted = 0;
        double unew[MFU_FIT_MAX_PARAMS], rnew[MFU_FIT_MAX_RUNS], Rnew[MAXR];
        while (lambda < 1e12) {
            double M[MFU_FIT_MAX_PARAMS * MFU_FIT_MAX_PARAMS], rhs[MFU_FIT_MAX_PARAMS], d[MFU_FIT_MAX_PARAMS];
            memcpy(M, A, sizeof(double) * (size_t)(np * np));
            for (int a = 0; a < np; a++) {
                M[a * np + a] += lambda * (A[a * np + a] > 0 ? A[a * np + a] : 1.0);
                rhs[a] = -g[a];
            }
            if (solve(np, M, rhs, d)) { lambda *= 10; continue; }
            for (int a = 0; a < np; a++) unew[a] = clamp_u(&p[a], u[a] + d[a]);
            if (run_resid(&f, unew, rnew)) { lambda *= 10; continue; }
            double wnew[MFU_FIT_MAX_RUNS];
            huber_weights(&f, rnew, wnew);
            int mn;
            double ln = assemble(&f, unew, rnew, wnew, Rnew, &mn);
            if (ln < loss) {
                double change = loss - ln;
                memcpy(u, unew, sizeof u);
                memcpy(rr, rnew, sizeof rr);
                memcpy(w, wnew, sizeof w);
                memcpy(R, Rnew, sizeof R);
                m = mn;
                loss = ln;
                lambda = fmax(lambda / 3.0, 1e-9);
                accepted = 1 + (change < 1e-9 * (1.0 + loss));
                break;
            }
            lambda *= 4.0;
        }
        if (!accepted || accepted == 2) break;
    }
    /* the posterior in fit space: (J^T J)^-1 of the (unit-noise) residuals */
    double A[MFU_FIT_MAX_PARAMS * MFU_FIT_MAX_PARAMS];
    if (jacobian(&f, u, w, R, m, 0, J)) return MFU_EINVAL;
    normal_eq(J, R, m, np, A, NULL);
    for (int j = 0; j < np; j++) {
        /* column j of the inverse */
        double M[MFU_FIT_MAX_PARAMS * MFU_FIT_MAX_PARAMS], e[MFU_FIT_MAX_PARAMS] = {0}, x[MFU_FIT_MAX_PARAMS];
        memcpy(M, A, sizeof(double) * (size_t)(np * np));
        e[j] = 1.0;
        out->sd[j] = solve(np, M, e, x) == 0 && x[j] > 0 ? sqrt(x[j]) : p[j].prior_sd;
        out->determined[j] = out->sd[j] < 0.7 * p[j].prior_sd;
        out->theta[j] = to_v(&p[j], u[j]);
    }
    for (int i = 0; i < nr; i++) out->resid[i] = rr[i] * o->noise;
    out->loss = loss;
    out->iterations = it;
    return MFU_OK;
}
