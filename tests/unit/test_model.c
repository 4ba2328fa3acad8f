/* Model IR: parameter counts against published totals, forward FLOPs
 * against Korthikanti et al. eq. 7, the attention-pair count. */
#include "check.h"
#include "testutil.h"

static void params(const char *name, double total, double active, double rel)
{
    mfu_model m;
    mfu_params p;
    CHECK(load_model(name, &m) == 0);
    mfu_model_params(&m, &p);
    fprintf(stderr, "  %-16s total %.4g active %.4g\n", name, p.total, p.active);
    if (total > 0) CHECK_NEAR(p.total, total, rel);
    if (active > 0) CHECK_NEAR(p.active, active, rel);
}

/* GPT-3 175B's shape (Narayanan et al. 2021; Korthikanti et al. 2022) */
static const double l = 96, h = 12288, V = 50257, s = 2048;

static void t_param_counts(void)
{
    /* GPT-3 175B, Narayanan et al. 2021 eq. 2:
     * P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)), l=96, h=12288, V=50257, s=2048 */
    double p_eq2 = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    params("gpt3-175b", p_eq2, 0, 0.01);
    /* published totals (model cards / papers) */
    params("llama3-8b", 8.03e9, 8.03e9, 0.01);
    params("llama3-70b", 70.6e9, 0, 0.01);
    params("llama3-405b", 405.9e9, 0, 0.01);
    params("mixtral-8x7b", 46.7e9, 12.9e9, 0.01);   /* Mistral AI: 46.7B total, 12.9B active */
    params("mixtral-8x22b", 141e9, 39e9, 0.01);
    params("deepseek-v3", 671e9, 0, 0.01);           /* DeepSeek-V3 report: 671B, MTP excluded */
}

static void t_deepseek_v3_active(void)
{
    {
        /* "37B activated" (DeepSeek-V3 report, MTP excluded). Hand count:
         * MLA per layer q_a 7168*1536 + q_b 1536*128*192 + kv_a 7168*576 +
         * kv_b 512*128*256 + o 128*128*7168 = 187.1M; MoE layer active:
         * router 7168*256 + 9 experts (8 routed + 1 shared) * 3*7168*2048 =
         * 398.2M; dense layer MLP 3*7168*18432 = 396.4M; so 58*585.3M +
         * 3*583.5M = 35.70B in the layers, + 0.93B LM head = 36.63B without
         * the input-embedding lookup (a table read, no computation), 37.55B
         * with it. The published "37B" has two significant figures: the
         * count without the lookup rounds to it; check that and the hand
         * count to 0.1 %. */
        mfu_model m;
        mfu_params p;
        CHECK(load_model("deepseek-v3", &m) == 0);
        mfu_model_params(&m, &p);
        double act_no_lookup = p.active - 129280.0 * 7168.0;
        CHECK_EQ_I((long long)(act_no_lookup / 1e9 + 0.5), 37);
        double hand = 58 * (187.1e6 + 398.2e6) + 3 * (187.1e6 + 396.4e6) + 129280.0 * 7168.0;
        CHECK_NEAR(act_no_lookup, hand, 0.001);
        CHECK_EQ_I(m.n_runs, 2);
        CHECK_EQ_I(m.runs[0].count, 3);   /* first_k_dense_replace = 3 */
        CHECK_EQ_I(m.runs[1].count, 58);
    }
}

static void t_flops_korthikanti_eq7(void)
{
    /* Korthikanti et al. 2022 eq. 7: model FLOPs per iteration
     * 72 B L s h^2 (1 + s/(6h) + V/(12 h L)), "full" attention; per token
     * forward that is 24 L h^2 (1 + s/(6h) + V/(12hL)). GPT-3 shape. */
    {
        mfu_model m;
        CHECK(load_model("gpt3-175b", &m) == 0);
        double eq7 = 24 * l * h * h * (1 + s / (6 * h) + V / (12 * h * l));
        CHECK_NEAR(mfu_model_flops_per_token_fwd(&m, 2048, MFU_CONV_FULL), eq7, 0.005);
        /* "none" is 6NT-style: no attention core -> 24 l h^2 (1 + V/(12hL)) */
        double none = 24 * l * h * h * (1 + V / (12 * h * l));
        CHECK_NEAR(mfu_model_flops_per_token_fwd(&m, 2048, MFU_CONV_NONE), none, 0.005);
        /* causal halves the s^2 term (up to the diagonal): 4 l h (s+1)/2 */
        double causal = none + 4 * l * h * (s + 1) / 2;
        CHECK_NEAR(mfu_model_flops_per_token_fwd(&m, 2048, MFU_CONV_CAUSAL), causal, 1e-9);
    }
}

