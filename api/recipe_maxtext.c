/* api/recipe_maxtext.c -- the MaxText launch recipe: base.yml overrides
 * (api/recipe.c says which version every key is read from). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe_int.h"

/* ---- MaxText -----------------------------------------------------------------
 * key=value overrides of src/maxtext/configs/base.yml (main, 2026). */

typedef struct mx_model {
    const char *name;
    int64_t d, L, heads, kv;   /* kv: 0 for MLA */
    int64_t ffn;               /* dense layers' (0: none) */
    int64_t moe_ffn, experts, topk;
    int64_t vocab;             /* the yml's, maybe padded */
    int64_t window;
    int64_t layer_unit;        /* mfud layers per MaxText decoder layer (gemma2: 2) */
} mx_model;

/* src/maxtext/configs/models/<name>.yml */
static const mx_model MX_MODELS[] = {
    {"llama3-8b", 4096, 32, 32, 8, 14336, 0, 0, 0, 128256, 0, 1},
    {"llama3-70b", 8192, 80, 64, 8, 28672, 0, 0, 0, 128256, 0, 1},
    {"llama3-405b", 16384, 126, 128, 8, 53248, 0, 0, 0, 128256, 0, 1},
    {"gpt3-175b", 12288, 96, 96, 96, 49152, 0, 0, 0, 50304, 0, 1},
    {"mistral-7b", 4096, 32, 32, 8, 14336, 0, 0, 0, 32000, 0, 1},
    {"mixtral-8x7b", 4096, 32, 32, 8, 0, 14336, 8, 2, 32000, 0, 1},
    {"mixtral-8x22b", 6144, 56, 48, 8, 0, 16384, 8, 2, 32768, 0, 1},
    {"gemma-7b", 3072, 28, 16, 16, 24576, 0, 0, 0, 256128, 0, 1},
    {"gemma2-2b", 2304, 26, 8, 4, 9216, 0, 0, 0, 256128, 4096, 2},
    {"gemma2-9b", 3584, 42, 16, 8, 14336, 0, 0, 0, 256128, 4096, 2},
    {"gemma2-27b", 4608, 46, 32, 16, 36864, 0, 0, 0, 256128, 4096, 2},
    {"deepseek2-16b", 2048, 27, 16, 0, 10944, 1408, 64, 6, 102400, 0, 1},
    {"deepseek3-671b", 7168, 61, 128, 0, 18432, 2048, 256, 8, 129280, 0, 1},
    {"qwen3-8b", 4096, 36, 32, 8, 12288, 0, 0, 0, 151936, 0, 1},
    {"qwen3-30b-a3b", 2048, 48, 32, 4, 0, 768, 128, 8, 151936, 0, 1},
    {"qwen3-235b-a22b", 4096, 94, 64, 4, 0, 1536, 128, 8, 151936, 0, 1},
};

static int mx_matches(const mx_model *x, const model_view *v)
{
    if (x->d != v->m->d_model || x->L != v->L || x->heads != v->at->n_heads) return 0;
    if ((x->kv == 0) != (v->at->kind == MFU_ATTN_MLA)) return 0;
    if (x->kv && x->kv != v->at->n_kv_heads) return 0;
    if ((x->ffn != 0) != (v->dense != NULL) || (v->dense && v->dense->ffn_dim != x->ffn)) return 0;
    if ((x->experts != 0) != (v->moe != NULL)) return 0;
    if (v->moe && (v->moe->n_experts != x->experts || v->moe->top_k != x->topk ||
                   v->moe->expert_ffn_dim != x->moe_ffn))
        return 0;
    return 1;
}

int64_t rcp_maxtext_layer_unit(const mfu_system *sys)
{
    model_view v;
    rcp_model_view_of(sys, &v);
    /* a merged pair is a local and a global layer: the model must have
     * windowed layers, of the yml's window (mx_matches does not look) */
    for (size_t i = 0; i < sizeof MX_MODELS / sizeof *MX_MODELS; i++)
        if (mx_matches(&MX_MODELS[i], &v))
            return MX_MODELS[i].layer_unit > 1 && v.windowed > 0 && v.window == MX_MODELS[i].window
                       ? MX_MODELS[i].layer_unit
                       : 1;
    return 1;
}

/* A decimal that MaxText turns back into exactly `num` sequences over
 * `devices` (configs/types.py: int(num_devices * per_device_batch_size)). */
