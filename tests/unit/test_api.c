/* api/: SHA-256 (FIPS 180-4 examples), the cache key's normal form, JSON
 * pointers in errors, overrides, presets, rendering contracts.
 *
 * Over 600 lines: one binary per module (tests/check.h), and the api's
 * limits (t_document_limits_*) are one table of cases each a few lines
 * long; every case runs alone by name (`build/tests/test_api --list`). */
#include "check.h"
#include "sha256.h"
#include "testutil.h"

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j) fprintf(stderr, "bad test JSON: %s\n", e.text);
    return j;
}

static void key_of(const char *req, char out[65])
{
    api_status st;
    api_status_init(&st);
    json_t *r = J(req);
    json_t *n = api_normalize(r, &st);
    if (!n) {
        fprintf(stderr, "normalize failed: %s %s\n", st.n_errors ? st.errors[0].pointer : "",
                st.n_errors ? st.errors[0].detail : "");
        strcpy(out, "error");
    } else {
        api_cache_key(n, out);
    }
    json_decref(n);
    json_decref(r);
}

/* run f on req, expect failure with status and the first pointer */
static void expect_error(json_t *(*f)(json_t *, api_status *), const char *req, int status,
                         const char *pointer)
{
    api_status st;
    api_status_init(&st);
    json_t *r = J(req);
    json_t *res = f(r, &st);
    CHECK(res == NULL);
    CHECK_EQ_I(st.status, status);
    CHECK(st.n_errors >= 1);
    if (st.n_errors) CHECK_STR(st.errors[0].pointer, pointer);
    json_decref(res);
    json_decref(r);
}

static json_t *search_sync(json_t *r, api_status *st) { return api_search(r, st, NULL, NULL); }

#define BASE "\"hardware\": {\"preset\": \"h100-sxm\"}, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}"

static void t_sha256_vectors(void)
{
    /* FIPS 180-4 / NIST example vectors */
    char hex[65];
    mfu_sha256_hex("abc", 3, hex);
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    mfu_sha256_hex("", 0, hex);
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    mfu_sha256_hex(m448, strlen(m448), hex);
    CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void t_cache_key(void)
{
    /* cache key: key order, 4096 vs 4096.0, explicit defaults, preset vs the
     * same model written out give one key; a changed value another */
    char k1[65], k2[65], k3[65], k4[65], k5[65];
    key_of("{\"model\": {\"preset\": \"llama3-8b\"}, " BASE "}", k1);
    key_of("{\"training\": {\"global_batch_tokens\": 1048576.0, \"seq_len\": 4096.0}, "
           "\"hardware\": {\"preset\": \"h100-sxm\"}, \"model\": {\"preset\": \"llama3-8b\"}}", k2);
    key_of("{\"model\": {\"preset\": \"llama3-8b\"}, \"mfu_convention\": \"causal\", "
           "\"hardware\": {\"preset\": \"h100-sxm\"}, \"training\": {\"seq_len\": 4096, "
           "\"global_batch_tokens\": 1048576, \"dtype\": \"bf16\", \"attention_impl\": \"flash\"}}", k3);
    key_of("{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"mfu_convention\": \"full\"}", k4);
    CHECK_STR(k1, k2);
    CHECK_STR(k1, k3);
    CHECK(strcmp(k1, k4) != 0);
    CHECK(strlen(k1) == 64);
    {
        /* the preset written out as IR (its own resolved form) hashes the same */
        api_status st;
        api_status_init(&st);
        json_t *r = J("{\"model\": {\"preset\": \"llama3-8b\"}, " BASE "}");
        json_t *n = api_normalize(r, &st);
        json_t *r2 = json_pack("{s:O,s:O,s:O}", "model", json_object_get(n, "model"), "hardware",
                               json_object_get(n, "hardware"), "training", json_object_get(r, "training"));
        json_t *n2 = api_normalize(r2, &st);
        CHECK(n2 != NULL);
        if (n2) {
            api_cache_key(n2, k5);
            CHECK_STR(k1, k5);
            /* but the provenance differs */
            CHECK_STR(json_string_value(json_object_get(json_object_get(n2, "_source"), "model")), "ir");
        }
        json_decref(n); json_decref(n2); json_decref(r); json_decref(r2);
    }
}

static void t_errors_with_pointers(void)
{
    /* errors carry the pointer of the offending field */
    /* a misspelt optional field is refused at its pointer, inside each
     * object as at the top (it was passed over: "tp_overlapp": true left
     * TP overlap off without a word) */
    expect_error(api_roofline, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                 "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576, \"tp_overlapp\": true}}",
                 422, "/training/tp_overlapp");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"devices\": 8, " BASE
                 ", \"search\": {\"topk\": 3}}", 422, "/search/topk");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"devices\": 8, " BASE
                 ", \"measured\": {\"step_time\": 1.0}}", 422, "/measured/step_time");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"devices\": 8, " BASE
                 ", \"cost\": {\"price\": 2}}", 422, "/cost/price");
    {
        /* the detail lists the object's fields, not the internal _source */
        api_status st;
        api_status_init(&st);
        json_t *r = J("{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"sourcе\": 1}");
        json_t *res = api_roofline(r, &st);
        CHECK(res == NULL && st.n_errors >= 1);
        if (st.n_errors) {
            CHECK(strstr(st.errors[0].detail, "unknown field; a request has model") != NULL);
            CHECK(strstr(st.errors[0].detail, "_source") == NULL);
        }
        json_decref(res);
        json_decref(r);
    }
    expect_error(api_roofline, "[1, 2]", 422, "");
    expect_error(api_roofline, "{\"model\": {\"preset\": \"nope\"}, " BASE "}", 422, "/model/preset");
    expect_error(api_roofline, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                 "\"training\": {\"global_batch_tokens\": 4096}}", 422, "/training/seq_len");
    expect_error(api_roofline, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                 "\"training\": {\"seq_len\": 0, \"global_batch_tokens\": 4096}}", 422, "/training/seq_len");
    expect_error(api_roofline, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                 "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 5000}}", 422, "/training/global_batch_tokens");
    expect_error(api_roofline, "{\"model\": {\"d_model\": 1024, \"vocab\": 32000, \"layers\": [{\"count\": 2, "
                 "\"attention\": {\"n_heads\": 16, \"n_kv_heads\": 5}, \"mlp\": {\"ffn_dim\": 4096}}]}, " BASE "}",
                 422, "/model/layers/0/attention/n_kv_heads");
    expect_error(api_roofline, "{\"model\": {\"d_model\": 1024, \"vocab\": 32000, \"layers\": [{\"count\": 1000000000000, "
                 "\"attention\": {\"n_heads\": 16}, \"mlp\": {\"ffn_dim\": 4096}}]}, " BASE "}",
                 422, "/model/layers/0/count");
    expect_error(api_roofline, "{\"model\": {\"d_model\": 1024.5, \"vocab\": 32000, \"layers\": [{\"attention\": "
                 "{\"n_heads\": 16}, \"mlp\": {\"ffn_dim\": 4096}}]}, " BASE "}", 422, "/model/d_model");
    expect_error(api_roofline, "{\"model\": {\"d_model\": 1024, \"vocab\": 32000, \"layers\": [{\"attention\": "
                 "{\"type\": \"linear\", \"n_heads\": 16}, \"mlp\": {\"ffn_dim\": 4096}}]}, " BASE "}",
                 422, "/model/layers/0/attention/type");
    expect_error(api_roofline, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v4\"}, "
                 "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 4096, \"dtype\": \"fp8\"}}", 422, "/training/dtype");
    expect_error(api_roofline, "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"bogus\": 1}", 422, "/bogus");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE "}", 422, "/devices");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 0}", 422, "/devices");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 8, "
                 "\"search\": {\"fix\": {\"warp\": 2}}}", 422, "/search/fix/warp");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 8, "
                 "\"measured\": {\"config\": {\"parallel\": {\"tp\": 3, \"dp\": 1}}, \"step_time_s\": 1}}",
                 422, "/measured/config/parallel");
}

/* MaxText's remat_policy names that save only some names
 * (src/maxtext/layers/decoders.py get_remat_policy: save_only_these_names)
 * are the "maxtext" policy with those names on the device: a measured
 * MaxText run says its policy as its config did (the v5p configs of
 * benchmarks/maxtext_v5p_model_configs.py use save_dot_except_mlpwi and
 * save_dot_with_context_except_mlp). Each answers as its names spelt out. */
static void t_maxtext_policy_names(void)
{
    static const struct { const char *alias, *names; } CASES[] = {
        {"save_qkv_proj", "{\"query_proj\": \"device\", \"key_proj\": \"device\", \"value_proj\": \"device\"}"},
        {"save_dot_except_mlpwi", "{\"query_proj\": \"device\", \"key_proj\": \"device\", \"value_proj\": "
                                  "\"device\", \"out_proj\": \"device\", \"mlpwo\": \"device\"}"},
        {"save_dot_with_context_except_mlp", "{\"query_proj\": \"device\", \"key_proj\": \"device\", "
                                             "\"value_proj\": \"device\", \"context\": \"device\", \"out_proj\": \"device\"}"},
        {"save_out_proj", "{\"out_proj\": \"device\"}"},
        {"minimal_with_context", "{\"query_proj\": \"device\", \"key_proj\": \"device\", \"value_proj\": "
                                 "\"device\", \"context\": \"device\", \"out_proj\": \"device\", \"mlpwi\": \"device\", "
                                 "\"mlpwo\": \"device\"}"}};
    for (size_t k = 0; k < sizeof CASES / sizeof *CASES; k++) {
        double step[2] = {0, 0}, mem[2] = {0, 0};
        for (int form = 0; form < 2; form++) {
            char rc[512], req[1536];
            if (form) snprintf(rc, sizeof rc, "\"recompute\": \"maxtext\", \"remat\": %s", CASES[k].names);
            else snprintf(rc, sizeof rc, "\"recompute\": \"%s\"", CASES[k].alias);
            snprintf(req, sizeof req, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v5p\"}, "
                     "\"devices\": 64, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 524288}, "
                     "\"search\": {\"top_k\": 1}, \"measured\": {\"config\": {\"parallel\": {\"fsdp\": 64}, "
                     "\"mbs\": 2, %s}, \"step_time_s\": 1}}", rc);
            api_status st;
            api_status_init(&st);
            json_t *r = J(req), *res = api_search(r, &st, NULL, NULL);
            json_t *mc = json_object_get(json_object_get(res, "measured"), "config");
            CHECK(mc != NULL);
            if (!mc) fprintf(stderr, "  %s form %d: %s\n", CASES[k].alias, form, st.n_errors ? st.errors[0].detail : "-");
            CHECK_STR(json_string_value(json_object_get(mc, "recompute")), "maxtext");
            step[form] = json_number_value(json_object_get(json_object_get(mc, "expected"), "step_time_s"));
            mem[form] = json_number_value(json_object_get(json_object_get(mc, "memory"), "total_bytes"));
            json_decref(res);
            json_decref(r);
        }
        CHECK(step[0] > 0 && step[0] == step[1] && mem[0] == mem[1]);
    }
    /* the names are the policy's own: a remat beside it is a 422 */
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v5p\"}, "
                 "\"devices\": 64, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 524288}, "
                 "\"measured\": {\"config\": {\"parallel\": {\"fsdp\": 64}, \"mbs\": 2, \"recompute\": "
                 "\"save_qkv_proj\", \"remat\": {\"out_proj\": \"device\"}}, \"step_time_s\": 1}}", 422,
                 "/measured/config/remat");
}

/* The model IR is read strictly, as the contract says (ModelIR and its
 * objects: additionalProperties false): "n_kv_hedas" described MHA where
 * GQA was meant, without a word. Every preset's IR as an answer echoes it
 * (model.resolved.ir, every default filled in) reads back as it was. */
static void t_model_ir_keys(void)
{
#define IR_REQ(model) "{\"model\": " model ", \"hardware\": {\"preset\": \"h100-sxm\"}, " \
    "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}}"
#define RUN(attn, mlp) "{\"d_model\": 1024, \"vocab\": 32000, \"layers\": [{\"count\": 2, \"attention\": " attn \
    ", \"mlp\": " mlp "}]}"
    expect_error(api_roofline, IR_REQ(RUN("{\"n_heads\": 16, \"n_kv_hedas\": 4}", "{\"ffn_dim\": 4096}")), 422,
                 "/model/layers/0/attention/n_kv_hedas");
    /* a field of another attention type: MLA's rank on an MHA layer */
    expect_error(api_roofline, IR_REQ(RUN("{\"n_heads\": 16, \"kv_lora_rank\": 512}", "{\"ffn_dim\": 4096}")),
                 422, "/model/layers/0/attention/kv_lora_rank");
    expect_error(api_roofline, IR_REQ(RUN("{\"n_heads\": 16}", "{\"ffn_dim\": 4096, \"top_k\": 2}")), 422,
                 "/model/layers/0/mlp/top_k");
    expect_error(api_roofline, IR_REQ("{\"d_model\": 1024, \"vocab\": 32000, \"dropuot\": true, \"layers\": "
                 "[{\"count\": 2, \"attention\": {\"n_heads\": 16}, \"mlp\": {\"ffn_dim\": 4096}}]}"), 422,
                 "/model/dropuot");
    expect_error(api_roofline, IR_REQ("{\"d_model\": 1024, \"vocab\": 32000, \"layers\": [{\"cuont\": 2, "
                 "\"attention\": {\"n_heads\": 16}, \"mlp\": {\"ffn_dim\": 4096}}]}"), 422, "/model/layers/0/cuont");
    /* an IR preset's override is the IR's field: misspelt, a 422 there */
    expect_error(api_roofline, IR_REQ("{\"preset\": \"megatron-22b\", \"dropuot\": false}"), 422, "/model/dropuot");
    json_t *names = api_preset_model_names();
    CHECK(json_array_size(names) >= 10);
    size_t i;
    json_t *nm;
    json_array_foreach(names, i, nm) {
        api_status st;
        api_status_init(&st);
        json_t *req = json_pack("{s:s}", "preset", json_string_value(nm));
        json_t *src = NULL, *ovr = NULL, *ir = api_resolve_model(req, &src, &ovr, &st);
        mfu_model m, m2;
        CHECK(ir != NULL && api_model_from_ir(ir, "/model", &m, &st) == 0);
        json_t *echo = ir ? api_model_to_ir(&m) : NULL;
        int ok = echo && api_model_from_ir(echo, "/model", &m2, &st) == 0;
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "  %s: its echoed IR does not read back (%s)\n", json_string_value(nm),
                    st.n_errors ? st.errors[0].pointer : "-");
        json_decref(echo);
        json_decref(ir);
        json_decref(src);
        json_decref(ovr);
        json_decref(req);
    }
    json_decref(names);
