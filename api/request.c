/* api/request.c -- requests: resolve model and hardware (preset, hf_config,
 * IR; overrides) and validate every field with its JSON pointer. The
 * normal form, its key and the prepared request are api/prepared.c's; the
 * engines api/engines.c's (api/request_int.h joins them).
 *
 * Normal form: the request is parsed into core structs and rendered back
 * with every default filled in and every number in its canonical type, so
 * `4096` and `4096.0`, key order, defaults and aliases all give one
 * normalized document -- and one cache key. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "internal.h"
#include "jsonv.h"
#include "sha256.h"
#include "request_int.h"

const char *const rq_convs[] = {"causal", "full", "none", NULL};
const char *const rq_impls[] = {"flash", "unfused", NULL};
const char *const rq_dtypes[] = {"bf16", "fp16", "fp8", "fp32", NULL};
const char *const api_schedule_names[] = {"1f1b", "interleaved", "zb", "gpipe", "dualpipev", NULL};
/* the recompute slots of core/system.h; "custom" is what "selective" with
 * a recompute_modules list that no named policy has becomes */
const char *const api_recompute_names[] = {"none", "selective", "minimal", "save_dot_except_mlp",
                                           "mla_up", "op_sac", "full", "custom", "qkv_proj_offloaded",
                                           "minimal_offloaded", "maxtext", "cpu_offload", NULL};
/* the names a request may give, and the slot each is; "custom" is how an
 * answer names a selective module set no named policy has: "selective"
 * with its recompute_modules */
static const char *const RC_INPUT[] = {"none", "selective", "minimal", "save_dot_except_mlp", "mla_up",
                                       "op_sac", "full", "qkv_proj_offloaded", "minimal_offloaded", "maxtext",
                                       "cpu_offload", "custom", NULL};
static const int RC_INPUT_SLOT[] = {MFU_RC_NONE, MFU_RC_SELECTIVE, MFU_RC_MINIMAL,
                                    MFU_RC_SAVE_DOT_EXCEPT_MLP, MFU_RC_MLA_UP, MFU_RC_OP_SAC, MFU_RC_FULL,
                                    MFU_RC_QKV_OFFLOADED, MFU_RC_MINIMAL_OFFLOADED, MFU_RC_MAXTEXT,
                                    MFU_RC_CPU_OFFLOAD, MFU_RC_SELECTIVE};
/* "recompute": "maxtext" with "remat": {name: "remat" | "device" |
 * "offload"}, MaxText's remat_policy custom (src/maxtext/configs/base.yml
 * names; decoder_layer_input "device", the rest "remat" by default). mfud
 * keeps the names of one tensor family together (F-RC-MAXTEXT). */
static const struct {
    const char *name;
    unsigned mx;
} REMAT_NAMES[] = {{"decoder_layer_input", MFU_MX_INPUT}, {"query_proj", MFU_MX_QKV},
                   {"key_proj", MFU_MX_QKV},             {"value_proj", MFU_MX_QKV},
                   {"kv_proj", MFU_MX_QKV},              {"qkv_proj", MFU_MX_QKV},
                   {"context", MFU_MX_CONTEXT},          {"out_proj", MFU_MX_OUT},
                   {"mlpwi", MFU_MX_WI},                 {"mlpwi_0", MFU_MX_WI},
                   {"mlpwi_1", MFU_MX_WI},               {"moe_mlpwi_0", MFU_MX_WI},
                   {"moe_mlpwi_1", MFU_MX_WI},           {"mlpwo", MFU_MX_WO},
                   {"moe_mlpwo", MFU_MX_WO}};
#define N_REMAT_NAMES (sizeof REMAT_NAMES / sizeof *REMAT_NAMES)
static const char *const REMAT_STATES[] = {"remat", "device", "offload", NULL};
const char *const api_split_names[] = {"even", "account", "first_last", NULL};
const char *const rq_frameworks[] = {"megatron", "torchtitan", "maxtext", "any", NULL};
const char *const rq_grad_dtypes[] = {"fp32", "bf16", NULL};
/* MFU_FP8_* order (core/roofline.h), as Megatron's --fp8-recipe names them */
const char *const rq_fp8_recipes[] = {"tensorwise", "delayed", "blockwise", "mxfp8", NULL};
const char *const rq_axes[] = {"dp", "fsdp", "tp", "ep", "pp", "cp", NULL};
const char *const rq_ranks[] = {"expected", "bound", NULL};
/* search.distinct: indexed by MFU_DISTINCT_* */
const char *const rq_distinct[] = {"none", "layout", NULL};

/* ---- request parsing ----------------------------------------------------- */

void api_request_free(api_request *r)
{
    json_decref(r->model_ir);
    json_decref(r->model_source);
    json_decref(r->model_overridden);
    json_decref(r->hw_json);
    json_decref(r->hw_overridden);
    memset(r, 0, sizeof *r);
}

/* A recompute_modules list -> MFU_RCM_* mask (0 with an error). */
static unsigned parse_modules(json_t *arr, const char *ptr, api_status *st)
{
    if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > 16) {
        api_fail(st, 422, ptr, "must be an array of 1 to 16 module names: core_attn, layernorm, mlp, moe_act, moe, mla_up_proj, shared_experts, act, expert_gemm");
        return 0;
    }
    unsigned mask = 0;
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        int found = -1;
        for (int k = 0; json_is_string(e) && k < MFU_RCM_COUNT; k++)
            if (!strcmp(json_string_value(e), mfu_rcm_names[k])) found = k;
        if (found < 0) {
            char q[256];
            api_fail(st, 422, jv_ptr_i(q, sizeof q, ptr, i),
                     "unknown module; modules: core_attn, layernorm, mlp, moe_act, moe, mla_up_proj, shared_experts, act, expert_gemm");
            return 0;
        }
        mask |= 1u << found;
    }
    return mask;
}

/* The recompute slot of {"recompute": name, "recompute_modules": [...]} in
 * obj (a config or search.fix). -1 if absent (def used), -2 on error.
 * *custom receives a module set no named policy has. */
/* The "remat" object of a "maxtext" policy -> (device, host) MFU_MX_*
 * masks; -1 on error. */
