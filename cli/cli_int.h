/* cli/cli_int.h -- inside the mfu CLI: the commands, the option table's
 * types, exit statuses, and what cli/mfu.c (running a command, input and
 * output) and cli/options.c (commands and options, help, values, parsing
 * the command line into a request) give one another. */
#ifndef MFU_CLI_INT_H
#define MFU_CLI_INT_H

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

typedef struct given {
    const option *o;
    const char *text; /* as typed */
    json_t *value;    /* parsed (NULL for K_FILE until read, and for switches) */
} given;

/* What the search writes besides its answer (--export-trace, --svg). */
typedef struct cli_out {
    int rank;
    const char *trace_out, *svg_dir;
} cli_out;
extern cli_out cli;

/* What the options ask besides the request (main). */
typedef struct cli_flags {
    int table, csv, hw_only, print_req, n_req, dashdash;
    const option *model_opt, *hw_opt;
} cli_flags;

/* cli/options.c */
int usage_error(int c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* cli/options.c */
int early_answer(int argc, char **argv, int *c_out);
/* cli/options.c */
int parse_options(int c, int argc, char **argv, given *gv, int *n_given, const char **file, cli_flags *f);
/* cli/options.c */
int check_options(int c, const char *file, const given *gv, int n_given, const cli_flags *f);
/* cli/options.c */
json_t *build_request(const char *file, given *gv, int n_given, int n_req, int *rc_out);
/* cli/mfu.c */
int flush_out(int rc);
/* cli/mfu.c */
json_t *load_json(const char *path, const char *where, int *rc);
/* cli/mfu.c */
int problem(api_status *st);
/* cli/mfu.c */
void set_field(json_t *req, const option *o, json_t *v);

#endif
