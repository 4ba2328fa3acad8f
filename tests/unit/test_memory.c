/* Memory and legality as frameworks have them (issue 9): micro-batches in
 * flight per pipeline rank counted by hand from Megatron-LM's schedules,
 * layer splits, the framework rules, and the per-stage memory of published
 * runs against hand calculations written out here (each with the memory
 * policy its source reports).
 *
 * (Over 600 lines: one program for memory and legality, its cases named and
 * run one by name (check_main); each case is a published run or framework
 * rule with its source beside it.)
 */
#include "check.h"
#include "search.h"
#include "system.h"
#include "testutil.h"

static mfu_op ops[MFU_MAX_OPS];

#define cfg test_cfg

static int has_fw(const mfu_system *s, const mfu_config *c, int f)
{
    return (mfu_config_frameworks(s, c, NULL) & MFU_FW_MASK(f)) != 0;
}

static void t_inflight(void)
{
    /* 1F1B (Megatron schedules.py forward_backward_pipelining_without_
     * interleaving): rank r runs min(p-r-1, m) warmup forwards and one
     * more before its first backward frees one: min(p-r, m). p = 4: */
    double m8[4] = {4, 3, 2, 1}, m2[4] = {2, 2, 2, 1};
    for (int r = 0; r < 4; r++) {
        CHECK_NEAR(mfu_inflight(MFU_SCHED_1F1B, 4, 1, 8, r), m8[r], 0);
        CHECK_NEAR(mfu_inflight(MFU_SCHED_1F1B, 4, 1, 2, r), m2[r], 0);
        CHECK_NEAR(mfu_inflight(MFU_SCHED_1F1B, 4, 1, 4, r), m8[r], 0); /* m = p */
        CHECK_NEAR(mfu_inflight(MFU_SCHED_ZB, 4, 1, 8, r), m8[r], 0);   /* ZB-H1 keeps 1F1B's peak */
    }
    /* interleaved (get_pp_rank_microbatches, g = p): warmup chunks
     * 2(p-r-1) + (v-1)p, capped at m v, one more live in steady state.
     * p = 4, v = 2, m = 8: rank 0: 6 + 4 + 1 = 11 chunks = 5.5 stages
     * (Megatron's estimator p + (p-1)/v = 5.5); rank 3: 0 + 4 + 1 = 5. */
    CHECK_NEAR(mfu_inflight(MFU_SCHED_INTERLEAVED, 4, 2, 8, 0), 11.0 / 2, 0);
    CHECK_NEAR(mfu_inflight(MFU_SCHED_INTERLEAVED, 4, 2, 8, 1), 9.0 / 2, 0);
    CHECK_NEAR(mfu_inflight(MFU_SCHED_INTERLEAVED, 4, 2, 8, 3), 5.0 / 2, 0);
    /* m = p = 4: the cap m v = 8 chunks binds on ranks 0 and 1 (all
     * forwards first), not on rank 2 (2 + 4 + 1 = 7) */
    CHECK_NEAR(mfu_inflight(MFU_SCHED_INTERLEAVED, 4, 2, 4, 0), 8.0 / 2, 0);
    CHECK_NEAR(mfu_inflight(MFU_SCHED_INTERLEAVED, 4, 2, 4, 1), 8.0 / 2, 0);
    CHECK_NEAR(mfu_inflight(MFU_SCHED_INTERLEAVED, 4, 2, 4, 2), 7.0 / 2, 0);
    /* p = 16, v = 4, m = 16 (Llama 3 405B): 2*15 + 48 + 1 = 79 > 64 chunks */
    CHECK_NEAR(mfu_inflight(MFU_SCHED_INTERLEAVED, 16, 4, 16, 0), 16.0, 0);
    CHECK_NEAR(mfu_inflight(MFU_SCHED_INTERLEAVED, 16, 4, 16, 15), 49.0 / 4, 0);
    /* GPipe as MaxText runs it: every micro-batch */
    CHECK_NEAR(mfu_inflight(MFU_SCHED_GPIPE, 4, 1, 12, 3), 12.0, 0);
    CHECK_NEAR(mfu_inflight(MFU_SCHED_1F1B, 1, 1, 12, 0), 1.0, 0);
}

