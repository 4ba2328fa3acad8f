/* Profiler traces (issue 12; api/trace.c, api/trace_export.c): the
 * exporter's predicted step read back by the reader gives the model's own
 * figures (round trip within 1 %); a perturbed copy moves the right
 * components; malformed traces are refused with a position; the real
 * traces in ../shared/traces (when present) read with plausible steps. The
 * hand counts against the real traces are in tests/integration/trace.sh
 * (an independent Python reading). */
#include "check.h"
#include "internal.h"
#include "testutil.h"

static mfu_op ops[MFU_MAX_OPS];

static double fig(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    return json_number_value(v);
}

static json_t *read_back(json_t *trace, api_status *st)
{
    char *text = json_dumps(trace, JSON_COMPACT);
    api_status_init(st);
    json_t *r = api_trace_text(text, strlen(text), NULL, st);
    if (!r) fprintf(stderr, "trace read failed: %s\n", st->n_errors ? st->errors[0].detail : "");
    free(text);
    return r;
}

static void expect_error(const char *text, const char *needle)
{
    api_status st;
    api_status_init(&st);
    json_t *r = api_trace_text(text, strlen(text), NULL, &st);
    CHECK(r == NULL);
    CHECK_EQ_I(st.status, 422);
    if (st.n_errors && !strstr(st.errors[0].detail, needle))
        fprintf(stderr, "error %s lacks %s\n", st.errors[0].detail, needle);
    CHECK(st.n_errors && strstr(st.errors[0].detail, needle) != NULL);
    json_decref(r);
}

static void t_classify(void)
{
    /* kernel names as the libraries write them */
    CHECK_EQ_I(api_trace_classify("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"), TR_ALLREDUCE);
    CHECK_EQ_I(api_trace_classify("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), TR_REDUCESCATTER);
    CHECK_EQ_I(api_trace_classify("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"), TR_SENDRECV);
    CHECK_EQ_I(api_trace_classify("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128>"), TR_GEMM);
    CHECK_EQ_I(api_trace_classify("volta_sgemm_128x64_nn"), TR_GEMM);
    CHECK_EQ_I(api_trace_classify("Cijk_Alik_Bljk_HHS_BH_MT128x128x32"), TR_GEMM);
    CHECK_EQ_I(api_trace_classify("flash_fwd_kernel<Flash_fwd_kernel_traits<128>>"), TR_ATTENTION);
    CHECK_EQ_I(api_trace_classify("void at::native::vectorized_elementwise_kernel<4>"), TR_OTHER_COMPUTE);
    CHECK_EQ_I(api_trace_classify("all-reduce.3"), TR_ALLREDUCE);
}

/* ---- a perturbed copy: GEMMs 20 % slower, one all-gather moved out
 * from under the compute (exposed). The comparison names the GEMMs and
 * the all-gather. ---- */
static void check_perturbed(json_t *trace, json_t *got)
{
    api_status st;
    json_t *pert = json_deep_copy(trace);
    json_t *evs = json_object_get(pert, "traceEvents");
    double gemm_before = 0, moved = 0, end = 0;
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) {
        double ts = json_number_value(json_object_get(e, "ts")), dur = json_number_value(json_object_get(e, "dur"));
        if (ts + dur > end && strcmp(json_string_value(json_object_get(e, "cat")), "kernel") == 0) end = ts + dur;
    }
    int moved_one = 0;
    json_array_foreach(evs, i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));
        double dur = json_number_value(json_object_get(e, "dur"));
        if (strstr(n, "gemm")) {
            gemm_before += dur;
            json_object_set_new(e, "dur", json_real(dur * 1.2));
        } else if (!moved_one && strstr(n, "AllGather") && json_number_value(json_object_get(e, "ts")) < end / 2) {
            /* after everything else: nothing computes under it */
            json_object_set_new(e, "ts", json_real(end + 10.0));
            moved = dur;
            moved_one = 1;
        }
    }
    CHECK(moved_one && moved > 0);
    /* the step annotation grows to hold the moved kernel */
    json_array_foreach(evs, i, e)
        if (!strcmp(json_string_value(json_object_get(e, "name")), "ProfilerStep#1"))
            json_object_set_new(e, "dur", json_real(end + 20.0 + moved));
    json_t *meas = read_back(pert, &st);
    CHECK(meas != NULL);
    json_t *diff = api_trace_compare(got, meas);
    CHECK(diff != NULL);
    CHECK_NEAR(fig(diff, "gemm_s", NULL), 0.2 * gemm_before * 1e-6, 0.01);
    CHECK_NEAR(fig(json_object_get(diff, "exposed_s"), "allgather", NULL), moved * 1e-6, 0.01);
    CHECK(fabs(fig(diff, "attention_s", NULL)) < 1e-9);
    CHECK(fabs(fig(json_object_get(diff, "exposed_s"), "allreduce", NULL)) < 1e-9);
    CHECK_STR(json_string_value(json_object_get(diff, "largest")), "gemm");
    json_decref(diff);
    json_decref(meas);
    json_decref(pert);
}

