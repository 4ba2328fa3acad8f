/* api/recipe_megatron.c -- the Megatron-LM launch recipe (api/recipe.c says
 * which versions every flag is read from). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe_int.h"

/* A per-layer 0/1 pattern as a Python list expression, run-length coded
 * over the model's runs ("([0]*3+[1]*58)"): Megatron-LM's moe_freq_type,
 * window and no_rope_freq_type (arguments.py). What marks a layer: */
enum { PAT_MOE, PAT_WINDOW, PAT_NOPE };

static int pattern_bit(const mfu_layer_run *run, int what)
{
    return what == PAT_MOE ? run->mlp.kind == MFU_MLP_MOE : what == PAT_WINDOW ? run->attn.window > 0
                                                                                : run->attn.nope != 0;
}

static void layer_pattern(const mfu_model *m, int what, char *out, size_t n)
{
    size_t k = 0;
    int prev = -1;
    int64_t cnt = 0;
    out[0] = 0;
    for (int r = 0; r <= m->n_runs; r++) {
        int f = r < m->n_runs ? pattern_bit(&m->runs[r], what) : -1;
        if (f == prev && r < m->n_runs) {
            cnt += m->runs[r].count;
            continue;
        }
        if (prev >= 0 && k < n) {
            int w = snprintf(out + k, n - k, "%s[%d]*%lld", k ? "+" : "(", prev, (long long)cnt);
            if (w > 0) k += (size_t)w;
        }
        if (r < m->n_runs) {
            prev = f;
            cnt = m->runs[r].count;
        }
    }
    if (k + 2 < n) memcpy(out + k, ")", 2);
}

/* The period N of a window pattern that is N-1 windowed layers then one
 * full-attention layer, repeated (Megatron-LM --window-attn-skip-freq N);
 * 0 if it is not one. */
static int64_t window_period(const mfu_model *m, int64_t L)
{
    int64_t first_full = -1, i = 0;
    for (int r = 0; r < m->n_runs && first_full < 0; r++) {
        if (m->runs[r].attn.window == 0) first_full = i;
        i += m->runs[r].count;
    }
    if (first_full < 0) return 0;
    int64_t N = first_full + 1;
    if (L % N) return 0;
    i = 0;
    for (int r = 0; r < m->n_runs; r++)
        for (int64_t j = 0; j < m->runs[r].count; j++, i++)
            if ((m->runs[r].attn.window > 0) != (i % N != N - 1)) return 0;
    return N;
}

static const char *act_name(const model_view *v)
{
    const char *a = v->act == MFU_ACT_SILU ? "SiLU" : v->act == MFU_ACT_GELU ? "GeLU" : "ReLU";
    static const char *const gated[] = {"gated SiLU", "gated GeLU", "gated ReLU"};
    return v->gated ? gated[v->act] : a;
}

/* ---- Megatron-LM ----------------------------------------------------------
 * Flags of pretrain_gpt.py, megatron/training/arguments.py (core_v0.15.0). */

/* Megatron-LM argv: sliding windows and the newer families' attention
 * switches. */
