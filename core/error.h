/* core/error.h -- the core's error codes: one table (libuv's UV_ERRNO_MAP
 * habit), so a return convention cannot drift between header and code.
 *
 * Functions that can fail return MFU_OK (0) or a negative code from this
 * table and are marked MFU_MUST_CHECK: ignoring the answer is a compile
 * error under -Werror=unused-result and a warning otherwise. */
#ifndef MFU_ERROR_H
#define MFU_ERROR_H

#define MFU_ERRNO_MAP(X)                                                      \
    X(OK, 0, "ok")                                                            \
    X(ETOOMANYOPS, -1, "operator inventory exceeds MFU_MAX_OPS")              \
    X(EILLEGAL, -2, "illegal configuration")                                  \
    X(EINVAL, -3, "invalid argument")

typedef enum {
#define MFU_ERR_ENUM_(name, val, text) MFU_##name = val,
    MFU_ERRNO_MAP(MFU_ERR_ENUM_)
#undef MFU_ERR_ENUM_
} mfu_err;

/* A static text for a code ("unknown error" for anything else). */
const char *mfu_strerror(int code);

#if defined(__GNUC__) || defined(__clang__)
#define MFU_MUST_CHECK __attribute__((warn_unused_result))
#else
#define MFU_MUST_CHECK
#endif

#endif