static void per_device_batch(int64_t num, int64_t devices, char *out, size_t n)
{
    double x = (double)num / (double)devices;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, x);
        double y = strtod(out, NULL);
        if ((int64_t)(y * (double)devices) == num && fabs(y - x) <= 1e-12 * x) return;
    }
    snprintf(out, n, "%.17g", nextafter(x, INFINITY));
}

/* MaxText's mesh: ICI within a slice, DCN across slices, filled from the
 * innermost axis out (mfud's placement: tp, cp, ep, fsdp, dp, pp; the
 * expert axis is the innermost part of fsdp, FW-X2). The slice is the
 * largest whole divisor of the devices within the ICI domain that the axes
 * fill exactly (0: none). */
enum { X_TP, X_CP, X_EP, X_FSDP, X_DP, X_PP, X_N };
static const char *const MX_AXIS_NAMES[X_N] = {"tensor", "context", "expert", "fsdp", "data", "pipeline"};
typedef struct mx_mesh {
    int64_t axis[X_N], ici[X_N], dcn[X_N];
    int64_t slice, domain;
} mx_mesh;

static void mx_mesh_of(const mfu_system *sys, const mfu_config *c, mx_mesh *x)
{
    int64_t D = sys->devices, ep = c->ax[MFU_AX_EP];
    int64_t axis[X_N] = {c->ax[MFU_AX_TP], c->ax[MFU_AX_CP], ep, c->ax[MFU_AX_FSDP] / ep, c->ax[MFU_AX_DP],
                         c->ax[MFU_AX_PP]};
    memcpy(x->axis, axis, sizeof axis);
    x->slice = 0;
    x->domain = sys->hw->n_tiers > 0 ? sys->hw->tiers[0].domain_size : D;
    for (int64_t s = x->domain < D ? x->domain : D; s >= 1 && !x->slice; s--) {
        if (D % s) continue;
        int64_t rem = s;
        for (int a = 0; a < X_N; a++) {
            int64_t g = axis[a], r = rem;
            while (r) { int64_t t = g % r; g = r; r = t; } /* gcd(axis, rem) */
            x->ici[a] = g;
            x->dcn[a] = axis[a] / g;
            rem /= g;
        }
        if (rem == 1) x->slice = s;
    }
}

/* MaxText overrides: the mesh's ici_* and dcn_* degrees. */
static void mx_mesh_args(json_t *argv, json_t *notes, const mx_mesh *x, int64_t D)
{
    const int64_t *axis = x->axis, *ici = x->ici, *dcn = x->dcn;
    int64_t slice = x->slice, domain = x->domain;
    const char *const *NAMES = MX_AXIS_NAMES;
    for (int a = 0; a < X_N; a++) {
        char key[64];
        snprintf(key, sizeof key, "ici_%s_parallelism", NAMES[a]);
        rcp_kv_int(argv, key, ici[a]);
    }
    for (int a = 0; a < X_N; a++) {
        char key[64];
        snprintf(key, sizeof key, "dcn_%s_parallelism", NAMES[a]);
        rcp_kv_int(argv, key, dcn[a]);
    }
    if (slice < domain && slice < D) {
        /* an axis the estimate put on ICI (its span fits the domain) may
         * cross slices here */
        int64_t span = 1;
        for (int a = 0; a < X_N; a++) {
            span *= axis[a];
            if (dcn[a] > 1 && span <= domain) {
                rcp_note(notes, "The %s axis crosses slices (DCN) in this layout; the estimate puts it on ICI.",
                         NAMES[a]);
                break;
            }
        }
    }
}

/* MaxText overrides: the model, by MaxText's name when it has the shape,
 * else as base_* keys on the nearest decoder block. */
