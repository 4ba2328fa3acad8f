/* api/trace.c -- read a profiler trace (Chrome trace-event JSON, plain or
 * gzipped, as PyTorch's profiler (Kineto) and JAX/XProf for Perfetto write
 * it) and measure each step (issue 12, docs/traces.md).
 *
 * Streamed: the file goes through zlib (gzread reads plain files as they
 * are) into a pull tokenizer that keeps one string at a time, and only the
 * events the measurement needs are kept, compactly (GPU kernels, copies,
 * sets; kernel launches by correlation id; step annotations). Memory grows
 * with the number of GPU events (48 bytes each), never with the file's
 * text: no document tree.
 *
 * Steps: `ProfilerStep#N` CPU annotations (or the caller's marker prefix).
 * A GPU event belongs to the step whose CPU window holds the runtime call
 * that launched it (the `correlation` id Kineto gives both); an event whose
 * launch is unknown belongs to the step whose window holds its own start.
 * Per step: the CPU step time, the GPU span (first start to last end of its
 * events), GPU busy time (the union of its intervals over every stream),
 * idle = span - busy, kernel time per category, and for each collective
 * kind the time not overlapped by any compute kernel (exposed) and the
 * overlapped share.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "internal.h"

/* ---- categories ----------------------------------------------------------- */

const char *const api_trace_cat_names[TR_CAT_COUNT] = {
    "gemm", "attention", "other_compute", "allreduce", "reducescatter", "allgather",
    "sendrecv", "alltoall", "broadcast", "other_comm", "memcpy", "memset"};

static int has(const char *s, const char *needle)
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
    if (has(name, "nccl") || has(name, "rccl")) {
        if (has(name, "allreduce") || has(name, "all_reduce")) return TR_ALLREDUCE;
        if (has(name, "reducescatter") || has(name, "reduce_scatter")) return TR_REDUCESCATTER;
        if (has(name, "allgather") || has(name, "all_gather")) return TR_ALLGATHER;
        if (has(name, "alltoall") || has(name, "all_to_all")) return TR_ALLTOALL;
        if (has(name, "sendrecv") || has(name, "send") || has(name, "recv")) return TR_SENDRECV;
        if (has(name, "broadcast")) return TR_BROADCAST;
        return TR_OTHER_COMM;
    }
    /* XLA on GPU/TPU: collectives are HLO op names */
    if (has(name, "all-reduce")) return TR_ALLREDUCE;
    if (has(name, "reduce-scatter")) return TR_REDUCESCATTER;
    if (has(name, "all-gather")) return TR_ALLGATHER;
    if (has(name, "all-to-all")) return TR_ALLTOALL;
    if (has(name, "collective-permute")) return TR_SENDRECV;
    if (has(name, "flash") || has(name, "fmha") || has(name, "attention") || has(name, "sdpa"))
        return TR_ATTENTION;
    if (has(name, "fbgemm_gpu")) return TR_OTHER_COMPUTE;
    if (has(name, "gemm") || has(name, "gemv") || has(name, "cutlass") || has(name, "cublas") ||
        has(name, "Cijk_") || has(name, "matmul") || has(name, "xmma") || has(name, "splitKreduce") ||
        has(name, "dot_general") || has(name, "dot."))
        return TR_GEMM;
    return TR_OTHER_COMPUTE;
}

/* ---- the byte source and the tokenizer ------------------------------------ */

enum { T_EOF = 0, T_ERR, T_LBRACE, T_RBRACE, T_LBRACK, T_RBRACK, T_COLON, T_COMMA, T_STR, T_NUM,
       T_TRUE, T_FALSE, T_NULL };

#define TR_MAX_STRING (1u << 20) /* longer strings are cut (kernel names run to a few KB) */
#define TR_MAX_DEPTH 256

typedef struct lexer {
    gzFile gz;
    const unsigned char *mem;   /* or an in-memory text */
    size_t mem_len, mem_pos;
    z_stream *zs;               /* an in-memory gzip stream (mem holds it) */
    unsigned char buf[1 << 16];
    size_t len, pos;
    uint64_t offset;            /* bytes of text consumed */
    int eof;
    char *s;                    /* the last string token */
    size_t slen, scap;
    double num;
    uint64_t tok_off;           /* where the last token started */
    char err[200];
} lexer;

static int fill(lexer *lx)
{
    if (lx->eof) return 0;
    if (lx->zs) {
        /* inflate the in-memory gzip text (an uploaded trace) block by block */
        z_stream *z = lx->zs;
        z->next_out = lx->buf;
        z->avail_out = sizeof lx->buf;
        while (z->avail_out == sizeof lx->buf) {
            if (z->avail_in == 0 && lx->mem_pos < lx->mem_len) {
                size_t n = lx->mem_len - lx->mem_pos;
                if (n > (1u << 20)) n = 1u << 20;
                z->next_in = (unsigned char *)(uintptr_t)(lx->mem + lx->mem_pos);
                z->avail_in = (uInt)n;
                lx->mem_pos += n;
            }
            int rc = inflate(z, Z_NO_FLUSH);
            if (rc == Z_STREAM_END) {
                /* concatenated gzip members, as gzread reads them */
                if (z->avail_in == 0 && lx->mem_pos == lx->mem_len) break;
                if (inflateReset(z) != Z_OK) rc = Z_DATA_ERROR;
                else continue;
            }
            if (rc == Z_BUF_ERROR && z->avail_in == 0 && lx->mem_pos == lx->mem_len) break; /* truncated */
            if (rc != Z_OK && rc != Z_STREAM_END) {
                snprintf(lx->err, sizeof lx->err, "the trace cannot be decompressed after byte %llu: %s",
                         (unsigned long long)lx->offset, z->msg ? z->msg : "corrupt gzip data");
                lx->eof = 1;
                return -1;
            }
        }
        lx->len = sizeof lx->buf - z->avail_out;
    } else if (lx->mem) {
        size_t n = lx->mem_len - lx->mem_pos;
        if (n > sizeof lx->buf) n = sizeof lx->buf;
        memcpy(lx->buf, lx->mem + lx->mem_pos, n);
        lx->mem_pos += n;
        lx->len = n;
    } else {
        int n = gzread(lx->gz, lx->buf, sizeof lx->buf);
        if (n < 0) {
            int e;
            snprintf(lx->err, sizeof lx->err, "the file cannot be decompressed after byte %llu: %s",
                     (unsigned long long)lx->offset, gzerror(lx->gz, &e));
            lx->eof = 1;
            return -1;
        }
        lx->len = (size_t)n;
    }
    lx->pos = 0;
    if (lx->len == 0) lx->eof = 1;
    return (int)lx->len;
}

static int peekc(lexer *lx)
{
    if (lx->pos == lx->len && fill(lx) <= 0) return -1;
    return lx->buf[lx->pos];
}

static int getc_(lexer *lx)
{
    int c = peekc(lx);
    if (c >= 0) {
        lx->pos++;
        lx->offset++;
    }
    return c;
}

static int fail(lexer *lx, const char *what)
{
    if (!lx->err[0])
        snprintf(lx->err, sizeof lx->err, "%s at byte %llu of the trace text", what,
                 (unsigned long long)lx->tok_off);
    return T_ERR;
}

