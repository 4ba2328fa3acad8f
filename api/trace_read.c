/* api/trace_read.c -- reading a Chrome trace-event JSON (plain or gzip,
 * from a file or memory) in one streaming pass: the tokenizer, and the
 * events kept (kernels, launches, GEMM shapes, step annotations) in a
 * store (api/trace_int.h). */
#include "trace_int.h"

/* ---- the byte source and the tokenizer ------------------------------------ */



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

int trace_next(lexer *lx)
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
        t = trace_next(lx);
    }
}

/* ---- the events kept ------------------------------------------------------ */



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
    if (trace_has(d, "_AND_") || !strcasecmp(d, "MODEL_PARALLEL_GROUP") || trace_has(d, "EMBEDDING")) return -1;
    if (trace_has(d, "EXPERT_DATA")) return MFU_COMM_DP;
    if (trace_has(d, "EXPERT") || trace_has(d, "mesh_ep")) return MFU_COMM_EP;
    if (trace_has(d, "TENSOR") || trace_has(d, "mesh_tp")) return MFU_COMM_TP;
    if (trace_has(d, "dp_shard") || trace_has(d, "fsdp")) return MFU_COMM_FSDP;
    if (trace_has(d, "CONTEXT") || trace_has(d, "mesh_cp")) return MFU_COMM_CP;
    if (trace_has(d, "PIPELINE") || trace_has(d, "mesh_pp")) return MFU_COMM_PP;
    if (trace_has(d, "DATA") || trace_has(d, "mesh_dp") || trace_has(d, "dp_replicate") || trace_has(d, "default_pg"))
        return MFU_COMM_DP;
    return -1;
}

static double dtype_bytes(const char *t)
{
    if (trace_has(t, "float8") || trace_has(t, "fp8") || trace_has(t, "int8") || trace_has(t, "uint8") || trace_has(t, "bool")) return 1;
    if (trace_has(t, "bfloat16") || trace_has(t, "half") || trace_has(t, "float16") || trace_has(t, "int16")) return 2;
    if (trace_has(t, "double") || trace_has(t, "float64") || trace_has(t, "int64") || trace_has(t, "long")) return 8;
    if (trace_has(t, "float") || trace_has(t, "int")) return 4;
    return 0;
}

/* "Input Dims": [[d, d], [d, d, d], [], ...]: the first 4 inputs' first 4
 * dims (the '[' read). */
