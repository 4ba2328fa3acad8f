/* core/system.h -- the System Bound of one parallel configuration
 * (docs/model.md: Q1 memory, Q2 compute + communication, Q3 overlap; bubble).
 *
 * Axes (docs/model.md "Configurations"):
 *   dp * fsdp * tp * pp * cp = devices. dp replicates (ZeRO 0/1/2 on it),
 *   fsdp shards parameters (ZeRO-3 / FSDP2), tp splits heads and FFN, pp
 *   splits layers, cp splits the sequence.
 *   ep does not multiply the devices: expert parallelism folds over the
 *   data- and context-parallel ranks (and tp ranks when etp < tp), as
 *   Megatron-Core's "parallel folding" does (megatron/core/parallel_state.py
 *   initialize_model_parallel: TP*CP*DP == ETP*EP*EDP per stage); the
 *   expert data-parallel group is edp = dp*fsdp*cp*tp / (ep*etp).
 *   GBS_tokens = mbs * grad_accum * dp * fsdp * seq.
 *   Placement, innermost first: dense tp, cp, fsdp, dp, pp; experts etp, ep.
 *
 * Every function that can fail returns an mfu_err (core/error.h).
 */
#ifndef MFU_SYSTEM_H
#define MFU_SYSTEM_H

#include "error.h"
#include "hardware.h"
#include "model.h"
#include "ops.h"
#include "roofline.h"

/* Pipeline schedules (docs/model.md F-PP-*):
 *  1f1b        Megatron-LM / torchtitan 1F1B (PipeDream-Flush)
 *  interleaved Megatron-LM interleaved 1F1B, torchtitan Interleaved1F1B (vpp >= 2)
 *  zb          ZB-H1 (Qi et al. 2023): no framework modelled here launches it
 *  gpipe       MaxText's pipeline: GPipe, circular with vpp repeats
 *  dualpipev   DualPipeV (DeepSeek-AI DualPipe repository, "cut-in-half"
 *              DualPipe): two virtual stages per rank in a V (rank r holds
 *              stages r and 2p-1-r, so rank 0 holds the embedding and the
 *              LM head), vpp = 2; torchtitan ScheduleDualPipeV */
typedef enum {
    MFU_SCHED_1F1B = 0,
    MFU_SCHED_INTERLEAVED,
    MFU_SCHED_ZB,
    MFU_SCHED_GPIPE,
    MFU_SCHED_DUALPIPEV,
    MFU_SCHED_COUNT
} mfu_schedule;

/* How the layers are split over the pipeline stages (docs/model.md F-PP-SPLIT). */
typedef enum {
    MFU_SPLIT_EVEN = 0,   /* L/pp each */
    MFU_SPLIT_ACCOUNT,    /* embedding and loss counted as a layer each
                           * (Megatron --account-for-{embedding,loss}-in-pipeline-split;
                           * torchtitan's default split) */
    MFU_SPLIT_FIRST_LAST, /* Megatron --decoder-{first,last}-pipeline-num-layers */
    MFU_SPLIT_COUNT
} mfu_split;

/* Recompute policies: each a kind and a set of modules (ops.h MFU_RCM_*).
 * The table is in mfu_system (sys->rc[]); these are its fixed slots. */