int rq_parse_remat(json_t *rj, const char *ptr, unsigned *device, unsigned *host, api_status *st)
{
    char q[256];
    if (!json_is_object(rj)) {
        api_fail(st, 422, ptr, "must be an object {name: \"remat\" | \"device\" | \"offload\"} of MaxText checkpoint names");
        return -1;
    }
    int state[MFU_MX_COUNT], seen[MFU_MX_COUNT] = {0};
    for (int k = 0; k < MFU_MX_COUNT; k++) state[k] = (1u << k) == MFU_MX_INPUT ? 1 : 0;
    const char *key;
    json_t *val;
    json_object_foreach(rj, key, val) {
        size_t i = 0;
        while (i < N_REMAT_NAMES && strcmp(key, REMAT_NAMES[i].name)) i++;
        if (i == N_REMAT_NAMES) {
            api_fail(st, 422, jv_ptr(q, sizeof q, ptr, key),
                     "unknown name; MaxText's: decoder_layer_input, query_proj, key_proj, value_proj, kv_proj, "
                     "qkv_proj, context, out_proj, mlpwi, mlpwi_0, mlpwi_1, moe_mlpwi_0, moe_mlpwi_1, mlpwo, moe_mlpwo");
            return -1;
        }
        int v;
        if (jv_enum(rj, key, ptr, JV_REQUIRED, 0, REMAT_STATES, &v, st)) return -1;
        int k = 0;
        while ((1u << k) != REMAT_NAMES[i].mx) k++;
        if (REMAT_NAMES[i].mx == MFU_MX_INPUT && v == 0) {
            api_fail(st, 422, jv_ptr(q, sizeof q, ptr, key),
                     "the layer input is the checkpoint recompute starts from: \"device\" or \"offload\"");
            return -1;
        }
        if (seen[k] && state[k] != v) {
            api_fail(st, 422, jv_ptr(q, sizeof q, ptr, key),
                     "mfud keeps one choice for a tensor family (the q/k/v projections; the MLP input "
                     "projections; the MLP outputs): this name differs from another of its family");
            return -1;
        }
        seen[k] = 1;
        state[k] = v;
    }
    *device = *host = 0;
    for (int k = 0; k < MFU_MX_COUNT; k++) {
        if (state[k] == 1) *device |= 1u << k;
        if (state[k] == 2) *host |= 1u << k;
    }
    return 0;
}

/* MaxText's remat_policy names that save only these names on the device
 * and recompute the rest (src/maxtext/layers/decoders.py get_remat_policy:
 * jax.checkpoint_policies.save_only_these_names; minimal_with_context saves
 * every dot). The layer's input is kept as always (the scan's carry). A
 * measured MaxText run can say its policy as its config did; it is the
 * "maxtext" policy with those names (F-RC-MAXTEXT). */
static const struct {
    const char *name;
    unsigned device;
} MX_ALIASES[] = {
    /* save_dot_except_mlp and minimal are policies of their own (RC_INPUT) */
    {"save_qkv_proj", MFU_MX_QKV},
    {"save_dot_except_mlpwi", MFU_MX_QKV | MFU_MX_OUT | MFU_MX_WO},
    {"save_dot_with_context_except_mlp", MFU_MX_QKV | MFU_MX_CONTEXT | MFU_MX_OUT},
    {"save_out_proj", MFU_MX_OUT},
    {"minimal_with_context", MFU_MX_QKV | MFU_MX_CONTEXT | MFU_MX_OUT | MFU_MX_WI | MFU_MX_WO},
};

/* MaxText's own minimal and save_dot_except_mlp keep no context
 * (decoders.py get_remat_policy: save_only_these_names of the projections;
 * the _with_context variants add it), where mfud's policies of those names
 * keep it. A measured run on a TPU that names one ran MaxText's: read as
 * MaxText means it, unless the configuration is an answer's given back
 * (it lists the policy's recompute_modules), which reads as it came. */
static const struct {
    const char *name;
    unsigned device;
} MX_TPU_ALIASES[] = {
    {"minimal", MFU_MX_QKV | MFU_MX_OUT | MFU_MX_WI | MFU_MX_WO},
    {"save_dot_except_mlp", MFU_MX_QKV | MFU_MX_OUT},
};

static int mx_alias_tpu(const char *name, unsigned *device)
{
    for (size_t i = 0; i < sizeof MX_TPU_ALIASES / sizeof *MX_TPU_ALIASES; i++)
        if (!strcmp(name, MX_TPU_ALIASES[i].name)) {
            *device = MFU_MX_INPUT | MX_TPU_ALIASES[i].device;
            return 1;
        }
    return 0;
}

static int mx_alias(const char *name, unsigned *device)
{
    for (size_t i = 0; i < sizeof MX_ALIASES / sizeof *MX_ALIASES; i++)
        if (!strcmp(name, MX_ALIASES[i].name)) {
            *device = MFU_MX_INPUT | MX_ALIASES[i].device;
            return 1;
        }
    return 0;
}

/* A MaxText policy that places the names itself (F-RC-MAXTEXT). */
static int fixed_names(int slot)
{
    return slot == MFU_RC_QKV_OFFLOADED || slot == MFU_RC_MINIMAL_OFFLOADED;
}

/* A MaxText policy name read as "maxtext" with its names on the device. */
static int alias_policy(json_t *obj, const char *ptr, unsigned alias, unsigned mx[2], api_status *st)
{
    char p[256];
    json_t *name = json_object_get(obj, "recompute");
    if (json_object_get(obj, "remat")) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "remat"),
                 "MaxText's %s places the names itself; names of your own are \"recompute\": \"maxtext\" "
                 "with its remat", json_string_value(name));
        return -2;
    }
    if (json_object_get(obj, "recompute_modules")) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "recompute_modules"),
                 "only with \"recompute\": \"selective\" (Megatron --recompute-modules)");
        return -2;
    }
    if ((mx[0] | mx[1]) && (mx[0] != alias || mx[1] != 0u)) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "recompute"), "a request may name one maxtext remat policy; it names two");
        return -2;
    }
    mx[0] = alias;
    mx[1] = 0u;
    return MFU_RC_MAXTEXT;
}