static void sput(lexer *lx, char c)
{
    if (lx->slen + 1 >= lx->scap) {
        if (lx->scap >= TR_MAX_STRING) return; /* cut */
        size_t cap = lx->scap ? lx->scap * 2 : 256;
        char *p = api_realloc(lx->s, cap);
        if (!p) return;
        lx->s = p;
        lx->scap = cap;
    }
    lx->s[lx->slen++] = c;
    lx->s[lx->slen] = 0;
}

static int hexv(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void put_utf8(lexer *lx, unsigned cp)
{
    if (cp < 0x80) sput(lx, (char)cp);
    else if (cp < 0x800) {
        sput(lx, (char)(0xC0 | (cp >> 6)));
        sput(lx, (char)(0x80 | (cp & 0x3F)));
    } else {
        sput(lx, (char)(0xE0 | (cp >> 12)));
        sput(lx, (char)(0x80 | ((cp >> 6) & 0x3F)));
        sput(lx, (char)(0x80 | (cp & 0x3F)));
    }
}

static int lex_string(lexer *lx)
{
    lx->slen = 0;
    if (lx->s) lx->s[0] = 0;
    else sput(lx, 0), lx->slen = 0;
    for (;;) {
        int c = getc_(lx);
        if (c < 0) return fail(lx, "the trace ends inside a string");
        if (c == '"') return T_STR;
        if (c == '\\') {
            int e = getc_(lx);
            switch (e) {
            case '"': sput(lx, '"'); break;
            case '\\': sput(lx, '\\'); break;
            case '/': sput(lx, '/'); break;
            case 'b': sput(lx, '\b'); break;
            case 'f': sput(lx, '\f'); break;
            case 'n': sput(lx, '\n'); break;
            case 'r': sput(lx, '\r'); break;
            case 't': sput(lx, '\t'); break;
            case 'u': {
                unsigned cp = 0;
                for (int i = 0; i < 4; i++) {
                    int h = hexv(getc_(lx));
                    if (h < 0) return fail(lx, "a bad \\u escape");
                    cp = cp * 16 + (unsigned)h;
                }
                /* surrogates are kept as U+FFFD: names only need to be compared */
                put_utf8(lx, cp >= 0xD800 && cp <= 0xDFFF ? 0xFFFD : cp);
                break;
            }
            default: return fail(lx, "a bad escape in a string");
            }
        } else if (c < 0x20) {
            return fail(lx, "a control character in a string");
        } else {
            sput(lx, (char)c);
        }
    }
}

static int lex_number(lexer *lx, int first)
{
    char b[64];
    size_t n = 0;
    b[n++] = (char)first;
    for (;;) {
        int c = peekc(lx);
        if (c < 0 || !(isdigit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) break;
        if (n + 1 >= sizeof b) return fail(lx, "a number too long");
        b[n++] = (char)getc_(lx);
    }
    b[n] = 0;
    char *end;
    lx->num = strtod(b, &end);
    if (*end || !isfinite(lx->num)) return fail(lx, "a malformed number");
    return T_NUM;
}

static int lex_word(lexer *lx, const char *rest, int tok)
{
    for (const char *p = rest; *p; p++)
        if (getc_(lx) != *p) return fail(lx, "an unknown word (not true, false or null)");
    return tok;
}

static int next(lexer *lx)
{
    int c;
    do c = getc_(lx);
    while (c == ' ' || c == '\n' || c == '\r' || c == '\t');
    lx->tok_off = lx->offset ? lx->offset - 1 : 0;
    if (c < 0) return lx->err[0] ? T_ERR : T_EOF;
    switch (c) {
    case '{': return T_LBRACE;
    case '}': return T_RBRACE;
    case '[': return T_LBRACK;
    case ']': return T_RBRACK;
    case ':': return T_COLON;
    case ',': return T_COMMA;
    case '"': return lex_string(lx);
    case 't': return lex_word(lx, "rue", T_TRUE);
    case 'f': return lex_word(lx, "alse", T_FALSE);
    case 'n': return lex_word(lx, "ull", T_NULL);
    default:
        if (c == '-' || isdigit(c)) return lex_number(lx, c);
        return fail(lx, "not JSON (an unexpected character)");
    }
}

/* The last number as an integer: ids, streams, devices, ranks are
 * integers; anything beyond the type (or not finite) is "unknown", -1
 * (converting it would be undefined; the fuzzer sent 6e57). */
static int64_t lx_i64(const lexer *lx)
{
    double v = lx->num;
    return v >= -9.2e18 && v <= 9.2e18 ? (int64_t)v : -1;
}
static int32_t lx_i32(const lexer *lx)
{
    double v = lx->num;
    return v >= -2147483648.0 && v <= 2147483647.0 ? (int32_t)v : -1;
}

/* Skip one value whose first token is t (containers iteratively). */
static int skip_value(lexer *lx, int t)
{
    int depth = 0;
    for (;;) {
        if (t == T_ERR) return -1;
        if (t == T_EOF) return fail(lx, "the trace ends inside a value"), -1;
        if (t == T_LBRACE || t == T_LBRACK) {
            if (++depth > TR_MAX_DEPTH) return fail(lx, "nesting deeper than 256"), -1;
        } else if (t == T_RBRACE || t == T_RBRACK) {
            if (--depth < 0) return fail(lx, "an unexpected closing bracket"), -1;
        } else if (t == T_COLON || t == T_COMMA) {
            if (depth == 0) return fail(lx, "an unexpected separator"), -1;
        }
        if (depth == 0) return 0;
        t = next(lx);
    }
}

/* ---- the events kept ------------------------------------------------------ */

typedef struct gpu_ev {
    double ts, dur;             /* microseconds */
    int64_t corr;               /* launch correlation id, -1 unknown */
    int64_t ext;                /* the launching CPU op's External id, -1 unknown */
    float bytes;                /* a collective's message bytes (In msg nelems x dtype), 0 unknown */
    int32_t stream;
    int16_t device;
    int8_t cat;
    int8_t axis;                /* MFU_COMM_* from the process group, -1 unknown */
    int32_t group;              /* the collective's group size, 0 unknown */
} gpu_ev;

typedef struct launch { int64_t corr; double ts; int64_t tid; } launch;
typedef struct step { int64_t num; double ts, dur; } step;
/* A matrix-product CPU op recorded with its input shapes (record_shapes):
 * its External id links it to the kernels it launched. */
typedef struct gemm_op { int64_t ext; double m, n, k, batch; int64_t tid; double ts, dur; } gemm_op;

typedef struct store {
    gpu_ev *ev; size_t n_ev, cap_ev;
    launch *la; size_t n_la, cap_la;
    step *st; size_t n_st, cap_st;
    step *gst; size_t n_gst, cap_gst;   /* GPU-side step annotations */
    gemm_op *gm; size_t n_gm, cap_gm;   /* matrix products with shapes (by External id) */
    size_t *gm_t;                       /* their indexes by (thread, start) */
    int64_t events;                     /* trace events read */
    int rank, world_size;
    char backend[32];
    json_t *devices;
} store;

#define GROW(arr, n, cap) do { if ((n) == (cap)) { size_t c_ = (cap) ? (cap) * 2 : 1024; \
    void *p_ = api_realloc((arr), c_ * sizeof *(arr)); if (!p_) return -1; (arr) = p_; (cap) = c_; } } while (0)

static int is_comm_cat(int c) { return c >= TR_ALLREDUCE && c <= TR_OTHER_COMM; }

