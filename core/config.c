/* core/config.c -- legality of a configuration: divisibility (what no
 * implementation can run), the frameworks that launch it, the layer split
 * over pipeline stages, and micro-batches in flight per schedule.
 *
 * The framework rules are written down with their sources in
 * docs/frameworks.md; each rule below names its entry (FW-M*, FW-T*,
 * FW-X*). Versions read: Megatron-LM core_v0.12.0 and main (0.20),
 * torchtitan v0.2.2 and main, MaxText main (2026).
 */
#include "system_int.h"

const char *const mfu_framework_names[MFU_FW_COUNT] = {"megatron", "torchtitan", "maxtext"};
const char *const mfu_prune_names[MFU_PRUNE_COUNT] = {"divisibility", "batch",     "memory",
                                                      "bound",        "constraint", "framework",
                                                      "dominated"};

static int illegal(int *reason, const char **why, int r, const char *text)
{
    *reason = r;
    *why = text;
    return MFU_EILLEGAL;
}

/* ---- divisibility ------------------------------------------------------- */

int mfu_config_check_shape(const mfu_system *sys, const mfu_config *c, int *reason, const char **why)
{
    const mfu_model *m = sys->model;
    const int D = MFU_PRUNE_DIVISIBILITY;
    int64_t tp = c->ax[MFU_AX_TP], cp = c->ax[MFU_AX_CP], ep = c->ax[MFU_AX_EP];
    int64_t prod = 1;
    for (int a = 0; a < MFU_AX_COUNT; a++) {
        if (c->ax[a] < 1) return illegal(reason, why, D, "every axis must be >= 1");
        if (a != MFU_AX_EP) prod *= c->ax[a];
    }
    if (prod != sys->devices)
        return illegal(reason, why, D, "dp * fsdp * tp * pp * cp must equal the device count (ep folds over dp * fsdp * cp * tp / etp)");
    if (c->etp < 1) return illegal(reason, why, D, "etp must be >= 1");
    for (int r = 0; r < m->n_runs; r++) {
        const mfu_attention *a = &m->runs[r].attn;
        const mfu_mlp *p = &m->runs[r].mlp;
        if (a->n_heads % tp) return illegal(reason, why, D, "tp must divide the attention heads");
        if (a->kind != MFU_ATTN_MLA && a->n_kv_heads % tp && tp % a->n_kv_heads)
            return illegal(reason, why, D, "tp and the KV heads must divide one another");
        if (p->kind == MFU_MLP_DENSE && p->ffn_dim % tp) return illegal(reason, why, D, "tp must divide ffn_dim");
        if (p->kind == MFU_MLP_MOE) {
            if (p->n_experts % ep) return illegal(reason, why, D, "ep must divide the experts");
            if (p->expert_ffn_dim % c->etp) return illegal(reason, why, D, "etp must divide expert_ffn_dim");
        }
    }
    if (sys->moe_layers == 0 && (ep > 1 || c->etp > 1))
        return illegal(reason, why, D, "ep and etp > 1 need MoE layers");
    /* parallel folding: ETP * EP * EDP = TP * CP * DP per stage */
    int64_t fold = c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP] * cp * tp;
    if (fold % (ep * c->etp)) return illegal(reason, why, D, "ep * etp must divide dp * fsdp * cp * tp");
    if (c->ax[MFU_AX_PP] > sys->layers + 2) return illegal(reason, why, D, "pp must not exceed the layers (+2 for embedding and loss)");
    /* causal load balancing splits the sequence in 2*cp chunks (Llama 3
     * sec. 3.3.2; Megatron validate_args: seq_length % (2*cp) == 0) */
    if (cp > 1 && sys->train.seq % (2 * cp)) return illegal(reason, why, D, "cp needs seq divisible by 2*cp");
    if (c->sp && tp < 2) return illegal(reason, why, D, "sequence parallel needs tp >= 2");
    /* Megatron's sequence parallelism splits the sequence (validate_args:
     * seq_length % tp); on TPUs the same share is MaxText's split of the
     * activations' embedding over the tensor axis (FW-X7: logical_axis_rules
     * 'activation_embed' -> tensor), which needs d_model divisible instead
     * (PaLM 540B: 12-way model parallelism, d_model 18,432, sequences of
     * 2,048) */
    if (c->sp && sys->hw->platform == MFU_PLATFORM_TPU) {
        if (sys->model->d_model % tp)
            return illegal(reason, why, D, "sp on a TPU (the activations' embedding split over tensor) needs d_model divisible by tp");
    } else if (c->sp && (sys->train.seq / cp) % tp)
        return illegal(reason, why, D, "sequence parallel needs seq/cp divisible by tp");
    if (c->mbs < 1) return illegal(reason, why, MFU_PRUNE_BATCH, "mbs must be >= 1");
    return MFU_OK;
}

/* check_sched's parts, in its order: the schedule's own demands; the
 * split (pp, vpp and the stages' layers: what the search weighs once per
 * pipeline layout, mfu_config_check_split); the rest (zero, batch). */
