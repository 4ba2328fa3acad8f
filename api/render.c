/* api/render.c -- results as JSON (the contract in openapi.yaml), CSV and
 * human tables. Field names carry units (_s, _bytes, _flops). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const CONV_NAMES[] = {"causal", "full", "none"};

json_int_t api_json_count(double x)
{
    if (!(x > -9.2e18)) return x != x ? 0 : (json_int_t)-9.2e18; /* NaN -> 0 */
    if (x >= 9.2e18) return (json_int_t)9.2e18;
    return (json_int_t)llround(x);
}

json_t *api_render_model(const api_request *r)
{
    mfu_params p;
    mfu_model_params(&r->model, &p);
    json_t *ir = api_model_to_ir(&r->model);
    json_t *layers = json_incref(json_object_get(ir, "layers"));
    /* taken before ir goes into json_pack, which steals it -- and frees it
     * when the pack fails (tests/unit/test_oom.c found the read after) */
    json_t *ap = json_incref(json_object_get(ir, "approximations"));
    double fpt = mfu_model_flops_per_token_fwd(&r->model, r->train.seq, r->train.conv);
    /* parameter counts are whole numbers: JSON integers (strictly typed
     * clients reject 8030261248.0 for an int64) */
    json_t *resolved = json_pack("{s:o,s:I,s:I,s:f,s:I}", "ir", ir, "params_total", api_json_count(p.total),
                                 "params_active", api_json_count(p.active), "flops_per_token_fwd", fpt,
                                 "layers_total", (json_int_t)mfu_model_layers(&r->model));
    json_t *o = json_pack("{s:s,s:O,s:I,s:I,s:I,s:f,s:o,s:o}", "name", r->model.name, "source",
                          r->model_source ? r->model_source : json_null(), "params_total",
                          api_json_count(p.total), "params_active", api_json_count(p.active),
                          "params_embedding", api_json_count(p.embedding),
                          "flops_per_token_fwd", fpt, "layers", layers, "resolved", resolved);
    if (r->model_overridden && json_array_size(r->model_overridden))
        json_object_set(o, "overridden", r->model_overridden);
    /* what the model description could not express exactly (issue 16: an
     * approximation is said, never silent) */
    if (json_is_array(ap)) json_object_set_new(o, "approximations", ap);
    else {
        json_decref(ap);
        json_object_set_new(o, "approximations", json_array());
    }
    return o;
}

json_t *api_render_hardware(const api_request *r)
{
    json_t *o = api_hardware_to_json(&r->hw);
    if (r->hw_overridden && json_array_size(r->hw_overridden))
        json_object_set(o, "overridden", r->hw_overridden);
    return o;
}

json_t *api_render_roofline(const api_request *r, const mfu_roofline *roof, const mfu_op *ops)
{
    const mfu_hardware *hw = &r->hw;
    json_t *o = json_pack("{s:f,s:f,s:f,s:f,s:s,s:f,s:f,s:f,s:I,s:I,s:I}", "mfu", roof->mfu,
                          "step_time_s", roof->step_time_s, "f_useful_flops", roof->f_useful_flops,
                          "f_executed_flops", roof->f_exec_flops, "convention",
                          CONV_NAMES[r->train.conv], "ridge_point_flops_per_byte",
                          mfu_ridge_point(hw, r->train.dtype), "compute_bound_s",
                          roof->compute_bound_s, "memory_bound_s", roof->memory_bound_s,
                          "global_batch_tokens", api_json_count(r->train.global_batch_tokens),
                          "seq_len", (json_int_t)r->train.seq, "devices", (json_int_t)1);
    if (!ops) return o;
    json_t *arr = json_array();
    for (int i = 0; i < roof->n_ops; i++) {
        const mfu_op *op = &ops[i];
        double t = mfu_op_time(op, hw, r->train.dtype, NULL);
        json_t *e = json_pack("{s:s,s:s,s:i,s:I,s:f,s:f,s:f,s:s,s:s,s:f}", "name", op->name, "phase",
                              op->phase == MFU_FWD ? "fwd" : "bwd", "run", op->run, "count",
                              api_json_count(op->count), "flops", op->flops, "bytes", op->bytes, "intensity",
                              op->bytes > 0 ? op->flops / op->bytes : 0.0, "unit",
                              op->tags & (MFU_TAG_MATMUL | MFU_TAG_FUSED_ATTN) ? "matrix" : "vector",
                              "bound",
                              mfu_op_compute_bound(op, hw, r->train.dtype) ? "compute" : "memory",
                              "time_s", t * op->count);
        json_array_append_new(arr, e);
    }
    json_object_set_new(o, "ops", arr);
    return o;
}