static void mg_attention_features(json_t *argv, const model_view *v)
{
    const mfu_model *m = v->m;
    const mfu_attention *at = v->at;
    if (v->window > 0) {
        /* TE's (left, right) window: a query sees `left` earlier tokens and
         * itself (megatron/core/transformer/utils.py
         * get_sliding_window_causal_mask); mfud's window counts the query */
        char w[48];
        snprintf(w, sizeof w, "%lld,0", (long long)(v->window - 1));
        rcp_opt_str(argv, "--window-size", w);
        if (v->windowed < v->L) {
            int64_t N = window_period(m, v->L);
            char pat[4096];
            if (N > 0) snprintf(pat, sizeof pat, "%lld", (long long)N);
            else layer_pattern(m, PAT_WINDOW, pat, sizeof pat);
            rcp_opt_str(argv, "--window-attn-skip-freq", pat);
        }
    }
    {
        /* the newer families' attention (core_v0.15.0 arguments.py):
         * --softmax-type learnable (a learnable softmax offset per head, the
         * sink), --no-rope-freq (1 = no RoPE in that layer), --qk-layernorm
         * (the --normalization norm on q and k) or --qk-l2-norm (Llama 4),
         * --rotary-percent */
        int sinks = 0, nope = 0, rms = 0, l2 = 0;
        int64_t rot = 0;
        for (int r = 0; r < m->n_runs; r++) {
            const mfu_attention *a = &m->runs[r].attn;
            sinks |= a->sinks;
            nope |= a->nope;
            rms |= a->qk_norm == MFU_QKN_RMS;
            l2 |= a->qk_norm == MFU_QKN_L2;
            if (a->rotary_dim > 0 && a->rotary_dim < a->head_dim) rot = a->rotary_dim;
        }
        if (sinks) rcp_opt_str(argv, "--softmax-type", "learnable");
        if (nope) {
            char pat[4096];
            layer_pattern(m, PAT_NOPE, pat, sizeof pat);
            rcp_opt_str(argv, "--no-rope-freq", pat);
        }
        if (rms) rcp_word(argv, "--qk-layernorm");
        if (l2) rcp_word(argv, "--qk-l2-norm");
        if (rot > 0) {
            char pc[32];
            snprintf(pc, sizeof pc, "%g", (double)rot / (double)at->head_dim);
            rcp_opt_str(argv, "--rotary-percent", pc);
        }
    }
}

/* Megatron-LM argv: the model's shape: layers, widths, attention, positions, norms. */
static void mg_model(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                     const model_view *v)
{
    const mfu_model *m = v->m;
    const mfu_attention *at = v->at;
    rcp_opt_int(argv, "--num-layers", v->L);
    /* F-OP-MTP: Megatron-LM arguments.py --mtp-num-layers */
    if (m->mtp_layers > 0) rcp_opt_int(argv, "--mtp-num-layers", m->mtp_layers);
    rcp_opt_int(argv, "--hidden-size", m->d_model);
    rcp_opt_int(argv, "--ffn-hidden-size", v->dense ? v->dense->ffn_dim : v->moe->expert_ffn_dim);
    rcp_opt_int(argv, "--num-attention-heads", at->n_heads);
    if (at->kind == MFU_ATTN_MLA) {
        rcp_word(argv, "--multi-latent-attention");
        if (at->q_lora_rank > 0) rcp_opt_int(argv, "--q-lora-rank", at->q_lora_rank);
        rcp_opt_int(argv, "--kv-lora-rank", at->kv_lora_rank);
        rcp_opt_int(argv, "--qk-head-dim", at->qk_nope_head_dim);
        rcp_opt_int(argv, "--qk-pos-emb-head-dim", at->qk_rope_head_dim);
        rcp_opt_int(argv, "--v-head-dim", at->v_head_dim);
    } else {
        if (at->n_kv_heads != at->n_heads) {
            rcp_word(argv, "--group-query-attention");
            rcp_opt_int(argv, "--num-query-groups", at->n_kv_heads);
        }
        /* validate_args: kv_channels defaults to hidden_size / heads */
        if (m->d_model % at->n_heads || m->d_model / at->n_heads != at->head_dim)
            rcp_opt_int(argv, "--kv-channels", at->head_dim);
    }
    mg_attention_features(argv, v);
    rcp_opt_int(argv, "--seq-length", sys->train.seq);    /* validate_args: max_position_embeddings >= seq_length (a learned
     * table is never shorter: the request is refused) */
    int64_t maxpos = m->max_positions > sys->train.seq ? m->max_positions : sys->train.seq;
    rcp_opt_int(argv, "--max-position-embeddings", maxpos);
    if (v->gated) rcp_word(argv, "--swiglu");
    rcp_opt_str(argv, "--normalization", m->norm == MFU_NORM_RMS ? "RMSNorm" : "LayerNorm");
    rcp_opt_str(argv, "--position-embedding-type",
                m->position == MFU_POS_ROPE ? "rope" : m->position == MFU_POS_LEARNED ? "learned_absolute" : "none");
    if (m->position == MFU_POS_ROPE)
        rcp_note(notes, "The RoPE base is not part of mfud's model description: set --rotary-base "
                        "(default 10000) to the model's.");
    if (!m->tie_embeddings) rcp_word(argv, "--untie-embeddings-and-output-weights");
    if (!m->bias) {
        rcp_word(argv, "--disable-bias-linear");
        if (at->qkv_bias) rcp_word(argv, "--add-qkv-bias");
    }
    if (!m->dropout) {
        /* arguments.py defaults both to 0.1 */
        rcp_opt_str(argv, "--attention-dropout", "0.0");
        rcp_opt_str(argv, "--hidden-dropout", "0.0");
    }
}