static int sched_switch(const mfu_config *c, int *reason, const char **why)
{
    const int D = MFU_PRUNE_DIVISIBILITY;
    int64_t pp = c->ax[MFU_AX_PP], v = c->vpp;
    switch (c->schedule) {
    case MFU_SCHED_INTERLEAVED:
        if (pp < 2 || v < 2) return illegal(reason, why, D, "interleaved needs pp >= 2 and vpp >= 2");
        break;
    case MFU_SCHED_GPIPE:
        if (pp < 2 || v < 1) return illegal(reason, why, D, "gpipe needs pp >= 2");
        break;
    case MFU_SCHED_DUALPIPEV:
        /* two stages per rank in a V (torchtitan: "v schedules assume 2
         * stages per rank"); DualPipe's dualpipev.py asserts num_chunks >=
         * 2 * num_ranks */
        if (pp < 2 || v != 2) return illegal(reason, why, D, "dualpipev needs pp >= 2 and vpp = 2");
        if (c->grad_accum < 2 * pp)
            return illegal(reason, why, MFU_PRUNE_BATCH, "dualpipev needs micro-batches >= 2 pp");
        if (c->split == MFU_SPLIT_FIRST_LAST)
            return illegal(reason, why, D, "dualpipev splits the layers evenly over its 2 pp stages (even or account)");
        break;
    case MFU_SCHED_ZB:
        if (pp < 2) return illegal(reason, why, D, "zb needs pp >= 2");
        /* fall through */
    case MFU_SCHED_1F1B:
        if (v != 1) return illegal(reason, why, D, "vpp > 1 only with the interleaved or gpipe schedule");
        break;
    default:
        return illegal(reason, why, D, "unknown schedule");
    }
    return MFU_OK;
}

static int64_t acc_head(const mfu_system *sys);
static int64_t acc_tail(const mfu_system *sys);
static int64_t vstage_layers(int64_t eff, int64_t S, int64_t i);

int mfu_config_check_split(const mfu_system *sys, const mfu_config *c, int *reason, const char **why)
{
    const int D = MFU_PRUNE_DIVISIBILITY;
    int64_t pp = c->ax[MFU_AX_PP], v = c->vpp;
    if (pp * v > sys->layers + 2) return illegal(reason, why, D, "pp * vpp must not exceed the layers (+2)");
    mfu_stages st;
    mfu_config_stages(sys, c, &st);
    if (st.first < 0 || st.last < 0 || st.mid < 0 || (pp > 2 && st.mid < 1) ||
        (pp == 1 && st.first != sys->layers))
        return illegal(reason, why, D, "the layer split leaves a stage with no layers or a negative count");
    if (c->split == MFU_SPLIT_ACCOUNT && pp > 1) {
        /* the first and the last virtual stage hold the accounted units
         * (F-OP-MTP's too) and no negative count of layers */
        int64_t S = pp * (v < 1 ? 1 : v), eff = sys->layers + acc_head(sys) + acc_tail(sys);
        int64_t f = vstage_layers(eff, S, 0), l = vstage_layers(eff, S, S - 1);
        /* in a V both are rank 0's: together */
        if (c->schedule == MFU_SCHED_DUALPIPEV ? f + l < acc_head(sys) + acc_tail(sys)
                                                : f < acc_head(sys) || l < acc_tail(sys))
            return illegal(reason, why, D, "account split: the embedding, loss or MTP layers exceed their virtual stage");
    }
    if (c->split == MFU_SPLIT_FIRST_LAST && pp > 2 &&
        (sys->layers - c->pp_first - c->pp_last) % (pp - 2))
        return illegal(reason, why, D, "first/last split: the middle stages must share the rest evenly");
    if (c->split == MFU_SPLIT_FIRST_LAST && pp == 2 && c->pp_first + c->pp_last != sys->layers)
        return illegal(reason, why, D, "first/last split over 2 stages: first + last must be every layer");
    return MFU_OK;
}

static int sched_rest(const mfu_config *c, int *reason, const char **why)
{
    const int D = MFU_PRUNE_DIVISIBILITY;
    if (c->zero < 0 || c->zero > 3) return illegal(reason, why, D, "zero must be 0, 1, 2 or 3");
    if (c->zero == 3 && (c->ax[MFU_AX_FSDP] != 1 || c->ax[MFU_AX_CP] < 2))
        return illegal(reason, why, D, "zero 3 shards over the cp ranks alone: fsdp 1 and cp >= 2 (else the fsdp axis)");
    if (c->zero && c->ax[MFU_AX_DP] * c->ax[MFU_AX_CP] < 2)
        return illegal(reason, why, D, "zero needs dp * cp >= 2 (the ranks it shards over)");
    if (c->mbs < 1 || c->grad_accum < 1) return illegal(reason, why, MFU_PRUNE_BATCH, "mbs and grad_accum must be >= 1");
    return MFU_OK;
}

int mfu_config_check_sched(const mfu_system *sys, const mfu_config *c, int *reason, const char **why)
{
    int r = sched_switch(c, reason, why);
    if (r == MFU_OK) r = mfu_config_check_split(sys, c, reason, why);
    return r == MFU_OK ? sched_rest(c, reason, why) : r;
}

int mfu_config_check_sched_given(const mfu_config *c, int split_rc, int split_reason, const char *split_why,
                                 int *reason, const char **why)
{
    int r = sched_switch(c, reason, why);
    if (r != MFU_OK) return r;
    if (split_rc != MFU_OK) {
        if (reason) *reason = split_reason;
        if (why) *why = split_why;
        return split_rc;
    }
    return sched_rest(c, reason, why);
}

/* F-RC-CPU-OFFLOAD, from Megatron-LM's TransformerConfig checks
 * (megatron/core/transformer/transformer_config.py): no pipeline
 * parallelism, fewer offloaded layers than layers; and a host link. */
static int check_offload(const mfu_system *sys, const mfu_config *c, int *reason, const char **why)
{
    const int D = MFU_PRUNE_DIVISIBILITY;
    if (!(sys->hw->host_bw_bytes_s > 0))
        return illegal(reason, why, D, "offloading to the host needs hardware.host_bw_bytes_s");
    if (c->ax[MFU_AX_PP] != 1)
        return illegal(reason, why, D, "cpu_offload has no pipeline parallelism (Megatron-LM refuses it with pp > 1)");
    if (sys->layers < 2) return illegal(reason, why, D, "cpu_offload needs at least two layers");
    if (c->recompute_layers == 0 || c->recompute_layers < -1)
        return illegal(reason, why, D, "recompute_layers must be -1 (all but the last) or >= 1");
    if (c->recompute_layers >= sys->layers)
        return illegal(reason, why, D, "cpu_offload: recompute_layers (the layers offloaded) must be fewer than the layers");
    return MFU_OK;
}