json_t *api_remat_json(const mfu_rc_policy *rp)
{
    json_t *rm = json_object();
    for (int k = 0; rm && k < MFU_MX_COUNT; k++)
        json_object_set_new(rm, mfu_mx_names[k],
                            json_string(rp->mx_device & (1u << k) ? "device"
                                        : rp->mx_host & (1u << k) ? "offload" : "remat"));
    return rm;
}

static json_t *times_json(const mfu_times *t)
{
    json_t *comm = json_object();
    for (int i = 0; i < MFU_COMM_COUNT; i++)
        json_object_set_new(comm, mfu_comm_names[i],
                            json_pack("{s:f,s:f}", "total_s", t->comm_total_s[i], "exposed_s",
                                      t->comm_exposed_s[i]));
    json_t *o = json_pack("{s:f,s:f,s:o,s:f,s:f,s:f,s:f}", "compute_s", t->compute_s, "recompute_s",
                          t->recompute_s, "comm", comm, "bubble_s", t->bubble_s, "optimizer_s",
                          t->optimizer_s, "overhead_s", t->overhead_s, "step_time_s", t->step_time_s);
    json_object_set_new(o, "compute_fwd_s", json_real(t->compute_fwd_s));
    json_object_set_new(o, "compute_gemm_s", json_real(t->compute_gemm_s));
    json_object_set_new(o, "compute_attention_s", json_real(t->compute_attention_s));
    json_object_set_new(o, "offload_s", json_real(t->offload_s));
    return o;
}

/* Gap components in seconds and MFU percentage points: point_i = 100 *
 * mfu_roof * s_i / T_step, so the points add up to 100 * (mfu_roof -
 * mfu_system) exactly (docs/model.md F-GAP). Points are points: 35.1, not 0.351. */
static json_t *gap_json(const mfu_system *sys, const mfu_times *t, int with_kernel)
{
    json_t *a = json_array();
    for (int i = 0; i < MFU_GAP_COUNT; i++) {
        if (i == MFU_GAP_KERNEL_EFFICIENCY && !with_kernel) continue;
        double pts = 100.0 * sys->roofline_mfu * t->gap_s[i] / t->step_time_s;
        json_array_append_new(a, json_pack("{s:s,s:f,s:f}", "name", mfu_gap_names[i], "seconds",
                                           t->gap_s[i], "mfu_points", pts));
    }
    return a;
}

static json_t *memory_json(const mfu_memory *m)
{
    json_t *o = json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "stage", (json_int_t)m->stage,
                          "layers", (json_int_t)m->layers, "inflight_micro_batches", m->inflight,
                          "weights_bytes", m->weights_bytes, "grads_bytes", m->grads_bytes,
                          "optimizer_bytes", m->optimizer_bytes, "activations_bytes", m->activations_bytes,
                          "buffers_bytes", m->buffers_bytes, "reserve_bytes", m->reserve_bytes,
                          "total_bytes", m->total_bytes, "capacity_bytes", m->capacity_bytes,
                          "headroom_bytes", m->headroom_bytes);
    /* the optimizer state in host memory (F-MEM-OPT-OFFLOAD), when any */
    if (o && m->host_bytes > 0) json_object_set_new(o, "host_bytes", json_real(m->host_bytes));
    return o;
}

/* Every pipeline stage's memory (bound costs of c's shape). */
static json_t *memory_stages_json(const mfu_system *sys, const mfu_config *c, mfu_op *ops)
{
    mfu_shape s;
    mfu_config_shape(sys, c, &s);
    mfu_shape_cost k;
    mfu_shape_costs(sys, &s, NULL, ops, &k);
    json_t *a = json_array();
    for (int64_t r = 0; r < c->ax[MFU_AX_PP]; r++) {
        mfu_memory m;
        mfu_memory_stage(sys, c, &k, r, &m);
        json_array_append_new(a, memory_json(&m));
    }
    return a;
}