/* The parallel axis of a collective from its process group's description
 * (Kineto writes it on NCCL kernels and record_param_comms ops as
 * "Process Group Description"): Megatron-Core's group_desc names
 * (megatron/core/parallel_state.py: TENSOR_MODEL_PARALLEL_GROUP,
 * DATA_PARALLEL_GROUP(_WITH_CP), CONTEXT_PARALLEL_GROUP,
 * PIPELINE_MODEL_PARALLEL_GROUP, EXPERT_MODEL_PARALLEL_GROUP,
 * EXPERT_DATA_PARALLEL_GROUP, ...) and PyTorch DeviceMesh's "mesh_<dim>"
 * (torchtitan's dims dp_replicate, dp_shard, cp, tp, pp, ep). Groups that
 * combine axes (TENSOR_AND_DATA_..., MODEL_PARALLEL_GROUP) are not one
 * axis: -1, as is anything unknown. */
static int pg_axis(const char *d)
{
    if (!*d) return -1;
    if (has(d, "_AND_") || !strcasecmp(d, "MODEL_PARALLEL_GROUP") || has(d, "EMBEDDING")) return -1;
    if (has(d, "EXPERT_DATA")) return MFU_COMM_DP;
    if (has(d, "EXPERT") || has(d, "mesh_ep")) return MFU_COMM_EP;
    if (has(d, "TENSOR") || has(d, "mesh_tp")) return MFU_COMM_TP;
    if (has(d, "dp_shard") || has(d, "fsdp")) return MFU_COMM_FSDP;
    if (has(d, "CONTEXT") || has(d, "mesh_cp")) return MFU_COMM_CP;
    if (has(d, "PIPELINE") || has(d, "mesh_pp")) return MFU_COMM_PP;
    if (has(d, "DATA") || has(d, "mesh_dp") || has(d, "dp_replicate") || has(d, "default_pg"))
        return MFU_COMM_DP;
    return -1;
}

static double dtype_bytes(const char *t)
{
    if (has(t, "float8") || has(t, "fp8") || has(t, "int8") || has(t, "uint8") || has(t, "bool")) return 1;
    if (has(t, "bfloat16") || has(t, "half") || has(t, "float16") || has(t, "int16")) return 2;
    if (has(t, "double") || has(t, "float64") || has(t, "int64") || has(t, "long")) return 8;
    if (has(t, "float") || has(t, "int")) return 4;
    return 0;
}

/* "Input Dims": [[d, d], [d, d, d], [], ...]: the first 4 inputs' first 4
 * dims (the '[' read). */
static int read_dims(lexer *lx, double dims[4][4], int nd[4])
{
    int i = 0, t = next(lx);
    while (t != T_RBRACK) {
        if (t == T_LBRACK) {
            int u = next(lx), j = 0;
            while (u != T_RBRACK) {
                if (u == T_NUM && i < 4 && j < 4) dims[i][j] = lx->num;
                else if (skip_value(lx, u)) return -1;
                j++;
                u = next(lx);
                if (u == T_COMMA) u = next(lx);
                else if (u != T_RBRACK) return fail(lx, "a missing ',' in Input Dims"), -1;
            }
            if (i < 4) nd[i] = j;
        } else if (skip_value(lx, t)) {
            return -1;
        }
        i++;
        t = next(lx);
        if (t == T_COMMA) t = next(lx);
        else if (t != T_RBRACK) return fail(lx, "a missing ',' in Input Dims"), -1;
    }
    return 0;
}

/* A matrix product's (m, n, k, batch) from its ATen op name and input
 * shapes: mm [m,k] x [k,n]; addmm (bias, [m,k], [k,n]); bmm [b,m,k] x
 * [b,k,n]; baddbmm (bias, [b,m,k], [b,k,n]). Others: 0. */
static int gemm_shape(const char *name, double dims[4][4], const int nd[4], gemm_op *g)
{
    int a = -1, batched = 0;
    if (!strcmp(name, "aten::mm")) a = 0;
    else if (!strcmp(name, "aten::addmm")) a = 1;
    else if (!strcmp(name, "aten::bmm")) a = 0, batched = 1;
    else if (!strcmp(name, "aten::baddbmm")) a = 1, batched = 1;
    if (a < 0 || a + 1 >= 4) return 0;
    int want = batched ? 3 : 2;
    if (nd[a] != want || nd[a + 1] != want) return 0;
    int o = batched;
    g->batch = batched ? dims[a][0] : 1;
    g->m = dims[a][o];
    g->k = dims[a][o + 1];
    g->n = dims[a + 1][o + 1];
    return g->m > 0 && g->n > 0 && g->k > 0 && g->batch > 0 && dims[a + 1][o] == g->k;
}

/* One event object (its '{' read). */
/* One trace event's fields, as read (read_event). */
typedef struct raw_event {
    char name[512], cat[48], ph[8], pg[96], dt[24];
    double ts, dur, nelems, dims[4][4];
    int nd[4], saw_dims;
    int64_t corr, stream, device, tid, pid, ext, group;
    int klass;
} raw_event;

/* An event's "args" object (the opening brace read). */
static int read_args(lexer *lx, raw_event *ev)
{
    int u = next(lx);
    while (u != T_RBRACE) {
        if (u != T_STR) return fail(lx, "an args key is not a string"), -1;
        char ak[32];
        snprintf(ak, sizeof ak, "%s", lx->s);
        if (next(lx) != T_COLON) return fail(lx, "a missing ':' in args"), -1;
        u = next(lx);
        if (u == T_NUM && !strcmp(ak, "correlation")) ev->corr = lx_i64(lx);
        else if (u == T_NUM && !strcmp(ak, "stream")) ev->stream = lx_i64(lx);
        else if (u == T_NUM && !strcmp(ak, "device")) ev->device = lx_i64(lx);
        else if (u == T_NUM && !strcmp(ak, "External id")) ev->ext = lx_i64(lx);
        else if (u == T_NUM && !strcmp(ak, "Group size")) ev->group = lx_i64(lx);
        else if (u == T_NUM && (!strcmp(ak, "In msg nelems") || !strcmp(ak, "Out msg nelems")))
            ev->nelems = lx->num > ev->nelems ? lx->num : ev->nelems; /* the whole buffer */
        else if (u == T_STR && !strcmp(ak, "dtype")) snprintf(ev->dt, sizeof ev->dt, "%s", lx->s);
        else if (u == T_STR && !strcmp(ak, "Process Group Description"))
            snprintf(ev->pg, sizeof ev->pg, "%s", lx->s);
        else if (u == T_STR && !strcmp(ak, "Process Group Name") && !ev->pg[0])
            snprintf(ev->pg, sizeof ev->pg, "%s", lx->s);
        else if (u == T_LBRACK && !strcmp(ak, "Input Dims")) {
            if (read_dims(lx, ev->dims, ev->nd)) return -1;
            ev->saw_dims = 1;
        }
        else if (skip_value(lx, u)) return -1;
        u = next(lx);
        if (u == T_COMMA) u = next(lx);
        else if (u != T_RBRACE) return fail(lx, "a missing ',' in args"), -1;
    }
    return 0;
}