int mfu_config_check_rc(const mfu_system *sys, const mfu_config *c, int *reason, const char **why)
{
    const int D = MFU_PRUNE_DIVISIBILITY;
    if (c->recompute < 0 || c->recompute >= MFU_RC_COUNT) return illegal(reason, why, D, "unknown recompute policy");
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    /* per point of the search: the common cases pass with few tests */
    if (rp->kind == MFU_RCK_SELECTIVE) {
        if (rp->modules == 0 && !(rp->mx_device | rp->mx_host))
            return illegal(reason, why, D, c->recompute == MFU_RC_MAXTEXT
                                               ? "maxtext recompute needs the request's remat names"
                                           : c->recompute == MFU_RC_QKV_OFFLOADED || c->recompute == MFU_RC_MINIMAL_OFFLOADED
                                               ? "a MaxText remat policy, offered on TPUs with a known host link"
                                               : "selective recompute needs at least one module");
        if (rp->mx_host && !(sys->hw->host_bw_bytes_s > 0))
            return illegal(reason, why, D, "offloading to the host needs hardware.host_bw_bytes_s");
        if ((rp->modules & MFU_RCM_MLA_UP) && !sys->has_mla)
            return illegal(reason, why, D, "mla_up_proj recompute needs MLA attention");
    }
    if (c->recompute == MFU_RC_CPU_OFFLOAD) return check_offload(sys, c, reason, why);
    if (c->recompute_layers != -1) {
        if (c->recompute_layers < 1)
            return illegal(reason, why, D, "recompute_layers must be -1 (all) or >= 1");
        if (rp->kind != MFU_RCK_FULL)
            return illegal(reason, why, D, "recompute_layers only with full recompute or cpu_offload");
    }
    return MFU_OK;
}

int mfu_config_check_point(const mfu_system *sys, const mfu_config *c, int *reason, const char **why)
{
    int r = mfu_config_check_sched(sys, c, reason, why);
    return r != MFU_OK ? r : mfu_config_check_rc(sys, c, reason, why);
}

int mfu_config_check(const mfu_system *sys, const mfu_config *c, int *reason, const char **why)
{
    int r = mfu_config_check_shape(sys, c, reason, why);
    return r != MFU_OK ? r : mfu_config_check_point(sys, c, reason, why);
}

/* ---- pipeline split ------------------------------------------------------ */

/* Layers on pipeline rank r (F-PP-SPLIT). EVEN and ACCOUNT follow
 * torchtitan's generate_llm_fqn_per_model_part (remainder to the first
 * virtual stages; with ACCOUNT the embedding and the loss count as one
 * layer each), which is Megatron-LM's get_num_layers_to_build whenever the
 * division is exact (the only case Megatron accepts). Rank r holds virtual
 * stages r, r + p, ... (loop style), or r and 2p-1-r (V style: DualPipeV),
 * where rank 0 holds both the embedding's and the loss's stage. */
/* Layers of virtual stage i of S over eff layers (remainder first). */
/* ACCOUNT's units before the first virtual stage's decoder layers and
 * after the last one's: the embedding and the loss, a layer each
 * (Megatron --account-for-{embedding,loss}-in-pipeline-split). With MTP
 * layers (F-OP-MTP, placed with the loss) as Megatron Bridge lays out
 * DeepSeek-V3 (src/megatron/bridge/recipes/deepseek/h100/deepseek_v3.py
 * _get_deepseek_v3_pipeline_layout: pp 16 "E t*4 | (t*4|)*14 | t m L",
 * pp 8 "E t*8 | ... | t*5 m L"): the embedding none, the loss one, each
 * MTP depth two (its layer and its own LM head). */
/* the model's MTP layers (0 for a system without a model: the split's
 * arithmetic alone, as tests build it) */
static int64_t sys_mtp(const mfu_system *sys)
{
    return sys->model ? (int64_t)sys->model->mtp_layers : 0;
}

static int64_t acc_head(const mfu_system *sys)
{
    return sys_mtp(sys) > 0 ? 0 : 1;
}

static int64_t acc_tail(const mfu_system *sys)
{
    return 1 + 2 * sys_mtp(sys);
}

static int64_t vstage_layers(int64_t eff, int64_t S, int64_t i)
{
    return eff / S + (i < eff % S ? 1 : 0);
}

static int64_t stage_layers_of(const mfu_system *sys, const mfu_config *c, int64_t r)
{
    int64_t L = sys->layers, p = c->ax[MFU_AX_PP], v = c->vpp < 1 ? 1 : c->vpp;
    if (p <= 1) return L;
    if (c->split == MFU_SPLIT_FIRST_LAST) {
        if (r == 0) return c->pp_first;
        if (r == p - 1) return c->pp_last;
        return (L - c->pp_first - c->pp_last) / (p - 2);
    }
    int acc = c->split == MFU_SPLIT_ACCOUNT;
    int64_t head = acc_head(sys), tail = acc_tail(sys); /* F-OP-MTP's too */
    int64_t S = p * v, eff = L + (acc ? head + tail : 0), n = 0;
    if (c->schedule == MFU_SCHED_DUALPIPEV && v == 2) {
        n = vstage_layers(eff, S, r) + vstage_layers(eff, S, 2 * p - 1 - r);
        return n - (acc && r == 0 ? head + tail : 0);
    }
    for (int64_t s = 0; s < v; s++) n += vstage_layers(eff, S, r + s * p);
    if (acc && r == 0) n -= head;
    if (acc && r == p - 1) n -= tail;
    return n;
}

