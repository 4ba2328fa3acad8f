/* server/mfu.c -- the `mfu` CLI: the daemon's answers without the daemon.
 *
 *   mfu roofline FILE|- [--table]
 *   mfu search   FILE|- [--table | --csv]
 *   mfu compare  FILE|- [--table]   (what-if: {"base": request, "vary": {...}})
 *   mfu presets  [models|hardware]
 *   mfu key      FILE|-          (the cache key the daemon would use)
 *   mfu calibrate FILE|- [--table | --hardware]
 *                                (fit a hardware profile to measured runs;
 *                                 --hardware prints only the description)
 *
 * Searches run on MFU_THREADS threads (default: the online CPUs).
 * Reads one request JSON (docs/model-ir.md, openapi.yaml), prints the result
 * JSON (or a table / CSV) on stdout. Invalid input prints an RFC 9457
 * problem document on stderr and exits with status 2; usage errors exit 64.
 * A search where nothing fits prints its answer (with no_fit: the closest
 * configuration and the fewest devices that fit), writes the reason on one
 * line to stderr and exits with status 3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"

#define MAX_INPUT_BYTES (16u << 20)

/* Search threads: MFU_THREADS, else the online CPUs (the answer is the
 * same for any count; core/search.h). */
static int search_threads(void)
{
    const char *e = getenv("MFU_THREADS");
    long n = e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: mfu roofline FILE|- [--table]\n"
            "       mfu search   FILE|- [--table | --csv]\n"
            "       mfu compare  FILE|- [--table]\n"
            "       mfu presets  [models|hardware]\n"
            "       mfu key      FILE|-\n"
            "       mfu calibrate FILE|- [--table | --hardware]\n");
    return 64;
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
        if (k == 0) break;
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

static int problem(api_status *st)
{
    json_t *p = api_problem_json(st);
    char *s = json_dumps(p, JSON_INDENT(2));
    fprintf(stderr, "%s\n", s ? s : "invalid request");
    free(s);
    json_decref(p);
    return 2;
}

static int print_json(json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2));
    if (!s) return 1;
    fputs(s, stdout);
    fputc('\n', stdout);
    free(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage();
    const char *cmd = argv[1];
    if (strcmp(cmd, "presets") == 0) {
        const char *which = argc > 2 ? argv[2] : "models";
        json_t *j = strcmp(which, "hardware") == 0 ? api_presets_hardware()
                    : strcmp(which, "models") == 0 ? api_presets_models() : NULL;
        if (!j) return usage();
        int rc = print_json(j);
        json_decref(j);
        return rc;
    }
    if (argc < 3) return usage();
    int table = 0, csv = 0, hw_only = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--table") == 0) table = 1;
        else if (strcmp(argv[i], "--csv") == 0) csv = 1;
        else if (strcmp(argv[i], "--hardware") == 0) hw_only = 1;
        else return usage();
    }
    size_t len;
    char *text = read_all(argv[2], &len);
    if (!text) {
        fprintf(stderr, "mfu: cannot read %s (missing, unreadable, or over %u bytes)\n", argv[2],
                MAX_INPUT_BYTES);
        return 66;
    }
    api_status st;
    api_status_init(&st);
    /* the daemon's limits: depth, string lengths, container sizes */
    json_t *req = api_parse_json(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &st);
    free(text);
    if (!req) return problem(&st);
    json_t *res = NULL;
    int rc = 0;
    if (strcmp(cmd, "roofline") == 0) {
        res = api_roofline(req, &st);
        if (res && table) {
            char *t = api_roofline_table(res);
            fputs(t ? t : "", stdout);
            free(t);
        } else if (res) {
            rc = print_json(res);
        }
    } else if (strcmp(cmd, "search") == 0) {
        res = api_search_mt(req, &st, NULL, NULL, search_threads());
        if (res && (table || csv)) {
            char *t = csv ? api_result_csv(res) : api_search_table(res);
            fputs(t ? t : "", stdout);
            free(t);
        } else if (res) {
            rc = print_json(res);
        }
        /* nothing fits (not a truncated search, not a measured-run analysis,
         * whose answer is the measured block) */
        json_t *nf = res ? json_object_get(res, "no_fit") : NULL;
        if (nf && json_array_size(json_object_get(res, "configs")) == 0 &&
            !json_object_get(res, "measured")) {
            json_t *why = json_object_get(nf, "reason");
            fprintf(stderr, "mfu: %s\n", json_is_string(why) ? json_string_value(why) : "nothing fits");
            rc = 3;
        }
    } else if (strcmp(cmd, "compare") == 0) {
        res = api_compare(req, &st, NULL, NULL, search_threads(), NULL, NULL);
        if (res && table) {
            char *t = api_compare_table(res);
            fputs(t ? t : "", stdout);
            free(t);
        } else if (res) {
            rc = print_json(res);
        }
    } else if (strcmp(cmd, "calibrate") == 0) {
        res = api_calibrate(req, &st);
        if (res && table) {
            char *t = api_calibrate_table(res);
            fputs(t ? t : "", stdout);
            free(t);
        } else if (res) {
            rc = print_json(hw_only ? json_object_get(res, "hardware") : res);
        }
    } else if (strcmp(cmd, "key") == 0) {
        res = api_normalize(req, &st);
        if (res) {
            char key[65];
            api_cache_key(res, key);
            printf("%s\n", key);
        }
    } else {
        json_decref(req);
        return usage();
    }
    json_decref(req);
    if (!res) return problem(&st);
    json_decref(res);
    return rc;
}
