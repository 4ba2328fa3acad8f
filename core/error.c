/* core/error.c -- texts of the core's error codes (core/error.h). */
#include "error.h"

const char *mfu_strerror(int code)
{
    switch (code) {
#define MFU_ERR_CASE_(name, val, text) case val: return text;
        MFU_ERRNO_MAP(MFU_ERR_CASE_)
#undef MFU_ERR_CASE_
    }
    return "unknown error";
}