typedef enum { MFU_RCK_NONE = 0, MFU_RCK_SELECTIVE, MFU_RCK_FULL } mfu_rc_kind;
typedef enum {
    MFU_RC_NONE = 0,
    MFU_RC_SELECTIVE,           /* Megatron default: core_attn (Korthikanti sec. 5) */
    MFU_RC_MINIMAL,             /* norms and activations (MaxText minimal_with_context,
                                 * Megatron layernorm+moe_act) */
    MFU_RC_SAVE_DOT_EXCEPT_MLP, /* norms and the MLP/MoE blocks (MaxText
                                 * save_dot_with_context_except_mlp; Megatron layernorm,mlp,moe) */
    MFU_RC_MLA_UP,              /* norms and the MLA up-projections (DeepSeek-V3 sec. 3.2.3) */
    MFU_RC_OP_SAC,              /* torchtitan's op-level SAC: on a dense model every other
                                 * matmul's output kept (F-RC-OP-SAC); on an MoE model
                                 * minimal, and the routed experts' GEMMs (no _grouped_mm
                                 * saved) */
    MFU_RC_FULL,                /* the whole layer */
    MFU_RC_CUSTOM,              /* a module set given in the request */
    /* MaxText's name policies (docs/model.md F-RC-MAXTEXT): what is kept
     * on the device, offloaded to host memory, or recomputed, by
     * checkpoint name (layers/decoders.py get_remat_policy) */
    MFU_RC_QKV_OFFLOADED,       /* qkv_proj_offloaded */
    MFU_RC_MINIMAL_OFFLOADED,   /* minimal_offloaded */
    MFU_RC_MAXTEXT,             /* remat_policy custom, the names given in the request */
    /* Megatron-LM's --cpu-offloading-num-layers (Transformer Engine's CPU
     * offload, docs/model.md F-RC-CPU-OFFLOAD): nothing recomputed, the
     * activations of the first recompute_layers layers (-1: all but the
     * last) sent to host memory and fetched back for the backward; pp 1 */
    MFU_RC_CPU_OFFLOAD,
    MFU_RC_COUNT
} mfu_recompute;

/* Frameworks (docs/frameworks.md holds the legality rules, each with the
 * framework code it comes from). */
typedef enum { MFU_FW_MEGATRON = 0, MFU_FW_TORCHTITAN, MFU_FW_MAXTEXT, MFU_FW_COUNT } mfu_framework;
#define MFU_FW_MASK(f) (1u << (f))
#define MFU_FW_ALL ((1u << MFU_FW_COUNT) - 1u)
/* search.frameworks "any": also configurations no modelled framework launches */
#define MFU_FW_ANY (1u << 31)
extern const char *const mfu_framework_names[MFU_FW_COUNT];

enum { MFU_AX_DP = 0, MFU_AX_FSDP, MFU_AX_TP, MFU_AX_EP, MFU_AX_PP, MFU_AX_CP, MFU_AX_COUNT };

typedef struct mfu_config {
    int64_t ax[MFU_AX_COUNT]; /* dp, fsdp, tp, ep, pp, cp (ep folds; see above) */
    int sp;                   /* sequence parallel (needs tp > 1) */
    int zero;                 /* 0, 1, 2: ZeRO stage on the dp axis */
    int64_t etp;              /* expert tensor parallel */
    mfu_schedule schedule;
    int64_t vpp;              /* virtual stages per device (interleaved), repeats (gpipe) */
    mfu_split split;
    int64_t pp_first, pp_last;/* layers on the first / last stage: given with
                               * MFU_SPLIT_FIRST_LAST, else filled by
                               * mfu_config_fill_stages() */
    int64_t pp_mid;           /* layers on rank 1 (filled); all three 0 = not filled */
    int64_t mbs;              /* sequences per micro-batch */
    int64_t grad_accum;       /* micro-batches per step per pipeline */
    int recompute;            /* mfu_recompute slot of sys->rc[] */
    int64_t recompute_layers; /* with full: layers per stage recomputed; -1 = all;
                               * with cpu_offload: layers offloaded; -1 = all but one */
    int tp_overlap;           /* TP communication overlapped with GEMMs */
    int ep_overlap;           /* EP all-to-all chunked under expert compute */
} mfu_config;

/* Layers whose activations go to the host under c on a stage of `ls`
 * layers (0 unless the policy is cpu_offload; -1 = all but the last, the
 * most Transformer Engine's default synchronizer accepts). */
/* Whether the dense parameters are fully sharded (FSDP, ZeRO-3) over
 * fsdp * cp ranks: an fsdp axis, or zero 3 with fsdp 1 and cp > 1, the
 * context-parallel ranks alone sharding (torchtitan wraps the model in FSDP
 * over dp_shard x cp whenever either is above 1: parallel_dims.py
 * fsdp_enabled; Megatron-FSDP and FSDP2 shard over the data-and-context
 * group). */
static inline int mfu_fsdp_on(const mfu_config *c)
{
    return c->ax[MFU_AX_FSDP] > 1 || c->zero == 3;
}

