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
 *
 * This file runs a command and does the input and output; the commands,
 * options, help and the parsing of a command line into a request are
 * cli/options.c's (cli/cli_int.h joins them).
 */
#include "cli_int.h"

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
json_t *load_json(const char *path, const char *where, int *rc)
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

int problem(api_status *st)
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
int flush_out(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "mfu: cannot write the output (%s)\n", strerror(errno));
        return EX_IOERR;
    }
    return rc;
}

/* ---- the request from FILE and options --------------------------------------- */



/* request[o->top][o->sub] = v (steals v); an intermediate that is not an
 * object is replaced: the option overrides the file. */
void set_field(json_t *req, const option *o, json_t *v)
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


cli_out cli = {1, NULL, NULL};

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
