/* server/mfud.c -- the mfud daemon: configuration, start-up and shutdown.
 *
 * THREADING SHAPE, AND WHY
 * libmicrohttpd runs with its own internal polling threads (epoll, a small
 * thread pool, MHD_ALLOW_SUSPEND_RESUME); the libuv loop runs on the main
 * thread and owns the SQLite connection and the job table; searches run on
 * the libuv thread pool. Requests that need the loop are handed over through
 * a mutex-protected queue plus uv_async_send, with the connection suspended
 * (MHD_suspend_connection) until the loop, or the worker it delegates to,
 * fills the answer and calls MHD_resume_connection (safe from any thread).
 *
 * We chose this over driving libmicrohttpd from the libuv loop (external
 * select mode with a uv_poll_t and a timer re-armed from MHD_get_timeout)
 * because:
 *  - HTTP parsing, body reading, JSON parsing, request validation and
 *    normalization (api_normalize, the cache key) and all response rendering
 *    (status documents, slicing, CSV, ETag/304) run on the HTTP threads, in
 *    parallel with the loop, so the single loop thread only does table
 *    lookups and SQLite; on the cached paths that keeps the loop from being
 *    the bottleneck;
 *  - libmicrohttpd's own threads apply its connection limit and idle
 *    timeouts (slowloris) without us re-implementing its event wiring, and
 *    the external-mode rule "call MHD_run after every resume" disappears;
 *  - the one cross-thread seam is small and explicit: the queue (mutex) in
 *    one direction, resume in the other, and the ownership rule in srv.h
 *    (while a connection is suspended the loop owns its request state).
 * Cost: one thread hop per loop-bound request (an eventfd write and a wake).
 *
 * Configuration: flags override environment variables (MFUD_*), which
 * override defaults. The startup log line carries the bound port, so tests
 * start with --port 0 and read it back.
 */
#include "srv.h"

#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "db.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mfud [options]\n"
            "  --port N           TCP port, 0 = ephemeral (MFUD_PORT, default 8080)\n"
            "  --bind ADDR        bind address (MFUD_BIND, default 127.0.0.1)\n"
            "  --db PATH          SQLite file (MFUD_DB, default ./var/mfud.db)\n"
            "  --db-wait S        at start, retry an unreachable postgresql:// --db for S\n"
            "                     seconds before giving up (MFUD_DB_WAIT, 30; 0 = at once)\n"
            "  --workers N        search worker threads (MFUD_WORKERS, default: CPUs)\n"
            "  --http-threads N   HTTP threads (MFUD_HTTP_THREADS, default 2)\n"
            "  --max-body BYTES   request body limit (MFUD_MAX_BODY, default 1048576)\n"
            "  --max-trace-bytes BYTES  POST /traces body limit, plain or gzipped\n"
            "                     (MFUD_MAX_TRACE_BYTES, default 67108864)\n"
            "  --queue-limit N    jobs queued or running before 503 (MFUD_QUEUE_LIMIT, 256)\n"
            "  --cache-max BYTES  stored results before LRU eviction (MFUD_CACHE_MAX, 1 GiB)\n"
            "  --mem-cache BYTES  finished results kept rendered in memory (MFUD_MEM_CACHE,\n"
            "                     64 MiB; 0 = off)\n"
            "  --max-conns N      concurrent connections (MFUD_MAX_CONNS, 1024)\n"
            "  --conn-timeout S   idle connection timeout (MFUD_CONN_TIMEOUT, 30)\n"
            "  --wait S           default wait of POST /search before 202 (MFUD_WAIT, 2)\n"
            "  --max-search-s S   cap on a search's deadline_s; longer ones are truncated\n"
            "                     (MFUD_MAX_SEARCH_S, 60)\n"
            "  --log-level L      debug|info|warn|error (MFUD_LOG_LEVEL, info)\n"
            "  --auth-token T     require 'Authorization: Bearer T' on POST (MFUD_AUTH_TOKEN;\n"
            "                     an argument shows in ps: prefer the variable or the file)\n"
            "  --auth-token-file F  the token is F's first line (MFUD_AUTH_TOKEN_FILE)\n"
            "  --cors-origin O    allow web pages of origin O (or *) to call mfud (CORS;\n"
            "                     default: none) (MFUD_CORS_ORIGIN)\n"
            "  --reuse-port 0|1   share the port with other processes (SO_REUSEPORT; default 0:\n"
            "                     a port in use is an error) (MFUD_REUSE_PORT)\n"
            "  --version, --help\n");
}

static int parse_ll(const char *name, const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) {
        fprintf(stderr, "mfud: %s must be an integer in %lld..%lld (got \"%s\")\n", name, lo, hi,
                s);
        return -1;
    }
    *out = v;
    return 0;
}

struct opt {
    const char *flag, *env;
    int kind; /* 0 int, 1 string, 2 double, 3 level */
    void *dst;
    size_t size;
    long long lo, hi;
};