static inline int64_t mfu_offload_layers(const mfu_config *c, int64_t ls)
{
    if (c->recompute != MFU_RC_CPU_OFFLOAD) return 0;
    return c->recompute_layers < 0 || c->recompute_layers >= ls ? ls - 1 : c->recompute_layers;
}

/* Layers per stage of a configuration: stage 0, the busiest middle stage,
 * the last stage (docs/model.md F-PP-SPLIT). */
typedef struct mfu_stages {
    int64_t first, mid, last; /* layers; pp == 1: first == last == all */
    int64_t mid_stage;        /* index of the middle stage `mid` describes (1; 0 if pp <= 2) */
} mfu_stages;

/* Named gap components: roofline MFU - system MFU = sum of their MFU points. */
enum {
    MFU_GAP_MEMORY_BOUND = 0, /* memory-bound ops at sharded shapes beyond the roofline's */
    MFU_GAP_KERNEL_EFFICIENCY,/* expected only: GEMM / attention / HBM efficiency */
    MFU_GAP_RECOMPUTE,
    MFU_GAP_COMM_TP,
    MFU_GAP_COMM_CP,
    MFU_GAP_COMM_EP,
    MFU_GAP_COMM_FSDP,
    MFU_GAP_COMM_DP,
    MFU_GAP_COMM_PP,
    MFU_GAP_BUBBLE,
    MFU_GAP_OPTIMIZER,
    MFU_GAP_OVERHEAD,
    MFU_GAP_OFFLOAD,          /* host offload transfers not hidden under compute */
    MFU_GAP_COUNT
};
extern const char *const mfu_gap_names[MFU_GAP_COUNT];

enum { MFU_COMM_TP = 0, MFU_COMM_CP, MFU_COMM_EP, MFU_COMM_FSDP, MFU_COMM_DP, MFU_COMM_PP,
       MFU_COMM_COUNT };
extern const char *const mfu_comm_names[MFU_COMM_COUNT];

/* Memory of one pipeline stage (docs/model.md F-MEM-*). */
typedef struct mfu_memory {
    double weights_bytes, grads_bytes, optimizer_bytes, activations_bytes, buffers_bytes,
        reserve_bytes, total_bytes, capacity_bytes, headroom_bytes;
    double host_bytes;        /* kept in host memory: optimizer moments (F-MEM-OPT-OFFLOAD)
                               * and offloaded layers' activations (F-RC-CPU-OFFLOAD) */
    int64_t stage;            /* pipeline rank these figures are for */
    int64_t layers;           /* transformer layers on it */
    double inflight;          /* micro-batches whose activations it holds (layer-equivalents / layers) */
    double head_bytes;        /* of activations_bytes: the loss's and LM head's (F-MEM-LOGITS), which
                               * a layer's backward does not meet */
    double act_layers;        /* layers a micro-batch in flight holds: layers, or vpp x the largest
                               * chunk where the chunks differ (F-MEM-ACT) */
} mfu_memory;

/* Time of one step on the busiest device, one set per profile (bound/expected). */
typedef struct mfu_times {
    double compute_s;     /* fwd + bwd ops, no recompute */
    /* its parts on the busiest stage: the forward, and the GEMM and
     * attention-kernel time of its layers (the rest is memory-bound ops,
     * embedding, head and loss) */
    double compute_fwd_s, compute_gemm_s, compute_attention_s;
    double recompute_s;   /* recomputed forward ops */
    double comm_total_s[MFU_COMM_COUNT];   /* link time per axis */
    double comm_exposed_s[MFU_COMM_COUNT]; /* part not hidden under compute */
    double bubble_s;
    double optimizer_s;
    double overhead_s;
    double offload_s;     /* exposed host-offload transfer (F-RC-MAXTEXT) */
    double step_time_s;
    double mfu, hfu;
    double gap_s[MFU_GAP_COUNT];           /* vs the roofline step (see system.c) */
} mfu_times;