static void t_attention_pairs(void)
{
    /* attention pairs: causal s(s+1)/2; full s^2; window w < s: w(w+1)/2 + (s-w) w */
    CHECK_NEAR(mfu_attn_pairs(8, 0, MFU_CONV_CAUSAL), 36, 1e-12);
    CHECK_NEAR(mfu_attn_pairs(8, 0, MFU_CONV_FULL), 64, 1e-12);
    CHECK_NEAR(mfu_attn_pairs(8, 3, MFU_CONV_CAUSAL), 6 + 5 * 3, 1e-12);
    CHECK_NEAR(mfu_attn_pairs(8, 3, MFU_CONV_FULL), 24, 1e-12);
    CHECK(mfu_attn_pairs(8, 0, MFU_CONV_NONE) == 0);
    /* chunked attention (Llama 4): 10 tokens in chunks of 4 = blocks of 4,
     * 4, 2, each causal on its own: 10 + 10 + 3 = 23 pairs; full: 16 + 16 +
     * 4 = 36; a window of 2 inside the chunks: (1 + 2 + 2 + 2) x 2 + (1 + 2)
     * = 17; chunk >= s is no chunking */
    CHECK_NEAR(mfu_attn_pairs_chunked(10, 0, 4, MFU_CONV_CAUSAL), 23, 1e-12);
    CHECK_NEAR(mfu_attn_pairs_chunked(10, 0, 4, MFU_CONV_FULL), 36, 1e-12);
    CHECK_NEAR(mfu_attn_pairs_chunked(10, 2, 4, MFU_CONV_CAUSAL), 17, 1e-12);
    CHECK_NEAR(mfu_attn_pairs_chunked(8, 0, 8, MFU_CONV_CAUSAL), 36, 1e-12);
    CHECK_NEAR(mfu_attn_pairs_chunked(8, 0, 0, MFU_CONV_CAUSAL), 36, 1e-12);
    /* Gated DeltaNet per token per head (F-OP-GDN), C = 64, dk = dv = 128:
     * executed 6 C dk + 4 C dv + C^2/3 + 6 dk dv = 49152 + 32768 + 1365.33 +
     * 98304 = 181589.33; useful halves the two block terms: 142629.33 */
    CHECK_NEAR(mfu_gdn_flops_per_token_head(64, 128, 128, 0), 49152 + 32768 + 4096.0 / 3 + 98304, 1e-12);
    CHECK_NEAR(mfu_gdn_flops_per_token_head(64, 128, 128, 1), 40960 + 4096.0 / 3 + 98304, 1e-12);
}

static void t_gla_linear_in_seq(void)
{
    /* GLA is linear in s: doubling s doubles nothing per token beyond the chunk */
    {
        mfu_model m;
        CHECK(load_model("gla-1.3b", &m) == 0);
        double f4k = mfu_model_flops_per_token_fwd(&m, 4096, MFU_CONV_CAUSAL);
        double f32k = mfu_model_flops_per_token_fwd(&m, 32768, MFU_CONV_CAUSAL);
        CHECK_NEAR(f32k, f4k, 1e-12);
        /* while softmax attention grows with s */
        mfu_model ll;
        CHECK(load_model("llama3-8b", &ll) == 0);
        CHECK(mfu_model_flops_per_token_fwd(&ll, 32768, MFU_CONV_CAUSAL) >
              1.2 * mfu_model_flops_per_token_fwd(&ll, 4096, MFU_CONV_CAUSAL));
    }
}

static const check_case cases[] = {
    CHECK_CASE(t_param_counts),          CHECK_CASE(t_deepseek_v3_active), CHECK_CASE(t_flops_korthikanti_eq7),
    CHECK_CASE(t_attention_pairs),       CHECK_CASE(t_gla_linear_in_seq),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
