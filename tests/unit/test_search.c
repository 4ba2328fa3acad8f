/* Configuration search: the best is at least as good as every evaluated
 * configuration, ranking is sorted and stable, constraints hold, budgets
 * truncate, output is bit-identical across runs. */
#include <stddef.h>

#include "check.h"
#include "search.h"
#include "testutil.h"

static mfu_op ops[MFU_MAX_OPS];

static mfu_ranked part[MFU_MAX_TOP_K];

static int run(const mfu_system *s, const mfu_search_opts *o, mfu_ranked *top, mfu_search_result *r)
{
    void *cache = malloc(mfu_search_cache_bytes());
    mfu_search_scratch sc = {ops, cache, part};
    r->top = top;
    int rc = mfu_search(s, o, &sc, NULL, NULL, r);
    free(cache);
    return rc;
}

static int stop_after_first(void *ctx, double frac, uint64_t n)
{
    (void)frac; (void)n;
    return ++*(int *)ctx >= 1;
}

/* The shared fixture: Llama-3-8B on 32 H100s, seq 4096, 512 sequences a
 * step, and its full ranking (all, ra) under the default options. The first
 * case that needs it sets it up (its checks counted once), so every case
 * also runs alone. */
static mfu_model m;
static mfu_hardware hw;
static mfu_training tr = {4096, 4096.0 * 512, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
static mfu_system sys;
static mfu_ranked all[MFU_MAX_TOP_K];
static mfu_search_result ra;
/* room for the cases' own rankings */
static mfu_ranked again[MFU_MAX_TOP_K];

static void fixture(void)
{
    static int ready;
    if (ready) return;
    ready = 1;
    CHECK(load_model("llama3-8b", &m) == 0);
    CHECK(load_hw("h100-sxm", &hw) == 0);
    CHECK(mfu_system_init(&sys, &m, &hw, &tr, 32, 0, ops) == MFU_OK);
    mfu_search_opts o;
    mfu_search_defaults(&sys, &o);
    o.top_k = MFU_MAX_TOP_K;
    CHECK(run(&sys, &o, all, &ra) == 0);
}

static void t_top1_is_head(void)
{
    fixture();
    mfu_search_opts o;
    mfu_search_defaults(&sys, &o);
    static mfu_ranked one[1];
    mfu_search_result r1;
    o.top_k = 1;
    CHECK(run(&sys, &o, one, &r1) == 0);
    CHECK(ra.n > 10);
    CHECK(r1.n == 1);
    /* the best of a top-1 search is the head of the full ranking */
    CHECK(memcmp(&one[0].config, &all[0].config, sizeof one[0].config) == 0);
    CHECK(one[0].score == all[0].score);
}

static void t_ranking_sorted(void)
{
    fixture();
    mfu_search_opts o;
    mfu_search_defaults(&sys, &o);
    /* sorted, feasible, consistent */
    int unsorted = 0, infeasible = 0, inconsistent = 0;
    for (int i = 0; i < ra.n; i++) {
        if (i && all[i].score < all[i - 1].score) unsorted++;
        if (!all[i].eval.feasible) infeasible++;
        int64_t prod = 1;
        for (int a = 0; a < MFU_AX_COUNT; a++) prod *= a == MFU_AX_EP ? 1 : all[i].config.ax[a];
        const mfu_config *c = &all[i].config;
        if (prod != 32 || c->mbs * c->grad_accum * c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP] != 512)
            inconsistent++;
        /* every configuration is launchable by a framework the search admits */
        if (!(all[i].eval.frameworks & o.frameworks)) inconsistent++;
    }
    CHECK_EQ_I(unsorted, 0);
    CHECK_EQ_I(infeasible, 0);
    CHECK_EQ_I(inconsistent, 0);
    /* stats add up: every enumerated point is pruned or evaluated */
    /* every point of the space is evaluated or pruned before evaluation
     * (memory and bound prunes happen to evaluated points) */
    CHECK(ra.stats.evaluated + ra.stats.pruned[MFU_PRUNE_DIVISIBILITY] +
          ra.stats.pruned[MFU_PRUNE_CONSTRAINT] + ra.stats.pruned[MFU_PRUNE_BATCH] +
          ra.stats.pruned[MFU_PRUNE_FRAMEWORK] + ra.stats.pruned[MFU_PRUNE_DOMINATED] == ra.stats.space_size);
    CHECK(ra.stats.feasible == ra.stats.fully_evaluated + ra.stats.pruned[MFU_PRUNE_BOUND]);
}

