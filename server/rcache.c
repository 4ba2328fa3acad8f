/* server/rcache.c -- the in-memory cache of finished results, read by the
 * HTTP threads without a hop to the loop.
 *
 * WHY
 * A cached GET /results/{id} used to suspend the connection, wake the loop,
 * read the ~40 KB row from SQLite, copy it twice and render the status
 * document again on every request: thread switches, page faults on fresh
 * 40 KB buffers and memmove dominated the profile. Finished results never
 * change (same id = same request = same answer, bit for bit), so each one is
 * rendered once into the full status document and kept here, with a
 * prebuilt libmicrohttpd response that every connection queues as is.
 *
 * OWNERSHIP AND LIFETIME (RCU-like reference counts)
 * An entry is reference counted (atomic). References are held by:
 *  - the cache itself, while the entry is in the table;
 *  - each of the entry's prebuilt MHD responses (200 and 304): their free
 *    callback drops the reference, and libmicrohttpd calls it only when the
 *    last connection that queued the response has finished sending it;
 *  - each caller of srv_rcache_get/put until srv_rcache_unref.
 * Removing an entry (eviction, srv_rcache_remove) unlinks it under the lock,
 * then drops the cache's reference and the entry's own hold on its
 * responses (MHD_destroy_response); the body is freed when the last
 * reference goes, so a connection still sending it is never affected.
 * An entry reference does not keep the responses alive: connections queue
 * them under resp_lock (read), and the entry lets go of them under
 * resp_lock (write), so libmicrohttpd has taken its own reference first.
 * Entries are immutable after creation except the lazily rendered CSV
 * (set once under the lock), the access bookkeeping (under the lock) and
 * the response pointers (cleared once, under resp_lock).
 *
 * ACCESSES
 * Hit counts and last-access times (the database's LRU order) are recorded
 * here under the lock and drained by the loop once a second
 * (srv_rcache_drain_touches), which writes them to SQLite in one
 * transaction, as it does for its own accesses.
 *
 * The table is bounded by bytes (--mem-cache); least recently used entries
 * go first. It is a subset of the database's done rows: the loop inserts
 * only rows it has read or written as done, and the database's own eviction
 * removes them here too (db eviction hook).
 */
#include "srv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RC_BUCKETS 4096
#define RC_MAX_TOUCH 4096

struct srv_rentry {
    char id[65];
    atomic_int refs;
    char *body;                   /* the full status document (JSON) */
    size_t len;
    const char *result;           /* inside body: the result object's text */
    size_t result_len;
    struct MHD_Response *resp200; /* shared; Content-Type, CORS, ETag, Cache-Control */
    struct MHD_Response *resp304;
    char *csv;                    /* lazily rendered, under the lock */
    size_t csv_len;
    size_t *index;                /* where result.configs[i] lie, lazily built */
    size_t cost;                  /* bytes charged to the budget */
    int touch_slot;               /* index in pend[], or -1 */
    int in_table;
    struct srv_rentry *hnext;     /* hash chain */
    struct srv_rentry *prev, *next; /* LRU list: head = most recent */
};

static struct {
    pthread_mutex_t lock;
    /* Queueing a prebuilt response (readers) vs. dropping the entry's hold
     * on it (writer): an entry reference keeps the entry alive, not its
     * responses, so a connection may only queue one while the entry still
     * holds it. MHD_queue_response takes libmicrohttpd's own reference. */
    pthread_rwlock_t resp_lock;
    size_t max_bytes, bytes;
    size_t n;
    struct srv_rentry *buckets[RC_BUCKETS];
    struct srv_rentry *head, *tail;
    struct {
        struct srv_rentry *e;
        char id[65];
        int64_t hits, accessed_ms;
    } pend[RC_MAX_TOUCH];
    size_t n_pend;
} rc = {.lock = PTHREAD_MUTEX_INITIALIZER, .resp_lock = PTHREAD_RWLOCK_INITIALIZER};

static unsigned bucket_of(const char *id)
{
    unsigned h = 2166136261u;
    for (int i = 0; i < 16 && id[i]; i++) h = (h ^ (unsigned char)id[i]) * 16777619u;
    return h % RC_BUCKETS;
}

