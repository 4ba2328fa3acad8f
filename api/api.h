/* api/api.h -- JSON <-> core (jansson): request parsing and validation with
 * JSON-pointer errors, presets, result rendering, the cache key.
 *
 * The CLI (cli/mfu.c) and the daemon (server/) both go through these
 * functions, so they give the same answers. Every function is reentrant:
 * callable from worker threads as long as each thread uses its own json_t
 * objects.
 *
 * Ownership follows jansson: functions returning json_t * return a new
 * reference the caller must json_decref(); arguments are borrowed.
 */
#ifndef MFU_API_H
#define MFU_API_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "hardware.h"
#include "model.h"

/* Bumped whenever results for the same request may change: part of the
 * cache key, so a new engine never serves an old engine's numbers. */
#define MFU_ENGINE_VERSION "0.7.7"

/* ---- errors ------------------------------------------------------------ */

/* The problem types mfud answers with (RFC 9457 "type": /problems/<name>),
 * one table: each with the status it goes with and its title; each has its
 * page, docs/problems/<name>.md, served at /problems/<name>
 * (tests/unit/test_srv_jobs.c checks every row has one and every page a
 * row). A core error code (core/error.h) is answered as the problem
 * api_problem_of_core names. */
#define API_PROBLEM_MAP(X)                                                                       \
    X(MALFORMED_JSON, 400, "malformed-json", "Malformed request")                               \
    X(INVALID_QUERY_PARAMETER, 400, "invalid-query-parameter", "Invalid query parameter")       \
    X(BAD_FRAMING, 400, "bad-framing", "Bad framing")                                           \
    X(UNAUTHORIZED, 401, "unauthorized", "Unauthorized")                                        \
    X(NOT_FOUND, 404, "not-found", "Not found")                                                 \
    X(METHOD_NOT_ALLOWED, 405, "method-not-allowed", "Method not allowed")                      \
    X(BODY_TOO_LARGE, 413, "body-too-large", "Request body too large")                          \
    X(UNSUPPORTED_MEDIA_TYPE, 415, "unsupported-media-type", "Unsupported media type")          \
    X(INVALID_REQUEST, 422, "invalid-request", "Invalid request")                               \
    X(OVERLOADED, 503, "overloaded", "Service overloaded")                                      \
    X(INTERNAL, 500, "internal", "Internal error")

typedef enum {
#define API_PROBLEM_ENUM_(id, status, name, title) API_P_##id,
    API_PROBLEM_MAP(API_PROBLEM_ENUM_)
#undef API_PROBLEM_ENUM_
    API_P_COUNT
} api_problem;

/* Its type ("/problems/<name>"), name, status and title. */
const char *api_problem_type(api_problem p);
const char *api_problem_name(api_problem p);
int api_problem_status(api_problem p);
const char *api_problem_title(api_problem p);
/* The problem a status answers with when nothing more specific is said
 * (the first row with that status; INTERNAL for any other). */
api_problem api_problem_of_status(int status);
/* The problem a core error code (core/error.h: MFU_EINVAL, ...) is. */
api_problem api_problem_of_core(int code);

#define API_MAX_ERRORS 16

typedef struct api_error {
    char pointer[256]; /* RFC 6901 JSON pointer into the request */
    char detail[640];
} api_error;

typedef struct api_status {
    int status;        /* 0 = ok; else an HTTP status: 400, 413, 422, 500 */
    char title[96];
    char type[64];     /* problem type, a relative URI like /problems/invalid-request */
    int n_errors;
    api_error errors[API_MAX_ERRORS];
} api_status;

void api_status_init(api_status *st);

/* The out-of-memory policy (api/oom.c): api_alloc_init() routes jansson's
 * allocations through a counter (call it once at start, before threads);
 * api_oom_note() counts one of the api's own; an entry point that saw a
 * failure during its run answers 503 instead of what it concluded
 * (api_oom_policy, given the count from before the run). */