typedef struct mfu_eval {
    int feasible;
    mfu_memory mem;               /* the stage with the least headroom */
    mfu_times bound, expected;
    double tokens_per_s;          /* expected */
    double overlap_ratio[MFU_COMM_COUNT]; /* F-GAP: t_comm / t_compute per axis */
    double f_useful_flops, f_hw_flops;     /* per step, all devices */
    int64_t global_batch_tokens;
    int64_t micro_batches;        /* per pipeline per step (= grad_accum) */
    unsigned frameworks;          /* MFU_FW_MASK bits of the frameworks that launch it */
} mfu_eval;

/* The module sets of the fixed selective slots (0 for none, full, custom). */
extern const unsigned mfu_rc_std_modules[MFU_RC_COUNT];
/* The slot a (kind, modules) pair names: a fixed slot when the set is one
 * of theirs, else MFU_RC_CUSTOM. */
int mfu_rc_slot(mfu_rc_kind kind, unsigned modules);

/* One recompute policy of the table (docs/model.md F-RC-*). */
typedef struct mfu_rc_policy {
    mfu_rc_kind kind;
    unsigned modules;             /* MFU_RCM_* (selective); for a name policy the modules
                                   * whose collectives its recompute repeats */
    unsigned frameworks;          /* who can express it for this model */
    /* a MaxText name policy (kind selective): MFU_MX_* kept on the device
     * and offloaded to the host; every other named output is recomputed.
     * Both 0: not a name policy (or the request gave none). */
    unsigned mx_device, mx_host;
    /* F-RC-OP-SAC: torchtitan's op-level SAC, each op as its sac_saved /
     * sac_rerun say where the layer gives them (dense layers of its
     * family); elsewhere the modules */
    int op_sac;
} mfu_rc_policy;

/* What every configuration shares: the model, hardware, training settings,
 * the roofline, and per-model constants computed once. */
typedef struct mfu_system {
    const mfu_model *model;
    const mfu_hardware *hw;
    mfu_training train;
    int64_t devices;
    double roofline_mfu;
    mfu_roofline roof;            /* the Roofline Bound's totals, computed once here */
    double f_fwd_per_token;       /* model FLOPs per token (convention) */
    double params_total, params_active, params_expert, params_embed;
    int64_t layers;
    double roof_step_per_token_s; /* roofline T_step / global batch tokens */
    int64_t moe_layers;
    const mfu_mlp *moe_mlp;       /* the MoE block (of the last MoE run), NULL if dense */
    int has_mla, has_dense_mlp;
    /* F-MEM-SCAN-UNIT: model layers per MaxText decoder layer on TPUs
     * (Gemma 2's local + global pair: 2), which XLA scans, checkpoints and
     * rematerializes as one (mfu_system_set_scan_unit); 1 by default */
    int64_t scan_unit;
    double layer_params_dense;    /* non-expert params of all layers */
    /* per layer (averages) and outside the layers, for the memory model */
    double layer_dense_avg, layer_expert_avg, embed_params, head_params, final_params;
    double bucket_bytes;          /* DP gradient bucket */
    double weight_bytes;          /* bf16 parameter copy, per parameter */
    double grad_bytes;            /* main gradient, per parameter (4 fp32 / 2 bf16) */
    double master_bytes;          /* fp32 master copy */
    double moment_bytes;          /* Adam m + v */
    double grad_comm_bytes;       /* per gradient element reduced */
    mfu_rc_policy rc[MFU_RC_COUNT];
} mfu_system;

/* Prepare the shared part (computes the roofline once; ops is scratch of
 * MFU_SCRATCH_OPS entries). custom_modules: the MFU_RC_CUSTOM slot's module
 * set (0: none). */
MFU_MUST_CHECK int mfu_system_init(mfu_system *sys, const mfu_model *m, const mfu_hardware *hw,
                                   const mfu_training *t, int64_t devices, unsigned custom_modules,
                                   mfu_op *ops);
/* The MFU_RC_MAXTEXT slot's names (MFU_MX_*: kept on the device, offloaded
 * to the host; decoder_layer_input in one of them); after mfu_system_init,
 * before any cost. MFU_EINVAL if the layer input is in neither or both. */
