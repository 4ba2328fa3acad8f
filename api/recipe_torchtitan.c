/* api/recipe_torchtitan.c -- the torchtitan launch recipe: a job config
 * (api/recipe.c says which version every key is read from). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe_int.h"

/* ---- torchtitan -------------------------------------------------------------
 * A job config for torchtitan v0.2.2 (torchtitan/config/job_config.py). */

/* Flavors of torchtitan v0.2.2 by shape: torchtitan/models/llama3/__init__.py
 * (llama3_args), qwen3/__init__.py (qwen3_args), deepseek_v3/__init__.py. */
typedef struct tt_flavor {
    const char *name, *flavor;
    int64_t d, L, heads, kv;  /* kv: 0 for MLA */
    int64_t ffn;              /* dense layers' (0: none) */
    int64_t moe_ffn, experts, topk, shared;
    int64_t vocab;
    int pipelining;           /* the TrainSpec has a pipelining_fn */
} tt_flavor;

static const tt_flavor TT_FLAVORS[] = {
    {"llama3", "8B", 4096, 32, 32, 8, 14336, 0, 0, 0, 0, 128256, 1},
    {"llama3", "70B", 8192, 80, 64, 8, 28672, 0, 0, 0, 0, 128256, 1},
    {"llama3", "405B", 16384, 126, 128, 8, 53248, 0, 0, 0, 0, 128256, 1},
    {"qwen3", "8B", 4096, 36, 32, 8, 12288, 0, 0, 0, 0, 151936, 0},
    {"qwen3", "14B", 5120, 40, 40, 8, 17408, 0, 0, 0, 0, 151936, 0},
    {"qwen3", "32B", 5120, 64, 64, 8, 25600, 0, 0, 0, 0, 151936, 0},
    {"qwen3", "30B-A3B", 2048, 48, 32, 4, 0, 768, 128, 8, 0, 151936, 0},
    {"qwen3", "235B-A22B", 4096, 94, 64, 4, 0, 1536, 128, 8, 0, 151936, 0},
    {"deepseek_v3", "16B", 2048, 27, 16, 0, 10944, 1408, 64, 6, 2, 102400, 1},
    {"deepseek_v3", "236B", 5120, 60, 128, 0, 12288, 1536, 160, 6, 2, 102400, 1},
    {"deepseek_v3", "671B", 7168, 61, 128, 0, 18432, 2048, 256, 8, 1, 129280, 1},
};

static int tt_matches(const tt_flavor *f, const model_view *v)
{
    const mfu_model *m = v->m;
    if (f->d != m->d_model || f->L != v->L || f->heads != v->at->n_heads || f->vocab != m->vocab) return 0;
    if ((f->kv == 0) != (v->at->kind == MFU_ATTN_MLA)) return 0;
    if (f->kv && f->kv != v->at->n_kv_heads) return 0;
    if ((f->ffn != 0) != (v->dense != NULL) || (v->dense && v->dense->ffn_dim != f->ffn)) return 0;
    if ((f->experts != 0) != (v->moe != NULL)) return 0;
    if (v->moe && (v->moe->n_experts != f->experts || v->moe->top_k != f->topk ||
                   v->moe->expert_ffn_dim != f->moe_ffn || v->moe->n_shared_experts != f->shared))
        return 0;
    return 1;
}

/* The modules of the virtual stages (torchtitan's FQNs, as
 * pipeline_parallel.py generate_llm_fqn_per_model_part names them), with
 * the layers mfud puts on each (core/config.c: rank r holds virtual stages
 * r, r+p, ...; its layers spread evenly over them, remainder first). */