static void t_round_trip_and_perturbed(void)
{
    /* ---- round trip: Llama-3-8B on 64 H100, tp 2 with SP, dp 32, ZeRO-1
     * (every collective kind the exporter draws but EP/CP/PP) ---- */
    mfu_model m;
    mfu_hardware hw;
    CHECK(load_model("llama3-8b", &m) == 0);
    CHECK(load_hw("h100-sxm", &hw) == 0);
    mfu_training tr = {8192, 4194304.0, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    mfu_system sys;
    CHECK(mfu_system_init(&sys, &m, &hw, &tr, 64, 0, ops) == MFU_OK);
    mfu_config c = test_cfg(32, 1, 2, 1, 1, 1);
    c.sp = 1;
    c.zero = 1;
    c.grad_accum = 16;
    CHECK(mfu_config_default_split(&sys, &c) == MFU_OK);
    mfu_eval ev;
    CHECK(mfu_evaluate(&sys, &c, ops, &ev) == MFU_OK);
    json_t *trace = api_trace_export(&sys, &c, &ev, ops);
    CHECK(trace != NULL);
    json_t *want = json_object_get(json_object_get(trace, "otherData"), "figures");
    CHECK_NEAR(fig(want, "step_time_s", NULL), ev.expected.step_time_s, 1e-9);
    api_status st;
    json_t *got = read_back(trace, &st);
    CHECK(got != NULL);
    json_t *s1 = json_array_get(json_object_get(got, "steps"), 0);
    CHECK_EQ_I(json_array_size(json_object_get(got, "steps")), 1);
    CHECK_NEAR(fig(s1, "step_time_s", NULL), ev.expected.step_time_s, 0.01);
    json_t *kr = json_object_get(s1, "kernels");
    CHECK_NEAR(fig(kr, "gemm", "time_s"), fig(want, "gemm_s", NULL), 0.01);
    CHECK_NEAR(fig(kr, "attention", "time_s"), fig(want, "attention_s", NULL), 0.01);
    CHECK_NEAR(fig(kr, "other_compute", "time_s"), fig(want, "other_compute_s", NULL), 0.01);
    json_t *cm = json_object_get(s1, "communication");
    CHECK_NEAR(fig(cm, "time_s", NULL), fig(want, "communication_s", NULL), 0.01);
    CHECK_NEAR(fig(cm, "exposed_s", NULL), fig(want, "communication_exposed_s", NULL), 0.01);
    /* idle = bubble + host overhead; the GPU span ends at the optimizer,
     * so the overhead is after it: span idle is the bubble's (0 here) */
    CHECK(fig(s1, "gpu_busy_s", NULL) <= fig(s1, "gpu_span_s", NULL) + 1e-12);
    /* the model's TP (all-gather + reduce-scatter with SP) and ZeRO-1 DP
     * (reduce-scatter + all-gather) traffic shows as those two kinds */
    double ag = fig(kr, "allgather", "time_s"), rs = fig(kr, "reducescatter", "time_s");
    double model_comm = ev.expected.comm_total_s[MFU_COMM_TP] + ev.expected.comm_total_s[MFU_COMM_DP];
    CHECK(model_comm > 0);
    CHECK_NEAR(ag + rs, model_comm, 0.01);
    /* ... and per axis, from the process groups the exporter names as
     * Megatron-Core does (TENSOR_MODEL_PARALLEL_GROUP, DATA_PARALLEL_GROUP) */
    json_t *ax = json_object_get(s1, "communication_by_axis");
    CHECK_NEAR(fig(json_object_get(ax, "tp"), "time_s", NULL), ev.expected.comm_total_s[MFU_COMM_TP], 1e-9);
    CHECK_NEAR(fig(json_object_get(ax, "tp"), "exposed_s", NULL), ev.expected.comm_exposed_s[MFU_COMM_TP], 1e-9);
    CHECK_NEAR(fig(json_object_get(ax, "dp"), "time_s", NULL), ev.expected.comm_total_s[MFU_COMM_DP], 1e-9);
    CHECK_NEAR(fig(json_object_get(ax, "dp"), "exposed_s", NULL), ev.expected.comm_exposed_s[MFU_COMM_DP], 1e-9);
    CHECK(json_object_get(ax, "pp") == NULL);

    check_perturbed(trace, got);
    json_decref(got);
    json_decref(trace);
}

static void t_groups_and_shapes(void)
{
    api_status st;
    /* ---- process groups and recorded shapes, by hand: two steps; in the
     * second, an aten::mm of [64 x 128] x [128 x 256] (2 * 64 * 256 * 128 =
     * 4,194,304 FLOPs) launches a GEMM of 2 us linked by External id, and
     * an aten::addmm (bias, [32 x 64], [64 x 16]: 65,536 FLOPs) launches
     * one of 1 us found by its launch's time inside the op (the kernel
     * carries the launch's correlation as External id, as in HTA's data);
     * a TP all-reduce (group 4, 1e6 bf16 elements) of 10 us runs alone:
     * exposed 10 us, bus bandwidth 2 (4-1)/4 * 2e6 B / 10 us = 3e11 B/s;
     * an FSDP all-gather (torchtitan's mesh_dp_shard) of 4 us runs under a
     * 6 us compute kernel: exposed 0. ---- */
    {
        const char *hand =
            "{\"traceEvents\": ["
            "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"ts\": 0, \"dur\": 100, \"pid\": 1, \"tid\": 1},"
            "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#2\", \"ts\": 1000, \"dur\": 200, \"pid\": 1, \"tid\": 1},"
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1010, \"dur\": 20, \"pid\": 1, \"tid\": 1,"
            " \"args\": {\"External id\": 77, \"Input Dims\": [[64, 128], [128, 256]], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"]}},"
            "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"ts\": 1015, \"dur\": 3, \"pid\": 1, \"tid\": 1, \"args\": {\"correlation\": 501}},"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm90_xmma_gemm_bf16bf16\", \"ts\": 1050, \"dur\": 2, \"pid\": 0, \"tid\": 7,"
            " \"args\": {\"stream\": 7, \"device\": 0, \"correlation\": 501, \"External id\": 77}},"
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::addmm\", \"ts\": 1040, \"dur\": 20, \"pid\": 1, \"tid\": 1,"
            " \"args\": {\"External id\": 78, \"Input Dims\": [[16], [32, 64], [64, 16], [], []]}},"
            "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"ts\": 1045, \"dur\": 3, \"pid\": 1, \"tid\": 1, \"args\": {\"correlation\": 502}},"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"cutlass_80_tensorop_gemm\", \"ts\": 1060, \"dur\": 1, \"pid\": 0, \"tid\": 7,"
            " \"args\": {\"stream\": 7, \"device\": 0, \"correlation\": 502, \"External id\": 502}},"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_bf16_RING_LL\", \"ts\": 1100, \"dur\": 10, \"pid\": 0, \"tid\": 20,"
            " \"args\": {\"stream\": 20, \"device\": 0, \"Process Group Description\": \"TENSOR_MODEL_PARALLEL_GROUP\", \"Group size\": 4,"
            " \"In msg nelems\": 1000000, \"Out msg nelems\": 1000000, \"dtype\": \"BFloat16\"}},"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"vectorized_elementwise_kernel\", \"ts\": 1120, \"dur\": 6, \"pid\": 0, \"tid\": 7, \"args\": {\"stream\": 7, \"device\": 0}},"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllGather_RING_LL\", \"ts\": 1121, \"dur\": 4, \"pid\": 0, \"tid\": 21,"
            " \"args\": {\"stream\": 21, \"device\": 0, \"Process Group Description\": \"mesh_dp_shard\", \"Group size\": 8}}"
            "]}";
        api_status_init(&st);
        json_t *r = api_trace_text(hand, strlen(hand), NULL, &st);
        CHECK(r != NULL);
        json_t *s2 = json_array_get(json_object_get(r, "steps"), 1);
        json_t *ga = json_object_get(s2, "gemm_achieved");
        CHECK_NEAR(fig(ga, "flops", NULL), 4194304.0 + 65536.0, 1e-6);
        CHECK_NEAR(fig(ga, "time_s", NULL), 3e-6, 1e-15);
        CHECK_NEAR(fig(ga, "kernels", NULL), 2, 0);
        json_t *bx = json_object_get(s2, "communication_by_axis");
        CHECK_NEAR(fig(json_object_get(bx, "tp"), "exposed_s", NULL), 10e-6, 1e-15);
        CHECK_NEAR(fig(json_object_get(bx, "tp"), "bus_bw_bytes_s", NULL), 3e11, 1.0);
        CHECK_NEAR(fig(json_object_get(bx, "fsdp"), "time_s", NULL), 4e-6, 1e-15);
        CHECK_NEAR(fig(json_object_get(bx, "fsdp"), "exposed_s", NULL), 0.0, 1e-15);
        CHECK(json_is_null(json_object_get(json_object_get(bx, "fsdp"), "bus_bw_bytes_s")));
        /* the summary's shapes: two, the mm first (it took longer) */
        json_t *sh = json_object_get(json_object_get(json_object_get(r, "summary"), "gemm_achieved"), "shapes");
        CHECK_EQ_I(json_array_size(sh), 2);
        json_t *s0 = json_array_get(sh, 0);
        CHECK(fig(s0, "m", NULL) == 64 && fig(s0, "n", NULL) == 256 && fig(s0, "k", NULL) == 128);
        CHECK_NEAR(fig(s0, "flop_s", NULL), 4194304.0 / 2e-6, 1.0);
        json_decref(r);
    }
}