static void t_brute_force(void)
{
    fixture();
    mfu_search_opts o;
    mfu_search_defaults(&sys, &o);
    /* brute force: evaluate every (tp, pp, mbs, recompute, zero) that a
     * framework the search admits launches, directly; none beats the
     * search's best */
    int better = 0, tried = 0;
    for (int64_t tp = 1; tp <= 8; tp *= 2)
        for (int64_t pp = 1; pp <= 4; pp *= 2)
            for (int64_t mbs = 1; mbs <= 4; mbs *= 2)
                for (int rc = 0; rc < MFU_RC_COUNT; rc++)
                    for (int z = 0; z <= 2; z++) {
                        mfu_config c;
                        memset(&c, 0, sizeof c);
                        c.ax[MFU_AX_DP] = 32 / (tp * pp);
                        c.ax[MFU_AX_FSDP] = c.ax[MFU_AX_EP] = c.ax[MFU_AX_CP] = 1;
                        c.ax[MFU_AX_TP] = tp;
                        c.ax[MFU_AX_PP] = pp;
                        c.etp = 1; c.vpp = 1; c.mbs = mbs; c.zero = z;
                        c.grad_accum = 512 / (c.ax[MFU_AX_DP] * mbs);
                        c.recompute = rc;
                        c.recompute_layers = -1;
                        c.sp = tp > 1; /* torchtitan's way, Megatron's choice */
                        const char *why;
                        int reason;
                        if (mfu_config_default_split(&sys, &c) != MFU_OK) continue;
                        if (mfu_config_check(&sys, &c, &reason, &why) != MFU_OK) continue;
                        if (!(mfu_config_frameworks(&sys, &c, NULL) & o.frameworks)) continue;
                        mfu_eval ev;
                        CHECK(mfu_evaluate(&sys, &c, ops, &ev) == MFU_OK);
                        if (!ev.feasible) continue;
                        tried++;
                        if (ev.expected.step_time_s / 2097152.0 < all[0].score * (1 - 1e-12)) better++;
                    }
    CHECK(tried > 20);
    CHECK_EQ_I(better, 0);
}

static void t_bit_identical(void)
{
    fixture();
    mfu_search_opts o;
    mfu_search_defaults(&sys, &o);
    mfu_search_result rb;
    /* same input -> bit-identical output */
    o.top_k = MFU_MAX_TOP_K;
    CHECK(run(&sys, &o, again, &rb) == 0);
    CHECK(rb.n == ra.n);
    CHECK(memcmp(again, all, sizeof all[0] * (size_t)ra.n) == 0);
    CHECK(memcmp(&rb.stats, &ra.stats, sizeof ra.stats) == 0);
}

static void t_constraints(void)
{
    fixture();
    mfu_search_opts o;
    mfu_search_defaults(&sys, &o);
    mfu_search_result rb;
    /* constraints: fix tp = 2 and recompute = full */
    o.n_allowed[MFU_AX_TP] = 1;
    o.allowed[MFU_AX_TP][0] = 2;
    o.fix_recompute = MFU_RC_FULL;
    o.top_k = 50;
    CHECK(run(&sys, &o, again, &rb) == 0);
    int off = 0;
    for (int i = 0; i < rb.n; i++)
        off += again[i].config.ax[MFU_AX_TP] != 2 || again[i].config.recompute != MFU_RC_FULL;
    CHECK(rb.n > 0);
    CHECK_EQ_I(off, 0);
    CHECK(rb.stats.pruned[MFU_PRUNE_CONSTRAINT] > 0);
}

static void t_budget(void)
{
    fixture();
    mfu_search_opts o;
    mfu_search_result rb;
    /* budget: max_evaluations truncates and says so (split over the shards:
     * never more than asked) */
    mfu_search_defaults(&sys, &o);
    o.max_evaluations = 100;
    CHECK(run(&sys, &o, again, &rb) == 0);
    CHECK(rb.stats.truncated);
    CHECK(rb.stats.evaluated <= 100 && rb.stats.evaluated > 50);
}

