/* tests/fuzz/fuzz_http.c -- libFuzzer target (e): the HTTP layer of mfud
 * (server/http.c behind libmicrohttpd, and what it reaches: routing, query
 * strings, bounded bodies, framing checks, validation, the loop and the
 * pool), driven over a real TCP socket.
 *
 * The daemon runs in this process, so the coverage of its handlers guides
 * the fuzzer: on the first input it is started as server/mfud.c main()
 * starts it (defaults but small limits, an ephemeral port on 127.0.0.1, a
 * fresh database in a mkdtemp() directory), its libuv loop on a thread of
 * its own. Each input is the raw byte stream of one client connection:
 * request lines, headers, bodies, possibly several pipelined requests. It is
 * written (at most IN_MAX bytes), the write side is shut down (see
 * exchange() for when), and the answers are read until the daemon closes
 * the connection. The limits keep an input cheap: searches stop at
 * --max-search-s 0.25, POST /search answers 202 after 0.2 s at most, eight
 * jobs at most queue (then 503), bodies stop at 64 KiB.
 *
 * Properties:
 *  - no hang: the exchange never stalls IDLE_MS without a byte moving
 *    (the daemon's own waits, --wait and --max-search-s, are far shorter);
 *  - every answer in the stream starts "HTTP/1.1 DDD " (DDD a status in
 *    100..599); none is a 500; the only 5xx are 501 (an unsupported
 *    Transfer-Encoding), 503 (queue full) and 505 (libmicrohttpd: an HTTP
 *    version it does not speak);
 *  - a framed answer is whole: the stream does not end inside one unless
 *    the connection was reset or the answer was too long to keep (an
 *    answer to HEAD, bodiless, is told apart as check_answers() says);
 *  - a problem answer (application/problem+json) is a JSON object whose
 *    "type" and "title" are strings and whose "status" is the status line's;
 *    an application/json answer parses;
 *  - an input that starts with a complete, plainly well-formed request
 *    without a body (see plain_request()) gets at least one answer; other
 *    inputs (cut-off request lines, bodies shorter than announced, bytes
 *    that are no request) may be answered by a close alone;
 *  - the daemon stays alive: after every input a fresh connection gets 200
 *    from GET /healthz, and every LOOP_EVERY inputs 200 from
 *    GET /results?limit=1 (which goes through the libuv loop and SQLite).
 * libFuzzer's -timeout should stay above TOTAL_MS (tests/fuzz/run.sh uses
 * 20 s), so a slow but progressing stream is cut here, not reported.
 *
 * Seeds (tests/fuzz/corpus/http/): hand-written requests for every route,
 * with bodies from examples/ and tests/integration/http.sh cut small, and
 * the framing cases of issue 14 (duplicate Content-Length, chunked bodies
 * valid and broken, Expect: 100-continue, oversized Content-Length, %00 in
 * paths and queries, bad methods, HTTP/1.0, pipelining, missing Host, long
 * headers). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "srv.h"

#define IN_MAX (256u << 10)   /* bytes of an input sent; the rest is dropped */
#define OUT_MAX (8u << 20)    /* bytes of answers kept and checked; the rest is drained */
#define IDLE_MS 5000.0        /* nothing written or read this long: a hang */
#define TOTAL_MS 15000.0      /* a stream still moving is read this long at most */
#define LOOP_EVERY 64         /* inputs between two checks through the loop */

/* ---- the daemon, started once ------------------------------------------ */

static struct srv_config cfg;
static int port;
static char dir[256];
static atomic_int loop_returned;
static unsigned long n_inputs;

static void *loop_main(void *arg)
{
    (void)arg;
    srv_jobs_run(); /* returns only after a shutdown, which nothing here asks for */
    atomic_store(&loop_returned, 1);
    return NULL;
}

/* The database directory goes at exit (not after a finding: abort() runs
 * no atexit hooks, and the files may help). The daemon's threads are still
 * running then (libFuzzer and replay.c end with exit()); nothing is torn
 * down but the files, which are not needed any more (a slow exit, as under
 * TSan, may let the daemon's flush timer log that its database is gone).
 * The daemon is not shut down: its graceful shutdown answers to SIGTERM,
 * which stays libFuzzer's (below). Its one-time state (the MHD daemon, the
 * loop, the job table, SQLite, the result cache) stays reachable from its
 * globals, so LeakSanitizer's exit check does not count it as leaked
 * (checked: no report at exit under ASan, replay and libFuzzer); what one
 * input allocates is freed by the time its connection is closed. */