#undef RUN
#undef IR_REQ
}

/* A hardware description's efficiency profile, peaks, reserve and tiers
 * are read strictly (the contract's objects, additionalProperties false):
 * a hand-edited "gemm_scal" was passed over and the preset's value kept.
 * Every preset's description as an answer echoes it (the normal form's
 * hardware, api_hardware_to_json) reads back. */
static void t_hardware_keys(void)
{
    static const struct { const char *path, *key, *ptr; } BAD[] = {
        {"efficiency", "gemm_scal", "/hardware/efficiency/gemm_scal"},
        {"peak_flops", "bf61", "/hardware/peak_flops/bf61"},
        {"memory_reserve", "context", "/hardware/memory_reserve/context"},
        {"tiers/0", "bandwidth", "/hardware/tiers/0/bandwidth"}};
    for (size_t k = 0; k < sizeof BAD / sizeof *BAD; k++) {
        json_t *hw = json_deep_copy(json_object_get(api_preset_hardware("h100-sxm"), "hardware"));
        CHECK(hw != NULL);
        if (!hw) return;
        json_t *o = strcmp(BAD[k].path, "tiers/0") ? json_object_get(hw, BAD[k].path)
                                                   : json_array_get(json_object_get(hw, "tiers"), 0);
        if (!o && !strcmp(BAD[k].path, "memory_reserve")) json_object_set_new(hw, "memory_reserve", o = json_object());
        CHECK(json_is_object(o));
        json_object_set_new(o, BAD[k].key, json_real(1.0));
        json_t *req = json_pack("{s:{s:s},s:o,s:{s:i,s:i}}", "model", "preset", "llama3-8b", "hardware", hw,
                                "training", "seq_len", 4096, "global_batch_tokens", 1048576);
        api_status st;
        api_status_init(&st);
        json_t *res = api_roofline(req, &st);
        int ok = res == NULL && st.status == 422 && st.n_errors && !strcmp(st.errors[0].pointer, BAD[k].ptr);
        CHECK(ok);
        if (!ok) fprintf(stderr, "  want 422 at %s, got %d %s\n", BAD[k].ptr, st.status, st.n_errors ? st.errors[0].pointer : "-");
        json_decref(res);
        json_decref(req);
    }
    json_t *names = api_preset_hardware_names();
    CHECK(json_array_size(names) >= 8);
    size_t i;
    json_t *nm;
    json_array_foreach(names, i, nm) {
        api_status st;
        api_status_init(&st);
        mfu_hardware hw, hw2;
        json_t *d = json_object_get(api_preset_hardware(json_string_value(nm)), "hardware");
        int ok = d && api_hardware_from_json(d, "/hardware", &hw, &st) == 0;
        json_t *echo = ok ? api_hardware_to_json(&hw) : NULL;
        ok = ok && echo && api_hardware_from_json(echo, "/hardware", &hw2, &st) == 0;
        CHECK(ok);
        if (!ok) fprintf(stderr, "  %s: does not read back (%s)\n", json_string_value(nm), st.n_errors ? st.errors[0].pointer : "-");
        json_decref(echo);
    }
    json_decref(names);
}

/* A measured run's micro-batch rounds make the request's batch. */
static void t_measured_batch(void)
{
    /* a measured run's micro-batch rounds must make the request's batch
     * (BASE: 1,048,576 tokens = 256 sequences of 4,096) to within 5 %:
     * mbs 40 x dp 8 = 320 sequences rounds to one round, 25 % over, which
     * was silently evaluated as a 320-sequence run */
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 8, "
                 "\"measured\": {\"config\": {\"parallel\": {\"dp\": 8}, \"mbs\": 40}, \"step_time_s\": 1}}",
                 422, "/measured/config/mbs");
    /* mbs 4 x dp 8 = 32 divides 256 (8 micro-batches); mbs 3 x dp 8 = 24
     * rounds to 11 rounds, 264 sequences (3 % over: a batch stated
     * roughly); a stated grad_accum says the run's own batch */
    {
        api_status st;
        api_status_init(&st);
        json_t *r = J("{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 8, \"search\": {\"top_k\": 1}, "
                      "\"measured\": {\"config\": {\"parallel\": {\"dp\": 8}, \"mbs\": 4}, \"step_time_s\": 1}}");
        json_t *res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        json_t *mc = json_object_get(json_object_get(res, "measured"), "config");
        CHECK(json_integer_value(json_object_get(mc, "grad_accum")) == 8);
        json_decref(res);
        json_decref(r);
        r = J("{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 8, \"search\": {\"top_k\": 1}, "
              "\"measured\": {\"config\": {\"parallel\": {\"dp\": 8}, \"mbs\": 3}, \"step_time_s\": 1}}");
        res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        mc = json_object_get(json_object_get(res, "measured"), "config");
        CHECK(json_integer_value(json_object_get(mc, "grad_accum")) == 11);
        json_decref(res);
        json_decref(r);
        r = J("{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 8, \"search\": {\"top_k\": 1}, "
              "\"measured\": {\"config\": {\"parallel\": {\"dp\": 8}, \"mbs\": 3, \"grad_accum\": 10}, "
              "\"step_time_s\": 1}}");
        res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        json_decref(res);
        json_decref(r);
    }
}

static void t_overrides(void)
{
    /* overrides: a preset plus fields merges and says what was overridden */
    {
        api_status st;
        api_status_init(&st);
        json_t *r = J("{\"model\": {\"preset\": \"llama3-8b\", \"num_hidden_layers\": 16}, "
                      "\"hardware\": {\"preset\": \"h100-sxm\", \"hbm_bytes\": 96e9}, "
                      "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 4096}}");
        json_t *res = api_roofline(r, &st);
        CHECK(res != NULL);
        json_t *model = json_object_get(res, "model"), *hw = json_object_get(res, "hardware");
        CHECK_STR(json_string_value(json_array_get(json_object_get(model, "overridden"), 0)), "num_hidden_layers");
        CHECK_STR(json_string_value(json_array_get(json_object_get(hw, "overridden"), 0)), "hbm_bytes");
        CHECK(json_real_value(json_object_get(hw, "hbm_bytes")) == 96e9);
        CHECK_EQ_I(json_integer_value(json_object_get(json_array_get(json_object_get(model, "layers"), 0), "count")), 16);
        CHECK_STR(json_string_value(json_object_get(model, "source")), "preset");
        /* the roofline contract */
        json_t *roof = json_object_get(res, "roofline");
        CHECK_STR(json_string_value(json_object_get(roof, "convention")), "causal");
        json_t *op = json_array_get(json_object_get(roof, "ops"), 0);
        const char *fields[] = {"name", "phase", "count", "flops", "bytes", "intensity", "bound", "time_s"};
        for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) CHECK(json_object_get(op, fields[i]) != NULL);
        json_decref(res);
        json_decref(r);
    }
}

static void t_problem_shape(void)
{
    /* problem+json shape (RFC 9457) */
    {
        api_status st;
        api_status_init(&st);
        api_fail(&st, 422, "/a/b", "bad %d", 7);
        json_t *p = api_problem_json(&st);
        CHECK_EQ_I(json_integer_value(json_object_get(p, "status")), 422);
        CHECK_STR(json_string_value(json_object_get(p, "type")), "/problems/invalid-request");
        CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(p, "errors"), 0), "pointer")), "/a/b");
        CHECK_STR(json_string_value(json_object_get(p, "detail")), "bad 7");
        json_decref(p);
    }
}

static void t_presets(void)
{
    /* every preset loads and lists with its key figures and a source */
    {
        json_t *ms = api_presets_models(), *hs = api_presets_hardware();
        CHECK(json_array_size(ms) >= 14);
        CHECK(json_array_size(hs) >= 11);
        size_t i;
        json_t *e;
        int bad = 0;
        json_array_foreach(ms, i, e) bad += !json_object_get(e, "params_total") || !json_is_string(json_object_get(e, "source"));
        json_array_foreach(hs, i, e) bad += !json_object_get(e, "peak_flops") || !json_object_get(e, "source");
        CHECK_EQ_I(bad, 0);
        const char *need[] = {"a100-40gb", "a100-80gb", "h100-sxm", "h800", "h200", "b200", "mi300x",
                              "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"};
        for (size_t k = 0; k < sizeof need / sizeof *need; k++) {
            mfu_hardware hw;
            CHECK(load_hw(need[k], &hw) == 0);
            CHECK(hw.peak_flops[MFU_DT_BF16] > 0 && hw.hbm_bytes > 0 && hw.n_tiers >= 2);
        }
        json_decref(ms);
        json_decref(hs);
    }
}

static void t_search_contract(void)
{
    /* the search contract and CSV */
    {
        api_status st;
        api_status_init(&st);
        json_t *r = J("{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 16, \"search\": {\"top_k\": 3}}");
        json_t *res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        json_t *cfgs = json_object_get(res, "configs");
        CHECK_EQ_I(json_array_size(cfgs), 3);
        json_t *c = json_array_get(cfgs, 0);
        const char *fields[] = {"rank", "parallel", "schedule", "vpp", "mbs", "grad_accum",
                                "global_batch_tokens", "recompute", "memory", "time", "bound",
                                "expected", "overlap_ratio", "gap"};
        for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) CHECK(json_object_get(c, fields[i]) != NULL);
        char *csv = api_result_csv(res);
        int lines = 0;
        for (char *q = csv; q && *q; q++) lines += *q == '\n';
        CHECK_EQ_I(lines, 4);
        free(csv);
        json_t *s = json_object_get(res, "search");
        CHECK(json_integer_value(json_object_get(s, "space_size")) > 0);
        CHECK(json_object_get(json_object_get(s, "pruned"), "memory") != NULL);
        json_decref(res);
        json_decref(r);
    }
}

static void t_why_not(void)
{
    /* "why not" (issue 9 item 11): a layout pinned on every axis that does
     * not fit answers 200 with that configuration evaluated, the stage that
     * overflows and by how much; one no admitted framework launches says
     * which rule of each it breaks. Llama 3 405B on 16,384 H100 with
     * Megatron's distributed optimizer (ZeRO-1: fp32 main gradients on
     * every replica, 6 + 12/d B/param) instead of Meta's ZeRO-2: rank 1
     * holds 8 x 398.5 M parameters -> 19.4 GB of state instead of 8.4 GB,
     * over the 85.0 GB the card exposes. */
    {
        api_status st;
        api_status_init(&st);
        json_t *r = J("{\"model\": {\"preset\": \"llama3-405b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                      "\"devices\": 16384, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 16777216}, "
                      "\"search\": {\"fix\": {\"tp\": 8, \"pp\": 16, \"dp\": 128, \"cp\": 1, \"zero\": 1, "
                      "\"schedule\": \"interleaved\", \"vpp\": 4, \"mbs\": 1, \"recompute\": \"none\", \"sp\": true}}}");
        json_t *res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        CHECK_EQ_I(json_array_size(json_object_get(res, "configs")), 0);
        json_t *pin = json_object_get(res, "pinned");
        CHECK(json_is_object(pin));
        CHECK(json_is_false(json_object_get(pin, "feasible")));
        json_t *why = json_array_get(json_object_get(pin, "reasons"), 0);
        CHECK_STR(json_string_value(json_object_get(why, "kind")), "memory");
        double excess = json_number_value(json_object_get(why, "excess_bytes"));
        CHECK(excess > 1e9 && excess < 10e9);
        json_t *cfg = json_object_get(pin, "config");
        CHECK_EQ_I(json_array_size(json_object_get(cfg, "memory_stages")), 16);
        /* Megatron launches it (torchtitan has no ZeRO-1): it just does not fit */
        json_t *lb = json_object_get(pin, "launchable_by");
        CHECK_EQ_I(json_array_size(lb), 1);
        CHECK_STR(json_string_value(json_array_get(lb, 0)), "megatron");
        json_decref(res);
        json_decref(r);
        /* ZeRO-2 with PP (Meta's policy, which fits): Megatron-FSDP is not
         * validated with PP and torchtitan has no ZeRO-2: with the default
         * frameworks nothing is ranked, and the answer names both rules */
        api_status_init(&st);
        r = J("{\"model\": {\"preset\": \"llama3-405b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
              "\"devices\": 16384, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 16777216}, "
              "\"search\": {\"fix\": {\"tp\": 8, \"pp\": 16, \"dp\": 128, \"cp\": 1, \"zero\": 2, "
              "\"schedule\": \"interleaved\", \"vpp\": 4, \"mbs\": 1, \"recompute\": \"none\", \"sp\": true}}}");
        res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        pin = json_object_get(res, "pinned");
        CHECK(json_is_true(json_object_get(pin, "feasible")));
        json_t *reasons = json_object_get(pin, "reasons");
        int fw = 0;
        for (size_t i = 0; i < json_array_size(reasons); i++) {
            const char *d = json_string_value(json_object_get(json_array_get(reasons, i), "detail"));
            fw += d && (strstr(d, "FW-M2") || strstr(d, "FW-T1"));
        }
        CHECK_EQ_I(fw, 2);
        json_decref(res);
        /* ... and with frameworks "any" it is ranked, naming none */
        json_object_set_new(json_object_get(r, "search"), "frameworks", json_pack("[s]", "any"));
        api_status_init(&st);
        res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        json_t *c0 = json_array_get(json_object_get(res, "configs"), 0);
        CHECK(c0 != NULL && json_array_size(json_object_get(c0, "frameworks")) == 0);
        CHECK(json_is_null(json_object_get(c0, "megatron_args")));
        json_decref(res);
        json_decref(r);
    }
}