/* A system over a toy dense model with L layers (tied = 0). */
static int toy(mfu_system *s, mfu_model *m, mfu_hardware *hw, int64_t L, int64_t devices)
{
    char buf[512];
    snprintf(buf, sizeof buf,
             "{\"d_model\": 1024, \"vocab\": 32000, \"tie_embeddings\": false, \"layers\": [{\"count\": %lld, "
             "\"attention\": {\"n_heads\": 8}, \"mlp\": {\"ffn_dim\": 4096}}]}", (long long)L);
    int rc = load_model_ir(buf, m);
    if (rc) return rc;
    mfu_training tr = {2048, 2048.0 * devices, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    return mfu_system_init(s, m, hw, &tr, devices, 0, ops);
}

/* A system over preset `model` on `chip` (loaded into *m, *hw): bf16, flash
 * attention, causal, seq-token sequences, batch_seqs of them a step. */
static int preset_sys(mfu_system *s, mfu_model *m, mfu_hardware *hw, const char *model, const char *chip,
                      int64_t seq, double batch_seqs, int64_t devices)
{
    if (load_hw(chip, hw) || load_model(model, m)) return -1;
    mfu_training tr = {seq, (double)seq * batch_seqs, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    return mfu_system_init(s, m, hw, &tr, devices, 0, ops) == MFU_OK ? 0 : -1;
}

static void t_splits(void)
{
    mfu_hardware hw;
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_model m;
    mfu_system s;
    /* 126 layers over 16 stages (Llama 3 405B): 128 = 126 + embedding +
     * loss divides by 16 -> Megatron --account-for-*: 7, 8 x 14, 7 */
    CHECK(toy(&s, &m, &hw, 126, 128) == 0);
    mfu_config c = cfg(8, 1, 1, 1, 16, 1);
    c.grad_accum = 16;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    mfu_stages st;
    mfu_config_stages(&s, &c, &st);
    CHECK_EQ_I(c.split, MFU_SPLIT_ACCOUNT);
    CHECK_EQ_I(st.first, 7); CHECK_EQ_I(st.mid, 8); CHECK_EQ_I(st.last, 7);
    int64_t sum = 0;
    for (int64_t r = 0; r < 16; r++) sum += mfu_stage_layers(&s, &c, r);
    CHECK_EQ_I(sum, 126);
    CHECK(has_fw(&s, &c, MFU_FW_MEGATRON));
    /* torchtitan: the replica axis with pp needs FSDP (FW-T11) */
    mfu_config c2 = c;
    c2.ax[MFU_AX_DP] = 1;
    c2.ax[MFU_AX_FSDP] = 8;
    CHECK(has_fw(&s, &c2, MFU_FW_TORCHTITAN));
    /* with vpp 4: 8 per rank divides by 4 (chunks of 2) */
    c.vpp = 4;
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.grad_accum = 16;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    CHECK_EQ_I(c.split, MFU_SPLIT_ACCOUNT);
    CHECK(has_fw(&s, &c, MFU_FW_MEGATRON));
    CHECK(mfu_megatron_split_flags(&s, &c));
    /* vpp 3 does not divide 8: no classic Megatron flag splits it, the
     * even split with a remainder (126 = 48 x 2 + 30: the first 30 virtual
     * stages take 3) goes out as --pipeline-model-parallel-layout (FW-M6) */
    c.vpp = 3;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    CHECK_EQ_I(c.split, MFU_SPLIT_EVEN);
    CHECK(!mfu_megatron_split_flags(&s, &c));
    CHECK(has_fw(&s, &c, MFU_FW_MEGATRON));
    /* rank 0: virtual stages 0, 16, 32 = 3 + 3 + 2; rank 13: 13, 29, 45
     * = 3 + 3 + 2; rank 14: 14, 30, 46 = 3 + 2 + 2 */
    CHECK_EQ_I(mfu_vstage_decoder_layers(&s, &c, 0, 0), 3);
    CHECK_EQ_I(mfu_vstage_decoder_layers(&s, &c, 0, 2), 2);
    CHECK_EQ_I(mfu_vstage_decoder_layers(&s, &c, 14, 1), 2);
    CHECK_EQ_I(mfu_stage_layers(&s, &c, 13), 8);
    CHECK_EQ_I(mfu_stage_layers(&s, &c, 14), 7);

    /* 61 layers over 16 stages (DeepSeek-V3): neither 61 nor 63 divides;
     * first/last take the rest: middle ceil(61/16) = 4, 61 - 14 * 4 = 5 =
     * 3 (first) + 2 (last, with the LM head) */
    CHECK(toy(&s, &m, &hw, 61, 128) == 0);
    c = cfg(8, 1, 1, 1, 16, 1);
    c.grad_accum = 16;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    mfu_config_stages(&s, &c, &st);
    CHECK_EQ_I(c.split, MFU_SPLIT_FIRST_LAST);
    CHECK_EQ_I(st.first, 3); CHECK_EQ_I(st.mid, 4); CHECK_EQ_I(st.last, 2);
    CHECK(has_fw(&s, &c, MFU_FW_MEGATRON));
}

/* t_splits, continued: torchtitan's one-unit stages, and every split's
 * per-chunk counts against its ranks' layers */
static void t_splits_units(void)
{
    mfu_hardware hw;
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_model m;
    mfu_system s;
    mfu_config c;
    /* torchtitan's automatic split (generate_llm_fqn_per_model_part,
     * input/output weights 1) with a remainder: 29 layers + 2 over 4
     * stages: 31 = 7 * 4 + 3, the first three stages take 8: stage 0 holds
     * 8 - 1 (embedding) = 7, stages 1 and 2 hold 8, stage 3 7 - 1 = 6 */
    CHECK(toy(&s, &m, &hw, 29, 16) == 0);
    c = cfg(4, 1, 1, 1, 4, 1);
    c.grad_accum = 8;
    c.split = MFU_SPLIT_ACCOUNT;
    mfu_config_fill_stages(&s, &c);
    int64_t want[4] = {7, 8, 8, 6};
    for (int r = 0; r < 4; r++) CHECK_EQ_I(mfu_stage_layers(&s, &c, r), want[r]);
    /* ... which torchtitan launches (with FSDP on the data axis, FW-T11)
     * and Megatron through --pipeline-model-parallel-layout only (its
     * --account-for-* flags need exact division) */
    CHECK(!mfu_megatron_split_flags(&s, &c));
    CHECK(has_fw(&s, &c, MFU_FW_MEGATRON));
    /* the embedding and the loss hold a layer's place in the first and the
     * last virtual stage: 8 - 1, 8, 8, 7 - 1 */
    CHECK_EQ_I(mfu_vstage_decoder_layers(&s, &c, 0, 0), 7);
    CHECK_EQ_I(mfu_vstage_decoder_layers(&s, &c, 3, 0), 6);
    c.ax[MFU_AX_DP] = 1;
    c.ax[MFU_AX_FSDP] = 4;
    CHECK(has_fw(&s, &c, MFU_FW_TORCHTITAN));

    /* torchtitan's CI pp_looped_1f1b: 6 layers + embedding + output over 4
     * ranks of 2 virtual stages, one unit each -- the first holds the
     * embedding alone, the last the norm and output alone
     * (generate_llm_fqn_per_model_part only asks for one unit per stage):
     * ranks hold 0 + 1, 1 + 1, 1 + 1, 1 + 0 layers (FW-T6) */
    CHECK(toy(&s, &m, &hw, 6, 8) == 0);
    c = cfg(1, 2, 1, 1, 4, 1);
    c.vpp = 2;
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.grad_accum = 8;
    c.split = MFU_SPLIT_ACCOUNT;
    mfu_config_fill_stages(&s, &c);
    CHECK_EQ_I(mfu_vstage_decoder_layers(&s, &c, 0, 0), 0);
    CHECK_EQ_I(mfu_vstage_decoder_layers(&s, &c, 3, 1), 0);
    CHECK_EQ_I(mfu_stage_layers(&s, &c, 0), 1);
    CHECK_EQ_I(mfu_stage_layers(&s, &c, 1), 2);
    CHECK(has_fw(&s, &c, MFU_FW_TORCHTITAN));
    /* one stage more than units: refused */
    c.vpp = 3;
    c.grad_accum = 12;
    mfu_config_fill_stages(&s, &c);
    CHECK(!has_fw(&s, &c, MFU_FW_TORCHTITAN));
}

/* Every rank's chunks hold its layers, for each split the search makes
 * (the layout Megatron is given writes these counts out). */
static void t_splits_chunks(void)
{
    mfu_hardware hw;
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_model m;
    mfu_system s;
    mfu_config c;
    const int64_t Ls[] = {29, 61, 94, 126}, ps[] = {2, 3, 4, 8};
    for (int a = 0; a < 4; a++) {
        CHECK(toy(&s, &m, &hw, Ls[a], 128) == 0);
        for (int b = 0; b < 4; b++)
            for (int64_t v = 1; v <= 4; v++)
                for (int k = -1; k < 2; k++) {
                    c = cfg(8, 1, 1, 1, ps[b], 1);
                    c.vpp = v;
                    c.schedule = v > 1 ? MFU_SCHED_INTERLEAVED : MFU_SCHED_1F1B;
                    c.grad_accum = 64;
                    if (k < 0) {
                        if (mfu_config_default_split(&s, &c) != MFU_OK) continue;
                    } else {
                        c.split = k ? MFU_SPLIT_ACCOUNT : MFU_SPLIT_EVEN;
                        mfu_config_fill_stages(&s, &c);
                    }
                    int why_code = 0;
                    const char *why = NULL;
                    if (mfu_config_check_split(&s, &c, &why_code, &why) != MFU_OK) continue;
                    int64_t all = 0;
                    for (int64_t r = 0; r < ps[b]; r++) {
                        int64_t n = 0;
                        for (int64_t j2 = 0; j2 < v; j2++) n += mfu_vstage_decoder_layers(&s, &c, r, j2);
                        CHECK_EQ_I(n, mfu_stage_layers(&s, &c, r));
                        all += n;
                    }
                    CHECK_EQ_I(all, Ls[a]);
                    CHECK_EQ_I(mfu_chunk0_layers(&s, &c), mfu_vstage_decoder_layers(&s, &c, 0, 0) * (v > 1) +
                                                              mfu_stage_layers(&s, &c, 0) * (v == 1));
                }
    }
}

static void t_frameworks(void)
{
    mfu_hardware hw;
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_model m;
    mfu_system s;
    CHECK(toy(&s, &m, &hw, 32, 64) == 0);
    const char *why[MFU_FW_COUNT];
    /* FSDP with PP: Megatron's --use-torch-fsdp2 asserts pp == 1 (FW-M1);
     * torchtitan runs it, unsharded between micro-batches */
    mfu_config c = cfg(1, 8, 1, 1, 8, 1);
    c.grad_accum = 8;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    unsigned fw = mfu_config_frameworks(&s, &c, why);
    CHECK(!(fw & MFU_FW_MASK(MFU_FW_MEGATRON)) && strstr(why[MFU_FW_MEGATRON], "FW-M1"));
    CHECK(fw & MFU_FW_MASK(MFU_FW_TORCHTITAN));
    /* ZeRO-1: Megatron's distributed optimizer; torchtitan has none (FW-T1) */
    c = cfg(64, 1, 1, 1, 1, 1);
    c.grad_accum = 8;
    c.zero = 1;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    fw = mfu_config_frameworks(&s, &c, why);
    CHECK((fw & MFU_FW_MASK(MFU_FW_MEGATRON)) && strstr(why[MFU_FW_TORCHTITAN], "FW-T1:"));
    /* a replica axis with pp and no FSDP is DDP with another axis, which
     * torchtitan refuses (parallelize.py: "DDP has not supported > 1D
     * parallelism", FW-T11); Megatron runs it; pure DDP is fine */
    c = cfg(8, 1, 1, 1, 8, 1);
    c.grad_accum = 8;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    fw = mfu_config_frameworks(&s, &c, why);
    CHECK((fw & MFU_FW_MASK(MFU_FW_MEGATRON)) && !(fw & MFU_FW_MASK(MFU_FW_TORCHTITAN)));
    CHECK(why[MFU_FW_TORCHTITAN] && strstr(why[MFU_FW_TORCHTITAN], "FW-T11"));
    c = cfg(64, 1, 1, 1, 1, 1);
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    CHECK(mfu_config_frameworks(&s, &c, NULL) & MFU_FW_MASK(MFU_FW_TORCHTITAN));
    /* interleaved needs m a multiple of pp in Megatron (FW-M5) */
    c = cfg(8, 1, 1, 1, 8, 1);
    c.zero = 0;
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.vpp = 2;
    c.grad_accum = 12;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    fw = mfu_config_frameworks(&s, &c, why);
    CHECK(!(fw & MFU_FW_MASK(MFU_FW_MEGATRON)) && strstr(why[MFU_FW_MEGATRON], "FW-M5"));
    /* tp without sequence parallel: not torchtitan (FW-T2) */
    c = cfg(8, 1, 8, 1, 1, 1);
    fw = mfu_config_frameworks(&s, &c, why);
    CHECK((fw & MFU_FW_MASK(MFU_FW_MEGATRON)) && !(fw & MFU_FW_MASK(MFU_FW_TORCHTITAN)));
    /* ZB-H1: none of the three */
    c = cfg(8, 1, 1, 1, 8, 1);
    c.grad_accum = 8;
    c.schedule = MFU_SCHED_ZB;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    CHECK_EQ_I(mfu_config_frameworks(&s, &c, NULL), 0);
}

/* A tied model with FSDP: not Megatron's --use-torch-fsdp2 (FW-M8);
 * GPT-3's embedding is tied */
static void t_frameworks_tied(void)
{
    const char *why[MFU_FW_COUNT];
    mfu_model g;
    mfu_hardware a100;
    mfu_system sg;
    CHECK(load_model("gpt3-175b", &g) == 0 && g.tie_embeddings);
    CHECK(load_hw("a100-80gb", &a100) == 0);
    mfu_training tg = {2048, 1536.0 * 2048, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    CHECK(mfu_system_init(&sg, &g, &a100, &tg, 1024, 0, ops) == MFU_OK);
    mfu_config cg = cfg(1, 128, 8, 1, 1, 1);
    cg.sp = 1;
    cg.grad_accum = 12;
    CHECK(mfu_config_default_split(&sg, &cg) == MFU_OK);
    unsigned fg = mfu_config_frameworks(&sg, &cg, why);
    CHECK(!(fg & MFU_FW_MASK(MFU_FW_MEGATRON)) && strstr(why[MFU_FW_MEGATRON], "FW-M8"));
    /* and torchtitan has no GPT-3 family (LayerNorm, learned positions,
     * biases: FW-T12) */
    CHECK(!(fg & MFU_FW_MASK(MFU_FW_TORCHTITAN)) && strstr(why[MFU_FW_TORCHTITAN], "FW-T12"));
}

/* A TPU: only MaxText, whose pipelines are GPipe (FW-X4) */
static void t_frameworks_tpu(void)
{
    mfu_hardware tpu;
    CHECK(load_hw("tpu-v5p", &tpu) == 0);
    mfu_model m;
    mfu_system st;
    const char *why[MFU_FW_COUNT];
    CHECK(toy(&st, &m, &tpu, 32, 64) == 0);
    mfu_config c = cfg(8, 1, 1, 1, 8, 1);
    c.grad_accum = 8;
    c.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&st, &c) == MFU_OK);
    unsigned fw = mfu_config_frameworks(&st, &c, why);
    CHECK_EQ_I(fw, 0);
    CHECK(strstr(why[MFU_FW_MAXTEXT], "FW-X4") != NULL);
    c.recompute = MFU_RC_NONE;
    c.schedule = MFU_SCHED_GPIPE;
    /* MaxText has no save-everything remat policy: its "none" still wraps
     * each layer in nn.remat with no policy, i.e. full recompute
     * (layers/decoders.py set_remat_policy): recompute none is refused
     * (FW-X5), minimal_with_context and full are offered */
    CHECK_EQ_I(mfu_config_frameworks(&st, &c, why), 0);
    CHECK(strstr(why[MFU_FW_MAXTEXT], "FW-X5") != NULL);
    c.recompute = MFU_RC_FULL;
    CHECK_EQ_I(mfu_config_frameworks(&st, &c, NULL), MFU_FW_MASK(MFU_FW_MAXTEXT));
    c.recompute = MFU_RC_MINIMAL;
    CHECK_EQ_I(mfu_config_frameworks(&st, &c, NULL), MFU_FW_MASK(MFU_FW_MAXTEXT));

    /* MoE with tensor parallelism: MaxText splits the experts' hidden
     * dimension over the tensor axis (base.yml 'mlp_moe' -> fsdp_transpose,
     * tensor), so its layout is etp = tp (FW-X2): Mixtral 8x7B on 128 v5p
     * chips, fsdp 32 x tensor 4, expert 8 within fsdp */
    mfu_model mx;
    CHECK(load_model("mixtral-8x7b", &mx) == 0);
    mfu_training tr = {4096, 4096.0 * 128, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    mfu_system sm;
    CHECK(mfu_system_init(&sm, &mx, &tpu, &tr, 128, 0, ops) == MFU_OK);
    mfu_config e = cfg(1, 32, 4, 8, 1, 1);
    e.sp = 1;
    e.recompute = MFU_RC_FULL;
    e.etp = 4;
    CHECK(mfu_config_default_split(&sm, &e) == MFU_OK);
    CHECK(mfu_config_frameworks(&sm, &e, why) & MFU_FW_MASK(MFU_FW_MAXTEXT));
    e.etp = 1;
    CHECK(!(mfu_config_frameworks(&sm, &e, why) & MFU_FW_MASK(MFU_FW_MAXTEXT)));
    CHECK(strstr(why[MFU_FW_MAXTEXT], "FW-X2") != NULL);
}

/* The memory policies a stage adds up (F-MEM-*), for the hand calculations
 * below: bf16 weights 2 B, fp32 gradients 4 B, fp32 master + Adam 12 B;
 * reserve = context 0.5e9 + 0.5e9 per communicator + 5 % of the rest
 * (presets/hardware/h100-sxm.json, a100-80gb.json notes.memory_reserve). */
static double reserve(int comms, double used) { return 0.5e9 + 0.5e9 * comms + 0.05 * used; }

/* The memory of configuration c's pipeline stage `rank`, with the bound's
 * per-layer costs */
static void stage_memory(const mfu_system *s, const mfu_config *c, int64_t rank, mfu_memory *out)
{
    mfu_shape sh;
    mfu_config_shape(s, c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(s, &sh, NULL, ops, &k);
    mfu_memory_stage(s, c, &k, rank, out);
}

static void t_llama3_405b(void)
{
    /* Llama 3 405B as Meta trained it (Llama 3 report sec. 3.3.2, Table 4):
     * 16,384 H100, TP8 CP1 PP16 DP128, seq 8192, 16M tokens (m = 2048 / 128
     * = 16 micro-batches of 1), no activation recompute, one layer fewer on
     * the first and last stages (embedding and loss counted as layers: 7,
     * 8 x 14, 7), FSDP sharding optimizer states and gradients with the
     * parameters not resharded after forward (ZeRO-2), interleaved v = 4. */
    mfu_model m;
    mfu_hardware hw;
    CHECK(load_model("llama3-405b", &m) == 0);
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_training tr = {8192, 16777216.0, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    mfu_system s;
    CHECK(mfu_system_init(&s, &m, &hw, &tr, 16384, 0, ops) == MFU_OK);
    mfu_config c = cfg(128, 1, 8, 1, 16, 1);
    c.sp = 1;
    c.zero = 2;
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.vpp = 4;
    c.grad_accum = 16;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    mfu_eval ev;
    CHECK(mfu_evaluate(&s, &c, ops, &ev) == MFU_OK);
    CHECK(ev.feasible);
    /* Hand calculation for rank 1 (8 layers; the busiest).
     * Saved bytes per token per layer, TP 8 with SP, flash attention, bf16
     * (h = 16384, 128 heads of 128, 8 KV heads -> 1 per rank, ffn 53248):
     *   attention norm input 2h/8 = 4096, its output (QKV input) 4096,
     *   Q 2*16*128 = 4096, K 256, V 256, LSE 4*16 = 64,
     *   out-proj input 4096, MLP norm input 4096, its output 4096,
     *   SwiGLU inputs 2*2*53248/8 = 26624, down-proj input 13312
     *   = 65088 B; x 8192 tokens = 533.2 MB per layer and micro-batch. */
    double per_layer = 65088.0 * 8192;
    /* in flight: m = p = 16, v = 4: 2*14 + 48 + 1 = 77 > 64 chunks -> all
     * 16 micro-batches of the stage's 8 layers; + one layer's gradients */
    double act = 16 * 8 * per_layer + per_layer;
    /* parameters of one layer: q, o 16384^2, k, v 16384*1024, MLP
     * 3*16384*53248, two norms 16384: 3,187,703,808; per device / 8 */
    double lp = (2.0 * 16384 * 16384 + 2.0 * 16384 * 1024 + 3.0 * 16384 * 53248 + 2 * 16384) / 8;
    double P = 8 * lp;
    double weights = 2 * P;
    double grads = 4 * P / 128 + 4 * lp; /* sharded fp32 + one layer before its reduce-scatter */
    double optim = 12 * P / 128;
    /* buffers: p2p send/recv 2 * 2 * 8192 * 16384 / 8, the gathered SP input 2 * 8192 * 16384 */
    double buf = 4.0 * 8192 * 16384 / 8 + 2.0 * 8192 * 16384;
    double used = weights + grads + optim + act + buf;
    double total = used + reserve(3, used); /* tp, dp, pp */
    mfu_memory st1;
    stage_memory(&s, &c, 1, &st1);
    CHECK_NEAR(st1.total_bytes, total, 0.05);
    CHECK_NEAR(st1.activations_bytes, act, 0.05);
    CHECK(total < 85029158912.0); /* fits the 81,090 MiB CUDA exposes */
    CHECK_EQ_I(ev.mem.stage, 1);
    CHECK_NEAR(ev.mem.total_bytes, total, 0.05);
}

/* A run as Narayanan et al. 2021 ran theirs: A100-80GB, TP8, interleaved
 * (v = 2), mbs 1, seq 2048, full activation recompute, no distributed
 * optimizer; a GPT of hidden h and a heads (vocab 51200, learned positions
 * 2048) whose rank 0 holds `layers` layers + the embedding, with
 * `inflight` stages of micro-batches in flight there. */
typedef struct narayanan_case {
    const char *model;
    int64_t devices;
    double batch; /* sequences */
    int64_t dp, pp, grad_accum;
    double h, a, layers, inflight;
} narayanan_case;

/* Evaluates run r into *ev, which Megatron launches, and checks its
 * busiest stage, rank 0, against the hand calculation: the total bytes
 * (returned), and the 18 B/param of Megatron's mixed precision in *states.
 * Parameters per layer 12 h^2 + 13 h, embedding 51200 h + positions
 * 2048 h, all / 8 (tp). Activations: full recompute keeps the layer input
 * 2 s b h (no sp) for each in-flight stage of L layers, and the
 * embedding's dropout mask s b h (1 byte) per micro-batch; the recomputed
 * layer's full activations (Korthikanti eq. 2: s b h (10 + 24/t +
 * 5 a s / (h t))) once, less its kept input, and one layer's gradients of
 * the same size. Buffers: p2p send/recv, bf16, no sp, 4 s h. Reserve: tp,
 * dp, pp communicators. */
static double narayanan_check(const narayanan_case *r, mfu_eval *ev, double *states)
{
    mfu_model m;
    mfu_hardware hw;
    CHECK(load_model(r->model, &m) == 0);
    CHECK(load_hw("a100-80gb", &hw) == 0);
    mfu_training tr = {2048, r->batch * 2048, MFU_DT_BF16, MFU_ATTN_UNFUSED, MFU_CONV_FULL, 0, 0, 0};
    mfu_system s;
    CHECK(mfu_system_init(&s, &m, &hw, &tr, r->devices, 0, ops) == MFU_OK);
    mfu_config c = cfg(r->dp, 1, 8, 1, r->pp, 1);
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.vpp = 2;
    c.grad_accum = r->grad_accum;
    c.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    CHECK(mfu_evaluate(&s, &c, ops, ev) == MFU_OK);
    CHECK(ev->feasible);
    CHECK(ev->frameworks & MFU_FW_MASK(MFU_FW_MEGATRON));

    double h = r->h, a = r->a, L = r->layers, s_ = 2048, t = 8;
    double P = (L * (12 * h * h + 13 * h) + 51200 * h + 2048 * h) / t;
    *states = 18 * P;
    double sbh = s_ * h;
    double full = sbh * (10 + 24 / t + 5 * a * s_ / (h * t));
    double act = r->inflight * (L * 2 * sbh + sbh) + (full - 2 * sbh) + full;
    double used = *states + act + 4 * sbh;
    double total = used + reserve(3, used);
    CHECK_EQ_I(ev->mem.stage, 0);
    CHECK_NEAR(ev->mem.total_bytes, total, 0.05);
    return total;
}

static void t_gpt3_narayanan(void)
{
    /* GPT-3 175B as Narayanan et al. 2021 ran it (sec. 5.1, Table 1 row
     * 145.6B-175B class; the 175B run: 1,024 A100-80GB, TP8 PP8 DP16,
     * interleaved (v = 2), mbs 1, batch 1536, seq 2048, full activation
     * recompute, no distributed optimizer). Memory policy: Megatron's
     * mixed precision, 18 B/param (bf16 accounting, docs/distrib_optimizer.md).
     * Rank 0: 12 layers + embedding (h = 12288, 96 heads); in flight on
     * rank 0: 2*7 + 8 + 1 = 23 chunks = 11.5 stages of 12 layers. */
    static const narayanan_case gpt3 = {"gpt3-175b", 1024, 1536, 16, 8, 96, 12288, 96, 12, 11.5};
    mfu_eval ev;
    double states, total = narayanan_check(&gpt3, &ev, &states);
    CHECK_NEAR(ev.mem.weights_bytes + ev.mem.grads_bytes + ev.mem.optimizer_bytes, states, 0.01);
    CHECK(total < 85094039552.0);
}

static void t_megatron_1t(void)
{
    /* Megatron 1T (Narayanan et al. 2021 Table 1: 3,072 A100, TP8 PP64,
     * DP6, batch 3072, mbs 1, seq 2048, full recompute; interleaved v = 2
     * -- one layer per chunk). Rank 0: 2 layers + embedding (h = 25600,
     * 160 heads); in flight 2*63 + 64 + 1 = 191 chunks = 95.5 stages of 2
     * layers. */
    static const narayanan_case t1 = {"megatron-1t", 3072, 3072, 6, 64, 512, 25600, 160, 2, 95.5};
    mfu_eval ev;
    double states;
    narayanan_check(&t1, &ev, &states);
}

static void t_recompute_modules(void)
{
    /* Saved bytes per token and layer under each recompute policy, Llama 3
     * 405B shape, TP 8 with SP, flash attention, bf16 (the per-tensor list
     * of t_llama3_405b): norm inputs 4096 + 4096, norm outputs (GEMM
     * inputs) 4096 + 4096, Q/K/V 4096 + 256 + 256, LSE 64, out-proj input
     * 4096, SwiGLU inputs 26624, down-proj input 13312 = 65088. */
    mfu_model m;
    mfu_hardware hw;
    CHECK(load_model("llama3-405b", &m) == 0);
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_training tr = {8192, 8192.0 * 8, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    mfu_system s;
    CHECK(mfu_system_init(&s, &m, &hw, &tr, 8, MFU_RCM_MLP, ops) == MFU_OK);
    mfu_shape sh = {1, 8192, 8, 1, 1, 1, 1, MFU_DT_BF16, MFU_ATTN_FLASH};
    mfu_shape_cost k;
    mfu_shape_costs(&s, &sh, NULL, ops, &k);
    const double T = 8192;
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_NONE], 65088 * T, 1e-12);
    /* core_attn with a flash kernel: the kernel keeps only Q, K, V (its
     * checkpoint) and the LSE; nothing is freed (Megatron warns that
     * core_attn is pointless with fused attention) -- and it costs time */
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_SELECTIVE], 65088 * T, 1e-12);
    CHECK(k.avg.rc_s[MFU_RC_SELECTIVE] > 0);
    /* norms and activations (MaxText minimal): the norm
     * outputs and the SwiGLU output go: 65088 - 2 * 4096 - 13312 */
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_MINIMAL], (65088 - 8192 - 13312) * T, 1e-12);
    /* norms, MLP (Megatron layernorm + mlp): the SwiGLU inputs too */
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_SAVE_DOT_EXCEPT_MLP], (65088 - 8192 - 13312 - 26624) * T, 1e-12);
    /* the custom slot, mlp alone: its checkpoint (the norm output) stays */
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_CUSTOM], (65088 - 13312 - 26624) * T, 1e-12);
    /* full: the layer input, 2 s h / t (Korthikanti Table 2 with sp) */
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_FULL], 2 * T * 16384 / 8, 1e-12);
    /* recompute time: the MLP re-runs more than the norms and activation */
    CHECK(k.avg.rc_s[MFU_RC_SAVE_DOT_EXCEPT_MLP] > k.avg.rc_s[MFU_RC_MINIMAL]);
    CHECK(k.avg.rc_s[MFU_RC_FULL] > k.avg.rc_s[MFU_RC_SAVE_DOT_EXCEPT_MLP]);
    /* which framework names each (FW-M7, FW-T7, FW-X5) */
    CHECK_EQ_I(s.rc[MFU_RC_SELECTIVE].frameworks, MFU_FW_MASK(MFU_FW_MEGATRON));
    CHECK(!(s.rc[MFU_RC_MINIMAL].frameworks & MFU_FW_MASK(MFU_FW_MEGATRON))); /* a dense act */
    /* torchtitan's op-level SAC keeps every other matmul's output, not
     * minimal's every one: op_sac (F-RC-OP-SAC) */
    CHECK(!(s.rc[MFU_RC_MINIMAL].frameworks & MFU_FW_MASK(MFU_FW_TORCHTITAN)));
    CHECK_EQ_I(s.rc[MFU_RC_OP_SAC].frameworks, MFU_FW_MASK(MFU_FW_TORCHTITAN));
    CHECK(s.rc[MFU_RC_CUSTOM].frameworks & MFU_FW_MASK(MFU_FW_MEGATRON));
    CHECK_EQ_I(s.rc[MFU_RC_MLA_UP].frameworks, 0); /* no MLA here */
}