static void tt_stage_modules(FILE *f, const mfu_system *sys, const mfu_config *c)
{
    int64_t p = c->ax[MFU_AX_PP], vv = c->vpp < 1 ? 1 : c->vpp, S = p * vv, next = 0;
    int64_t L = sys->layers;
    int acc = c->split == MFU_SPLIT_ACCOUNT;
    fputs("module_fqns_per_model_part = [", f);
    for (int64_t s = 0; s < S; s++) {
        int64_t n;
        if (c->split == MFU_SPLIT_FIRST_LAST) {
            int64_t r = s % p, k = s / p, tot = mfu_stage_layers(sys, c, r);
            n = tot / vv + (k < tot % vv ? 1 : 0);
        } else {
            int64_t eff = L + (acc ? 2 : 0);
            n = eff / S + (s < eff % S ? 1 : 0) - (acc && s == 0) - (acc && s == S - 1);
        }
        fputs(s ? ", [" : "[", f);
        int first = 1;
        if (s == 0) { fputs("\"tok_embeddings\"", f); first = 0; }
        for (int64_t i = 0; i < n && next < L; i++, next++) {
            fprintf(f, "%s\"layers.%lld\"", first ? "" : ", ", (long long)next);
            first = 0;
        }
        if (s == S - 1) fprintf(f, "%s\"norm\", \"output\"", first ? "" : ", ");
        fputs("]", f);
    }
    fputs("]\n", f);
}

/* torchtitan job config: [model], by flavor when one has the shape; the
 * FP8 converters. Returns whether FP8 is on. */
static int tt_model(FILE *f, json_t *notes, const mfu_system *sys, const model_view *v, const char *family,
                    const tt_flavor *fl)
{
    const mfu_model *m = v->m;
    fprintf(f, "[model]\nname = \"%s\"\n", family);
    if (fl) {
        fprintf(f, "flavor = \"%s\"\n", fl->flavor);
    } else {
        fprintf(f, "flavor = \"mfud\"\n");
        if (v->at->kind == MFU_ATTN_MLA)
            rcp_note(notes, "No torchtitan v0.2.2 flavor has this shape: register a flavor \"mfud\" in "
                            "torchtitan/models/%s/__init__.py with dim=%lld, n_layers=%lld, n_heads=%lld, "
                            "q_lora_rank=%lld, kv_lora_rank=%lld, inter_dim=%lld, vocab_size=%lld.",
                     family, (long long)m->d_model, (long long)v->L, (long long)v->at->n_heads,
                     (long long)v->at->q_lora_rank, (long long)v->at->kv_lora_rank,
                     (long long)(v->dense ? v->dense->ffn_dim : 0), (long long)m->vocab);
        else
            rcp_note(notes, "No torchtitan v0.2.2 flavor has this shape: register a flavor \"mfud\" in "
                            "torchtitan/models/%s/__init__.py with dim=%lld, n_layers=%lld, n_heads=%lld, "
                            "n_kv_heads=%lld, head_dim=%lld, an FFN of %lld, vocab_size=%lld.",
                     family, (long long)m->d_model, (long long)v->L, (long long)v->at->n_heads,
                     (long long)v->at->n_kv_heads, (long long)v->at->head_dim,
                     (long long)(v->dense ? v->dense->ffn_dim : v->moe->expert_ffn_dim), (long long)m->vocab);
        if (v->moe)
            rcp_note(notes, "The flavor's MoE: %lld experts, top-%lld, expert FFN %lld, %lld shared.",
                     (long long)v->moe->n_experts, (long long)v->moe->top_k,
                     (long long)v->moe->expert_ffn_dim, (long long)v->moe->n_shared_experts);
    }
    if (m->tie_embeddings && strcmp(family, "llama3") == 0)
        rcp_note(notes, "torchtitan's llama3 does not tie the embedding and the output layer; the estimate ties them.");
    int fp8 = sys->train.dtype == MFU_DT_FP8;
    if (fp8)
        fprintf(f, "converters = [\"quantize.linear.float8\"%s]\n", v->moe ? ", \"quantize.grouped_mm.float8\"" : "");
    return fp8;
}

/* torchtitan job config: [parallelism], with the pipeline schedule and
 * split. */