/* Megatron-LM argv: the MoE layers: experts, routing, dispatch, their parallelism. */
static void mg_moe(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                   const model_view *v)
{
    const mfu_model *m = v->m;
    int64_t ep = c->ax[MFU_AX_EP];
    if (v->moe) {
        const mfu_mlp *e = v->moe;
        rcp_opt_int(argv, "--num-experts", e->n_experts);
        rcp_opt_int(argv, "--moe-router-topk", e->top_k);
        rcp_opt_int(argv, "--moe-ffn-hidden-size", e->expert_ffn_dim);
        if (e->n_shared_experts > 0)
            /* "num_shared_experts * ffn_size_of_each_shared_expert" */
            rcp_opt_int(argv, "--moe-shared-expert-intermediate-size", e->n_shared_experts * e->shared_ffn_dim);
        if (v->moe_layers < v->L) {
            char pat[4096];
            layer_pattern(m, PAT_MOE, pat, sizeof pat);
            rcp_opt_str(argv, "--moe-layer-freq", pat);
        }
        rcp_opt_str(argv, "--moe-token-dispatcher-type", "alltoall");
        /* validate_args: grouped GEMM asserts bf16 */
        if (sys->train.dtype == MFU_DT_BF16 || sys->train.dtype == MFU_DT_FP8)
            rcp_word(argv, "--moe-grouped-gemm");
        else
            rcp_note(notes, "Without bf16 Megatron-LM has no grouped GEMM for the experts "
                            "(--moe-grouped-gemm asserts bf16); they run as a loop of GEMMs.");
        if (e->route_nodes > 0) {
            /* node-limited routing: experts in one group per node the EP
             * group spans (--moe-router-num-groups), top groups per token */
            int64_t node = sys->hw->n_tiers > 0 ? sys->hw->tiers[0].domain_size : 1;
            int64_t groups = (ep + node - 1) / node;
            if (groups > e->route_nodes && e->n_experts % groups == 0) {
                rcp_opt_int(argv, "--moe-router-num-groups", groups);
                rcp_opt_int(argv, "--moe-router-group-topk", e->route_nodes);
            }
        }
        if (e->capacity_factor != 1.0) {
            char cf[32];
            snprintf(cf, sizeof cf, "%g", e->capacity_factor);
            rcp_opt_str(argv, "--moe-expert-capacity-factor", cf);
            rcp_word(argv, "--moe-pad-expert-input-to-capacity");
        }
        rcp_note(notes, "The router (score function, load-balancing loss) is not part of mfud's model "
                        "description; Megatron-LM's defaults (softmax, aux_loss) apply.");
    }
}

/* One virtual stage of a --pipeline-model-parallel-layout: "E" for the
 * embedding on the first, n decoder layers ("t", "t*n"), and on the last
 * the MTP layers ("m" each, F-OP-MTP: validate_layer_layout wants them
 * last, before the loss) and "L" for the loss. */
static int layout_stage(char *out, size_t n, int first, int64_t layers, int last, int mtp)
{
    char t[32] = "", m[16] = "";
    if (layers == 1) snprintf(t, sizeof t, "t");
    else if (layers > 1) snprintf(t, sizeof t, "t*%lld", (long long)layers);
    if (last && mtp == 1) snprintf(m, sizeof m, "m");
    else if (last && mtp > 1) snprintf(m, sizeof m, "m*%d", mtp);
    return snprintf(out, n, "%s%s%s%s", first ? "E" : "", t, m, last ? "L" : "");
}

