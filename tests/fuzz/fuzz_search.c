/* tests/fuzz/fuzz_search.c -- libFuzzer target (c): the core search on
 * bounded inputs decoded from bytes.
 *
 * The bytes choose a model (a preset, or up to 3 layer runs of small
 * dimensions: mha/mla/gla attention, dense/moe MLP), hardware (a preset, or
 * bounded numbers with an optional efficiency profile), devices (<= 4096),
 * training (seq, batch, dtype, attention kernel, convention, and -- read
 * last, so older corpus entries keep their meaning -- the framework
 * switches: gradient-reduction overlap, legacy pipeline sends, TP sync,
 * unfused accumulation and loss, the FP8 recipe; then torchtitan's eager
 * loss and, on a TPU, MaxText's merged layer pairs) and search options
 * (top_k <= 16, max_evaluations <= 4000, fixed switches, allowed axis
 * values, a batch range). Model and hardware go through the API's
 * validator (render -> parse) so the core only sees what a request could
 * give it. Then mfu_search runs (twice) and abort()s on any violation of:
 *   - no NaN/Inf in any field of a ranked evaluation, scores > 0, sorted;
 *   - every config legal (mfu_config_check), dense axes multiply to
 *     devices, launchable by an admitted framework, constraints honoured,
 *     batch within the range, fits memory;
 *   - the roofline's MFU is <= 1 and every system MFU <= the roofline's
 *     (the bound is a bound), bound step <= expected step;
 *   - the gap identity per profile: components sum to roofline MFU - MFU
 *     (rel. 1e-9) and to T_step - T_roofline/N in seconds;
 *   - the statistics add up (evaluated <= space_size, ...);
 *   - the same input gives bit-identical output;
 *   - the head's evaluation equals a fresh mfu_evaluate of its config,
 *     and mfu_step_time_below (the search's pruning) answers its step or,
 *     only for a limit below it, +inf. */
#include <stdint.h>

#include "fuzz_util.h"
#include "search.h"

typedef struct rd { const uint8_t *p; size_t n; } rd;
static unsigned u8(rd *r)
{
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}
static unsigned u16(rd *r) { unsigned a = u8(r); return a | u8(r) << 8; }

static mfu_op ops[MFU_MAX_OPS];
static void *cache;
static mfu_ranked top_a[16], top_b[16];
static mfu_ranked part_buf[16]; /* one shard's ranking (core/search.h) */

static int64_t pick_heads(rd *r) { return (int64_t)1 << (u8(r) % 6); } /* 1..32 */

static void decode_run(rd *r, const mfu_model *m, mfu_layer_run *lr)
{
    memset(lr, 0, sizeof *lr);
    lr->count = 1 + u8(r) % 8;
    mfu_attention *a = &lr->attn;
    a->kind = (mfu_attn_kind)(u8(r) % 3);
    a->n_heads = pick_heads(r);
    switch (a->kind) {
    case MFU_ATTN_MHA:
        a->n_kv_heads = a->n_heads >> (u8(r) % 6);
        if (a->n_kv_heads < 1) a->n_kv_heads = 1;
        a->head_dim = (u8(r) & 1) && m->d_model % a->n_heads == 0 ? m->d_model / a->n_heads
                                                                  : 16 * (1 + u8(r) % 8);
        a->window = u8(r) % 4 == 0 ? 64 * (1 + u8(r) % 16) : 0;
        a->qkv_bias = u8(r) & 1;
        break;
    case MFU_ATTN_MLA:
        a->n_kv_heads = a->n_heads;
        a->q_lora_rank = u8(r) & 1 ? 0 : 32 * (1 + u8(r) % 16);
        a->kv_lora_rank = 32 * (1 + u8(r) % 16);
        a->qk_nope_head_dim = 16 * (1 + u8(r) % 8);
        a->qk_rope_head_dim = 16 * (u8(r) % 5);
        a->v_head_dim = 16 * (1 + u8(r) % 8);
        break;
    default:
        a->n_kv_heads = a->n_heads >> (u8(r) % 6);
        if (a->n_kv_heads < 1) a->n_kv_heads = 1;
        a->key_dim = a->n_heads * 16 * (1 + u8(r) % 8);
        a->value_dim = a->n_heads * 16 * (1 + u8(r) % 8);
        a->gate_rank = 1 + u8(r) % 32;
        a->chunk_size = (int64_t)16 << (u8(r) % 4);
        a->output_gate = u8(r) & 1;
        break;
    }
    mfu_mlp *p = &lr->mlp;
    p->kind = (mfu_mlp_kind)(u8(r) % 2);
    p->gated = u8(r) & 1;
    p->act = (mfu_act)(u8(r) % 3);
    p->capacity_factor = 1.0;
    if (p->kind == MFU_MLP_DENSE) {
        p->ffn_dim = 64 * (1 + u8(r) % 64);
    } else {
        p->n_experts = 1 + u8(r) % 64;
        p->top_k = 1 + u8(r) % p->n_experts;
        p->expert_ffn_dim = 32 * (1 + u8(r) % 32);
        p->n_shared_experts = u8(r) % 3;
        p->shared_ffn_dim = 32 * (1 + u8(r) % 32);
        p->capacity_factor = 1.0 + (u8(r) % 8) / 4.0;
    }
}