static json_t *frameworks_json(unsigned mask)
{
    json_t *a = json_array();
    for (int f = 0; f < MFU_FW_COUNT; f++)
        if (mask & MFU_FW_MASK(f)) json_array_append_new(a, json_string(mfu_framework_names[f]));
    return a;
}

json_t *api_render_config(const mfu_system *sys, const mfu_config *c, const mfu_eval *ev, int rank,
                          mfu_op *ops)
{
    const mfu_memory *m = &ev->mem;
    json_t *ratio = json_object();
    for (int i = 0; i < MFU_COMM_COUNT; i++)
        json_object_set_new(ratio, mfu_comm_names[i], json_real(ev->overlap_ratio[i]));
    const mfu_rc_policy *rp = &sys->rc[c->recompute];
    json_t *mods = json_array();
    unsigned eff_mods = api_rc_effective_modules(sys, rp->modules);
    for (int k = 0; k < MFU_RCM_COUNT; k++)
        if (rp->kind == MFU_RCK_SELECTIVE && (eff_mods & (1u << k)))
            json_array_append_new(mods, json_string(mfu_rcm_names[k]));
    mfu_stages st;
    mfu_config_stages(sys, c, &st);
    json_t *o = json_pack(
        "{s:i,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:i,s:I},s:s,s:I,s:I,s:I,s:I,s:s,s:o,s:I,s:b,s:b,s:b}",
        "rank", rank, "parallel", "dp", (json_int_t)c->ax[MFU_AX_DP], "fsdp",
        (json_int_t)c->ax[MFU_AX_FSDP], "tp", (json_int_t)c->ax[MFU_AX_TP], "ep",
        (json_int_t)c->ax[MFU_AX_EP], "pp", (json_int_t)c->ax[MFU_AX_PP], "cp",
        (json_int_t)c->ax[MFU_AX_CP], "sp", c->sp, "zero", c->zero, "etp", (json_int_t)c->etp,
        "schedule", api_schedule_names[c->schedule], "vpp", (json_int_t)c->vpp, "mbs",
        (json_int_t)c->mbs, "grad_accum", (json_int_t)c->grad_accum, "global_batch_tokens",
        (json_int_t)ev->global_batch_tokens, "recompute", api_recompute_names[c->recompute],
        "recompute_modules", mods, "recompute_layers", (json_int_t)c->recompute_layers,
        "tp_overlap", c->tp_overlap, "ep_overlap", c->ep_overlap, "feasible", ev->feasible);
    json_object_set_new(o, "pipeline_split",
                        json_pack("{s:s,s:I,s:I,s:I}", "kind", api_split_names[c->split],
                                  "first_stage_layers", (json_int_t)st.first,
                                  "middle_stage_layers", (json_int_t)st.mid, "last_stage_layers",
                                  (json_int_t)st.last));
    /* a MaxText name policy: where each family of named tensors lives */
    if (mfu_rc_is_names(sys, c->recompute))
        json_object_set_new(o, "remat", api_remat_json(&sys->rc[c->recompute]));
    json_object_set_new(o, "frameworks", frameworks_json(ev->frameworks));
    json_object_set_new(o, "memory", memory_json(m));
    if (ops) json_object_set_new(o, "memory_stages", memory_stages_json(sys, c, ops));
    json_object_set_new(o, "time", times_json(&ev->bound));
    json_object_set_new(o, "time_expected", times_json(&ev->expected));
    json_object_set_new(o, "bound", json_pack("{s:f,s:f,s:f}", "step_time_s", ev->bound.step_time_s,
                                              "mfu", ev->bound.mfu, "hfu", ev->bound.hfu));
    /* the interval of the expected step (F-TIME-INTERVAL): the profile's
     * cross-validated relative error, symmetric in log space */
    double u = sys->hw->has_profile ? sys->hw->eff.uncertainty : 0.0;
    json_object_set_new(o, "expected",
                        json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "step_time_s",
                                  ev->expected.step_time_s, "step_time_low_s", ev->expected.step_time_s / (1.0 + u),
                                  "step_time_high_s", ev->expected.step_time_s * (1.0 + u), "interval_rel", u,
                                  "mfu", ev->expected.mfu, "mfu_low", ev->expected.mfu / (1.0 + u), "mfu_high",
                                  ev->expected.mfu * (1.0 + u), "hfu", ev->expected.hfu, "tokens_per_s",
                                  ev->tokens_per_s, "tokens_per_s_low", ev->tokens_per_s / (1.0 + u),
                                  "tokens_per_s_high", ev->tokens_per_s * (1.0 + u)));
    json_object_set_new(o, "overlap_ratio", ratio);
    json_object_set_new(o, "gap", gap_json(sys, &ev->bound, 0));
    json_object_set_new(o, "gap_expected", gap_json(sys, &ev->expected, 1));
    json_object_set_new(o, "roofline_mfu", json_real(sys->roofline_mfu));
    /* launch recipes (api/recipe.c); megatron_args, the Megatron-LM argv
     * as one shell line, stays for clients of the older contract */
    json_t *recipes = api_render_recipes(sys, c, ev);
    json_object_set_new(o, "megatron_args", api_recipe_shell_line(json_object_get(recipes, "megatron")));
    json_object_set_new(o, "recipes", recipes);
    return o;
}

