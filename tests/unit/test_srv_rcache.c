/* server/: the in-memory cache of finished results (server/rcache.c) and
 * the documents a result is served as (server/views.c), at C level (issue
 * 15 item 5): the done document, slices by rank through the per-result
 * index, the CSV slice, references outliving removal, the byte budget's
 * LRU eviction, and the access records the loop drains. The expected
 * documents are written out here. */
#include "check.h"
#include "srv.h"

#include <stdlib.h>
#include <string.h>

/* A result with three configurations, as the engine writes them (only the
 * fields the views read matter). */
static const char *RESULT =
    "{\"model\":{\"name\":\"m\"},\"configs\":[{\"rank\":1,\"x\":[1,{\"y\":\"]\"}]},"
    "{\"rank\":2,\"x\":\"a,b\"},{\"rank\":3}],\"search\":{\"evaluated\":7}}";

static void view_of(struct srv_view *v, const char *id, int64_t created, int64_t finished)
{
    memset(v, 0, sizeof *v);
    snprintf(v->id, sizeof v->id, "%s", id);
    v->status = "done";
    v->progress = 1.0;
    v->evaluated = 7;
    v->created_ms = created;
    v->started_ms = created;
    v->finished_ms = finished;
}

/* ids are 64 hex digits (the cache compares all 65 bytes) */
#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define ID_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static int n_touched;
static void touched(void *ctx, const char *id, int64_t hits, int64_t ms)
{
    (void)ctx;
    (void)ms;
    if (!strcmp(id, ID_A) && hits == 2) n_touched++;
}

static void t_done_document(void)
{
    /* ---- views: the done document is the status head with the result
     * spliced in: {"id":"a","status":"done","progress":1.0,"evaluated":7,
     * "created_at":..,"started_at":..,"finished_at":..,"result":RESULT} */
    struct srv_view v;
    view_of(&v, "a", 1000, 2500);
    size_t len = 0, off = 0;
    char *doc = srv_render_done_doc(&v, RESULT, &len, &off);
    CHECK(doc != NULL);
    if (!doc) return;
    CHECK_EQ_I(len, strlen(doc));
    CHECK(!strncmp(doc + off, RESULT, strlen(RESULT)) && !strcmp(doc + off + strlen(RESULT), "}"));
    CHECK(strstr(doc, "\"created_at\":\"1970-01-01T00:00:01.000Z\"") != NULL);
    CHECK(strstr(doc, "\"finished_at\":\"1970-01-01T00:00:02.500Z\"") != NULL);
    json_t *j = json_loads(doc, 0, NULL);
    CHECK(j && json_integer_value(json_object_get(json_object_get(json_object_get(j, "result"), "search"),
                                                  "evaluated")) == 7);
    json_decref(j);
    free(doc);
}

static void t_configs_index(void)
{
    /* the index: where each of the 3 configurations starts and ends, past
     * a "]" inside a string and a nested array */
    size_t *ix = srv_configs_index(RESULT, strlen(RESULT));
    CHECK(ix != NULL);
    /* ranks 2..3 (offset 1, top 2), and rank 2 alone (offset 1, top 1) */
    char *s23 = srv_result_slice(RESULT, strlen(RESULT), ix, 2, 1);
    char *s2 = srv_result_slice(RESULT, strlen(RESULT), ix, 1, 1);
    CHECK(s23 && strstr(s23, "\"configs\":[{\"rank\":2,\"x\":\"a,b\"},{\"rank\":3}]") != NULL);
    CHECK(s2 && strstr(s2, "\"configs\":[{\"rank\":2,\"x\":\"a,b\"}]") != NULL);
    /* the same without an index (the re-parse fallback) gives the same ranks */
    char *p2 = srv_result_slice(RESULT, strlen(RESULT), NULL, 1, 1);
    json_t *a2 = s2 ? json_loads(s2, 0, NULL) : NULL, *b2 = p2 ? json_loads(p2, 0, NULL) : NULL;
    CHECK(a2 && b2 && json_equal(json_object_get(a2, "configs"), json_object_get(b2, "configs")));
    json_decref(a2);
    json_decref(b2);
    free(s23);
    free(s2);
    free(p2);
    free(ix);
}

static void t_csv_slice(void)
{
    /* CSV rows: header + rows [offset, offset + top_k) */
    char csv[] = "h1,h2\n1,a\n2,b\n3,c\n";
    srv_csv_slice(csv, 1, 1);
    CHECK_STR(csv, "h1,h2\n2,b\n");
}

static void t_cache(void)
{
    /* ---- the cache: one entry of a result costs its document + its
     * bookkeeping (~1.4 KB here); a budget of 4 KB holds two */
    srv_rcache_init(4096);
    struct srv_view va, vb, vc;
    view_of(&va, ID_A, 1000, 2000);
    view_of(&vb, ID_B, 1000, 2000);
    view_of(&vc, ID_C, 1000, 2000);
    struct srv_rentry *ea = srv_rcache_put(&va, RESULT);
    CHECK(ea != NULL);
    size_t n = 0, rl = 0, bytes = 0;
    const char *res = ea ? srv_rentry_result(ea, &rl) : NULL;
    CHECK(res && rl == strlen(RESULT) && !strncmp(res, RESULT, rl));
    srv_rcache_stats(&n, &bytes);
    CHECK_EQ_I(n, 1);
    CHECK(bytes > strlen(RESULT) && bytes < 4096);
    /* a hit: a new reference, an access recorded for the loop */
    struct srv_rentry *g = srv_rcache_get(ID_A, 1);
    CHECK(g == ea);
    srv_rcache_unref(g);
    g = srv_rcache_get(ID_A, 1);
    srv_rcache_unref(g);
    n_touched = 0;
    CHECK(srv_rcache_drain_touches(touched, NULL) >= 1);
    CHECK_EQ_I(n_touched, 1); /* a: 2 hits */
    /* removal: gone from the cache, the caller's reference still good */
    srv_rcache_remove(ID_A);
    CHECK(srv_rcache_get(ID_A, 0) == NULL);
    res = srv_rentry_result(ea, &rl);
    CHECK(res && !strncmp(res, RESULT, rl));
    srv_rcache_unref(ea);
    /* the budget: a, b, c put in turn (each touched once after its put),
     * two fit -- the least recently used one, a, goes */
    ea = srv_rcache_put(&va, RESULT);
    struct srv_rentry *eb = srv_rcache_put(&vb, RESULT);
    struct srv_rentry *ec = srv_rcache_put(&vc, RESULT);
    srv_rcache_stats(&n, &bytes);
    CHECK_EQ_I(n, 2);
    CHECK(bytes <= 4096);
    g = srv_rcache_get(ID_A, 0);
    CHECK(g == NULL);
    srv_rcache_unref(g);
    g = srv_rcache_get(ID_B, 0);
    CHECK(g == eb);
    srv_rcache_unref(g);
    g = srv_rcache_get(ID_C, 0);
    CHECK(g == ec);
    srv_rcache_unref(g);
    srv_rcache_unref(ea);
    srv_rcache_unref(eb);
    srv_rcache_unref(ec);
    srv_rcache_clear();
    srv_rcache_stats(&n, &bytes);
    CHECK(n == 0 && bytes == 0);
}

static const check_case cases[] = {
    CHECK_CASE(t_done_document),
    CHECK_CASE(t_configs_index),
    CHECK_CASE(t_csv_slice),
    CHECK_CASE(t_cache),
};

int main(int argc, char **argv)
{
    return check_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
