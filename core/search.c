/* core/search.c -- enumeration, pruning and ranking of configurations.
 *
 * Order of work per point (docs/model.md F-SEARCH): divisibility (cheapest,
 * usually whole subtrees), memory (from cached per-shape costs), a lower
 * bound on the step (compute + recompute + optimizer, which communication
 * can only lengthen) against the k-th best, then the full System Bound.
 *
 * Per-shape op inventories depend only on (tp, cp, ep, etp, sp, mbs); they
 * are built once per shape and kept in a small cache the caller provides.
 * Their part no expert axis changes (the dense runs before the first MoE
 * run, embedding, head, the MoE runs' attention blocks) depends on (tp,
 * cp, sp, mbs) alone and is kept apart, for the ep and etp variants of an
 * MoE model's shape (F-SEARCH-MEMO).
 *
 * Over 600 lines on purpose: one translation unit, so the enumeration's
 * inner loop can inline the shape cache, ranking and option helpers it
 * calls per point (10^7 points a second; moving the communication out of
 * core/step.c cost 1.5 % instructions, the same risk here; not measured
 * for this file).
 */
#include "search.h"

#include <math.h>
#include <string.h>

/* ---- shape cache -------------------------------------------------------- */

/* A pool of CACHE_ENTRIES entries, filled in order, found through an open-
 * addressed index of INDEX_SLOTS entry numbers (linear probing; at most a
 * quarter full, so a probe ends within a slot or two). When the pool is
 * full the whole cache starts over (the cache is an optimisation only; the
 * entry just used is not needed again once its subtree is done). DeepSeek-
 * V3 on 2,048 devices has 7,019 shapes over one thread's shards: each is
 * built once. The previous table, 8,192 entries probed 8 slots from the
 * hash with the first overwritten on a full window, built 10,115 (a
 * direct-mapped one 30,174); the index keeps the table's 17 MB of entries
 * untouched beyond those a search fills (calloc'd memory is an empty
 * cache, and clearing resets the index alone, 128 KB). */
#define CACHE_ENTRIES 8192
#define INDEX_SLOTS (4 * CACHE_ENTRIES)

typedef struct cache_entry {
    mfu_shape_cost bound, expected;
} cache_entry;

/* F-SEARCH-MEMO: an MoE model's shapes come as the ep x etp variants of
 * each (tp, cp, sp, mbs) of an axis tuple (shape_loop enumerates ep and
 * etp above sp and mbs), so a direct-mapped table with a slot per (sp,
 * mbs) of a tuple holds every dense part its variants share. DeepSeek-V3
 * on 2,048 H800s: 6,984 shapes over 458 dense parts. Clearing the cache
 * empties every slot (the caller's memory may be uninitialised). */
#define DENSE_SLOTS 64

typedef struct dense_entry {
    int64_t key[4];                /* tp, cp, sp, mbs */
    int valid;
    mfu_shape_dense d;             /* mfu_shape_costs2_dense's */
} dense_entry;

typedef struct shape_cache {
    int n;                         /* entries in use */
    int32_t index[INDEX_SLOTS];    /* entry number + 1; 0: empty */
    /* the entries' keys apart from them: a probe reads 48 bytes of a
     * 384 KB table, not a line of a 2.8 KB entry in 23 MB */
    int64_t key[CACHE_ENTRIES][6];
    cache_entry e[CACHE_ENTRIES];
    dense_entry dense[DENSE_SLOTS];
} shape_cache;

size_t mfu_search_cache_bytes(void) { return sizeof(shape_cache); }

void mfu_search_cache_clear(mfu_search_scratch *sc)
{
    shape_cache *cache = sc->cache;
    cache->n = 0;
    memset(cache->index, 0, sizeof cache->index);
    for (int i = 0; i < DENSE_SLOTS; i++) cache->dense[i].valid = 0;
}