/* Layers of rank r's model chunk j (virtual stage j*p + r of the loop
 * style), as stage_layers_of splits them: EVEN and ACCOUNT by
 * vstage_layers (ACCOUNT: the embedding and the loss take a layer's place
 * in the first and the last virtual stage); FIRST_LAST spreads each rank's
 * layers over its chunks as evenly as they go, the earlier chunks taking
 * the remainder (Megatron's get_num_layers_to_build with
 * --decoder-first-pipeline-num-layers where the chunks divide; the
 * --pipeline-model-parallel-layout the recipe writes otherwise). Loop style
 * only (a V, DualPipeV, is torchtitan's: its stages are whole). */
int64_t mfu_vstage_decoder_layers(const mfu_system *sys, const mfu_config *c, int64_t r, int64_t j)
{
    int64_t p = c->ax[MFU_AX_PP], v = c->vpp < 1 ? 1 : c->vpp;
    if (p <= 1 && v <= 1) return sys->layers;
    if (c->split == MFU_SPLIT_FIRST_LAST) {
        int64_t n = mfu_stage_layers(sys, c, r);
        return n / v + (j < n % v ? 1 : 0);
    }
    int acc = c->split == MFU_SPLIT_ACCOUNT;
    int64_t S = p * v, i = j * p + r;
    int64_t head = acc_head(sys), tail = acc_tail(sys);
    int64_t n = vstage_layers(sys->layers + (acc ? head + tail : 0), S, i) - (acc && i == 0 ? head : 0) -
                (acc && i == S - 1 ? tail : 0);
    return n > 0 ? n : 0;
}

/* The most layers any virtual stage holds: the remainder goes to the
 * earliest virtual stages (and, FIRST_LAST, to each rank's first chunk), so
 * it is chunk 0 of rank 0, 1 (ACCOUNT's embedding takes rank 0's place) or
 * p-1 (a first/last split's own count). */
int64_t mfu_max_vstage_layers(const mfu_system *sys, const mfu_config *c)
{
    int64_t p = c->ax[MFU_AX_PP], n = mfu_vstage_decoder_layers(sys, c, 0, 0);
    const int64_t other[2] = {1, p - 1};
    for (int i = 0; i < 2 && p > 1; i++) {
        int64_t k = mfu_vstage_decoder_layers(sys, c, other[i], 0);
        if (k > n) n = k;
    }
    return n;
}

/* Virtual stage 0 of the loop style (with ACCOUNT the embedding is one of
 * its layers). A V (DualPipeV) or one chunk: the stage. */
int64_t mfu_chunk0_layers(const mfu_system *sys, const mfu_config *c)
{
    int64_t p = c->ax[MFU_AX_PP], v = c->vpp < 1 ? 1 : c->vpp;
    if (p <= 1 || v <= 1 || c->schedule == MFU_SCHED_DUALPIPEV) return mfu_stage_layers(sys, c, 0);
    return mfu_vstage_decoder_layers(sys, c, 0, 0);
}

void mfu_config_fill_stages(const mfu_system *sys, mfu_config *c)
{
    int64_t p = c->ax[MFU_AX_PP];
    int64_t f = stage_layers_of(sys, c, 0), l = stage_layers_of(sys, c, p - 1);
    int64_t m = p > 2 ? stage_layers_of(sys, c, 1) : p == 2 ? l : f;
    c->pp_first = f;
    c->pp_last = l;
    c->pp_mid = m;
}

int64_t mfu_stage_layers(const mfu_system *sys, const mfu_config *c, int64_t r)
{
    int64_t p = c->ax[MFU_AX_PP];
    if (c->pp_first | c->pp_mid | c->pp_last) {
        if (r == 0) return c->pp_first;
        if (r == p - 1) return c->pp_last;
        if (r == 1) return c->pp_mid;
    }
    return stage_layers_of(sys, c, r);
}

void mfu_config_stages(const mfu_system *sys, const mfu_config *c, mfu_stages *out)
{
    int64_t p = c->ax[MFU_AX_PP];
    out->first = mfu_stage_layers(sys, c, 0);
    out->last = mfu_stage_layers(sys, c, p - 1);
    out->mid_stage = p > 2 ? 1 : 0;
    out->mid = p > 2 ? mfu_stage_layers(sys, c, 1) : out->first;
}

int mfu_config_default_split(const mfu_system *sys, mfu_config *c)
{
    int64_t L = sys->layers, p = c->ax[MFU_AX_PP], v = c->vpp < 1 ? 1 : c->vpp;
    c->pp_first = c->pp_last = c->pp_mid = 0;
    c->split = MFU_SPLIT_EVEN;
    if (p <= 1 || (L % p == 0 && (L / p) % v == 0)) {
        mfu_config_fill_stages(sys, c);
        return MFU_OK;
    }
    /* the embedding, the loss and the MTP layers as layers; a decoder layer
     * at least on the first and last stage */
    int64_t A = L + acc_head(sys) + acc_tail(sys), lo = 1 + (acc_head(sys) > acc_tail(sys) ? acc_head(sys) : acc_tail(sys));
    int v_ok = c->schedule == MFU_SCHED_DUALPIPEV ? 2 * (A / (p * v)) >= acc_head(sys) + acc_tail(sys)
                                                  : A / (p * v) >= acc_tail(sys);
    if (A % p == 0 && (A / p) % v == 0 && A / p >= lo && v_ok) {
        c->split = MFU_SPLIT_ACCOUNT;
        mfu_config_fill_stages(sys, c);
        return MFU_OK;
    }
    /* first/last stages take the remainder: middle stages ceil(L/p)
     * rounded up to a multiple of v; the last stage (LM head, loss) gets
     * the smaller share (Megatron: each divisible by vpp, > 0) */
    if (p > 2 && c->schedule != MFU_SCHED_DUALPIPEV) {
        int64_t mid = (L + p - 1) / p;
        mid = (mid + v - 1) / v * v;
        for (; mid >= v; mid -= v) {
            int64_t rest = L - (p - 2) * mid;
            if (rest < 2 * v) continue;
            int64_t last = rest / 2 / v * v, first = rest - last;
            if (last < v || first > mid + v || first % v) continue;
            c->split = MFU_SPLIT_FIRST_LAST;
            c->pp_first = first;
            c->pp_last = last;
            mfu_config_fill_stages(sys, c);
            return MFU_OK;
        }
    }
    c->split = MFU_SPLIT_EVEN; /* torchtitan's split, remainder to the first stages */
    mfu_config_fill_stages(sys, c);
    return L >= p * v ? MFU_OK : MFU_EILLEGAL;
}