/* An event's fields, from its first token t (after the opening brace). */
static int read_fields(lexer *lx, raw_event *ev, int t)
{
    for (;;) {
        if (t != T_STR) return fail(lx, "an event's key is not a string"), -1;
        char key[32];
        snprintf(key, sizeof key, "%s", lx->s);
        if (next(lx) != T_COLON) return fail(lx, "a missing ':' in an event"), -1;
        t = next(lx);
        if (!strcmp(key, "name") && t == T_STR) {
            snprintf(ev->name, sizeof ev->name, "%s", lx->s);
            ev->klass = api_trace_classify(lx->s); /* the whole name, not the copy */
        }
        else if (!strcmp(key, "cat") && t == T_STR) snprintf(ev->cat, sizeof ev->cat, "%s", lx->s);
        else if (!strcmp(key, "ph") && t == T_STR) snprintf(ev->ph, sizeof ev->ph, "%s", lx->s);
        else if (!strcmp(key, "ts") && t == T_NUM) ev->ts = lx->num;
        else if (!strcmp(key, "dur") && t == T_NUM) ev->dur = lx->num;
        else if (!strcmp(key, "tid") && t == T_NUM) ev->tid = lx_i64(lx);
        else if (!strcmp(key, "pid") && t == T_NUM) ev->pid = lx_i64(lx);
        else if (!strcmp(key, "args") && t == T_LBRACE) {
            if (read_args(lx, ev)) return -1;
        } else if (skip_value(lx, t)) {
            return -1;
        }
        t = next(lx);
        if (t == T_RBRACE) return 0;
        if (t != T_COMMA) return fail(lx, "a missing ',' between an event's fields"), -1;
        t = next(lx);
    }
}

/* A kernel, memcpy or memset: kept with its stream, device, kind and, for
 * a collective, its axis and bytes. */
static int keep_gpu_event(store *sto, const raw_event *ev)
{
    GROW(sto->ev, sto->n_ev, sto->cap_ev);
    gpu_ev *e = &sto->ev[sto->n_ev++];
    e->ts = ev->ts;
    e->dur = ev->dur;
    e->corr = ev->corr;
    e->ext = ev->ext;
    e->stream = (int32_t)(ev->stream >= 0 ? ev->stream : ev->tid);
    e->device = (int16_t)(ev->device >= 0 ? ev->device : ev->pid);
    e->cat = (int8_t)(!strcmp(ev->cat, "gpu_memcpy") ? TR_MEMCPY
                      : !strcmp(ev->cat, "gpu_memset") ? TR_MEMSET : ev->klass);
    e->axis = (int8_t)(is_comm_cat(e->cat) ? pg_axis(ev->pg) : -1);
    e->group = (int32_t)(ev->group > 0 && ev->group < (1 << 30) ? ev->group : 0);
    double eb = dtype_bytes(ev->dt);
    e->bytes = (float)(is_comm_cat(e->cat) && ev->nelems > 0 && ev->nelems < 1e15 ? ev->nelems * eb : 0.0);
    return 0;
}

/* A host event: a GEMM's shape, a launch, or a step annotation. */
static int keep_host_event(store *sto, raw_event *ev, const char *marker)
{
    if (ev->saw_dims && ev->ext >= 0 && !strcmp(ev->cat, "cpu_op")) {
        gemm_op g = {ev->ext, 0, 0, 0, 0, ev->tid, ev->ts, ev->dur};
        if (gemm_shape(ev->name, ev->dims, ev->nd, &g)) {
            GROW(sto->gm, sto->n_gm, sto->cap_gm);
            sto->gm[sto->n_gm++] = g;
        }
        return 0;
    }
    if ((!strcmp(ev->cat, "cuda_runtime") || !strcmp(ev->cat, "cuda_driver")) && ev->corr >= 0) {
        GROW(sto->la, sto->n_la, sto->cap_la);
        sto->la[sto->n_la++] = (launch){ev->corr, ev->ts, ev->tid};
        return 0;
    }
    size_t ml = strlen(marker);
    if (!strncmp(ev->name, marker, ml)) {
        const char *p = ev->name + ml;
        int64_t num = isdigit((unsigned char)*p) ? strtoll(p, NULL, 10) : (int64_t)sto->n_st;
        if (!strcmp(ev->cat, "gpu_user_annotation")) {
            GROW(sto->gst, sto->n_gst, sto->cap_gst);
            sto->gst[sto->n_gst++] = (step){num, ev->ts, ev->dur};
        } else {
            GROW(sto->st, sto->n_st, sto->cap_st);
            sto->st[sto->n_st++] = (step){num, ev->ts, ev->dur};
        }
    }
    return 0;
}

static int read_event(lexer *lx, store *sto, const char *marker)
{
    raw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.ts = NAN;
    ev.corr = ev.stream = ev.device = ev.tid = ev.pid = ev.ext = -1;
    ev.klass = TR_OTHER_COMPUTE;
    int t = next(lx);
    if (t == T_RBRACE) return 0;
    if (read_fields(lx, &ev, t)) return -1;
    sto->events++;
    if (strcmp(ev.ph, "X") != 0) return 0; /* only complete events carry durations */
    if (!isfinite(ev.ts) || ev.ts < 0 || ev.ts > 1e17 || !isfinite(ev.dur) || ev.dur < 0 || ev.dur > 1e12) {
        snprintf(lx->err, sizeof lx->err,
                 "an absurd timestamp (ts %g us, dur %g us) in the event ending at byte %llu",
                 ev.ts, ev.dur, (unsigned long long)lx->offset);
        return -1;
    }
    int gpu = !strcmp(ev.cat, "kernel") || !strcmp(ev.cat, "gpu_memcpy") || !strcmp(ev.cat, "gpu_memset");
    return gpu ? keep_gpu_event(sto, &ev) : keep_host_event(sto, &ev, marker);
}

static int read_events(lexer *lx, store *sto, const char *marker)
{
    int t = next(lx);
    if (t == T_RBRACK) return 0;
    for (;;) {
        if (t == T_EOF) return fail(lx, "the trace ends inside traceEvents (a truncated trace?)"), -1;
        if (t != T_LBRACE) return fail(lx, "traceEvents holds something that is not an event object"), -1;
        if (read_event(lx, sto, marker)) return -1;
        t = next(lx);
        if (t == T_RBRACK) return 0;
        if (t != T_COMMA) return fail(lx, "a missing ',' between events (a truncated trace?)"), -1;
        t = next(lx);
    }
}

static int read_dist(lexer *lx, store *sto)
{
    int t = next(lx);
    while (t != T_RBRACE) {
        if (t != T_STR) return fail(lx, "distributedInfo's key is not a string"), -1;
        char k[32];
        snprintf(k, sizeof k, "%s", lx->s);
        if (next(lx) != T_COLON) return fail(lx, "a missing ':'"), -1;
        t = next(lx);
        if (!strcmp(k, "rank") && t == T_NUM) sto->rank = (int)lx_i32(lx);
        else if (!strcmp(k, "world_size") && t == T_NUM) sto->world_size = (int)lx_i32(lx);
        else if (!strcmp(k, "backend") && t == T_STR) snprintf(sto->backend, sizeof sto->backend, "%s", lx->s);
        else if (skip_value(lx, t)) return -1;
        t = next(lx);
        if (t == T_COMMA) t = next(lx);
        else if (t != T_RBRACE) return fail(lx, "a missing ','"), -1;
    }
    return 0;
}