static void t_limits_depth(void)
{
    /* document limits (api/limits.c): depth on the bytes and on the tree,
     * string and key lengths, array and object sizes, each with its pointer */
    api_status st;
    char *buf = malloc(20000);
    /* {"a": [ {"b~c/d": [[[...0...]]]} ]}: levels 1..3 + n arrays */
    for (int n = 60; n <= 62; n++) {
        size_t len = (size_t)sprintf(buf, "{\"a\": [{\"b~c/d\\\"\": ");
        for (int i = 0; i < n; i++) buf[len++] = '[';
        buf[len++] = '0';
        for (int i = 0; i < n; i++) buf[len++] = ']';
        len += (size_t)sprintf(buf + len, "}]}");
        api_status_init(&st);
        json_t *d = api_parse_json(buf, len, JSON_REJECT_DUPLICATES, &st);
        if (n + 3 <= API_MAX_DEPTH) {
            CHECK(d != NULL);
            CHECK_EQ_I(st.status, 0);
            /* the same tree passes the walk; one level more fails it */
            api_status st2;
            api_status_init(&st2);
            CHECK_EQ_I(api_check_limits(d, &st2), 0);
            json_t *deeper = json_pack("{s:O}", "z", d);
            CHECK_EQ_I(api_check_limits(deeper, &st2), n + 4 <= API_MAX_DEPTH ? 0 : -1);
            if (n + 4 > API_MAX_DEPTH) {
                CHECK_EQ_I(st2.status, 422);
                CHECK(strncmp(st2.errors[0].pointer, "/z/a/0/b~0c~1d\"/0/0", 19) == 0);
            }
            json_decref(deeper);
        } else {
            CHECK(d == NULL);
            CHECK_EQ_I(st.status, 422);
            /* the pointer of the 65th container: /a/0/<key>/0/0/... (61 x /0) */
            char want[256];
            size_t w = (size_t)sprintf(want, "/a/0/b~0c~1d\"");
            for (int i = 0; i < API_MAX_DEPTH - 3; i++) w += (size_t)sprintf(want + w, "/0");
            CHECK_STR(st.errors[0].pointer, want);
        }
        json_decref(d);
    }
    /* far beyond jansson's own limit (2048): still our 422, not a 400 */
    size_t len = 0;
    for (int i = 0; i < 5000; i++) buf[len++] = '[';
    api_status_init(&st);
    CHECK(api_parse_json(buf, len, JSON_DECODE_ANY, &st) == NULL);
    CHECK_EQ_I(st.status, 422);
    /* depth counted outside strings only */
    len = (size_t)sprintf(buf, "{\"s\": \"");
    for (int i = 0; i < 100; i++) buf[len++] = '[';
    len += (size_t)sprintf(buf + len, "\\\"{{\"}");
    api_status_init(&st);
    json_t *d = api_parse_json(buf, len, 0, &st);
    CHECK(d != NULL);
    json_decref(d);
    free(buf);
}

static void t_limits_sizes(void)
{
    /* document limits, continued: malformed input, string and key lengths,
     * array and object sizes */
    api_status st;
    char *buf = malloc(20000);
    size_t len;
    json_t *d;
    /* malformed: 400 with "Malformed JSON" */
    api_status_init(&st);
    CHECK(api_parse_json("{\"a\": ", 6, 0, &st) == NULL);
    CHECK_EQ_I(st.status, 400);
    CHECK_STR(st.errors[0].pointer, "");
    /* strings: 4096 bytes pass, 4097 fail at their pointer; keys too */
    for (int n = API_MAX_STRING; n <= API_MAX_STRING + 1; n++) {
        len = (size_t)sprintf(buf, "{\"x\": [1, \"");
        memset(buf + len, 'a', (size_t)n);
        len += (size_t)n;
        len += (size_t)sprintf(buf + len, "\"]}");
        api_status_init(&st);
        d = api_parse_json(buf, len, 0, &st);
        CHECK((d != NULL) == (n <= API_MAX_STRING));
        if (!d) CHECK_STR(st.errors[0].pointer, "/x/1");
        json_decref(d);
    }
    char *key = malloc(API_MAX_STRING + 2);
    memset(key, 'k', API_MAX_STRING + 1);
    key[API_MAX_STRING + 1] = '\0';
    d = json_pack("{s:{s:i}}", "o", key, 1);
    api_status_init(&st);
    CHECK_EQ_I(api_check_limits(d, &st), -1);
    CHECK(strncmp(st.errors[0].pointer, "/o/kkk", 6) == 0);
    CHECK(strstr(st.errors[0].detail, "key") != NULL);
    json_decref(d);
    free(key);
    /* arrays and objects */
    json_t *arr = json_array();
    for (int i = 0; i <= API_MAX_ARRAY; i++) json_array_append_new(arr, json_integer(i));
    d = json_pack("{s:o}", "layers", arr);
    api_status_init(&st);
    CHECK_EQ_I(api_check_limits(d, &st), -1);
    CHECK_STR(st.errors[0].pointer, "/layers");
    json_array_remove(arr, 0);
    api_status_init(&st);
    CHECK_EQ_I(api_check_limits(d, &st), 0);
    json_decref(d);
    json_t *obj = json_object();
    for (int i = 0; i <= API_MAX_MEMBERS; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        json_object_set_new(obj, k, json_null());
    }
    d = json_pack("{s:[o]}", "m", obj);
    api_status_init(&st);
    CHECK_EQ_I(api_check_limits(d, &st), -1);
    CHECK_STR(st.errors[0].pointer, "/m/0");
    json_decref(d);
    free(buf);
}

static void t_limits_in_engines(void)
{
    api_status st;
    json_t *d;
    /* the engines check their request too (a tree built in memory) */
    d = J("{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"search\": {}}");
    char *longs = malloc(API_MAX_STRING + 2);
    memset(longs, 'e', API_MAX_STRING + 1);
    longs[API_MAX_STRING + 1] = '\0';
    json_object_set_new(json_object_get(d, "search"), "rank_by", json_string(longs));
    free(longs);
    api_status_init(&st);
    CHECK(api_normalize(d, &st) == NULL);
    CHECK_EQ_I(st.status, 422);
    CHECK_STR(st.errors[0].pointer, "/search/rank_by");
    CHECK(strstr(st.errors[0].detail, "limit of 4096") != NULL);
    json_decref(d);
}

static void t_dualpipev_by_name(void)
{
    /* DualPipeV by name: a measured configuration without vpp gets the
     * schedule's 2 stages per rank; search.fix keeps to the schedule */
    api_status st;
    api_status_init(&st);
    json_t *r = J("{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 64, "
                  "\"search\": {\"top_k\": 3, \"fix\": {\"schedule\": \"dualpipev\"}}, "
                  "\"measured\": {\"config\": {\"parallel\": {\"fsdp\": 8, \"pp\": 8}, "
                  "\"schedule\": \"dualpipev\", \"mbs\": 1, \"grad_accum\": 16}, \"step_time_s\": 10}}");
    json_t *res = api_search(r, &st, NULL, NULL);
    CHECK(res != NULL);
    json_t *mc = json_object_get(json_object_get(res, "measured"), "config");
    CHECK_STR(json_string_value(json_object_get(mc, "schedule")), "dualpipev");
    CHECK_EQ_I(json_integer_value(json_object_get(mc, "vpp")), 2);
    json_t *cs = json_object_get(res, "configs");
    CHECK(json_array_size(cs) > 0);
    for (size_t i = 0; i < json_array_size(cs); i++) {
        json_t *c = json_array_get(cs, i);
        CHECK_STR(json_string_value(json_object_get(c, "schedule")), "dualpipev");
        CHECK_EQ_I(json_integer_value(json_object_get(c, "vpp")), 2);
    }
    json_decref(res);
    json_decref(r);
}

static void t_fix_vpp_above_max(void)
{
    /* search.fix's vpp above max_vpp (default 8) widens it, as a fixed mbs
     * widens max_mbs: Megatron Bridge launches Qwen3-30B-A3B on 16 H100s
     * as pp 2, vpp 12, ep 8, mbs 1 (docs/performance-summary.md, 26.02.01:
     * 48 layers, 2 per virtual stage); before, nothing was legal */
    api_status st;
    api_status_init(&st);
    json_t *r = J("{\"model\": {\"preset\": \"qwen3-30b-a3b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                  "\"devices\": 16, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 4194304, "
                  "\"dtype\": \"fp8\"}, \"search\": {\"top_k\": 1, \"frameworks\": [\"megatron\"], "
                  "\"fix\": {\"tp\": 1, \"pp\": 2, \"cp\": 1, \"ep\": 8, \"mbs\": 1, \"vpp\": 12}}}");
    json_t *res = api_search(r, &st, NULL, NULL);
    CHECK(res != NULL);
    json_t *c = json_array_get(json_object_get(res, "configs"), 0);
    CHECK(c != NULL);
    CHECK_EQ_I(json_integer_value(json_object_get(c, "vpp")), 12);
    CHECK_STR(json_string_value(json_object_get(c, "schedule")), "interleaved");
    CHECK_EQ_I(json_integer_value(json_object_get(json_object_get(c, "parallel"), "pp")), 2);
    json_decref(res);
    json_decref(r);
}

/* A configuration as a request gives it is read strictly, as every other
 * object of a request: a misspelt switch ("vp" for "vpp") was passed over
 * and the run evaluated without it. An answer's configuration given back
 * ("I ran rank 1; it took this long") reads as it came: its figures are
 * not read, its pipeline_split and recompute_modules are the answer's
 * forms, its tp_overlap must be the request's. */
static void t_measured_config_keys(void)
{
#define MC_REQ(train, cfg) "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, " \
    "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576" train "}, \"devices\": 8, " \
    "\"search\": {\"top_k\": 2}, \"measured\": {\"config\": " cfg ", \"step_time_s\": 1}}"
    expect_error(search_sync, MC_REQ("", "{\"parallel\": {\"tp\": 2, \"pp\": 4}, \"vp\": 2}"), 422,
                 "/measured/config/vp");
    {
        /* and names the field it meant: one edit from "vp", two from
         * "mircobatch"-like names of 5 bytes and more; "tp" beside "pp" is
         * not a guess (both are known) */
        api_status st;
        api_status_init(&st);
        json_t *r = J(MC_REQ("", "{\"parallel\": {\"tp\": 2, \"pp\": 4}, \"vp\": 2, \"grad_acum\": 8}"));
        json_t *res = api_search(r, &st, NULL, NULL);
        CHECK(res == NULL && st.n_errors == 2);
        for (int e = 0; e < st.n_errors && e < 2; e++) {
            const char *want = strstr(st.errors[e].pointer, "/vp") ? "did you mean \"vpp\"?" : "did you mean \"grad_accum\"?";
            CHECK(strstr(st.errors[e].detail, want) != NULL);
        }
        json_decref(res);
        json_decref(r);
        /* of names equally near, the one holding the key: search.fix's
         * "vp" is one edit from dp, pp and vpp, and means vpp */
        api_status_init(&st);
        r = J("{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": 8, "
              "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"search\": {\"fix\": {\"vp\": 2}}}");
        res = api_search(r, &st, NULL, NULL);
        CHECK(res == NULL && st.n_errors == 1 && strstr(st.errors[0].detail, "did you mean \"vpp\"?") != NULL);
        CHECK_STR(st.n_errors ? st.errors[0].pointer : "", "/search/fix/vp");
        json_decref(res);
        json_decref(r);
        api_status_init(&st);
        r = J(MC_REQ("", "{\"parallel\": {\"tp\": 2, \"pp\": 4}, \"zzz\": 2}"));
        res = api_search(r, &st, NULL, NULL);
        CHECK(res == NULL && st.n_errors == 1 && strstr(st.errors[0].detail, "did you mean") == NULL);
        json_decref(res);
        json_decref(r);
    }
    expect_error(search_sync, MC_REQ("", "{\"parallel\": {\"tp\": 2, \"ppp\": 4}}"), 422,
                 "/measured/config/parallel/ppp");
    expect_error(search_sync, MC_REQ("", "{\"parallel\": {\"tp\": 2, \"pp\": 4}, \"pipeline_split\": "
                 "{\"first\": 8, \"last\": 8, \"middle\": 8}}"), 422, "/measured/config/pipeline_split/middle");
    /* 32 layers over pp 4: the even split is 8 a stage, not 9 */
    expect_error(search_sync, MC_REQ("", "{\"parallel\": {\"tp\": 2, \"pp\": 4}, \"pipeline_split\": "
                 "{\"kind\": \"even\", \"first_stage_layers\": 9}}"), 422,
                 "/measured/config/pipeline_split/first_stage_layers");
    /* the overlaps are the request's: an answer of tp_overlap true given
     * back to a request without it */
    expect_error(search_sync, MC_REQ("", "{\"parallel\": {\"tp\": 8}, \"tp_overlap\": true}"), 422,
                 "/measured/config/tp_overlap");
    /* full recompute recomputes no module by name: [] is its echo, a
     * module is not */
    expect_error(search_sync, MC_REQ("", "{\"parallel\": {\"tp\": 8}, \"recompute\": \"full\", "
                 "\"recompute_modules\": [\"core_attn\"]}"), 422, "/measured/config/recompute_modules");
    /* every configuration of an answer, given back as it came, is the
     * configuration it was: the same settings and expected step (Llama 3
     * 70B on 64 H100s under Megatron: interleaved pp 4 x vpp 5 and pp 2 x
     * vpp 8 with TP overlap; Mixtral on 256 v6e chips: "minimal" with its
     * modules listed) */
    static const char *const REQS[] = {
        "{\"model\": {\"preset\": \"llama3-70b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"training\": "
        "{\"seq_len\": 4096, \"global_batch_tokens\": 4194304, \"tp_overlap\": true}, \"devices\": 64, "
        "\"search\": {\"top_k\": 4, \"frameworks\": [\"megatron\"]}, \"measured\": {\"step_time_s\": 1}}",
        "{\"model\": {\"preset\": \"mixtral-8x7b\"}, \"hardware\": {\"preset\": \"tpu-v6e\"}, \"training\": "
        "{\"seq_len\": 4096, \"global_batch_tokens\": 4194304}, \"devices\": 256, \"search\": {\"top_k\": 2}, "
        "\"measured\": {\"step_time_s\": 1}}",
        /* MaxText's policies that place the names themselves: the answer
         * carries their remat */
        "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v5p\"}, \"training\": "
        "{\"seq_len\": 4096, \"global_batch_tokens\": 4194304}, \"devices\": 64, \"search\": {\"top_k\": 1, "
        "\"fix\": {\"recompute\": \"qkv_proj_offloaded\"}}, \"measured\": {\"step_time_s\": 1}}",
        "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v5p\"}, \"training\": "
        "{\"seq_len\": 4096, \"global_batch_tokens\": 4194304}, \"devices\": 64, \"search\": {\"top_k\": 1, "
        "\"fix\": {\"recompute\": \"minimal_offloaded\"}}, \"measured\": {\"step_time_s\": 1}}",
        /* a module set no named policy has: the answer says "custom" */
        "{\"model\": {\"preset\": \"mixtral-8x7b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"training\": "
        "{\"seq_len\": 4096, \"global_batch_tokens\": 4194304}, \"devices\": 64, \"search\": {\"top_k\": 1, "
        "\"fix\": {\"recompute\": \"selective\", \"recompute_modules\": [\"core_attn\", \"moe_act\"]}}, "
        "\"measured\": {\"step_time_s\": 1}}",
        /* the "account" split (Llama 3 405B's 126 layers and the embedding
         * and head over pp 8: 15, 16, ..., 15) */
        "{\"model\": {\"preset\": \"llama3-405b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"training\": "
        "{\"seq_len\": 4096, \"global_batch_tokens\": 4194304}, \"devices\": 512, \"search\": {\"top_k\": 1, "
        "\"frameworks\": [\"megatron\"], \"fix\": {\"pp\": 8}}, \"measured\": {\"step_time_s\": 1}}"};
#define N_REQS (int)(sizeof REQS / sizeof *REQS)
    static const char *const SAME[] = {"parallel", "schedule", "vpp", "mbs", "grad_accum", "recompute",
                                       "recompute_modules", "recompute_layers", "pipeline_split", "tp_overlap"};
    int interleaved = 0, modules = 0, remat = 0, custom = 0, account = 0;
    for (int q = 0; q < N_REQS; q++) {
        api_status st;
        api_status_init(&st);
        json_t *r = J(REQS[q]), *m = json_object_get(r, "measured");
        json_t *base = json_deep_copy(r);
        json_object_del(base, "measured");
        json_t *res = api_search(base, &st, NULL, NULL), *cs = json_object_get(res, "configs");
        CHECK(res != NULL && json_array_size(cs) >= 1);
        for (size_t i = 0; i < json_array_size(cs); i++) {
            json_t *c = json_array_get(cs, i);
            interleaved += !strcmp(json_string_value(json_object_get(c, "schedule")), "interleaved");
            modules += json_array_size(json_object_get(c, "recompute_modules")) > 0;
            remat += json_object_get(c, "remat") != NULL;
            custom += !strcmp(json_string_value(json_object_get(c, "recompute")), "custom");
            account += !strcmp(json_string_value(json_object_get(json_object_get(c, "pipeline_split"), "kind")), "account");
            json_object_set(m, "config", c);
            api_status st2;
            api_status_init(&st2);
            json_t *res2 = api_search(r, &st2, NULL, NULL);
            CHECK(res2 != NULL);
            json_t *mc = json_object_get(json_object_get(res2, "measured"), "config");
            for (size_t k = 0; k < sizeof SAME / sizeof *SAME; k++)
                if (!json_equal(json_object_get(mc, SAME[k]), json_object_get(c, SAME[k]))) {
                    CHECK(0);
                    fprintf(stderr, "  request %d config %zu: %s differs\n", q, i, SAME[k]);
                }
            json_t *e = json_object_get(json_object_get(c, "expected"), "step_time_s");
            json_t *e2 = json_object_get(json_object_get(mc, "expected"), "step_time_s");
            CHECK(e && e2 && json_real_value(e) == json_real_value(e2));
            CHECK(json_object_get(json_object_get(res2, "measured"), "inferred") == NULL);
            json_decref(res2);
        }
        json_decref(res);
        json_decref(base);
        json_decref(r);
    }
    /* the cases this test is for were in the answers */
    CHECK(interleaved >= 2 && modules >= 2 && remat >= 2 && custom >= 1 && account >= 1);
#undef N_REQS
    /* what an answer lists with a named policy is that policy's on the
     * model, not another: a module minimal does not recompute, or
     * qkv_proj_offloaded's names placed otherwise, is a 422 saying how to
     * name a set of one's own */
    expect_error(search_sync, MC_REQ("", "{\"parallel\": {\"tp\": 8}, \"recompute\": \"minimal\", "
                 "\"recompute_modules\": [\"core_attn\"]}"), 422, "/measured/config/recompute_modules");
    expect_error(search_sync, MC_REQ("", "{\"parallel\": {\"tp\": 8}, \"recompute\": \"custom\"}"), 422,
                 "/measured/config/recompute_modules");
    expect_error(search_sync, MC_REQ("", "{\"parallel\": {\"tp\": 2, \"pp\": 4}, \"pipeline_split\": "
                 "{\"kind\": \"even\", \"first_stage_layers\": -1}}"), 422,
                 "/measured/config/pipeline_split/first_stage_layers");
    {
        /* a search.fix is no answer's echo: a list beside a named policy
         * stays a 422 there */
        expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": "
                     "\"h100-sxm\"}, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, "
                     "\"devices\": 8, \"search\": {\"fix\": {\"recompute\": \"op_sac\", \"recompute_modules\": "
                     "[\"moe\"]}}}", 422, "/search/fix/recompute_modules");
    }