/* ---- micro-batches in flight -------------------------------------------- */

double mfu_inflight(mfu_schedule s, int64_t pp, int64_t vpp, int64_t m, int64_t stage)
{
    double p = (double)pp, v = (double)(vpp < 1 ? 1 : vpp), mm = (double)m, r = (double)stage;
    if (pp <= 1) return 1.0;
    switch (s) {
    case MFU_SCHED_INTERLEAVED: {
        /* Megatron-LM schedules.py get_pp_rank_microbatches: warmup
         * 2(p-r-1) + (v-1) g with g = p (microbatch_group_size_per_vp_stage
         * default), capped at m v; one more chunk is live in steady state */
        double chunks = mfu_dmin(2.0 * (p - r - 1.0) + (v - 1.0) * p + 1.0, mm * v);
        return chunks / v;
    }
    case MFU_SCHED_GPIPE:
        /* MaxText layers/pipeline.py: one scan over every micro-batch with
         * each iteration's input saved; all are live when backward starts */
        return mm;
    case MFU_SCHED_DUALPIPEV:
        /* DualPipe dualpipev.py: every rank runs 2(p-r-1) + (r+1) forwards
         * of its first chunk and r+1 of its second before its first
         * backward (2p chunks), and the main step's F0 comes before its B1
         * (+1): 2p + 1 chunks of half the rank's layers on every rank (the
         * repository's table: "PP+1" activations of its PP = 2p stages) */
        return mfu_dmin(2.0 * p + 1.0, 2.0 * mm) / 2.0;
    default:
        /* 1F1B (schedules.py forward_backward_pipelining_without_interleaving:
         * warmup min(p-r-1, m), +1 in steady state); ZB-H1 keeps 1F1B's
         * peak (Qi et al. 2023 sec. 3) */
        return mfu_dmin(p - r, mm);
    }
}

/* ---- frameworks ------------------------------------------------------------ */

unsigned mfu_platform_frameworks(const mfu_hardware *hw)
{
    return hw->platform == MFU_PLATFORM_TPU ? MFU_FW_MASK(MFU_FW_MAXTEXT)
                                            : MFU_FW_MASK(MFU_FW_MEGATRON) | MFU_FW_MASK(MFU_FW_TORCHTITAN);
}

/* Whether Megatron's classic split flags express c's split: an even split
 * (no flag), --account-for-embedding/loss-in-pipeline-split or
 * --decoder-first/last-pipeline-num-layers, each of which needs exact
 * division (arguments.py, transformer_config.py, transformer_block.py
 * get_num_layers_to_build). Else the recipe writes the layout (FW-M6). */
int mfu_megatron_split_flags(const mfu_system *sys, const mfu_config *c)
{
    int64_t pp = c->ax[MFU_AX_PP], v = c->vpp < 1 ? 1 : c->vpp, L = sys->layers;
    if (pp <= 1) return 1;
    switch (c->split) {
    case MFU_SPLIT_EVEN: return L % pp == 0 && (L / pp) % v == 0;
    /* Megatron's --account-for-loss-in-pipeline-split counts no MTP layer:
     * with them the split is written as a layout ("m" before "L") */
    case MFU_SPLIT_ACCOUNT: return (L + 2) % pp == 0 && ((L + 2) / pp) % v == 0 && sys_mtp(sys) == 0;
    case MFU_SPLIT_FIRST_LAST:
        return c->pp_first >= 1 && c->pp_last >= 1 && c->pp_first % v == 0 && c->pp_last % v == 0 &&
               (pp <= 2 || ((L - c->pp_first - c->pp_last) / (pp - 2)) % v == 0);
    default: return 0;
    }
}

/* Each framework's rules, grouped by the level of the search that knows
 * what they read: MFU_LV_SHAPE (axes, etp, sp), MFU_LV_MBS (mbs with
 * them), MFU_LV_SCHED (zero,
 * batch, schedule, vpp, split), MFU_LV_RC (recompute). */
