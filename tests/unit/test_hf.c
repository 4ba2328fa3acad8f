/* tests/unit/test_hf.c -- HuggingFace config.json import (api/hf.c).
 *
 * Real config.json files of each family live in tests/data/hf/ (sources in
 * tests/data/hf/SOURCES.md). Each one goes HF -> IR (api_hf_to_ir) -> model
 * (api_model_from_ir) -> parameter counts, compared with the numbers the
 * model authors published. Every trap of the families' config.json (the
 * rules at the top of api/hf.c) has a test that
 * fails when the trap is not handled, and bad configs must give a 422 with
 * the pointer of the offending field. Run from the repository root.
 *
 * (Over 600 lines: one program for the importer, a named case per family
 * (check_main), each against its real config.json and published counts.)
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "check.h"
#include "model.h"

#define PTR "/model/hf_config"

static json_t *load(const char *name)
{
    char path[256];
    json_error_t err;
    snprintf(path, sizeof path, "tests/data/hf/%s.json", name);
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fprintf(stderr, "cannot load %s: %s (run from the repository root)\n", path, err.text);
    return j;
}

/* HF -> IR -> model. Returns the IR (new reference) or NULL. */
static json_t *resolve(json_t *hf, mfu_model *m)
{
    api_status st;
    api_status_init(&st);
    json_t *ir = api_hf_to_ir(hf, PTR, &st);
    if (!ir) {
        fprintf(stderr, "api_hf_to_ir failed: %d %s: %s\n", st.status,
                st.n_errors ? st.errors[0].pointer : "", st.n_errors ? st.errors[0].detail : "");
        return NULL;
    }
    if (m) {
        api_status st2;
        api_status_init(&st2);
        memset(m, 0, sizeof *m);
        if (api_model_from_ir(ir, "/model", m, &st2) != 0) {
            fprintf(stderr, "api_model_from_ir failed: %d %s: %s\n", st2.status,
                    st2.n_errors ? st2.errors[0].pointer : "",
                    st2.n_errors ? st2.errors[0].detail : "");
            json_decref(ir);
            return NULL;
        }
    }
    return ir;
}

