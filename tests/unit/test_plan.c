/* Answers people act on (issue 11; api/plan.c, api/compare.c): distinct
 * layouts and ties, time and cost to train, no-fit answers with the fewest
 * devices that fit, what-if comparisons. */
#include "check.h"
#include "testutil.h"

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j) fprintf(stderr, "bad test JSON: %s\n", e.text);
    return j;
}

static json_t *search(const char *text, api_status *st)
{
    api_status_init(st);
    json_t *r = J(text);
    json_t *res = api_search_mt(r, st, NULL, NULL, 2);
    if (!res) fprintf(stderr, "search failed: %s %s\n", st->n_errors ? st->errors[0].pointer : "",
                      st->n_errors ? st->errors[0].detail : "");
    json_decref(r);
    return res;
}

static double num(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    return json_number_value(v);
}

/* The API entry a refused request goes through. */
enum via { VIA_NORMALIZE, VIA_SEARCH, VIA_COMPARE };

/* The request `text` refused through `via` (a comparison on `threads`
 * threads) with 422, its first error at `pointer`. */
static void refused_at(enum via via, int threads, const char *text, const char *pointer)
{
    api_status st;
    api_status_init(&st);
    json_t *r = J(text);
    json_t *out = via == VIA_NORMALIZE ? api_normalize(r, &st)
                  : via == VIA_SEARCH  ? api_search(r, &st, NULL, NULL)
                                       : api_compare(r, &st, NULL, NULL, threads, NULL, NULL);
    CHECK(out == NULL);
    CHECK_EQ_I(st.status, 422);
    CHECK_STR(st.n_errors ? st.errors[0].pointer : NULL, pointer);
    json_decref(out);
    json_decref(r);
}

static const char *const AX[] = {"dp", "fsdp", "tp", "ep", "pp", "cp"};

#define L70 "\"model\": {\"preset\": \"llama3-70b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, " \
            "\"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 16777216"

static void t_distinct_layouts(void)
{
    api_status st;

    /* ---- distinct layouts (issue 11 "done when": Llama-3-70B on 1,024 H100,
     * the top 10 are 10 distinct layouts) ---- */
    json_t *res = search("{" L70 "}, \"devices\": 1024, \"search\": {\"top_k\": 10}}", &st);
    CHECK(res != NULL);
    json_t *cfgs = json_object_get(res, "configs");
    CHECK_EQ_I(json_array_size(cfgs), 10);
    int dup = 0, tiers_bad = 0;
    for (size_t i = 0; i < json_array_size(cfgs); i++) {
        json_t *pi = json_object_get(json_array_get(cfgs, i), "parallel");
        for (size_t k = 0; k < i; k++) {
            json_t *pk = json_object_get(json_array_get(cfgs, k), "parallel");
            int same = 1;
            for (int a = 0; a < 6; a++)
                same &= json_integer_value(json_object_get(pi, AX[a])) ==
                        json_integer_value(json_object_get(pk, AX[a]));
            dup += same;
        }
    }
    CHECK_EQ_I(dup, 0);
    /* tiers: a configuration is in the best's tier exactly when its expected
     * interval reaches below the top of the best's (per token: the batch
     * may differ) */
    json_t *c0 = json_array_get(cfgs, 0);
    double hi0 = num(c0, "expected", "step_time_high_s") / num(c0, "global_batch_tokens", NULL);
    /* MFU and throughput carry the same interval, inverted: the slow end of
     * the step is the low end of both (H100's interval, u > 0) */
    double u = num(c0, "expected", "interval_rel");
    CHECK(u > 0);
    CHECK_NEAR(num(c0, "expected", "mfu_low") * (1 + u), num(c0, "expected", "mfu"), 1e-12);
    CHECK_NEAR(num(c0, "expected", "mfu_high"), num(c0, "expected", "mfu") * (1 + u), 1e-12);
    CHECK_NEAR(num(c0, "expected", "tokens_per_s_low") * num(c0, "expected", "step_time_high_s"),
               num(c0, "expected", "tokens_per_s") * num(c0, "expected", "step_time_s"), 1e-6);
    CHECK_NEAR(num(c0, "expected", "tokens_per_s_high") / (1 + u), num(c0, "expected", "tokens_per_s"), 1e-6);
    for (size_t i = 1; i < json_array_size(cfgs); i++) {
        json_t *c = json_array_get(cfgs, i);
        double lo = num(c, "expected", "step_time_low_s") / num(c, "global_batch_tokens", NULL);
        int tie = json_is_true(json_object_get(c, "tie_with_best"));
        tiers_bad += tie != (lo <= hi0);
        tiers_bad += tie != (json_integer_value(json_object_get(c, "tier")) == 1);
    }
    CHECK_EQ_I(tiers_bad, 0);
    CHECK(json_array_size(json_object_get(res, "ties")) >= 1 ||
          !json_is_true(json_object_get(json_array_get(cfgs, 1), "tie_with_best")));
    /* a family's variants are reachable: its variants_search gives them all,
     * and the best of them is the row */
    json_t *vs = json_object_get(c0, "variants_search");
    CHECK(json_is_object(vs));
    long long n_var = (long long)json_integer_value(json_object_get(c0, "variants"));
    CHECK(n_var >= 1);
    {
        char *fix = json_dumps(json_object_get(vs, "fix"), JSON_COMPACT);
        char req[1024];
        snprintf(req, sizeof req,
                 "{" L70 "}, \"devices\": 1024, \"search\": {\"top_k\": 1000, \"distinct\": \"none\", \"fix\": %s}}", fix);
        free(fix);
        api_status s2;
        json_t *all = search(req, &s2);
        CHECK(all != NULL);
        json_t *list = json_object_get(all, "configs");
        CHECK_EQ_I((long long)json_array_size(list), n_var);
        CHECK_NEAR(num(json_array_get(list, 0), "expected", "step_time_s"), num(c0, "expected", "step_time_s"), 1e-12);
        json_decref(all);
    }
    json_decref(res);

    /* distinct "none" keeps every variant: rows of one family may repeat */
    res = search("{" L70 "}, \"devices\": 1024, \"search\": {\"top_k\": 20, \"distinct\": \"none\"}}", &st);
    CHECK(res != NULL);
    CHECK_STR(json_string_value(json_object_get(json_object_get(res, "search"), "distinct")), "none");
    json_decref(res);
    refused_at(VIA_SEARCH, 1, "{" L70 "}, \"devices\": 1024, \"search\": {\"distinct\": \"family\"}}",
               "/search/distinct");
}