static const char *megatron_rule(const mfu_system *sys, const mfu_config *c, unsigned lv)
{
    int64_t fsdp = c->ax[MFU_AX_FSDP], tp = c->ax[MFU_AX_TP];
    int64_t pp = c->ax[MFU_AX_PP], m = c->grad_accum;
    if (lv & MFU_LV_SHAPE) {
        /* FSDP: torch FSDP2 (--use-torch-fsdp2: pp 1, ep 1) or, with
         * experts or a replica axis (HSDP), Megatron-FSDP's
         * optim_grads_params (--use-megatron-fsdp; HSDP through
         * --num-distributed-optimizer-instances); neither with PP (FSDP2
         * asserts pp 1; Megatron-FSDP with PP is unvalidated, as FW-M2) */
        if (fsdp > 1 && pp > 1)
            return "FW-M1: FSDP (torch FSDP2 or Megatron-FSDP) with pipeline parallelism";
        if (sys->moe_layers > 0 && tp > 1 && !c->sp)
            return "FW-M3: MoE with tp > 1 needs sequence parallel (MoELayer raises without it)";
        /* FSDP2 (no replica axis, no experts; else Megatron-FSDP, which
         * has no such assert) */
        if (fsdp > 1 && sys->model->tie_embeddings && c->ax[MFU_AX_DP] == 1 && c->ax[MFU_AX_EP] == 1)
            return "FW-M8: --use-torch-fsdp2 requires --untie-embeddings-and-output-weights";
        if (sys->train.vocab_tiles > 1 || sys->train.optimizer_offload)
            return "FW-M9: Megatron-LM has no token-chunked loss with recomputed logits nor host-resident optimizer moments";
        if (sys->train.ce_eager)
            return "FW-M10: Megatron-LM's loss is its vocab_parallel_cross_entropy, not an eager F.cross_entropy(logits.float())";
    }
    if (lv & MFU_LV_RC) {
        if (!(sys->rc[c->recompute].frameworks & MFU_FW_MASK(MFU_FW_MEGATRON)))
            return "FW-M7: the recompute policy is not a set of --recompute-modules";
    }
    if (!(lv & MFU_LV_SCHED)) return NULL;
    if (fsdp > 1 && c->zero)
        return "FW-M1: FSDP shards the optimizer already (ZeRO-1/2 on top of it is not a Megatron setting)";
    if (c->zero == 2 && pp > 1)
        return "FW-M2: ZeRO-2 (Megatron-FSDP optim_grads) is not validated with pipeline parallelism";
    /* zero 3: FSDP over the cp ranks alone, the fsdp axis's rules (FW-M1, FW-M8) */
    if (c->zero == 3) {
        if (pp > 1) return "FW-M1: FSDP (torch FSDP2 or Megatron-FSDP) with pipeline parallelism";
        if (sys->model->tie_embeddings && c->ax[MFU_AX_DP] == 1 && c->ax[MFU_AX_EP] == 1)
            return "FW-M8: --use-torch-fsdp2 requires --untie-embeddings-and-output-weights";
    }
    if (c->schedule != MFU_SCHED_1F1B && c->schedule != MFU_SCHED_INTERLEAVED)
        return "FW-M4: Megatron-LM schedules are 1F1B and interleaved 1F1B";
    if (c->schedule == MFU_SCHED_INTERLEAVED && (m < pp || m % pp))
        return "FW-M5: interleaved needs micro-batches >= pp and a multiple of pp";
    /* core_r0.8 arguments.py (and v2.5's, which had no p2p overlap): "when
     * interleaved schedule is used and p2p communication overlap is
     * disabled, pipeline-model-parallel size should be greater than 2" */
    if (c->schedule == MFU_SCHED_INTERLEAVED && pp <= 2 && sys->train.pp_no_overlap_p2p)
        return "FW-M5: interleaved without p2p overlap needs pp > 2";
    /* FW-M6: a split the classic flags cannot express (mfu_megatron_split_flags)
     * is written out as --pipeline-model-parallel-layout, which places any
     * count of decoder layers, none included, in each virtual stage
     * (Megatron-Core core_v0.13.0 on, 77732c3628: transformer/
     * pipeline_parallel_layer_layout.py; Megatron Bridge's DeepSeek-V3
     * recipes launch 61 layers over 4 x 4 virtual stages so). Every loop-
     * style split is launchable; only the V is not (FW-M4). */
    return NULL;
}

/* torchtitan builds its own model families only (v0.2.2 torchtitan/models:
 * llama3, llama4, qwen3, deepseek_v3): RMSNorm, RoPE, gated SiLU MLPs, no
 * linear or QKV biases, no sliding windows, GQA or MLA attention. Not
 * rendered by mfud's torchtitan recipe either (api/recipe.c): linear
 * attention (GLA, Gated DeltaNet), attention sinks, output gates,
 * attention-output or expert biases, shared-expert gates, and Llama 4's
 * chunked attention and NoPE layers (llama4 args every_n_layers_nope /
 * fixed_attn_block_size, which the recipe does not set). */
static int torchtitan_family(const mfu_model *m)
{
    if (m->norm != MFU_NORM_RMS || m->position != MFU_POS_ROPE || m->bias) return 0;
    for (int r = 0; r < m->n_runs; r++) {
        const mfu_attention *at = &m->runs[r].attn;
        const mfu_mlp *mp = &m->runs[r].mlp;
        if (at->kind == MFU_ATTN_GLA || at->kind == MFU_ATTN_GDN || at->window > 0 || at->qkv_bias)
            return 0;
        if (at->chunk > 0 || at->nope || at->sinks || at->out_bias || at->output_gate) return 0;
        if (!mp->gated || mp->act != MFU_ACT_SILU) return 0;
        if (mp->bias || mp->shared_gate) return 0;
    }
    return 1;
}

/* The models torchtitan v0.2.2 builds as its qwen3 family (the family
 * api/recipe_torchtitan.c renders them as): MoE without MLA (qwen3's MoE;
 * torchtitan has no Mixtral) and the dense qwen3 shape (q/k RMSNorm). */
static int torchtitan_qwen3(const mfu_system *sys)
{
    const mfu_model *m = sys->model;
    int mla = 0, qkn = 0;
    for (int r = 0; r < m->n_runs; r++) {
        mla |= m->runs[r].attn.kind == MFU_ATTN_MLA;
        qkn |= m->runs[r].attn.qk_norm == MFU_QKN_RMS;
    }
    return (sys->moe_layers > 0 && !mla) || qkn;
}

