/* server/problems.c -- the pages of the problem types (RFC 9457 section
 * 3.1.1: a problem's "type" URI, when dereferenced, should give
 * human-readable documentation). Every problem+json answer of mfud has a
 * relative type "/problems/<name>"; GET /problems/<name> serves
 * docs/problems/<name>.md, embedded at build time like openapi.yaml (the
 * assembler's .incbin resolves paths from the repository root, where make
 * runs; mk/problems.mk lists the pages as prerequisites of this object).
 * openapi.yaml documents the same names (components/schemas/ProblemType). */
#include "srv.h"
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One page per row of API_PROBLEM_MAP (api/api.h): a row without its
 * docs/problems/<name>.md fails the build here. */
#define PAGE(sym, file)                                                                           \
    ".global " #sym "\n.global " #sym "_end\n.balign 16\n" #sym ":\n.incbin \"" file "\"\n" #sym  \
    "_end:\n.byte 0\n"
#define PAGE_ROW_(id, status, name, title) PAGE(mfud_problem_##id, "docs/problems/" name ".md")

__asm__(".section .rodata\n" API_PROBLEM_MAP(PAGE_ROW_) ".previous\n");

#define DECL_ROW_(id, status, name, title) extern const char mfud_problem_##id[], mfud_problem_##id##_end[];
API_PROBLEM_MAP(DECL_ROW_)

static const struct {
    const char *name;
    const char *start, *end;
} pages[] = {
#define ROW_(id, status, name, title) {name, mfud_problem_##id, mfud_problem_##id##_end},
    API_PROBLEM_MAP(ROW_)
#undef ROW_
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