/* Megatron-Core's --pipeline-model-parallel-layout for c's split
 * (core_v0.13.0 on, transformer/pipeline_parallel_layer_layout.py): the
 * virtual stages in layer order, stage j*pp + r being rank r's chunk j,
 * "|" between them; a run of k equal stages between the first and the
 * last is written "(x|)*k", which parse_str_to_list unrolls. Returns a
 * malloc'd string (NULL when out of memory). */
static char *pp_layout(const mfu_system *sys, const mfu_config *c)
{
    int64_t p = c->ax[MFU_AX_PP], v = c->vpp < 1 ? 1 : c->vpp, S = p * v;
    size_t cap = (size_t)(S < 8 ? 8 : S) * 48 + 64, k = 0;
    char *out = malloc(cap), tok[48], prev[48] = "";
    if (!out) return NULL;
    int64_t run = 0;
    for (int64_t i = 0; i <= S; i++) {
        int64_t n = i < S ? mfu_vstage_decoder_layers(sys, c, i % p, i / p) : 0;
        if (i < S) layout_stage(tok, sizeof tok, i == 0, n, i == S - 1, sys->model->mtp_layers);
        int mid = i > 0 && i < S - 1;
        if (mid && run > 0 && strcmp(tok, prev) == 0) {
            run++;
            continue;
        }
        if (run > 1) k += (size_t)snprintf(out + k, cap - k, "(%s|)*%lld", prev, (long long)run);
        else if (run == 1) k += (size_t)snprintf(out + k, cap - k, "%s|", prev);
        run = 0;
        if (i == S) break;
        if (mid) {
            snprintf(prev, sizeof prev, "%s", tok);
            run = 1;
        } else {
            k += (size_t)snprintf(out + k, cap - k, "%s%s", tok, i == 0 && S > 1 ? "|" : "");
        }
    }
    return out;
}

/* Megatron-LM argv: batch, micro-batch and the parallel layout with its pipeline split. */
static void mg_layout(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                      const model_view *v)
{
    int64_t tp = c->ax[MFU_AX_TP];
    int64_t pp = c->ax[MFU_AX_PP];
    int64_t cp = c->ax[MFU_AX_CP];
    int64_t ep = c->ax[MFU_AX_EP];
    rcp_opt_int(argv, "--micro-batch-size", c->mbs);
    rcp_opt_int(argv, "--global-batch-size", rcp_global_batch_seqs(c));
    rcp_opt_int(argv, "--tensor-model-parallel-size", tp);
    rcp_opt_int(argv, "--pipeline-model-parallel-size", pp);
    rcp_opt_int(argv, "--context-parallel-size", cp);
    if (v->moe) {
        rcp_opt_int(argv, "--expert-model-parallel-size", ep);
        rcp_opt_int(argv, "--expert-tensor-parallel-size", c->etp);
    }
    if (c->sp && tp > 1) rcp_word(argv, "--sequence-parallel");
    if (pp > 1 && !mfu_megatron_split_flags(sys, c)) {
        /* FW-M6: the layout sets the virtual stages itself (arguments.py
         * allows one of it and --num-virtual-stages-per-pipeline-rank) */
        char *lay = pp_layout(sys, c);
        if (lay) rcp_opt_str(argv, "--pipeline-model-parallel-layout", lay);
        free(lay);
        rcp_note(notes, "the pipeline split is written as --pipeline-model-parallel-layout (Megatron-Core "
                        "core_v0.13.0 or later): the classic split flags need exact division");
    } else if (pp > 1) {
        if (c->schedule == MFU_SCHED_INTERLEAVED)
            rcp_opt_int(argv, "--num-virtual-stages-per-pipeline-rank", c->vpp);
        if (c->split == MFU_SPLIT_ACCOUNT) {
            rcp_word(argv, "--account-for-embedding-in-pipeline-split");
            rcp_word(argv, "--account-for-loss-in-pipeline-split");
        } else if (c->split == MFU_SPLIT_FIRST_LAST) {
            rcp_opt_int(argv, "--decoder-first-pipeline-num-layers", c->pp_first);
            rcp_opt_int(argv, "--decoder-last-pipeline-num-layers", c->pp_last);
        }
    }
}