int rq_parse_recompute(json_t *obj, const char *ptr, int def, int echo, unsigned *custom, unsigned mx[2],
                       api_status *st)
{
    char p[256];
    json_t *name = json_object_get(obj, "recompute");
    json_t *mods = json_object_get(obj, "recompute_modules");
    json_t *remat = json_object_get(obj, "remat");
    int v = def, named = 0; /* a policy by name, not a module set */
    unsigned alias = 0;
    int tpu_run = (echo & RQ_ECHO_TPU) && !json_is_array(mods);
    echo &= RQ_ECHO;
    if (json_is_string(name) && (mx_alias(json_string_value(name), &alias) ||
                                 (tpu_run && mx_alias_tpu(json_string_value(name), &alias))))
        return alias_policy(obj, ptr, alias, mx, st);
    if (name) {
        int k;
        if (jv_enum(obj, "recompute", ptr, JV_REQUIRED, 0, RC_INPUT, &k, st)) return -2;
        v = RC_INPUT_SLOT[k];
        named = v != MFU_RC_SELECTIVE;
        if (!strcmp(RC_INPUT[k], "custom") && !mods) {
            api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "recompute_modules"),
                     "\"custom\" is a module set: give its recompute_modules");
            return -2;
        }
    }
    /* An answer names its policy and lists what it recomputes on the model
     * (render.c): the modules ([] for none, full and cpu_offload) and, for
     * MaxText's policies that place the names themselves, the names.
     * Given back (echo: a measured configuration) they are the policy's
     * echo, not read here: rq_parse_config reads and checks them against
     * the policy on the model (check_rc_echo). */
    if (echo && named && json_is_array(mods)) mods = NULL;
    if (echo && remat && fixed_names(v)) remat = NULL;
    if (remat && v != MFU_RC_MAXTEXT) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "remat"), "only with \"recompute\": \"maxtext\"");
        return -2;
    }
    if (name && v == MFU_RC_MAXTEXT) {
        unsigned d = MFU_MX_INPUT, h = 0;
        if (remat && rq_parse_remat(remat, jv_ptr(p, sizeof p, ptr, "remat"), &d, &h, st)) return -2;
        if ((mx[0] | mx[1]) && (mx[0] != d || mx[1] != h)) {
            api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "remat"),
                     "a request may name one maxtext remat policy; it names two");
            return -2;
        }
        mx[0] = d;
        mx[1] = h;
    }
    if (!mods) return name ? v : -1;
    if (name && v != MFU_RC_SELECTIVE) {
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "recompute_modules"),
                 "only with \"recompute\": \"selective\" (Megatron --recompute-modules)");
        return -2;
    }
    unsigned m = parse_modules(mods, jv_ptr(p, sizeof p, ptr, "recompute_modules"), st);
    if (!m) return -2;
    int slot = mfu_rc_slot(MFU_RCK_SELECTIVE, m);
    if (slot == MFU_RC_CUSTOM) {
        if (*custom && *custom != m) {
            api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "recompute_modules"),
                     "a request may name one module set that no named policy has; it names two");
            return -2;
        }
        *custom = m;
    }
    return slot;
}

/* The custom recompute module set of a request (measured config, search
 * fix), known before the system is built. */
static int scan_custom_modules(json_t *req, int tpu, unsigned *custom, unsigned mx[2], api_status *st)
{
    *custom = 0;
    mx[0] = mx[1] = 0;
    json_t *mc = json_object_get(json_object_get(req, "measured"), "config");
    json_t *fix = json_object_get(json_object_get(req, "search"), "fix");
    int echo = RQ_ECHO | (tpu ? RQ_ECHO_TPU : 0);
    if (json_is_object(mc) && rq_parse_recompute(mc, "/measured/config", 0, echo, custom, mx, st) == -2) return -1;
    if (json_is_object(fix) && rq_parse_recompute(fix, "/search/fix", 0, 0, custom, mx, st) == -2) return -1;
    return 0;
}

static const char *const SPLIT_KEYS[] = {"first", "last", NULL};

/* A split as an answer gives it (openapi Config.pipeline_split): its kind
 * and the layers of the first, busiest middle and last stage. The kind is
 * what is read; the layers must be what that kind gives (a split edited by
 * hand is given as {"first", "last"}). */
static int parse_split_answer(json_t *sj, const char *ptr, const mfu_system *sys, mfu_config *c,
                              api_status *st)
{
    static const char *const KEYS[] = {"kind", "first_stage_layers", "middle_stage_layers",
                                       "last_stage_layers", NULL};
    static const char *const WHAT[] = {"first_stage_layers", "middle_stage_layers", "last_stage_layers"};
    if (jv_known(sj, ptr, "pipeline_split", KEYS, st)) return -1;
    int k, bad;
    int64_t given[3];
    bad = jv_enum(sj, "kind", ptr, JV_REQUIRED, 0, api_split_names, &k, st);
    for (int i = 0; i < 3; i++)
        bad |= jv_int(sj, WHAT[i], ptr, k == MFU_SPLIT_FIRST_LAST && i != 1 ? JV_REQUIRED : JV_OPTIONAL,
                      -1, 0, API_MAX_LAYERS, &given[i], st); /* -1: not given */
    if (bad) return -1;
    c->split = (mfu_split)k;
    if (c->split == MFU_SPLIT_FIRST_LAST) {
        c->pp_first = given[0];
        c->pp_last = given[2];
        if (c->pp_first + c->pp_last > sys->layers) {
            api_fail(st, 422, ptr, "first + last stage layers exceed the model's %lld layers",
                     (long long)sys->layers);
            return -1;
        }
    }
    mfu_config_fill_stages(sys, c);
    mfu_stages sg;
    mfu_config_stages(sys, c, &sg);
    int64_t got[3] = {sg.first, sg.mid, sg.last};
    for (int i = 0; i < 3; i++) {
        if (given[i] < 0 || given[i] == got[i]) continue;
        char p[256];
        api_fail(st, 422, jv_ptr(p, sizeof p, ptr, WHAT[i]),
                 "is %lld, but the %s split of %lld layers over pp %lld x vpp %lld gives %lld; give "
                 "{\"first\": layers, \"last\": layers} for another split",
                 (long long)given[i], api_split_names[k], (long long)sys->layers,
                 (long long)c->ax[MFU_AX_PP], (long long)c->vpp, (long long)got[i]);
        return -1;
    }
    return 0;
}

/* A configuration's "pipeline_split": "even", "account",
 * {"first": n, "last": n}, or the search's default for (pp, vpp). -1 when
 * refused; *bad set when first/last had errors (reported with the rest). */