static double dsv3_rank1(double *act, double *states); /* the hand calculation, below */

static void t_deepseek_v3(void)
{
    /* DeepSeek-V3 as DeepSeek trained it (DeepSeek-V3 report sec. 3.2 and
     * 3.3): 2,048 H800, PP16, EP64 over 8 nodes, ZeRO-1 data parallelism
     * (dp 128), no TP, seq 4096, 15,360 sequences per step (m = 120 of 1),
     * FP8 GEMMs, AdamW moments in BF16 with FP32 master weights and
     * gradients, recompute of RMSNorm and the MLA up-projections. Memory
     * policy as reported: the above; EMA kept in CPU memory (not on the
     * device). DualPipe is approximated by 1F1B (the nearest schedule
     * mfud offers: DualPipe holds PP + 1 micro-batches' activations and two
     * copies of the stage's parameters, DeepSeek-V3 Table 2, which with
     * EP64 the report calls not significant; neither is counted here). */
    mfu_model m;
    mfu_hardware hw;
    CHECK(load_model("deepseek-v3", &m) == 0);
    CHECK(load_hw("h800", &hw) == 0);
    mfu_training tr = {4096, 15360.0 * 4096, MFU_DT_FP8, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 1, 0};
    mfu_system s;
    CHECK(mfu_system_init(&s, &m, &hw, &tr, 2048, 0, ops) == MFU_OK);
    mfu_config c = cfg(128, 1, 1, 64, 16, 1);
    c.zero = 1;
    c.schedule = MFU_SCHED_1F1B;
    c.grad_accum = 120;
    c.recompute = MFU_RC_MLA_UP;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    mfu_eval ev;
    CHECK(mfu_evaluate(&s, &c, ops, &ev) == MFU_OK);
    CHECK(ev.feasible);
    CHECK(ev.frameworks & MFU_FW_MASK(MFU_FW_MEGATRON));
    double act, states;
    double total = dsv3_rank1(&act, &states);
    mfu_memory st1;
    stage_memory(&s, &c, 1, &st1);
    CHECK_EQ_I(st1.layers, 4);
    /* mfud spreads the 3 dense layers' shapes over every stage (its average
     * layer): within 5 % of the real MoE stage */
    CHECK_NEAR(st1.activations_bytes, act, 0.05);
    CHECK_NEAR(st1.weights_bytes + st1.grads_bytes + st1.optimizer_bytes, states, 0.05);
    CHECK_NEAR(st1.total_bytes, total, 0.05);
    CHECK(total < 85029158912.0); /* fits the H800's 81,090 MiB */
    CHECK(ev.mem.total_bytes < 85029158912.0);
    if (getenv("MFU_TEST_VERBOSE"))
        fprintf(stderr, "deepseek-v3 rank 1: act %.3f/%.3f GB, total %.3f/%.3f GB (mfud/hand)\n", st1.activations_bytes / 1e9, act / 1e9, st1.total_bytes / 1e9, total / 1e9);
}

/* DeepSeek-V3's rank 1 by hand, as t_deepseek_v3 runs it: its activation
 * bytes in *act, weights + gradients + optimizer in *states; returns the
 * total. Rank 1 holds 4 MoE layers (61 layers, 3, 4 x 14, 2; layers 3-6
 * are MoE). h = 7168, 128 heads, q/k 192 (128 + 64 RoPE), v 128, q latent
 * 1536, kv latent 512, 256 experts of 2048 (8 per token), one shared
 * expert of 2048.
 * Parameters of one MoE layer: MLA q_a 7168*1536 + q_b 1536*128*192 +
 * kv_a 7168*576 + kv_b 512*128*256 + o 16384*7168 + latent norms 2048 =
 * 187,107,328; layer norms 2*7168; router 7168*256; shared expert
 * 3*7168*2048; routed 256*3*7168*2048 over ep 64. */
static double dsv3_rank1(double *act, double *states)
{
    double attn = 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 16384.0 * 7168 + 2048;
    double dense1 = attn + 2 * 7168.0 + 7168.0 * 256 + 3.0 * 7168 * 2048;
    double exp1 = 256.0 * 3 * 7168 * 2048 / 64;
    double Pd = 4 * dense1, Pe = 4 * exp1, P = Pd + Pe;
    double weights = 2 * P, grads = 4 * P;
    /* ZeRO-1: fp32 master + bf16 m and v = 8 B, dense over dp 128, experts
     * over their data-parallel group 128 / 64 = 2 */
    double optim = 8 * (Pd / 128 + Pe / 2);
    /* Saved bytes per token of one MoE layer under the policy (FP8 GEMM
     * operands 1 B, other tensors bf16 2 B, probabilities fp32):
     *   attention norm input 2h = 14336, q latent (norm input) 3072, its
     *   FP8 normed copy (q up-projection input, kept to recompute it) 1536,
     *   kv latent 1024 + its FP8 normed copy 512, attention output (FP8,
     *   out-projection input) 16384, MLP norm input 14336, router
     *   probabilities 4*256 = 1024, the 8 dispatched copies (FP8, expert
     *   up-projection input) 8*7168 = 57344, SwiGLU inputs 8*2*2048*2 =
     *   65536 and their fp32 routing weights 8*4 = 32 (Megatron-Core
     *   TEGroupedMLP applies the probabilities in the SwiGLU, so the
     *   combine keeps nothing), SwiGLU outputs (FP8 down-projection input)
     *   8*2048 = 16384, the shared expert's SwiGLU input 8192 and output
     *   (FP8) 2048 = 201,760 B; Q, K, V (bf16, 131072) and the FP8 normed
     *   inputs of the down-projections and router (2*7168) are recomputed.
     * x 4096 tokens per micro-batch. */
    double per_layer = 201760.0 * 4096;
    /* the same layer without recompute: + Q, K, V 2*(128*192*2 + 128*128)
     * = 131072, the flash kernel's log-sum-exp 4*128, the two FP8 normed
     * GEMM inputs 2*7168 */
    double per_layer_full = (201760.0 + 131072 + 512 + 2 * 7168) * 4096;
    /* 1F1B, rank 1 of 16: 15 micro-batches in flight x 4 layers; one
     * layer's gradients during its backward; the recomputed part of one
     * layer rematerialised */
    *act = 15 * 4 * per_layer + per_layer_full + (per_layer_full - per_layer);
    /* buffers: all-to-all send + receive of the 8 copies (bf16), p2p send +
     * receive of one micro-batch (bf16) */
    double buf = 2 * 2.0 * 4096 * 8 * 7168 + 2 * 2.0 * 4096 * 7168;
    *states = weights + grads + optim;
    double used = *states + *act + buf;
    return used + reserve(4, used); /* dp, pp, ep, expert dp */
}

/* DualPipeV (the DeepSeek-AI DualPipe repository's dualpipev.py, "cut-in-
 * half" DualPipe; torchtitan's ScheduleDualPipeV): two virtual stages per
 * rank in a V, rank r holding stages r and 2p-1-r. */
static void t_dualpipev_inflight(void)
{
    /* in flight, counted from dualpipev.py's steps, p = 4 ranks, m = 8:
     * step 1 runs 2(p-r-1) forwards of chunk 0, step 2 r+1 more of chunk 0
     * and r+1 of chunk 1: 2(p-r-1) + 2(r+1) = 2p = 8 chunks on every rank
     * before its first backward; step 3 (B1 W1 F1) frees one as it adds
     * one; step 4's first F0 runs before its B1: 9 chunks of half the
     * rank's layers = 4.5 stage-equivalents, on every rank (the README's
     * "PP+1" activations for PP = 2p = 8 stages) */
    for (int r = 0; r < 4; r++) CHECK_NEAR(mfu_inflight(MFU_SCHED_DUALPIPEV, 4, 2, 8, r), 4.5, 1e-12);
    CHECK_NEAR(mfu_inflight(MFU_SCHED_DUALPIPEV, 8, 2, 64, 7), 8.5, 1e-12);
}