MFU_MUST_CHECK int mfu_system_set_remat_names(mfu_system *sys, unsigned device, unsigned host);
/* F-MEM-SCAN-UNIT: `unit` model layers make one MaxText decoder layer (a
 * TPU system; unit divides the layers), MFU_EINVAL otherwise. */
MFU_MUST_CHECK int mfu_system_set_scan_unit(mfu_system *sys, int64_t unit);
/* Whether policy slot j is a MaxText name policy. */
static inline int mfu_rc_is_names(const mfu_system *sys, int j)
{
    return (sys->rc[j].mx_device | sys->rc[j].mx_host) != 0;
}

/* ---- legality ---------------------------------------------------------- */

enum { MFU_PRUNE_DIVISIBILITY = 0, MFU_PRUNE_BATCH, MFU_PRUNE_MEMORY, MFU_PRUNE_BOUND,
       MFU_PRUNE_CONSTRAINT, MFU_PRUNE_FRAMEWORK, MFU_PRUNE_DOMINATED, MFU_PRUNE_COUNT };
extern const char *const mfu_prune_names[MFU_PRUNE_COUNT];

/* Divisibility of a configuration (what no implementation can run):
 * MFU_OK, or MFU_EILLEGAL with *reason an index into mfu_prune_names and
 * *why a short static text. _shape checks the axes and the micro-batch
 * shape, _point the switches below them (needs grad_accum). */
MFU_MUST_CHECK int mfu_config_check(const mfu_system *sys, const mfu_config *c, int *reason,
                                    const char **why);
MFU_MUST_CHECK int mfu_config_check_shape(const mfu_system *sys, const mfu_config *c, int *reason,
                                          const char **why);
MFU_MUST_CHECK int mfu_config_check_point(const mfu_system *sys, const mfu_config *c, int *reason,
                                          const char **why);
/* check_point's two halves: zero, batch, schedule, vpp and split; the
 * recompute policy. */
MFU_MUST_CHECK int mfu_config_check_sched(const mfu_system *sys, const mfu_config *c, int *reason,
                                          const char **why);
/* check_sched in two: the split's part (pp, vpp, the stages' layers),
 * which depends only on the pipeline layout and the schedule; and
 * check_sched with that part's verdict given (the same answer, and the
 * same first reason, as mfu_config_check_sched). */
MFU_MUST_CHECK int mfu_config_check_split(const mfu_system *sys, const mfu_config *c, int *reason,
                                          const char **why);
MFU_MUST_CHECK int mfu_config_check_sched_given(const mfu_config *c, int split_rc, int split_reason,
                                                const char *split_why, int *reason, const char **why);
MFU_MUST_CHECK int mfu_config_check_rc(const mfu_system *sys, const mfu_config *c, int *reason,
                                       const char **why);

/* The frameworks that can launch c (MFU_FW_MASK bits), each rule cited in
 * docs/frameworks.md. why_not[f] (may be NULL) gets, for each framework
 * that cannot, the first rule it breaks. */
unsigned mfu_config_frameworks(const mfu_system *sys, const mfu_config *c,
                               const char *why_not[MFU_FW_COUNT]);
/* The same for the rules of some levels only (what the search knows at
 * each loop), among `candidates` (MFU_FW_MASK bits). */
enum { MFU_LV_SHAPE = 1u, MFU_LV_SCHED = 2u, MFU_LV_RC = 4u, MFU_LV_MBS = 8u, MFU_LV_ALL = 15u };
/* MFU_LV_SHAPE: the rules that read the axes, etp and sp; MFU_LV_MBS: the
 * shape's rules that read the micro-batch too (the search asks those per
 * mbs, the others once per sp) */
unsigned mfu_config_frameworks_at(const mfu_system *sys, const mfu_config *c, unsigned levels,
                                  unsigned candidates, const char *why_not[MFU_FW_COUNT]);
/* mfu_config_frameworks_at(sys, c, MFU_LV_SCHED, candidates, NULL) for
 * candidates the platform offers (an earlier level's answer), faster. */
unsigned mfu_config_frameworks_sched(const mfu_system *sys, const mfu_config *c, unsigned candidates);
/* Frameworks of the platform (GPU: Megatron-LM, torchtitan; TPU: MaxText). */
unsigned mfu_platform_frameworks(const mfu_hardware *hw);

