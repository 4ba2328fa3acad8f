/* api/plan.c -- what a search answer adds so people can act on it
 * (issue 11, docs/planning.md): ties from the expected interval and the
 * variants of each layout family, time and cost to train, and for a
 * request nothing fits, the closest miss and the fewest devices that fit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "request_int.h"

static const char *const AXIS_NAMES[MFU_AX_COUNT] = {"dp", "fsdp", "tp", "ep", "pp", "cp"};

/* ---- ranking: tiers and variants ------------------------------------------ */

/* Expected seconds per token and its interval (docs/model.md
 * F-TIME-INTERVAL: symmetric in log space, u the profile's cross-validated
 * relative error). */
static void per_token(const mfu_ranked *t, double u, double *lo, double *hi)
{
    double s = t->eval.expected.step_time_s / (double)t->eval.global_batch_tokens;
    *lo = s / (1.0 + u);
    *hi = s * (1.0 + u);
}

json_t *api_plan_ranking(json_t *configs, const mfu_ranked *top, int n, double u, int distinct)
{
    json_t *ties = json_array();
    int tier = 0, first = 0;
    double tier_hi = 0;
    for (int i = 0; i <= n; i++) {
        double lo = 0, hi = 0;
        if (i < n) per_token(&top[i], u, &lo, &hi);
        /* a tier: the configurations whose interval overlaps the interval of
         * the tier's first (fastest) one; it closes at the first that does not */
        if (i == n || i == 0 || lo > tier_hi) {
            if (i - first > 1) {
                json_t *ranks = json_array();
                for (int k = first; k < i; k++) json_array_append_new(ranks, json_integer(k + 1));
                json_array_append_new(ties, json_pack("{s:i,s:o,s:s}", "tier", tier, "ranks", ranks,
                                                      "detail",
                                                      "expected intervals overlap: the model cannot tell these apart"));
            }
            if (i == n) break;
            tier++;
            first = i;
            tier_hi = hi;
        }
        json_t *cj = json_array_get(configs, (size_t)i);
        json_object_set_new(cj, "tier", json_integer(tier));
        json_object_set_new(cj, "tie_with_best", json_boolean(i > 0 && tier == 1));
        /* the family's other variants: this request with search.distinct
         * "none" and the layout fixed */
        json_t *fix = json_object();
        for (int a = 0; a < MFU_AX_COUNT; a++)
            json_object_set_new(fix, AXIS_NAMES[a], json_integer((json_int_t)top[i].config.ax[a]));
        json_object_set_new(cj, "variants", json_integer((json_int_t)top[i].variants));
        if (distinct)
            json_object_set_new(cj, "variants_search", json_pack("{s:s,s:o}", "distinct", "none", "fix", fix));
        else
            json_decref(fix);
    }
    return ties;
}

/* ---- time and cost to train ----------------------------------------------- */

json_t *api_plan_cost(const api_request *r, const mfu_eval *ev, double u)
{
    if (!(r->train_tokens > 0) || !(ev->tokens_per_s > 0)) return NULL;
    double N = (double)r->devices;
    double steps = ceil(r->train_tokens / (double)ev->global_batch_tokens);
    /* whole steps: the last partial batch is run as a full one */
    double wall_s = steps * ev->expected.step_time_s;
    double hours = wall_s / 3600.0;
    double dev_h = N * hours;
    json_t *o = json_pack("{s:f,s:I,s:f,s:f,s:f,s:f,s:f}", "tokens", r->train_tokens, "steps",
                          api_json_count(steps),
                          "wall_clock_s", wall_s, "wall_clock_days", wall_s / 86400.0,
                          "wall_clock_days_low", wall_s / (1.0 + u) / 86400.0,
                          "wall_clock_days_high", wall_s * (1.0 + u) / 86400.0, "device_hours", dev_h);
    if (r->price_per_device_hour > 0) {
        json_object_set_new(o, "cost", json_real(dev_h * r->price_per_device_hour));
        json_object_set_new(o, "currency", json_string(r->currency));
        json_object_set_new(o, "price_per_device_hour", json_real(r->price_per_device_hour));
    }
    if (r->power_per_device_w > 0) {
        /* energy = devices x power x time x PUE; the chips' board power only
         * (hosts, network and cooling enter through the PUE) */
        json_object_set_new(o, "power_per_device_w", json_real(r->power_per_device_w));
        json_object_set_new(o, "power_source", json_string(r->power_given ? "request" : "datasheet tdp_w"));
        json_object_set_new(o, "pue", json_real(r->pue));
        json_object_set_new(o, "energy_mwh", json_real(dev_h * r->power_per_device_w * r->pue / 1e6));
    }
    return o;
}

/* ---- nothing fits --------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Does any configuration fit on n devices (the request's other settings and
 * search options kept)? 1 yes, 0 no, -1 could not tell. */
static int fits_on(const api_request *r, const mfu_search_opts *o, int64_t n, mfu_search_scratch *sc)
{
    mfu_system s;
    if (rq_system_setup(&s, r, n, sc->ops) != MFU_OK) return -1;
    mfu_search_opts p = *o;
    p.top_k = 1;
    p.first_fit = 1;
    p.max_evaluations = 0;
    /* the batch in sequences is the request's; max_tp stays the node's */
    mfu_ranked top[1];
    mfu_search_result res = {0, top, {0}};
    if (mfu_search(&s, &p, sc, NULL, NULL, &res) != 0) return -1;
    return res.n > 0;
}