json_t *api_render_pinned(const mfu_system *sys, const mfu_search_opts *o, const mfu_config *c,
                          mfu_op *ops)
{
    json_t *reasons = json_array();
    const char *why;
    int reason;
    json_t *cfg = NULL;
    int feasible = 0;
    unsigned fw = 0;
    if (mfu_config_check(sys, c, &reason, &why) != MFU_OK) {
        json_array_append_new(reasons, json_pack("{s:s,s:s}", "kind", mfu_prune_names[reason], "detail", why));
    } else {
        mfu_eval ev;
        if (mfu_evaluate(sys, c, ops, &ev) != MFU_OK) return json_null();
        feasible = ev.feasible;
        fw = ev.frameworks;
        int64_t gbs = (int64_t)(sys->train.global_batch_tokens / (double)sys->train.seq);
        int64_t per = c->mbs * c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
        if (gbs % per)
            json_array_append_new(reasons, json_pack("{s:s,s:s}", "kind", "batch", "detail",
                                                     "the global batch is not a multiple of mbs * dp * fsdp sequences"));
        if (!ev.feasible) {
            char d[256];
            snprintf(d, sizeof d, "pipeline stage %lld needs %.2f GB of the %.2f GB the device exposes",
                     (long long)ev.mem.stage, ev.mem.total_bytes / 1e9, ev.mem.capacity_bytes / 1e9);
            json_array_append_new(reasons, json_pack("{s:s,s:s,s:I,s:f}", "kind", "memory", "detail", d,
                                                     "stage", (json_int_t)ev.mem.stage, "excess_bytes",
                                                     -ev.mem.headroom_bytes));
        }
        if (!(o->frameworks & MFU_FW_ANY) && !(fw & o->frameworks)) {
            const char *wn[MFU_FW_COUNT];
            (void)mfu_config_frameworks(sys, c, wn);
            for (int f = 0; f < MFU_FW_COUNT; f++)
                if ((o->frameworks & MFU_FW_MASK(f)) && wn[f])
                    json_array_append_new(reasons, json_pack("{s:s,s:s,s:s}", "kind", "framework",
                                                             "framework", mfu_framework_names[f], "detail", wn[f]));
        }
        cfg = api_render_config(sys, c, &ev, 0, ops);
    }
    if (json_array_size(reasons) == 0)
        json_array_append_new(reasons, json_pack("{s:s,s:s}", "kind", "constraint", "detail",
                                                 "another search option (max_tp, max_mbs, max_vpp, allowed) excludes it"));
    return json_pack("{s:b,s:o,s:o,s:o}", "feasible", feasible, "launchable_by", frameworks_json(fw),
                     "reasons", reasons, "config", cfg ? cfg : json_null());
}

/* ---- text renderings ------------------------------------------------------ */

typedef struct sbuf { char *p; size_t n, cap; } sbuf;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->p && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
        size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)k;
        char *q = api_realloc(b->p, cap);
        if (!q) return;
        b->p = q;
        b->cap = cap;
    }
}