static void tt_parallelism(FILE *f, json_t *notes, const mfu_system *sys, const mfu_config *c,
                           const model_view *v)
{
    int64_t dp = c->ax[MFU_AX_DP], fsdp = c->ax[MFU_AX_FSDP], tp = c->ax[MFU_AX_TP];
    int64_t pp = c->ax[MFU_AX_PP], cp = c->ax[MFU_AX_CP], ep = c->ax[MFU_AX_EP];
    fprintf(f, "\n[parallelism]\ndata_parallel_replicate_degree = %lld\ndata_parallel_shard_degree = %lld\n"
               "tensor_parallel_degree = %lld\npipeline_parallel_degree = %lld\ncontext_parallel_degree = %lld\n",
            (long long)dp, (long long)fsdp, (long long)tp, (long long)pp, (long long)cp);
    if (v->moe)
        fprintf(f, "expert_parallel_degree = %lld\nexpert_tensor_parallel_degree = %lld\n", (long long)ep,
                (long long)c->etp);
    if (c->tp_overlap && tp > 1) fprintf(f, "enable_async_tensor_parallel = true\n");
    if (pp > 1) {
        const char *sched = c->schedule == MFU_SCHED_INTERLEAVED ? "Interleaved1F1B"
                          : c->schedule == MFU_SCHED_GPIPE      ? "GPipe"
                          : c->schedule == MFU_SCHED_DUALPIPEV  ? "DualPipeV" : "1F1B";
        fprintf(f, "pipeline_parallel_schedule = \"%s\"\npipeline_parallel_microbatch_size = %lld\n", sched,
                (long long)c->mbs);
        /* pipeline_llm: 2 virtual stages per rank for multi-stage
         * schedules, 1 otherwise, split with the embedding and the output
         * weighing *_less_layers (default 1) each */
        int64_t dflt_v = c->schedule == MFU_SCHED_INTERLEAVED || c->schedule == MFU_SCHED_DUALPIPEV ? 2 : 1;
        if (c->vpp == dflt_v && c->split == MFU_SPLIT_EVEN)
            fprintf(f, "pipeline_parallel_first_stage_less_layers = 0\npipeline_parallel_last_stage_less_layers = 0\n");
        else if (!(c->vpp == dflt_v && c->split == MFU_SPLIT_ACCOUNT))
            tt_stage_modules(f, sys, c);
    }
    if (cp > 1 && fsdp == 1)
        rcp_note(notes, "With data_parallel_shard_degree 1 torchtitan wraps the model in FSDP over the "
                        "context-parallel ranks (parallel_dims.py: fsdp is dp_shard x cp), as the estimate "
                        "(zero 3) shards it.");
}

/* torchtitan job config: activation checkpointing, compile, FP8 and the
 * notes on what torchtitan does not do as estimated. */
