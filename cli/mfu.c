/* cli/mfu.c -- the `mfu` CLI: the daemon's answers without the daemon.
 *
 *   mfu roofline  [FILE|-] [request options] [--table]
 *   mfu search    [FILE|-] [request options] [search options] [--table | --csv]
 *   mfu compare   FILE|- [--table]          (what-if: {"base": request, "vary": {...}})
 *   mfu presets   [models|hardware]
 *   mfu key       [FILE|-] [request options] [search options]
 *                                           (the cache key the daemon would use)
 *   mfu calibrate FILE|- [--table | --hardware]
 *                                           (fit a hardware profile to measured runs;
 *                                            --hardware prints only the description)
 *   mfu help [COMMAND] | mfu COMMAND --help | mfu --help | mfu --version
 *
 * Reads one request JSON (docs/model-ir.md, openapi.yaml), prints the result
 * JSON (or a table / CSV) on stdout. Help and --version go to stdout.
 *
 * Flag mode: roofline, search and key build the request from options
 * (--model, --hf, --hw, --hw-file, --devices, --seq, --batch-tokens, --dtype,
 * --convention, --tokens, --price, --top-k, --frameworks, --distinct; the
 * table OPTIONS below says where each goes). The request is exactly the JSON
 * one would write, so it has the same cache key (`mfu key`). With a FILE as
 * well, the options override the file's fields (--model/--hf and
 * --hw/--hw-file replace the whole model / hardware object); --print-request
 * prints the request and stops.
 *
 * Size suffixes (integers: --devices, --seq, --batch-tokens, --top-k):
 * K M G T are binary, 2^10 2^20 2^30 2^40, as these fields are counted
 * ("8K context" = 8192, "4M-token batch" = 4194304, Llama 3's 16M = 16777216).
 * The token budget (--tokens) is decimal: K M G T = 10^3 10^6 10^9 10^12, as
 * model cards count it ("15T tokens" = 15e12). Ki Mi Gi Ti are binary
 * everywhere; plain numbers (8192, 15e12) are taken as written.
 *
 * Exit status:
 *    0  success
 *    2  invalid request: an RFC 9457 problem document (with a JSON pointer per
 *       error) on stderr
 *    3  search: nothing fits. The answer (configs [], no_fit: the closest
 *       configuration and the fewest devices that fit) is still printed; the
 *       reason is one line on stderr
 *   64  usage: unknown command or option (one line naming it), a missing or
 *       malformed argument, options that exclude each other
 *   66  cannot read an input file (FILE, --hf, --hw-file; or over 16 MiB)
 *   70  internal error (the engine answered 5xx, e.g. out of memory)
 *   74  cannot write the output
 *
 * Searches run on MFU_THREADS threads (default: the online CPUs); the answer
 * is the same for any count.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"

/* The CLI's own version: bumped when its options, output or exit codes
 * change. The engine's (MFU_ENGINE_VERSION, api/api.h) is what the numbers
 * and the cache key depend on. */
#define MFU_CLI_VERSION "1.0.0"

#define MAX_INPUT_BYTES (16u << 20)

enum { EX_OK = 0, EX_INVALID = 2, EX_NOFIT = 3, EX_USAGE = 64, EX_NOINPUT = 66, EX_SOFTWARE = 70,
       EX_IOERR = 74 };

/* ---- commands and options ------------------------------------------------- */

enum { C_ROOFLINE, C_SEARCH, C_COMPARE, C_PRESETS, C_KEY, C_CALIBRATE, C_TRACE, C_EXPLAIN, C_COUNT };
#define B(c) (1u << (c))
#define REQ (B(C_ROOFLINE) | B(C_SEARCH) | B(C_KEY)) /* commands that take request options */
#define SRCH (B(C_SEARCH) | B(C_KEY))                /* ... that apply to a search */

typedef struct command {
    const char *name;
    const char *synopsis; /* after "mfu NAME " */
    const char *summary;  /* one line for mfu --help */
    const char *text;     /* the rest of mfu help NAME */
} command;