/* Validate through the API (render, parse): 0 if the API accepts it. */
static int validate_model(mfu_model *m)
{
    api_status st;
    api_status_init(&st);
    json_t *ir = api_model_to_ir(m);
    int rc = ir ? api_model_from_ir(ir, "/model", m, &st) : -1;
    json_decref(ir);
    return rc;
}
static int validate_hw(mfu_hardware *hw)
{
    api_status st;
    api_status_init(&st);
    json_t *j = api_hardware_to_json(hw);
    int rc = j ? api_hardware_from_json(j, "/hardware", hw, &st) : -1;
    json_decref(j);
    return rc;
}

static int preset(json_t *(*names)(void), json_t *(*get)(const char *), unsigned i, int is_model,
                  void *out)
{
    json_t *list = names();
    size_t n = json_array_size(list);
    if (!n) { json_decref(list); return -1; }
    const char *name = json_string_value(json_array_get(list, i % n));
    (void)get;
    api_status st;
    api_status_init(&st);
    json_t *req = json_pack("{s:s}", "preset", name ? name : "");
    json_t *src = NULL, *ovr = NULL, *j;
    int rc;
    if (is_model) {
        j = api_resolve_model(req, &src, &ovr, &st);
        rc = j ? api_model_from_ir(j, "/model", out, &st) : -1;
    } else {
        j = api_resolve_hardware(req, &ovr, &st);
        rc = j ? api_hardware_from_json(j, "/hardware", out, &st) : -1;
    }
    json_decref(req); json_decref(src); json_decref(ovr); json_decref(j); json_decref(list);
    return rc;
}

static int decode_model(rd *r, mfu_model *m)
{
    memset(m, 0, sizeof *m);
    if (u8(r) % 4 == 0)
        return preset(api_preset_model_names, api_preset_model, u8(r), 1, m);
    snprintf(m->name, sizeof m->name, "fuzz");
    m->d_model = 64 * (1 + u8(r) % 32);
    m->vocab = 256 * (1 + u16(r) % 512);
    m->tie_embeddings = u8(r) & 1;
    m->norm = (mfu_norm)(u8(r) % 2);
    m->position = (mfu_pos)(u8(r) % 3);
    m->max_positions = m->position == MFU_POS_LEARNED ? (int64_t)64 << (u8(r) % 10) : 0;
    m->bias = u8(r) & 1;
    m->dropout = u8(r) & 1;
    m->n_runs = 1 + u8(r) % 3;
    for (int i = 0; i < m->n_runs; i++) decode_run(r, m, &m->runs[i]);
    return validate_model(m);
}