static uint64_t key_hash(const int64_t *k)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 6; i++) {
        h ^= (uint64_t)k[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

/* The dense part of shape s (c's), from the table or built into it. */
static const mfu_shape_dense *dense_for(const mfu_system *sys, const mfu_config *c, const mfu_shape *s,
                                       mfu_search_scratch *sc)
{
    shape_cache *cache = sc->cache;
    int64_t key[4] = {c->ax[MFU_AX_TP], c->ax[MFU_AX_CP], c->sp, c->mbs};
    dense_entry *d = &cache->dense[(uint64_t)(c->mbs * 2 + c->sp) % DENSE_SLOTS];
    if (!d->valid || memcmp(d->key, key, sizeof key) != 0) {
        mfu_shape_costs2_dense(sys, s, sc->ops, &d->d);
        memcpy(d->key, key, sizeof key);
        d->valid = 1;
    }
    return &d->d;
}

static const cache_entry *costs_for(const mfu_system *sys, const mfu_config *c,
                                    mfu_search_scratch *sc, mfu_search_stats *st)
{
    shape_cache *cache = sc->cache;
    int64_t key[6] = {c->ax[MFU_AX_TP], c->ax[MFU_AX_CP], c->ax[MFU_AX_EP], c->etp, c->sp, c->mbs};
    uint64_t slot = key_hash(key) % INDEX_SLOTS;
    for (int32_t i; (i = cache->index[slot]) != 0; slot = (slot + 1) % INDEX_SLOTS)
        if (memcmp(cache->key[i - 1], key, sizeof key) == 0) return &cache->e[i - 1];
    if (cache->n == CACHE_ENTRIES) { /* full: start over */
        mfu_search_cache_clear(sc);
        slot = key_hash(key) % INDEX_SLOTS;
    }
    cache_entry *e = &cache->e[cache->n];
    cache->index[slot] = ++cache->n;
    mfu_shape s;
    mfu_config_shape(sys, c, &s);
    if (sys->moe_layers > 0)
        mfu_shape_costs2_moe(sys, &s, sc->ops, dense_for(sys, c, &s, sc), &e->bound, &e->expected);
    else
        mfu_shape_costs2(sys, &s, sc->ops, &e->bound, &e->expected);
    memcpy(cache->key[cache->n - 1], key, sizeof key);
    st->shape_costs++;
    return e;
}

/* ---- options ------------------------------------------------------------ */

void mfu_search_defaults(const mfu_system *sys, mfu_search_opts *o)
{
    memset(o, 0, sizeof *o);
    o->top_k = 10;
    o->fix_sp = o->fix_zero = o->fix_schedule = o->fix_recompute = -1;
    o->fix_etp = o->fix_vpp = o->fix_mbs = -1;
    o->max_mbs = 16;
    o->max_vpp = 8;
    o->partial_recompute = 1;
    /* F-SEARCH: TP stays inside the fast domain (NVLink node) */
    o->max_ax[MFU_AX_TP] = sys->hw->tiers[0].domain_size;
    int64_t b = (int64_t)(sys->train.global_batch_tokens / (double)sys->train.seq);
    o->batch_min_seqs = o->batch_max_seqs = b;
    o->frameworks = mfu_platform_frameworks(sys->hw);
}

static int allowed(const mfu_search_opts *o, int ax, int64_t v)
{
    if (o->max_ax[ax] > 0 && v > o->max_ax[ax]) return 0;
    if (o->n_allowed[ax] == 0) return 1;
    for (int i = 0; i < o->n_allowed[ax]; i++)
        if (o->allowed[ax][i] == v) return 1;
    return 0;
}

/* ---- ranking ------------------------------------------------------------ */

int mfu_same_layout(const mfu_config *a, const mfu_config *b)
{
    for (int i = 0; i < MFU_AX_COUNT; i++)
        if (a->ax[i] != b->ax[i]) return 0;
    return 1;
}

static int axes_used(const mfu_config *c)
{
    int n = 0;
    for (int i = 0; i < MFU_AX_COUNT; i++) n += c->ax[i] > 1;
    return n;
}

/* Stable total order users can predict: score; at an equal score fewer
 * parallel axes in use, fewer pipeline stages, less memory; then the
 * configuration fields in a fixed order. */
static int cmp_ranked(const mfu_ranked *a, const mfu_ranked *b)
{
    if (a->score < b->score) return -1;
    if (a->score > b->score) return 1;
    const mfu_config *x = &a->config, *y = &b->config;
    int nx = axes_used(x), ny = axes_used(y);
    if (nx != ny) return nx < ny ? -1 : 1;
    if (x->ax[MFU_AX_PP] != y->ax[MFU_AX_PP]) return x->ax[MFU_AX_PP] < y->ax[MFU_AX_PP] ? -1 : 1;
    if (a->mem_bytes < b->mem_bytes) return -1;
    if (a->mem_bytes > b->mem_bytes) return 1;
    int64_t kx[] = {x->ax[0], x->ax[1], x->ax[2], x->ax[3], x->ax[4], x->ax[5], x->sp, x->zero,
                    x->etp, x->schedule, x->vpp, x->mbs, x->grad_accum, x->recompute,
                    x->recompute_layers, x->split, x->pp_first, x->pp_last};
    int64_t ky[] = {y->ax[0], y->ax[1], y->ax[2], y->ax[3], y->ax[4], y->ax[5], y->sp, y->zero,
                    y->etp, y->schedule, y->vpp, y->mbs, y->grad_accum, y->recompute,
                    y->recompute_layers, y->split, y->pp_first, y->pp_last};
    for (size_t i = 0; i < sizeof kx / sizeof kx[0]; i++) {
        if (kx[i] < ky[i]) return -1;
        if (kx[i] > ky[i]) return 1;
    }
    return 0;
}

/* The entry of cand's layout family in the ranking, or -1. */
static int family_at(const mfu_search_result *r, const mfu_config *c)
{
    for (int i = 0; i < r->n; i++)
        if (mfu_same_layout(&r->top[i].config, c)) return i;
    return -1;
}

/* Insert cand into the top k. Distinct: a family holds one entry, its best
 * (a family's entry leaves the ranking only for k better ones, so a later,
 * worse variant of it can never re-enter: the result is the best variant
 * of each of the k best families, whatever the enumeration order). */
static void insert_top(mfu_search_result *r, const mfu_search_opts *o, const mfu_ranked *cand)
{
    int k = o->top_k;
    if (r->n == k && cmp_ranked(cand, &r->top[k - 1]) >= 0) return;
    if (o->distinct == MFU_DISTINCT_LAYOUT) {
        int f = family_at(r, &cand->config);
        if (f >= 0) {
            if (cmp_ranked(cand, &r->top[f]) >= 0) return;
            memmove(&r->top[f], &r->top[f + 1], sizeof r->top[0] * (size_t)(r->n - f - 1));
            r->n--;
        }
    }
    int i = r->n < k ? r->n++ : k - 1;
    while (i > 0 && cmp_ranked(cand, &r->top[i - 1]) < 0) {
        r->top[i] = r->top[i - 1];
        i--;
    }
    r->top[i] = *cand;
}

/* ---- enumeration -------------------------------------------------------- */

typedef struct ctx {
    const mfu_system *sys;
    const mfu_search_opts *o;
    mfu_search_scratch *sc;
    mfu_search_result *res;
    mfu_progress_fn fn;
    void *fctx;
    double frac;
    int stop;
    int shard, nshards;   /* this run takes axis tuples t with t % nshards == shard */
    int64_t tuple;        /* index of the current axis tuple */
    uint64_t budget;      /* evaluations allowed in this shard (0 = no limit) */
    int stopped;          /* the callback asked to stop */
    int any;              /* MFU_FW_ANY: frameworks are reported, not required */
    unsigned fw_want;     /* the admitted frameworks of the platform */
    unsigned fw_shape;    /* those the shape's rules leave */
    unsigned fw_sched;    /* ... and the schedule level's */
    int n_rc;             /* recompute policies tried (rc_usable_, fixed per search) */
    int rc_list[MFU_RC_COUNT]; /* their slots, ascending */
    /* mfu_config_check_rc's verdict per policy for recompute_layers -1
     * (-1: legal; else the prune reason): it depends on the system and the
     * policy alone there, but for cpu_offload (pp, layers), so score_point
     * looks it up instead of asking at every point */
    int rc_verdict[MFU_RC_COUNT];
    /* the layer split per vpp for the current pp, weighed the first time
     * that vpp comes up (mfu_config_default_split depends on pp and vpp
     * only, and on whether the stages loop or form a V: slot 0 holds
     * DualPipeV's, vpp 2 in a V) */
    int64_t split_pp;
    unsigned char split_have[MFU_SEARCH_MAX_VPP + 1]; /* weighed (on demand) */
    int split_ok[MFU_SEARCH_MAX_VPP + 1];
    mfu_config split_cfg[MFU_SEARCH_MAX_VPP + 1];
    /* check_split's verdict per (vpp slot, schedule) for split_pp, weighed
     * once (the schedule loop runs it for every batch and zero) */
    unsigned char split_done[MFU_SEARCH_MAX_VPP + 1][MFU_SCHED_COUNT];
    int split_rc[MFU_SEARCH_MAX_VPP + 1][MFU_SCHED_COUNT];
    int split_reason[MFU_SEARCH_MAX_VPP + 1][MFU_SCHED_COUNT];
    const char *split_why[MFU_SEARCH_MAX_VPP + 1][MFU_SCHED_COUNT];
    /* the divisors of the device count, ascending: every axis value is one */
    int n_div;
    int64_t div[MFU_SEARCH_MAX_DIVISORS];
    /* feasible points per ep value of the current axis tuple (the layout
     * families of one tuple differ in ep only; a tuple is enumerated in one
     * piece, so the counts are exact) */
    /* the memory every recompute policy of the current schedule point
     * shares (recompute_loop sets it) */
    mfu_memory_base mbase;
    /* subtree_points' schedule count for pp sub_pp (0: none yet) */
    int64_t sub_pp;
    uint64_t sub_sched;
    /* the stage states per (ZeRO stage, split slot) of the current layout
     * (axes, ep, etp; mbs_loop empties it): a state changes with neither
     * the micro-batch, the batch nor the schedule of one split (slot 0:
     * DualPipeV's V, whose head is on rank 0; every other schedule's on
     * the last) */
    mfu_stage_state st_memo[4][MFU_SEARCH_MAX_VPP + 1][3]; /* by zero 0..3 */
    unsigned st_ready[4][MFU_SEARCH_MAX_VPP + 1];
    /* the last family looked up in the ranking and where it stood, valid
     * while the ranking is unchanged (fam_ver == the insert count): the
     * points of one family come one after another */
    mfu_config fam_cfg;
    int fam_idx, fam_valid;
    uint64_t fam_ver, inserts;
    int n_fam;
    int64_t fam_ep[MFU_SEARCH_MAX_DIVISORS];
    uint64_t fam_n[MFU_SEARCH_MAX_DIVISORS];
} ctx;

static void count_variant(ctx *x, const mfu_config *c)
{
    int64_t ep = c->ax[MFU_AX_EP];
    for (int i = 0; i < x->n_fam; i++)
        if (x->fam_ep[i] == ep) {
            x->fam_n[i]++;
            return;
        }
    if (x->n_fam < MFU_SEARCH_MAX_DIVISORS) {
        x->fam_ep[x->n_fam] = ep;
        x->fam_n[x->n_fam++] = 1;
    }
}

/* The tuple is done: its families' counts go to their ranked entries. */
static void flush_variants(ctx *x, const mfu_config *c)
{
    mfu_search_result *r = x->res;
    for (int f = 0; f < x->n_fam; f++) {
        mfu_config t = *c;
        t.ax[MFU_AX_EP] = x->fam_ep[f];
        for (int i = 0; i < r->n; i++)
            if (mfu_same_layout(&r->top[i].config, &t)) r->top[i].variants = x->fam_n[f];
    }
    x->n_fam = 0;
}

static void prune(ctx *x, int reason, uint64_t n)
{
    x->res->stats.pruned[reason] += n;
    x->res->stats.space_size += n;
}

/* Would any framework the search admits offer this? (mask of those that
 * could; MFU_FW_ANY admits everything) */
static int fw_admits(const ctx *x, unsigned offered)
{
    unsigned want = x->o->frameworks;
    return (want & MFU_FW_ANY) || (offered & want & mfu_platform_frameworks(x->sys->hw));
}

/* A point memory refuses: the closest miss so far is kept (the no-fit
 * answer names it). The early-out headroom is one stage's, never below the
 * exact one, so only a point it puts ahead is measured exactly. */
static void note_closest(ctx *x, const mfu_config *c, const cache_entry *ce, double headroom)
{
    mfu_search_result *res = x->res;
    if (res->stats.has_closest && headroom <= res->stats.closest_headroom_bytes) return;
    mfu_memory exact;
    mfu_memory_from_base(x->sys, c, &ce->bound, &x->mbase, 1, &exact);
    if (!res->stats.has_closest || exact.headroom_bytes > res->stats.closest_headroom_bytes) {
        res->stats.has_closest = 1;
        res->stats.closest = *c;
        res->stats.closest_headroom_bytes = exact.headroom_bytes;
    }
}

/* Where c's layout family stands in the ranking (-1: not ranked), looked
 * up once per family while the ranking is unchanged: a family's points
 * come one after another. */
static int ranked_family(ctx *x, const mfu_config *c)
{
    if (!(x->fam_valid && x->fam_ver == x->inserts && mfu_same_layout(&x->fam_cfg, c))) {
        x->fam_cfg = *c;
        x->fam_idx = family_at(x->res, c);
        x->fam_ver = x->inserts;
        x->fam_valid = 1;
    }
    return x->fam_idx;
}

/* Score one point; the config is complete except recompute_layers for
 * partial recompute. Returns the point's memory headroom in bytes (NAN if
 * not scored). */
static double score_point(ctx *x, mfu_config *c, const cache_entry *ce)
{
    const mfu_system *sys = x->sys;
    mfu_search_result *res = x->res;
    const char *why;
    int reason;
    res->stats.space_size++;
    if (x->budget && res->stats.evaluated >= x->budget) {
        res->stats.truncated = 1;
        x->stop = 1;
        return NAN;
    }
    /* the shape and schedule levels were checked by the loops above */
    int verdict = c->recompute_layers == -1 && c->recompute != MFU_RC_CPU_OFFLOAD
                      ? x->rc_verdict[c->recompute]
                  : mfu_config_check_rc(sys, c, &reason, &why) != MFU_OK ? reason
                                                                        : -1;
    if (verdict >= 0) {
        res->stats.pruned[verdict]++;
        return NAN;
    }
    if (!x->any && !(x->fw_sched & mfu_rc_frameworks(sys, c))) {
        res->stats.pruned[MFU_PRUNE_FRAMEWORK]++;
        return NAN;
    }
    res->stats.evaluated++;
    if ((res->stats.evaluated & 0x3fff) == 0 && x->fn &&
        x->fn(x->fctx, x->frac, res->stats.evaluated)) {
        res->stats.truncated = 1;
        x->stop = x->stopped = 1;
    }
    /* the headroom alone: the whole answer only for a point that enters
     * the ranking */
    double headroom = mfu_memory_headroom_from_base(sys, c, &ce->bound, &x->mbase);
    if (headroom < 0) {
        res->stats.pruned[MFU_PRUNE_MEMORY]++;
        note_closest(x, c, ce, headroom);
        return headroom;
    }
    res->stats.feasible++;
    count_variant(x, c);
    /* the ranking profile's step, given up as soon as a lower bound on it
     * (compute, recompute, the bubble's share, host overhead, then the
     * exposed in-layer communication) passes the k-th best, and with
     * distinct layouts the best variant of its own family when that is
     * ranked (a variant that cannot beat it cannot change the answer); the
     * full evaluation (both profiles, every breakdown) only for a
     * configuration that enters the top k */
    const mfu_shape_cost *k = x->o->rank_by_bound ? &ce->bound : &ce->expected;
    double D = (double)(c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP]);
    double gbt = (double)c->mbs * (double)c->grad_accum * D * (double)sys->train.seq;
    int fam = x->o->distinct == MFU_DISTINCT_LAYOUT ? ranked_family(x, c) : -1;
    double limit = INFINITY;
    if (res->n == x->o->top_k) limit = res->top[res->n - 1].score;
    if (fam >= 0 && res->top[fam].score < limit) limit = res->top[fam].score;
    mfu_ranked cand;
    /* strictly above the limit, as the score compares (1e-12: the
     * product's rounding never prunes a tie cmp_ranked would rank) */
    cand.score = mfu_step_time_below(sys, c, k, !x->o->rank_by_bound, limit * gbt * (1.0 + 1e-12)) / gbt;
    if (isinf(cand.score)) {
        res->stats.pruned[MFU_PRUNE_BOUND]++;
        return headroom;
    }
    res->stats.fully_evaluated++;
    mfu_memory mem;
    mfu_memory_from_base(sys, c, &ce->bound, &x->mbase, 0, &mem);
    cand.config = *c;
    cand.mem_bytes = mem.total_bytes;
    cand.variants = 0;
    if (res->n == x->o->top_k && cmp_ranked(&cand, &res->top[res->n - 1]) >= 0) return headroom;
    if (fam >= 0 && cmp_ranked(&cand, &res->top[fam]) >= 0) return headroom;
    if (mfu_evaluate_costs(sys, c, &ce->bound, &ce->expected, &mem, &cand.eval) != MFU_OK)
        return headroom;
    insert_top(res, x->o, &cand);
    x->inserts++;
    if (x->o->first_fit) x->stop = 1;
    return headroom;
}

/* Fewest fully recomputed layers per stage that make c fit (0 < n < ls),
 * or 0 if none is needed or none helps. Memory falls linearly in n, so two
 * points fix the line: n = ls (h_full, already scored) and n = 1. */
static int64_t min_rc_layers(ctx *x, mfu_config *c, const cache_entry *ce, double h_none,
                             double h_full)
{
    mfu_stages st;
    mfu_config_stages_held(x->sys, c, &st);
    int64_t ls = st.first > st.mid ? st.first : st.mid;
    if (st.last > ls) ls = st.last;
    if (ls < 3 || !(h_none < 0) || !(h_full >= 0)) return 0;
    mfu_memory m1;
    c->recompute = MFU_RC_FULL;
    c->recompute_layers = 1;
    mfu_memory_from_base(x->sys, c, &ce->bound, &x->mbase, 1, &m1);
    c->recompute_layers = -1;
    double step = (h_full - m1.headroom_bytes) / (double)(ls - 1);
    if (step <= 0) return 0;
    int64_t n = 1;
    if (m1.headroom_bytes < 0) n = 1 + (int64_t)ceil(-m1.headroom_bytes / step);
    return n < ls ? n : 0;
}

/* cpu_offload at the fewest offloaded layers that fit (F-RC-CPU-OFFLOAD:
 * the copies only add time, so fewer is never slower). The device keeps
 * L - N layers' activations, linear in N: N = 1 and h_none (N = 0) fix
 * the line. One point of the space, scored once. */
static void offload_point(ctx *x, mfu_config *c, const cache_entry *ce, double h_none)
{
    int64_t L = x->sys->layers;
    c->recompute = MFU_RC_CPU_OFFLOAD;
    c->recompute_layers = 1;
    if (c->ax[MFU_AX_PP] == 1 && L >= 3) {
        if (isnan(h_none)) { /* recompute fixed to cpu_offload: none was not scored */
            mfu_memory m0;
            c->recompute = MFU_RC_NONE;
            c->recompute_layers = -1;
            mfu_memory_from_base(x->sys, c, &ce->bound, &x->mbase, 1, &m0);
            h_none = m0.headroom_bytes;
            c->recompute = MFU_RC_CPU_OFFLOAD;
            c->recompute_layers = 1;
        }
        mfu_memory m1;
        mfu_memory_from_base(x->sys, c, &ce->bound, &x->mbase, 1, &m1);
        double step = m1.headroom_bytes - h_none;
        if (m1.headroom_bytes < 0)
            c->recompute_layers = step > 0 && 1.0 - m1.headroom_bytes / step < (double)(L - 1)
                                      ? 1 + (int64_t)ceil(-m1.headroom_bytes / step)
                                      : L - 1;
    }
    score_point(x, c, ce);
    c->recompute_layers = -1;
}

/* A recompute policy the search tries for this model and these frameworks. */
static int rc_usable_(const ctx *x, int rc)
{
    const mfu_rc_policy *p = &x->sys->rc[rc];
    if (p->kind == MFU_RCK_SELECTIVE && p->modules == 0 && !(p->mx_device | p->mx_host)) return 0;
    if ((p->modules & MFU_RCM_MLA_UP) && !x->sys->has_mla) return 0;
    /* CPU activation offload only when asked: what its copies cost beyond
     * the link's rate (a PCIe link shared with the NIC's GPUDirect traffic,
     * the host's memory bandwidth when a node's GPUs copy at once, pinned
     * host memory) is not modelled, and NVIDIA's guidance leaves it off
     * where throughput comes first (docs/frameworks.md) */
    if (rc == MFU_RC_CPU_OFFLOAD && !x->o->cpu_offload && x->o->fix_recompute != MFU_RC_CPU_OFFLOAD)
        return 0;
    return fw_admits(x, p->frameworks);
}

static void recompute_loop(ctx *x, mfu_config *c, const cache_entry *ce)
{
    const mfu_search_opts *o = x->o;
    double h_none = NAN, h_full = NAN;
    int fits_without = 0;
    mfu_memory_base_init(x->sys, c, &ce->bound, &x->mbase);
    int64_t slot = c->schedule == MFU_SCHED_DUALPIPEV ? 0 : c->vpp;
    x->mbase.memo = x->st_memo[c->zero][slot];
    x->mbase.memo_ready = &x->st_ready[c->zero][slot];
    for (int q = 0; q < x->n_rc && !x->stop; q++) {
        int rc = x->rc_list[q];
        if (o->fix_recompute >= 0 && rc != o->fix_recompute) {
            prune(x, MFU_PRUNE_CONSTRAINT, 1);
            continue;
        }
        /* recomputing only adds time: once nothing needs recomputing to
         * fit, every policy is dominated (F-RC-DOMINANCE) */
        if (fits_without) {
            prune(x, MFU_PRUNE_DOMINATED, 1);
            continue;
        }
        if (rc == MFU_RC_CPU_OFFLOAD) {
            offload_point(x, c, ce, h_none);
            continue;
        }
        c->recompute = rc;
        c->recompute_layers = -1;
        double hr = score_point(x, c, ce);
        if (rc == MFU_RC_NONE) {
            h_none = hr;
            fits_without = hr >= 0;
        }
        if (rc == MFU_RC_FULL) h_full = hr;
    }
    if (o->partial_recompute && !x->stop && !fits_without &&
        (o->fix_recompute < 0 || o->fix_recompute == MFU_RC_FULL)) {
        /* memory of "none" is needed even when recompute is fixed to full */
        if (isnan(h_none)) {
            mfu_memory m0;
            c->recompute = MFU_RC_NONE;
            mfu_memory_from_base(x->sys, c, &ce->bound, &x->mbase, 1, &m0);
            h_none = m0.headroom_bytes;
        }
        int64_t n = min_rc_layers(x, c, ce, h_none, h_full);
        if (n > 0) {
            c->recompute = MFU_RC_FULL;
            c->recompute_layers = n;
            score_point(x, c, ce);
            c->recompute_layers = -1;
        }
    }
}

/* Frameworks that offer a schedule (docs/frameworks.md FW-M4, FW-T5, FW-X4). */
static unsigned schedule_frameworks(mfu_schedule s)
{
    const unsigned MG = MFU_FW_MASK(MFU_FW_MEGATRON), TT = MFU_FW_MASK(MFU_FW_TORCHTITAN),
                   MX = MFU_FW_MASK(MFU_FW_MAXTEXT);
    switch (s) {
    case MFU_SCHED_1F1B: return MG | TT;
    case MFU_SCHED_INTERLEAVED: return MG | TT;
    case MFU_SCHED_GPIPE: return TT | MX;
    case MFU_SCHED_DUALPIPEV: return TT;
    default: return 0u; /* zb: ZB-H1 */
    }
}

static int rc_count(const ctx *x) { return x->n_rc; }

/* The zero stages a layout takes: none without a data or context axis,
 * 0-2 with one, and 3 (FSDP over the cp ranks) where cp > 1 and fsdp 1. */
static int zero_max(const mfu_config *c)
{
    if (c->ax[MFU_AX_DP] * c->ax[MFU_AX_CP] < 2) return 0;
    return c->ax[MFU_AX_CP] > 1 && c->ax[MFU_AX_FSDP] == 1 ? 3 : 2;
}

/* Points below the shape level (batch x zero x schedule x recompute), for
 * the space size when a whole shape is pruned. */
static uint64_t subtree_points(ctx *x, const mfu_config *c)
{
    const mfu_search_opts *o = x->o;
    int64_t D = c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
    int64_t per = c->mbs * D;
    int64_t lo = (o->batch_min_seqs + per - 1) / per, hi = o->batch_max_seqs / per;
    if (lo < 1) lo = 1;
    uint64_t n_ga = hi >= lo ? (uint64_t)(hi - lo + 1) : 1;
    uint64_t n_zero = o->fix_zero >= 0 ? 1 : (uint64_t)zero_max(c) + 1;
    int64_t pp = c->ax[MFU_AX_PP];
    if (x->sub_pp != pp) { /* schedule points per pp, counted once */
        uint64_t n_sched = 1;
        if (pp > 1 && o->fix_schedule < 0) {
            n_sched = 2;
            for (int64_t v = 2; v <= o->max_vpp && pp * v <= x->sys->layers + 2; v++) n_sched += 2;
            if (pp * 2 <= x->sys->layers + 2 && o->max_vpp >= 2) n_sched++; /* dualpipev */
        }
        x->sub_pp = pp;
        x->sub_sched = n_sched;
    }
    uint64_t n_sched = x->sub_sched;
    uint64_t n_rc = o->fix_recompute >= 0 ? 1 : (uint64_t)rc_count(x);
    return n_ga * n_zero * n_sched * n_rc;
}

static void schedule_loop(ctx *x, mfu_config *c, const cache_entry *ce)
{
    const mfu_search_opts *o = x->o;
    int64_t pp = c->ax[MFU_AX_PP];
    for (int s = 0; s < MFU_SCHED_COUNT && !x->stop; s++) {
        if (o->fix_schedule >= 0 && s != o->fix_schedule) continue;
        if (pp == 1 && s != MFU_SCHED_1F1B) continue;
        if (pp > 1 && !fw_admits(x, schedule_frameworks((mfu_schedule)s))) continue;
        if (s == MFU_SCHED_DUALPIPEV && !x->any && !(x->fw_shape & schedule_frameworks((mfu_schedule)s))) {
            /* its one framework already refused the shape (keeps the
             * search's pace where torchtitan cannot run the model) */
            if (o->max_vpp >= 2) prune(x, MFU_PRUNE_FRAMEWORK, o->fix_recompute >= 0 ? 1 : (uint64_t)rc_count(x));
            continue;
        }
        c->schedule = (mfu_schedule)s;
        int64_t vlo = s == MFU_SCHED_INTERLEAVED || s == MFU_SCHED_DUALPIPEV ? 2 : 1;
        int64_t vhi = (s == MFU_SCHED_INTERLEAVED || s == MFU_SCHED_GPIPE) && pp > 1 ? o->max_vpp
                      : s == MFU_SCHED_DUALPIPEV && o->max_vpp >= 2 ? 2 : 1;
        for (int64_t v = vlo; v <= vhi && pp * v <= x->sys->layers + 2 && !x->stop; v++) {
            if (o->fix_vpp > 0 && v != o->fix_vpp) continue;
            c->vpp = v;
            uint64_t n_rc = o->fix_recompute >= 0 ? 1 : (uint64_t)rc_count(x);
            const char *why;
            int reason;
            if (x->split_pp != pp) { /* a new pp: no split weighed yet */
                x->split_pp = pp;
                memset(x->split_done, 0, sizeof x->split_done);
                memset(x->split_have, 0, sizeof x->split_have);
            }
            int64_t slot = s == MFU_SCHED_DUALPIPEV ? 0 : v;
            if (v <= MFU_SEARCH_MAX_VPP && !x->split_have[slot]) { /* this vpp's, once per pp */
                mfu_config t = *c;
                t.vpp = slot ? slot : 2;
                t.schedule = slot ? MFU_SCHED_1F1B : MFU_SCHED_DUALPIPEV;
                x->split_ok[slot] = t.vpp * pp <= x->sys->layers + 2 && mfu_config_default_split(x->sys, &t) == MFU_OK;
                x->split_cfg[slot] = t;
                x->split_have[slot] = 1;
            }
            if (v > MFU_SEARCH_MAX_VPP || !x->split_ok[slot]) {
                prune(x, MFU_PRUNE_DIVISIBILITY, n_rc);
                continue;
            }
            c->split = x->split_cfg[slot].split;
            c->pp_first = x->split_cfg[slot].pp_first;
            c->pp_mid = x->split_cfg[slot].pp_mid;
            c->pp_last = x->split_cfg[slot].pp_last;
            if (!x->split_done[slot][s]) {
                x->split_rc[slot][s] = mfu_config_check_split(x->sys, c, &x->split_reason[slot][s],
                                                              &x->split_why[slot][s]);
                x->split_done[slot][s] = 1;
            }
            if (s == MFU_SCHED_GPIPE && v > 1 && !x->any && !(x->fw_shape & MFU_FW_MASK(MFU_FW_MAXTEXT)) &&
                x->split_rc[slot][s] == MFU_OK) {
                /* circular GPipe (vpp repeats) is MaxText's alone: Megatron
                 * has no GPipe (FW-M4) and torchtitan's runs one stage per
                 * rank (FW-T5). Where the shape left MaxText out, the rules
                 * would refuse the point, so they are not asked (1.35 M of
                 * DeepSeek-V3's 3.1 M schedule points on 2,048 H800s); the point's
                 * schedule switches pass here by construction (gpipe, pp > 1,
                 * a zero stage zero_loop offers). test_search's
                 * t_circular_gpipe_maxtext_only checks the claim */
                prune(x, MFU_PRUNE_FRAMEWORK, n_rc);
                continue;
            }
            if (mfu_config_check_sched_given(c, x->split_rc[slot][s], x->split_reason[slot][s],
                                             x->split_why[slot][s], &reason, &why) != MFU_OK) {
                prune(x, reason, n_rc);
                continue;
            }
            x->fw_sched = mfu_config_frameworks_sched(x->sys, c, x->fw_shape);
            if (!x->any && !x->fw_sched) {
                prune(x, MFU_PRUNE_FRAMEWORK, n_rc);
                continue;
            }
            recompute_loop(x, c, ce);
        }
    }
}

static void zero_loop(ctx *x, mfu_config *c, const cache_entry *ce)
{
    /* ZeRO 1: Megatron's distributed optimizer, MaxText's
     * shard_optimizer_over_data; ZeRO 2: Megatron-FSDP optim_grads; ZeRO 3
     * over the cp ranks alone: FSDP with dp_shard 1 (torchtitan, MaxText's
     * context axis, Megatron's FSDP2 or Megatron-FSDP) */
    const unsigned offered[4] = {MFU_FW_ALL, MFU_FW_MASK(MFU_FW_MEGATRON) | MFU_FW_MASK(MFU_FW_MAXTEXT),
                                 MFU_FW_MASK(MFU_FW_MEGATRON), MFU_FW_ALL};
    int zmax = zero_max(c);
    for (int z = 0; z <= zmax && !x->stop; z++) {
        if (x->o->fix_zero >= 0 && z != x->o->fix_zero) continue;
        unsigned off = offered[z];
        if (z == 3) {
            /* Megatron's FSDP runs without pp (FW-M1) and with untied
             * embeddings (FW-M8) only */
            int fsdp2 = c->ax[MFU_AX_DP] == 1 && c->ax[MFU_AX_EP] == 1;
            int mg = c->ax[MFU_AX_PP] == 1 && !(x->sys->model->tie_embeddings && fsdp2);
            off = MFU_FW_MASK(MFU_FW_TORCHTITAN) | MFU_FW_MASK(MFU_FW_MAXTEXT) |
                  (mg ? MFU_FW_MASK(MFU_FW_MEGATRON) : 0u);
        }
        /* weighed only where a framework the layout's shape admits offers
         * the stage: torchtitan refuses ZeRO 1 and 2 (FW-T1), MaxText ZeRO
         * 2 (FW-X1) at every schedule point, so a shape only they admit
         * has no point to weigh there (such stages held 0.8 M of the 1.7 M
         * schedule points DeepSeek-V3 on 2,048 H800s had left after the
         * circular-GPipe shortcut, each refused by the rules one by one) */
        if (!x->any) off &= x->fw_shape;
        if (x->o->fix_zero < 0 && !fw_admits(x, off)) continue;
        c->zero = z;
        schedule_loop(x, c, ce);
    }
}

static void batch_loop(ctx *x, mfu_config *c, const cache_entry *ce)
{
    const mfu_search_opts *o = x->o;
    int64_t D = c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
    int64_t per = c->mbs * D; /* sequences per micro-batch round */
    int64_t lo = (o->batch_min_seqs + per - 1) / per, hi = o->batch_max_seqs / per;
    if (lo < 1) lo = 1;
    if (hi < lo) {
        prune(x, MFU_PRUNE_BATCH, 1);
        return;
    }
    for (int64_t ga = lo; ga <= hi && !x->stop; ga++) {
        c->grad_accum = ga;
        zero_loop(x, c, ce);
    }
}

/* The switches below the shape at their first values: with them only the
 * axes and the shape can fail the rules. */
static void shape_defaults(mfu_config *c)
{
    c->grad_accum = 1;
    c->zero = 0;
    c->schedule = MFU_SCHED_1F1B;
    c->vpp = 1;
    c->split = MFU_SPLIT_EVEN;
    c->pp_first = c->pp_last = c->pp_mid = 0;
    c->recompute = MFU_RC_NONE;
    c->recompute_layers = -1;
}

/* Experts per layout: ep and etp fold over dp * fsdp * cp * tp (Megatron-
 * Core parallel folding); etp is 1 or tp (torchtitan's two; Megatron's
 * default is tp). */
static void mbs_loop(ctx *x, mfu_config *c)
{
    const mfu_search_opts *o = x->o;
    int64_t tp = c->ax[MFU_AX_TP];
    memset(x->st_ready, 0, sizeof x->st_ready); /* a new layout */
    for (int sp = 0; sp <= (tp > 1 ? 1 : 0) && !x->stop; sp++) {
        if (o->fix_sp >= 0 && sp != o->fix_sp) continue;
        c->sp = sp;
        /* the shape's divisibility (the axes, etp and sp: no rule of
         * mfu_config_check_shape reads mbs but mbs >= 1) and the
         * frameworks' shape rules that do not read mbs, once for every
         * mbs, before building any costs */
        c->mbs = 1;
        shape_defaults(c);
        const char *why;
        int reason;
        int shape_ok = mfu_config_check_shape(x->sys, c, &reason, &why) == MFU_OK;
        unsigned fw_axes = shape_ok ? mfu_config_frameworks_at(x->sys, c, MFU_LV_SHAPE, x->fw_want, NULL) : 0u;
        for (int64_t mbs = 1; mbs <= o->max_mbs && !x->stop; mbs++) {
            if (o->fix_mbs > 0 && mbs != o->fix_mbs) continue;
            /* powers of two and divisors of the fixed batch per replica */
            int64_t D = c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
            int fixed = o->batch_min_seqs == o->batch_max_seqs;
            if (fixed) {
                if (o->batch_min_seqs % (D * mbs)) continue;
            } else if (mbs & (mbs - 1)) {
                continue;
            }
            c->mbs = mbs;
            shape_defaults(c);
            if (!shape_ok) {
                prune(x, MFU_PRUNE_DIVISIBILITY, subtree_points(x, c));
                continue;
            }
            x->fw_shape = fw_axes ? mfu_config_frameworks_at(x->sys, c, MFU_LV_MBS, fw_axes, NULL) : 0u;
            if (!x->any && !x->fw_shape) {
                prune(x, MFU_PRUNE_FRAMEWORK, subtree_points(x, c));
                continue;
            }
            const cache_entry *ce = costs_for(x->sys, c, x->sc, &x->res->stats);
            batch_loop(x, c, ce);
        }
    }
}

static void shape_loop(ctx *x, mfu_config *c)
{
    const mfu_search_opts *o = x->o;
    const mfu_system *sys = x->sys;
    int64_t tp = c->ax[MFU_AX_TP];
    if (sys->moe_layers == 0) {
        c->etp = 1;
        c->ax[MFU_AX_EP] = 1;
        if (!allowed(o, MFU_AX_EP, 1) || (o->fix_etp > 1)) {
            prune(x, MFU_PRUNE_CONSTRAINT, 1);
            return;
        }
        mbs_loop(x, c);
        return;
    }
    int64_t fold = c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP] * c->ax[MFU_AX_CP] * tp;
    int64_t E = sys->moe_mlp->n_experts;
    for (int64_t etp = 1; etp <= tp && !x->stop; etp = etp == 1 ? (tp > 1 ? tp : 2) : tp + 1) {
        if (o->fix_etp > 0 && etp != o->fix_etp) continue;
        c->etp = etp;
        for (int64_t ep = 1; ep <= E && !x->stop; ep++) {
            if (E % ep || fold % (ep * etp)) continue;
            if (!allowed(o, MFU_AX_EP, ep)) {
                prune(x, MFU_PRUNE_CONSTRAINT, 1);
                continue;
            }
            c->ax[MFU_AX_EP] = ep;
            mbs_loop(x, c);
        }
    }
}