#undef MC_REQ
}

/* The measured run of a table that gives the layout alone (Megatron
 * Bridge's docs/performance-summary.md: TP, PP, CP, VP, EP, MBS, GBS):
 * the schedule follows VP (interleaved), and where the frameworks'
 * defaults of the switches left out cannot fit, the fastest variant of
 * them that fits is taken and named (measured.inferred). */
/* A search that must succeed; its answer's measured block (a copy). */
static json_t *measured_answer(const char *req)
{
    api_status st;
    api_status_init(&st);
    json_t *r = J(req), *res = api_search(r, &st, NULL, NULL);
    CHECK(res != NULL);
    json_t *m = json_deep_copy(json_object_get(res, "measured"));
    json_decref(res);
    json_decref(r);
    return m;
}

/* config: a measured configuration's JSON; where it gives neither mbs nor
 * grad_accum it runs at mbs 1 (these cases weigh the other switches at a
 * known micro-batch; t_measured_mbs_inferred, the micro-batch's own) */
static json_t *measured_of(const char *hw, int devices, const char *config)
{
    char req[768], cfg[384];
    if (config[0] == '{' && !strstr(config, "\"mbs\"") && !strstr(config, "\"grad_accum\""))
        snprintf(cfg, sizeof cfg, "{\"mbs\": 1, %s", config + 1);
    else
        snprintf(cfg, sizeof cfg, "%s", config);
    snprintf(req, sizeof req, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"%s\"}, "
             "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"devices\": %d, "
             "\"search\": {\"top_k\": 1, \"frameworks\": [\"megatron\"]}, \"measured\": {\"config\": %s, "
             "\"step_time_s\": 1}}", hw, devices, cfg);
    return measured_answer(req);
}

/* Llama-3-8B under FSDP over 8 H100s, 32 sequences of 4,096 tokens a step
 * (4 a rank); cfg_pre: what the measured configuration gives before its
 * parallel axes ("" or e.g. "\"mbs\": 2, "). */
static json_t *fsdp_measured(const char *cfg_pre)
{
    char req[640];
    snprintf(req, sizeof req, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
             "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 131072}, \"devices\": 8, "
             "\"search\": {\"top_k\": 1}, \"measured\": {\"config\": {%s\"parallel\": {\"fsdp\": 8}}, "
             "\"step_time_s\": 1}}", cfg_pre);
    return measured_answer(req);
}

static double fsdp_total_s(json_t *m)
{
    json_t *comm = json_object_get(json_object_get(json_object_get(m, "config"), "time_expected"), "comm");
    return json_number_value(json_object_get(json_object_get(comm, "fsdp"), "total_s"));
}

/* A run that gives neither mbs nor grad_accum (no framework has a default
 * micro-batch: Megatron-LM asserts one is given, torchtitan runs a rank's
 * whole local batch at once) is taken at the fastest fitting divisor of a
 * replica's sequences a step, each with the other left-out switches
 * inferred: the minimum of the same run given mbs 1, 2 and 4, to the bit.
 * FSDP gathers the parameters and reduce-scatters the gradients once a
 * micro-batch, so its traffic at 4 micro-batches of 1 is twice that at 2
 * of 2 (the same bytes each time). */
static void t_measured_mbs_inferred(void)
{
    static const char *const given[3] = {"\"mbs\": 1, ", "\"mbs\": 2, ", "\"mbs\": 4, "};
    double best = INFINITY, fsdp_s[3];
    for (int i = 0; i < 3; i++) {
        json_t *m = fsdp_measured(given[i]);
        json_t *c = json_object_get(m, "config");
        CHECK_EQ_I(json_integer_value(json_object_get(c, "mbs")), 1 << i);
        CHECK_EQ_I(json_integer_value(json_object_get(c, "grad_accum")), 4 >> i);
        /* mbs given: not inferred */
        json_t *inf = json_object_get(m, "inferred");
        for (size_t k = 0; k < json_array_size(inf); k++)
            CHECK(strcmp(json_string_value(json_array_get(inf, k)), "mbs") != 0);
        if (json_is_true(json_object_get(c, "feasible"))) {
            double t = json_number_value(json_object_get(json_object_get(c, "expected"), "step_time_s"));
            if (t < best) best = t;
        }
        fsdp_s[i] = fsdp_total_s(m);
        json_decref(m);
    }
    CHECK(fsdp_s[1] > 0);
    CHECK_NEAR(fsdp_s[0] / fsdp_s[1], 2.0, 1e-9);
    json_t *m = fsdp_measured("");
    json_t *c = json_object_get(m, "config");
    int64_t mbs = json_integer_value(json_object_get(c, "mbs"));
    CHECK_EQ_I(mbs * json_integer_value(json_object_get(c, "grad_accum")), 4);
    CHECK(json_is_true(json_object_get(c, "feasible")));
    CHECK(json_number_value(json_object_get(json_object_get(c, "expected"), "step_time_s")) == best);
    CHECK(mbs > 1); /* here one micro-batch of 1 gathers twice as often */
    json_t *inf = json_object_get(m, "inferred");
    int named = 0;
    for (size_t k = 0; k < json_array_size(inf); k++)
        named += strcmp(json_string_value(json_array_get(inf, k)), "mbs") == 0;
    CHECK_EQ_I(named, 1);
    json_decref(m);
    /* the normal form keeps the micro-batch left out: mbs 1 given is
     * another request (the cache would answer one with the other's) */
    char k0[65], k1[65];
    static const char *const req =
        "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
        "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 131072}, \"devices\": 8, "
        "\"measured\": {\"config\": {%s\"parallel\": {\"fsdp\": 8}}, \"step_time_s\": 1}}";
    char r0[512], r1[512];
    snprintf(r0, sizeof r0, req, "");
    snprintf(r1, sizeof r1, req, "\"mbs\": 1, ");
    key_of(r0, k0);
    key_of(r1, k1);
    CHECK(strcmp(k0, "error") != 0 && strcmp(k1, "error") != 0);
    CHECK(strcmp(k0, k1) != 0);
    /* grad_accum given: the micro-batch follows it, nothing inferred */
    m = fsdp_measured("\"grad_accum\": 4, ");
    CHECK_EQ_I(json_integer_value(json_object_get(json_object_get(m, "config"), "mbs")), 1);
    CHECK(json_object_get(m, "inferred") == NULL);
    json_decref(m);
}

static void t_measured_inferred(void)
{
    /* Llama-3-8B (8.03 B parameters) over dp 8 on H100s: replicated bf16
     * weights, fp32 gradients and fp32 Adam master and moments are 2 + 4 +
     * 12 = 18 B a parameter, 144.6 GB, more than 80 GB; the distributed
     * optimizer's 2 + 4 + 12 / 8 = 7.5 B a parameter is 60.2 GB, and the
     * activations of a 4,096-token sequence through 32 layers do not fit
     * in the rest without recompute: zero and recompute inferred */
    json_t *m = measured_of("h100-sxm", 8, "{\"parallel\": {\"dp\": 8}}");
    json_t *c = json_object_get(m, "config");
    CHECK(json_is_true(json_object_get(c, "feasible")));
    CHECK_EQ_I(json_integer_value(json_object_get(json_object_get(c, "parallel"), "zero")), 1);
    json_t *inf = json_object_get(m, "inferred");
    CHECK_EQ_I((long long)json_array_size(inf), 2);
    CHECK_STR(json_string_value(json_array_get(inf, 0)), "zero");
    CHECK_STR(json_string_value(json_array_get(inf, 1)), "recompute");
    CHECK(strcmp(json_string_value(json_object_get(c, "recompute")), "none") != 0);
    json_decref(m);
    /* a switch the run names is kept, fitting or not */
    m = measured_of("h100-sxm", 8, "{\"parallel\": {\"dp\": 8, \"zero\": 0}, \"recompute\": \"none\"}");
    c = json_object_get(m, "config");
    CHECK(json_is_false(json_object_get(c, "feasible")));
    CHECK_EQ_I(json_integer_value(json_object_get(json_object_get(c, "parallel"), "zero")), 0);
    CHECK(json_object_get(m, "inferred") == NULL);
    json_decref(m);
    /* defaults that fit stay: B200's 192 GB hold the replicated 144.6 */
    m = measured_of("b200", 8, "{\"parallel\": {\"dp\": 8}}");
    CHECK_EQ_I(json_integer_value(json_object_get(json_object_get(json_object_get(m, "config"), "parallel"), "zero")), 0);
    CHECK(json_object_get(m, "inferred") == NULL);
    json_decref(m);
    /* only full recompute of every layer fits: Llama-3-70B at tp 8, pp 8
     * (10 layers a stage) and mbs 32 on 64 H100s; all (-1), not the count */
    {
        char req[768];
        snprintf(req, sizeof req, "{\"model\": {\"preset\": \"llama3-70b\"}, \"hardware\": {\"preset\": "
                 "\"h100-sxm\"}, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, "
                 "\"devices\": 64, \"search\": {\"top_k\": 1, \"frameworks\": [\"megatron\"]}, "
                 "\"measured\": {\"config\": {\"parallel\": {\"tp\": 8, \"pp\": 8, \"sp\": true}, "
                 "\"mbs\": 32%s}, \"step_time_s\": 1}}", "");
        api_status st;
        api_status_init(&st);
        json_t *r = J(req), *res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        json_t *mo = json_object_get(res, "measured"), *mc = json_object_get(mo, "config");
        CHECK(json_is_true(json_object_get(mc, "feasible")));
        CHECK_STR(json_string_value(json_object_get(mc, "recompute")), "full");
        CHECK_EQ_I(json_integer_value(json_object_get(mc, "recompute_layers")), -1);
        json_decref(res);
        json_decref(r);
        /* ... and 9 of the 10 do not fit (so nothing short of all is) */
        snprintf(req, sizeof req, "{\"model\": {\"preset\": \"llama3-70b\"}, \"hardware\": {\"preset\": "
                 "\"h100-sxm\"}, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, "
                 "\"devices\": 64, \"search\": {\"top_k\": 1, \"frameworks\": [\"megatron\"]}, "
                 "\"measured\": {\"config\": {\"parallel\": {\"tp\": 8, \"pp\": 8, \"sp\": true}, "
                 "\"mbs\": 32%s}, \"step_time_s\": 1}}", ", \"recompute\": \"full\", \"recompute_layers\": 9");
        r = J(req);
        res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        CHECK(json_is_false(json_object_get(json_object_get(json_object_get(res, "measured"), "config"), "feasible")));
        json_decref(res);
        json_decref(r);
    }
    /* the cache key: a run that leaves zero out (inferred: named in the
     * answer) is another request than one that gives the inferred value,
     * and the normal form keeps it left out (posted, it infers the same) */
    {
        const char *left = "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 8, "
                           "\"measured\": {\"config\": {\"parallel\": {\"dp\": 8}}, \"step_time_s\": 1}}";
        const char *given = "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 8, "
                            "\"measured\": {\"config\": {\"parallel\": {\"dp\": 8, \"zero\": 1}}, "
                            "\"step_time_s\": 1}}";
        char k1[65], k2[65], k3[65];
        key_of(left, k1);
        key_of(given, k2);
        CHECK(strcmp(k1, k2) != 0);
        api_status st;
        api_status_init(&st);
        json_t *r = J(left), *n = api_normalize(r, &st);
        CHECK(n != NULL);
        json_t *npar = json_object_get(json_object_get(json_object_get(n, "measured"), "config"), "parallel");
        CHECK(json_object_get(npar, "zero") == NULL);
        json_t *clean = json_deep_copy(n);
        json_object_del(clean, "_source");
        char *text = json_dumps(clean, JSON_COMPACT);
        key_of(text, k3);
        CHECK_STR(k1, k3);
        free(text);
        json_decref(clean);
        json_decref(n);
        json_decref(r);
    }
    /* VP without a schedule: Megatron's interleaved 1F1B (it was a 422) */
    m = measured_of("h100-sxm", 8, "{\"parallel\": {\"dp\": 2, \"pp\": 4, \"zero\": 1}, \"vpp\": 2}");
    CHECK_STR(json_string_value(json_object_get(json_object_get(m, "config"), "schedule")), "interleaved");
    json_decref(m);
}