static int read_devices(lexer *lx, store *sto)
{
    int t = next(lx);
    while (t != T_RBRACK) {
        if (t != T_LBRACE) return fail(lx, "deviceProperties holds a non-object"), -1;
        int u = next(lx);
        while (u != T_RBRACE) {
            if (u != T_STR) return fail(lx, "a device key is not a string"), -1;
            int is_name = !strcmp(lx->s, "name");
            if (next(lx) != T_COLON) return fail(lx, "a missing ':'"), -1;
            u = next(lx);
            if (is_name && u == T_STR) json_array_append_new(sto->devices, json_string(lx->s));
            else if (skip_value(lx, u)) return -1;
            u = next(lx);
            if (u == T_COMMA) u = next(lx);
            else if (u != T_RBRACE) return fail(lx, "a missing ','"), -1;
        }
        t = next(lx);
        if (t == T_COMMA) t = next(lx);
        else if (t != T_RBRACK) return fail(lx, "a missing ','"), -1;
    }
    return 0;
}

static int read_top(lexer *lx, store *sto, const char *marker, int *saw_events)
{
    int t = next(lx);
    if (t == T_LBRACK) { /* the JSON Array Format: events alone */
        *saw_events = 1;
        return read_events(lx, sto, marker);
    }
    if (t != T_LBRACE) return fail(lx, "not a trace: expected a JSON object with traceEvents"), -1;
    t = next(lx);
    while (t != T_RBRACE) {
        if (t != T_STR) return fail(lx, "a top-level key is not a string"), -1;
        char k[64];
        snprintf(k, sizeof k, "%s", lx->s);
        if (next(lx) != T_COLON) return fail(lx, "a missing ':' at the top level"), -1;
        t = next(lx);
        int r = 0;
        if (!strcmp(k, "traceEvents") && t == T_LBRACK) {
            *saw_events = 1;
            r = read_events(lx, sto, marker);
        } else if (!strcmp(k, "distributedInfo") && t == T_LBRACE) r = read_dist(lx, sto);
        else if (!strcmp(k, "deviceProperties") && t == T_LBRACK) r = read_devices(lx, sto);
        else r = skip_value(lx, t);
        if (r) return -1;
        t = next(lx);
        if (t == T_COMMA) t = next(lx);
        else if (t != T_RBRACE) return fail(lx, "a missing ',' at the top level (a truncated trace?)"), -1;
    }
    return 0;
}

/* ---- measurement ---------------------------------------------------------- */

static int cmp_launch(const void *a, const void *b)
{
    const launch *x = a, *y = b;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int cmp_step(const void *a, const void *b)
{
    const step *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

typedef struct iv { double a, b; } iv;

static int cmp_iv(const void *x, const void *y)
{
    const iv *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a ? 1 : (p->b < q->b ? -1 : p->b > q->b);
}

/* Merge sorted intervals in place; returns the count. */
static size_t merge(iv *v, size_t n)
{
    if (!n) return 0;
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].a <= v[k].b) {
            if (v[i].b > v[k].b) v[k].b = v[i].b;
        } else {
            v[++k] = v[i];
        }
    }
    return k + 1;
}

static double total(const iv *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i].b - v[i].a;
    return s;
}

/* Length of [a, b) covered by the merged set m. */
static double covered(const iv *m, size_t n, double a, double b)
{
    /* first interval ending after a */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m[mid].b <= a) lo = mid + 1;
        else hi = mid;
    }
    double s = 0;
    for (size_t i = lo; i < n && m[i].a < b; i++) {
        double x = m[i].a > a ? m[i].a : a, y = m[i].b < b ? m[i].b : b;
        if (y > x) s += y - x;
    }
    return s;
}

static int is_comm(int c) { return c >= TR_ALLREDUCE && c <= TR_OTHER_COMM; }
static int is_compute(int c) { return c <= TR_OTHER_COMPUTE; }

static int cmp_gemm(const void *a, const void *b)
{
    const gemm_op *x = a, *y = b;
    return x->ext < y->ext ? -1 : x->ext > y->ext;
}

/* The matrix-product op (with shapes) that launched kernel e, or -1: the
 * op whose External id the kernel carries (Kineto links them so), else
 * the op whose CPU window on the launching thread holds the launch (traces
 * whose kernels carry the launch's correlation id as External id). */
static long gemm_of(const store *sto, const gpu_ev *e)
{
    if (e->cat != TR_GEMM || !sto->n_gm) return -1;
    /* (an External id equal to the correlation id is the launch's own, not
     * an op's: two numberings that may collide) */
    if (e->ext >= 0 && e->ext != e->corr) {
        gemm_op key = {e->ext, 0, 0, 0, 0, 0, 0, 0};
        const gemm_op *g = bsearch(&key, sto->gm, sto->n_gm, sizeof *sto->gm, cmp_gemm);
        if (g) return (long)(g - sto->gm);
    }
    if (e->corr < 0 || !sto->n_la || !sto->gm_t) return -1;
    launch lk = {e->corr, 0, 0};
    const launch *l = bsearch(&lk, sto->la, sto->n_la, sizeof *sto->la, cmp_launch);
    if (!l) return -1;
    /* the last op on l's thread starting at or before the launch */
    size_t lo = 0, hi = sto->n_gm;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const gemm_op *g = &sto->gm[sto->gm_t[mid]];
        if (g->tid < l->tid || (g->tid == l->tid && g->ts <= l->ts)) lo = mid + 1;
        else hi = mid;
    }
    if (!lo) return -1;
    const gemm_op *g = &sto->gm[sto->gm_t[lo - 1]];
    return g->tid == l->tid && l->ts <= g->ts + g->dur ? (long)sto->gm_t[lo - 1] : -1;
}

static double gemm_flops(const gemm_op *g) { return 2.0 * g->batch * g->m * g->n * g->k; }

/* NCCL's bus-bandwidth factor of a collective over g ranks (nccl-tests
 * doc/PERFORMANCE.md): all-reduce 2 (g-1)/g, all-gather, reduce-scatter,
 * all-to-all (g-1)/g of the whole buffer, send/recv 1. */
static double bus_factor(int cat, double g)
{
    if (cat == TR_SENDRECV) return 1.0;
    if (g <= 1) return 0.0;
    return (cat == TR_ALLREDUCE ? 2.0 : 1.0) * (g - 1.0) / g;
}

/* What one step's GPU events add up to (measure_step). */
typedef struct step_acc {
    double cat_t[TR_CAT_COUNT], exposed[TR_CAT_COUNT];
    long cat_n[TR_CAT_COUNT];
    double ax_t[MFU_COMM_COUNT], ax_exp[MFU_COMM_COUNT], ax_bus[MFU_COMM_COUNT], ax_bus_t[MFU_COMM_COUNT];
    long ax_n[MFU_COMM_COUNT];
    double g_flops, g_time;
    long g_kern;
} step_acc;

/* Communication not under any compute kernel (on any stream), per kind and
 * per axis its process group names; achieved GEMM FLOP/s of the kernels
 * whose op recorded its shapes (an op's FLOPs once, its kernels' time
 * summed: split-K launches two). comp: the merged compute intervals. */