static int apply(const struct opt *o, const char *val)
{
    long long v;
    switch (o->kind) {
    case 0:
        if (parse_ll(o->flag, val, o->lo, o->hi, &v) != 0) return -1;
        if (o->size == sizeof(int)) *(int *)o->dst = (int)v;
        else if (o->size == sizeof(int64_t)) *(int64_t *)o->dst = v;
        return 0;
    case 1:
        /* an empty token would silently turn auth off (issue 14 item 12) */
        if (!*val && !strcmp(o->flag, "--auth-token")) {
            fprintf(stderr, "mfud: --auth-token must not be empty (leave it out for no auth)\n");
            return -1;
        }
        if (strlen(val) >= o->size) {
            fprintf(stderr, "mfud: %s too long\n", o->flag);
            return -1;
        }
        snprintf(o->dst, o->size, "%s", val);
        return 0;
    case 2: {
        char *end;
        double d = strtod(val, &end);
        if (!*val || *end || !(d >= 0 && d <= 3600)) { /* NaN too (issue 14 item 12) */
            fprintf(stderr, "mfud: %s must be seconds in 0..3600\n", o->flag);
            return -1;
        }
        *(double *)o->dst = d;
        return 0;
    }
    default: {
        int l = srv_log_level_parse(val);
        if (l < 0) {
            fprintf(stderr, "mfud: %s must be debug, info, warn or error\n", o->flag);
            return -1;
        }
        *(int *)o->dst = l;
        return 0;
    }
    }
}

static void set_defaults(struct srv_config *cfg)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->port = 8080;
    snprintf(cfg->bind, sizeof cfg->bind, "127.0.0.1");
    snprintf(cfg->db_path, sizeof cfg->db_path, "./var/mfud.db");
    cfg->workers = ncpu > 0 ? (int)ncpu : 2;
    cfg->http_threads = 2;
    cfg->queue_limit = 256;
    cfg->cache_max = 1LL << 30;
    cfg->mem_cache = 64LL << 20;
    cfg->max_conns = 1024;
    cfg->conn_timeout_s = 30;
    cfg->default_wait_s = 2.0;
    cfg->db_wait_s = 30.0;
    cfg->max_wait_s = 60.0;
    cfg->max_search_s = 60.0;
    cfg->log_level = SRV_LOG_INFO;
}

/* The environment, then the command line (flags win), through opts. -1 to
 * go on, else the exit status (0 after --help or --version). */
static int parse_options(int argc, char **argv, const struct opt *opts, size_t n_opts)
{
    for (size_t i = 0; i < n_opts; i++) {
        const char *v = getenv(opts[i].env);
        if (v && *v && apply(&opts[i], v) != 0) return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("mfud engine %s\n", MFU_ENGINE_VERSION);
            return 0;
        }
        size_t k = 0;
        const char *val = NULL;
        for (; k < n_opts; k++) {
            size_t fl = strlen(opts[k].flag);
            if (strcmp(argv[i], opts[k].flag) == 0) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "mfud: %s needs a value\n", argv[i]);
                    return 2;
                }
                val = argv[++i];
                break;
            }
            if (strncmp(argv[i], opts[k].flag, fl) == 0 && argv[i][fl] == '=') {
                val = argv[i] + fl + 1;
                break;
            }
        }
        if (k == n_opts) {
            fprintf(stderr, "mfud: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
        if (apply(&opts[k], val) != 0) return 2;
    }
    return -1;
}

/* The token from a file (not visible in ps as an argument is). 0, or 2. */
static int read_token_file(const char *token_file, struct srv_config *cfg)
{
    FILE *tf = fopen(token_file, "r");
    char line[sizeof cfg->auth_token + 2] = "";
    if (!tf || !fgets(line, sizeof line, tf)) {
        fprintf(stderr, "mfud: --auth-token-file %s: %s\n", token_file, tf ? "empty" : strerror(errno));
        if (tf) fclose(tf);
        return 2;
    }
    fclose(tf);
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0] || strlen(line) >= sizeof cfg->auth_token) {
        fprintf(stderr, "mfud: --auth-token-file %s: the first line must be a token of 1..%zu characters\n",
                token_file, sizeof cfg->auth_token - 1);
        return 2;
    }
    snprintf(cfg->auth_token, sizeof cfg->auth_token, "%s", line);
    return 0;
}

static void log_listening(const struct srv_config *cfg, int port)
{
    char db_shown[sizeof cfg->db_path];
    db_redact(cfg->db_path, db_shown, sizeof db_shown);
    srv_log(SRV_LOG_INFO,
            "msg=listening bind=%s port=%d db=\"%s\" workers=%d http_threads=%d max_body=%zu "
            "queue_limit=%d max_conns=%d conn_timeout_s=%d max_search_s=%g cache_max=%lld "
            "mem_cache=%lld engine=%s auth=%s",
            cfg->bind, port, db_shown, cfg->workers, cfg->http_threads, cfg->max_body,
            cfg->queue_limit, cfg->max_conns, cfg->conn_timeout_s, cfg->max_search_s,
            (long long)cfg->cache_max, (long long)cfg->mem_cache, MFU_ENGINE_VERSION,
            cfg->auth_token[0] ? "bearer" : "none");
    if (cfg->test_job_delay_ms)
        srv_log(SRV_LOG_WARN, "msg=\"test hook: every job is delayed\" delay_ms=%d",
                cfg->test_job_delay_ms);
}