static void t_shards(void)
{
    fixture();
    mfu_search_opts o;
    /* shards: running them in any order (as threads would) and merging gives
     * the sequential answer bit for bit */
    mfu_search_defaults(&sys, &o);
    o.top_k = 50;
    static mfu_ranked seq[50], merged[50], one_part[50];
    mfu_search_result rs, rm = {0, merged, {0}}, rp = {0, one_part, {0}};
    CHECK(run(&sys, &o, seq, &rs) == 0);
    void *cache2 = malloc(mfu_search_cache_bytes());
    mfu_search_scratch sc2 = {ops, cache2, NULL};
    mfu_search_cache_clear(&sc2);
    for (int k = MFU_SEARCH_SHARDS - 1; k >= 0; k--) {
        CHECK(mfu_search_shard(&sys, &o, &sc2, k, NULL, NULL, &rp) == 0);
        mfu_search_merge(&o, &rp, &rm);
    }
    free(cache2);
    CHECK(rm.n == rs.n);
    CHECK(memcmp(merged, seq, sizeof seq[0] * (size_t)rs.n) == 0);
    /* inventories built depend on the shard order (a cache kept across
     * shards): the one statistic that may differ, and not reported */
    rm.stats.shape_costs = rs.stats.shape_costs;
    CHECK(rm.stats.has_closest == rs.stats.has_closest);
    CHECK(rm.stats.closest_headroom_bytes == rs.stats.closest_headroom_bytes);
    CHECK(memcmp(&rm.stats.closest, &rs.stats.closest, sizeof rs.stats.closest) == 0);
    CHECK(memcmp(&rm.stats, &rs.stats, sizeof rs.stats) == 0);
}

static void t_bound_below_step(void)
{
    fixture();
    /* the search's pruning (mfu_step_time_below) is sound and exact: over
     * every configuration of the full ranking above, both profiles, with
     * limits below, at and above the step, it answers either the step
     * itself or +INFINITY, and +INFINITY only when the step is longer than
     * the limit; it prunes some of the points at half their step (the
     * communication-free part, always computed, is more than half of most
     * steps here) and none at their step */
    static const double scale[5] = {0.5, 0.9, 1.0 - 1e-9, 1.0, 1.5};
    int wrong = 0, pruned_half = 0, pruned_at = 0, n = 0;
    for (int i = 0; i < ra.n; i++) {
        mfu_shape sh;
        mfu_config_shape(&sys, &all[i].config, &sh);
        mfu_shape_cost k[2];
        mfu_shape_costs(&sys, &sh, NULL, ops, &k[0]);
        mfu_shape_costs(&sys, &sh, &hw.eff, ops, &k[1]);
        for (int e = 0; e < 2; e++) {
            double step = mfu_step_time_below(&sys, &all[i].config, &k[e], e, INFINITY);
            mfu_eval ev;
            CHECK(mfu_evaluate(&sys, &all[i].config, ops, &ev) == 0);
            wrong += step != (e ? ev.expected.step_time_s : ev.bound.step_time_s);
            for (int j = 0; j < 5; j++) {
                double got = mfu_step_time_below(&sys, &all[i].config, &k[e], e, scale[j] * step);
                wrong += !(got == step || (isinf(got) && step > scale[j] * step));
                pruned_half += j == 0 && isinf(got);
                pruned_at += j >= 3 && isinf(got);
            }
            n++;
        }
    }
    CHECK(n > 100);
    CHECK_EQ_I(wrong, 0);
    CHECK(pruned_half > 0);
    CHECK_EQ_I(pruned_at, 0);
}