/* Enumerate factorizations of the devices over the dense axes (dp, fsdp,
 * tp, pp, cp; ep folds over them, shape_loop). Prefix-level constraint
 * prunes are common to every shard: shard 0 counts them. */
static const int DENSE_AXES[5] = {MFU_AX_DP, MFU_AX_FSDP, MFU_AX_TP, MFU_AX_PP, MFU_AX_CP};

static void factor_loop(ctx *x, mfu_config *c, int i, int64_t rest, double f0, double f1)
{
    if (x->stop) return;
    int a = DENSE_AXES[i];
    if (i == 4) {
        if (!allowed(x->o, a, rest)) {
            if (x->shard == 0) prune(x, MFU_PRUNE_CONSTRAINT, 1);
            return;
        }
        if (x->tuple++ % x->nshards != x->shard) return;
        c->ax[a] = rest;
        x->frac = f0;
        shape_loop(x, c);
        flush_variants(x, c);
        return;
    }
    int64_t nd = 0;
    for (int k = 0; k < x->n_div && x->div[k] <= rest; k++)
        if (rest % x->div[k] == 0) nd++;
    int64_t j = 0;
    for (int k = 0; k < x->n_div && x->div[k] <= rest && !x->stop; k++) {
        int64_t d = x->div[k];
        if (rest % d) continue;
        double g0 = f0 + (f1 - f0) * (double)j / (double)nd;
        double g1 = f0 + (f1 - f0) * (double)(j + 1) / (double)nd;
        j++;
        if (!allowed(x->o, a, d)) {
            if (x->shard == 0) prune(x, MFU_PRUNE_CONSTRAINT, 1);
            continue;
        }
        c->ax[a] = d;
        factor_loop(x, c, i + 1, rest / d, g0, g1);
    }
}

