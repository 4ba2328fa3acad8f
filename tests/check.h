/* tests/check.h -- a tiny unit-test harness (one binary per module).
 *
 * CHECK(cond)              counts one check; prints file:line and the
 *                          expression when it fails.
 * CHECK_NEAR(a, b, rel)    |a-b| <= rel*|b|, prints both values on failure.
 * CHECK_EQ_I(a, b)         integer equality, prints both values.
 * CHECK_STR(a, b)          string equality.
 * check_done()             prints "N passed, N failed" and returns the
 *                          exit status (0 iff none failed).
 * check_main(argc, argv, cases, n)
 *                          the registry: runs the named cases of a
 *                          {name, function} table (CHECK_CASE(fn)), all of
 *                          them when no name is given; --list prints the
 *                          names. An unknown name is a failure, so a typo
 *                          cannot pass as "nothing failed".
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

typedef struct check_case {
    const char *name;
    void (*fn)(void);
} check_case;
#define CHECK_CASE(fn) {#fn, fn}

static inline int check_main(int argc, char **argv, const check_case *cases, size_t n)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++) printf("%s\n", cases[i].name);
        return 0;
    }
    for (int a = 1; a < argc; a++) {
        size_t i = 0;
        while (i < n && strcmp(cases[i].name, argv[a]) != 0) i++;
        if (i == n) {
            check_failed_++;
            fprintf(stderr, "no case named %s (--list names them)\n", argv[a]);
        } else {
            cases[i].fn();
        }
    }
    if (argc < 2)
        for (size_t i = 0; i < n; i++) cases[i].fn();
    return check_done();
}

#endif