/* Megatron-LM argv: recompute, or CPU activation offload. */
static void mg_recompute(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                         const model_view *v)
{
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    if (rp->kind == MFU_RCK_SELECTIVE) {
        rcp_opt_str(argv, "--recompute-granularity", "selective");
        rcp_word(argv, "--recompute-modules");
        unsigned mods = api_rc_effective_modules(sys, rp->modules);
        for (int k = 0; k < MFU_RCM_COUNT; k++)
            if (mods & (1u << k)) rcp_word(argv, mfu_rcm_names[k]);
    } else if (rp->kind == MFU_RCK_FULL) {
        rcp_opt_str(argv, "--recompute-granularity", "full");
        if (c->recompute_layers < 0) {
            rcp_opt_str(argv, "--recompute-method", "uniform");
            rcp_opt_int(argv, "--recompute-num-layers", 1);
        } else {
            /* block: the first n layers of each model chunk (virtual stage) */
            int64_t vv = c->schedule == MFU_SCHED_INTERLEAVED ? c->vpp : 1;
            int64_t per = (c->recompute_layers + vv - 1) / vv;
            rcp_opt_str(argv, "--recompute-method", "block");
            rcp_opt_int(argv, "--recompute-num-layers", per);
            if (per * vv != c->recompute_layers)
                rcp_note(notes, "--recompute-num-layers counts layers per virtual stage: %lld per stage "
                                "recompute %lld layers on each rank, not the %lld the estimate assumes.",
                         (long long)per, (long long)(per * vv), (long long)c->recompute_layers);
        }
    } else if (c->recompute == MFU_RC_CPU_OFFLOAD) {
        /* core_v0.16+ generates the flag from TransformerConfig's
         * cpu_offloading_num_layers and turns cpu_offloading on when it is
         * > 0 (megatron/training/arguments.py); activations are offloaded,
         * weights not, by default (model_parallel_config.py) */
        int64_t n = mfu_offload_layers(c, sys->layers);
        rcp_opt_int(argv, "--cpu-offloading-num-layers", n);
        rcp_note(notes, "--cpu-offloading-num-layers needs Megatron-LM core_v0.16 or later and Transformer Engine "
                        "layers (the default --transformer-impl); the estimate offloads the first %lld layers' "
                        "activations as Transformer Engine's default synchronizer does.",
                 (long long)n);
        if (n == sys->layers - 1)
            rcp_note(notes, "Transformer Engine warns that offloading all but one layer prevents overlapping the "
                            "copies with compute; the estimate charges them in full.");
    }
}

/* Megatron-LM argv: precision: bf16/fp16, FP8, gradient reduction dtype. */
static void mg_precision(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                         const model_view *v)
{
    if (sys->train.dtype == MFU_DT_BF16 || sys->train.dtype == MFU_DT_FP8) rcp_word(argv, "--bf16");
    else if (sys->train.dtype == MFU_DT_FP16) rcp_word(argv, "--fp16");
    if (sys->train.dtype == MFU_DT_FP8) {
        rcp_opt_str(argv, "--fp8-format", "hybrid");
        /* training.fp8_recipe: the names are Megatron's (arguments.py
         * --fp8-recipe choices, core_v0.15.0) */
        static const char *const names[MFU_FP8_RECIPES] = {"tensorwise", "delayed", "blockwise", "mxfp8"};
        int rcp = sys->train.fp8_recipe >= 0 && sys->train.fp8_recipe < MFU_FP8_RECIPES ? sys->train.fp8_recipe : 0;
        rcp_opt_str(argv, "--fp8-recipe", names[rcp]);
        rcp_note(notes, "FP8 runs with Transformer Engine's %s scaling (--fp8-recipe %s); the estimate counts its "
                        "passes over each cast tensor (F-TIME-FP8-AMAX), not the GEMMs' speed under block scales "
                        "(blockwise runs on Hopper only, mxfp8 on Blackwell only).",
                 rcp == MFU_FP8_TENSORWISE ? "per-tensor current" : names[rcp], names[rcp]);
    }
    if (sys->train.grad_bf16) rcp_word(argv, "--grad-reduce-in-bf16");
}