/* Layers on pipeline rank r (0 <= r < pp). */
int64_t mfu_stage_layers(const mfu_system *sys, const mfu_config *c, int64_t r);
/* Layers in rank 0's first model chunk (virtual stage 0), the one that
 * holds the embedding; the whole stage when it is one chunk. */
int64_t mfu_chunk0_layers(const mfu_system *sys, const mfu_config *c);
/* Layers of rank r's model chunk j (virtual stage j*pp + r), loop style. */
int64_t mfu_vstage_decoder_layers(const mfu_system *sys, const mfu_config *c, int64_t r, int64_t j);
/* The most layers of any virtual stage (loop style). */
int64_t mfu_max_vstage_layers(const mfu_system *sys, const mfu_config *c);
/* Whether Megatron-LM's classic split flags express c's split (else
 * --pipeline-model-parallel-layout, docs/frameworks.md FW-M6). */
int mfu_megatron_split_flags(const mfu_system *sys, const mfu_config *c);
/* Layers per stage (needs split, pp_first, pp_last for FIRST_LAST). */
void mfu_config_stages(const mfu_system *sys, const mfu_config *c, mfu_stages *out);
/* The frameworks that offer c's recompute: its policy's, less MaxText for
 * full recompute of some layers (its remat_policy full wraps every
 * decoder layer: FW-X5). */
static inline unsigned mfu_rc_frameworks(const mfu_system *sys, const mfu_config *c)
{
    unsigned f = sys->rc[c->recompute].frameworks;
    if (c->recompute == MFU_RC_FULL && c->recompute_layers != -1) f &= ~MFU_FW_MASK(MFU_FW_MAXTEXT);
    return f;
}

/* The layers each stage holds: mfu_config_stages' decoder layers and, on
 * the stage with the loss (rank 0 in a V), the MTP layers (F-OP-MTP).
 * Inline: the search's step evaluation calls it per point. */
static inline void mfu_config_stages_held(const mfu_system *sys, const mfu_config *c, mfu_stages *out)
{
    mfu_config_stages(sys, c, out);
    int64_t mtp = sys->model ? (int64_t)sys->model->mtp_layers : 0;
    if (c->schedule == MFU_SCHED_DUALPIPEV) out->first += mtp;
    else out->last += mtp;
}
/* Store the first, rank-1 and last stages' layers in c (the search and
 * the memory model read them per point); after any change of pp, vpp or
 * the split. */
void mfu_config_fill_stages(const mfu_system *sys, mfu_config *c);
/* Fill c->split/pp_first/pp_last with the split the search would use for
 * (pp, vpp): even if it divides, else embedding and loss as layers, else
 * first/last stages holding the remainder. MFU_OK or MFU_EILLEGAL (no split). */
MFU_MUST_CHECK int mfu_config_default_split(const mfu_system *sys, mfu_config *c);

/* Micro-batch activations (in layer-equivalents of one micro-batch per
 * layer of the stage) held at peak by pipeline rank `stage` under the
 * schedule (docs/model.md F-PP-INFLIGHT): 1F1B and ZB-H1 min(p - r, m);
 * interleaved min(2(p-r-1) + (v-1)p + 1, m v) chunks of 1/v of the stage
 * (Megatron-LM schedules.py get_pp_rank_microbatches); GPipe m;
 * DualPipeV min(2p + 1, 2m) chunks of half the stage on every rank. */
double mfu_inflight(mfu_schedule s, int64_t pp, int64_t vpp, int64_t m, int64_t stage);

/* ---- evaluation --------------------------------------------------------- */

/* Model one configuration fully. ops is scratch (MFU_SCRATCH_OPS entries).
 * out->feasible says whether memory fits. */
MFU_MUST_CHECK int mfu_evaluate(const mfu_system *sys, const mfu_config *c, mfu_op *ops,
                                mfu_eval *out);