void api_alloc_init(void);
void api_oom_note(void);
unsigned long api_oom_events(void);
json_t *api_oom_policy(json_t *res, api_status *st, unsigned long before);
/* malloc, calloc, realloc, strdup for the api's own memory, counted. */
void *api_malloc(size_t n);
void *api_calloc(size_t n, size_t k);
void *api_realloc(void *p, size_t n);
char *api_strdup(const char *s);
/* Record an error at `pointer` (printf-style detail). The first call sets
 * st->status; later calls add to the list (up to API_MAX_ERRORS). */
void api_fail(api_status *st, int status, const char *pointer, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif

    ;
/* RFC 9457 problem details: {type, title, status, detail, errors:[{pointer, detail}]}. */
json_t *api_problem_json(const api_status *st);
/* Fail st as problem p (its status, type and title) at pointer. */
void api_fail_as(api_status *st, api_problem p, const char *pointer, const char *detail);
/* Fail st with a core error code (core/error.h) at pointer, as the problem
 * api_problem_of_core names: "<what>: <the code's text>". */
void api_fail_core(api_status *st, int code, const char *pointer, const char *what);

/* ---- the model and hardware descriptions ------------------------------- */

/* Parse our model IR (docs/model-ir.md) at `ptr` (JSON pointer prefix used in
 * error messages). Returns 0 on success. */
int api_model_from_ir(json_t *ir, const char *ptr, mfu_model *out, api_status *st);
/* Parse a hardware description (docs/hardware.md). */
int api_hardware_from_json(json_t *hw, const char *ptr, mfu_hardware *out, api_status *st);

/* Resolve request["model"] (preset | hf_config | IR, with overrides) into IR
 * JSON. Returns a new reference, and sets *source to "preset", "hf_config" or
 * "ir" and *overridden to a new array of overridden field names (or NULL). */
json_t *api_resolve_model(json_t *model, json_t **source, json_t **overridden, api_status *st);
json_t *api_resolve_hardware(json_t *hw, json_t **overridden, api_status *st);

/* HF config.json -> model IR (api/hf.c). ptr is the pointer of the hf_config
 * object in the request, for error messages. */
json_t *api_hf_to_ir(json_t *hf, const char *ptr, api_status *st);

/* ---- presets (data files under presets/, embedded at build time) ------- */

/* The preset file's JSON ({name, source, description, model|hf_config|hardware}),
 * borrowed from a process-wide table built on first use (thread-safe), or NULL. */
json_t *api_preset_model(const char *name);
json_t *api_preset_hardware(const char *name);
/* Lists with key figures, for GET /presets/... and `mfu presets`. */
json_t *api_presets_models(void);
json_t *api_presets_hardware(void);

/* ---- requests ---------------------------------------------------------- */

/* Validate and normalize a request: presets resolved, aliases and defaults
 * applied, numbers in canonical types. The normalized form is what the cache
 * key hashes and what the engines consume. NULL on error. */
json_t *api_normalize(json_t *request, api_status *st);

/* SHA-256 (hex, 64 chars + NUL) of the canonical dump of a normalized
 * request plus MFU_ENGINE_VERSION. */
/* 0, or -1 out of memory (out_hex then empty) */
int api_cache_key(json_t *normalized, char out_hex[65]);

/* Progress callback for long searches: fraction in [0,1], configurations
 * evaluated so far. Return nonzero to cancel. Called from the calling thread. */
typedef int (*api_progress_fn)(void *ctx, double fraction, uint64_t evaluated);

/* Run the engines on a request (raw or normalized). Result JSON per the
 * contract in openapi.yaml; NULL on error with st filled. */
json_t *api_roofline(json_t *request, api_status *st);
json_t *api_search(json_t *request, api_status *st, api_progress_fn fn, void *ctx);
/* The same on `threads` threads (the calling one included). The answer is
 * bit-identical for any thread count (the space is split in fixed shards);
 * fn is called only when threads == 1. */
json_t *api_search_mt(json_t *request, api_status *st, api_progress_fn fn, void *ctx, int threads);

/* A search request parsed once (issue 15 item 1): api_prepare_search
 * validates it and builds everything the search needs, on the caller's
 * thread; its normal form (borrowed; the cache key's text) may be edited
 * in place before the search runs, with api_prepared_set_deadline for the
 * deadline; api_search_prepared runs it (once, on any one thread) without
 * parsing again. NULL with st set on a bad request. */
typedef struct api_prepared api_prepared;
api_prepared *api_prepare_search(json_t *request, api_status *st);
json_t *api_prepared_normal(api_prepared *p);
void api_prepared_set_deadline(api_prepared *p, double deadline_s);
json_t *api_search_prepared(api_prepared *p, api_status *st, api_progress_fn fn, void *ctx, int threads);
void api_prepared_free(api_prepared *p);
/* Requests parsed so far by this process (every entry point's parse). */
unsigned long api_parse_count(void);

/* What-if comparisons (api/compare.c, docs/planning.md):
 * {"base": <search request>, "vary": {"hardware": [...], "devices": [...],
 *  "seq_len": [...], "global_batch_tokens": [...], "fp8": [...]}}.
 * Every combination is a search (its cache key the search's); the answer is
 * one row per variant: the best configuration, tokens/s (total and per
 * device), MFU, memory headroom, time and cost to train. `known` (may be
 * NULL): search results by key already at hand; `computed` (may be NULL):
 * an object that receives {key: {request, result}} for every search run
 * here, for the caller to store. Variants run on `threads` threads; fn is
 * called from the calling thread as variants finish. */
json_t *api_compare(json_t *doc, api_status *st, api_progress_fn fn, void *ctx, int threads,
                    json_t *known, json_t *computed);
/* The normal form of a comparison: {"kind": "compare", "variant_keys":
 * [the cache key of every variant's search]} (its key is the comparison's). */
json_t *api_compare_normalize(json_t *doc, api_status *st);
char *api_compare_table(json_t *result);
#define API_MAX_COMPARE_LIST 32
#define API_MAX_COMPARE_VARIANTS 256

/* Profiler traces (api/trace.c, docs/traces.md): Chrome trace-event JSON,
 * plain or gzipped, streamed. Per step (ProfilerStep#N, or the steps whose
 * annotation name starts with `marker`): step time, GPU span, busy, idle,
 * kernel time per category and per collective kind with the part not
 * overlapped by compute. NULL with st filled (422 with the byte position
 * for a malformed or truncated trace). */
enum { TR_GEMM = 0, TR_ATTENTION, TR_OTHER_COMPUTE, TR_ALLREDUCE, TR_REDUCESCATTER, TR_ALLGATHER,
       TR_SENDRECV, TR_ALLTOALL, TR_BROADCAST, TR_OTHER_COMM, TR_MEMCPY, TR_MEMSET, TR_CAT_COUNT };
extern const char *const api_trace_cat_names[TR_CAT_COUNT];
int api_trace_classify(const char *kernel_name);
json_t *api_trace_file(const char *path, const char *marker, api_status *st);
json_t *api_trace_text(const char *text, size_t len, const char *marker, api_status *st);
/* Measured minus predicted per component (seconds per step, means over the
 * steps each summary averages): step time, GEMM, attention, other compute,
 * memcpy, idle, and exposed communication per collective kind; `largest`
 * names the component that moved most. NULL without steps. */
json_t *api_trace_compare(json_t *predicted, json_t *measured);
/* The predicted step of configuration `rank` (1-based) of a search result
 * as Chrome trace JSON (api/trace_export.c, docs/traces.md); NULL when the
 * rank is out of range. */
json_t *api_trace_export_result(json_t *search_result, int rank);

/* Fit the hardware's efficiency profile to measured runs (docs/calibration.md):
 * {"runs": [{"id": ..., "request": <a request with "measured">} | <request>],
 *  "parameters": [names] (default all), "cross_validate": true}. Every run
 * must use the same hardware. The result: the fitted parameters with their
 * priors and uncertainty, per-run residuals (and leave-one-out ones), a
 * summary, and `hardware`: the description to use in requests. */
json_t *api_calibrate(json_t *doc, api_status *st);
/* The calibration as a human table (malloc'd). */
char *api_calibrate_table(json_t *result);
#define API_MAX_CAL_RUNS 256

/* ---- rendering --------------------------------------------------------- */

/* Ranked configs of a search result as CSV (RFC 4180), malloc'd. */
char *api_result_csv(json_t *result);
/* Human tables (malloc'd): roofline ops table / ranked config table. */
char *api_roofline_table(json_t *result);
char *api_search_table(json_t *result);
/* The gap of configuration `rank` (1-based) as text bars (mfu explain),
 * with the measured run's gap when there is one; NULL without that rank. */
char *api_explain_text(json_t *result, int rank);

/* Charts as SVG (api/svg.c, docs/charts.md; issue 13 item 2): pure
 * renderers from a result JSON (borrowed) to one standalone SVG document,
 * a malloc'd string the caller frees. 800 wide (viewBox 0 0 800 450, taller
 * when many pipeline stages or variants need it), a <title> and <desc>
 * (alt text with the key numbers), axis labels with units, the Okabe-Ito
 * colour-blind-safe palette, no external resources, and the same bytes for
 * the same input. NULL on bad input: a missing or mistyped field, a rank
 * out of range (callers answer 404 for the rank, 422 otherwise).
 *
 * `rank` is 1-based into the search result's `configs`; 0 means the
 * measured configuration (`measured.config`) when the request gave a
 * measured run (the gap waterfall then continues to the measured MFU).
 *
 * api_svg_gap:      roofline MFU -> each gap_expected component (mfu_points,
 *                   in the model's order) -> expected MFU; bound MFU marked.
 * api_svg_memory:   stacked bars per pipeline stage (memory_stages, else the
 *                   binding stage's `memory`) against the capacity, in GB.
 * api_svg_roofline: a roofline result (with roofline.ops): operators on
 *                   log-log FLOP/byte vs achieved FLOP/s, the compute and
 *                   HBM roofs, the ridge point.
 * api_svg_timeline: one step per pipeline stage from time_expected (the
 *                   busiest stage's figures on every lane, the bubble
 *                   shifted as 1F1B does); NULL beyond 1,024 stages.
 * api_svg_compare:  a compare result: tokens/s per variant, and cost to
 *                   train per variant when priced. */
char *api_svg_gap(json_t *search_result, int rank);
char *api_svg_memory(json_t *search_result, int rank);
char *api_svg_roofline(json_t *roofline_result);
char *api_svg_timeline(json_t *search_result, int rank);
char *api_svg_compare(json_t *compare_result);

/* ---- limits (explicit, documented in openapi.yaml) ---------------------- */
#define API_MAX_DEVICES   (1 << 20)
#define API_MAX_LAYERS    100000
#define API_MAX_DIM       (1LL << 24)   /* d_model, ffn widths, vocab */
#define API_MAX_EXPERTS   65536
#define API_MAX_SEQ       (1LL << 24)
#define API_MAX_MTP_LAYERS MFU_MAX_MTP  /* multi-token prediction depths (DeepSeek-V3: 1) */
/* The document itself (api/limits.c): nesting of objects and arrays (the
 * top-level object is level 1), bytes in a string or an object key,
 * elements in an array (per-layer lists fit), members in an object. */
#define API_MAX_DEPTH     64
#define API_MAX_STRING    4096
#define API_MAX_ARRAY     API_MAX_LAYERS
#define API_MAX_MEMBERS   4096

/* Parse a request body: the nesting depth is checked on the bytes first (a
 * deep document never reaches jansson's recursive parser), then the text is
 * parsed with jansson `flags` and the tree checked (api_check_limits).
 * NULL with st filled: 400 (malformed JSON, pointer "") or 422 (a limit,
 * pointer at the offending value). */
json_t *api_parse_json(const char *text, size_t len, size_t flags, api_status *st);
/* The depth check alone, on raw bytes (best effort on malformed text). */
int api_scan_depth(const char *text, size_t len, api_status *st);
/* Depth, string and key lengths, array and object sizes of a parsed
 * document: 0, or -1 with a 422 at the offending value's pointer.
 * api_normalize, api_roofline and api_search call it on their request. */
int api_check_limits(json_t *doc, api_status *st);



/* ---- helpers shared by api/ and its callers ----------------------------- */
json_t *api_model_to_ir(const mfu_model *m);
json_t *api_hardware_to_json(const mfu_hardware *hw);
const char *api_dtype_name(mfu_dtype d);
json_t *api_preset_model_names(void);
json_t *api_preset_hardware_names(void);
#endif