static void mx_model_args(json_t *argv, json_t *notes, const model_view *v, const mx_model *known)
{
    const mfu_model *m = v->m;
    if (known) {
        rcp_kv_str(argv, "model_name", known->name);
        if (known->vocab != m->vocab)
            rcp_note(notes, "MaxText's %s config has a vocabulary of %lld; the estimate counts %lld.", known->name,
                     (long long)known->vocab, (long long)m->vocab);
        if (known->window != (v->windowed ? v->window : 0))
            rcp_note(notes, "MaxText's %s config has %s; the estimate assumes %s.", known->name,
                     known->window ? "a sliding window" : "no sliding window",
                     v->windowed ? "one" : "none");
    } else {
        const char *block = v->at->kind == MFU_ATTN_MLA ? "deepseek"
                          : v->moe                      ? "mixtral"
                          : m->position == MFU_POS_LEARNED ? "gpt3" : "llama2";
        rcp_kv_str(argv, "decoder_block", block);
        rcp_kv_int(argv, "base_emb_dim", m->d_model);
        rcp_kv_int(argv, "base_num_query_heads", v->at->n_heads);
        rcp_kv_int(argv, "base_num_decoder_layers", v->L);
        rcp_kv_int(argv, "base_mlp_dim", v->dense ? v->dense->ffn_dim : v->moe->expert_ffn_dim);
        rcp_kv_int(argv, "vocab_size", m->vocab);
        if (v->at->kind == MFU_ATTN_MLA) {
            rcp_kv_int(argv, "base_num_kv_heads", v->at->n_heads);
            rcp_kv_int(argv, "q_lora_rank", v->at->q_lora_rank);
            rcp_kv_int(argv, "kv_lora_rank", v->at->kv_lora_rank);
            rcp_kv_int(argv, "qk_nope_head_dim", v->at->qk_nope_head_dim);
            rcp_kv_int(argv, "qk_rope_head_dim", v->at->qk_rope_head_dim);
            rcp_kv_int(argv, "v_head_dim", v->at->v_head_dim);
        } else {
            rcp_kv_int(argv, "base_num_kv_heads", v->at->n_kv_heads);
            rcp_kv_int(argv, "head_dim", v->at->head_dim);
        }
        if (v->moe) {
            rcp_kv_int(argv, "num_experts", v->moe->n_experts);
            rcp_kv_int(argv, "num_experts_per_tok", v->moe->top_k);
            rcp_kv_int(argv, "base_moe_mlp_dim", v->moe->expert_ffn_dim);
            if (v->moe->n_shared_experts) rcp_kv_int(argv, "shared_experts", v->moe->n_shared_experts);
            if (v->lead_dense > 0) rcp_kv_int(argv, "first_num_dense_layers", v->lead_dense);
            else if (v->lead_dense < 0)
                rcp_note(notes, "MaxText places dense layers only before the MoE ones (first_num_dense_layers); "
                                "this model interleaves them.");
        }
        if (!(v->gated && v->act == MFU_ACT_SILU)) {
            const char *a = v->act == MFU_ACT_GELU ? "gelu" : v->act == MFU_ACT_RELU ? "relu" : "silu";
            char acts[64];
            snprintf(acts, sizeof acts, v->gated ? "[%s,linear]" : "[%s]", a);
            rcp_kv_str(argv, "mlp_activations", acts);
        }
        if (m->tie_embeddings) rcp_kv_str(argv, "logits_via_embedding", "true");
        if (m->position == MFU_POS_LEARNED) rcp_kv_int(argv, "trainable_position_size", m->max_positions);
        if (v->windowed)
            rcp_note(notes, "Sliding windows (%lld tokens) are set per decoder block in MaxText "
                            "(sliding_window_size with gemma2/gemma3/gpt_oss blocks); %s has none.",
                     (long long)v->window, block);
        rcp_note(notes, "No MaxText model config has this shape: the base_* keys describe it with the %s "
                        "decoder block, whose norms, position encoding and biases are that block's.", block);
    }
    /* F-OP-MTP: base.yml mtp_num_layers (0 unless set) */
    if (m->mtp_layers > 0) rcp_kv_int(argv, "mtp_num_layers", m->mtp_layers);
}

/* MaxText overrides: the remat policy (and a custom one's per-tensor
 * switches). */