/* A run on a stack mfud does not model: DeepSeek-V3's pre-training on
 * 2,048 H800s (DeepSeek-V3 technical report, arXiv 2412.19437, 3.2:
 * "16-way Pipeline Parallelism (PP), 64-way Expert Parallelism (EP)
 * spanning 8 nodes, and ZeRO-1 Data Parallelism (DP)", DualPipe, 4,096
 * tokens a sequence, batch 15,360 sequences, FP8; 3.2.3 "Recomputation of
 * RMSNorm and MLA Up-Projection"). No framework mfud knows launches
 * DualPipeV beside a replica axis without FSDP (torchtitan's alone, FW-T11),
 * so the switches the layout leaves out are inferred among every legal
 * variant: the report's own, the distributed optimizer and the MLA
 * up-projections recomputed, fit where Megatron's defaults (replicated
 * Adam state: 12 B a parameter of the stage's, no recompute) do not. */
/* dp left out is what the devices leave (Megatron takes no dp: the world
 * size over tp x pp x cp, parallel_state.py initialize_model_parallel):
 * tp 8 on 64 devices is dp 8. A product that misses the devices says
 * its numbers: 2 x 8 = 16, not 64. */
static void t_measured_dp_rest(void)
{
    json_t *m = measured_of("h100-sxm", 64, "{\"parallel\": {\"tp\": 8}}");
    CHECK_EQ_I(json_integer_value(json_object_get(json_object_get(json_object_get(m, "config"), "parallel"), "dp")), 8);
    json_decref(m);
    api_status st;
    api_status_init(&st);
    json_t *r = J("{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                  "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"devices\": 64, "
                  "\"measured\": {\"config\": {\"parallel\": {\"tp\": 8, \"dp\": 2}}, \"step_time_s\": 1}}");
    json_t *res = api_search(r, &st, NULL, NULL);
    CHECK(res == NULL && st.status == 422 && st.n_errors > 0);
    if (st.n_errors) {
        CHECK_STR(st.errors[0].pointer, "/measured/config/parallel");
        CHECK(strstr(st.errors[0].detail, "= 16 devices, not the request's 64") != NULL);
    }
    json_decref(res);
    json_decref(r);
}

/* F-OP-MTP: DeepSeek-V3's MTP module (num_nextn_predict_layers 1), on 256
 * H800s at pp 8 (first 8 layers, last 5), ep 32. By hand, per token
 * forward at 4,096 tokens (d 7,168, vocabulary 129,280), the layer of the
 * last kind (MoE):
 *   MLA projections 7168 x 1536 + 1536 x 128 x 192 + 7168 x 576
 *     + 512 x 128 x 256 + 128 x 128 x 7168 = 187,105,280 params, x 2
 *                                                    =   374,210,560
 *   causal attention 2 x (192 + 128) x 128 x 4,097 / 2 = 167,813,120
 *   router 2 x 7168 x 256                            =     3,670,016
 *   8 routed experts 2 x 8 x 3 x 7168 x 2048         =   704,643,072
 *   the shared expert 2 x 3 x 7168 x 2048            =    88,080,384
 * then the projection 2 x 2 x 7168^2 = 205,520,896 and the logits
 * 2 x 7168 x 129,280 = 1,853,358,080: 3,397,296,128 FLOPs a token more
 * (Megatron's num_floating_point_operations counts the same terms). The
 * last stage holds the MTP layer beside its 5; torchtitan builds no MTP
 * (FW-T16); the step is no shorter with it. */
static void t_mtp(void)
{
#define MTP_REQ(N)                                                                                        \
    "{\"model\": {\"preset\": \"deepseek-v3\", \"num_nextn_predict_layers\": " N "}, \"hardware\": "    \
    "{\"preset\": \"h800\"}, \"devices\": 256, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": " \
    "4194304}, \"search\": {\"top_k\": 1}, \"measured\": {\"config\": {\"parallel\": {\"pp\": 8, "        \
    "\"ep\": 32, \"dp\": 32, \"zero\": 1}, \"mbs\": 1, \"recompute\": \"full\", \"pipeline_split\": "    \
    "{\"first\": 8, \"last\": 5}}, \"step_time_s\": 20}}"
    json_t *res[2];
    for (int i = 0; i < 2; i++) {
        api_status st;
        api_status_init(&st);
        json_t *r = J(i ? MTP_REQ("1") : MTP_REQ("0"));
        res[i] = api_search(r, &st, NULL, NULL);
        CHECK(res[i] != NULL);
        json_decref(r);
    }
    if (res[0] && res[1]) {
        double f0 = json_real_value(json_object_get(json_object_get(res[0], "model"), "flops_per_token_fwd"));
        double f1 = json_real_value(json_object_get(json_object_get(res[1], "model"), "flops_per_token_fwd"));
        CHECK_NEAR(f1 - f0, 3397296128.0, 1e-12);
        json_t *c0 = json_object_get(json_object_get(res[0], "measured"), "config");
        json_t *c1 = json_object_get(json_object_get(res[1], "measured"), "config");
        json_t *s0 = json_object_get(c0, "memory_stages"), *s1 = json_object_get(c1, "memory_stages");
        CHECK_EQ_I(json_integer_value(json_object_get(json_array_get(s0, json_array_size(s0) - 1), "layers")), 5);
        CHECK_EQ_I(json_integer_value(json_object_get(json_array_get(s1, json_array_size(s1) - 1), "layers")), 6);
        double t0 = json_real_value(json_object_get(json_object_get(c0, "expected"), "step_time_s"));
        double t1 = json_real_value(json_object_get(json_object_get(c1, "expected"), "step_time_s"));
        CHECK(t1 >= t0);
    }
    /* the search's roofline is the roofline's (both count the MTP layer) */
    if (res[1]) {
        api_status st;
        api_status_init(&st);
        json_t *r = J("{\"model\": {\"preset\": \"deepseek-v3\", \"num_nextn_predict_layers\": 1}, "
                      "\"hardware\": {\"preset\": \"h800\"}, \"devices\": 256, \"training\": {\"seq_len\": 4096, "
                      "\"global_batch_tokens\": 4194304}}");
        json_t *roof = api_roofline(r, &st);
        CHECK(roof != NULL);
        double a = json_real_value(json_object_get(json_object_get(roof, "roofline"), "step_time_s"));
        double b = json_real_value(json_object_get(json_object_get(res[1], "roofline"), "step_time_s"));
        CHECK(a > 0 && fabs(a - b) <= 1e-9 * a);
        json_decref(roof);
        json_decref(r);
    }
    json_decref(res[0]);
    json_decref(res[1]);
#undef MTP_REQ
    /* a layout torchtitan runs without MTP (fsdp 32 x pp 8, ep 32 over
     * fsdp) it refuses with it */
#define MTP_TT(N)                                                                                         \
    "{\"model\": {\"preset\": \"deepseek-v3\", \"num_nextn_predict_layers\": " N "}, \"hardware\": "    \
    "{\"preset\": \"h800\"}, \"devices\": 256, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": " \
    "4194304}, \"search\": {\"top_k\": 1}, \"measured\": {\"config\": {\"parallel\": {\"pp\": 8, "        \
    "\"ep\": 32, \"fsdp\": 32}, \"mbs\": 1, \"recompute\": \"full\"}, \"step_time_s\": 20}}"
    json_t *m = measured_answer(MTP_TT("0")), *c = json_object_get(m, "config");
    CHECK(json_array_size(json_object_get(c, "frameworks")) == 1 &&
          !strcmp(json_string_value(json_array_get(json_object_get(c, "frameworks"), 0)), "torchtitan"));
    json_decref(m);
    m = measured_answer(MTP_TT("1"));
    c = json_object_get(m, "config");
    CHECK_EQ_I((long long)json_array_size(json_object_get(c, "frameworks")), 0);
    const char *why =
        json_string_value(json_object_get(json_object_get(json_object_get(c, "recipes"), "torchtitan"), "unavailable"));
    CHECK(why && !strncmp(why, "FW-T16", 6));
    json_decref(m);
#undef MTP_TT
}

/* A paper names the interleaved schedule and not its count: Llama 3 405B
 * on 8,192 H100s (Llama 3 paper, arXiv 2407.21783, Table 4: TP 8, CP 1,
 * PP 16, DP 64, sequences of 8,192, 16M tokens a batch; 3.3.2: an
 * interleaved schedule). Megatron needs a count: every legal one is tried
 * with the other left-out switches, and the fastest that fits is taken
 * and named (measured.inferred "vpp"). A count given is kept, and an
 * illegal one is a 422 at /measured/config/vpp. */
static void t_measured_vpp_inferred(void)
{
#define VPP_REQ(EXTRA)                                                                                    \
    "{\"model\": {\"preset\": \"llama3-405b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": 8192, " \
    "\"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 16777216}, \"search\": {\"top_k\": 1}, "   \
    "\"measured\": {\"config\": {\"parallel\": {\"tp\": 8, \"pp\": 16, \"dp\": 64}, \"mbs\": 1, "            \
    "\"schedule\": \"interleaved\"" EXTRA "}, \"step_time_s\": 12}}"
    json_t *m = measured_answer(VPP_REQ("")), *c = json_object_get(m, "config");
    CHECK(json_is_true(json_object_get(c, "feasible")));
    CHECK_STR(json_string_value(json_object_get(c, "schedule")), "interleaved");
    long long v = json_integer_value(json_object_get(c, "vpp"));
    CHECK(v >= 2);
    json_t *inf = json_object_get(m, "inferred");
    int named = 0;
    for (size_t k = 0; k < json_array_size(inf); k++)
        named |= !strcmp(json_string_value(json_array_get(inf, k)), "vpp");
    CHECK(named);
    double t_inf = json_real_value(json_object_get(json_object_get(c, "expected"), "step_time_s"));
    json_decref(m);
    /* no legal count is faster: the chosen one's own request (with the
     * switches it inferred) gives the same step, and vpp 2 none shorter */
    m = measured_answer(VPP_REQ(", \"vpp\": 2"));
    c = json_object_get(m, "config");
    CHECK_EQ_I(json_integer_value(json_object_get(c, "vpp")), 2);
    CHECK(json_real_value(json_object_get(json_object_get(c, "expected"), "step_time_s")) >= t_inf - 1e-9 ||
          json_is_false(json_object_get(c, "feasible")));
    json_decref(m);
    api_status st;
    api_status_init(&st);
    json_t *r = J(VPP_REQ(", \"vpp\": 1")), *res = api_search(r, &st, NULL, NULL);
    CHECK(res == NULL && st.status == 422);
    CHECK(st.n_errors > 0 && !strcmp(st.errors[0].pointer, "/measured/config/vpp"));
    json_decref(res);
    json_decref(r);
    /* the count left out is another request than any count given (the
     * cache key: the normal form keeps it left out) */
    char k1[65], k2[65];
    key_of(VPP_REQ(""), k1);
    key_of(VPP_REQ(", \"vpp\": 2"), k2);
    CHECK(strcmp(k1, k2) != 0 && strcmp(k1, "error") != 0);
#undef VPP_REQ
    /* the split follows the inferred count: DeepSeek-V3 (its MTP layer
     * makes the account split of pp 16 illegal for vpp >= 2) interleaved
     * over 16 stages without a count is answered, not a 422 at vpp */
    m = measured_answer("{\"model\": {\"preset\": \"deepseek-v3\"}, \"hardware\": {\"preset\": \"h800\"}, "
                        "\"devices\": 2048, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 62914560}, "
                        "\"search\": {\"top_k\": 1}, \"measured\": {\"config\": {\"parallel\": {\"pp\": 16, "
                        "\"ep\": 64, \"zero\": 1}, \"schedule\": \"interleaved\", \"mbs\": 1}, \"step_time_s\": 30}}");
    CHECK(m != NULL && json_integer_value(json_object_get(json_object_get(m, "config"), "vpp")) >= 2);
    json_decref(m);
}