static void t_distinct_layouts(void)
{
    fixture();
    mfu_search_opts o;
    /* distinct rankings (issue 11): with MFU_DISTINCT_LAYOUT each layout
     * family (dp, fsdp, tp, ep, pp, cp) appears once, as its best variant;
     * the families are the k best of the full ranking's families, in order.
     * The reference is computed here from the full (distinct none) ranking
     * of 1,000, which holds every feasible point of this small space. */
    mfu_system s8;
    CHECK(mfu_system_init(&s8, &m, &hw, &tr, 8, 0, ops) == MFU_OK);
    mfu_search_defaults(&s8, &o);
    o.top_k = MFU_MAX_TOP_K;
    o.max_mbs = 2;
    o.max_vpp = 2;
    static mfu_ranked full[MFU_MAX_TOP_K], fam[10];
    mfu_search_result rf, rd;
    CHECK(run(&s8, &o, full, &rf) == 0);
    /* the whole feasible space is in `full` */
    CHECK((uint64_t)rf.n == rf.stats.feasible && rf.n < MFU_MAX_TOP_K);
    o.top_k = 10;
    o.distinct = MFU_DISTINCT_LAYOUT;
    CHECK(run(&s8, &o, fam, &rd) == 0);
    /* reference: walk the full ranking, keep each family's first */
    mfu_ranked ref[10];
    int nref = 0;
    for (int i = 0; i < rf.n && nref < 10; i++) {
        int seen = 0;
        for (int k = 0; k < nref; k++) seen |= mfu_same_layout(&ref[k].config, &full[i].config);
        if (!seen) ref[nref++] = full[i];
    }
    CHECK_EQ_I(rd.n, nref);
    int differ = 0, dup = 0, counts_wrong = 0;
    for (int i = 0; i < rd.n && i < nref; i++) {
        differ += memcmp(&fam[i].config, &ref[i].config, sizeof fam[i].config) != 0 ||
                  fam[i].score != ref[i].score;
        for (int k = 0; k < i; k++) dup += mfu_same_layout(&fam[k].config, &fam[i].config);
        /* variants: the feasible points of the family, counted in the
         * full ranking (it holds them all) */
        uint64_t n = 0;
        for (int k = 0; k < rf.n; k++) n += mfu_same_layout(&full[k].config, &fam[i].config);
        counts_wrong += fam[i].variants != n;
    }
    CHECK_EQ_I(differ, 0);
    CHECK_EQ_I(dup, 0);
    CHECK_EQ_I(counts_wrong, 0);
    CHECK(rd.n > 1 && fam[0].variants > 1);
    /* the statistics do not depend on the grouping */
    CHECK_EQ_I(rd.stats.feasible, rf.stats.feasible);
}

static void t_first_fit(void)
{
    fixture();
    mfu_search_opts o;
    /* first_fit: a feasibility probe stops each shard at its first fit */
    mfu_search_defaults(&sys, &o);
    o.first_fit = 1;
    o.top_k = 1;
    mfu_search_result rp1;
    static mfu_ranked probe[1];
    CHECK(run(&sys, &o, probe, &rp1) == 0);
    CHECK_EQ_I(rp1.n, 1);
    CHECK(rp1.stats.feasible <= MFU_SEARCH_SHARDS);
    CHECK(probe[0].eval.feasible);
}