/* DualPipeV's layer split, frameworks, per-rank memory and limits */
static void t_dualpipev(void)
{
    mfu_hardware hw;
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_model m;
    mfu_system s;
    /* 14 layers over p = 4 (8 stages): 14 + embedding + loss = 16 = 8 x 2;
     * stage 0 holds 1 layer beside the embedding, stage 7 1 beside the
     * loss, the others 2. In a V rank 0 holds stages 0 and 7: 2 layers;
     * rank r holds r and 7 - r: 4. (Looped, rank 0 would hold 0 and 4: 3.) */
    CHECK(toy(&s, &m, &hw, 14, 16) == 0);
    mfu_config c = cfg(1, 4, 1, 1, 4, 1);
    c.schedule = MFU_SCHED_DUALPIPEV;
    c.vpp = 2;
    c.grad_accum = 8;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    CHECK_EQ_I(c.split, MFU_SPLIT_ACCOUNT);
    int64_t want[4] = {2, 4, 4, 4}, sum = 0;
    for (int r = 0; r < 4; r++) {
        CHECK_EQ_I(mfu_stage_layers(&s, &c, r), want[r]);
        sum += mfu_stage_layers(&s, &c, r);
    }
    CHECK_EQ_I(sum, 14);
    int reason;
    const char *why1;
    CHECK(mfu_config_check_sched(&s, &c, &reason, &why1) == MFU_OK);
    /* torchtitan launches it; Megatron's schedules are 1F1B and
     * interleaved (FW-M4) */
    const char *why[MFU_FW_COUNT];
    CHECK_EQ_I(mfu_config_frameworks(&s, &c, why), MFU_FW_MASK(MFU_FW_TORCHTITAN));
    mfu_config cd = c;
    cd.ax[MFU_AX_DP] = 4;
    cd.ax[MFU_AX_FSDP] = 1;
    CHECK_EQ_I(mfu_config_frameworks(&s, &cd, why), 0);
    CHECK(strstr(why[MFU_FW_MEGATRON], "FW-M4") != NULL);

    /* rank 0 holds the embedding and the LM head (and the final norm):
     * with FSDP and PP its bf16 stage parameters stay gathered (FW-T8), so
     * weights = 2 B x (2 layers + 2 x 32000 x 1024 + 1024); rank 3 holds 4
     * layers and nothing else; a layer's parameters from rank 1's 4 */
    mfu_shape sh;
    mfu_config_shape(&s, &c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&s, &sh, NULL, ops, &k);
    mfu_memory m0, m1, m3;
    mfu_memory_stage(&s, &c, &k, 0, &m0);
    mfu_memory_stage(&s, &c, &k, 1, &m1);
    mfu_memory_stage(&s, &c, &k, 3, &m3);
    double lp = m1.weights_bytes / 2.0 / 4.0;
    CHECK_NEAR(m0.weights_bytes, 2.0 * (2.0 * lp + 2.0 * 32000 * 1024 + 1024), 1e-9);
    CHECK_NEAR(m3.weights_bytes, 2.0 * 4.0 * lp, 1e-9);
    /* activations (recompute none): 4.5 micro-batches of the rank's
     * layers' saved bytes S, and one layer's gradients (S) during its
     * backward; rank 0 adds the embedding's for the 4.5 and, once, the
     * loss's saved tensors and fp32 logits -- not the last rank */
    double S = k.avg.saved_bytes[MFU_RC_NONE];
    CHECK_NEAR(m1.activations_bytes, 4.5 * 4 * S + S, 1e-12);
    CHECK_NEAR(m3.activations_bytes, 4.5 * 4 * S + S, 1e-12);
    CHECK_NEAR(m0.activations_bytes, 4.5 * (2 * S + k.embed_saved) + S + k.head_saved + k.logits_transient,
               1e-12);
    CHECK(k.logits_transient > 0);

    /* fewer than 2p micro-batches (dualpipev.py asserts num_chunks >=
     * num_ranks * 2), a third stage per rank, or a Megatron first/last
     * split: not DualPipeV */
    c.grad_accum = 6;
    CHECK(mfu_config_check_sched(&s, &c, &reason, &why1) != MFU_OK);
    c.grad_accum = 8;
    c.vpp = 3;
    CHECK(mfu_config_check_sched(&s, &c, &reason, &why1) != MFU_OK);
    c.vpp = 2;
    c.split = MFU_SPLIT_FIRST_LAST;
    c.pp_first = 2;
    c.pp_last = 4;
    CHECK(mfu_config_check_sched(&s, &c, &reason, &why1) != MFU_OK);
}

/* t_remat_names' recompute times: what runs again is every forward op but
 * the kept names' and the MLP output projection's (its output only feeds
 * the residual stream) */
static void remat_rc_times(const mfu_model *m, const mfu_hardware *hw, const mfu_shape *sh,
                           const mfu_layer_cost *a)
{
    int n = mfu_ops_layer(m, 0, sh, ops, MFU_MAX_OPS);
    double t_fwd = 0, t_qkv = 0, t_ctx = 0, t_down = 0, t_wi = 0, t_out = 0;
    for (int i = 0; i < n; i++) {
        if (ops[i].phase != MFU_FWD) continue;
        double t = mfu_op_time(&ops[i], hw, MFU_DT_BF16, NULL);
        t_fwd += t;
        if (!strcmp(ops[i].name, "qkv_proj")) t_qkv += t;
        if (!strcmp(ops[i].name, "attn_core")) t_ctx += t;
        if (!strcmp(ops[i].name, "mlp_down")) t_down += t;
        if (!strcmp(ops[i].name, "mlp_up")) t_wi += t;
        if (!strcmp(ops[i].name, "out_proj")) t_out += t;
    }
    CHECK(t_qkv > 0 && t_ctx > 0 && t_down > 0 && t_wi > 0 && t_out > 0);
    CHECK_NEAR(a->fwd_s, t_fwd, 1e-12);
    CHECK_NEAR(a->rc_s[MFU_RC_MAXTEXT], t_fwd - t_ctx - t_down, 1e-12);
    CHECK_NEAR(a->rc_s[MFU_RC_QKV_OFFLOADED], t_fwd - t_qkv - t_down, 1e-12);
    CHECK_NEAR(a->rc_s[MFU_RC_MINIMAL_OFFLOADED], t_fwd - t_qkv - t_out - t_wi - t_down, 1e-12);
    CHECK_NEAR(a->rc_s[MFU_RC_FULL], t_fwd - t_down, 1e-12);
}

/* t_remat_names' offloading policy c where it is not a configuration: a
 * TPU whose host link is unknown, and a GPU */
static void remat_offload_refused(const mfu_model *m, const mfu_hardware *hw, const mfu_training *tr,
                                  const mfu_config *c)
{
    mfu_hardware nohost = *hw;
    nohost.host_bw_bytes_s = 0;
    mfu_system sn;
    CHECK(mfu_system_init(&sn, m, &nohost, tr, 8, 0, ops) == MFU_OK);
    int reason;
    const char *why;
    CHECK(mfu_config_check_rc(&sn, c, &reason, &why) != MFU_OK);
    CHECK(strstr(why, "host_bw_bytes_s") != NULL);
    /* nor on a GPU, though it has a host link (for Megatron's CPU offload):
     * MaxText is the TPUs' framework */
    mfu_hardware gpu;
    CHECK(load_hw("h100-sxm", &gpu) == 0);
    /* the preset's PCIe Gen5 x16: 32 GT/s x 16 lanes x 128/130 / 8 bits */
    CHECK_NEAR(gpu.host_bw_bytes_s, 32e9 * 16.0 * 128.0 / 130.0 / 8.0, 0.01);
    mfu_system sg;
    CHECK(mfu_system_init(&sg, m, &gpu, tr, 8, 0, ops) == MFU_OK);
    CHECK(mfu_config_check_rc(&sg, c, &reason, &why) != MFU_OK);
    CHECK(strstr(why, "TPUs") != NULL);
}

/* MaxText's name policies (docs/model.md F-RC-MAXTEXT) on a model written
 * out here: d 1024, 8 heads of 128 (8 KV heads), gated SiLU MLP of 4096,
 * seq 2048, mbs 1, bf16, tp 1: per layer and micro-batch the named outputs
 * are (2 bytes each)
 *   layer input            2048 x 1024             =  4,194,304 B
 *   q/k/v projections      2048 x (8+8+8) x 128    = 12,582,912 B
 *   context                2048 x 8 x 128          =  4,194,304 B
 *   out_proj               2048 x 1024             =  4,194,304 B
 *   mlpwi_0 + mlpwi_1      2048 x 2 x 4096         = 33,554,432 B
 *   mlpwo                  2048 x 1024             =  4,194,304 B
 * but mlpwo is read by no backward op (it feeds only the residual add):
 * JAX keeps as residuals only what the backward reads, so no policy keeps
 * or offloads it, and under XLA no policy runs it again, full remat
 * included (F-RC-XLA-DEAD). With tp 2 and sequence parallelism every
 * named output halves: q/k/v, context and mlpwi split by heads and
 * columns, out_proj as MaxText keeps it, reduce-scattered over the
 * activation embedding (layers/attentions.py out_projection's
 * out_sharding), 1024 x 1024 x 2 = 2,097,152 B. */