static const command COMMANDS[C_COUNT] = {
    [C_ROOFLINE] = {"roofline", "[FILE|-] [request options] [--table]",
                    "the Roofline Bound: one device, every operator against the chip's roofs",
                    "The Roofline Bound: one device, infinite memory, no parallelism; every forward\n"
                    "and backward operator against the chip's compute and HBM roofs. Prints the\n"
                    "result JSON (mfu, step_time_s, ops[]), or with --table one row per operator\n"
                    "and the totals.\n"},
    [C_SEARCH] = {"search", "[FILE|-] [request options] [--table | --csv]",
                  "the System Bound: parallel configurations, ranked",
                  "The System Bound: every parallel configuration that fits, ranked, each with\n"
                  "the named gap to the roofline, as a bound and as expected. Prints the result\n"
                  "JSON, or --table (for people) or --csv (the ranking). Nothing fits: the answer\n"
                  "(configs [], no_fit) is still printed, the reason goes to stderr, exit 3.\n"
                  "Runs on MFU_THREADS threads (default: every CPU; same answer for any count).\n"
                  "\n"
                  "  mfu search --model llama3-70b --hw h100-sxm --devices 512 --seq 8192 \\\n"
                  "             --batch-tokens 4M --top-k 5 --table\n"},
    [C_COMPARE] = {"compare", "FILE|- [--table]", "what-if table over hardware, devices, batch, fp8",
                   "What if: {\"base\": <a search request>, \"vary\": {\"hardware\": [...], \"devices\": [...],\n"
                   "\"seq_len\": [...], \"global_batch_tokens\": [...], \"fp8\": [...]}}; every combination is\n"
                   "a search, the answer one row per variant (docs/planning.md). --table: for people.\n"},
    [C_PRESETS] = {"presets", "[models|hardware]", "the model or hardware presets with their key figures",
                   "The model presets (default) or the hardware presets, with their key figures and\n"
                   "sources, as JSON.\n"},
    [C_KEY] = {"key", "[FILE|-] [request options]", "the cache key the daemon would use",
               "The cache key the daemon would use for the request (SHA-256 of its normal\n"
               "form and the engine version): equal keys, equal answers. Takes the same\n"
               "request options as search.\n"},
    [C_CALIBRATE] = {"calibrate", "FILE|- [--table | --hardware]",
                     "fit a hardware efficiency profile to measured runs",
                     "Fit the hardware's efficiency profile to measured runs (docs/calibration.md):\n"
                     "{\"runs\": [{\"id\": ..., \"request\": <a request with measured>}, ...],\n"
                     " \"parameters\": [names]}. Every run uses the same hardware. Prints the fit as\n"
                     "JSON, --table (parameters, per-run errors, leave-one-out), or --hardware (only\n"
                     "the fitted description, for a request's \"hardware\" or --hw-file).\n"},
    [C_TRACE] = {"trace", "FILE [--table] [--marker PREFIX] [--against RESULT [--rank N]]",
                 "measure a profiler trace: per step time, busy, idle, kernels, overlap",
                 "Read a profiler trace (Chrome trace-event JSON, plain or gzipped: PyTorch's\n"
                 "profiler, JAX/XProf for Perfetto) and measure each step: step time, GPU busy\n"
                 "and idle time, kernel time per category (GEMM, attention, other, each\n"
                 "collective kind, memcpy, memset) and the communication not overlapped by\n"
                 "compute (docs/traces.md). Steps are ProfilerStep#N annotations, or those whose\n"
                 "name starts with --marker. Prints JSON, or --table one row per step. A\n"
                 "malformed trace: a problem document on stderr naming the byte, exit 2.\n"
                 "A search writes its prediction as a trace with `mfu search --export-trace FILE`.\n"
                 "--against RESULT (mfu search's JSON or a result's document) compares the trace\n"
                 "with the prediction for configuration --rank (default 1): measured minus\n"
                 "predicted per component (GEMM, attention, other compute, memcpy, idle, exposed\n"
                 "communication per collective kind), the largest named.\n"},
    [C_EXPLAIN] = {"explain", "FILE|- [--rank N]", "where one configuration's time goes, as bars",
                   "The gap of configuration --rank (default 1) from the roofline to the expected\n"
                   "MFU, each named loss in MFU points with a bar, largest first, and the measured\n"
                   "run's gap when the request had one. FILE is a search result (mfu search's\n"
                   "JSON, or a result's document from GET /results/{id}) or a search request, which\n"
                   "is searched first.\n"},
};

enum kind {
    K_SWITCH,  /* no value */
    K_PRESET,  /* NAME -> {top: {"preset": NAME}} */
    K_FILE,    /* FILE -> the file's JSON at top (wrapped in `sub` when given) */
    K_TRACE,   /* FILE -> the profiler trace's measurement at top.sub */
    K_STRING,  /* a string at top[.sub] */
    K_INT,     /* an integer, binary suffixes */
    K_BUDGET,  /* a number, decimal suffixes */
    K_REAL,    /* a plain number */
    K_LIST,    /* a,b,c -> ["a","b","c"] */
    K_CLI,     /* a value for the CLI itself, not the request */
};

typedef struct option {
    const char *name;
    const char *arg;   /* the value's name in help; NULL for switches */
    unsigned cmds;     /* the commands that accept it */
    int kind;
    const char *top;   /* where it goes in the request: request[top][sub] */
    const char *sub;
    const char *help;
} option;

static const option OPTIONS[] = {
    {"--model", "NAME", REQ, K_PRESET, "model", NULL, "a model preset (mfu presets models)"},
    {"--hf", "FILE", REQ, K_FILE, "model", "hf_config", "a HuggingFace config.json, as it is"},
    {"--hw", "NAME", REQ, K_PRESET, "hardware", NULL, "a hardware preset (mfu presets hardware)"},
    {"--hw-file", "FILE", REQ, K_FILE, "hardware", NULL,
     "a hardware description (e.g. mfu calibrate --hardware)"},
    {"--devices", "N", SRCH, K_INT, "devices", NULL, "devices in the job"},
    {"--seq", "N", REQ, K_INT, "training", "seq_len", "sequence length, tokens"},
    {"--batch-tokens", "N", REQ, K_INT, "training", "global_batch_tokens",
     "global batch, tokens (a multiple of --seq)"},
    {"--dtype", "D", REQ, K_STRING, "training", "dtype", "bf16 (default), fp16, fp8, fp32"},
    {"--convention", "C", REQ, K_STRING, "mfu_convention", NULL,
     "attention FLOPs in MFU: causal (default), full, none"},
    {"--tokens", "N", SRCH, K_BUDGET, "training", "tokens",
     "token budget: every row gets time_to_train (decimal: 15T = 15e12)"},
    {"--price", "X", SRCH, K_REAL, "cost", "price_per_device_hour",
     "price per device-hour (USD unless the file says): the cost to train"},
    {"--top-k", "N", SRCH, K_INT, "search", "top_k", "configurations ranked (default 10)"},
    {"--frameworks", "A,B", SRCH, K_LIST, "search", "frameworks",
     "only what these launch: megatron, torchtitan, maxtext, any"},
    {"--distinct", "D", SRCH, K_STRING, "search", "distinct",
     "layout (default: the best of each layout family) or none (every variant)"},
    {"--print-request", NULL, REQ, K_SWITCH, NULL, NULL, "print the request JSON and stop"},
    {"--measured-trace", "FILE", B(C_SEARCH), K_TRACE, "measured", "trace",
     "the run's profiler trace (FILE has measured.config): the gap per component"},
    {"--rank", "N", B(C_SEARCH), K_CLI, NULL, NULL,
     "the configuration --export-trace and --svg draw (default 1)"},
    {"--export-trace", "FILE", B(C_SEARCH), K_CLI, NULL, NULL,
     "also write the predicted step of --rank as a Chrome trace (open it in Perfetto)"},
    {"--svg", "DIR", B(C_SEARCH), K_CLI, NULL, NULL,
     "also write gap.svg, memory.svg, timeline.svg of --rank and roofline.svg into DIR"},
    {"--table", NULL, B(C_ROOFLINE) | B(C_SEARCH) | B(C_COMPARE) | B(C_CALIBRATE), K_SWITCH, NULL,
     NULL, "a table for people instead of JSON"},
    {"--csv", NULL, B(C_SEARCH), K_SWITCH, NULL, NULL, "the ranking as CSV (RFC 4180)"},
    {"--hardware", NULL, B(C_CALIBRATE), K_SWITCH, NULL, NULL,
     "only the fitted hardware description"},
};
#define N_OPTIONS (sizeof OPTIONS / sizeof OPTIONS[0])