/* Megatron-LM argv: sharding: distributed optimizer, Megatron-FSDP or FSDP2, moment dtypes. */
static void mg_sharding(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                        const model_view *v)
{
    int64_t dp = c->ax[MFU_AX_DP];
    int64_t tp = c->ax[MFU_AX_TP];
    int64_t cp = c->ax[MFU_AX_CP];
    int dist_opt = c->zero == 1 || c->zero == 2;
    /* FSDP: an fsdp axis, or zero 3 over the cp ranks alone (both shard
     * over the data-and-context group: torch_fully_sharded_data_parallel.py
     * get_data_parallel_group(with_context_parallel=True)) */
    int fsdp_on = mfu_fsdp_on(c);
    if (c->zero == 1) rcp_word(argv, "--use-distributed-optimizer");
    if (c->zero == 2) {
        /* Megatron-FSDP: "optim_grads: Shards gradients and optimizer
         * states, this is conceptually close to ZeRO-2"
         * (megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py);
         * validate_args asserts --ckpt-format fsdp_dtensor with it */
        rcp_word(argv, "--use-megatron-fsdp");
        rcp_opt_str(argv, "--data-parallel-sharding-strategy", "optim_grads");
        rcp_word(argv, "--use-distributed-optimizer");
        rcp_opt_str(argv, "--ckpt-format", "fsdp_dtensor");
        rcp_word(argv, "--no-gradient-accumulation-fusion");
        rcp_note(notes, "ZeRO-2 is Megatron-FSDP's optim_grads strategy (its own sharded buffers and "
                        "communication schedule, not the distributed optimizer's buckets the estimate prices).");
    }
    if (fsdp_on && (dp > 1 || c->ax[MFU_AX_EP] > 1)) {
        /* experts or a replica axis: Megatron-FSDP's ZeRO-3
         * ("optim_grads_params: shards gradients, optimizer states and
         * parameters", megatron_fsdp.py), HSDP as dp instances of the
         * sharded optimizer over the fsdp ranks
         * (DistributedDataParallelConfig.num_distributed_optimizer_instances);
         * validate_args: fsdp_dtensor checkpoints, the distributed
         * optimizer with v1 */
        rcp_word(argv, "--use-megatron-fsdp");
        rcp_opt_str(argv, "--data-parallel-sharding-strategy", "optim_grads_params");
        rcp_word(argv, "--use-distributed-optimizer");
        if (dp > 1) rcp_opt_int(argv, "--num-distributed-optimizer-instances", dp);
        rcp_opt_str(argv, "--ckpt-format", "fsdp_dtensor");
        rcp_word(argv, "--no-gradient-accumulation-fusion");
        rcp_note(notes, "FSDP with %s is Megatron-FSDP's optim_grads_params (ZeRO-3): its own sharded buffers and "
                        "prefetching, which the estimate prices as per-layer gathers and reduce-scatters.",
                 dp > 1 ? "a replica axis (HSDP)" : "experts");
    } else if (fsdp_on) {
        /* validate_args: not with gradient accumulation fusion */
        rcp_word(argv, "--use-torch-fsdp2");
        rcp_word(argv, "--no-gradient-accumulation-fusion");
    }
    if (sys->train.moments_bf16) {
        if (dist_opt) {
            rcp_word(argv, "--use-precision-aware-optimizer");
            rcp_opt_str(argv, "--exp-avg-dtype", "bf16");
            rcp_opt_str(argv, "--exp-avg-sq-dtype", "bf16");
        } else {
            rcp_note(notes, "bf16 Adam moments need --use-precision-aware-optimizer, which works only with the "
                            "distributed optimizer; this configuration keeps them in fp32.");
        }
    }
    if (fsdp_on || c->zero == 2)
        rcp_note(notes, "FSDP needs CUDA_DEVICE_MAX_CONNECTIONS unset or above 1 (validate_args asserts it).");
    else if (tp > 1 || cp > 1)
        rcp_note(notes, "Set CUDA_DEVICE_MAX_CONNECTIONS=1 (validate_args asserts it with tensor or context "
                        "parallelism before Blackwell).");
}