static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[sizeof dir + 300];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void start_daemon(void)
{
    /* server/mfud.c's defaults, with limits small enough that one input
     * stays cheap: searches stop at max_search_s, POST /search answers 202
     * after max_wait_s at most, few jobs queue */
    snprintf(cfg.bind, sizeof cfg.bind, "127.0.0.1");
    cfg.port = 0;
    cfg.workers = 2;
    cfg.http_threads = 2;
    cfg.max_body = 64 << 10;
    cfg.max_trace_bytes = 64 << 10;
    cfg.queue_limit = 8;
    cfg.cache_max = 16 << 20;
    cfg.mem_cache = 4 << 20;
    cfg.max_conns = 64;
    cfg.conn_timeout_s = 3;
    cfg.default_wait_s = 0.1;
    cfg.max_wait_s = 0.2;
    cfg.max_search_s = 0.25;
    /* quiet: every reset connection would log a warning; MFUD_LOG_LEVEL
     * shows them when reproducing a finding */
    const char *lv = getenv("MFUD_LOG_LEVEL");
    cfg.log_level = lv && srv_log_level_parse(lv) >= 0 ? srv_log_level_parse(lv) : SRV_LOG_ERROR;
    srv_log_level = cfg.log_level;

    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/mfud-fuzz-http.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    FZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
    atexit(remove_dir);
    snprintf(cfg.db_path, sizeof cfg.db_path, "%s/mfud.db", dir);

    srv_process_init(&cfg); /* as mfud's main() */

    /* srv_jobs_init() takes SIGINT and SIGTERM for the daemon's graceful
     * shutdown. Here they stay libFuzzer's (it prints its statistics and
     * exits): the shutdown is not what is fuzzed, and once begun every
     * later input would meet a closed port and be reported as a crash. */
    struct sigaction old_int, old_term;
    sigaction(SIGINT, NULL, &old_int);
    sigaction(SIGTERM, NULL, &old_term);
    FZ_CHECK(srv_jobs_init(&cfg) == 0, "the daemon did not start (database %s)", cfg.db_path);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);

    struct MHD_Daemon *d = srv_http_start(&cfg, &port);
    FZ_CHECK(d != NULL && port > 0, "the daemon does not listen");
    srv_jobs_set_mhd(d);
    pthread_t t;
    FZ_CHECK(pthread_create(&t, NULL, loop_main, NULL) == 0, "no loop thread");
    pthread_detach(t);
}

/* ---- one connection ----------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct xfer {
    char *buf;       /* the answers as read (first OUT_MAX bytes) */
    size_t len, cap;
    int eof;         /* the daemon closed the connection cleanly */
    int reset;       /* ... or reset it */
    int capped;      /* more than OUT_MAX bytes came */
    int slow;        /* still moving after TOTAL_MS: reading stopped */
};

static void keep(struct xfer *x, const char *p, size_t n)
{
    if (x->len + n > OUT_MAX) {
        x->capped = 1;
        n = OUT_MAX - x->len;
    }
    if (x->len + n + 1 > x->cap) {
        size_t c = x->cap ? x->cap : 16384;
        while (c < x->len + n + 1) c *= 2;
        char *b = realloc(x->buf, c);
        FZ_CHECK(b != NULL, "out of memory");
        x->buf = b;
        x->cap = c;
    }
    memcpy(x->buf + x->len, p, n);
    x->len += n;
    x->buf[x->len] = '\0';
}

/* Send req on a fresh connection and read the answers into x. Writing and
 * reading interleave (the socket is non-blocking): a long pipelined input
 * whose answers fill the socket buffers would otherwise deadlock with a
 * daemon that stops reading until its answers are read.
 *
 * The write side is shut down (so the daemon sees the input end) once the
 * first answer byte came, or FIN_DELAY_MS after the last byte went. Not at
 * once: when the request and the FIN reach libmicrohttpd 0.9.75 (epoll,
 * edge-triggered) in one wake-up, it reads the bytes, does not read again
 * to see the end of the stream, and after answering waits for the next
 * request until the connection timeout (seen: 2 of 5 GET /healthz closed
 * after --conn-timeout, not at once). A FIN arriving after the read is a
 * wake-up of its own. */