static const char EXIT_TEXT[] =
    "exit status:\n"
    "   0  success\n"
    "   2  invalid request: an RFC 9457 problem document on stderr (a JSON pointer per error)\n"
    "   3  search: nothing fits (the answer, with no_fit, on stdout; the reason on stderr)\n"
    "  64  usage: unknown command or option, missing or malformed argument\n"
    "  66  cannot read an input file (FILE, --hf, --hw-file)\n"
    "  70  internal error (e.g. out of memory)\n"
    "  74  cannot write the output\n";

static const char OVERRIDE_TEXT[] =
    "With a FILE, the options override its fields (--model/--hf and --hw/--hw-file\n"
    "replace the whole model/hardware). The request is what the JSON would be: the\n"
    "same cache key (mfu key).\n";

/* Which suffixes the options of command c take. */
static void suffix_help(FILE *f, int c)
{
    const char *budget = NULL, *sep = "";
    fprintf(f, "Suffixes: K M G T are binary (2^10 .. 2^40) in ");
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const option *o = &OPTIONS[i];
        if (!(o->cmds & B(c))) continue;
        if (o->kind == K_BUDGET) budget = o->name;
        if (o->kind != K_INT) continue;
        fprintf(f, "%s%s", sep, o->name);
        sep = ", ";
    }
    fprintf(f, "\n(4M = 4194304, 8K = 8192)");
    if (budget) fprintf(f, " and decimal (10^3 .. 10^12) in %s (15T = 15e12)", budget);
    fprintf(f, ";\nKi Mi Gi Ti are binary everywhere; plain numbers (8192, 15e12) are taken as written.\n");
}

static void top_help(FILE *f)
{
    fprintf(f, "mfu -- how fast a model trains on given hardware: the mfud daemon's answers\n"
               "without the daemon.\n\n"
               "usage: mfu COMMAND [FILE|-] [options]\n"
               "       mfu help [COMMAND] | mfu COMMAND --help | mfu --help | mfu --version\n\n"
               "commands:\n");
    for (int c = 0; c < C_COUNT; c++) fprintf(f, "  %-10s %s\n", COMMANDS[c].name, COMMANDS[c].summary);
    fprintf(f, "  %-10s %s\n", "help", "mfu help COMMAND: a command's options, suffixes and exit codes");
    fprintf(f, "\nA request is a JSON FILE (- for stdin) or, for roofline, search and key, options\n"
               "that build it: mfu search --model llama3-70b --hw h100-sxm --devices 512 --seq 8192\n"
               "--batch-tokens 4M --top-k 5 (mfu help search lists them).\n\n"
               "options:\n"
               "  -h, --help     this help; after a command, that command's\n"
               "  --version      the CLI's and the engine's versions\n\n"
               "%s\n"
               "environment:\n"
               "  MFU_THREADS    search threads (default: the online CPUs)\n",
            EXIT_TEXT);
}

static void command_help(FILE *f, int c)
{
    fprintf(f, "usage: mfu %s %s\n\n%s", COMMANDS[c].name, COMMANDS[c].synopsis, COMMANDS[c].text);
    int header = 0;
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const option *o = &OPTIONS[i];
        if (!(o->cmds & B(c)) || o->kind == K_SWITCH) continue;
        if (!header) fprintf(f, "\nrequest options (build the request, or override FILE's fields):\n");
        header = 1;
        char lhs[40], where[64];
        snprintf(lhs, sizeof lhs, "%s %s", o->name, o->arg);
        if (o->kind == K_PRESET) snprintf(where, sizeof where, "%s.preset", o->top);
        else snprintf(where, sizeof where, "%s%s%s", o->top, o->sub ? "." : "", o->sub ? o->sub : "");
        fprintf(f, "  %-18s %s\n  %-18s   -> %s\n", lhs, o->help, "", where);
    }
    if (header) {
        fprintf(f, "\n");
        suffix_help(f, c);
        fputs(OVERRIDE_TEXT, f);
    }
    fprintf(f, "\noptions:\n");
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const option *o = &OPTIONS[i];
        if ((o->cmds & B(c)) && o->kind == K_SWITCH) fprintf(f, "  %-18s %s\n", o->name, o->help);
    }
    fprintf(f, "  %-18s %s\n", "-h, --help", "this help");
    if (c == C_PRESETS) fprintf(f, "\n");
    else fprintf(f, "\nFILE is a JSON document; - reads it from stdin.\n\n");
    fputs(EXIT_TEXT, f);
}

