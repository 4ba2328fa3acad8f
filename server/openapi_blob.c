/* server/openapi_blob.c -- openapi.yaml embedded at build time, so the
 * daemon serves its own contract (GET /openapi.yaml) without reading files
 * at run time. The assembler's .incbin resolves the path from the directory
 * make runs in (the repository root). The Makefile lists openapi.yaml as a
 * prerequisite of this object so edits rebuild it. */
#include "srv.h"

__asm__(".section .rodata\n"
        ".global mfud_openapi_yaml\n"
        ".global mfud_openapi_yaml_end\n"
        ".balign 16\n"
        "mfud_openapi_yaml:\n"
        ".incbin \"openapi.yaml\"\n"
        "mfud_openapi_yaml_end:\n"
        ".byte 0\n"
        ".previous\n");