static int decode_hw(rd *r, mfu_hardware *hw)
{
    memset(hw, 0, sizeof *hw);
    if (u8(r) % 3)
        return preset(api_preset_hardware_names, api_preset_hardware, u8(r), 0, hw);
    snprintf(hw->name, sizeof hw->name, "fuzz");
    double bf16 = 1e13 * (1 + u8(r));
    hw->peak_flops[MFU_DT_BF16] = bf16;
    hw->peak_flops[MFU_DT_FP16] = u8(r) & 1 ? bf16 : 0;
    hw->peak_flops[MFU_DT_FP8] = u8(r) & 1 ? 2 * bf16 : 0;
    hw->peak_flops[MFU_DT_FP32] = u8(r) & 1 ? bf16 / 16 : 0;
    hw->hbm_bytes = 1e9 * (1 + u8(r));
    hw->hbm_bw_bytes_s = 1e11 * (1 + u8(r) % 64);
    hw->n_tiers = 1 + u8(r) % 3;
    int64_t dom = (int64_t)1 << (u8(r) % 7);
    for (int i = 0; i < hw->n_tiers; i++) {
        snprintf(hw->tiers[i].name, sizeof hw->tiers[i].name, "t%d", i);
        hw->tiers[i].domain_size = i == hw->n_tiers - 1 ? API_MAX_DEVICES : dom;
        if (hw->tiers[i].domain_size < dom) hw->tiers[i].domain_size = dom;
        dom *= 2 + u8(r) % 16;
        hw->tiers[i].bw_bytes_s = 1e9 * (1 + u8(r));
        hw->tiers[i].latency_s = 1e-6 * u8(r);
    }
    mfu_efficiency_ideal(&hw->eff);
    if (u8(r) & 1) {
        hw->has_profile = 1;
        mfu_efficiency *e = &hw->eff;
        e->n_gemm = u8(r) % 5;
        for (int i = 0; i < e->n_gemm; i++) {
            double f = 1e8 * (1 + u8(r)) * pow(10, i);
            mfu_efficiency_set_gemm(e, i, f, (1 + u8(r) % 100) / 100.0);
        }
        e->attn_eff = (1 + u8(r) % 100) / 100.0;
        e->hbm_eff = (1 + u8(r) % 100) / 100.0;
        for (int i = 0; i < hw->n_tiers; i++) {
            e->net_eff[i] = (1 + u8(r) % 100) / 100.0;
            e->net_half_bytes[i] = 1e5 * u8(r);
        }
        e->step_overhead_s = 1e-3 * u8(r);
    }
    return validate_hw(hw);
}

static int64_t decode_devices(rd *r)
{
    static const int64_t nice[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 72, 96, 128, 144,
                                   256, 384, 512, 576, 1000, 1024, 1536, 2048, 3072, 4096};
    unsigned k = u8(r);
    if (k % 4 == 0) return 1 + u16(r) % 4096;
    return nice[k / 4 % (sizeof nice / sizeof nice[0])];
}

static void check_finite_eval(const mfu_eval *e, int idx)
{
    const mfu_memory *m = &e->mem;
    const double mem[] = {m->weights_bytes, m->grads_bytes, m->optimizer_bytes, m->activations_bytes,
                          m->buffers_bytes, m->reserve_bytes, m->total_bytes, m->capacity_bytes,
                          m->headroom_bytes};
    for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++)
        FZ_CHECK(isfinite(mem[i]), "config %d: memory field %zu = %g", idx, i, mem[i]);
    for (int pr = 0; pr < 2; pr++) {
        const mfu_times *t = pr ? &e->expected : &e->bound;
        const double v[] = {t->compute_s, t->recompute_s, t->bubble_s, t->optimizer_s,
                            t->overhead_s, t->step_time_s, t->mfu, t->hfu};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            FZ_CHECK(isfinite(v[i]), "config %d profile %d: time field %zu = %g", idx, pr, i, v[i]);
        for (int c = 0; c < MFU_COMM_COUNT; c++)
            FZ_CHECK(isfinite(t->comm_total_s[c]) && isfinite(t->comm_exposed_s[c]),
                     "config %d profile %d: comm %s", idx, pr, mfu_comm_names[c]);
        for (int g = 0; g < MFU_GAP_COUNT; g++)
            FZ_CHECK(isfinite(t->gap_s[g]), "config %d profile %d: gap %s = %g", idx, pr,
                     mfu_gap_names[g], t->gap_s[g]);
        FZ_CHECK(t->step_time_s > 0 && t->mfu >= 0, "config %d profile %d: step %g mfu %g", idx, pr,
                 t->step_time_s, t->mfu);
    }
    for (int c = 0; c < MFU_COMM_COUNT; c++)
        FZ_CHECK(isfinite(e->overlap_ratio[c]), "config %d: overlap_ratio %s", idx, mfu_comm_names[c]);
    FZ_CHECK(isfinite(e->tokens_per_s) && isfinite(e->f_useful_flops) && isfinite(e->f_hw_flops),
             "config %d: tokens/s or flops", idx);
}