static void mx_remat(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c)
{
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    const char *remat = "full";
    if (c->recompute == MFU_RC_MINIMAL) remat = "minimal_with_context";
    else if (c->recompute == MFU_RC_SAVE_DOT_EXCEPT_MLP) remat = "save_dot_with_context_except_mlp";
    else if (rp->kind == MFU_RCK_NONE) {
        remat = "minimal_with_context";
        rcp_note(notes, "MaxText has no save-everything policy (remat_policy none wraps each layer in nn.remat "
                        "with nothing saved, layers/decoders.py get_remat_policy); minimal_with_context, the closest, "
                        "still recomputes norms and activations, which the estimate does not.");
    }
    if (rp->kind == MFU_RCK_FULL && c->recompute_layers > 0)
        rcp_note(notes, "MaxText's full policy recomputes every layer; the estimate recomputes %lld per stage.",
                 (long long)c->recompute_layers);
    if (c->recompute == MFU_RC_QKV_OFFLOADED) remat = "qkv_proj_offloaded";
    else if (c->recompute == MFU_RC_MINIMAL_OFFLOADED) remat = "minimal_offloaded";
    else if (c->recompute == MFU_RC_MAXTEXT) remat = "custom";
    rcp_kv_str(argv, "remat_policy", remat);
    if (c->recompute == MFU_RC_MAXTEXT) {
        /* base.yml's per-tensor switches, every name of each family */
        static const struct {
            const char *name;
            unsigned mx;
        } TENSORS[] = {{"decoder_layer_input", MFU_MX_INPUT}, {"query_proj", MFU_MX_QKV}, {"key_proj", MFU_MX_QKV},
                       {"value_proj", MFU_MX_QKV},           {"qkv_proj", MFU_MX_QKV},  {"context", MFU_MX_CONTEXT},
                       {"out_proj", MFU_MX_OUT},             {"mlpwi_0", MFU_MX_WI},    {"mlpwi_1", MFU_MX_WI},
                       {"mlpwo", MFU_MX_WO}};
        for (size_t i = 0; i < sizeof TENSORS / sizeof *TENSORS; i++)
            rcp_kv_str(argv, TENSORS[i].name, rp->mx_device & TENSORS[i].mx ? "device"
                                          : rp->mx_host & TENSORS[i].mx ? "offload" : "remat");
    }
}

/* MaxText overrides: precision, attention kernel, overlap notes and the
 * throughput-run switches. */
static void mx_tail(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                    const model_view *v)
{
    int64_t tp = c->ax[MFU_AX_TP], ep = c->ax[MFU_AX_EP];
    switch (sys->train.dtype) {
    case MFU_DT_FP32: rcp_kv_str(argv, "dtype", "float32"); break;
    case MFU_DT_FP16: rcp_kv_str(argv, "dtype", "float16"); break;
    default: rcp_kv_str(argv, "dtype", "bfloat16"); break;
    }
    if (sys->train.dtype == MFU_DT_FP8) {
        /* layers/quantizations.py: fp8_full is Qwix's FP8 rule set */
        rcp_kv_str(argv, "quantization", "fp8_full");
        rcp_kv_str(argv, "use_qwix_quantization", "true");
        rcp_note(notes, "FP8 runs through Qwix (quantization fp8_full); the estimate uses the chip's FP8 peak.");
    }
    if (sys->train.grad_bf16) rcp_kv_str(argv, "grad_dtype", "bfloat16");
    if (sys->train.moments_bf16) {
        rcp_kv_str(argv, "mu_dtype", "bfloat16");
        rcp_note(notes, "MaxText's mu_dtype sets the first Adam moment only; the second stays in weight_dtype "
                        "(float32), against the estimate's bf16.");
    }
    rcp_kv_str(argv, "attention", sys->train.attn_impl == MFU_ATTN_UNFUSED ? "dot_product" : "flash");
    if (c->sp && tp > 1)
        rcp_note(notes, "MaxText has no sequence-parallel switch: base.yml's logical_axis_rules split the "
                        "activations' embedding over the tensor axis ('activation_embed'), the share sp keeps.");
    if (c->tp_overlap && tp > 1)
        rcp_note(notes, "TP overlap on TPU comes from XLA's flags, not base.yml: export LIBTPU_INIT_ARGS="
                        "\"--xla_tpu_enable_async_collective_fusion=true "
                        "--xla_tpu_enable_async_collective_fusion_fuse_all_gather=true "
                        "--xla_tpu_enable_async_collective_fusion_multiple_steps=true "
                        "--xla_tpu_overlap_compute_collective_tc=true\" (MaxText benchmarks/xla_flags_library.py "
                        "CF_FOR_ALL_GATHER).");
    if (c->ep_overlap && v->moe && ep > 1)
        rcp_note(notes, "MaxText overlaps expert communication only with its ring-of-experts or batch-split options; "
                        "the estimate's EP overlap is not applied.");
    rcp_kv_str(argv, "dataset_type", "synthetic");
    rcp_kv_int(argv, "steps", RECIPE_STEPS);
    rcp_kv_str(argv, "enable_checkpointing", "false");
    rcp_note(notes, "dataset_type synthetic, %d steps and no checkpoints make this a throughput run; add "
                    "base_output_directory and the real dataset.", RECIPE_STEPS);
}