static int parse_split(json_t *cj, const char *ptr, const mfu_system *sys, mfu_config *c, int *bad_out,
                       api_status *st)
{
    char p[256];
    int bad = 0;
    json_t *sj = json_object_get(cj, "pipeline_split");
    const char *sp_ptr = jv_ptr(p, sizeof p, ptr, "pipeline_split");
    if (!sj) {
        if (mfu_config_default_split(sys, c) != MFU_OK) {
            api_fail(st, 422, sp_ptr, "no split of %lld layers over pp %lld x vpp %lld; give one",
                     (long long)sys->layers, (long long)c->ax[MFU_AX_PP], (long long)c->vpp);
            return -1;
        }
    } else if (json_is_string(sj)) {
        int k = -1;
        for (int i = 0; i < 2; i++) if (!strcmp(json_string_value(sj), api_split_names[i])) k = i;
        if (k < 0) {
            api_fail(st, 422, sp_ptr, "must be \"even\", \"account\" or {\"first\": layers, \"last\": layers}");
            return -1;
        }
        c->split = (mfu_split)k;
    } else if (json_is_object(sj) && json_object_get(sj, "kind")) {
        return parse_split_answer(sj, sp_ptr, sys, c, st);
    } else if (json_is_object(sj)) {
        if (jv_known(sj, sp_ptr, "pipeline_split", SPLIT_KEYS, st)) return -1;
        c->split = MFU_SPLIT_FIRST_LAST;
        bad |= jv_int(sj, "first", sp_ptr, JV_REQUIRED, 0, 0, API_MAX_LAYERS, &c->pp_first, st);
        bad |= jv_int(sj, "last", sp_ptr, JV_REQUIRED, 0, 0, API_MAX_LAYERS, &c->pp_last, st);
        if (!bad && c->pp_first + c->pp_last > sys->layers) {
            api_fail(st, 422, sp_ptr, "first + last exceed the model's %lld layers", (long long)sys->layers);
            return -1;
        }
    } else {
        api_fail(st, 422, sp_ptr, "must be \"even\", \"account\" or {\"first\": layers, \"last\": layers}");
        return -1;
    }
    if (sj) mfu_config_fill_stages(sys, c);
    *bad_out = bad;
    return 0;
}

/* The schedule of a configuration that names none, as the frameworks
 * choose it from the layout: with pp > 1, Megatron-LM runs the
 * interleaved 1F1B when a virtual pipeline size is given
 * (--virtual-pipeline-model-parallel-size or
 * --num-layers-per-virtual-pipeline-stage: get_forward_backward_func) and
 * 1F1B otherwise, as torchtitan's Interleaved1F1B and 1F1B; MaxText's
 * pipeline is GPipe, circular with num_pipeline_repeats = vpp (FW-X4),
 * taken where MaxText is the only admitted framework of the platform. A
 * measured run from a table that gives VP without a schedule was refused
 * ("vpp > 1 only with the interleaved or gpipe schedule"). */
mfu_schedule rq_default_schedule(const mfu_system *sys, const mfu_config *c, unsigned admitted)
{
    if (c->ax[MFU_AX_PP] < 2) return MFU_SCHED_1F1B;
    unsigned on = admitted & mfu_platform_frameworks(sys->hw);
    unsigned loop = MFU_FW_MASK(MFU_FW_MEGATRON) | MFU_FW_MASK(MFU_FW_TORCHTITAN);
    if (!(on & loop) && (on & MFU_FW_MASK(MFU_FW_MAXTEXT))) return MFU_SCHED_GPIPE;
    return c->vpp > 1 ? MFU_SCHED_INTERLEAVED : MFU_SCHED_1F1B;
}

/* The recompute policy of a configuration that names none: the
 * frameworks' own default -- Megatron-LM and torchtitan recompute nothing
 * unless asked (--recompute-granularity, activation_checkpoint.mode
 * "none"), MaxText's base.yml has remat_policy 'full' -- so full where
 * MaxText is the only admitted framework of the platform. */
int rq_default_recompute(const mfu_system *sys, unsigned admitted)
{
    unsigned on = admitted & mfu_platform_frameworks(sys->hw);
    return on == MFU_FW_MASK(MFU_FW_MAXTEXT) ? MFU_RC_FULL : MFU_RC_NONE;
}

static int nbits(unsigned x)
{
    int n = 0;
    for (; x; x &= x - 1) n++;
    return n;
}

void rq_default_zero(const mfu_system *sys, mfu_config *c, unsigned admitted)
{
    if (c->ax[MFU_AX_CP] < 2 || c->ax[MFU_AX_FSDP] != 1) return;
    admitted &= mfu_platform_frameworks(sys->hw);
    c->zero = 3;
    unsigned f3 = mfu_config_frameworks(sys, c, NULL) & admitted;
    c->zero = 0;
    unsigned f0 = mfu_config_frameworks(sys, c, NULL) & admitted;
    /* with a replica axis too (HSDP over cp) only where no admitted
     * framework runs the replicas: Megatron's dp x cp data parallelism
     * stays what such a layout means to it */
    int cp_only = c->ax[MFU_AX_DP] == 1;
    if (f3 && (cp_only ? nbits(f3) >= nbits(f0) : f0 == 0)) c->zero = 3;
}

/* sp and etp are shape-level choices (FW-T2, FW-X2, FW-X7): judged on
 * the shape rules alone, before the zero stage is defaulted */
static unsigned shape_frameworks(const mfu_system *sys, const mfu_config *c)
{
    return mfu_config_frameworks_at(sys, c, MFU_LV_SHAPE | MFU_LV_MBS, MFU_FW_ALL, NULL);
}

void rq_default_sp_etp(const mfu_system *sys, mfu_config *c, unsigned admitted, int sp_given, int etp_given)
{
    int64_t tp = c->ax[MFU_AX_TP];
    admitted &= mfu_platform_frameworks(sys->hw);
    if (tp < 2 || (shape_frameworks(sys, c) & admitted)) return;
    mfu_config t = *c;
    /* sp alone, etp alone, then both: the first that is legal (the shapes
     * divide: mfu_config_check) and some admitted framework runs */
    for (int k = 1; k <= 3; k++) {
        if (((k & 1) && (sp_given || c->sp)) || ((k & 2) && (etp_given || c->etp != 1 || !sys->moe_layers)))
            continue;
        t.sp = (k & 1) ? 1 : c->sp;
        t.etp = (k & 2) ? tp : c->etp;
        int reason;
        const char *why;
        if ((shape_frameworks(sys, &t) & admitted) && mfu_config_check(sys, &t, &reason, &why) == MFU_OK) {
            c->sp = t.sp;
            c->etp = t.etp;
            return;
        }
    }
}

