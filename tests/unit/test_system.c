/* System Bound: closed forms worked by hand, bubble fractions, ZeRO memory
 * (Rajbhandari et al. 2020), hand-computed collective times, the gap
 * identity, monotonicity and lower bounds. */
#include "check.h"
#include "search.h"
#include "system.h"
#include "testutil.h"

static mfu_op ops[MFU_MAX_OPS];

/* Closed forms of a step's communication-to-compute ratio and of MFU/HFU,
 * with their numbers worked by hand below (they were test-only helpers of
 * core/search.h). */

static double closed_dp_ratio(double params, double tokens_per_device, double dp, double peak_flops,
                            double bw_bytes_s, double bytes_per_param)
{
    /* t_comm = 2 P b (DP-1)/DP / B ; t_compute = 4 T P / F (backward) */
    double t_comm = 2.0 * params * bytes_per_param * (dp - 1.0) / dp / bw_bytes_s;
    double t_comp = 4.0 * tokens_per_device * params / peak_flops;
    return t_comm / t_comp;
}

static double closed_zero3_ratio(double seq, double mbs, double dp, double peak_flops,
                               double bw_bytes_s, double layer_params)
{
    /* t_comm = 2 P_l 2 (DP-1)/DP / B ; t_compute = 2 s mbs P_l / F (layer forward) */
    double t_comm = 2.0 * layer_params * 2.0 * (dp - 1.0) / dp / bw_bytes_s;
    double t_comp = 2.0 * seq * mbs * layer_params / peak_flops;
    return t_comm / t_comp;
}

static void closed_mfu_hfu(double params, double tokens, double step_s, double peak_flops,
                         double recompute_extra, double *mfu, double *hfu)
{
    double required = 6.0 * tokens * params; /* 6 P T (Kaplan et al. 2020 sec. 2.1: C = 6 N D) */
    *mfu = required / (step_s * peak_flops);
    *hfu = required * (1.0 + recompute_extra) / (step_s * peak_flops);
}



#define cfg test_cfg

/* an 8-GPU NVLink node + IB with zero latency, ideal efficiency */
static void ideal_hw(mfu_hardware *hw)
{
    memset(hw, 0, sizeof *hw);
    snprintf(hw->name, sizeof hw->name, "ideal");
    hw->peak_flops[MFU_DT_BF16] = 989.4e12;
    hw->hbm_bytes = 80e9;
    hw->hbm_bw_bytes_s = 3.35e12;
    hw->n_tiers = 2;
    hw->tiers[0] = (mfu_net_tier){"nvlink", 8, 450e9, 0};
    hw->tiers[1] = (mfu_net_tier){"ib", 1 << 20, 50e9, 0};
    mfu_efficiency_ideal(&hw->eff);
}

/* What most cases start from: Llama-3-8B on 8 ideal devices (the cases
 * change it, each from a fresh copy). */
static mfu_model m;
static mfu_hardware hw;
static mfu_training tr;
static mfu_system sys;
static mfu_params p;