/* A TPU run that names no recompute policy ran MaxText's default,
 * remat_policy 'full' (src/maxtext/configs/base.yml); a GPU run names
 * Megatron's and torchtitan's, none. MaxText's full wraps every decoder
 * layer (decoders.py): a count of layers is not MaxText's (FW-X5). */
static void t_measured_rc_default(void)
{
#define RC_REQ(HW, EXTRA)                                                                                  \
    "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"" HW "\"}, \"devices\": 8, "       \
    "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"search\": {\"top_k\": 1}, "     \
    "\"measured\": {\"config\": {\"parallel\": {\"fsdp\": 8}, \"mbs\": 1" EXTRA "}, \"step_time_s\": 1}}"
    json_t *m = measured_answer(RC_REQ("tpu-v5p", "")), *c = json_object_get(m, "config");
    CHECK_STR(json_string_value(json_object_get(c, "recompute")), "full");
    CHECK_EQ_I(json_integer_value(json_object_get(c, "recompute_layers")), -1);
    CHECK(json_array_size(json_object_get(c, "frameworks")) == 1 &&
          !strcmp(json_string_value(json_array_get(json_object_get(c, "frameworks"), 0)), "maxtext"));
    CHECK(json_object_get(m, "inferred") == NULL);
    /* and XLA's async collective fusion, which MaxText's published
     * scripts turn on (configs/tpu/v5p/512b.sh LIBTPU_INIT_ARGS): the
     * tensor axis' collectives overlapped by default on TPUs only */
    CHECK(json_is_true(json_object_get(c, "tp_overlap")));
    json_decref(m);
    m = measured_answer(RC_REQ("h100-sxm", ""));
    CHECK_STR(json_string_value(json_object_get(json_object_get(m, "config"), "recompute")), "none");
    CHECK(json_is_false(json_object_get(json_object_get(m, "config"), "tp_overlap")));
    json_decref(m);
    m = measured_answer(RC_REQ("tpu-v5p", ", \"recompute\": \"full\", \"recompute_layers\": 4"));
    CHECK_EQ_I((long long)json_array_size(json_object_get(json_object_get(m, "config"), "frameworks")), 0);
    json_decref(m);
    /* MaxText's minimal saves the projections, not the attention's
     * context (decoders.py get_remat_policy; minimal_with_context adds
     * it): a TPU run that names it ran that; on a GPU, and given back with
     * the modules an answer lists, mfud's minimal (context kept) */
    m = measured_answer(RC_REQ("tpu-v5p", ", \"recompute\": \"minimal\""));
    c = json_object_get(m, "config");
    CHECK_STR(json_string_value(json_object_get(c, "recompute")), "maxtext");
    CHECK_STR(json_string_value(json_object_get(json_object_get(c, "remat"), "context")), "remat");
    CHECK_STR(json_string_value(json_object_get(json_object_get(c, "remat"), "out_proj")), "device");
    json_decref(m);
    m = measured_answer(RC_REQ("tpu-v5p", ", \"recompute\": \"minimal\", \"recompute_modules\": "
                                          "[\"layernorm\", \"moe_act\", \"act\"]"));
    CHECK_STR(json_string_value(json_object_get(json_object_get(m, "config"), "recompute")), "minimal");
    json_decref(m);
    m = measured_answer(RC_REQ("h100-sxm", ", \"recompute\": \"minimal\""));
    CHECK_STR(json_string_value(json_object_get(json_object_get(m, "config"), "recompute")), "minimal");
    json_decref(m);
#undef RC_REQ
}

static void t_measured_inferred_any_stack(void)
{
#define DSV3_REQ(CONFIG)                                                                                   \
    "{\"model\": {\"preset\": \"deepseek-v3\"}, \"hardware\": {\"preset\": \"h800\"}, \"devices\": 2048, "     \
    "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 62914560, \"dtype\": \"fp8\"}, "             \
    "\"search\": {\"top_k\": 1, \"frameworks\": [\"megatron\"]}, \"measured\": {\"config\": {\"parallel\": " \
    "{\"pp\": 16, \"ep\": 64, \"dp\": 128" CONFIG "}, \"step_time_s\": 20}}"
    json_t *m = measured_answer(DSV3_REQ("}, \"schedule\": \"dualpipev\", \"mbs\": 1"));
    json_t *c = json_object_get(m, "config");
    CHECK(json_is_true(json_object_get(c, "feasible")));
    CHECK_EQ_I((long long)json_array_size(json_object_get(c, "frameworks")), 0);
    CHECK_EQ_I(json_integer_value(json_object_get(json_object_get(c, "parallel"), "zero")), 1);
    CHECK_STR(json_string_value(json_object_get(c, "recompute")), "mla_up");
    CHECK_EQ_I((long long)json_array_size(json_object_get(m, "inferred")), 2);
    json_decref(m);
    /* the defaults, given: they do not fit, and stay */
    m = measured_answer(DSV3_REQ(", \"zero\": 0}, \"schedule\": \"dualpipev\", \"mbs\": 1, "
                                 "\"recompute\": \"none\""));
    CHECK(json_is_false(json_object_get(json_object_get(m, "config"), "feasible")));
    CHECK(json_object_get(m, "inferred") == NULL);
    json_decref(m);
#undef DSV3_REQ
}

static void t_maxtext_remat_names(void)
{
    /* MaxText's name policies by request (docs/model.md F-RC-MAXTEXT) */
#define TPU "\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v6e\"}, " \
        "\"devices\": 64, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 1048576}"
#define MC(remat) "\"measured\": {\"config\": {\"parallel\": {\"fsdp\": 64}, \"recompute\": \"maxtext\", " \
              "\"remat\": " remat "}, \"step_time_s\": 1}"
    /* "remat" only with "maxtext" */
    expect_error(search_sync, "{" TPU ", \"measured\": {\"config\": {\"parallel\": {\"fsdp\": 64}, "
                 "\"recompute\": \"full\", \"remat\": {}}, \"step_time_s\": 1}}", 422, "/measured/config/remat");
    /* the layer input cannot be recomputed: it is where recompute starts */
    expect_error(search_sync, "{" TPU ", " MC("{\"decoder_layer_input\": \"remat\"}") "}", 422,
                 "/measured/config/remat/decoder_layer_input");
    /* one choice per family */
    expect_error(search_sync, "{" TPU ", " MC("{\"query_proj\": \"offload\", \"value_proj\": \"device\"}") "}",
                 422, "/measured/config/remat/value_proj");
    expect_error(search_sync, "{" TPU ", " MC("{\"attention_out\": \"offload\"}") "}", 422,
                 "/measured/config/remat/attention_out");
    expect_error(search_sync, "{" TPU ", " MC("{\"context\": \"host\"}") "}", 422,
                 "/measured/config/remat/context");
    /* two different custom policies in one request */
    expect_error(search_sync, "{" TPU ", " MC("{\"context\": \"device\"}") ", \"search\": {\"fix\": "
                 "{\"recompute\": \"maxtext\", \"remat\": {\"context\": \"offload\"}}}}", 422,
                 "/search/fix/remat");
    /* offloading on a chip whose host link is unknown: no such configuration */
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\", "
                 "\"host_bw_bytes_s\": 0}, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, "
                 "\"devices\": 64, " MC("{\"query_proj\": \"offload\"}") "}", 422, "/measured/config");
    /* a MaxText custom policy, echoed with the families it keeps; its
     * MaxText recipe sets the per-tensor switches */
    api_status st;
    api_status_init(&st);
    json_t *r = J("{" TPU ", " MC("{\"decoder_layer_input\": \"offload\", \"query_proj\": \"offload\", "
                  "\"key_proj\": \"offload\", \"value_proj\": \"offload\"}") "}");
    json_t *res = api_search(r, &st, NULL, NULL);
    CHECK(res != NULL);
    json_t *mc = json_object_get(json_object_get(res, "measured"), "config");
    CHECK_STR(json_string_value(json_object_get(mc, "recompute")), "maxtext");
    json_t *rm = json_object_get(mc, "remat");
    CHECK_STR(json_string_value(json_object_get(rm, "qkv_proj")), "offload");
    CHECK_STR(json_string_value(json_object_get(rm, "decoder_layer_input")), "offload");
    CHECK_STR(json_string_value(json_object_get(rm, "context")), "remat");
    CHECK(json_real_value(json_object_get(json_object_get(mc, "time_expected"), "offload_s")) >= 0);
    json_t *argv = json_object_get(json_object_get(json_object_get(mc, "recipes"), "maxtext"), "argv");
    int custom = 0, qo = 0, ctx = 0;
    for (size_t i = 0; i < json_array_size(argv); i++) {
        const char *a = json_string_value(json_array_get(argv, i));
        custom += a && !strcmp(a, "remat_policy=custom");
        qo += a && !strcmp(a, "query_proj=offload");
        ctx += a && !strcmp(a, "context=remat");
    }
    CHECK(custom == 1 && qo == 1 && ctx == 1);
    json_decref(res);
    json_decref(r);
    /* the names are part of the cache key */
    char ka[65], kb[65];
    key_of("{" TPU ", " MC("{\"context\": \"device\"}") "}", ka);
    key_of("{" TPU ", " MC("{\"context\": \"offload\"}") "}", kb);
    CHECK(strcmp(ka, kb) != 0 && strcmp(ka, "error") != 0);
#undef MC
#undef TPU
}

/* Two boolean training switches a and b (defaults da, db): a non-boolean
 * is a 422 at its pointer; each is part of the key only when it differs
 * from its default, so a request that states the defaults keeps its key. */
static void bool_switch_pair(const char *a, int da, const char *b, int db)
{
    char req[1024], ptr[64];
    const char *sw[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        snprintf(req, sizeof req, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": "
                 "\"h100-sxm\"}, \"devices\": 64, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": "
                 "1048576, \"%s\": %s}}", sw[i], i ? "\"yes\"" : "1");
        snprintf(ptr, sizeof ptr, "/training/%s", sw[i]);
        expect_error(search_sync, req, 422, ptr);
    }
    const char *tf[2] = {"false", "true"};
    char extra[4][128], k[4][65];
    snprintf(extra[0], sizeof extra[0], "%s", "");
    snprintf(extra[1], sizeof extra[1], ", \"%s\": %s, \"%s\": %s", a, tf[da], b, tf[db]);
    snprintf(extra[2], sizeof extra[2], ", \"%s\": %s", a, tf[!da]);
    snprintf(extra[3], sizeof extra[3], ", \"%s\": %s", b, tf[!db]);
    for (int i = 0; i < 4; i++) {
        snprintf(req, sizeof req, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": "
                 "\"h100-sxm\"}, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576%s}}", extra[i]);
        key_of(req, k[i]);
    }
    CHECK_STR(k[0], k[1]);
    CHECK(strcmp(k[0], k[2]) != 0 && strcmp(k[2], "error") != 0);
    CHECK(strcmp(k[0], k[3]) != 0 && strcmp(k[3], "error") != 0 && strcmp(k[2], k[3]) != 0);
}

static void t_pipeline_send_switches(void)
{
    /* training.pp_overlap_p2p and pp_scatter_gather (F-COMM-PP-1F1B):
     * booleans; part of the key when they differ from the default, the key
     * of a request without them unchanged by the default value */
    bool_switch_pair("pp_overlap_p2p", 1, "pp_scatter_gather", 0);
    /* they reach the engine: an interleaved layout waits for its sends */
    double exposed[2];
    for (int i = 0; i < 2; i++) {
        api_status st;
        api_status_init(&st);
        json_t *r = J(i ? "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                          "\"devices\": 16, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 65536, "
                          "\"pp_overlap_p2p\": false}, \"search\": {\"top_k\": 1, \"fix\": {\"dp\": 1, \"tp\": 8, "
                          "\"pp\": 2, \"sp\": true, \"schedule\": \"interleaved\", \"vpp\": 2, \"mbs\": 1, \"recompute\": \"none\"}}}"
                        : "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                          "\"devices\": 16, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 65536}, "
                          "\"search\": {\"top_k\": 1, \"fix\": {\"dp\": 1, \"tp\": 8, \"pp\": 2, \"sp\": true, "
                          "\"schedule\": \"interleaved\", \"vpp\": 2, \"mbs\": 1, \"recompute\": \"none\"}}}");
        json_t *res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        json_t *c0 = json_array_get(json_object_get(res, "configs"), 0);
        if (!c0) c0 = json_object_get(res, "pinned");
        exposed[i] = json_real_value(json_object_get(
            json_object_get(json_object_get(json_object_get(c0, "time"), "comm"), "pp"), "exposed_s"));
        json_decref(res);
        json_decref(r);
    }
    /* 16 micro-batches x 2 chunks waited for, against the fill and drain */
    CHECK(exposed[0] > 0 && exposed[1] > 8 * exposed[0]);
}

static void t_moe_imbalance(void)
{
    /* training.moe_imbalance (F-MOE-LOAD): at least 1; part of the key
     * when stated, the key of a request without it unchanged by 1 */
    expect_error(search_sync, "{\"model\": {\"preset\": \"mixtral-8x7b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                 "\"devices\": 64, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576, \"moe_imbalance\": 0.5}}",
                 422, "/training/moe_imbalance");
    char k0[65], ki1[65], ki2[65];
    key_of("{\"model\": {\"preset\": \"mixtral-8x7b\"}, " BASE "}", k0);
    key_of("{\"model\": {\"preset\": \"mixtral-8x7b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
           "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576, \"moe_imbalance\": 1}}", ki1);
    key_of("{\"model\": {\"preset\": \"mixtral-8x7b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
           "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576, \"moe_imbalance\": 1.3}}", ki2);
    CHECK_STR(k0, ki1);
    CHECK(strcmp(k0, ki2) != 0 && strcmp(ki2, "error") != 0);
}