/* Devices are rented by the node: an 8-GPU board (a GB200 NVL72 rack's
 * trays are scanned by 8 too), a 4-chip TPU host. */
static int64_t device_unit(const mfu_hardware *hw)
{
    if (hw->platform == MFU_PLATFORM_TPU) return 4;
    int64_t g = hw->n_tiers > 1 ? hw->tiers[0].domain_size : 1;
    return g < 1 ? 1 : g > 8 ? 8 : g;
}

/* The fewest devices (of the same chip, above n) on which something fits:
 * doubling until one fits (U), then every node multiple between U/2 and U
 * (at most 32 probes, evenly spread). Fit is not monotone in the count
 * (divisibility), so this is the fewest among those tried; they are
 * reported. 0: none up to API_MAX_DEVICES or the time ran out. */
static int64_t fewest_devices(const api_request *r, const mfu_search_opts *o, double budget_s,
                              json_t *tried, int *timed_out)
{
    mfu_search_scratch sc = {0};
    sc.ops = api_malloc(sizeof(mfu_op) * MFU_SCRATCH_OPS);
    sc.cache = api_malloc(mfu_search_cache_bytes());
    sc.part = api_malloc(sizeof(mfu_ranked));
    int64_t best = 0;
    *timed_out = 0;
    if (!sc.ops || !sc.cache || !sc.part) goto done;
    double t0 = now_s();
    int64_t unit = device_unit(&r->hw), lo = r->devices, hi = 0;
    for (int64_t n = r->devices * 2; n <= API_MAX_DEVICES; n *= 2) {
        if (now_s() - t0 > budget_s) { *timed_out = 1; goto done; }
        int f = fits_on(r, o, n, &sc);
        json_array_append_new(tried, json_pack("{s:I,s:b}", "devices", (json_int_t)n, "fits", f == 1));
        if (f == 1) { hi = n; break; }
        lo = n;
    }
    if (!hi) goto done;
    best = hi;
    int64_t first = (lo / unit + 1) * unit;
    int64_t span = (hi - first) / unit; /* candidates below hi */
    int64_t step = span > 32 ? (span + 31) / 32 * unit : unit;
    for (int64_t n = first; n < hi; n += step) {
        if (now_s() - t0 > budget_s) { *timed_out = 1; break; }
        int f = fits_on(r, o, n, &sc);
        json_array_append_new(tried, json_pack("{s:I,s:b}", "devices", (json_int_t)n, "fits", f == 1));
        if (f == 1) { best = n; break; }
    }
done:
    free(sc.ops);
    free(sc.cache);
    free(sc.part);
    return best;
}

json_t *api_plan_no_fit(const api_request *r, const mfu_system *sys, const mfu_search_opts *o,
                        const mfu_search_stats *stats, mfu_op *ops, double budget_s)
{
    char reason[320];
    json_t *out = json_object();
    if (!stats->has_closest) {
        /* nothing was even weighed: the layout rules or options excluded all */
        int worst = MFU_PRUNE_DIVISIBILITY;
        for (int i = 0; i < MFU_PRUNE_COUNT; i++)
            if (stats->pruned[i] > stats->pruned[worst]) worst = i;
        snprintf(reason, sizeof reason,
                 "no configuration is legal for this request (most were pruned for %s): see search.pruned",
                 mfu_prune_names[worst]);
        json_object_set_new(out, "reason", json_string(reason));
        return out;
    }
    mfu_config c = stats->closest;
    mfu_eval ev;
    json_t *closest = json_null();
    double excess = -stats->closest_headroom_bytes, cap = r->hw.hbm_bytes;
    int64_t stage = 0;
    if (mfu_evaluate(sys, &c, ops, &ev) == MFU_OK) {
        excess = -ev.mem.headroom_bytes;
        cap = ev.mem.capacity_bytes;
        stage = ev.mem.stage;
        closest = api_render_config(sys, &c, &ev, 0, ops);
    }
    json_t *tried = json_array();
    int timed_out = 0;
    int64_t n = fewest_devices(r, o, budget_s, tried, &timed_out);
    int len = snprintf(reason, sizeof reason,
                       "nothing fits on %lld devices: the closest configuration needs %.1f GB more than the %.1f GB on its pipeline stage %lld",
                       (long long)r->devices, excess / 1e9, cap / 1e9, (long long)stage);
    if (len > 0 && (size_t)len < sizeof reason) {
        if (n > 0)
            snprintf(reason + len, sizeof reason - (size_t)len, "; the fewest that fit: %lld devices", (long long)n);
        else
            snprintf(reason + len, sizeof reason - (size_t)len, "; %s",
                     timed_out ? "no fitting device count found in the time allowed"
                               : "it fits on no device count up to the limit");
    }
    json_object_set_new(out, "reason", json_string(reason));
    json_object_set_new(out, "closest", closest);
    json_object_set_new(out, "excess_bytes", json_real(excess));
    json_object_set_new(out, "fewest_devices", n > 0 ? json_integer((json_int_t)n) : json_null());
    json_object_set_new(out, "devices_tried", tried);
    json_object_set_new(out, "device_unit", json_integer((json_int_t)device_unit(&r->hw)));
    return out;
}