/* One line on stderr, exit 64. */
static int usage_error(int c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int usage_error(int c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mfu%s%s: ", c >= 0 ? " " : "", c >= 0 ? COMMANDS[c].name : "");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (c >= 0) fprintf(stderr, " (mfu help %s)\n", COMMANDS[c].name);
    else fprintf(stderr, " (mfu --help)\n");
    return EX_USAGE;
}

static int find_command(const char *name)
{
    for (int c = 0; c < C_COUNT; c++)
        if (strcmp(name, COMMANDS[c].name) == 0) return c;
    return -1;
}

/* ---- values ---------------------------------------------------------------- */

/* "4", "4.5", "15e12", "4M", "1.5T", "16Mi": a decimal number and an optional
 * suffix. K M G T multiply by 2^10.. (binary) or 10^3.. (decimal); Ki Mi Gi
 * Ti always by 2^10... Returns 0 with *out finite, or -1. */
static int parse_number(const char *s, int binary, int allow_suffix, double *out)
{
    const char *p = s;
    if (!isdigit((unsigned char)*p) && *p != '.') return -1;
    while (isdigit((unsigned char)*p)) p++;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return -1;
        while (isdigit((unsigned char)*p)) p++;
    }
    char *end;
    double v = strtod(s, &end);
    if (end != p || end == s) return -1;
    if (*p) {
        static const char UNITS[] = "KMGT";
        const char *u = allow_suffix ? strchr(UNITS, toupper((unsigned char)*p)) : NULL;
        if (!u || !*u) return -1;
        p++;
        int bin = binary;
        if (*p == 'i') { bin = 1; p++; }
        if (*p) return -1;
        v *= bin ? ldexp(1.0, 10 * (int)(u - UNITS + 1)) : pow(1000.0, (double)(u - UNITS + 1));
    }
    if (!isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* The JSON value of option o with text val; NULL (after one line on stderr)
 * when the text is malformed. K_FILE values are read later. */
static json_t *option_value(int c, const option *o, const char *val)
{
    double v;
    switch (o->kind) {
    case K_PRESET:
    case K_STRING:
        if (!*val) break;
        return o->kind == K_PRESET ? json_pack("{s:s}", "preset", val) : json_string(val);
    case K_INT:
        if (parse_number(val, 1, 1, &v) || v != floor(v) || v > 9007199254740992.0) {
            usage_error(c, "%s: '%s' is not a whole number (suffixes K M G T = 2^10 .. 2^40)", o->name, val);
            return NULL;
        }
        return json_integer((json_int_t)v);
    case K_BUDGET:
        if (parse_number(val, 0, 1, &v)) {
            usage_error(c, "%s: '%s' is not a number (suffixes K M G T = 10^3 .. 10^12)", o->name, val);
            return NULL;
        }
        return v == floor(v) && v <= 9007199254740992.0 ? json_integer((json_int_t)v) : json_real(v);
    case K_REAL:
        if (parse_number(val, 0, 0, &v)) {
            usage_error(c, "%s: '%s' is not a number", o->name, val);
            return NULL;
        }
        return json_real(v);
    case K_LIST: {
        json_t *a = json_array();
        const char *p = val;
        for (;;) {
            const char *q = strchr(p, ',');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            if (n == 0) {
                json_decref(a);
                usage_error(c, "%s: '%s' has an empty name (a comma-separated list)", o->name, val);
                return NULL;
            }
            json_array_append_new(a, json_stringn(p, n));
            if (!q) break;
            p = q + 1;
        }
        return a;
    }
    }
    usage_error(c, "%s needs a non-empty value", o->name);
    return NULL;
}

/* ---- input and output -------------------------------------------------------- */

/* Search threads: MFU_THREADS, else the online CPUs (the answer is the
 * same for any count; core/search.h). */
static int search_threads(void)
{
    const char *e = getenv("MFU_THREADS");
    long n = e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) {
            if (ferror(f)) { free(buf); buf = NULL; }
            break;
        }
        if (n == cap) {
            if (cap >= MAX_INPUT_BYTES) { free(buf); buf = NULL; break; }
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    if (f != stdin) fclose(f);
    *len = n;
    return buf;
}

/* The JSON document in path; NULL with *rc set (66 unreadable, 2 invalid
 * JSON with the problem on stderr). Errors point into the request at
 * `where` (e.g. /model/hf_config) and name the file. */
static json_t *load_json(const char *path, const char *where, int *rc)
{
    size_t len;
    errno = 0;
    char *text = read_all(path, &len);
    if (!text) {
        fprintf(stderr, "mfu: cannot read %s (%s)\n", strcmp(path, "-") ? path : "stdin",
                errno ? strerror(errno) : "over 16 MiB");
        *rc = EX_NOINPUT;
        return NULL;
    }
    api_status st;
    api_status_init(&st);
    /* the daemon's limits: depth, string lengths, container sizes */
    json_t *j = api_parse_json(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &st);
    free(text);
    if (j) return j;
    for (int i = 0; *where && i < st.n_errors; i++) {
        api_error *e = &st.errors[i];
        char p[sizeof e->pointer], d[sizeof e->detail];
        snprintf(p, sizeof p, "%s%s", where, e->pointer);
        snprintf(d, sizeof d, "%s: %s", path, e->detail);
        memcpy(e->pointer, p, sizeof p);
        memcpy(e->detail, d, sizeof d);
    }
    json_t *pj = api_problem_json(&st);
    char *s = json_dumps(pj, JSON_INDENT(2));
    fprintf(stderr, "%s\n", s ? s : "invalid JSON");
    free(s);
    json_decref(pj);
    *rc = EX_INVALID;
    return NULL;
}

static int problem(api_status *st)
{
    json_t *p = api_problem_json(st);
    char *s = json_dumps(p, JSON_INDENT(2));
    fprintf(stderr, "%s\n", s ? s : "invalid request");
    free(s);
    json_decref(p);
    return st->status >= 500 ? EX_SOFTWARE : EX_INVALID;
}

static int print_json(json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2));
    if (!s) return EX_SOFTWARE;
    fputs(s, stdout);
    fputc('\n', stdout);
    free(s);
    return EX_OK;
}