/* What an answer lists with a named policy, given back: the modules it
 * recomputes on this model (api_rc_effective_modules, as render.c lists
 * them) and, for MaxText's qkv_proj_offloaded and minimal_offloaded, where
 * each name lives. Anything else names another policy: a 422 saying how. */
static int check_rc_echo(json_t *cj, const char *ptr, const mfu_system *sys, const mfu_config *c,
                         api_status *st)
{
    char p[256];
    const char *name = json_string_value(json_object_get(cj, "recompute"));
    json_t *mods = json_object_get(cj, "recompute_modules"), *remat = json_object_get(cj, "remat");
    if (!name || !strcmp(name, "selective") || !strcmp(name, "custom")) return 0;
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    if (json_is_array(mods)) {
        unsigned m = json_array_size(mods) ? parse_modules(mods, jv_ptr(p, sizeof p, ptr, "recompute_modules"), st) : 0u;
        unsigned want = rp->kind == MFU_RCK_SELECTIVE ? api_rc_effective_modules(sys, rp->modules) : 0u;
        if (json_array_size(mods) && !m) return -1;
        if (m != want) {
            api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "recompute_modules"),
                     "are not the modules \"%s\" recomputes on this model; a module set of your own is "
                     "\"recompute\": \"selective\" with its recompute_modules", name);
            return -1;
        }
    }
    if (remat && fixed_names(c->recompute)) {
        unsigned d = 0, h = 0;
        if (rq_parse_remat(remat, jv_ptr(p, sizeof p, ptr, "remat"), &d, &h, st)) return -1;
        if (d != rp->mx_device || h != rp->mx_host) {
            api_fail(st, 422, jv_ptr(p, sizeof p, ptr, "remat"),
                     "is not where \"%s\" keeps the names; names of your own are \"recompute\": \"maxtext\" "
                     "with its remat", name);
            return -1;
        }
    }
    return 0;
}

/* The keys of a configuration as a request gives it (openapi ConfigInput)
 * and of its layout (ParallelAxes). Unknown keys were passed over in
 * silence: a misspelt "vp" evaluated the run without its interleaving. */
static const char *const CONFIG_KEYS[] = {"parallel", "schedule", "vpp", "mbs", "grad_accum", "recompute",
                                          "recompute_modules", "remat", "recompute_layers",
                                          "pipeline_split", "tp_overlap", "ep_overlap", NULL};
static const char *const PARALLEL_KEYS[] = {"dp", "fsdp", "tp", "ep", "pp", "cp", "sp", "zero", "etp", NULL};
/* What an answer's configuration (openapi Config) carries besides its
 * settings: its figures and recipes, accepted and not read, so that a
 * ranked configuration given back as measured.config ("I ran rank 1; it
 * took this long") reads as it came. tp_overlap and ep_overlap are the
 * request's (training), checked against it in api_parse_request. */
static const char *const CONFIG_ANSWER_KEYS[] = {
    "rank", "tier", "tie_with_best", "variants", "variants_search", "time_to_train",
    "global_batch_tokens", "frameworks", "feasible", "memory", "memory_stages", "time",
    "time_expected", "bound", "expected", "overlap_ratio", "gap", "gap_expected", "roofline_mfu",
    "megatron_args", "recipes", NULL};

/* dp left out is what the devices leave: Megatron takes no dp, it is the
 * world size over tp x pp x cp (parallel_state.py
 * initialize_model_parallel), MaxText's -1 the rest. A product that is not
 * the devices is a 422 that says its numbers. */
static int axes_devices(json_t *par, const char *pp, const mfu_system *sys, mfu_config *c, api_status *st)
{
    int64_t rest = c->ax[MFU_AX_FSDP] * c->ax[MFU_AX_TP] * c->ax[MFU_AX_PP] * c->ax[MFU_AX_CP];
    if (!json_object_get(par, "dp") && rest > 0 && sys->devices % rest == 0) c->ax[MFU_AX_DP] = sys->devices / rest;
    if (rest * c->ax[MFU_AX_DP] == sys->devices) return 0;
    api_fail(st, 422, pp,
             "dp %lld x fsdp %lld x tp %lld x pp %lld x cp %lld = %lld devices, not the request's %lld "
             "(ep folds over dp x fsdp x cp x tp / etp)",
             (long long)c->ax[MFU_AX_DP], (long long)c->ax[MFU_AX_FSDP], (long long)c->ax[MFU_AX_TP],
             (long long)c->ax[MFU_AX_PP], (long long)c->ax[MFU_AX_CP], (long long)(rest * c->ax[MFU_AX_DP]),
             (long long)sys->devices);
    return -1;
}

/* "interleaved" without its vpp: the smallest legal count here, the
 * fastest that fits where a run is inferred (api_infer_measured); the
 * split follows the count where the run gives none. Where no count is
 * legal, 2: the check then names the rule the run breaks. */
static void default_vpp(json_t *cj, const mfu_system *sys, mfu_config *c)
{
    const char *why;
    int reason;
    if (c->schedule != MFU_SCHED_INTERLEAVED || json_object_get(cj, "vpp") || c->ax[MFU_AX_PP] < 2) return;
    int own_split = json_object_get(cj, "pipeline_split") != NULL;
    for (int64_t v = 2; v <= sys->layers / c->ax[MFU_AX_PP] + 2; v++) {
        c->vpp = v;
        if (!own_split && mfu_config_default_split(sys, c) != MFU_OK) continue;
        if (mfu_config_check(sys, c, &reason, &why) == MFU_OK) return;
    }
    c->vpp = 2;
    if (!own_split && mfu_config_default_split(sys, c) != MFU_OK) c->split = MFU_SPLIT_EVEN;
}

/* A configuration (measured or pinned). Divisibility is checked here (an
 * illegal configuration is a 422); whether a framework launches it is
 * reported with the result, not refused. */