static void step_comm_and_gemms(const store *sto, const step *s, const size_t *idx, size_t n, const iv *comp,
                                size_t nc, int64_t *stamp, double *op_time, step_acc *sa)
{
    for (size_t i = 0; i < n; i++) {
        const gpu_ev *e = &sto->ev[idx[i]];
        if (is_comm(e->cat)) {
            double x = e->dur - covered(comp, nc, e->ts, e->ts + e->dur);
            sa->exposed[e->cat] += x;
            if (e->axis >= 0) {
                sa->ax_t[e->axis] += e->dur;
                sa->ax_exp[e->axis] += x;
                sa->ax_n[e->axis]++;
                double f = bus_factor(e->cat, (double)e->group);
                if (e->bytes > 0 && f > 0 && e->dur > 0) {
                    sa->ax_bus[e->axis] += f * (double)e->bytes;
                    sa->ax_bus_t[e->axis] += e->dur;
                }
            }
        }
        long g = gemm_of(sto, e);
        if (g >= 0) {
            sa->g_time += e->dur;
            sa->g_kern++;
            if (op_time) op_time[g] += e->dur;
            if (stamp[g] != s->num) {
                stamp[g] = s->num;
                sa->g_flops += gemm_flops(&sto->gm[g]);
            }
        }
    }
}

/* The step's document. */
static json_t *step_json(const step *s, const step_acc *sa, size_t n, double span, double busy)
{
    json_t *kern = json_object();
    double comm_t = 0, comm_exp = 0;
    for (int c = 0; c < TR_CAT_COUNT; c++) {
        json_t *o = json_pack("{s:I,s:f}", "count", (json_int_t)sa->cat_n[c], "time_s", sa->cat_t[c] * 1e-6);
        if (is_comm(c)) {
            json_object_set_new(o, "exposed_s", json_real(sa->exposed[c] * 1e-6));
            json_object_set_new(o, "overlap", sa->cat_t[c] > 0 ? json_real(1.0 - sa->exposed[c] / sa->cat_t[c]) : json_null());
            comm_t += sa->cat_t[c];
            comm_exp += sa->exposed[c];
        }
        json_object_set_new(kern, api_trace_cat_names[c], o);
    }
    json_t *o = json_pack("{s:I,s:f,s:f,s:f,s:f,s:I,s:o}", "step", (json_int_t)s->num, "step_time_s",
                          s->dur * 1e-6, "gpu_span_s", span * 1e-6, "gpu_busy_s", busy * 1e-6,
                          "idle_s", (span - busy) * 1e-6, "gpu_events", (json_int_t)n, "kernels", kern);
    json_object_set_new(o, "communication", json_pack("{s:f,s:f,s:o}", "time_s", comm_t * 1e-6,
                                                      "exposed_s", comm_exp * 1e-6, "overlap",
                                                      comm_t > 0 ? json_real(1.0 - comm_exp / comm_t) : json_null()));
    json_t *axes = json_object();
    for (int a = 0; a < MFU_COMM_COUNT; a++) {
        if (!sa->ax_n[a]) continue;
        json_t *x = json_pack("{s:I,s:f,s:f}", "count", (json_int_t)sa->ax_n[a], "time_s", sa->ax_t[a] * 1e-6,
                              "exposed_s", sa->ax_exp[a] * 1e-6);
        json_object_set_new(x, "bus_bw_bytes_s", sa->ax_bus_t[a] > 0 ? json_real(sa->ax_bus[a] / (sa->ax_bus_t[a] * 1e-6))
                                                                  : json_null());
        json_object_set_new(axes, mfu_comm_names[a], x);
    }
    json_object_set_new(o, "communication_by_axis", axes);
    if (sa->g_kern)
        json_object_set_new(o, "gemm_achieved", json_pack("{s:I,s:f,s:f,s:f}", "kernels", (json_int_t)sa->g_kern,
                                                          "flops", sa->g_flops, "time_s", sa->g_time * 1e-6,
                                                          "flop_s", sa->g_time > 0 ? sa->g_flops / (sa->g_time * 1e-6) : 0.0));
    return o;
}

static json_t *measure_step(const store *sto, const step *s, const size_t *idx, size_t n, iv *scratch,
                            iv *comp, int64_t *stamp, double *op_time)
{
    double t0 = INFINITY, t1 = -INFINITY;
    step_acc acc;
    memset(&acc, 0, sizeof acc);
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        const gpu_ev *e = &sto->ev[idx[i]];
        if (e->ts < t0) t0 = e->ts;
        if (e->ts + e->dur > t1) t1 = e->ts + e->dur;
        acc.cat_t[e->cat] += e->dur;
        acc.cat_n[e->cat]++;
        scratch[i] = (iv){e->ts, e->ts + e->dur};
        if (is_compute(e->cat)) comp[nc++] = (iv){e->ts, e->ts + e->dur};
    }
    if (n) qsort(scratch, n, sizeof *scratch, cmp_iv);
    double busy = total(scratch, merge(scratch, n));
    if (nc) qsort(comp, nc, sizeof *comp, cmp_iv);
    nc = merge(comp, nc);
    step_comm_and_gemms(sto, s, idx, n, comp, nc, stamp, op_time, &acc);
    double span = n ? t1 - t0 : 0.0;
    return step_json(s, &acc, n, span, busy);
}

/* qsort has no context argument: the array the indexes point into, set
 * just before the sort (one trace is measured per call, on one thread;
 * a file-scope pointer, not shared state between requests) */
static _Thread_local const gemm_op *gm_sort_base;

static int cmp_gm_time(const void *a, const void *b)
{
    const gemm_op *x = &gm_sort_base[*(const size_t *)a], *y = &gm_sort_base[*(const size_t *)b];
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_shape(const void *a, const void *b)
{
    const gemm_op *x = a, *y = b;
    double d[4] = {x->m - y->m, x->n - y->n, x->k - y->k, x->batch - y->batch};
    for (int i = 0; i < 4; i++)
        if (d[i]) return d[i] < 0 ? -1 : 1;
    return 0;
}

typedef struct shape_acc { gemm_op g; double time, calls; } shape_acc;

static int cmp_acc_time(const void *a, const void *b)
{
    const shape_acc *x = a, *y = b;
    return x->time > y->time ? -1 : x->time < y->time;
}

/* The GEMM shapes of the averaged steps (record_shapes): calls, time,
 * achieved FLOP/s, the 20 that took longest. */
static json_t *shape_table(const store *sto, const double *op_time)
{
    size_t n = 0;
    for (size_t i = 0; i < sto->n_gm; i++) n += op_time[i] > 0;
    if (!n) return json_array();
    shape_acc *v = api_malloc(sizeof *v * n);
    if (!v) return json_array();
    size_t k = 0;
    for (size_t i = 0; i < sto->n_gm; i++)
        if (op_time[i] > 0) v[k++] = (shape_acc){sto->gm[i], op_time[i], 1};
    qsort(v, n, sizeof *v, cmp_shape);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !cmp_shape(&v[m - 1].g, &v[i].g)) {
            v[m - 1].time += v[i].time;
            v[m - 1].calls += 1;
        } else {
            v[m++] = v[i];
        }
    }
    qsort(v, m, sizeof *v, cmp_acc_time);
    json_t *a = json_array();
    for (size_t i = 0; i < m && i < 20; i++) {
        double f = gemm_flops(&v[i].g) * v[i].calls, t = v[i].time * 1e-6;
        json_array_append_new(a, json_pack("{s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f}", "m", (json_int_t)v[i].g.m, "n",
                                           (json_int_t)v[i].g.n, "k", (json_int_t)v[i].g.k, "batch",
                                           (json_int_t)v[i].g.batch, "calls", (json_int_t)v[i].calls, "time_s", t,
                                           "flops", f, "flop_s", t > 0 ? f / t : 0.0));
    }
    free(v);
    return a;
}

/* Each GPU event's step (owner[i]; n_st: none), and the count per step:
 * the last step starting at or before the event's launch (its own start
 * when no launch is recorded) whose window holds it. */