static int print_text(char *t)
{
    if (!t) return EX_SOFTWARE;
    fputs(t, stdout);
    free(t);
    return EX_OK;
}

/* Everything written reached its destination, or 74. */
static int flush_out(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "mfu: cannot write the output (%s)\n", strerror(errno));
        return EX_IOERR;
    }
    return rc;
}

/* ---- the request from FILE and options --------------------------------------- */

typedef struct given {
    const option *o;
    const char *text; /* as typed */
    json_t *value;    /* parsed (NULL for K_FILE until read, and for switches) */
} given;

/* request[o->top][o->sub] = v (steals v); an intermediate that is not an
 * object is replaced: the option overrides the file. */
static void set_field(json_t *req, const option *o, json_t *v)
{
    if (!o->sub || o->kind == K_FILE) {
        if (o->sub) v = json_pack("{s:o}", o->sub, v); /* --hf: {"hf_config": file} */
        json_object_set_new(req, o->top, v);
        return;
    }
    json_t *in = json_object_get(req, o->top);
    if (!json_is_object(in)) {
        in = json_object();
        json_object_set_new(req, o->top, in);
    }
    json_object_set_new(in, o->sub, v);
}

/* What the search writes besides its answer (--export-trace, --svg). */
typedef struct cli_out {
    int rank;
    const char *trace_out, *svg_dir;
} cli_out;
static cli_out cli = {1, NULL, NULL};

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "mfu: cannot write %s\n", path);
        if (f) fclose(f);
        return EX_IOERR;
    }
    return EX_OK;
}

/* --export-trace and --svg for a search result. */
static int extras(json_t *req, json_t *res, const cli_out *o)
{
    int rc = EX_OK;
    if (o->trace_out) {
        json_t *t = api_trace_export_result(res, o->rank);
        char *s = t ? json_dumps(t, JSON_COMPACT) : NULL;
        json_decref(t);
        if (!s) {
            fprintf(stderr, "mfu: no configuration ranked %d to draw\n", o->rank);
            return EX_NOFIT;
        }
        rc = write_file(o->trace_out, s);
        free(s);
    }
    if (rc == EX_OK && o->svg_dir) {
        static const char *const NAMES[3] = {"gap.svg", "memory.svg", "timeline.svg"};
        char *svg[4] = {api_svg_gap(res, o->rank), api_svg_memory(res, o->rank), api_svg_timeline(res, o->rank), NULL};
        api_status st;
        api_status_init(&st);
        json_t *roof = api_roofline(req, &st);
        if (roof) svg[3] = api_svg_roofline(roof);
        json_decref(roof);
        for (int i = 0; i < 4; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", o->svg_dir, i < 3 ? NAMES[i] : "roofline.svg");
            if (!svg[i]) {
                fprintf(stderr, "mfu: %s: nothing to draw (no configuration ranked %d)\n", path, o->rank);
                if (rc == EX_OK) rc = EX_NOFIT;
            } else if (rc == EX_OK) {
                rc = write_file(path, svg[i]);
            }
            free(svg[i]);
        }
    }
    return rc;
}

/* mfu trace --against: the prediction of configuration `rank` of a search
 * result, drawn and measured the same way, against the measured trace
 * (res: taken). */
static int trace_against(const char *against, int rank, json_t *res)
{
    api_status st;
    api_status_init(&st);
    int rc = EX_OK;
    json_t *doc = load_json(against, "", &rc);
    if (!doc) {
        json_decref(res);
        return rc;
    }
    json_t *result = json_object_get(doc, "result");
    if (!json_is_object(result)) result = doc;
    json_t *pt = api_trace_export_result(result, rank);
    char *text = pt ? json_dumps(pt, JSON_COMPACT) : NULL;
    json_decref(pt);
    json_t *pred = text ? api_trace_text(text, strlen(text), NULL, &st) : NULL;
    free(text);
    json_decref(doc);
    json_t *diff = pred ? api_trace_compare(pred, res) : NULL;
    if (!diff) {
        fprintf(stderr, "mfu: %s holds no configuration ranked %d to compare with\n", against, rank);
        json_decref(pred);
        json_decref(res);
        return EX_NOFIT;
    }
    json_t *out = json_pack("{s:i,s:O,s:O,s:o}", "rank", rank, "measured", json_object_get(res, "summary"),
                            "predicted", json_object_get(pred, "summary"), "difference", diff);
    json_decref(pred);
    rc = print_json(out);
    json_decref(out);
    json_decref(res);
    return flush_out(rc);
}

