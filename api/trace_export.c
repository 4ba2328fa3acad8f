/* api/trace_export.c -- mfud's predicted step of one configuration as a
 * Chrome trace (issue 12 item 4, docs/traces.md): open it in Perfetto next
 * to a measured one. One device of the busiest pipeline stage, which is
 * the one the step time is set by: a compute stream and a communication
 * stream.
 *
 * The compute stream runs, in order: the pipeline bubble (idle), every
 * micro-batch's forward and backward as GEMM, attention and other kernels
 * (the busiest stage's layers at this shape: GEMM and attention times from
 * the operator inventory, the rest of the compute time as "other"), the
 * recomputed forwards, idle while the exposed communication runs, the
 * optimizer step, and idle host overhead. The communication stream runs
 * each axis's hidden part under the compute kernels and its exposed part
 * after them, named as the collective library names its kernels (so the
 * reader, api/trace.c, classifies them): TP all-reduce (all-gather and
 * reduce-scatter with sequence parallel), CP send/recv, EP all-to-all,
 * FSDP all-gather + reduce-scatter, DP all-reduce (ZeRO-1/2: reduce-scatter
 * + all-gather), PP send/recv. The whole is annotated ProfilerStep#1 and
 * lasts the expected step time. Reading it back gives the model's own
 * figures (tests/unit/test_trace.c: within 1 %).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct tb {
    json_t *ev;
    int pid;
} tb;

#define COMM_STREAM_ID 20

static void emit(tb *b, const char *name, const char *cat, int tid, double ts_s, double dur_s)
{
    if (!(dur_s > 0)) return;
    json_array_append_new(b->ev, json_pack("{s:s,s:s,s:s,s:i,s:i,s:f,s:f,s:{s:i,s:i}}", "name", name, "cat",
                                           cat, "ph", "X", "pid", b->pid, "tid", tid, "ts", ts_s * 1e6,
                                           "dur", dur_s * 1e6, "args", "stream", tid, "device", b->pid));
}

/* A collective kernel, with the process group Megatron-Core names for its
 * axis (megatron/core/parallel_state.py group_desc), as Kineto records it:
 * the reader (api/trace.c pg_axis) attributes it to that axis. */
static void emit_coll(tb *b, const char *name, int axis, double ts_s, double dur_s)
{
    static const char *const PG[MFU_COMM_COUNT] = {
        "TENSOR_MODEL_PARALLEL_GROUP", "CONTEXT_PARALLEL_GROUP", "EXPERT_MODEL_PARALLEL_GROUP",
        "DATA_PARALLEL_GROUP (fsdp)", "DATA_PARALLEL_GROUP", "PIPELINE_MODEL_PARALLEL_GROUP"};
    if (!(dur_s > 0)) return;
    json_array_append_new(b->ev, json_pack("{s:s,s:s,s:s,s:i,s:i,s:f,s:f,s:{s:i,s:i,s:s}}", "name", name, "cat",
                                           "kernel", "ph", "X", "pid", b->pid, "tid", COMM_STREAM_ID, "ts",
                                           ts_s * 1e6, "dur", dur_s * 1e6, "args", "stream", COMM_STREAM_ID,
                                           "device", b->pid, "Process Group Description", PG[axis]));
}

/* The collective kernels of one axis: up to two (name, share of its time). */
typedef struct coll { const char *name[2]; double share[2]; } coll;

