/* One error vocabulary (issue 15 item 3): the problem types of
 * API_PROBLEM_MAP (api/api.h) against everything else that names them --
 * each row has its page (docs/problems/<name>.md, served at
 * /problems/<name>) and every page has its row; openapi.yaml's ProblemType
 * enum lists exactly the rows' types; a status falls back to its row; the
 * core's error codes (core/error.h) are answered as named problems. Run
 * from the repository root (make test). */
#include "check.h"
#include "srv.h"
#include "api.h"
#include "error.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static int row_of(const char *name)
{
    for (int p = 0; p < API_P_COUNT; p++)
        if (!strcmp(api_problem_name((api_problem)p), name)) return p;
    return -1;
}

int main(void)
{
    /* each row: its page, a Markdown document headed by a title */
    for (int p = 0; p < API_P_COUNT; p++) {
        size_t len = 0;
        const char *page = srv_problem_page(api_problem_name((api_problem)p), &len);
        CHECK(page != NULL && len > 2 && !strncmp(page, "# ", 2));
        char want[96];
        snprintf(want, sizeof want, "/problems/%s", api_problem_name((api_problem)p));
        CHECK_STR(api_problem_type((api_problem)p), want);
        CHECK(api_problem_status((api_problem)p) >= 400 && api_problem_status((api_problem)p) <= 599);
    }
    /* each page: its row */
    DIR *d = opendir("docs/problems");
    CHECK(d != NULL);
    int n_pages = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".md")) continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(n - 3), e->d_name);
        n_pages++;
        if (row_of(name) < 0) fprintf(stderr, "docs/problems/%s has no row in API_PROBLEM_MAP\n", e->d_name);
        CHECK(row_of(name) >= 0);
    }
    if (d) closedir(d);
    CHECK_EQ_I(n_pages, API_P_COUNT);
    /* openapi.yaml's ProblemType enum: the rows' types, no more */
    const char *yaml = mfud_openapi_yaml;
    const char *pt = strstr(yaml, "\n    ProblemType:");
    const char *en = pt ? strstr(pt, "      enum:\n") : NULL;
    CHECK(en != NULL);
    int n_enum = 0;
    for (const char *l = en ? strchr(en, '\n') + 1 : NULL; l && !strncmp(l, "        - ", 10);) {
        const char *nl = strchr(l, '\n');
        char type[128];
        snprintf(type, sizeof type, "%.*s", (int)(nl - l - 10), l + 10);
        CHECK(!strncmp(type, "/problems/", 10) && row_of(type + 10) >= 0);
        n_enum++;
        l = nl + 1;
    }
    CHECK_EQ_I(n_enum, API_P_COUNT);
    /* a status alone: its row; one without a row is internal */
    CHECK_EQ_I(api_problem_of_status(422), API_P_INVALID_REQUEST);
    CHECK_EQ_I(api_problem_of_status(400), API_P_MALFORMED_JSON);
    CHECK_EQ_I(api_problem_of_status(401), API_P_UNAUTHORIZED);
    CHECK_EQ_I(api_problem_of_status(418), API_P_INTERNAL);
    api_status st;
    api_status_init(&st);
    api_fail(&st, 503, "", "busy");
    CHECK_STR(st.type, "/problems/overloaded");
    CHECK_STR(st.title, "Service overloaded");
    /* the core's codes: what the request asked is not modellable, 422 */
    CHECK_EQ_I(api_problem_of_core(MFU_EINVAL), API_P_INVALID_REQUEST);
    CHECK_EQ_I(api_problem_of_core(MFU_EILLEGAL), API_P_INVALID_REQUEST);
    CHECK_EQ_I(api_problem_of_core(MFU_ETOOMANYOPS), API_P_INVALID_REQUEST);
    CHECK_EQ_I(api_problem_of_core(-99), API_P_INTERNAL);
    api_status_init(&st);
    api_fail_core(&st, MFU_ETOOMANYOPS, "/model", "cannot be modelled");
    CHECK_EQ_I(st.status, 422);
    CHECK_STR(st.type, "/problems/invalid-request");
    CHECK_STR(st.errors[0].pointer, "/model");
    CHECK_STR(st.errors[0].detail, "cannot be modelled: operator inventory exceeds MFU_MAX_OPS");
    return check_done();
}