static void assign_steps(const store *sto, size_t *owner, size_t *count)
{
    for (size_t i = 0; i < sto->n_ev; i++) {
        const gpu_ev *e = &sto->ev[i];
        double at = e->ts;
        if (e->corr >= 0 && sto->n_la) {
            launch key = {e->corr, 0, 0};
            const launch *l = bsearch(&key, sto->la, sto->n_la, sizeof *sto->la, cmp_launch);
            if (l) at = l->ts;
        }
        size_t lo = 0, hi = sto->n_st;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (sto->st[mid].ts <= at) lo = mid + 1;
            else hi = mid;
        }
        size_t s = sto->n_st; /* none */
        if (lo > 0 && at <= sto->st[lo - 1].ts + sto->st[lo - 1].dur) s = lo - 1;
        owner[i] = s;
        count[s]++;
    }
}

static json_t *measure(store *sto, api_status *st, json_t **shapes)
{
    if (sto->n_st == 0) {
        api_fail(st, 422, "", "no step markers in the trace (ProfilerStep#N annotations, or the given marker)");
        return NULL;
    }
    /* (qsort and bsearch want a non-null base even for no elements) */
    if (sto->n_la) qsort(sto->la, sto->n_la, sizeof *sto->la, cmp_launch);
    if (sto->n_gm) {
        qsort(sto->gm, sto->n_gm, sizeof *sto->gm, cmp_gemm);
        sto->gm_t = api_malloc(sizeof *sto->gm_t * sto->n_gm);
        if (sto->gm_t) {
            for (size_t i = 0; i < sto->n_gm; i++) sto->gm_t[i] = i;
            gm_sort_base = sto->gm;
            qsort(sto->gm_t, sto->n_gm, sizeof *sto->gm_t, cmp_gm_time);
        }
    }
    qsort(sto->st, sto->n_st, sizeof *sto->st, cmp_step);
    size_t *owner = api_malloc(sizeof *owner * (sto->n_ev ? sto->n_ev : 1));
    size_t *count = api_calloc(sto->n_st + 1, sizeof *count);
    if (!owner || !count) {
        free(owner);
        free(count);
        api_fail(st, 503, "", "out of memory measuring the trace");
        return NULL;
    }
    assign_steps(sto, owner, count);
    /* bucket the events by step */
    size_t *start = api_calloc(sto->n_st + 2, sizeof *start);
    size_t *order = api_malloc(sizeof *order * (sto->n_ev ? sto->n_ev : 1));
    iv *scratch = api_malloc(sizeof *scratch * (sto->n_ev ? sto->n_ev : 1));
    iv *comp = api_malloc(sizeof *comp * (sto->n_ev ? sto->n_ev : 1));
    int64_t *stamp = api_malloc(sizeof *stamp * (sto->n_gm ? sto->n_gm : 1));
    double *op_time = api_calloc(sto->n_gm ? sto->n_gm : 1, sizeof *op_time);
    json_t *steps = NULL;
    if (!start || !order || !scratch || !comp || !stamp || !op_time) {
        api_fail(st, 503, "", "out of memory measuring the trace");
        goto done;
    }
    for (size_t s = 0; s <= sto->n_st; s++) start[s + 1] = start[s] + count[s];
    for (size_t i = 0; i < sto->n_ev; i++) order[start[owner[i]]++] = i;
    for (size_t s = sto->n_st + 1; s > 0; s--) start[s] = start[s - 1];
    start[0] = 0;
    for (size_t i = 0; i < sto->n_gm; i++) stamp[i] = INT64_MIN;
    steps = json_array();
    /* the summary's steps: all but the first when there are more than two */
    size_t from = sto->n_st > 2 ? 1 : 0;
    for (size_t s = 0; s < sto->n_st; s++)
        json_array_append_new(steps, measure_step(sto, &sto->st[s], order + start[s], count[s], scratch, comp,
                                                  stamp, s >= from ? op_time : NULL));
    if (shapes) *shapes = shape_table(sto, op_time);
done:
    free(stamp);
    free(op_time);
    free(owner);
    free(count);
    free(start);
    free(order);
    free(scratch);
    free(comp);
    return steps;
}

/* ---- entry points --------------------------------------------------------- */

/* The summary's per-axis communication (process groups) and achieved
 * GEMM FLOP/s (record_shapes), averaged over steps [from, n). */
static void summarize_axes_and_gemms(json_t *sum, json_t *steps, json_t *shapes, size_t from, size_t n, double k)
{
    json_t *axes = json_object();
    for (int a = 0; a < MFU_COMM_COUNT; a++) {
        double t = 0, x = 0, bw = 0;
        int seen = 0, bws = 0;
        for (size_t i = from; i < n; i++) {
            json_t *v = json_object_get(json_object_get(json_array_get(steps, i), "communication_by_axis"),
                                        mfu_comm_names[a]);
            if (!v) continue;
            seen = 1;
            t += json_number_value(json_object_get(v, "time_s"));
            x += json_number_value(json_object_get(v, "exposed_s"));
            if (json_is_number(json_object_get(v, "bus_bw_bytes_s"))) {
                bw += json_number_value(json_object_get(v, "bus_bw_bytes_s"));
                bws++;
            }
        }
        if (!seen) continue;
        json_t *o = json_pack("{s:f,s:f}", "time_s", t * k, "exposed_s", x * k);
        json_object_set_new(o, "bus_bw_bytes_s", bws ? json_real(bw / bws) : json_null());
        json_object_set_new(axes, mfu_comm_names[a], o);
    }
    json_object_set_new(sum, "communication_by_axis", axes);
    double gf = 0, gt = 0;
    for (size_t i = from; i < n; i++) {
        json_t *g = json_object_get(json_array_get(steps, i), "gemm_achieved");
        gf += json_number_value(json_object_get(g, "flops"));
        gt += json_number_value(json_object_get(g, "time_s"));
    }
    if (gt > 0)
        json_object_set_new(sum, "gemm_achieved", json_pack("{s:f,s:f,s:f,s:O}", "flops", gf * k, "time_s", gt * k,
                                                            "flop_s", gf / gt, "shapes", shapes));
}