int main(int argc, char **argv)
{
    static struct srv_config cfg;
    int64_t max_body = 1 << 20, max_trace = 64LL << 20;
    char token_file[1024] = "";
    set_defaults(&cfg);
    const struct opt opts[] = {
        {"--port", "MFUD_PORT", 0, &cfg.port, sizeof(int), 0, 65535},
        {"--bind", "MFUD_BIND", 1, cfg.bind, sizeof cfg.bind, 0, 0},
        {"--db", "MFUD_DB", 1, cfg.db_path, sizeof cfg.db_path, 0, 0},
        {"--db-wait", "MFUD_DB_WAIT", 2, &cfg.db_wait_s, sizeof(double), 0, 0},
        {"--workers", "MFUD_WORKERS", 0, &cfg.workers, sizeof(int), 1, 1024},
        {"--http-threads", "MFUD_HTTP_THREADS", 0, &cfg.http_threads, sizeof(int), 1, 64},
        {"--max-body", "MFUD_MAX_BODY", 0, &max_body, sizeof(int64_t), 1024, 1LL << 30},
        {"--max-trace-bytes", "MFUD_MAX_TRACE_BYTES", 0, &max_trace, sizeof(int64_t), 1024, 1LL << 32},
        {"--queue-limit", "MFUD_QUEUE_LIMIT", 0, &cfg.queue_limit, sizeof(int), 1, 1000000},
        {"--cache-max", "MFUD_CACHE_MAX", 0, &cfg.cache_max, sizeof(int64_t), 0, 1LL << 50},
        {"--mem-cache", "MFUD_MEM_CACHE", 0, &cfg.mem_cache, sizeof(int64_t), 0, 1LL << 40},
        {"--max-conns", "MFUD_MAX_CONNS", 0, &cfg.max_conns, sizeof(int), 4, 100000},
        {"--conn-timeout", "MFUD_CONN_TIMEOUT", 0, &cfg.conn_timeout_s, sizeof(int), 1, 3600},
        {"--wait", "MFUD_WAIT", 2, &cfg.default_wait_s, sizeof(double), 0, 0},
        {"--max-search-s", "MFUD_MAX_SEARCH_S", 2, &cfg.max_search_s, sizeof(double), 0, 0},
        {"--log-level", "MFUD_LOG_LEVEL", 3, &cfg.log_level, sizeof(int), 0, 0},
        {"--auth-token", "MFUD_AUTH_TOKEN", 1, cfg.auth_token, sizeof cfg.auth_token, 0, 0},
        {"--auth-token-file", "MFUD_AUTH_TOKEN_FILE", 1, token_file, sizeof token_file, 0, 0},
        {"--reuse-port", "MFUD_REUSE_PORT", 0, &cfg.reuse_port, sizeof(int), 0, 1},
        {"--cors-origin", "MFUD_CORS_ORIGIN", 1, cfg.cors_origin, sizeof cfg.cors_origin, 0, 0},
    };
    int rc = parse_options(argc, argv, opts, sizeof opts / sizeof opts[0]);
    if (rc >= 0) return rc;
    cfg.max_body = (size_t)max_body;
    if (token_file[0] && read_token_file(token_file, &cfg) != 0) return 2;
    cfg.max_trace_bytes = (size_t)max_trace;
    if (cfg.max_search_s < 0.001) { /* a request's deadline_s is at least 0.001 */
        fprintf(stderr, "mfud: --max-search-s must be seconds in 0.001..3600\n");
        return 2;
    }
    const char *delay = getenv("MFUD_TEST_JOB_DELAY_MS");
    if (delay && *delay) {
        long long v;
        if (parse_ll("MFUD_TEST_JOB_DELAY_MS", delay, 0, 600000, &v) != 0) return 2;
        cfg.test_job_delay_ms = (int)v;
    }
    srv_log_level = cfg.log_level;

    srv_process_init(&cfg);

    if (srv_jobs_init(&cfg) != 0) return 1;
    int port = 0;
    struct MHD_Daemon *d = srv_http_start(&cfg, &port);
    if (!d) {
        srv_log(SRV_LOG_ERROR, "msg=\"cannot listen\" bind=%s port=%d", cfg.bind, cfg.port);
        return 1;
    }
    srv_jobs_set_mhd(d);
    log_listening(&cfg, port);
    srv_jobs_run();
    srv_http_stop(d);
    srv_jobs_fini();
    srv_rcache_clear();
    return 0;
}