static double num(json_t *o, const char *path)
{
    /* path like "a.b.c" */
    char key[64];
    const char *s = path;
    while (o && *s) {
        const char *dot = strchr(s, '.');
        size_t n = dot ? (size_t)(dot - s) : strlen(s);
        if (n >= sizeof key) return NAN;
        memcpy(key, s, n);
        key[n] = 0;
        o = json_object_get(o, key);
        s = dot ? dot + 1 : s + n;
    }
    return json_is_number(o) ? json_number_value(o) : NAN;
}

static const char *str(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : "";
}

char *api_roofline_table(json_t *result)
{
    sbuf b = {0};
    json_t *roof = json_object_get(result, "roofline");
    json_t *ops = json_object_get(roof, "ops");
    sb_printf(&b, "%-22s %-3s %4s %7s %12s %12s %10s %-7s %12s\n", "op", "ph", "run", "count",
              "GFLOPs", "MB", "FLOP/B", "bound", "time_ms");
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op) {
        sb_printf(&b, "%-22s %-3s %4d %7.0f %12.3f %12.3f %10.1f %-7s %12.4f\n", str(op, "name"),
                  str(op, "phase"), (int)num(op, "run"), num(op, "count"), num(op, "flops") / 1e9,
                  num(op, "bytes") / 1e6, num(op, "intensity"), str(op, "bound"),
                  num(op, "time_s") * 1e3);
    }
    sb_printf(&b, "\ntotal: step %.4f s  (compute-bound %.4f s, memory-bound %.4f s)\n",
              num(roof, "step_time_s"), num(roof, "compute_bound_s"), num(roof, "memory_bound_s"));
    sb_printf(&b, "useful %.4g FLOPs (convention %s), executed %.4g FLOPs\n",
              num(roof, "f_useful_flops"), str(roof, "convention"), num(roof, "f_executed_flops"));
    sb_printf(&b, "roofline MFU %.2f %%  (ridge point %.1f FLOPs/byte)\n", 100.0 * num(roof, "mfu"),
              num(roof, "ridge_point_flops_per_byte"));
    return b.p;
}

/* The expected MFU's interval from the step's (F-TIME-INTERVAL). */
static void mfu_range(json_t *c, double *lo, double *hi)
{
    double m = num(c, "expected.mfu"), t = num(c, "expected.step_time_s");
    double tl = num(c, "expected.step_time_low_s"), th = num(c, "expected.step_time_high_s");
    *lo = th > 0 ? m * t / th : m;
    *hi = tl > 0 ? m * t / tl : m;
}

/* The three largest losses of gap_expected, "name points, ..." into out. */
static void top_losses(json_t *c, char *out, size_t n)
{
    json_t *gap = json_object_get(c, "gap_expected");
    int used[64] = {0};
    size_t len = 0;
    out[0] = 0;
    for (int k = 0; k < 3; k++) {
        int best = -1;
        double bv = 0;
        for (size_t i = 0; i < json_array_size(gap) && i < 64; i++) {
            double v = num(json_array_get(gap, i), "mfu_points");
            if (!used[i] && v > bv) { bv = v; best = (int)i; }
        }
        if (best < 0) break;
        used[best] = 1;
        int w = snprintf(out + len, n - len, "%s%s %.1f", k ? ", " : "",
                         str(json_array_get(gap, (size_t)best), "name"), bv);
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
    }
}