uint64_t mfu_search_shard_budget(const mfu_search_opts *o, int shard)
{
    uint64_t n = o->max_evaluations;
    return n / MFU_SEARCH_SHARDS + ((uint64_t)shard < n % MFU_SEARCH_SHARDS ? 1 : 0);
}

int mfu_search_shard(const mfu_system *sys, const mfu_search_opts *o, mfu_search_scratch *scratch,
                     int shard, mfu_progress_fn fn, void *fctx, mfu_search_result *out)
{
    memset(&out->stats, 0, sizeof out->stats);
    out->n = 0;
    ctx x;
    memset(&x, 0, sizeof x);
    x.sys = sys;
    x.o = o;
    x.sc = scratch;
    x.res = out;
    x.fn = fn;
    x.fctx = fctx;
    x.shard = shard;
    x.nshards = MFU_SEARCH_SHARDS;
    x.any = (o->frameworks & MFU_FW_ANY) != 0;
    x.fw_want = o->frameworks & mfu_platform_frameworks(sys->hw);
    if (x.any) x.fw_want = mfu_platform_frameworks(sys->hw);
    x.split_pp = -1;
    x.n_div = 0;
    for (int64_t d = 1; d * d <= sys->devices; d++) {
        if (sys->devices % d) continue;
        x.div[x.n_div++] = d;
        if (d * d != sys->devices) x.div[x.n_div++] = sys->devices / d;
    }
    for (int a = 1; a < x.n_div; a++) /* insertion sort: ascending */
        for (int b = a; b > 0 && x.div[b] < x.div[b - 1]; b--) {
            int64_t t = x.div[b];
            x.div[b] = x.div[b - 1];
            x.div[b - 1] = t;
        }
    x.n_rc = 0;
    for (int rc = 0; rc < MFU_RC_COUNT; rc++)
        if (rc_usable_(&x, rc)) x.rc_list[x.n_rc++] = rc;
    if (x.n_rc == 0) x.n_rc = 1;
    for (int rc = 0; rc < MFU_RC_COUNT; rc++) {
        mfu_config t;
        memset(&t, 0, sizeof t);
        t.recompute = rc;
        t.recompute_layers = -1;
        const char *why;
        int reason;
        x.rc_verdict[rc] = mfu_config_check_rc(sys, &t, &reason, &why) != MFU_OK ? reason : -1;
    }
    if (o->max_evaluations) {
        x.budget = mfu_search_shard_budget(o, shard);
        if (x.budget == 0) { /* fewer evaluations allowed than shards */
            out->stats.truncated = 1;
            return 0;
        }
    }
    mfu_config c;
    memset(&c, 0, sizeof c);
    c.tp_overlap = o->tp_overlap;
    c.ep_overlap = o->ep_overlap;
    c.vpp = 1;
    c.etp = 1;
    c.ax[MFU_AX_EP] = 1;
    c.recompute_layers = -1;
    factor_loop(&x, &c, 0, sys->devices, 0.0, 1.0);
    return x.stopped;
}