static void check_gaps(const mfu_system *sys, const mfu_eval *e, int idx)
{
    for (int pr = 0; pr < 2; pr++) {
        const mfu_times *t = pr ? &e->expected : &e->bound;
        double sum = 0, pts = 0;
        for (int g = 0; g < MFU_GAP_COUNT; g++) {
            sum += t->gap_s[g];
            pts += sys->roofline_mfu * t->gap_s[g] / t->step_time_s;
        }
        double troof = sys->roof_step_per_token_s * (double)e->global_batch_tokens / (double)sys->devices;
        double want = sys->roofline_mfu - t->mfu;
        FZ_CHECK(fabs(pts - want) <= 1e-9 * fmax(1.0, fabs(sys->roofline_mfu)),
                 "config %d profile %d: gap points %.17g != roofline - mfu %.17g", idx, pr, pts, want);
        FZ_CHECK(fabs(sum - (t->step_time_s - troof)) <= 1e-9 * t->step_time_s,
                 "config %d profile %d: gap seconds %.17g != %.17g", idx, pr, sum, t->step_time_s - troof);
    }
}

static int allowed(const mfu_search_opts *o, int ax, int64_t v)
{
    if (o->max_ax[ax] > 0 && v > o->max_ax[ax]) return 0;
    if (!o->n_allowed[ax]) return 1;
    for (int i = 0; i < o->n_allowed[ax]; i++)
        if (o->allowed[ax][i] == v) return 1;
    return 0;
}