static void t_gzip_from_memory(void)
{
    api_status st;
    /* ---- an uploaded .json.gz is read from memory as from the file ---- */
    {
        const char *gzp = "tests/data/traces/kineto-rocm-mi250-toy.json.gz";
        FILE *f = fopen(gzp, "rb");
        CHECK(f != NULL);
        if (f) {
            char buf[1 << 16];
            size_t n = fread(buf, 1, sizeof buf, f);
            fclose(f);
            api_status_init(&st);
            json_t *a = api_trace_text(buf, n, NULL, &st);
            api_status_init(&st);
            json_t *b = api_trace_file(gzp, NULL, &st);
            CHECK(a != NULL && b != NULL && json_equal(a, b));
            /* cut short: a truncated gzip stream is a truncated trace */
            api_status_init(&st);
            json_t *c2 = api_trace_text(buf, n / 2, NULL, &st);
            CHECK(c2 == NULL && st.status == 422);
            json_decref(a);
            json_decref(b);
            json_decref(c2);
        }
    }
}

static void t_bad_traces(void)
{
    /* ---- bad traces: a clear error with the position, never a crash ---- */
    expect_error("", "not a trace");
    expect_error("hello", "not JSON");
    expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 2}", "truncated");
    expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"ProfilerStep#1\", \"ts\": 5, \"dur\": -3}]}",
                 "absurd timestamp");
    expect_error("{\"otherData\": {}}", "unknown schema");
    expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 5, \"dur\": 3}]}",
                 "no step markers");
    expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\\q\", \"ts\": 5}]}", "bad escape");
    expect_error("{\"traceEvents\": [1, 2]}", "not an event object");
    expect_error("{\"traceEvents\": []} x", "not JSON");
}