int rq_parse_config(json_t *cj, const char *ptr, const mfu_system *sys, mfu_config *c,
                    unsigned admitted, api_status *st)
{
    char p[256];
    int bad = 0, v;
    memset(c, 0, sizeof *c);
    if (!json_is_object(cj)) {
        api_fail(st, 422, ptr, "must be an object");
        return -1;
    }
    if (jv_known_also(cj, ptr, "a configuration", CONFIG_KEYS, CONFIG_ANSWER_KEYS, st)) return -1;
    json_t *par = json_object_get(cj, "parallel");
    const char *pp = jv_ptr(p, sizeof p, ptr, "parallel");
    if (!json_is_object(par)) {
        api_fail(st, 422, pp, "required object {dp, fsdp, tp, ep, pp, cp, sp, zero, etp}");
        return -1;
    }
    if (jv_known(par, pp, "parallel", PARALLEL_KEYS, st)) return -1;
    for (int a = 0; a < MFU_AX_COUNT; a++)
        bad |= jv_int(par, rq_axes[a], pp, JV_OPTIONAL, 1, 1, API_MAX_DEVICES, &c->ax[a], st);
    if (!bad && axes_devices(par, pp, sys, c, st)) return -1;
    int sp = 0;
    int64_t zero = 0;
    bad |= jv_bool(par, "sp", pp, JV_OPTIONAL, 0, &sp, st) | jv_int(par, "zero", pp, JV_OPTIONAL, 0, 0, 3, &zero, st) |
           jv_int(par, "etp", pp, JV_OPTIONAL, 1, 1, API_MAX_DEVICES, &c->etp, st);
    c->sp = sp;
    c->zero = (int)zero;
    bad |= jv_enum(cj, "schedule", ptr, JV_OPTIONAL, 0, api_schedule_names, &v, st);
    c->schedule = (mfu_schedule)v;
    /* DualPipeV is two stages per rank: vpp 2 unless given */
    bad |= jv_int(cj, "vpp", ptr, JV_OPTIONAL, c->schedule == MFU_SCHED_DUALPIPEV ? 2 : 1, 1, 1024,
                  &c->vpp, st);
    if (!json_object_get(cj, "schedule")) c->schedule = rq_default_schedule(sys, c, admitted);
    bad |= jv_int(cj, "mbs", ptr, JV_OPTIONAL, 1, 1, 1 << 20, &c->mbs, st);
    unsigned custom = sys->rc[MFU_RC_CUSTOM].modules;
    unsigned mx[2] = {sys->rc[MFU_RC_MAXTEXT].mx_device, sys->rc[MFU_RC_MAXTEXT].mx_host};
    int rc0 = rq_default_recompute(sys, admitted);
    int rc = rq_parse_recompute(cj, ptr, rc0, RQ_ECHO | (sys->hw->platform == MFU_PLATFORM_TPU ? RQ_ECHO_TPU : 0),
                                &custom, mx, st);
    if (rc == -2) bad = -1;
    c->recompute = rc < 0 ? rc0 : rc;
    bad |= jv_int(cj, "recompute_layers", ptr, JV_OPTIONAL, -1, -1, API_MAX_LAYERS, &c->recompute_layers, st);
    if (bad || check_rc_echo(cj, ptr, sys, c, st)) return -1;
    int split_bad = 0;
    if (parse_split(cj, ptr, sys, c, &split_bad, st)) return -1;
    bad |= split_bad;
    int64_t D = c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
    double per = (double)c->mbs * (double)D * (double)sys->train.seq;
    int64_t ga_default = (int64_t)floor(sys->train.global_batch_tokens / per + 0.5);
    if (ga_default < 1) ga_default = 1;
    /* without grad_accum the run's batch is the request's, to the nearest
     * whole number of micro-batch rounds (mbs x dp x fsdp sequences): a
     * batch stated roughly ("4M tokens") rounds, but a round that misses it
     * by more than 5 % is another run (mbs 8 x dp 48 against a 192-sequence
     * batch was evaluated at 384 sequences and compared with the
     * 192-sequence run's time) */
    if (!json_object_get(cj, "grad_accum") &&
        fabs((double)ga_default * per - sys->train.global_batch_tokens) > 0.05 * sys->train.global_batch_tokens) {
        char pm[256];
        api_fail(st, 422, jv_ptr(pm, sizeof pm, ptr, "mbs"),
                 "whole micro-batch rounds of mbs x dp x fsdp = %lld sequences do not make the request's "
                 "global batch of %.0f sequences (training.global_batch_tokens, or the top of "
                 "search.batch_seqs) to within 5 %%; give grad_accum if the run's batch differs",
                 (long long)(c->mbs * D), sys->train.global_batch_tokens / (double)sys->train.seq);
        return -1;
    }
    bad |= jv_int(cj, "grad_accum", ptr, JV_OPTIONAL, ga_default, 1, 1 << 24, &c->grad_accum, st);
    if (bad) return -1;
    rq_default_sp_etp(sys, c, admitted, json_object_get(par, "sp") != NULL, json_object_get(par, "etp") != NULL);
    if (!json_object_get(par, "zero")) rq_default_zero(sys, c, admitted);
    const char *why;
    int reason;
    default_vpp(cj, sys, c);
    if (mfu_config_check(sys, c, &reason, &why) != MFU_OK) {
        /* the field the rule names, where it names one */
        api_fail(st, 422, strstr(why, "vpp") ? jv_ptr(p, sizeof p, ptr, "vpp") : ptr,
                 "illegal configuration: %s", why);
        return -1;
    }
    return 0;
}


/* training.tokens and the cost block: what time and cost to train are
 * computed from (api/plan.c). Limits: at most 1e16 tokens (a thousand times
 * the largest published runs), a price of at most 1e6 per device-hour,
 * 1e5 W per device, a PUE in [1, 5]. */