static void check_result(const mfu_system *sys, const mfu_search_opts *o, const mfu_search_result *r)
{
    const mfu_search_stats *s = &r->stats;
    FZ_CHECK(r->n >= 0 && r->n <= o->top_k, "n %d top_k %d", r->n, o->top_k);
    FZ_CHECK(s->evaluated <= s->space_size, "evaluated %llu > space %llu",
             (unsigned long long)s->evaluated, (unsigned long long)s->space_size);
    FZ_CHECK(s->feasible <= s->evaluated && s->fully_evaluated <= s->feasible,
             "fully %llu <= feasible %llu <= evaluated %llu", (unsigned long long)s->fully_evaluated,
             (unsigned long long)s->feasible, (unsigned long long)s->evaluated);
    FZ_CHECK((uint64_t)r->n <= s->fully_evaluated, "ranked %d > fully evaluated", r->n);
    FZ_CHECK(s->feasible == s->fully_evaluated + s->pruned[MFU_PRUNE_BOUND],
             "feasible %llu != fully %llu + bound-pruned %llu", (unsigned long long)s->feasible,
             (unsigned long long)s->fully_evaluated, (unsigned long long)s->pruned[MFU_PRUNE_BOUND]);
    FZ_CHECK(s->evaluated == s->feasible + s->pruned[MFU_PRUNE_MEMORY],
             "evaluated %llu != feasible + memory-pruned", (unsigned long long)s->evaluated);
    if (o->max_evaluations) FZ_CHECK(s->evaluated <= o->max_evaluations, "budget overrun");
    if (!s->truncated)
        FZ_CHECK(s->evaluated + s->pruned[MFU_PRUNE_DIVISIBILITY] + s->pruned[MFU_PRUNE_CONSTRAINT] +
                         s->pruned[MFU_PRUNE_BATCH] + s->pruned[MFU_PRUNE_FRAMEWORK] +
                         s->pruned[MFU_PRUNE_DOMINATED] == s->space_size,
                 "space %llu != evaluated + pruned", (unsigned long long)s->space_size);
    for (int i = 0; i < r->n; i++) {
        const mfu_ranked *t = &r->top[i];
        const mfu_config *c = &t->config;
        check_finite_eval(&t->eval, i);
        FZ_CHECK(isfinite(t->score) && t->score > 0, "config %d: score %g", i, t->score);
        if (i) FZ_CHECK(t->score >= r->top[i - 1].score, "config %d: unsorted", i);
        int64_t prod = 1;
        for (int a = 0; a < MFU_AX_COUNT; a++) {
            FZ_CHECK(c->ax[a] >= 1, "config %d: axis %d = %lld", i, a, (long long)c->ax[a]);
            FZ_CHECK(allowed(o, a, c->ax[a]), "config %d: axis %d = %lld not allowed", i, a,
                     (long long)c->ax[a]);
            if (a != MFU_AX_EP) prod *= c->ax[a];
        }
        FZ_CHECK(prod == sys->devices, "config %d: axes multiply to %lld, devices %lld", i,
                 (long long)prod, (long long)sys->devices);
        const char *why = "";
        int reason;
        FZ_CHECK(mfu_config_check(sys, c, &reason, &why) == MFU_OK, "config %d: illegal: %s", i, why);
        FZ_CHECK((o->frameworks & MFU_FW_ANY) || (mfu_config_frameworks(sys, c, NULL) & o->frameworks),
                 "config %d: no admitted framework launches it", i);
        FZ_CHECK(t->eval.bound.mfu <= sys->roofline_mfu * (1 + 1e-9) &&
                     t->eval.expected.step_time_s >= t->eval.bound.step_time_s * (1 - 1e-12),
                 "config %d: system MFU %.17g above the roofline's %.17g (or expected step %.17g < bound "
                 "%.17g: compute %g/%g recompute %g/%g bubble %g/%g optimizer %g/%g overhead %g/%g)", i,
                 t->eval.bound.mfu, sys->roofline_mfu, t->eval.expected.step_time_s, t->eval.bound.step_time_s,
                 t->eval.expected.compute_s, t->eval.bound.compute_s, t->eval.expected.recompute_s,
                 t->eval.bound.recompute_s, t->eval.expected.bubble_s, t->eval.bound.bubble_s,
                 t->eval.expected.optimizer_s, t->eval.bound.optimizer_s, t->eval.expected.overhead_s,
                 t->eval.bound.overhead_s);
        FZ_CHECK(o->fix_sp < 0 || c->sp == o->fix_sp, "config %d: sp", i);
        FZ_CHECK(o->fix_zero < 0 || c->zero == o->fix_zero, "config %d: zero", i);
        FZ_CHECK(o->fix_schedule < 0 || (int)c->schedule == o->fix_schedule, "config %d: schedule", i);
        FZ_CHECK(o->fix_recompute < 0 || (int)c->recompute == o->fix_recompute, "config %d: recompute", i);
        FZ_CHECK(o->fix_etp < 0 || c->etp == o->fix_etp, "config %d: etp", i);
        FZ_CHECK(o->fix_vpp < 0 || c->vpp == o->fix_vpp, "config %d: vpp", i);
        FZ_CHECK(o->fix_mbs < 0 || c->mbs == o->fix_mbs, "config %d: mbs", i);
        FZ_CHECK(c->mbs <= o->max_mbs && c->vpp <= o->max_vpp, "config %d: mbs %lld vpp %lld", i,
                 (long long)c->mbs, (long long)c->vpp);
        FZ_CHECK(c->tp_overlap == o->tp_overlap && c->ep_overlap == o->ep_overlap, "config %d: overlap", i);
        int64_t seqs = c->mbs * c->grad_accum * c->ax[MFU_AX_DP] * c->ax[MFU_AX_FSDP];
        FZ_CHECK(seqs >= o->batch_min_seqs && seqs <= o->batch_max_seqs,
                 "config %d: batch %lld seqs outside [%lld, %lld]", i, (long long)seqs,
                 (long long)o->batch_min_seqs, (long long)o->batch_max_seqs);
        FZ_CHECK(t->eval.global_batch_tokens == seqs * sys->train.seq, "config %d: global batch", i);
        FZ_CHECK(t->eval.feasible && t->eval.mem.headroom_bytes >= 0 &&
                     t->eval.mem.total_bytes <= t->eval.mem.capacity_bytes * (1 + 1e-12),
                 "config %d: ranked but does not fit: total %g capacity %g", i,
                 t->eval.mem.total_bytes, t->eval.mem.capacity_bytes);
        check_gaps(sys, &t->eval, i);
    }
}