static int read_dims(lexer *lx, double dims[4][4], int nd[4])
{
    int i = 0, t = trace_next(lx);
    while (t != T_RBRACK) {
        if (t == T_LBRACK) {
            int u = trace_next(lx), j = 0;
            while (u != T_RBRACK) {
                if (u == T_NUM && i < 4 && j < 4) dims[i][j] = lx->num;
                else if (skip_value(lx, u)) return -1;
                j++;
                u = trace_next(lx);
                if (u == T_COMMA) u = trace_next(lx);
                else if (u != T_RBRACK) return fail(lx, "a missing ',' in Input Dims"), -1;
            }
            if (i < 4) nd[i] = j;
        } else if (skip_value(lx, t)) {
            return -1;
        }
        i++;
        t = trace_next(lx);
        if (t == T_COMMA) t = trace_next(lx);
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
    int u = trace_next(lx);
    while (u != T_RBRACE) {
        if (u != T_STR) return fail(lx, "an args key is not a string"), -1;
        char ak[32];
        snprintf(ak, sizeof ak, "%s", lx->s);
        if (trace_next(lx) != T_COLON) return fail(lx, "a missing ':' in args"), -1;
        u = trace_next(lx);
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
        u = trace_next(lx);
        if (u == T_COMMA) u = trace_next(lx);
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
        if (trace_next(lx) != T_COLON) return fail(lx, "a missing ':' in an event"), -1;
        t = trace_next(lx);
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
        t = trace_next(lx);
        if (t == T_RBRACE) return 0;
        if (t != T_COMMA) return fail(lx, "a missing ',' between an event's fields"), -1;
        t = trace_next(lx);
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
    int t = trace_next(lx);
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
    int t = trace_next(lx);
    if (t == T_RBRACK) return 0;
    for (;;) {
        if (t == T_EOF) return fail(lx, "the trace ends inside traceEvents (a truncated trace?)"), -1;
        if (t != T_LBRACE) return fail(lx, "traceEvents holds something that is not an event object"), -1;
        if (read_event(lx, sto, marker)) return -1;
        t = trace_next(lx);
        if (t == T_RBRACK) return 0;
        if (t != T_COMMA) return fail(lx, "a missing ',' between events (a truncated trace?)"), -1;
        t = trace_next(lx);
    }
}

static int read_dist(lexer *lx, store *sto)
{
    int t = trace_next(lx);
    while (t != T_RBRACE) {
        if (t != T_STR) return fail(lx, "distributedInfo's key is not a string"), -1;
        char k[32];
        snprintf(k, sizeof k, "%s", lx->s);
        if (trace_next(lx) != T_COLON) return fail(lx, "a missing ':'"), -1;
        t = trace_next(lx);
        if (!strcmp(k, "rank") && t == T_NUM) sto->rank = (int)lx_i32(lx);
        else if (!strcmp(k, "world_size") && t == T_NUM) sto->world_size = (int)lx_i32(lx);
        else if (!strcmp(k, "backend") && t == T_STR) snprintf(sto->backend, sizeof sto->backend, "%s", lx->s);
        else if (skip_value(lx, t)) return -1;
        t = trace_next(lx);
        if (t == T_COMMA) t = trace_next(lx);
        else if (t != T_RBRACE) return fail(lx, "a missing ','"), -1;
    }
    return 0;
}

static int read_devices(lexer *lx, store *sto)
{
    int t = trace_next(lx);
    while (t != T_RBRACK) {
        if (t != T_LBRACE) return fail(lx, "deviceProperties holds a non-object"), -1;
        int u = trace_next(lx);
        while (u != T_RBRACE) {
            if (u != T_STR) return fail(lx, "a device key is not a string"), -1;
            int is_name = !strcmp(lx->s, "name");
            if (trace_next(lx) != T_COLON) return fail(lx, "a missing ':'"), -1;
            u = trace_next(lx);
            if (is_name && u == T_STR) json_array_append_new(sto->devices, json_string(lx->s));
            else if (skip_value(lx, u)) return -1;
            u = trace_next(lx);
            if (u == T_COMMA) u = trace_next(lx);
            else if (u != T_RBRACE) return fail(lx, "a missing ','"), -1;
        }
        t = trace_next(lx);
        if (t == T_COMMA) t = trace_next(lx);
        else if (t != T_RBRACK) return fail(lx, "a missing ','"), -1;
    }
    return 0;
}

int trace_read_top(lexer *lx, store *sto, const char *marker, int *saw_events)
{
    int t = trace_next(lx);
    if (t == T_LBRACK) { /* the JSON Array Format: events alone */
        *saw_events = 1;
        return read_events(lx, sto, marker);
    }
    if (t != T_LBRACE) return fail(lx, "not a trace: expected a JSON object with traceEvents"), -1;
    t = trace_next(lx);
    while (t != T_RBRACE) {
        if (t != T_STR) return fail(lx, "a top-level key is not a string"), -1;
        char k[64];
        snprintf(k, sizeof k, "%s", lx->s);
        if (trace_next(lx) != T_COLON) return fail(lx, "a missing ':' at the top level"), -1;
        t = trace_next(lx);
        int r = 0;
        if (!strcmp(k, "traceEvents") && t == T_LBRACK) {
            *saw_events = 1;
            r = read_events(lx, sto, marker);
        } else if (!strcmp(k, "distributedInfo") && t == T_LBRACE) r = read_dist(lx, sto);
        else if (!strcmp(k, "deviceProperties") && t == T_LBRACK) r = read_devices(lx, sto);
        else r = skip_value(lx, t);
        if (r) return -1;
        t = trace_next(lx);
        if (t == T_COMMA) t = trace_next(lx);
        else if (t != T_RBRACE) return fail(lx, "a missing ',' at the top level (a truncated trace?)"), -1;
    }
    return 0;
}