static void tt_tail(FILE *f, json_t *notes, const mfu_system *sys, const mfu_config *c, const model_view *v,
                    int fp8)
{
    int64_t tp = c->ax[MFU_AX_TP], ep = c->ax[MFU_AX_EP];
    fprintf(f, "\n[activation_checkpoint]\n");
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    if (rp->kind == MFU_RCK_NONE) {
        fprintf(f, "mode = \"none\"\n");
    } else if (rp->kind == MFU_RCK_FULL) {
        fprintf(f, "mode = \"full\"\n");
        if (c->recompute_layers > 0)
            rcp_note(notes, "torchtitan recomputes every layer in full mode; the estimate recomputes %lld per stage.",
                     (long long)c->recompute_layers);
    } else {
        fprintf(f, "mode = \"selective\"\nselective_ac_option = \"op\"\n");
        if (v->moe)
            rcp_note(notes, "torchtitan's op-level selective checkpointing saves every other matmul "
                            "(activation_checkpoint.py _apply_op_sac); in the MoE blocks the estimate keeps every "
                            "matmul's output and reruns the norms, activations and routed experts, whose grouped "
                            "GEMMs are not on its save list.");
    }
    /* the loss compiled unless training.eager_loss says it runs eager:
     * eager, torchtitan's cross_entropy_loss
     * (components/loss.py: F.cross_entropy(pred.flatten(0, 1).float(), ...))
     * holds the bf16 logits, their fp32 copy and the fp32 log-softmax at
     * once (10 bytes a logit), and in the backward the saved log-softmax,
     * its gradient and the input's (12); compiled, the cast and softmax
     * fuse, within the 6 bytes a logit the estimate holds for the loss
     * (F-MEM-LOGITS) */
    if (c->tp_overlap && tp > 1) {
        fprintf(f, "\n[compile]\nenable = true\ncomponents = [%s]\n",
                sys->train.ce_eager ? "\"model\"" : "\"model\", \"loss\"");
        rcp_note(notes, "Async tensor parallelism works only under torch.compile ([compile] enable), which "
                        "also changes kernel times the estimate does not model.");
    } else if (sys->train.ce_eager) {
        rcp_note(notes, "The loss runs eager, as training.eager_loss says: up to 12 bytes a logit (F-MEM-LOGITS-EAGER); "
                        "[compile] components = [\"loss\"] would hold about half.");
    } else {
        fprintf(f, "\n[compile]\nenable = true\ncomponents = [\"loss\"]\n");
        rcp_note(notes, "The loss is compiled: eager, torchtitan's cross_entropy(pred.float()) holds up to "
                        "12 bytes a logit, twice the estimate's fused loss.");
    }
    if (fp8) {
        fprintf(f, "\n[quantize.linear.float8]\nrecipe_name = \"tensorwise\"\n");
        if (v->moe) fprintf(f, "\n[quantize.grouped_mm.float8]\nfqns = [\"experts\"]\n");
        rcp_note(notes, "FP8 is torchao's float8 training with tensorwise scaling (a prototype for grouped GEMMs).");
        /* torchao's float8 recipes are tensorwise and rowwise: no delayed
         * scaling, no block formats on this path */
        if (sys->train.fp8_recipe != MFU_FP8_TENSORWISE)
            rcp_note(notes, "The estimate takes the FP8 scale with the cast (training.fp8_recipe); torchao's "
                            "tensorwise scaling finds each tensor's amax in a pass of its own, so this launch "
                            "runs somewhat slower than estimated.");
    }
    if (c->ep_overlap && v->moe && ep > 1)
        rcp_note(notes, "torchtitan v0.2.2 overlaps the EP all-to-all only under DualPipeV; the estimate's EP overlap is not applied.");
    if (sys->train.attn_impl == MFU_ATTN_UNFUSED)
        rcp_note(notes, "torchtitan runs attention through SDPA or FlexAttention, fused; the estimate assumes unfused attention.");
}