#define FIN_DELAY_MS 20.0
static void exchange(const char *req, size_t n, struct xfer *x, const char *what)
{
    memset(x, 0, sizeof *x);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FZ_CHECK(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int crc = connect(fd, (struct sockaddr *)&a, sizeof a);
    if (crc != 0 && errno == EINTR) {
        /* libFuzzer's timeout timer (SIGALRM, every few seconds) interrupts
         * it; the connection goes on in the background: wait for it and
         * take its outcome (connect(2), EINTR). Not a finding (one was
         * reported so before this). */
        struct pollfd pw = {.fd = fd, .events = POLLOUT};
        int pr;
        do pr = poll(&pw, 1, 5000);
        while (pr < 0 && errno == EINTR);
        int err = 0;
        socklen_t el = sizeof err;
        if (pr == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0) crc = 0;
        else errno = pr == 1 ? err : ETIMEDOUT;
    }
    FZ_CHECK(crc == 0, "%s: connect: %s", what, strerror(errno));
    FZ_CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0, "fcntl");
    size_t off = 0;
    int writing = n > 0, shut = 0;
    double t0 = now_ms(), last = t0, written_at = t0;
    static char tmp[65536];
    for (;;) {
        if (!writing && !shut && (x->len > 0 || now_ms() - written_at >= FIN_DELAY_MS)) {
            shutdown(fd, SHUT_WR);
            shut = 1;
        }
        struct pollfd p = {fd, (short)(POLLIN | (writing ? POLLOUT : 0)), 0};
        int rc = poll(&p, 1, shut ? 100 : 5);
        if (rc < 0 && errno == EINTR) continue;
        FZ_CHECK(rc >= 0, "poll: %s", strerror(errno));
        double t = now_ms();
        if (writing && (p.revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t k = send(fd, req + off, n - off, MSG_NOSIGNAL);
            if (k > 0) {
                off += (size_t)k;
                last = written_at = t;
            } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                writing = 0; /* the daemon closed (EPIPE, ECONNRESET): read what it said */
            }
            if (off == n) writing = 0;
        }
        if (p.revents & (POLLIN | POLLERR | POLLHUP)) {
            ssize_t k = recv(fd, tmp, sizeof tmp, 0);
            if (k > 0) {
                keep(x, tmp, (size_t)k);
                last = t;
            } else if (k == 0) {
                x->eof = 1;
                break;
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                x->reset = 1;
                break;
            }
        }
        FZ_CHECK(t - last < IDLE_MS,
                 "%s: the exchange stalled: nothing moved for %.0f ms (%zu of %zu bytes sent, "
                 "%zu bytes of answers read)",
                 what, IDLE_MS, off, n, x->len);
        if (t - t0 > TOTAL_MS) {
            x->slow = 1;
            break;
        }
    }
    close(fd);
}

/* ---- checking the answers ------------------------------------------------ */

static const char *find(const char *p, const char *end, const char *s)
{
    size_t n = strlen(s);
    for (; p + n <= end; p++)
        if (memcmp(p, s, n) == 0) return p;
    return NULL;
}

static int is_status_line(const char *p, const char *end)
{
    return end - p >= 13 && memcmp(p, "HTTP/1.1 ", 9) == 0 && p[9] >= '1' && p[9] <= '5' &&
           p[10] >= '0' && p[10] <= '9' && p[11] >= '0' && p[11] <= '9' &&
           (p[12] == ' ' || p[12] == '\r');
}

/* The value of header name in the block [h, end) (lines "Name: value\r\n"),
 * copied to out; the number of times it occurs. */
static int header(const char *h, const char *end, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    int count = 0;
    out[0] = '\0';
    while (h < end) {
        const char *eol = find(h, end, "\r\n");
        if (!eol) eol = end;
        if ((size_t)(eol - h) > nl && h[nl] == ':' && strncasecmp(h, name, nl) == 0) {
            const char *v = h + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t')) v++;
            size_t vl = (size_t)(eol - v);
            if (vl >= outlen) vl = outlen - 1;
            memcpy(out, v, vl);
            out[vl] = '\0';
            count++;
        }
        h = eol + 2;
    }
    return count;
}

static void check_body(int status, const char *ctype, const char *body, size_t len)
{
    int problem = strncasecmp(ctype, "application/problem+json", 24) == 0;
    int plain_json = strncasecmp(ctype, "application/json", 16) == 0;
    if (!problem && !plain_json) return;
    json_error_t err;
    json_t *j = json_loadb(body, len, 0, &err);
    FZ_CHECK(j != NULL, "a %d answer of type %s is not JSON: %s: %.200s", status, ctype, err.text,
             body);
    if (problem) {
        json_t *st = json_object_get(j, "status");
        FZ_CHECK(json_is_object(j) && json_is_string(json_object_get(j, "type")) &&
                     json_is_string(json_object_get(j, "title")) && json_is_integer(st),
                 "a %d problem without type, title or status: %.200s", status, body);
        FZ_CHECK(json_integer_value(st) == status, "a %d answer says status %lld: %.200s", status,
                 (long long)json_integer_value(st), body);
    }
    json_decref(j);
}

