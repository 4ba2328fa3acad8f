/* core/search.h -- the configuration search (docs/model.md F-SEARCH):
 * every legal factorization of the devices into
 * (dp, fsdp, tp, ep, pp, cp) x sp x zero x etp x schedule/vpp x mbs x batch
 * x recompute policy; divisibility first, then memory, then bounds; top-k.
 *
 * Pure and deterministic: no threads, no clock. The caller's callback sees
 * progress and may stop the search (deadline, cancel): the result is then
 * flagged truncated.
 */
#ifndef MFU_SEARCH_H
#define MFU_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "system.h"

#define MFU_MAX_ALLOWED 32
#define MFU_SEARCH_MAX_VPP 64     /* largest max_vpp (the API's limit) */
/* divisors of a device count <= 2^20 (API_MAX_DEVICES): at most 240 (720720) */
#define MFU_SEARCH_MAX_DIVISORS 256
#define MFU_MAX_TOP_K 1000

typedef struct mfu_search_opts {
    int top_k;                   /* 1..MFU_MAX_TOP_K */
    int rank_by_bound;           /* 0: expected time per token; 1: bound */
    uint64_t max_evaluations;    /* 0 = no limit */
    /* per axis: allowed values (n = 0: any divisor), and a maximum (0 = none) */
    int n_allowed[MFU_AX_COUNT];
    int64_t allowed[MFU_AX_COUNT][MFU_MAX_ALLOWED];
    int64_t max_ax[MFU_AX_COUNT];
    /* switches: -1 = search, else fixed (fix_recompute: an mfu_recompute slot) */
    int fix_sp, fix_zero, fix_schedule, fix_recompute;
    int64_t fix_etp, fix_vpp, fix_mbs;
    int64_t max_mbs, max_vpp;
    int partial_recompute;       /* also try the fewest fully recomputed layers that fit */
    int cpu_offload;             /* also try Megatron's CPU activation offload
                                  * (F-RC-CPU-OFFLOAD); off unless asked, or fixed */
    int tp_overlap, ep_overlap;  /* passed to every configuration */
    /* frameworks a configuration must be launchable by (MFU_FW_MASK bits;
     * MFU_FW_ANY also admits those none launches); default: the platform's */
    unsigned frameworks;
    /* global batch: fixed (min == max == training tokens / seq) or a range, in sequences */
    int64_t batch_min_seqs, batch_max_seqs;
    /* MFU_DISTINCT_LAYOUT: one entry per layout family (the axes dp, fsdp,
     * tp, ep, pp, cp), its best variant; MFU_DISTINCT_NONE: every variant */
    int distinct;
    /* stop each shard at its first configuration that fits (a feasibility
     * probe: the ranking is then not the best, only proof that one fits) */
    int first_fit;
} mfu_search_opts;

enum { MFU_DISTINCT_NONE = 0, MFU_DISTINCT_LAYOUT = 1 };

typedef struct mfu_ranked {
    mfu_config config;
    mfu_eval eval;
    double score;                /* seconds per token on the ranking profile */
    double mem_bytes;            /* the fullest stage's total (a tie-break) */
    uint64_t variants;           /* feasible points of its layout family */
} mfu_ranked;

/* Same layout family: the same dp, fsdp, tp, ep, pp, cp. */
int mfu_same_layout(const mfu_config *a, const mfu_config *b);

typedef struct mfu_search_stats {
    uint64_t space_size;         /* points enumerated */
    uint64_t evaluated;          /* points scored (memory and bound at least) */
    uint64_t fully_evaluated;    /* points given the full System Bound */
    uint64_t feasible;           /* points that fit in memory */
    uint64_t pruned[MFU_PRUNE_COUNT];
    int truncated;               /* budget or callback stopped the search */
    uint64_t shape_costs;        /* per-shape op inventories built (depends on how the
                                  * shards were spread over threads: not part of answers) */
    /* the infeasible point with the most headroom (the least excess) seen,
     * for a no-fit answer (exact: every stage weighed) */
    int has_closest;
    mfu_config closest;
    double closest_headroom_bytes;
} mfu_search_stats;

typedef struct mfu_search_result {
    int n;                       /* ranked configurations */
    mfu_ranked *top;             /* caller-provided, top_k entries */
    mfu_search_stats stats;
} mfu_search_result;

/* Progress: fraction in [0, 1] of the outer enumeration, points evaluated.
 * Return nonzero to stop. May be NULL. */
typedef int (*mfu_progress_fn)(void *ctx, double fraction, uint64_t evaluated);

/* Defaults: top_k 10, everything searched, max_mbs 16, max_vpp 8,
 * max tp = innermost tier's domain size, fixed batch, the platform's
 * frameworks. */
void mfu_search_defaults(const mfu_system *sys, mfu_search_opts *o);

/* Scratch: the caller hands memory so the core allocates nothing. */
typedef struct mfu_search_scratch {
    mfu_op *ops;                 /* MFU_SCRATCH_OPS */
    void *cache;                 /* mfu_search_cache_bytes() bytes */
    mfu_ranked *part;            /* top_k entries: one shard's ranking */
} mfu_search_scratch;
size_t mfu_search_cache_bytes(void);
/* Empty the per-shape cost cache (all bytes zero is empty: calloc'd memory
 * needs no clearing). The cache holds pure functions of the system and the
 * shape, so it may be kept across the shards of one search run on one
 * thread (fewer inventories built, the same answer); it must be cleared
 * before a search of another system. mfu_search() clears it. */
void mfu_search_cache_clear(mfu_search_scratch *sc);

/* The space is split into MFU_SEARCH_SHARDS fixed shards (axis tuples by
 * index modulo the count), so a caller may run them on several threads and
 * still get the same answer, bit for bit, as mfu_search(): each shard's
 * result depends on the shard alone, and merging is order-free (a total
 * order ranks configurations). max_evaluations is split evenly. */
#define MFU_SEARCH_SHARDS 16

/* All shards, one after another, merged into out. */
int mfu_search(const mfu_system *sys, const mfu_search_opts *o, mfu_search_scratch *scratch,
               mfu_progress_fn fn, void *ctx, mfu_search_result *out);
/* One shard into out (out->top: top_k entries); scratch->part unused;
 * scratch->cache must have been cleared for this system (see above). */
int mfu_search_shard(const mfu_system *sys, const mfu_search_opts *o, mfu_search_scratch *scratch,
                     int shard, mfu_progress_fn fn, void *ctx, mfu_search_result *out);
/* Add a shard's result to out (start from out->n = 0 and zero stats). */
void mfu_search_merge(const mfu_search_opts *o, const mfu_search_result *part,
                      mfu_search_result *out);
uint64_t mfu_search_shard_budget(const mfu_search_opts *o, int shard);


#endif