static void t_remat_names(void)
{
    mfu_hardware hw;
    CHECK(load_hw("tpu-v6e", &hw) == 0);
    /* the preset's host link: the scaling book's 1.5e10 B/s */
    CHECK_NEAR(hw.host_bw_bytes_s, 1.5e10, 1e-12);
    const char *ir = "{\"d_model\": 1024, \"vocab\": 32000, \"tie_embeddings\": false, \"norm\": \"rmsnorm\", "
                     "\"position\": \"rope\", \"layers\": [{\"count\": 4, \"attention\": {\"type\": \"mha\", "
                     "\"n_heads\": 8, \"n_kv_heads\": 8, \"head_dim\": 128}, \"mlp\": {\"type\": \"dense\", "
                     "\"ffn_dim\": 4096, \"gated\": true, \"activation\": \"silu\"}}]}";
    mfu_model m;
    CHECK(load_model_ir(ir, &m) == 0);
    mfu_training tr = {2048, 2048.0 * 8, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    mfu_system s;
    CHECK(mfu_system_init(&s, &m, &hw, &tr, 8, 0, ops) == MFU_OK);
    /* custom: the layer input offloaded, the context kept, the rest recomputed */
    CHECK(mfu_system_set_remat_names(&s, MFU_MX_CONTEXT, MFU_MX_INPUT) == MFU_OK);
    /* the layer input is the checkpoint: it must live somewhere, once */
    mfu_system bad = s;
    CHECK(mfu_system_set_remat_names(&bad, MFU_MX_QKV, 0) == MFU_EINVAL);
    CHECK(mfu_system_set_remat_names(&bad, MFU_MX_INPUT, MFU_MX_INPUT) == MFU_EINVAL);

    mfu_config c = cfg(1, 8, 1, 1, 1, 1);
    c.grad_accum = 1;
    mfu_shape sh;
    mfu_config_shape(&s, &c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&s, &sh, NULL, ops, &k);
    const mfu_layer_cost *a = &k.avg;
    double in = 4194304, qkv = 12582912, ctx = 4194304, out = 4194304, wi = 33554432, wo = 4194304;
    CHECK_NEAR(a->saved_bytes[MFU_RC_QKV_OFFLOADED], in, 1e-12);
    CHECK_NEAR(a->host_bytes[MFU_RC_QKV_OFFLOADED], qkv, 1e-12);
    CHECK_NEAR(a->saved_bytes[MFU_RC_MINIMAL_OFFLOADED], in, 1e-12);
    CHECK_NEAR(a->host_bytes[MFU_RC_MINIMAL_OFFLOADED], qkv + out + wi, 1e-12);
    (void)wo;
    CHECK_NEAR(a->saved_bytes[MFU_RC_MAXTEXT], ctx, 1e-12);
    CHECK_NEAR(a->host_bytes[MFU_RC_MAXTEXT], in, 1e-12);
    CHECK(a->host_bytes[MFU_RC_NONE] == 0 && a->host_bytes[MFU_RC_FULL] == 0);

    remat_rc_times(&m, &hw, &sh, a);
    {
        mfu_config c2 = cfg(1, 4, 2, 1, 1, 1);
        c2.sp = 1;
        c2.grad_accum = 1;
        mfu_shape sh2;
        mfu_config_shape(&s, &c2, &sh2);
        mfu_shape_cost k2;
        mfu_shape_costs(&s, &sh2, NULL, ops, &k2);
        CHECK_NEAR(k2.avg.host_bytes[MFU_RC_MINIMAL_OFFLOADED], (qkv + out + wi) / 2.0, 1e-12);
        CHECK_NEAR(k2.avg.saved_bytes[MFU_RC_MAXTEXT], ctx / 2.0, 1e-12);
    }

    /* the host link: does 1.5e10 B/s hide the transfers of this small
     * model? A layer's minimal_offloaded bytes, 50.3 MB, take 3.4 ms each
     * way; a layer's forward on a v6e is far shorter, so the expected step
     * pays, per layer and micro-batch (4 layers, 1 micro-batch),
     * (x - fwd) + (x - bwd - recompute) with the expected profile's times;
     * the bound assumes no schedule, only that the step is no shorter than
     * the link's traffic, 2 x 4 x x */
    c.recompute = MFU_RC_MINIMAL_OFFLOADED;
    mfu_eval ev;
    CHECK(mfu_evaluate(&s, &c, ops, &ev) == MFU_OK);
    mfu_shape_cost ke;
    mfu_shape_costs(&s, &sh, &hw.eff, ops, &ke);
    const mfu_layer_cost *ae = &ke.avg;
    double x = (qkv + out + wi) / 1.5e10;
    CHECK(x > ae->fwd_s && x > ae->bwd_s + ae->rc_s[MFU_RC_MINIMAL_OFFLOADED]);
    CHECK_NEAR(ev.expected.offload_s,
               4.0 * ((x - ae->fwd_s) + (x - ae->bwd_s - ae->rc_s[MFU_RC_MINIMAL_OFFLOADED])), 1e-9);
    CHECK_NEAR(ev.expected.gap_s[MFU_GAP_OFFLOAD], ev.expected.offload_s, 1e-12);
    CHECK_NEAR(ev.bound.step_time_s, 8.0 * x, 1e-9); /* this tiny model is link-bound */
    CHECK(ev.expected.step_time_s >= ev.bound.step_time_s);
    /* only MaxText offers them; Megatron and torchtitan are GPU frameworks */
    CHECK_EQ_I(ev.frameworks, MFU_FW_MASK(MFU_FW_MAXTEXT));
    /* the same policy on a TPU whose host link is unknown, or on a GPU:
     * not a configuration */
    remat_offload_refused(&m, &hw, &tr, &c);
}

/* F-MOE-LOAD: a dropless run's stated imbalance sizes the busiest expert
 * rank's work; a capacity factor above 1 caps it instead. Mixtral 8x7B
 * (8 experts, top 2, ffn 14336, d 4096), seq 4096, mbs 1, tp 1, ep 8:
 * the busiest rank's expert up projection runs 4096 x 2 x load token
 * slots through 2 x 14336 outputs over 4096 inputs. */
static void t_moe_load(void)
{
    mfu_model m;
    CHECK(load_model("mixtral-8x7b", &m) == 0);
    mfu_shape sh = {1, 4096, 1, 1, 8, 1, 0, MFU_DT_BF16, MFU_ATTN_FLASH};
    int r = 0;
    while (r < m.n_runs && m.runs[r].mlp.kind == MFU_MLP_DENSE) r++;
    CHECK(r < m.n_runs);
    double f[3];
    double loads[3] = {0.0, 1.0, 1.25};
    for (int i = 0; i < 3; i++) {
        sh.moe_load = loads[i];
        int n = mfu_ops_layer(&m, r, &sh, ops, MFU_MAX_OPS);
        f[i] = 0;
        for (int j = 0; j < n; j++)
            if (!strcmp(ops[j].name, "expert_up")) f[i] = ops[j].flops;
    }
    CHECK_NEAR(f[0], 2.0 * (4096.0 * 2 * 1.0) * 4096 * (2 * 14336), 1e-12);
    CHECK_NEAR(f[1], f[0], 1e-12);
    CHECK_NEAR(f[2], 2.0 * (4096.0 * 2 * 1.25) * 4096 * (2 * 14336), 1e-12);
    /* a capacity factor of 1.5 pads to capacity: the imbalance is moot */
    m.runs[r].mlp.capacity_factor = 1.5;
    sh.moe_load = 1.25;
    int n = mfu_ops_layer(&m, r, &sh, ops, MFU_MAX_OPS);
    for (int j = 0; j < n; j++)
        if (!strcmp(ops[j].name, "expert_up")) CHECK_NEAR(ops[j].flops, f[0] * 1.5, 1e-12);
    m.runs[r].mlp.capacity_factor = 1.0;

    /* through a system: the stated 1.25 makes the all-to-all and the
     * dispatch buffers 1.25 x, MFU's model FLOPs unchanged */
    mfu_hardware hw;
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_training tr = {4096, 4096.0 * 64, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    mfu_system s1, s2;
    CHECK(mfu_system_init(&s1, &m, &hw, &tr, 64, 0, ops) == MFU_OK);
    tr.moe_imbalance = 1.25;
    CHECK(mfu_system_init(&s2, &m, &hw, &tr, 64, 0, ops) == MFU_OK);
    mfu_config c = cfg(1, 64, 1, 8, 1, 1);
    c.grad_accum = 1;
    c.recompute = MFU_RC_FULL;
    mfu_eval e1, e2;
    CHECK(mfu_evaluate(&s1, &c, ops, &e1) == MFU_OK);
    CHECK(mfu_evaluate(&s2, &c, ops, &e2) == MFU_OK);
    CHECK(e1.bound.comm_total_s[MFU_COMM_EP] > 0);
    /* per MoE layer and micro-batch 4 all-to-alls forward and backward and
     * 2 more for the full recompute, each (n-1)/n S/W + (n-1) latency over
     * NVLink: only the S part grows; 32 layers x 6 x 7 x latency stays */
    double lat = 32.0 * 6.0 * 7.0 * hw.tiers[0].latency_s;
    CHECK_NEAR(e2.bound.comm_total_s[MFU_COMM_EP] - lat, 1.25 * (e1.bound.comm_total_s[MFU_COMM_EP] - lat), 1e-9);
    CHECK_NEAR(e2.f_useful_flops, e1.f_useful_flops, 1e-12);
    CHECK(e2.bound.step_time_s > e1.bound.step_time_s);
}

/* MaxText's num_vocab_tiling and optimizer_memory_host_offload (docs/model.md
 * F-MEM-VOCAB-TILES, F-MEM-OPT-OFFLOAD): Llama 3 8B (vocab 128,256), seq
 * 8192, mbs 1, tp 1 on TPU v6e: the logits are n = 8192 x 128256 =
 * 1,050,673,152 elements. */
static void t_maxtext_savers(void)
{
    mfu_model m;
    mfu_hardware hw;
    CHECK(load_model("llama3-8b", &m) == 0);
    CHECK(load_hw("tpu-v6e", &hw) == 0);
    double n = 8192.0 * 128256.0;
    mfu_training tr = {8192, 8192.0 * 64, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    mfu_system s0, s4;
    CHECK(mfu_system_init(&s0, &m, &hw, &tr, 64, 0, ops) == MFU_OK);
    tr.vocab_tiles = 4;
    CHECK(mfu_system_init(&s4, &m, &hw, &tr, 64, 0, ops) == MFU_OK);
    mfu_config c = cfg(1, 64, 1, 1, 1, 1);
    c.grad_accum = 1;
    c.recompute = MFU_RC_FULL;
    mfu_shape sh;
    mfu_config_shape(&s0, &c, &sh);
    mfu_shape_cost k0, k4;
    mfu_shape_costs(&s0, &sh, NULL, ops, &k0);
    mfu_shape_costs(&s4, &sh, NULL, ops, &k4);
    /* untiled: the loss keeps the bf16 logits (2n; a GPU's Megatron keeps
     * the fp32 softmax, XLA fuses it away: F-MEM-LOGITS-XLA), their bf16
     * gradient (2n) is transient; tiled in 4: the loss keeps nothing, one
     * chunk's bf16 logits and gradient (4n / 4) are live */
    CHECK_NEAR(k0.head_saved - k4.head_saved, 2.0 * n, 1e-12);
    CHECK_NEAR(k0.logits_transient, 2.0 * n, 1e-12);
    CHECK_NEAR(k4.logits_transient, 4.0 * n / 4.0, 1e-12);
    /* the backward runs the head's GEMM and the loss forward again */
    int nh = mfu_ops_head(&m, &sh, ops, MFU_MAX_OPS);
    double again = 0;
    for (int i = 0; i < nh; i++)
        if (ops[i].phase == MFU_FWD && (!strcmp(ops[i].name, "lm_head") || !strcmp(ops[i].name, "loss")))
            again += mfu_op_time(&ops[i], &hw, MFU_DT_BF16, NULL);
    CHECK(again > 0);
    CHECK_NEAR(k4.head_bwd_s - k0.head_bwd_s, again, 1e-9);
    /* only MaxText launches it: on a GPU no framework does (FW-M9, FW-T13) */
    mfu_hardware gpu;
    CHECK(load_hw("h100-sxm", &gpu) == 0);
    mfu_system sg;
    CHECK(mfu_system_init(&sg, &m, &gpu, &tr, 64, 0, ops) == MFU_OK);
    const char *why[MFU_FW_COUNT];
    c.recompute = MFU_RC_NONE;
    CHECK_EQ_I(mfu_config_frameworks(&sg, &c, why), 0);
    CHECK(strstr(why[MFU_FW_MEGATRON], "FW-M9") != NULL);
    CHECK(strstr(why[MFU_FW_TORCHTITAN], "FW-T13") != NULL);
    c.recompute = MFU_RC_FULL;
    CHECK_EQ_I(mfu_config_frameworks(&s4, &c, NULL), MFU_FW_MASK(MFU_FW_MAXTEXT));

    /* optimizer offload, FSDP over 64: of the 12 optimizer bytes per
     * parameter shard (fp32 parameter 4, moments 8) the moments go to the
     * host; the step pays them over the link twice (1.5e10 B/s) */
    mfu_training to = {8192, 8192.0 * 64, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    to.optimizer_offload = 1;
    mfu_system so;
    CHECK(mfu_system_init(&so, &m, &hw, &to, 64, 0, ops) == MFU_OK);
    mfu_memory a0, ao;
    mfu_memory_stage(&s0, &c, &k0, 0, &a0);
    mfu_memory_stage(&so, &c, &k0, 0, &ao);
    CHECK_NEAR(ao.host_bytes, a0.optimizer_bytes * 8.0 / 12.0, 1e-12);
    CHECK_NEAR(ao.optimizer_bytes, a0.optimizer_bytes * 4.0 / 12.0, 1e-12);
    double used = ao.weights_bytes + ao.grads_bytes + ao.optimizer_bytes + ao.activations_bytes + ao.buffers_bytes;
    double upd = ao.weights_bytes + ao.grads_bytes + ao.optimizer_bytes + ao.host_bytes + ao.buffers_bytes;
    CHECK_NEAR(ao.total_bytes - ao.reserve_bytes, used > upd ? used : upd, 1e-12);
    CHECK(ao.total_bytes < a0.total_bytes);
    mfu_eval e0, eo;
    CHECK(mfu_evaluate(&s0, &c, ops, &e0) == MFU_OK);
    CHECK(mfu_evaluate(&so, &c, ops, &eo) == MFU_OK);
    CHECK_NEAR(eo.bound.optimizer_s - e0.bound.optimizer_s, 2.0 * ao.host_bytes / 1.5e10, 1e-9);
    CHECK_EQ_I(eo.frameworks, MFU_FW_MASK(MFU_FW_MAXTEXT));
}

/* Megatron-FSDP (issue 9 item 5): FSDP with a replica axis (HSDP) or with
 * experts is Megatron-FSDP's optim_grads_params, which Megatron launches
 * (megatron/training/arguments.py: --use-megatron-fsdp has no pp, ep or
 * replica assert; torch FSDP2's --use-torch-fsdp2 keeps pp 1 and ep 1);
 * with pipeline parallelism neither (FW-M1). */
static void t_megatron_fsdp(void)
{
    mfu_hardware hw;
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_model m;
    mfu_system s;
    CHECK(toy(&s, &m, &hw, 32, 64) == 0);
    const char *why[MFU_FW_COUNT];
    mfu_config c = cfg(4, 16, 1, 1, 1, 1); /* HSDP: 4 replicas of 16-way FSDP */
    c.grad_accum = 4;
    c.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    CHECK(mfu_config_frameworks(&s, &c, why) & MFU_FW_MASK(MFU_FW_MEGATRON));
    c = cfg(1, 8, 1, 1, 8, 1); /* FSDP with PP: not Megatron */
    c.grad_accum = 8;
    c.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    CHECK(!(mfu_config_frameworks(&s, &c, why) & MFU_FW_MASK(MFU_FW_MEGATRON)));
    CHECK(strstr(why[MFU_FW_MEGATRON], "FW-M1") != NULL);
    /* experts sharded over FSDP: Mixtral, FSDP 64, EP 8 */
    mfu_model mx;
    CHECK(load_model("mixtral-8x7b", &mx) == 0);
    mfu_training tr = {4096, 4096.0 * 64, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    mfu_system se;
    CHECK(mfu_system_init(&se, &mx, &hw, &tr, 64, 0, ops) == MFU_OK);
    c = cfg(1, 64, 1, 8, 1, 1);
    c.grad_accum = 1;
    c.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&se, &c) == MFU_OK);
    CHECK(mfu_config_frameworks(&se, &c, why) & MFU_FW_MASK(MFU_FW_MEGATRON));
}

/* F-MEM-LOGITS: the loss's and the LM head's tensors are freed by their own
 * backward, before the first layer's backward begins, so the stage that
 * holds the head peaks at the larger of the two, not their sum. Llama 3
 * 8B over 2 stages of 16 layers (1F1B, 8 micro-batches, recompute none):
 * the last rank holds 1 micro-batch in flight (min(p - r, m)), 16 S of
 * activations, and then the loss's saved tensors and bf16 logits, or one
 * layer's gradients (S) -- the logits of a 128,256-word vocabulary are the
 * larger. Rank 0 (no head) keeps 2 micro-batches, the embedding's tensors
 * and S. */
static void t_head_apart(void)
{
    mfu_hardware hw;
    mfu_model m;
    mfu_system s;
    CHECK(preset_sys(&s, &m, &hw, "llama3-8b", "h100-sxm", 8192, 32, 8) == 0);
    mfu_config c = cfg(4, 1, 1, 1, 2, 1);
    c.grad_accum = 8;
    c.schedule = MFU_SCHED_1F1B;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    mfu_shape sh;
    mfu_config_shape(&s, &c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&s, &sh, NULL, ops, &k);
    mfu_memory m0, m1;
    mfu_memory_stage(&s, &c, &k, 0, &m0);
    mfu_memory_stage(&s, &c, &k, 1, &m1);
    double S = k.avg.saved_bytes[MFU_RC_NONE], head = k.head_saved + k.logits_transient;
    CHECK(head > S);
    CHECK_NEAR(m1.activations_bytes, 1.0 * 16 * S + head, 1e-12);
    CHECK_NEAR(m0.activations_bytes, 2.0 * (16 * S + k.embed_saved) + S, 1e-12);
    /* where the vocabulary is small beside the width (about 6 V < 34 h
     * bytes per token), the layer's backward is the larger: GPT-3 175B
     * (50,257 words, d 12,288), 48 layers a stage */
    mfu_model g;
    mfu_system gs;
    CHECK(preset_sys(&gs, &g, &hw, "gpt3-175b", "h100-sxm", 2048, 32, 8) == 0);
    CHECK(mfu_config_default_split(&gs, &c) == MFU_OK);
    mfu_config_shape(&gs, &c, &sh);
    mfu_shape_costs(&gs, &sh, NULL, ops, &k);
    mfu_memory_stage(&gs, &c, &k, 1, &m1);
    S = k.avg.saved_bytes[MFU_RC_NONE];
    head = k.head_saved + k.logits_transient;
    CHECK(head < S);
    CHECK_NEAR(m1.activations_bytes, 1.0 * 48 * S + S, 1e-12);
}

/* FSDP's gathered layer on a TPU: XLA runs MaxText's scanned layers one at a
 * time, "a single layer of weights ... roughly 10B params per layer, which
 * corresponds to 40GiB of bf16 weights and gradients" (MaxText
 * docs/guides/optimization/custom_model.md): 2 + 2 bytes per parameter of
 * the layer, where a GPU's FSDP2 holds the current and the prefetched layer
 * (2 x 2) and one layer's fp32 gradient (4). Llama 3 8B over 256 chips,
 * the sharded state 16 bytes a parameter over 256 on both. */
static void t_fsdp_layer_tpu(void)
{
    const char *chips[2] = {"tpu-v6e", "h100-sxm"};
    double want_w[2] = {2.0, 4.0}, want_g[2] = {2.0, 4.0};
    for (int i = 0; i < 2; i++) {
        mfu_hardware hw;
        mfu_model m;
        mfu_system s;
        CHECK(preset_sys(&s, &m, &hw, "llama3-8b", chips[i], 8192, 256, 256) == 0);
        mfu_config c = cfg(1, 256, 1, 1, 1, 1);
        c.recompute = MFU_RC_FULL;
        CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
        mfu_eval ev;
        CHECK(mfu_evaluate(&s, &c, ops, &ev) == 0);
        double layer = s.layer_dense_avg, P = s.params_total;
        CHECK_NEAR(ev.mem.weights_bytes, want_w[i] * layer, 1e-9);
        CHECK_NEAR(ev.mem.grads_bytes, 4.0 * P / 256 + want_g[i] * layer, 1e-9);
        CHECK_NEAR(ev.mem.optimizer_bytes, 12.0 * P / 256, 1e-9);
    }
}

/* MaxText's tensor axis splits the activations' embedding too (FW-X7):
 * base.yml's logical_axis_rules map 'activation_embed' to tensor, so the
 * saved layer inputs are a 1/tp share, which mfud's sp means. MaxText's
 * own v5e recipe for GPT-3 175B (src/maxtext/configs/tpu/v5e/gpt3_175b.sh:
 * 256 chips, ici_fsdp -1 = 16, ici_tensor 16, per_device_batch_size 0.5,
 * 2,048 tokens, remat_policy full): 128 sequences, 8 a fsdp rank. Whole on
 * every tensor rank, the 96 layers' bf16 inputs alone would be
 * 96 x 8 x 2048 x 12288 x 2 B = 38.7 GB, more than v5e's 16 GiB; split
 * over 16, 2.42 GB. Without sp it is no MaxText layout, with sp it fits. */
static void t_maxtext_sp(void)
{
    mfu_hardware hw;
    mfu_model m;
    mfu_system s;
    CHECK(preset_sys(&s, &m, &hw, "gpt3-175b", "tpu-v5e", 2048, 128, 256) == 0);
    mfu_config c = cfg(1, 16, 16, 1, 1, 1);
    c.mbs = 8;
    c.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    const char *why[MFU_FW_COUNT] = {0};
    CHECK_EQ_I(mfu_config_frameworks(&s, &c, why), 0u);
    CHECK(why[MFU_FW_MAXTEXT] && strstr(why[MFU_FW_MAXTEXT], "FW-X7") != NULL);
    mfu_eval e0, e1;
    CHECK(mfu_evaluate(&s, &c, ops, &e0) == 0);
    c.sp = 1;
    CHECK_EQ_I(mfu_config_frameworks(&s, &c, NULL), MFU_FW_MASK(MFU_FW_MAXTEXT));
    CHECK(mfu_evaluate(&s, &c, ops, &e1) == 0);
    double stack = 96.0 * 8 * 2048 * 12288 * 2;
    CHECK(e0.mem.total_bytes > stack && stack > hw.hbm_bytes);
    CHECK(e1.mem.total_bytes <= e1.mem.capacity_bytes);
    /* the layers' kept inputs are what sp splits: 15/16 of them freed */
    CHECK(e0.mem.activations_bytes - e1.mem.activations_bytes >= stack * 15.0 / 16.0 * (1.0 - 1e-9));
}

/* F-MEM-LOGITS-XLA: on a TPU the loss keeps the 16-bit logits where
 * Megatron's keeps the fp32 softmax: 2 bytes a logit fewer. MaxText's
 * Llama 3.1 70B recipe on v6e-256 (AI-Hypercomputer/tpu-recipes v0.1.5,
 * benchmarks/maxtext_trillium_model_configs.py llama3_1_70b_8192:
 * per_device_batch_size 5, ici_fsdp -1, remat custom with the layer input
 * and q/k/v offloaded) ran: 5 x 8,192 tokens x 128,256 = 5.25e9 logits a
 * chip. At 6 bytes a logit that is 31.5 GB, over v6e's HBM beside the
 * state; at 4 it fits. (Llama 3 70B's preset: 3.1's shapes.) */
static void t_loss_xla(void)
{
    mfu_hardware th, gh;
    mfu_model tm, gm;
    mfu_system ts, gs;
    CHECK(preset_sys(&ts, &tm, &th, "llama3-70b", "tpu-v6e", 8192, 1280, 256) == 0);
    CHECK(preset_sys(&gs, &gm, &gh, "llama3-70b", "h100-sxm", 8192, 1280, 256) == 0);
    CHECK(mfu_system_set_remat_names(&ts, 0u, MFU_MX_INPUT | MFU_MX_QKV) == MFU_OK);
    mfu_config c = cfg(1, 256, 1, 1, 1, 1);
    c.mbs = 5;
    c.recompute = MFU_RC_MAXTEXT;
    CHECK(mfu_config_default_split(&ts, &c) == MFU_OK);
    mfu_shape sh;
    mfu_shape_cost kt, kg;
    mfu_config_shape(&ts, &c, &sh);
    mfu_shape_costs(&ts, &sh, NULL, ops, &kt);
    mfu_config_shape(&gs, &c, &sh);
    mfu_shape_costs(&gs, &sh, NULL, ops, &kg);
    double n = 5.0 * 8192 * 128256;
    CHECK_NEAR(kg.head_saved - kt.head_saved, 2.0 * n, 1e-9);
    CHECK_NEAR(kt.logits_transient, 2.0 * n, 1e-9);
    mfu_eval ev;
    CHECK(mfu_evaluate(&ts, &c, ops, &ev) == 0);
    CHECK(ev.mem.total_bytes <= ev.mem.capacity_bytes);
    CHECK(ev.mem.total_bytes - ev.mem.head_bytes + 6.0 * n > ev.mem.capacity_bytes);
}

/* The one XLA memory figure MaxText's documentation prints with its
 * configuration (docs/guides/monitoring_and_debugging/
 * understand_logs_and_metrics.md, AI-Hypercomputer/maxtext e591f30cb):
 * model_name=deepseek2-16b (mfud's deepseek-v2-lite preset: the same
 * shapes), per_device_batch_size 24, max_target_length 2048, on a v5p-8
 * (4 chips), base.yml's defaults otherwise: FSDP over the 4 chips, remat
 * full, fp32 weights, Adam. XLA's dry-run compilation: "estimated argument
 * size: 44.5 GB" (the training state: fp32 parameters and both moments),
 * "Total estimated memory size: 100.4 GB" ("the compiler could
 * over-estimate"), and the run trained within the 95.74 GB budget of each
 * chip (MaxText's GB are GiB: v5p's bytes_limit 102.8e9 B = 95.74 GiB).
 * mfud's state (weights and optimizer) is within 2 % of the argument size;
 * its total fits and is not above XLA's static estimate. */
static void t_xla_deepseek2_16b(void)
{
    mfu_hardware hw;
    mfu_model m;
    mfu_system s;
    CHECK(preset_sys(&s, &m, &hw, "deepseek-v2-lite", "tpu-v5p", 2048, 96, 4) == 0);
    mfu_config c = cfg(1, 4, 1, 1, 1, 1);
    c.mbs = 24;
    c.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    mfu_eval ev;
    CHECK(mfu_evaluate(&s, &c, ops, &ev) == 0);
    double gib = 1024.0 * 1024.0 * 1024.0;
    double state = (ev.mem.weights_bytes + ev.mem.optimizer_bytes) / gib;
    CHECK(fabs(state / 44.5 - 1.0) < 0.02);
    CHECK(ev.mem.total_bytes <= ev.mem.capacity_bytes);
    CHECK(ev.mem.total_bytes / gib <= 100.4);
    fprintf(stderr, "  deepseek2-16b v5p-8: state %.2f GiB (XLA 44.5), total %.2f GiB (XLA estimate 100.4, ran in %.2f)\n",
            state, ev.mem.total_bytes / gib, ev.mem.capacity_bytes / gib);
}

/* F-MEM-LOGITS-EAGER: torchtitan's loss without torch.compile
 * (components/loss.py, v0.2.2: F.cross_entropy(pred.flatten(0, 1).float(),
 * ...)) holds, in its backward, the kept fp32 log-softmax, its gradient
 * and the input's: 12 bytes a logit where the fused loss holds 6. The
 * layout of torchtitan's benchmark Table 2, first row
 * (benchmarks/llama3_h100_202412_torchtitan.md: Llama 3.1 8B, FSDP 8, one
 * sequence of 32,768 a rank, full AC; it ran with an eager loss and held
 * 83.9 GiB): n = 32768 x 128256 logits a rank. Megatron-LM and MaxText do
 * not run that loss (FW-M10, FW-X8). */
static void t_loss_eager(void)
{
    mfu_hardware hw;
    mfu_model m;
    mfu_system s0, s1;
    CHECK(load_hw("h100-sxm", &hw) == 0 && load_model("llama3-8b", &m) == 0);
    mfu_training tr = {32768, 32768.0 * 8, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    CHECK(mfu_system_init(&s0, &m, &hw, &tr, 8, 0, ops) == MFU_OK);
    tr.ce_unfused = 1;
    tr.ce_eager = 1;
    CHECK(mfu_system_init(&s1, &m, &hw, &tr, 8, 0, ops) == MFU_OK);
    mfu_config c = cfg(1, 8, 1, 1, 1, 1);
    c.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&s0, &c) == MFU_OK);
    mfu_eval e0, e1;
    CHECK(mfu_evaluate(&s0, &c, ops, &e0) == 0);
    CHECK(mfu_evaluate(&s1, &c, ops, &e1) == 0);
    double n = 32768.0 * 128256;
    CHECK(e0.mem.head_bytes >= 6.0 * n); /* the fused loss: 4 kept + 2 */
    CHECK_NEAR(e1.mem.head_bytes - e0.mem.head_bytes, 6.0 * n, 1e-9);
    CHECK(e1.mem.total_bytes - e0.mem.total_bytes >= 6.0 * n);
    const char *why[MFU_FW_COUNT] = {0};
    CHECK_EQ_I(mfu_config_frameworks(&s0, &c, NULL) & MFU_FW_MASK(MFU_FW_MEGATRON), MFU_FW_MASK(MFU_FW_MEGATRON));
    CHECK_EQ_I(mfu_config_frameworks(&s1, &c, why), MFU_FW_MASK(MFU_FW_TORCHTITAN));
    CHECK(why[MFU_FW_MEGATRON] && strstr(why[MFU_FW_MEGATRON], "FW-M10") != NULL);
}

/* F-MEM-SCAN-UNIT: MaxText's Gemma 2 decoder layer is a local and a global
 * layer (src/maxtext/configs/models/gemma2-9b.yml: base_num_decoder_layers
 * 21, "we merge [local_attention, global_attention] into one layer";
 * models/gemma2.py names decoder_layer_input once per pair). XLA scans,
 * checkpoints and gathers it as one: under full remat 21 inputs are kept,
 * not 42; the pair's backward rematerializes both layers; FSDP gathers
 * both layers' weights (bf16) and gradient (bf16). Gemma 2 9B on v6e-256,
 * MaxText's trillium recipe (3 sequences of 8,192 a chip): a layer holds
 * 3584 x (16 + 8 + 8 + 16) x 256 attention + 3 x 3584 x 14336 MLP + 4 x
 * 3584 norm parameters = 198,195,200. */
static void scan_unit_remat(void)
{
    mfu_hardware hw;
    mfu_model m;
    mfu_system s1, s2;
    CHECK(load_hw("tpu-v6e", &hw) == 0 && load_model("gemma2-9b", &m) == 0);
    mfu_training tr = {8192, 8192.0 * 768, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    tr.vocab_tiles = 64;
    CHECK(mfu_system_init(&s1, &m, &hw, &tr, 256, 0, ops) == MFU_OK);
    CHECK(mfu_system_init(&s2, &m, &hw, &tr, 256, 0, ops) == MFU_OK);
    CHECK(mfu_system_set_scan_unit(&s2, 2) == MFU_OK);
    mfu_config c = cfg(1, 256, 1, 1, 1, 1);
    c.mbs = 3;
    c.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&s1, &c) == MFU_OK);
    mfu_shape sh;
    mfu_shape_cost k1;
    mfu_config_shape(&s1, &c, &sh);
    mfu_shape_costs(&s1, &sh, NULL, ops, &k1);
    mfu_eval e1, e2;
    CHECK(mfu_evaluate(&s1, &c, ops, &e1) == 0);
    CHECK(mfu_evaluate(&s2, &c, ops, &e2) == 0);
    double input = 2.0 * 3 * 8192 * 3584;
    CHECK(e1.mem.head_bytes < 2.0 * k1.avg.saved_bytes[MFU_RC_NONE] - input); /* the layer's backward is the larger */
    CHECK_NEAR(e2.mem.activations_bytes - e1.mem.activations_bytes, k1.avg.saved_bytes[MFU_RC_NONE] - 21.0 * input,
               1e-9);
}

static void t_scan_unit(void)
{
    mfu_hardware hw, gh;
    mfu_model m, gm;
    mfu_system s1, s2, gs;
    CHECK(preset_sys(&s1, &m, &hw, "gemma2-9b", "tpu-v6e", 8192, 768, 256) == 0);
    CHECK(preset_sys(&s2, &m, &hw, "gemma2-9b", "tpu-v6e", 8192, 768, 256) == 0);
    CHECK(preset_sys(&gs, &gm, &gh, "gemma2-9b", "h100-sxm", 8192, 768, 256) == 0);
    CHECK(mfu_system_set_scan_unit(&s2, 2) == MFU_OK);
    CHECK(mfu_system_set_scan_unit(&gs, 2) == MFU_EINVAL); /* MaxText's, on TPUs */
    CHECK(mfu_system_set_scan_unit(&s1, 4) == MFU_EINVAL); /* 4 does not divide 42 */
    CHECK_EQ_I(s1.scan_unit, 1);
    /* 1e-4: mfud's Gemma 2 has two of the four norms (7,168 a layer) */
    CHECK_NEAR(s1.layer_dense_avg, 3584.0 * 48 * 256 + 3.0 * 3584 * 14336 + 4.0 * 3584, 1e-4);
    mfu_config c = cfg(1, 256, 1, 1, 1, 1);
    c.mbs = 3;
    c.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&s1, &c) == MFU_OK);
    mfu_shape sh;
    mfu_shape_cost k1, k2;
    mfu_config_shape(&s1, &c, &sh);
    mfu_shape_costs(&s1, &sh, NULL, ops, &k1);
    mfu_shape_costs(&s2, &sh, NULL, ops, &k2);
    double input = 2.0 * 3 * 8192 * 3584;
    CHECK_NEAR(k1.avg.saved_bytes[MFU_RC_FULL], input, 1e-12);
    CHECK_NEAR(k2.avg.saved_bytes[MFU_RC_FULL], input / 2.0, 1e-12);
    mfu_eval e1, e2;
    CHECK(mfu_evaluate(&s1, &c, ops, &e1) == 0);
    CHECK(mfu_evaluate(&s2, &c, ops, &e2) == 0);
    CHECK_NEAR(e2.mem.weights_bytes, 2.0 * 2.0 * s1.layer_dense_avg, 1e-12);
    CHECK_NEAR(e2.mem.weights_bytes, 2.0 * e1.mem.weights_bytes, 1e-12);
    CHECK_NEAR(e2.mem.grads_bytes - e1.mem.grads_bytes, 2.0 * s1.layer_dense_avg, 1e-9);
    /* MaxText's recipe ran: with the pair it fits v6e's HBM */
    CHECK(e2.mem.total_bytes <= e2.mem.capacity_bytes);
    /* the pair's backward rematerializes both layers: with the loss's
     * logits small (the vocabulary in 64 tiles, F-MEM-VOCAB-TILES) the
     * activations differ by the 21 inputs no longer kept and one more
     * layer's rematerialized tensors -- what "none" keeps (the pair holds
     * 2 x none - input where a layer held none - input) */
    scan_unit_remat();
    /* 6 stages split 42 layers but not 21 decoder layers (FW-X4): 192
     * chips as fsdp 32 x pp 6 */
    CHECK(preset_sys(&s1, &m, &hw, "gemma2-9b", "tpu-v6e", 8192, 768, 192) == 0);
    CHECK(preset_sys(&s2, &m, &hw, "gemma2-9b", "tpu-v6e", 8192, 768, 192) == 0);
    CHECK(mfu_system_set_scan_unit(&s2, 2) == MFU_OK);
    mfu_config p6 = cfg(1, 32, 1, 1, 6, 1);
    p6.schedule = MFU_SCHED_GPIPE;
    p6.grad_accum = 6;
    p6.recompute = MFU_RC_FULL;
    CHECK(mfu_config_default_split(&s1, &p6) == MFU_OK);
    CHECK(has_fw(&s1, &p6, MFU_FW_MAXTEXT));
    CHECK(!has_fw(&s2, &p6, MFU_FW_MAXTEXT));
}