static void t_closest_miss(void)
{
    fixture();
    mfu_search_opts o;
    /* the closest miss (no-fit answers): Llama-3-8B on one H100 does not
     * fit (8 B params x 16 bytes of bf16 weights, fp32 gradients, fp32
     * master and Adam moments = 128 GB > 85 GB). The reported closest has the exact headroom of its
     * configuration. */
    mfu_training t2 = {4096, 4096.0 * 1024, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    mfu_system s2;
    CHECK(mfu_system_init(&s2, &m, &hw, &t2, 1, 0, ops) == MFU_OK);
    mfu_search_defaults(&s2, &o);
    static mfu_ranked none_fit[4];
    mfu_search_result rn;
    o.top_k = 4;
    CHECK(run(&s2, &o, none_fit, &rn) == 0);
    CHECK_EQ_I(rn.n, 0);
    CHECK(rn.stats.has_closest);
    mfu_eval ev;
    CHECK(mfu_evaluate(&s2, &rn.stats.closest, ops, &ev) == MFU_OK);
    CHECK(!ev.feasible);
    CHECK_NEAR(ev.mem.headroom_bytes, rn.stats.closest_headroom_bytes, 1e-12);
    /* on one device the only freedom is mbs and recompute: full
     * recompute at mbs 1 holds the fewest activations */
    CHECK_EQ_I(rn.stats.closest.mbs, 1);
    CHECK_EQ_I(rn.stats.closest.recompute, MFU_RC_FULL);
    /* ... unless CPU offload is searched too: all layers but one
     * offloaded keep one layer's activations on the device
     * (F-RC-CPU-OFFLOAD), fewer than full recompute's 32 layer inputs
     * and one rematerialised layer */
    o.cpu_offload = 1;
    mfu_search_result ro;
    CHECK(run(&s2, &o, none_fit, &ro) == 0);
    CHECK_EQ_I(ro.n, 0);
    CHECK_EQ_I(ro.stats.closest.recompute, MFU_RC_CPU_OFFLOAD);
    CHECK_EQ_I(ro.stats.closest.recompute_layers, 31);
    CHECK(ro.stats.closest_headroom_bytes > rn.stats.closest_headroom_bytes);
}

static void t_callback_stops(void)
{
    fixture();
    mfu_search_opts o;
    mfu_search_result rb;
    /* a callback can stop it */
    mfu_search_defaults(&sys, &o);
    int calls = 0;
    void *cache = malloc(mfu_search_cache_bytes());
    mfu_search_scratch sc = {ops, cache, part};
    rb.top = again;
    /* progress is reported every 16384 evaluations of a shard: a big space */
    mfu_system big;
    mfu_training t2 = {4096, 4096.0 * 4096, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    CHECK(mfu_system_init(&big, &m, &hw, &t2, 1024, 0, ops) == MFU_OK);
    mfu_search_defaults(&big, &o);
    o.frameworks |= MFU_FW_ANY; /* the whole space: more than 16384 per shard */
    CHECK(mfu_search(&big, &o, &sc, stop_after_first, &calls, &rb) == 0);
    CHECK(calls == 1);
    CHECK(rb.stats.truncated);
    free(cache);
}

static void t_batch_range(void)
{
    fixture();
    mfu_search_opts o;
    mfu_search_result rb;
    /* a batch range: configurations of different global batches, ranked by
     * time per token */
    mfu_search_defaults(&sys, &o);
    o.batch_min_seqs = 256;
    /* MFU_TEST_QUICK (tests/ci/valgrind.sh): half the range; this search is
     * most of the test's time, ~35x slower under memcheck */
    o.batch_max_seqs = getenv("MFU_TEST_QUICK") ? 512 : 1024;
    o.top_k = 20;
    CHECK(run(&sys, &o, again, &rb) == 0);
    int outside = 0;
    for (int i = 0; i < rb.n; i++) {
        double seqs = (double)again[i].eval.global_batch_tokens / 4096;
        outside += seqs < 256 || seqs > 1024;
    }
    CHECK(rb.n == 20);
    CHECK_EQ_I(outside, 0);
}

static void t_cpu_offload_fit(void)
{
    mfu_search_opts o;
    /* CPU activation offload (F-RC-CPU-OFFLOAD) is searched only when
     * asked; then at the fewest offloaded layers that fit: Llama 3 70B
     * on 64 GB200 at Megatron Bridge's layout (FSDP 64, mbs 1, seq
     * 8192; llama3_workload_base_configs.py) fits with N layers
     * offloaded and not with N - 1 */
    mfu_model m70;
    mfu_hardware gb;
    mfu_system s70;
    CHECK(test_system(&s70, &m70, &gb, "llama3-70b", "gb200-nvl72", 8192, 8192.0 * 128, 64, ops) == 0);
    mfu_search_defaults(&s70, &o);
    o.top_k = MFU_MAX_TOP_K;
    static mfu_ranked best[MFU_MAX_TOP_K];
    mfu_search_result r70;
    CHECK(run(&s70, &o, best, &r70) == 0);
    int offl = 0;
    for (int i = 0; i < r70.n; i++) offl += best[i].config.recompute == MFU_RC_CPU_OFFLOAD;
    CHECK(r70.n > 0);
    CHECK_EQ_I(offl, 0);
    o.cpu_offload = 1;
    o.n_allowed[MFU_AX_FSDP] = 1;
    o.allowed[MFU_AX_FSDP][0] = 64;
    o.fix_mbs = 1;
    o.fix_recompute = MFU_RC_CPU_OFFLOAD;
    CHECK(run(&s70, &o, best, &r70) == 0);
    CHECK_EQ_I(r70.n, 1);
    if (r70.n == 1) {
        mfu_config c = best[0].config;
        CHECK_EQ_I(c.recompute, MFU_RC_CPU_OFFLOAD);
        CHECK(c.recompute_layers > 0 && c.recompute_layers <= 20); /* the recipe's 20 fit */
        mfu_eval e;
        CHECK(mfu_evaluate(&s70, &c, ops, &e) == MFU_OK && e.feasible);
        c.recompute_layers--;
        if (c.recompute_layers > 0) {
            CHECK(mfu_evaluate(&s70, &c, ops, &e) == MFU_OK);
            CHECK(!e.feasible);
        }
    }
}

/* core/search.c's schedule loop refuses circular GPipe (gpipe, vpp > 1)
 * without asking the framework rules wherever MaxText is out: it holds
 * that only MaxText runs it (docs/frameworks.md FW-M4: Megatron-LM has no
 * GPipe; FW-T5: torchtitan's GPipe runs one stage per rank; FW-X4:
 * MaxText's pipeline is GPipe with num_pipeline_repeats = vpp). Here the
 * rules themselves: over pp, vpp, zero, micro-batches, cp and fsdp on a
 * dense and an MoE model, Megatron and torchtitan admit none of them, and
 * MaxText on a TPU does admit some (so the points are real ones). */
static void t_circular_gpipe_maxtext_only(void)
{
    fixture();
    static mfu_model mm, mt;
    static mfu_hardware tpu;
    static mfu_system smoe, stpu;
    static mfu_training trm = {4096, 4096.0 * 512, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    CHECK(load_model("deepseek-v2-lite", &mm) == 0);
    CHECK(mfu_system_init(&smoe, &mm, &hw, &trm, 64, 0, ops) == MFU_OK);
    CHECK(load_model("llama3-8b", &mt) == 0);
    CHECK(load_hw("tpu-v5p", &tpu) == 0);
    CHECK(mfu_system_init(&stpu, &mt, &tpu, &trm, 64, 0, ops) == MFU_OK);
    const unsigned gpu_fw = MFU_FW_MASK(MFU_FW_MEGATRON) | MFU_FW_MASK(MFU_FW_TORCHTITAN);
    const mfu_system *gpus[2] = {&sys, &smoe};
    int admitted_gpu = 0, tried = 0, admitted_mx = 0;
    for (int k = 0; k < 3; k++) {
        const mfu_system *s = k < 2 ? gpus[k] : &stpu;
        for (int64_t pp = 2; pp <= 4; pp *= 2)
            for (int64_t v = 2; v <= 4; v++)
                for (int64_t cp = 1; cp <= 2; cp++)
                    for (int64_t fsdp = 1; fsdp <= 2; fsdp++)
                        for (int z = 0; z <= 3; z++)
                            for (int64_t ga = 1; ga <= 16; ga++) {
                                mfu_config c;
                                memset(&c, 0, sizeof c);
                                c.ax[MFU_AX_PP] = pp;
                                c.ax[MFU_AX_CP] = cp;
                                c.ax[MFU_AX_FSDP] = fsdp;
                                c.ax[MFU_AX_TP] = 2;
                                c.ax[MFU_AX_EP] = 1;
                                c.ax[MFU_AX_DP] = s->devices / (pp * cp * fsdp * 2);
                                c.sp = 1;
                                c.etp = s->moe_layers > 0 ? 2 : 1;
                                c.mbs = 1;
                                c.grad_accum = ga;
                                c.zero = z;
                                c.schedule = MFU_SCHED_GPIPE;
                                c.vpp = v;
                                c.recompute_layers = -1;
                                if (mfu_config_default_split(s, &c) != MFU_OK) continue;
                                if (k < 2) {
                                    tried++;
                                    admitted_gpu += mfu_config_frameworks_sched(s, &c, gpu_fw) != 0;
                                } else {
                                    admitted_mx += mfu_config_frameworks_sched(s, &c, MFU_FW_MASK(MFU_FW_MAXTEXT)) != 0;
                                }
                            }
    }
    CHECK(tried > 1000);
    CHECK_EQ_I(admitted_gpu, 0);
    CHECK(admitted_mx > 0);
}

/* Every cost of a shape but the shape itself (all doubles from avg on). */
static int same_costs(const mfu_shape_cost *a, const mfu_shape_cost *b)
{
    size_t off = offsetof(mfu_shape_cost, avg);
    return memcmp((const char *)a + off, (const char *)b + off, sizeof *a - off) == 0;
}

/* The layers' average forward as the one-pass inventory sums it: each
 * run's forward ops in order, the runs in order, each weighed by its share
 * of the layers (add_cost: avg += count / layers x the layer's). */
static double avg_fwd_one_pass(const mfu_system *s, const mfu_shape *sh, const mfu_efficiency *eff)
{
    double avg = 0.0;
    for (int r = 0; r < s->model->n_runs; r++) {
        int n = mfu_ops_layer(s->model, r, sh, ops, MFU_MAX_OPS);
        double f = 0.0;
        for (int i = 0; i < n; i++)
            if (ops[i].phase == MFU_FWD) f += mfu_op_time(&ops[i], s->hw, s->train.dtype, eff);
        avg += (double)s->model->runs[r].count / (double)s->layers * f;
    }
    return avg;
}

/* F-SEARCH-MEMO: the search builds an MoE shape's costs on a dense part
 * (the dense runs before the first MoE run, embedding, head and the MoE
 * runs' attention blocks) built once per (tp, cp, sp, mbs) and shared by
 * that shape's ep x etp variants. The answer must be the one-shot
 * inventory's to the bit, whichever variant built the shared part: on
 * DeepSeek-V3, on it with its 58 MoE layers cut into six runs (past the
 * MFU_DENSE_MOE_RUNS the part keeps) and with dense and MoE runs
 * interleaved (D1 M20 D1 M20 D1 M18: a dense run after an MoE run is
 * summed in run order), against an independent sum of the inventory's
 * forward ops in run order. */
static void t_moe_dense_memo_exact(void)
{
    static mfu_model ds, ds6, dsi;
    static mfu_hardware h800;
    static mfu_system s1, s6, si;
    static mfu_training trm = {4096, 4096.0 * 1024, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    CHECK(load_model("deepseek-v3", &ds) == 0);
    CHECK(load_hw("h800", &h800) == 0);
    CHECK(h800.has_profile);
    CHECK(ds.n_runs == 2 && ds.runs[1].mlp.kind == MFU_MLP_MOE && ds.runs[1].count == 58);
    ds6 = dsi = ds;
    static const int64_t counts[6] = {10, 10, 10, 10, 10, 8}; /* 58 */
    for (int k = 0; k < 6; k++) {
        ds6.runs[1 + k] = ds.runs[1];
        ds6.runs[1 + k].count = counts[k];
        dsi.runs[k] = ds.runs[k % 2];
        dsi.runs[k].count = k % 2 ? (k == 5 ? 18 : 20) : 1; /* 3 dense, 58 MoE */
    }
    ds6.n_runs = 7;
    dsi.n_runs = 6;
    CHECK(mfu_system_init(&s1, &ds, &h800, &trm, 256, 0, ops) == MFU_OK);
    CHECK(mfu_system_init(&s6, &ds6, &h800, &trm, 256, 0, ops) == MFU_OK);
    CHECK(mfu_system_init(&si, &dsi, &h800, &trm, 256, 0, ops) == MFU_OK);
    const mfu_system *systems[3] = {&s1, &s6, &si};
    static const int64_t eps[3] = {1, 8, 32};
    int compared = 0, wrong = 0, ep_matters = 0;
    for (int k = 0; k < 3; k++)
        for (int64_t tp = 1; tp <= 4; tp *= 2)
            for (int sp = 0; sp <= (tp > 1); sp++)
                for (int64_t mbs = 1; mbs <= 3; mbs += 2) {
                    mfu_config c;
                    memset(&c, 0, sizeof c);
                    c.ax[MFU_AX_TP] = tp;
                    c.ax[MFU_AX_CP] = 1 + (int64_t)(mbs == 3);
                    c.sp = sp;
                    c.mbs = mbs;
                    /* the shared part built by the last variant */
                    c.ax[MFU_AX_EP] = 32;
                    c.etp = tp;
                    mfu_shape s0;
                    mfu_config_shape(systems[k], &c, &s0);
                    static mfu_shape_dense d;
                    mfu_shape_costs2_dense(systems[k], &s0, ops, &d);
                    double fwd_ep1 = 0;
                    for (int e = 0; e < 3; e++)
                        for (int64_t etp = 1; etp <= tp; etp = etp == 1 && tp > 1 ? tp : tp + 1) {
                            c.ax[MFU_AX_EP] = eps[e];
                            c.etp = etp;
                            mfu_shape sh;
                            mfu_config_shape(systems[k], &c, &sh);
                            mfu_shape_cost b, x, b2, x2, b1, x1;
                            mfu_shape_costs2_moe(systems[k], &sh, ops, &d, &b, &x);
                            mfu_shape_costs2(systems[k], &sh, ops, &b2, &x2);
                            mfu_shape_costs(systems[k], &sh, NULL, ops, &b1);
                            mfu_shape_costs(systems[k], &sh, &h800.eff, ops, &x1);
                            wrong += !same_costs(&b, &b2) + !same_costs(&x, &x2);
                            wrong += !same_costs(&b, &b1) + !same_costs(&x, &x1);
                            wrong += b.avg.fwd_s != avg_fwd_one_pass(systems[k], &sh, NULL);
                            wrong += x.avg.fwd_s != avg_fwd_one_pass(systems[k], &sh, &h800.eff);
                            if (e == 0 && etp == 1) fwd_ep1 = x.avg_moe.fwd_s;
                            if (e == 2 && etp == 1) ep_matters += x.avg_moe.fwd_s != fwd_ep1;
                            compared++;
                        }
                }
    CHECK(compared > 100);
    CHECK_EQ_I(wrong, 0);
    CHECK(ep_matters > 0); /* the MoE part does follow ep */
}

/* The same memo in the search: its ranking of DeepSeek-V3 against
 * mfu_evaluate, configuration by configuration. */
static void t_moe_search_is_evaluate(void)
{
    static mfu_model ds;
    static mfu_hardware h800;
    static mfu_system s1;
    static mfu_training trm = {4096, 4096.0 * 1024, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    CHECK(load_model("deepseek-v3", &ds) == 0);
    CHECK(load_hw("h800", &h800) == 0);
    CHECK(mfu_system_init(&s1, &ds, &h800, &trm, 256, 0, ops) == MFU_OK);
    mfu_search_opts o;
    mfu_search_defaults(&s1, &o);
    o.top_k = 50;
    o.max_mbs = 2;
    o.max_vpp = 2;
    mfu_search_result r;
    CHECK(run(&s1, &o, again, &r) == 0);
    CHECK(r.n > 10);
    int differ = 0;
    for (int i = 0; i < r.n; i++) {
        mfu_eval ev;
        CHECK(mfu_evaluate(&s1, &again[i].config, ops, &ev) == 0);
        differ += ev.expected.step_time_s != again[i].eval.expected.step_time_s;
        differ += ev.bound.step_time_s != again[i].eval.bound.step_time_s;
        differ += ev.mem.total_bytes != again[i].eval.mem.total_bytes;
    }
    CHECK_EQ_I(differ, 0);
}

static const check_case cases[] = {
    CHECK_CASE(t_top1_is_head),
    CHECK_CASE(t_ranking_sorted),
    CHECK_CASE(t_brute_force),
    CHECK_CASE(t_bit_identical),
    CHECK_CASE(t_constraints),
    CHECK_CASE(t_budget),
    CHECK_CASE(t_shards),
    CHECK_CASE(t_bound_below_step),
    CHECK_CASE(t_distinct_layouts),
    CHECK_CASE(t_first_fit),
    CHECK_CASE(t_closest_miss),
    CHECK_CASE(t_callback_stops),
    CHECK_CASE(t_batch_range),
    CHECK_CASE(t_cpu_offload_fit),
    CHECK_CASE(t_circular_gpipe_maxtext_only),
    CHECK_CASE(t_moe_dense_memo_exact),
    CHECK_CASE(t_moe_search_is_evaluate),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