static int parse_cost(json_t *req, json_t *tj, api_request *r, api_status *st)
{
    int bad = jv_num(tj, "tokens", "/training", JV_OPTIONAL, 0.0, 1.0, 1e16, &r->train_tokens, st);
    r->pue = 1.0;
    r->power_per_device_w = r->hw.tdp_w;
    snprintf(r->currency, sizeof r->currency, "USD");
    json_t *cj = json_object_get(req, "cost");
    if (!cj) return bad;
    if (!json_is_object(cj)) {
        api_fail(st, 422, "/cost", "must be an object {price_per_device_hour, currency, power_per_device_w, pue}");
        return -1;
    }
    static const char *const COST_KEYS[] = {"price_per_device_hour", "currency", "power_per_device_w", "pue", NULL};
    if (jv_known(cj, "/cost", "cost", COST_KEYS, st)) bad = -1;
    bad |= jv_num(cj, "price_per_device_hour", "/cost", JV_OPTIONAL, 0.0, 0.0, 1e6, &r->price_per_device_hour, st);
    bad |= jv_num(cj, "pue", "/cost", JV_OPTIONAL, 1.0, 1.0, 5.0, &r->pue, st);
    if (json_object_get(cj, "power_per_device_w")) {
        bad |= jv_num(cj, "power_per_device_w", "/cost", JV_REQUIRED, 0.0, 1.0, 1e5, &r->power_per_device_w, st);
        r->power_given = 1;
    }
    json_t *cur = json_object_get(cj, "currency");
    if (cur) {
        const char *c = json_string_value(cur);
        size_t n = c ? strlen(c) : 0;
        int ok = n >= 1 && n <= 3;
        for (size_t i = 0; ok && i < n; i++) ok = c[i] >= 'A' && c[i] <= 'Z';
        if (!ok) {
            api_fail(st, 422, "/cost/currency", "must be an ISO 4217 code of 1 to 3 capital letters, e.g. \"USD\"");
            bad = -1;
        } else {
            snprintf(r->currency, sizeof r->currency, "%s", c);
        }
    }
    return bad;
}

/* requests parsed, all threads (api_parse_count; /metrics) */
static atomic_ulong parses;

unsigned long api_parse_count(void) { return atomic_load(&parses); }

/* The model and the hardware, resolved (presets, HF configs, overrides)
 * and read. */
static int parse_model_and_hardware(json_t *req, api_request *r, api_status *st)
{
    json_t *mj = json_object_get(req, "model");
    if (!mj) { api_fail(st, 422, "/model", "required field is missing"); return -1; }
    r->model_ir = api_resolve_model(mj, &r->model_source, &r->model_overridden, st);
    if (!r->model_ir) return -1;
    const char *mptr = json_object_get(mj, "hf_config") ? "/model/hf_config" : "/model";
    if (api_model_from_ir(r->model_ir, mptr, &r->model, st)) return -1;
    json_t *hj = json_object_get(req, "hardware");
    if (!hj) { api_fail(st, 422, "/hardware", "required field is missing"); return -1; }
    r->hw_json = api_resolve_hardware(hj, &r->hw_overridden, st);
    if (!r->hw_json) return -1;
    if (api_hardware_from_json(r->hw_json, "/hardware", &r->hw, st)) return -1;
    return 0;
}

/* The training switches of what overlaps what: the gradient reduction
 * (F-COMM-DP) and, for Megatron-LM before Megatron-Core, the pipeline
 * sends (F-COMM-PP-1F1B); and of how the framework runs its kernels:
 * TP collectives, gradient accumulation, the loss, FP8 scaling. */
static int parse_comm_switches(json_t *tj, api_request *r, api_status *st)
{
    int bad = 0, ogr = 1, psg = 0, pop = 1, tpa = 1, gaf = 1, cef = 1, eag = 0;
    bad |= jv_bool(tj, "overlap_grad_reduce", "/training", JV_OPTIONAL, 1, &ogr, st);
    bad |= jv_bool(tj, "pp_scatter_gather", "/training", JV_OPTIONAL, 0, &psg, st);
    bad |= jv_bool(tj, "pp_overlap_p2p", "/training", JV_OPTIONAL, 1, &pop, st);
    bad |= jv_bool(tj, "tp_async_allreduce", "/training", JV_OPTIONAL, 1, &tpa, st);
    bad |= jv_bool(tj, "grad_accum_fusion", "/training", JV_OPTIONAL, 1, &gaf, st);
    bad |= jv_bool(tj, "cross_entropy_fusion", "/training", JV_OPTIONAL, 1, &cef, st);
    bad |= jv_bool(tj, "eager_loss", "/training", JV_OPTIONAL, 0, &eag, st);
    bad |= jv_enum(tj, "fp8_recipe", "/training", JV_OPTIONAL, MFU_FP8_TENSORWISE, rq_fp8_recipes,
                   &r->train.fp8_recipe, st);
    r->train.no_grad_overlap = !ogr;
    r->train.pp_scatter_gather = psg;
    r->train.pp_no_overlap_p2p = !pop;
    r->train.tp_sync_bwd = !tpa;
    r->train.wgrad_acc_unfused = !gaf;
    /* torchtitan's eager loss runs unfused passes too (F-MEM-LOGITS-EAGER):
     * with eager_loss, cross_entropy_fusion true is a contradiction */
    if (eag && cef && json_object_get(tj, "cross_entropy_fusion")) {
        api_fail(st, 422, "/training/eager_loss", "an eager loss is not a fused one: leave cross_entropy_fusion out or false");
        bad = -1;
    }
    r->train.ce_unfused = !cef || eag;
    r->train.ce_eager = eag;
    return bad;
}

/* "training" (and the request's mfu_convention); bad: what was already
 * wrong (devices), reported together with seq_len's problems. */
