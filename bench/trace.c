/* bench/trace.c -- the trace reader's speed and memory on a large trace
 * (issue 12: "a 500 MB trace is read in bounded memory"). Writes a
 * synthetic Kineto-like trace of about `MB` megabytes (argv[1], default
 * 500) to a temporary file: steps of kernels on two streams, their launches
 * with correlation ids, CPU ops, flow events (the mix of the real traces in
 * ../shared/traces), then reads it with api_trace_file and prints MB/s and
 * the peak resident memory as a fraction of the file. No assertions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long peak_rss_kb(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

int main(int argc, char **argv)
{
    double want_mb = argc > 1 ? atof(argv[1]) : 500.0;
    char path[] = "/tmp/mfud-bench-trace-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) { perror("mkstemp"); return 1; }
    FILE *f = fdopen(fd, "w");
    if (!f) { perror("fdopen"); return 1; }
    long rss0 = peak_rss_kb();
    fputs("{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8},\n"
          "\"traceEvents\": [\n", f);
    double ts = 1e9;
    long corr = 1, steps = 0, kernels = 0;
    int first = 1;
    while (ftell(f) < (long)(want_mb * 1e6)) {
        double t0 = ts;
        for (int k = 0; k < 2000; k++) {
            const char *name = k % 10 == 0 ? "ncclKernel_AllReduce_RING_LL_Sum_bf16(ncclDevComm*)"
                               : k % 3 == 0 ? "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
                                            : "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >(int)";
            fprintf(f, "%s{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 77, \"tid\": 77, "
                       "\"ts\": %.3f, \"dur\": 4, \"args\": {\"External id\": %ld, \"cbid\": 211, \"correlation\": %ld}},\n",
                    first ? "" : ",", ts, corr, corr);
            first = 0;
            fprintf(f, "{\"ph\": \"s\", \"id\": %ld, \"pid\": 77, \"tid\": 77, \"ts\": %.3f, \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n",
                    corr, ts);
            fprintf(f, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d, \"ts\": %.3f, \"dur\": %d, "
                       "\"args\": {\"External id\": %ld, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": %d, "
                       "\"correlation\": %ld, \"registers per thread\": 128, \"grid\": [132, 1, 1], \"block\": [384, 1, 1]}}",
                    name, k % 10 == 0 ? 20 : 7, ts + 2, 30 + k % 50, corr, k % 10 == 0 ? 20 : 7, corr);
            ts += 40;
            corr++;
            kernels++;
        }
        fprintf(f, ",\n{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%ld\", \"pid\": 77, \"tid\": 77, "
                   "\"ts\": %.3f, \"dur\": %.3f}", steps++, t0, ts - t0);
    }
    fputs("\n]}\n", f);
    long bytes = ftell(f);
    fclose(f);
    long rss1 = peak_rss_kb();
    api_status st;
    api_status_init(&st);
    double t0 = now();
    json_t *r = api_trace_file(path, NULL, &st);
    double dt = now() - t0;
    long rss2 = peak_rss_kb();
    unlink(path);
    if (!r) {
        fprintf(stderr, "read failed: %s\n", st.n_errors ? st.errors[0].detail : "");
        return 1;
    }
    printf("synthetic trace: %.0f MB, %ld steps, %ld kernels (plus as many launches and flow events)\n",
           bytes / 1e6, steps, kernels);
    printf("  read in %.2f s = %.0f MB/s\n", dt, bytes / 1e6 / dt);
    printf("  peak RSS %.1f MB before reading, %.1f MB after (%.3f of the file; the reader keeps 48 B per GPU event, 24 B per launch)\n",
           (rss1 > rss0 ? rss1 : rss0) / 1024.0, rss2 / 1024.0, rss2 * 1024.0 / (double)bytes);
    json_decref(r);
    return 0;
}