/* mfu trace --table: one line per step. */
static void trace_table(json_t *res)
{
    printf("%-10s %9s %9s %9s %9s %9s %9s %9s %9s %8s\n", "step", "step_ms", "busy_ms", "idle_ms", "gemm_ms",
           "attn_ms", "other_ms", "comm_ms", "expos_ms", "overlap");
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(res, "steps"), i, s) {
        json_t *k = json_object_get(s, "kernels"), *cm = json_object_get(s, "communication");
        json_t *ov = json_object_get(cm, "overlap");
        char ovs[16] = "-";
        if (json_is_number(ov)) snprintf(ovs, sizeof ovs, "%.1f%%", 100.0 * json_number_value(ov));
#define MS(o, f) (1e3 * json_number_value(json_object_get((o), (f))))
        printf("%-10lld %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %8s\n",
               (long long)json_integer_value(json_object_get(s, "step")), MS(s, "step_time_s"),
               MS(s, "gpu_busy_s"), MS(s, "idle_s"), MS(json_object_get(k, "gemm"), "time_s"),
               MS(json_object_get(k, "attention"), "time_s"), MS(json_object_get(k, "other_compute"), "time_s"),
               MS(cm, "time_s"), MS(cm, "exposed_s"), ovs);
#undef MS
    }
}

static int trace_cmd(int c, int argc, char **argv)
{
    const char *file = NULL, *marker = NULL, *against = NULL;
    int table = 0, rank = 1;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--table")) table = 1;
        else if (!strcmp(argv[i], "--against") || !strcmp(argv[i], "--rank")) {
            if (i + 1 >= argc) return usage_error(c, "option %s needs a value", argv[i]);
            if (!strcmp(argv[i], "--against")) against = argv[++i];
            else {
                char *end;
                long r = strtol(argv[++i], &end, 10);
                if (*end || r < 1 || r > 1000) return usage_error(c, "--rank: an integer in 1..1000");
                rank = (int)r;
            }
        }
        else if (!strcmp(argv[i], "--marker")) {
            if (i + 1 >= argc) return usage_error(c, "option --marker needs a value (PREFIX)");
            marker = argv[++i];
        } else if (!strncmp(argv[i], "--marker=", 9)) marker = argv[i] + 9;
        else if (argv[i][0] == '-' && argv[i][1]) return usage_error(c, "unknown option %s", argv[i]);
        else if (file) return usage_error(c, "unexpected argument '%s' (one trace FILE)", argv[i]);
        else file = argv[i];
    }
    if (!file) return usage_error(c, "a trace FILE is needed");
    FILE *probe = fopen(file, "rb");
    if (!probe) {
        fprintf(stderr, "mfu: cannot read %s\n", file);
        return EX_NOINPUT;
    }
    fclose(probe);
    api_status st;
    api_status_init(&st);
    json_t *res = api_trace_file(file, marker, &st);
    if (!res) return problem(&st);
    int rc;
    if (against) {
        /* the prediction of configuration `rank`, drawn and measured the
         * same way, against the measured trace */
        if (table) {
            json_decref(res);
            return usage_error(c, "--against prints JSON; it takes no --table");
        }
        return trace_against(against, rank, res);
    }
    if (!table) {
        rc = print_json(res);
    } else {
        trace_table(res);
        rc = EX_OK;
    }
    json_decref(res);
    return flush_out(rc);
}

static int explain_cmd(int c, int argc, char **argv)
{
    const char *file = NULL;
    int rank = 1;
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--rank")) {
            if (i + 1 >= argc) return usage_error(c, "option --rank needs a value (N)");
            v = argv[++i];
        } else if (!strncmp(argv[i], "--rank=", 7)) {
            v = argv[i] + 7;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error(c, "unknown option %s", argv[i]);
        } else if (file) {
            return usage_error(c, "unexpected argument '%s' (one FILE)", argv[i]);
        } else {
            file = argv[i];
        }
        if (v) {
            char *end;
            long r = strtol(v, &end, 10);
            if (*end || r < 1 || r > 1000) return usage_error(c, "--rank: an integer in 1..1000");
            rank = (int)r;
        }
    }
    if (!file) return usage_error(c, "a FILE (a search result or request, - for stdin) is needed");
    int rc = EX_OK;
    json_t *doc = load_json(file, "", &rc);
    if (!doc) return rc;
    /* a result document from GET /results/{id} carries it under "result" */
    json_t *res = json_object_get(doc, "result");
    res = json_is_object(res) ? json_incref(res) : NULL;
    if (!res && json_object_get(doc, "configs")) res = json_incref(doc);
    if (!res) {
        api_status st;
        api_status_init(&st);
        res = api_search_mt(doc, &st, NULL, NULL, search_threads());
        if (!res) {
            json_decref(doc);
            return problem(&st);
        }
    }
    json_decref(doc);
    char *t = api_explain_text(res, rank);
    if (!t) {
        json_t *nf = json_object_get(res, "no_fit");
        fprintf(stderr, "mfu: no configuration ranked %d%s%s\n", rank, nf ? ": " : "",
                nf ? json_string_value(json_object_get(nf, "reason")) : "");
        json_decref(res);
        return EX_NOFIT;
    }
    json_decref(res);
    return flush_out(print_text(t));
}