/* torchtitan's op-level SAC on an MoE model (op_sac). deepseek_v3's save
 * list (models/deepseek_v3/infra/parallelize.py _op_sac_save_list, v0.2.2)
 * has mm, the attention kernels, reduce_scatter and all_to_all_single but
 * not _grouped_mm: the routed experts' up projection reruns from the
 * dispatched tokens, which stay. DeepSeek-V2-Lite on 8 H100 (EP 8, 4,096
 * tokens a device, top-6: 24,576 slots), per MoE layer: the activation's
 * kept input, 2 x 1,408 wide in bf16, and each slot's fp32 probability are
 * freed beyond minimal's -- 2 x 2 x 24,576 x 1,408 + 4 x 24,576 bytes, 26 of
 * its 27 layers -- and the experts' GEMMs rerun. qwen3's list (the family
 * the torchtitan recipe gives mfud's other MoE models) has no
 * all_to_all_single: there the whole routed part reruns, Megatron's moe
 * module. torchtitan is op_sac's alone on an MoE model. */
static void t_op_sac(void)
{
    mfu_hardware hw;
    mfu_model m;
    mfu_system s;
    CHECK(preset_sys(&s, &m, &hw, "deepseek-v2-lite", "h100-sxm", 4096, 8, 8) == 0);
    mfu_config c = cfg(1, 8, 1, 8, 1, 1);
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    mfu_shape sh;
    mfu_config_shape(&s, &c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&s, &sh, NULL, ops, &k);
    double Ts = 4096.0 * 6;
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_MINIMAL] - k.avg.saved_bytes[MFU_RC_OP_SAC],
               (2.0 * 2.0 * Ts * 1408 + 4.0 * Ts) * 26.0 / 27.0, 1e-9);
    CHECK(k.avg.rc_s[MFU_RC_OP_SAC] > k.avg.rc_s[MFU_RC_MINIMAL]);
    c.recompute = MFU_RC_OP_SAC;
    CHECK_EQ_I(mfu_config_frameworks(&s, &c, NULL), MFU_FW_MASK(MFU_FW_TORCHTITAN));
    c.recompute = MFU_RC_MINIMAL;
    CHECK(!(mfu_config_frameworks(&s, &c, NULL) & MFU_FW_MASK(MFU_FW_TORCHTITAN)));
    /* Mixtral (no MLA: torchtitan's qwen3 family): minimal and the moe module */
    mfu_model mx;
    mfu_system sx;
    CHECK(preset_sys(&sx, &mx, &hw, "mixtral-8x7b", "h100-sxm", 4096, 8, 8) == 0);
    CHECK_EQ_I(sx.rc[MFU_RC_OP_SAC].modules, sx.rc[MFU_RC_MINIMAL].modules | MFU_RCM_MOE);
    /* a dense model: op_sac is torchtitan's, minimal is not (F-RC-OP-SAC,
     * t_op_sac_dense) */
    mfu_model d;
    mfu_system sd;
    CHECK(preset_sys(&sd, &d, &hw, "llama3-8b", "h100-sxm", 4096, 8, 8) == 0);
    mfu_config cd = cfg(1, 8, 1, 1, 1, 1);
    cd.recompute = MFU_RC_MINIMAL;
    CHECK(mfu_config_default_split(&sd, &cd) == MFU_OK);
    CHECK(!(mfu_config_frameworks(&sd, &cd, NULL) & MFU_FW_MASK(MFU_FW_TORCHTITAN)));
    cd.recompute = MFU_RC_OP_SAC;
    CHECK_EQ_I(mfu_config_frameworks(&sd, &cd, NULL), MFU_FW_MASK(MFU_FW_TORCHTITAN));
}

