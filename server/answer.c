/* server/answer.c -- the answer a request carries (struct srv_req): a JSON
 * body or a problem+json, set by the HTTP handlers, the job loop and the
 * page's endpoints, then the suspended connection resumed. Split from
 * server/http.c (issue 15) so that the job loop and the page fill answers
 * without calling up into the HTTP routing. */
#include "srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "api.h"

void srv_answer_reset(struct srv_req *r)
{
    free(r->out_body);
    r->out_body = NULL;
    r->out_len = 0;
    free(r->view.result);
    free(r->view.error);
    r->view.result = r->view.error = NULL;
    srv_rcache_unref(r->entry);
    r->entry = NULL;
    r->answer = ANS_NONE;
}

void srv_answer_raw(struct srv_req *r, int code, const char *ctype, char *body, size_t len)
{
    srv_answer_reset(r);
    r->answer = ANS_RAW;
    r->out_code = code;
    r->out_ctype = ctype;
    r->out_body = body;
    r->out_len = len;
}

void srv_answer_json(struct srv_req *r, int code, json_t *body)
{
    char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!s) {
        /* API_P_INTERNAL's row spelled out: nothing can be built here */
        s = strdup("{\"type\":\"/problems/internal\",\"title\":\"Internal Server Error\","
                   "\"status\":500,\"detail\":\"the answer could not be rendered\","
                   "\"errors\":[]}");
        srv_answer_raw(r, 500, "application/problem+json", s, s ? strlen(s) : 0);
        return;
    }
    srv_answer_raw(r, code, code >= 400 ? "application/problem+json" : "application/json", s, strlen(s));
}

void srv_answer_status(struct srv_req *r, const struct api_status *st)
{
    srv_answer_json(r, st->status ? st->status : 500, api_problem_json(st));
}

void srv_answer_problem(struct srv_req *r, int code, const char *title, const char *detail)
{
    api_status st;
    api_status_init(&st);
    api_fail(&st, code, "", "%s", detail);
    snprintf(st.title, sizeof st.title, "%s", title);
    /* the type is the status's row of API_PROBLEM_MAP (401: unauthorized) */
    srv_answer_status(r, &st);
}
