/* tests/check.h -- a tiny unit-test harness (one binary per module).
 *
 * CHECK(cond)              counts one check; prints file:line and the
 *                          expression when it fails.
 * CHECK_NEAR(a, b, rel)    |a-b| <= rel*|b|, prints both values on failure.
 * CHECK_EQ_I(a, b)         integer equality, prints both values.
 * CHECK_STR(a, b)          string equality.
 * check_done()             prints "N passed, N failed" and returns the
 *                          exit status (0 iff none failed).
 */
#ifndef MFU_CHECK_H
#define MFU_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_passed_, check_failed_;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (cond) check_passed_++;                                             \
        else {                                                                 \
            check_failed_++;                                                   \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                      \
    } while (0)

#define CHECK_NEAR(a, b, rel)                                                          \
    do {                                                                               \
        double a_ = (double)(a), b_ = (double)(b);                                     \
        if (fabs(a_ - b_) <= (rel) * fabs(b_) && !isnan(a_)) check_passed_++;          \
        else {                                                                         \
            check_failed_++;                                                           \
            fprintf(stderr, "%s:%d: FAILED: %s = %.10g, want %s = %.10g (rel %g)\n",   \
                    __FILE__, __LINE__, #a, a_, #b, b_, (double)(rel));                \
        }                                                                              \
    } while (0)

#define CHECK_EQ_I(a, b)                                                               \
    do {                                                                               \
        long long a_ = (long long)(a), b_ = (long long)(b);                            \
        if (a_ == b_) check_passed_++;                                                 \
        else {                                                                         \
            check_failed_++;                                                           \
            fprintf(stderr, "%s:%d: FAILED: %s = %lld, want %lld\n", __FILE__,         \
                    __LINE__, #a, a_, b_);                                             \
        }                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                \
    do {                                                                               \
        const char *a_ = (a), *b_ = (b);                                               \
        if (a_ && b_ && strcmp(a_, b_) == 0) check_passed_++;                          \
        else {                                                                         \
            check_failed_++;                                                           \
            fprintf(stderr, "%s:%d: FAILED: %s = \"%s\", want \"%s\"\n", __FILE__,     \
                    __LINE__, #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)");             \
        }                                                                              \
    } while (0)

static inline int check_done(void)
{
    printf("%d passed, %d failed\n", check_passed_, check_failed_);
    return check_failed_ ? 1 : 0;
}

#endif