/* Pipeline bubble as a fraction of the ideal pipeline time (Narayanan et
 * al. 2021 sec. 2.2; ZB-H1: Qi et al. 2023, DeepSeek-V3 Table 2; GPipe
 * (Huang et al. 2019) as MaxText runs it, circular with v repeats;
 * DualPipeV: the DualPipe repository's table).
 * w_frac = W / (F + B): the weight-gradient share of a micro-batch;
 * b_frac = B / (F + B): the backward's share. */
double mfu_bubble_fraction(mfu_schedule s, int64_t pp, int64_t vpp, int64_t m, double w_frac,
                           double b_frac);

/* Per-shape costs of one micro-batch on one device, for one profile: what
 * the search caches per (tp, cp, ep, etp, sp, mbs). */
typedef struct mfu_layer_cost {
    double fwd_s, bwd_s, wgrad_s;  /* all ops of one layer */
    double colpar_dgrad_s, colpar_wgrad_s; /* the column-parallel linears' backward GEMMs
                                            * (MFU_TAG_COLPAR: what hides a block's
                                            * backward TP collectives) */
    double gemm_s;                 /* matmul ops, fwd + bwd (TP overlap) */
    double attn_core_s;            /* attention core fwd + bwd (CP overlap) */
    double attn_core_fwd_s;
    double expert_s;               /* routed-expert ops fwd + bwd (EP overlap) */
    double rc_s[MFU_RC_COUNT];     /* recomputed forward time per policy */
    double rc_flops[MFU_RC_COUNT];
    double saved_bytes[MFU_RC_COUNT]; /* activations kept per policy (on the device) */
    double host_bytes[MFU_RC_COUNT];  /* activations a name policy offloads to the host
                                       * (cpu_offload: one offloaded layer's) */
    double fwd_flops;
    /* F-TIME-DISPATCH (expected profile only): host time to issue the
     * layer's kernels, forward after its MoE dispatch sync (the routed
     * experts' segment), forward before it (the rest), backward; and the
     * GPU time of the forward's expert segment */
    double host_fwd_exp_s, host_fwd_rest_s, host_bwd_s, fwd_exp_s;
} mfu_layer_cost;

typedef struct mfu_shape_cost {
    mfu_shape shape;
    mfu_layer_cost avg;            /* per layer, averaged over the model's layers */
    mfu_layer_cost avg_moe;        /* MoE layers only (zero if none) */
    double embed_fwd_s, embed_bwd_s, embed_saved;
    double head_fwd_s, head_bwd_s, head_saved;
    double logits_transient;       /* bytes live at once besides head_saved (bf16 logits) */
    double buffers_bytes[2];       /* F-MEM-BUF without and with pp (mfu_shape_buffers) */
} mfu_shape_cost;

/* eff NULL = ideal (bound). ops: scratch of MFU_SCRATCH_OPS. */
void mfu_shape_costs(const mfu_system *sys, const mfu_shape *s, const mfu_efficiency *eff,
                     mfu_op *ops, mfu_shape_cost *out);
/* Both profiles' costs from one inventory (expected = bound without a
 * profile): what mfu_shape_costs gives for each, in one pass. */
void mfu_shape_costs2(const mfu_system *sys, const mfu_shape *s, mfu_op *ops, mfu_shape_cost *bound,
                      mfu_shape_cost *expected);
/* The same in two stages (F-SEARCH-MEMO): _dense, what neither ep nor etp
 * changes (the dense runs before the first MoE run, embedding, head, the
 * MoE runs' attention blocks;
 * two[0] bound, two[1] expected), then _moe, the MoE runs and buffers of a
 * shape s on top of _dense's answer for any shape that differs from s in
 * ep and etp alone. _dense then _moe is mfu_shape_costs2, to the bit. */