static void t_real_traces(void)
{
    api_status st;
    size_t i;
    json_t *e;
    /* ---- the real traces (when the shared folder is there) ---- */
    static const char *const real[] = {"../shared/traces/kineto-ddp-2rank-rank1.json.gz",
                                       "../shared/traces/kineto-16rank-rank0.json.gz",
                                       "tests/data/traces/kineto-rocm-mi250-toy.json.gz"};
    static const int steps_in[] = {5, 5, 2};
    for (int k = 0; k < 3; k++) {
        FILE *f = fopen(real[k], "rb");
        if (!f) {
            printf("SKIPPED: test_trace %s (not present)\n", real[k]);
            continue;
        }
        fclose(f);
        api_status_init(&st);
        json_t *r = api_trace_file(real[k], NULL, &st);
        CHECK(r != NULL);
        json_t *steps = json_object_get(r, "steps");
        CHECK_EQ_I(json_array_size(steps), steps_in[k]);
        json_array_foreach(steps, i, e) {
            CHECK(fig(e, "gpu_busy_s", NULL) <= fig(e, "gpu_span_s", NULL) + 1e-9);
            CHECK(fig(e, "step_time_s", NULL) > 0);
        }
        json_decref(r);
    }
}

static const check_case cases[] = {
    CHECK_CASE(t_classify),
    CHECK_CASE(t_round_trip_and_perturbed),
    CHECK_CASE(t_groups_and_shapes),
    CHECK_CASE(t_gzip_from_memory),
    CHECK_CASE(t_bad_traces),
    CHECK_CASE(t_real_traces),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}