static int closer(const mfu_search_stats *b, const mfu_search_stats *a)
{
    if (b->closest_headroom_bytes != a->closest_headroom_bytes)
        return b->closest_headroom_bytes > a->closest_headroom_bytes;
    mfu_ranked x, y;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    x.config = b->closest;
    y.config = a->closest;
    return cmp_ranked(&x, &y) < 0;
}

void mfu_search_merge(const mfu_search_opts *o, const mfu_search_result *part,
                      mfu_search_result *out)
{
    mfu_search_stats *a = &out->stats;
    const mfu_search_stats *b = &part->stats;
    a->space_size += b->space_size;
    a->evaluated += b->evaluated;
    a->fully_evaluated += b->fully_evaluated;
    a->feasible += b->feasible;
    for (int i = 0; i < MFU_PRUNE_COUNT; i++) a->pruned[i] += b->pruned[i];
    a->truncated |= b->truncated;
    a->shape_costs += b->shape_costs;
    /* the closest miss: most headroom, ties by the configuration order (the
     * answer is the same for any merge order) */
    if (b->has_closest && (!a->has_closest || closer(b, a))) {
        a->has_closest = 1;
        a->closest = b->closest;
        a->closest_headroom_bytes = b->closest_headroom_bytes;
    }
    for (int i = 0; i < part->n; i++) insert_top(out, o, &part->top[i]);
}