/* Walk the answers in x; returns how many there were. */
static int check_answers(const struct xfer *x, const char *what)
{
    const char *p = x->buf ? x->buf : "", *end = p + x->len;
    /* the stream may end inside an answer only when it was cut short on
     * this side (capped, slow) or the daemon reset the connection */
    int cut_ok = x->reset || x->capped || x->slow;
    int n = 0;
    while (p < end) {
        if (end - p < 13) {
            FZ_CHECK(cut_ok && memcmp(p, "HTTP/1.1 ", (size_t)(end - p) < 9 ? (size_t)(end - p) : 9) == 0,
                     "%s: answer %d: the stream ends in a status line: %.*s", what, n + 1,
                     (int)(end - p), p);
            break;
        }
        FZ_CHECK(is_status_line(p, end), "%s: answer %d does not start with a status line: %.40s",
                 what, n + 1, p);
        int status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
        FZ_CHECK(status != 500, "%s: answer %d is a 500: %.600s", what, n + 1, p);
        FZ_CHECK(status < 500 || status == 501 || status == 503 || status == 505,
                 "%s: answer %d is a %d: %.600s", what, n + 1, status, p);
        const char *hend = find(p, end, "\r\n\r\n");
        if (!hend) {
            FZ_CHECK(cut_ok, "%s: answer %d (%d) ends inside its headers", what, n + 1, status);
            break;
        }
        const char *h = find(p, hend + 2, "\r\n") + 2, *body = hend + 4;
        n++;
        char cl[64], te[64], ctype[128];
        int n_cl = header(h, hend, "Content-Length", cl, sizeof cl);
        int n_te = header(h, hend, "Transfer-Encoding", te, sizeof te);
        header(h, hend, "Content-Type", ctype, sizeof ctype);
        FZ_CHECK(n_cl <= 1 && !(n_cl && n_te), "%s: answer %d (%d): %d Content-Length, %d Transfer-Encoding",
                 what, n, status, n_cl, n_te);
        if (status < 200 || status == 204 || status == 304) { /* no body */
            p = body;
            continue;
        }
        if (n_te) {
            /* chunked (libmicrohttpd's answers of unknown length; the
             * daemon's are all of known length): step over the chunks */
            for (;;) {
                const char *eol = find(body, end, "\r\n");
                if (!eol) { FZ_CHECK(cut_ok, "%s: answer %d: chunked body cut", what, n); return n; }
                unsigned long long k = strtoull(body, NULL, 16);
                body = eol + 2;
                if (k == 0) {
                    const char *tend = find(body - 2, end, "\r\n\r\n");
                    if (!tend) { FZ_CHECK(cut_ok, "%s: answer %d: chunked trailer cut", what, n); return n; }
                    body = tend + 4;
                    break;
                }
                if ((unsigned long long)(end - body) < k + 2) {
                    FZ_CHECK(cut_ok, "%s: answer %d: chunk cut", what, n);
                    return n;
                }
                body += k + 2;
            }
            p = body;
            continue;
        }
        if (!n_cl) { /* the body runs to the end of the stream */
            if (!cut_ok) check_body(status, ctype, body, (size_t)(end - body));
            break;
        }
        char *cend;
        unsigned long long len = strtoull(cl, &cend, 10);
        FZ_CHECK(cend != cl && *cend == '\0', "%s: answer %d: Content-Length '%s'", what, n, cl);
        /* An answer to HEAD has the Content-Length of the GET but no body;
         * which request an answer is for is not tracked, so an answer
         * followed at once by the next status line (or by the end of the
         * stream) is taken as one: no body of the daemon starts "HTTP/1.1". */
        if (len > 0 && (body == end || is_status_line(body, end))) {
            p = body;
            continue;
        }
        if ((unsigned long long)(end - body) < len) {
            FZ_CHECK(cut_ok, "%s: answer %d (%d): %zu of %llu body bytes, then the connection closed",
                     what, n, status, (size_t)(end - body), len);
            break;
        }
        check_body(status, ctype, body, (size_t)len);
        p = body + len;
    }
    return n;
}

