/* api/trace_int.h -- inside the profiler-trace reader (docs/traces.md):
 * the tokenizer's state, the events kept, and what api/trace.c (entry
 * points), api/trace_read.c (tokenizer, events), api/trace_measure.c
 * (per-step measurement) and api/trace_cats.c (categories) give one
 * another. */
#ifndef MFU_API_TRACE_INT_H
#define MFU_API_TRACE_INT_H

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "internal.h"

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

/* api/trace_cats.c */
int trace_has(const char *s, const char *needle);
/* api/trace_read.c */
int trace_next(lexer *lx);
/* api/trace_read.c */
int trace_read_top(lexer *lx, store *sto, const char *marker, int *saw_events);
/* api/trace_measure.c */
json_t *trace_measure(store *sto, api_status *st, json_t **shapes);

#endif