static void t_cpu_offload_switches(void)
{
    /* CPU activation offload (F-RC-CPU-OFFLOAD): a boolean search
     * switch; no pipeline parallelism (Megatron refuses it) */
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 64, "
                 "\"search\": {\"cpu_offload\": \"yes\"}}", 422, "/search/cpu_offload");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 64, "
                 "\"measured\": {\"config\": {\"parallel\": {\"dp\": 32, \"pp\": 2}, \"recompute\": "
                 "\"cpu_offload\", \"recompute_layers\": 4}, \"step_time_s\": 1}}", 422, "/measured/config");
    /* MaxText's optimizer offload needs a host link; vocabulary tiling
     * and the offload reach the MaxText recipe */
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\", "
                 "\"host_bw_bytes_s\": 0}, \"devices\": 64, \"training\": {\"seq_len\": 4096, "
                 "\"global_batch_tokens\": 1048576, \"optimizer_offload\": true}}", 422, "/training/optimizer_offload");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v6e\"}, "
                 "\"devices\": 64, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576, "
                 "\"vocab_tiles\": 0}}", 422, "/training/vocab_tiles");
    api_status st;
    api_status_init(&st);
    json_t *r = J("{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v6e\"}, "
                  "\"devices\": 64, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 1048576, "
                  "\"vocab_tiles\": 4, \"optimizer_offload\": true}, \"search\": {\"top_k\": 1}}");
    json_t *res = api_search(r, &st, NULL, NULL);
    CHECK(res != NULL);
    json_t *c0 = json_array_get(json_object_get(res, "configs"), 0);
    CHECK(json_real_value(json_object_get(json_object_get(c0, "memory"), "host_bytes")) > 0);
    json_t *argv = json_object_get(json_object_get(json_object_get(c0, "recipes"), "maxtext"), "argv");
    int tiles = 0, off = 0;
    for (size_t i = 0; i < json_array_size(argv); i++) {
        const char *a = json_string_value(json_array_get(argv, i));
        tiles += a && !strcmp(a, "num_vocab_tiling=4");
        off += a && !strcmp(a, "optimizer_memory_host_offload=true");
    }
    CHECK(tiles == 1 && off == 1);
    json_decref(res);
    json_decref(r);
}

/* The hardware fields of F-TIME-MXU and F-TIME-FP8-ACC: out-of-range values
 * are 422s at their pointers; the presets' values are echoed in the
 * normal form (tpu-v6e's 256-wide MXU, the H100's 0.87), an override
 * replaces the preset's. */
static void t_hardware_mxu_fp8_fields(void)
{
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": "
                 "\"tpu-v6e\", \"matrix_unit_dim\": -1}, \"devices\": 8, \"training\": {\"seq_len\": 4096, "
                 "\"global_batch_tokens\": 1048576}}", 422, "/hardware/matrix_unit_dim");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": "
                 "\"h100-sxm\", \"efficiency\": {\"fp8_bwd_gemm_scale\": 2}}, \"devices\": 8, \"training\": "
                 "{\"seq_len\": 4096, \"global_batch_tokens\": 1048576}}", 422,
                 "/hardware/efficiency/fp8_bwd_gemm_scale");
    const char *req[3] = {
        "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v6e\"}, \"devices\": 8, "
        "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"search\": {\"top_k\": 1}}",
        "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 8, \"search\": {\"top_k\": 1}}",
        "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\", \"efficiency\": "
        "{\"fp8_bwd_gemm_scale\": 0.5}}, \"devices\": 8, \"training\": {\"seq_len\": 4096, "
        "\"global_batch_tokens\": 1048576}, \"search\": {\"top_k\": 1}}"};
    double want[3] = {256, 0.87, 0.5};
    for (int i = 0; i < 3; i++) {
        api_status st;
        api_status_init(&st);
        json_t *r = J(req[i]);
        json_t *res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        json_t *hw = json_object_get(res, "hardware");
        double got = i == 0 ? json_number_value(json_object_get(hw, "matrix_unit_dim"))
                            : json_number_value(json_object_get(json_object_get(hw, "efficiency"),
                                                                "fp8_bwd_gemm_scale"));
        CHECK_NEAR(got, want[i], 1e-12);
        /* GPUs have no matrix unit side: it is not echoed */
        if (i) CHECK(json_object_get(hw, "matrix_unit_dim") == NULL);
        json_decref(res);
        json_decref(r);
    }
}

/* A search that must succeed (checked); the caller releases the answer
 * and the request it returns through *req_out. */
/* A measured configuration whose only data axis is cp and that names no
 * zero stage is sharded over the cp ranks (zero 3), as torchtitan and
 * MaxText run it, where the admitted frameworks that run that are no fewer
 * than those that run replicas; a zero it names is kept. */
static int measured_zero_on(const char *hw, int devices, const char *frameworks, const char *parallel)
{
    char req[640];
    snprintf(req, sizeof req, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"%s\"}, "
             "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"devices\": %d, "
             "\"search\": {\"top_k\": 1%s}, \"measured\": {\"config\": {\"mbs\": 1, \"parallel\": %s}, "
             "\"step_time_s\": 1}}", hw, devices, frameworks, parallel);
    json_t *m = measured_answer(req);
    int z = (int)json_integer_value(json_object_get(json_object_get(json_object_get(m, "config"), "parallel"), "zero"));
    json_decref(m);
    return z;
}

static int measured_zero(int devices, const char *frameworks, const char *parallel)
{
    return measured_zero_on("h100-sxm", devices, frameworks, parallel);
}

static void t_measured_zero_default(void)
{
    CHECK_EQ_I(measured_zero(8, "", "{\"cp\": 8}"), 3);
    CHECK_EQ_I(measured_zero(8, "", "{\"cp\": 8, \"zero\": 0}"), 0);
    /* a replica axis: Megatron's dp x cp, its state replicated where that
     * fits (Llama-3-8B's 18 B a parameter of weights, fp32 gradients and
     * Adam state, 144 GB, on a B200's 192), else the distributed optimizer
     * (zero 1, inferred: 144 GB cannot fit in an H100's 80) */
    CHECK_EQ_I(measured_zero_on("b200", 8, "", "{\"cp\": 4, \"dp\": 2}"), 0);
    CHECK_EQ_I(measured_zero(8, "", "{\"cp\": 4, \"dp\": 2}"), 1);
    /* ... unless only torchtitan is asked for, which never replicates over
     * cp: HSDP, replicas over dp of FSDP over cp (its CI's
     * hsdp+cp_without_dp_shard) */
    CHECK_EQ_I(measured_zero(8, ", \"frameworks\": [\"torchtitan\"]", "{\"cp\": 4, \"dp\": 2}"), 3);
    CHECK_EQ_I(measured_zero(8, "", "{\"cp\": 4, \"fsdp\": 2}"), 0); /* the fsdp axis shards */
    CHECK_EQ_I(measured_zero_on("b200", 8, "", "{\"dp\": 8}"), 0);
    CHECK_EQ_I(measured_zero(8, "", "{\"dp\": 8}"), 1);
    /* a pipelined cp-only layout that only Megatron-LM is asked for: its
     * FSDP needs pp 1 (FW-M1), so the replicas; torchtitan's reading of the
     * same layout shards (FSDP over cp with pp) */
    const char *pipelined = "{\"tp\": 4, \"sp\": true, \"pp\": 2, \"cp\": 4}";
    CHECK_EQ_I(measured_zero(32, ", \"frameworks\": [\"megatron\"]", pipelined), 0);
    CHECK_EQ_I(measured_zero(32, ", \"frameworks\": [\"torchtitan\"]", pipelined), 3);
    /* zero 3 beside an fsdp axis is refused where it is named */
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, " BASE ", \"devices\": 8, "
                 "\"measured\": {\"config\": {\"parallel\": {\"fsdp\": 2, \"cp\": 4, \"zero\": 3}}, "
                 "\"step_time_s\": 1}}", 422, "/measured/config");
}

/* The measured configuration's sp and etp where it names them not
 * (rq_default_sp_etp): on TPUs MaxText alone runs the layout, and only
 * with its activations split over the tensor axis (FW-X7: base.yml maps
 * 'activation_embed' to tensor) and its experts too (FW-X2: 'mlp_moe' to
 * tensor), so sp and etp = tp; on GPUs Megatron-LM runs tp without sp
 * (--sequence-parallel is off unless given) and etp 1, so they stay --
 * but for an MoE model, whose tp Megatron runs only with sp (FW-M3). What
 * is named is kept. Returns the echoed sp, and etp in *etp. */
static int64_t sp_zero; /* the last measured_sp's echoed zero */

static int measured_sp(const char *model, const char *chip, const char *parallel, int64_t *etp)
{
    char req[768];
    snprintf(req, sizeof req, "{\"model\": {\"preset\": \"%s\"}, \"hardware\": {\"preset\": \"%s\"}, "
             "\"devices\": 8, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 131072}, "
             "\"search\": {\"top_k\": 1}, \"measured\": {\"config\": {\"parallel\": %s, "
             "\"recompute\": \"full\"}, \"step_time_s\": 1}}", model, chip, parallel);
    json_t *m = measured_answer(req);
    json_t *par = json_object_get(json_object_get(m, "config"), "parallel");
    int sp = json_is_true(json_object_get(par, "sp"));
    *etp = json_integer_value(json_object_get(par, "etp"));
    sp_zero = json_integer_value(json_object_get(par, "zero"));
    json_decref(m);
    return sp;
}

static void t_measured_sp_default(void)
{
    /* a search's fixed layout likewise (engines.c pinned_config, the
     * answer's "pinned" when nothing fits): an MoE model on a TPU with
     * tensor 2 is MaxText's with sp and etp 2 (64 sequences of 4,096 a
     * rank are far over a v5p's HBM) */
    api_status st;
    api_status_init(&st);
    json_t *r = J("{\"model\": {\"preset\": \"qwen3-30b-a3b\"}, \"hardware\": {\"preset\": \"tpu-v5p\"}, "
                  "\"devices\": 8, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, "
                  "\"search\": {\"top_k\": 1, \"fix\": {\"fsdp\": 4, \"tp\": 2, \"ep\": 2, \"mbs\": 64, "
                  "\"recompute\": \"full\"}}}");
    json_t *res = api_search(r, &st, NULL, NULL);
    CHECK(res != NULL);
    json_t *pin = json_object_get(res, "pinned");
    json_t *par = json_object_get(json_object_get(pin, "config"), "parallel");
    CHECK(par != NULL);
    CHECK_EQ_I(json_integer_value(json_object_get(par, "etp")), 2);
    CHECK(json_is_true(json_object_get(par, "sp")));
    json_t *by = json_object_get(pin, "launchable_by");
    CHECK(json_array_size(by) == 1 && !strcmp(json_string_value(json_array_get(by, 0)), "maxtext"));
    json_decref(res);
    json_decref(r);
    /* sp only where legal: tp 3 does not divide 2,048 tokens, so on GPUs
     * (Megatron: seq_length % tp) a layout named without sp keeps sp 0 (no
     * framework runs it: reported, not refused); on a TPU MaxText splits
     * the embedding instead, 12,288 / 3 = 4,096: sp (PaLM's 12-way model
     * parallelism over sequences of 2,048 is such a layout) */
    for (int tpu = 0; tpu < 2; tpu++) {
        char req[640];
        snprintf(req, sizeof req, "{\"model\": {\"preset\": \"gpt3-175b\"}, \"hardware\": {\"preset\": \"%s\"}, "
                 "\"devices\": 24, \"training\": {\"seq_len\": 2048, \"global_batch_tokens\": 1048576}, "
                 "\"search\": {\"top_k\": 1}, \"measured\": {\"config\": {\"parallel\": {\"fsdp\": 8, "
                 "\"tp\": 3}, \"recompute\": \"full\"}, \"step_time_s\": 1}}", tpu ? "tpu-v5p" : "h100-sxm");
        api_status_init(&st);
        r = J(req);
        res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        par = json_object_get(json_object_get(json_object_get(res, "measured"), "config"), "parallel");
        CHECK(json_is_boolean(json_object_get(par, "sp")) && json_is_true(json_object_get(par, "sp")) == tpu);
        json_decref(res);
        json_decref(r);
    }
    int64_t etp;
    CHECK_EQ_I(measured_sp("llama3-8b", "tpu-v5p", "{\"fsdp\": 2, \"tp\": 4}", &etp), 1);
    CHECK_EQ_I(measured_sp("llama3-8b", "h100-sxm", "{\"fsdp\": 2, \"tp\": 4}", &etp), 0);
    CHECK_EQ_I(measured_sp("llama3-8b", "tpu-v5p", "{\"fsdp\": 2, \"tp\": 4, \"sp\": false}", &etp), 0);
    CHECK_EQ_I(measured_sp("llama3-8b", "tpu-v5p", "{\"fsdp\": 8}", &etp), 0); /* no tensor axis */
    /* a cp-only layout on a TPU: sp, then zero 3 (FW-X6) */
    CHECK_EQ_I(measured_sp("llama3-8b", "tpu-v5p", "{\"tp\": 2, \"cp\": 4}", &etp), 1);
    CHECK_EQ_I(sp_zero, 3);
    CHECK_EQ_I(measured_sp("qwen3-30b-a3b", "tpu-v5p", "{\"fsdp\": 4, \"tp\": 2, \"ep\": 2}", &etp), 1);
    CHECK_EQ_I(etp, 2);
    /* etp 1 named: no TPU framework runs it, and nothing is changed */
    CHECK_EQ_I(measured_sp("qwen3-30b-a3b", "tpu-v5p", "{\"fsdp\": 4, \"tp\": 2, \"ep\": 2, \"etp\": 1}", &etp), 0);
    CHECK_EQ_I(etp, 1);
    /* on a GPU an MoE model's tp needs sp in Megatron-LM too (FW-M3:
     * MoELayer raises without it), and etp 1 is Megatron's */
    CHECK_EQ_I(measured_sp("qwen3-30b-a3b", "h100-sxm", "{\"fsdp\": 4, \"tp\": 2, \"ep\": 2}", &etp), 1);
    CHECK_EQ_I(etp, 1);
}

/* On a TPU a request for a model MaxText merges two layers of (Gemma 2:
 * models/gemma2-9b.yml, 21 decoder layers of a local and a global layer)
 * is weighed with that unit (F-MEM-SCAN-UNIT): its FSDP gathers the pair,
 * 2 x 198,195,200 parameters (t_scan_unit's hand count) in bf16; on a GPU,
 * FSDP2's current and prefetched layer, 2 x 2 bytes of one. */