/* Does the input start with a request the daemon must answer: a plainly
 * well-formed request line and header block, complete, without a body or
 * anything that changes the framing (Content-Length, Transfer-Encoding,
 * Expect, Upgrade)? Its answer may be any status (400 for a missing Host,
 * 404, 405, ...), but it cannot be silence. */
static int is_tchar(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int plain_request(const uint8_t *d, size_t n)
{
    const char *p = (const char *)d, *end = p + n;
    const char *hend = find(p, end, "\r\n\r\n");
    if (!hend || hend - p > 8192) return 0;
    /* METHOD SP /target SP HTTP/1.x CRLF */
    const char *q = p;
    while (q < hend && *q >= 'A' && *q <= 'Z') q++;
    if (q == p || q - p > 16 || *q != ' ') return 0;
    q++;
    if (*q != '/') return 0;
    const char *t = q;
    while (q < hend && *q > 0x20 && *q < 0x7f) q++;
    if (q - t > 1024 || *q != ' ') return 0;
    q++;
    if (hend - q < 8 || (memcmp(q, "HTTP/1.1", 8) && memcmp(q, "HTTP/1.0", 8))) return 0;
    q += 8;
    if (q == hend) return 1; /* no headers */
    if (q[0] != '\r' || q[1] != '\n') return 0;
    q += 2;
    int lines = 0;
    /* Name: value CRLF ... up to the blank line */
    while (q < hend + 2) {
        const char *eol = find(q, hend + 2, "\r\n");
        if (!eol || ++lines > 32 || eol - q > 1024) return 0;
        const char *c = q;
        while (c < eol && is_tchar((unsigned char)*c)) c++;
        if (c == q || c == eol || *c != ':') return 0;
        size_t nl = (size_t)(c - q);
        static const char *const framing[] = {"Content-Length", "Transfer-Encoding", "Expect", "Upgrade"};
        for (size_t i = 0; i < sizeof framing / sizeof framing[0]; i++)
            if (nl == strlen(framing[i]) && strncasecmp(q, framing[i], nl) == 0) return 0;
        for (c++; c < eol; c++)
            if ((*c < 0x20 || *c > 0x7e) && *c != '\t') return 0;
        q = eol + 2;
    }
    return 1;
}

/* FUZZ_HTTP_VERBOSE=1: each input's statuses on stderr (reproducing a
 * finding, checking what the seeds reach). */
static int verbose = -1;

static void print_statuses(const struct xfer *x, int n)
{
    fprintf(stderr, "fuzz_http: %d answers (%zu bytes%s%s%s):", n, x->len, x->eof ? ", closed" : "",
            x->reset ? ", reset" : "", x->slow ? ", slow" : "");
    const char *end = x->buf ? x->buf + x->len : NULL;
    for (const char *p = x->buf; p && (p = find(p, end, "HTTP/1.1 ")); p += 9)
        if (is_status_line(p, end)) fprintf(stderr, " %.3s", p + 9);
    fputc('\n', stderr);
}

/* ---- liveness ---------------------------------------------------------- */

static void expect_200(const char *req, const char *what)
{
    struct xfer x;
    exchange(req, strlen(req), &x, what);
    FZ_CHECK(x.eof && x.len >= 13 && is_status_line(x.buf, x.buf + x.len) &&
                 memcmp(x.buf + 9, "200", 3) == 0,
             "%s: the daemon does not answer 200: %.300s", what, x.buf ? x.buf : "(nothing)");
    check_answers(&x, what);
    free(x.buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!port) start_daemon();
    if (verbose < 0) verbose = getenv("FUZZ_HTTP_VERBOSE") && *getenv("FUZZ_HTTP_VERBOSE") == '1';
    FZ_CHECK(!atomic_load(&loop_returned), "the daemon's loop returned");
    if (size > IN_MAX) size = IN_MAX;

    struct xfer x;
    exchange((const char *)data, size, &x, "input");
    int n = check_answers(&x, "input");
    if (verbose) print_statuses(&x, n);
    FZ_CHECK(n > 0 || !plain_request(data, size),
             "a complete request got no answer (%s, %zu bytes read)",
             x.reset ? "connection reset" : "connection closed", x.len);
    free(x.buf);

    expect_200("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET /healthz");
    if (n_inputs++ % LOOP_EVERY == 0)
        expect_200("GET /results?limit=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                   "GET /results?limit=1");
    return 0;
}