static const char *torchtitan_rule(const mfu_system *sys, const mfu_config *c, unsigned lv)
{
    int64_t fsdp = c->ax[MFU_AX_FSDP], tp = c->ax[MFU_AX_TP], cp = c->ax[MFU_AX_CP];
    int64_t pp = c->ax[MFU_AX_PP], ep = c->ax[MFU_AX_EP], v = c->vpp, m = c->grad_accum;
    if ((lv & MFU_LV_SHAPE) && tp > 1 && !c->sp) return "FW-T2: torchtitan applies sequence parallel with tp";
    if (lv & MFU_LV_MBS) {
        int64_t div = (c->sp ? tp : 1) * (cp > 1 ? 2 * cp : 1);
        if ((c->mbs * sys->train.seq) % div)
            return "FW-T3: tokens per micro-batch must divide by tp * 2cp";
    }
    if (lv & MFU_LV_SHAPE) {
        if (ep > 1 && ((c->etp != 1 && c->etp != tp) || (fsdp * cp * tp) % (ep * c->etp)))
            return "FW-T4: ep borrows from fsdp * cp * tp (not the replica axis); etp is 1 or tp";
        if (sys->moe_layers == 0 && c->etp != 1) return "FW-T4: etp needs MoE";
        if (sys->train.vocab_tiles > 1 || sys->train.optimizer_offload)
            return "FW-T13: torchtitan has no token-chunked loss with recomputed logits nor host-resident optimizer moments";
        for (int r = 0; r < sys->model->n_runs; r++) {
            const mfu_attention *at = &sys->model->runs[r].attn;
            if (at->kind != MFU_ATTN_MLA && at->n_kv_heads % tp)
                return "FW-T10: torchtitan needs tp to divide the KV heads (models/common/decoder.py)";
        }
        if (pp > 1 && sys->model->tie_embeddings)
            return "FW-T9: pipeline parallelism with tied embeddings is rejected";
        /* v0.2.2 torchtitan/models/qwen3/__init__.py: the TrainSpec has no
         * pipelining_fn (train.py raises "does not support pipelining");
         * main gave it one in 2026-03 (#2461), after its configuration
         * moved from TOML to Python (#2386), which mfud's recipes do not
         * write: a layout that needs it has no recipe that runs as printed */
        if (pp > 1 && torchtitan_qwen3(sys))
            return "FW-T15: torchtitan v0.2.2 builds this model as qwen3, whose TrainSpec has no pipelining_fn";
        /* v0.2.2 torchtitan/models/deepseek_v3 builds no multi-token
         * prediction module (F-OP-MTP) */
        if (sys_mtp(sys) > 0)
            return "FW-T16: torchtitan v0.2.2 has no multi-token prediction (MTP) layers";
        if (!torchtitan_family(sys->model))
            return "FW-T12: torchtitan builds its model families only (RMSNorm, RoPE, SwiGLU, no biases, sliding windows, linear attention, sinks or gates)";
        if (c->ax[MFU_AX_DP] > 1 && fsdp == 1 && cp == 1 && (tp > 1 || pp > 1))
            return "FW-T11: a replica axis without FSDP is DDP, which torchtitan runs only alone (\"DDP has not supported > 1D parallelism\")";
    }
    if (lv & MFU_LV_RC) {
        if (!(sys->rc[c->recompute].frameworks & MFU_FW_MASK(MFU_FW_TORCHTITAN)))
            return "FW-T7: torchtitan recomputes none, op-level selective, or full";
    }
    if (!(lv & MFU_LV_SCHED)) return NULL;
    if (c->zero == 1 || c->zero == 2) return "FW-T1: torchtitan shards with FSDP only (no ZeRO-1/2 on the replica axis)";
    /* parallel_dims.py: fsdp_enabled = dp_shard > 1 or cp > 1, and
     * parallelize.py wraps the model in FSDP over the dp_shard x cp mesh:
     * with cp > 1 and dp_shard 1 the cp ranks shard it (zero 3), never
     * replicate it */
    if (cp > 1 && fsdp == 1 && c->zero != 3)
        return "FW-T14: torchtitan shards the model over the cp ranks (FSDP over dp_shard x cp): zero 3, not replicas";
    if (pp > 1) {
        if (c->schedule == MFU_SCHED_ZB) return "FW-T5: torchtitan's zero-bubble schedules are interleaved/V, not ZB-H1";
        if (c->schedule == MFU_SCHED_1F1B && m < pp) return "FW-T5: Schedule1F1B needs micro-batches >= stages";
        if (c->schedule == MFU_SCHED_GPIPE && v != 1) return "FW-T5: GPipe runs one stage per rank";
        if (c->schedule == MFU_SCHED_INTERLEAVED) {
            int64_t g = m / pp > 1 ? m / pp : 1;
            if (m % g) return "FW-T5: Interleaved1F1B needs micro-batches divisible by max(1, m // pp)";
        }
        /* generate_llm_fqn_per_model_part (v0.2.2 pipeline_parallel.py):
         * (L + input_weight + output_weight) // stages >= 1 and each weight
         * no more than that; a stage may hold the embedding alone, or the
         * norm and output alone (the CI's pp_looped_1f1b: 6 layers + 2 over
         * 8 stages) */
        int64_t S = pp * v, eff = sys->layers + (c->split == MFU_SPLIT_ACCOUNT ? 2 : 0);
        if (c->split != MFU_SPLIT_FIRST_LAST && eff / S < 1)
            return "FW-T6: the automatic split needs at least one layer (or the embedding, or the output) per stage";
    }
    return NULL;
}