/* Megatron-LM argv: what overlaps: gradient reduce, TP communication, EP dispatch. */
static void mg_overlap(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                       const model_view *v)
{
    int64_t dp = c->ax[MFU_AX_DP];
    int64_t tp = c->ax[MFU_AX_TP];
    int64_t pp = c->ax[MFU_AX_PP];
    int64_t cp = c->ax[MFU_AX_CP];
    int64_t ep = c->ax[MFU_AX_EP];
    int dist_opt = c->zero == 1 || c->zero == 2;
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    int64_t edp = v->moe ? dp * cp * tp / (ep * c->etp) : 1;
    if (!sys->train.no_grad_overlap && !mfu_fsdp_on(c) && (dp * cp > 1 || edp > 1)) {
        rcp_word(argv, "--overlap-grad-reduce");
        /* validate_args: --overlap-param-gather needs the distributed
         * optimizer or Megatron-FSDP, and --overlap-grad-reduce */
        if (dist_opt) rcp_word(argv, "--overlap-param-gather");
    }
    /* F-COMM-PP-1F1B: the estimate waited for the interleaved schedule's
     * sends (Megatron-Core overlaps them unless told not to) */
    if (sys->train.pp_no_overlap_p2p && c->schedule == MFU_SCHED_INTERLEAVED && pp > 1)
        rcp_word(argv, "--no-overlap-p2p-communication");
    /* F-TIME-WGRAD-ACC: the estimate added each micro-batch's weight
     * gradients by separate kernels */
    if (sys->train.wgrad_acc_unfused) rcp_word(argv, "--no-gradient-accumulation-fusion");
    /* F-COMM-TP-SYNC: no Megatron-Core flag waits for them */
    if (sys->train.tp_sync_bwd && tp > 1 && !c->tp_overlap)
        rcp_note(notes, "The estimate waited for the backward's tensor-parallel all-reduces "
                        "(training.tp_async_allreduce false, Megatron-LM v2.6 and earlier); Megatron-Core always "
                        "overlaps them with the weight-gradient GEMMs and has no flag to wait for them, so this "
                        "launch runs somewhat faster than estimated.");
    if (c->tp_overlap && tp > 1) {
        if (c->sp) rcp_word(argv, "--tp-comm-overlap");
        else
            rcp_note(notes, "--tp-comm-overlap needs --sequence-parallel (validate_args), so the TP overlap "
                            "the estimate assumes is not applied.");
    }
    if (c->ep_overlap && v->moe && ep > 1) {
        /* transformer_config.py: needs vpp with pp > 1, alltoall/flex,
         * no full recompute, bf16 or fp16 */
        int ok = (pp == 1 || c->schedule == MFU_SCHED_INTERLEAVED) && rp->kind != MFU_RCK_FULL &&
                 sys->train.dtype != MFU_DT_FP32;
        if (ok) {
            rcp_word(argv, "--overlap-moe-expert-parallel-comm");
            rcp_note(notes, "Megatron-LM hides the EP all-to-all behind another micro-batch's compute "
                            "(batch-level overlap), not chunk by chunk within one as the estimate models it.");
        } else {
            rcp_note(notes, "--overlap-moe-expert-parallel-comm needs interleaving when pp > 1, no full recompute "
                            "and bf16/fp16 (transformer_config.py), so the EP overlap the estimate assumes is not applied.");
        }
    }
}