typedef struct mfu_layer_part { /* a layer's totals part way through its ops */
    mfu_layer_cost lc[2];        /* per profile */
    double saved[MFU_RC_COUNT], host_saved[MFU_RC_COUNT];
    int moe;                     /* an expert op seen */
} mfu_layer_part;
#define MFU_DENSE_MOE_RUNS 4     /* MoE runs whose attention block _dense keeps */
typedef struct mfu_shape_dense {
    mfu_shape_cost two[2];
    int first_moe;               /* the first MoE run (n_runs: none); stage 1 holds the
                                  * dense runs before it */
    int n_attn;                  /* the first MoE runs' attention blocks, in run order */
    mfu_layer_part attn[MFU_DENSE_MOE_RUNS];
} mfu_shape_dense;
void mfu_shape_costs2_dense(const mfu_system *sys, const mfu_shape *s, mfu_op *ops, mfu_shape_dense *d);
void mfu_shape_costs2_moe(const mfu_system *sys, const mfu_shape *s, mfu_op *ops, const mfu_shape_dense *d,
                          mfu_shape_cost *bound, mfu_shape_cost *expected);

/* Evaluate with precomputed costs (bound and expected); mem: the memory
 * model's answer if the caller has it, else NULL. */
MFU_MUST_CHECK int mfu_evaluate_costs(const mfu_system *sys, const mfu_config *c,
                                      const mfu_shape_cost *bound, const mfu_shape_cost *expected,
                                      const mfu_memory *mem, mfu_eval *out);
/* The step time of one profile (k: that profile's costs), for ranking
 * before a full evaluation; +INFINITY as soon as a lower bound on it passes
 * limit_s (compute, recompute, host overhead, then the exposed TP, CP and
 * EP communication, each with the bubble's share of it): the search
 * prunes with it. limit_s = INFINITY: the step time. */
double mfu_step_time_below(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                           int expected, double limit_s);

/* Memory (docs/model.md F-MEM-*): the stage with the least headroom among
 * the first, the busiest middle and the last. exact = 0: an infeasible
 * answer may stop at the first stage that does not fit. */
void mfu_memory_costs(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                      mfu_memory *out);
void mfu_memory_costs_ex(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                         int exact, mfu_memory *out);
/* What a pipeline rank holds whatever the schedule's in-flight count, the
 * micro-batch and the recompute policy: its layers, the parameters' state
 * (F-MEM-STATE) and the fixed reserve. A function of the layout (axes, ep,
 * etp), the ZeRO stage, the split (pp_first, pp_mid, pp_last, vpp) and the
 * head's rank (DualPipeV's V puts it on rank 0). */
typedef struct mfu_stage_state {
    int64_t layers;
    double act_layers;  /* what a micro-batch in flight holds, in layers (F-MEM-ACT) */
    double weights_bytes, grads_bytes, optimizer_bytes, host_bytes, reserve_bytes;
} mfu_stage_state;
/* The part of the candidate stages' memory every recompute policy shares
 * (states, buffers, in-flight count, the embedding's and the loss's
 * tensors, the fixed reserve): computed once, finished per policy. Needs
 * everything in c but the recompute policy. A caller that meets the same
 * stage states again (the search, over micro-batches, batches and the
 * schedules of one split) may lend a memo after mfu_memory_base_init:
 * memo[i] is stage i's state when bit i of *memo_ready is set, and is
 * filled, and the bit set, when first needed. */
typedef struct mfu_memory_base {
    int n;                        /* stages: first, rank 1, last (1..3) */
    unsigned ready;               /* bit i: stage[i] computed (on first use) */
    mfu_stage_state *memo;        /* NULL, or 3 states the caller keeps */
    unsigned *memo_ready;
    mfu_memory stage[3];          /* without the policy's activations */
} mfu_memory_base;
void mfu_memory_base_init(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                          mfu_memory_base *b);
/* mfu_memory_costs_ex for c's recompute policy from a base of c (which it
 * completes as stages are needed). */
void mfu_memory_from_base(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                          mfu_memory_base *b, int exact, mfu_memory *out);
/* What mfu_memory_from_base with exact 0 gives as headroom_bytes, without
 * the rest of the answer: the search's test of whether a point fits. */
double mfu_memory_headroom_from_base(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                                     mfu_memory_base *b);
/* One pipeline rank's memory (0 <= stage < pp), for the per-stage report. */
void mfu_memory_stage(const mfu_system *sys, const mfu_config *c, const mfu_shape_cost *k,
                      int64_t stage, mfu_memory *out);
/* Shape of a config's micro-batch. */
void mfu_config_shape(const mfu_system *sys, const mfu_config *c, mfu_shape *s);

#endif
