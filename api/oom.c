/* api/oom.c -- the api's out-of-memory policy (issue 15, item 3).
 *
 * An answer built while an allocation failed is not trusted: a jansson call
 * that returned NULL may have left an object short of a field, or turned a
 * valid request into a "required field missing" complaint. So every
 * allocation failure on the thread is counted (jansson's through
 * json_set_alloc_funcs, the api's own through api_oom_note), and an entry
 * point (api_normalize, api_roofline, api_search, api_compare, api_trace_*...) that saw
 * one during its run answers 503 "out of memory; try again" whatever it
 * concluded, dropping its partial result. An entry point that returns no
 * answer and no problem gets a 500, so nothing fails silently.
 * tests/unit/test_oom.c fails each allocation of the request path in turn
 * against this. */
#include <stdlib.h>
#include <string.h>

#include "api.h"

static _Thread_local unsigned long oom_events; /* allocation failures on this thread */

static void *counted_malloc(size_t n)
{
    void *p = malloc(n);
    if (!p) oom_events++;
    return p;
}

void api_alloc_init(void) { json_set_alloc_funcs(counted_malloc, free); }

void api_oom_note(void) { oom_events++; }

unsigned long api_oom_events(void) { return oom_events; }

json_t *api_oom_policy(json_t *res, api_status *st, unsigned long before)
{
    if (oom_events != before) {
        json_decref(res);
        api_status_init(st);
        api_fail(st, 503, "", "out of memory; try again");
        return NULL;
    }
    if (!res && !st->status) api_fail(st, 500, "", "no answer and no reason (an internal error)");
    return res;
}

/* The api's own allocations, counted like jansson's. */
void *api_malloc(size_t n)
{
    void *p = malloc(n);
    if (!p) oom_events++;
    return p;
}

void *api_calloc(size_t n, size_t k)
{
    void *p = calloc(n, k);
    if (!p) oom_events++;
    return p;
}

void *api_realloc(void *q, size_t n)
{
    void *p = realloc(q, n);
    if (!p) oom_events++;
    return p;
}

char *api_strdup(const char *s)
{
    char *p = strdup(s);
    if (!p) oom_events++;
    return p;
}