static json_t *run(json_t *ir, size_t i) { return json_array_get(json_object_get(ir, "layers"), i); }
static size_t n_runs(json_t *ir) { return json_array_size(json_object_get(ir, "layers")); }
static long long rget(json_t *ir, size_t i, const char *part, const char *key)
{
    json_t *r = run(ir, i);
    json_t *v = part ? json_object_get(json_object_get(r, part), key) : json_object_get(r, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -999;
}
static const char *rstr(json_t *ir, size_t i, const char *part, const char *key)
{
    return json_string_value(json_object_get(json_object_get(run(ir, i), part), key));
}

/* One expectation of an IR (one check): "runs=N" (how many runs),
 * "key=value" (a field of the IR itself), "R:key=value" (of run R) or
 * "R:part.key=value" (of run R's attention or mlp). An integer value is
 * compared as an integer, any other as a string. */
static void expect_field(json_t *ir, const char *field, int line)
{
    char buf[128], *end;
    snprintf(buf, sizeof buf, "%s", field);
    char *want = strchr(buf, '=');
    if (!want) {
        fprintf(stderr, "  line %d: no value in \"%s\"\n", line, field);
        CHECK(want != NULL);
        return;
    }
    *want++ = '\0';
    json_t *obj = ir;
    char *key = buf, *colon = strchr(key, ':'), *dot = NULL;
    if (colon) {
        *colon = '\0';
        obj = run(ir, strtoul(key, NULL, 10));
        key = colon + 1;
    }
    if ((dot = strchr(key, '.')) != NULL) {
        *dot = '\0';
        obj = json_object_get(obj, key);
        key = dot + 1;
    }
    long long n = strtoll(want, &end, 10);
    int ok;
    if (*want && !*end) {
        json_t *v = json_object_get(obj, key);
        long long got = !colon && !dot && strcmp(key, "runs") == 0 ? (long long)n_runs(ir)
                        : json_is_integer(v) ? (long long)json_integer_value(v)
                                             : -999;
        CHECK_EQ_I(got, n);
        ok = got == n;
    } else {
        const char *got = json_string_value(json_object_get(obj, key));
        CHECK_STR(got, want);
        ok = got && strcmp(got, want) == 0;
    }
    if (!ok) fprintf(stderr, "  line %d: %s\n", line, field);
}

/* The IR as spec, space-separated expectations (expect_field), says. */
static void expect_ir(json_t *ir, const char *spec, int line)
{
    for (const char *p = spec; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t n = strcspn(p, " ");
        char field[128];
        snprintf(field, sizeof field, "%.*s", (int)n, p);
        expect_field(ir, field, line);
        p += n;
    }
}
#define EXPECT_IR(ir, spec) expect_ir((ir), (spec), __LINE__)

/* hf resolved to its IR (no model), as spec says. */
static void expect_hf(json_t *hf, const char *spec, int line)
{
    json_t *ir = resolve(hf, NULL);
    expect_ir(ir, spec, line);
    json_decref(ir);
}
#define EXPECT_HF(hf, spec) expect_hf((hf), (spec), __LINE__)

/* Expect a 422 whose first error pointer is `want`. */
static void expect_422(json_t *hf, const char *want, int line)
{
    api_status st;
    api_status_init(&st);
    json_t *ir = api_hf_to_ir(hf, PTR, &st);
    int ok = ir == NULL && st.status == 422 && st.n_errors >= 1 &&
             strcmp(st.errors[0].pointer, want) == 0;
    CHECK(ok);
    if (!ok)
        fprintf(stderr, "  line %d: want 422 at %s, got status %d pointer %s (%s)\n", line, want,
                st.status, st.n_errors ? st.errors[0].pointer : "-",
                st.n_errors ? st.errors[0].detail : "-");
    json_decref(ir);
}
#define EXPECT_422(hf, want) expect_422((hf), (want), __LINE__)

/* Load a data file, set one key, expect a 422 at PTR "/" key. */
static void bad_value(const char *file, const char *key, json_t *value, const char *want, int line)
{
    json_t *hf = load(file);
    json_object_set_new(hf, key, value);
    expect_422(hf, want, line);
    json_decref(hf);
}
#define BAD(file, key, value, want) bad_value((file), (key), (value), (want), __LINE__)

/* ---- round trips against published parameter counts --------------------- */

/* A data file's parameter counts into *p: 1, or 0 when it does not
 * resolve (resolve says why). */
static int params_of(const char *file, mfu_params *p)
{
    json_t *hf = load(file);
    mfu_model m;
    json_t *ir = resolve(hf, &m);
    int ok = ir != NULL;
    if (ok) mfu_model_params(&m, p);
    json_decref(ir);
    json_decref(hf);
    return ok;
}

static void roundtrip(const char *file, double total, double active, double tol_active)
{
    mfu_params p;
    int ok = params_of(file, &p);
    CHECK(ok);
    if (ok) {
        fprintf(stderr, "  %-20s total %.4g active %.4g (published %.4g / %.4g)\n", file, p.total,
                p.active, total, active);
        CHECK_NEAR(p.total, total, 0.01);
        CHECK_NEAR(p.active, active, tol_active);
    }
}

static void test_roundtrips(void)
{
    /* Meta model cards: Llama-3-8B 8.03B, Llama-3-70B 70.6B, Llama-3.1-405B 405B. */
    roundtrip("llama3-8b", 8.03e9, 8.03e9, 0.01);
    roundtrip("llama3-70b", 70.6e9, 70.6e9, 0.01);
    roundtrip("llama3.1-405b", 405e9, 405e9, 0.01);
    /* Mistral AI: Mistral-7B 7.24B; Mixtral-8x7B 46.7B / 12.9B active;
     * Mixtral-8x22B 141B / 39B active. */
    roundtrip("mistral-7b-v0.1", 7.24e9, 7.24e9, 0.01);
    roundtrip("mixtral-8x7b", 46.7e9, 12.9e9, 0.01);
    roundtrip("mixtral-8x22b", 141e9, 39e9, 0.01);
    /* Qwen3 blog / model cards: 30.5B / 3.3B, 235B / 22B, Qwen3-8B 8.2B;
     * Qwen2.5-7B 7.61B; Qwen1.5-MoE-A2.7B 14.3B / 2.7B. */
    /* "3.3B activated" has two significant digits; the module shapes give
     * 3.35B (embedding + head 0.62B, 48 x (attention 18.9M + 8 experts
     * 37.7M + router 0.26M)), so the active count gets 2 %. */
    roundtrip("qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02);
    roundtrip("qwen3-235b-a22b", 235e9, 22e9, 0.01);
    roundtrip("qwen3-8b", 8.2e9, 8.2e9, 0.01);
    roundtrip("qwen2.5-7b", 7.61e9, 7.61e9, 0.01);
    roundtrip("qwen1.5-moe-a2.7b", 14.3e9, 2.7e9, 0.01);
    /* Google: Gemma-7B 8.54B, Gemma-2-9B 9.24B (tied embeddings). */
    roundtrip("gemma-7b", 8.54e9, 8.54e9, 0.01);
    roundtrip("gemma-2-9b", 9.24e9, 9.24e9, 0.01);
    /* fla-hub gla-1.3B-100B: "1.3B" nominal; untied 32000-token embeddings
     * make it 1.37B by the module shapes of fla's GLAForCausalLM. */
    roundtrip("gla-1.3b", 1.365e9, 1.365e9, 0.01);
}

/* DeepSeek counts activated parameters without the input embedding (the
 * V3 README: "36.6B activated, including 0.9B for the output head"; the
 * 0.9B embedding is not in it). Check both conventions. */
static void test_deepseek_published(void)
{
    const struct {
        const char *file;
        double total, active_wo_embedding, tol_active;
    } cases[] = {
        /* DeepSeek-V2 paper / model card: 15.7B total, 2.4B activated
         * (two significant digits: our 2.45B is within its rounding). */
        {"deepseek-v2-lite", 15.7e9, 2.4e9, 0.025},
        /* DeepSeek-V3 README: 671B total, 36.6B activated ("37B"). */
        {"deepseek-v3", 671e9, 36.6e9, 0.01},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mfu_params p;
        int ok = params_of(cases[i].file, &p);
        CHECK(ok);
        if (ok) {
            fprintf(stderr, "  %-20s total %.4g active %.4g active-embedding %.4g\n",
                    cases[i].file, p.total, p.active, p.active - p.embedding);
            CHECK_NEAR(p.total, cases[i].total, 0.01);
            CHECK_NEAR(p.active - p.embedding, cases[i].active_wo_embedding, cases[i].tol_active);
        }
    }
    /* With the embedding, V3 is the "37B" of the paper's abstract (to 1.5%). */
    mfu_params p;
    int ok = params_of("deepseek-v3", &p);
    CHECK(ok); /* a resolve that fails is a failure, not a skipped check */
    if (ok) CHECK_NEAR(p.active, 37e9, 0.016);
}

/* ---- layer runs and the traps -------------------------------------------- */

static void test_llama_ir(void)
{
    json_t *hf = load("llama3-8b");
    json_t *ir = resolve(hf, NULL);
    CHECK(ir != NULL);
    EXPECT_IR(ir, "runs=1 0:count=32 0:attention.type=mha 0:attention.n_heads=32 0:attention.n_kv_heads=8 "
                  "0:attention.head_dim=128 0:attention.window=0 0:mlp.type=dense 0:mlp.ffn_dim=14336 "
                  "0:mlp.activation=silu");
    CHECK(json_is_true(json_object_get(json_object_get(run(ir, 0), "mlp"), "gated")));
    EXPECT_IR(ir, "d_model=4096 vocab=128256");
    CHECK(json_is_false(json_object_get(ir, "tie_embeddings")));
    EXPECT_IR(ir, "norm=rmsnorm position=rope");
    json_decref(ir);
    json_decref(hf);
}

/* Trap: Qwen3 sets head_dim explicitly (128 with hidden 2048 and 32 heads:
 * q width 4096 != hidden). hidden / heads would give 64. */
static void test_trap_explicit_head_dim(void)
{
    json_t *hf = load("qwen3-30b-a3b");
    mfu_model m;
    json_t *ir = resolve(hf, &m);
    CHECK(ir != NULL);
    EXPECT_IR(ir, "0:attention.head_dim=128 0:attention.n_heads=32 0:attention.n_kv_heads=4");
    mfu_params with;
    mfu_model_params(&m, &with);
    json_decref(ir);
    /* The field is what counts: head_dim 64 (= hidden / heads) gives
     * 48 x (q + o: 2 x 2048 x 2048 + k, v: 2 x 2048 x 256 + the q_norm and
     * k_norm weights, 2 x (128 - 64)) fewer params. */
    json_object_set_new(hf, "head_dim", json_integer(64));
    ir = resolve(hf, &m);
    CHECK_EQ_I(rget(ir, 0, "attention", "head_dim"), 64);
    mfu_params narrow;
    mfu_model_params(&m, &narrow);
    CHECK_NEAR(with.total - narrow.total,
               48.0 * (2.0 * 2048 * 2048 + 2.0 * 2048 * 256 + 2.0 * (128 - 64)), 1e-9);
    json_decref(ir);
    /* Absent: Qwen3MoeConfig's default, 128 (not hidden / heads). */
    json_object_del(hf, "head_dim");
    EXPECT_HF(hf, "0:attention.head_dim=128");
    json_decref(hf);
    /* Gemma: explicit 256 with hidden 3072 and 16 heads (not 192). */
    hf = load("gemma-7b");
    EXPECT_HF(hf, "0:attention.head_dim=256");
    json_decref(hf);
    /* Llama without head_dim: hidden / heads. */
    hf = load("llama3-8b");
    json_object_set_new(hf, "head_dim", json_null());
    json_object_set_new(hf, "hidden_size", json_integer(2048));
    EXPECT_HF(hf, "0:attention.head_dim=64");
    json_decref(hf);
}

/* Trap: transformers sets head_dim = qk_rope_head_dim for DeepSeek; it must
 * not change the MLA shapes. */
static void test_trap_deepseek_head_dim(void)
{
    json_t *hf = load("deepseek-v3");
    json_t *ir1 = resolve(hf, NULL);
    json_object_set_new(hf, "head_dim", json_integer(64));
    json_t *ir2 = resolve(hf, NULL);
    CHECK(ir1 && ir2 && json_equal(ir1, ir2));
    CHECK_STR(rstr(ir2, 0, "attention", "type"), "mla");
    CHECK(json_object_get(json_object_get(run(ir2, 0), "attention"), "head_dim") == NULL);
    EXPECT_IR(ir2, "0:attention.qk_nope_head_dim=128 0:attention.qk_rope_head_dim=64 0:attention.v_head_dim=128 "
                   "0:attention.q_lora_rank=1536 0:attention.kv_lora_rank=512 0:attention.n_heads=128");
    json_decref(ir1);
    json_decref(ir2);
    json_decref(hf);
}

/* Trap: q_lora_rank null (V2-Lite) = no low-rank q path; absent = error. */
static void test_trap_q_lora_null(void)
{
    json_t *hf = load("deepseek-v2-lite");
    json_t *ir = resolve(hf, NULL);
    CHECK(ir != NULL);
    CHECK_EQ_I(rget(ir, 0, "attention", "q_lora_rank"), 0);
    json_decref(ir);
    json_object_del(hf, "q_lora_rank");
    EXPECT_422(hf, PTR "/q_lora_rank");
    json_object_set_new(hf, "q_lora_rank", json_string("none"));
    EXPECT_422(hf, PTR "/q_lora_rank");
    json_decref(hf);
}

/* Trap: DeepSeek first_k_dense_replace + moe_layer_freq; shared experts. */
static void test_trap_deepseek_layers(void)
{
    /* 3 dense + 58 MoE = 2 runs; MTP (num_nextn_predict_layers 1: the
     * checkpoint's model.layers.61, DeepSeek-V3 report 2.2) the IR's
     * mtp_layers (F-OP-MTP), none where the config has none, at most 4 */
    json_t *hf = load("deepseek-v3");
    EXPECT_HF(hf, "runs=2 0:count=3 0:mlp.type=dense 0:mlp.ffn_dim=18432 1:count=58 1:mlp.type=moe "
                  "1:mlp.n_experts=256 1:mlp.top_k=8 1:mlp.expert_ffn_dim=2048 1:mlp.n_shared_experts=1 "
                  "1:mlp.shared_ffn_dim=2048");
    json_t *ir = resolve(hf, NULL);
    CHECK(ir != NULL);
    CHECK_EQ_I(json_integer_value(json_object_get(ir, "mtp_layers")), 1);
    json_decref(ir);
    json_object_set_new(hf, "num_nextn_predict_layers", json_integer(0));
    ir = resolve(hf, NULL);
    CHECK(ir != NULL && json_object_get(ir, "mtp_layers") == NULL);
    json_decref(ir);
    json_object_set_new(hf, "num_nextn_predict_layers", json_integer(5));
    EXPECT_422(hf, PTR "/num_nextn_predict_layers");
    json_object_set_new(hf, "num_nextn_predict_layers", json_integer(1));

    /* moe_layer_freq 2, first_k_dense_replace 1: MoE iff i >= 1 and i % 2 == 0:
     * layers 0,1 dense, 2 MoE, 3 dense, 4 MoE ... (61 layers: 2 dense then
     * 29 x (MoE, dense) with the last MoE at 60) = 1 + 59 runs. */
    json_object_set_new(hf, "moe_layer_freq", json_integer(2));
    json_object_set_new(hf, "first_k_dense_replace", json_integer(1));
    EXPECT_HF(hf, "runs=60 0:count=2 0:mlp.type=dense 1:mlp.type=moe 1:count=1 2:mlp.type=dense 59:mlp.type=moe");

    /* n_routed_experts null: every layer dense. */
    json_object_set_new(hf, "n_routed_experts", json_null());
    EXPECT_HF(hf, "runs=1 0:mlp.type=dense");
    json_decref(hf);

    /* V2-Lite: 1 dense + 26 MoE with 2 shared experts of 1408. */
    hf = load("deepseek-v2-lite");
    EXPECT_HF(hf, "runs=2 0:count=1 1:count=26 1:mlp.n_shared_experts=2 1:mlp.shared_ffn_dim=1408 "
                  "1:mlp.n_experts=64 1:mlp.top_k=6");
    json_decref(hf);
}

/* Trap: Qwen MoE layer rule (decoder_sparse_step, mlp_only_layers) and the
 * Qwen2-MoE shared expert. */
static void test_trap_qwen_moe_layers(void)
{
    json_t *hf = load("qwen3-30b-a3b");
    EXPECT_HF(hf, "runs=1 0:mlp.type=moe 0:mlp.n_experts=128 0:mlp.expert_ffn_dim=768 0:mlp.n_shared_experts=0");

    /* mlp_only_layers [0, 47]: dense, 46 MoE, dense (dense width 6144). */
    json_t *mol = json_array();
    json_array_append_new(mol, json_integer(0));
    json_array_append_new(mol, json_integer(47));
    json_object_set_new(hf, "mlp_only_layers", mol);
    EXPECT_HF(hf, "runs=3 0:mlp.type=dense 0:mlp.ffn_dim=6144 1:count=46 2:mlp.type=dense");

    /* decoder_sparse_step 2: MoE iff (i + 1) % 2 == 0 -> dense, MoE, ... */
    json_object_set_new(hf, "mlp_only_layers", json_array());
    json_object_set_new(hf, "decoder_sparse_step", json_integer(2));
    EXPECT_HF(hf, "runs=48 0:mlp.type=dense 1:mlp.type=moe");
    json_decref(hf);

    /* Qwen1.5-MoE-A2.7B: one shared expert of 5632 beside 60 x 1408. */
    hf = load("qwen1.5-moe-a2.7b");
    json_t *ir = resolve(hf, NULL);
    EXPECT_IR(ir, "runs=1 0:mlp.n_experts=60 0:mlp.top_k=4 0:mlp.expert_ffn_dim=1408 0:mlp.n_shared_experts=1 "
                  "0:mlp.shared_ffn_dim=5632");
    /* Qwen2 attention has q/k/v biases (modeling_qwen2_moe.py bias=True). */
    CHECK(json_is_true(json_object_get(json_object_get(run(ir, 0), "attention"), "qkv_bias")));
    json_decref(ir);
    json_decref(hf);
}

/* Trap: sliding windows and per-layer attention types. */
static void test_trap_windows(void)
{
    /* Mistral-7B-v0.1: a 4096 window on every layer. */
    json_t *hf = load("mistral-7b-v0.1");
    EXPECT_HF(hf, "runs=1 0:attention.window=4096");
    json_decref(hf);
    /* Mixtral: sliding_window null = full attention. */
    hf = load("mixtral-8x7b");
    EXPECT_HF(hf, "0:attention.window=0");
    json_decref(hf);

    /* Qwen2.5-7B: sliding_window 131072 but use_sliding_window false. */
    hf = load("qwen2.5-7b");
    EXPECT_HF(hf, "runs=1 0:attention.window=0");
    /* use_sliding_window true: layers >= max_window_layers slide. */
    json_object_set_new(hf, "use_sliding_window", json_true());
    json_object_set_new(hf, "sliding_window", json_integer(4096));
    json_object_set_new(hf, "max_window_layers", json_integer(20));
    EXPECT_HF(hf, "runs=2 0:count=20 0:attention.window=0 1:count=8 1:attention.window=4096");
    /* layer_types (transformers >= 4.53) wins over max_window_layers. */
    json_t *lt = json_array();
    for (int i = 0; i < 28; i++)
        json_array_append_new(lt, json_string(i % 4 == 3 ? "full_attention" : "sliding_attention"));
    json_object_set_new(hf, "layer_types", lt);
    EXPECT_HF(hf, "runs=14 0:count=3 0:attention.window=4096 1:count=1 1:attention.window=0");
    json_decref(hf);

    /* Gemma-2: sliding (4096) on even layers, global on odd: 42 runs. */
    hf = load("gemma-2-9b");
    EXPECT_HF(hf, "runs=42 0:attention.window=4096 1:attention.window=0 0:attention.head_dim=256 "
                  "0:mlp.activation=gelu");
    json_decref(hf);
}

/* Trap: GLA's derived sizes and its softmax-attention layers. */
static void test_trap_gla(void)
{
    json_t *hf = load("gla-1.3b");
    json_t *ir = resolve(hf, NULL);
    CHECK(ir != NULL);
    /* n_kv_heads: num_kv_heads null; key_dim 2048 x expand_k 0.5; value_dim
     * 2048 x expand_v 1; ffn_dim int(2048 x 4 x 2/3) = 5461, rounded up to a
     * multiple of 256: 5632. */
    EXPECT_IR(ir, "runs=1 0:attention.type=gla 0:attention.n_heads=4 0:attention.n_kv_heads=4 "
                  "0:attention.key_dim=1024 0:attention.value_dim=2048 0:attention.gate_rank=16 "
                  "0:attention.chunk_size=64 0:mlp.ffn_dim=5632 0:mlp.activation=silu");
    CHECK(json_is_false(json_object_get(ir, "tie_embeddings")));
    json_decref(ir);

    /* num_kv_heads, expand_k, hidden_ratio (ffn int(2048*3*2/3) = 4096),
     * explicit intermediate_size. */
    json_object_set_new(hf, "num_kv_heads", json_integer(2));
    json_object_set_new(hf, "expand_k", json_real(1.0));
    json_object_set_new(hf, "hidden_ratio", json_integer(3));
    EXPECT_HF(hf, "0:attention.n_kv_heads=2 0:attention.key_dim=2048 0:mlp.ffn_dim=4096");
    json_object_set_new(hf, "intermediate_size", json_integer(5000));
    EXPECT_HF(hf, "0:mlp.ffn_dim=5000");
    json_decref(hf);

    /* Hybrid: softmax attention on layers 5, 11, 17, 23. */
    hf = load("gla-1.3b");
    json_t *attn = json_object(), *layers = json_array();
    for (int i = 5; i < 24; i += 6) json_array_append_new(layers, json_integer(i));
    json_object_set_new(attn, "layers", layers);
    json_object_set_new(attn, "num_heads", json_integer(16));
    json_object_set_new(attn, "num_kv_heads", json_integer(4));
    json_object_set_new(attn, "window_size", json_integer(2048));
    json_object_set_new(hf, "attn", attn);
    mfu_model m;
    ir = resolve(hf, &m);
    CHECK(ir != NULL);
    EXPECT_IR(ir, "runs=8 0:count=5 0:attention.type=gla 1:count=1 1:attention.type=mha 1:attention.n_heads=16 "
                  "1:attention.n_kv_heads=4 1:attention.head_dim=128 1:attention.window=2048 1:mlp.ffn_dim=5632 "
                  "7:attention.type=mha");
    CHECK_EQ_I(m.n_runs, 8);
    json_decref(ir);
    /* attn without num_heads: fla raises; so do we, at the field. */
    json_object_del(attn, "num_heads");
    EXPECT_422(hf, PTR "/attn/num_heads");
    json_object_set_new(attn, "num_heads", json_integer(16));
    json_array_set_new(layers, 0, json_integer(24));
    EXPECT_422(hf, PTR "/attn/layers/0");
    json_decref(hf);
}

/* Trap: tie_word_embeddings default per family; num_key_value_heads absent. */
static void test_trap_defaults(void)
{
    /* gemma-7b's config.json has no tie_word_embeddings: Gemma ties. */
    json_t *hf = load("gemma-7b");
    CHECK(json_object_get(hf, "tie_word_embeddings") == NULL);
    json_t *ir = resolve(hf, NULL);
    CHECK(json_is_true(json_object_get(ir, "tie_embeddings")));
    CHECK_STR(rstr(ir, 0, "mlp", "activation"), "gelu");
    json_decref(ir);
    json_decref(hf);
    /* Llama without the key: untied (LlamaConfig default false). */
    hf = load("llama3-8b");
    json_object_del(hf, "tie_word_embeddings");
    ir = resolve(hf, NULL);
    CHECK(json_is_false(json_object_get(ir, "tie_embeddings")));
    json_decref(ir);
    /* num_key_value_heads absent or null => = num_attention_heads (MHA). */
    json_object_del(hf, "num_key_value_heads");
    EXPECT_HF(hf, "0:attention.n_kv_heads=32");
    json_object_set_new(hf, "num_key_value_heads", json_null());
    EXPECT_HF(hf, "0:attention.n_kv_heads=32");
    /* Integral reals are integers. */
    json_object_set_new(hf, "hidden_size", json_real(4096.0));
    ir = resolve(hf, NULL);
    CHECK(ir != NULL);
    CHECK_EQ_I(json_integer_value(json_object_get(ir, "d_model")), 4096);
    json_decref(ir);
    /* attention_bias -> qkv_bias. */
    json_object_set_new(hf, "attention_bias", json_true());
    ir = resolve(hf, NULL);
    CHECK(json_is_true(json_object_get(json_object_get(run(ir, 0), "attention"), "qkv_bias")));
    json_decref(ir);
    json_decref(hf);
}

/* A multimodal wrapper: the language model under "text_config". */
static void test_text_config(void)
{
    json_t *inner = load("llama3-8b");
    json_t *plain = resolve(inner, NULL);
    json_t *hf = json_object();
    json_object_set_new(hf, "model_type", json_string("llava"));
    json_object_set_new(hf, "tie_word_embeddings", json_false());
    json_object_set_new(hf, "vision_config", json_object());
    json_object_del(inner, "tie_word_embeddings");
    json_object_set(hf, "text_config", inner);
    json_t *ir = resolve(hf, NULL);
    CHECK(ir != NULL && json_equal(ir, plain));
    json_decref(ir);
    /* Errors point inside text_config. */
    json_object_set_new(inner, "hidden_size", json_integer(-4096));
    EXPECT_422(hf, PTR "/text_config/hidden_size");
    json_object_set_new(inner, "model_type", json_string("mllama_text_model"));
    EXPECT_422(hf, PTR "/text_config/model_type");
    json_object_set_new(hf, "text_config", json_string("x"));
    EXPECT_422(hf, PTR "/text_config");
    json_decref(plain);
    json_decref(inner);
    json_decref(hf);
}

/* ---- bad configs: 422 with the pointer of the field ----------------------- */

static void test_bad_configs(void)
{
    /* Unsupported / missing model_type lists what is supported. */
    json_t *hf = load("llama3-8b");
    json_object_set_new(hf, "model_type", json_string("mpt"));
    api_status st;
    api_status_init(&st);
    json_t *ir = api_hf_to_ir(hf, PTR, &st);
    CHECK(ir == NULL);
    CHECK_EQ_I(st.status, 422);
    CHECK_STR(st.errors[0].pointer, PTR "/model_type");
    CHECK(strstr(st.errors[0].detail, "supported: llama, mistral, mixtral, qwen2, qwen2_moe, "
                                      "qwen3, qwen3_moe, deepseek_v2, deepseek_v3, gla, gemma, "
                                      "gemma2, gemma3_text, phi3, gpt_oss, llama4, qwen3_next, "
                                      "gpt2, gpt_bigcode, opt, gpt_neox, bloom, falcon") != NULL);
    json_object_del(hf, "model_type");
    EXPECT_422(hf, PTR "/model_type");
    json_object_set_new(hf, "model_type", json_integer(7));
    EXPECT_422(hf, PTR "/model_type");
    json_decref(hf);

    /* Not an object at all. */
    json_t *arr = json_array();
    EXPECT_422(arr, PTR);
    json_decref(arr);

    /* Missing, zero, negative, non-integer, absurd. */
    hf = load("llama3-8b");
    json_object_del(hf, "hidden_size");
    EXPECT_422(hf, PTR "/hidden_size");
    json_decref(hf);
    BAD("llama3-8b", "hidden_size", json_integer(0), PTR "/hidden_size");
    BAD("llama3-8b", "hidden_size", json_integer(-4096), PTR "/hidden_size");
    BAD("llama3-8b", "hidden_size", json_string("4096"), PTR "/hidden_size");
    BAD("llama3-8b", "hidden_size", json_real(4096.5), PTR "/hidden_size");
    BAD("llama3-8b", "hidden_size", json_true(), PTR "/hidden_size");
    BAD("llama3-8b", "hidden_size", json_integer(API_MAX_DIM + 1), PTR "/hidden_size");
    BAD("llama3-8b", "num_hidden_layers", json_integer(1000000000000LL), PTR "/num_hidden_layers");
    BAD("llama3-8b", "num_hidden_layers", json_real(1e300), PTR "/num_hidden_layers");
    BAD("llama3-8b", "vocab_size", json_integer(0), PTR "/vocab_size");
    BAD("llama3-8b", "intermediate_size", json_integer(-1), PTR "/intermediate_size");
    BAD("llama3-8b", "num_attention_heads", json_null(), PTR "/num_attention_heads");
    BAD("llama3-8b", "head_dim", json_integer(0), PTR "/head_dim");
    BAD("llama3-8b", "tie_word_embeddings", json_string("no"), PTR "/tie_word_embeddings");
    BAD("llama3-8b", "hidden_act", json_string("tanh"), PTR "/hidden_act");
    /* Contradictions. */
    BAD("llama3-8b", "num_key_value_heads", json_integer(5), PTR "/num_key_value_heads");
    hf = load("llama3-8b"); /* 3 heads do not divide 4096 (no head_dim given) */
    json_object_del(hf, "num_key_value_heads");
    json_object_set_new(hf, "num_attention_heads", json_integer(3));
    EXPECT_422(hf, PTR "/num_attention_heads");
    json_decref(hf);
    BAD("mixtral-8x7b", "num_experts_per_tok", json_integer(9), PTR "/num_experts_per_tok");
    BAD("mixtral-8x7b", "num_local_experts", json_integer(API_MAX_EXPERTS + 1),
        PTR "/num_local_experts");
    BAD("deepseek-v3", "n_routed_experts", json_integer(1000000), PTR "/n_routed_experts");
    BAD("deepseek-v3", "kv_lora_rank", json_integer(0), PTR "/kv_lora_rank");
    BAD("deepseek-v3", "moe_layer_freq", json_integer(0), PTR "/moe_layer_freq");
    BAD("qwen3-30b-a3b", "decoder_sparse_step", json_integer(0), PTR "/decoder_sparse_step");
    BAD("qwen3-30b-a3b", "moe_intermediate_size", json_string("768"), PTR "/moe_intermediate_size");
    BAD("qwen1.5-moe-a2.7b", "shared_expert_intermediate_size", json_integer(-5),
        PTR "/shared_expert_intermediate_size");
    BAD("gla-1.3b", "num_kv_heads", json_integer(3), PTR "/num_kv_heads");
    BAD("gla-1.3b", "expand_k", json_real(0.3), PTR "/expand_k"); /* 614 % 4 != 0 */
    BAD("gla-1.3b", "expand_v", json_integer(-1), PTR "/expand_v");
    BAD("gla-1.3b", "num_heads", json_integer(0), PTR "/num_heads");
    BAD("gemma-2-9b", "sliding_window", json_real(0.5), PTR "/sliding_window");
}

/* Bad array entries, and more distinct runs than the core holds. */
static void test_bad_configs_arrays(void)
{
    /* Array entries. */
    json_t *hf = load("qwen3-30b-a3b");
    json_t *mol = json_array();
    json_array_append_new(mol, json_integer(0));
    json_array_append_new(mol, json_integer(48));
    json_object_set_new(hf, "mlp_only_layers", mol);
    EXPECT_422(hf, PTR "/mlp_only_layers/1");
    json_object_set_new(hf, "mlp_only_layers", json_string("0"));
    EXPECT_422(hf, PTR "/mlp_only_layers");
    json_object_set_new(hf, "mlp_only_layers", json_array());
    json_object_set_new(hf, "use_sliding_window", json_true());
    json_object_set_new(hf, "sliding_window", json_integer(4096));
    json_object_set_new(hf, "layer_types", json_array());
    EXPECT_422(hf, PTR "/layer_types");
    json_decref(hf);

    /* More distinct runs than the core holds (MFU_MAX_RUNS). */
    hf = load("gemma-2-9b");
    json_object_set_new(hf, "num_hidden_layers", json_integer(2 * MFU_MAX_RUNS + 2));
    EXPECT_422(hf, PTR "/num_hidden_layers");
    json_decref(hf);
}

/* Never crash: every top-level field of every data file replaced by junk
 * gives either a model or a 422 pointing under the hf_config. */
static void test_junk_never_crashes(void)
{
    static const char *files[] = {"llama3-8b", "mixtral-8x7b", "qwen3-30b-a3b",
                                  "qwen1.5-moe-a2.7b", "deepseek-v2-lite", "deepseek-v3",
                                  "gla-1.3b", "gemma-2-9b", "mistral-7b-v0.1", "qwen2.5-7b",
                                  "phi-3-mini-4k-instruct", "gpt-oss-20b", "llama4-scout-17b-16e",
                                  "qwen3-next-80b-a3b"};
    int bad = 0, n = 0;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        json_t *base = load(files[f]);
        const char *key;
        json_t *val;
        void *tmp;
        json_object_foreach_safe(base, tmp, key, val) {
            json_t *junk[] = {json_null(),          json_string("x"),   json_integer(-1),
                              json_integer(0),      json_real(1e300),   json_real(-0.5),
                              json_array(),         json_object(),      json_true(),
                              json_integer(1LL << 40)};
            for (size_t j = 0; j < sizeof junk / sizeof junk[0]; j++) {
                json_t *hf = json_deep_copy(base);
                json_object_set_new(hf, key, junk[j]);
                api_status st;
                api_status_init(&st);
                json_t *ir = api_hf_to_ir(hf, PTR, &st);
                n++;
                if (ir) {
                    mfu_model m;
                    api_status st2;
                    api_status_init(&st2);
                    if (st.status != 0 || api_model_from_ir(ir, "/model", &m, &st2) != 0) {
                        bad++;
                        fprintf(stderr, "  %s.%s junk %zu: IR rejected: %s %s\n", files[f], key,
                                j, st2.n_errors ? st2.errors[0].pointer : "",
                                st2.n_errors ? st2.errors[0].detail : "");
                    }
                } else if (st.status != 422 || st.n_errors < 1 ||
                           strncmp(st.errors[0].pointer, PTR, strlen(PTR)) != 0) {
                    bad++;
                    fprintf(stderr, "  %s.%s junk %zu: status %d\n", files[f], key, j, st.status);
                }
                json_decref(ir);
                json_decref(hf);
            }
        }
        json_decref(base);
    }
    CHECK(n > 500);
    CHECK_EQ_I(bad, 0);
}

/* ---- the model presets (presets/models/NAME.json) ---------------------------- */

static void preset_params(const char *name, double total, double active)
{
    json_t *pr = api_preset_model(name);
    CHECK(pr != NULL);
    if (!pr) {
        fprintf(stderr, "  preset %s missing\n", name);
        return;
    }
    CHECK(json_is_string(json_object_get(pr, "source")));
    CHECK(strncmp(json_string_value(json_object_get(pr, "source")) ? json_string_value(json_object_get(pr, "source")) : "", "https://", 8) == 0);
    CHECK(json_is_string(json_object_get(pr, "description")));
    json_t *hf = json_object_get(pr, "hf_config");
    json_t *ir = hf ? resolve(hf, NULL) : json_incref(json_object_get(pr, "model"));
    mfu_model m;
    api_status st;
    api_status_init(&st);
    int rc = ir ? api_model_from_ir(ir, "/model", &m, &st) : -1;
    CHECK_EQ_I(rc, 0);
    if (rc == 0) {
        mfu_params p;
        mfu_model_params(&m, &p);
        CHECK_NEAR(p.total, total, 0.01);
        if (active > 0) CHECK_NEAR(p.active, active, 0.02);
    }
    json_decref(ir);
}

static void test_presets(void)
{
    /* GPT-3 (Brown et al. 2020, Table 2.1): 175B. Megatron shapes
     * (Korthikanti et al. 2022, Table 3; Narayanan et al. 2021, Table 1:
     * 1T = 1008B with vocab 51200). */
    preset_params("gpt3-175b", 175e9, 0);
    preset_params("megatron-22b", 22e9, 0);
    preset_params("megatron-530b", 530e9, 0);
    preset_params("megatron-1t", 1008e9, 0);
    preset_params("llama3-8b", 8.03e9, 0);
    preset_params("llama3-70b", 70.6e9, 0);
    preset_params("llama3-405b", 405e9, 0);
    preset_params("mixtral-8x7b", 46.7e9, 12.9e9);
    preset_params("mixtral-8x22b", 141e9, 39e9);
    preset_params("qwen3-30b-a3b", 30.5e9, 3.3e9);
    preset_params("qwen3-235b-a22b", 235e9, 22e9);
    preset_params("deepseek-v2-lite", 15.7e9, 0);
    preset_params("deepseek-v3", 671e9, 0);
    preset_params("gla-1.3b", 1.365e9, 0);
    /* GPT-3's IR: non-gated GeLU 4h MLP, learned positions, LayerNorm. */
    json_t *g = json_object_get(api_preset_model("gpt3-175b"), "model");
    EXPECT_IR(g, "norm=layernorm position=learned 0:mlp.ffn_dim=49152");
    CHECK(json_is_false(json_object_get(json_object_get(run(g, 0), "mlp"), "gated")));
}

/* Node-limited routing (DeepSeek-V3 sec. 2.1.2; V2 sec. 2.1.3): V3's
 * topk_method "noaux_tc" with topk_group 4 -> a token's experts span at most
 * 4 nodes; V2-Lite's "greedy" routes freely (0). */
static void test_route_nodes(void)
{
    const char *names[] = {"deepseek-v3", "deepseek-v2-lite"};
    long long want[] = {4, 0};
    for (int i = 0; i < 2; i++) {
        json_t *hf = load(names[i]);
        mfu_model m;
        json_t *ir = hf ? resolve(hf, &m) : NULL;
        CHECK(ir != NULL);
        if (ir) CHECK_EQ_I(m.runs[m.n_runs - 1].mlp.route_nodes, want[i]);
        json_decref(ir);
        json_decref(hf);
    }
}


/* ---- the newer families (issue 16 item 4): phi3, gpt_oss, llama4, qwen3_next */

static json_t *attn_of(json_t *ir, size_t i) { return json_object_get(run(ir, i), "attention"); }
static json_t *mlp_of(json_t *ir, size_t i) { return json_object_get(run(ir, i), "mlp"); }
static int abool(json_t *ir, size_t i, const char *key)
{
    return json_is_true(json_object_get(attn_of(ir, i), key));
}

/* Published parameter counts. */
static void test_published_phi3(void)
{
    /* Phi-3-mini: "3.8B parameters" (Microsoft model card,
     * huggingface.co/microsoft/Phi-3-mini-4k-instruct; Abdin et al. 2024,
     * arXiv:2404.14219 sec. 2: "phi-3-mini, a 3.8B parameter language
     * model"). Dense: total = active. */
    roundtrip("phi-3-mini-4k-instruct", 3.8e9, 3.8e9, 0.01);
}

static void test_published_gpt_oss(void)
{
    /* gpt-oss model card (OpenAI 2025, arXiv:2508.10925, Table 1):
     * gpt-oss-120b 116.83B total, 5.13B active; gpt-oss-20b 20.91B total,
     * 3.61B active. Its active count takes the unembedding but not the
     * embedding (the table's "Embed + Unembed" row is 1.16B = 2 x 201088 x
     * 2880 in the total); ours is active - embedding. */
    const struct {
        const char *file;
        double total, active_wo_embedding;
    } oss[] = {{"gpt-oss-120b", 116.83e9, 5.13e9}, {"gpt-oss-20b", 20.91e9, 3.61e9}};
    for (size_t i = 0; i < sizeof oss / sizeof oss[0]; i++) {
        mfu_params p;
        int ok = params_of(oss[i].file, &p);
        CHECK(ok);
        if (ok) {
            fprintf(stderr, "  %-20s total %.5g active-embedding %.4g\n", oss[i].file, p.total,
                    p.active - p.embedding);
            CHECK_NEAR(p.total, oss[i].total, 0.01);
            CHECK_NEAR(p.active - p.embedding, oss[i].active_wo_embedding, 0.01);
            /* and closer than the card's rounding: 0.1 % */
            CHECK_NEAR(p.total, oss[i].total, 0.001);
            CHECK_NEAR(p.active - p.embedding, oss[i].active_wo_embedding, 0.002);
        }
    }
}

static void test_published_llama4(void)
{
    /* Llama 4 (Meta model cards huggingface.co/meta-llama/Llama-4-Scout-17B-16E
     * and -Maverick-17B-128E, and the Llama 4 announcement): Scout 109B total,
     * Maverick 400B total, both 17B active. The totals are the checkpoint's,
     * vision encoder included; mfud models the language model only (said in
     * its approximations), so the vision tower is added here by hand from
     * the file's vision_config (modeling_llama4.py Llama4VisionModel module
     * shapes; h_v = 1408, I_v = 5632, 34 layers, patch 14, image 336,
     * projector 4096 -> text hidden 5120):
     *   per layer: q, k, v, o 4 h_v^2 + 4 h_v (biases), fc1 h_v I_v + I_v,
     *     fc2 I_v h_v + h_v, two LayerNorms 4 h_v;
     *   class_embedding h_v; positional_embedding_vlm ((336/14)^2 + 1) h_v;
     *   patch_embedding 3 x 14^2 x h_v; layernorm_pre/post 4 h_v;
     *   vision_adapter fc1 (h_v / 0.5^2 = 5632) x 4096, fc2 4096 x 4096;
     *   multi_modal_projector 4096 x 5120. */
    const double hv = 1408, Iv = 5632;
    double vlayer = 4 * hv * hv + 4 * hv + hv * Iv + Iv + Iv * hv + hv + 4 * hv;
    double vision = 34 * vlayer + hv + (24.0 * 24 + 1) * hv + 3 * 14 * 14 * hv + 4 * hv +
                    5632.0 * 4096 + 4096.0 * 4096 + 4096.0 * 5120;
    CHECK_NEAR(vision, 871932416.0, 1e-12); /* the sum above, evaluated by hand */
    /* "17B active" has two significant digits; the module shapes give
     * 17.17B (embedding and head 2 x 202048 x 5120 = 2.07B, 48 x (attention
     * 62.9M + one routed expert 125.8M + the shared expert 125.8M), Maverick's
     * dense layers a 16384-wide MLP instead of the two experts): 1.5 %. */
    const struct {
        const char *file;
        double total, active;
    } l4[] = {{"llama4-scout-17b-16e", 109e9, 17e9}, {"llama4-maverick-17b-128e", 400e9, 17e9}};
    for (size_t i = 0; i < sizeof l4 / sizeof l4[0]; i++) {
        mfu_params p;
        int ok = params_of(l4[i].file, &p);
        CHECK(ok);
        if (ok) {
            fprintf(stderr, "  %-24s text %.5g + vision %.4g = %.5g, active %.4g\n", l4[i].file,
                    p.total, vision, p.total + vision, p.active);
            CHECK_NEAR(p.total + vision, l4[i].total, 0.01);
            CHECK_NEAR(p.active, l4[i].active, 0.015);
        }
    }
}

static void test_published_qwen3_next(void)
{
    /* Qwen3-Next-80B-A3B (Qwen model card huggingface.co/Qwen/Qwen3-Next-80B-A3B-
     * Instruct: "80B in total and 3B activated"): the total within 1 %. The
     * "3B" has one significant digit; the activated count is checked exactly
     * against the module shapes of modular_qwen3_next.py, written out here
     * (h 2048, vocab 151936, 48 layers of which 12 full attention):
     *   Gated DeltaNet layer: in_proj_qkvz h (2 x 16 x 128 + 2 x 32 x 128),
     *     in_proj_ba h x 64, conv1d (2 x 2048 + 4096) x 4, A_log + dt_bias
     *     2 x 32, norm 128, out_proj 4096 h;
     *   gated attention layer: q_proj h x 16 x 256 x 2, k/v_proj 2 h x 2 x 256,
     *     o_proj 4096 h, q_norm + k_norm 2 x 256;
     *   MoE: router h x 512, shared expert 3 h 512 + its gate h, routed
     *     experts 3 h 512 each (10 active of 512);
     *   two RMSNorms h per layer, final norm h, embedding and head V h. */
    const double h = 2048, V = 151936;
    double gdn = h * (2 * 16 * 128 + 2 * 32 * 128) + h * 64 + (2 * 2048 + 4096) * 4.0 + 2 * 32 +
                 128 + 4096 * h;
    double att = h * 16 * 256 * 2 + 2 * h * 2 * 256 + 4096 * h + 2 * 256;
    double moe_common = h * 512 + 3 * h * 512 + h + 2 * h;
    double expert = 3 * h * 512;
    double edge = 2 * V * h + h;
    double total = 36 * gdn + 12 * att + 48 * (moe_common + 512 * expert) + edge;
    double active = 36 * gdn + 12 * att + 48 * (moe_common + 10 * expert) + edge;
    mfu_params p;
    int ok = params_of("qwen3-next-80b-a3b", &p);
    CHECK(ok);
    if (ok) {
        fprintf(stderr, "  %-20s total %.5g active %.4g (hand %.5g / %.4g)\n", "qwen3-next-80b-a3b",
                p.total, p.active, total, active);
        CHECK_NEAR(p.total, 80e9, 0.01);
        CHECK_NEAR(p.total, total, 1e-12);
        CHECK_NEAR(p.active, active, 1e-12);
        /* without the embedding and the head: 3.25B, the "3B" */
        CHECK_NEAR(p.active - p.embedding - p.head, 3e9, 0.1);
    }
}

/* The layer patterns: which layers are windowed, chunked, NoPE, MoE, linear. */
static void test_layers_phi3(void)
{
    /* Phi-3-mini-4k: one run of 32; sliding_window 2047 on every layer
     * (Phi3Attention passes it to every layer); fused projections, no
     * biases; head_dim 3072 / 32; the display name from _name_or_path. */
    json_t *hf = load("phi-3-mini-4k-instruct");
    json_t *ir = resolve(hf, NULL);
    CHECK(ir != NULL);
    EXPECT_IR(ir, "name=Phi-3-mini-4k-instruct runs=1 0:count=32 0:attention.window=2047 0:attention.head_dim=96");
    CHECK(!abool(ir, 0, "qkv_bias") && !abool(ir, 0, "out_bias"));
    CHECK(json_object_get(attn_of(ir, 0), "rotary_dim") == NULL); /* all of head_dim */
    CHECK_EQ_I(rget(ir, 0, "mlp", "ffn_dim"), 8192);
    json_decref(ir);
    /* Phi-4-mini style partial rotary: int(96 x 0.75) = 72 dims rotate */
    json_object_set_new(hf, "partial_rotary_factor", json_real(0.75));
    mfu_model m;
    ir = resolve(hf, &m);
    CHECK_EQ_I(rget(ir, 0, "attention", "rotary_dim"), 72);
    CHECK_EQ_I(m.runs[0].attn.rotary_dim, 72);
    json_decref(ir);
    json_object_set_new(hf, "sliding_window", json_null());
    EXPECT_HF(hf, "0:attention.window=0");
    json_decref(hf);
}

static void test_layers_gpt_oss(void)
{
    /* gpt-oss-20b: 24 layers alternating sliding (128) / full, from
     * layer_types; sinks, q/k/v/o biases and expert biases everywhere; 32
     * experts top-4 of 2880. */
    json_t *hf = load("gpt-oss-20b");
    json_t *ir = resolve(hf, NULL);
    CHECK_EQ_I(n_runs(ir), 24);
    for (size_t i = 0; i < 24; i++) {
        CHECK_EQ_I(rget(ir, i, "attention", "window"), i % 2 == 0 ? 128 : 0);
        CHECK(abool(ir, i, "sinks") && abool(ir, i, "qkv_bias") && abool(ir, i, "out_bias"));
        CHECK(json_is_true(json_object_get(mlp_of(ir, i), "bias")));
    }
    EXPECT_IR(ir, "0:mlp.n_experts=32 0:mlp.top_k=4 0:mlp.expert_ffn_dim=2880 0:attention.head_dim=64 "
                  "0:attention.n_kv_heads=8");
    CHECK(json_array_size(json_object_get(ir, "approximations")) == 1);
    json_decref(ir);
    /* without layer_types: GptOssConfig's default, even layers slide */
    json_object_del(hf, "layer_types");
    EXPECT_HF(hf, "runs=24 0:attention.window=128 1:attention.window=0");
    json_decref(hf);
    hf = load("gpt-oss-120b");
    EXPECT_HF(hf, "runs=36 35:attention.window=0 34:attention.window=128 0:mlp.n_experts=128");
    json_decref(hf);
}

static void test_layers_llama4_scout(void)
{
    /* Llama-4-Scout (text_config in the multimodal wrapper): no
     * no_rope_layers in the file, so NoPE every 4th layer (3, 7, ...);
     * the RoPE layers chunked (8192) with the L2 qk norm, the NoPE layers
     * full attention without it; every layer MoE (step 1): 16 experts top-1
     * of 8192 and a shared expert of 8192. 12 x (3 + 1) = 24 runs. */
    json_t *hf = load("llama4-scout-17b-16e");
    json_t *ir = resolve(hf, NULL);
    CHECK(ir != NULL);
    CHECK_EQ_I(n_runs(ir), 24);
    for (size_t i = 0; i < 24; i++) {
        int nope = i % 2 == 1;
        CHECK_EQ_I(rget(ir, i, NULL, "count"), nope ? 1 : 3);
        CHECK(abool(ir, i, "nope") == nope);
        CHECK_EQ_I(rget(ir, i, "attention", "chunk"), nope ? 0 : 8192);
        CHECK_STR(rstr(ir, i, "attention", "qk_norm"), nope ? "none" : "l2");
        CHECK_STR(rstr(ir, i, "mlp", "type"), "moe");
    }
    EXPECT_IR(ir, "0:mlp.n_experts=16 0:mlp.top_k=1 0:mlp.n_shared_experts=1 0:mlp.shared_ffn_dim=8192");
    CHECK(json_is_false(json_object_get(mlp_of(ir, 0), "shared_gate")));
    json_decref(ir);
    /* no_rope_layers given: 0 = NoPE (here layer 0 only); layer_types given
     * wins for the chunking; attention_chunk_size null = no chunking */
    json_t *tc = json_object_get(hf, "text_config");
    json_t *nr = json_array();
    for (int i = 0; i < 48; i++) json_array_append_new(nr, json_integer(i == 0 ? 0 : 1));
    json_object_set_new(tc, "no_rope_layers", nr);
    ir = resolve(hf, NULL);
    CHECK_EQ_I(n_runs(ir), 2);
    CHECK(abool(ir, 0, "nope") && !abool(ir, 1, "nope"));
    CHECK_EQ_I(rget(ir, 1, NULL, "count"), 47);
    json_decref(ir);
    json_object_set_new(tc, "attention_chunk_size", json_null());
    EXPECT_HF(hf, "1:attention.chunk=0");
    json_decref(hf);
}

static void test_layers_llama4_maverick(void)
{
    /* Llama-4-Maverick: interleave_moe_layer_step 2, so MoE on layers 1, 3,
     * ... (range(step - 1, 48, step)) with 128 experts, dense 16384 on the
     * even layers; NoPE on 3, 7, ...; use_qk_norm false: no qk norm. */
    json_t *hf = load("llama4-maverick-17b-128e");
    json_t *ir = resolve(hf, NULL);
    CHECK_EQ_I(n_runs(ir), 48);
    for (size_t i = 0; i < 48; i++) {
        CHECK_STR(rstr(ir, i, "mlp", "type"), i % 2 ? "moe" : "dense");
        CHECK(abool(ir, i, "nope") == ((i + 1) % 4 == 0));
        CHECK_STR(rstr(ir, i, "attention", "qk_norm"), "none");
    }
    EXPECT_IR(ir, "0:mlp.ffn_dim=16384 1:mlp.n_experts=128");
    json_decref(ir);
    json_decref(hf);
}

static void test_layers_qwen3_next(void)
{
    /* Qwen3-Next-80B-A3B: full_attention_interval 4, so (3 Gated DeltaNet +
     * 1 gated attention) x 12 = 24 runs; GDN 32 value heads of 128, 16 q/k
     * heads of 128, conv 4; attention 16/2 heads of 256, output gate, q/k
     * RMSNorm, RoPE on 0.25 x 256 = 64 dims; MoE 512 experts top-10 of 512
     * with a gated shared expert of 512 on every layer. */
    json_t *hf = load("qwen3-next-80b-a3b");
    json_t *ir = resolve(hf, NULL);
    CHECK_EQ_I(n_runs(ir), 24);
    for (size_t i = 0; i < 24; i++) {
        CHECK_STR(rstr(ir, i, "attention", "type"), i % 2 ? "mha" : "gdn");
        CHECK_EQ_I(rget(ir, i, NULL, "count"), i % 2 ? 1 : 3);
        CHECK(json_is_true(json_object_get(mlp_of(ir, i), "shared_gate")));
    }
    EXPECT_IR(ir, "0:attention.n_heads=32 0:attention.n_kv_heads=16 0:attention.key_dim=2048 "
                  "0:attention.value_dim=4096 0:attention.conv_size=4");
    CHECK(abool(ir, 0, "output_gate"));
    EXPECT_IR(ir, "1:attention.head_dim=256 1:attention.rotary_dim=64");
    CHECK(abool(ir, 1, "output_gate"));
    EXPECT_IR(ir, "1:attention.qk_norm=rmsnorm 0:mlp.n_experts=512 0:mlp.top_k=10 0:mlp.shared_ffn_dim=512");
    json_decref(ir);
    /* layer_types, when given, is what counts */
    json_t *lt = json_array();
    for (int i = 0; i < 48; i++)
        json_array_append_new(lt, json_string(i < 46 ? "linear_attention" : "full_attention"));
    json_object_set_new(hf, "layer_types", lt);
    EXPECT_HF(hf, "runs=2 0:count=46 1:attention.type=mha");
    json_decref(hf);
}

/* Forward FLOPs per token of Phi-3-mini-4k at 4096 tokens, causal, by hand:
 *   matrices per layer 4 x 3072^2 (q, k, v, o; 32 heads of 96 = 3072) +
 *   3 x 3072 x 8192 = 113,246,208 parameters: 226,492,416 FLOPs;
 *   attention: query i sees min(i, 2047) keys: 2047 x 2048 / 2 + (4096 -
 *   2047) x 2047 = 6,290,431 pairs per head, 2 x (96 + 96) FLOPs each over
 *   32 heads, per token: 12288 x 6,290,431 / 4096 = 18,871,293;
 *   32 layers: 32 x 245,363,709 = 7,851,638,688; LM head 2 x 3072 x 32064 =
 *   197,001,216. Total 8,048,639,904. */
static void test_phi3_flops(void)
{
    json_t *hf = load("phi-3-mini-4k-instruct");
    mfu_model m;
    json_t *ir = resolve(hf, &m);
    CHECK(ir != NULL);
    if (ir) {
        CHECK_NEAR(mfu_model_flops_per_token_fwd(&m, 4096, MFU_CONV_CAUSAL), 8048639904.0, 1e-12);
        /* without the window: 4096 x 4097 / 2 pairs: 12288 x 8,390,656 /
         * 4096 = 25,171,968 per layer */
        m.runs[0].attn.window = 0;
        CHECK_NEAR(mfu_model_flops_per_token_fwd(&m, 4096, MFU_CONV_CAUSAL),
                   32.0 * (226492416.0 + 25171968.0) + 197001216.0, 1e-12);
    }
    json_decref(ir);
    json_decref(hf);
}

/* Bad values in the new families: 422 with the pointer of the field. */
static void test_new_families_bad(void)
{
    json_t *hf = load("llama4-scout-17b-16e");
    json_t *tc = json_object_get(hf, "text_config");
    json_object_set_new(tc, "no_rope_layers", json_pack("[i,i]", 1, 0));
    EXPECT_422(hf, PTR "/text_config/no_rope_layers");
    json_t *nr = json_array();
    for (int i = 0; i < 48; i++) json_array_append_new(nr, json_integer(i == 5 ? 2 : 1));
    json_object_set_new(tc, "no_rope_layers", nr);
    EXPECT_422(hf, PTR "/text_config/no_rope_layers/5");
    json_object_del(tc, "no_rope_layers");
    json_object_set_new(tc, "moe_layers", json_pack("[i,i]", 1, 48));
    EXPECT_422(hf, PTR "/text_config/moe_layers/1");
    json_object_del(tc, "moe_layers");
    json_object_set_new(tc, "interleave_moe_layer_step", json_integer(0));
    EXPECT_422(hf, PTR "/text_config/interleave_moe_layer_step");
    json_object_set_new(tc, "interleave_moe_layer_step", json_integer(2));
    json_object_del(tc, "intermediate_size_mlp"); /* dense layers need it */
    EXPECT_422(hf, PTR "/text_config/intermediate_size_mlp");
    json_decref(hf);

    BAD("qwen3-next-80b-a3b", "linear_num_key_heads", json_integer(5), PTR "/linear_num_key_heads");
    BAD("qwen3-next-80b-a3b", "linear_conv_kernel_dim", json_integer(-1), PTR "/linear_conv_kernel_dim");
    BAD("qwen3-next-80b-a3b", "full_attention_interval", json_integer(0), PTR "/full_attention_interval");
    BAD("qwen3-next-80b-a3b", "partial_rotary_factor", json_real(1.5), PTR "/partial_rotary_factor");
    hf = load("qwen3-next-80b-a3b");
    json_t *lt = json_array();
    for (int i = 0; i < 48; i++) json_array_append_new(lt, json_string(i == 7 ? "mamba" : "full_attention"));
    json_object_set_new(hf, "layer_types", lt);
    EXPECT_422(hf, PTR "/layer_types/7");
    json_decref(hf);
    BAD("gpt-oss-20b", "num_experts_per_tok", json_integer(33), PTR "/num_experts_per_tok");
    BAD("gpt-oss-20b", "sliding_window", json_string("128"), PTR "/sliding_window");
    BAD("phi-3-mini-4k-instruct", "sliding_window", json_integer(-1), PTR "/sliding_window");
}

/* A search over a new family runs end to end (HF config -> IR -> every
 * engine): gpt-oss-20b and Qwen3-Next on 64 H100, with finite answers and
 * the approximations echoed in the resolved model. */
static void test_new_families_search(void)
{
    const char *files[] = {"gpt-oss-20b", "qwen3-next-80b-a3b"};
    for (size_t f = 0; f < 2; f++) {
        json_t *hf = load(files[f]);
        json_t *req = json_pack("{s:{s:O},s:{s:s},s:i,s:{s:i,s:i},s:{s:i}}", "model", "hf_config", hf,
                                "hardware", "preset", "h100-sxm", "devices", 64, "training", "seq_len",
                                4096, "global_batch_tokens", 4194304, "search", "top_k", 3);
        api_status st;
        api_status_init(&st);
        json_t *res = api_search(req, &st, NULL, NULL);
        CHECK(res != NULL);
        if (!res) {
            fprintf(stderr, "  search %s: %d %s %s\n", files[f], st.status,
                    st.n_errors ? st.errors[0].pointer : "", st.n_errors ? st.errors[0].detail : "");
        } else {
            json_t *cfgs = json_object_get(res, "configs");
            CHECK(json_array_size(cfgs) >= 1);
            double mfu = json_number_value(
                json_object_get(json_object_get(json_array_get(cfgs, 0), "bound"), "mfu"));
            CHECK(mfu > 0.05 && mfu < 1.0);
            json_t *ap = json_object_get(
                json_object_get(json_object_get(json_object_get(res, "model"), "resolved"), "ir"),
                "approximations");
            CHECK(json_array_size(ap) >= 1);
        }
        json_decref(res);
        json_decref(req);
        json_decref(hf);
    }
}

/* Whether one of the IR's approximations mentions `text`. */
static int names_approx(json_t *ir, const char *text)
{
    json_t *ap = json_object_get(ir, "approximations");
    for (size_t i = 0; i < json_array_size(ap); i++)
        if (strstr(json_string_value(json_array_get(ap, i)), text)) return 1;
    return 0;
}

/* Gemma 3 (modeling_gemma3.py Gemma3TextModel; configuration_gemma3.py
 * Gemma3TextConfig): the multimodal wrapper's text_config as
 * google/gemma-3-12b-it's config.json gives it, sparse (head_dim 256 and
 * vocab_size 262,208 the class defaults; five sliding layers of 1,024 to
 * one global, sliding_window_pattern 6), q/k RMSNorms, four norms a layer,
 * tied embeddings, no soft-cap. Parameters by hand: q and o 3,840 x 4,096
 * = 15,728,640 each, k and v 3,840 x 2,048 = 7,864,320 each, q/k norms
 * 2 x 256, the gated MLP 3 x 3,840 x 15,360 = 176,947,200, four norms
 * 4 x 3,840: 224,148,992 a layer, 10,759,151,616 for 48; the embedding
 * 262,208 x 3,840 = 1,006,878,720 and the final norm 3,840:
 * 11,766,034,176 (the language model of "12B"; the SigLIP tower is named
 * as left out). */
static void test_gemma3(void)
{
    json_t *hf = json_loads(
        "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"model_type\": \"gemma3\", "
        "\"text_config\": {\"hidden_size\": 3840, \"intermediate_size\": 15360, \"model_type\": "
        "\"gemma3_text\", \"num_attention_heads\": 16, \"num_hidden_layers\": 48, \"num_key_value_heads\": "
        "8, \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}, \"sliding_window\": 1024}, "
        "\"vision_config\": {\"hidden_size\": 1152, \"model_type\": \"siglip_vision_model\", "
        "\"num_hidden_layers\": 27}}", 0, NULL);
    CHECK(hf != NULL);
    EXPECT_HF(hf, "runs=16 0:count=5 0:attention.window=1024 0:attention.head_dim=256 1:count=1 "
                  "1:attention.window=0 15:attention.window=0 0:mlp.ffn_dim=15360");
    mfu_model m;
    json_t *ir = resolve(hf, &m);
    CHECK(ir != NULL);
    if (ir) {
        mfu_params p;
        mfu_model_params(&m, &p);
        CHECK_NEAR(p.total, 11766034176.0, 1e-12);
        CHECK(m.post_norms && !m.logit_softcap && m.tie_embeddings && m.vocab == 262208);
        CHECK(m.runs[0].attn.qk_norm != 0);
        CHECK(names_approx(ir, "vision tower"));
    }
    json_decref(ir);
    json_decref(hf);
}

/* One classic config's parameters and IR (api/hf_classic.c). */
static void classic_case(const char *text, double want_params, int tie, int bias, int64_t kv_heads,
                         int64_t rotary_dim, const char *approx)
{
    json_t *hf = json_loads(text, 0, NULL);
    CHECK(hf != NULL);
    mfu_model m;
    json_t *ir = resolve(hf, &m);
    CHECK(ir != NULL);
    if (ir) {
        mfu_params p;
        mfu_model_params(&m, &p);
        CHECK_NEAR(p.total, want_params, 1e-12);
        CHECK_EQ_I(m.tie_embeddings, tie);
        CHECK_EQ_I(m.bias, bias);
        CHECK(m.norm == MFU_NORM_LAYER && m.n_runs == 1);
        CHECK(!m.runs[0].mlp.gated);
        CHECK_EQ_I(m.runs[0].attn.n_kv_heads, kv_heads);
        CHECK_EQ_I(m.runs[0].attn.rotary_dim, rotary_dim);
        CHECK_EQ_I(approx ? names_approx(ir, approx) : (int)json_array_size(json_object_get(ir, "approximations")) > 0,
                   approx != NULL);
    }
    json_decref(ir);
    json_decref(hf);
}

/* The pre-Llama families, each against its published parameter count.
 * GPT-2 small (openai-community/gpt2's config.json): 124,439,808, the
 * figure every GPT-2 reimplementation reports: wte 50,257 x 768 =
 * 38,597,376, wpe 1,024 x 768 = 786,432, a layer 2 LayerNorms 2 x 1,536,
 * c_attn 768 x 2,304 + 2,304, c_proj 768 x 768 + 768, c_fc 768 x 3,072 +
 * 3,072, its c_proj 3,072 x 768 + 768 = 7,087,872, x 12 = 85,054,464, the
 * final LayerNorm 1,536; tied.
 * OPT-125m (facebook/opt-125m): the same shapes with vocab 50,272 and 2,048
 * positions: 38,608,896 + 1,572,864 + 85,054,464 + 1,536 = 125,237,760
 * (the checkpoint's 125,239,296 less the position table's 2 offset rows,
 * 2 x 768, which the IR does not count and the answer names); ReLU.
 * StarCoder (bigcode/starcoder): multi-query attention, one KV head of
 * 128: c_attn 6,144 x (6,144 + 256) + 6,400 = 39,328,000, c_proj
 * 37,754,880, c_fc 6,144 x 24,576 + 24,576 = 151,019,520, its c_proj
 * 151,001,088, LayerNorms 24,576: 379,128,064 a layer, x 40 =
 * 15,165,122,560; wte 49,152 x 6,144 = 301,989,888, wpe 8,192 x 6,144 =
 * 50,331,648, final LayerNorm 12,288: 15,517,456,384 ("15.5B").
 * GPT-NeoX-20B (EleutherAI/gpt-neox-20b): 20,554,567,680, as Black et al.
 * 2022 (arXiv 2204.06745) count it: query_key_value 6,144 x 18,432 +
 * 18,432, dense 37,754,880, the MLP 151,019,520 + 151,001,088, LayerNorms
 * 24,576: 453,064,704 a layer, x 44 = 19,934,846,976; untied embedding
 * and head 2 x 50,432 x 6,144 = 619,708,416; final LayerNorm 12,288. A
 * quarter of each 96-wide head rotated (rotary_pct): 24; the parallel
 * residual named as approximated.
 * BLOOM (bigscience/bloom): 176,247,271,424 as published, less the
 * embeddings' LayerNorm 2 x 14,336 the IR does not count (named):
 * query_key_value 14,336 x 43,008 + 43,008 = 616,605,696, dense
 * 205,535,232, the MLP 822,140,928 + 822,097,920, LayerNorms 57,344:
 * 2,466,437,120 a layer, x 70 = 172,650,598,400; the tied embedding
 * 250,880 x 14,336 = 3,596,615,680; final LayerNorm 28,672:
 * 176,247,242,752. No position table (ALiBi, named).
 * Falcon-180B (tiiuae/falcon-180B): no biases, 8 KV heads of 64:
 * query_key_value 14,848 x (14,848 + 1,024) = 235,667,456, dense 14,848^2
 * = 220,463,104, the MLP 2 x 14,848 x 59,392 = 1,763,704,832, ln_attn and
 * ln_mlp 4 x 14,848: 2,219,894,784 a layer, x 80 = 177,591,582,720; tied
 * embedding 65,024 x 14,848 = 965,476,352; final LayerNorm 29,696:
 * 178,557,088,768. RoPE over the whole head (64). */
static void test_classic_families(void)
{
    /* dropout where the block's probability is > 0: GPT-2's resid_pdrop
     * (default 0.1) on, NeoX's hidden_dropout (default 0) off */
    json_t *g = json_loads("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_head\": 4, \"n_layer\": 2, "
                           "\"vocab_size\": 100}", 0, NULL);
    json_t *nx = json_loads("{\"model_type\": \"gpt_neox\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
                            "\"num_hidden_layers\": 2, \"intermediate_size\": 256, \"vocab_size\": 100}", 0, NULL);
    mfu_model mg, mn;
    json_t *ig = resolve(g, &mg), *in = resolve(nx, &mn);
    CHECK(ig && in);
    if (ig && in) CHECK(mg.dropout && !mn.dropout);
    json_decref(ig);
    json_decref(in);
    json_decref(g);
    json_decref(nx);
    classic_case("{\"model_type\": \"gpt2\", \"n_embd\": 768, \"n_head\": 12, \"n_layer\": 12, "
                 "\"n_positions\": 1024, \"vocab_size\": 50257, \"activation_function\": \"gelu_new\", "
                 "\"resid_pdrop\": 0.1}",
                 124439808.0, 1, 1, 12, 64, NULL);
    classic_case("{\"model_type\": \"opt\", \"hidden_size\": 768, \"num_attention_heads\": 12, "
                 "\"num_hidden_layers\": 12, \"ffn_dim\": 3072, \"vocab_size\": 50272, "
                 "\"max_position_embeddings\": 2048, \"activation_function\": \"relu\", \"dropout\": 0.1, "
                 "\"do_layer_norm_before\": true, \"word_embed_proj_dim\": 768}",
                 125237760.0, 1, 1, 12, 64, "offset rows");
    classic_case("{\"model_type\": \"gpt_bigcode\", \"n_embd\": 6144, \"n_head\": 48, \"n_inner\": 24576, "
                 "\"n_layer\": 40, \"n_positions\": 8192, \"vocab_size\": 49152, \"multi_query\": true, "
                 "\"activation_function\": \"gelu_pytorch_tanh\", \"resid_pdrop\": 0.1}",
                 15517456384.0, 1, 1, 1, 128, NULL);
    classic_case("{\"model_type\": \"gpt_neox\", \"hidden_size\": 6144, \"num_attention_heads\": 64, "
                 "\"num_hidden_layers\": 44, \"intermediate_size\": 24576, \"vocab_size\": 50432, "
                 "\"max_position_embeddings\": 2048, \"rotary_pct\": 0.25, \"hidden_act\": \"gelu_fast\", "
                 "\"tie_word_embeddings\": false, \"use_parallel_residual\": true}",
                 20554567680.0, 0, 1, 64, 24, "parallel residual");
    classic_case("{\"model_type\": \"bloom\", \"hidden_size\": 14336, \"n_head\": 112, \"n_layer\": 70, "
                 "\"vocab_size\": 250880, \"hidden_dropout\": 0.0}",
                 176247242752.0, 1, 1, 112, 128, "ALiBi");
    classic_case("{\"model_type\": \"falcon\", \"hidden_size\": 14848, \"num_attention_heads\": 232, "
                 "\"num_hidden_layers\": 80, \"num_kv_heads\": 8, \"new_decoder_architecture\": true, "
                 "\"parallel_attn\": true, \"bias\": false, \"alibi\": false, \"vocab_size\": 65024}",
                 178557088768.0, 1, 0, 8, 64, "parallel attention");
    /* OPT-350m's embedding projection is refused at its field */
    json_t *bad = json_loads("{\"model_type\": \"opt\", \"hidden_size\": 1024, \"num_attention_heads\": 16, "
                             "\"num_hidden_layers\": 24, \"ffn_dim\": 4096, \"vocab_size\": 50272, "
                             "\"word_embed_proj_dim\": 512}", 0, NULL);
    EXPECT_422(bad, PTR "/word_embed_proj_dim");
    json_decref(bad);
}

/* Gemma 2's four RMSNorms a layer and soft-capped logits
 * (modeling_gemma2.py Gemma2DecoderLayer, Gemma2ForCausalLM): the importer
 * sets post_norms and logit_softcap (F-OP-POSTNORM, F-OP-SOFTCAP), and
 * names the one part left out, the soft-cap of the scores inside the
 * attention kernel. Parameters by hand (google/gemma-2-9b config.json: h
 * 3,584, 42 layers, 16 heads and 8 KV heads of 256, FFN 14,336, vocabulary
 * 256,000, tied): q and o 3,584 x 4,096 = 14,680,064 each, k and v 3,584 x
 * 2,048 = 7,340,032 each, the gated MLP 3 x 3,584 x 14,336 = 154,140,672,
 * four norms 4 x 3,584 = 14,336: 198,195,200 a layer, 8,324,198,400 for 42;
 * with the embedding 256,000 x 3,584 = 917,504,000 and the final norm
 * 3,584, 9,241,705,984 -- the checkpoint's count (the model card's
 * "9.24B"); with two norms a layer it was 301,056 short. */
static void test_gemma2_approx(void)
{
    mfu_params p;
    CHECK(params_of("gemma-2-9b", &p));
    CHECK_NEAR(p.total, 9241705984.0, 0.5);
    mfu_model m;
    api_status st;
    api_status_init(&st);
    json_t *req = json_pack("{s:s}", "preset", "gemma2-9b");
    json_t *src = NULL, *ovr = NULL;
    json_t *ir = api_resolve_model(req, &src, &ovr, &st);
    CHECK(ir != NULL && api_model_from_ir(ir, "/model", &m, &st) == 0);
    CHECK(json_is_true(json_object_get(ir, "post_norms")) && json_is_true(json_object_get(ir, "logit_softcap")));
    json_decref(req);
    json_decref(src);
    json_decref(ovr);
    json_decref(ir);
    if (st.n_errors) return;
    CHECK(m.post_norms && m.logit_softcap);
    int seen = 0, stale = 0;
    for (int i = 0; i < m.n_approx; i++) {
        seen += strstr(m.approx[i], "soft-cap of the attention scores") != NULL;
        stale += strstr(m.approx[i], "post-feedforward") != NULL;
    }
    CHECK_EQ_I(seen, 1);
    CHECK_EQ_I(stale, 0);
    /* final_logit_softcapping null turns the soft-cap off; a string is a 422 */
    json_t *hf = load("gemma-2-9b");
    json_object_set_new(hf, "final_logit_softcapping", json_null());
    mfu_model m2;
    json_t *ir2 = resolve(hf, &m2);
    CHECK(ir2 != NULL && !json_object_get(ir2, "logit_softcap") && json_is_true(json_object_get(ir2, "post_norms")));
    json_decref(ir2);
    json_decref(hf);
    BAD("gemma-2-9b", "final_logit_softcapping", json_string("30"), PTR "/final_logit_softcapping");
    /* other families have neither: the IR of Gemma 1 names none */
    hf = load("gemma-7b");
    ir2 = resolve(hf, &m2);
    CHECK(ir2 != NULL && !json_object_get(ir2, "post_norms") && !m2.post_norms && !m2.logit_softcap);
    json_decref(ir2);
    json_decref(hf);
}

static const check_case cases[] = {
    CHECK_CASE(test_roundtrips),
    CHECK_CASE(test_gemma2_approx),
    CHECK_CASE(test_gemma3),
    CHECK_CASE(test_classic_families),
    CHECK_CASE(test_deepseek_published),
    CHECK_CASE(test_llama_ir),
    CHECK_CASE(test_trap_explicit_head_dim),
    CHECK_CASE(test_trap_deepseek_head_dim),
    CHECK_CASE(test_trap_q_lora_null),
    CHECK_CASE(test_trap_deepseek_layers),
    CHECK_CASE(test_trap_qwen_moe_layers),
    CHECK_CASE(test_trap_windows),
    CHECK_CASE(test_trap_gla),
    CHECK_CASE(test_trap_defaults),
    CHECK_CASE(test_text_config),
    CHECK_CASE(test_bad_configs),
    CHECK_CASE(test_bad_configs_arrays),
    CHECK_CASE(test_junk_never_crashes),
    CHECK_CASE(test_presets),
    CHECK_CASE(test_route_nodes),
    CHECK_CASE(test_published_phi3),
    CHECK_CASE(test_published_gpt_oss),
    CHECK_CASE(test_published_llama4),
    CHECK_CASE(test_published_qwen3_next),
    CHECK_CASE(test_layers_phi3),
    CHECK_CASE(test_layers_gpt_oss),
    CHECK_CASE(test_layers_llama4_scout),
    CHECK_CASE(test_layers_llama4_maverick),
    CHECK_CASE(test_layers_qwen3_next),
    CHECK_CASE(test_phi3_flops),
    CHECK_CASE(test_new_families_bad),
    CHECK_CASE(test_new_families_search),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