static void fixture(void)
{
    CHECK(load_model("llama3-8b", &m) == 0);
    ideal_hw(&hw);
    tr = (mfu_training){4096, 4096.0 * 64, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    CHECK(mfu_system_init(&sys, &m, &hw, &tr, 8, 0, ops) == MFU_OK);
    mfu_model_params(&m, &p);
}

static void t_closed_forms(void)
{
    /* ---- the closed forms on a 7B model, H100 (F = 989e12 bf16 dense, B =
     * 900e9 NVLink: NVIDIA H100 SXM datasheet), worked by hand: DP 32 with
     * 4M tokens: 2 x 7e9 x 2 x 31/32 / 900e9 = 30.1 ms against 4 x 125000 x
     * 7e9 / 989e12 = 3.54 s -> 0.0085; DP 128: 0.0349; DP 512: 0.1404; DP
     * 128 with 512 tokens per device: 2.129; ZeRO-3 over 128 at seq 4096,
     * mbs 2, a 4096-wide layer (16 x 4096^2 parameters): 0.2662. Rounded to
     * 0.009, 0.035, 0.139, 2.13, 0.267 here, hence +-0.002. */
    double F = 989e12, B = 900e9;
    CHECK(fabs(closed_dp_ratio(7e9, 4000000 / 32, 32, F, B, 2) - 0.009) < 0.002);
    CHECK(fabs(closed_dp_ratio(7e9, 4000000 / 128, 128, F, B, 2) - 0.035) < 0.002);
    CHECK(fabs(closed_dp_ratio(7e9, 4000000 / 512, 512, F, B, 2) - 0.139) < 0.002);
    CHECK(fabs(closed_dp_ratio(7e9, 512, 128, F, B, 2) - 2.13) < 0.002);
    CHECK(fabs(closed_zero3_ratio(4096, 2, 128, F, B, 16.0 * 4096 * 4096) - 0.267) < 0.002);
    double mfu, hfu;
    closed_mfu_hfu(7e9, 4000000 / 128, 2.0, F, 0.35, &mfu, &hfu);
    CHECK(fabs(mfu - 0.66) < 0.005);
    CHECK(fabs(hfu - 0.90) < 0.005);
}

static void t_bubble(void)
{
    /* ---- bubble (Narayanan sec. 2.2; ZB-H1 (p-1)(F+B-2W), DeepSeek-V3 Table 2) */
    CHECK_NEAR(mfu_bubble_fraction(MFU_SCHED_1F1B, 4, 1, 8, 0.3, 2.0 / 3), 3.0 / 8, 1e-12);
    CHECK_NEAR(mfu_bubble_fraction(MFU_SCHED_INTERLEAVED, 4, 2, 8, 0.3, 2.0 / 3), 3.0 / 16, 1e-12);
    /* F = 1, B = 2 (W = 1 of it): W/(F+B) = 1/3 -> (p-1)(1+2-2)/(m*3) = 1/3 of 1F1B */
    CHECK_NEAR(mfu_bubble_fraction(MFU_SCHED_ZB, 4, 1, 8, 1.0 / 3, 2.0 / 3), 3.0 / 8 / 3, 1e-12);
    CHECK(mfu_bubble_fraction(MFU_SCHED_1F1B, 1, 1, 8, 0.3, 2.0 / 3) == 0);
    /* DualPipeV (DualPipe README: (PP/2-1)(F&B + B - 3W) over PP = 2p
     * stages). p = 4 ranks, m = 8, a rank's micro-batch F = 1, B = 2 (W = 1
     * of it): a chunk (half a rank) has F 0.5, B 1, W 0.5, F&B = F + B
     * (compute does not overlap) = 1.5; bubble 3 x (1.5 + 1 - 1.5) = 3 of
     * the ideal 8 x 3 = 24: 1/8, a third of 1F1B's 3/8 */
    CHECK_NEAR(mfu_bubble_fraction(MFU_SCHED_DUALPIPEV, 4, 2, 8, 1.0 / 3, 2.0 / 3), 1.0 / 8, 1e-12);

}

static void t_tp_by_hand(void)
{
    fixture();
    /* ---- TP collective time by hand: tp = 8 inside NVLink, one micro-batch
     * of 1 x 4096 tokens, 32 layers x (2 fwd + 2 bwd) all-reduces of
     * 2 * 4096 * 4096 bytes, ring AR 2 (t-1)/t S / W. */
    {
        mfu_config c = cfg(1, 1, 8, 1, 1, 1);
        mfu_system s8;
        tr.global_batch_tokens = 4096;
        CHECK(mfu_system_init(&s8, &m, &hw, &tr, 8, 0, ops) == MFU_OK);
        mfu_eval ev;
        CHECK(mfu_evaluate(&s8, &c, ops, &ev) == 0);
        double S = 2.0 * 4096 * 4096;
        double want = 32 * 4 * 2 * (7.0 / 8) * S / 450e9;
        CHECK_NEAR(ev.bound.comm_total_s[MFU_COMM_TP], want, 1e-12);
        /* no tp_overlap: the forward's collectives are exposed; the
         * backward's run under the column-parallel linears' weight-gradient
         * GEMMs (Megatron's async TP all-reduce, each under its own
         * linear's wgrad): per layer 2 x 4096 tokens x the QKV and MLP-up
         * weights / 8 (QKV 4096 x (4096 + 2 x 1024), gate and up 2 x 4096 x
         * 14336: 142,606,336), compute-bound at 989.4 TFLOP/s; the
         * row-parallel o and down projections hide nothing */
        double wgrad = 2.0 * 4096 * (4096.0 * 6144 + 2.0 * 4096 * 14336) / 8 / 989.4e12;
        CHECK_NEAR(ev.bound.comm_exposed_s[MFU_COMM_TP], want / 2 + (want / 2 - 32 * wgrad), 1e-9);
        c.tp_overlap = 1; /* everything under the GEMMs: nothing left */
        CHECK(mfu_evaluate(&s8, &c, ops, &ev) == 0);
        CHECK(ev.bound.comm_exposed_s[MFU_COMM_TP] < want / 4);
        c.tp_overlap = 0;
        /* full recompute adds the forward's 2 all-reduces per layer */
        c.recompute = MFU_RC_FULL;
        CHECK(mfu_evaluate(&s8, &c, ops, &ev) == 0);
        CHECK_NEAR(ev.bound.comm_total_s[MFU_COMM_TP], want * 6 / 4, 1e-12);
        /* sequence parallel: the forward moves the same bytes (an
         * all-gather and a reduce-scatter for each all-reduce, Korthikanti
         * sec. 4.2.2); the backward half as much again (F-COMM-TP-SP-BWD,
         * Megatron-LM layers.py LinearWithGradAccumulationAndAsyncCommunication
         * .backward re-gathers each column-parallel input): per block the
         * output gradient's all-gather (synchronous, exposed), the data
         * gradient's reduce-scatter (under the wgrad GEMMs) and the input's
         * re-gather (under the dgrad GEMMs): 2/4 + 3/4 of want = 5/4 */
        c.recompute = MFU_RC_NONE;
        c.sp = 1;
        CHECK(mfu_evaluate(&s8, &c, ops, &ev) == 0);
        CHECK_NEAR(ev.bound.comm_total_s[MFU_COMM_TP], want * 5 / 4, 1e-12);
        /* exposed: the forward's want/2 and the synchronous want/4; the
         * reduce-scatters' want/4 = 4.2 ms hide under the column-parallel
         * wgrads' 32 x 0.148 = 4.7 ms, the re-gathers' want/4 under as
         * long a dgrad (the same FLOPs) */
        CHECK(want / 4 < 32 * wgrad);
        CHECK_NEAR(ev.bound.comm_exposed_s[MFU_COMM_TP], want * 3 / 4, 1e-9);
    }
}

/* Pipeline sends by hand (F-COMM-PP-1F1B): Llama-3-8B on 16 ideal devices,
 * tp 8 x pp 2, eight micro-batches of one 4096-token sequence; every
 * send crosses the 50 GB/s network tier (no latency in the ideal part). */
static void t_pp_by_hand(void)
{
    fixture();
    mfu_system s16;
    tr.global_batch_tokens = 4096.0 * 8;
    CHECK(mfu_system_init(&s16, &m, &hw, &tr, 16, 0, ops) == MFU_OK);
    mfu_config c = cfg(1, 1, 8, 1, 2, 1);
    c.grad_accum = 8;
    c.sp = 1;
    mfu_eval ev;
    /* with sp a rank sends its 1/8 of the 4096 x 4096 bf16 activations */
    double one = 2.0 * 4096 * 4096 / 8 / 50e9;
    /* 1F1B: every micro-batch waits for its two transfers (Megatron's
     * send_forward_recv_backward / send_backward_recv_forward block), and
     * the fill and drain chain through the other stage: 2 (m + p - 1) */
    c.schedule = MFU_SCHED_1F1B;
    CHECK(mfu_evaluate(&s16, &c, ops, &ev) == 0);
    CHECK_NEAR(ev.bound.comm_exposed_s[MFU_COMM_PP], 2 * (8 + 2 - 1) * one, 1e-12);
    /* interleaved, 2 chunks per rank: overlapped with the next chunk's
     * compute (--overlap-p2p-communication): only the fill and drain */
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.vpp = 2;
    CHECK(mfu_config_default_split(&s16, &c) == MFU_OK);
    CHECK(mfu_evaluate(&s16, &c, ops, &ev) == 0);
    CHECK_NEAR(ev.bound.comm_total_s[MFU_COMM_PP], 2 * 8 * 2 * one, 1e-12);
    CHECK_NEAR(ev.bound.comm_exposed_s[MFU_COMM_PP], 2 * (2 - 1) * one, 1e-12);
    /* ... and waited for, as Megatron-LM before Megatron-Core did: each of
     * the 8 x 2 chunks waits as 1F1B does */
    mfu_system sw;
    mfu_training tw = tr;
    tw.pp_no_overlap_p2p = 1;
    CHECK(mfu_system_init(&sw, &m, &hw, &tw, 16, 0, ops) == MFU_OK);
    CHECK(mfu_evaluate(&sw, &c, ops, &ev) == 0);
    CHECK_NEAR(ev.bound.comm_exposed_s[MFU_COMM_PP], 2 * (8 * 2 + 2 - 1) * one, 1e-12);
    /* without sp every tensor-parallel rank sends the whole replica
     * (Megatron-Core)... */
    c = cfg(1, 1, 8, 1, 2, 1);
    c.grad_accum = 8;
    CHECK(mfu_evaluate(&s16, &c, ops, &ev) == 0);
    CHECK_NEAR(ev.bound.comm_exposed_s[MFU_COMM_PP], 2 * (8 + 2 - 1) * 8 * one, 1e-12);
    /* ... or, with the legacy scatter/gather (Narayanan et al. 2021 sec.
     * 4.1), 1/8 of it over the network and an all-gather of the whole over
     * the node's 450 GB/s: 7/8 x 33.5 MB / 450 GB/s */
    mfu_training tg = tr;
    tg.pp_scatter_gather = 1;
    mfu_system sg;
    CHECK(mfu_system_init(&sg, &m, &hw, &tg, 16, 0, ops) == MFU_OK);
    CHECK(mfu_evaluate(&sg, &c, ops, &ev) == 0);
    double ag = 7.0 / 8 * 2.0 * 4096 * 4096 / 450e9;
    CHECK_NEAR(ev.bound.comm_exposed_s[MFU_COMM_PP], 2 * (8 + 2 - 1) * (one + ag), 1e-12);
}

/* F-PP-BUBBLE-REST: the fill and drain run at the other stages' pace. Llama
 * 3 8B's 32 layers over 4 stages, 8 each: the last stage adds the LM head
 * and loss (the busiest), the first the embedding. 1F1B with m = 32 micro-
 * batches takes m (F + B)_last for the busiest stage's own work and one
 * micro-batch through each of the other three, (F + B)_first + 2 (F +
 * B)_mid, for the fill and drain -- not 3 (F + B)_last. */
static void t_bubble_rest(void)
{
    fixture();
    mfu_config c = cfg(2, 1, 1, 1, 4, 1);
    c.grad_accum = 32;
    c.schedule = MFU_SCHED_1F1B;
    CHECK(mfu_config_default_split(&sys, &c) == MFU_OK);
    mfu_shape sh;
    mfu_config_shape(&sys, &c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&sys, &sh, NULL, ops, &k);
    double mid = 8.0 * (k.avg.fwd_s + k.avg.bwd_s);
    double first = mid + k.embed_fwd_s + k.embed_bwd_s, last = mid + k.head_fwd_s + k.head_bwd_s;
    CHECK(last > first && k.head_fwd_s > 0);
    mfu_eval ev;
    CHECK(mfu_evaluate(&sys, &c, ops, &ev) == 0);
    CHECK_NEAR(ev.bound.compute_s, 32.0 * last, 1e-9 * last);
    CHECK_NEAR(ev.bound.bubble_s, first + 2.0 * mid, 1e-9 * last);
    CHECK(ev.bound.bubble_s < 3.0 * last);
    /* a uniform pipeline (no head, no embedding cost) would give 3 (F + B) */
    CHECK_NEAR(mfu_bubble_fraction(MFU_SCHED_1F1B, 4, 1, 32, 0, 0) * 32.0, 3.0, 1e-12);
    /* the search's pruning keeps this step at its own value: its lower
     * bound (the bubble over t_rest, not the busiest stage's time) stays
     * at or below the step */
    CHECK(mfu_step_time_below(&sys, &c, &k, 0, ev.bound.step_time_s) == ev.bound.step_time_s);
}

/* F-PP-BUBBLE-CHUNK: the interleaved fill and drain pass one virtual stage
 * per hop. Llama 3 8B's 32 layers over 4 ranks: 2 chunks of 4 each are
 * equal, the bubble (p-1)/(v m) = 3/(2 m) of the busiest stage's path; 3
 * chunks leave a remainder, 32 = 12 x 2 + 8, so virtual stages 0-7 take 3
 * layers and 8-11 take 2, each rank 3 + 3 + 2: the fill waits for 3-layer
 * stages, (p-1) x 3/8 of the path per micro-batch, not (p-1)/3 -- the
 * bubble at 3 chunks is 3/4 of the one at 2, not 2/3. */
static void t_bubble_chunk(void)
{
    fixture();
    mfu_config c = cfg(2, 1, 1, 1, 4, 1);
    c.grad_accum = 8;
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.vpp = 2;
    CHECK(mfu_config_default_split(&sys, &c) == MFU_OK);
    mfu_eval e2, e3;
    CHECK(mfu_evaluate(&sys, &c, ops, &e2) == 0);
    c.vpp = 3;
    CHECK(mfu_config_default_split(&sys, &c) == MFU_OK);
    CHECK_EQ_I(mfu_max_vstage_layers(&sys, &c), 3);
    CHECK_EQ_I(mfu_stage_layers(&sys, &c, 3), 8);
    CHECK(mfu_evaluate(&sys, &c, ops, &e3) == 0);
    CHECK_NEAR(e3.bound.compute_s, e2.bound.compute_s, 1e-12);
    CHECK_NEAR(e3.bound.bubble_s / e2.bound.bubble_s, 3.0 / 4.0, 1e-9);
}

/* F-COMM-TP-SYNC and F-TIME-WGRAD-ACC, Megatron-LM of 2021 (v2.5): Llama 3
 * 8B at TP 8 over the ideal node, 64 micro-batches of 4096 tokens. The
 * backward's all-reduces are waited for: every one of the 4 per layer
 * (2 forward, 2 backward) of 2 x 4096 x 4096 bytes, 2 (7/8) S / 450 GB/s,
 * is exposed. Each micro-batch's weight gradients are added to the fp32
 * sums by their own kernels: 2 + 4 + 4 bytes per weight, the layer's
 * 4096 x 6144 (QKV) + 4096^2 (output) + 4096 x 28672 (gate and up) + 14336
 * x 4096 (down), 32 layers, and the LM head, 128256 x 4096, all over tp 8,
 * at 3.35 TB/s (the embedding table's add is there either way: fusion
 * covers linear layers only). */
static void t_legacy_megatron(void)
{
    fixture();
    mfu_config c = cfg(1, 1, 8, 1, 1, 1);
    c.grad_accum = 64;
    mfu_eval e0, e1, e2;
    CHECK(mfu_evaluate(&sys, &c, ops, &e0) == 0);
    mfu_training t1 = tr, t2 = tr;
    t1.tp_sync_bwd = 1;
    t2.wgrad_acc_unfused = 1;
    mfu_system s1, s2;
    CHECK(mfu_system_init(&s1, &m, &hw, &t1, 8, 0, ops) == MFU_OK);
    CHECK(mfu_system_init(&s2, &m, &hw, &t2, 8, 0, ops) == MFU_OK);
    CHECK(mfu_evaluate(&s1, &c, ops, &e1) == 0);
    CHECK(mfu_evaluate(&s2, &c, ops, &e2) == 0);
    double ar = 2.0 * 7.0 / 8.0 * (2.0 * 4096 * 4096) / 450e9;
    CHECK_NEAR(e1.bound.comm_total_s[MFU_COMM_TP], 64.0 * 32 * 4 * ar, 1e-9);
    CHECK_NEAR(e1.bound.comm_exposed_s[MFU_COMM_TP], 64.0 * 32 * 4 * ar, 1e-9);
    CHECK(e0.bound.comm_exposed_s[MFU_COMM_TP] < e1.bound.comm_exposed_s[MFU_COMM_TP]);
    double layer = 4096.0 * 6144 + 4096.0 * 4096 + 4096.0 * 28672 + 14336.0 * 4096;
    double weights = (32.0 * layer + 128256.0 * 4096) / 8.0;
    CHECK_NEAR(e2.bound.compute_s - e0.bound.compute_s, 64.0 * weights * 10.0 / 3.35e12, 1e-9);
    CHECK_NEAR(e2.bound.comm_exposed_s[MFU_COMM_TP], e0.bound.comm_exposed_s[MFU_COMM_TP], 1e-12);
}

/* F-TIME-CE-UNFUSED: Megatron's cross-entropy without loss fusion, Llama 3
 * 8B at TP 8, 64 micro-batches of one 4096-token sequence: per micro-batch
 * n = 4096 x 128256 / 8 = 65,667,072 fp32 logits on each rank, and six
 * more passes over them than the fused loss (megatron/core/tensor_parallel/
 * cross_entropy.py: max, read 4 B; subtraction, exp and division in place,
 * read and write, 8 B each; sum, read 4 B; the backward's scaling, 8 B):
 * 40 n bytes, 64 x 40 n / 3.35 TB/s = 50.2 ms on the bound's memory roof,
 * nothing else changed. */
static void t_unfused_cross_entropy(void)
{
    fixture();
    mfu_config c = cfg(1, 1, 8, 1, 1, 1);
    c.grad_accum = 64;
    mfu_eval e0, e1;
    CHECK(mfu_evaluate(&sys, &c, ops, &e0) == 0);
    mfu_training t1 = tr;
    t1.ce_unfused = 1;
    mfu_system s1;
    CHECK(mfu_system_init(&s1, &m, &hw, &t1, 8, 0, ops) == MFU_OK);
    CHECK(mfu_evaluate(&s1, &c, ops, &e1) == 0);
    double n = 4096.0 * 128256.0 / 8.0;
    CHECK_NEAR(e1.bound.compute_s - e0.bound.compute_s, 64.0 * 40.0 * n / 3.35e12, 1e-9);
    CHECK_NEAR(e1.bound.compute_s - e0.bound.compute_s, 0.0502, 1e-3);
    CHECK_NEAR(e1.bound.comm_exposed_s[MFU_COMM_TP], e0.bound.comm_exposed_s[MFU_COMM_TP], 1e-12);
    CHECK_NEAR(e1.bound.recompute_s, e0.bound.recompute_s, 1e-12);
}

static void t_members_per_node(void)
{
    fixture();
    /* ---- a collective with several members per node drives every
     * member's NIC (F-COMM-NICS): TP 16 over two 8-GPU nodes moves its
     * ring at min(8 x 50, 450) = 400 GB/s, not one NIC's 50 GB/s */
    {
        mfu_training t16 = {4096, 4096.0 * 1, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
        mfu_model m16;
        CHECK(load_model("llama3-70b", &m16) == 0); /* 64 heads, 8 KV heads */
        mfu_system s16;
        CHECK(mfu_system_init(&s16, &m16, &hw, &t16, 16, 0, ops) == MFU_OK);
        mfu_config c = cfg(1, 1, 16, 1, 1, 1);
        mfu_eval ev;
        CHECK(mfu_evaluate(&s16, &c, ops, &ev) == 0);
        double S = 2.0 * 4096 * 8192;
        CHECK_NEAR(ev.bound.comm_total_s[MFU_COMM_TP], 80 * 4 * 2 * (15.0 / 16) * S / 400e9, 1e-12);

        /* F-COMM-RING-LAT: with latencies (NVLink 3 us, network 8 us per
         * step), the ring's 15 steps of each all-gather half cross the
         * node boundary once: 14 x 3 us + 1 x 8 us, not 15 x 8 us (NCCL
         * src/graph/tuning.cc: nInterSteps = nNodes - 1 per all-gather or
         * reduce-scatter, 2 (nNodes - 1) per all-reduce of 2 (n - 1) steps) */
        mfu_hardware hl = hw;
        hl.tiers[0].latency_s = 3e-6;
        hl.tiers[1].latency_s = 8e-6;
        mfu_system sl;
        CHECK(mfu_system_init(&sl, &m16, &hl, &t16, 16, 0, ops) == MFU_OK);
        CHECK(mfu_evaluate(&sl, &c, ops, &ev) == 0);
        double per_ar = 2 * ((15.0 / 16) * S / 400e9 + 14 * 3e-6 + 1 * 8e-6);
        CHECK_NEAR(ev.bound.comm_total_s[MFU_COMM_TP], 80 * 4 * per_ar, 1e-12);
    }
}

/* ---- FP8 (F-TIME-FP8): GEMMs run at the FP8 peak, attention stays at
 * the 16-bit one, and every GEMM input is cast first: read 2 B, write 1 B
 * per element twice (row-wise for its own GEMM, column-wise for the weight
 * gradient's TN layout: Transformer Engine's cast_transpose). The fixture's
 * layer on H100 at 4,096 tokens in FP8, the scale with the cast (delayed:
 * one pass). */
static void fp8_setup(mfu_hardware *h8, mfu_shape *sh)
{
    fixture();
    CHECK(load_hw("h100-sxm", h8) == 0);
    mfu_shape s8 = {1, 4096, 1, 1, 1, 1, 0, MFU_DT_FP8, MFU_ATTN_FLASH};
    *sh = s8;
    sh->fp8_recipe = MFU_FP8_DELAYED;
}

/* The forward cast before op i (its index, -1: none). */
static int fp8_cast_before(int i)
{
    int k = i - 1;
    while (k >= 0 && !(ops[k].phase == MFU_FWD && !strcmp(ops[k].name, "fp8_cast"))) k--;
    return k;
}

static void t_fp8(void)
{
    mfu_hardware h8;
    mfu_shape sh;
    fp8_setup(&h8, &sh);
    int n = mfu_ops_layer(&m, 0, &sh, ops, MFU_MAX_OPS);
    int casts = 0, gemms = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(ops[i].name, "fp8_cast") ) {
            casts++;
            CHECK_NEAR(mfu_op_time(&ops[i], &h8, MFU_DT_FP8, NULL), ops[i].bytes / 3.35e12, 1e-12);
        }
        if ((ops[i].tags & MFU_TAG_MATMUL) && ops[i].phase == MFU_FWD) gemms++;
        if (!strcmp(ops[i].name, "attn_core"))
            CHECK_NEAR(mfu_op_time(&ops[i], &h8, MFU_DT_FP8, NULL),
                       mfu_op_time(&ops[i], &h8, MFU_DT_BF16, NULL), 1e-12);
        if (!strcmp(ops[i].name, "mlp_up")) {
            CHECK_NEAR(mfu_op_time(&ops[i], &h8, MFU_DT_FP8, NULL), ops[i].flops / 1.9789e15, 1e-12);
            /* its input cast, the forward cast before it: 4096 tokens
             * x h = 4096 (the fixture's d_model), (2 + 1 + 1) B each */
            int k = fp8_cast_before(i);
            CHECK(k >= 0);
            if (k >= 0) CHECK_NEAR(ops[k].bytes, 4096.0 * 4096 * (2 + 1 + 1), 1e-12);
        }
    }
    CHECK_EQ_I(casts, gemms);
}