static int same_config(const mfu_config *a, const mfu_config *b)
{
    for (int i = 0; i < MFU_AX_COUNT; i++)
        if (a->ax[i] != b->ax[i]) return 0;
    return a->sp == b->sp && a->zero == b->zero && a->etp == b->etp && a->schedule == b->schedule &&
           a->vpp == b->vpp && a->mbs == b->mbs && a->grad_accum == b->grad_accum &&
           a->recompute == b->recompute && a->recompute_layers == b->recompute_layers &&
           a->split == b->split && a->pp_first == b->pp_first && a->pp_last == b->pp_last &&
           a->tp_overlap == b->tp_overlap && a->ep_overlap == b->ep_overlap;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rd r = {data, size};
    static mfu_model m;
    static mfu_hardware hw;
    if (decode_model(&r, &m) || decode_hw(&r, &hw)) return 0;
    int64_t devices = decode_devices(&r);
    mfu_training tr;
    memset(&tr, 0, sizeof tr);
    tr.seq = (int64_t)64 << (u8(&r) % 9);
    if (m.position == MFU_POS_LEARNED && tr.seq > m.max_positions) tr.seq = m.max_positions;
    if (tr.seq < 1) return 0;
    int64_t bseqs = 1 + u16(&r) % 4096;
    tr.global_batch_tokens = (double)(bseqs * tr.seq);
    tr.dtype = (mfu_dtype)(u8(&r) % MFU_DT_COUNT);
    if (hw.peak_flops[tr.dtype] <= 0) tr.dtype = MFU_DT_BF16;
    tr.attn_impl = (mfu_attn_impl)(u8(&r) % 2);
    tr.conv = (mfu_convention)(u8(&r) % 3);
    tr.grad_bf16 = u8(&r) & 1;
    tr.moments_bf16 = u8(&r) & 1;
    unsigned custom = u8(&r) & 1 ? u8(&r) & 0xff : 0u;

    mfu_system sys;
    FZ_CHECK(mfu_system_init(&sys, &m, &hw, &tr, devices, custom, ops) == MFU_OK,
             "system init failed (an inventory beyond MFU_MAX_OPS)");
    FZ_CHECK(isfinite(sys.roofline_mfu) && sys.roofline_mfu > 0, "roofline mfu %g", sys.roofline_mfu);
    {
        /* the roofline never executes more than peak: executed FLOPs over
         * peak x time <= 1; model FLOPs too, unless the "full" convention
         * counts attention a causal flash kernel skips */
        mfu_roofline roof;
        FZ_CHECK(mfu_roofline_compute(&m, &hw, &tr, ops, MFU_MAX_OPS, &roof) == MFU_OK, "roofline");
        double util = roof.f_exec_flops / (hw.peak_flops[tr.dtype] * roof.step_time_s);
        FZ_CHECK(util <= 1.0 + 1e-12, "roofline executes %.17g of peak", util);
        if (tr.conv != MFU_CONV_FULL || tr.attn_impl == MFU_ATTN_UNFUSED)
            FZ_CHECK(sys.roofline_mfu <= 1.0 + 1e-12, "roofline mfu %.17g > 1", sys.roofline_mfu);
    }
    FZ_CHECK(isfinite(sys.roof_step_per_token_s) && sys.roof_step_per_token_s > 0, "roofline step");

    mfu_search_opts o;
    mfu_search_defaults(&sys, &o);
    o.top_k = 1 + u8(&r) % 16;
    o.rank_by_bound = u8(&r) & 1;
    o.max_evaluations = 1 + u16(&r) % 4000;
    o.max_mbs = 1 + u8(&r) % 32;
    o.max_vpp = 1 + u8(&r) % 8;
    o.partial_recompute = u8(&r) & 1;
    o.tp_overlap = u8(&r) & 1;
    o.ep_overlap = u8(&r) & 1;
    unsigned fwb = u8(&r);
    if (fwb & 1) o.frameworks = MFU_FW_ANY | mfu_platform_frameworks(&hw);
    else if (fwb & 2) o.frameworks = mfu_platform_frameworks(&hw) & (fwb >> 2 | 1u);
    unsigned sw = u8(&r);
    if (sw & 1) o.fix_sp = u8(&r) & 1;
    if (sw & 2) o.fix_zero = u8(&r) % 3;
    if (sw & 4) o.fix_schedule = u8(&r) % MFU_SCHED_COUNT;
    if (sw & 8) o.fix_recompute = u8(&r) % MFU_RC_COUNT;
    if (sw & 16) o.fix_vpp = 1 + u8(&r) % 4;
    if (sw & 32) o.fix_mbs = 1 + u8(&r) % 8;
    if (sw & 64) o.fix_etp = 1 + u8(&r) % 8;
    /* as the API does: a fixed value widens the matching maximum */
    if (o.fix_mbs > o.max_mbs) o.max_mbs = o.fix_mbs;
    if (o.fix_vpp > o.max_vpp) o.max_vpp = o.fix_vpp;
    unsigned axes = u8(&r);
    for (int a = 0; a < MFU_AX_COUNT; a++) {
        if (!(axes >> a & 1)) continue;
        int n = 1 + u8(&r) % 4;
        for (int i = 0; i < n; i++) {
            int64_t v = u8(&r) & 1 ? (int64_t)1 << (u8(&r) % 8) : 1 + u8(&r) % 16;
            o.allowed[a][o.n_allowed[a]++] = v;
            if (a == MFU_AX_TP && v > o.max_ax[MFU_AX_TP]) o.max_ax[MFU_AX_TP] = v;
        }
    }
    if (axes & 64) o.max_ax[MFU_AX_TP] = 1 + u8(&r) % 16;
    if (axes & 128) { /* a searched batch range; the roofline is taken at its top */
        o.batch_min_seqs = 1 + u8(&r);
        o.batch_max_seqs = o.batch_min_seqs + u16(&r) % 1024;
        tr.global_batch_tokens = (double)(o.batch_max_seqs * tr.seq);
        FZ_CHECK(mfu_system_init(&sys, &m, &hw, &tr, devices, custom, ops) == MFU_OK, "system init");
    }
    unsigned fsw = u8(&r); /* the framework switches (docs/model.md) */
    if (fsw) {
        tr.no_grad_overlap = fsw & 1;
        tr.pp_scatter_gather = fsw >> 1 & 1;
        tr.pp_no_overlap_p2p = fsw >> 2 & 1;
        tr.tp_sync_bwd = fsw >> 3 & 1;
        tr.wgrad_acc_unfused = fsw >> 4 & 1;
        tr.ce_unfused = fsw >> 5 & 1;
        tr.fp8_recipe = (int)(fsw >> 6 & 3);
        FZ_CHECK(mfu_system_init(&sys, &m, &hw, &tr, devices, custom, ops) == MFU_OK, "system init");
    }
    unsigned fsw2 = u8(&r); /* later switches, read last: torchtitan's eager loss, MaxText's merged layers */
    if (fsw2) {
        tr.ce_eager = fsw2 & 1;
        if (tr.ce_eager) tr.ce_unfused = 1;
        FZ_CHECK(mfu_system_init(&sys, &m, &hw, &tr, devices, custom, ops) == MFU_OK, "system init");
        if ((fsw2 >> 1 & 1) && hw.platform == MFU_PLATFORM_TPU && sys.layers % 2 == 0)
            FZ_CHECK(mfu_system_set_scan_unit(&sys, 2) == MFU_OK, "scan unit");
    }

    if (!cache) cache = malloc(mfu_search_cache_bytes());
    mfu_search_scratch sc = {ops, cache, part_buf};
    mfu_search_result ra = {0, top_a, {0}}, rb = {0, top_b, {0}};
    memset(top_a, 0, sizeof top_a);
    memset(top_b, 0, sizeof top_b);
    FZ_CHECK(mfu_search(&sys, &o, &sc, NULL, NULL, &ra) == 0, "mfu_search failed");
    check_result(&sys, &o, &ra);
    /* deterministic: the same input gives bit-identical output */
    FZ_CHECK(mfu_search(&sys, &o, &sc, NULL, NULL, &rb) == 0, "mfu_search failed");
    FZ_CHECK(ra.n == rb.n && memcmp(&ra.stats, &rb.stats, sizeof ra.stats) == 0, "two runs differ");
    for (int i = 0; i < ra.n; i++) /* field by field: struct padding is not compared */
        FZ_CHECK(same_config(&top_a[i].config, &top_b[i].config) && top_a[i].score == top_b[i].score &&
                     top_a[i].eval.bound.step_time_s == top_b[i].eval.bound.step_time_s &&
                     top_a[i].eval.expected.step_time_s == top_b[i].eval.expected.step_time_s &&
                     top_a[i].eval.mem.total_bytes == top_b[i].eval.mem.total_bytes,
                 "two runs differ at config %d", i);
    /* the search's cached evaluation equals the direct one */
    if (ra.n > 0) {
        mfu_eval ev;
        FZ_CHECK(mfu_evaluate(&sys, &top_a[0].config, ops, &ev) == MFU_OK, "evaluate failed");
        for (int pr = 0; pr < 2; pr++) {
            double a = pr ? ev.expected.step_time_s : ev.bound.step_time_s;
            double b = pr ? top_a[0].eval.expected.step_time_s : top_a[0].eval.bound.step_time_s;
            FZ_CHECK(fabs(a - b) <= 1e-9 * b, "profile %d: evaluate %.17g != search %.17g", pr, a, b);
        }
        FZ_CHECK(fabs(ev.mem.total_bytes - top_a[0].eval.mem.total_bytes) <=
                     1e-9 * top_a[0].eval.mem.total_bytes,
                 "memory: evaluate %.17g != search %.17g", ev.mem.total_bytes, top_a[0].eval.mem.total_bytes);
        /* the pruning: the step itself, or +inf only below it. The
         * evaluation holds an expected step a hair below the bound's at
         * the bound (F-GAP, mfu_evaluate_costs); the search ranks by the
         * step as computed */
        mfu_shape sh;
        mfu_config_shape(&sys, &top_a[0].config, &sh);
        mfu_shape_cost k[2];
        mfu_shape_costs2(&sys, &sh, ops, &k[0], &k[1]);
        for (int pr = 0; pr < 2; pr++) {
            double step = pr ? ev.expected.step_time_s : ev.bound.step_time_s;
            double at = mfu_step_time_below(&sys, &top_a[0].config, &k[pr], pr, INFINITY);
            FZ_CHECK(at == step || (pr && step == ev.bound.step_time_s && at < step),
                     "profile %d: step_time_below %.17g != evaluate %.17g", pr, at, step);
            double half = mfu_step_time_below(&sys, &top_a[0].config, &k[pr], pr, 0.5 * at);
            FZ_CHECK(half == at || isinf(half), "profile %d: the pruning changed the step", pr);
            FZ_CHECK(mfu_step_time_below(&sys, &top_a[0].config, &k[pr], pr, at) == at,
                     "profile %d: pruned at its own step", pr);
        }
    }
    return 0;
}