static void t_request_scan_unit(void)
{
    const char *chips[2] = {"tpu-v6e", "h100-sxm"};
    for (int i = 0; i < 2; i++) {
        char req[640];
        snprintf(req, sizeof req, "{\"model\": {\"preset\": \"gemma2-9b\"}, \"hardware\": {\"preset\": \"%s\"}, "
                 "\"devices\": 256, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 6291456}, "
                 "\"search\": {\"top_k\": 1}, \"measured\": {\"config\": {\"parallel\": {\"fsdp\": 256}, "
                 "\"mbs\": 3, \"recompute\": \"full\"}, \"step_time_s\": 1}}", chips[i]);
        api_status st;
        api_status_init(&st);
        json_t *r = J(req), *res = api_search(r, &st, NULL, NULL);
        CHECK(res != NULL);
        json_t *mem = json_object_get(json_object_get(json_object_get(res, "measured"), "config"), "memory");
        /* 1e-4: mfud's Gemma 2 has two norms a layer of the four (no
         * post-norms: 7,168 parameters a layer, 4e-5 of it) */
        CHECK_NEAR(json_number_value(json_object_get(mem, "weights_bytes")), 2.0 * 2.0 * 198195200.0, 1e-4);
        json_decref(res);
        json_decref(r);
    }
}

/* training.eager_loss (F-MEM-LOGITS-EAGER): torchtitan's alone, named in
 * the normal form, and no fused loss beside it */
static void t_eager_loss(void)
{
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                 "\"devices\": 8, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 131072, "
                 "\"eager_loss\": true, \"cross_entropy_fusion\": true}}", 422, "/training/eager_loss");
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                 "\"devices\": 8, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 131072, "
                 "\"eager_loss\": 1}}", 422, "/training/eager_loss");
    api_status st;
    api_status_init(&st);
    json_t *r = J("{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                  "\"devices\": 8, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 131072, "
                  "\"eager_loss\": true}, \"search\": {\"top_k\": 3}}");
    json_t *res = api_search(r, &st, NULL, NULL);
    CHECK(res != NULL);
    json_t *cfgs = json_object_get(res, "configs");
    CHECK(json_array_size(cfgs) > 0);
    for (size_t i = 0; i < json_array_size(cfgs); i++) {
        json_t *fw = json_object_get(json_array_get(cfgs, i), "frameworks");
        CHECK(json_array_size(fw) == 1 && !strcmp(json_string_value(json_array_get(fw, 0)), "torchtitan"));
    }
    /* the normal form says it (the cache key tells the two apart) */
    json_t *n = api_normalize(r, &st);
    CHECK(n != NULL);
    CHECK(json_is_true(json_object_get(json_object_get(n, "training"), "eager_loss")));
    CHECK(json_object_get(json_object_get(n, "training"), "cross_entropy_fusion") == NULL);
    json_decref(n);
    json_decref(res);
    json_decref(r);
}

static json_t *search_ok(const char *req, json_t **req_out)
{
    api_status st;
    api_status_init(&st);
    *req_out = J(req);
    json_t *res = api_search(*req_out, &st, NULL, NULL);
    CHECK(res != NULL);
    return res;
}

/* A search answer's echoed hardware efficiency, and its top configuration's
 * expected step time (the hardware-field tests below). */
static json_t *echoed_efficiency(json_t *res)
{
    return json_object_get(json_object_get(res, "hardware"), "efficiency");
}

static double top_step_s(json_t *res)
{
    json_t *top = json_array_get(json_object_get(res, "configs"), 0);
    return json_number_value(json_object_get(json_object_get(top, "expected"), "step_time_s"));
}

/* F-TIME-WAVE's gemm_wave_elems: a negative value is a 422 at its pointer;
 * the A100 preset's 108 SMs x 256 x 128 is echoed, TPUs (none) echo
 * nothing, and an override of 0 (no wave term) makes the expected step no
 * slower -- the term only ever costs time. */
static void t_hardware_wave_field(void)
{
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": "
                 "\"a100-80gb\", \"efficiency\": {\"gemm_wave_elems\": -1}}, \"devices\": 8, \"training\": "
                 "{\"seq_len\": 4096, \"global_batch_tokens\": 1048576}}", 422,
                 "/hardware/efficiency/gemm_wave_elems");
    const char *req[3] = {
        "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"a100-80gb\"}, \"devices\": 8, "
        "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"search\": {\"top_k\": 1}}",
        "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"a100-80gb\", \"efficiency\": "
        "{\"gemm_wave_elems\": 0}}, \"devices\": 8, \"training\": {\"seq_len\": 4096, "
        "\"global_batch_tokens\": 1048576}, \"search\": {\"top_k\": 1}}",
        "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v5p\"}, \"devices\": 8, "
        "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"search\": {\"top_k\": 1}}"};
    double step[2] = {0, 0};
    for (int i = 0; i < 3; i++) {
        json_t *r, *res = search_ok(req[i], &r);
        json_t *w = json_object_get(echoed_efficiency(res), "gemm_wave_elems");
        if (i == 0) CHECK_NEAR(json_number_value(w), 108.0 * 256 * 128, 0);
        else CHECK(w == NULL);
        if (i < 2)
            step[i] = top_step_s(res);
        json_decref(res);
        json_decref(r);
    }
    CHECK(step[1] > 0 && step[1] < step[0]);
}

/* F-TIME-GEMM-K's gemm_half_k and fp8_gemm_half_k: a negative value is a
 * 422 at its pointer; the H100 preset echoes its fitted 262 and 458
 * (bench/gemm_k), TPUs nothing; with both 0 a fine-grained MoE in FP8
 * (Qwen3-30B-A3B: experts reduce over 768) runs strictly faster -- the
 * term only ever costs time, and it reaches the engine. */
static void t_hardware_gemm_k_field(void)
{
    expect_error(search_sync, "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": "
                 "\"h100-sxm\", \"efficiency\": {\"fp8_gemm_half_k\": -1}}, \"devices\": 8, \"training\": "
                 "{\"seq_len\": 4096, \"global_batch_tokens\": 1048576}}", 422,
                 "/hardware/efficiency/fp8_gemm_half_k");
    const char *req[3] = {
        "{\"model\": {\"preset\": \"qwen3-30b-a3b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
        "\"devices\": 8, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576, \"dtype\": "
        "\"fp8\"}, \"search\": {\"top_k\": 1}}",
        "{\"model\": {\"preset\": \"qwen3-30b-a3b\"}, \"hardware\": {\"preset\": \"h100-sxm\", "
        "\"efficiency\": {\"gemm_half_k\": 0, \"fp8_gemm_half_k\": 0}}, \"devices\": 8, \"training\": "
        "{\"seq_len\": 4096, \"global_batch_tokens\": 1048576, \"dtype\": \"fp8\"}, \"search\": "
        "{\"top_k\": 1}}",
        "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v5p\"}, \"devices\": 8, "
        "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"search\": {\"top_k\": 1}}"};
    double step[2] = {0, 0};
    for (int i = 0; i < 3; i++) {
        json_t *r, *res = search_ok(req[i], &r);
        json_t *e = echoed_efficiency(res);
        json_t *k16 = json_object_get(e, "gemm_half_k"), *k8 = json_object_get(e, "fp8_gemm_half_k");
        if (i == 0) {
            CHECK_NEAR(json_number_value(k16), 262.0, 0);
            CHECK_NEAR(json_number_value(k8), 458.0, 0);
        } else {
            CHECK(k16 == NULL && k8 == NULL);
        }
        if (i < 2)
            step[i] = top_step_s(res);
        json_decref(res);
        json_decref(r);
    }
    CHECK(step[1] > 0 && step[1] < step[0]);
}

/* training.tp_async_allreduce and grad_accum_fusion (F-COMM-TP-SYNC,
 * F-TIME-WGRAD-ACC): booleans at their pointers; in the key only when off
 * (a request that states the defaults keeps its key), and they reach the
 * engine: TP 8 waits for its backward all-reduces, the unfused
 * accumulation lengthens the compute. */
static void t_legacy_megatron_switches(void)
{
    bool_switch_pair("tp_async_allreduce", 1, "grad_accum_fusion", 1);
    bool_switch_pair("cross_entropy_fusion", 1, "grad_accum_fusion", 1);
    double tp_exp[4], tp_tot[4], compute[4];
    const char *extra[4] = {"", ", \"tp_async_allreduce\": false", ", \"grad_accum_fusion\": false",
                            ", \"cross_entropy_fusion\": false"};
    for (int i = 0; i < 4; i++) {
        char req[1024];
        snprintf(req, sizeof req,
                 "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, "
                 "\"devices\": 8, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 65536%s}, "
                 "\"search\": {\"top_k\": 1, \"fix\": {\"dp\": 1, \"tp\": 8, \"pp\": 1, \"sp\": false, "
                 "\"mbs\": 1, \"recompute\": \"none\"}}}", extra[i]);
        json_t *r, *res = search_ok(req, &r);
        json_t *c0 = json_array_get(json_object_get(res, "configs"), 0);
        json_t *tm = json_object_get(c0, "time");
        json_t *tpj = json_object_get(json_object_get(tm, "comm"), "tp");
        tp_exp[i] = json_real_value(json_object_get(tpj, "exposed_s"));
        tp_tot[i] = json_real_value(json_object_get(tpj, "total_s"));
        compute[i] = json_real_value(json_object_get(tm, "compute_s"));
        json_decref(res);
        json_decref(r);
    }
    CHECK(tp_exp[0] < tp_tot[0]);
    CHECK_NEAR(tp_exp[1], tp_tot[1], 1e-12);
    CHECK_NEAR(tp_tot[1], tp_tot[0], 1e-12);
    CHECK(compute[2] > compute[0]);
    CHECK_NEAR(compute[1], compute[0], 1e-12);
    /* the unfused loss: 16 micro-batches x 40 x 4096 x 128256 / 8 bytes,
     * 12.5 ms at H100's 3.35 TB/s peak, more at its achieved bandwidth */
    CHECK(compute[3] - compute[0] > 16 * 40.0 * 4096 * 128256 / 8 / 3.35e12);
    CHECK_NEAR(tp_tot[3], tp_tot[0], 1e-12);
}

/* training.fp8_recipe (F-TIME-FP8-AMAX): one of Megatron's four names, a
 * 422 at its pointer otherwise; part of the key only in FP8 and when not
 * the default; delayed scaling (the scale with the cast) runs faster than
 * per-tensor current scaling (an amax pass first) and the recipe says
 * which it launches. */
static void t_fp8_recipe(void)
{
#define F8 "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": 8, " \
           "\"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 65536, \"dtype\": \"%s\"%s}, " \
           "\"search\": {\"top_k\": 1, \"fix\": {\"dp\": 1, \"tp\": 8, \"pp\": 1, \"sp\": true, \"mbs\": 1, " \
           "\"recompute\": \"none\"}}}"
    char req[1024], k[5][65];
    snprintf(req, sizeof req, F8, "fp8", ", \"fp8_recipe\": \"e5m2\"");
    expect_error(search_sync, req, 422, "/training/fp8_recipe");
    const char *v[5][2] = {{"fp8", ""}, {"fp8", ", \"fp8_recipe\": \"tensorwise\""},
                           {"fp8", ", \"fp8_recipe\": \"delayed\""}, {"bf16", ""},
                           {"bf16", ", \"fp8_recipe\": \"delayed\""}};
    for (int i = 0; i < 5; i++) {
        snprintf(req, sizeof req, F8, v[i][0], v[i][1]);
        key_of(req, k[i]);
        CHECK(strcmp(k[i], "error") != 0);
    }
    CHECK_STR(k[0], k[1]);
    CHECK(strcmp(k[0], k[2]) != 0);
    CHECK_STR(k[3], k[4]);
    double step[2];
    for (int i = 0; i < 2; i++) {
        snprintf(req, sizeof req, F8, "fp8", i ? ", \"fp8_recipe\": \"delayed\"" : "");
        json_t *r, *res = search_ok(req, &r);
        json_t *c0 = json_array_get(json_object_get(res, "configs"), 0);
        step[i] = json_real_value(json_object_get(json_object_get(c0, "expected"), "step_time_s"));
        json_t *argv = json_object_get(json_object_get(json_object_get(c0, "recipes"), "megatron"), "argv");
        int said = 0;
        for (size_t j = 0; j + 1 < json_array_size(argv); j++)
            said += !strcmp(json_string_value(json_array_get(argv, j)), "--fp8-recipe") &&
                    !strcmp(json_string_value(json_array_get(argv, j + 1)), i ? "delayed" : "tensorwise");
        CHECK_EQ_I(said, 1);
        json_decref(res);
        json_decref(r);
    }
    CHECK(step[1] < step[0] && step[1] > 0.9 * step[0]);
#undef F8
}

static const check_case cases[] = {
    CHECK_CASE(t_sha256_vectors),
    CHECK_CASE(t_cache_key),
    CHECK_CASE(t_errors_with_pointers),
    CHECK_CASE(t_measured_batch),
    CHECK_CASE(t_measured_zero_default),
    CHECK_CASE(t_measured_sp_default),
    CHECK_CASE(t_request_scan_unit),
    CHECK_CASE(t_eager_loss),
    CHECK_CASE(t_overrides),
    CHECK_CASE(t_hardware_wave_field),
    CHECK_CASE(t_hardware_gemm_k_field),
    CHECK_CASE(t_problem_shape),
    CHECK_CASE(t_presets),
    CHECK_CASE(t_search_contract),
    CHECK_CASE(t_why_not),
    CHECK_CASE(t_limits_depth),
    CHECK_CASE(t_limits_sizes),
    CHECK_CASE(t_limits_in_engines),
    CHECK_CASE(t_dualpipev_by_name),
    CHECK_CASE(t_fix_vpp_above_max),
    CHECK_CASE(t_measured_inferred),
    CHECK_CASE(t_measured_mbs_inferred),
    CHECK_CASE(t_measured_inferred_any_stack),
    CHECK_CASE(t_measured_rc_default),
    CHECK_CASE(t_measured_vpp_inferred),
    CHECK_CASE(t_measured_dp_rest),
    CHECK_CASE(t_mtp),
    CHECK_CASE(t_model_ir_keys),
    CHECK_CASE(t_maxtext_policy_names),
    CHECK_CASE(t_hardware_keys),
    CHECK_CASE(t_measured_config_keys),
    CHECK_CASE(t_maxtext_remat_names),
    CHECK_CASE(t_moe_imbalance),
    CHECK_CASE(t_fp8_recipe),
    CHECK_CASE(t_pipeline_send_switches),
    CHECK_CASE(t_legacy_megatron_switches),
    CHECK_CASE(t_cpu_offload_switches),
    CHECK_CASE(t_hardware_mxu_fp8_fields),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