typedef struct shard_progress {
    mfu_progress_fn fn;
    void *fctx;
    int shard;
    uint64_t done;   /* evaluated in earlier shards */
} shard_progress;

static int shard_progress_fn(void *p, double frac, uint64_t evaluated)
{
    shard_progress *sp = p;
    return sp->fn((sp->fctx), ((double)sp->shard + frac) / MFU_SEARCH_SHARDS, sp->done + evaluated);
}

int mfu_search(const mfu_system *sys, const mfu_search_opts *o, mfu_search_scratch *scratch,
               mfu_progress_fn fn, void *fctx, mfu_search_result *out)
{
    memset(&out->stats, 0, sizeof out->stats);
    out->n = 0;
    mfu_search_result part = {0, scratch->part, {0}};
    shard_progress sp = {fn, fctx, 0, 0};
    mfu_search_cache_clear(scratch);
    for (int k = 0; k < MFU_SEARCH_SHARDS; k++) {
        sp.shard = k;
        int stopped = mfu_search_shard(sys, o, scratch, k, fn ? shard_progress_fn : NULL, &sp, &part);
        mfu_search_merge(o, &part, out);
        sp.done += part.stats.evaluated;
        if (stopped) break; /* the callback's stop ends the whole search */
    }
    if (fn && !out->stats.truncated) fn(fctx, 1.0, out->stats.evaluated);
    return 0;
}
