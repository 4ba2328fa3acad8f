/* core/calibrate.h -- fitting a small set of named profile parameters to
 * measured runs (issue 10; docs/calibration.md).
 *
 * A robust, regularised least-squares fit: each run contributes the
 * residual r_i = log(predicted_i / measured_i) / noise under a Huber loss
 * (k = huber_k), each parameter a prior residual (u_j - u_prior_j) /
 * prior_sd_j in its fit space (log for positive scale parameters, linear
 * for times), and the parameters stay within bounds. Levenberg-Marquardt
 * with a forward-difference Jacobian and iteratively reweighted Huber
 * weights. Pure: the caller's predict callback evaluates the model.
 */
#ifndef MFU_CALIBRATE_H
#define MFU_CALIBRATE_H

#include "error.h"

#define MFU_FIT_MAX_PARAMS 16
#define MFU_FIT_MAX_RUNS 1024 /* observations: a run's step time; from a trace its GEMM, attention and per-axis collective time */

typedef struct mfu_fit_param {
    double prior;        /* value from component benchmarks (the preset) */
    double prior_sd;     /* in fit space: relative (log) or absolute (linear) */
    double lo, hi;       /* bounds on the value */
    int log_space;       /* 1: fitted as log(value) (value > 0) */
} mfu_fit_param;

/* Predicted step times of every run under parameter values theta. Returns
 * 0, or nonzero if a prediction failed. */
typedef int (*mfu_predict_fn)(void *ctx, const double *theta, double *pred_s);

typedef struct mfu_fit_opts {
    double noise;        /* relative measurement noise (log units), e.g. 0.02 */
    double huber_k;      /* Huber threshold in noise units, e.g. 1.5 */
    int max_iter;        /* Levenberg-Marquardt iterations */
} mfu_fit_opts;

typedef struct mfu_fit_result {
    double theta[MFU_FIT_MAX_PARAMS];
    double sd[MFU_FIT_MAX_PARAMS];      /* posterior sd in fit space */
    int determined[MFU_FIT_MAX_PARAMS]; /* the data shrank the prior's sd below 0.7 of it */
    double resid[MFU_FIT_MAX_RUNS];     /* log(pred / measured) at the fit */
    double loss;
    int iterations;
} mfu_fit_result;

/* Fit np parameters to nr runs (measured_s[i] > 0; use[i] 0 leaves run i
 * out, NULL uses all). start: initial values (NULL: the priors). */
MFU_MUST_CHECK int mfu_fit(const mfu_fit_param *p, int np, const double *measured_s, int nr,
                           const int *use, const double *start, mfu_predict_fn fn, void *ctx,
                           const mfu_fit_opts *o, mfu_fit_result *out);

#endif
