/* tests/testutil.h -- load presets into core structs for unit tests. */
#ifndef MFU_TESTUTIL_H
#define MFU_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "api.h"

static inline int load_model(const char *preset, mfu_model *m)
{
    api_status st;
    api_status_init(&st);
    json_t *req = json_pack("{s:s}", "preset", preset);
    json_t *src = NULL, *ovr = NULL;
    json_t *ir = api_resolve_model(req, &src, &ovr, &st);
    int rc = ir ? api_model_from_ir(ir, "/model", m, &st) : -1;
    if (rc) fprintf(stderr, "load_model(%s): %s %s\n", preset, st.n_errors ? st.errors[0].pointer : "",
                    st.n_errors ? st.errors[0].detail : "");
    json_decref(req); json_decref(src); json_decref(ovr); json_decref(ir);
    return rc;
}

static inline int load_hw(const char *preset, mfu_hardware *hw)
{
    api_status st;
    api_status_init(&st);
    json_t *req = json_pack("{s:s}", "preset", preset);
    json_t *ovr = NULL;
    json_t *j = api_resolve_hardware(req, &ovr, &st);
    int rc = j ? api_hardware_from_json(j, "/hardware", hw, &st) : -1;
    json_decref(req); json_decref(ovr); json_decref(j);
    return rc;
}

#endif