static const char *maxtext_rule(const mfu_system *sys, const mfu_config *c, unsigned lv)
{
    int64_t fsdp = c->ax[MFU_AX_FSDP], pp = c->ax[MFU_AX_PP], ep = c->ax[MFU_AX_EP];
    int64_t v = c->vpp;
    if (lv & MFU_LV_SHAPE) {
        /* base.yml logical_axis_rules: 'exp' -> expert, 'mlp_moe' ->
         * fsdp_transpose, tensor, ...: the experts' hidden dimension splits
         * over the tensor axis, so expert TP is tp */
        if (c->etp != (sys->moe_layers > 0 ? c->ax[MFU_AX_TP] : 1) || (ep > 1 && fsdp % ep))
            return "FW-X2: MaxText's expert axis shards like fsdp (ep must divide fsdp) and its experts split over tensor (etp = tp)";
        if (sys->train.ce_eager)
            return "FW-X8: MaxText's loss is XLA-compiled, not an eager F.cross_entropy(logits.float())";
        /* base.yml logical_axis_rules: 'activation_embed' -> tensor: the
         * [batch, length, embed] activations between the projections (the
         * layer's input, residuals, norms) split their embedding over the
         * tensor axis, as Megatron's sequence parallelism splits them over
         * the sequence: a 1/tp share kept, an all-gather before the
         * projections and a reduce-scatter after. MaxText has no layout
         * that keeps them whole on every tensor rank */
        if (c->ax[MFU_AX_TP] > 1 && !c->sp)
            return "FW-X7: MaxText splits the activations' embedding over the tensor axis (logical_axis_rules 'activation_embed'): with tp, sp";
    }
    if (lv & MFU_LV_RC) {
        if (!(sys->rc[c->recompute].frameworks & MFU_FW_MASK(MFU_FW_MAXTEXT)))
            return "FW-X5: not a MaxText remat_policy";
        /* remat_policy 'full' is jax.checkpoint around every decoder layer
         * (decoders.py set_remat_policy): no count of layers */
        if (c->recompute == MFU_RC_FULL && c->recompute_layers != -1)
            return "FW-X5: MaxText's remat_policy full recomputes every layer (no recompute_layers)";
    }
    if (!(lv & MFU_LV_SCHED)) return NULL;
    if (c->zero == 2) return "FW-X1: MaxText shards optimizer state over data (ZeRO-1) or everything over fsdp";
    /* base.yml logical_axis_rules: 'embed' -> fsdp, fsdp_transpose, context,
     * context_usp_ulysses, expert: the weights shard over the context
     * axis too */
    if (c->ax[MFU_AX_CP] > 1 && c->ax[MFU_AX_FSDP] == 1 && c->zero != 3)
        return "FW-X6: MaxText shards the weights over the context axis (logical_axis_rules 'embed'): zero 3, not replicas";
    if (pp > 1) {
        /* MaxText's decoder layers (Gemma 2's are pairs: F-MEM-SCAN-UNIT) */
        int64_t L = sys->layers / sys->scan_unit;
        if (c->schedule != MFU_SCHED_GPIPE) return "FW-X4: MaxText pipelines are GPipe / circular";
        if (c->grad_accum % pp) return "FW-X4: num_pipeline_microbatches must be a multiple of the stages";
        if (L % (pp * v) || c->split != MFU_SPLIT_EVEN)
            return "FW-X4: stages * repeats * layers per stage must equal the layers";
    }
    return NULL;
}

unsigned mfu_config_frameworks_at(const mfu_system *sys, const mfu_config *c, unsigned levels,
                                  unsigned candidates, const char *why_not[MFU_FW_COUNT])
{
    unsigned platform = mfu_platform_frameworks(sys->hw), plat = platform & candidates, mask = 0;
    for (int f = 0; f < MFU_FW_COUNT; f++) {
        const char *w;
        if (!(plat & MFU_FW_MASK(f))) {
            /* the search's calls (why_not NULL) skip the reason */
            if (why_not)
                why_not[f] = !(platform & MFU_FW_MASK(f))
                                 ? (sys->hw->platform == MFU_PLATFORM_TPU ? "not a TPU framework" : "not a GPU framework")
                                 : "not asked for";
            continue;
        }
        if (f == MFU_FW_MEGATRON) w = megatron_rule(sys, c, levels);
        else if (f == MFU_FW_TORCHTITAN) w = torchtitan_rule(sys, c, levels);
        else w = maxtext_rule(sys, c, levels);
        if (!w) mask |= MFU_FW_MASK(f);
        if (why_not) why_not[f] = w;
    }
    return mask;
}

unsigned mfu_config_frameworks_sched(const mfu_system *sys, const mfu_config *c, unsigned candidates)
{
    /* the rules inlined at one level: the other levels' checks fold away
     * (the search asks this once per schedule point, 2.9 M times for
     * DeepSeek-V3 on 2,048 H800s; through mfu_config_frameworks_at it was
     * 10 % of the search's instructions) */
    unsigned mask = 0;
    if ((candidates & MFU_FW_MASK(MFU_FW_MEGATRON)) && !megatron_rule(sys, c, MFU_LV_SCHED))
        mask |= MFU_FW_MASK(MFU_FW_MEGATRON);
    if ((candidates & MFU_FW_MASK(MFU_FW_TORCHTITAN)) && !torchtitan_rule(sys, c, MFU_LV_SCHED))
        mask |= MFU_FW_MASK(MFU_FW_TORCHTITAN);
    if ((candidates & MFU_FW_MASK(MFU_FW_MAXTEXT)) && !maxtext_rule(sys, c, MFU_LV_SCHED))
        mask |= MFU_FW_MASK(MFU_FW_MAXTEXT);
    return mask;
}

unsigned mfu_config_frameworks(const mfu_system *sys, const mfu_config *c,
                               const char *why_not[MFU_FW_COUNT])
{
    return mfu_config_frameworks_at(sys, c, MFU_LV_ALL, MFU_FW_ALL, why_not);
}