/* Megatron-LM argv: the attention kernel, the vocabulary and the throughput-run switches. */
static void mg_tail(json_t *argv, json_t *notes, const mfu_system *sys, const mfu_config *c,
                    const model_view *v)
{
    const mfu_model *m = v->m;
    const mfu_attention *at = v->at;
    int64_t tp = c->ax[MFU_AX_TP];
    /* attention kernel: TE's flash-attn backend wants one head size for
     * q, k and v; MLA (q/k 192, v 128) goes to cuDNN's fused attention */
    if (sys->train.attn_impl == MFU_ATTN_UNFUSED) rcp_opt_str(argv, "--attention-backend", "unfused");
    else rcp_opt_str(argv, "--attention-backend", at->kind == MFU_ATTN_MLA ? "fused" : "flash");
    /* F-TIME-CE-UNFUSED: the estimate's loss is one fused pass over the
     * logits unless training.cross_entropy_fusion is false; Megatron runs
     * its separate PyTorch ops without --cross-entropy-loss-fusion, and
     * Transformer Engine's kernel is the one-pass one (arguments.py:
     * --cross-entropy-fusion-impl native or te) */
    if (!sys->train.ce_unfused) {
        rcp_word(argv, "--cross-entropy-loss-fusion");
        rcp_opt_str(argv, "--cross-entropy-fusion-impl", "te");
    }

    /* vocabulary: NullTokenizer's vocabulary is --vocab-size plus its EOD
     * token; it is padded to a multiple of
     * --make-vocab-size-divisible-by x tp (tokenizer.py
     * _vocab_size_with_padding): the largest power of two up to the
     * default 128 that keeps the model's vocabulary exact */
    int64_t V = m->vocab, div = 128;
    while (div > 1 && V % (div * tp)) div /= 2;
    if (V % (div * tp)) {
        div = 128;
        int64_t padded = (V + div * tp - 1) / (div * tp) * (div * tp);
        rcp_note(notes, "Megatron-LM pads the vocabulary from %lld to %lld (a multiple of 128 x tp); "
                        "the estimate counts %lld.", (long long)V, (long long)padded, (long long)V);
    }
    rcp_opt_str(argv, "--tokenizer-type", "NullTokenizer");
    rcp_opt_int(argv, "--vocab-size", V - 1);
    rcp_opt_int(argv, "--make-vocab-size-divisible-by", div);
    rcp_word(argv, "--mock-data");
    rcp_opt_int(argv, "--train-iters", RECIPE_STEPS);
    rcp_opt_str(argv, "--lr", "1e-4");
    rcp_note(notes, "--mock-data, NullTokenizer, --train-iters and --lr make this a throughput run on "
                    "synthetic data; replace them with the real data, tokenizer and schedule.");
}

json_t *rcp_megatron(const mfu_system *sys, const mfu_config *c, const model_view *v,
                               const char *why_not)
{
    json_t *no = rcp_refused(why_not, v, "Megatron-LM core_v0.15.0 has no flags for");
    if (no) return no;
    if ((no = rcp_feature_refused(v, FW_R_MEGATRON, "Megatron-LM"))) return no;
    const mfu_model *m = v->m;
    char why[320];
    /* arguments.py: --swiglu is gated SiLU; without it the MLP is GeLU;
     * --squared-relu and --quick-geglu are other functions */
    if (!((v->gated && v->act == MFU_ACT_SILU) || (!v->gated && v->act == MFU_ACT_GELU))) {
        snprintf(why, sizeof why,
                 "Megatron-LM core_v0.15.0 builds a %s MLP only through TransformerConfig "
                 "(gated_linear_unit, activation_func), which have no command-line flags",
                 act_name(v));
        return rcp_unavailable(why);
    }
    /* validate_args: --use-torch-fsdp2 asserts untie_embeddings_and_output_weights */
    if (mfu_fsdp_on(c) && m->tie_embeddings && c->ax[MFU_AX_DP] == 1 && c->ax[MFU_AX_EP] == 1)
        return rcp_unavailable("Megatron-LM's --use-torch-fsdp2 requires --untie-embeddings-and-output-weights "
                               "(arguments.py validate_args) and this model ties them");

    json_t *argv = json_array(), *notes = json_array();
    rcp_note(notes, "Arguments of pretrain_gpt.py (Megatron-LM core_v0.15.0, megatron/training/arguments.py) "
                    "for %lld GPUs, e.g. torchrun --nnodes N --nproc-per-node G pretrain_gpt.py ARGV with "
                    "N x G = %lld.", (long long)sys->devices, (long long)sys->devices);

    mg_model(argv, notes, sys, c, v);
    mg_moe(argv, notes, sys, c, v);
    mg_layout(argv, notes, sys, c, v);
    mg_recompute(argv, notes, sys, c, v);
    mg_precision(argv, notes, sys, c, v);
    mg_sharding(argv, notes, sys, c, v);
    mg_overlap(argv, notes, sys, c, v);
    mg_tail(argv, notes, sys, c, v);
    return json_pack("{s:o,s:o}", "argv", argv, "notes", notes);
}