void srv_rcache_init(size_t max_bytes)
{
    rc.max_bytes = max_bytes;
}

static void entry_free(struct srv_rentry *e)
{
    free(e->body);
    free(e->csv);
    free(e->index);
    free(e);
}

void srv_rcache_unref(struct srv_rentry *e)
{
    if (e && atomic_fetch_sub(&e->refs, 1) == 1) entry_free(e);
}

struct srv_rentry *srv_rcache_ref(struct srv_rentry *e)
{
    if (e) atomic_fetch_add(&e->refs, 1);
    return e;
}

/* libmicrohttpd: the last connection using a prebuilt response is done. */
static void resp_free_cb(void *cls)
{
    srv_rcache_unref(cls);
}

/* ---- the table (lock held) ---------------------------------------------- */

static struct srv_rentry *find_locked(const char *id)
{
    for (struct srv_rentry *e = rc.buckets[bucket_of(id)]; e; e = e->hnext)
        if (memcmp(e->id, id, 65) == 0) return e;
    return NULL;
}

static void lru_unlink(struct srv_rentry *e)
{
    if (e->prev) e->prev->next = e->next;
    else rc.head = e->next;
    if (e->next) e->next->prev = e->prev;
    else rc.tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push_front(struct srv_rentry *e)
{
    e->prev = NULL;
    e->next = rc.head;
    if (rc.head) rc.head->prev = e;
    rc.head = e;
    if (!rc.tail) rc.tail = e;
}

/* Unlink from the table; returns the entry for release_removed(). */
static struct srv_rentry *unlink_locked(struct srv_rentry *e)
{
    struct srv_rentry **pp = &rc.buckets[bucket_of(e->id)];
    while (*pp && *pp != e) pp = &(*pp)->hnext;
    if (*pp) *pp = e->hnext;
    e->hnext = NULL;
    lru_unlink(e);
    if (e->touch_slot >= 0) rc.pend[e->touch_slot].e = NULL; /* keep the pending touch */
    e->touch_slot = -1;
    e->in_table = 0;
    rc.bytes -= e->cost;
    rc.n--;
    return e;
}

/* Drop an entry's shared responses. Each holds one reference, dropped by
 * its free callback when libmicrohttpd frees it (possibly right here). */
static void drop_responses(struct srv_rentry *e)
{
    pthread_rwlock_wrlock(&rc.resp_lock);
    struct MHD_Response *a = e->resp200, *b = e->resp304;
    e->resp200 = e->resp304 = NULL;
    pthread_rwlock_unlock(&rc.resp_lock);
    if (a) MHD_destroy_response(a);
    if (b) MHD_destroy_response(b);
}

/* Outside the lock: drop the cache's reference and the responses. */
static void release_removed(struct srv_rentry *e)
{
    drop_responses(e);
    srv_rcache_unref(e);
}

static void record_access_locked(struct srv_rentry *e, int hit, int64_t now)
{
    if (e->touch_slot >= 0) {
        rc.pend[e->touch_slot].hits += hit;
        rc.pend[e->touch_slot].accessed_ms = now;
        return;
    }
    if (rc.n_pend == RC_MAX_TOUCH) return; /* drained every second; a burst may lose counts */
    size_t i = rc.n_pend++;
    rc.pend[i].e = e;
    memcpy(rc.pend[i].id, e->id, 65);
    rc.pend[i].hits = hit;
    rc.pend[i].accessed_ms = now;
    e->touch_slot = (int)i;
}

/* ---- public ------------------------------------------------------------- */

void srv_rcache_note_access(const char *id, int hit)
{
    int64_t now = srv_now_ms();
    pthread_mutex_lock(&rc.lock);
    if (rc.n_pend < RC_MAX_TOUCH) { /* drained every second; a burst may lose counts */
        size_t i = rc.n_pend++;
        rc.pend[i].e = NULL;
        memcpy(rc.pend[i].id, id, 65);
        rc.pend[i].hits = hit;
        rc.pend[i].accessed_ms = now;
    }
    pthread_mutex_unlock(&rc.lock);
}

struct srv_rentry *srv_rcache_get(const char *id, int hit)
{
    if (rc.max_bytes == 0) return NULL;
    int64_t now = srv_now_ms();
    pthread_mutex_lock(&rc.lock);
    struct srv_rentry *e = find_locked(id);
    if (e) {
        if (rc.head != e) {
            lru_unlink(e);
            lru_push_front(e);
        }
        record_access_locked(e, hit, now);
        atomic_fetch_add(&e->refs, 1);
    }
    pthread_mutex_unlock(&rc.lock);
    return e;
}

/* set once before serving (srv_http_start), read after */
static char cors_origin[256];

void srv_rcache_set_cors(const char *origin)
{
    snprintf(cors_origin, sizeof cors_origin, "%s", origin ? origin : "");
}

/* CORS only when asked for (--cors-origin): with "*" any web page a
 * browser shows could drive a local mfud (issue 14 item 11). Every
 * response of the daemon gets its CORS headers here. */
void srv_add_cors(struct MHD_Response *resp)
{
    if (!cors_origin[0]) return;
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", cors_origin);
    MHD_add_response_header(resp, "Access-Control-Expose-Headers", SRV_EXPOSE_HEADERS);
    if (strcmp(cors_origin, "*")) MHD_add_response_header(resp, "Vary", "Origin");
}

static void add_common(struct MHD_Response *resp, const char *etag, const char *cache_control)
{
    srv_add_cors(resp);
    MHD_add_response_header(resp, "ETag", etag);
    MHD_add_response_header(resp, "Cache-Control", cache_control);
}


struct srv_rentry *srv_rcache_put(const struct srv_view *v, const char *result)
{
    if (!result) return NULL;
    size_t result_off = 0;
    size_t len = 0;
    char *body = srv_render_done_doc(v, result, &len, &result_off);
    if (!body) return NULL;
    struct srv_rentry *e = calloc(1, sizeof *e);
    if (!e) {
        free(body);
        return NULL;
    }
    memcpy(e->id, v->id, 65);
    e->body = body;
    e->len = len;
    e->result = body + result_off;
    e->result_len = strlen(result);
    e->touch_slot = -1;
    e->cost = len + sizeof *e + 1024; /* headers, responses */
    /* References: the caller's, plus one per response (below), plus the
     * cache's when inserted. */
    atomic_init(&e->refs, 1);
    char etag[80];
    snprintf(etag, sizeof etag, "\"%s\"", e->id);
    e->resp200 = MHD_create_response_from_buffer_with_free_callback_cls(len, body, resp_free_cb, e);
    if (e->resp200) {
        atomic_fetch_add(&e->refs, 1);
        MHD_add_response_header(e->resp200, "Content-Type", "application/json");
        add_common(e->resp200, etag, SRV_CACHE_IMMUTABLE);
    }
    e->resp304 = MHD_create_response_from_buffer_with_free_callback_cls(0, body, resp_free_cb, e);
    if (e->resp304) {
        atomic_fetch_add(&e->refs, 1);
        add_common(e->resp304, etag, SRV_CACHE_IMMUTABLE);
    }
    if (!e->resp200 || !e->resp304 || rc.max_bytes == 0 || e->cost > rc.max_bytes) {
        /* Not cached: the caller still gets a usable entry. */
        drop_responses(e);
        return e;
    }
    struct srv_rentry *old_list[64];
    size_t n_old = 0;
    pthread_mutex_lock(&rc.lock);
    struct srv_rentry *old = find_locked(e->id);
    if (old) old_list[n_old++] = unlink_locked(old);
    while (rc.bytes + e->cost > rc.max_bytes && rc.tail && n_old < 64)
        old_list[n_old++] = unlink_locked(rc.tail);
    if (rc.bytes + e->cost > rc.max_bytes) {
        pthread_mutex_unlock(&rc.lock);
        for (size_t i = 0; i < n_old; i++) release_removed(old_list[i]);
        drop_responses(e);
        return e;
    }
    unsigned b = bucket_of(e->id);
    e->hnext = rc.buckets[b];
    rc.buckets[b] = e;
    lru_push_front(e);
    e->in_table = 1;
    rc.bytes += e->cost;
    rc.n++;
    atomic_fetch_add(&e->refs, 1); /* the cache's */
    pthread_mutex_unlock(&rc.lock);
    for (size_t i = 0; i < n_old; i++) release_removed(old_list[i]);
    return e;
}

void srv_rcache_remove(const char *id)
{
    pthread_mutex_lock(&rc.lock);
    struct srv_rentry *e = find_locked(id);
    if (e) unlink_locked(e);
    pthread_mutex_unlock(&rc.lock);
    if (e) release_removed(e);
}

void srv_rcache_clear(void)
{
    for (;;) {
        pthread_mutex_lock(&rc.lock);
        struct srv_rentry *e = rc.tail ? unlink_locked(rc.tail) : NULL;
        pthread_mutex_unlock(&rc.lock);
        if (!e) break;
        release_removed(e);
    }
}

size_t srv_rcache_drain_touches(void (*cb)(void *ctx, const char *id, int64_t hits,
                                           int64_t accessed_ms),
                                void *ctx)
{
    static struct {
        char id[65];
        int64_t hits, ms;
    } out[RC_MAX_TOUCH];
    pthread_mutex_lock(&rc.lock);
    size_t n = rc.n_pend;
    for (size_t i = 0; i < n; i++) {
        memcpy(out[i].id, rc.pend[i].id, 65);
        out[i].hits = rc.pend[i].hits;
        out[i].ms = rc.pend[i].accessed_ms;
        if (rc.pend[i].e) rc.pend[i].e->touch_slot = -1;
    }
    rc.n_pend = 0;
    pthread_mutex_unlock(&rc.lock);
    /* Only the loop thread drains, so the static buffer is not shared. */
    for (size_t i = 0; i < n; i++) cb(ctx, out[i].id, out[i].hits, out[i].ms);
    return n;
}

void srv_rcache_stats(size_t *entries, size_t *bytes)
{
    pthread_mutex_lock(&rc.lock);
    *entries = rc.n;
    *bytes = rc.bytes;
    pthread_mutex_unlock(&rc.lock);
}

/* ---- reading an entry ------------------------------------------------------ */

int srv_rentry_queue(struct srv_rentry *e, struct MHD_Connection *c, int not_modified,
                     enum MHD_Result *ret)
{
    pthread_rwlock_rdlock(&rc.resp_lock);
    struct MHD_Response *resp = not_modified ? e->resp304 : e->resp200;
    if (resp) *ret = MHD_queue_response(c, not_modified ? 304u : 200u, resp);
    pthread_rwlock_unlock(&rc.resp_lock);
    return resp ? 0 : -1;
}

const char *srv_rentry_result(const struct srv_rentry *e, size_t *len)
{
    if (len) *len = e->result_len;
    return e->result;
}

const char *srv_rentry_body(const struct srv_rentry *e, size_t *len)
{
    if (len) *len = e->len;
    return e->body;
}

const char *srv_rentry_csv(struct srv_rentry *e, size_t *len,
                           char *(*render)(const char *result, size_t result_len))
{
    pthread_mutex_lock(&rc.lock);
    char *csv = e->csv;
    pthread_mutex_unlock(&rc.lock);
    if (!csv) {
        char *mine = render(e->result, e->result_len);
        if (!mine) return NULL;
        pthread_mutex_lock(&rc.lock);
        if (!e->csv) {
            e->csv = mine;
            e->csv_len = strlen(mine);
            mine = NULL;
        }
        csv = e->csv;
        pthread_mutex_unlock(&rc.lock);
        free(mine);
    }
    if (len) *len = e->csv_len;
    return csv;
}

const size_t *srv_rentry_index(struct srv_rentry *e, size_t *(*build)(const char *result, size_t result_len))
{
    pthread_mutex_lock(&rc.lock);
    size_t *ix = e->index;
    pthread_mutex_unlock(&rc.lock);
    if (!ix) {
        size_t *mine = build(e->result, e->result_len);
        if (!mine) return NULL;
        pthread_mutex_lock(&rc.lock);
        if (!e->index) {
            e->index = mine;
            mine = NULL;
        }
        ix = e->index;
        pthread_mutex_unlock(&rc.lock);
        free(mine);
    }
    return ix;
}