static int parse_training(json_t *req, json_t *tj, api_request *r, int bad, api_status *st)
{
    int v2;
    /* the contract's Training (openapi.yaml) */
    static const char *const TRAINING[] = {"seq_len", "global_batch_tokens", "dtype", "attention_impl",
                                           "tp_overlap", "ep_overlap", "overlap_grad_reduce", "grad_dtype",
                                           "adam_moments_dtype", "tokens", "moe_imbalance", "vocab_tiles",
                                           "optimizer_offload", "pp_scatter_gather", "pp_overlap_p2p",
                                           "tp_async_allreduce", "grad_accum_fusion", "cross_entropy_fusion",
                                           "eager_loss", "fp8_recipe", NULL};
    if (jv_known(tj, "/training", "training", TRAINING, st)) return -1;
    int64_t seq;
    bad |= jv_int(tj, "seq_len", "/training", JV_REQUIRED, 0, 1, API_MAX_SEQ, &seq, st);
    if (bad) return -1;
    r->train.seq = seq;
    json_t *sj = json_object_get(req, "search");
    int batch_range = json_is_object(sj) && json_object_get(sj, "batch_seqs");
    /* with a searched batch range the roofline is taken at the largest batch */
    int64_t gbt, gbt_default = seq;
    if (batch_range) {
        json_t *hi = json_array_get(json_object_get(sj, "batch_seqs"), 1);
        double bv = json_is_number(hi) ? json_number_value(hi) : 1.0;
        if (bv >= 1 && bv <= 1e9 && bv == floor(bv)) gbt_default = (int64_t)bv * seq;
    }
    bad |= jv_int(tj, "global_batch_tokens", "/training", batch_range ? JV_OPTIONAL : JV_REQUIRED,
                  gbt_default, 1, (int64_t)1 << 40, &gbt, st);
    if (!bad && gbt % seq) {
        api_fail(st, 422, "/training/global_batch_tokens",
                 "must be a multiple of seq_len (%lld): the batch is whole sequences", (long long)seq);
        bad = -1;
    }
    r->train.global_batch_tokens = (double)gbt;
    bad |= jv_enum(tj, "dtype", "/training", JV_OPTIONAL, 0, rq_dtypes, &v2, st);
    r->train.dtype = (mfu_dtype)v2;
    bad |= jv_enum(tj, "attention_impl", "/training", JV_OPTIONAL, 0, rq_impls, &v2, st);
    r->train.attn_impl = (mfu_attn_impl)v2;
    /* tp_overlap: on by default on TPUs (XLA's async collective fusion, on
     * in MaxText's published scripts: docs/model.md F-COMM-TP), off on GPUs */
    int tpo = r->hw.platform == MFU_PLATFORM_TPU, epo = 0;
    bad |= jv_bool(tj, "tp_overlap", "/training", JV_OPTIONAL, tpo, &tpo, st);
    bad |= jv_bool(tj, "ep_overlap", "/training", JV_OPTIONAL, 0, &epo, st);
    bad |= jv_enum(req, "mfu_convention", "", JV_OPTIONAL, 0, rq_convs, &v2, st);
    r->train.conv = (mfu_convention)v2;
    if (bad) return -1;
    if (r->model.position == MFU_POS_LEARNED && r->train.seq > r->model.max_positions) {
        api_fail(st, 422, "/training/seq_len",
                 "exceeds the model's learned position table (max_positions %lld)",
                 (long long)r->model.max_positions);
        return -1;
    }
    if (r->hw.peak_flops[r->train.dtype] <= 0) {
        api_fail(st, 422, "/training/dtype", "hardware %s has no %s peak", r->hw.name,
                 rq_dtypes[r->train.dtype]);
        return -1;
    }
    bad |= parse_comm_switches(tj, r, st);
    int gd = 0, md = 0;
    bad |= jv_enum(tj, "grad_dtype", "/training", JV_OPTIONAL, 0, rq_grad_dtypes, &gd, st);
    /* F-MOE-LOAD: a dropless run's busiest expert rank, tokens over the mean */
    bad |= jv_num(tj, "moe_imbalance", "/training", JV_OPTIONAL, 1.0, 1.0, 64.0, &r->train.moe_imbalance, st);
    /* MaxText's num_vocab_tiling and optimizer_memory_host_offload */
    bad |= jv_int(tj, "vocab_tiles", "/training", JV_OPTIONAL, 1, 1, 1 << 20, &r->train.vocab_tiles, st);
    int oo = 0;
    bad |= jv_bool(tj, "optimizer_offload", "/training", JV_OPTIONAL, 0, &oo, st);
    r->train.optimizer_offload = oo;
    if (!bad && oo && !(r->hw.host_bw_bytes_s > 0)) {
        api_fail(st, 422, "/training/optimizer_offload", "needs the hardware's host link (hardware.host_bw_bytes_s); %s has none",
                 r->hw.name);
        bad = -1;
    }
    bad |= jv_enum(tj, "adam_moments_dtype", "/training", JV_OPTIONAL, 0, rq_grad_dtypes, &md, st);
    if (bad) return -1;
    r->train.grad_bf16 = gd;
    r->train.moments_bf16 = md;
    r->tp_overlap = tpo;
    r->ep_overlap = epo;
    return 0;
}

/* tp_overlap and ep_overlap are the request's (training): a configuration
 * given back as an answer gave it carries them, and they must be what the
 * request says, or the run would be evaluated without what it ran with. */
static int check_config_overlaps(json_t *req, const api_request *r, api_status *st)
{
    static const char *const KEY[] = {"tp_overlap", "ep_overlap"};
    json_t *cj = json_object_get(json_object_get(req, "measured"), "config");
    for (int i = 0; i < 2 && json_is_object(cj); i++) {
        char p[256];
        int v, want = i ? r->ep_overlap : r->tp_overlap;
        if (jv_bool(cj, KEY[i], "/measured/config", JV_OPTIONAL, want, &v, st)) return -1;
        if (v == want) continue;
        api_fail(st, 422, jv_ptr(p, sizeof p, "/measured/config", KEY[i]),
                 "is %s, but the request's training.%s is %s: the overlaps are the request's; set "
                 "training.%s", v ? "true" : "false", KEY[i], want ? "true" : "false", KEY[i]);
        return -1;
    }
    return 0;
}

int api_parse_request(json_t *req, int need_devices, api_request *r, api_status *st)
{
    atomic_fetch_add(&parses, 1);
    memset(r, 0, sizeof *r);
    if (!json_is_object(req)) {
        api_fail(st, 422, "", "the request must be a JSON object");
        return -1;
    }
    if (api_check_limits(req, st)) return -1;
    /* a normalized request carries its provenance (_source); it is not an input */
    static const char *const KNOWN[] = {"model", "hardware", "devices", "training", "mfu_convention",
                                        "search", "measured", "cost", "_source", NULL};
    if (jv_known(req, "", "a request", KNOWN, st)) return -1;
    if (parse_model_and_hardware(req, r, st)) return -1;
    int bad = jv_int(req, "devices", "", need_devices ? JV_REQUIRED : JV_OPTIONAL, 1, 1,
                     API_MAX_DEVICES, &r->devices, st);
    json_t *tj = json_object_get(req, "training");
    if (!json_is_object(tj)) {
        api_fail(st, 422, "/training", "required object {seq_len, global_batch_tokens, dtype} is missing");
        return -1;
    }
    if (parse_training(req, tj, r, bad, st)) return -1;
    if (parse_cost(req, tj, r, st)) return -1;
    if (check_config_overlaps(req, r, st)) return -1;
    unsigned mx[2];
    if (scan_custom_modules(req, r->hw.platform == MFU_PLATFORM_TPU, &r->rc_custom, mx, st)) return -1;
    r->rc_mx_device = mx[0];
    r->rc_mx_host = mx[1];
    return 0;
}
