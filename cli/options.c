/* cli/options.c -- the mfu CLI's commands and options: the tables, the
 * help, values with their size suffixes, and a command line parsed into a
 * request (cli/cli_int.h; the conventions are in cli/mfu.c's header). */
#include "cli_int.h"

/* ---- commands and options ------------------------------------------------- */





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
int usage_error(int c, const char *fmt, ...)
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

/* help, --version, an unknown command or option, COMMAND --help: the
 * exit status when one of them answers; -1 to go on, *c the command. */
int early_answer(int argc, char **argv, int *c_out)
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
int parse_options(int c, int argc, char **argv, given *gv, int *n_given, const char **file, cli_flags *f)
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
int check_options(int c, const char *file, const given *gv, int n_given, const cli_flags *f)
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
json_t *build_request(const char *file, given *gv, int n_given, int n_req, int *rc_out)
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