static int run(int c, json_t *req, int table, int csv, int hw_only, const cli_out *out)
{
    api_status st;
    api_status_init(&st);
    json_t *res = NULL;
    int rc = EX_OK;
    switch (c) {
    case C_ROOFLINE:
        res = api_roofline(req, &st);
        if (res) rc = table ? print_text(api_roofline_table(res)) : print_json(res);
        break;
    case C_SEARCH: {
        res = api_search_mt(req, &st, NULL, NULL, search_threads());
        if (!res) break;
        rc = table || csv ? print_text(csv ? api_result_csv(res) : api_search_table(res)) : print_json(res);
        if (rc == EX_OK && (out->trace_out || out->svg_dir)) rc = extras(req, res, out);
        /* nothing fits (not a truncated search, not a measured-run analysis,
         * whose answer is the measured block) */
        json_t *nf = json_object_get(res, "no_fit");
        if (rc == EX_OK && nf && json_array_size(json_object_get(res, "configs")) == 0 &&
            !json_object_get(res, "measured")) {
            json_t *why = json_object_get(nf, "reason");
            fflush(stdout);
            fprintf(stderr, "mfu: %s\n", json_is_string(why) ? json_string_value(why) : "nothing fits");
            rc = EX_NOFIT;
        }
        break;
    }
    case C_COMPARE:
        res = api_compare(req, &st, NULL, NULL, search_threads(), NULL, NULL);
        if (res) rc = table ? print_text(api_compare_table(res)) : print_json(res);
        break;
    case C_CALIBRATE:
        res = api_calibrate(req, &st);
        if (res)
            rc = table ? print_text(api_calibrate_table(res))
                       : print_json(hw_only ? json_object_get(res, "hardware") : res);
        break;
    case C_KEY:
        res = api_normalize(req, &st);
        if (res) {
            char key[65];
            if (api_cache_key(res, key)) rc = 70; /* EX_SOFTWARE: out of memory */
            else printf("%s\n", key);
        }
        break;
    default:
        break;
    }
    if (!res) return problem(&st);
    json_decref(res);
    return rc;
}

static int presets(int c, int argc, char **argv)
{
    const char *which = "models";
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1])
            return usage_error(c, "unknown option %s", argv[i]);
        if (i > 2) return usage_error(c, "unexpected argument '%s'", argv[i]);
        which = argv[i];
    }
    json_t *j = strcmp(which, "hardware") == 0 ? api_presets_hardware()
                : strcmp(which, "models") == 0 ? api_presets_models() : NULL;
    if (!j) return usage_error(c, "'%s': models or hardware", which);
    int rc = print_json(j);
    json_decref(j);
    return flush_out(rc);
}

/* What the options ask besides the request (main). */
typedef struct cli_flags {
    int table, csv, hw_only, print_req, n_req, dashdash;
    const option *model_opt, *hw_opt;
} cli_flags;

/* help, --version, an unknown command or option, COMMAND --help: the
 * exit status when one of them answers; -1 to go on, *c the command. */
static int early_answer(int argc, char **argv, int *c_out)
{
    const char *cmd;
    int c;
    if (argc < 2) {
        top_help(stderr);
        return EX_USAGE;
    }
    cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        if (argc > 3) return usage_error(-1, "help takes one command, not '%s'", argv[3]);
        if (argc == 3 && strcmp(cmd, "help") == 0) {
            int hc = find_command(argv[2]);
            if (hc < 0) return usage_error(-1, "unknown command '%s'", argv[2]);
            command_help(stdout, hc);
        } else if (argc == 3) {
            return usage_error(-1, "unexpected argument '%s' after %s", argv[2], cmd);
        } else {
            top_help(stdout);
        }
        return flush_out(EX_OK);
    }
    if (!strcmp(cmd, "--version")) {
        if (argc > 2) return usage_error(-1, "unexpected argument '%s' after %s", argv[2], cmd);
        printf("mfu %s (engine %s)\n", MFU_CLI_VERSION, MFU_ENGINE_VERSION);
        return flush_out(EX_OK);
    }
    if (cmd[0] == '-') return usage_error(-1, "unknown option %s", cmd);
    c = find_command(cmd);
    if (c < 0) return usage_error(-1, "unknown command '%s'", cmd);
    /* COMMAND --help anywhere before "--" wins over everything else */
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            command_help(stdout, c);
            return flush_out(EX_OK);
        }
    *c_out = c;
    return -1;
}

/* The options after the command into gv (each a request field's value) and
 * f; the request FILE into *file. EX_OK or the usage error's status. */
static int parse_options(int c, int argc, char **argv, given *gv, int *n_given, const char **file, cli_flags *f)
{
    int rc = EX_OK;
    for (int i = 2; i < argc && rc == EX_OK; i++) {
        const char *a = argv[i];
        if (f->dashdash || a[0] != '-' || !strcmp(a, "-")) {
            if (*file) rc = usage_error(c, "unexpected argument '%s' (one request FILE)", a);
            else *file = a;
            continue;
        }
        if (!strcmp(a, "--")) { f->dashdash = 1; continue; }
        const char *eq = strchr(a, '=');
        size_t nl = eq && a[1] == '-' ? (size_t)(eq - a) : strlen(a);
        const option *o = NULL;
        for (size_t k = 0; k < N_OPTIONS; k++)
            if (strlen(OPTIONS[k].name) == nl && !strncmp(a, OPTIONS[k].name, nl)) o = &OPTIONS[k];
        if (!o) {
            rc = usage_error(c, "unknown option %.*s", (int)nl, a);
            break;
        }
        if (!(o->cmds & B(c))) {
            rc = usage_error(c, "option %s does not apply to %s", o->name, COMMANDS[c].name);
            break;
        }
        const char *val = NULL;
        if (o->kind == K_SWITCH) {
            if (eq && a[1] == '-') { rc = usage_error(c, "option %s takes no value", o->name); break; }
        } else if (eq && a[1] == '-') {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            rc = usage_error(c, "option %s needs a value (%s)", o->name, o->arg);
            break;
        }
        if (o->kind == K_CLI) {
            if (!strcmp(o->name, "--rank")) {
                char *end;
                long r = strtol(val, &end, 10);
                if (*end || r < 1 || r > 1000) { rc = usage_error(c, "--rank: an integer in 1..1000"); break; }
                cli.rank = (int)r;
            } else if (!strcmp(o->name, "--export-trace")) cli.trace_out = val;
            else cli.svg_dir = val;
            continue;
        }
        if (!strcmp(o->name, "--table")) f->table = 1;
        else if (!strcmp(o->name, "--csv")) f->csv = 1;
        else if (!strcmp(o->name, "--hardware")) f->hw_only = 1;
        else if (!strcmp(o->name, "--print-request")) f->print_req = 1;
        if (o->kind == K_SWITCH) continue;
        if (!strcmp(o->top, "model")) {
            if (f->model_opt && f->model_opt != o) {
                rc = usage_error(c, "%s and %s both give the model; give one", f->model_opt->name, o->name);
                break;
            }
            f->model_opt = o;
        }
        if (!strcmp(o->top, "hardware")) {
            if (f->hw_opt && f->hw_opt != o) {
                rc = usage_error(c, "%s and %s both give the hardware; give one", f->hw_opt->name, o->name);
                break;
            }
            f->hw_opt = o;
        }
        json_t *v = NULL;
        if (o->kind == K_FILE || o->kind == K_TRACE) {
            if (!*val) { rc = usage_error(c, "option %s needs a file name", o->name); break; }
        } else if (!(v = option_value(c, o, val))) {
            rc = EX_USAGE;
            break;
        }
        gv[(*n_given)++] = (given){o, val, v};
        f->n_req++;
    }
    return rc;
}

