/* server/page.c -- the page a person opens in a browser (issue 13 item 1):
 * GET / (web/index.html) and its two static files, GET /ui/app.js and
 * GET /ui/app.css, embedded at build time like openapi.yaml and the problem
 * pages (the assembler's .incbin resolves paths from the repository root,
 * where make runs; mk/web.mk lists the files in web/ as prerequisites of this object).
 * No build step: the files are served byte for byte as they are in web/.
 *
 * Each file has a strong ETag (FNV-1a 64 of its bytes, so a new build with
 * a changed page gets a new tag) and Cache-Control: no-cache, so a browser
 * revalidates and gets a 304 until the daemon is upgraded. The page loads
 * nothing but these files and the daemon's own API (a Content-Security-
 * Policy says so).
 *
 * Also here: POST /roofline answered as SVG (api_svg_roofline) when the
 * client accepts image/svg+xml and not application/json (the page's roofline
 * chart, a dashboard's image panel). */
#include "srv.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"

#define WEBFILE(sym, file)                                                                        \
    ".global " #sym "\n.global " #sym "_end\n.balign 16\n" #sym ":\n.incbin \"" file "\"\n" #sym  \
    "_end:\n.byte 0\n"

__asm__(".section .rodata\n"
        WEBFILE(mfud_web_index_html, "web/index.html")
        WEBFILE(mfud_web_app_js, "web/app.js")
        WEBFILE(mfud_web_app_css, "web/app.css")
        ".previous\n");

#define DECL(sym) extern const char sym[], sym##_end[];
DECL(mfud_web_index_html)
DECL(mfud_web_app_js)
DECL(mfud_web_app_css)

static struct webfile {
    const char *name; /* "" is the page itself, at "/" */
    const char *ctype;
    const char *start, *end;
    char etag[24];
} files[] = {
    {"", "text/html; charset=utf-8", mfud_web_index_html, mfud_web_index_html_end, ""},
    {"app.js", "text/javascript; charset=utf-8", mfud_web_app_js, mfud_web_app_js_end, ""},
    {"app.css", "text/css; charset=utf-8", mfud_web_app_css, mfud_web_app_css_end, ""},
};
#define N_FILES (sizeof files / sizeof files[0])

/* The page's own policy: its scripts, styles and images come from the
 * daemon (blob: for the roofline chart it fetches by POST); nothing else. */
static const char CSP[] = "default-src 'none'; script-src 'self'; style-src 'self'; "
                          "img-src 'self' blob: data:; connect-src 'self'; base-uri 'none'; "
                          "form-action 'none'; frame-ancestors 'none'";

int srv_page_match(const char *url, char *id_out)
{
    if (strcmp(url, "/") == 0) {
        id_out[0] = '\0';
        return 1;
    }
    if (strncmp(url, "/ui/", 4) != 0) return 0;
    for (size_t i = 1; i < N_FILES; i++)
        if (strcmp(url + 4, files[i].name) == 0) {
            snprintf(id_out, 65, "%s", files[i].name);
            return 1;
        }
    return 0; /* another /ui/ name: 404 like any unknown path */
}

/* The ETags, computed once (the first request, whichever HTTP thread). */
static pthread_once_t etags_once = PTHREAD_ONCE_INIT;
static void compute_etags(void)
{
    for (size_t i = 0; i < N_FILES; i++) {
        uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 */
        for (const char *p = files[i].start; p < files[i].end; p++) {
            h ^= (unsigned char)*p;
            h *= 1099511628211ULL;
        }
        snprintf(files[i].etag, sizeof files[i].etag, "\"%016llx\"", (unsigned long long)h);
    }
}

/* If-None-Match: "*" or a list of tags, one of them ours (weak comparison). */
static int inm_matches(const char *inm, const char *etag)
{
    if (!inm) return 0;
    size_t n = strlen(etag);
    for (const char *p = inm; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (*p == '*') return 1;
        if (strncmp(p, "W/", 2) == 0) p += 2;
        if (strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' ')) return 1;
        while (*p && *p != ',') p++;
    }
    return 0;
}

enum MHD_Result srv_page_answer(struct srv_req *r)
{
    struct webfile *f = NULL;
    for (size_t i = 0; i < N_FILES; i++)
        if (strcmp(r->id, files[i].name) == 0) f = &files[i];
    if (!f) return MHD_NO; /* srv_page_match gave the name: cannot happen */
    pthread_once(&etags_once, compute_etags);
    int nm = inm_matches(r->if_none_match, f->etag);
    size_t len = nm ? 0 : (size_t)(f->end - f->start);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)(nm ? "" : f->start), MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    if (!nm) MHD_add_response_header(resp, "Content-Type", f->ctype);
    MHD_add_response_header(resp, "ETag", f->etag);
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (!f->name[0]) {
        MHD_add_response_header(resp, "Content-Security-Policy", CSP);
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    }
    r->code = nm ? 304 : 200;
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)r->code, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* ---- POST /roofline as SVG ------------------------------------------------ */

/* Does an Accept header list type (exactly, case-insensitively, with q > 0)? */
static int accept_lists(const char *accept, const char *type)
{
    size_t n = strlen(type);
    for (const char *p = accept; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        const char *end = p + strcspn(p, ",");
        if ((size_t)(end - p) >= n && strncasecmp(p, type, n) == 0 &&
            (p + n == end || p[n] == ';' || p[n] == ' ')) {
            const char *q = p + n;
            int zero = 0;
            while (q < end) { /* ;q=0 refuses the type */
                q += strspn(q, " ;");
                if (strncasecmp(q, "q=", 2) == 0) zero = strtod(q + 2, NULL) <= 0;
                q += strcspn(q, ";,");
            }
            if (!zero) return 1;
        }
        p = end;
    }
    return 0;
}

void srv_roofline_accept(struct srv_req *r)
{
    const char *accept = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Accept");
    if (accept && accept_lists(accept, "image/svg+xml") && !accept_lists(accept, "application/json"))
        r->artifact = SRV_ART_ROOFLINE;
}

int srv_roofline_svg_answer(struct srv_req *r, json_t *result)
{
    if (r->route != ROUTE_ROOFLINE || r->artifact != SRV_ART_ROOFLINE) return 0;
    char *svg = api_svg_roofline(result);
    json_decref(result);
    if (!svg) {
        srv_answer_problem(r, 500, "Internal Server Error", "the roofline chart could not be drawn");
        return 1;
    }
    srv_answer_raw(r, 200, "image/svg+xml", svg, strlen(svg));
    return 1;
}
