/* api/status.c -- error collection and RFC 9457 problem details (the
 * typed field readers that fail into it are api/jsonv.c). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "error.h"

void api_status_init(api_status *st)
{
    memset(st, 0, sizeof *st);
}

static const struct {
    int status;
    const char *type, *name, *title;
} problems[API_P_COUNT] = {
#define API_PROBLEM_ROW_(id, status, name, title) [API_P_##id] = {status, "/problems/" name, name, title},
    API_PROBLEM_MAP(API_PROBLEM_ROW_)
#undef API_PROBLEM_ROW_
};

static api_problem checked(api_problem p)
{
    return (unsigned)p < API_P_COUNT ? p : API_P_INTERNAL;
}

const char *api_problem_type(api_problem p)
{
    return problems[checked(p)].type;
}

const char *api_problem_name(api_problem p)
{
    return problems[checked(p)].name;
}

int api_problem_status(api_problem p)
{
    return problems[checked(p)].status;
}

const char *api_problem_title(api_problem p)
{
    return problems[checked(p)].title;
}

api_problem api_problem_of_status(int status)
{
    for (int p = 0; p < API_P_COUNT; p++)
        if (problems[p].status == status) return (api_problem)p;
    return API_P_INTERNAL;
}

api_problem api_problem_of_core(int code)
{
    switch (code) {
    /* a model the engine cannot represent (too many operators), a layout
     * or an argument it refuses: what the request asked */
    case MFU_ETOOMANYOPS:
    case MFU_EILLEGAL:
    case MFU_EINVAL: return API_P_INVALID_REQUEST;
    default: return API_P_INTERNAL;
    }
}

void api_fail_core(api_status *st, int code, const char *pointer, const char *what)
{
    char d[256];
    snprintf(d, sizeof d, "%s: %s", what, mfu_strerror(code));
    api_fail_as(st, api_problem_of_core(code), pointer, d);
}

static const char *title_for(int status)
{
    return api_problem_title(api_problem_of_status(status));
}

static const char *type_for(int status)
{
    return api_problem_type(api_problem_of_status(status));
}

void api_fail_as(api_status *st, api_problem p, const char *pointer, const char *detail)
{
    int first = !st->status;
    api_fail(st, api_problem_status(p), pointer, "%s", detail);
    if (first) {
        snprintf(st->title, sizeof st->title, "%s", api_problem_title(p));
        snprintf(st->type, sizeof st->type, "%s", api_problem_type(p));
    }
}

void api_fail(api_status *st, int status, const char *pointer, const char *fmt, ...)
{
    if (!st->status) {
        st->status = status;
        snprintf(st->title, sizeof st->title, "%s", title_for(status));
        snprintf(st->type, sizeof st->type, "%s", type_for(status));
    }
    if (st->n_errors >= API_MAX_ERRORS) return;
    api_error *e = &st->errors[st->n_errors++];
    snprintf(e->pointer, sizeof e->pointer, "%s", pointer ? pointer : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->detail, sizeof e->detail, fmt, ap);
    va_end(ap);
}

json_t *api_problem_json(const api_status *st)
{
    int status = st->status ? st->status : 500;
    json_t *errs = json_array();
    for (int i = 0; i < st->n_errors; i++)
        json_array_append_new(errs, json_pack("{s:s,s:s}", "pointer", st->errors[i].pointer,
                                              "detail", st->errors[i].detail));
    const char *detail = st->n_errors ? st->errors[0].detail : title_for(status);
    return json_pack("{s:s,s:s,s:i,s:s,s:o}", "type", st->type[0] ? st->type : type_for(status),
                     "title", st->title[0] ? st->title : title_for(status), "status", status,
                     "detail", detail, "errors", errs);
}