json_t *rcp_torchtitan(const mfu_system *sys, const mfu_config *c, const model_view *v,
                                 const char *why_not)
{
    json_t *no = rcp_refused(why_not, v, "torchtitan v0.2.2 has no model family with");
    if (no) return no;
    if ((no = rcp_feature_refused(v, FW_R_TORCHTITAN, "torchtitan"))) return no;
    const mfu_model *m = v->m;
    char why[320];
    if (m->norm != MFU_NORM_RMS || m->position != MFU_POS_ROPE || m->bias || v->window > 0 ||
        !v->gated || v->act != MFU_ACT_SILU || v->at->qkv_bias)
        return rcp_unavailable("torchtitan v0.2.2's model families (llama3, llama4, qwen3, deepseek_v3) are "
                               "RMSNorm, RoPE, SwiGLU decoders without biases or sliding windows; this model is not one");
    int64_t dp = c->ax[MFU_AX_DP], fsdp = c->ax[MFU_AX_FSDP];
    int64_t pp = c->ax[MFU_AX_PP], cp = c->ax[MFU_AX_CP];
    /* models/llama3/infra/parallelize.py: DDP (replicas without FSDP)
     * raises unless it is the only parallelism */
    if (dp > 1 && fsdp == 1 && cp == 1 && dp != sys->devices)
        return rcp_unavailable("torchtitan v0.2.2 replicates without sharding only as pure DDP "
                               "(parallelize.py: \"DDP has not supported > 1D parallelism\")");
    if (sys->train.dtype == MFU_DT_FP16)
        return rcp_unavailable("torchtitan v0.2.2 trains in bfloat16 or float32 "
                               "(job_config.py training.mixed_precision_param)");

    const tt_flavor *fl = NULL;
    for (size_t i = 0; i < sizeof TT_FLAVORS / sizeof *TT_FLAVORS; i++)
        if (tt_matches(&TT_FLAVORS[i], v)) { fl = &TT_FLAVORS[i]; break; }
    const char *family = fl ? fl->name : v->at->kind == MFU_ATTN_MLA ? "deepseek_v3" : v->moe ? "qwen3" : "llama3";
    int pipelining = fl ? fl->pipelining : strcmp(family, "qwen3") != 0;
    if (pp > 1 && !pipelining) {
        snprintf(why, sizeof why, "torchtitan v0.2.2's %s TrainSpec has no pipelining_fn "
                                  "(train.py: \"does not support pipelining\")", family);
        return rcp_unavailable(why);
    }

    json_t *notes = json_array();
    char *toml = NULL;
    size_t toml_len = 0;
    FILE *f = open_memstream(&toml, &toml_len);
    if (!f) {
        json_decref(notes);
        return rcp_unavailable("out of memory");
    }
    rcp_note(notes, "A job config for torchtitan v0.2.2 (torchtitan/config/job_config.py): "
                    "torchrun --nnodes N --nproc-per-node G -m torchtitan.train --job.config_file FILE "
                    "with N x G = %lld.", (long long)sys->devices);
    fprintf(f, "# torchtitan v0.2.2 job config (torchtitan/config/job_config.py), written by mfud\n");
    fprintf(f, "[job]\ndescription = \"mfud recipe\"\n\n");
    int fp8 = tt_model(f, notes, sys, v, family, fl);

    /* batch: with pp the whole per-replica batch of a step is one
     * local batch cut into micro-batches (pipeline_parallel.py
     * pipeline_llm); without, local batches are accumulated (train.py) */
    int64_t gbs = rcp_global_batch_seqs(c);
    int64_t local = pp > 1 ? c->mbs * c->grad_accum : c->mbs;
    fprintf(f, "\n[training]\nlocal_batch_size = %lld\nglobal_batch_size = %lld\nseq_len = %lld\n",
            (long long)local, (long long)gbs, (long long)sys->train.seq);
    fprintf(f, "steps = %d\ndataset = \"c4_test\"\n", RECIPE_STEPS);
    fprintf(f, "mixed_precision_param = \"%s\"\nmixed_precision_reduce = \"float32\"\n",
            sys->train.dtype == MFU_DT_FP32 ? "float32" : "bfloat16");
    rcp_note(notes, "dataset c4_test (shipped in torchtitan's tests/assets) and %d steps make this a throughput "
                    "run; point [training] at the real data.", RECIPE_STEPS);
    if (sys->train.grad_bf16)
        rcp_note(notes, "torchtitan reduces gradients in float32 only (mixed_precision_reduce); the estimate "
                        "assumes bf16 gradients.");
    if (sys->train.moments_bf16)
        rcp_note(notes, "torchtitan has no bf16 Adam moments next to fp32 master weights; the estimate assumes them.");

    tt_parallelism(f, notes, sys, c, v);
    tt_tail(f, notes, sys, c, v, fp8);
    fclose(f);
    json_t *o = json_pack("{s:s,s:o}", "toml", toml ? toml : "", "notes", notes);
    free(toml);
    return o;
}