/* F-RC-OP-SAC with TP 2 (sequence parallel, as torchtitan always runs
 * it): the reduce-scatters after wo and w2 are on the save list
 * (models/llama3/infra/parallelize.py _op_sac_save_list:
 * _c10d_functional.reduce_scatter_tensor), so their sequence-split
 * outputs stay and only the input all-gathers rerun. Llama 3 8B at 8,192
 * tokens, per token in bf16 values: the layer input 4096 / 2, wq 4096 / 2,
 * wv 1024 / 2, the kernel's output 4096 / 2 (and 16 heads' fp32
 * log-sum-exp), w1 14336 / 2, w2's partial sums 4096, the two
 * reduce-scatter outputs 2 x 4096 / 2: 22,016 values. The replay's
 * collectives: half of what full recompute repeats (the all-gather of
 * each block's all-gather and reduce-scatter pair). */
static void t_op_sac_tp(void)
{
    mfu_hardware hw;
    mfu_model m;
    mfu_system s;
    CHECK(preset_sys(&s, &m, &hw, "llama3-8b", "h100-sxm", 8192, 8, 8) == 0);
    mfu_config c = cfg(1, 4, 2, 1, 1, 1);
    c.sp = 1;
    mfu_shape sh;
    mfu_config_shape(&s, &c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&s, &sh, NULL, ops, &k);
    double T = 8192.0;
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_OP_SAC], 2.0 * 22016 * T + 4.0 * 16 * T, 1e-12);
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    double tot[3];
    const int pol[3] = {MFU_RC_NONE, MFU_RC_OP_SAC, MFU_RC_FULL};
    for (int i = 0; i < 3; i++) {
        c.recompute = pol[i];
        mfu_eval ev;
        CHECK(mfu_evaluate(&s, &c, ops, &ev) == 0);
        tot[i] = ev.bound.comm_total_s[MFU_COMM_TP];
    }
    CHECK(tot[2] > tot[0]);
    CHECK_NEAR(tot[1] - tot[0], 0.5 * (tot[2] - tot[0]), 1e-9);
}

/* F-RC-OP-SAC's attention on an MoE layer: torchtitan's mm counter
 * restarts each layer, so an MoE layer's attention also keeps wq's and
 * wv's outputs and reruns wk and wo; the MoE block stays as the modules
 * say (minimal and moe for the qwen3 family mixtral is built as). Against
 * the modules alone (the custom slot given minimal | moe), Mixtral 8x7B
 * (d 4096, 8 KV heads of 128) at 4,096 tokens keeps neither k (1,024
 * values a token) nor the MLP norm's input (the residual, 4,096), and
 * reruns wk and wo (2 x 4096 x (1024 + 4096) FLOPs a token) and the
 * attention's elementwise ops beyond the norms (RoPE, the residual adds). */
static void t_op_sac_moe_attn(void)
{
    mfu_hardware hw;
    mfu_model m;
    mfu_system s;
    CHECK(load_hw("h100-sxm", &hw) == 0 && load_model("mixtral-8x7b", &m) == 0);
    mfu_training tr = {4096, 4096.0 * 8, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    CHECK(mfu_system_init(&s, &m, &hw, &tr, 8, mfu_rc_std_modules[MFU_RC_MINIMAL] | MFU_RCM_MOE, ops) == MFU_OK);
    CHECK_EQ_I(s.rc[MFU_RC_CUSTOM].modules, s.rc[MFU_RC_OP_SAC].modules);
    mfu_config c = cfg(1, 8, 1, 8, 1, 1);
    mfu_shape sh;
    mfu_config_shape(&s, &c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&s, &sh, NULL, ops, &k);
    double T = 4096.0;
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_CUSTOM] - k.avg.saved_bytes[MFU_RC_OP_SAC], 2.0 * T * (1024 + 4096), 1e-12);
    int n = mfu_ops_layer(&m, 0, &sh, ops, MFU_SCRATCH_OPS);
    double extra = 2.0 * T * 4096 * (1024 + 4096);
    for (int i = 0; i < n; i++)
        if (ops[i].phase == MFU_FWD && (!strcmp(ops[i].name, "rope") || strstr(ops[i].name, "_residual")))
            extra += ops[i].flops;
    CHECK_NEAR(k.avg.rc_flops[MFU_RC_OP_SAC] - k.avg.rc_flops[MFU_RC_CUSTOM], extra, 1e-9);
}

/* F-RC-OP-SAC on a dense model, by hand: Llama 3 8B (d 4096, 32 heads and
 * 8 KV heads of 128, SwiGLU 14336), 8,192 tokens, tp 1. torchtitan's
 * _apply_op_sac (distributed/activation_checkpoint.py, v0.2.2) keeps the
 * outputs of aten.mm but every second one in a layer, and of the SDPA
 * kernel; the layer calls mm as wq, wk, wv, wo, w1, w3, w2
 * (models/llama3/model/model.py). Kept, in bf16 per token: the layer input
 * 4096, wq 4096, wv 1024, the kernel's output 4096 (and its fp32
 * log-sum-exp, 32 heads x 4 B), w1 14336, w2 4096: 31,744 values. Rerun:
 * wk (2 x 4096 x 1024 FLOPs a token), wo (2 x 4096 x 4096), w3 (2 x 4096
 * x 14336), and the norms, RoPE, activation and residual adds, which do
 * not count as GEMM time. */
static void t_op_sac_dense(void)
{
    mfu_hardware hw;
    mfu_model m;
    mfu_system s;
    CHECK(preset_sys(&s, &m, &hw, "llama3-8b", "h100-sxm", 8192, 8, 8) == 0);
    mfu_config c = cfg(1, 8, 1, 1, 1, 1);
    mfu_shape sh;
    mfu_config_shape(&s, &c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&s, &sh, NULL, ops, &k);
    double T = 8192.0;
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_OP_SAC], 2.0 * 31744 * T + 4.0 * 32 * T, 1e-12);
    /* the GEMMs rerun: of the layer's rc FLOPs, those of matmuls */
    int n = mfu_ops_layer(&m, 0, &sh, ops, MFU_SCRATCH_OPS);
    double mm = 0.0, other = 0.0;
    for (int i = 0; i < n; i++)
        if (ops[i].phase == MFU_FWD && !(ops[i].tags & MFU_TAG_MATMUL) && !(ops[i].tags & MFU_TAG_ATTN_CORE))
            other += ops[i].flops;
    mm = 2.0 * T * 4096 * (1024 + 4096 + 14336);
    CHECK_NEAR(k.avg.rc_flops[MFU_RC_OP_SAC], mm + other, 1e-12);
    /* less memory and more recompute than keeping every matmul (minimal) */
    CHECK(k.avg.saved_bytes[MFU_RC_OP_SAC] < k.avg.saved_bytes[MFU_RC_MINIMAL]);
    CHECK(k.avg.rc_s[MFU_RC_OP_SAC] > k.avg.rc_s[MFU_RC_MINIMAL]);
}

/* F-MEM-ACT with unequal chunks: 96 layers over 8 ranks of 8 chunks leave
 * 96 = 64 + 32, so chunks 0-3 of every rank hold 2 layers and 4-7 hold 1.
 * Megatron's interleaved order runs each group's forwards chunk 0 first and
 * its backwards chunk v-1 first, so the early, larger chunks are the ones
 * held: a micro-batch in flight weighs 8 x 2 = 16 layers, not the rank's
 * 12. Rank 1, 16 micro-batches: 2(8-1-1) + 7 x 8 + 1 = 69 chunks in flight
 * (min with 16 x 8), 69/8 = 8.625 micro-batches of 16 layers, and one
 * layer's gradients; at 4 chunks of 3 layers each the rank's own 12. */