json_t *rcp_maxtext(const mfu_system *sys, const mfu_config *c, const model_view *v,
                              const char *why_not)
{
    json_t *no = rcp_refused(why_not, v, "MaxText has no decoder block for a model with");
    if (no) return no;
    if ((no = rcp_feature_refused(v, FW_R_MAXTEXT, "MaxText"))) return no;
    char why[320];
    int64_t D = sys->devices;
    int64_t pp = c->ax[MFU_AX_PP];
    const mx_model *known = NULL;
    for (size_t i = 0; i < sizeof MX_MODELS / sizeof *MX_MODELS; i++)
        if (mx_matches(&MX_MODELS[i], v)) { known = &MX_MODELS[i]; break; }
    int64_t unit = known ? known->layer_unit : 1;
    int64_t vv = c->vpp < 1 ? 1 : c->vpp;
    if (pp > 1 && (v->L / unit) % (pp * vv)) {
        snprintf(why, sizeof why, "MaxText's %s config has %lld decoder layers, which %lld stages x %lld repeats "
                                  "do not divide (configs/types.py)",
                 known ? known->name : "", (long long)(v->L / unit), (long long)pp, (long long)vv);
        return rcp_unavailable(why);
    }

    mx_mesh mesh;
    mx_mesh_of(sys, c, &mesh);
    int64_t slice = mesh.slice;
    if (!slice) return rcp_unavailable("the axes do not split into whole slices of the ICI domain");

    json_t *argv = json_array(), *notes = json_array();
    rcp_note(notes, "Overrides of MaxText's src/maxtext/configs/base.yml (main, 2026): "
                    "python3 -m maxtext.trainers.pre_train.train src/maxtext/configs/base.yml ARGV "
                    "(older releases: python3 -m MaxText.train MaxText/configs/base.yml ARGV), on %lld chips "
                    "in %lld slice%s of %lld.", (long long)D, (long long)(D / slice), D / slice > 1 ? "s" : "",
             (long long)slice);
    rcp_word(argv, "run_name=mfud");
    mx_model_args(argv, notes, v, known);
    rcp_kv_int(argv, "max_target_length", sys->train.seq);

    /* batch: per_device_batch_size counts sequences of one optimizer
     * micro-step over every chip (configs/types.py
     * calculate_global_batch_sizes); the pipeline takes the whole step's
     * batch as num_pipeline_microbatches micro-batches */
    char pdbs[40];
    int64_t gbs = rcp_global_batch_seqs(c);
    if (pp > 1) {
        per_device_batch(gbs, D, pdbs, sizeof pdbs);
        rcp_kv_str(argv, "per_device_batch_size", pdbs);
        rcp_kv_int(argv, "num_pipeline_microbatches", c->grad_accum);
        rcp_kv_int(argv, "num_layers_per_pipeline_stage", v->L / unit / (pp * vv));
        rcp_kv_int(argv, "num_pipeline_repeats", vv);
    } else {
        per_device_batch(gbs / c->grad_accum, D, pdbs, sizeof pdbs);
        rcp_kv_str(argv, "per_device_batch_size", pdbs);
        if (c->grad_accum > 1) rcp_kv_int(argv, "gradient_accumulation_steps", c->grad_accum);
    }
    mx_mesh_args(argv, notes, &mesh, D);
    if (c->zero == 1) rcp_kv_str(argv, "shard_optimizer_over_data", "true");
    if (sys->train.optimizer_offload) rcp_kv_str(argv, "optimizer_memory_host_offload", "true");
    if (sys->train.vocab_tiles > 1) {
        char t[24];
        snprintf(t, sizeof t, "%lld", (long long)sys->train.vocab_tiles);
        rcp_kv_str(argv, "num_vocab_tiling", t);
    }

    mx_remat(argv, notes, sys, c);
    mx_tail(argv, notes, sys, c, v);
    return json_pack("{s:o,s:o}", "argv", argv, "notes", notes);
}