static json_t *read_trace(lexer *lx, const char *marker, api_status *st)
{
    store sto;
    memset(&sto, 0, sizeof sto);
    sto.rank = -1;
    sto.devices = json_array();
    int saw = 0;
    /* steps and shapes stay ours until done: packed with "O", never "o",
     * whose stealing on a failed pack depends on where it failed
     * (tests/unit/test_oom.c found a leak and a read after free here) */
    json_t *out = NULL, *steps = NULL, *shapes = NULL;
    if (read_top(lx, &sto, marker, &saw)) {
        api_fail(st, 422, "", "%s", lx->err[0] ? lx->err : "the trace cannot be read");
        goto done;
    }
    if (next(lx) != T_EOF) {
        api_fail(st, 422, "", "%s", lx->err[0] ? lx->err : "text after the trace's closing bracket");
        goto done;
    }
    if (!saw) {
        api_fail(st, 422, "", "unknown schema: no traceEvents array (Chrome trace-event JSON is expected)");
        goto done;
    }
    steps = measure(&sto, st, &shapes);
    if (!steps) goto done;
    /* the mean over steps, the first one left out when there are several
     * (it carries warm-up) */
    size_t n = json_array_size(steps), from = n > 2 ? 1 : 0;
    double mt = 0, mb = 0, mi = 0, mc = 0, me = 0;
    for (size_t i = from; i < n; i++) {
        json_t *s = json_array_get(steps, i);
        mt += json_number_value(json_object_get(s, "step_time_s"));
        mb += json_number_value(json_object_get(s, "gpu_busy_s"));
        mi += json_number_value(json_object_get(s, "idle_s"));
        json_t *c = json_object_get(s, "communication");
        mc += json_number_value(json_object_get(c, "time_s"));
        me += json_number_value(json_object_get(c, "exposed_s"));
    }
    double k = n > from ? 1.0 / (double)(n - from) : 0.0;
    out = json_pack("{s:s,s:I,s:I,s:O,s:O,s:{s:I,s:I,s:f,s:f,s:f,s:f,s:f}}", "format", "chrome-trace",
                    "events", (json_int_t)sto.events, "gpu_events", (json_int_t)sto.n_ev, "devices",
                    sto.devices, "steps", steps, "summary", "steps", (json_int_t)n, "steps_averaged",
                    (json_int_t)(n - from), "step_time_s", mt * k, "gpu_busy_s", mb * k, "idle_s", mi * k,
                    "communication_s", mc * k, "communication_exposed_s", me * k);
    if (!out) {
        api_fail(st, 503, "", "out of memory");
        goto done;
    }
    if (sto.world_size > 0)
        json_object_set_new(out, "distributed", json_pack("{s:i,s:i,s:s}", "rank", sto.rank, "world_size",
                                                          sto.world_size, "backend", sto.backend));
    summarize_axes_and_gemms(json_object_get(out, "summary"), steps, shapes, from, n, k);
done:
    json_decref(steps);
    json_decref(shapes);
    free(sto.gm);
    free(sto.gm_t);
    free(sto.ev);
    free(sto.la);
    free(sto.st);
    free(sto.gst);
    json_decref(sto.devices);
    return out;
}

static json_t *trace_file_run(const char *path, const char *marker, api_status *st);

json_t *api_trace_file(const char *path, const char *marker, api_status *st)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(trace_file_run(path, marker, st), st, before);
}

static json_t *trace_file_run(const char *path, const char *marker, api_status *st)
{
    lexer *lx = api_calloc(1, sizeof *lx);
    if (!lx) {
        api_fail(st, 503, "", "out of memory");
        return NULL;
    }
    lx->gz = gzopen(path, "rb");
    if (!lx->gz) {
        free(lx);
        api_fail(st, 400, "", "cannot open the trace file");
        return NULL;
    }
    gzbuffer(lx->gz, 1 << 17);
    json_t *out = read_trace(lx, marker && *marker ? marker : "ProfilerStep#", st);
    gzclose(lx->gz);
    free(lx->s);
    free(lx);
    return out;
}

static json_t *trace_text_run(const char *text, size_t len, const char *marker, api_status *st);

json_t *api_trace_text(const char *text, size_t len, const char *marker, api_status *st)
{
    unsigned long before = api_oom_events();
    return api_oom_policy(trace_text_run(text, len, marker, st), st, before);
}

static json_t *trace_text_run(const char *text, size_t len, const char *marker, api_status *st)
{
    lexer *lx = api_calloc(1, sizeof *lx);
    if (!lx) {
        api_fail(st, 503, "", "out of memory");
        return NULL;
    }
    lx->mem = (const unsigned char *)text;
    lx->mem_len = len;
    z_stream z;
    memset(&z, 0, sizeof z);
    /* gzip (an upload of a .json.gz): the magic bytes 1f 8b */
    if (len >= 2 && (unsigned char)text[0] == 0x1f && (unsigned char)text[1] == 0x8b) {
        if (inflateInit2(&z, 15 + 16) != Z_OK) {
            free(lx);
            api_fail(st, 503, "", "out of memory");
            return NULL;
        }
        lx->zs = &z;
    }
    json_t *out = read_trace(lx, marker && *marker ? marker : "ProfilerStep#", st);
    if (lx->zs) inflateEnd(&z);
    free(lx->s);
    free(lx);
    return out;
}

/* ---- predicted against measured ------------------------------------------- */

/* The mean of a step field over the steps the summary averages. */
static double step_mean(json_t *m, const char *a, const char *b, const char *c)
{
    json_t *steps = json_object_get(m, "steps");
    size_t n = json_array_size(steps), from = n > 2 ? 1 : 0;
    double s = 0;
    for (size_t i = from; i < n; i++) {
        json_t *v = json_object_get(json_array_get(steps, i), a);
        if (b) v = json_object_get(v, b);
        if (c) v = json_object_get(v, c);
        s += json_number_value(v);
    }
    return n > from ? s / (double)(n - from) : 0.0;
}

json_t *api_trace_compare(json_t *predicted, json_t *measured)
{
    if (!json_array_size(json_object_get(predicted, "steps")) ||
        !json_array_size(json_object_get(measured, "steps")))
        return NULL;
    /* measured minus predicted, per component (seconds per step) */
    struct { const char *name, *a, *b, *c; } comp[] = {
        {"step_time_s", "step_time_s", NULL, NULL},
        {"gemm_s", "kernels", "gemm", "time_s"},
        {"attention_s", "kernels", "attention", "time_s"},
        {"other_compute_s", "kernels", "other_compute", "time_s"},
        {"memcpy_s", "kernels", "memcpy", "time_s"},
        {"idle_s", "idle_s", NULL, NULL},
    };
    json_t *o = json_object();
    const char *largest = NULL;
    double big = 0;
    for (size_t i = 0; i < sizeof comp / sizeof comp[0]; i++) {
        double d = step_mean(measured, comp[i].a, comp[i].b, comp[i].c) -
                   step_mean(predicted, comp[i].a, comp[i].b, comp[i].c);
        json_object_set_new(o, comp[i].name, json_real(d));
        if (i > 0 && fabs(d) > big) {
            big = fabs(d);
            largest = comp[i].b ? comp[i].b : "idle";
        }
    }
    json_t *exp_ = json_object();
    for (int c = TR_ALLREDUCE; c <= TR_OTHER_COMM; c++) {
        double d = step_mean(measured, "kernels", api_trace_cat_names[c], "exposed_s") -
                   step_mean(predicted, "kernels", api_trace_cat_names[c], "exposed_s");
        json_object_set_new(exp_, api_trace_cat_names[c], json_real(d));
        if (fabs(d) > big) {
            big = fabs(d);
            largest = api_trace_cat_names[c];
        }
    }
    json_object_set_new(o, "exposed_s", exp_);
    /* per parallel axis, where the measured trace's process groups name
     * them (and the prediction, read back, always does) */
    json_t *mx = json_object_get(json_object_get(measured, "summary"), "communication_by_axis");
    if (json_object_size(mx)) {
        json_t *ax = json_object();
        for (int a = 0; a < MFU_COMM_COUNT; a++) {
            if (!json_object_get(mx, mfu_comm_names[a])) continue;
            double d = step_mean(measured, "communication_by_axis", mfu_comm_names[a], "exposed_s") -
                       step_mean(predicted, "communication_by_axis", mfu_comm_names[a], "exposed_s");
            json_object_set_new(ax, mfu_comm_names[a], json_real(d));
        }
        json_object_set_new(o, "exposed_by_axis_s", ax);
    }
    json_object_set_new(o, "largest", largest ? json_string(largest) : json_null());
    return o;
}