static void t_time_and_cost(void)
{
    api_status st;
    json_t *res = NULL;

    /* ---- time and cost to train (hand calculation) ----
     * 15 T tokens at 16,777,216 tokens per step: ceil(894,069.67) = 894,070
     * steps. Wall clock = steps x the expected step; device-hours = 1,024 x
     * hours; cost at 2.50 per device-hour; energy at the H100 SXM's 700 W
     * datasheet TDP (nvidia.com/en-us/data-center/h100) and PUE 1.2:
     * device-hours x 700 W x 1.2 / 1e6 MWh. */
    res = search("{" L70 ", \"tokens\": 15e12}, \"devices\": 1024, \"search\": {\"top_k\": 1},"
                 " \"cost\": {\"price_per_device_hour\": 2.5, \"pue\": 1.2}}", &st);
    CHECK(res != NULL);
    json_t *c0 = json_array_get(json_object_get(res, "configs"), 0);
    json_t *ttt = json_object_get(c0, "time_to_train");
    CHECK(json_is_object(ttt));
    double step = num(c0, "expected", "step_time_s");
    CHECK_NEAR(num(ttt, "steps", NULL), 894070.0, 0);
    double wall = 894070.0 * step, dh = 1024.0 * wall / 3600.0;
    CHECK_NEAR(num(ttt, "wall_clock_days", NULL), wall / 86400.0, 1e-12);
    CHECK_NEAR(num(ttt, "device_hours", NULL), dh, 1e-12);
    CHECK_NEAR(num(ttt, "cost", NULL), dh * 2.5, 1e-12);
    CHECK_NEAR(num(ttt, "power_per_device_w", NULL), 700.0, 0);
    CHECK_NEAR(num(ttt, "energy_mwh", NULL), dh * 700.0 * 1.2 / 1e6, 1e-12);
    CHECK_STR(json_string_value(json_object_get(ttt, "currency")), "USD");
    CHECK(num(ttt, "wall_clock_days_low", NULL) < num(ttt, "wall_clock_days", NULL));
    CHECK(num(ttt, "wall_clock_days_high", NULL) > num(ttt, "wall_clock_days", NULL));
    json_decref(res);
    /* without training.tokens there is no time_to_train; a TPU has no
     * datasheet power, so energy needs the request's */
    res = search("{" L70 "}, \"devices\": 1024, \"search\": {\"top_k\": 1}}", &st);
    CHECK(res && !json_object_get(json_array_get(json_object_get(res, "configs"), 0), "time_to_train"));
    json_decref(res);
    res = search("{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"tpu-v5p\"}, \"devices\": 256,"
                 " \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 4194304, \"tokens\": 1e12},"
                 " \"search\": {\"top_k\": 1}}", &st);
    CHECK(res != NULL);
    ttt = json_object_get(json_array_get(json_object_get(res, "configs"), 0), "time_to_train");
    CHECK(json_is_object(ttt) && !json_object_get(ttt, "energy_mwh") && !json_object_get(ttt, "cost"));
    json_decref(res);
    {
        static const char *const bad[][2] = {
            {"{" L70 ", \"tokens\": -5}, \"devices\": 8}", "/training/tokens"},
            {"{" L70 "}, \"devices\": 8, \"cost\": {\"price_per_device_hour\": -1}}", "/cost/price_per_device_hour"},
            {"{" L70 "}, \"devices\": 8, \"cost\": {\"currency\": \"dollars\"}}", "/cost/currency"},
            {"{" L70 "}, \"devices\": 8, \"cost\": {\"pue\": 0.5}}", "/cost/pue"},
            {"{" L70 "}, \"devices\": 8, \"cost\": {\"prize\": 1}}", "/cost/prize"},
            {"{" L70 "}, \"devices\": 8, \"cost\": 5}", "/cost"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) refused_at(VIA_NORMALIZE, 1, bad[i][0], bad[i][1]);
    }
}

static void t_no_fit(void)
{
    api_status st;
    json_t *res = NULL;

    /* ---- nothing fits (issue 11 "done when": Llama-3-405B on 8 H100) ----
     * 405 B parameters x 16 bytes of weights, gradients and Adam state are
     * 6.5 TB: 8 devices of 85 GB cannot hold them, however sharded. The
     * answer names the closest configuration with its excess and the fewest
     * devices that fit; checked here by searching at that count (something
     * fits) and at the node below it (nothing does). */
    res = search("{\"model\": {\"preset\": \"llama3-405b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": 8,"
                 " \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 16777216}}", &st);
    CHECK(res != NULL);
    CHECK_EQ_I(json_array_size(json_object_get(res, "configs")), 0);
    json_t *nf = json_object_get(res, "no_fit");
    CHECK(json_is_object(nf));
    double excess = num(nf, "excess_bytes", NULL);
    /* at least 6.5 TB / 8 - 85 GB = 725 GB over */
    CHECK(excess > 405e9 * 16 / 8 - 85.1e9);
    CHECK(json_is_object(json_object_get(nf, "closest")));
    CHECK(strstr(json_string_value(json_object_get(nf, "reason")), "fewest that fit") != NULL);
    long long fewest = (long long)json_integer_value(json_object_get(nf, "fewest_devices"));
    CHECK(fewest > 8 && fewest % 8 == 0);
    {
        char req[512];
        snprintf(req, sizeof req,
                 "{\"model\": {\"preset\": \"llama3-405b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": %lld,"
                 " \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 16777216}, \"search\": {\"top_k\": 1}}", fewest);
        api_status s5;
        json_t *at = search(req, &s5);
        CHECK(at && json_array_size(json_object_get(at, "configs")) == 1);
        json_decref(at);
        snprintf(req, sizeof req,
                 "{\"model\": {\"preset\": \"llama3-405b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": %lld,"
                 " \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 16777216}, \"search\": {\"top_k\": 1}}", fewest - 8);
        at = search(req, &s5);
        CHECK(at && json_array_size(json_object_get(at, "configs")) == 0);
        json_decref(at);
    }
    json_decref(res);
}

static void t_what_if_refused(void)
{
    /* A100 has no FP8 peak: that variant is refused, pointing at the fp8
     * value that made it */
    refused_at(VIA_COMPARE, 2,
               "{\"base\": {" L70 ", \"tokens\": 1e12}, \"devices\": 512, \"search\": {\"top_k\": 1},"
               " \"cost\": {\"price_per_device_hour\": 2}},"
               " \"vary\": {\"hardware\": [{\"preset\": \"h100-sxm\"}, {\"preset\": \"b200\"}, {\"preset\": \"a100-80gb\"}],"
               " \"devices\": [256, 512], \"fp8\": [false, true]}}",
               "/vary/fp8/1");
}

static void t_what_if_rows(void)
{
    api_status st;
    json_t *cmp, *out, *rows;
    /* ---- what-if comparisons ----
     * every row is the search it names: the same best configuration and step
     * time as searching that variant alone */
    cmp = J("{\"base\": {" L70 ", \"tokens\": 1e12}, \"devices\": 512, \"search\": {\"top_k\": 1},"
            " \"cost\": {\"price_per_device_hour\": 2}},"
            " \"vary\": {\"hardware\": [{\"preset\": \"h100-sxm\"}, {\"preset\": \"b200\"}], \"devices\": [256, 512]}}");
    api_status_init(&st);
    json_t *computed = json_object();
    out = api_compare(cmp, &st, NULL, NULL, 2, NULL, computed);
    CHECK(out != NULL);
    rows = json_object_get(out, "variants");
    CHECK_EQ_I(json_array_size(rows), 4);
    CHECK_EQ_I(json_object_size(computed), 4);
    static const char *const hw_of[4] = {"h100-sxm", "h100-sxm", "b200", "b200"};
    static const int dev_of[4] = {256, 512, 256, 512};
    int mismatched = 0, fastest = 0;
    double best_tps = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *rw = json_array_get(rows, i);
        CHECK_STR(json_string_value(json_object_get(rw, "hardware")), hw_of[i]);
        CHECK_EQ_I(json_integer_value(json_object_get(rw, "devices")), dev_of[i]);
        char req[512];
        snprintf(req, sizeof req, "{" L70 ", \"tokens\": 1e12}, \"devices\": %d, \"hardware\": {\"preset\": \"%s\"},"
                 " \"search\": {\"top_k\": 1}, \"cost\": {\"price_per_device_hour\": 2}}", dev_of[i], hw_of[i]);
        api_status s6;
        json_t *alone = search(req, &s6);
        json_t *b = json_array_get(json_object_get(alone, "configs"), 0);
        mismatched += num(b, "expected", "step_time_s") != num(rw, "step_time_s", NULL);
        mismatched += num(b, "expected", "tokens_per_s") != num(rw, "tokens_per_s", NULL);
        /* the row's key is the key of that search */
        json_t *ar = J(req);
        json_t *norm = api_normalize(ar, &s6);
        char key[65] = "";
        if (norm) api_cache_key(norm, key);
        mismatched += strcmp(key, json_string_value(json_object_get(rw, "search_id"))) != 0;
        json_decref(norm);
        json_decref(ar);
        json_decref(alone);
        CHECK_NEAR(num(rw, "tokens_per_s_per_device", NULL), num(rw, "tokens_per_s", NULL) / dev_of[i], 1e-12);
        if (num(rw, "tokens_per_s", NULL) > best_tps) {
            best_tps = num(rw, "tokens_per_s", NULL);
            fastest = (int)i + 1;
        }
        CHECK(json_is_false(json_object_get(rw, "cached")));
    }
    CHECK_EQ_I(mismatched, 0);
    CHECK_EQ_I(json_integer_value(json_object_get(out, "fastest")), fastest);
    /* known results are used, not searched again */
    json_t *known = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(computed, k, v) json_object_set(known, k, json_object_get(v, "result"));
    json_t *again = json_object();
    json_t *out2 = api_compare(cmp, &st, NULL, NULL, 1, known, again);
    CHECK(out2 != NULL);
    CHECK_EQ_I(json_object_size(again), 0);
    CHECK(json_is_true(json_object_get(json_array_get(json_object_get(out2, "variants"), 0), "cached")));
    /* the normal form names the variants by key: one key per comparison */
    json_t *norm = api_compare_normalize(cmp, &st);
    CHECK(norm && json_array_size(json_object_get(norm, "variant_keys")) == 4);
    json_decref(norm);
    char *table = api_compare_table(out);
    CHECK(table && strstr(table, "b200") && strstr(table, "fastest: #"));
    free(table);
    json_decref(out2);
    json_decref(again);
    json_decref(known);
    json_decref(computed);
    json_decref(out);
    json_decref(cmp);
}