/* F-TIME-FP8-AMAX: per-tensor current scaling reads the input once more for
 * its amax and launches the amax and scale kernels too: (2 + 2 + 1 + 1) B
 * per element of mlp_up's input, three kernels of 5 us each beside the
 * bytes at 3.35 TB/s x 0.9 */
static void t_fp8_amax(void)
{
    mfu_hardware h8;
    mfu_shape sh;
    fp8_setup(&h8, &sh);
    int n = mfu_ops_layer(&m, 0, &sh, ops, MFU_MAX_OPS);
    sh.fp8_recipe = MFU_FP8_TENSORWISE;
    int na = mfu_ops_layer(&m, 0, &sh, ops, MFU_MAX_OPS), seen = 0;
    CHECK_EQ_I(na, n);
    mfu_efficiency ek;
    mfu_efficiency_ideal(&ek);
    ek.hbm_eff = 0.9;
    ek.kernel_overhead_s = 5e-6;
    for (int i = 1; i < na; i++)
        if (!strcmp(ops[i].name, "mlp_up") && ops[i].phase == MFU_FWD) {
            int k = fp8_cast_before(i);
            CHECK(k >= 0);
            if (k < 0) break;
            CHECK_NEAR(ops[k].bytes, 4096.0 * 4096 * (2 + 2 + 1 + 1), 1e-12);
            CHECK_NEAR(mfu_op_time(&ops[k], &h8, MFU_DT_FP8, &ek),
                       4096.0 * 4096 * 6 / (3.35e12 * 0.9) + 3 * 5e-6, 1e-9);
            seen++;
        }
    CHECK_EQ_I(seen, 1);
    /* the roofline casts in one pass whatever the recipe, (2 + 1 + 1) B per
     * element: a system with a one-pass recipe never beats it (the fuzzer
     * found the roofline taking the default recipe's amax pass while the
     * system had none: system MFU above the roofline's) */
    for (int rcp = MFU_FP8_TENSORWISE; rcp <= MFU_FP8_DELAYED; rcp++) {
        mfu_training t8 = {4096, 4096.0 * 8, MFU_DT_FP8, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
        t8.fp8_recipe = rcp;
        mfu_roofline roof;
        CHECK(mfu_roofline_compute(&m, &h8, &t8, ops, MFU_MAX_OPS, &roof) == MFU_OK);
        int rcasts = 0;
        for (int i = 0; i < roof.n_ops && i < MFU_MAX_OPS; i++)
            if (!strcmp(ops[i].name, "fp8_cast") && ops[i].flops > 0) {
                rcasts++;
                CHECK_NEAR(ops[i].bytes / ops[i].flops, 4.0, 1e-12);
            }
        CHECK(rcasts > 0);
    }
}

/* F-TIME-FP8-ACC: with an ideal curve (efficiency 1 at every size) and
 * fp8_bwd_gemm_scale 0.87, a backward FP8 GEMM takes its FLOPs / (1,978.9
 * TFLOP/s x 0.87), a forward one its FLOPs / 1,978.9 T. The LM head stays
 * 16-bit (Megatron's output layer is no TE module): at the BF16 peak,
 * 2-byte operands, no cast before it -- the head's ops are final_norm,
 * lm_head x 3, loss x 2 */
static void t_fp8_acc(void)
{
    mfu_hardware h8;
    mfu_shape sh;
    fp8_setup(&h8, &sh);
    int n = mfu_ops_layer(&m, 0, &sh, ops, MFU_MAX_OPS);
    mfu_efficiency e;
    mfu_efficiency_ideal(&e);
    e.fp8_bwd_gemm_scale = 0.87;
    int fwd = 0, bwd = 0;
    for (int i = 0; i < n; i++) {
        if (!(ops[i].tags & MFU_TAG_MATMUL) || ops[i].flops / 1.9789e15 < ops[i].bytes / (3.35e12 * e.hbm_eff))
            continue;
        double want = ops[i].flops / 1.9789e15 / (ops[i].phase == MFU_BWD ? 0.87 : 1.0);
        CHECK_NEAR(mfu_op_time(&ops[i], &h8, MFU_DT_FP8, &e), want, 1e-9);
        if (ops[i].phase == MFU_BWD) bwd++;
        else fwd++;
        /* in 16-bit the scale plays no part */
        CHECK_NEAR(mfu_op_time(&ops[i], &h8, MFU_DT_BF16, &e), ops[i].flops / 0.9894e15, 1e-9);
    }
    CHECK(fwd > 0 && bwd == 2 * fwd);
    int nh = mfu_ops_head(&m, &sh, ops, MFU_MAX_OPS), heads = 0;
    for (int i = 0; i < nh; i++) {
        CHECK(strcmp(ops[i].name, "fp8_cast") && strcmp(ops[i].name, "fp8_cast.bwd"));
        if (!(ops[i].tags & MFU_TAG_MATMUL)) continue;
        heads++;
        CHECK_NEAR(mfu_op_time(&ops[i], &h8, MFU_DT_FP8, NULL), ops[i].flops / 0.9894e15, 1e-12);
        /* forward: input 4096 x 4096 and weight 4096 x V, 2 B each, the
         * logits 2 B (the fixture's model: Llama 3 8B's vocab) */
        if (ops[i].phase == MFU_FWD)
            CHECK_NEAR(ops[i].bytes, 2.0 * (4096.0 * 4096 + 4096.0 * m.vocab) + 2.0 * 4096 * m.vocab, 1e-12);
    }
    CHECK_EQ_I(heads, 3);
}

static void t_mxu(void)
{
    fixture();
    /* ---- F-TIME-MXU: a fused attention kernel on a TPU's 256-wide MXU
     * (v6e, docs.cloud.google.com/tpu/docs/v6e: two 256x256 MXUs). An ideal
     * profile (efficiency 1, no fixed costs) leaves only the fill; a kernel
     * of 1e12 FLOPs at 918 TFLOP/s takes 1.0893 ms at fill 1. By hand:
     *  - head dims 128/128: every product fills 128/256 = 0.5, forward and
     *    backward alike: 1e12 / (918e12 x 0.5);
     *  - MLA's 192/128 (192 pads to 256: 0.75): forward (192 + 128) /
     *    (192/0.75 + 128/0.5) = 320/512 = 0.625; backward (3 x 192 +
     *    2 x 128) / (3 x 192/0.75 + 2 x 128/0.5) = 832/1280 = 0.65;
     *  - head dim 256 fills it (Gemma): 1;
     *  - on a 128-wide MXU (v5p) 128 fills it, 192 pads to 256: 0.75;
     *  - the bound (no profile) is untouched. */
    mfu_hardware tpu;
    CHECK(load_hw("tpu-v6e", &tpu) == 0);
    CHECK_NEAR(tpu.mxu_dim, 256, 0);
    mfu_efficiency e;
    mfu_efficiency_ideal(&e);
    mfu_op op;
    memset(&op, 0, sizeof op);
    op.name = "attn_core";
    op.tags = MFU_TAG_FUSED_ATTN;
    op.flops = 1e12;
    op.bytes = 1.0;
    op.count = 1;
    struct { double dq, dv, side; mfu_phase ph; double fill; } cs[] = {
        {128, 128, 256, MFU_FWD, 0.5},   {128, 128, 256, MFU_BWD, 0.5},
        {192, 128, 256, MFU_FWD, 0.625}, {192, 128, 256, MFU_BWD, 0.65},
        {256, 256, 256, MFU_FWD, 1.0},   {128, 128, 128, MFU_BWD, 1.0},
        {192, 192, 128, MFU_FWD, 0.75},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        op.head_dim_qk = cs[i].dq;
        op.head_dim_v = cs[i].dv;
        op.phase = cs[i].ph;
        tpu.mxu_dim = cs[i].side;
        CHECK_NEAR(mfu_op_time(&op, &tpu, MFU_DT_BF16, &e), 1e12 / (918e12 * cs[i].fill), 1e-9);
        CHECK_NEAR(mfu_op_time(&op, &tpu, MFU_DT_BF16, NULL), 1e12 / 918e12, 1e-9);
    }
    /* GPUs have none: the same op on an H100 runs at its peak */
    mfu_hardware gpu;
    CHECK(load_hw("h100-sxm", &gpu) == 0);
    CHECK_NEAR(gpu.mxu_dim, 0, 0);
    CHECK_NEAR(mfu_op_time(&op, &gpu, MFU_DT_BF16, &e), 1e12 / 989.4e12, 1e-9);
    /* the flash kernel of the inventory carries its head dims */
    mfu_shape sh = {1, 4096, 1, 1, 1, 1, 0, MFU_DT_BF16, MFU_ATTN_FLASH};
    int n = mfu_ops_layer(&m, 0, &sh, ops, MFU_MAX_OPS), seen = 0;
    for (int i = 0; i < n; i++)
        if (ops[i].tags & MFU_TAG_FUSED_ATTN) {
            seen++;
            CHECK_NEAR(ops[i].head_dim_qk, 128, 0);
            CHECK_NEAR(ops[i].head_dim_v, 128, 0);
        }
    CHECK_EQ_I(seen, 2);
}

/* The fixture's model on 8 devices, one sequence each: the system and its
 * plain data-parallel configuration (dp 8, nothing else). */
static mfu_config dp8(mfu_system *s8)
{
    tr.global_batch_tokens = 4096.0 * 8;
    CHECK(mfu_system_init(s8, &m, &hw, &tr, 8, 0, ops) == MFU_OK);
    return cfg(8, 1, 1, 1, 1, 1);
}

/* F-COMM-DP-CHUNKS by hand: Llama-3-8B on 16 devices of ideal efficiency,
 * dp 4 x pp 4, 8 micro-batches per replica, ZeRO-1, a slow network (2
 * GB/s, no latency, inside the node too) so that the gradient reduction
 * outlasts the backward. t_sync (reduce-scatter of fp32 gradients, 4 B)
 * and t_gather (all-gather of bf16 parameters, 2 B) split the DP total
 * 2 : 1. 1F1B: max(last bucket, t_sync - b) + max(0, t_gather - f), b and
 * f one micro-batch's backward (its recompute included) and forward on
 * the stage; with and without full recompute. Interleaved, v = 4 chunks
 * of 2 layers, expected: Megatron-Core reduces each chunk after its last
 * backward, the chunks g = 4 micro-batches apart in the cool-down
 * (schedules.py, grad_sync_func at virtual micro-batch id - rank), chunk 0
 * last, which on the first stage holds the embedding table as well as its
 * 2 layers (gpt_model.py pre_process): s0 = t_sync x (2 layers +
 * embedding) / (8 layers + embedding), the earlier chunks s = (t_sync -
 * s0) / (v-1) each, w = g b / v; the queue ends s0 + max(0, (v-1)(s - w))
 * after the last backward. The parameter gathers of chunks 0 and 1 start
 * with the step, chunk j+1's with chunk j's first forward:
 * max(0, t_gather/v - f/v) + (v-1) max(0, t_gather/v - g f/v). The bound
 * takes, for each, the smaller of that and the one-chunk form, chunk 0 at
 * no more than t_sync / v. At 2 GB/s the queue backs up (s > w); at 50
 * GB/s chunk 0 alone shows (s0 > t_sync - (v-1) w), where an even split
 * (s0 = t_sync / v, the form before the embedding was placed) gives less. */
static double dp_chunks_case(double bw, int i, int *queue)
{
    fixture();
    hw.tiers[0].bw_bytes_s = hw.tiers[1].bw_bytes_s = bw; /* dp 4 is within a node */
    hw.has_profile = 1; /* the ideal profile as a profile: the expected path */
    tr.global_batch_tokens = 4096.0 * 32;
    mfu_system s16;
    CHECK(mfu_system_init(&s16, &m, &hw, &tr, 16, 0, ops) == MFU_OK);
    mfu_config c = cfg(4, 1, 1, 1, 4, 1);
    c.zero = 1;
    c.grad_accum = 8;
    c.schedule = i == 2 ? MFU_SCHED_INTERLEAVED : MFU_SCHED_1F1B;
    c.vpp = i == 2 ? 4 : 1;
    c.recompute = i == 1 ? MFU_RC_FULL : MFU_RC_NONE;
    CHECK(mfu_config_default_split(&s16, &c) == MFU_OK);
    mfu_eval ev;
    CHECK(mfu_evaluate(&s16, &c, ops, &ev) == 0);
    const mfu_times *t = &ev.expected;
    double f = t->compute_fwd_s / 8, b = (t->compute_s - t->compute_fwd_s + t->recompute_s) / 8;
    double sync = t->comm_total_s[MFU_COMM_DP] * 2 / 3, gather = t->comm_total_s[MFU_COMM_DP] / 3;
    /* Megatron's bucket: 40 M fp32 gradients, 3/4 of it over the link */
    double one = fmax(0.75 * 40e6 * 4 / bw, sync - b) + fmax(0, gather - f), want = one;
    if (i == 1) CHECK(t->recompute_s > 0);
    if (i == 2) {
        double layer = (p.total - p.embedding - p.head - 4096) / 32; /* minus the final norm */
        double v = 4, s0 = sync * (2 * layer + p.embedding) / (8 * layer + p.embedding);
        double s = (sync - s0) / (v - 1), w = 4 * b / v, g = gather / v;
        double cs = s0 + fmax(0, (v - 1) * (s - w)), cg = fmax(0, g - f / v) + (v - 1) * fmax(0, g - 4 * f / v);
        double even = fmax(sync / v, sync - (v - 1) * w); /* chunk 0 at t_sync / v */
        want = cs + cg;
        CHECK(s0 > sync / v); /* the embedding makes chunk 0 the largest */
        *queue = s > w;
        if (!*queue) CHECK(cs > even * 1.1); /* ... which shows where chunk 0 alone does */
        CHECK_NEAR(ev.bound.comm_exposed_s[MFU_COMM_DP],
                   fmin(fmax(0.75 * 40e6 * 4 / bw, sync - b), fmin(cs, even)) + fmin(fmax(0, gather - f), cg), 1e-9);
    } else {
        CHECK_NEAR(ev.bound.comm_exposed_s[MFU_COMM_DP], want, 1e-9);
    }
    CHECK_NEAR(t->comm_exposed_s[MFU_COMM_DP], want, 1e-9);
    return t->comm_exposed_s[MFU_COMM_DP];
}

/* Rank 0's first model chunk, by hand from Megatron-LM's
 * get_num_layers_to_build (transformer_block.py): L / (p v) layers each
 * when even; with --account-for-embedding-in-pipeline-split (L + 2) / (p v)
 * per virtual stage, the embedding one of chunk 0's; with
 * --decoder-first-pipeline-num-layers the first stage's over its chunks. */
static void t_chunk0_layers(void)
{
    mfu_system s0;
    memset(&s0, 0, sizeof s0);
    mfu_config c = cfg(1, 1, 1, 1, 4, 1);
    s0.layers = 32;
    CHECK(mfu_chunk0_layers(&s0, &c) == 8); /* one chunk: the stage */
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.vpp = 4;
    c.split = MFU_SPLIT_EVEN;
    CHECK(mfu_chunk0_layers(&s0, &c) == 2); /* 32 / 16 */
    s0.layers = 126;
    c.ax[MFU_AX_PP] = 16;
    c.split = MFU_SPLIT_ACCOUNT;
    CHECK(mfu_chunk0_layers(&s0, &c) == 1); /* 128 / 64 = 2, one is the embedding */
    s0.layers = 30;
    c.ax[MFU_AX_PP] = 4;
    c.vpp = 2;
    c.split = MFU_SPLIT_EVEN;
    CHECK(mfu_chunk0_layers(&s0, &c) == 4); /* 30 = 8 x 3 + 6: the first 6 stages take 4 */
    s0.layers = 80;
    c.split = MFU_SPLIT_FIRST_LAST;
    c.pp_first = 14;
    c.pp_last = 18;
    c.pp_mid = 24;
    CHECK(mfu_chunk0_layers(&s0, &c) == 7); /* 14 over 2 chunks */
}

static void t_dp_chunks(void)
{
    double exposed[3];
    int queue = -1;
    for (int i = 0; i < 3; i++) exposed[i] = dp_chunks_case(2e9, i, &queue);
    CHECK(queue == 1); /* the case where the queue backs up */
    /* a recomputed backward hides more; so do the chunks' earlier reductions */
    CHECK(exposed[1] < exposed[0]);
    CHECK(exposed[2] < exposed[0]);
    dp_chunks_case(5e10, 2, &queue);
    CHECK(queue == 0); /* the case where chunk 0 alone shows */
}

static void t_dp_allreduce(void)
{
    fixture();
    /* ---- DP all-reduce by hand: dp = 8, fp32 gradients of every parameter,
     * 2 (d-1)/d * 4P / W on NVLink; ZeRO-1: RS (4P) + AG (2P). */
    {
        mfu_system s8;
        mfu_config c = dp8(&s8);
        mfu_eval ev;
        CHECK(mfu_evaluate(&s8, &c, ops, &ev) == 0);
        CHECK_NEAR(ev.bound.comm_total_s[MFU_COMM_DP], 2 * (7.0 / 8) * 4 * p.total / 450e9, 1e-9);
        c.zero = 1;
        CHECK(mfu_evaluate(&s8, &c, ops, &ev) == 0);
        CHECK_NEAR(ev.bound.comm_total_s[MFU_COMM_DP], (7.0 / 8) * (4 + 2) * p.total / 450e9, 1e-9);
        /* ZeRO model states, Rajbhandari et al. 2020 sec. 3 (K = 12, here
         * with Megatron's fp32 gradients, 4 B): baseline (2+4+12) P;
         * ZeRO-1 2P + 4P + 12P/Nd; ZeRO-2 2P + (4+12)P/Nd; FSDP (ZeRO-3) 18P/Nd */
        double states[3];
        for (int z = 0; z <= 2; z++) {
            c.zero = z;
            CHECK(mfu_evaluate(&s8, &c, ops, &ev) == 0);
            states[z] = ev.mem.weights_bytes + ev.mem.grads_bytes + ev.mem.optimizer_bytes;
        }
        /* one transformer layer's parameters: what ZeRO-2 and FSDP hold
         * unsharded for a moment (its gradient before the reduce-scatter;
         * FSDP also the gathered current and next layer, bf16) */
        double layer = (p.total - p.embedding - p.head - 4096) / 32; /* minus the final norm */
        CHECK_NEAR(states[0], 18 * p.total, 1e-9);
        CHECK_NEAR(states[1], 6 * p.total + 12 * p.total / 8, 1e-9);
        CHECK_NEAR(states[2], 2 * p.total + 16 * p.total / 8 + 4 * layer, 1e-9);
        /* FSDP2 (ZeRO-3): the sharded fp32 parameter is the master copy:
         * 4 + 4 (grad) + 8 (Adam) = 16 B per parameter over the shards */
        mfu_config f = cfg(1, 8, 1, 1, 1, 1);
        CHECK(mfu_evaluate(&s8, &f, ops, &ev) == 0);
        CHECK_NEAR(ev.mem.weights_bytes + ev.mem.grads_bytes + ev.mem.optimizer_bytes,
                   16 * p.total / 8 + 2 * 2 * layer + 4 * layer, 1e-9);
        /* ZeRO paper Figure 1 (psi = 7.5B, Nd = 64, K = 12, fp16 grads): the
         * same formulas give 120 / 31.4 / 16.6 / 1.9 GB */
        double psi = 7.5e9, nd = 64;
        CHECK_NEAR((2 + 2 + 12) * psi / 1e9, 120, 0.001);
        CHECK_NEAR((2 * psi + 2 * psi + 12 * psi / nd) / 1e9, 31.4, 0.005);
        CHECK_NEAR((2 * psi + 14 * psi / nd) / 1e9, 16.6, 0.005);
        CHECK_NEAR(16 * psi / nd / 1e9, 1.9, 0.02);
    }
}

static void t_moe_ep_fold(void)
{
    fixture();
    /* ---- MoE: ep folds over the data-parallel ranks (Megatron-Core
     * parallel folding). With dp = 8 and ep = 8, the dense parameters
     * (everything but the routed experts) all-reduce over the 8 replicas:
     * 2 (n-1)/n * 4 B * P_dense / W; the experts (one eighth each) have an
     * expert-data-parallel group of 8 / 8 = 1 and need no sync. ZeRO-1
     * shards the dense optimizer states over the 8 replicas. */
    {
        mfu_model mx;
        CHECK(load_model("mixtral-8x7b", &mx) == 0);
        mfu_params pm;
        mfu_model_params(&mx, &pm);
        double experts = 32.0 * 8 * 3 * 4096 * 14336; /* 32 layers x 8 experts x SwiGLU */
        double dense = pm.total - experts;
        mfu_training t8 = {4096, 4096.0 * 8, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
        mfu_system sx;
        CHECK(mfu_system_init(&sx, &mx, &hw, &t8, 8, 0, ops) == MFU_OK);
        mfu_config c = cfg(8, 1, 1, 8, 1, 1);
        mfu_eval ev;
        CHECK(mfu_evaluate(&sx, &c, ops, &ev) == 0);
        CHECK_NEAR(ev.bound.comm_total_s[MFU_COMM_DP], 2 * (7.0 / 8) * 4 * dense / 450e9, 1e-9);
        c.zero = 1;
        CHECK(mfu_evaluate(&sx, &c, ops, &ev) == 0);
        CHECK_NEAR(ev.mem.optimizer_bytes, 12 * (dense / 8 + experts / 8), 1e-9);
        CHECK_NEAR(ev.mem.weights_bytes, 2 * (dense + experts / 8), 1e-9);

        /* experts split over tp (etp = tp = 2, sp): the dispatcher gathers
         * and scatters the tokens itself (F-COMM-TP-SP-BWD's MoE share):
         * per layer one all-reduce's bytes forward and one backward more
         * than with etp = 1, and all of them exposed -- the dispatcher's
         * backward collectives are synchronous, the expert linears skip the
         * async path (Megatron-Core explicit_expert_comm) */
        mfu_config e1 = cfg(4, 1, 2, 1, 1, 1), e2 = e1;
        e1.sp = e2.sp = 1;
        e2.etp = 2;
        mfu_eval v1, v2;
        CHECK(mfu_evaluate(&sx, &e1, ops, &v1) == 0);
        CHECK(mfu_evaluate(&sx, &e2, ops, &v2) == 0);
        /* one all-reduce of 4096 x 4096 bf16 over 2 GPUs: 2 x 1/2 x 32 MiB / 450 GB/s */
        double one = 2 * 0.5 * 2.0 * 4096 * 4096 / 450e9;
        double added = v2.bound.comm_total_s[MFU_COMM_TP] - v1.bound.comm_total_s[MFU_COMM_TP];
        CHECK_NEAR(added, 2 * 32 * one, 1e-9); /* 32 layers x (fwd + bwd), one micro-batch */
        CHECK_NEAR(v2.bound.comm_exposed_s[MFU_COMM_TP] - v1.bound.comm_exposed_s[MFU_COMM_TP], added, 1e-9);
    }
}

static void t_ep_across_nodes(void)
{
    fixture();
    /* ---- EP across nodes, by hand: a toy MoE (h 1024, 4 layers, 32
     * experts top-4) on 16 devices = 2 NVLink nodes of 8, ep = 16. Per MoE
     * layer 4 all-to-alls (dispatch, combine; fwd, bwd). A device routes its
     * T = 4096 tokens: free routing sends each of the 4 copies across the
     * network with probability 1/2 (the other node): 2 B * T * 4 * 1/2 * h
     * bytes over IB (50 GB/s) vs 2 B * T * 4 * h over NVLink (450 GB/s);
     * IB is slower. Node-limited to 1 node: one copy per token crosses,
     * times 1/2. */
    {
        for (int lim = 0; lim <= 1; lim++) {
            char buf[512];
            snprintf(buf, sizeof buf,
                     "{\"d_model\": 1024, \"vocab\": 32000, \"layers\": [{\"count\": 4, "
                     "\"attention\": {\"n_heads\": 8}, \"mlp\": {\"type\": \"moe\", \"n_experts\": 32, "
                     "\"top_k\": 4, \"expert_ffn_dim\": 512, \"route_nodes\": %d}}]}", lim);
            mfu_model toy;
            CHECK(load_model_ir(buf, &toy) == 0);
            mfu_training t16 = {4096, 4096.0 * 16, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
            mfu_system s16;
            CHECK(mfu_system_init(&s16, &toy, &hw, &t16, 16, 0, ops) == MFU_OK);
            mfu_config c = cfg(16, 1, 1, 16, 1, 1);
            mfu_eval ev;
            CHECK(mfu_evaluate(&s16, &c, ops, &ev) == 0);
            double copies = lim ? 1.0 : 4.0;
            double one = 2.0 * 4096 * copies * 0.5 * 1024 / 50e9;
            CHECK_NEAR(ev.bound.comm_total_s[MFU_COMM_EP], 4 * 4 * one, 1e-12);
        }
    }
}

static void t_dispatch(void)
{
    fixture();
    /* ---- F-TIME-DISPATCH (docs/model.md): where the host issues kernels
     * slower than the GPU runs them. A toy MoE (h 1024, 4 layers, 32
     * experts top-4) on one 8-GPU node, ep = 8: 4 local experts. With
     * an absurd 1 s per host op every GPU time (ms) vanishes beside the
     * host's, so the step's host excess is the host op count in seconds:
     * per MoE layer, the inventory's ops (a GEMM op: one per local
     * expert; with 4 local experts the chunk sorts, F-MOE-SORT, are
     * among them), plus the 49 + 6 forward and 28 backward ops of
     * Megatron's routing and permutation the inventory does not hold; with FP8
     * (per-tensor current scaling), each cast of a GEMM's input or output
     * gradient is amax, scale and cast, per local expert for the experts'
     * GEMMs (Transformer Engine's split_quantize casts each expert's
     * rows): 3, or 3 x 4. */
    {
        const char *ir = "{\"d_model\": 1024, \"vocab\": 32000, \"layers\": [{\"count\": 4, "
                         "\"attention\": {\"n_heads\": 8}, \"mlp\": {\"type\": \"moe\", \"n_experts\": 32, "
                         "\"top_k\": 4, \"expert_ffn_dim\": 512}}]}";
        mfu_model toy;
        CHECK(load_model_ir(ir, &toy) == 0);
        for (int fp8 = 0; fp8 <= 1; fp8++) {
            mfu_dtype dt = fp8 ? MFU_DT_FP8 : MFU_DT_BF16;
            mfu_hardware hh = hw;
            hh.peak_flops[MFU_DT_FP8] = 2 * 989.4e12;
            hh.has_profile = 1;
            mfu_training t8 = {4096, 4096.0 * 8, dt, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
            mfu_config c = cfg(8, 1, 1, 8, 1, 1);
            mfu_system s0, s1;
            CHECK(mfu_system_init(&s0, &toy, &hh, &t8, 8, 0, ops) == MFU_OK);
            mfu_eval e0, e1;
            CHECK(mfu_evaluate(&s0, &c, ops, &e0) == 0);
            hh.eff.host_op_s = 1.0;
            CHECK(mfu_system_init(&s1, &toy, &hh, &t8, 8, 0, ops) == MFU_OK);
            CHECK(mfu_evaluate(&s1, &c, ops, &e1) == 0);
            /* the bound's host is infinitely fast */
            CHECK_NEAR(e1.bound.step_time_s, e0.bound.step_time_s, 1e-15);
            CHECK_NEAR(e0.expected.overhead_s, 0.0, 1e-15);
            /* count the layer's host ops by the rule above */
            mfu_shape sh = {1, 4096, 1, 1, 8, 1, 0, dt, MFU_ATTN_FLASH};
            int n = mfu_ops_layer(&toy, 0, &sh, ops, MFU_MAX_OPS);
            double host = 49 + 6 + 28, expert_gemm_calls = 0, sorts = 0;
            for (int i = 0; i < n; i++) {
                double k = 1;
                if (ops[i].tags & MFU_TAG_MATMUL) {
                    k = ops[i].flops / ops[i].gemm_flops;
                    if (ops[i].tags & MFU_TAG_EXPERT) expert_gemm_calls += k;
                } else if (!strncmp(ops[i].name, "fp8_cast", 8)) {
                    k = 3.0 * ((ops[i].tags & MFU_TAG_EXPERT) ? 4 : 1);
                } else if (strstr(ops[i].name, "sort")) {
                    sorts++;
                }
                host += k;
            }
            CHECK_NEAR(sorts, 4, 0); /* moe_sort, moe_unsort, forward and backward */
            /* up and down projections, forward + data and weight gradients,
             * 4 local experts each */
            CHECK_NEAR(expert_gemm_calls, 2 * 3 * 4, 1e-9);
            CHECK_NEAR(e1.expected.overhead_s, 4 * host, 1e-4); /* relative */
            CHECK(e1.expected.step_time_s > e0.expected.step_time_s + 4 * host * 0.999);
        }
    }
}

/* F-TIME-DISPATCH on a dense model: at a realistic 10 us per op the GPU
 * stays ahead, nothing added; at 1 ms per op the host bounds the step */
static void t_dispatch_dense(void)
{
    fixture();
    {
        mfu_hardware hd = hw;
        hd.has_profile = 1;
        mfu_training t1 = {4096, 4096.0, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
        mfu_system sd;
        mfu_config c = cfg(1, 1, 1, 1, 1, 1);
        mfu_eval ed;
        hd.eff.host_op_s = 1e-5;
        CHECK(mfu_system_init(&sd, &m, &hd, &t1, 1, 0, ops) == MFU_OK);
        CHECK(mfu_evaluate(&sd, &c, ops, &ed) == 0);
        CHECK_NEAR(ed.expected.overhead_s, 0.0, 1e-15);
        /* ... but 1 ms per op makes it host-bound */
        hd.eff.host_op_s = 1e-3;
        CHECK(mfu_system_init(&sd, &m, &hd, &t1, 1, 0, ops) == MFU_OK);
        CHECK(mfu_evaluate(&sd, &c, ops, &ed) == 0);
        CHECK(ed.expected.overhead_s > 0.0);
    }
}

static void t_invariants(void)
{
    fixture();
    /* ---- invariants over many configurations on a real preset */
    {
        mfu_hardware h100;
        CHECK(load_hw("h100-sxm", &h100) == 0);
        mfu_training t2 = {4096, 4096.0 * 256, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
        mfu_system s;
        CHECK(mfu_system_init(&s, &m, &h100, &t2, 64, 0, ops) == MFU_OK);
        int64_t tps[] = {1, 2, 4, 8}, pps[] = {1, 2, 4};
        int checked = 0, gap_bad = 0, lb_bad = 0, mono_bad = 0;
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 3; b++)
                for (int rc = 0; rc < MFU_RC_COUNT; rc++) {
                    int64_t dp = 64 / (tps[a] * pps[b]);
                    double prev_act = -1;
                    for (int64_t mbs = 1; mbs <= 4; mbs *= 2) {
                        mfu_config c = cfg(dp, 1, tps[a], 1, pps[b], 1);
                        c.mbs = mbs;
                        c.grad_accum = 256 / (dp * mbs);
                        c.recompute = rc;
                        const char *why;
                        int reason;
                        if (mfu_config_check(&s, &c, &reason, &why) != MFU_OK) continue;
                        mfu_eval ev;
                        CHECK(mfu_evaluate(&s, &c, ops, &ev) == MFU_OK);
                        checked++;
                        /* gap identity: sum of seconds = T_step - T_roof/N, and
                         * points sum to roofline - system MFU */
                        for (int pr = 0; pr < 2; pr++) {
                            const mfu_times *t = pr ? &ev.expected : &ev.bound;
                            double sum = 0, pts = 0;
                            for (int g = 0; g < MFU_GAP_COUNT; g++) {
                                sum += t->gap_s[g];
                                pts += s.roofline_mfu * t->gap_s[g] / t->step_time_s;
                            }
                            double troof = s.roof_step_per_token_s * (double)ev.global_batch_tokens / 64;
                            if (fabs(sum - (t->step_time_s - troof)) > 1e-9 * t->step_time_s) gap_bad++;
                            if (fabs(pts - (s.roofline_mfu - t->mfu)) > 1e-9) gap_bad++;
                        }
                        /* never faster than executing its FLOPs at peak */
                        double lbound = ev.f_hw_flops / (64 * 989.4e12);
                        if (ev.bound.step_time_s < lbound || ev.expected.step_time_s < ev.bound.step_time_s)
                            lb_bad++;
                        /* activations grow with the micro-batch */
                        if (ev.mem.activations_bytes <= prev_act) mono_bad++;
                        prev_act = ev.mem.activations_bytes;
                    }
                }
        CHECK(checked > 50);
        CHECK_EQ_I(gap_bad, 0);
        CHECK_EQ_I(lb_bad, 0);
        CHECK_EQ_I(mono_bad, 0);
    }
}

static void t_recompute_hfu(void)
{
    fixture();
    /* ---- recompute: HFU counts it, MFU does not (Korthikanti et al. 2022 sec. 6) */
    {
        mfu_system s8;
        mfu_config c = dp8(&s8);
        mfu_eval a, b;
        CHECK(mfu_evaluate(&s8, &c, ops, &a) == MFU_OK);
        c.recompute = MFU_RC_FULL;
        CHECK(mfu_evaluate(&s8, &c, ops, &b) == MFU_OK);
        CHECK_NEAR(a.bound.hfu, a.bound.mfu, 1e-12);
        CHECK(b.bound.hfu > b.bound.mfu);
        CHECK(b.bound.mfu < a.bound.mfu);
        CHECK(b.mem.activations_bytes < a.mem.activations_bytes);
        /* full recompute: hardware FLOPs = model + one more forward of the
         * layers (Narayanan eq. 3 vs Korthikanti eq. 7: 4x vs 3x the layer
         * forward); the head is not recomputed */
        double layers_fwd = 0;
        for (int r = 0; r < m.n_runs; r++)
            layers_fwd += (double)m.runs[r].count * mfu_run_flops_per_token_fwd(&m, r, 4096, MFU_CONV_CAUSAL);
        CHECK_NEAR(b.f_hw_flops - b.f_useful_flops, layers_fwd * tr.global_batch_tokens, 0.02);
    }
}

static const check_case cases[] = {
    CHECK_CASE(t_closed_forms),
    CHECK_CASE(t_bubble),
    CHECK_CASE(t_tp_by_hand),
    CHECK_CASE(t_pp_by_hand),
    CHECK_CASE(t_bubble_rest),
    CHECK_CASE(t_bubble_chunk),
    CHECK_CASE(t_legacy_megatron),
    CHECK_CASE(t_unfused_cross_entropy),
    CHECK_CASE(t_members_per_node),
    CHECK_CASE(t_fp8),
    CHECK_CASE(t_fp8_amax),
    CHECK_CASE(t_fp8_acc),
    CHECK_CASE(t_mxu),
    CHECK_CASE(t_dp_allreduce),
    CHECK_CASE(t_dp_chunks),
    CHECK_CASE(t_chunk0_layers),
    CHECK_CASE(t_moe_ep_fold),
    CHECK_CASE(t_ep_across_nodes),
    CHECK_CASE(t_dispatch),
    CHECK_CASE(t_dispatch_dense),
    CHECK_CASE(t_invariants),
    CHECK_CASE(t_recompute_hfu),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}