/* Options that exclude each other, a request from nowhere, two stdins. */
static int check_options(int c, const char *file, const given *gv, int n_given, const cli_flags *f)
{
    int rc = EX_OK;
    if (rc == EX_OK && f->table && f->csv) rc = usage_error(c, "--table and --csv exclude each other");
    if (rc == EX_OK && f->table && f->hw_only)
        rc = usage_error(c, "--table and --hardware exclude each other");
    if (rc == EX_OK && f->print_req && (f->table || f->csv))
        rc = usage_error(c, "--print-request prints JSON; it takes no %s", f->table ? "--table" : "--csv");
    if (rc == EX_OK && !file && !f->n_req)
        rc = usage_error(c, "%s", (c == C_COMPARE || c == C_CALIBRATE)
                                      ? "a FILE (or - for stdin) is needed"
                                      : "give a request FILE, - for stdin, or request options");
    if (rc == EX_OK) {
        int stdin_users = file && !strcmp(file, "-");
        for (int k = 0; k < n_given; k++)
            stdin_users += gv[k].o->kind == K_FILE && !strcmp(gv[k].text, "-");
        if (stdin_users > 1) rc = usage_error(c, "only one input can be stdin (-)");
    }

    return rc;
}

/* The request: FILE (or {}), each option's value set into it. NULL when
 * something could not be read (*rc says what). */
static json_t *build_request(const char *file, given *gv, int n_given, int n_req, int *rc_out)
{
    int rc = EX_OK;
    json_t *req = NULL;
    {
        req = file ? load_json(file, "", &rc) : json_object();
        if (req && n_req && !json_is_object(req)) {
            api_status st;
            api_status_init(&st);
            api_fail(&st, 422, "", "the request must be a JSON object (options override its fields)");
            rc = problem(&st);
        }
    }
    for (int k = 0; k < n_given && rc == EX_OK; k++) {
        const option *o = gv[k].o;
        json_t *v = gv[k].value;
        gv[k].value = NULL;
        if (o->kind == K_FILE) {
            char where[64];
            snprintf(where, sizeof where, "/%s%s%s", o->top, o->sub ? "/" : "", o->sub ? o->sub : "");
            if (!(v = load_json(gv[k].text, where, &rc))) break;
        }
        if (o->kind == K_TRACE) {
            FILE *f = fopen(gv[k].text, "rb");
            if (!f) {
                fprintf(stderr, "mfu: cannot read %s: %s\n", gv[k].text, strerror(errno));
                rc = EX_NOINPUT;
                break;
            }
            fclose(f);
            api_status st;
            api_status_init(&st);
            if (!(v = api_trace_file(gv[k].text, NULL, &st))) {
                rc = problem(&st);
                break;
            }
        }
        set_field(req, o, v);
    }
    *rc_out = rc;
    return req;
}

int main(int argc, char **argv)
{
    api_alloc_init(); /* the api's out-of-memory policy (api/oom.c) */
    int c = -1;
    int early = early_answer(argc, argv, &c);
    if (early >= 0) return early;
    if (c == C_PRESETS) return presets(c, argc, argv);

    /* ---- parse: every usage error before any file is read ---- */
    if (c == C_TRACE) return trace_cmd(c, argc, argv);
    if (c == C_EXPLAIN) return explain_cmd(c, argc, argv);
    given *gv = calloc((size_t)argc, sizeof *gv);
    if (!gv) return EX_SOFTWARE;
    int n_given = 0;
    const char *file = NULL;
    cli_flags f = {0, 0, 0, 0, 0, 0, NULL, NULL};
    int rc = parse_options(c, argc, argv, gv, &n_given, &file, &f);
    if (rc == EX_OK) rc = check_options(c, file, gv, n_given, &f);
    json_t *req = NULL;
    if (rc == EX_OK) req = build_request(file, gv, n_given, f.n_req, &rc);
    for (int k = 0; k < n_given; k++) json_decref(gv[k].value);
    free(gv);
    if (rc == EX_OK) rc = f.print_req ? print_json(req) : run(c, req, f.table, f.csv, f.hw_only, &cli);
    json_decref(req);
    return flush_out(rc);
}
