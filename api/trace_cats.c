/* api/trace_cats.c -- a GPU kernel's category from its name, and the
 * categories' names (docs/traces.md; api/trace_int.h). */
#include "trace_int.h"

/* ---- categories ----------------------------------------------------------- */

const char *const api_trace_cat_names[TR_CAT_COUNT] = {
    "gemm", "attention", "other_compute", "allreduce", "reducescatter", "allgather",
    "sendrecv", "alltoall", "broadcast", "other_comm", "memcpy", "memset"};

int trace_has(const char *s, const char *needle)
{
    /* case-insensitive substring */
    size_t n = strlen(needle);
    for (; *s; s++)
        if (strncasecmp(s, needle, n) == 0) return 1;
    return 0;
}

/* A GPU kernel's category from its name (docs/traces.md lists the patterns:
 * NCCL/RCCL collectives by kind, cuBLAS/cuBLASLt/CUTLASS/hipBLASLt/Tensile
 * and XLA dot fusions for GEMMs, flash/cuDNN/fmha for attention). Matched
 * in the name before its parameter list (a kernel's arguments name types
 * from any library); FBGEMM's GPU kernels (fbgemm_gpu::, embedding and
 * sparse-feature ops) are not matrix products. */
int api_trace_classify(const char *full)
{
    char name[1024];
    size_t n = strcspn(full, "(");
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, full, n);
    name[n] = 0;
    if (trace_has(name, "nccl") || trace_has(name, "rccl")) {
        if (trace_has(name, "allreduce") || trace_has(name, "all_reduce")) return TR_ALLREDUCE;
        if (trace_has(name, "reducescatter") || trace_has(name, "reduce_scatter")) return TR_REDUCESCATTER;
        if (trace_has(name, "allgather") || trace_has(name, "all_gather")) return TR_ALLGATHER;
        if (trace_has(name, "alltoall") || trace_has(name, "all_to_all")) return TR_ALLTOALL;
        if (trace_has(name, "sendrecv") || trace_has(name, "send") || trace_has(name, "recv")) return TR_SENDRECV;
        if (trace_has(name, "broadcast")) return TR_BROADCAST;
        return TR_OTHER_COMM;
    }
    /* XLA on GPU/TPU: collectives are HLO op names */
    if (trace_has(name, "all-reduce")) return TR_ALLREDUCE;
    if (trace_has(name, "reduce-scatter")) return TR_REDUCESCATTER;
    if (trace_has(name, "all-gather")) return TR_ALLGATHER;
    if (trace_has(name, "all-to-all")) return TR_ALLTOALL;
    if (trace_has(name, "collective-permute")) return TR_SENDRECV;
    if (trace_has(name, "flash") || trace_has(name, "fmha") || trace_has(name, "attention") || trace_has(name, "sdpa"))
        return TR_ATTENTION;
    if (trace_has(name, "fbgemm_gpu")) return TR_OTHER_COMPUTE;
    if (trace_has(name, "gemm") || trace_has(name, "gemv") || trace_has(name, "cutlass") || trace_has(name, "cublas") ||
        trace_has(name, "Cijk_") || trace_has(name, "matmul") || trace_has(name, "xmma") || trace_has(name, "splitKreduce") ||
        trace_has(name, "dot_general") || trace_has(name, "dot."))
        return TR_GEMM;
    return TR_OTHER_COMPUTE;
}