char *api_search_table(json_t *result)
{
    sbuf b = {0};
    json_t *cfgs = json_object_get(result, "configs");
    double devices = num(result, "devices");
    sb_printf(&b, "roofline MFU %.2f %%\n", 100.0 * num(result, "roofline.mfu"));
    sb_printf(&b, "%4s %5s %5s %3s %3s %3s %3s %2s %2s %3s %-11s %3s %4s %5s %-19s %8s %9s %7s %13s %8s %9s %4s %5s  %s\n",
              "rank", "dp", "fsdp", "tp", "ep", "pp", "cp", "sp", "z", "etp", "schedule", "vpp",
              "mbs", "ga", "recompute", "mem_GB", "expect_s", "e_mfu%", "e_mfu% range", "b_mfu%",
              "tok/s/dev", "tier", "var", "top losses (MFU points)");
    size_t i;
    json_t *c;
    json_array_foreach(cfgs, i, c) {
        json_t *p = json_object_get(c, "parallel");
        double lo, hi;
        mfu_range(c, &lo, &hi);
        char range[32], losses[160];
        snprintf(range, sizeof range, "%.1f-%.1f", 100.0 * lo, 100.0 * hi);
        top_losses(c, losses, sizeof losses);
        sb_printf(&b, "%4d %5d %5d %3d %3d %3d %3d %2d %2d %3d %-11s %3d %4d %5d %-19s %8.1f %9.4f %7.2f %13s %8.2f %9.0f %4d %5d  %s\n",
                  (int)num(c, "rank"), (int)num(p, "dp"), (int)num(p, "fsdp"), (int)num(p, "tp"),
                  (int)num(p, "ep"), (int)num(p, "pp"), (int)num(p, "cp"),
                  json_is_true(json_object_get(p, "sp")), (int)num(p, "zero"), (int)num(p, "etp"),
                  str(c, "schedule"), (int)num(c, "vpp"), (int)num(c, "mbs"),
                  (int)num(c, "grad_accum"), str(c, "recompute"), num(c, "memory.total_bytes") / 1e9,
                  num(c, "expected.step_time_s"), 100.0 * num(c, "expected.mfu"), range,
                  100.0 * num(c, "bound.mfu"),
                  devices > 0 ? num(c, "expected.tokens_per_s") / devices : 0.0, (int)num(c, "tier"),
                  (int)num(c, "variants"), losses);
    }
    json_t *nf = json_object_get(result, "no_fit");
    if (nf) sb_printf(&b, "\n%s\n", str(nf, "reason"));
    json_t *s = json_object_get(result, "search");
    sb_printf(&b, "\nspace %.0f, evaluated %.0f, fully evaluated %.0f, feasible %.0f, %.3f s%s\n",
              num(s, "space_size"), num(s, "evaluated"), num(s, "fully_evaluated"),
              num(s, "feasible"), num(s, "elapsed_s"),
              json_is_true(json_object_get(s, "truncated")) ? " (truncated)" : "");
    return b.p ? b.p : api_strdup("");
}

char *api_result_csv(json_t *result)
{
    sbuf b = {0};
    sb_printf(&b, "rank,dp,fsdp,tp,ep,pp,cp,sp,zero,etp,schedule,vpp,mbs,grad_accum,"
                  "global_batch_tokens,recompute,recompute_layers,bound_step_time_s,bound_mfu,"
                  "bound_hfu,expected_step_time_s,expected_mfu,expected_hfu,tokens_per_s,"
                  "memory_total_bytes,memory_headroom_bytes,tokens_per_s_per_device,"
                  "expected_mfu_low,expected_mfu_high");
    /* the expected gap per component (MFU points) and the exposed
     * communication per axis (s) */
    for (int g = 0; g < MFU_GAP_COUNT; g++) sb_printf(&b, ",gap_%s_points", mfu_gap_names[g]);
    for (int a = 0; a < MFU_COMM_COUNT; a++) sb_printf(&b, ",exposed_%s_s", mfu_comm_names[a]);
    sb_printf(&b, "\r\n");
    double devices = num(result, "devices");
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(result, "configs"), i, c) {
        json_t *p = json_object_get(c, "parallel");
        double lo, hi;
        mfu_range(c, &lo, &hi);
        sb_printf(&b, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s,%d,%d,%d,%.0f,%s,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g",
                  (int)num(c, "rank"), (int)num(p, "dp"), (int)num(p, "fsdp"), (int)num(p, "tp"),
                  (int)num(p, "ep"), (int)num(p, "pp"), (int)num(p, "cp"),
                  json_is_true(json_object_get(p, "sp")), (int)num(p, "zero"), (int)num(p, "etp"),
                  str(c, "schedule"), (int)num(c, "vpp"), (int)num(c, "mbs"),
                  (int)num(c, "grad_accum"), num(c, "global_batch_tokens"), str(c, "recompute"),
                  (int)num(c, "recompute_layers"), num(c, "bound.step_time_s"), num(c, "bound.mfu"),
                  num(c, "bound.hfu"), num(c, "expected.step_time_s"), num(c, "expected.mfu"),
                  num(c, "expected.hfu"), num(c, "expected.tokens_per_s"),
                  num(c, "memory.total_bytes"), num(c, "memory.headroom_bytes"),
                  devices > 0 ? num(c, "expected.tokens_per_s") / devices : 0.0, lo, hi);
        json_t *gap = json_object_get(c, "gap_expected");
        for (int g = 0; g < MFU_GAP_COUNT; g++) {
            double v = 0;
            for (size_t k = 0; k < json_array_size(gap); k++)
                if (!strcmp(str(json_array_get(gap, k), "name"), mfu_gap_names[g]))
                    v = num(json_array_get(gap, k), "mfu_points");
            sb_printf(&b, ",%.9g", v);
        }
        json_t *comm = json_object_get(json_object_get(c, "time_expected"), "comm");
        for (int a = 0; a < MFU_COMM_COUNT; a++)
            sb_printf(&b, ",%.9g", num(json_object_get(comm, mfu_comm_names[a]), "exposed_s"));
        sb_printf(&b, "\r\n");
    }
    return b.p;
}

