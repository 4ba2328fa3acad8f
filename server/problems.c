/* server/problems.c -- the pages of the problem types (RFC 9457 section
 * 3.1.1: a problem's "type" URI, when dereferenced, should give
 * human-readable documentation). Every problem+json answer of mfud has a
 * relative type "/problems/<name>"; GET /problems/<name> serves
 * docs/problems/<name>.md, embedded at build time like openapi.yaml (the
 * assembler's .incbin resolves paths from the repository root, where make
 * runs; mk/problems.mk lists the pages as prerequisites of this object).
 * openapi.yaml documents the same names (components/schemas/ProblemType). */
#include "srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE(sym, file)                                                                           \
    ".global " #sym "\n.global " #sym "_end\n.balign 16\n" #sym ":\n.incbin \"" file "\"\n" #sym  \
    "_end:\n.byte 0\n"

__asm__(".section .rodata\n"
        PAGE(mfud_problem_malformed_json, "docs/problems/malformed-json.md")
        PAGE(mfud_problem_invalid_query_parameter, "docs/problems/invalid-query-parameter.md")
        PAGE(mfud_problem_unauthorized, "docs/problems/unauthorized.md")
        PAGE(mfud_problem_not_found, "docs/problems/not-found.md")
        PAGE(mfud_problem_method_not_allowed, "docs/problems/method-not-allowed.md")
        PAGE(mfud_problem_body_too_large, "docs/problems/body-too-large.md")
        PAGE(mfud_problem_unsupported_media_type, "docs/problems/unsupported-media-type.md")
        PAGE(mfud_problem_invalid_request, "docs/problems/invalid-request.md")
        PAGE(mfud_problem_internal, "docs/problems/internal.md")
        PAGE(mfud_problem_overloaded, "docs/problems/overloaded.md")
        PAGE(mfud_problem_bad_framing, "docs/problems/bad-framing.md")
        ".previous\n");

#define DECL(sym) extern const char sym[], sym##_end[];
DECL(mfud_problem_malformed_json)
DECL(mfud_problem_invalid_query_parameter)
DECL(mfud_problem_unauthorized)
DECL(mfud_problem_not_found)
DECL(mfud_problem_method_not_allowed)
DECL(mfud_problem_body_too_large)
DECL(mfud_problem_unsupported_media_type)
DECL(mfud_problem_invalid_request)
DECL(mfud_problem_internal)
DECL(mfud_problem_overloaded)
DECL(mfud_problem_bad_framing)

static const struct {
    const char *name;
    const char *start, *end;
} pages[] = {
#define ROW(name, sym) {name, sym, sym##_end}
    ROW("malformed-json", mfud_problem_malformed_json),
    ROW("invalid-query-parameter", mfud_problem_invalid_query_parameter),
    ROW("unauthorized", mfud_problem_unauthorized),
    ROW("not-found", mfud_problem_not_found),
    ROW("method-not-allowed", mfud_problem_method_not_allowed),
    ROW("body-too-large", mfud_problem_body_too_large),
    ROW("unsupported-media-type", mfud_problem_unsupported_media_type),
    ROW("invalid-request", mfud_problem_invalid_request),
    ROW("internal", mfud_problem_internal),
    ROW("overloaded", mfud_problem_overloaded),
    ROW("bad-framing", mfud_problem_bad_framing),
#undef ROW
};

const char *srv_problem_page(const char *name, size_t *len)
{
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        if (strcmp(name, pages[i].name) == 0) {
            *len = (size_t)(pages[i].end - pages[i].start);
            return pages[i].start;
        }
    return NULL;
}

/* The page as a minimal HTML document (the Markdown in <pre>, escaped). */
char *srv_problem_html(const char *name, const char *md, size_t len, size_t *out_len)
{
    static const char head[] = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                               "<title>mfud problem type: %s</title></head>\n<body><pre>";
    static const char tail[] = "</pre></body></html>\n";
    size_t cap = sizeof head + strlen(name) + 6 * len + sizeof tail;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t n = (size_t)snprintf(out, cap, head, name);
    for (size_t i = 0; i < len; i++) {
        const char *esc = md[i] == '<' ? "&lt;" : md[i] == '>' ? "&gt;" : md[i] == '&' ? "&amp;" : NULL;
        if (esc) {
            memcpy(out + n, esc, strlen(esc));
            n += strlen(esc);
        } else {
            out[n++] = md[i];
        }
    }
    memcpy(out + n, tail, sizeof tail);
    *out_len = n + sizeof tail - 1;
    return out;
}