static void t_inflight_chunks(void)
{
    mfu_hardware hw;
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_model m;
    mfu_system s;
    CHECK(toy(&s, &m, &hw, 96, 64) == 0);
    mfu_config c = cfg(8, 1, 1, 1, 8, 1);
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.vpp = 8;
    c.grad_accum = 16;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    mfu_shape sh;
    mfu_config_shape(&s, &c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&s, &sh, NULL, ops, &k);
    double S = k.avg.saved_bytes[MFU_RC_NONE];
    mfu_memory m1;
    mfu_memory_stage(&s, &c, &k, 1, &m1);
    CHECK_EQ_I(m1.layers, 12);
    CHECK_NEAR(m1.activations_bytes, 69.0 / 8.0 * 16.0 * S + S, 1e-12);
    c.vpp = 4;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    mfu_memory_stage(&s, &c, &k, 1, &m1);
    /* 2(8-1-1) + 3 x 8 + 1 = 37 chunks of 3 layers */
    CHECK_NEAR(m1.activations_bytes, 37.0 / 4.0 * 12.0 * S + S, 1e-12);
}

/* zero 3: the context-parallel ranks alone shard the model. torchtitan's
 * Llama 3.1 8B at 262,144 tokens on 8 H100 (benchmarks/
 * llama3_h100_202412_torchtitan.md, Table 2: "FSDP 1, CP 8") wraps the
 * model in FSDP over dp_shard x cp = 8 ranks (parallel_dims.py
 * fsdp_enabled = dp_shard > 1 or cp > 1). Its states are those of FSDP 2 x
 * CP 4 -- the same 8 shards: the fp32 master and Adam's moments, 12 B per
 * parameter over 8 -- where zero 0 replicates them (12 B x P on every
 * rank, 96 GB for 8 B parameters). */
static void t_fsdp_over_cp(void)
{
    mfu_hardware hw;
    mfu_model m;
    mfu_system s;
    CHECK(preset_sys(&s, &m, &hw, "llama3-8b", "h100-sxm", 262144, 1, 8) == 0);
    const char *why[MFU_FW_COUNT];
    mfu_config z3 = cfg(1, 1, 1, 1, 1, 8), z0, f2 = cfg(1, 2, 1, 1, 1, 4);
    z3.recompute = f2.recompute = MFU_RC_FULL;
    z3.zero = 3;
    z0 = z3;
    z0.zero = 0;
    CHECK(mfu_config_default_split(&s, &z3) == MFU_OK && mfu_config_default_split(&s, &z0) == MFU_OK &&
          mfu_config_default_split(&s, &f2) == MFU_OK);
    mfu_eval e3, e0, ef;
    CHECK(mfu_evaluate(&s, &z3, ops, &e3) == 0);
    CHECK(mfu_evaluate(&s, &z0, ops, &e0) == 0);
    CHECK(mfu_evaluate(&s, &f2, ops, &ef) == 0);
    double P = s.params_total;
    CHECK_NEAR(e3.mem.optimizer_bytes, 12.0 * P / 8.0, 1e-9);
    CHECK_NEAR(e0.mem.optimizer_bytes, 12.0 * P, 1e-9);
    CHECK_NEAR(e3.mem.weights_bytes + e3.mem.grads_bytes + e3.mem.optimizer_bytes,
               ef.mem.weights_bytes + ef.mem.grads_bytes + ef.mem.optimizer_bytes, 1e-9);
    CHECK(e3.feasible && !e0.feasible);
    /* it pays FSDP's gathers over the 8 ranks, as FSDP 2 x CP 4 does */
    CHECK(e3.bound.comm_total_s[MFU_COMM_FSDP] > 0);
    CHECK_NEAR(e3.bound.comm_total_s[MFU_COMM_FSDP], ef.bound.comm_total_s[MFU_COMM_FSDP], 1e-9);
    /* torchtitan runs zero 3 and never the replicas (FW-T14); Megatron-LM
     * both (FSDP2 over the data-and-context group, or DDP over cp) */
    CHECK(mfu_config_frameworks(&s, &z3, NULL) & MFU_FW_MASK(MFU_FW_TORCHTITAN));
    CHECK(!(mfu_config_frameworks(&s, &z0, why) & MFU_FW_MASK(MFU_FW_TORCHTITAN)));
    CHECK(why[MFU_FW_TORCHTITAN] && strstr(why[MFU_FW_TORCHTITAN], "FW-T14") != NULL);
    CHECK(mfu_config_frameworks(&s, &z3, NULL) & MFU_FW_MASK(MFU_FW_MEGATRON));
    CHECK(mfu_config_frameworks(&s, &z0, NULL) & MFU_FW_MASK(MFU_FW_MEGATRON));
    /* zero 3 is for the cp ranks alone: with an fsdp axis, the axis */
    int reason;
    const char *w;
    f2.zero = 3;
    CHECK(mfu_config_check_sched(&s, &f2, &reason, &w) != MFU_OK);
    /* MaxText shards the weights over its context axis too (FW-X6) */
    mfu_hardware tpu;
    mfu_model mt;
    mfu_system st;
    CHECK(preset_sys(&st, &mt, &tpu, "llama3-8b", "tpu-v5p", 262144, 1, 8) == 0);
    CHECK(!(mfu_config_frameworks(&st, &z0, why) & MFU_FW_MASK(MFU_FW_MAXTEXT)));
    CHECK(why[MFU_FW_MAXTEXT] && strstr(why[MFU_FW_MAXTEXT], "FW-X6") != NULL);
    CHECK(mfu_config_frameworks(&st, &z3, NULL) & MFU_FW_MASK(MFU_FW_MAXTEXT));
}

/* Megatron's checks on CPU offload (transformer_config.py) for
 * t_cpu_offload's system s (training tr) and configuration c20: fewer
 * offloaded layers than layers, no pipeline parallelism; a host link to
 * cross */
static void cpu_offload_refused(const mfu_system *s, const mfu_model *m, const mfu_hardware *hw,
                                const mfu_training *tr, const mfu_config *c20)
{
    int reason;
    const char *why;
    mfu_config c = *c20;
    c.recompute_layers = 80;
    CHECK(mfu_config_check_rc(s, &c, &reason, &why) != MFU_OK);
    c.recompute_layers = 20;
    mfu_config cp = cfg(1, 8, 1, 1, 8, 1);
    cp.grad_accum = 16;
    cp.recompute = MFU_RC_CPU_OFFLOAD;
    cp.recompute_layers = 5;
    CHECK(mfu_config_default_split(s, &cp) == MFU_OK);
    CHECK(mfu_config_check_rc(s, &cp, &reason, &why) != MFU_OK);
    CHECK(strstr(why, "pipeline") != NULL);
    mfu_hardware none_hw = *hw;
    none_hw.host_bw_bytes_s = 0;
    mfu_system sn;
    CHECK(mfu_system_init(&sn, m, &none_hw, tr, 64, 0, ops) == MFU_OK);
    CHECK(mfu_config_check_rc(&sn, &c, &reason, &why) != MFU_OK);
    CHECK(strstr(why, "host_bw_bytes_s") != NULL);
}

/* Megatron-LM's CPU activation offload (docs/model.md F-RC-CPU-OFFLOAD) on
 * Megatron Bridge's Llama 3 70B GB200 BF16 recipe
 * (NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/llama/
 * llama3_workload_base_configs.py, LLAMA3_70B_GB200_BF16_BASE_CONFIG: 64
 * GPUs, global batch 128, Megatron-FSDP, cpu_offloading_num_layers 20,
 * micro-batch 1, TP/PP/CP 1; seq 8192), a configuration that ran.
 * Saved bytes per token of one layer, TP 1, flash attention, bf16
 * (h = 8192, 64 heads of 128, 8 KV heads, ffn 28672), as in the 405B
 * count above: attention norm input 2h = 16384, its output 16384, Q 16384,
 * K 2048, V 2048, LSE 4 x 64 = 256, out-proj input 16384, MLP norm input
 * 16384, its output 16384, SwiGLU inputs 2 x 2 x 28672 = 114688, down-proj
 * input 57344 = 274,688 B; x 8192 tokens = 2,250,244,096 B a layer. */
static void t_cpu_offload(void)
{
    mfu_model m;
    mfu_hardware hw;
    mfu_system s;
    CHECK(test_system(&s, &m, &hw, "llama3-70b", "gb200-nvl72", 8192, 8192.0 * 128, 64, ops) == 0);
    const mfu_training tr = s.train;
    mfu_config c = cfg(1, 64, 1, 1, 1, 1);
    c.grad_accum = 2;
    c.recompute = MFU_RC_CPU_OFFLOAD;
    c.recompute_layers = 20;
    CHECK(mfu_config_default_split(&s, &c) == MFU_OK);
    int reason;
    const char *why;
    CHECK(mfu_config_check(&s, &c, &reason, &why) == MFU_OK);
    CHECK(has_fw(&s, &c, MFU_FW_MEGATRON));
    CHECK(!has_fw(&s, &c, MFU_FW_TORCHTITAN)); /* FW-T7: torchtitan has no such setting */
    mfu_shape sh;
    mfu_config_shape(&s, &c, &sh);
    mfu_shape_cost k;
    mfu_shape_costs(&s, &sh, NULL, ops, &k);
    double T = 274688.0 * 8192;
    CHECK_NEAR(k.avg.saved_bytes[MFU_RC_NONE], T, 1e-9);
    CHECK_NEAR(k.avg.host_bytes[MFU_RC_CPU_OFFLOAD], T, 1e-9);
    /* Transformer Engine keeps (L - N) x T on the device
     * (transformer_engine/pytorch/cpu_offload.py): 20 layers fewer than
     * "none", and those 20 in host memory */
    mfu_memory off, none;
    mfu_memory_stage(&s, &c, &k, 0, &off);
    mfu_config cn = c;
    cn.recompute = MFU_RC_NONE;
    cn.recompute_layers = -1;
    mfu_memory_stage(&s, &cn, &k, 0, &none);
    CHECK_NEAR(none.activations_bytes - off.activations_bytes, 20 * T, 1e-9);
    CHECK_NEAR(off.host_bytes, 20 * T, 1e-9);
    CHECK(none.headroom_bytes < 0); /* without offload the recipe does not fit ... */
    mfu_eval ev;
    CHECK(mfu_evaluate(&s, &c, ops, &ev) == MFU_OK);
    CHECK(ev.feasible); /* ... with it, it does, as it ran */

    /* time: x = T / 2.56e11 B/s = 8.8 ms a layer each way, hidden under
     * the 78 other layers' forward (L - 2 = 78; TE's window) */
    double x = T / hw.host_bw_bytes_s;
    mfu_shape_cost ke;
    mfu_shape_costs(&s, &sh, &hw.eff, ops, &ke);
    CHECK(20 * x < 78 * ke.avg.fwd_s);
    CHECK(ev.expected.offload_s == 0);
    CHECK(ev.bound.step_time_s >= 2 * 2 * 20 * x); /* the link's busy time, 2 micro-batches */

    /* a slow link (1 GB/s): 20 copies of 2.25 s each way outlast 78 layers,
     * forward max(L f, 2 f + N x) and backward max(L b, 2 b + N x) */
    mfu_hardware slow = hw;
    slow.host_bw_bytes_s = 1e9;
    mfu_system ss;
    CHECK(mfu_system_init(&ss, &m, &slow, &tr, 64, 0, ops) == MFU_OK);
    CHECK(mfu_evaluate(&ss, &c, ops, &ev) == MFU_OK);
    double xs = T / 1e9;
    double want = 2 * ((20 * xs - 78 * ke.avg.fwd_s) + (20 * xs - 78 * ke.avg.bwd_s));
    CHECK_NEAR(ev.expected.offload_s, want, 1e-9);
    CHECK_NEAR(ev.expected.gap_s[MFU_GAP_OFFLOAD], ev.expected.offload_s, 1e-12);
    /* all layers but one: each copy waits in full (W = 1) */
    c.recompute_layers = -1;
    CHECK_EQ_I(mfu_offload_layers(&c, 80), 79);
    CHECK(mfu_evaluate(&ss, &c, ops, &ev) == MFU_OK);
    CHECK_NEAR(ev.expected.offload_s, 2 * 2 * 79 * xs, 1e-9);

    cpu_offload_refused(&s, &m, &hw, &tr, &c);
}

static const check_case cases[] = {
    CHECK_CASE(t_recompute_modules),
    CHECK_CASE(t_inflight),
    CHECK_CASE(t_splits),
    CHECK_CASE(t_splits_units),
    CHECK_CASE(t_splits_chunks),
    CHECK_CASE(t_frameworks),
    CHECK_CASE(t_frameworks_tied),
    CHECK_CASE(t_frameworks_tpu),
    CHECK_CASE(t_llama3_405b),
    CHECK_CASE(t_gpt3_narayanan),
    CHECK_CASE(t_megatron_1t),
    CHECK_CASE(t_deepseek_v3),
    CHECK_CASE(t_dualpipev_inflight),
    CHECK_CASE(t_dualpipev),
    CHECK_CASE(t_remat_names),
    CHECK_CASE(t_moe_load),
    CHECK_CASE(t_maxtext_savers),
    CHECK_CASE(t_megatron_fsdp),
    CHECK_CASE(t_fsdp_over_cp),
    CHECK_CASE(t_inflight_chunks),
    CHECK_CASE(t_op_sac),
    CHECK_CASE(t_op_sac_dense),
    CHECK_CASE(t_op_sac_tp),
    CHECK_CASE(t_op_sac_moe_attn),
    CHECK_CASE(t_fsdp_layer_tpu),
    CHECK_CASE(t_maxtext_sp),
    CHECK_CASE(t_loss_xla),
    CHECK_CASE(t_xla_deepseek2_16b),
    CHECK_CASE(t_loss_eager),
    CHECK_CASE(t_scan_unit),
    CHECK_CASE(t_head_apart),
    CHECK_CASE(t_cpu_offload),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