/* The gap of one configuration as text bars (mfu explain): roofline MFU,
 * each expected loss largest first with a bar, expected and bound MFU,
 * and the measured run's gap when the result has one. NULL: no such rank. */
char *api_explain_text(json_t *result, int rank)
{
    json_t *c = json_array_get(json_object_get(result, "configs"), (size_t)(rank - 1));
    if (rank < 1 || !json_is_object(c)) return NULL;
    sbuf b = {0};
    json_t *p = json_object_get(c, "parallel");
    double lo, hi;
    mfu_range(c, &lo, &hi);
    sb_printf(&b, "rank %d: dp %d fsdp %d tp %d ep %d pp %d cp %d, %s vpp %d, mbs %d x %d, recompute %s\n",
              rank, (int)num(p, "dp"), (int)num(p, "fsdp"), (int)num(p, "tp"), (int)num(p, "ep"),
              (int)num(p, "pp"), (int)num(p, "cp"), str(c, "schedule"), (int)num(c, "vpp"), (int)num(c, "mbs"),
              (int)num(c, "grad_accum"), str(c, "recompute"));
    sb_printf(&b, "roofline MFU %6.2f %%\n", 100.0 * num(c, "roofline_mfu"));
    json_t *gap = json_object_get(c, "gap_expected");
    size_t n = json_array_size(gap);
    double vmax = 0;
    for (size_t i = 0; i < n; i++) {
        double v = fabs(num(json_array_get(gap, i), "mfu_points"));
        if (v > vmax) vmax = v;
    }
    int used[64] = {0};
    for (size_t k = 0; k < n && k < 64; k++) {
        int best = -1;
        double bv = -1;
        for (size_t i = 0; i < n && i < 64; i++) {
            double v = fabs(num(json_array_get(gap, i), "mfu_points"));
            if (!used[i] && v > bv) { bv = v; best = (int)i; }
        }
        used[best] = 1;
        json_t *g = json_array_get(gap, (size_t)best);
        double v = num(g, "mfu_points");
        if (fabs(v) < 0.005) continue;
        int w = vmax > 0 ? (int)(40.0 * fabs(v) / vmax + 0.5) : 0;
        char bar[48];
        memset(bar, v >= 0 ? '#' : '+', (size_t)w);
        bar[w] = 0;
        sb_printf(&b, "  - %-18s %6.2f points  %8.4f s  %s\n", str(g, "name"), v, num(g, "seconds"), bar);
    }
    sb_printf(&b, "expected MFU %6.2f %% (interval %.1f-%.1f %%), %.4f s per step; bound %.2f %%\n",
              100.0 * num(c, "expected.mfu"), 100.0 * lo, 100.0 * hi, num(c, "expected.step_time_s"),
              100.0 * num(c, "bound.mfu"));
    json_t *m = json_object_get(result, "measured");
    if (m) {
        sb_printf(&b, "measured MFU %6.2f %%, %.4f s per step (the measured configuration):\n",
                  100.0 * num(m, "mfu"), num(m, "step_time_s"));
        size_t i;
        json_t *g;
        json_array_foreach(json_object_get(m, "gap"), i, g)
            sb_printf(&b, "  - %-32s %6.2f points  %8.4f s\n", str(g, "name"), num(g, "mfu_points"), num(g, "seconds"));
    }
    return b.p;
}

