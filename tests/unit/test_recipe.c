/* api/recipe.c: launch recipes. Exact Megatron-LM flags for layouts worked
 * out by hand, ZeRO stages, shell safety, MoE and MLA shapes, window
 * patterns, what is unavailable and why, the torchtitan job config and
 * MaxText's mesh (docs/recipes.md). */
#include "check.h"
#include "internal.h"
#include "testutil.h"

static mfu_op ops[MFU_MAX_OPS];

typedef struct setup {
    mfu_model m;
    mfu_hardware hw;
    mfu_system sys;
    int ok;
} setup;

static void mk(setup *s, const char *model, const char *hw, int64_t devices, int64_t seq, int64_t batch_seqs,
               mfu_dtype dt)
{
    memset(s, 0, sizeof *s);
    s->ok = load_model(model, &s->m) == 0 && load_hw(hw, &s->hw) == 0;
    mfu_training t = {seq, (double)(seq * batch_seqs), dt, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    s->ok = s->ok && mfu_system_init(&s->sys, &s->m, &s->hw, &t, devices, 0, ops) == MFU_OK;
    CHECK(s->ok);
}

/* the recipes of c (its split filled in as the search would) and its eval */
static json_t *recipes_of(setup *s, mfu_config *c, mfu_eval *ev)
{
    memset(ev, 0, sizeof *ev);
    if (!s->ok) return json_object();
    CHECK(mfu_config_default_split(&s->sys, c) == MFU_OK);
    CHECK(mfu_evaluate(&s->sys, c, ops, ev) == MFU_OK);
    return api_render_recipes(&s->sys, c, ev);
}

static json_t *argv_of(json_t *rec, const char *fw)
{
    return json_object_get(json_object_get(rec, fw), "argv");
}

/* index of `flag` in argv, -1 if absent */
static int find(json_t *argv, const char *flag)
{
    for (size_t i = 0; i < json_array_size(argv); i++)
        if (!strcmp(json_string_value(json_array_get(argv, i)), flag)) return (int)i;
    return -1;
}

/* the word after `flag` ("" if none) */
static const char *value(json_t *argv, const char *flag)
{
    int i = find(argv, flag);
    const char *v = i >= 0 ? json_string_value(json_array_get(argv, (size_t)i + 1)) : NULL;
    return v ? v : "";
}

static const char *unavailable(json_t *rec, const char *fw)
{
    const char *u = json_string_value(json_object_get(json_object_get(rec, fw), "unavailable"));
    return u ? u : "";
}

/* every word is one shell word needing no quotes, except the Python list
 * expressions of the pattern flags, which must be well formed */
static int shell_safe(json_t *argv)
{
    static const char SAFE[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.,/:=+@%";
    for (size_t i = 0; i < json_array_size(argv); i++) {
        const char *w = json_string_value(json_array_get(argv, i));
        if (!w || !*w) return 0;
        if (strspn(w, SAFE) == strlen(w)) continue;
        const char *prev = i ? json_string_value(json_array_get(argv, i - 1)) : "";
        if (strcmp(prev, "--moe-layer-freq") && strcmp(prev, "--window-attn-skip-freq")) {
            fprintf(stderr, "unsafe word: %s\n", w);
            return 0;
        }
        if (strspn(w, "()[]*+0123456789") != strlen(w) || w[0] != '(' || w[strlen(w) - 1] != ')') return 0;
    }
    return 1;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* GPT-3 175B on 1024 A100 as Narayanan et al. 2021 Table 1 ran it: tp 8,
 * pp 8, dp 16, batch 1536, interleaved (vpp 2), full recompute; the whole
 * argv derived by hand from the model (96 layers of 12288, 96 heads of
 * 128: no --kv-channels; 4h GeLU MLP: no --swiglu; LayerNorm, learned
 * positions, biases, dropout and tied embeddings are Megatron's defaults,
 * so no flags for them) and the layout (1536 sequences = 1 x 96 x 16;
 * every layer recomputed: uniform, 1 layer per unit; the one-pass loss,
 * Transformer Engine's (F-TIME-CE-UNFUSED); vocabulary 50257 is
 * odd: NullTokenizer's --vocab-size is 50256 plus its EOD token, padded
 * with the default 128). */
static mfu_config gpt3_175b_layout(setup *s)
{
    mk(s, "gpt3-175b", "a100-80gb", 1024, 2048, 1536, MFU_DT_BF16);
    mfu_config c = test_cfg(16, 1, 8, 1, 8, 1);
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.vpp = 2;
    c.grad_accum = 96;
    c.recompute = MFU_RC_FULL;
    return c;
}

static void t_gpt3_175b(void)
{
    static setup s;
    mfu_config c = gpt3_175b_layout(&s);
    mfu_eval ev;
    json_t *rec = recipes_of(&s, &c, &ev);
    static const char *const want[] = {
        "--num-layers", "96", "--hidden-size", "12288", "--ffn-hidden-size", "49152",
        "--num-attention-heads", "96", "--seq-length", "2048", "--max-position-embeddings", "2048",
        "--normalization", "LayerNorm", "--position-embedding-type", "learned_absolute",
        "--micro-batch-size", "1", "--global-batch-size", "1536", "--tensor-model-parallel-size", "8",
        "--pipeline-model-parallel-size", "8", "--context-parallel-size", "1",
        "--num-virtual-stages-per-pipeline-rank", "2", "--recompute-granularity", "full",
        "--recompute-method", "uniform", "--recompute-num-layers", "1", "--bf16", "--overlap-grad-reduce",
        "--attention-backend", "flash", "--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl", "te",
        "--tokenizer-type", "NullTokenizer", "--vocab-size", "50256",
        "--make-vocab-size-divisible-by", "128", "--mock-data", "--train-iters", "100", "--lr", "1e-4"};
    json_t *argv = argv_of(rec, "megatron");
    size_t n = sizeof want / sizeof *want;
    CHECK_EQ_I(json_array_size(argv), n);
    for (size_t i = 0; i < n && i < json_array_size(argv); i++)
        CHECK_STR(json_string_value(json_array_get(argv, i)), want[i]);
    CHECK(shell_safe(argv));
    /* the compatibility line is the argv, space-separated (nothing to quote) */
    json_t *line = api_recipe_shell_line(json_object_get(rec, "megatron"));
    CHECK(json_is_string(line) && !strncmp(json_string_value(line), "--num-layers 96 --hidden-size 12288", 35));
    CHECK(json_is_string(line) && strstr(json_string_value(line), "--global-batch-size 1536 "));
    json_decref(line);
    /* the padding is said */
    json_t *notes = json_object_get(json_object_get(rec, "megatron"), "notes");
    int padded = 0;
    for (size_t i = 0; i < json_array_size(notes); i++)
        padded += strstr(json_string_value(json_array_get(notes, i)), "from 50257 to 51200") != NULL;
    CHECK_EQ_I(padded, 1);
    /* torchtitan needs sequence parallel with tp (its rule's text is the
     * reason); MaxText is a TPU framework */
    CHECK(!strncmp(unavailable(rec, "torchtitan"), "FW-T2", 5));
    CHECK_STR(unavailable(rec, "maxtext"), "not a GPU framework");
    CHECK(find(argv, "--no-overlap-p2p-communication") < 0);
    json_decref(rec);
    /* an unknown schedule for Megatron: ZB-H1 is unavailable with FW-M4 */
    c.schedule = MFU_SCHED_ZB;
    c.vpp = 1;
    rec = recipes_of(&s, &c, &ev);
    CHECK(!strncmp(unavailable(rec, "megatron"), "FW-M4", 5));
    json_t *none = api_recipe_shell_line(json_object_get(rec, "megatron"));
    CHECK(json_is_null(none));
    json_decref(none);
    json_decref(rec);
    /* FSDP over a tied model: --use-torch-fsdp2 asserts untied embeddings;
     * the legality rules say so too (FW-M8), so the configuration does not
     * name Megatron-LM */
    static setup s64;
    mk(&s64, "gpt3-175b", "a100-80gb", 64, 2048, 64, MFU_DT_BF16);
    mfu_config f = test_cfg(1, 64, 1, 1, 1, 1);
    rec = recipes_of(&s64, &f, &ev);
    CHECK(!(ev.frameworks & MFU_FW_MASK(MFU_FW_MEGATRON)));
    CHECK(strstr(unavailable(rec, "megatron"), "--untie-embeddings-and-output-weights") != NULL);
    json_decref(rec);
}

/* ZeRO stages on Llama-3-70B, 64 H100, tp 8, dp 8 */
static void t_zero(void)
{
    static setup s;
    mk(&s, "llama3-70b", "h100-sxm", 64, 8192, 64, MFU_DT_BF16);
    mfu_config c = test_cfg(8, 1, 8, 1, 1, 1);
    c.sp = 1;
    c.grad_accum = 8;
    c.recompute = MFU_RC_FULL;
    mfu_eval ev;
    c.zero = 1;
    json_t *rec = recipes_of(&s, &c, &ev);
    json_t *a = argv_of(rec, "megatron");
    CHECK(find(a, "--use-distributed-optimizer") >= 0);
    CHECK(find(a, "--overlap-param-gather") > find(a, "--overlap-grad-reduce"));
    CHECK(find(a, "--use-megatron-fsdp") < 0);
    CHECK(find(a, "--sequence-parallel") >= 0);
    /* GQA 64/8, SwiGLU, RMSNorm, RoPE, untied, no biases, no dropout */
    CHECK(find(a, "--group-query-attention") >= 0);
    CHECK_STR(value(a, "--num-query-groups"), "8");
    CHECK(find(a, "--kv-channels") < 0);
    CHECK(find(a, "--swiglu") >= 0);
    CHECK_STR(value(a, "--normalization"), "RMSNorm");
    CHECK_STR(value(a, "--position-embedding-type"), "rope");
    CHECK(find(a, "--untie-embeddings-and-output-weights") >= 0);
    CHECK(find(a, "--disable-bias-linear") >= 0);
    CHECK_STR(value(a, "--hidden-dropout"), "0.0");
    CHECK_STR(value(a, "--global-batch-size"), "64");
    /* 128256 = 2^8 x 501: padding to a multiple of 32 x tp 8 keeps it exact */
    CHECK_STR(value(a, "--vocab-size"), "128255");
    CHECK_STR(value(a, "--make-vocab-size-divisible-by"), "32");
    CHECK(shell_safe(a));
    /* torchtitan has no ZeRO-1 */
    CHECK(!strncmp(unavailable(rec, "torchtitan"), "FW-T1", 5));
    json_decref(rec);

    c.zero = 2;
    rec = recipes_of(&s, &c, &ev);
    a = argv_of(rec, "megatron");
    CHECK(find(a, "--use-megatron-fsdp") >= 0);
    CHECK_STR(value(a, "--data-parallel-sharding-strategy"), "optim_grads");
    CHECK_STR(value(a, "--ckpt-format"), "fsdp_dtensor");
    json_decref(rec);

    c.zero = 0;
    rec = recipes_of(&s, &c, &ev);
    a = argv_of(rec, "megatron");
    CHECK(find(a, "--use-distributed-optimizer") < 0);
    CHECK(find(a, "--overlap-param-gather") < 0);
    CHECK(find(a, "--overlap-grad-reduce") >= 0);
    CHECK(find(a, "--use-megatron-fsdp") < 0);
    /* DDP next to tp in torchtitan v0.2.2 raises */
    CHECK(strstr(unavailable(rec, "torchtitan"), "DDP") != NULL);
    json_decref(rec);

    /* selective recompute names its modules; no grad overlap, no flag */
    s.sys.train.no_grad_overlap = 1;
    c.recompute = MFU_RC_SELECTIVE;
    rec = recipes_of(&s, &c, &ev);
    a = argv_of(rec, "megatron");
    CHECK_STR(value(a, "--recompute-granularity"), "selective");
    CHECK_STR(value(a, "--recompute-modules"), "core_attn");
    CHECK(find(a, "--recompute-method") < 0);
    CHECK(find(a, "--overlap-grad-reduce") < 0);
    json_decref(rec);
    s.sys.train.no_grad_overlap = 0;
}

/* zero 3 over the cp ranks: Megatron's FSDP2 and torchtitan's FSDP over
 * dp_shard x cp (t_zero's layout, tp 8 x cp 8) */
static void t_zero3(void)
{
    static setup s;
    mk(&s, "llama3-70b", "h100-sxm", 64, 8192, 64, MFU_DT_BF16);
    mfu_config c;
    mfu_eval ev;
    json_t *rec, *a;
    /* zero 3, the 8 cp ranks alone sharding (tp 8 x cp 8): Megatron's FSDP2,
     * which shards over the data-and-context group
     * (torch_fully_sharded_data_parallel.py), no distributed optimizer and no
     * DDP overlap flags; torchtitan's FSDP over dp_shard x cp with dp_shard
     * 1, which it refuses to replicate (FW-T14) */
    c = test_cfg(1, 1, 8, 1, 1, 8);
    c.sp = 1;
    c.grad_accum = 64;
    c.recompute = MFU_RC_FULL;
    c.zero = 3;
    rec = recipes_of(&s, &c, &ev);
    a = argv_of(rec, "megatron");
    CHECK(find(a, "--use-torch-fsdp2") >= 0);
    CHECK(find(a, "--use-distributed-optimizer") < 0);
    CHECK(find(a, "--overlap-grad-reduce") < 0);
    CHECK_STR(value(a, "--context-parallel-size"), "8");
    CHECK(unavailable(rec, "torchtitan")[0] == 0);
    json_decref(rec);
    c.zero = 0;
    rec = recipes_of(&s, &c, &ev);
    CHECK(!strncmp(unavailable(rec, "torchtitan"), "FW-T14", 6));
    CHECK(find(argv_of(rec, "megatron"), "--use-torch-fsdp2") < 0);
    json_decref(rec);
}

/* Megatron-LM before Megatron-Core waited for its pipeline sends
 * (training.pp_overlap_p2p false, F-COMM-PP-1F1B): the GPT-3 layout of
 * t_gpt3_175b says so to Megatron-Core, and at pp <= 2 cannot. */
static void t_p2p_wait(void)
{
    static setup s;
    mfu_config c = gpt3_175b_layout(&s);
    mfu_eval ev;
    json_t *rec;
    /* the estimate waited for the interleaved sends (training.pp_overlap_p2p
     * false, F-COMM-PP-1F1B): the recipe says so to Megatron-Core, which
     * overlaps them by default (arguments.py --no-overlap-p2p-communication) */
    s.sys.train.pp_no_overlap_p2p = 1;
    rec = recipes_of(&s, &c, &ev);
    CHECK(find(argv_of(rec, "megatron"), "--no-overlap-p2p-communication") >= 0);
    json_decref(rec);
    /* ... and at pp <= 2 Megatron refuses that (FW-M5, core_r0.8
     * arguments.py: "pipeline-model-parallel size should be greater than 2") */
    {
        mfu_config c2 = test_cfg(64, 1, 8, 1, 2, 1);
        c2.schedule = MFU_SCHED_INTERLEAVED;
        c2.vpp = 2;
        c2.grad_accum = 24;
        c2.recompute = MFU_RC_FULL;
        CHECK(mfu_config_default_split(&s.sys, &c2) == MFU_OK);
        const char *why[MFU_FW_COUNT] = {0};
        unsigned fw = mfu_config_frameworks(&s.sys, &c2, why);
        CHECK(!(fw & MFU_FW_MASK(MFU_FW_MEGATRON)) && why[MFU_FW_MEGATRON] && strstr(why[MFU_FW_MEGATRON], "pp > 2"));
        s.sys.train.pp_no_overlap_p2p = 0;
        fw = mfu_config_frameworks(&s.sys, &c2, why);
        CHECK(fw & MFU_FW_MASK(MFU_FW_MEGATRON));
    }
    s.sys.train.pp_no_overlap_p2p = 0;
}

/* Megatron-LM of 2021 (F-TIME-WGRAD-ACC, F-COMM-TP-SYNC): an estimate
 * with the gradient accumulation unfused launches with
 * --no-gradient-accumulation-fusion (arguments.py); one that waited for
 * the backward's TP all-reduces says that Megatron-Core cannot (it ignored, and now refuses,
 * --no-async-tensor-model-parallel-allreduce). */
static void t_legacy_flags(void)
{
    static setup s;
    mfu_config c = gpt3_175b_layout(&s);
    mfu_eval ev;
    json_t *rec = recipes_of(&s, &c, &ev);
    CHECK(find(argv_of(rec, "megatron"), "--no-gradient-accumulation-fusion") < 0);
    /* F-TIME-CE-UNFUSED: the estimate's one-pass loss is Transformer
     * Engine's, which Megatron runs only when asked */
    CHECK(find(argv_of(rec, "megatron"), "--cross-entropy-loss-fusion") >= 0);
    CHECK_STR(value(argv_of(rec, "megatron"), "--cross-entropy-fusion-impl"), "te");
    json_decref(rec);
    s.sys.train.wgrad_acc_unfused = 1;
    s.sys.train.tp_sync_bwd = 1;
    s.sys.train.ce_unfused = 1;
    rec = recipes_of(&s, &c, &ev);
    CHECK(find(argv_of(rec, "megatron"), "--no-gradient-accumulation-fusion") >= 0);
    CHECK(find(argv_of(rec, "megatron"), "--cross-entropy-loss-fusion") < 0);
    CHECK(find(argv_of(rec, "megatron"), "--cross-entropy-fusion-impl") < 0);
    CHECK(find(argv_of(rec, "megatron"), "--no-async-tensor-model-parallel-allreduce") < 0);
    json_t *notes = json_object_get(json_object_get(rec, "megatron"), "notes");
    int said = 0;
    for (size_t i = 0; i < json_array_size(notes); i++)
        said += strstr(json_string_value(json_array_get(notes, i)), "tp_async_allreduce false") != NULL;
    CHECK(said == 1);
    json_decref(rec);
    s.sys.train.wgrad_acc_unfused = 0;
    s.sys.train.tp_sync_bwd = 0;
    s.sys.train.ce_unfused = 0;
}

/* F-TIME-FP8-AMAX: Megatron launches the scaling the estimate took
 * (--fp8-recipe, arguments.py's names); torchtitan's torchao float8 has
 * tensorwise scaling only, and says so when the estimate took another */
static int notes_say(json_t *rec, const char *fw, const char *what)
{
    json_t *notes = json_object_get(json_object_get(rec, fw), "notes");
    int n = 0;
    for (size_t i = 0; i < json_array_size(notes); i++)
        n += strstr(json_string_value(json_array_get(notes, i)), what) != NULL;
    return n;
}

static void t_fp8_recipes(void)
{
    static setup s;
    mk(&s, "llama3-70b", "h100-sxm", 64, 8192, 1024, MFU_DT_FP8);
    mfu_config c = test_cfg(1, 8, 8, 1, 1, 1);
    c.sp = 1;
    c.mbs = 1;
    c.grad_accum = 128;
    mfu_eval ev;
    json_t *rec = recipes_of(&s, &c, &ev);
    CHECK_STR(value(argv_of(rec, "megatron"), "--fp8-recipe"), "tensorwise");
    CHECK(notes_say(rec, "torchtitan", "training.fp8_recipe") == 0);
    json_decref(rec);
    s.sys.train.fp8_recipe = MFU_FP8_DELAYED;
    rec = recipes_of(&s, &c, &ev);
    CHECK_STR(value(argv_of(rec, "megatron"), "--fp8-recipe"), "delayed");
    CHECK(notes_say(rec, "megatron", "delayed scaling") == 1);
    CHECK(notes_say(rec, "torchtitan", "training.fp8_recipe") == 1);
    json_decref(rec);
}

/* torchtitan: FSDP x CP and an interleaved pipeline with explicit stages */
/* Every ranked configuration names a framework whose recipe is there: a
 * framework the rules admit and the recipe refuses is a top pick nobody
 * can launch as printed. It was: torchtitan's rules admitted pp > 1 for
 * the models it builds as qwen3 (Mixtral, Qwen3 MoE and dense), whose
 * v0.2.2 TrainSpec has no pipelining_fn, and those ranked first on 576
 * GB200s (FW-T15 now). The searches span MoE and dense, NVLink domains,
 * AMD and TPUs. */
static void t_top_picks_launch(void)
{
    static const struct { const char *model, *hw; int devices; } CASES[] = {
        {"mixtral-8x7b", "gb200-nvl72", 576}, {"qwen3-30b-a3b", "gb200-nvl72", 576},
        {"qwen3-235b-a22b", "mi300x", 64},   {"qwen3-8b", "gb200-nvl72", 576},
        {"llama3-70b", "h100-sxm", 512},     {"deepseek-v3", "b200", 256},
        {"mixtral-8x22b", "tpu-v5p", 256},   {"llama3-8b", "tpu-v6e", 256}};
    for (size_t k = 0; k < sizeof CASES / sizeof *CASES; k++) {
        json_t *req = json_pack("{s:{s:s},s:{s:s},s:i,s:{s:i,s:i},s:{s:i}}", "model", "preset", CASES[k].model,
                                "hardware", "preset", CASES[k].hw, "devices", CASES[k].devices, "training",
                                "seq_len", 4096, "global_batch_tokens", 4194304, "search", "top_k", 5);
        api_status st;
        api_status_init(&st);
        json_t *res = api_search(req, &st, NULL, NULL), *cs = json_object_get(res, "configs");
        CHECK(res != NULL && json_array_size(cs) >= 1);
        for (size_t i = 0; i < json_array_size(cs); i++) {
            json_t *c = json_array_get(cs, i), *fws = json_object_get(c, "frameworks");
            int runs = 0;
            for (size_t f = 0; f < json_array_size(fws); f++)
                runs += json_object_get(json_object_get(json_object_get(c, "recipes"),
                                                        json_string_value(json_array_get(fws, f))),
                                        "unavailable") == NULL;
            CHECK(runs >= 1);
            if (!runs) fprintf(stderr, "  %s on %d %s: rank %zu has no recipe of its frameworks\n", CASES[k].model,
                               CASES[k].devices, CASES[k].hw, i + 1);
        }
        json_decref(res);
        json_decref(req);
    }
}

static void t_torchtitan(void)
{
    static setup s;
    mk(&s, "llama3-70b", "h100-sxm", 1024, 8192, 2048, MFU_DT_BF16);
    mfu_config c = test_cfg(4, 128, 1, 1, 1, 2);
    c.mbs = 1;
    c.grad_accum = 4;
    c.recompute = MFU_RC_OP_SAC;
    mfu_eval ev;
    json_t *rec = recipes_of(&s, &c, &ev);
    const char *toml = json_string_value(json_object_get(json_object_get(rec, "torchtitan"), "toml"));
    CHECK(toml != NULL);
    toml = toml ? toml : "";
    CHECK(strstr(toml, "name = \"llama3\"\nflavor = \"70B\"\n") != NULL);
    CHECK(strstr(toml, "data_parallel_replicate_degree = 4\n") != NULL);
    CHECK(strstr(toml, "data_parallel_shard_degree = 128\n") != NULL);
    CHECK(strstr(toml, "context_parallel_degree = 2\n") != NULL);
    CHECK(strstr(toml, "local_batch_size = 1\nglobal_batch_size = 2048\nseq_len = 8192\n") != NULL);
    CHECK(strstr(toml, "mode = \"selective\"\nselective_ac_option = \"op\"\n") != NULL);
    CHECK(strstr(toml, "pipeline_parallel_schedule") == NULL);
    /* the loss compiled (eager, cross_entropy(pred.float()) holds up to
     * 12 bytes a logit: components/loss.py), the model not */
    CHECK(strstr(toml, "[compile]\nenable = true\ncomponents = [\"loss\"]\n") != NULL);
    /* Megatron names no op-level selective recompute for a dense MLP (FW-M7) */
    CHECK(!strncmp(unavailable(rec, "megatron"), "FW-M7", 5));
    json_decref(rec);
    /* training.eager_loss: the run's loss is eager, nothing compiled */
    s.sys.train.ce_eager = s.sys.train.ce_unfused = 1;
    rec = recipes_of(&s, &c, &ev);
    toml = json_string_value(json_object_get(json_object_get(rec, "torchtitan"), "toml"));
    toml = toml ? toml : "";
    CHECK(strstr(toml, "mode = \"selective\"\n") != NULL);
    CHECK(strstr(toml, "[compile]") == NULL);
    json_decref(rec);
    s.sys.train.ce_eager = s.sys.train.ce_unfused = 0;
    /* with full recompute Megatron runs the replica axis over FSDP as
     * Megatron-FSDP's HSDP: optim_grads_params sharding inside the 128,
     * 4 distributed-optimizer instances (num_distributed_optimizer_instances) */
    c.recompute = MFU_RC_FULL;
    rec = recipes_of(&s, &c, &ev);
    CHECK(ev.frameworks & MFU_FW_MASK(MFU_FW_MEGATRON));
    json_t *ma = argv_of(rec, "megatron");
    CHECK(ma != NULL);
    CHECK(find(ma, "--use-megatron-fsdp") >= 0 && find(ma, "--use-torch-fsdp2") < 0);
    CHECK_STR(value(ma, "--data-parallel-sharding-strategy"), "optim_grads_params");
    CHECK_STR(value(ma, "--num-distributed-optimizer-instances"), "4");
    CHECK_STR(value(ma, "--ckpt-format"), "fsdp_dtensor");
    json_decref(rec);
    c.recompute = MFU_RC_MINIMAL;

    /* pp 4 x vpp 4 = 16 virtual stages of 5 layers: torchtitan's default
     * is 2 per rank, so the stages are listed */
    mfu_config p = test_cfg(32, 8, 1, 1, 4, 1);
    p.schedule = MFU_SCHED_INTERLEAVED;
    p.vpp = 4;
    p.grad_accum = 8;
    p.recompute = MFU_RC_FULL;
    rec = recipes_of(&s, &p, &ev);
    CHECK(ev.frameworks & MFU_FW_MASK(MFU_FW_TORCHTITAN));
    toml = json_string_value(json_object_get(json_object_get(rec, "torchtitan"), "toml"));
    toml = toml ? toml : "";
    CHECK(strstr(toml, "pipeline_parallel_schedule = \"Interleaved1F1B\"\n") != NULL);
    CHECK(strstr(toml, "pipeline_parallel_microbatch_size = 1\n") != NULL);
    CHECK(strstr(toml, "local_batch_size = 8\n") != NULL);
    CHECK_EQ_I(count(toml, "\"layers."), 80);
    CHECK(strstr(toml, "module_fqns_per_model_part = [[\"tok_embeddings\", \"layers.0\", \"layers.1\", "
                       "\"layers.2\", \"layers.3\", \"layers.4\"], [\"layers.5\"") != NULL);
    CHECK(strstr(toml, "\"layers.79\", \"norm\", \"output\"]]\n") != NULL);
    CHECK_EQ_I(count(toml, "], ["), 15);
    CHECK(strstr(toml, "mode = \"full\"\n") != NULL);
    json_decref(rec);

    /* DualPipeV: 2 virtual stages per rank is torchtitan's default for a
     * multi-stage schedule, 80 layers over 8 stages divide evenly, so only
     * the embedding/output weights are zeroed (no module list) */
    p.schedule = MFU_SCHED_DUALPIPEV;
    p.vpp = 2;
    p.grad_accum = 8;
    CHECK(mfu_config_default_split(&s.sys, &p) == MFU_OK);
    rec = recipes_of(&s, &p, &ev);
    CHECK(ev.frameworks & MFU_FW_MASK(MFU_FW_TORCHTITAN));
    toml = json_string_value(json_object_get(json_object_get(rec, "torchtitan"), "toml"));
    toml = toml ? toml : "";
    CHECK(strstr(toml, "pipeline_parallel_schedule = \"DualPipeV\"\n") != NULL);
    CHECK(strstr(toml, "pipeline_parallel_first_stage_less_layers = 0\n") != NULL);
    CHECK(strstr(toml, "module_fqns_per_model_part") == NULL);
    CHECK(!strncmp(unavailable(rec, "megatron"), "FW-M", 4));
    json_decref(rec);
}

/* MoE and MLA: DeepSeek-V3 (3 dense layers, then 58 MoE ones) */
static void t_moe(void)
{
    static setup s;
    mk(&s, "deepseek-v3", "h800", 256, 4096, 1024, MFU_DT_BF16);
    mfu_config c = test_cfg(8, 1, 4, 32, 8, 1);
    c.sp = 1;
    c.zero = 1;
    c.grad_accum = 128;
    c.recompute = MFU_RC_MLA_UP;
    mfu_eval ev;
    json_t *rec = recipes_of(&s, &c, &ev);
    json_t *a = argv_of(rec, "megatron");
    CHECK(a != NULL);
    CHECK(find(a, "--multi-latent-attention") >= 0);
    CHECK_STR(value(a, "--q-lora-rank"), "1536");
    CHECK_STR(value(a, "--kv-lora-rank"), "512");
    CHECK_STR(value(a, "--qk-head-dim"), "128");
    CHECK_STR(value(a, "--qk-pos-emb-head-dim"), "64");
    CHECK_STR(value(a, "--v-head-dim"), "128");
    CHECK_STR(value(a, "--num-experts"), "256");
    CHECK_STR(value(a, "--moe-router-topk"), "8");
    CHECK_STR(value(a, "--moe-ffn-hidden-size"), "2048");
    CHECK_STR(value(a, "--ffn-hidden-size"), "18432");
    CHECK_STR(value(a, "--moe-shared-expert-intermediate-size"), "2048");
    CHECK_STR(value(a, "--moe-layer-freq"), "([0]*3+[1]*58)");
    CHECK_STR(value(a, "--moe-token-dispatcher-type"), "alltoall");
    CHECK(find(a, "--moe-grouped-gemm") >= 0);
    CHECK_STR(value(a, "--expert-model-parallel-size"), "32");
    CHECK_STR(value(a, "--expert-tensor-parallel-size"), "1");
    CHECK_STR(value(a, "--attention-backend"), "fused");
    /* the modules, in Megatron's names */
    int i = find(a, "--recompute-modules");
    CHECK(i >= 0);
    CHECK_STR(json_string_value(json_array_get(a, (size_t)i + 1)), "layernorm");
    CHECK_STR(json_string_value(json_array_get(a, (size_t)i + 2)), "mla_up_proj");
    /* its MTP layer (num_nextn_predict_layers 1, F-OP-MTP), which the split
     * places with the loss, as Megatron Bridge lays DeepSeek-V3 over 8
     * stages (src/megatron/bridge/recipes/deepseek/h100/deepseek_v3.py
     * _get_deepseek_v3_pipeline_layout (8, 1): the embedding and 8 layers,
     * 8 on each middle stage, 5 with the MTP layer and the loss; Megatron's
     * account flags count no MTP layer: a layout) */
    CHECK_STR(value(a, "--mtp-num-layers"), "1");
    CHECK_STR(value(a, "--pipeline-model-parallel-layout"), "Et*8|(t*8|)*6t*5mL");
    /* the pattern and the layout are quoted on the shell line, and nothing
     * else is */
    json_t *line = api_recipe_shell_line(json_object_get(rec, "megatron"));
    const char *l = json_string_value(line);
    CHECK(l && strstr(l, " --moe-layer-freq '([0]*3+[1]*58)' "));
    CHECK(l && strstr(l, " --pipeline-model-parallel-layout 'Et*8|(t*8|)*6t*5mL' "));
    CHECK(l && count(l, "'") == 4);
    json_decref(line);
    json_decref(rec);

    /* EP over 8 nodes of 8 GPUs with 4-node routing: group-limited routing */
    static setup s2;
    mk(&s2, "deepseek-v3", "h800", 512, 4096, 1024, MFU_DT_BF16);
    mfu_config g = test_cfg(16, 1, 4, 64, 8, 1);
    g.sp = 1;
    g.grad_accum = 64;
    g.recompute = MFU_RC_FULL;
    rec = recipes_of(&s2, &g, &ev);
    a = argv_of(rec, "megatron");
    CHECK_STR(value(a, "--moe-router-num-groups"), "8");
    CHECK_STR(value(a, "--moe-router-group-topk"), "4");
    json_decref(rec);
}

/* A split the classic flags cannot express goes out as Megatron-Core's
 * --pipeline-model-parallel-layout (FW-M6), without
 * --num-virtual-stages-per-pipeline-rank (arguments.py takes one of the
 * two). DeepSeek-V3 on 256 GB200 as Megatron Bridge runs it (scripts/
 * performance/configs/deepseek/deepseek_workload_base_configs.py at
 * 4948f7524, GB200_V1: pp 4, vpp 4, ep 64, 2048 sequences), whose 16
 * virtual stages its recipes lay out "Et*4|(t*4|)*14tmL" (the same file's
 * GB300_V1 pp_layout; src/megatron/bridge/recipes/deepseek/h100/
 * deepseek_v3.py _get_deepseek_v3_pipeline_layout for (4, 4)): its MTP
 * layer "m" and the loss on the last virtual stage, with one decoder
 * layer. mfud's account split with MTP counts as Bridge does (F-OP-MTP):
 * the embedding as none, the loss as a layer, the MTP depth as two (its
 * layer and its LM head), 61 + 3 = 64 over 16 virtual stages, four each:
 * the same layout. */
static void t_pp_layout(void)
{
    static setup s;
    mk(&s, "deepseek-v3", "gb200-nvl72", 256, 4096, 2048, MFU_DT_BF16);
    mfu_config c = test_cfg(64, 1, 1, 64, 4, 1);
    c.schedule = MFU_SCHED_INTERLEAVED;
    c.vpp = 4;
    c.zero = 1;
    c.grad_accum = 32;
    c.recompute = MFU_RC_MLA_UP;
    mfu_eval ev;
    json_t *rec = recipes_of(&s, &c, &ev);
    json_t *a = argv_of(rec, "megatron");
    CHECK(a != NULL);
    CHECK_STR(value(a, "--pipeline-model-parallel-layout"), "Et*4|(t*4|)*14tmL");
    CHECK(find(a, "--num-virtual-stages-per-pipeline-rank") < 0);
    CHECK(find(a, "--decoder-first-pipeline-num-layers") < 0);
    CHECK(find(a, "--account-for-embedding-in-pipeline-split") < 0);
    CHECK(notes_say(rec, "megatron", "--pipeline-model-parallel-layout"));
    /* quoted whole on the shell line ('|', '*' and '(' are the shell's) */
    json_t *line = api_recipe_shell_line(json_object_get(rec, "megatron"));
    const char *l = json_string_value(line);
    CHECK(l && strstr(l, " --pipeline-model-parallel-layout 'Et*4|(t*4|)*14tmL' "));
    json_decref(line);
    json_decref(rec);

    /* first / last stages that vpp does not divide: 16 and 13 over 4
     * chunks each, the middle ranks 16; the last rank's chunks 4, 3, 3, 3
     * (the remainder to the earlier chunks): stages 3, 7, 11, 15 */
    c.split = MFU_SPLIT_FIRST_LAST;
    c.pp_first = 16;
    c.pp_last = 13;
    mfu_config_fill_stages(&s.sys, &c);
    CHECK(mfu_evaluate(&s.sys, &c, ops, &ev) == MFU_OK);
    rec = api_render_recipes(&s.sys, &c, &ev);
    CHECK_STR(value(argv_of(rec, "megatron"), "--pipeline-model-parallel-layout"),
              "Et*4|(t*4|)*6t*3|(t*4|)*3t*3|(t*4|)*3t*3mL");
    json_decref(rec);

    /* where the classic flags express the split they are written and no
     * layout: pp 16 without virtual stages, first and last stages of 3
     * and 2 (the MTP layer beside the last's, where Megatron places it
     * without a layout) */
    c = test_cfg(16, 1, 1, 64, 16, 1);
    c.zero = 1;
    c.grad_accum = 128;
    c.split = MFU_SPLIT_FIRST_LAST;
    c.pp_first = 3;
    c.pp_last = 2;
    mfu_config_fill_stages(&s.sys, &c);
    CHECK(mfu_evaluate(&s.sys, &c, ops, &ev) == MFU_OK);
    rec = api_render_recipes(&s.sys, &c, &ev);
    a = argv_of(rec, "megatron");
    CHECK(find(a, "--pipeline-model-parallel-layout") < 0);
    CHECK_STR(value(a, "--decoder-first-pipeline-num-layers"), "3");
    CHECK_STR(value(a, "--decoder-last-pipeline-num-layers"), "2");
    json_decref(rec);
}

/* A windowed pattern: Gemma 2's alternating 4096-token windows. Megatron
 * has no gated GeLU flag (unavailable); the same layers with SwiGLU give
 * --window-size 4095,0 (TE counts the keys before the query) and one full
 * layer every second (--window-attn-skip-freq 2). */
static void t_windows(void)
{
    static setup s;
    mk(&s, "gemma2-9b", "h100-sxm", 8, 4096, 8, MFU_DT_BF16);
    mfu_config c = test_cfg(8, 1, 1, 1, 1, 1);
    mfu_eval ev;
    json_t *rec = recipes_of(&s, &c, &ev);
    CHECK(strstr(unavailable(rec, "megatron"), "gated GeLU") != NULL);
    CHECK(strstr(unavailable(rec, "torchtitan"), "torchtitan") != NULL);
    json_decref(rec);
    for (int r = 0; r < s.m.n_runs; r++) s.m.runs[r].mlp.act = MFU_ACT_SILU;
    rec = recipes_of(&s, &c, &ev);
    json_t *a = argv_of(rec, "megatron");
    CHECK_STR(value(a, "--window-size"), "4095,0");
    CHECK_STR(value(a, "--window-attn-skip-freq"), "2");
    CHECK_STR(value(a, "--kv-channels"), "256");
    CHECK(find(a, "--untie-embeddings-and-output-weights") < 0);
    json_decref(rec);
    /* layer 4 loses its window: no period, a list run-length coded */
    s.m.runs[4].attn.window = 0;
    rec = recipes_of(&s, &c, &ev);
    a = argv_of(rec, "megatron");
    CHECK_STR(value(a, "--window-attn-skip-freq"), "([1]*1+[0]*1+[1]*1+[0]*3+"
                                                   "[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+"
                                                   "[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+"
                                                   "[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1+[1]*1+[0]*1)");
    CHECK(shell_safe(a));
    json_decref(rec);
}

/* TPU: only MaxText; the mesh over slices; fractional batches */
static void t_tpu(void)
{
    static setup s;
    mk(&s, "llama3-8b", "tpu-v5e", 512, 8192, 512, MFU_DT_BF16);
    mfu_config c = test_cfg(16, 4, 1, 1, 1, 8);
    c.mbs = 2;
    c.grad_accum = 4;
    c.zero = 1;
    c.recompute = MFU_RC_FULL;
    mfu_eval ev;
    json_t *rec = recipes_of(&s, &c, &ev);
    CHECK_STR(unavailable(rec, "megatron"), "not a TPU framework");
    CHECK_STR(unavailable(rec, "torchtitan"), "not a TPU framework");
    json_t *a = argv_of(rec, "maxtext");
    CHECK(a != NULL);
    CHECK(find(a, "model_name=llama3-8b") >= 0);
    CHECK(find(a, "max_target_length=8192") >= 0);
    /* 128 sequences per micro-step over 512 chips, 4 micro-steps */
    CHECK(find(a, "per_device_batch_size=0.25") >= 0);
    CHECK(find(a, "gradient_accumulation_steps=4") >= 0);
    /* slices of 256 (v5e ICI): cp 8 x fsdp 4 x dp 8 inside, dp 2 across */
    CHECK(find(a, "ici_context_parallelism=8") >= 0);
    CHECK(find(a, "ici_fsdp_parallelism=4") >= 0);
    CHECK(find(a, "ici_data_parallelism=8") >= 0);
    CHECK(find(a, "dcn_data_parallelism=2") >= 0);
    CHECK(find(a, "dcn_fsdp_parallelism=1") >= 0);
    CHECK(find(a, "shard_optimizer_over_data=true") >= 0);
    CHECK(find(a, "remat_policy=full") >= 0);
    int64_t prod = 1;
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *w = json_string_value(json_array_get(a, i));
        const char *eq = strchr(w, '=');
        if ((!strncmp(w, "ici_", 4) || !strncmp(w, "dcn_", 4)) && strstr(w, "_parallelism=") && eq)
            prod *= strtoll(eq + 1, NULL, 10);
    }
    CHECK_EQ_I(prod, 512);
    json_decref(rec);

    /* a pipeline: GPipe with repeats, the whole batch in micro-batches */
    static setup s2;
    mk(&s2, "llama3-8b", "tpu-v5e", 256, 8192, 256, MFU_DT_BF16);
    mfu_config p = test_cfg(1, 64, 1, 1, 4, 1);
    p.schedule = MFU_SCHED_GPIPE;
    p.vpp = 2;
    p.grad_accum = 4;
    p.recompute = MFU_RC_SAVE_DOT_EXCEPT_MLP;
    rec = recipes_of(&s2, &p, &ev);
    a = argv_of(rec, "maxtext");
    CHECK(a != NULL);
    CHECK(find(a, "num_pipeline_microbatches=4") >= 0);
    CHECK(find(a, "num_layers_per_pipeline_stage=4") >= 0); /* 32 / (4 x 2) */
    CHECK(find(a, "num_pipeline_repeats=2") >= 0);
    CHECK(find(a, "per_device_batch_size=1") >= 0);         /* 256 sequences / 256 chips */
    CHECK(find(a, "ici_pipeline_parallelism=4") >= 0);
    CHECK(find(a, "remat_policy=save_dot_with_context_except_mlp") >= 0);
    CHECK(find(a, "gradient_accumulation_steps=4") < 0);
    json_decref(rec);
}

static const check_case cases[] = {
    CHECK_CASE(t_gpt3_175b),
    CHECK_CASE(t_p2p_wait),
    CHECK_CASE(t_legacy_flags),
    CHECK_CASE(t_fp8_recipes),
    CHECK_CASE(t_zero),
    CHECK_CASE(t_zero3),
    CHECK_CASE(t_torchtitan),
    CHECK_CASE(t_top_picks_launch),
    CHECK_CASE(t_moe),
    CHECK_CASE(t_pp_layout),
    CHECK_CASE(t_windows),
    CHECK_CASE(t_tpu),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