static coll axis_collectives(const mfu_config *c, int axis)
{
    static const char *AR = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL (mfud)";
    static const char *RS = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL (mfud)";
    static const char *AG = "ncclDevKernel_AllGather_RING_LL (mfud)";
    static const char *SR = "ncclDevKernel_SendRecv (mfud)";
    static const char *A2A = "ncclDevKernel_AllToAll (mfud)";
    coll k = {{NULL, NULL}, {0, 0}};
    switch (axis) {
    case MFU_COMM_TP:
        if (c->sp) k = (coll){{AG, RS}, {0.5, 0.5}};
        else k = (coll){{AR, NULL}, {1, 0}};
        break;
    case MFU_COMM_CP: k = (coll){{SR, NULL}, {1, 0}}; break;
    case MFU_COMM_EP: k = (coll){{A2A, NULL}, {1, 0}}; break;
    case MFU_COMM_FSDP: k = (coll){{AG, RS}, {2.0 / 3.0, 1.0 / 3.0}}; break;
    case MFU_COMM_DP:
        if (c->zero == 1 || c->zero == 2) k = (coll){{RS, AG}, {0.5, 0.5}};
        else k = (coll){{AR, NULL}, {1, 0}};
        break;
    default: k = (coll){{SR, NULL}, {1, 0}}; break;
    }
    return k;
}

enum { COMPUTE_STREAM = 7, COMM_STREAM = COMM_STREAM_ID };

/* What the drawing needs: one profile's step figures (mfu_times or their
 * JSON, time_expected) and the switches that name the collectives. */
typedef struct step_in {
    double compute_s, gemm_s, attention_s, recompute_s, bubble_s, optimizer_s, overhead_s;
    double total_s[MFU_COMM_COUNT], exposed_s[MFU_COMM_COUNT];
    int sp, zero;
    int64_t micro_batches, layers;
    const char *hardware;
} step_in;

static json_t *draw(const step_in *t)
{
    mfu_config c;
    memset(&c, 0, sizeof c);
    c.sp = t->sp;
    c.zero = t->zero;
    double gemm = t->gemm_s, attn = t->attention_s;
    double other = t->compute_s - gemm - attn;
    if (other < 0) other = 0;
    tb b = {json_array(), 0};
    json_t *figures = json_object();
    double now = t->bubble_s; /* the pipeline's fill and drain, as idle first */
    double compute_start = now;
    int64_t mb = t->micro_batches < 1 ? 1 : t->micro_batches;
    int groups = mb > 32 ? 32 : (int)mb; /* micro-batches drawn as up to 32 groups */
    for (int g = 0; g < groups; g++) {
        emit(&b, "sm90_xmma_gemm_bf16bf16_bf16f32 (mfud)", "kernel", COMPUTE_STREAM, now, gemm / groups);
        now += gemm / groups;
        emit(&b, "flash_fwd_bwd_kernel (mfud)", "kernel", COMPUTE_STREAM, now, attn / groups);
        now += attn / groups;
        emit(&b, "vectorized_elementwise_kernel (mfud)", "kernel", COMPUTE_STREAM, now, other / groups);
        now += other / groups;
    }
    emit(&b, "recompute_elementwise_kernel (mfud)", "kernel", COMPUTE_STREAM, now, t->recompute_s);
    now += t->recompute_s;
    double compute_end = now;
    /* hidden communication under the compute, axis after axis */
    double cursor = compute_start;
    for (int a = 0; a < MFU_COMM_COUNT; a++) {
        double hidden = t->total_s[a] - t->exposed_s[a];
        coll cl = axis_collectives(&c, a);
        for (int i = 0; i < 2 && cl.name[i]; i++) {
            double d = hidden * cl.share[i];
            if (cursor + d > compute_end) d = fmax(0.0, compute_end - cursor);
            emit_coll(&b, cl.name[i], a, cursor, d);
            cursor += d;
        }
    }
    /* exposed communication: the compute stream waits */
    for (int a = 0; a < MFU_COMM_COUNT; a++) {
        coll cl = axis_collectives(&c, a);
        for (int i = 0; i < 2 && cl.name[i]; i++) {
            double d = t->exposed_s[a] * cl.share[i];
            emit_coll(&b, cl.name[i], a, now, d);
            now += d;
        }
    }
    emit(&b, "multi_tensor_apply_kernel<AdamFunctor> (mfud)", "kernel", COMPUTE_STREAM, now, t->optimizer_s);
    now += t->optimizer_s;
    now += t->overhead_s; /* host time: the GPU idles */
    double tot = 0, exp_ = 0;
    for (int a = 0; a < MFU_COMM_COUNT; a++) {
        tot += t->total_s[a];
        exp_ += t->exposed_s[a];
    }
    json_object_set_new(figures, "step_time_s", json_real(now));
    json_object_set_new(figures, "gemm_s", json_real(gemm));
    json_object_set_new(figures, "attention_s", json_real(attn));
    json_object_set_new(figures, "other_compute_s", json_real(other + t->recompute_s + t->optimizer_s));
    json_object_set_new(figures, "communication_s", json_real(tot));
    json_object_set_new(figures, "communication_exposed_s", json_real(exp_));
    json_object_set_new(figures, "idle_s", json_real(t->bubble_s + t->overhead_s));
    /* the step as the profiler marks it, on the host thread */
    json_array_append_new(b.ev, json_pack("{s:s,s:s,s:s,s:i,s:i,s:f,s:f}", "name", "ProfilerStep#1", "cat",
                                          "user_annotation", "ph", "X", "pid", 1000, "tid", 1, "ts", 0.0,
                                          "dur", now * 1e6));
    json_t *meta = json_pack("{s:s,s:I,s:s,s:o}", "generator", "mfud " MFU_ENGINE_VERSION, "pipeline_stage_layers",
                             (json_int_t)t->layers, "hardware", t->hardware ? t->hardware : "", "figures", figures);
    return json_pack("{s:o,s:s,s:o}", "traceEvents", b.ev, "displayTimeUnit", "ms", "otherData", meta);
}