static void t_what_if_bad(void)
{
    /* bad comparisons: pointers into vary */
    static const char *const bad[][2] = {
        {"{\"base\": {" L70 "}, \"devices\": 8}, \"vary\": {}}", "/vary"},
        {"{\"base\": {" L70 "}, \"devices\": 8}, \"vary\": {\"colour\": [1]}}", "/vary/colour"},
        {"{\"base\": {" L70 "}, \"devices\": 8}, \"vary\": {\"devices\": [8, 0]}}", "/vary/devices/1"},
        {"{\"base\": {" L70 "}, \"devices\": 8}, \"vary\": {\"fp8\": [1]}}", "/vary/fp8/0"},
        {"{\"base\": {" L70 "}, \"devices\": 8}, \"vary\": {\"hardware\": [{\"preset\": \"h900\"}]}}", "/vary/hardware/0"},
        {"{\"vary\": {\"devices\": [8]}}", "/base"},
        {"{\"base\": {" L70 "}, \"devices\": 8}, \"vary\": {\"devices\": [8]}, \"x\": 1}", "/x"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) refused_at(VIA_COMPARE, 1, bad[i][0], bad[i][1]);
}

static const check_case cases[] = {
    CHECK_CASE(t_distinct_layouts),
    CHECK_CASE(t_time_and_cost),
    CHECK_CASE(t_no_fit),
    CHECK_CASE(t_what_if_refused),
    CHECK_CASE(t_what_if_rows),
    CHECK_CASE(t_what_if_bad),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}

