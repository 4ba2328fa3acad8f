/* api/status.c -- error collection and RFC 9457 problem details (the
 * typed field readers that fail into it are api/jsonv.c). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api.h"

void api_status_init(api_status *st)
{
    memset(st, 0, sizeof *st);
}

static const char *title_for(int status)
{
    switch (status) {
    case 400: return "Malformed request";
    case 404: return "Not found";
    case 405: return "Method not allowed";
    case 413: return "Request body too large";
    case 415: return "Unsupported media type";
    case 422: return "Invalid request";
    case 503: return "Service overloaded";
    default: return "Internal error";
    }
}

static const char *type_for(int status)
{
    switch (status) {
    case 400: return "/problems/malformed-json";
    case 404: return "/problems/not-found";
    case 405: return "/problems/method-not-allowed";
    case 413: return "/problems/body-too-large";
    case 415: return "/problems/unsupported-media-type";
    case 422: return "/problems/invalid-request";
    case 503: return "/problems/overloaded";
    default: return "/problems/internal";
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