json_t *api_trace_export(const mfu_system *sys, const mfu_config *c, const mfu_eval *ev, mfu_op *ops)
{
    (void)ops;
    const mfu_times *t = &ev->expected;
    mfu_stages st;
    mfu_config_stages(sys, c, &st);
    int64_t L = st.first > st.mid ? st.first : st.mid;
    if (st.last > L) L = st.last;
    step_in in = {t->compute_s, t->compute_gemm_s, t->compute_attention_s, t->recompute_s, t->bubble_s,
                  t->optimizer_s, t->overhead_s, {0}, {0}, c->sp, c->zero, c->grad_accum, L, sys->hw->name};
    for (int a = 0; a < MFU_COMM_COUNT; a++) {
        in.total_s[a] = t->comm_total_s[a];
        in.exposed_s[a] = t->comm_exposed_s[a];
    }
    return draw(&in);
}

static double num(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

json_t *api_trace_export_result(json_t *result, int rank)
{
    json_t *cfg = json_array_get(json_object_get(result, "configs"), (size_t)(rank - 1));
    json_t *t = json_object_get(cfg, "time_expected");
    json_t *par = json_object_get(cfg, "parallel");
    if (rank < 1 || !json_is_object(t) || !json_is_object(par)) return NULL;
    json_t *split = json_object_get(cfg, "pipeline_split");
    int64_t L = 0;
    const char *ks[3] = {"first_stage_layers", "middle_stage_layers", "last_stage_layers"};
    for (int i = 0; i < 3; i++) {
        int64_t v = (int64_t)num(split, ks[i]);
        if (v > L) L = v;
    }
    step_in in = {num(t, "compute_s"), num(t, "compute_gemm_s"), num(t, "compute_attention_s"),
                  num(t, "recompute_s"), num(t, "bubble_s"), num(t, "optimizer_s"), num(t, "overhead_s"),
                  {0}, {0}, json_is_true(json_object_get(par, "sp")), (int)num(par, "zero"),
                  (int64_t)num(cfg, "grad_accum"), L,
                  json_string_value(json_object_get(json_object_get(result, "hardware"), "name"))};
    json_t *comm = json_object_get(t, "comm");
    for (int a = 0; a < MFU_COMM_COUNT; a++) {
        json_t *ca = json_object_get(comm, mfu_comm_names[a]);
        in.total_s[a] = num(ca, "total_s");
        in.exposed_s[a] = num(ca, "exposed_s");
    }
    return draw(&in);
}
